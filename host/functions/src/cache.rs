//! The function response cache, with the semantics of Crossplane's: a call
//! whose request tag equals an earlier call's for the same XR and step is
//! answered with that call's response while the response's TTL lasts
//! (capped by a controller-wide maximum). Only responses with a TTL are
//! kept, so a function opts in by setting one.
//!
//! A call of a *deterministic* function (one whose response depends on its
//! request alone: the built-in components that read no clock, randomness,
//! network or environment) is kept up to the maximum whatever its TTL: its
//! TTL still says when the XR is looked at again, and calling it again with
//! the same request could only give the same answer.
//!
//! Unlike upstream's file-backed cache, entries live in memory, as JSON (a
//! fraction of the size of the decoded response), bounded by a number of
//! entries and by those bytes, least recently
//! used first out; and the key holds the XR's identity besides the tag, so
//! one tenant's XR is never answered with a response made for another's,
//! even if two requests were to hash alike.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use plait_pipeline::Tenant;
use plait_sdk::Response;

/// How much the cache keeps, and for how long at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    /// No response is kept longer than this, whatever its TTL.
    pub max_ttl: Duration,
    /// The most responses kept at once.
    pub max_entries: usize,
    /// The most bytes of responses (JSON-encoded) kept at once.
    pub max_bytes: usize,
}

impl Default for CacheLimits {
    /// Crossplane's default maximum TTL (a day); room for the last
    /// responses of ten thousand steps, in at most 64 MiB of JSON.
    fn default() -> Self {
        CacheLimits {
            max_ttl: Duration::from_secs(24 * 60 * 60),
            max_entries: 10_000,
            max_bytes: 64 << 20,
        }
    }
}

/// Who a cached call was made for: the XR (its uid with its
/// apiVersion, kind, namespace and name) and its tenant, for metrics.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheScope {
    pub xr: String,
    pub tenant: Tenant,
}

/// One call: the step, the function it names, the digest of the module
/// that function ran with the directories its calls read (a Function moved
/// to another package, or to another project build run by the same
/// built-in, never gets the old package's responses), and the request's tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call<'a> {
    pub step: &'a str,
    pub function: &'a str,
    pub module: &'a str,
    pub tag: &'a str,
    /// The module answers the same request the same way every time.
    pub deterministic: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    xr: String,
    step: String,
    function: String,
    module: String,
    tag: String,
}

struct Entry {
    /// The response as JSON, decoded again on each use.
    encoded: Box<[u8]>,
    deadline: Instant,
    bytes: usize,
    /// When it was last used, in the cache's own order of uses.
    used: u64,
    tenant: Tenant,
}

/// A response that left the cache to make room, for metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evicted {
    pub tenant: Tenant,
    pub function: String,
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<Key, Entry>,
    /// Keys by last use, oldest first.
    by_use: BTreeMap<u64, Key>,
    bytes: usize,
    uses: u64,
}

impl Entries {
    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let entry = self.by_key.remove(key)?;
        self.by_use.remove(&entry.used);
        self.bytes -= entry.bytes;
        Some(entry)
    }

    fn touch(&mut self, key: &Key) {
        self.uses += 1;
        let stamp = self.uses;
        if let Some(entry) = self.by_key.get_mut(key) {
            self.by_use.remove(&entry.used);
            entry.used = stamp;
            self.by_use.insert(stamp, key.clone());
        }
    }

    /// Drops every response whose TTL has run out; returns how many.
    fn purge_expired(&mut self, now: Instant) -> usize {
        let expired: Vec<Key> = self
            .by_key
            .iter()
            .filter(|(_, e)| now >= e.deadline)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &expired {
            self.remove(key);
        }
        expired.len()
    }

    fn evict_oldest(&mut self) -> Option<Evicted> {
        let (_, key) = self.by_use.pop_first()?;
        let entry = self.by_key.remove(&key)?;
        self.bytes -= entry.bytes;
        Some(Evicted {
            tenant: entry.tenant,
            function: key.function,
        })
    }
}

/// Responses of earlier calls, by XR, step, function and request tag.
pub struct ResponseCache {
    limits: CacheLimits,
    entries: Mutex<Entries>,
}

impl ResponseCache {
    pub fn new(limits: CacheLimits) -> ResponseCache {
        ResponseCache {
            limits,
            entries: Mutex::new(Entries::default()),
        }
    }

    pub fn limits(&self) -> &CacheLimits {
        &self.limits
    }

    /// How many responses are kept, and their encoded size.
    pub fn usage(&self) -> (usize, usize) {
        let entries = self.lock();
        (entries.by_key.len(), entries.bytes)
    }

