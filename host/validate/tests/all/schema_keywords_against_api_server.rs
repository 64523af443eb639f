//! plait answers for custom resources as kube-apiserver v1.34 does, keyword
//! by keyword: one CRD has a field for every keyword of structural schemas
//! and for every string format kube-apiserver knows; a table of values,
//! valid and invalid, each in an object of its own (and some together), is
//! server-side applied with `dryRun=All`, as plait's controller writes, and
//! the API server's causes are compared with what `plait-validate` finds.
//! (Unknown fields are left out: the API server prunes them, plait reports
//! them as `crossplane beta validate` does.)

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use plait_controlplane::ControlPlane;
use plait_validate::{Catalog, Validator};
use serde_json::{Value, json};

/// The formats kube-apiserver checks in a CRD's schema, and formats it
/// does not know (which take any string).
const FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "date-time",
    "int-or-string-unknown",
    "k8s-short-name",
];

/// Strings every format field receives: each is valid for some formats and
/// invalid for others.
const FORMAT_VALUES: &[&str] = &[
    "",
    "plain text",
    "507f1f77bcf86cd799439011",
    "https://example.org/a?b=c",
    "someone@example.org",
    "someone@",
    "host-1.example.org",
    "-bad-.example",
    "192.168.0.1",
    "256.1.1.1",
    "fd00::1",
    "fd00::zz",
    "10.0.0.0/8",
    "10.0.0.0/33",
    "fd00::/129",
    "00:1a:2b:3c:4d:5e",
    "zz:zz:zz",
    "01-23-45-67-89-ab-cd-ef",
    "f47ac10b-58cc-4372-a567-0e02b2c3d479",
    "a3bb189e-8bf9-3888-9912-ace4e6543002",
    "886313e1-3b8a-5372-9b90-0c9aee199e5d",
    "f47ac10b58cc4372a5670e02b2c3d479",
    "978-3-16-148410-0",
    "0-306-40615-2",
    "4111111111111111",
    "4111111111111112",
    "123-45-6789",
    "#ffaa00",
    "#ffaa0",
    "rgb(255, 170, 0)",
    "rgb(256, 0, 0)",
    "aGVsbG8=",
    "aGVsbG8",
    "2026-11-25",
    "2026-13-45",
    "2026-02-30",
    "2024-02-29",
    "1h30m",
    "90s",
    "3 days",
    "2026-11-25T10:00:00Z",
    "2026-11-25T10:00:00.123+01:00",
    "2026-11-25 10:00:00",
    "2026-11-25T25:00:00Z",
];

fn property_schemas() -> Value {
    let mut properties = json!({
        "int32": {"type": "integer", "format": "int32"},
        "int64": {"type": "integer", "format": "int64"},
        "bounded": {"type": "integer", "minimum": 1, "maximum": 10},
        "exclusive": {"type": "integer", "minimum": 1, "maximum": 10,
            "exclusiveMinimum": true, "exclusiveMaximum": true},
        "half": {"type": "number", "multipleOf": 0.5},
        "step": {"type": "integer", "multipleOf": 3},
        "float": {"type": "number", "format": "float"},
        "double": {"type": "number", "format": "double"},
        "text": {"type": "string", "minLength": 2, "maxLength": 5},
        "word": {"type": "string", "pattern": "^[a-z]+$"},
        "size": {"type": "string", "enum": ["s", "m", "l"]},
        "count": {"type": "integer", "enum": [1, 2, 3]},
        "flag": {"type": "boolean"},
        "list": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "atomic": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "integer"}},
        "keyed": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "port": {"type": "integer"}}}},
        "labels": {"type": "object", "minProperties": 1, "maxProperties": 2,
            "additionalProperties": {"type": "string"}},
        "granular": {"type": "object", "x-kubernetes-map-type": "granular",
            "additionalProperties": {"type": "integer"}},
        "owner": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "email": {"type": "string"}}},
        "maybe": {"type": "string", "nullable": true},
        "defaulted": {"type": "string", "default": "d"},
        "quantity": {"x-kubernetes-int-or-string": true},
        "bounded_quantity": {"x-kubernetes-int-or-string": true,
            "anyOf": [{"minimum": 0}, {"pattern": "^[0-9]+Gi$"}]},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true},
        "endpoint": {"type": "object",
            "properties": {"host": {"type": "string"}, "ip": {"type": "string"}},
            "oneOf": [{"required": ["host"]}, {"required": ["ip"]}]},
        "either": {"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
        "exclusiveOf": {"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "not": {"required": ["a", "b"]}},
        "both": {"type": "object",
            "properties": {"a": {"type": "integer"}},
            "allOf": [{"properties": {"a": {"minimum": 1}}}, {"properties": {"a": {"maximum": 5}}}]},
        "matrix": {"type": "array", "maxItems": 2, "items": {"type": "array", "maxItems": 2,
            "items": {"type": "integer", "minimum": 0}}},
    });
    for format in FORMATS {
        properties[format_field(format)] = json!({"type": "string", "format": format});
    }
    properties
}

