//! The required-resources index at scale: the memory it holds for 10,000
//! XRs (bytes allocated and not freed, counted by this binary's allocator)
//! and how long recording every XR and finding the readers of a change take.
//! Prints the figures.
//!
//! `cargo bench -p plait-kube --bench required_index`; `PLAIT_BENCH_XRS`
//! sets the number of XRs (default 10,000).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use plait_kube::{Change, GroupKind, Matching, Required, RequiredIndex};
use plait_reconcile::ObjectRef;

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// Counting what is allocated needs an allocator of the binary's own: a
// global allocator is an unsafe trait, whose every call here is passed on
// to the system allocator unchanged.
#[allow(unsafe_code)]
// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's obligations are the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const DEFAULT_XRS: usize = 10_000;
const NAMESPACES: usize = 100;

fn environment() -> GroupKind {
    (
        "apiextensions.crossplane.io".into(),
        "EnvironmentConfig".into(),
    )
}

fn config_map() -> GroupKind {
    (String::new(), "ConfigMap".into())
}

fn xr(i: usize) -> ObjectRef {
    ObjectRef {
        api_version: "scale.example.org/v1".into(),
        kind: "Bench".into(),
        namespace: Some(format!("bench-{:03}", i % NAMESPACES)),
        name: format!("bench-{i:05}"),
    }
}

fn shared_config() -> Required {
    Required {
        kind: environment(),
        namespace: None,
        matching: Matching::Name("bench-shared".into()),
    }
}

/// A handful each: the shared config by name, every `stage: prod` config,
/// a ConfigMap of the XR's own by name and its namespace's ConfigMaps by labels.
fn handful(i: usize) -> Vec<Required> {
    let namespace = xr(i).namespace;
    let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    vec![
        shared_config(),
        Required {
            kind: environment(),
            namespace: None,
            matching: Matching::Labels(labels(&[("stage", "prod")])),
        },
        Required {
            kind: config_map(),
            namespace: namespace.clone(),
            matching: Matching::Name(format!("settings-{i:05}")),
        },
        Required {
            kind: config_map(),
            namespace,
            matching: Matching::Labels(labels(&[("app.example.org/peer", "true")])),
        },
    ]
}

fn measure(title: &str, xrs: usize, required: impl Fn(usize) -> Vec<Required>) {
    let refs: Vec<ObjectRef> = (0..xrs).map(xr).collect();
    let reads: Vec<Vec<Required>> = (0..xrs).map(&required).collect();
    let before = LIVE.load(Ordering::Relaxed);
    let started = Instant::now();
    let mut index = RequiredIndex::default();
    for (xr, read) in refs.iter().zip(&reads) {
        index.track(xr, read);
    }
    let recorded = started.elapsed();
    let held = LIVE.load(Ordering::Relaxed) - before;
    let started = Instant::now();
    for (xr, read) in refs.iter().zip(&reads) {
        index.track(xr, read);
    }
    let again = started.elapsed();
    let shared = Change {
        namespace: None,
        name: "bench-shared".into(),
        before: Some(BTreeMap::new()),
        after: Some(BTreeMap::new()),
    };
    let unread = Change {
        name: "bench-unread".into(),
        ..shared.clone()
    };
    let started = Instant::now();
    let woken = index.readers_of(&environment(), &shared).len();
    let shared_took = started.elapsed();
    let started = Instant::now();
    let unread_woken = index.readers_of(&environment(), &unread).len();
    let unread_took = started.elapsed();
    println!("required_index/{xrs} XRs, {title}:");
    println!(
        "  index memory             {:>8.2} MiB ({:.0} bytes per XR)",
        held as f64 / (1024.0 * 1024.0),
        held as f64 / xrs as f64
    );
    println!(
        "  recording every XR       {:>8.2} ms, again unchanged {:.2} ms",
        recorded.as_secs_f64() * 1e3,
        again.as_secs_f64() * 1e3
    );
    println!(
        "  readers of the shared    {:>8} XRs in {:.2} ms; of an unread config {} in {:.3} ms",
        woken,
        shared_took.as_secs_f64() * 1e3,
        unread_woken,
        unread_took.as_secs_f64() * 1e3
    );
    drop(index);
}

fn main() {
    let xrs: usize = std::env::var("PLAIT_BENCH_XRS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_XRS);
    measure("one shared EnvironmentConfig by name each", xrs, |_| {
        vec![shared_config()]
    });
    measure(
        "four each (two shared configs, an own ConfigMap by name, the namespace's by labels)",
        xrs,
        handful,
    );
}
