//! Pushing, resolving and inspecting functions against a real registry
//! (Debian's docker-registry on 127.0.0.1).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use oci_client::client::ClientProtocol;
use oci_client::secrets::RegistryAuth;
use plait_oci::layout::{
    CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, LEGACY_CONFIG_MEDIA_TYPE, LEGACY_LAYER_MEDIA_TYPE, Layout,
};
use plait_oci::{BasicAuth, Client, ClientConfig, Error, Keychain, Reason, digest};
use plait_runtime::{Builtin, Runtime, RuntimeConfig};
use plait_testregistry::Registry;

fn client(registry: &Registry, cache: Option<&Path>) -> Client {
    Client::new(ClientConfig {
        insecure_registries: vec![registry.addr.clone()],
        cache_root: cache.map(Path::to_path_buf),
        attempts: 1,
        ..ClientConfig::default()
    })
    .unwrap()
}

fn patch_and_transform() -> &'static [u8] {
    Builtin::PatchAndTransform.wasm()
}

/// A component exporting `run-function` (with the wrong type) and
/// importing an interface plait does not provide.
fn component_importing(import: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(component
            (import "{import}" (instance))
            (core module $m (func (export "f")))
            (core instance $i (instantiate $m))
            (func $f (canon lift (core func $i "f")))
            (export "run-function" (func $f)))"#
    ))
    .unwrap()
}

/// A blob's media type and bytes.
type Blob<'a> = (&'a str, Vec<u8>);

