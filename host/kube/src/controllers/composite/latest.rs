//! The XR as this controller last stored it, for reconciles that a lagging
//! watch hands an older version.
//!
//! A reconcile writes its XR; the watch delivers that write a moment later,
//! and much later when the API server is busy. A reconcile that starts in
//! between (a composed resource changed, a requeue) is handed the version the
//! previous reconcile started from, or one of its intermediate writes.
//! Starting from it would redo the previous reconcile's writes, and its
//! resourceVersion-guarded apply would conflict; starting from what that
//! reconcile stored does neither.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use plait_reconcile::ObjectRef;
use serde_json::Value;

use crate::vocabulary::object::text;

const VERSION: &str = "/metadata/resourceVersion";

/// What one reconcile left behind.
struct Stored {
    /// The XR as the reconcile's last write returned it, as JSON text: one
    /// is kept for every XR written since its last quiet reconcile (during a
    /// rollout, every XR), and text takes a fraction of a parsed `Value`'s
    /// memory.
    xr: Box<[u8]>,
    /// Versions older than `xr`: the one the reconcile started from, and
    /// the reconcile's own earlier writes.
    superseded: Vec<String>,
}

/// Per XR, what its last reconcile stored.
#[derive(Default)]
pub struct LatestStored {
    by_xr: Mutex<HashMap<ObjectRef, Stored>>,
}

impl LatestStored {
    /// `handed`, unless it is a version the XR's last reconcile has
    /// superseded: then what that reconcile stored.
    pub fn newest(&self, reference: &ObjectRef, handed: Value) -> Value {
        let by_xr = self.by_xr.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(stored) = by_xr.get(reference) else {
            return handed;
        };
        match text(&handed, VERSION) {
            Some(version) if stored.superseded.iter().any(|v| v == version) => {
                tracing::debug!(composite = %reference, handed = version, "watch is behind this controller's writes; using what it stored");
                // Text this controller serialised parses back.
                serde_json::from_slice(&stored.xr).unwrap_or(handed)
            }
            _ => handed,
        }
    }

    /// Records that a reconcile that started from `started` (and wrote the
    /// versions `written` on the way) stored `xr` last.
    pub fn record(&self, reference: &ObjectRef, started: &Value, written: Vec<String>, xr: &Value) {
        let Some(version) = text(xr, VERSION) else {
            return;
        };
        let mut superseded = written;
        superseded.extend(text(started, VERSION).map(str::to_string));
        superseded.retain(|v| v != version);
        let stored = if superseded.is_empty() {
            None
        } else {
            serde_json::to_vec(xr).ok()
        };
        let mut by_xr = self.by_xr.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(stored) = stored else {
            by_xr.remove(reference);
            return;
        };
        by_xr.insert(
            reference.clone(),
            Stored {
                xr: stored.into_boxed_slice(),
                superseded,
            },
        );
    }

    /// Whether a reconcile of `reference` has finished since it was last forgotten.
    pub fn knows(&self, reference: &ObjectRef) -> bool {
        self.by_xr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(reference)
    }

    /// Forgets an XR that is gone.
    pub fn forget(&self, reference: &ObjectRef) {
        self.by_xr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(reference);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn xr(version: &str, marker: &str) -> Value {
        json!({"metadata": {"name": "a", "resourceVersion": version}, "status": {"m": marker}})
    }

    fn reference() -> ObjectRef {
        ObjectRef {
            api_version: "example.org/v1".into(),
            kind: "App".into(),
            namespace: Some("ns".into()),
            name: "a".into(),
        }
    }

    #[test]
    fn a_superseded_version_is_replaced_by_what_the_last_reconcile_stored() {
        let latest = LatestStored::default();
        // A reconcile started from 1, wrote 2 (resource references) and stored 3 (status).
        latest.record(
            &reference(),
            &xr("1", "old"),
            vec!["2".into(), "3".into()],
            &xr("3", "stored"),
        );
        // (version handed, marker of the XR a reconcile starts from)
        let cases = [
            ("1", "stored"),
            ("2", "stored"),
            ("3", "handed"),
            ("4", "handed"),
        ];
        for (version, want) in cases {
            let got = latest.newest(&reference(), xr(version, "handed"));
            assert_eq!(got["status"]["m"], want, "handed {version}");
        }
    }

    #[test]
    fn a_reconcile_that_wrote_nothing_leaves_nothing_to_replace() {
        let latest = LatestStored::default();
        latest.record(&reference(), &xr("1", "old"), vec![], &xr("3", "stored"));
        latest.record(&reference(), &xr("3", "stored"), vec![], &xr("3", "stored"));
        assert_eq!(
            latest.newest(&reference(), xr("1", "handed"))["status"]["m"],
            "handed"
        );
        latest.record(&reference(), &xr("3", "old"), vec![], &xr("5", "stored"));
        latest.forget(&reference());
        assert_eq!(
            latest.newest(&reference(), xr("3", "handed"))["status"]["m"],
            "handed"
        );
    }
}
