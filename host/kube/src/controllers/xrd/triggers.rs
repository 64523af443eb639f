//! What wakes an XRD: its own watch; the XR and claim controllers it runs
//! are started and stopped by its reconcile.

use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::{Controller, watcher};

use crate::stores::reflect;
use crate::vocabulary::api::xrd_resource;

/// The XRD controller, built with everything that wakes an XRD.
pub fn controller(client: Client) -> Controller<DynamicObject> {
    let api: Api<DynamicObject> = Api::all_with(client, &xrd_resource());
    Controller::new_with(api, watcher::Config::default(), xrd_resource())
        .trigger_backoff(reflect::watch_backoff())
}
