//! What the tests and benchmarks that run `plait controller` against the
//! test cluster share: objects by server-side apply, the scale fixture, and
//! the controller's probe address and endpoints.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::Value;

/// The API resource of `kind` in `api_version`, served as `plural`.
pub fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Server-side applies `object` as `field_manager`.
pub async fn apply(client: &kube::Client, ar: &ApiResource, object: &Value, field_manager: &str) {
    let name = object["metadata"]["name"].as_str().unwrap();
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    api.patch(
        name,
        &PatchParams::apply(field_manager).force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap();
}

/// The scale fixture's `name` (`tests/fixtures/scale/`): an XRD and a
/// Composition of three ConfigMaps, patch-and-transform then auto-ready.
pub fn scale_fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../tests/fixtures/scale/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A loopback address nothing listens on.
pub fn free_address() -> String {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string()
}

/// The response to a GET of `path` from the controller's probe address;
/// empty while nothing answers there.
pub fn scrape(address: &str, path: &str) -> String {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return String::new();
    };
    let _ = write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: plait\r\nConnection: close\r\n\r\n"
    );
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// Starts `plait controller` against the cluster of `kubeconfig`, compiling
/// into `cache`, serving probes on `probes`, logging warnings to `stderr`.
pub fn start_controller(
    kubeconfig: &Path,
    cache: &Path,
    probes: &str,
    stderr: impl Into<Stdio>,
) -> Child {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .arg("controller")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg(format!("--probe-address={probes}"))
        .env("PLAIT_CACHE_DIR", cache)
        .env("PLAIT_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}
