//! What can go wrong when loading or calling a function, and how a wasmtime
//! error is attributed to one of those causes.

use std::time::Duration;

use plait_sdk::FunctionError;
use wasmtime::{Trap, WasmBacktrace};

/// How many wasm frames a trap keeps: enough to locate the fault, short
/// enough for a status message.
const MAX_FRAMES: usize = 5;

/// Failures of the runtime itself or of loading a module.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot configure the WebAssembly engine: {0}")]
    Engine(String),
    #[error("function {digest} is not a valid component: {message}")]
    Compile { digest: String, message: String },
    #[error("function {digest} does not fit the plait:function contract: {message}")]
    Link { digest: String, message: String },
}

/// Why a call of a function failed. Every message names the module digest.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("function {digest} exceeded its deadline of {deadline:?}")]
    DeadlineExceeded { digest: String, deadline: Duration },
    #[error("function {digest} exceeded its memory limit of {limit} bytes{}", requested_text(*.requested))]
    MemoryLimit {
        digest: String,
        limit: usize,
        requested: Option<usize>,
    },
    #[error("function {digest} trapped: {message}{}", frames_text(.frames))]
    Trap {
        digest: String,
        message: String,
        frames: Vec<String>,
    },
    #[error("function {digest} returned an error: {error}")]
    Guest {
        digest: String,
        error: FunctionError,
    },
    #[error("function {digest} returned a malformed response: {detail}")]
    MalformedResponse { digest: String, detail: String },
    #[error(
        "function {digest} returned a response of {size} bytes, more than the limit of {limit}"
    )]
    ResponseTooLarge {
        digest: String,
        size: usize,
        limit: usize,
    },
    #[error("function {digest} wrote more than its output limit of {limit} bytes")]
    OutputLimit { digest: String, limit: usize },
    #[error("function {digest} cannot be instantiated: {message}")]
    Instantiate { digest: String, message: String },
    #[error("function {digest} cannot be given {host} to read as {guest}: {message}")]
    Directory {
        digest: String,
        /// The directory on the host.
        host: String,
        /// Where the guest was to find it.
        guest: String,
        message: String,
    },
    #[error("function {digest} {}", memory_budget_text(*.waited, *.requested, *.budget))]
    MemoryBudget {
        digest: String,
        /// How long the call waited for other calls to free memory; zero
        /// when its cap alone is larger than the budget.
        waited: Duration,
        /// The call's memory cap, which it reserves for as long as it runs.
        requested: usize,
        budget: usize,
    },
}

fn memory_budget_text(waited: Duration, requested: usize, budget: usize) -> String {
    if requested > budget {
        format!(
            "has a memory limit of {requested} bytes, more than the whole guest memory budget \
             of {budget} bytes: lower the Function's memory limit or raise the budget \
             (plait controller --guest-memory-budget)"
        )
    } else {
        format!(
            "waited {waited:?} for {requested} bytes of guest memory, but other calls held \
             the budget of {budget} bytes until its deadline: raise the budget \
             (plait controller --guest-memory-budget) or lower the Functions' memory limits"
        )
    }
}

fn requested_text(requested: Option<usize>) -> String {
    requested
        .map(|r| format!(" (it asked for {r} bytes)"))
        .unwrap_or_default()
}

fn frames_text(frames: &[String]) -> String {
    if frames.is_empty() {
        String::new()
    } else {
        format!(" at {}", frames.join(" <- "))
    }
}

impl CallError {
    /// A short, stable label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::DeadlineExceeded { .. } => "deadline",
            CallError::MemoryLimit { .. } => "memory",
            CallError::Trap { .. } => "trap",
            CallError::Guest { .. } => "guest",
            CallError::MalformedResponse { .. } => "malformed",
            CallError::ResponseTooLarge { .. } => "too-large",
            CallError::OutputLimit { .. } => "output",
            CallError::Instantiate { .. } => "instantiate",
            CallError::MemoryBudget { .. } => "memory-budget",
            CallError::Directory { .. } => "directory",
        }
    }

    /// The digest of the module that failed.
    pub fn digest(&self) -> &str {
        match self {
            CallError::DeadlineExceeded { digest, .. }
            | CallError::MemoryLimit { digest, .. }
            | CallError::Trap { digest, .. }
            | CallError::Guest { digest, .. }
            | CallError::MalformedResponse { digest, .. }
            | CallError::ResponseTooLarge { digest, .. }
            | CallError::OutputLimit { digest, .. }
            | CallError::Instantiate { digest, .. }
            | CallError::MemoryBudget { digest, .. }
            | CallError::Directory { digest, .. } => digest,
        }
    }
}

