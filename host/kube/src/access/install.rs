//! Applying CustomResourceDefinitions and waiting until the API server
//! serves them: plait's own at start, and those XRDs define.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::Value;

use crate::vocabulary::api::FIELD_MANAGER;

/// plait's own CRDs (XRD, Composition, CompositionRevision, EnvironmentConfig, Function,
/// ImageConfig, Usage, ClusterUsage).
pub const CRDS: &str = include_str!(concat!(env!("OUT_DIR"), "/crds.yaml"));

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

/// Server-side applies `crd` as plait.
pub async fn apply(client: &Client, crd: &Value) -> Result<String, CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
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
