//! Panics: with `panic = "abort"` that is a trap the host must survive.

use plait_sdk::{Function, FunctionError, Request, Response};

pub struct Panic;

impl Function for Panic {
    fn run(request: Request) -> Result<Response, FunctionError> {
        if request.tag != "do not panic" {
            panic!("test guest panicked on purpose");
        }
        Ok(Response::from_request(&request))
    }
}

plait_sdk::export_function!(Panic);
