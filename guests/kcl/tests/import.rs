//! `plait_kcl::import` against kcl-openapi's golden files: each case's CRD
//! stream and the `.k` files kcl-openapi v0.10.1 generates for it (see
//! `tests/import/SOURCE`). The Kubernetes `ObjectMeta` models are compared
//! too. Set `PLAIT_IMPORT_GOLDEN_DIR` to a kcl-openapi `testdata` directory
//! to compare against every case there (a report, not a failure).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use plait_kcl::r#import::{Document, ImportOptions, Layout, import};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn documents(path: &Path) -> Vec<Document> {
    let text = std::fs::read_to_string(path).expect("reads the CRD stream");
    serde_yaml_ng::Deserializer::from_str(&text)
        .enumerate()
        .filter_map(|(index, document)| {
            let value: serde_json::Value =
                serde::Deserialize::deserialize(document).expect("parses a CRD");
            (!value.is_null()).then(|| Document {
                name: format!("{}#{index}", path.display()),
                value,
            })
        })
        .collect()
}

/// The generated files by bare file name (kcl-openapi's own command writes
/// them flat; `kcl import` puts them under the version).
fn generated(case: &Path) -> BTreeMap<String, String> {
    let crds: Vec<PathBuf> = std::fs::read_dir(case)
        .expect("reads the case")
        .map(|entry| entry.expect("lists the case").path())
        .filter(|path| {
            matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "json")
            )
        })
        .collect();
    let documents: Vec<Document> = crds.iter().flat_map(|path| documents(path)).collect();
    let options = ImportOptions {
        layout: Layout::Kcl,
        keep_order: true,
    };
    import(&documents, &options)
        .expect("imports")
        .into_iter()
        .filter(|(path, _)| path.ends_with(".k"))
        .map(|(path, text)| {
            let name = if path.starts_with("k8s/") {
                path
            } else {
                path.rsplit('/').next().unwrap_or(&path).to_string()
            };
            (name, text)
        })
        .collect()
}

fn expected(case: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let models = case.join("models");
    let mut stack = vec![models.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("reads the models") {
            let path = entry.expect("lists the models").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path
                    .strip_prefix(&models)
                    .expect("below the models")
                    .to_string_lossy()
                    .replace('\\', "/");
                files.insert(
                    relative,
                    std::fs::read_to_string(&path).expect("reads a model"),
                );
            }
        }
    }
    files
}

/// The first line where two texts differ, for a readable failure.
fn first_difference(expected: &str, actual: &str) -> String {
    for (index, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}:\n  expected: {e:?}\n  actual:   {a:?}", index + 1);
        }
    }
    format!(
        "lengths differ: expected {} lines, actual {}",
        expected.lines().count(),
        actual.lines().count()
    )
}

fn compare(case: &Path) -> Vec<String> {
    let expected = expected(case);
    let actual = generated(case);
    let mut problems = Vec::new();
    for (name, text) in &expected {
        match actual.get(name) {
            None => problems.push(format!("{name}: not generated")),
            Some(actual) if actual != text => {
                problems.push(format!("{name}: {}", first_difference(text, actual)))
            }
            Some(_) => {}
        }
    }
    // kcl-openapi's own command reads only the first document of a
    // stream, so a golden case holds some of the files `import` writes.
    problems
}

