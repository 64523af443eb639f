//! `mode: Resources` → Pipeline conversion, as `crossplane beta convert` does it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use plait_model::{Composition, CompositionMode, Manifest};
use serde_json::{Value, json};

fn composition(spec: Value) -> Composition {
    let mut spec = spec;
    spec["compositeTypeRef"] = json!({"apiVersion": "ex.org/v1", "kind": "X"});
    Composition::from_value(json!({
        "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
        "metadata": {"name": "c", "labels": {"l": "v"}},
        "spec": spec}))
    .unwrap()
}

fn converted(spec: Value) -> Value {
    let out = composition(spec).to_pipeline().unwrap();
    assert_eq!(out.mode(), CompositionMode::Pipeline);
    out.validate().unwrap();
    serde_json::to_value(out).unwrap()
}

fn pt_step(input_rest: Value) -> Value {
    let mut input = json!({"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources"});
    for (k, v) in input_rest.as_object().unwrap() {
        input[k] = v.clone();
    }
    json!({"step": "patch-and-transform", "functionRef": {"name": "function-patch-and-transform"}, "input": input})
}

fn spec_with(pipeline: Vec<Value>, rest: Value) -> Value {
    let mut spec = json!({"compositeTypeRef": {"apiVersion": "ex.org/v1", "kind": "X"},
                          "mode": "Pipeline", "pipeline": pipeline});
    for (k, v) in rest.as_object().unwrap() {
        spec[k] = v.clone();
    }
    spec
}

