//! `deploy/`'s kustomizations against real kustomize (built from its Go
//! module by tests/kustomize/build-kustomize.sh), as `kubectl apply -k`
//! builds them: each path a user applies builds, and into what
//! `plait install --print` prints for the matching mode; and
//! `deploy/tenant-impersonation` into `deploy/` with its ClusterRole and
//! flag.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{Value, json};

mod common;
use common::{by_identity, repo};

/// The kustomize binary, built once and cached under
/// ~/.cache/plait/kustomize-<version>/.
fn kustomize_binary() -> &'static Path {
    static KUSTOMIZE: OnceLock<PathBuf> = OnceLock::new();
    KUSTOMIZE.get_or_init(|| {
        let out = Command::new("bash")
            .arg(repo().join("tests/kustomize/build-kustomize.sh"))
            .output()
            .expect("build-kustomize.sh runs");
        let stdout = succeeded("build-kustomize.sh", &out);
        PathBuf::from(
            stdout
                .lines()
                .last()
                .expect("build-kustomize.sh prints kustomize's path"),
        )
    })
}

fn succeeded(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// `kustomize build` of a directory of the repository, what `kubectl apply
/// -k` of it applies.
fn kustomize_build(dir: &str) -> Vec<Value> {
    let out = Command::new(kustomize_binary())
        .arg("build")
        .arg(repo().join(dir))
        .output()
        .expect("kustomize runs");
    documents(&succeeded(&format!("kustomize build {dir}"), &out))
}

fn plait_install_print(flags: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(["install", "--print"])
        .args(flags)
        .output()
        .expect("plait runs");
    documents(&succeeded(
        &format!("plait install --print {}", flags.join(" ")),
        &out,
    ))
}

fn assert_same_objects(built: Vec<Value>, expected: Vec<Value>, what: &str) {
    common::assert_same_objects(&by_identity(built), &by_identity(expected), what);
}

#[test]
fn kustomize_builds_each_deploy_path_into_what_plait_install_prints_for_it() {
    // (the path users `kubectl apply -k`, the `plait install` flags that
    // print the same objects)
    let cases: [(&str, &[&str]); 3] = [
        ("deploy", &["--no-webhook"]),
        ("deploy/webhook", &[]),
        ("deploy/webhook/cert-manager", &["--cert-manager"]),
    ];
    for (dir, flags) in cases {
        assert_same_objects(
            kustomize_build(dir),
            plait_install_print(flags),
            &format!("kustomize build {dir} against plait install --print {flags:?}"),
        );
    }
}

#[test]
fn kustomize_builds_deploy_tenant_impersonation_into_deploy_with_its_cluster_role_and_tenant_flag()
{
    let mut expected = plait_install_print(&["--no-webhook"]);
    let text = std::fs::read_to_string(repo().join("deploy/tenant-impersonation/clusterrole.yaml"))
        .unwrap();
    let tenant_role = documents(&text).remove(0);
    for object in &mut expected {
        match object["kind"].as_str() {
            Some("ClusterRole") => *object = tenant_role.clone(),
            Some("Deployment") => object["spec"]["template"]["spec"]["containers"][0]["args"]
                .as_array_mut()
                .unwrap()
                .push(json!("--tenant-service-account=plait-tenant")),
            _ => {}
        }
    }
    assert_same_objects(
        kustomize_build("deploy/tenant-impersonation"),
        expected,
        "kustomize build deploy/tenant-impersonation",
    );
}
