//! Reading YAML streams and decoding them into typed manifests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use plait_model::{
    CompositeResourceDefinition, Composition, EnvironmentConfig, Function, Manifest, ModelError,
    XrdScope, parse_documents,
};
use serde_json::{Value, json};

#[test]
fn parse_documents_splits_streams_and_skips_empty_documents() {
    let cases: &[(&str, &str, Vec<Value>)] = &[
        ("single", "a: 1\n", vec![json!({"a": 1})]),
        ("leading separator", "---\na: 1\n", vec![json!({"a": 1})]),
        (
            "empty and comment-only documents",
            "---\n---\n# nothing\n---\na: x\n---\nb: 2.5\n",
            vec![json!({"a": "x"}), json!({"b": 2.5})],
        ),
        ("empty stream", "", vec![]),
        (
            "integral numbers stay integers",
            "n: 3\nf: 3.0\n",
            vec![json!({"n": 3, "f": 3.0})],
        ),
        (
            "duplicate keys keep the last value",
            "a: 1\na: 2\n",
            vec![json!({"a": 2})],
        ),
    ];
    for (name, text, want) in cases {
        let got = parse_documents(text, "f.yaml").unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&got, want, "{name}");
        if *name == "integral numbers stay integers" {
            assert!(got[0]["n"].is_i64() && got[0]["f"].is_f64(), "{name}");
        }
    }
}

#[test]
fn parse_documents_errors_name_file_and_document_index() {
    let cases = [
        ("a: 1\n---\nb: [\n", "f.yaml", 1),
        ("a: [\n", "other.yaml", 0),
        ("---\n---\nx: 1\n---\n  - a\n b: c\n", "g.yaml", 3),
    ];
    for (text, file, index) in cases {
        match parse_documents(text, file) {
            Err(ModelError::Yaml {
                file: f, index: i, ..
            }) => assert_eq!((f.as_str(), i), (file, index), "{text:?}"),
            other => panic!("{text:?}: expected a YAML error, got {other:?}"),
        }
    }
}

