//! Allocates 1 GiB and touches it: the host must refuse the memory.

use std::hint::black_box;

use plait_sdk::{Function, FunctionError, Request, Response};

pub struct HugeAlloc;

const SIZE: usize = 1 << 30;

impl Function for HugeAlloc {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut block = vec![0u8; SIZE];
        // Writes through an opaque value and an opaque read of the block
        // keep the allocation from being optimised out.
        for i in (0..SIZE).step_by(4096) {
            block[i] = black_box(1);
        }
        let touched = black_box(&block)
            .iter()
            .step_by(4096)
            .filter(|&&b| b == 1)
            .count();
        let mut response = Response::from_request(&request);
        response.normal(format!("touched {touched} pages"));
        Ok(response)
    }
}

plait_sdk::export_function!(HugeAlloc);
