//! plait started on a cluster where Crossplane v2.3.4 installed its CRDs (field
//! manager `crossplane`): plait installs without error and takes none of them over,
//! so Crossplane can apply its own CRDs again on hand-back without a conflict.
//! Upstream's CRDs are read from the Crossplane Go module (`go mod download`
//! fetches it into the module cache when it is missing).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;
use std::path::Path;
use std::process::Command;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use plait_controlplane::ControlPlane;
use serde_json::Value;

const UPSTREAM_MODULE: &str = "github.com/crossplane/crossplane/v2@v2.3.4";

/// Upstream's CRDs of the kinds plait serves.
fn upstream_crds() -> Vec<Value> {
    let output = Command::new("go")
        .args(["mod", "download", "-json", UPSTREAM_MODULE])
        .output()
        .expect("go is installed");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let described: Value = serde_json::from_slice(&output.stdout).unwrap();
    let dir = Path::new(described["Dir"].as_str().unwrap()).join("cluster/crds");
    let ours: Vec<String> = plait_kube::crds()
        .unwrap()
        .iter()
        .map(|crd| crd["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut crds = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for crd in plait_model::parse_documents(&text, &path.display().to_string()).unwrap() {
            if ours
                .iter()
                .any(|name| crd["metadata"]["name"] == name.as_str())
            {
                crds.push(crd);
            }
        }
    }
    assert_eq!(
        crds.len(),
        ours.len(),
        "upstream defines each kind plait serves"
    );
    crds
}

#[tokio::test]
async fn plait_starts_over_crossplanes_crds_and_crossplane_can_take_them_back_unforced() {
    // Its own cluster: the shared one's CRDs are plait's, installed by its controller.
    let cluster = ControlPlane::dedicated().unwrap();
    let client = cluster.client().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let upstream = upstream_crds();
    for crd in &upstream {
        let name = crd["metadata"]["name"].as_str().unwrap();
        crds.patch(name, &PatchParams::apply("crossplane"), &Patch::Apply(crd))
            .await
            .unwrap();
    }

    plait_kube::install_crds(&client, support::TIMEOUT)
        .await
        .unwrap();

    for crd in &upstream {
        let name = crd["metadata"]["name"].as_str().unwrap();
        let installed = crds.get(name).await.unwrap();
        assert_eq!(
            support::spec_managers(&installed),
            vec!["crossplane".to_string()],
            "{name}"
        );
        crds.patch(name, &PatchParams::apply("crossplane"), &Patch::Apply(crd))
            .await
            .unwrap_or_else(|e| panic!("Crossplane applies {name} again unforced: {e}"));
    }
}
