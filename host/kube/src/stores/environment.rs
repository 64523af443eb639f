//! EnvironmentConfigs from a watch-fed store: the platform's published
//! configuration, which pipelines select on every reconcile (through
//! function-environment-configs or a step's required resources), read from
//! memory rather than the API server.
//!
//! The controller's own cluster reads the store whenever it has listed. A
//! tenant's cluster, acting as the tenant's service account, reads it only
//! while the API server says that identity may read EnvironmentConfigs
//! (a SelfSubjectAccessReview through the tenant's own client, its answer
//! kept for [`ACCESS_REVIEW_TTL`]); otherwise the tenant's read goes to the
//! API server, which answers it as the tenant's RBAC says.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef as StoreRef, Store};
use serde_json::Value;

use crate::stores::changes::{Change, SeenObjects};
use crate::stores::reflect::{labelled, reflector};
use crate::vocabulary::api::APIEXTENSIONS_GROUP;
use crate::vocabulary::broadcast::Broadcast;

pub const ENVIRONMENT_CONFIG_KIND: &str = "EnvironmentConfig";
/// The versions plait's EnvironmentConfig CRD serves. They share one
/// schema and convert with `None`, so an object read at one is the same
/// object at the other, apart from its apiVersion.
const SERVED_VERSIONS: &[&str] = &["v1beta1", "v1alpha1"];
const STORED_VERSION: &str = "v1beta1";
const PLURAL: &str = "environmentconfigs";

/// How long the API server's answer to "may this tenant read
/// EnvironmentConfigs?" is relied on before it is asked again. A revoked
/// grant stops reads from the store within this long; a "no" only sends
/// the tenant's reads to the API server, which answers them itself.
pub const ACCESS_REVIEW_TTL: Duration = Duration::from_secs(30);

pub fn environment_config_resource() -> ApiResource {
    ApiResource {
        group: APIEXTENSIONS_GROUP.into(),
        version: STORED_VERSION.into(),
        api_version: format!("{APIEXTENSIONS_GROUP}/{STORED_VERSION}"),
        kind: ENVIRONMENT_CONFIG_KIND.into(),
        plural: PLURAL.into(),
    }
}

/// Whether `api_version`/`kind` names EnvironmentConfigs at a version the
/// store can answer for.
fn is_environment_config(api_version: &str, kind: &str) -> bool {
    kind == ENVIRONMENT_CONFIG_KIND
        && api_version.split_once('/').is_some_and(|(group, version)| {
            group == APIEXTENSIONS_GROUP && SERVED_VERSIONS.contains(&version)
        })
}

/// Every EnvironmentConfig, as the watch last listed it; empty-handed
/// (`None` from every read) until the watch has listed once.
#[derive(Default)]
pub struct EnvironmentConfigs {
    listed: OnceLock<Store<DynamicObject>>,
    /// Each EnvironmentConfig that appeared, changed or went, told once
    /// the store holds the change: whoever reads it then reads it changed.
    changes: Broadcast<Change>,
}

impl EnvironmentConfigs {
    /// Watches EnvironmentConfigs until `shutdown`; reads are answered
    /// from the store once it has listed them.
    pub fn start(
        self: &Arc<Self>,
        client: &Client,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let writer = Writer::new(environment_config_resource());
        let store = writer.as_reader();
        let this = self.clone();
        tokio::spawn(async move {
            if store.wait_until_ready().await.is_ok() {
                // Set once only: the store lives as long as the controller.
                let _ = this.listed.set(store);
            }
        });
        let this = self.clone();
        let mut seen = SeenObjects::default();
        let events = reflector(
            client,
            &environment_config_resource(),
            kube::runtime::watcher::Config::default(),
            writer,
        );
        tokio::spawn(events.take_until(shutdown).for_each(move |event| {
            match event {
                Ok(event) => {
                    for change in seen.apply(&event) {
                        this.changes.send(&change);
                    }
                }
                Err(error) => {
                    tracing::debug!(kind = ENVIRONMENT_CONFIG_KIND, %error, "watch failed; retrying");
                }
            }
            futures::future::ready(())
        }));
    }

    /// Every EnvironmentConfig that appears, changes or goes from now on,
    /// told once the store holds the change.
    pub fn changes(&self) -> futures::channel::mpsc::UnboundedReceiver<Change> {
        self.changes.subscribe()
    }

    /// For the store to fill without a watch, in tests.
    #[cfg(test)]
    fn filled(objects: Vec<DynamicObject>) -> EnvironmentConfigs {
        let mut writer = Writer::new(environment_config_resource());
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Init);
        for object in objects {
            writer.apply_watcher_event(&kube::runtime::watcher::Event::InitApply(object));
        }
        writer.apply_watcher_event(&kube::runtime::watcher::Event::InitDone);
        let configs = EnvironmentConfigs::default();
        let _ = configs.listed.set(writer.as_reader());
        configs
    }

    /// Whether reads of `api_version`/`kind` can be answered here: they
    /// are of EnvironmentConfigs at a served version, and the store has listed.
    pub fn answers(&self, api_version: &str, kind: &str) -> bool {
        self.store(api_version, kind).is_some()
    }

    fn store(&self, api_version: &str, kind: &str) -> Option<&Store<DynamicObject>> {
        if !is_environment_config(api_version, kind) {
            return None;
        }
        self.listed.get()
    }

    /// The EnvironmentConfig named `name` (`Some(None)` when there is
    /// none); `None` when the store cannot answer for `api_version`/`kind`.
    pub fn get(&self, api_version: &str, kind: &str, name: &str) -> Option<Option<Value>> {
        let store = self.store(api_version, kind)?;
        let resource = environment_config_resource();
        let found = store.get(&StoreRef::new_with(name, resource.clone()));
        Some(found.and_then(|object| as_read_at(&object, &resource, api_version)))
    }

    /// The EnvironmentConfigs whose labels include `labels`, ordered by
    /// name; `None` when the store cannot answer for `api_version`/`kind`.
    pub fn list(
        &self,
        api_version: &str,
        kind: &str,
        labels: &BTreeMap<String, String>,
    ) -> Option<Vec<Value>> {
        let store = self.store(api_version, kind)?;
        let resource = environment_config_resource();
        let mut items: Vec<Value> = labelled(store, labels)
            .filter_map(|object| as_read_at(&object, &resource, api_version))
            .collect();
        items.sort_by(|a, b| name_of(a).cmp(name_of(b)));
        Some(items)
    }
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The object as a read at `api_version` returns it.
fn as_read_at(object: &DynamicObject, resource: &ApiResource, api_version: &str) -> Option<Value> {
    let mut value = crate::vocabulary::object::to_value(object, resource).ok()?;
    value["apiVersion"] = Value::String(api_version.to_string());
    Some(value)
}

