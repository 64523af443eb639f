//! `plait validate` with Crossplane packages among the extensions: a
//! Configuration pulled from a real registry, its XRD taken and its
//! Provider dependency followed for the Provider's CRD; both kept in the
//! cache, so a second run needs no registry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use oci_client::client::{ClientProtocol, Config, ImageLayer};
use oci_client::secrets::RegistryAuth;
use plait_testregistry::Registry;

const PROVIDER_PACKAGE: &str = r#"
apiVersion: meta.pkg.crossplane.io/v1
kind: Provider
metadata: {name: provider-disk}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: disks.storage.example.org}
spec:
  group: storage.example.org
  names: {kind: Disk, plural: disks}
  scope: Cluster
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              sizeGb: {type: integer}
"#;

fn configuration_package(provider: &str) -> String {
    format!(
        r#"
apiVersion: meta.pkg.crossplane.io/v1
kind: Configuration
metadata: {{name: configuration-disks}}
spec:
  dependsOn:
  - provider: {provider}
    version: v0.1.0
---
apiVersion: apiextensions.crossplane.io/v1
kind: CompositeResourceDefinition
metadata: {{name: xvolumes.example.org}}
spec:
  group: example.org
  names: {{kind: XVolume, plural: xvolumes}}
  versions:
  - name: v1
    served: true
    referenceable: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {{type: integer}}
"#
    )
}

/// A gzipped tar holding `package.yaml`.
fn layer(package_yaml: &str) -> Vec<u8> {
    plait_testregistry::tar_layer(&[("package.yaml", package_yaml)])
}

/// Pushes a package image as Crossplane's tools build one: an image
/// config and one layer annotated as the package's base layer.
async fn push_package(registry: &Registry, reference: &str, package_yaml: &str) {
    let client = oci_client::Client::new(oci_client::client::ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![registry.addr.clone()]),
        ..Default::default()
    });
    let annotations = BTreeMap::from([("io.crossplane.xpkg".to_string(), "base".to_string())]);
    let layers = [ImageLayer::new(
        layer(package_yaml),
        "application/vnd.oci.image.layer.v1.tar+gzip".to_string(),
        Some(annotations),
    )];
    let config = Config::new(
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#
            .to_vec(),
        "application/vnd.oci.image.config.v1+json".to_string(),
        None,
    );
    client
        .push(
            &reference.parse().unwrap(),
            &layers,
            config,
            &RegistryAuth::Anonymous,
            None,
        )
        .await
        .unwrap();
}

fn validate(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .arg("validate")
        .args(args)
        .env("PLAIT_CACHE_DIR", cache)
        .env("DOCKER_CONFIG", cache.join("no-docker-config"))
        .output()
        .unwrap()
}

#[tokio::test]
async fn package_schemas_come_from_the_registry_with_their_dependencies_then_from_the_cache() {
    let registry = Registry::start();
    let provider = format!("{}/pkgs/provider-disk", registry.addr);
    push_package(&registry, &format!("{provider}:v0.1.0"), PROVIDER_PACKAGE).await;
    let configuration = registry.reference("pkgs/configuration-disks", "v0.1.0");
    push_package(&registry, &configuration, &configuration_package(&provider)).await;

    let dir = tempfile::tempdir().unwrap();
    let extensions = dir.path().join("extensions.yaml");
    std::fs::write(
        &extensions,
        format!(
            "apiVersion: pkg.crossplane.io/v1\nkind: Configuration\nmetadata: {{name: disks}}\nspec: {{package: {configuration}}}\n"
        ),
    )
    .unwrap();
    let resources = dir.path().join("resources.yaml");
    std::fs::write(
        &resources,
        "apiVersion: storage.example.org/v1beta1\nkind: Disk\nmetadata: {name: good}\nspec: {sizeGb: 3}\n\
         ---\napiVersion: storage.example.org/v1beta1\nkind: Disk\nmetadata: {name: bad}\nspec: {sizeGb: big}\n\
         ---\napiVersion: example.org/v1\nkind: XVolume\nmetadata: {name: v}\nspec: {}\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let (extensions, resources) = (
        extensions.display().to_string(),
        resources.display().to_string(),
    );
    let want = "[✓] storage.example.org/v1beta1, Kind=Disk, good validated successfully\n\
                [x] schema validation error storage.example.org/v1beta1, Kind=Disk, bad : failed to create typed patch object (/bad; storage.example.org/v1beta1, Kind=Disk): .spec.sizeGb: expected numeric (int or float), got string\n\
                [x] schema validation error example.org/v1, Kind=XVolume, v : spec.size: Required value\n\
                Total 3 resources: 0 missing schemas, 1 success cases, 2 failure cases\n";
    let addr = registry.addr.clone();
    let args = [
        extensions.as_str(),
        resources.as_str(),
        "--insecure-registry",
        addr.as_str(),
    ];
    let out = validate(&cache, &args);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        want,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success());
    assert!(
        cache.join("packages").read_dir().unwrap().count() == 2,
        "both packages kept"
    );

    // Without the registry: from the cache.
    drop(registry);
    let out = validate(&cache, &args);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        want,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // --clean-cache pulls again, and says which package it could not pull.
    let mut clean = args.to_vec();
    clean.push("--clean-cache");
    let out = validate(&cache, &clean);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "Configuration {addr}/pkgs/configuration-disks:v0.1.0"
        )),
        "{stderr}"
    );
}
