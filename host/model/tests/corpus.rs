//! Every manifest of the shared Crossplane corpus parses, validates, and every Resources-mode
//! Composition converts to a Pipeline that validates.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use plait_model::{
    CompositeResourceDefinition, Composition, CompositionMode, EnvironmentConfig, Function,
    Manifest, PATCH_AND_TRANSFORM_STEP, apply_schema_defaults, parse_documents, render_errors,
};
use serde_json::Value;

/// The real-world corpus, kept in the repository at `tests/corpus`.
fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

fn cases() -> Vec<PathBuf> {
    let dir = corpus_dir();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus directory {} is required: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 37, "the corpus has 37 cases");
    cases
}

fn docs(case: &Path, file: &str) -> Option<Vec<Value>> {
    let path = case.join(file);
    let text = std::fs::read_to_string(&path).ok()?;
    Some(parse_documents(&text, &path.display().to_string()).unwrap())
}

fn one<T: Manifest>(case: &Path, file: &str) -> Option<T> {
    let docs = docs(case, file)?;
    assert_eq!(docs.len(), 1, "{}: one document", case.join(file).display());
    Some(
        T::from_value(docs.into_iter().next().unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", case.join(file).display())),
    )
}

/// Checks the input a converted Composition gives function-patch-and-transform has every
/// field that function requires but native P&T defaulted.
fn check_pt_input(case: &Path, input: &Value) {
    let at = case.display();
    for (i, r) in input["resources"].as_array().unwrap().iter().enumerate() {
        assert!(r["name"].is_string(), "{at}: resources[{i}] named");
        let patches = r["patches"].as_array().into_iter().flatten();
        let set_patches = input["patchSets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s["patches"].as_array().into_iter().flatten());
        for p in patches.chain(set_patches) {
            assert!(p["type"].is_string(), "{at}: patch typed: {p}");
            assert!(p["policy"].get("mergeOptions").is_none(), "{at}: {p}");
            for t in p["transforms"].as_array().into_iter().flatten() {
                let tt = t["type"].as_str().unwrap();
                if tt == "string" || tt == "math" {
                    assert!(t[tt]["type"].is_string(), "{at}: transform typed: {t}");
                }
            }
        }
        for d in r["connectionDetails"].as_array().into_iter().flatten() {
            assert!(d["type"].is_string() && d["name"].is_string(), "{at}: {d}");
        }
    }
}

#[test]
fn every_corpus_manifest_parses_validates_and_converts() {
    let mut resources_mode = 0;
    let mut environment_steps = 0;
    let mut defaulted = Vec::new();
    for case in cases() {
        let at = case.display().to_string();
        let comp: Composition = one(&case, "composition.yaml").expect("composition.yaml");
        comp.validate()
            .unwrap_or_else(|e| panic!("{at}: composition: {}", render_errors(&e)));

        let pipeline = comp.to_pipeline().unwrap();
        assert_eq!(pipeline.mode(), CompositionMode::Pipeline, "{at}");
        pipeline
            .validate()
            .unwrap_or_else(|e| panic!("{at}: converted: {}", render_errors(&e)));
        if comp.mode() == CompositionMode::Resources {
            resources_mode += 1;
            let last = pipeline.spec.pipeline.last().unwrap();
            assert_eq!(last.step, PATCH_AND_TRANSFORM_STEP, "{at}");
            check_pt_input(&case, last.input.as_ref().unwrap());
            assert!(pipeline.spec.resources.is_empty(), "{at}");
            if comp.spec.environment.is_some() {
                environment_steps += 1;
                assert_eq!(pipeline.spec.pipeline.len(), 2, "{at}");
                assert!(pipeline.spec.environment.is_none(), "{at}");
            }
        } else {
            assert_eq!(pipeline, comp, "{at}: Pipeline mode is kept as is");
        }

        let xrd: Option<CompositeResourceDefinition> = one(&case, "xrd.yaml");
        let mut xr = docs(&case, "xr.yaml").expect("xr.yaml");
        assert_eq!(xr.len(), 1, "{at}: one XR");
        if let Some(xrd) = &xrd {
            xrd.validate()
                .unwrap_or_else(|e| panic!("{at}: xrd: {}", render_errors(&e)));
            let gvk = xrd.composite_gvk();
            assert_eq!(xr[0]["apiVersion"], gvk.api_version().as_str(), "{at}");
            assert_eq!(xr[0]["kind"], gvk.kind.as_str(), "{at}");
            assert_eq!(comp.spec.composite_type_ref.kind, gvk.kind, "{at}");
            let before = xr[0].clone();
            apply_schema_defaults(&mut xr[0], xrd).unwrap();
            if xr[0] != before {
                defaulted.push(case.file_name().unwrap().to_string_lossy().into_owned());
            }
        }

        for f in docs(&case, "functions.yaml").into_iter().flatten() {
            let f = Function::from_value(f).unwrap_or_else(|e| panic!("{at}: {e}"));
            assert!(!f.spec.package.is_empty(), "{at}: {}", f.name());
        }
        for e in docs(&case, "environmentconfigs.yaml").into_iter().flatten() {
            EnvironmentConfig::from_value(e).unwrap_or_else(|e| panic!("{at}: {e}"));
        }
    }
    assert_eq!(
        resources_mode, 19,
        "the corpus has 19 Resources-mode Compositions"
    );
    assert_eq!(
        environment_steps, 4,
        "four of them use a native environment"
    );
    // The README's "defaults" cases whose XR leaves a defaulted field unset, plus the
    // environment cases, whose XRDs write defaultCompositionUpdatePolicy.
    assert_eq!(
        defaulted,
        [
            "configuration-app__xapp-pipeline",
            "configuration-aws-eks__xeks-pipeline",
            "configuration-aws-eks__xeks-resources",
            "configuration-aws-lb-controller__pipeline",
            "configuration-aws-network__xnetwork-pipeline",
            "configuration-azure-database__mariadb-pipeline",
            "configuration-azure-database__postgresql-resources",
            "configuration-gcp-database__sqlinstance-pipeline",
            "configuration-gitops-flux__xflux-pipeline",
            "configuration-observability-oss__xoss-pipeline",
            "crossplane-e2e__environment-default",
            "crossplane-e2e__environment-multiple-maxmatch1",
            "crossplane-e2e__environment-resolution-optional",
            "crossplane-on-eks__microservice-pipeline",
            "devops-toolkit__app-backend",
            "platform-ref-aws__xcluster-pipeline",
            "platform-ref-aws__xirsa-resources",
            "platform-ref-aws__xsqlinstance-resources",
        ]
    );
}
