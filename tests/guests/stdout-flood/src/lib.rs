//! Prints 10 MiB to stdout, then answers normally.

use plait_sdk::{Function, FunctionError, Request, Response};

pub struct StdoutFlood;

impl Function for StdoutFlood {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let line = "y".repeat(1023);
        for _ in 0..(10 << 10) {
            println!("{line}");
        }
        Ok(Response::from_request(&request))
    }
}

plait_sdk::export_function!(StdoutFlood);
