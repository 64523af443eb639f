//! What wakes a Function: a new generation of it (its own status writes do
//! not), and a change to an ImageConfig whose prefixes match its package.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::store::Writer;
use kube::runtime::{Controller, WatchStreamExt, predicates, watcher};
use serde_json::Value;

use super::context::FunctionContext;
use crate::controllers::function::image_config::{image_config_of, image_config_resource};
use crate::stores::reflect;
use crate::vocabulary::api::function_resource;

/// Whether a Function's package, or the reference it was last pulled from,
/// starts with one of an ImageConfig's `prefixes`.
fn matches_any(function: &DynamicObject, prefixes: &[String]) -> bool {
    let package = function
        .data
        .pointer("/spec/package")
        .and_then(Value::as_str);
    let pulled = function
        .data
        .pointer("/status/resolvedPackage")
        .and_then(Value::as_str);
    [package, pulled]
        .into_iter()
        .flatten()
        .any(|reference| prefixes.iter().any(|p| reference.starts_with(p.as_str())))
}

/// The Function controller, built with everything that wakes a Function;
/// it fills the Function store `writer` writes, and a deleted Function's
/// XRs are requeued at once (`FunctionContext::forget`).
pub(super) fn controller(
    ctx: &Arc<FunctionContext>,
    writer: Writer<DynamicObject>,
) -> Controller<DynamicObject> {
    let resource = function_resource();
    let api: Api<DynamicObject> = Api::all_with(ctx.cluster.client().clone(), &resource);
    let reader = writer.as_reader();
    // Only a new generation (a spec change) starts a reconcile: the status
    // this controller writes does not, and polls re-check the rest.
    let on_delete = ctx.clone();
    let trigger = reflect::watched(api, watcher::Config::default())
        .reflect(writer)
        .inspect(move |event| {
            if let Ok(watcher::Event::Delete(function)) = event
                && let Some(name) = function.metadata.name.clone()
            {
                let ctx = on_delete.clone();
                tokio::spawn(async move { ctx.forget(&name).await });
            }
        })
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    let image_configs = image_config_resource();
    let image_config_api: Api<DynamicObject> =
        Api::all_with(ctx.cluster.client().clone(), &image_configs);
    let functions = reader.clone();
    let function_resource = resource.clone();
    // Each ImageConfig's prefixes as last seen: a change re-resolves the
    // Functions its old prefixes matched as well as its new ones.
    let seen = std::sync::Mutex::new(BTreeMap::<String, Vec<String>>::new());
    let matched_functions = move |config: DynamicObject| {
        let name = config.metadata.name.clone().unwrap_or_default();
        let mut prefixes: Vec<String> = image_config_of(&config)
            .map(|c| c.spec.match_images.into_iter().map(|m| m.prefix).collect())
            .unwrap_or_default();
        let previous = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name, prefixes.clone());
        prefixes.extend(previous.into_iter().flatten());
        functions
            .state()
            .into_iter()
            .filter(|function| matches_any(function, &prefixes))
            .map(|function| {
                kube::runtime::reflector::ObjectRef::from_obj_with(
                    function.as_ref(),
                    function_resource.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    Controller::for_stream_with(trigger, reader, resource)
        .trigger_backoff(reflect::watch_backoff())
        .watches_with(
            image_config_api,
            image_configs,
            watcher::Config::default(),
            matched_functions,
        )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::super::tests::function;
    use super::*;

    #[test]
    fn image_configs_requeue_the_functions_their_prefixes_match() {
        let function = |package: &str, pulled: Option<&str>| -> DynamicObject {
            let mut object = function(package, json!({}));
            if let Some(pulled) = pulled {
                object["status"]["resolvedPackage"] = json!(pulled);
            }
            serde_json::from_value(object).unwrap()
        };
        let prefixes = ["r.io/team/".to_string(), "mirror.io/".to_string()];
        let cases = [
            (function("r.io/team/fn:v1", None), true),
            (function("r.io/other/fn:v1", None), false),
            (
                function("upstream.io/fn:v1", Some("mirror.io/fn:v1@sha256:a")),
                true,
            ),
            (function("r.io/teammate/fn:v1", None), false),
        ];
        for (object, want) in cases {
            assert_eq!(matches_any(&object, &prefixes), want, "{object:?}");
        }
    }
}
