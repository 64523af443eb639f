//! Everything that wakes a Composition, in one expression, as
//! kube-runtime's `Controller` builder reads: its own watch, the
//! CompositionRevisions it controls, and the Functions its pipeline runs
//! (a new digest, or a change of health, may change what its latest
//! revision should record).

use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};

use super::context::CompositionContext;
use super::revisions::runs;
use crate::stores::reflect;
use crate::vocabulary::api::{composition_resource, function_resource, revision_resource};

/// The Composition controller, built with everything that wakes a Composition.
pub fn controller(ctx: &CompositionContext) -> Controller<DynamicObject> {
    let client = ctx.cluster.client().clone();
    let compositions: Api<DynamicObject> = Api::all_with(client.clone(), &composition_resource());
    let revisions: Api<DynamicObject> = Api::all_with(client.clone(), &revision_resource());
    let functions: Api<DynamicObject> = Api::all_with(client, &function_resource());
    let controller = Controller::new_with(
        compositions,
        watcher::Config::default(),
        composition_resource(),
    )
    .trigger_backoff(reflect::watch_backoff());
    let known = controller.store();
    controller
        .owns_with(revisions, revision_resource(), watcher::Config::default())
        .watches_with(
            functions,
            function_resource(),
            watcher::Config::default(),
            move |function| {
                running(
                    &known,
                    function.metadata.name.as_deref().unwrap_or_default(),
                )
            },
        )
}

/// The Compositions whose pipeline runs `function`.
fn running(known: &Store<DynamicObject>, function: &str) -> Vec<ObjectRef<DynamicObject>> {
    known
        .state()
        .into_iter()
        .filter(|composition| runs(&composition.data, function))
        .map(|composition| ObjectRef::from_obj_with(composition.as_ref(), composition_resource()))
        .collect()
}