#[test]
fn imported_models_equal_kcl_openapi_golden_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import");
    let cases = [
        "v1_crd",
        "v1beta1_crd_versions",
        "union_type",
        "additional_properties_pattern",
        "int_or_string_validation",
        "same_versions_schema",
        "all_of_pattern",
        "crd_check",
        "str_attr",
        "v1_crd_multi_versions",
        "map_default_value",
    ];
    let mut failures = Vec::new();
    for case in cases {
        for problem in compare(&root.join(case)) {
            failures.push(format!("{case}: {problem}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn import_reports_agreement_with_every_golden_case() {
    let Ok(dir) = std::env::var("PLAIT_IMPORT_GOLDEN_DIR") else {
        return;
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("reads the golden directory")
        .map(|entry| entry.expect("lists it").path())
        .filter(|path| path.join("models").is_dir())
        .collect();
    entries.sort();
    for case in entries {
        let problems = compare(&case);
        let name = case
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if problems.is_empty() {
            eprintln!("{name}: identical");
        } else {
            eprintln!("{name}: {} differences", problems.len());
            for problem in problems.iter().take(6) {
                eprintln!("    {problem}");
            }
        }
    }
}

/// A CRD whose constraints the generated `check:` block and types carry.
const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.org}
spec:
  group: example.org
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [name]
            properties:
              name: {type: string, maxLength: 8, pattern: "^[a-z]+$"}
              replicas: {type: integer, minimum: 1, maximum: 5, default: 1}
              size: {type: string, enum: [small, large]}
              port: {x-kubernetes-int-or-string: true}
              tags: {type: array, maxItems: 2, items: {type: string, minLength: 2}}
              labels: {type: object, additionalProperties: {type: string}}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// The generated models load, type-check, default and check with plait's
/// KCL: each program instantiates the kind's schema with one spec; the
/// error codes are those kcl-lib 0.12.3 reports on the same models.
#[test]
fn imported_models_check_instances_as_kcl_does() {
    let value: serde_json::Value = serde_yaml_ng::from_str(WIDGET_CRD).expect("parses the CRD");
    let documents = [Document {
        name: "widget.yaml".into(),
        value,
    }];
    let files = import(&documents, &ImportOptions::default()).expect("imports");
    let dir = tempfile::tempdir().expect("makes a directory");
    for (path, text) in &files {
        let target = dir.path().join("models").join(path);
        std::fs::create_dir_all(target.parent().expect("has a parent")).expect("makes dirs");
        std::fs::write(target, text).expect("writes a model");
    }
    let function = dir.path().join("fn");
    std::fs::create_dir_all(&function).expect("makes the function directory");
    std::fs::write(
        function.join("kcl.mod"),
        "[package]\nname = \"fn\"\n\n[dependencies]\nmodels = { path = \"../models\" }\n",
    )
    .expect("writes kcl.mod");
    let cases = [
        (
            r#"{name = "abc", port = 80, tags = ["ab"], extra = {a = 1}}"#,
            Ok("replicas: 1"),
        ),
        (r#"{name = "abc", port = "http"}"#, Ok("port: http")),
        (r#"{name = "Abc"}"#, Err("E3M38")),
        (r#"{name = "abcdefghij"}"#, Err("E3M38")),
        (r#"{name = "abc", replicas = 9}"#, Err("E3M38")),
        (r#"{name = "abc", replicas = 0}"#, Err("E3M38")),
        (r#"{name = "abc", size = "medium"}"#, Err("E2G22")),
        (r#"{name = "abc", tags = ["a"]}"#, Err("E3M38")),
        (r#"{name = "abc", tags = ["ab", "cd", "ef"]}"#, Err("E3M38")),
        (r#"{replicas = 2}"#, Err("E3M38")),
        (r#"{name = "abc", colour = "red"}"#, Err("E2L23")),
    ];
    for (spec, expected) in cases {
        std::fs::write(
            function.join("main.k"),
            format!(
                "import models.v1alpha1.example_org_v1alpha1_widget as w\n\nwidget = w.Widget {{\n    metadata.name = \"w\"\n    spec = {spec}\n}}\n"
            ),
        )
        .expect("writes main.k");
        let run = plait_kcl::run(&plait_kcl::RunOptions {
            inputs: vec![function.join("main.k")],
            work_dir: Some(function.clone()),
            ..Default::default()
        });
        match (run, expected) {
            (Ok(output), Ok(fragment)) => {
                assert!(output.yaml.contains(fragment), "{spec}: {}", output.yaml)
            }
            (Err(error), Err(code)) => {
                let rendered = error.render();
                assert!(
                    rendered.contains(code),
                    "{spec}: expected {code}, got {rendered}"
                );
            }
            (Ok(output), Err(code)) => panic!("{spec}: expected {code}, got {}", output.yaml),
            (Err(error), Ok(_)) => panic!("{spec}: {}", error.render()),
        }
    }
}