    /// The response an earlier, identical call for the XR of `scope` got,
    /// while its TTL lasts.
    pub fn lookup(&self, scope: &CacheScope, call: &Call<'_>) -> Option<Response> {
        self.lookup_at(scope, call, Instant::now())
    }

    fn lookup_at(&self, scope: &CacheScope, call: &Call<'_>, now: Instant) -> Option<Response> {
        // Upstream never caches an untagged request: it cannot be told apart.
        if call.tag.is_empty() {
            return None;
        }
        let key = key(scope, call);
        let mut entries = self.lock();
        let deadline = entries.by_key.get(&key)?.deadline;
        if now >= deadline {
            entries.remove(&key);
            return None;
        }
        entries.touch(&key);
        let decoded = serde_json::from_slice(&entries.by_key.get(&key)?.encoded);
        match decoded {
            Ok(response) => Some(response),
            // It was encoded from a Response; a failure to decode it is a
            // miss, and the call runs instead.
            Err(_) => {
                entries.remove(&key);
                None
            }
        }
    }

    /// Keeps the `response` `call` got, when it has a TTL; returns what was
    /// evicted to make room.
    pub fn store(&self, scope: &CacheScope, call: &Call<'_>, response: &Response) -> Vec<Evicted> {
        self.store_at(scope, call, response, Instant::now())
    }

