//! Distribution costs of the built-in patch-and-transform component against
//! a local registry: push, pull (cold and from the blob cache), signing and
//! checking its cosign signature (first and remembered), first compile,
//! cached load (disk and memory) and the first call. Prints one line per
//! step; each figure is the median of a few runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use plait_oci::{Authority, Client, ClientConfig, HashAlgorithm, Keychain, PublicKey, SigningKey};
use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};
use plait_sdk::Request;
use plait_testregistry::Registry;
use serde_json::json;

const RUNS: usize = 5;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn request() -> Request {
    Request {
        tag: "bench".into(),
        observed: plait_sdk::State {
            composite: Some(plait_sdk::Resource::new(json!({
                "apiVersion": "example.org/v1", "kind": "XBucket",
                "metadata": {"name": "b"}, "spec": {"region": "eu-west-1"}
            }))),
            resources: Default::default(),
        },
        input: Some(json!({
            "apiVersion": "pt.fn.crossplane.io/v1beta1",
            "kind": "Resources",
            "resources": [{
                "name": "bucket",
                "base": {"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket", "spec": {}},
                "patches": [{"type": "FromCompositeFieldPath",
                             "fromFieldPath": "spec.region", "toFieldPath": "spec.forProvider.region"}]
            }]
        })),
        ..Request::default()
    }
}

fn main() {
    let wasm = Builtin::PatchAndTransform.wasm();
    let registry = Registry::start();
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let keychain = Keychain::anonymous();
    let client = |cache: Option<&std::path::Path>| {
        Client::new(ClientConfig {
            insecure_registries: vec![registry.addr.clone()],
            cache_root: cache.map(|c| c.to_path_buf()),
            ..ClientConfig::default()
        })
        .unwrap()
    };
    println!(
        "patch-and-transform: {} bytes, registry {}",
        wasm.len(),
        registry.addr
    );

    let mut push = Vec::new();
    for run in 0..RUNS {
        let reference = registry.reference(&format!("bench/push{run}"), "v1");
        let pusher = client(None);
        let started = Instant::now();
        executor
            .block_on(pusher.push(wasm, &reference, None, &keychain))
            .unwrap();
        push.push(started.elapsed());
    }
    println!("push (new repository)        {:>10.2?}", median(push));

    let reference = registry.reference("bench/push0", "v1");
    let mut pull = Vec::new();
    let mut cached_pull = Vec::new();
    let mut resolved = None;
    for _ in 0..RUNS {
        let cache = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let cold = executor
            .block_on(client(Some(cache.path())).resolve(&reference, &keychain))
            .unwrap();
        pull.push(started.elapsed());
        let pinned = cold.pinned.clone();
        let started = Instant::now();
        executor
            .block_on(client(Some(cache.path())).resolve(&pinned, &keychain))
            .unwrap();
        cached_pull.push(started.elapsed());
        resolved = Some(cold);
    }
    let resolved = resolved.unwrap();
    println!("pull + verify (by tag)       {:>10.2?}", median(pull));
    println!(
        "pull from blob cache (pinned){:>10.2?}",
        median(cached_pull)
    );

    let key = plait_testcosign::KeyPair::generate();
    let pem = std::fs::read(key.private_key()).unwrap();
    let started = Instant::now();
    let signing_key =
        SigningKey::from_cosign_pem("cosign.key", &pem, plait_testcosign::PASSWORD.as_bytes())
            .unwrap();
    println!("open a cosign key (scrypt)   {:>10.2?}", started.elapsed());
    let started = Instant::now();
    executor
        .block_on(client(None).sign(&resolved.pinned, &resolved.digest, &signing_key, &keychain))
        .unwrap();
    println!("sign (push the signature)    {:>10.2?}", started.elapsed());
    let trusted = [Authority {
        name: "bench".into(),
        key: PublicKey::from_pem("cosign.pub", key.public_pem().as_bytes()).unwrap(),
        hash: HashAlgorithm::Sha256,
    }];
    let mut verify = Vec::new();
    let mut remembered = Vec::new();
    for _ in 0..RUNS {
        let verifier = client(None);
        let started = Instant::now();
        let first = executor
            .block_on(verifier.verify_signature(
                &resolved.pinned,
                &resolved.digest,
                &trusted,
                &keychain,
            ))
            .unwrap();
        verify.push(started.elapsed());
        assert!(!first.remembered);
        let started = Instant::now();
        let again = executor
            .block_on(verifier.verify_signature(
                &resolved.pinned,
                &resolved.digest,
                &trusted,
                &keychain,
            ))
            .unwrap();
        remembered.push(started.elapsed());
        assert!(again.remembered);
    }
    println!("verify signature (first)     {:>10.2?}", median(verify));
    println!("verify signature (remembered){:>10.2?}", median(remembered));

    let mut compile = Vec::new();
    let mut disk = Vec::new();
    let mut memory = Vec::new();
    let mut first_call = Vec::new();
    for _ in 0..RUNS {
        let cache = tempfile::tempdir().unwrap();
        let config = RuntimeConfig {
            cache_dir: Some(cache.path().to_path_buf()),
            ..RuntimeConfig::default()
        };
        let runtime = Runtime::new(config.clone()).unwrap();
        let started = Instant::now();
        let module = plait_oci::load(&runtime, &resolved).unwrap();
        compile.push(started.elapsed());
        let started = Instant::now();
        plait_oci::load(&runtime, &resolved).unwrap();
        memory.push(started.elapsed());
        let started = Instant::now();
        runtime
            .call(&module, &request(), &CallLimits::default())
            .unwrap();
        first_call.push(started.elapsed());

        let fresh = Runtime::new(config).unwrap();
        let started = Instant::now();
        plait_oci::load(&fresh, &resolved).unwrap();
        disk.push(started.elapsed());
        assert_eq!(fresh.stats().disk_hits, 1);
    }
    println!("first compile                {:>10.2?}", median(compile));
    println!("cached load (disk)           {:>10.2?}", median(disk));
    println!("cached load (memory)         {:>10.2?}", median(memory));
    println!("first call                   {:>10.2?}", median(first_call));
}
