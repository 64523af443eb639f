//! One sandboxed call: a fresh store with every limit applied, the guest's
//! response checked and converted, and a failure attributed to its cause.

use std::time::{Duration, Instant};

use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

use crate::bindings::Function;
use crate::config::CallLimits;
use crate::convert;
use crate::engine::EPOCH_TICK;
use crate::error::{CallError, FailureContext, classify};
use crate::host_state::{CallState, LogLine};
use crate::modules::Module;

/// What a successful call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutput {
    pub response: plait_sdk::Response,
    pub logs: Vec<LogLine>,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

/// One call's store, and what its failures are measured against.
pub(crate) struct Sandbox<'a> {
    store: Store<CallState>,
    module: &'a Module,
    limits: &'a CallLimits,
    memory_limit: usize,
}

impl<'a> Sandbox<'a> {
    /// A fresh store for one call of `module`, with every limit applied;
    /// `max_memory_bytes` is the pool's cap on any memory.
    pub(crate) fn new(
        engine: &Engine,
        max_memory_bytes: usize,
        module: &'a Module,
        limits: &'a CallLimits,
    ) -> Result<Sandbox<'a>, CallError> {
        if !Engine::same(&module.engine, engine) {
            return Err(CallError::Instantiate {
                digest: module.digest.clone(),
                message: "the module was loaded by a different runtime".into(),
            });
        }
        let memory_limit = limits.memory_bytes.min(max_memory_bytes);
        let mut store = Store::new(engine, CallState::new(memory_limit, limits.output_bytes));
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(deadline_ticks(limits.deadline));
        Ok(Sandbox {
            store,
            module,
            limits,
            memory_limit,
        })
    }

    pub(crate) fn instantiate(&mut self) -> Result<Function, CallError> {
        self.module
            .pre
            .instantiate(&mut self.store)
            .map_err(|e| self.failure(e, true))
    }

    /// Runs the function on `request`; `started` is when the call began
    /// waiting, so the duration includes the wait for a pool slot.
    pub(crate) fn call(
        mut self,
        request: &plait_sdk::Request,
        started: Instant,
    ) -> Result<CallOutput, CallError> {
        let module = self.module;
        let digest = module.digest.as_str();
        let instance = self.instantiate()?;
        let request = convert::request_to_wit(request);
        let result = instance
            .call_run_function(&mut self.store, &request)
            .map_err(|e| self.failure(e, false))?;
        let response = result.map_err(|e| CallError::Guest {
            digest: digest.to_string(),
            error: convert::error_from_wit(e),
        })?;

        let size = convert::response_size(&response);
        if size > self.limits.response_bytes {
            return Err(CallError::ResponseTooLarge {
                digest: digest.to_string(),
                size,
                limit: self.limits.response_bytes,
            });
        }
        let response = convert::response_from_wit(response).map_err(|detail| {
            CallError::MalformedResponse {
                digest: digest.to_string(),
                detail,
            }
        })?;
        let state = self.store.data_mut();
        let logs = std::mem::take(&mut state.log.lines);
        Ok(CallOutput {
            response,
            logs,
            stdout: String::from_utf8_lossy(&state.stdout.contents()).into_owned(),
            stderr: String::from_utf8_lossy(&state.stderr.contents()).into_owned(),
            duration: started.elapsed(),
        })
    }

    /// Attributes a failed instantiation or call to its cause.
    fn failure(&self, error: wasmtime::Error, on_instantiate: bool) -> CallError {
        let state = self.store.data();
        let stderr = String::from_utf8_lossy(&state.stderr.contents()).into_owned();
        let full = |pipe: &MemoryOutputPipe| pipe.contents().len() >= self.limits.output_bytes;
        let digest = self.module.digest.as_str();
        let cx = FailureContext {
            digest,
            deadline: self.limits.deadline,
            memory_limit: self.memory_limit,
            output_limit: self.limits.output_bytes,
            output_full: full(&state.stdout) || full(&state.stderr),
            stderr_tail: tail(&stderr, STDERR_TAIL_BYTES),
        };
        match classify(&error, &cx) {
            // A trap while starting up is the module's fault, not the call's.
            CallError::Trap { message, .. } if on_instantiate => CallError::Instantiate {
                digest: digest.to_string(),
                message,
            },
            other => other,
        }
    }
}

/// How much of stderr a trap message quotes: a panic message fits.
const STDERR_TAIL_BYTES: usize = 1024;

/// The last `max` bytes of `text`, on a character boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Epoch ticks for a deadline. The next tick can come at any moment, so one
/// extra tick makes sure the guest gets at least the whole deadline.
fn deadline_ticks(deadline: Duration) -> u64 {
    let tick = EPOCH_TICK.as_nanos();
    // Capped far below u64::MAX: wasmtime adds the current epoch to it.
    let cap = u64::MAX / 2;
    let ticks = deadline.as_nanos().div_ceil(tick);
    u64::try_from(ticks).unwrap_or(cap).min(cap) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_round_up_to_whole_ticks_plus_one() {
        let cases = [
            (Duration::ZERO, 1),
            (Duration::from_millis(1), 2),
            (Duration::from_millis(10), 2),
            (Duration::from_millis(300), 31),
            (Duration::from_secs(10), 1001),
        ];
        for (deadline, ticks) in cases {
            assert_eq!(deadline_ticks(deadline), ticks, "{deadline:?}");
        }
    }

    #[test]
    fn tails_respect_character_boundaries() {
        assert_eq!(tail("abc", 10), "abc");
        assert_eq!(tail("abc", 2), "bc");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("aé", 2), "é");
    }
}