#[test]
fn resources_mode_converts_like_beta_convert() {
    let base = json!({"apiVersion": "v1", "kind": "ConfigMap"});
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "anonymous resources are named by index; other spec fields stay",
            json!({"writeConnectionSecretsToNamespace": "ns",
                   "resources": [{"base": base}, {"base": base}]}),
            spec_with(
                vec![pt_step(json!({"resources": [
                    {"name": "resource-0", "base": base}, {"name": "resource-1", "base": base}]}))],
                json!({"writeConnectionSecretsToNamespace": "ns"}),
            ),
        ),
        (
            "patch types default, in templates and patch sets",
            json!({"mode": "Resources",
                   "patchSets": [{"name": "ps", "patches": [{"fromFieldPath": "a"}]}],
                   "resources": [{"name": "r", "base": base, "patches": [
                        {"fromFieldPath": "b"}, {"type": "PatchSet", "patchSetName": "ps"}]}]}),
            spec_with(
                vec![pt_step(json!({
                    "patchSets": [{"name": "ps", "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "a"}]}],
                    "resources": [{"name": "r", "base": base, "patches": [
                        {"type": "FromCompositeFieldPath", "fromFieldPath": "b"},
                        {"type": "PatchSet", "patchSetName": "ps"}]}]}))],
                json!({}),
            ),
        ),
        (
            "mergeOptions become toFieldPath policies",
            json!({"resources": [{"name": "r", "base": base, "patches": [
                {"fromFieldPath": "a", "policy": {"mergeOptions": {"keepMapValues": true}}},
                {"fromFieldPath": "a", "policy": {"mergeOptions": {"keepMapValues": true, "appendSlice": true}}},
                {"fromFieldPath": "a", "policy": {"mergeOptions": {"appendSlice": true}, "fromFieldPath": "Required"}},
                {"fromFieldPath": "a", "policy": {"mergeOptions": {}}},
                {"fromFieldPath": "a", "policy": {"mergeOptions": null}}]}]}),
            spec_with(
                vec![pt_step(
                    json!({"resources": [{"name": "r", "base": base, "patches": [
                    {"type": "FromCompositeFieldPath", "fromFieldPath": "a", "policy": {"toFieldPath": "MergeObjects"}},
                    {"type": "FromCompositeFieldPath", "fromFieldPath": "a", "policy": {"toFieldPath": "MergeObjectsAppendArrays"}},
                    {"type": "FromCompositeFieldPath", "fromFieldPath": "a", "policy": {"toFieldPath": "ForceMergeObjectsAppendArrays", "fromFieldPath": "Required"}},
                    {"type": "FromCompositeFieldPath", "fromFieldPath": "a", "policy": {"toFieldPath": "ForceMergeObjects"}},
                    {"type": "FromCompositeFieldPath", "fromFieldPath": "a", "policy": {}}]}]}),
                )],
                json!({}),
            ),
        ),
        (
            "transform and sub-transform types are inferred",
            json!({"resources": [{"name": "r", "base": base, "patches": [{"fromFieldPath": "a", "transforms": [
                {"type": "math", "math": {"multiply": 2}},
                {"math": {"clampMin": 1}},
                {"math": {"clampMax": 9}},
                {"string": {"fmt": "%s"}},
                {"type": "string", "string": {"convert": "ToUpper"}},
                {"string": {"regexp": {"match": "a"}}},
                {"string": {"type": "TrimPrefix", "trim": "x"}},
                {"map": {"a": "b"}},
                {"convert": {"toType": "int"}},
                {"match": {"patterns": []}}]}]}]}),
            spec_with(
                vec![pt_step(
                    json!({"resources": [{"name": "r", "base": base, "patches": [{
                    "type": "FromCompositeFieldPath", "fromFieldPath": "a", "transforms": [
                    {"type": "math", "math": {"type": "Multiply", "multiply": 2}},
                    {"type": "math", "math": {"type": "ClampMin", "clampMin": 1}},
                    {"type": "math", "math": {"type": "ClampMax", "clampMax": 9}},
                    {"type": "string", "string": {"type": "Format", "fmt": "%s"}},
                    {"type": "string", "string": {"type": "Convert", "convert": "ToUpper"}},
                    {"type": "string", "string": {"type": "Regexp", "regexp": {"match": "a"}}},
                    {"type": "string", "string": {"type": "TrimPrefix", "trim": "x"}},
                    {"type": "map", "map": {"a": "b"}},
                    {"type": "convert", "convert": {"toType": "int"}},
                    {"type": "match", "match": {"patterns": []}}]}]}]}),
                )],
                json!({}),
            ),
        ),
        (
            "connection detail types are inferred and secret keys name themselves",
            json!({"resources": [{"name": "r", "base": base, "connectionDetails": [
                {"fromConnectionSecretKey": "username"},
                {"name": "u", "type": "FromConnectionSecretKey", "fromConnectionSecretKey": "user"},
                {"name": "host", "fromFieldPath": "status.host"},
                {"name": "port", "value": "5432"}],
                "readinessChecks": [{"type": "None"}]}]}),
            spec_with(
                vec![pt_step(
                    json!({"resources": [{"name": "r", "base": base, "connectionDetails": [
                    {"name": "username", "type": "FromConnectionSecretKey", "fromConnectionSecretKey": "username"},
                    {"name": "u", "type": "FromConnectionSecretKey", "fromConnectionSecretKey": "user"},
                    {"name": "host", "type": "FromFieldPath", "fromFieldPath": "status.host"},
                    {"name": "port", "type": "FromValue", "value": "5432"}],
                    "readinessChecks": [{"type": "None"}]}]}),
                )],
                json!({}),
            ),
        ),
        (
            "native environment becomes a function-environment-configs step",
            json!({"environment": {
                    "environmentConfigs": [{"ref": {"name": "e1"}},
                        {"type": "Selector", "selector": {"mode": "Multiple", "maxMatch": 1, "sortByFieldPath": "data.priority",
                            "matchLabels": [{"type": "FromCompositeFieldPath", "key": "stage", "valueFromFieldPath": "metadata.labels[stage]"}]}}],
                    "policy": {"resolution": "Optional", "resolve": "Always"},
                    "defaultData": {"a": 1},
                    "patches": [{"fromFieldPath": "spec.x", "toFieldPath": "x"}]},
                   "resources": [{"name": "r", "base": base, "patches": [{"type": "FromEnvironmentFieldPath", "fromFieldPath": "x"}]}]}),
            spec_with(
                vec![
                    json!({"step": "environment-configs", "functionRef": {"name": "function-environment-configs"},
                           "input": {"apiVersion": "environmentconfigs.fn.crossplane.io/v1beta1", "kind": "Input",
                                     "spec": {"environmentConfigs": [{"ref": {"name": "e1"}},
                                                {"type": "Selector", "selector": {"mode": "Multiple", "maxMatch": 1, "sortByFieldPath": "data.priority",
                                                    "matchLabels": [{"type": "FromCompositeFieldPath", "key": "stage", "valueFromFieldPath": "metadata.labels[stage]"}]}}],
                                              "policy": {"resolution": "Optional"},
                                              "defaultData": {"a": 1}}}}),
                    pt_step(json!({
                        "environment": {"patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.x", "toFieldPath": "x"}]},
                        "resources": [{"name": "r", "base": base, "patches": [{"type": "FromEnvironmentFieldPath", "fromFieldPath": "x"}]}]})),
                ],
                json!({}),
            ),
        ),
        (
            "an environment with only a resolve policy stays on the Composition",
            json!({"environment": {"policy": {"resolve": "Always"}}, "resources": [{"name": "r", "base": base}]}),
            spec_with(
                vec![pt_step(json!({"resources": [{"name": "r", "base": base}]}))],
                json!({"environment": {"policy": {"resolve": "Always"}}}),
            ),
        ),
    ];
    for (name, spec, want) in cases {
        let got = converted(spec);
        assert_eq!(got["spec"], want, "{name}");
        assert_eq!(
            got["metadata"],
            json!({"name": "c", "labels": {"l": "v"}}),
            "{name}"
        );
    }
}

#[test]
fn pipeline_mode_is_returned_unchanged() {
    let cases = [
        json!({"mode": "Pipeline", "pipeline": [{"step": "a", "functionRef": {"name": "f"}, "input": {"x": 1}}]}),
        json!({"pipeline": [{"step": "a", "functionRef": {"name": "f"}}]}),
    ];
    for spec in cases {
        let c = composition(spec);
        assert_eq!(c.to_pipeline().unwrap(), c);
    }
}

#[test]
fn non_object_templates_and_patches_fail_conversion_with_their_path() {
    let cases = [
        (json!({"resources": ["nope"]}), "spec.resources[0]"),
        (
            json!({"resources": [{"name": "r", "patches": [{"fromFieldPath": "a"}, 3]}]}),
            "spec.resources[0].patches[1]",
        ),
        (
            json!({"resources": [{"name": "r", "connectionDetails": [[]]}]}),
            "spec.resources[0].connectionDetails[0]",
        ),
        (
            json!({"resources": [{"name": "r"}], "patchSets": [1]}),
            "spec.patchSets[0]",
        ),
        (
            json!({"resources": [{"name": "r"}], "environment": {"patches": ["x"]}}),
            "spec.environment.patches[0]",
        ),
    ];
    for (spec, want) in cases {
        let err = composition(spec).to_pipeline().unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!(": {want}: must be an object")),
            "{want}: {err}"
        );
    }
}
