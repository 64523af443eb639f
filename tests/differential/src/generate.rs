//! Generated inputs within the documented patch-and-transform grammar
//! (`docs/patch-and-transform.md`): XRs with fields of every JSON type, and
//! Compositions whose resources patch them through every patch type,
//! transform and policy. Seeded, so a failing input can be made again.

use serde_json::{Value, json};

/// One generated XR with its XRD and Composition.
pub struct GeneratedInput {
    pub xrd: Value,
    pub xr: Value,
    pub composition: Value,
}

const GROUP: &str = "gen.plait.test";
const KIND: &str = "XGen";

/// `count` inputs from `seed`.
pub fn inputs(seed: u64, count: usize) -> Vec<GeneratedInput> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..count).map(|i| input(&mut rng, i)).collect()
}

/// The XR's fields, by name, so patches can read what is (and is not) there.
const FIELDS: &[&str] = &[
    "name", "region", "size", "count", "ratio", "enabled", "tags", "labels", "empty", "nested",
];

fn field_value(rng: &mut fastrand::Rng, field: &str) -> Value {
    match field {
        "name" => json!(pick(rng, &["alpha", "Beta-2", "gamma_3", "x"])),
        "region" => json!(pick(rng, &["us-east-1", "eu-west-2", "ap-south-1"])),
        "size" => json!(pick(rng, &["10", "2.5", "small", "-3", "1Gi"])),
        "count" => json!(rng.i64(-5..=100)),
        "ratio" => json!(pick_f(rng, &[0.5, 1.25, 3.0, -2.75])),
        "enabled" => json!(rng.bool()),
        "tags" => json!(
            (0..rng.usize(0..=3))
                .map(|_| pick(rng, &["a", "b", "c", "team-x"]))
                .collect::<Vec<_>>()
        ),
        "labels" => json!({"team": pick(rng, &["x", "z"]), "tier": pick(rng, &["web", "db"])}),
        "empty" => json!(""),
        _ => json!({"inner": pick(rng, &["one", "two"]), "n": rng.i64(0..=9)}),
    }
}

fn pick<'a>(rng: &mut fastrand::Rng, options: &[&'a str]) -> &'a str {
    options[rng.usize(..options.len())]
}

fn pick_f(rng: &mut fastrand::Rng, options: &[f64]) -> f64 {
    options[rng.usize(..options.len())]
}

fn input(rng: &mut fastrand::Rng, index: usize) -> GeneratedInput {
    let legacy = rng.bool();
    let name = format!("gen-{index}");
    let mut spec = serde_json::Map::new();
    for field in FIELDS {
        // Some fields are left out so Optional and Required policies matter.
        if rng.u8(..10) < 8 {
            spec.insert((*field).into(), field_value(rng, field));
        }
    }
    let mut metadata = json!({"name": name});
    if !legacy {
        metadata["namespace"] = json!("default");
    }
    let xr = json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": KIND,
        "metadata": metadata,
        "spec": spec,
    });
    let resources: Vec<Value> = (0..rng.usize(1..=3)).map(|i| resource(rng, i)).collect();
    let composition = json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": format!("gen-{index}")},
        "spec": {
            "compositeTypeRef": {"apiVersion": format!("{GROUP}/v1"), "kind": KIND},
            "mode": "Pipeline",
            "pipeline": [{
                "step": "patch-and-transform",
                "functionRef": {"name": "function-patch-and-transform"},
                "input": {
                    "apiVersion": "pt.fn.crossplane.io/v1beta1",
                    "kind": "Resources",
                    "resources": resources,
                },
            }],
        },
    });
    GeneratedInput {
        xrd: xrd(legacy),
        xr,
        composition,
    }
}

fn xrd(legacy: bool) -> Value {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let version = json!({
        "name": "v1", "served": true, "referenceable": true,
        "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": open, "status": open},
        }},
    });
    if legacy {
        json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "CompositeResourceDefinition",
            "metadata": {"name": format!("xgens.{GROUP}")},
            "spec": {
                "group": GROUP,
                "names": {"kind": KIND, "plural": "xgens"},
                "versions": [version],
            },
        })
    } else {
        json!({
            "apiVersion": "apiextensions.crossplane.io/v2",
            "kind": "CompositeResourceDefinition",
            "metadata": {"name": format!("xgens.{GROUP}")},
            "spec": {
                "scope": "Namespaced",
                "group": GROUP,
                "names": {"kind": KIND, "plural": "xgens"},
                "versions": [version],
            },
        })
    }
}

fn resource(rng: &mut fastrand::Rng, index: usize) -> Value {
    let patches: Vec<Value> = (0..rng.usize(1..=4))
        .map(|p| patch(rng, index, p))
        .collect();
    let mut resource = json!({
        "name": format!("thing-{index}"),
        "base": {
            "apiVersion": format!("{GROUP}/v1"),
            "kind": "Thing",
            "spec": {"forProvider": {"fixed": "base", "list": ["base"], "map": {"kept": "base"}}},
        },
        "patches": patches,
    });
    match rng.u8(..4) {
        0 => resource["readinessChecks"] = json!([{"type": "None"}]),
        1 => {
            resource["readinessChecks"] = json!([{
                "type": "MatchString", "fieldPath": "spec.forProvider.fixed", "matchString": "base",
            }])
        }
        _ => {}
    }
    resource
}

