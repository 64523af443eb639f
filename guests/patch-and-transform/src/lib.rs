//! Crossplane's patch-and-transform, as a plait function.

pub mod fieldpath;
pub mod gofmt;
pub mod merge;
pub mod quantity;
pub mod transforms;

use plait_sdk::{Function, FunctionError, Request, Response};

/// The `function-patch-and-transform` built-in.
pub struct PatchAndTransform;

impl Function for PatchAndTransform {
    fn run(request: Request) -> Result<Response, FunctionError> {
        Ok(Response::from_request(&request))
    }
}

plait_sdk::export_function!(PatchAndTransform);