/// The prefix of the error `StoreLimits` raises when `trap_on_grow_failure`
/// denies a memory growth; it is a plain error, not a `Trap` variant.
const MEMORY_GROWTH_DENIED: &str = "forcing trap when growing memory to ";

/// The context `StoreLimits` adds when the allocator itself (not the limit)
/// refused a growth, e.g. the pool's slot size.
const MEMORY_GROWTH_FAILED: &str = "forcing a memory growth failure to be a trap";

/// What the store observed around a failed call, beyond the error itself.
pub(crate) struct FailureContext<'a> {
    pub digest: &'a str,
    pub deadline: Duration,
    pub memory_limit: usize,
    pub output_limit: usize,
    /// Whether stdout or stderr reached its cap: a guest whose write is
    /// refused usually fails next (Rust's `print!` panics), and the cause
    /// to report is the flood, not the panic.
    pub output_full: bool,
    /// The tail of the guest's stderr, where a panic message lands.
    pub stderr_tail: &'a str,
}

/// Attributes a failed instantiation or call to its cause.
pub(crate) fn classify(error: &wasmtime::Error, cx: &FailureContext<'_>) -> CallError {
    let digest = cx.digest.to_string();
    if error.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return CallError::DeadlineExceeded {
            digest,
            deadline: cx.deadline,
        };
    }
    if let Some(requested) = memory_growth_denied(error) {
        return CallError::MemoryLimit {
            digest,
            limit: cx.memory_limit,
            requested,
        };
    }
    if cx.output_full {
        return CallError::OutputLimit {
            digest,
            limit: cx.output_limit,
        };
    }
    let mut message = match error.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => error.root_cause().to_string(),
    };
    let stderr = stderr_excerpt(cx.stderr_tail);
    if !stderr.is_empty() {
        message.push_str(&format!(" (stderr: {stderr})"));
    }
    CallError::Trap {
        digest,
        message,
        frames: frames(error),
    }
}

