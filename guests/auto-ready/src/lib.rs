//! function-auto-ready, as a plait function.

use plait_sdk::{Function, FunctionError, Request, Response};

/// The `function-auto-ready` built-in.
pub struct AutoReady;

impl Function for AutoReady {
    fn run(request: Request) -> Result<Response, FunctionError> {
        Ok(Response::from_request(&request))
    }
}

plait_sdk::export_function!(AutoReady);
