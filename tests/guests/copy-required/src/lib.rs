//! Composes one ConfigMap, `copy`, listing every required resource it was
//! given as `namespace/name` under the requirement's name: what a function
//! trying to leak another tenant's objects would do with them.

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
        let mut copy =
            Resource::new(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": data}));
        copy.ready = Ready::True;
        response.desired.resources.insert("copy".into(), copy);
        Ok(response)
    }
}

plait_sdk::export_function!(CopyRequired);