fn from_path(rng: &mut fastrand::Rng) -> String {
    match rng.u8(..12) {
        0 => "spec.missing".into(),
        1 => "spec.nested.inner".into(),
        2 => "metadata.name".into(),
        3 => "spec.tags[0]".into(),
        4 => "spec.labels[team]".into(),
        _ => format!("spec.{}", pick(rng, FIELDS)),
    }
}

fn patch(rng: &mut fastrand::Rng, resource: usize, index: usize) -> Value {
    let to = match rng.u8(..6) {
        0 => "spec.forProvider.map".to_string(),
        1 => "spec.forProvider.list".to_string(),
        2 => format!("metadata.labels[gen-{index}]"),
        _ => format!("spec.forProvider.p{index}"),
    };
    let mut patch = match rng.u8(..6) {
        0 => json!({
            "type": "CombineFromComposite",
            "combine": {
                "variables": [{"fromFieldPath": from_path(rng)}, {"fromFieldPath": from_path(rng)}],
                "strategy": "string",
                "string": {"fmt": pick(rng, &["%s-%s", "%v/%v", "%s"])},
            },
            "toFieldPath": to,
        }),
        1 => json!({
            "type": "ToCompositeFieldPath",
            "fromFieldPath": pick(rng, &["spec.forProvider.fixed", "spec.forProvider.list", "spec.forProvider.absent"]),
            "toFieldPath": format!("status.r{resource}p{index}"),
        }),
        _ => json!({
            "type": "FromCompositeFieldPath",
            "fromFieldPath": from_path(rng),
            "toFieldPath": to,
        }),
    };
    let transforms: Vec<Value> = (0..rng.usize(0..=2)).map(|_| transform(rng)).collect();
    if !transforms.is_empty() {
        patch["transforms"] = json!(transforms);
    }
    let mut policy = serde_json::Map::new();
    if rng.u8(..3) == 0 {
        policy.insert(
            "fromFieldPath".into(),
            json!(pick(rng, &["Optional", "Required"])),
        );
    }
    if rng.u8(..3) == 0 {
        policy.insert(
            "toFieldPath".into(),
            json!(pick(
                rng,
                &[
                    "Replace",
                    "MergeObjects",
                    "MergeObjectsAppendArrays",
                    "ForceMergeObjects",
                    "ForceMergeObjectsAppendArrays",
                ]
            )),
        );
    }
    if !policy.is_empty() {
        patch["policy"] = Value::Object(policy);
    }
    patch
}

fn transform(rng: &mut fastrand::Rng) -> Value {
    match rng.u8(..12) {
        0 => {
            json!({"type": "map", "map": {"alpha": "A", "Beta-2": {"b": 2}, "us-east-1": "use1", "true": "yes"}})
        }
        1 => json!({"type": "match", "match": {
            "patterns": [
                {"type": "literal", "literal": "alpha", "result": 1},
                {"type": "regexp", "regexp": "^[a-z]+-[0-9]$", "result": "regional"},
            ],
            "fallbackValue": pick(rng, &["none", "other"]),
        }}),
        2 => json!({"type": "match", "match": {
            "patterns": [{"type": "literal", "literal": "small", "result": "s"}],
            "fallbackTo": "Input",
        }}),
        3 => json!({"type": "math", "math": {"type": "Multiply", "multiply": rng.i64(-3..=4)}}),
        4 => json!({"type": "math", "math": {
            "type": pick(rng, &["ClampMin", "ClampMax"]),
            "clampMin": 2, "clampMax": 50,
        }}),
        5 => {
            json!({"type": "string", "string": {"type": "Format", "fmt": pick(rng, &["%s-x", "%v", "[%q]", "%.2f", "%t"])}})
        }
        6 => {
            json!({"type": "string", "string": {"type": "Convert", "convert": pick(rng, &["ToUpper", "ToLower", "ToBase64", "ToSha256", "ToJson", "ToAdler32"])}})
        }
        7 => {
            json!({"type": "string", "string": {"type": pick(rng, &["TrimPrefix", "TrimSuffix"]), "trim": pick(rng, &["us-", "-1", "a"])}})
        }
        8 => {
            json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "([a-z]+)-([0-9]+)", "group": rng.i64(0..=2)}}})
        }
        9 => {
            json!({"type": "string", "string": {"type": "Join", "join": {"separator": pick(rng, &[",", "--", ""])}}})
        }
        10 => {
            json!({"type": "string", "string": {"type": "Replace", "replace": {"search": "-", "replace": pick(rng, &["_", ""])}}})
        }
        _ => {
            json!({"type": "convert", "convert": {"toType": pick(rng, &["string", "int64", "float64", "bool", "int"])}})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_generates_the_same_inputs() {
        let a: Vec<Value> = inputs(7, 5).into_iter().map(|i| i.composition).collect();
        let b: Vec<Value> = inputs(7, 5).into_iter().map(|i| i.composition).collect();
        let c: Vec<Value> = inputs(8, 5).into_iter().map(|i| i.composition).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
