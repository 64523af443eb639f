//! Applying CustomResourceDefinitions and waiting until the API server
//! serves them: plait's own at start, and those XRDs define.
//!
//! plait's own CRDs are never taken from another field manager (Crossplane's, a
//! Helm release's): when another manager owns one, plait leaves it if it already
//! serves everything plait's does, and otherwise applies without force: the API
//! server refuses an apply that would change a field another manager owns, and
//! plait reports that (the CRD, the managers, the fields) and goes on with the CRD
//! as installed.

use std::sync::LazyLock;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use plait_model::crd_width::narrowings;
use serde_json::Value;

use crate::vocabulary::api::FIELD_MANAGER;

/// plait's own CRDs (XRD, Composition, CompositionRevision, EnvironmentConfig, Function,
/// ImageConfig, Usage, ClusterUsage).
pub const CRDS: &str = include_str!(concat!(env!("OUT_DIR"), "/crds.yaml"));

/// The names of the CRDs in [`CRDS`].
static OWN_CRD_NAMES: LazyLock<Vec<String>> = LazyLock::new(|| {
    plait_model::parse_documents(CRDS, "crds")
        .unwrap_or_default()
        .iter()
        .filter_map(|crd| crd.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
});

/// How long a CRD may take to become established.
pub const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("cannot apply CustomResourceDefinition {name}: {source}")]
    Apply {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("CustomResourceDefinition {name}: {source}")]
    Wait {
        name: String,
        #[source]
        source: kube::runtime::wait::Error,
    },
    #[error("CustomResourceDefinition {name}: not established within {timeout:?}")]
    NotEstablished { name: String, timeout: Duration },
}

/// Server-side applies `crd` as plait. A CRD an XRD defines is plait's to
/// reconcile and is applied with force; one of plait's own ([`CRDS`]) that another
/// field manager installed is left to it (see the module's documentation).
pub async fn apply(client: &Client, crd: &Value) -> Result<String, CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if OWN_CRD_NAMES.contains(&name) {
        let existing = match api.get_opt(&name).await {
            Ok(existing) => existing,
            Err(source) => return Err(CrdError::Apply { name, source }),
        };
        let installed = existing.as_ref().and_then(|e| serde_json::to_value(e).ok());
        if let Some(installed) = installed {
            let managers = other_managers(&installed);
            if !managers.is_empty() {
                return apply_beside(&api, name, crd, &installed, &managers).await;
            }
        }
    }
    match api
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(crd),
        )
        .await
    {
        Ok(_) => Ok(name),
        Err(source) => Err(CrdError::Apply { name, source }),
    }
}

/// Installs plait's `crd` over `installed`, which `managers` (not plait) manage,
/// without taking their fields.
async fn apply_beside(
    api: &Api<CustomResourceDefinition>,
    name: String,
    crd: &Value,
    installed: &Value,
    managers: &[String],
) -> Result<String, CrdError> {
    let missing: Vec<String> = narrowings(crd, installed)
        .iter()
        .map(ToString::to_string)
        .collect();
    if missing.is_empty() {
        tracing::info!(
            crd = %name,
            managers = ?managers,
            "leaving the CustomResourceDefinition as installed: it serves everything plait's does"
        );
        return Ok(name);
    }
    match api
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Apply(crd),
        )
        .await
    {
        Ok(_) => Ok(name),
        Err(kube::Error::Api(refusal)) if refusal.code == 409 => {
            tracing::warn!(
                crd = %name,
                managers = ?managers,
                conflict = %refusal.message,
                missing = ?missing,
                "CustomResourceDefinition is managed by another field manager and serves less than plait's; \
                 left as installed (objects keep only the fields it serves)"
            );
            Ok(name)
        }
        Err(source) => Err(CrdError::Apply { name, source }),
    }
}

/// The field managers other than plait that own fields of `object` outside its status.
fn other_managers(object: &Value) -> Vec<String> {
    let mut managers: Vec<String> = object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|entry| {
            entry
                .get("subresource")
                .is_none_or(|s| s.as_str() == Some(""))
        })
        .filter_map(|entry| entry.get("manager").and_then(Value::as_str))
        .filter(|manager| *manager != FIELD_MANAGER)
        .map(str::to_string)
        .collect();
    managers.sort_unstable();
    managers.dedup();
    managers
}

/// Waits until the CRD `name` is established.
pub async fn established(client: &Client, name: &str, timeout: Duration) -> Result<(), CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let waited = tokio::time::timeout(
        timeout,
        await_condition(api, name, conditions::is_crd_established()),
    )
    .await;
    match waited {
        Ok(Ok(Some(_))) => Ok(()),
        Ok(Err(source)) => Err(CrdError::Wait {
            name: name.into(),
            source,
        }),
        _ => Err(CrdError::NotEstablished {
            name: name.into(),
            timeout,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_managers_of_a_crd_other_than_plait_exclude_status_writers() {
        let cases = [
            ("no managed fields", json!({"metadata": {}}), vec![]),
            (
                "plait alone, and the API server on status",
                json!({"metadata": {"managedFields": [
                    {"manager": "plait", "operation": "Apply"},
                    {"manager": "kube-apiserver", "operation": "Update", "subresource": "status"}
                ]}}),
                vec![],
            ),
            (
                "Crossplane and Helm beside plait",
                json!({"metadata": {"managedFields": [
                    {"manager": "plait", "operation": "Apply"},
                    {"manager": "crossplane", "operation": "Apply"},
                    {"manager": "helm", "operation": "Update"},
                    {"manager": "crossplane", "operation": "Update"}
                ]}}),
                vec!["crossplane".to_string(), "helm".to_string()],
            ),
        ];
        for (case, object, expected) in cases {
            assert_eq!(other_managers(&object), expected, "{case}");
        }
    }

    #[test]
    fn plait_knows_each_of_its_own_crds_by_name() {
        assert_eq!(OWN_CRD_NAMES.len(), 9, "{:?}", *OWN_CRD_NAMES);
        assert!(OWN_CRD_NAMES.contains(&"compositions.apiextensions.crossplane.io".to_string()));
    }
}
