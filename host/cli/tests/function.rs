//! `plait function push/pull/inspect` and `plait render` with Functions
//! pulled from a registry, end to end against Debian's docker-registry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use plait_runtime::Builtin;
use plait_testregistry::Registry;

mod common;
use common::repo;

/// Runs plait with its own cache and Docker config, so neither the user's
/// credentials nor earlier pulls leak in.
fn plait(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(args)
        .current_dir(repo())
        .env("PLAIT_CACHE_DIR", home.join("cache"))
        .env("DOCKER_CONFIG", home.join("docker"))
        .output()
        .expect("plait runs")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "plait failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn builtin_file(home: &Path) -> PathBuf {
    let path = home.join("patch-and-transform.wasm");
    std::fs::write(&path, Builtin::PatchAndTransform.wasm()).unwrap();
    path
}

#[test]
fn push_pull_and_inspect_round_trip_a_function() {
    let registry = Registry::start();
    let home = tempfile::tempdir().unwrap();
    let file = builtin_file(home.path());
    let reference = registry.reference("fn/patch-and-transform", "v1");

    let pushed = stdout(&plait(
        home.path(),
        &[
            "function",
            "push",
            file.to_str().unwrap(),
            &reference,
            "--insecure",
            "--author",
            "plait tests",
        ],
    ));
    let pinned = pushed.trim();
    let (_, digest) = pinned.split_once('@').unwrap();
    assert_eq!(pinned, format!("{reference}@{digest}"));
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );

    let by_digest = format!("{}/fn/patch-and-transform@{digest}", registry.addr);
    for (name, source) in [("tag", &reference), ("digest", &by_digest)] {
        let out = home.path().join(format!("{name}.wasm"));
        let printed = stdout(&plait(
            home.path(),
            &[
                "function",
                "pull",
                source,
                "-o",
                out.to_str().unwrap(),
                "--insecure",
            ],
        ));
        assert!(printed.trim().ends_with(digest), "{name}: {printed}");
        assert_eq!(
            std::fs::read(&out).unwrap(),
            Builtin::PatchAndTransform.wasm(),
            "{name}"
        );
    }

    let inspected = stdout(&plait(
        home.path(),
        &["function", "inspect", &reference, "--insecure"],
    ));
    let inspected: serde_json::Value = serde_yaml_ng::from_str(&inspected).unwrap();
    assert_eq!(inspected["digest"], digest);
    assert_eq!(
        inspected["component"]["size"],
        Builtin::PatchAndTransform.wasm().len()
    );
    assert_eq!(
        inspected["component"]["digest"],
        Builtin::PatchAndTransform.digest()
    );
    assert_eq!(inspected["world"], "plait:function/function@1.0.0");
    assert_eq!(inspected["created"], "1970-01-01T00:00:00Z");
    assert_eq!(inspected["author"], "plait tests");
    assert_eq!(inspected["exports"], serde_json::json!(["run-function"]));
    assert!(
        inspected["imports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i.as_str().is_some_and(|i| i.starts_with("plait:function/"))),
        "{inspected}"
    );
}