    fn store_at(
        &self,
        scope: &CacheScope,
        call: &Call<'_>,
        response: &Response,
        now: Instant,
    ) -> Vec<Evicted> {
        if call.tag.is_empty() {
            return Vec::new();
        }
        let ttl = match response.ttl {
            _ if call.deterministic => self.limits.max_ttl,
            Some(ttl) if !ttl.is_zero() => ttl.min(self.limits.max_ttl),
            _ => return Vec::new(),
        };
        if ttl.is_zero() || self.limits.max_entries == 0 {
            return Vec::new();
        }
        // The encoded size stands for what the response holds; a response
        // that cannot be encoded was never going to be reused.
        let Ok(encoded) = serde_json::to_vec(response) else {
            return Vec::new();
        };
        let bytes = encoded.len();
        if bytes > self.limits.max_bytes {
            return Vec::new();
        }
        let key = key(scope, call);
        let mut entries = self.lock();
        entries.remove(&key);
        let full = |e: &Entries| {
            e.by_key.len() >= self.limits.max_entries || e.bytes + bytes > self.limits.max_bytes
        };
        // When full, expired responses go first, then the least recently used.
        if full(&entries) {
            entries.purge_expired(now);
        }
        let mut evicted = Vec::new();
        while full(&entries) {
            match entries.evict_oldest() {
                Some(gone) => evicted.push(gone),
                None => break,
            }
        }
        entries.uses += 1;
        let used = entries.uses;
        entries.bytes += bytes;
        entries.by_use.insert(used, key.clone());
        entries.by_key.insert(
            key,
            Entry {
                encoded: encoded.into_boxed_slice(),
                deadline: now + ttl,
                bytes,
                used,
                tenant: scope.tenant.clone(),
            },
        );
        evicted
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // Every change leaves the entries consistent before it can panic.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn key(scope: &CacheScope, call: &Call<'_>) -> Key {
    Key {
        xr: scope.xr.clone(),
        step: call.step.into(),
        function: call.function.into(),
        module: call.module.into(),
        tag: call.tag.into(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scope(xr: &str, tenant: &str) -> CacheScope {
        CacheScope {
            xr: xr.into(),
            tenant: Tenant::Namespace(tenant.into()),
        }
    }

    fn call<'a>(step: &'a str, function: &'a str, tag: &'a str) -> Call<'a> {
        Call {
            step,
            function,
            module: "sha256:m",
            tag,
            deterministic: false,
        }
    }

    fn response(ttl: Option<u64>, marker: &str) -> Response {
        Response {
            ttl: ttl.map(Duration::from_secs),
            context: json!({"marker": marker}),
            ..Response::default()
        }
    }

    fn marker(response: Option<Response>) -> Option<String> {
        response.map(|r| r.context["marker"].as_str().unwrap_or_default().to_string())
    }

    #[test]
    fn a_response_is_reused_only_for_the_same_xr_step_function_and_tag_within_its_ttl() {
        let start = Instant::now();
        let cache = ResponseCache::new(CacheLimits::default());
        let a = scope("uid-a", "team-a");
        cache.store_at(
            &a,
            &call("compose", "fn", "t1"),
            &response(Some(60), "first"),
            start,
        );
        let later = start + Duration::from_secs(30);
        // (who, step, function, tag, when, what comes back)
        let cases = [
            (
                "same request",
                &a,
                "compose",
                "fn",
                "t1",
                later,
                Some("first"),
            ),
            ("another tag", &a, "compose", "fn", "t2", later, None),
            ("another step", &a, "ready", "fn", "t1", later, None),
            ("another function", &a, "compose", "fn-b", "t1", later, None),
            (
                "another tenant's XR",
                &scope("uid-b", "team-b"),
                "compose",
                "fn",
                "t1",
                later,
                None,
            ),
            ("an empty tag", &a, "compose", "fn", "", later, None),
            (
                "once the ttl ran out",
                &a,
                "compose",
                "fn",
                "t1",
                start + Duration::from_secs(60),
                None,
            ),
        ];
        for (name, who, step, function, tag, when, want) in cases {
            let got = marker(cache.lookup_at(who, &call(step, function, tag), when));
            assert_eq!(got.as_deref(), want, "{name}");
        }
        let moved = Call {
            module: "sha256:another-package",
            ..call("compose", "fn", "t1")
        };
        assert!(
            cache.lookup_at(&a, &moved, later).is_none(),
            "a Function now running another module"
        );
        assert_eq!(
            cache.usage().0,
            0,
            "an expired response is dropped on lookup"
        );
    }

    #[test]
    fn responses_without_a_ttl_are_not_kept() {
        let cache = ResponseCache::new(CacheLimits::default());
        let a = scope("uid-a", "team-a");
        for ttl in [None, Some(0)] {
            cache.store(&a, &call("compose", "fn", "t1"), &response(ttl, "x"));
            assert_eq!(
                cache.lookup(&a, &call("compose", "fn", "t1")),
                None,
                "{ttl:?}"
            );
        }
    }

    #[test]
    fn a_cached_response_comes_back_as_it_was_stored() {
        let cache = ResponseCache::new(CacheLimits::default());
        let a = scope("uid-a", "team-a");
        let mut stored = response(Some(60), "full");
        stored.tag = "t".into();
        stored.desired.resources.insert(
            "cm".into(),
            plait_sdk::Resource {
                resource: json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"n": 1, "f": 1.5}}),
                connection_details: [("password".to_string(), vec![0, 159, 255])].into(),
                ready: plait_sdk::Ready::True,
            },
        );
        stored.output = Some(json!({"url": "https://example.org"}));
        stored.context = json!(null);
        cache.store(&a, &call("s", "fn", "t"), &stored);
        assert_eq!(cache.lookup(&a, &call("s", "fn", "t")), Some(stored));
    }

    #[test]
    fn a_deterministic_response_lasts_until_the_maximum_whatever_its_ttl() {
        let start = Instant::now();
        let cache = ResponseCache::new(CacheLimits {
            max_ttl: Duration::from_secs(600),
            ..CacheLimits::default()
        });
        let a = scope("uid-a", "team-a");
        let deterministic = |tag| Call {
            deterministic: true,
            ..call("s", "fn", tag)
        };
        // (its TTL, seconds later, kept then)
        let cases = [
            (Some(60), 59, true),
            (Some(60), 61, true),
            (Some(60), 599, true),
            (Some(60), 600, false),
            (Some(0), 300, true),
            (None, 300, true),
        ];
        for (ttl, after, kept) in cases {
            cache.store_at(&a, &deterministic("t"), &response(ttl, "x"), start);
            let when = start + Duration::from_secs(after);
            let got = cache.lookup_at(&a, &deterministic("t"), when).is_some();
            assert_eq!(got, kept, "ttl {ttl:?}, after {after} s");
        }
        cache.store_at(&a, &deterministic(""), &response(Some(60), "x"), start);
        assert!(
            cache.lookup_at(&a, &deterministic(""), start).is_none(),
            "an untagged request is never kept"
        );
    }

    #[test]
    fn the_maximum_ttl_caps_how_long_a_response_is_kept() {
        let start = Instant::now();
        let cache = ResponseCache::new(CacheLimits {
            max_ttl: Duration::from_secs(10),
            ..CacheLimits::default()
        });
        let a = scope("uid-a", "team-a");
        cache.store_at(&a, &call("s", "fn", "t"), &response(Some(3600), "x"), start);
        let cases = [(9, Some("x")), (10, None)];
        for (after, want) in cases {
            let when = start + Duration::from_secs(after);
            let got = marker(cache.lookup_at(&a, &call("s", "fn", "t"), when));
            assert_eq!(got.as_deref(), want, "after {after} s");
        }
    }

    #[test]
    fn a_zero_maximum_ttl_or_no_room_keeps_nothing() {
        let a = scope("uid-a", "team-a");
        let limits = [
            CacheLimits {
                max_ttl: Duration::ZERO,
                ..CacheLimits::default()
            },
            CacheLimits {
                max_entries: 0,
                ..CacheLimits::default()
            },
            CacheLimits {
                max_bytes: 8,
                ..CacheLimits::default()
            },
        ];
        for limits in limits {
            let cache = ResponseCache::new(limits);
            cache.store(&a, &call("s", "fn", "t"), &response(Some(60), "x"));
            assert_eq!(cache.usage(), (0, 0), "{limits:?}");
        }
    }

    #[test]
    fn the_least_recently_used_response_is_evicted_at_the_entry_bound() {
        let cache = ResponseCache::new(CacheLimits {
            max_entries: 2,
            ..CacheLimits::default()
        });
        let a = scope("uid-a", "team-a");
        let b = scope("uid-b", "team-b");
        assert!(
            cache
                .store(&a, &call("s", "fn-1", "t"), &response(Some(60), "a"))
                .is_empty()
        );
        assert!(
            cache
                .store(&b, &call("s", "fn-2", "t"), &response(Some(60), "b"))
                .is_empty()
        );
        // Using a's response makes b's the oldest.
        assert!(cache.lookup(&a, &call("s", "fn-1", "t")).is_some());
        let evicted = cache.store(&a, &call("s", "fn-3", "t"), &response(Some(60), "c"));
        assert_eq!(
            evicted,
            [Evicted {
                tenant: Tenant::Namespace("team-b".into()),
                function: "fn-2".into()
            }]
        );
        assert!(cache.lookup(&b, &call("s", "fn-2", "t")).is_none());
        assert!(cache.lookup(&a, &call("s", "fn-1", "t")).is_some());
        assert!(cache.lookup(&a, &call("s", "fn-3", "t")).is_some());
        assert_eq!(cache.usage().0, 2);
    }

    #[test]
    fn the_byte_bound_holds_whatever_the_number_of_entries() {
        let one = serde_json::to_vec(&response(Some(60), "0")).unwrap().len();
        let cache = ResponseCache::new(CacheLimits {
            max_bytes: one * 3,
            ..CacheLimits::default()
        });
        let a = scope("uid-a", "team-a");
        let mut evicted = 0;
        for i in 0..10 {
            let tag = format!("t{i}");
            evicted += cache
                .store(
                    &a,
                    &call("s", "fn", &tag),
                    &response(Some(60), &i.to_string()),
                )
                .len();
            let (_, bytes) = cache.usage();
            assert!(bytes <= one * 3, "{bytes} bytes after {i}");
        }
        assert_eq!(cache.usage(), (3, one * 3));
        assert_eq!(evicted, 7);
        assert_eq!(
            marker(cache.lookup(&a, &call("s", "fn", "t9"))).as_deref(),
            Some("9")
        );
    }

    #[test]
    fn storing_the_same_request_again_replaces_its_response() {
        let cache = ResponseCache::new(CacheLimits::default());
        let a = scope("uid-a", "team-a");
        cache.store(&a, &call("s", "fn", "t"), &response(Some(60), "old"));
        cache.store(&a, &call("s", "fn", "t"), &response(Some(60), "new"));
        assert_eq!(cache.usage().0, 1);
        assert_eq!(
            marker(cache.lookup(&a, &call("s", "fn", "t"))).as_deref(),
            Some("new")
        );
    }

    #[test]
    fn when_full_expired_responses_make_room_before_live_ones_are_evicted() {
        let start = Instant::now();
        let cache = ResponseCache::new(CacheLimits {
            max_entries: 2,
            ..CacheLimits::default()
        });
        let a = scope("uid-a", "team-a");
        cache.store_at(
            &a,
            &call("s", "fn", "short"),
            &response(Some(1), "x"),
            start,
        );
        cache.store_at(
            &a,
            &call("s", "fn", "long"),
            &response(Some(60), "y"),
            start,
        );
        let later = start + Duration::from_secs(2);
        let evicted = cache.store_at(&a, &call("s", "fn", "new"), &response(Some(60), "z"), later);
        assert_eq!(evicted, [], "an expired response is not an eviction");
        let left = cache.lookup_at(&a, &call("s", "fn", "long"), later);
        assert_eq!(marker(left).as_deref(), Some("y"));
        assert_eq!(cache.usage().0, 2);
    }
}
