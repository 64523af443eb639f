//! Adversarial guests against the runtime's limits: each must fail with its
//! own error, and the runtime must keep serving well-behaved calls after.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use plait_runtime::{
    CallError, CallLimits, CallOutput, Module, PoolConfig, Runtime, RuntimeConfig, RuntimeError,
};
use plait_sdk::{LogLevel, Request, Resource, Severity, State};
use serde_json::json;

const GUESTS: &[&str] = &[
    "echo",
    "infinite-loop",
    "huge-alloc",
    "panic",
    "malformed-json",
    "namespace-escape",
    "oversized-response",
    "stdout-flood",
    "residue",
];

/// Builds every test guest once per test binary.
fn guest(name: &str) -> &'static [u8] {
    static BUILT: OnceLock<HashMap<&'static str, Vec<u8>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-guests");
        GUESTS
            .iter()
            .map(|&name| {
                let package = format!("plait-test-guest-{name}");
                let path = plait_guest_build::build_guest(&package, &root, &out)
                    .unwrap_or_else(|e| panic!("{e}"));
                (name, std::fs::read(path).unwrap())
            })
            .collect()
    });
    &built[name]
}

/// The runtime most tests share. Its memory budget is all the pool holds,
/// so tests running side by side never wait on each other for memory; the
/// budget's own tests make runtimes with tighter ones.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        Runtime::new(RuntimeConfig {
            memory_budget: usize::MAX,
            ..RuntimeConfig::default()
        })
        .unwrap()
    })
}

fn load(name: &str) -> Arc<Module> {
    runtime().load(guest(name)).unwrap()
}

fn request() -> Request {
    Request {
        tag: "t1".into(),
        observed: State {
            composite: Some(Resource::new(json!({
                "apiVersion": "example.org/v1",
                "kind": "XBucket",
                "metadata": {"name": "b", "namespace": "team-a"},
            }))),
            ..State::default()
        },
        desired: State {
            composite: None,
            resources: [(
                "bucket".to_string(),
                Resource::new(json!({"apiVersion": "s3/v1", "kind": "Bucket"})),
            )]
            .into(),
        },
        ..Request::default()
    }
}

fn call(name: &str, limits: &CallLimits) -> Result<CallOutput, CallError> {
    runtime().call(&load(name), &request(), limits)
}

fn assert_echo_works() {
    let out = call("echo", &CallLimits::default()).expect("echo after a failure");
    assert_eq!(out.response.desired, request().desired);
    assert_eq!(out.response.results.len(), 1);
}

#[test]
fn echo_passes_desired_through_with_a_result_and_a_log_line() {
    let out = call("echo", &CallLimits::default()).unwrap();
    let request = request();
    assert_eq!(out.response.tag, "t1");
    assert_eq!(out.response.desired, request.desired);
    assert_eq!(out.response.context, json!({}));
    assert_eq!(out.response.results.len(), 1);
    assert_eq!(out.response.results[0].severity, Severity::Normal);
    assert_eq!(out.response.results[0].message, "echo");
    assert_eq!(out.logs.len(), 1);
    assert_eq!(out.logs[0].level, LogLevel::Info);
    assert_eq!(out.logs[0].message, "echo t1");
    assert_eq!(out.stdout, "");
    assert!(out.duration > Duration::ZERO);
}

#[test]
fn each_adversarial_guest_fails_with_its_own_error_and_the_host_keeps_serving() {
    let small = CallLimits {
        deadline: Duration::from_millis(300),
        ..CallLimits::default()
    };
    let cases = [
        ("infinite-loop", small.clone(), "deadline"),
        ("huge-alloc", CallLimits::default(), "memory"),
        ("panic", CallLimits::default(), "trap"),
        ("malformed-json", CallLimits::default(), "malformed"),
        ("oversized-response", CallLimits::default(), "too-large"),
        ("stdout-flood", CallLimits::default(), "output"),
    ];
    for (name, limits, kind) in cases {
        let module = load(name);
        let err = call(name, &limits).expect_err(name);
        assert_eq!(err.kind(), kind, "{name}: {err}");
        assert_eq!(err.digest(), module.digest, "{name}");
        assert!(err.to_string().contains(&module.digest), "{name}: {err}");
        assert_echo_works();
    }
}

