//! Everything that wakes a Usage or ClusterUsage: its own watch. Neither
//! the used nor the using resource is watched; the poll a reconcile asks
//! for notices when either goes.

use kube::api::{Api, DynamicObject};
use kube::runtime::{Controller, watcher};

use super::context::UsageContext;
use crate::stores::reflect;

/// The controller of `ctx`'s kind (Usage or ClusterUsage), built with
/// everything that wakes its objects.
pub fn controller(ctx: &UsageContext) -> Controller<DynamicObject> {
    let resource = ctx.policy.resource.clone();
    let api: Api<DynamicObject> = Api::all_with(ctx.client().clone(), &resource);
    Controller::new_with(api, watcher::Config::default(), resource)
        .trigger_backoff(reflect::watch_backoff())
}