/// What the API server said a tenant may do with EnvironmentConfigs, by
/// verb, and when it said it.
#[derive(Default)]
pub struct AccessReviews {
    answers: Mutex<HashMap<&'static str, (bool, Instant)>>,
}

impl AccessReviews {
    /// Whether the identity behind `client` may `verb` EnvironmentConfigs
    /// across the cluster, as the API server said within
    /// [`ACCESS_REVIEW_TTL`]; asked again when that answer is older. A
    /// review that fails counts as a "no".
    pub async fn may(&self, client: &Client, verb: &'static str) -> bool {
        let known = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(verb)
            .filter(|(_, at)| at.elapsed() < ACCESS_REVIEW_TTL)
            .map(|(allowed, _)| *allowed);
        if let Some(allowed) = known {
            return allowed;
        }
        let allowed = review(client, verb).await;
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(verb, (allowed, Instant::now()));
        allowed
    }
}

async fn review(client: &Client, verb: &str) -> bool {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(APIEXTENSIONS_GROUP.into()),
                resource: Some(PLURAL.into()),
                verb: Some(verb.into()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    match api.create(&PostParams::default(), &review).await {
        Ok(answered) => answered.status.is_some_and(|status| status.allowed),
        Err(error) => {
            tracing::debug!(verb, %error, "cannot review access to EnvironmentConfigs; reading from the API server");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn config(name: &str, labels: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.crossplane.io/v1beta1",
            "kind": "EnvironmentConfig",
            "metadata": {"name": name, "labels": labels, "managedFields": [{"manager": "kubectl"}]},
            "data": {"region": name}
        }))
        .unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn reads_are_answered_only_for_environment_configs_at_a_served_version_once_listed() {
        let listed = EnvironmentConfigs::filled(vec![config("a", json!({}))]);
        let unlisted = EnvironmentConfigs::default();
        let cases = [
            (
                "apiextensions.crossplane.io/v1beta1",
                "EnvironmentConfig",
                true,
            ),
            (
                "apiextensions.crossplane.io/v1alpha1",
                "EnvironmentConfig",
                true,
            ),
            ("apiextensions.crossplane.io/v1", "EnvironmentConfig", false),
            ("example.org/v1beta1", "EnvironmentConfig", false),
            ("apiextensions.crossplane.io/v1beta1", "Composition", false),
            ("v1", "ConfigMap", false),
        ];
        for (api_version, kind, answered) in cases {
            assert_eq!(
                listed.get(api_version, kind, "a").is_some(),
                answered,
                "{kind}.{api_version}"
            );
            assert_eq!(
                listed.list(api_version, kind, &labels(&[])).is_some(),
                answered,
                "{kind}.{api_version}"
            );
            assert_eq!(listed.answers(api_version, kind), answered);
            assert!(unlisted.get(api_version, kind, "a").is_none());
            assert!(!unlisted.answers(api_version, kind));
        }
    }

    #[test]
    fn a_read_returns_the_object_at_the_version_asked_without_managed_fields() {
        let configs = EnvironmentConfigs::filled(vec![config("a", json!({}))]);
        let found = configs
            .get(
                "apiextensions.crossplane.io/v1alpha1",
                "EnvironmentConfig",
                "a",
            )
            .unwrap()
            .unwrap();
        assert_eq!(found["apiVersion"], "apiextensions.crossplane.io/v1alpha1");
        assert_eq!(found["kind"], "EnvironmentConfig");
        assert_eq!(found["data"]["region"], "a");
        assert!(found["metadata"].get("managedFields").is_none());
        let missing = configs.get(
            "apiextensions.crossplane.io/v1beta1",
            "EnvironmentConfig",
            "b",
        );
        assert_eq!(missing, Some(None));
    }

    #[test]
    fn a_list_matches_every_label_and_orders_by_name() {
        let configs = EnvironmentConfigs::filled(vec![
            config("c", json!({"stage": "prod", "tier": "1"})),
            config("a", json!({"stage": "prod"})),
            config("b", json!({"stage": "dev"})),
        ]);
        let cases = [
            (labels(&[]), vec!["a", "b", "c"]),
            (labels(&[("stage", "prod")]), vec!["a", "c"]),
            (labels(&[("stage", "prod"), ("tier", "1")]), vec!["c"]),
            (labels(&[("stage", "test")]), vec![]),
        ];
        for (selector, expected) in cases {
            let listed = configs
                .list(
                    "apiextensions.crossplane.io/v1beta1",
                    "EnvironmentConfig",
                    &selector,
                )
                .unwrap();
            let names: Vec<&str> = listed.iter().map(name_of).collect();
            assert_eq!(names, expected, "{selector:?}");
        }
    }
}
