//! `plait render` end to end: the examples against their golden output, and
//! every composition of the real-world corpus (rendered, or refused as
//! upstream refuses it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;
use common::{CORPUS_REFUSED, corpus_refused, repo};

fn plait(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(args)
        .current_dir(repo())
        .env("PLAIT_CACHE_DIR", repo().join("target/plait-test-cache"))
        .output()
        .expect("plait runs")
}

#[test]
fn getting_started_renders_its_golden_output() {
    let example = "examples/getting-started";
    let cases = [
        (vec![], "expected.yaml"),
        (
            vec!["-o", "examples/getting-started/observed.yaml"],
            "expected-observed.yaml",
        ),
    ];
    for (extra, golden) in cases {
        let mut args = vec![
            "render",
            "examples/getting-started/xr.yaml",
            "examples/getting-started/composition.yaml",
            "--xrd",
            "examples/getting-started/xrd.yaml",
        ];
        args.extend(extra);
        let out = plait(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want = std::fs::read_to_string(repo().join(example).join(golden)).expect("golden");
        assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{golden}");
    }
}

/// A namespaced XR given without `metadata.namespace`, with its XRD or
/// without: as `crossplane render`, its resource references name the
/// namespace `default` and the resources observed there are seen (their
/// status reaches the XR, which is Ready).
#[test]
fn a_namespaced_xr_without_a_namespace_renders_as_upstream_renders_it() {
    let scratch = tempfile::tempdir().unwrap();
    let given = std::fs::read_to_string(repo().join("examples/getting-started/xr.yaml")).unwrap();
    let xr = scratch.path().join("xr.yaml");
    std::fs::write(&xr, given.replace("  namespace: default\n", "")).unwrap();
    let xr = xr.to_str().unwrap();
    let base = [
        "render",
        xr,
        "examples/getting-started/composition.yaml",
        "-o",
        "examples/getting-started/observed.yaml",
    ];
    for extra in [vec![], vec!["--xrd", "examples/getting-started/xrd.yaml"]] {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let out = plait(&args);
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let rendered: serde_json::Value =
            serde_yaml_ng::from_str(stdout.split("---\n").nth(1).unwrap()).unwrap();
        assert_eq!(rendered["metadata"].get("namespace"), None, "{extra:?}");
        let namespaces: Vec<&str> = rendered["spec"]["crossplane"]["resourceRefs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["namespace"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(namespaces, ["default", "default"], "{extra:?}: {rendered}");
        assert_eq!(
            rendered["status"]["availableReplicas"], 2,
            "{extra:?}: {rendered}"
        );
        let ready = rendered["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        assert_eq!(ready["status"], "True", "{extra:?}: {ready}");
    }
}

/// The crossplane CLI's command names run the same commands with the same
/// flags: each alias prints what plait's own name prints, and fails alike.
#[test]
fn the_crossplane_cli_names_run_the_same_commands() {
    let scratch = tempfile::tempdir().unwrap();
    let claim = scratch.path().join("claim.yaml");
    std::fs::write(
        &claim,
        "apiVersion: example.org/v1alpha1\nkind: App\nmetadata:\n  name: hello\n  namespace: team-a\nspec:\n  image: hello:1\n",
    )
    .unwrap();
    let claim = claim.to_str().unwrap();
    let render = [
        "examples/getting-started/xr.yaml",
        "examples/getting-started/composition.yaml",
        "--xrd",
        "examples/getting-started/xrd.yaml",
        "-o",
        "examples/getting-started/observed.yaml",
    ];
    let validate = [
        "examples/getting-started/xrd.yaml",
        "examples/getting-started/xr.yaml",
        "-o",
        "json",
    ];
    let trace = ["App/hello", "--kubeconfig", "/nonexistent/kubeconfig"];
    // (the crossplane CLI's name, plait's own, the flags both take)
    let cases: [(&[&str], &[&str], &[&str]); 3] = [
        (&["composition", "render"], &["render"], &render),
        (&["resource", "validate"], &["validate"], &validate),
        (&["resource", "trace"], &["trace"], &trace),
    ];
    for (alias, own, flags) in cases {
        let run = |name: &[&str]| plait(&[name, flags].concat());
        let (by_alias, by_own) = (run(alias), run(own));
        assert_eq!(by_alias.status.code(), by_own.status.code(), "{alias:?}");
        assert_eq!(
            String::from_utf8_lossy(&by_alias.stdout),
            String::from_utf8_lossy(&by_own.stdout),
            "{alias:?}"
        );
        if !by_own.status.success() {
            assert_eq!(
                String::from_utf8_lossy(&by_alias.stderr),
                String::from_utf8_lossy(&by_own.stderr),
                "{alias:?}"
            );
        }
    }
    assert!(
        !plait(&[&["trace"][..], &trace].concat()).status.success(),
        "trace without a cluster fails"
    );

    // `xr generate` (a claim's XR) and `xr patch` (its XRD's defaults) feed render.
    let generated = plait(&["xr", "generate", claim, "--direct", "--kind", "App"]);
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let xr: serde_json::Value = serde_yaml_ng::from_str(
        String::from_utf8_lossy(&generated.stdout).trim_start_matches("---\n"),
    )
    .unwrap();
    assert_eq!(xr["metadata"]["name"], "hello");
    let xr_file = scratch.path().join("xr.yaml");
    std::fs::write(&xr_file, &generated.stdout).unwrap();
    let patched_file = scratch.path().join("patched.yaml");
    let patched = plait(&[
        "xr",
        "patch",
        xr_file.to_str().unwrap(),
        "--xrd",
        "examples/getting-started/xrd.yaml",
        "-o",
        patched_file.to_str().unwrap(),
    ]);
    assert!(
        patched.status.success(),
        "{}",
        String::from_utf8_lossy(&patched.stderr)
    );
    let patched: serde_json::Value = serde_yaml_ng::from_str(
        std::fs::read_to_string(&patched_file)
            .unwrap()
            .trim_start_matches("---\n"),
    )
    .unwrap();
    assert_eq!(patched["spec"]["image"], "hello:1");
    assert_eq!(
        patched["spec"]["tier"], "small",
        "the XRD's default: {patched}"
    );
    let bound = plait(&["xr", "generate", claim]);
    let bound: serde_json::Value =
        serde_yaml_ng::from_str(String::from_utf8_lossy(&bound.stdout).trim_start_matches("---\n"))
            .unwrap();
    assert_eq!(bound["kind"], "XApp");
    assert_eq!(
        bound["spec"]["claimRef"],
        serde_json::json!({"apiVersion": "example.org/v1alpha1", "kind": "App", "name": "hello", "namespace": "team-a"})
    );
    let unpatched = plait(&["xr", "patch", xr_file.to_str().unwrap()]);
    assert!(!unpatched.status.success());
    assert!(
        String::from_utf8_lossy(&unpatched.stderr).contains("needs a patching flag: --xrd"),
        "{}",
        String::from_utf8_lossy(&unpatched.stderr)
    );
}

/// Placeholders the corpus sources leave for their own templating to fill;
/// Kubernetes would reject them as names.
const PLACEHOLDERS: &[(&str, &str)] = &[("$CLAIM_NAME", "claim-name")];

/// Every corpus composition renders, but those whose function input
/// upstream refuses ([`CORPUS_REFUSED`]): their render fails with upstream's
/// fatal result.
#[test]
fn every_corpus_composition_renders() {
    let corpus = repo().join("tests/corpus");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap_or_else(|e| panic!("corpus at {}: {e}", corpus.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("composition.yaml").exists())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 37, "the corpus has 37 cases");
    for (refused, _) in CORPUS_REFUSED {
        assert!(
            dirs.iter().any(|d| d.ends_with(refused)),
            "{refused} is not a corpus case"
        );
    }
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let mut xr = std::fs::read_to_string(dir.join("xr.yaml")).expect("xr.yaml");
        for (placeholder, value) in PLACEHOLDERS {
            xr = xr.replace(placeholder, value);
        }
        let xr_path = scratch.path().join(format!("{name}-xr.yaml"));
        std::fs::write(&xr_path, xr).expect("write xr");
        let path = |f: &str| dir.join(f).display().to_string();
        let mut args = vec![
            "render".to_string(),
            xr_path.display().to_string(),
            path("composition.yaml"),
        ];
        if dir.join("functions.yaml").exists() {
            args.push(path("functions.yaml"));
        }
        if dir.join("xrd.yaml").exists() {
            args.extend(["--xrd".into(), path("xrd.yaml")]);
        }
        if dir.join("environmentconfigs.yaml").exists() {
            args.extend(["-e".into(), path("environmentconfigs.yaml")]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = plait(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if let Some(message) = corpus_refused(name) {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let expected = format!("returned a fatal result: {message}");
            if out.status.success() || !stderr.contains(&expected) {
                failures.push(format!(
                    "{name}: expected to fail with {expected:?}, got {}:\n{stderr}",
                    out.status
                ));
            }
        } else if !out.status.success() {
            failures.push(format!("{name}: {}", String::from_utf8_lossy(&out.stderr)));
        } else if !stdout.contains("type: Synced") || stdout.matches("\n---\n").count() < 1 {
            failures.push(format!(
                "{name}: no composed resources in output:\n{stdout}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}

#[test]
fn render_errors_exit_non_zero_with_the_cause_on_stderr() {
    let cases = [
        (
            vec![
                "render",
                "examples/getting-started/xr.yaml",
                "examples/getting-started/xrd.yaml",
            ],
            "not a valid Composition",
        ),
        (
            vec![
                "render",
                "missing.yaml",
                "examples/getting-started/composition.yaml",
            ],
            "cannot read missing.yaml",
        ),
        (
            vec![
                "render",
                "examples/getting-started/xr.yaml",
                "examples/getting-started/composition.yaml",
                "--context-values",
                "k={not json",
            ],
            "--context-values k: not valid JSON",
        ),
    ];
    for (args, want) in cases {
        let out = plait(&args);
        assert!(!out.status.success(), "{args:?} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

/// Builds a test guest from `tests/guests/<name>` into a component file.
fn test_guest(name: &str) -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("render-guests");
    plait_guest_build::build_guest(&format!("plait-test-guest-{name}"), &repo(), &out)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_misbehaving_function_fails_render_with_its_own_error() {
    // (guest, annotations on its Function, what render says)
    let cases = [
        ("infinite-loop", "", "exceeded its deadline"),
        (
            "infinite-loop",
            "\n    limits.plait.dev/deadline: 300ms",
            "exceeded its deadline of 300ms",
        ),
        ("huge-alloc", "", "exceeded its memory limit"),
        (
            "huge-alloc",
            "\n    limits.plait.dev/memory: 32Mi",
            "exceeded its memory limit of 33554432 bytes",
        ),
        ("panic", "", "trapped"),
        ("malformed-json", "", "returned a malformed response"),
        ("oversized-response", "", "more than the limit of 16777216"),
        ("stdout-flood", "", "wrote more than its output limit"),
        ("namespace-escape", "", "is a cluster-scoped ClusterRole"),
    ];
    let scratch = tempfile::tempdir().expect("tempdir");
    let composition = scratch.path().join("composition.yaml");
    std::fs::write(
        &composition,
        "apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: misbehaving
spec:
  compositeTypeRef:
    apiVersion: example.org/v1alpha1
    kind: App
  mode: Pipeline
  pipeline:
    - step: misbehave
      functionRef:
        name: function-under-test
",
    )
    .expect("write composition");
    for (guest, annotations, want) in cases {
        let functions = scratch.path().join(format!("{guest}-functions.yaml"));
        std::fs::write(
            &functions,
            format!(
                "apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: function-under-test
  annotations:
    render.plait.dev/module: {}{annotations}
spec:
  package: example.org/{guest}:v1
",
                test_guest(guest).display()
            ),
        )
        .expect("write functions");
        let out = plait(&[
            "render",
            "examples/getting-started/xr.yaml",
            composition.to_str().expect("utf-8 path"),
            functions.to_str().expect("utf-8 path"),
            "--timeout",
            "5s",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{guest} must fail render");
        assert!(
            out.stdout.is_empty(),
            "{guest}: nothing is printed on failure"
        );
        assert!(
            stderr.contains("\"misbehave\""),
            "{guest} names the step: {stderr}"
        );
        assert!(stderr.contains(want), "{guest}: {stderr}");
        assert!(
            !stderr.contains('\u{1b}'),
            "{guest}: no terminal colours when stderr is not a terminal: {stderr}"
        );
    }
}

/// What a namespaced XR's pipeline may read: its namespace, or what the
/// Function's `tenancy.plait.dev/reads` grants; render refuses the rest as
/// the controller does.
#[test]
fn render_confines_a_tenants_reads_to_its_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let xr = write(
        "xr.yaml",
        "apiVersion: example.org/v1\nkind: App\nmetadata:\n  name: a\n  namespace: team-a\nspec:\n  crossplane: {}\n",
    );
    let composition = |namespace: &str| {
        format!(
            "apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: c
spec:
  compositeTypeRef: {{apiVersion: example.org/v1, kind: App}}
  mode: Pipeline
  pipeline:
  - step: compose
    functionRef: {{name: function-patch-and-transform}}
    requirements:
      requiredResources:
      - requirementName: secret
        apiVersion: v1
        kind: Secret
        name: db
        namespace: {namespace}
    input:
      apiVersion: pt.fn.crossplane.io/v1beta1
      kind: Resources
      resources:
      - name: cm
        base: {{apiVersion: v1, kind: ConfigMap, data: {{k: v}}}}
"
        )
    };
    let own = write("own.yaml", &composition("team-a"));
    let other = write("other.yaml", &composition("team-b"));
    let secrets = write(
        "secrets.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: team-a}\ndata: {k: dg==}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: team-b}\ndata: {k: dg==}\n",
    );
    let granted = write(
        "functions.yaml",
        "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: function-patch-and-transform\n  annotations:\n    tenancy.plait.dev/reads: Secret/team-b\nspec:\n  package: xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.8.2\n",
    );
    // (composition, functions file, Ok or the error it prints)
    let cases: [(&str, Option<&str>, Result<(), &str>); 3] = [
        (&own, None, Ok(())),
        (
            &other,
            None,
            Err(
                "pipeline step \"compose\": required resources \"secret\" refused: function \"function-patch-and-transform\" may not read v1 Secret in namespace team-b",
            ),
        ),
        (&other, Some(&granted), Ok(())),
    ];
    for (composition, functions, want) in cases {
        let mut args = vec!["render", &xr, composition];
        if let Some(functions) = functions {
            args.push(functions);
        }
        args.extend(["-e", &secrets]);
        let out = plait(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        match want {
            Ok(()) => assert!(out.status.success(), "{args:?}: {stderr}"),
            Err(message) => {
                assert!(!out.status.success(), "{args:?} must fail");
                assert!(stderr.contains(message), "{args:?}: {stderr}");
                assert!(out.stdout.is_empty(), "nothing is rendered: {args:?}");
            }
        }
    }
}

/// A step that requires schemas gets those of the CRDs and XRDs given with
/// `--required-schemas`, and "absent" for any other kind.
#[test]
fn required_schemas_come_from_the_definitions_given() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let composition = write(
        "composition.yaml",
        "apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: schemas
spec:
  compositeTypeRef: {apiVersion: example.org/v1alpha1, kind: App}
  mode: Pipeline
  pipeline:
  - step: copy
    functionRef: {name: fn-copy-required}
    input:
      apiVersion: test.plait.dev/v1
      kind: Schemas
      schemas:
        app: {apiVersion: example.org/v1alpha1, kind: App}
        bucket: {apiVersion: s3.example.org/v1, kind: Bucket}
        unknown: {apiVersion: v1, kind: ConfigMap}
",
    );
    let crd = write(
        "crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: buckets.s3.example.org}
spec:
  group: s3.example.org
  names: {kind: Bucket, plural: buckets}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {region: {type: string}}}
",
    );
    let functions = write(
        "functions.yaml",
        &format!(
            "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: fn-copy-required\n  annotations:\n    render.plait.dev/module: {}\nspec:\n  package: example.org/copy-required:v1\n",
            test_guest("copy-required").display()
        ),
    );
    let out = plait(&[
        "render",
        "examples/getting-started/xr.yaml",
        &composition,
        &functions,
        "--required-schemas",
        "examples/getting-started/xrd.yaml",
        "--required-schemas",
        &crd,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cases = [
        "schema.app: apiVersion,kind,metadata,spec,status",
        "schema.bucket: spec",
        "schema.unknown: absent",
    ];
    for want in cases {
        assert!(stdout.contains(want), "{want} in\n{stdout}");
    }
}

/// A v1 XR, its XRD and a Composition whose resource copies what the XR
/// carries by the time its pipeline runs.
fn legacy_render_inputs(dir: &std::path::Path) -> [String; 3] {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let xr = write(
        "xr.yaml",
        "apiVersion: example.org/v1\nkind: XApp\nmetadata:\n  name: a\n  uid: 11111111-2222-3333-4444-555555555555\nspec:\n  size: s\n",
    );
    let xrd = write(
        "xrd.yaml",
        "apiVersion: apiextensions.crossplane.io/v1
kind: CompositeResourceDefinition
metadata: {name: xapps.example.org}
spec:
  group: example.org
  names: {kind: XApp, plural: xapps}
  versions:
  - name: v1
    served: true
    referenceable: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
",
    );
    let composition = write(
        "composition.yaml",
        "apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: apps
spec:
  compositeTypeRef: {apiVersion: example.org/v1, kind: XApp}
  writeConnectionSecretsToNamespace: crossplane-system
  mode: Pipeline
  pipeline:
  - step: compose
    functionRef: {name: function-patch-and-transform}
    input:
      apiVersion: pt.fn.crossplane.io/v1beta1
      kind: Resources
      resources:
      - name: one
        base: {apiVersion: example.org/v1, kind: Thing, spec: {}}
        patches:
        - {fromFieldPath: spec.compositionRef.name, toFieldPath: spec.composition}
        - {fromFieldPath: spec.writeConnectionSecretToRef.namespace, toFieldPath: spec.secretNamespace}
        - {fromFieldPath: spec.writeConnectionSecretToRef.name, toFieldPath: spec.secretName}
        - {fromFieldPath: 'status.conditions[0].type', toFieldPath: spec.firstCondition}
      - name: two
        base: {apiVersion: example.org/v1, kind: Thing, spec: {}}
",
    );
    [xr, xrd, composition]
}

fn rendered(out: &Output) -> Vec<serde_json::Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_yaml_ng::Deserializer::from_str(&String::from_utf8_lossy(&out.stdout))
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

/// Upstream's reconciler selects the Composition, marks the XR Responsive
/// and defaults a v1 XR's connection Secret reference before the pipeline
/// runs, so functions read all three.
#[test]
fn functions_observe_the_xr_as_upstreams_reconciler_prepares_it() {
    let dir = tempfile::tempdir().unwrap();
    let [xr, xrd, composition] = legacy_render_inputs(dir.path());
    let docs = rendered(&plait(&["render", &xr, &composition, "--xrd", &xrd]));
    let one = docs
        .iter()
        .find(|d| d["metadata"]["annotations"]["crossplane.io/composition-resource-name"] == "one")
        .expect("resource one");
    assert_eq!(
        one["spec"],
        serde_json::json!({
            "composition": "apps",
            "secretNamespace": "crossplane-system",
            "secretName": "11111111-2222-3333-4444-555555555555",
            "firstCondition": "Responsive",
        })
    );
}

/// `-r` prints the events the reconcile recorded, as today's
/// `crossplane render` does; `-x` prints the XR as given with the render's
/// references and status merged onto it, nothing the reconciler added.
#[test]
fn render_prints_results_and_the_full_xr_in_todays_crossplane_layout() {
    let dir = tempfile::tempdir().unwrap();
    let [xr, xrd, composition] = legacy_render_inputs(dir.path());
    let docs = rendered(&plait(&[
        "render",
        &xr,
        &composition,
        "--xrd",
        &xrd,
        "-r",
        "-x",
    ]));
    let results: Vec<&serde_json::Value> = docs.iter().filter(|d| d["kind"] == "Result").collect();
    assert_eq!(
        results,
        [
            &serde_json::json!({"apiVersion": "render.crossplane.io/v1beta1", "kind": "Result",
                "severity": "Normal", "reason": "SelectComposition",
                "message": "Successfully selected composition: apps"}),
            &serde_json::json!({"apiVersion": "render.crossplane.io/v1beta1", "kind": "Result",
                "severity": "Normal", "reason": "ComposeResources",
                "message": "Composed resource \"one\" is not yet ready"}),
            &serde_json::json!({"apiVersion": "render.crossplane.io/v1beta1", "kind": "Result",
                "severity": "Normal", "reason": "ComposeResources",
                "message": "Composed resource \"two\" is not yet ready"}),
        ]
    );
    let xr = &docs[0];
    assert_eq!(xr["metadata"]["labels"], serde_json::Value::Null, "{xr}");
    assert_eq!(xr["spec"]["size"], "s");
    assert_eq!(xr["spec"]["resourceRefs"].as_array().map(Vec::len), Some(2));
    assert_eq!(xr["spec"]["compositionRef"], serde_json::Value::Null);
    assert_eq!(
        xr["status"]["conditions"][2]["message"],
        "Unready resources: one, two"
    );
}

/// Without `--xrd`, `crossplane render` takes the XR for a v2 one.
#[test]
fn render_without_an_xrd_writes_modern_resource_references() {
    let dir = tempfile::tempdir().unwrap();
    let [xr, _, composition] = legacy_render_inputs(dir.path());
    let docs = rendered(&plait(&["render", &xr, &composition]));
    assert_eq!(docs[0]["spec"]["resourceRefs"], serde_json::Value::Null);
    assert_eq!(
        docs[0]["spec"]["crossplane"]["resourceRefs"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

/// The corpus case whose function-go-templating step reads its templates
/// with `source: FileSystem` from `/templates`, where upstream's Function
/// mounts a ConfigMap (its DeploymentRuntimeConfig).
const FILESYSTEM_CASE: &str = "tests/corpus-go-templating/function-go-templating__filesystem";

/// The case's Functions, function-go-templating's carrying `annotations`
/// (YAML lines under `annotations:`, or none).
fn filesystem_case_functions(annotations: &str) -> String {
    let annotations = if annotations.is_empty() {
        String::new()
    } else {
        format!("\n  annotations:\n    {annotations}")
    };
    format!(
        "apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: function-auto-ready
spec:
  package: xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.6.2
---
apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: function-go-templating{annotations}
spec:
  package: xpkg.crossplane.io/crossplane-contrib/function-go-templating:v0.11.5
"
    )
}

/// `render.plait.dev/filesystem` lets a Function read local directories at
/// the paths it names: granted the case's templates at `/templates`, render
/// prints what upstream rendered with them mounted there. Without the grant
/// (the controller grants none) or with it elsewhere, the step fails with
/// the function's own error; a bad annotation fails the render naming the
/// Function and the annotation.
#[test]
fn a_function_reads_the_directories_its_filesystem_annotation_grants() {
    use plait_differential::{Rendered, corpus};

    let case = repo().join(FILESYSTEM_CASE);
    let scratch = tempfile::tempdir().unwrap();
    // The templates beside the functions file, as the annotation's
    // relative path finds them.
    std::os::unix::fs::symlink(case.join("templates"), scratch.path().join("templates")).unwrap();
    let expected = corpus::recorded(&case).unwrap();
    let composition = std::fs::read_to_string(case.join("composition.yaml")).unwrap();
    let not_read = "cannot read tmpl from the folder {/templates}: open /templates: ";
    let annotation = "Function \"function-go-templating\": render.plait.dev/filesystem: ";
    // (annotations on function-go-templating, None to render what upstream
    // rendered, or what render's error says)
    let cases: [(&str, Option<String>); 6] = [
        ("render.plait.dev/filesystem: templates=/templates", None),
        ("render.plait.dev/filesystem: ./templates=/templates/", None),
        ("", Some(not_read.into())),
        (
            "render.plait.dev/filesystem: templates=/elsewhere",
            Some(not_read.into()),
        ),
        (
            "render.plait.dev/filesystem: templates=templates",
            Some(format!(
                "{annotation}\"templates=templates\": the guest path \"templates\" is not absolute"
            )),
        ),
        (
            "render.plait.dev/filesystem: missing=/templates",
            Some(format!(
                "{annotation}\"missing=/templates\": {} is not a directory (it does not exist)",
                scratch.path().join("missing").display()
            )),
        ),
    ];
    for (annotations, want) in cases {
        let functions = scratch.path().join("functions.yaml");
        std::fs::write(&functions, filesystem_case_functions(annotations)).unwrap();
        let args = std::fs::read_to_string(case.join("args")).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_plait"))
            .args(["render", "xr.yaml", "composition.yaml"])
            .arg(&functions)
            .args(args.split_whitespace())
            .current_dir(&case)
            .env("PLAIT_CACHE_DIR", repo().join("target/plait-test-cache"))
            .output()
            .expect("plait runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match want {
            None => {
                assert!(out.status.success(), "{annotations:?}: {stderr}");
                let rendered = Rendered::Output(
                    plait_differential::parse_stream(&String::from_utf8_lossy(&out.stdout))
                        .unwrap(),
                );
                let differences =
                    corpus::unexplained_differences(&composition, &rendered, &expected);
                assert!(
                    differences.is_empty(),
                    "{annotations:?}: plait's render differs from upstream's:\n{}",
                    differences.join("\n")
                );
            }
            Some(message) => {
                assert!(!out.status.success(), "{annotations:?} must fail render");
                assert!(stderr.contains(&message), "{annotations:?}: {stderr}");
            }
        }
    }
}

/// A composed resource as its function produced it: without what
/// Crossplane's composition adds to every one (its name prefix and the name
/// made from it, owner, the resource-name annotation and the composite
/// label, which this function copies from the XR's labels too).
fn as_the_function_produced_it(mut resource: serde_json::Value) -> serde_json::Value {
    let metadata = resource["metadata"].as_object_mut().unwrap();
    if let Some(serde_json::Value::String(prefix)) = metadata.remove("generateName")
        && metadata["name"]
            .as_str()
            .is_some_and(|name| name.starts_with(&prefix))
    {
        metadata.remove("name");
    }
    metadata.remove("ownerReferences");
    for (field, key) in [
        ("annotations", "crossplane.io/composition-resource-name"),
        ("labels", "crossplane.io/composite"),
    ] {
        if let Some(map) = metadata.get_mut(field).and_then(|m| m.as_object_mut()) {
            map.remove(key);
        }
    }
    resource
}

/// An up project's embedded KCL function (upbound/configuration-app, in
/// `tests/projects/`) runs with the built-in function-kcl from the project
/// directory, on models plait generates from the project's XRD and the
/// provider's CRD, and composes what the real KCL composes
/// (`expected.yaml`, recorded by `tests/projects/record.py`); with
/// `--project` and when found above the Composition alike.
#[test]
fn an_up_projects_kcl_function_renders_from_its_project_directory() {
    let project = "tests/projects/configuration-app";
    let expected: serde_json::Map<String, serde_json::Value> = serde_yaml_ng::from_str(
        &std::fs::read_to_string(repo().join(project).join("expected.yaml")).unwrap(),
    )
    .unwrap();
    let expected: serde_json::Map<String, serde_json::Value> = expected
        .into_iter()
        .map(|(name, item)| (name, as_the_function_produced_it(item)))
        .collect();
    let xr = format!("{project}/examples/app-xr.yaml");
    let composition = format!("{project}/apis/composition.yaml");
    let crds = format!("{project}/crds");
    let cases: [(&str, Vec<&str>); 2] = [
        (
            "--project",
            vec![
                "render",
                "--project",
                project,
                "--crds",
                &crds,
                &xr,
                &composition,
            ],
        ),
        (
            "found above the Composition",
            vec!["render", "--crds", &crds, &xr, &composition],
        ),
    ];
    for (case, args) in cases {
        let out = plait(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "step \"xapp\" ran function \"upbound-configuration-appxapp\": component"
            ) && stderr.contains("built-in function-kcl"),
            "{case}: {stderr}"
        );
        let composed: serde_json::Map<String, serde_json::Value> = rendered(&out)
            .into_iter()
            .skip(1)
            .map(|resource| {
                let name =
                    resource["metadata"]["annotations"]["crossplane.io/composition-resource-name"]
                        .as_str()
                        .unwrap()
                        .to_string();
                (name, as_the_function_produced_it(resource))
            })
            .collect();
        assert_eq!(composed, expected, "{case}");
    }
}

/// A Composition whose step is upstream's function-kcl renders with the
/// built-in, which stderr names: the program's items are composed
/// resources named by their annotation, its XR item gives the XR's status
/// and its `print()` reaches the log.
#[test]
fn a_kcl_composition_renders_with_the_built_in_function_kcl() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };
    let xr = write(
        "xr.yaml",
        "apiVersion: example.org/v1\nkind: XBuckets\nmetadata:\n  name: b\nspec:\n  count: 2\n",
    );
    let composition = write(
        "composition.yaml",
        r#"apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: buckets
spec:
  compositeTypeRef:
    apiVersion: example.org/v1
    kind: XBuckets
  mode: Pipeline
  pipeline:
    - step: kcl
      functionRef:
        name: function-kcl
      input:
        apiVersion: krm.kcl.dev/v1alpha1
        kind: KCLInput
        spec:
          source: |
            oxr = option("params").oxr
            print("composing", oxr.spec.count)
            items = [{
                apiVersion = "s3.example.org/v1"
                kind = "Bucket"
                metadata.name = "${oxr.metadata.name}-${i}"
                metadata.annotations = {"krm.kcl.dev/composition-resource-name": "bucket-${i}"}
            } for i in range(oxr.spec.count)] + [{
                apiVersion = oxr.apiVersion
                kind = oxr.kind
                status.buckets = oxr.spec.count
            }]
"#,
    );
    let functions = write(
        "functions.yaml",
        "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: function-kcl\nspec:\n  package: xpkg.crossplane.io/crossplane-contrib/function-kcl:v0.12.2\n",
    );
    let out = plait(&["render", &xr, &composition, &functions]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("built-in function-kcl (matches upstream v0.12.2)"),
        "{stderr}"
    );
    assert!(stderr.contains("composing 2"), "{stderr}");
    let docs = rendered(&out);
    assert_eq!(docs[0]["status"]["buckets"], 2, "{docs:?}");
    let names: Vec<_> = docs[1..]
        .iter()
        .map(|d| {
            (
                d["metadata"]["name"].as_str().unwrap_or_default(),
                d["metadata"]["annotations"]["crossplane.io/composition-resource-name"]
                    .as_str()
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(names, [("b-0", "bucket-0"), ("b-1", "bucket-1")]);
}

/// A step naming one of the project's functions that is not KCL (no
/// `kcl.mod`) is refused with the step, the function and its directory.
#[test]
fn a_project_function_without_a_kcl_mod_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "crossplane-project.yaml",
        "apiVersion: dev.crossplane.io/v1alpha1\nkind: Project\nmetadata: {name: p}\n\
         spec: {repository: registry.example.com/acme/p}\n",
    );
    write("functions/compose/main.go", "package main\n");
    write(
        "apis/composition.yaml",
        "apiVersion: apiextensions.crossplane.io/v1\nkind: Composition\nmetadata: {name: c}\n\
         spec:\n  compositeTypeRef: {apiVersion: example.org/v1, kind: XR}\n  mode: Pipeline\n\
         \x20 pipeline:\n  - {step: compose, functionRef: {name: acme-pcompose}}\n",
    );
    write(
        "examples/xr.yaml",
        "apiVersion: example.org/v1\nkind: XR\nmetadata: {name: a}\nspec: {}\n",
    );
    let out = plait(&[
        "render",
        &root.join("examples/xr.yaml").to_string_lossy(),
        &root.join("apis/composition.yaml").to_string_lossy(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("step \"compose\": function \"acme-pcompose\" is the project's compose")
            && stderr.contains("which has no kcl.mod; plait runs a project's KCL functions only"),
        "{stderr}"
    );
}

/// `plait test` runs CompositionTests (YAML, and KCL against a project's
/// generated models) over the same render: one line per test, the
/// differences of a failing assertion, each malformed test's field at
/// fault, the summary line, and a non-zero exit when any test failed.
#[test]
fn plait_test_reports_each_composition_test_and_fails_when_one_fails() {
    let fixtures = "host/cli/tests/compositiontest";
    let failing = format!("{fixtures}/failing.yaml");
    let malformed = format!("{fixtures}/malformed.yaml");
    let wrong_version = format!("{fixtures}/wrong-version.yaml");
    let kcl_test = format!("{fixtures}/xapp-kcl");
    let project = "tests/projects/configuration-app";
    let crds = format!("{project}/crds");
    let validate = format!("{fixtures}/validate.yaml");
    let context = format!("{fixtures}/context.yaml");
    let resource_refs = format!("{fixtures}/resource-refs.yaml");
    let cases: [(&str, Vec<&str>, bool, Vec<&str>); 9] = [
        (
            "the getting-started example's tests",
            vec!["test", "examples/getting-started/test.yaml"],
            true,
            vec![
                "PASS app-composes-a-deployment-and-a-service (examples/getting-started/test.yaml, ",
                "PASS app-is-ready-when-its-deployment-is-available (examples/getting-started/test.yaml, ",
                "\n2 passed, 0 failed\n",
            ],
        ),
        (
            "a KCL test in a project, on its generated models",
            vec!["test", "--project", project, "--crds", &crds, &kcl_test],
            true,
            vec!["PASS xapp-installs-ghost (", "\n1 passed, 0 failed\n"],
        ),
        (
            "the context and extra resources a test gives",
            vec!["test", &context],
            true,
            vec![
                "PASS region-from-the-context (",
                "PASS region-from-an-environment-config (",
                "\n2 passed, 0 failed\n",
            ],
        ),
        (
            "a namespaced XR's references, as its function observes them, name no namespace",
            vec!["test", &resource_refs],
            true,
            vec!["\n1 passed, 0 failed\n"],
        ),
        (
            "failing assertions",
            vec!["test", &failing],
            false,
            vec![
                "FAIL app-with-wrong-expectations (host/cli/tests/compositiontest/failing.yaml, ",
                "\n    apps/v1, Kind=Deployment \"hello-4e3e26c0707e\":\n",
                "\n      metadata.labels.team: missing, expected \"platform\"\n",
                "\n      spec.replicas: expected 3, got 2\n",
                "\n      spec.template.spec.containers: expected 2 items, got 1: [{\"image\":\"ghcr.io/example/hello:1.4.2\"",
                "\n    v1, Kind=ConfigMap \"hello-settings\": no rendered resource has its apiVersion, kind, name and annotations\n",
                "\n0 passed, 1 failed\n",
            ],
        ),
        (
            "malformed tests",
            vec!["test", &malformed],
            false,
            vec![
                "FAIL misspelt-field (host/cli/tests/compositiontest/malformed.yaml, ",
                "error: spec.xrpath: unknown field (a CompositionTest has timeoutSeconds, ",
                "FAIL xr-given-twice (",
                "error: spec: only one of \"xr\" or \"xrPath\" may be given",
                "error: spec: needs the Composition, as composition or compositionPath",
                "error: spec.timeoutSeconds: expected a positive whole number, found \"soon\"",
                "error: spec.assertResources[0]: expected an object, found \"just a string\"",
                "error: spec.xrPath: host/cli/tests/compositiontest/no-such-xr.yaml is not a file",
                "\n0 passed, 6 failed\n",
            ],
        ),
        (
            "validate: true, a field the XRD lacks",
            vec!["test", &validate],
            false,
            vec![
                "\n    validate: example.org/v1alpha1, Kind=App \"hello\": spec.colour: Invalid value: \"colour\": unknown field: \"colour\"\n0 passed, 1 failed\n",
            ],
        ),
        (
            "a test of another version, with the rest",
            vec!["test", &wrong_version, "examples/getting-started/test.yaml"],
            false,
            vec![
                "error: host/cli/tests/compositiontest/wrong-version.yaml: document 0: a CompositionTest is meta.dev.upbound.io/v1alpha1, found apiVersion \"meta.dev.upbound.io/v1beta1\"",
                "\n2 passed, 1 failed\n",
            ],
        ),
        (
            "a path that is not there",
            vec!["test", "host/cli/tests/compositiontest/no-such-test.yaml"],
            false,
            vec![],
        ),
    ];
    for (case, args, passes, lines) in cases {
        let out = plait(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.success(), passes, "{case}: {stdout}\n{stderr}");
        for line in lines {
            assert!(
                stdout.contains(line),
                "{case}: no {line:?} in\n{stdout}\n{stderr}"
            );
        }
    }
    let missing = plait(&["test", "host/cli/tests/compositiontest/no-such-test.yaml"]);
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains(
            "host/cli/tests/compositiontest/no-such-test.yaml: no such file or directory"
        ),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );

    // For CI: the same verdicts as JSON.
    let out = plait(&[
        "test",
        "-o",
        "json",
        &failing,
        "examples/getting-started/test.yaml",
    ]);
    assert!(!out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(2), Some(1))
    );
    let failed = &report["tests"][0];
    assert_eq!(failed["name"], "app-with-wrong-expectations");
    assert_eq!(failed["passed"], false);
    assert_eq!(
        failed["failures"][0],
        "apps/v1, Kind=Deployment \"hello-4e3e26c0707e\":\n  metadata.labels.team: missing, expected \"platform\"\n  spec.replicas: expected 3, got 2\n  spec.template.spec.containers: expected 2 items, got 1: [{\"image\":\"ghcr.io/example/hello:1.4.2\",\"name\":\"app\",\"ports\":[{\"containerPort\":8080}],\"resources\":{\"limits\":{\"memory\":\"2…"
    );
}