#[test]
fn function_commands_fail_with_a_specific_message() {
    let registry = Registry::start_with_auth("alice", "wonderland");
    let home = tempfile::tempdir().unwrap();
    let file = builtin_file(home.path());
    let not_wasm = home.path().join("script.wasm");
    std::fs::write(&not_wasm, "#!/bin/sh\n").unwrap();
    let core_module = home.path().join("core.wasm");
    std::fs::write(&core_module, b"\0asm\x01\0\0\0").unwrap();
    let wrong = home.path().join("wrong.json");
    let right = home.path().join("right.json");
    for (path, password) in [(&wrong, "looking-glass"), (&right, "wonderland")] {
        let auth = base64_encode(&format!("alice:{password}"));
        std::fs::write(
            path,
            format!(r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#, registry.addr),
        )
        .unwrap();
    }
    let reference = registry.reference("fn/p", "v1");
    let missing = registry.reference("fn/p", "v2");
    let (file, not_wasm, core_module, wrong, right) = (
        file.to_str().unwrap(),
        not_wasm.to_str().unwrap(),
        core_module.to_str().unwrap(),
        wrong.to_str().unwrap(),
        right.to_str().unwrap(),
    );
    let ok = plait(
        home.path(),
        &[
            "function",
            "push",
            file,
            &reference,
            "--insecure",
            "--docker-config",
            right,
        ],
    );
    stdout(&ok);

    let cases: [(&[&str], &str); 7] = [
        (
            &["function", "push", "no-such.wasm", &reference, "--insecure"],
            "cannot read no-such.wasm",
        ),
        (
            &["function", "push", not_wasm, &reference, "--insecure"],
            "do not start with the Wasm magic",
        ),
        (
            &["function", "push", core_module, &reference, "--insecure"],
            "a core WebAssembly module, not a component",
        ),
        (
            &[
                "function",
                "push",
                file,
                &reference,
                "--insecure",
                "--docker-config",
                wrong,
            ],
            "unauthorized",
        ),
        (
            &[
                "function",
                "pull",
                &reference,
                "--insecure",
                "--docker-config",
                wrong,
            ],
            "unauthorized",
        ),
        (
            &[
                "function",
                "inspect",
                &missing,
                "--insecure",
                "--docker-config",
                right,
            ],
            "not found",
        ),
        (
            &["function", "pull", "Not A Reference", "--insecure"],
            "invalid OCI reference \"Not A Reference\"",
        ),
    ];
    for (args, want) in cases {
        let output = plait(home.path(), args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(stderr.starts_with("plait: "), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[test]
fn render_runs_a_function_pulled_from_a_registry_like_the_builtin() {
    let registry = Registry::start();
    let home = tempfile::tempdir().unwrap();
    let file = builtin_file(home.path());
    let reference = registry.reference("crossplane/fn-pat", "v1");
    stdout(&plait(
        home.path(),
        &[
            "function",
            "push",
            file.to_str().unwrap(),
            &reference,
            "--insecure",
        ],
    ));
    let functions = home.path().join("functions.yaml");
    std::fs::write(
        &functions,
        format!(
            "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: function-patch-and-transform\nspec:\n  package: {reference}\n"
        ),
    )
    .unwrap();
    let example = "examples/getting-started";
    let args = [
        "render",
        "examples/getting-started/xr.yaml",
        "examples/getting-started/composition.yaml",
        functions.to_str().unwrap(),
        "--xrd",
        "examples/getting-started/xrd.yaml",
        "--insecure",
    ];
    let output = plait(home.path(), &args);
    let rendered = stdout(&output);
    let want = std::fs::read_to_string(repo().join(example).join("expected.yaml")).unwrap();
    assert_eq!(rendered, want);
    // stderr says which component each step ran, and what it was pulled as.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let ran = format!(
        "ran function \"function-patch-and-transform\": component {}, pulled as {reference}@sha256:",
        Builtin::PatchAndTransform.digest()
    );
    assert!(
        stderr.lines().any(|line| line.starts_with("step ")) && stderr.contains(&ran),
        "{stderr}"
    );
    // The first render with an empty cache compiles the component and says
    // so, with its size and how long it took.
    for said in [
        "compiling the component (once; then loaded from the cache)",
        "size=",
        "compiled the component",
    ] {
        assert!(stderr.contains(said), "{said:?} in {stderr}");
    }

    // Pulled once: the blob is in the cache by digest.
    let blob = home.path().join("cache/blobs/sha256").join(
        Builtin::PatchAndTransform
            .digest()
            .trim_start_matches("sha256:"),
    );
    assert!(blob.exists(), "{}", blob.display());

    // A package that cannot be pulled names the Function.
    std::fs::write(
        &functions,
        format!(
            "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: function-patch-and-transform\nspec:\n  package: {}\n",
            registry.reference("crossplane/absent", "v1")
        ),
    )
    .unwrap();
    let output = plait(home.path(), &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("Function \"function-patch-and-transform\": cannot pull its package")
            && stderr.contains("not found"),
        "{stderr}"
    );
}

/// A tar layer (gzipped) of `files` (path in the image, text).
fn tar_layer(files: &[(&str, &str)]) -> Vec<u8> {
    let mut archive = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        archive
            .append_data(&mut header, path, text.as_bytes())
            .unwrap();
    }
    archive.into_inner().unwrap().finish().unwrap()
}

/// The KCL function of the project build, as `functions/compose/`.
const PROJECT_KCL_MOD: &str =
    "[package]\nname = \"compose\"\nedition = \"v0.11.2\"\nversion = \"0.0.1\"\n";
const PROJECT_LIB: &str = "suffix = \"-settings\"\n";
const PROJECT_MAIN: &str = r#"import lib

oxr = option("params").oxr
items = [{
    apiVersion = "v1"
    kind = "ConfigMap"
    metadata = {
        name = oxr.metadata.name + lib.suffix
        annotations = {"krm.kcl.dev/composition-resource-name" = "settings"}
    }
    data = {size = str(oxr.spec.size)}
}]
"#;

/// Pushes an image laid out as a project build (function-kcl's runtime
/// layer, the function's directory at `/src`, Crossplane's package layer)
/// with `env` in its config, as `up project build` pushes one.
fn push_project_build(reference: &str, env: &[&str]) -> String {
    let client = plait_oci::Client::new(plait_oci::ClientConfig {
        insecure_registries: vec![plait_oci::registry_host(reference).unwrap()],
        ..Default::default()
    })
    .unwrap();
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": env, "Entrypoint": ["/function"]},
        "rootfs": {"type": "layers", "diff_ids": []},
    })
    .to_string();
    let package = std::collections::BTreeMap::from([(
        plait_oci::PACKAGE_LAYER_ANNOTATION.to_string(),
        "base".to_string(),
    )]);
    let layer = "application/vnd.oci.image.layer.v1.tar+gzip";
    let layers = [
        (
            layer,
            tar_layer(&[("function", "#!/bin/false\n")]),
            Default::default(),
        ),
        (
            layer,
            tar_layer(&[
                ("src/kcl.mod", PROJECT_KCL_MOD),
                ("src/lib/lib.k", PROJECT_LIB),
                ("src/main.k", PROJECT_MAIN),
            ]),
            Default::default(),
        ),
        (
            layer,
            tar_layer(&[(
                "package.yaml",
                "apiVersion: meta.pkg.crossplane.io/v1\nkind: Function\nmetadata: {name: compose}\n",
            )]),
            package,
        ),
    ];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pushed = runtime
        .block_on(client.push_image(
            reference,
            (
                "application/vnd.oci.image.config.v1+json",
                config.as_bytes(),
            ),
            &layers,
            &plait_oci::Keychain::anonymous(),
        ))
        .unwrap();
    pushed.digest
}

/// A project build pulled from a registry runs with the built-in
/// function-kcl on its `/src`, as the same function does from its project
/// directory; an image that is no project build is refused, saying why.
#[test]
fn render_runs_a_project_build_pulled_from_a_registry_as_from_its_project() {
    let registry = Registry::shared();
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };
    let reference = registry.reference("acme/p_compose", "v1");
    let digest = push_project_build(
        &reference,
        &[
            "PATH=/usr/bin",
            "FUNCTION_KCL_DEFAULT_SOURCE=/src",
            "KCL_PKG_PATH=/src",
        ],
    );
    let not_a_build = registry.reference("acme/p_other", "v1");
    push_project_build(&not_a_build, &["PATH=/usr/bin"]);

    // The same function in its project, as `up` lays it out.
    write(
        "project/upbound.yaml",
        "apiVersion: meta.dev.upbound.io/v1alpha1\nkind: Project\nmetadata: {name: p}\n\
         spec: {repository: xpkg.upbound.io/acme/p}\n",
    );
    write("project/functions/compose/kcl.mod", PROJECT_KCL_MOD);
    write("project/functions/compose/lib/lib.k", PROJECT_LIB);
    write("project/functions/compose/main.k", PROJECT_MAIN);
    let composition = write(
        "composition.yaml",
        "apiVersion: apiextensions.crossplane.io/v1\nkind: Composition\nmetadata: {name: c}\n\
         spec:\n  compositeTypeRef: {apiVersion: example.org/v1, kind: XR}\n  mode: Pipeline\n\
         \x20 pipeline:\n  - {step: compose, functionRef: {name: acme-pcompose}}\n",
    );
    let xr = write(
        "xr.yaml",
        "apiVersion: example.org/v1\nkind: XR\nmetadata: {name: app}\nspec: {size: 3}\n",
    );
    let function = |package: &str| {
        write(
            "functions.yaml",
            &format!(
                "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata: {{name: acme-pcompose}}\nspec: {{package: {package}}}\n"
            ),
        )
    };

    let functions = function(&reference);
    let started = std::time::Instant::now();
    let output = plait(
        root,
        &["render", &xr, &composition, &functions, "--insecure"],
    );
    let pulled = stdout(&output);
    eprintln!("render of a pulled project build: {:?}", started.elapsed());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "ran function \"acme-pcompose\": component {}, pulled as {reference}@{digest}",
            Builtin::Kcl.digest()
        )),
        "{stderr}"
    );
    let documents: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&pulled)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let config_map = documents
        .iter()
        .find(|d| d["kind"] == "ConfigMap")
        .unwrap_or_else(|| panic!("no ConfigMap in {pulled}"));
    assert_eq!(config_map["metadata"]["name"], "app-settings", "{pulled}");
    assert_eq!(config_map["data"]["size"], "3", "{pulled}");
    // Only the source was extracted, into the cache by its layer's digest.
    let sources = root.join("cache/sources");
    let extracted: Vec<_> = std::fs::read_dir(&sources)
        .unwrap()
        .map(|e| e.unwrap().path().join("src/main.k"))
        .collect();
    assert!(
        extracted.len() == 1 && std::fs::read_to_string(&extracted[0]).unwrap() == PROJECT_MAIN,
        "{extracted:?}"
    );

    let from_project = stdout(&plait(
        root,
        &[
            "render",
            "--project",
            &root.join("project").to_string_lossy(),
            &xr,
            &composition,
        ],
    ));
    assert_eq!(
        pulled, from_project,
        "the pulled build renders as its project"
    );

    let functions = function(&not_a_build);
    let output = plait(
        root,
        &["render", &xr, &composition, &functions, "--insecure"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("Function \"acme-pcompose\": cannot pull its package")
            && stderr.contains("an image whose config sets no FUNCTION_KCL_DEFAULT_SOURCE"),
        "{stderr}"
    );
}

