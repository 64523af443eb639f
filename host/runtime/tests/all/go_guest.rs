//! A Go component under load: the built-in go-templating, called many
//! times with requests of many sizes (many small strings to lower, which is
//! where Go's allocator runs inside `cabi_realloc`) under a tight memory
//! cap. Go's allocator and collector read the clock and yield through WASI;
//! inside `cabi_realloc` that traps ("cannot leave component instance")
//! unless plait-componentize's guard keeps those calls inside. Every call
//! must answer, and answer right.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};
use plait_sdk::{Request, Resource, State};
use serde_json::json;

/// Composes one ConfigMap naming how many observed resources it saw.
const TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  annotations:
    gotemplating.fn.crossplane.io/composition-resource-name: summary
data:
  observed: "{{ len .observed.resources }}"
  first: "{{ (index .observed.resources "r-0").resource.metadata.name }}"
"#;

/// A request with `resources` observed resources whose labels hold
/// `padding` bytes each.
fn request(resources: usize, padding: usize) -> Request {
    let observed: BTreeMap<String, Resource> = (0..resources)
        .map(|i| {
            let resource = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}"), "labels": {"pad": "x".repeat(padding)}},
                "data": {"index": i.to_string()},
            });
            (format!("r-{i}"), Resource::new(resource))
        })
        .collect();
    Request {
        observed: State {
            composite: Some(Resource::new(json!({
                "apiVersion": "example.org/v1", "kind": "XR", "metadata": {"name": "x"},
            }))),
            resources: observed,
        },
        input: Some(json!({
            "apiVersion": "gotemplating.fn.crossplane.io/v1beta1",
            "kind": "GoTemplate",
            "source": "Inline",
            "inline": {"template": TEMPLATE},
        })),
        ..Request::default()
    }
}

#[test]
fn a_go_component_never_traps_while_its_request_is_lowered() {
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let module = runtime.builtin(Builtin::GoTemplating).unwrap();
    let limits = CallLimits {
        memory_bytes: 192 << 20,
        ..CallLimits::default()
    };
    // (observed resources, bytes of padding each): from a handful of tiny
    // strings to tens of thousands, and a few large ones.
    let shapes = [
        (1, 16),
        (50, 64),
        (400, 8),
        (1_500, 32),
        (4_000, 4),
        (12_000, 2),
        (30, 40_000),
        (3, 900_000),
    ];
    let mut calls = 0;
    for round in 0..25 {
        for &(resources, padding) in &shapes {
            // Sizes vary from call to call, so the heap is never in the
            // same state twice; the large ones vary in their padding only.
            let resources = if padding > 10_000 {
                resources
            } else {
                resources + round * 7
            };
            let output = runtime
                .call(&module, &request(resources, padding + round), &limits)
                .unwrap_or_else(|e| {
                    panic!("call {calls} ({resources} resources of {padding} bytes): {e}")
                });
            let summary = &output.response.desired.resources["summary"].resource;
            assert_eq!(
                summary["data"]["observed"],
                json!(resources.to_string()),
                "{:?}",
                output.response.results
            );
            assert_eq!(summary["data"]["first"], json!("cm-0"));
            calls += 1;
        }
    }
    assert_eq!(calls, 200);
}
