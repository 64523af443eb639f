//! A well-behaved function: passes the desired state through, adds one
//! Normal result and logs one line. An input with a `fail` message makes it
//! return that message as an invalid-input error instead.

use plait_sdk::{Function, FunctionError, LogLevel, Request, Response};

pub struct Echo;

impl Function for Echo {
    fn run(request: Request) -> Result<Response, FunctionError> {
        if let Some(message) = request
            .input
            .as_ref()
            .and_then(|i| i.get("fail"))
            .and_then(|m| m.as_str())
        {
            return Err(FunctionError::InvalidInput(message.to_string()));
        }
        plait_sdk::log(LogLevel::Info, &format!("echo {}", request.tag));
        let mut response = Response::from_request(&request);
        response.normal("echo");
        Ok(response)
    }
}

plait_sdk::export_function!(Echo);