/// `plait function inspect` says what a project build is and lists its
/// source; `pull -o DIR` writes that source out; an image that is no
/// project build is refused by both, saying why.
#[test]
fn inspect_and_pull_read_a_project_build() {
    let registry = Registry::shared();
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    let reference = registry.reference("acme/p_inspect", "v1");
    let digest = push_project_build(&reference, &["FUNCTION_KCL_DEFAULT_SOURCE=/src"]);
    let not_a_build = registry.reference("acme/p_inspect_other", "v1");
    push_project_build(&not_a_build, &["PATH=/usr/bin"]);
    let pinned = format!("{reference}@{digest}");

    let inspected: serde_json::Value = serde_yaml_ng::from_str(&stdout(&plait(
        root,
        &["function", "inspect", &reference, "--insecure"],
    )))
    .unwrap();
    assert_eq!(inspected["reference"], pinned.as_str(), "{inspected:#}");
    assert_eq!(inspected["digest"], digest.as_str(), "{inspected:#}");
    assert_eq!(
        inspected["runtime"], "function-kcl, run by plait's built-in function-kcl",
        "{inspected:#}"
    );
    assert_eq!(inspected["source"]["directory"], "/src", "{inspected:#}");
    assert_eq!(
        inspected["source"]["files"],
        serde_json::json!(["kcl.mod", "lib/lib.k", "main.k"]),
        "{inspected:#}"
    );
    assert_eq!(
        inspected["source"]["kclMod"], PROJECT_KCL_MOD,
        "{inspected:#}"
    );

    let out = root.join("pulled");
    let printed = stdout(&plait(
        root,
        &[
            "function",
            "pull",
            &reference,
            "-o",
            out.to_str().unwrap(),
            "--insecure",
        ],
    ));
    assert_eq!(printed.trim(), pinned);
    for (file, text) in [
        ("kcl.mod", PROJECT_KCL_MOD),
        ("lib/lib.k", PROJECT_LIB),
        ("main.k", PROJECT_MAIN),
    ] {
        assert_eq!(
            std::fs::read_to_string(out.join(file)).unwrap(),
            text,
            "{file}"
        );
    }

    let refusals: [(&[&str], &str); 4] = [
        (
            &["function", "pull", &reference, "-o", "-"],
            "is a project build of a KCL function: its source is a directory (/src), not a component; give `-o DIR`",
        ),
        (
            &["function", "pull", &reference, "-o", out.to_str().unwrap()],
            "the directory is not empty",
        ),
        (
            &["function", "inspect", &not_a_build],
            "an image whose config sets no FUNCTION_KCL_DEFAULT_SOURCE",
        ),
        (
            &["function", "pull", &not_a_build],
            "an image whose config sets no FUNCTION_KCL_DEFAULT_SOURCE",
        ),
    ];
    for (args, want) in refusals {
        let mut args = args.to_vec();
        args.push("--insecure");
        let output = plait(root, &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}