/// Pushes an artifact as given, without the checks `Client::push` makes,
/// as another tool (or a mistake) would.
async fn push_raw(
    registry: &Registry,
    reference: &str,
    config: (&str, Vec<u8>),
    layer: (&str, Vec<u8>),
) {
    let client = oci_client::Client::new(oci_client::client::ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![registry.addr.clone()]),
        ..Default::default()
    });
    let image = reference.parse().unwrap();
    let layers = [oci_client::client::ImageLayer::new(
        layer.1,
        layer.0.to_string(),
        None,
    )];
    let config = oci_client::client::Config::new(config.1, config.0.to_string(), None);
    client
        .push(&image, &layers, config, &RegistryAuth::Anonymous, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn pushed_functions_pull_byte_identical_by_tag_and_by_digest() {
    let registry = Registry::start();
    let client = client(&registry, None);
    let reference = registry.reference("fn/patch-and-transform", "v1");
    let pushed = client
        .push(
            patch_and_transform(),
            &reference,
            Some("plait tests"),
            &Keychain::anonymous(),
        )
        .await
        .unwrap();
    assert_eq!(pushed.pinned, format!("{reference}@{}", pushed.digest));
    assert_eq!(pushed.component_digest, digest(patch_and_transform()));

    let by_digest = format!("{}/fn/patch-and-transform@{}", registry.addr, pushed.digest);
    for reference in [&reference, &pushed.pinned, &by_digest] {
        let resolved = client
            .resolve(reference, &Keychain::anonymous())
            .await
            .unwrap();
        assert_eq!(&*resolved.wasm, patch_and_transform(), "{reference}");
        assert_eq!(resolved.digest, pushed.digest, "{reference}");
        assert_eq!(resolved.layout, Layout::Cncf);
        assert_eq!(resolved.world.exports, vec!["run-function"]);
    }

    let inspection = client
        .inspect(&reference, &Keychain::anonymous())
        .await
        .unwrap();
    assert_eq!(inspection.digest, pushed.digest);
    assert_eq!(inspection.size, patch_and_transform().len() as u64);
    assert_eq!(inspection.config.author.as_deref(), Some("plait tests"));
    assert_eq!(
        inspection.config.created.as_deref(),
        Some("1970-01-01T00:00:00Z")
    );
    let component = inspection.config.component.unwrap();
    assert_eq!(component.exports, vec!["run-function"]);
    assert!(
        component
            .imports
            .iter()
            .any(|i| i.starts_with("plait:function/")),
        "{:?}",
        component.imports
    );
}

#[tokio::test]
async fn the_same_file_pushed_twice_gets_the_same_digest() {
    let registry = Registry::start();
    let client = client(&registry, None);
    let keychain = Keychain::anonymous();
    // The second push to the same tag and a push to another repository.
    let mut digests = Vec::new();
    for (repository, tag) in [("a/fn", "v1"), ("a/fn", "v1"), ("b/fn", "latest")] {
        let pushed = client
            .push(
                patch_and_transform(),
                &registry.reference(repository, tag),
                None,
                &keychain,
            )
            .await
            .unwrap();
        digests.push(pushed.digest);
    }
    assert!(digests.iter().all(|d| *d == digests[0]), "{digests:?}");
}

#[tokio::test]
async fn a_blob_altered_in_the_registry_fails_with_a_digest_mismatch() {
    let registry = Registry::start();
    let client = client(&registry, None);
    let reference = registry.reference("fn/altered", "v1");
    let pushed = client
        .push(
            patch_and_transform(),
            &reference,
            None,
            &Keychain::anonymous(),
        )
        .await
        .unwrap();
    let mut altered = patch_and_transform().to_vec();
    let last = altered.len() - 1;
    altered[last] ^= 0xff;
    std::fs::write(registry.blob_path(&pushed.component_digest), &altered).unwrap();

    let error = client
        .resolve(&reference, &Keychain::anonymous())
        .await
        .unwrap_err();
    assert_eq!(error.reason(), Reason::DigestMismatch, "{error}");
    assert!(
        error.to_string().contains(&pushed.component_digest),
        "{error}"
    );
}

#[tokio::test]
async fn artifacts_that_are_not_plait_functions_are_refused_with_the_reason() {
    let registry = Registry::start();
    let client = client(&registry, None);
    let http_import = "wasi:http/outgoing-handler@0.2.0";
    let cases: [(&str, Blob, Blob, Reason, &str); 6] = [
        (
            "not-wasm",
            (CONFIG_MEDIA_TYPE, b"{}".to_vec()),
            (LAYER_MEDIA_TYPE, b"#!/bin/sh\necho hello\n".to_vec()),
            Reason::NotAComponent,
            "do not start with the Wasm magic",
        ),
        (
            "core-module",
            (CONFIG_MEDIA_TYPE, b"{}".to_vec()),
            (LAYER_MEDIA_TYPE, wat::parse_str("(module)").unwrap()),
            Reason::NotAComponent,
            "a core WebAssembly module, not a component",
        ),
        (
            // The component's own imports are checked, whatever the config says.
            "http-component",
            (CONFIG_MEDIA_TYPE, b"{}".to_vec()),
            (LAYER_MEDIA_TYPE, component_importing(http_import)),
            Reason::IncompatibleWorld,
            http_import,
        ),
        (
            // A config that lists the import is refused before the download.
            "http-component-listed",
            (
                CONFIG_MEDIA_TYPE,
                format!(
                    r#"{{"component":{{"imports":["{http_import}"],"exports":["run-function"]}}}}"#
                )
                .into_bytes(),
            ),
            (LAYER_MEDIA_TYPE, component_importing(http_import)),
            Reason::IncompatibleWorld,
            http_import,
        ),
        (
            "no-export",
            (LEGACY_CONFIG_MEDIA_TYPE, b"{}".to_vec()),
            (
                LEGACY_LAYER_MEDIA_TYPE,
                wat::parse_str("(component)").unwrap(),
            ),
            Reason::IncompatibleWorld,
            "does not export run-function",
        ),
        (
            "container-image",
            ("application/vnd.oci.image.config.v1+json", b"{}".to_vec()),
            (
                "application/vnd.oci.image.layer.v1.tar+gzip",
                b"\x1f\x8b".to_vec(),
            ),
            Reason::UnsupportedArtifact,
            "config media type",
        ),
    ];
    for (name, config, layer, reason, text) in cases {
        let reference = registry.reference(&format!("bad/{name}"), "v1");
        push_raw(&registry, &reference, config, layer).await;
        let error = client
            .resolve(&reference, &Keychain::anonymous())
            .await
            .unwrap_err();
        assert_eq!(error.reason(), reason, "{name}: {error}");
        let message = error.to_string();
        assert!(message.contains(text), "{name}: {message}");
        assert!(message.contains(&reference), "{name}: {message}");
    }
}

#[tokio::test]
async fn push_refuses_what_is_not_a_plait_function() {
    let registry = Registry::start();
    let client = client(&registry, None);
    let cases: [(Vec<u8>, Reason, &str); 3] = [
        (b"hello".to_vec(), Reason::NotAComponent, "Wasm magic"),
        (
            wat::parse_str("(module)").unwrap(),
            Reason::NotAComponent,
            "core WebAssembly module",
        ),
        (
            component_importing("wasi:keyvalue/store@0.2.0-draft"),
            Reason::IncompatibleWorld,
            "wasi:keyvalue/store@0.2.0-draft",
        ),
    ];
    for (bytes, reason, text) in cases {
        let error = client
            .push(
                &bytes,
                &registry.reference("fn/bad", "v1"),
                None,
                &Keychain::anonymous(),
            )
            .await
            .unwrap_err();
        assert_eq!(error.reason(), reason, "{error}");
        assert!(error.to_string().contains(text), "{error}");
    }
}

#[tokio::test]
async fn the_older_wasm_to_oci_layout_is_pulled() {
    let registry = Registry::start();
    let client = client(&registry, None);
    let reference = registry.reference("legacy/fn", "v1");
    push_raw(
        &registry,
        &reference,
        (LEGACY_CONFIG_MEDIA_TYPE, b"{}".to_vec()),
        (LEGACY_LAYER_MEDIA_TYPE, patch_and_transform().to_vec()),
    )
    .await;
    let resolved = client
        .resolve(&reference, &Keychain::anonymous())
        .await
        .unwrap();
    assert_eq!(resolved.layout, Layout::WasmToOci);
    assert_eq!(&*resolved.wasm, patch_and_transform());
}

#[tokio::test]
async fn registries_with_auth_need_the_right_credentials() {
    let registry = Registry::start_with_auth("alice", "wonderland");
    let client = client(&registry, None);
    let reference = registry.reference("private/fn", "v1");
    let right = Keychain::anonymous().with(
        &registry.addr,
        BasicAuth {
            username: "alice".into(),
            password: "wonderland".into(),
        },
    );
    let wrong = Keychain::anonymous().with(
        &registry.addr,
        BasicAuth {
            username: "alice".into(),
            password: "looking-glass".into(),
        },
    );
    let pushed = client
        .push(patch_and_transform(), &reference, None, &right)
        .await
        .unwrap();

    for (name, keychain) in [("wrong", &wrong), ("anonymous", &Keychain::anonymous())] {
        let error = client.resolve(&reference, keychain).await.unwrap_err();
        assert_eq!(error.reason(), Reason::Unauthorized, "{name}: {error}");
        let error = client
            .push(patch_and_transform(), &reference, None, keychain)
            .await
            .unwrap_err();
        assert_eq!(error.reason(), Reason::Unauthorized, "{name} push: {error}");
    }
    let resolved = client.resolve(&reference, &right).await.unwrap();
    assert_eq!(resolved.digest, pushed.digest);
}

#[tokio::test]
async fn docker_config_credentials_reach_the_registry() {
    let registry = Registry::start_with_auth("bob", "builder");
    let client = client(&registry, None);
    let auth = base64_user_password("bob:builder");
    let config = format!(
        r#"{{"auths":{{"http://{}":{{"auth":"{auth}"}}}}}}"#,
        registry.addr
    );
    let keychain = Keychain::from_docker_config(".dockerconfigjson", config.as_bytes()).unwrap();
    client
        .push(
            patch_and_transform(),
            &registry.reference("fn/p", "v1"),
            None,
            &keychain,
        )
        .await
        .unwrap();
}

fn base64_user_password(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn missing_references_and_oversized_components_are_named() {
    let registry = Registry::start();
    let reference = registry.reference("fn/p", "v1");
    client(&registry, None)
        .push(
            patch_and_transform(),
            &reference,
            None,
            &Keychain::anonymous(),
        )
        .await
        .unwrap();
    let small = Client::new(ClientConfig {
        insecure_registries: vec![registry.addr.clone()],
        max_component_bytes: 1024,
        ..ClientConfig::default()
    })
    .unwrap();
    let cases = [
        (
            small.resolve(&reference, &Keychain::anonymous()).await,
            Reason::TooLarge,
        ),
        (
            small
                .resolve(&registry.reference("fn/p", "v2"), &Keychain::anonymous())
                .await,
            Reason::NotFound,
        ),
        (
            small
                .resolve(
                    &registry.reference("fn/absent", "v1"),
                    &Keychain::anonymous(),
                )
                .await,
            Reason::NotFound,
        ),
    ];
    for (result, reason) in cases {
        let error = result.unwrap_err();
        assert_eq!(error.reason(), reason, "{error}");
    }
}

#[tokio::test]
async fn an_unreachable_registry_is_a_transport_error_after_the_retries() {
    // A port nothing listens on: bind, note it, release it.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let client = Client::new(ClientConfig {
        insecure_registries: vec![addr.to_string()],
        attempts: 3,
        initial_backoff: std::time::Duration::from_millis(1),
        ..ClientConfig::default()
    })
    .unwrap();
    let error = client
        .resolve(&format!("{addr}/fn/p:v1"), &Keychain::anonymous())
        .await
        .unwrap_err();
    assert_eq!(error.reason(), Reason::Unreachable, "{error}");
    assert!(error.is_transient());
}

