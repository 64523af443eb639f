//! Never returns: the host must stop it at the deadline.

use std::hint::black_box;

use plait_sdk::{Function, FunctionError, Request, Response};

pub struct InfiniteLoop;

impl Function for InfiniteLoop {
    fn run(request: Request) -> Result<Response, FunctionError> {
        black_box(&request);
        let mut n: u64 = 0;
        loop {
            // Opaque to the optimiser, so the loop body stays.
            n = black_box(n.wrapping_add(1));
        }
    }
}

plait_sdk::export_function!(InfiniteLoop);