/// The guest's stderr without Rust's hint about `RUST_BACKTRACE`, which a
/// guest cannot act on.
fn stderr_excerpt(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|line| !line.starts_with("note: run with `RUST_BACKTRACE=1`"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// `Some(requested bytes)` when the error is a denied memory growth; the
/// inner `None` when the size cannot be read from the message.
fn memory_growth_denied(error: &wasmtime::Error) -> Option<Option<usize>> {
    error.chain().find_map(|cause| {
        let text = cause.to_string();
        if text == MEMORY_GROWTH_FAILED {
            return Some(None);
        }
        let rest = text.strip_prefix(MEMORY_GROWTH_DENIED)?;
        Some(
            rest.strip_suffix(" bytes")
                .and_then(|n| n.parse::<usize>().ok()),
        )
    })
}

fn frames(error: &wasmtime::Error) -> Vec<String> {
    let Some(backtrace) = error.downcast_ref::<WasmBacktrace>() else {
        return Vec::new();
    };
    backtrace
        .frames()
        .iter()
        .take(MAX_FRAMES)
        .map(|frame| {
            let module = frame.module().name().unwrap_or("<unknown>");
            let function = frame
                .func_name()
                .map(str::to_string)
                .unwrap_or_else(|| format!("<wasm function {}>", frame.func_index()));
            match frame.module_offset() {
                Some(offset) => format!("{offset:#x} {module}!{function}"),
                None => format!("{module}!{function}"),
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn context(output_full: bool, stderr_tail: &str) -> FailureContext<'_> {
        FailureContext {
            digest: "sha256:abc",
            deadline: Duration::from_millis(300),
            memory_limit: 1024,
            output_limit: 64,
            output_full,
            stderr_tail,
        }
    }

    #[test]
    fn errors_are_attributed_to_their_cause() {
        let cases: Vec<(&str, wasmtime::Error, bool, &str)> = vec![
            (
                "deadline",
                wasmtime::Error::new(Trap::Interrupt),
                false,
                "deadline",
            ),
            (
                "interrupt wins over a full output",
                wasmtime::Error::new(Trap::Interrupt),
                true,
                "deadline",
            ),
            (
                "denied growth",
                wasmtime::format_err!("forcing trap when growing memory to 1074855936 bytes"),
                false,
                "memory",
            ),
            (
                "denied growth under context",
                wasmtime::format_err!("forcing trap when growing memory to 5 bytes")
                    .context("error while executing at wasm backtrace"),
                false,
                "memory",
            ),
            (
                "growth refused by the allocator",
                wasmtime::format_err!("pool slot exhausted")
                    .context("forcing a memory growth failure to be a trap"),
                false,
                "memory",
            ),
            (
                "a panic after a refused write",
                wasmtime::Error::new(Trap::UnreachableCodeReached),
                true,
                "output",
            ),
            (
                "a plain panic",
                wasmtime::Error::new(Trap::UnreachableCodeReached),
                false,
                "trap",
            ),
            (
                "a host error",
                wasmtime::format_err!("write beyond capacity"),
                false,
                "trap",
            ),
        ];
        for (name, error, output_full, kind) in cases {
            let got = classify(&error, &context(output_full, ""));
            assert_eq!(got.kind(), kind, "{name}: {got}");
            assert_eq!(got.digest(), "sha256:abc", "{name}");
            assert!(got.to_string().contains("sha256:abc"), "{name}: {got}");
        }
    }

    #[test]
    fn denied_growth_reports_the_requested_size() {
        let error = wasmtime::format_err!("forcing trap when growing memory to 1074855936 bytes");
        match classify(&error, &context(false, "")) {
            CallError::MemoryLimit {
                limit, requested, ..
            } => {
                assert_eq!(limit, 1024);
                assert_eq!(requested, Some(1_074_855_936));
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn a_trap_message_carries_the_stderr_tail() {
        let error = wasmtime::Error::new(Trap::UnreachableCodeReached);
        let stderr = "panicked at src/lib.rs:3:5:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        let got = classify(&error, &context(false, stderr));
        let text = got.to_string();
        assert!(
            text.contains("trapped: wasm trap: wasm `unreachable`"),
            "{text}"
        );
        assert!(!text.contains("wasm trap: wasm trap"), "{text}");
        assert!(
            text.ends_with("(stderr: panicked at src/lib.rs:3:5:\nboom)"),
            "{text}"
        );
    }

    #[test]
    fn kinds_are_distinct() {
        let d = || "d".to_string();
        let all = [
            CallError::DeadlineExceeded {
                digest: d(),
                deadline: Duration::ZERO,
            },
            CallError::MemoryLimit {
                digest: d(),
                limit: 0,
                requested: None,
            },
            CallError::Trap {
                digest: d(),
                message: d(),
                frames: vec![],
            },
            CallError::Guest {
                digest: d(),
                error: FunctionError::Internal(d()),
            },
            CallError::MalformedResponse {
                digest: d(),
                detail: d(),
            },
            CallError::ResponseTooLarge {
                digest: d(),
                size: 0,
                limit: 0,
            },
            CallError::OutputLimit {
                digest: d(),
                limit: 0,
            },
            CallError::Instantiate {
                digest: d(),
                message: d(),
            },
            CallError::MemoryBudget {
                digest: d(),
                waited: Duration::ZERO,
                requested: 0,
                budget: 0,
            },
        ];
        let kinds: std::collections::BTreeSet<_> = all.iter().map(CallError::kind).collect();
        assert_eq!(kinds.len(), all.len());
    }
}