fn decode_error<T: Manifest + std::fmt::Debug>(v: Value) -> (String, String) {
    match T::from_value(v) {
        Err(ModelError::Decode { path, message, .. }) => (path, message),
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[test]
fn decode_errors_name_the_failing_field_path() {
    let comp = |spec: Value| {
        json!({"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
               "metadata": {"name": "c"}, "spec": spec})
    };
    let cases = [
        (
            comp(json!({"pipeline": [{"step": "a", "functionRef": "fn"}]})),
            "spec.pipeline[0].functionRef",
        ),
        (comp(json!({"mode": "Sometimes"})), "spec.mode"),
        (
            comp(
                json!({"pipeline": [{"step": "a", "functionRef": {"name": "f"}},
                                     {"step": "b", "credentials": [{"name": "c", "source": "Vault"}]}]}),
            ),
            "spec.pipeline[1].credentials[0].source",
        ),
        (
            comp(json!({"environment": {"environmentConfigs": [{"type": "Ref"}]}})),
            "spec.environment.environmentConfigs[0].type",
        ),
        (
            comp(json!({"environment": {"environmentConfigs": [{"selector": {"maxMatch": -1}}]}})),
            "spec.environment.environmentConfigs[0].selector.maxMatch",
        ),
        (
            comp(json!({"compositeTypeRef": {"kind": 3}})),
            "spec.compositeTypeRef.kind",
        ),
        (comp(json!({"resources": {"a": 1}})), "spec.resources"),
    ];
    for (value, want) in cases {
        let (path, message) = decode_error::<Composition>(value);
        assert_eq!(path, want, "{message}");
    }
    let (path, _) = decode_error::<CompositeResourceDefinition>(json!({
        "apiVersion": "apiextensions.crossplane.io/v2", "kind": "CompositeResourceDefinition",
        "spec": {"versions": [{"name": "v1", "served": "yes"}]}}));
    assert_eq!(path, "spec.versions[0].served");
}

#[test]
fn from_value_rejects_other_kinds_and_api_versions() {
    let cases = [
        json!({"apiVersion": "apiextensions.crossplane.io/v2", "kind": "Composition"}),
        json!({"apiVersion": "apiextensions.crossplane.io/v1", "kind": "CompositionRevision"}),
        json!({"kind": "Composition"}),
    ];
    for v in cases {
        assert!(
            matches!(
                Composition::from_value(v.clone()),
                Err(ModelError::WrongKind { .. })
            ),
            "{v}"
        );
        assert!(!Composition::matches(&v), "{v}");
    }
}

#[test]
fn null_lists_and_maps_read_as_empty() {
    let comp = Composition::from_value(json!({
        "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
        "metadata": {"name": "c", "labels": null},
        "spec": {"compositeTypeRef": {"apiVersion": "a/v1", "kind": "X"},
                 "resources": null, "pipeline": [{"step": "s", "functionRef": {"name": "f"}, "credentials": null}]}
    }))
    .unwrap();
    assert!(comp.metadata.labels.is_empty());
    assert!(comp.spec.resources.is_empty());
    assert!(comp.spec.pipeline[0].credentials.is_empty());
}

#[test]
fn manifests_round_trip_unknown_fields() {
    let docs = [
        json!({"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
               "metadata": {"name": "c", "resourceVersion": "7", "ownerReferences": [{"name": "o"}]},
               "spec": {"compositeTypeRef": {"apiVersion": "a/v1", "kind": "X"}, "mode": "Pipeline",
                        "pipeline": [{"step": "s", "functionRef": {"name": "f"},
                                      "input": {"apiVersion": "x/v1", "kind": "I", "n": 1},
                                      "requirements": {"requiredResources": [{"requirementName": "r", "apiVersion": "v1", "kind": "ConfigMap", "name": "cm"}]}}],
                        "futureField": {"x": true}}}),
        json!({"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "Function",
               "metadata": {"name": "f", "annotations": {"render.crossplane.io/runtime": "Development"}},
               "spec": {"package": "xpkg.crossplane.io/f:v1", "packagePullSecrets": [{"name": "s"}],
                        "runtimeConfigRef": {"name": "rc"}}}),
        json!({"apiVersion": "apiextensions.crossplane.io/v1alpha1", "kind": "EnvironmentConfig",
               "metadata": {"name": "e", "labels": {"stage": "prod"}}, "data": {"a": {"b": [1, 2.5]}}}),
    ];
    for doc in docs {
        let back = match doc["kind"].as_str() {
            Some("Composition") => {
                serde_json::to_value(Composition::from_value(doc.clone()).unwrap())
            }
            Some("Function") => serde_json::to_value(Function::from_value(doc.clone()).unwrap()),
            _ => serde_json::to_value(EnvironmentConfig::from_value(doc.clone()).unwrap()),
        }
        .unwrap();
        assert_eq!(back, doc);
    }
}

#[test]
fn xrd_scope_defaults_by_api_version() {
    let xrd = |api: &str, scope: Option<&str>| {
        let mut spec = json!({"group": "ex.org", "names": {"kind": "X", "plural": "xs"},
                              "versions": [{"name": "v1", "served": true, "referenceable": true}]});
        if let Some(s) = scope {
            spec["scope"] = json!(s);
        }
        CompositeResourceDefinition::from_value(json!({
            "apiVersion": api, "kind": "CompositeResourceDefinition",
            "metadata": {"name": "xs.ex.org"}, "spec": spec}))
        .unwrap()
    };
    let cases = [
        (
            "apiextensions.crossplane.io/v1",
            None,
            XrdScope::LegacyCluster,
            false,
        ),
        (
            "apiextensions.crossplane.io/v2",
            None,
            XrdScope::Namespaced,
            true,
        ),
        (
            "apiextensions.crossplane.io/v2",
            Some("Cluster"),
            XrdScope::Cluster,
            false,
        ),
        (
            "apiextensions.crossplane.io/v1",
            Some("Namespaced"),
            XrdScope::Namespaced,
            true,
        ),
    ];
    for (api, scope, want, namespaced) in cases {
        let x = xrd(api, scope);
        assert_eq!(x.scope(), want, "{api} {scope:?}");
        assert_eq!(x.is_namespaced(), namespaced, "{api} {scope:?}");
        assert_eq!(x.composite_gvk().api_version(), "ex.org/v1");
    }
}

#[test]
fn composite_gvk_uses_the_referenceable_version() {
    let cases = [
        (
            json!([{"name": "v1alpha1", "referenceable": true}, {"name": "v1"}]),
            "v1alpha1",
        ),
        (
            json!([{"name": "v1alpha1"}, {"name": "v1", "referenceable": true}]),
            "v1",
        ),
        (json!([{"name": "v1alpha1"}]), ""),
    ];
    for (versions, want) in cases {
        let x = CompositeResourceDefinition::from_value(json!({
            "apiVersion": "apiextensions.crossplane.io/v1", "kind": "CompositeResourceDefinition",
            "spec": {"group": "g.io", "names": {"kind": "XK", "plural": "xks"},
                     "claimNames": {"kind": "K", "plural": "ks"}, "versions": versions}}))
        .unwrap();
        let gvk = x.composite_gvk();
        assert_eq!(
            (gvk.group.as_str(), gvk.version.as_str(), gvk.kind.as_str()),
            ("g.io", want, "XK")
        );
        assert_eq!(x.claim_gvk().unwrap().kind, "K");
        assert_eq!(
            x.referenceable_version()
                .map(|v| v.name.as_str())
                .unwrap_or(""),
            want
        );
    }
}
