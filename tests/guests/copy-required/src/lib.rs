//! Composes one ConfigMap, `copy`, listing every required resource it was
//! given as `namespace/name` under the requirement's name: what a function
//! trying to leak another tenant's objects would do with them. For each
//! entry of its input's `schemas` (`name: {apiVersion, kind}`) it requires
//! that kind's schema and lists the schema's top-level properties under
//! `schema.<name>` (or `absent`).

use plait_sdk::{Function, FunctionError, Ready, Request, Resource, Response};
use serde_json::{Map, Value, json};

pub struct CopyRequired;

impl Function for CopyRequired {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut data = Map::new();
        for (requirement, items) in &request.required_resources {
            let names: Vec<String> = items
                .iter()
                .map(|item| {
                    let metadata = &item["metadata"];
                    let namespace = metadata["namespace"].as_str().unwrap_or_default();
                    let name = metadata["name"].as_str().unwrap_or_default();
                    format!("{namespace}/{name}")
                })
                .collect();
            data.insert(requirement.clone(), Value::String(names.join(",")));
        }
        let mut response = Response::from_request(&request);
        let wanted = request
            .input
            .as_ref()
            .and_then(|i| i.get("schemas"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (name, selector) in wanted {
            let (Some(api_version), Some(kind)) = (
                selector.get("apiVersion").and_then(Value::as_str),
                selector.get("kind").and_then(Value::as_str),
            ) else {
                return Err(FunctionError::InvalidInput(format!(
                    "schemas.{name} needs apiVersion and kind"
                )));
            };
            response.require_schema(name.as_str(), api_version, kind);
            let listed = match request.required_schemas.get(&name) {
                Some(Some(schema)) => {
                    let mut properties: Vec<&str> = schema
                        .get("properties")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                        .map(|(k, _)| k.as_str())
                        .collect();
                    properties.sort_unstable();
                    properties.join(",")
                }
                _ => "absent".to_string(),
            };
            data.insert(format!("schema.{name}"), Value::String(listed));
        }
        let mut copy =
            Resource::new(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": data}));
        copy.ready = Ready::True;
        response.desired.resources.insert("copy".into(), copy);
        Ok(response)
    }
}

plait_sdk::export_function!(CopyRequired);
