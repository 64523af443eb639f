//! The controller image as `make image` builds and pushes it: pulled back
//! from the registry by another client, its layer unpacked, and the
//! controller run from that file system alone (its own root, as its own
//! user, with nothing of the host's but the network) until an XR it
//! composes is Ready on the test cluster.
//!
//! The first run builds plait for x86_64-unknown-linux-musl in release
//! (minutes: docs/testing.md); later runs reuse it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::kube_support::{
    LogsOnFailure, ScaleApis, apply, apply_scale_fixture, free_address, is_ready, scrape,
};
use kube::api::{Api, DynamicObject};
use kube::runtime::wait::await_condition;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use plait_controlplane::ControlPlane;
use plait_testregistry::Registry;
use serde_json::{Value, json};

const FIELD_MANAGER: &str = "image-test";
const TIMEOUT: Duration = Duration::from_secs(300);
/// The image's size goal: what a node pulls, compressed.
const MAX_COMPRESSED_BYTES: usize = 60 << 20;

/// `make image-build` with these variables, from the repository root; its output.
fn make_image(variables: &[String]) -> String {
    let out = Command::new("make")
        .arg("--no-print-directory")
        .arg("image-build")
        .args(variables)
        .current_dir(common::repo())
        .stderr(Stdio::inherit())
        .output()
        .expect("make runs");
    assert!(
        out.status.success(),
        "make image-build failed:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The kubeconfig at `path` with its CA inlined: the file it names is not
/// inside the image's root.
fn self_contained_kubeconfig(path: &Path) -> String {
    use base64::Engine;
    let mut config: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for cluster in config["clusters"].as_array_mut().unwrap() {
        let cluster = cluster["cluster"].as_object_mut().unwrap();
        if let Some(ca) = cluster.remove("certificate-authority") {
            let pem = std::fs::read(ca.as_str().unwrap()).unwrap();
            cluster.insert(
                "certificate-authority-data".into(),
                json!(base64::engine::general_purpose::STANDARD.encode(pem)),
            );
        }
    }
    serde_yaml_ng::to_string(&config).unwrap()
}

#[tokio::test]
async fn the_pushed_image_runs_the_controller_from_its_own_root_until_an_xr_is_ready() {
    let registry = Registry::shared();
    let registry_path = format!("{}/e2e", registry.addr);
    let out = make_image(&[
        format!("REGISTRY={registry_path}"),
        "TAG=test".into(),
        "PUSH_FLAGS=--insecure".into(),
    ]);
    let reference = format!("{registry_path}/plait:test");
    let pinned = out
        .lines()
        .find(|line| line.starts_with(&format!("{reference}@sha256:")))
        .unwrap_or_else(|| panic!("make image-build printed no pinned reference:\n{out}"));

    // Pulled back by the registry client's own crate, not plait's.
    let client = oci_client::Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..Default::default()
    });
    let image = client
        .pull(
            &pinned.parse().unwrap(),
            &RegistryAuth::Anonymous,
            vec!["application/vnd.oci.image.layer.v1.tar+gzip"],
        )
        .await
        .unwrap();
    let [layer] = &image.layers[..] else {
        panic!(
            "{} layers; the image is one layer on scratch",
            image.layers.len()
        );
    };
    assert!(
        layer.data.len() <= MAX_COMPRESSED_BYTES,
        "the image is {} bytes compressed",
        layer.data.len()
    );
    let manifest = image.manifest.unwrap();
    let annotations = manifest.annotations.unwrap_or_default();
    for key in ["version", "revision", "source", "licenses", "created"] {
        assert!(
            annotations.contains_key(&format!("org.opencontainers.image.{key}")),
            "no org.opencontainers.image.{key} annotation: {annotations:?}"
        );
    }
    let config: Value = serde_json::from_slice(&image.config.data).unwrap();
    let run = &config["config"];
    assert_eq!(run["User"], "65532:65532", "{config}");
    assert_eq!(
        run["Labels"]["org.opencontainers.image.version"],
        annotations["org.opencontainers.image.version"]
    );

    let root = tempfile::tempdir().unwrap();
    tar::Archive::new(flate2::read::GzDecoder::new(&layer.data[..]))
        .unpack(root.path())
        .unwrap();
    std::fs::write(
        root.path().join("tmp/kubeconfig"),
        self_contained_kubeconfig(ControlPlane::shared().unwrap().kubeconfig()),
    )
    .unwrap();
    let log = root.path().join("tmp/controller.log");
    let _logs = LogsOnFailure(vec![log.clone()]);

    // As the image says: its entrypoint, user, working directory and
    // environment, and nothing from the host's.
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    let (user, group) = run["User"].as_str().unwrap().split_once(':').unwrap();
    let probes = free_address();
    // Found on the test's PATH: the controller's environment is the image's alone.
    let unshare = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("unshare"))
        .find(|path| path.is_file())
        .expect("unshare (util-linux) is on PATH");
    let mut controller = Command::new(unshare)
        .arg(format!("--map-user={user}"))
        .arg(format!("--map-group={group}"))
        .arg(format!("--root={}", root.path().display()))
        .arg(format!("--wd={}", run["WorkingDir"].as_str().unwrap()))
        .args(strings(&run["Entrypoint"]))
        .args(strings(&run["Cmd"]))
        .args([
            "--kubeconfig=/tmp/kubeconfig",
            &format!("--probe-address={probes}"),
        ])
        .env_clear()
        .envs(
            strings(&run["Env"])
                .iter()
                .map(|e| e.split_once('=').unwrap()),
        )
        .env("PLAIT_CACHE_DIR", "/tmp/cache")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("unshare runs");
    let started = Instant::now();
    while !scrape(&probes, "/readyz").starts_with("HTTP/1.1 200") {
        if let Some(status) = controller.try_wait().unwrap() {
            panic!("the controller in the image exited: {status}");
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "the controller never became ready"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let cluster = ControlPlane::shared().unwrap();
    let kube = cluster.client().await;
    apply_scale_fixture(&kube, FIELD_MANAGER).await;
    let namespace = cluster.namespace("image").await;
    let apis = ScaleApis::served(&kube, &namespace, TIMEOUT).await;
    let xr = json!({
        "apiVersion": "scale.example.org/v1", "kind": "Bench",
        "metadata": {"name": "from-the-image", "namespace": namespace},
        "spec": {"size": "small"}
    });
    apply(&kube, &apis.kind, &xr, FIELD_MANAGER).await;
    let xrs: Api<DynamicObject> = apis.xrs.clone();
    let ready = tokio::time::timeout(
        TIMEOUT,
        await_condition(xrs, "from-the-image", |xr: Option<&DynamicObject>| {
            xr.is_some_and(is_ready)
        }),
    )
    .await;
    controller.kill().unwrap();
    controller.wait().unwrap();
    assert!(
        matches!(ready, Ok(Ok(Some(_)))),
        "the XR never became Ready: {ready:?}"
    );
}
