//! Reports what it finds in its own memory, then dirties it: a counter in
//! the data segment (starts at 1), a zero-initialised 256 KiB static, and a
//! 4 MiB heap block that it fills. A host that gave a later call any of an
//! earlier call's memory would show it as `calls` above 1 or dirty bytes.

use std::sync::atomic::{AtomicU64, Ordering};

use plait_sdk::{Function, FunctionError, Request, Response};
use serde_json::json;

static CALLS: AtomicU64 = AtomicU64::new(1);
static SCRATCH: [AtomicU64; 32 * 1024] = [const { AtomicU64::new(0) }; 32 * 1024];

/// Bytes of heap the guest fills, enough to grow memory past its image.
const HEAP_BYTES: usize = 4 << 20;

pub struct Residue;

impl Function for Residue {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let calls = CALLS.fetch_add(1, Ordering::Relaxed);
        let dirty_words = SCRATCH
            .iter()
            .filter(|word| word.swap(u64::MAX, Ordering::Relaxed) != 0)
            .count();
        // A zeroed allocation that is non-zero anywhere was not reset.
        let heap = vec![0u8; HEAP_BYTES];
        let dirty_heap = heap.iter().filter(|b| **b != 0).count();
        let mut filled = heap;
        filled.fill(0xAB);
        // Kept alive to the end so the allocator cannot hand it out again.
        let filled_len = std::hint::black_box(&filled).len();
        let mut response = Response::from_request(&request);
        response.context = json!({
            "calls": calls,
            "dirtyStaticWords": dirty_words,
            "dirtyHeapBytes": dirty_heap,
            "filledBytes": filled_len,
        });
        Ok(response)
    }
}

plait_sdk::export_function!(Residue);
