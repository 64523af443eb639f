use plait_sdk::{Function, FunctionError, Ready, Request, Response, export_function};
use serde_json::json;

struct Greeting;

impl Function for Greeting {
    fn run(request: Request) -> Result<Response, FunctionError> {
        // Start from what earlier steps built, so it passes through.
        let mut response = Response::from_request(&request);
        let greeting: String = request
            .composite_value("spec.greeting")?
            .unwrap_or_else(|| "Hello".into());
        response.set_resource(
            "greeting",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"greeting": greeting}}),
        );
        let exists = request.observed_resource("greeting").is_some();
        response.set_ready("greeting", Ready::from(exists))?;
        response.set_composite_field("status.greeting", json!(greeting))?;
        response.normal(format!("composed greeting {greeting:?}"));
        Ok(response)
    }
}

export_function!(Greeting);
