//! One sandboxed call: a fresh store with every limit applied, the guest's
//! response checked and converted, and a failure attributed to its cause.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

use crate::bindings::Function;
use crate::config::CallLimits;
use crate::convert;
use crate::error::{CallError, FailureContext, classify};
use crate::host_state::{CallState, LogLine};
use crate::modules::Module;
use crate::sync::Reservation;

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
    /// `max_memory_bytes` is the pool's cap on any memory. At every epoch
    /// tick the guest passes `checkpoint`, where it may be paused while
    /// others run.
    pub(crate) fn new(
        engine: &Engine,
        max_memory_bytes: usize,
        module: &'a Module,
        limits: &'a CallLimits,
        memory: Reservation,
        checkpoint: Option<Arc<dyn Checkpoint>>,
    ) -> Result<Sandbox<'a>, CallError> {
        if !Engine::same(&module.engine, engine) {
            return Err(CallError::Instantiate {
                digest: module.digest.clone(),
                message: "the module was loaded by a different runtime".into(),
            });
        }
        let memory_limit = limits.memory_bytes.min(max_memory_bytes);
        let mut state = CallState::new(memory_limit, limits.output_bytes, &limits.read_only_dirs)
            .map_err(|(dir, message)| CallError::Directory {
            digest: module.digest.clone(),
            host: dir.host.display().to_string(),
            guest: dir.guest,
            message,
        })?;
        state.memory = Some(memory);
        let mut store = Store::new(engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(running_time_deadline(limits.deadline, checkpoint));
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

/// Where a running call may be paused: at every epoch tick the guest
/// passes the checkpoint, which may pause it while the call's slot serves
/// others. The pause blocks the thread that runs the guest, so a long call
/// gives way without its help; meanwhile the call holds only the memory
/// its guest has, lending the rest of its share of the memory budget.
pub trait Checkpoint: Send + Sync {
    /// Whether the call should pause now; [`Stopped`] when it may not go
    /// on (the time allowed for it has run out).
    fn should_pause(&self) -> Result<bool, Stopped>;
    /// Waits until the call may go on; [`Stopped`] when the time allowed
    /// for it ran out while it waited.
    fn pause(&self) -> Result<(), Stopped>;
}

/// A paused call did not get to run again in the time allowed for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// The epoch callback that interrupts the guest once it has *run* for
/// `deadline`: time paused at `checkpoint` does not count, so a call that
/// gives way to others is not cut short for it.
fn running_time_deadline(
    deadline: Duration,
    checkpoint: Option<Arc<dyn Checkpoint>>,
) -> impl FnMut(wasmtime::StoreContextMut<'_, CallState>) -> wasmtime::Result<UpdateDeadline>
+ Send
+ Sync
+ 'static {
    let started = Instant::now();
    let mut paused = Duration::ZERO;
    move |mut store| {
        if let Some(checkpoint) = &checkpoint {
            let went_on = match checkpoint.should_pause() {
                Ok(true) if lends_a_whole_call(store.data()) => {
                    let pausing = Instant::now();
                    let went_on = pause(store.data_mut(), checkpoint.as_ref(), deadline);
                    paused += pausing.elapsed();
                    went_on
                }
                Ok(_) => Ok(()),
                Err(stopped) => Err(stopped),
            };
            if went_on.is_err() {
                return Ok(UpdateDeadline::Interrupt);
            }
        }
        if started.elapsed().saturating_sub(paused) >= deadline {
            return Ok(UpdateDeadline::Interrupt);
        }
        Ok(UpdateDeadline::Continue(1))
    }
}

/// Whether pausing the call would leave room in the memory budget for a
/// call with its memory limit: the call it gives way to would otherwise
/// hold its slot while it waits for memory the pause keeps.
fn lends_a_whole_call(state: &CallState) -> bool {
    state.memory.as_ref().is_none_or(|memory| {
        pause_leaves_room(memory.budget_free(), memory.bytes(), state.limits.bytes())
    })
}

/// Whether a call that holds `held` bytes of the budget (its memory limit)
/// and whose guest has grown `in_use` leaves room for another call with
/// the same limit once paused, when `free` bytes of the budget are free:
/// paused, it keeps only `in_use`.
fn pause_leaves_room(free: usize, held: usize, in_use: usize) -> bool {
    free.saturating_add(held.saturating_sub(in_use)) >= held
}

/// Pauses the call at `checkpoint`, lending the part of its memory budget
/// its guest does not have; once it may go on, takes that back, waiting for
/// it at most `patience`.
fn pause(
    state: &mut CallState,
    checkpoint: &dyn Checkpoint,
    patience: Duration,
) -> Result<(), Stopped> {
    let in_use = state.limits.bytes();
    let held = state.memory.as_mut().map(|memory| {
        let held = memory.bytes();
        memory.shrink_to(in_use);
        held
    });
    checkpoint.pause()?;
    match (state.memory.as_mut(), held) {
        (Some(memory), Some(held)) => memory.grow_to(held, patience).map_err(|_| Stopped),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::memory_budget_for;
    use crate::sync::Budget;

    const MIB: usize = 1 << 20;

    #[test]
    fn a_call_pauses_only_when_the_budget_then_has_room_for_a_call_with_its_limit() {
        // (case, free before the pause, held, the guest's memory, pauses)
        let cases = [
            ("a whole limit free", 256 * MIB, 256 * MIB, 4 * MIB, true),
            (
                "free as much as the guest keeps",
                4 * MIB,
                256 * MIB,
                4 * MIB,
                true,
            ),
            (
                "less free than the guest keeps",
                3 * MIB,
                256 * MIB,
                4 * MIB,
                false,
            ),
            ("nothing free", 0, 256 * MIB, MIB, false),
            (
                "nothing free, a guest with no memory",
                0,
                256 * MIB,
                0,
                true,
            ),
            (
                "the guest grew to its limit",
                255 * MIB,
                256 * MIB,
                256 * MIB,
                false,
            ),
        ];
        for (case, free, held, in_use, pauses) in cases {
            assert_eq!(pause_leaves_room(free, held, in_use), pauses, "{case}");
        }
    }

    #[test]
    fn with_the_budget_sized_for_the_slots_a_call_pauses_while_every_slot_runs_at_its_limit() {
        // (slots, memory limit, the budget, the paused guest's memory, pauses)
        let cases = [
            (1, 256 * MIB, memory_budget_for(1, 256 * MIB), 4 * MIB, true),
            (2, 256 * MIB, memory_budget_for(2, 256 * MIB), 4 * MIB, true),
            (8, 256 * MIB, memory_budget_for(8, 256 * MIB), 4 * MIB, true),
            (2, 64 * MIB, memory_budget_for(2, 64 * MIB), 64 * MIB, true),
            (
                4,
                256 * MIB,
                memory_budget_for(4, 256 * MIB),
                200 * MIB,
                true,
            ),
            // One limit per slot: the paused call's memory leaves too little.
            (2, 256 * MIB, 2 * 256 * MIB, 4 * MIB, false),
            (4, 256 * MIB, 4 * 256 * MIB, MIB, false),
        ];
        for (slots, limit, total, in_use, pauses) in cases {
            let budget = Arc::new(Budget::new(total));
            let running: Vec<_> = (0..slots)
                .map(|_| budget.reserve(limit, Duration::ZERO).ok().unwrap())
                .collect();
            let paused = &running[0];
            let case = format!("{slots} slots of {limit} in {total}, guest {in_use}");
            assert_eq!(
                pause_leaves_room(paused.budget_free(), paused.bytes(), in_use),
                pauses,
                "{case}"
            );
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
