//! Returns a desired resource holding a 20 MiB string.

use plait_sdk::{Function, FunctionError, Request, Resource, Response};
use serde_json::json;

pub struct OversizedResponse;

impl Function for OversizedResponse {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut response = Response::from_request(&request);
        response.desired.resources.insert(
            "huge".into(),
            Resource::new(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "huge"},
                "data": {"blob": "x".repeat(20 << 20)},
            })),
        );
        Ok(response)
    }
}

plait_sdk::export_function!(OversizedResponse);