#[test]
fn an_infinite_loop_stops_at_the_deadline() {
    let limits = CallLimits {
        deadline: Duration::from_millis(300),
        ..CallLimits::default()
    };
    let module = load("infinite-loop");
    let started = Instant::now();
    let err = runtime().call(&module, &request(), &limits).unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        matches!(err, CallError::DeadlineExceeded { deadline, .. } if deadline == limits.deadline),
        "{err}"
    );
    assert!(elapsed >= Duration::from_millis(290), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[test]
fn a_huge_allocation_reports_the_limit_and_the_request() {
    let limits = CallLimits::default();
    match call("huge-alloc", &limits).unwrap_err() {
        CallError::MemoryLimit {
            limit, requested, ..
        } => {
            assert_eq!(limit, limits.memory_bytes);
            let requested = requested.expect("the requested size");
            assert!(requested > limits.memory_bytes, "{requested}");
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn the_pool_caps_a_larger_memory_limit() {
    let limits = CallLimits {
        memory_bytes: 2 << 30,
        ..CallLimits::default()
    };
    match call("huge-alloc", &limits).unwrap_err() {
        CallError::MemoryLimit { limit, .. } => {
            assert_eq!(limit, PoolConfig::default().max_memory_bytes)
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn a_panic_is_a_trap_with_its_message_and_frames() {
    match call("panic", &CallLimits::default()).unwrap_err() {
        CallError::Trap {
            message, frames, ..
        } => {
            assert!(message.contains("unreachable"), "{message}");
            assert!(
                message.contains("test guest panicked on purpose"),
                "{message}"
            );
            assert!(!frames.is_empty());
            assert!(frames.len() <= 5, "{frames:?}");
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn malformed_json_names_the_field() {
    match call("malformed-json", &CallLimits::default()).unwrap_err() {
        CallError::MalformedResponse { detail, .. } => {
            assert!(
                detail.starts_with("desired.composite.resource is not valid JSON"),
                "{detail}"
            );
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn an_oversized_response_reports_size_and_limit() {
    let limits = CallLimits::default();
    match call("oversized-response", &limits).unwrap_err() {
        CallError::ResponseTooLarge { size, limit, .. } => {
            assert_eq!(limit, limits.response_bytes);
            assert!(size > 20 << 20, "{size}");
        }
        other => panic!("unexpected {other}"),
    }
    let generous = CallLimits {
        response_bytes: 32 << 20,
        ..CallLimits::default()
    };
    let out = call("oversized-response", &generous).unwrap();
    assert!(out.response.desired.resources.contains_key("huge"));
}

#[test]
fn a_stdout_flood_hits_the_output_limit() {
    let limits = CallLimits::default();
    match call("stdout-flood", &limits).unwrap_err() {
        CallError::OutputLimit { limit, .. } => assert_eq!(limit, limits.output_bytes),
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn namespace_escapes_pass_the_runtime_unchanged_for_the_pipeline_to_judge() {
    let out = call("namespace-escape", &CallLimits::default()).unwrap();
    let resources = &out.response.desired.resources;
    assert_eq!(
        resources["foreign-config"].resource["metadata"]["namespace"],
        "other"
    );
    assert_eq!(resources["cluster-role"].resource["kind"], "ClusterRole");
    assert!(resources.contains_key("bucket"));
}

#[test]
fn a_guest_error_is_reported_as_such() {
    let mut request = request();
    request.input = Some(json!({"fail": "no region"}));
    let err = runtime()
        .call(&load("echo"), &request, &CallLimits::default())
        .unwrap_err();
    match err {
        CallError::Guest { error, .. } => {
            assert_eq!(
                error,
                plait_sdk::FunctionError::InvalidInput("no region".into())
            )
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn log_lines_past_the_output_limit_are_truncated_not_fatal() {
    let limits = CallLimits {
        output_bytes: 4,
        ..CallLimits::default()
    };
    let out = call("echo", &limits).unwrap();
    let messages: Vec<_> = out.logs.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(
        messages,
        ["echo", "log truncated: the limit of 4 bytes was reached"]
    );
}

#[test]
fn a_module_from_another_runtime_is_refused() {
    let other = Runtime::new(RuntimeConfig::default()).unwrap();
    let module = other.load(guest("echo")).unwrap();
    let err = runtime()
        .call(&module, &request(), &CallLimits::default())
        .unwrap_err();
    assert_eq!(err.kind(), "instantiate", "{err}");
}

#[test]
fn invalid_bytes_do_not_compile() {
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    for _ in 0..2 {
        let err = runtime.load(b"not a component").unwrap_err();
        assert!(matches!(err, RuntimeError::Compile { .. }), "{err}");
        assert!(err.to_string().contains("sha256:"), "{err}");
    }
    // A failure is not remembered: the second load tried again.
    assert_eq!(runtime.stats().cache_misses, 2);
}

#[test]
fn loads_are_memoised_per_digest() {
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let first = runtime.load(guest("echo")).unwrap();
    let second = runtime.load(guest("echo")).unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    let stats = runtime.stats();
    assert_eq!(
        (stats.compiles, stats.cache_misses, stats.memory_hits),
        (1, 1, 1)
    );
}

#[test]
fn a_verified_load_shares_the_module_of_its_digest() {
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let hashed = runtime.load(guest("echo")).unwrap();
    let verified = runtime
        .load_verified(&hashed.digest, guest("echo"))
        .unwrap();
    assert!(Arc::ptr_eq(&hashed, &verified));
    assert_eq!(
        (runtime.stats().compiles, runtime.stats().memory_hits),
        (1, 1)
    );
}

#[test]
fn concurrent_loads_of_one_digest_compile_once() {
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let wasm = guest("panic");
    let modules: Vec<Arc<Module>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| runtime.load(wasm).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(modules.iter().all(|m| Arc::ptr_eq(m, &modules[0])));
    assert_eq!(runtime.stats().compiles, 1);
    assert_eq!(runtime.stats().memory_hits, 3);
}

#[test]
fn the_disk_cache_survives_restarts_and_rejects_tampered_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let config = RuntimeConfig {
        cache_dir: Some(dir.path().to_path_buf()),
        ..RuntimeConfig::default()
    };
    let wasm = guest("echo");

    let first = Runtime::new(config.clone()).unwrap();
    let digest = first.load(wasm).unwrap().digest.clone();
    assert_eq!(first.stats().compiles, 1);
    let hex = digest.strip_prefix("sha256:").unwrap();
    let artifact = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with(hex) && name.ends_with(".cwasm")
        })
        .expect("an artifact named after the component");
    drop(first);

    let second = Runtime::new(config.clone()).unwrap();
    let module = second.load(wasm).unwrap();
    assert_eq!((second.stats().disk_hits, second.stats().compiles), (1, 0));
    second
        .call(&module, &request(), &CallLimits::default())
        .unwrap();
    drop((second, module));

    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&artifact, &bytes).unwrap();

    let third = Runtime::new(config.clone()).unwrap();
    let module = third.load(wasm).unwrap();
    assert_eq!((third.stats().disk_hits, third.stats().compiles), (0, 1));
    third
        .call(&module, &request(), &CallLimits::default())
        .unwrap();
    drop((third, module));

    // The recompilation rewrote a good artifact.
    let fourth = Runtime::new(config).unwrap();
    fourth.load(wasm).unwrap();
    assert_eq!((fourth.stats().disk_hits, fourth.stats().compiles), (1, 0));
}

#[test]
fn calls_beyond_the_pool_wait_for_a_slot() {
    let runtime = Runtime::new(RuntimeConfig {
        pool: PoolConfig {
            total_component_instances: 1,
            ..PoolConfig::default()
        },
        ..RuntimeConfig::default()
    })
    .unwrap();
    let echo = runtime.load(guest("echo")).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| runtime.call(&echo, &request(), &CallLimits::default())))
            .collect();
        for handle in handles {
            handle.join().unwrap().unwrap();
        }
    });
}

#[test]
fn stats_count_calls_and_failures() {
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let echo = runtime.load(guest("echo")).unwrap();
    let panic = runtime.load(guest("panic")).unwrap();
    runtime
        .call(&echo, &request(), &CallLimits::default())
        .unwrap();
    runtime
        .call(&panic, &request(), &CallLimits::default())
        .unwrap_err();
    let stats = runtime.stats();
    assert_eq!((stats.calls, stats.call_failures), (2, 1));
}

#[test]
fn every_call_starts_from_the_modules_original_memory() {
    // Slots keep memory resident between instances (or not, with 0); either
    // way no call may see what an earlier one wrote. One slot per kind makes
    // every call reuse the memory the previous call dirtied.
    for keep_resident_bytes in [PoolConfig::default().keep_resident_bytes, 0] {
        let runtime = Runtime::new(RuntimeConfig {
            pool: PoolConfig {
                total_component_instances: 1,
                total_memories: 1,
                keep_resident_bytes,
                ..PoolConfig::default()
            },
            ..RuntimeConfig::default()
        })
        .unwrap();
        let residue = runtime.load(guest("residue")).unwrap();
        for call in 1..=3 {
            let output = runtime
                .call(&residue, &request(), &CallLimits::default())
                .unwrap();
            assert_eq!(
                output.response.context,
                json!({
                    "calls": 1,
                    "dirtyStaticWords": 0,
                    "dirtyHeapBytes": 0,
                    "filledBytes": 4 << 20,
                }),
                "call {call} with {keep_resident_bytes} bytes kept resident"
            );
        }
    }
}

/// A runtime whose guest memory budget is `budget` bytes.
fn budgeted(budget: usize) -> Runtime {
    Runtime::new(RuntimeConfig {
        memory_budget: budget,
        ..RuntimeConfig::default()
    })
    .unwrap()
}

/// Waits until calls of `runtime` hold `bytes` of its budget.
fn wait_until_reserved(runtime: &Runtime, bytes: u64) {
    let started = Instant::now();
    while runtime.stats().memory_reserved_bytes != bytes {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never reserved"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The memory cap of a call with default limits.
const ONE_CALL: usize = 256 << 20;

/// Runs `then` with the echo guest while an infinite loop of `runtime`, for
/// `holder_deadline`, holds one call's worth of its budget; checks that the
/// loop ends at its deadline.
fn while_one_call_holds_the_budget<T>(
    runtime: &Runtime,
    holder_deadline: Duration,
    then: impl FnOnce(&Module) -> T,
) -> T {
    let looping = runtime.load(guest("infinite-loop")).unwrap();
    let echo = runtime.load(guest("echo")).unwrap();
    let holder = CallLimits {
        deadline: holder_deadline,
        ..CallLimits::default()
    };
    std::thread::scope(|s| {
        let held = s.spawn(|| runtime.call(&looping, &request(), &holder));
        wait_until_reserved(runtime, ONE_CALL as u64);
        let result = then(&echo);
        assert_eq!(held.join().unwrap().unwrap_err().kind(), "deadline");
        result
    })
}

#[test]
fn a_call_that_does_not_fit_the_memory_budget_waits_for_it() {
    assert_eq!(CallLimits::default().memory_bytes, ONE_CALL);
    let runtime = budgeted(ONE_CALL);
    let waited = while_one_call_holds_the_budget(&runtime, Duration::from_millis(500), |echo| {
        runtime.call(echo, &request(), &CallLimits::default())
    });
    let waited = waited.expect("the waiting call runs once the budget is free");
    assert!(
        waited.duration >= Duration::from_millis(200),
        "it waited for the first call: {:?}",
        waited.duration
    );
    // Calls that each fit alone take turns, and all succeed.
    let echo = runtime.load(guest("echo")).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    (0..10)
                        .map(|_| runtime.call(&echo, &request(), &CallLimits::default()))
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap().unwrap();
        }
    });
    assert_eq!(runtime.stats().memory_reserved_bytes, 0);
}

#[test]
fn a_call_whose_deadline_passes_while_waiting_fails_with_the_budget_error() {
    let runtime = budgeted(ONE_CALL);
    let holder_deadline = Duration::from_secs(2);
    let impatient = CallLimits {
        deadline: Duration::from_millis(100),
        ..CallLimits::default()
    };
    let (err, digest) = while_one_call_holds_the_budget(&runtime, holder_deadline, |echo| {
        let err = runtime.call(echo, &request(), &impatient).unwrap_err();
        (err, echo.digest.clone())
    });
    match &err {
        CallError::MemoryBudget {
            waited,
            requested,
            budget,
            ..
        } => {
            assert!(*waited >= impatient.deadline, "{waited:?}");
            assert!(*waited < holder_deadline, "{waited:?}");
            assert_eq!((*requested, *budget), (ONE_CALL, ONE_CALL));
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(err.kind(), "memory-budget");
    assert_eq!(err.digest(), digest);
    let text = err.to_string();
    assert!(text.contains("raise the budget"), "{text}");
}

#[test]
fn a_memory_cap_larger_than_the_whole_budget_fails_at_once() {
    let runtime = budgeted(128 << 20);
    let echo = runtime.load(guest("echo")).unwrap();
    let started = Instant::now();
    let err = runtime
        .call(&echo, &request(), &CallLimits::default())
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1));
    match &err {
        CallError::MemoryBudget {
            waited,
            requested,
            budget,
            ..
        } => assert_eq!(
            (*waited, *requested, *budget),
            (
                Duration::ZERO,
                CallLimits::default().memory_bytes,
                128 << 20
            )
        ),
        other => panic!("unexpected {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("lower the Function's memory limit"), "{text}");
    assert!(text.contains("--guest-memory-budget"), "{text}");
}

#[test]
fn reserved_guest_memory_returns_to_zero_after_every_call() {
    let runtime = budgeted(512 << 20);
    let short = CallLimits {
        deadline: Duration::from_millis(100),
        ..CallLimits::default()
    };
    let too_large = CallLimits {
        memory_bytes: 1 << 30,
        ..CallLimits::default()
    };
    let cases = [
        ("echo", CallLimits::default(), None),
        ("panic", CallLimits::default(), Some("trap")),
        ("huge-alloc", CallLimits::default(), Some("memory")),
        ("infinite-loop", short, Some("deadline")),
        ("echo", too_large, Some("memory-budget")),
    ];
    for (name, limits, failure) in cases {
        let module = runtime.load(guest(name)).unwrap();
        let result = runtime.call(&module, &request(), &limits);
        assert_eq!(result.err().map(|e| e.kind()), failure, "{name}");
        let stats = runtime.stats();
        assert_eq!(stats.memory_reserved_bytes, 0, "{name}");
        assert_eq!(stats.memory_budget_bytes, 512 << 20, "{name}");
    }
}

#[test]
fn the_memory_budget_is_never_more_than_the_pool_can_hold() {
    let slot = PoolConfig::default().max_memory_bytes;
    let cases = [
        (
            "the default",
            RuntimeConfig::default().memory_budget,
            64,
            512 << 20,
        ),
        ("above one slot's worth", usize::MAX, 1, slot),
        ("above two slots' worth", 3 * slot, 2, 2 * slot),
        ("below the pool", 100 << 20, 1, 100 << 20),
    ];
    for (case, memory_budget, total_component_instances, expected) in cases {
        let runtime = Runtime::new(RuntimeConfig {
            memory_budget,
            pool: PoolConfig {
                total_component_instances,
                ..PoolConfig::default()
            },
            ..RuntimeConfig::default()
        })
        .unwrap();
        assert_eq!(
            runtime.stats().memory_budget_bytes,
            expected as u64,
            "{case}"
        );
    }
}

/// Pauses the call at its first checkpoints for `pauses`, then lets it
/// run; `stop_after` checkpoints, it stops the call. While paused it notes
/// how much of the memory budget `runtime` had reserved.
struct Pausing {
    pauses: std::sync::Mutex<Vec<Duration>>,
    passed: std::sync::atomic::AtomicUsize,
    stop_after: Option<usize>,
    runtime: Runtime,
    reserved_while_paused: std::sync::Mutex<Vec<u64>>,
}

impl Pausing {
    fn new(runtime: &Runtime, pauses: Vec<Duration>, stop_after: Option<usize>) -> Arc<Pausing> {
        Arc::new(Pausing {
            pauses: std::sync::Mutex::new(pauses),
            passed: Default::default(),
            stop_after,
            runtime: runtime.clone(),
            reserved_while_paused: Default::default(),
        })
    }
}

impl plait_runtime::Checkpoint for Pausing {
    fn should_pause(&self) -> Result<bool, plait_runtime::Stopped> {
        let passed = self
            .passed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.stop_after.is_some_and(|n| passed >= n) {
            return Err(plait_runtime::Stopped);
        }
        Ok(!self.pauses.lock().unwrap().is_empty())
    }

    fn pause(&self) -> Result<(), plait_runtime::Stopped> {
        let reserved = self.runtime.stats().memory_reserved_bytes;
        self.reserved_while_paused.lock().unwrap().push(reserved);
        if let Some(pause) = self.pauses.lock().unwrap().pop() {
            std::thread::sleep(pause);
        }
        Ok(())
    }
}

#[test]
fn time_paused_at_a_checkpoint_does_not_count_against_the_deadline() {
    let looping = load("infinite-loop");
    let deadline = Duration::from_millis(300);
    let limits = CallLimits {
        deadline,
        ..CallLimits::default()
    };
    // (pauses, stop after, shortest run, longest run)
    let cases = [
        (vec![], None, deadline, deadline * 2),
        (
            vec![Duration::from_millis(400), Duration::from_millis(400)],
            None,
            deadline + Duration::from_millis(800),
            deadline * 2 + Duration::from_millis(800),
        ),
        // Stopped at the third tick: long before the deadline.
        (vec![], Some(3), Duration::ZERO, deadline / 2),
    ];
    for (pauses, stop_after, shortest, longest) in cases {
        let checkpoint = Pausing::new(runtime(), pauses.clone(), stop_after);
        let started = Instant::now();
        let err = runtime()
            .call_pausable(&looping, &request(), &limits, Some(checkpoint.clone()))
            .expect_err("the loop never returns");
        let took = started.elapsed();
        assert_eq!(err.kind(), "deadline", "{pauses:?} {stop_after:?}: {err}");
        assert!(
            (shortest..longest).contains(&took),
            "{pauses:?} {stop_after:?}: took {took:?}, expected {shortest:?}..{longest:?}"
        );
        assert!(checkpoint.passed.load(std::sync::atomic::Ordering::Relaxed) >= 3);
    }
    assert_echo_works();
}

#[test]
fn a_paused_call_lends_the_memory_its_guest_does_not_have() {
    // Room for one call and a quarter: a second call fits only if the
    // paused one holds less than a quarter of its limit.
    let runtime = budgeted(ONE_CALL + ONE_CALL / 4);
    let looping = runtime.load(guest("infinite-loop")).unwrap();
    let limits = CallLimits {
        deadline: Duration::from_millis(200),
        ..CallLimits::default()
    };
    let checkpoint = Pausing::new(&runtime, vec![Duration::from_millis(300)], None);
    let echo = runtime.load(guest("echo")).unwrap();
    std::thread::scope(|s| {
        let paused = s.spawn(|| {
            runtime.call_pausable(&looping, &request(), &limits, Some(checkpoint.clone()))
        });
        // While the loop is paused, a whole call fits the budget beside it.
        while checkpoint.reserved_while_paused.lock().unwrap().is_empty() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let beside = CallLimits {
            deadline: Duration::from_millis(250),
            ..CallLimits::default()
        };
        runtime
            .call(&echo, &request(), &beside)
            .expect("a call runs while the loop is paused");
        assert_eq!(paused.join().unwrap().unwrap_err().kind(), "deadline");
    });
    let reserved = checkpoint.reserved_while_paused.lock().unwrap().clone();
    assert_eq!(reserved.len(), 1);
    assert!(
        reserved[0] < (ONE_CALL / 4) as u64,
        "a paused loop holds what it has, not its limit: {reserved:?}"
    );
    assert_eq!(runtime.stats().memory_reserved_bytes, 0, "all given back");
}

#[test]
fn a_call_does_not_pause_when_the_budget_could_not_fit_another_call_beside_it() {
    // Room for exactly one call: the paused loop's own pages would leave
    // less than a whole call for the one it gives way to.
    let runtime = budgeted(ONE_CALL);
    let looping = runtime.load(guest("infinite-loop")).unwrap();
    let limits = CallLimits {
        deadline: Duration::from_millis(100),
        ..CallLimits::default()
    };
    let checkpoint = Pausing::new(&runtime, vec![Duration::from_millis(300)], None);
    let err = runtime
        .call_pausable(&looping, &request(), &limits, Some(checkpoint.clone()))
        .unwrap_err();
    assert_eq!(err.kind(), "deadline");
    assert!(
        checkpoint.reserved_while_paused.lock().unwrap().is_empty(),
        "never paused"
    );
    assert!(
        checkpoint.passed.load(std::sync::atomic::Ordering::Relaxed) >= 3,
        "asked at every tick"
    );
}
