//! Installing plait's CRDs over CRDs another field manager installed (Crossplane's,
//! on a cluster plait takes over) never takes that manager's fields: a CRD that
//! serves everything plait's does is left as it is, and a narrower one is left too,
//! the conflict reported, while plait still starts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use plait_controlplane::ControlPlane;
use serde_json::Value;

const NARROWED: &str = "compositions.apiextensions.crossplane.io";

#[tokio::test]
async fn crds_another_manager_installed_stay_that_managers_whether_as_wide_or_narrower() {
    // Its own cluster: the shared one's CRDs are plait's, installed by its controller.
    let cluster = ControlPlane::dedicated().unwrap();
    let client = cluster.client().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for mut crd in plait_kube::crds().unwrap() {
        let name = crd["metadata"]["name"].as_str().unwrap().to_string();
        if name == NARROWED {
            crd.pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties")
                .and_then(Value::as_object_mut)
                .unwrap()
                .remove("writeConnectionSecretsToNamespace");
        }
        crds.patch(
            &name,
            &PatchParams::apply("crossplane").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap();
    }

    plait_kube::install_crds(&client, support::TIMEOUT)
        .await
        .unwrap();

    for crd in plait_kube::crds().unwrap() {
        let name = crd["metadata"]["name"].as_str().unwrap();
        let installed = crds.get(name).await.unwrap();
        assert_eq!(
            support::spec_managers(&installed),
            vec!["crossplane".to_string()],
            "{name}"
        );
        let served = serde_json::to_value(&installed).unwrap();
        let field = served.pointer(
            "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/writeConnectionSecretsToNamespace",
        );
        if name == NARROWED {
            assert!(
                field.is_none(),
                "plait did not write the field Crossplane's CRD lacks"
            );
        }
    }
}
