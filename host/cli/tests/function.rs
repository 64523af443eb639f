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
    let image = plait_testregistry::project_build(
        env,
        &[
            ("kcl.mod", PROJECT_KCL_MOD),
            ("lib/lib.k", PROJECT_LIB),
            ("main.k", PROJECT_MAIN),
        ],
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pushed = runtime
        .block_on(client.push_image(
            reference,
            (plait_testregistry::IMAGE_CONFIG, &image.config),
            &image.layers,
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

/// `network`, the module a step names as its source: a ConfigMap from the
/// XR and its dependency `cidrs`, which depends on `base` in turn.
const NETWORK_MAIN: &str = r#"import cidrs

oxr = option("params").oxr
items = [{
    apiVersion = "v1"
    kind = "ConfigMap"
    metadata = {
        name = oxr.metadata.name + "-network"
        annotations = {"krm.kcl.dev/composition-resource-name" = "network"}
    }
    data = {cidr = cidrs.cidr, base = cidrs.base_name, size = str(oxr.spec.size)}
}]
"#;

/// The source of an inline step that imports `cidrs` from `spec.dependencies`.
const INLINE_NETWORK: &str = "import cidrs\n\nitems = [{apiVersion = \"v1\", kind = \"ConfigMap\", metadata.name = \"app-network\", metadata.annotations = {\"krm.kcl.dev/composition-resource-name\" = \"network\"}, data = {cidr = cidrs.cidr, base = cidrs.base_name}}]\n";

/// Function-kcl steps whose source is an `oci://` module or whose
/// `spec.dependencies` name modules run with the modules the host pulled
/// (kpm's layouts, plain and gzipped tar; dependencies of dependencies;
/// the latest version of a tag-less source; the `kcl-registry` credential
/// for a registry that asks for one), each pinned to its digest; bad
/// references, missing tags, other artifacts and git dependencies fail
/// the render naming the step and the reference.
#[test]
fn render_runs_kcl_modules_the_host_pulls_for_a_step() {
    let registry = Registry::shared();
    let private = Registry::start_with_auth("kcl", "s3cret");
    let addr = &registry.addr;
    let base_mod = "[package]\nname = \"base\"\nversion = \"1.0.0\"\n";
    let base = registry.push_kcl_module(
        "kcl/base",
        "1.0.0",
        &plait_testregistry::KclModule {
            name: "base",
            version: "1.0.0",
            files: &[("kcl.mod", base_mod), ("base.k", "name = \"base-1\"\n")],
            gzip: false,
        },
    );
    let cidrs_mod = format!(
        "[package]\nname = \"cidrs\"\nversion = \"0.1.0\"\n\n[dependencies]\nbase = {{ oci = \"oci://{addr}/kcl/base\", tag = \"1.0.0\" }}\n"
    );
    let cidrs_files = [
        ("kcl.mod", cidrs_mod.as_str()),
        (
            "cidrs.k",
            "import base\n\ncidr = \"10.0.0.0/16\"\nbase_name = base.name\n",
        ),
    ];
    let cidrs = plait_testregistry::KclModule {
        name: "cidrs",
        version: "0.1.0",
        files: &cidrs_files,
        gzip: true,
    };
    let cidrs_digest = registry.push_kcl_module("kcl/cidrs", "0.1.0", &cidrs);
    private.push_kcl_module("kcl/cidrs", "0.1.0", &cidrs);
    let network_mod = format!(
        "[package]\nname = \"network\"\nversion = \"1.0.0\"\n\n[dependencies]\ncidrs = {{ oci = \"oci://{addr}/kcl/cidrs\", tag = \"0.1.0\" }}\n"
    );
    let network = |version: &'static str, main: &'static str| {
        let files = [("kcl.mod", network_mod.as_str()), ("main.k", main)];
        registry.push_kcl_module(
            "kcl/network",
            version,
            &plait_testregistry::KclModule {
                name: "network",
                version,
                files: &files,
                gzip: true,
            },
        )
    };
    let network_v1 = network("v1", NETWORK_MAIN);
    network("0.9.0", "items = []\n");
    // A manifest of another layer type, and a Wasm function.
    let zstd_layer = plait_testregistry::tar(&[("kcl.mod", base_mod)], false);
    registry.push_manifest(
        "kcl/zstd",
        "v1",
        "application/vnd.oci.image.manifest.v1+json",
        &serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": plait_testregistry::digest(b"{}"), "size": 2},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+zstd",
                        "digest": plait_testregistry::digest(&zstd_layer), "size": zstd_layer.len()}],
        }))
        .unwrap(),
        &[b"{}".to_vec(), zstd_layer],
    );

    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };
    let xr = write(
        "xr.yaml",
        "apiVersion: example.org/v1\nkind: XR\nmetadata: {name: app}\nspec: {size: 3}\n",
    );
    let credentials = write(
        "credentials.yaml",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: kcl, namespace: crossplane-system}}\n\
             stringData: {{url: 'https://{}', username: kcl, password: s3cret}}\n",
            private.addr
        ),
    );
    let composition = |spec: serde_json::Value, credential: bool| {
        let mut step = serde_json::json!({
            "step": "compose", "functionRef": {"name": "function-kcl"},
            "input": {"apiVersion": "krm.kcl.dev/v1alpha1", "kind": "KCLInput", "spec": spec},
        });
        if credential {
            step["credentials"] = serde_json::json!([{"name": "kcl-registry", "source": "Secret",
                "secretRef": {"namespace": "crossplane-system", "name": "kcl"}}]);
        }
        let composition = serde_json::json!({
            "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
            "metadata": {"name": "c"},
            "spec": {"compositeTypeRef": {"apiVersion": "example.org/v1", "kind": "XR"},
                     "mode": "Pipeline", "pipeline": [step]},
        });
        write("composition.yaml", &composition.to_string())
    };
    let source = |reference: &str| serde_json::json!({"source": reference});
    let inline = |dependencies: String| serde_json::json!({"source": INLINE_NETWORK, "dependencies": dependencies});
    let fetched = |reference: String, digest: &str, field: &str| {
        format!("step \"compose\" fetched KCL module {reference}@{digest} for {field}")
    };
    let from_network = serde_json::json!({"cidr": "10.0.0.0/16", "base": "base-1", "size": "3"});
    let from_inline = serde_json::json!({"cidr": "10.0.0.0/16", "base": "base-1"});
    // (what, step input, kcl-registry credential, the ConfigMap's data or
    // the error, what stderr says)
    type Case<'a> = (
        &'a str,
        serde_json::Value,
        bool,
        Result<serde_json::Value, String>,
        Vec<String>,
    );
    let cases: Vec<Case> = vec![
        (
            "an oci:// source with its dependencies and theirs",
            source(&format!("oci://{addr}/kcl/network:v1")),
            false,
            Ok(from_network.clone()),
            vec![
                fetched(format!("{addr}/kcl/network:v1"), &network_v1, "spec.source"),
                fetched(format!("{addr}/kcl/cidrs:0.1.0"), &cidrs_digest, &format!("the kcl.mod of {addr}/kcl/network:v1: [dependencies].cidrs")),
                fetched(format!("{addr}/kcl/base:1.0.0"), &base, &format!("the kcl.mod of {addr}/kcl/cidrs:0.1.0: [dependencies].base")),
            ],
        ),
        (
            "a tag-less source runs the highest version, as kpm picks it",
            source(&format!("oci://{addr}/kcl/network")),
            false,
            Ok(from_network.clone()),
            vec![fetched(format!("{addr}/kcl/network:v1"), &network_v1, "spec.source")],
        ),
        (
            "kcl mod push's ?tag= form",
            source(&format!("oci://{addr}/kcl/network?tag=v1")),
            false,
            Ok(from_network),
            vec![],
        ),
        (
            "inline code with spec.dependencies",
            inline(format!("cidrs = {{ oci = \"oci://{addr}/kcl/cidrs\", tag = \"0.1.0\" }}")),
            false,
            Ok(from_inline.clone()),
            vec![fetched(format!("{addr}/kcl/cidrs:0.1.0"), &cidrs_digest, "spec.dependencies.cidrs")],
        ),
        (
            "a dependency from a registry that asks for the kcl-registry credential",
            inline(format!("cidrs = {{ oci = \"oci://{}/kcl/cidrs\", tag = \"0.1.0\" }}", private.addr)),
            true,
            Ok(from_inline),
            vec![],
        ),
        (
            "without the credential that registry refuses",
            inline(format!("cidrs = {{ oci = \"oci://{}/kcl/cidrs\", tag = \"0.1.0\" }}", private.addr)),
            false,
            Err(format!("step \"compose\": spec.dependencies.cidrs: cannot fetch {}/kcl/cidrs:0.1.0: {}/kcl/cidrs:0.1.0: unauthorized", private.addr, private.addr)),
            vec![],
        ),
        (
            "a missing tag",
            source(&format!("oci://{addr}/kcl/network:v9")),
            false,
            Err(format!("step \"compose\": spec.source: cannot fetch {addr}/kcl/network:v9: {addr}/kcl/network:v9: not found")),
            vec![],
        ),
        (
            "a bad reference",
            source(&format!("oci://{addr}/kcl/Network:v1")),
            false,
            Err(format!("step \"compose\": spec.source: invalid OCI reference \"{addr}/kcl/Network:v1\"")),
            vec![],
        ),
        (
            "a layer of another media type",
            source(&format!("oci://{addr}/kcl/zstd:v1")),
            false,
            Err(format!("step \"compose\": spec.source: cannot fetch {addr}/kcl/zstd:v1: {addr}/kcl/zstd:v1: not a KCL module: layer media type \"application/vnd.oci.image.layer.v1.tar+zstd\"")),
            vec![],
        ),
        (
            "a git dependency",
            inline("cidrs = { git = \"https://github.com/acme/cidrs\", tag = \"v1\" }".into()),
            false,
            Err("step \"compose\": spec.dependencies.cidrs: git dependencies (https://github.com/acme/cidrs) are not fetched: publish the module to an OCI registry".into()),
            vec![],
        ),
    ];
    for (what, spec, credential, expected, lines) in cases {
        let composition = composition(spec, credential);
        let mut args: Vec<&str> = vec!["render", &xr, &composition, "--insecure"];
        if credential {
            // `cidrs` in the private registry depends on `base` in the
            // open one, which no step names.
            args.extend([
                "--function-credentials",
                credentials.as_str(),
                "--insecure-registry",
                addr.as_str(),
            ]);
        }
        let started = std::time::Instant::now();
        let output = plait(root, &args);
        eprintln!("{what}: {:?}", started.elapsed());
        let stderr = String::from_utf8_lossy(&output.stderr);
        match expected {
            Ok(data) => {
                let rendered = stdout(&output);
                let documents: Vec<serde_json::Value> =
                    serde_yaml_ng::Deserializer::from_str(&rendered)
                        .map(|d| serde::Deserialize::deserialize(d).unwrap())
                        .collect();
                let config_map = documents
                    .iter()
                    .find(|d| d["kind"] == "ConfigMap")
                    .unwrap_or_else(|| panic!("{what}: no ConfigMap in {rendered}\n{stderr}"));
                assert_eq!(config_map["data"], data, "{what}: {rendered}");
            }
            Err(message) => {
                assert!(!output.status.success(), "{what}: {stderr}");
                assert!(
                    stderr.contains(&message),
                    "{what}:\n got {stderr}\nwant {message}"
                );
            }
        }
        for line in lines {
            assert!(
                stderr.contains(&line),
                "{what}:\n got {stderr}\nwant {line}"
            );
        }
    }
    // Each module was extracted once, into the cache by its layer's digest.
    let extracted = std::fs::read_dir(root.join("cache/kcl-modules"))
        .unwrap()
        .count();
    assert_eq!(extracted, 3, "network v1, cidrs and base");
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
