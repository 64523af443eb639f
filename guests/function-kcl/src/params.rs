//! The `option()` values a program is given, as upstream builds them.
//!
//! Upstream hands KCL JSON text its Go code printed: every object's keys
//! sorted (Go maps marshal sorted) and every integral number written
//! without a fraction, which KCL then reads as an int. The values here are
//! built the same way, so a program that prints or iterates them sees what
//! it sees upstream.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use plait_sdk::{Ready, Request, Resource, State};
use serde_json::{Map, Number, Value, json};

use crate::input::KclInput;

/// Upstream's `apiVersion`/`kind` for the function config it gives KCL
/// (`resource_list.functionConfig`).
const KCL_RUN_API_VERSION: &str = "krm.kcl.dev/v1alpha1";
const KCL_RUN_KIND: &str = "KCLRun";

/// The top-level options of a run: `resource_list`, `items`, `params`,
/// `PATH` and `env`, in upstream's order.
pub fn options(input: &KclInput, params: &Value) -> Vec<(String, Value)> {
    vec![
        ("resource_list".into(), resource_list(input, params)),
        ("items".into(), json!([])),
        ("params".into(), params.clone()),
        // The sandbox has no environment: no search path, no variables.
        ("PATH".into(), json!("")),
        ("env".into(), json!({})),
    ]
}

/// `option("params")`: the user's `spec.params`, then the request's state
/// under upstream's names (a user param of the same name is replaced).
pub fn params(input: &KclInput, request: &Request) -> Value {
    let mut params: Map<String, Value> = input
        .spec
        .params
        .iter()
        .map(|(k, v)| (k.clone(), go_json_value(v)))
        .collect();
    let observed = composite(&request.observed);
    let mut desired = composite(&request.desired);
    force_type(&mut desired, &observed);
    params.insert("oxr".into(), go_json_value(&observed));
    params.insert("dxr".into(), go_json_value(&desired));
    params.insert("dcds".into(), desired_composed(&request.desired));
    params.insert("ocds".into(), observed_composed(&request.observed));
    params.insert("ctx".into(), go_json_value(&request.context));
    let required = required(request);
    params.insert("extraResources".into(), required.clone());
    params.insert("requiredResources".into(), required);
    sort_keys(Value::Object(params))
}

/// A state's composite resource; an object with nothing in it when there
/// is none.
pub fn composite(state: &State) -> Value {
    match state.composite.as_ref().map(|r| &r.resource) {
        Some(Value::Object(object)) => Value::Object(object.clone()),
        _ => Value::Object(Map::new()),
    }
}

/// The desired composite's `apiVersion` and `kind` set to the observed
/// one's (empty strings when it has none), as upstream sets them.
pub fn force_type(desired: &mut Value, observed: &Value) {
    if let Value::Object(object) = desired {
        for key in ["apiVersion", "kind"] {
            let value = observed.get(key).and_then(Value::as_str).unwrap_or("");
            object.insert(key.into(), Value::String(value.into()));
        }
    }
}

fn desired_composed(state: &State) -> Value {
    let entries = state.resources.iter().map(|(name, r)| {
        let ready = match r.ready {
            Ready::True => "True",
            Ready::False => "False",
            Ready::Unspecified => "Unspecified",
        };
        (
            name.clone(),
            json!({"Resource": go_json_value(&r.resource), "Ready": ready}),
        )
    });
    Value::Object(entries.collect())
}

fn observed_composed(state: &State) -> Value {
    let entries = state
        .resources
        .iter()
        .map(|(name, r): (&String, &Resource)| {
            let details: Map<String, Value> = r
                .connection_details
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(STANDARD.encode(v))))
                .collect();
            (
                name.clone(),
                json!({"Resource": go_json_value(&r.resource), "ConnectionDetails": details}),
            )
        });
    Value::Object(entries.collect())
}

/// The resources the step asked for, `{name: [{Resource: …}]}`. plait's
/// request has one map of them; Crossplane fills both the deprecated
/// `extraResources` and `requiredResources` with it, and so does plait.
fn required(request: &Request) -> Value {
    let entries = request.required_resources.iter().map(|(name, items)| {
        let items = items
            .iter()
            .map(|item| json!({"Resource": go_json_value(item)}))
            .collect();
        (name.clone(), Value::Array(items))
    });
    Value::Object(entries.collect())
}

/// `resource_list`: the ResourceList krm-kcl gives a program, with no
/// items and the run's configuration (`KCLRun`) as its function config.
fn resource_list(input: &KclInput, params: &Value) -> Value {
    let spec = &input.spec;
    let mut run_spec = Map::new();
    run_spec.insert("source".into(), json!(spec.source));
    run_spec.insert("config".into(), config(input));
    run_spec.insert(
        "credentials".into(),
        credentials(
            &spec.credentials.url,
            &spec.credentials.username,
            &spec.credentials.password,
        ),
    );
    if !spec.dependencies.is_empty() {
        run_spec.insert("dependencies".into(), json!(spec.dependencies));
    }
    run_spec.insert("params".into(), params.clone());
    if !spec.resources.is_empty() {
        let resources = spec
            .resources
            .iter()
            .map(|r| {
                let mut entry = Map::new();
                entry.insert("name".into(), json!(r.name));
                if let Some(base) = &r.base {
                    entry.insert("base".into(), go_json_value(base));
                }
                Value::Object(entry)
            })
            .collect();
        run_spec.insert("resources".into(), Value::Array(resources));
    }
    run_spec.insert("target".into(), json!(spec.target));
    json!({
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [],
        "functionConfig": {
            "kind": KCL_RUN_KIND,
            "apiVersion": KCL_RUN_API_VERSION,
            "metadata": {"creationTimestamp": null},
            "spec": Value::Object(run_spec),
        },
    })
}

fn credentials(url: &str, username: &str, password: &str) -> Value {
    let mut out = Map::new();
    if !url.is_empty() {
        out.insert("url".into(), json!(url));
    }
    out.insert("username".into(), json!(username));
    out.insert("password".into(), json!(password));
    Value::Object(out)
}

/// `spec.config` with its empty fields left out, as Go's `omitempty` does.
fn config(input: &KclInput) -> Value {
    let c = &input.spec.config;
    let mut out = Map::new();
    let lists = [
        ("arguments", &c.arguments),
        ("settings", &c.settings),
        ("overrides", &c.overrides),
        ("pathSelectors", &c.path_selectors),
    ];
    for (name, list) in lists {
        if !list.is_empty() {
            out.insert(name.into(), json!(list));
        }
    }
    let flags = [
        ("vendor", c.vendor),
        ("sortKeys", c.sort_keys),
        ("showHidden", c.show_hidden),
        ("disableNone", c.disable_none),
        ("debug", c.debug),
        ("strictRangeCheck", c.strict_range_check),
    ];
    for (name, flag) in flags {
        if flag {
            out.insert(name.into(), json!(true));
        }
    }
    Value::Object(out)
}

/// A value as upstream's Go code prints it for KCL: keys sorted at every
/// depth, and a number with no fraction (below 1e21, where Go switches to
/// exponent form) written as an integer.
pub fn go_json_value(value: &Value) -> Value {
    sort_keys(integral_numbers(value.clone()))
}

fn integral_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() < 9.223_372_036_854_776e18 {
                Value::Number(Number::from(f as i64))
            } else {
                Value::Number(n)
            }
        }
        Value::Array(items) => Value::Array(items.into_iter().map(integral_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, integral_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

fn sort_keys(mut value: Value) -> Value {
    value.sort_all_objects();
    value
}