fn format_field(format: &str) -> String {
    format!("f_{}", format.replace('-', "_"))
}

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "keywords.schemas.example.org"},
        "spec": {
            "group": "schemas.example.org",
            "names": {"kind": "Keyword", "plural": "keywords"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": property_schemas()},
                        "status": {"type": "object", "properties": {
                            "phase": {"type": "string"}}},
                    },
                }}}],
        },
    })
}

/// One spec per value: the keywords' values, then every format's.
fn specs() -> Vec<Value> {
    let keyword_values: Vec<(&str, Vec<Value>)> = vec![
        (
            "int32",
            vec![
                json!(0),
                json!(2147483647),
                json!(2147483648i64),
                json!(-2147483649i64),
                json!(1.5),
                json!(14.0),
                json!("1"),
            ],
        ),
        (
            "int64",
            vec![json!(9223372036854775807i64), json!(-1), json!(true)],
        ),
        (
            "bounded",
            vec![json!(0), json!(1), json!(10), json!(11), json!(-5)],
        ),
        ("exclusive", vec![json!(1), json!(2), json!(9), json!(10)]),
        (
            "half",
            vec![json!(1.5), json!(2), json!(1.25), json!(0), json!("1")],
        ),
        ("step", vec![json!(9), json!(10), json!(-3)]),
        ("float", vec![json!(1.5), json!(1), json!("x")]),
        ("double", vec![json!(1e300), json!(-0.0)]),
        (
            "text",
            vec![
                json!("ab"),
                json!("abcde"),
                json!("a"),
                json!("abcdef"),
                json!("é€"),
            ],
        ),
        (
            "word",
            vec![json!("abc"), json!("Abc"), json!(""), json!("a b")],
        ),
        ("size", vec![json!("s"), json!("xl"), json!("S"), json!(1)]),
        ("count", vec![json!(1), json!(4), json!(1.0), json!("1")]),
        ("flag", vec![json!(true), json!("true"), json!(0)]),
        (
            "list",
            vec![
                json!(["a"]),
                json!([]),
                json!(["a", "b", "c", "d"]),
                json!([1]),
                json!("a"),
            ],
        ),
        ("set", vec![json!(["a", "b"]), json!(["a", "a"]), json!([])]),
        ("atomic", vec![json!([1, 1, 2]), json!([1, "a"])]),
        (
            "keyed",
            vec![
                json!([{"name": "a", "port": 1}, {"name": "b"}]),
                json!([{"port": 1}]),
                json!([{"name": "a"}, {"name": "a"}]),
                json!([{"name": 1}]),
            ],
        ),
        (
            "labels",
            vec![
                json!({"a": "1"}),
                json!({}),
                json!({"a": "1", "b": "2", "c": "3"}),
                json!({"a": 1}),
                json!(["a"]),
            ],
        ),
        ("granular", vec![json!({"a": 1}), json!({"a": "1"})]),
        (
            "owner",
            vec![
                json!({"name": "n"}),
                json!({"email": "e"}),
                json!({}),
                json!({"name": null}),
            ],
        ),
        ("maybe", vec![json!(null), json!("x"), json!(1)]),
        ("defaulted", vec![json!(null), json!("x")]),
        (
            "quantity",
            vec![json!(5), json!("5Gi"), json!(1.5), json!(true), json!([])],
        ),
        (
            "bounded_quantity",
            vec![json!(5), json!("5Gi"), json!(-1), json!("5Mi")],
        ),
        (
            "free",
            vec![json!({"anything": {"goes": [1, "a", null]}}), json!("x")],
        ),
        (
            "embedded",
            vec![
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
                json!({"apiVersion": "v1", "metadata": {"name": "c"}}),
                json!({"kind": "ConfigMap"}),
                json!({"apiVersion": "", "kind": "ConfigMap"}),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}),
                json!({"apiVersion": "v1", "kind": 1}),
            ],
        ),
        (
            "endpoint",
            vec![
                json!({"host": "h"}),
                json!({"ip": "1.2.3.4"}),
                json!({"host": "h", "ip": "1.2.3.4"}),
                json!({}),
            ],
        ),
        (
            "either",
            vec![json!({"a": "x"}), json!({"a": "x", "b": "y"}), json!({})],
        ),
        (
            "exclusiveOf",
            vec![json!({"a": "x"}), json!({"a": "x", "b": "y"}), json!({})],
        ),
        (
            "both",
            vec![json!({"a": 3}), json!({"a": 0}), json!({"a": 6})],
        ),
        (
            "matrix",
            vec![
                json!([[0, 1], [2]]),
                json!([[0, 1, 2]]),
                json!([[-1]]),
                json!([[0], [1], [2]]),
            ],
        ),
    ];
    let mut specs: Vec<Value> = keyword_values
        .into_iter()
        .flat_map(|(field, values)| values.into_iter().map(move |value| json!({ field: value })))
        .collect();
    for format in FORMATS {
        for value in FORMAT_VALUES {
            specs.push(json!({ format_field(format): value }));
        }
    }
    // Several problems in one object: the API server reports them all.
    specs.push(json!({"bounded": 11, "text": "a", "size": "xl", "list": []}));
    specs.push(json!({"int32": 1, "f_ipv4": "10.0.0.1", "endpoint": {"host": "h"}}));
    specs
}