#[tokio::test]
async fn resolved_digests_are_served_from_the_cache_without_the_registry() {
    let cache = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let reference = registry.reference("fn/cached", "v1");
    let pushed = client(&registry, None)
        .push(
            patch_and_transform(),
            &reference,
            None,
            &Keychain::anonymous(),
        )
        .await
        .unwrap();
    let first = client(&registry, Some(cache.path()))
        .resolve(&reference, &Keychain::anonymous())
        .await
        .unwrap();
    let pinned = first.pinned.clone();
    let blob = cache
        .path()
        .join("blobs/sha256")
        .join(pushed.component_digest.trim_start_matches("sha256:"));
    assert_eq!(std::fs::read(&blob).unwrap(), patch_and_transform());
    drop(registry);

    let offline = Client::new(ClientConfig {
        cache_root: Some(cache.path().to_path_buf()),
        attempts: 1,
        ..ClientConfig::default()
    })
    .unwrap();
    let again = offline
        .resolve(&pinned, &Keychain::anonymous())
        .await
        .unwrap();
    assert_eq!(again.digest, pushed.digest);
    assert_eq!(&*again.wasm, patch_and_transform());
}

#[tokio::test]
async fn a_tag_is_resolved_once_per_client_until_resolved_latest() {
    let registry = Registry::start();
    let reference = registry.reference("fn/moving", "stable");
    let keychain = Keychain::anonymous();
    let client = client(&registry, None);
    let first = client
        .push(Builtin::AutoReady.wasm(), &reference, None, &keychain)
        .await
        .unwrap();
    assert_eq!(
        client.resolve(&reference, &keychain).await.unwrap().digest,
        first.digest
    );
    let moved = client
        .push(patch_and_transform(), &reference, None, &keychain)
        .await
        .unwrap();
    assert_ne!(first.digest, moved.digest);
    assert_eq!(
        client.resolve(&reference, &keychain).await.unwrap().digest,
        first.digest
    );
    assert_eq!(
        client
            .resolve_latest(&reference, &keychain)
            .await
            .unwrap()
            .digest,
        moved.digest
    );
    assert_eq!(
        client.resolve(&reference, &keychain).await.unwrap().digest,
        moved.digest,
        "resolve_latest updates what the client remembers"
    );
    let fresh = self::client(&registry, None);
    assert_eq!(
        fresh.resolve(&reference, &keychain).await.unwrap().digest,
        moved.digest
    );
}

#[tokio::test]
async fn resolved_functions_load_into_the_runtime_by_component_digest() {
    let registry = Registry::start();
    let reference = registry.reference("fn/p", "v1");
    let client = client(&registry, None);
    client
        .push(
            Builtin::AutoReady.wasm(),
            &reference,
            None,
            &Keychain::anonymous(),
        )
        .await
        .unwrap();
    let resolved = client
        .resolve(&reference, &Keychain::anonymous())
        .await
        .unwrap();
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let module = plait_oci::load(&runtime, &resolved).unwrap();
    assert_eq!(module.digest, resolved.component_digest);
    assert_eq!(module.digest, Builtin::AutoReady.digest());
}

#[test]
fn errors_name_their_reason() {
    let error = Error::NotFound {
        reference: "r.io/fn:v1".into(),
        message: "manifest unknown".into(),
    };
    assert_eq!(error.reason().as_str(), "NotFound");
    assert!(error.to_string().starts_with("r.io/fn:v1: "));
}
