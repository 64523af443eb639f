//! Signed functions end to end: `plait function push --sign` and `plait
//! function verify` against real cosign (built from its Go module) and
//! Debian's docker-registry, each refusal with its own reason, and `plait
//! render` under an ImageConfig that rewrites and verifies.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use plait_oci::signature::Payload;
use plait_runtime::Builtin;
use plait_testcosign::KeyPair;
use plait_testregistry::Registry;

mod common;
use common::repo;

/// Runs plait with its own cache and Docker config, and the cosign key
/// password in $COSIGN_PASSWORD.
fn plait(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(args)
        .current_dir(repo())
        .env("PLAIT_CACHE_DIR", home.join("cache"))
        .env("DOCKER_CONFIG", home.join("docker"))
        .env("COSIGN_PASSWORD", plait_testcosign::PASSWORD)
        .output()
        .expect("plait runs")
}

fn succeeded(what: &str, output: &Output) -> String {
    assert!(
        output.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn failed(what: &str, output: &Output) -> String {
    assert!(
        !output.status.success(),
        "{what} succeeded: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A component file: the built-in patch-and-transform, or the built-in
/// auto-ready, so two pushes can have two digests.
fn component(home: &Path, builtin: Builtin) -> PathBuf {
    let path = home.join(format!("{}.wasm", builtin.name()));
    std::fs::write(&path, builtin.wasm()).unwrap();
    path
}

/// Pushes `builtin` to `reference` (signed with `key` if given); the pinned reference.
fn push(home: &Path, builtin: Builtin, reference: &str, key: Option<&KeyPair>) -> String {
    let file = component(home, builtin);
    let mut args = vec![
        "function",
        "push",
        file.to_str().unwrap(),
        reference,
        "--insecure",
    ];
    let key_path = key.map(|k| k.private_key());
    if let Some(path) = &key_path {
        args.extend(["--sign", path.to_str().unwrap()]);
    }
    let printed = succeeded("plait function push", &plait(home, &args));
    printed.lines().next().unwrap().to_string()
}

fn verify(home: &Path, reference: &str, key: &KeyPair) -> Output {
    plait(
        home,
        &[
            "function",
            "verify",
            reference,
            "--key",
            key.public_key().to_str().unwrap(),
            "--insecure",
        ],
    )
}

fn digest_of(pinned: &str) -> &str {
    pinned.split_once('@').unwrap().1
}

#[test]
fn a_function_signed_by_cosign_verifies_in_plait() {
    let registry = Registry::shared();
    let home = tempfile::tempdir().unwrap();
    let key = KeyPair::generate();
    let reference = registry.reference("signing/by-cosign", "v1");
    let pinned = push(home.path(), Builtin::PatchAndTransform, &reference, None);
    succeeded("cosign sign", &plait_testcosign::sign(&key, &pinned));
    let verified = succeeded(
        "plait function verify",
        &verify(home.path(), &reference, &key),
    );
    assert_eq!(verified.trim(), pinned);
}

#[test]
fn a_function_signed_by_plait_verifies_in_cosign() {
    let registry = Registry::shared();
    let home = tempfile::tempdir().unwrap();
    let key = KeyPair::generate();
    let reference = registry.reference("signing/by-plait", "v1");
    let file = component(home.path(), Builtin::PatchAndTransform);
    let key_path = key.private_key();
    let printed = succeeded(
        "plait function push --sign",
        &plait(
            home.path(),
            &[
                "function",
                "push",
                file.to_str().unwrap(),
                &reference,
                "--insecure",
                "--sign",
                key_path.to_str().unwrap(),
            ],
        ),
    );
    let pinned = printed.lines().next().unwrap();
    let digest = digest_of(pinned);
    assert_eq!(
        printed.lines().nth(1).unwrap(),
        format!(
            "signature: {}/signing/by-plait:{}.sig",
            registry.addr,
            digest.replace(':', "-")
        )
    );
    let checked = plait_testcosign::verify(&key, pinned);
    let claims = succeeded("cosign verify", &checked);
    assert!(claims.contains(digest), "{claims}");
    succeeded("plait function verify", &verify(home.path(), pinned, &key));

    // A wrong password signs nothing and pushes nothing.
    let other = registry.reference("signing/wrong-password", "v1");
    let output = Command::new(env!("CARGO_BIN_EXE_plait"))
        .args([
            "function",
            "push",
            file.to_str().unwrap(),
            &other,
            "--insecure",
        ])
        .args(["--sign", key_path.to_str().unwrap()])
        .env("PLAIT_CACHE_DIR", home.path().join("cache"))
        .env("DOCKER_CONFIG", home.path().join("docker"))
        .env("COSIGN_PASSWORD", "not the password")
        .output()
        .unwrap();
    let stderr = failed("push with a wrong password", &output);
    assert!(
        stderr.contains("cannot decrypt the private key") && stderr.contains("COSIGN_PASSWORD"),
        "{stderr}"
    );
    let stderr = failed(
        "verify of a push that never happened",
        &verify(home.path(), &other, &key),
    );
    assert!(stderr.contains("not found"), "{stderr}");
}

#[test]
fn unverifiable_functions_are_refused_each_with_its_own_reason() {
    let registry = Registry::shared();
    let home = tempfile::tempdir().unwrap();
    let trusted = KeyPair::generate();
    let stranger = KeyPair::generate();

    // No signature at all.
    let unsigned = push(
        home.path(),
        Builtin::PatchAndTransform,
        &registry.reference("signing/unsigned", "v1"),
        None,
    );

    // Signed, but by a key the verifier does not trust.
    let by_stranger = push(
        home.path(),
        Builtin::PatchAndTransform,
        &registry.reference("signing/by-stranger", "v1"),
        Some(&stranger),
    );

    // A trusted signature made for other content, attached to this digest.
    let other_digest_ref = registry.reference("signing/other-digest", "v1");
    let signed_elsewhere = push(
        home.path(),
        Builtin::PatchAndTransform,
        &registry.reference("signing/other-digest", "original"),
        None,
    );
    let target = push(home.path(), Builtin::AutoReady, &other_digest_ref, None);
    let dir = trusted.dir.path();
    let payload_file = dir.join("payload.json");
    let generated = succeeded(
        "cosign generate",
        &plait_testcosign::run(
            dir,
            &["generate", "--allow-http-registry", &signed_elsewhere],
        ),
    );
    std::fs::write(&payload_file, generated.trim_end()).unwrap();
    let signature = succeeded(
        "cosign sign-blob",
        &plait_testcosign::run(
            dir,
            &[
                "sign-blob",
                "--key",
                trusted.private_key().to_str().unwrap(),
                "--tlog-upload=false",
                "--yes",
                payload_file.to_str().unwrap(),
            ],
        ),
    );
    let signature_file = dir.join("payload.sig");
    std::fs::write(&signature_file, signature.trim()).unwrap();
    succeeded(
        "cosign attach signature",
        &plait_testcosign::run(
            dir,
            &[
                "attach",
                "signature",
                "--payload",
                payload_file.to_str().unwrap(),
                "--signature",
                signature_file.to_str().unwrap(),
                "--allow-insecure-registry",
                "--allow-http-registry",
                &target,
            ],
        ),
    );

    // Signed by the trusted key, then the payload changed in the
    // registry's storage.
    let tampered = push(
        home.path(),
        Builtin::PatchAndTransform,
        &registry.reference("signing/tampered", "v1"),
        None,
    );
    succeeded("cosign sign", &plait_testcosign::sign(&trusted, &tampered));
    let repository = format!("{}/signing/tampered", registry.addr);
    let payload = Payload::new(&repository, digest_of(&tampered)).to_bytes();
    let stored = registry.blob_path(&plait_oci::digest(&payload));
    let mut altered = std::fs::read(&stored).unwrap();
    assert_eq!(altered, payload, "cosign writes the payload plait expects");
    let at = altered.len() - 2;
    altered[at] = b' ';
    std::fs::write(&stored, altered).unwrap();

    // A signed tag moved to unsigned content.
    let moved_ref = registry.reference("signing/moved", "v1");
    let first = push(
        home.path(),
        Builtin::PatchAndTransform,
        &moved_ref,
        Some(&trusted),
    );
    succeeded(
        "verify before the move",
        &verify(home.path(), &moved_ref, &trusted),
    );
    let moved = push(home.path(), Builtin::AutoReady, &moved_ref, None);
    assert_ne!(digest_of(&first), digest_of(&moved));

    let cases = [
        ("no signature", unsigned, "it has no signature".to_string()),
        (
            "another key",
            by_stranger,
            "no signature verifies with the trusted keys".into(),
        ),
        (
            "a payload naming another digest",
            target,
            format!("signs another digest, {}", digest_of(&signed_elsewhere)),
        ),
        (
            "a tampered signature",
            tampered,
            "signature 1 was tampered with".into(),
        ),
        (
            "a tag moved to unsigned content",
            moved_ref,
            format!("{}.sig", digest_of(&moved).replace(':', "-")),
        ),
    ];
    for (name, reference, want) in cases {
        // A fresh cache each time: nothing is served from an earlier check.
        let home = tempfile::tempdir().unwrap();
        let stderr = failed(name, &verify(home.path(), &reference, &trusted));
        assert!(
            stderr.contains("signature verification failed") && stderr.contains(&want),
            "{name}: {stderr}"
        );
    }
}

#[test]
fn render_applies_image_configs_to_the_functions_it_pulls() {
    let registry = Registry::shared();
    let home = tempfile::tempdir().unwrap();
    let key = KeyPair::generate();
    let reference = registry.reference("signing/render/function-patch-and-transform", "v1");
    let pinned = push(home.path(), Builtin::PatchAndTransform, &reference, None);
    let functions = home.path().join("functions.yaml");
    // The Function names a registry that does not exist; the ImageConfig
    // rewrites it to the test registry and asks for a signature.
    let image_config = |keys_secret: &str| {
        format!(
            "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: function-patch-and-transform\nspec:\n  package: mirror.invalid/render/function-patch-and-transform:v1\n---\n\
             apiVersion: pkg.crossplane.io/v1beta1\nkind: ImageConfig\nmetadata:\n  name: signed-mirror\nspec:\n  matchImages:\n  - prefix: mirror.invalid/\n  - prefix: {0}/signing/render/\n  rewriteImage:\n    prefix: {0}/signing/\n  verification:\n    provider: Cosign\n    cosign:\n      authorities:\n      - name: team\n        key:\n          secretRef: {{name: {keys_secret}, key: cosign.pub}}\n          hashAlgorithm: sha256\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata:\n  name: team-keys\nstringData:\n  cosign.pub: |\n{1}",
            registry.addr,
            key.public_pem()
                .lines()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        )
    };
    std::fs::write(&functions, image_config("team-keys")).unwrap();
    let args = [
        "render",
        "examples/getting-started/xr.yaml",
        "examples/getting-started/composition.yaml",
        functions.to_str().unwrap(),
        "--xrd",
        "examples/getting-started/xrd.yaml",
        "--insecure",
    ];
    let stderr = failed("render of an unsigned package", &plait(home.path(), &args));
    assert!(
        stderr.contains("Function \"function-patch-and-transform\": its package is not verified by ImageConfig \"signed-mirror\"")
            && stderr.contains(&format!("{}/signing/render/function-patch-and-transform", registry.addr))
            && stderr.contains("it has no signature"),
        "{stderr}"
    );

    succeeded("cosign sign", &plait_testcosign::sign(&key, &pinned));
    let rendered = succeeded("render of a signed package", &plait(home.path(), &args));
    let want =
        std::fs::read_to_string(repo().join("examples/getting-started/expected.yaml")).unwrap();
    assert_eq!(rendered, want);

    // A KCL module a function-kcl step names is held to the same
    // ImageConfig: refused unsigned, naming the step, the field and the
    // config; run once signed.
    let module_digest = registry.push_kcl_module(
        "signing/render/kcl-network",
        "v1",
        &plait_testregistry::KclModule {
            name: "network",
            version: "0.1.0",
            files: &[
                (
                    "kcl.mod",
                    "[package]\nname = \"network\"\nversion = \"0.1.0\"\n",
                ),
                ("main.k", "items = []\n"),
            ],
            gzip: true,
        },
    );
    let kcl_composition = home.path().join("kcl-composition.yaml");
    std::fs::write(
        &kcl_composition,
        r#"apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata: {name: kcl}
spec:
  compositeTypeRef: {apiVersion: example.org/v1alpha1, kind: App}
  mode: Pipeline
  pipeline:
  - step: compose
    functionRef: {name: function-kcl}
    input:
      apiVersion: krm.kcl.dev/v1alpha1
      kind: KCLInput
      spec: {source: "oci://mirror.invalid/render/kcl-network:v1"}
"#,
    )
    .unwrap();
    let kcl_args = [
        "render",
        "examples/getting-started/xr.yaml",
        kcl_composition.to_str().unwrap(),
        functions.to_str().unwrap(),
        "--insecure-registry",
        &registry.addr,
    ];
    let stderr = failed(
        "render of an unsigned KCL module",
        &plait(home.path(), &kcl_args),
    );
    assert!(
        stderr.contains("step \"compose\": spec.source")
            && stderr.contains("it is not verified by ImageConfig \"signed-mirror\"")
            && stderr.contains("it has no signature"),
        "{stderr}"
    );
    let module_pinned = format!(
        "{}/signing/render/kcl-network@{module_digest}",
        registry.addr
    );
    succeeded("cosign sign", &plait_testcosign::sign(&key, &module_pinned));
    succeeded(
        "render of a signed KCL module",
        &plait(home.path(), &kcl_args),
    );

    // A key Secret that is not among the inputs is named.
    std::fs::write(&functions, image_config("absent-keys")).unwrap();
    let stderr = failed("render without the key Secret", &plait(home.path(), &args));
    assert!(
        stderr.contains("ImageConfig \"signed-mirror\"")
            && stderr.contains("Secret (render input)/absent-keys: not found"),
        "{stderr}"
    );
}
