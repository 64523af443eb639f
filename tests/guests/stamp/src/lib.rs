//! Composes the `base` of every resource a patch-and-transform `Resources`
//! input lists, with `data.composedBy: stamp` added and no patches run: a
//! second function whose output visibly differs from patch-and-transform's
//! on the same Composition, for tests that swap one package for another.

use plait_sdk::{Function, FunctionError, Ready, Request, Resource, Response};
use serde_json::{Value, json};

pub struct Stamp;

impl Function for Stamp {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let entries = request
            .input
            .as_ref()
            .and_then(|i| i.get("resources"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut response = Response::from_request(&request);
        for (index, entry) in entries.into_iter().enumerate() {
            let Some(name) = entry.get("name").and_then(Value::as_str) else {
                return Err(FunctionError::InvalidInput(format!(
                    "resources[{index}].name is required"
                )));
            };
            let mut base = entry.get("base").cloned().unwrap_or_else(|| json!({}));
            let Some(object) = base.as_object_mut() else {
                return Err(FunctionError::InvalidInput(format!(
                    "resources[{index}].base must be an object"
                )));
            };
            let data = object.entry("data").or_insert_with(|| json!({}));
            let Some(data) = data.as_object_mut() else {
                return Err(FunctionError::InvalidInput(format!(
                    "resources[{index}].base.data must be an object"
                )));
            };
            data.insert("composedBy".into(), json!("stamp"));
            let mut resource = Resource::new(base);
            resource.ready = Ready::True;
            response
                .desired
                .resources
                .insert(name.to_string(), resource);
        }
        Ok(response)
    }
}

plait_sdk::export_function!(Stamp);
