//! XRD schema defaulting of XRs, as the API server applies `default:`s.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use plait_model::{
    CompositeResourceDefinition, Manifest, ModelError, apply_schema_defaults, default_value,
};
use serde_json::{Value, json};

#[test]
fn default_value_follows_structural_defaulting() {
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        (
            "missing property of an existing object",
            json!({"type": "object", "properties": {"a": {"type": "integer", "default": 5}, "b": {"type": "string"}}}),
            json!({"b": "x"}),
            json!({"a": 5, "b": "x"}),
        ),
        (
            "present values win",
            json!({"properties": {"a": {"default": 5}}}),
            json!({"a": 7}),
            json!({"a": 7}),
        ),
        (
            "null is replaced unless nullable",
            json!({"properties": {"a": {"default": 5}, "b": {"default": 6, "nullable": true}}}),
            json!({"a": null, "b": null}),
            json!({"a": 5, "b": null}),
        ),
        (
            "absent objects are not created",
            json!({"properties": {"o": {"type": "object", "properties": {"a": {"default": 1}}}}}),
            json!({}),
            json!({}),
        ),
        (
            "defaulted objects are defaulted recursively",
            json!({"properties": {"o": {"type": "object", "default": {"x": 1},
                                        "properties": {"a": {"default": 1}, "x": {}}}}}),
            json!({}),
            json!({"o": {"a": 1, "x": 1}}),
        ),
        (
            "array items",
            json!({"properties": {"l": {"type": "array", "items": {"properties": {"p": {"default": "tcp"}}}}}}),
            json!({"l": [{}, {"p": "udp"}]}),
            json!({"l": [{"p": "tcp"}, {"p": "udp"}]}),
        ),
        (
            "additionalProperties values",
            json!({"additionalProperties": {"properties": {"size": {"default": 1}}}}),
            json!({"a": {}, "b": {"size": 3}}),
            json!({"a": {"size": 1}, "b": {"size": 3}}),
        ),
        (
            "unknown fields under preserve-unknown-fields are untouched",
            json!({"x-kubernetes-preserve-unknown-fields": true, "properties": {"known": {"default": true}}}),
            json!({"other": {"deep": null}}),
            json!({"known": true, "other": {"deep": null}}),
        ),
        (
            "scalars against an object schema are left alone",
            json!({"properties": {"a": {"default": 1}}}),
            json!("text"),
            json!("text"),
        ),
    ];
    for (name, schema, mut x, want) in cases {
        default_value(&mut x, &schema);
        assert_eq!(x, want, "{name}");
    }
}

fn xrd(api: &str, extra: Value) -> CompositeResourceDefinition {
    let schema = |d: i64| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "metadata": {"properties": {"labels": {"default": {"x": "y"}}}},
            "spec": {"type": "object", "default": {"made": "up"},
                     "properties": {"size": {"type": "integer", "default": d},
                                    "params": {"type": "object", "properties": {"region": {"default": "eu"}}}}},
            "status": {"type": "object", "properties": {"phase": {"default": "Pending"}}}}}})
    };
    let mut spec = json!({"group": "ex.org", "names": {"kind": "XThing", "plural": "xthings"},
        "versions": [
            {"name": "v1alpha1", "served": true, "referenceable": false, "schema": schema(1)},
            {"name": "v1", "served": true, "referenceable": true, "schema": schema(2)}]});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    CompositeResourceDefinition::from_value(json!({
        "apiVersion": format!("apiextensions.crossplane.io/{api}"), "kind": "CompositeResourceDefinition",
        "metadata": {"name": "xthings.ex.org"}, "spec": spec}))
    .unwrap()
}

#[test]
fn apply_schema_defaults_uses_the_xr_version_and_spec_and_status_only() {
    let cases: Vec<(&str, &str, Value, Value, Value)> = vec![
        (
            "referenceable version",
            "v1",
            json!({}),
            json!({"apiVersion": "ex.org/v1", "kind": "XThing", "metadata": {"name": "a"}, "spec": {"params": {}}}),
            json!({"apiVersion": "ex.org/v1", "kind": "XThing", "metadata": {"name": "a"},
                   "spec": {"size": 2, "params": {"region": "eu"}}}),
        ),
        (
            "the XR's own served version",
            "v1",
            json!({}),
            json!({"apiVersion": "ex.org/v1alpha1", "kind": "XThing", "spec": {}, "status": {}}),
            json!({"apiVersion": "ex.org/v1alpha1", "kind": "XThing", "spec": {"size": 1}, "status": {"phase": "Pending"}}),
        ),
        (
            "an unknown version falls back to the referenceable one; no spec, no defaults",
            "v1",
            json!({}),
            json!({"apiVersion": "other.org/v9", "kind": "XThing"}),
            json!({"apiVersion": "other.org/v9", "kind": "XThing"}),
        ),
        (
            "a written update policy defaults a legacy XR's spec.compositionUpdatePolicy",
            "v1",
            json!({"defaultCompositionUpdatePolicy": "Manual"}),
            json!({"apiVersion": "ex.org/v1", "kind": "XThing", "spec": {"size": 4}}),
            json!({"apiVersion": "ex.org/v1", "kind": "XThing", "spec": {"size": 4, "compositionUpdatePolicy": "Manual"}}),
        ),
        (
            "and a v2 XR's spec.crossplane.compositionUpdatePolicy when spec.crossplane exists",
            "v2",
            json!({"defaultCompositionUpdatePolicy": "Automatic"}),
            json!({"apiVersion": "ex.org/v1", "kind": "XThing", "spec": {"size": 4, "crossplane": {}}}),
            json!({"apiVersion": "ex.org/v1", "kind": "XThing",
                   "spec": {"size": 4, "crossplane": {"compositionUpdatePolicy": "Automatic"}}}),
        ),
        (
            "an XR's own update policy wins",
            "v1",
            json!({"defaultCompositionUpdatePolicy": "Manual"}),
            json!({"apiVersion": "ex.org/v1", "kind": "XThing", "spec": {"size": 4, "compositionUpdatePolicy": "Automatic"}}),
            json!({"apiVersion": "ex.org/v1", "kind": "XThing", "spec": {"size": 4, "compositionUpdatePolicy": "Automatic"}}),
        ),
    ];
    for (name, api, extra, mut xr, want) in cases {
        apply_schema_defaults(&mut xr, &xrd(api, extra)).unwrap();
        assert_eq!(xr, want, "{name}");
    }
}

#[test]
fn apply_schema_defaults_errors_without_a_usable_version_or_object() {
    let no_ref = CompositeResourceDefinition::from_value(json!({
        "apiVersion": "apiextensions.crossplane.io/v2", "kind": "CompositeResourceDefinition",
        "metadata": {"name": "xs.ex.org"},
        "spec": {"group": "ex.org", "names": {"kind": "X", "plural": "xs"}, "versions": [{"name": "v1"}]}}))
    .unwrap();
    let cases = [
        (
            no_ref.clone(),
            json!({"apiVersion": "ex.org/v2", "kind": "X"}),
            "it has no referenceable version",
        ),
        (
            xrd("v1", json!({})),
            json!(["not", "an", "object"]),
            "the composite resource is not an object",
        ),
    ];
    for (x, mut xr, want) in cases {
        match apply_schema_defaults(&mut xr, &x) {
            Err(ModelError::Defaults { message, .. }) => assert_eq!(message, want),
            other => panic!("{want}: got {other:?}"),
        }
    }
    let mut own = json!({"apiVersion": "ex.org/v1", "kind": "X", "spec": {}});
    apply_schema_defaults(&mut own, &no_ref).unwrap();
}