/// The API server's causes as `field: message` lines, sorted; empty when it
/// accepts the object.
fn causes(answer: Result<DynamicObject, kube::Error>, spec: &Value) -> Vec<String> {
    let mut lines = match answer {
        Ok(_) => Vec::new(),
        Err(kube::Error::Api(status)) => match status.details {
            Some(d) if !d.causes.is_empty() => d
                .causes
                .into_iter()
                .map(|c| {
                    if c.field.is_empty() {
                        c.message
                    } else {
                        format!("{}: {}", c.field, c.message)
                    }
                })
                .collect(),
            _ => vec![status.message],
        },
        Err(e) => panic!("{spec}: {e}"),
    };
    lines.sort();
    lines
}

#[tokio::test]
async fn plait_answers_for_every_schema_keyword_and_format_as_the_api_server_does() {
    let cluster = ControlPlane::shared().unwrap_or_else(|e| panic!("test cluster: {e}"));
    let client = cluster.client().await;
    let ns = cluster.namespace("schema-keywords").await;
    let crd = crd();
    plait_controlplane::apply(
        &client,
        &plait_controlplane::resource(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
        &crd,
        "schema-keywords-test",
    )
    .await;
    let keywords: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &plait_controlplane::resource("schemas.example.org/v1", "Keyword", "keywords"),
    );
    let mut catalog = Catalog::new();
    catalog
        .add_definition(&crd)
        .unwrap_or_else(|e| panic!("{e}"));
    let validator = Validator::new(catalog);
    let params = PatchParams {
        dry_run: true,
        ..PatchParams::apply("schema-keywords-test").force()
    };

    let specs = specs();
    assert!(specs.len() >= 300, "{} objects", specs.len());
    let mut failures = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let name = format!("k-{i}");
        let object = json!({"apiVersion": "schemas.example.org/v1", "kind": "Keyword",
            "metadata": {"name": name, "namespace": ns}, "spec": spec});
        let dynamic: DynamicObject =
            serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("{e}"));
        // The CRD takes a moment to be served.
        let started = std::time::Instant::now();
        let answer = loop {
            match keywords
                .patch(&name, &params, &Patch::Apply(&dynamic))
                .await
            {
                Err(kube::Error::Api(s))
                    if s.code == 404 && started.elapsed() < std::time::Duration::from_secs(30) =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                other => break other,
            }
        };
        let server = causes(answer, spec);
        let mut plait: Vec<String> = validator
            .validate(&object, None)
            .findings
            .iter()
            .map(|f| f.message.clone())
            .collect();
        plait.sort();
        if server != plait {
            failures.push(format!(
                "{spec}:\n  api server {server:#?}\n  plait      {plait:#?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} objects answered differently:\n{}",
        failures.len(),
        specs.len(),
        failures.join("\n")
    );
}
