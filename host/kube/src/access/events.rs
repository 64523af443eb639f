//! Events as Kubernetes' own event recorder sends them (client-go's
//! `tools/record` `EventCorrelator`), so a controller that says the same
//! thing on every reconcile costs the API server one write per repeat at
//! most, and an object that keeps failing cannot flood it:
//!
//! - **Counted.** An event identical to one sent before (same source,
//!   object, type, reason and message) is a merge patch of that Event's
//!   `count`, `lastTimestamp` and `message`, not a new Event.
//! - **Aggregated.** When one object gets 10 events within 10 minutes that
//!   differ only by message, the 10th and later become one Event whose
//!   message starts `(combined from similar events): `, counted as above.
//! - **Rate-limited.** A source may send 25 events about one object at
//!   once, then one per 5 minutes (a token bucket per object); the rest are
//!   dropped, though still counted for the next one that passes.
//!
//! Each decision's state is kept for the 4,096 most recently used keys.
//! Events are `core/v1` Events, which `events.k8s.io/v1` serves too.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

/// How many keys each part of the correlator remembers.
const REMEMBERED_KEYS: usize = 4096;
/// Similar events (differing only by message) before they are aggregated.
const AGGREGATE_AFTER: usize = 10;
/// How long after the last similar event a new one starts a fresh count.
const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
const AGGREGATE_PREFIX: &str = "(combined from similar events): ";
/// Events a source may send about one object at once.
const SPAM_BURST: f64 = 25.0;
/// Events per second a source may send about one object in the long run.
const SPAM_REFILL_PER_SECOND: f64 = 1.0 / 300.0;

/// The object an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Involved {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: Option<String>,
}

/// An event to send: about what, its type (`Normal` or `Warning`), reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub involved: Involved,
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

/// Who sends events: the component, and the instance of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub component: String,
    pub instance: String,
}

/// What to send for an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlated {
    /// A new Event.
    Create(Box<Event>),
    /// The Event named `name` in `namespace` occurred again: its count,
    /// last time and message, as a merge patch; `event` is the whole
    /// Event, created instead if that one is gone.
    Patch {
        namespace: String,
        name: String,
        patch: serde_json::Value,
        event: Box<Event>,
    },
    /// Dropped by the rate limit.
    Skip,
}

/// The state of client-go's `EventCorrelator`: aggregation records, the
/// log of events sent, and the spam filter's token buckets.
#[derive(Debug)]
pub struct EventCorrelator {
    source: Source,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Messages seen per (source, object, type, reason), and when last.
    similar: Recent<String, Similar>,
    /// Events sent, by their full key (or the aggregate key).
    sent: Recent<String, Sent>,
    /// Token buckets per (source, object).
    buckets: Recent<String, Bucket>,
}

#[derive(Debug, Clone)]
struct Similar {
    messages: HashSet<String>,
    last: SystemTime,
}

#[derive(Debug, Clone)]
struct Sent {
    name: String,
    count: i32,
    first: Time,
}

#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    filled: SystemTime,
}

impl EventCorrelator {
    pub fn new(source: Source) -> EventCorrelator {
        EventCorrelator {
            source,
            state: Mutex::new(State::default()),
        }
    }

    /// Decides what `draft`, occurring at `now`, sends.
    pub fn correlate(&self, draft: &Draft, now: SystemTime) -> Correlated {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let object = self.object_key(&draft.involved);
        let similar_key = format!(
            "{object}\u{0}{}\u{0}{}",
            event_type(draft.warning),
            draft.reason
        );
        // Aggregation: the 10th distinct message of a reason within the
        // interval, and every one after, becomes the combined event.
        let mut similar = state
            .similar
            .get(&similar_key)
            .filter(|s| elapsed(s.last, now) <= AGGREGATE_INTERVAL)
            .unwrap_or_else(|| Similar {
                messages: HashSet::new(),
                last: now,
            });
        similar.messages.insert(draft.message.clone());
        similar.last = now;
        let aggregated = similar.messages.len() >= AGGREGATE_AFTER;
        if aggregated {
            // The set stays below the threshold, as client-go keeps it.
            if let Some(any) = similar.messages.iter().next().cloned() {
                similar.messages.remove(&any);
            }
        }
        state.similar.put(similar_key.clone(), similar);
        let (message, sent_key) = if aggregated {
            (format!("{AGGREGATE_PREFIX}{}", draft.message), similar_key)
        } else {
            let key = format!("{similar_key}\u{0}{}", draft.message);
            (draft.message.clone(), key)
        };
        // Counting: a repeat of an event sent before patches that Event.
        let time = Time(timestamp(now));
        let namespace = draft
            .involved
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());
        let previous = state.sent.get(&sent_key);
        let sent = match &previous {
            Some(previous) => Sent {
                name: previous.name.clone(),
                count: previous.count.saturating_add(1),
                first: previous.first.clone(),
            },
            None => Sent {
                name: format!("{}.{:x}", draft.involved.name, nanos(now)),
                count: 1,
                first: time.clone(),
            },
        };
        state.sent.put(sent_key, sent.clone());
        // The spam filter comes last: a dropped event still counts.
        let bucket_key = object;
        let mut bucket = state.buckets.get(&bucket_key).unwrap_or(Bucket {
            tokens: SPAM_BURST,
            filled: now,
        });
        bucket.tokens = (bucket.tokens
            + elapsed(bucket.filled, now).as_secs_f64() * SPAM_REFILL_PER_SECOND)
            .min(SPAM_BURST);
        bucket.filled = now;
        let admitted = bucket.tokens >= 1.0;
        if admitted {
            bucket.tokens -= 1.0;
        }
        state.buckets.put(bucket_key, bucket);
        if !admitted {
            return Correlated::Skip;
        }
        let event = Box::new(self.event(draft, &namespace, &message, &sent, &time));
        match previous {
            None => Correlated::Create(event),
            Some(_) => Correlated::Patch {
                namespace,
                name: sent.name,
                patch: json!({
                    "count": sent.count,
                    "lastTimestamp": time,
                    "message": message,
                }),
                event,
            },
        }
    }

    fn object_key(&self, involved: &Involved) -> String {
        [
            self.source.component.as_str(),
            &involved.api_version,
            &involved.kind,
            involved.namespace.as_deref().unwrap_or_default(),
            &involved.name,
            involved.uid.as_deref().unwrap_or_default(),
        ]
        .join("\u{0}")
    }

    fn event(
        &self,
        draft: &Draft,
        namespace: &str,
        message: &str,
        sent: &Sent,
        now: &Time,
    ) -> Event {
        let involved = &draft.involved;
        Event {
            metadata: ObjectMeta {
                name: Some(sent.name.clone()),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                api_version: Some(involved.api_version.clone()),
                kind: Some(involved.kind.clone()),
                namespace: involved.namespace.clone(),
                name: Some(involved.name.clone()),
                uid: involved.uid.clone(),
                ..ObjectReference::default()
            },
            type_: Some(event_type(draft.warning).into()),
            reason: Some(draft.reason.clone()),
            action: Some(draft.reason.clone()),
            message: Some(message.to_string()),
            count: Some(sent.count),
            first_timestamp: Some(sent.first.clone()),
            last_timestamp: Some(now.clone()),
            source: Some(EventSource {
                component: Some(self.source.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.source.component.clone()),
            reporting_instance: Some(self.source.instance.clone()),
            ..Event::default()
        }
    }
}

/// Sends what [`EventCorrelator::correlate`] decided: a patch whose Event
/// is gone (expired, or deleted) creates it again.
pub async fn send(client: &kube::Client, correlated: Correlated) -> Result<(), kube::Error> {
    match correlated {
        Correlated::Skip => Ok(()),
        Correlated::Create(event) => create(client, &event).await,
        Correlated::Patch {
            namespace,
            name,
            patch,
            event,
        } => {
            let events: Api<Event> = Api::namespaced(client.clone(), &namespace);
            match events
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(status)) if status.is_not_found() => {
                    create(client, &event).await
                }
                Err(e) => Err(e),
            }
        }
    }
}

async fn create(client: &kube::Client, event: &Event) -> Result<(), kube::Error> {
    let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    events
        .create(&PostParams::default(), event)
        .await
        .map(|_| ())
}

fn event_type(warning: bool) -> &'static str {
    if warning { "Warning" } else { "Normal" }
}

fn elapsed(since: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(since).unwrap_or_default()
}

fn nanos(now: SystemTime) -> u128 {
    now.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos()
}

fn timestamp(now: SystemTime) -> Timestamp {
    Timestamp::try_from(now)
        .ok()
        .and_then(|t| t.round(k8s_openapi::jiff::Unit::Second).ok())
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A map of at most [`REMEMBERED_KEYS`] entries that forgets the least
/// recently used.
#[derive(Debug)]
struct Recent<K, V> {
    entries: HashMap<K, (V, u64)>,
    clock: u64,
}

impl<K, V> Default for Recent<K, V> {
    fn default() -> Self {
        Recent {
            entries: HashMap::new(),
            clock: 0,
        }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> Recent<K, V> {
    fn get(&mut self, key: &K) -> Option<V> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(key).map(|(value, used)| {
            *used = clock;
            value.clone()
        })
    }

    fn put(&mut self, key: K, value: V) {
        self.clock += 1;
        if !self.entries.contains_key(&key)
            && self.entries.len() >= REMEMBERED_KEYS
            && let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
        {
            self.entries.remove(&oldest);
        }
        self.entries.insert(key, (value, self.clock));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn correlator() -> EventCorrelator {
        EventCorrelator::new(Source {
            component: "plait".into(),
            instance: "plait-0".into(),
        })
    }

    fn draft(object: &str, reason: &str, message: &str) -> Draft {
        Draft {
            involved: Involved {
                api_version: "example.org/v1".into(),
                kind: "XApp".into(),
                namespace: Some("ns".into()),
                name: object.into(),
                uid: Some(format!("uid-{object}")),
            },
            warning: false,
            reason: reason.into(),
            message: message.into(),
        }
    }

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds)
    }

    /// What a decision amounts to: `create`, `patch <count>` or `skip`, and the message.
    fn summary(correlated: &Correlated) -> (String, String) {
        match correlated {
            Correlated::Create(event) => {
                ("create".into(), event.message.clone().unwrap_or_default())
            }
            Correlated::Patch { patch, .. } => (
                format!("patch {}", patch["count"]),
                patch["message"].as_str().unwrap_or_default().into(),
            ),
            Correlated::Skip => ("skip".into(), String::new()),
        }
    }

    #[test]
    fn a_repeated_event_patches_the_count_of_the_first_and_a_new_message_creates_one() {
        let events = correlator();
        // (seconds, object, reason, message, what is sent)
        let steps = [
            (0, "a", "Compose", "one", "create"),
            (1, "a", "Compose", "one", "patch 2"),
            (2, "a", "Compose", "two", "create"),
            (3, "a", "Compose", "one", "patch 3"),
            (4, "a", "Other", "one", "create"),
            (5, "b", "Compose", "one", "create"),
            (6, "b", "Compose", "one", "patch 2"),
        ];
        for (i, (seconds, object, reason, message, want)) in steps.into_iter().enumerate() {
            let sent = events.correlate(&draft(object, reason, message), at(seconds));
            assert_eq!(
                summary(&sent),
                (want.to_string(), message.to_string()),
                "step {i}"
            );
        }
    }

    #[test]
    fn a_patch_names_the_event_it_counts_and_keeps_its_first_time() {
        let events = correlator();
        let Correlated::Create(first) = events.correlate(&draft("a", "Compose", "one"), at(0))
        else {
            panic!("the first event is created");
        };
        let Correlated::Patch {
            namespace,
            name,
            patch,
            event,
        } = events.correlate(&draft("a", "Compose", "one"), at(30))
        else {
            panic!("the repeat is a patch");
        };
        assert_eq!(Some(name.clone()), first.metadata.name);
        assert_eq!(namespace, "ns");
        assert_eq!(patch["count"], 2);
        assert_eq!(patch["lastTimestamp"], json!(Time(timestamp(at(30)))));
        assert_eq!(event.first_timestamp, first.first_timestamp);
        assert_eq!(event.count, Some(2));
        assert_eq!(
            first.involved_object.uid.as_deref(),
            Some("uid-a"),
            "the event names the object's UID"
        );
    }

    #[test]
    fn the_tenth_similar_message_within_ten_minutes_is_combined_into_one_event() {
        let events = correlator();
        let mut sent = Vec::new();
        for i in 0..12 {
            let decided = events.correlate(&draft("a", "Compose", &format!("m{i}")), at(i));
            sent.push(summary(&decided).0);
        }
        let want: Vec<String> = (0..9)
            .map(|_| "create".to_string())
            .chain(["create", "patch 2", "patch 3"].map(String::from))
            .collect();
        assert_eq!(sent, want);
        let combined = events.correlate(&draft("a", "Compose", "m12"), at(13));
        assert_eq!(
            summary(&combined),
            ("patch 4".to_string(), format!("{AGGREGATE_PREFIX}m12"))
        );
        // Ten minutes after the last similar event, messages count afresh.
        let later = events.correlate(&draft("a", "Compose", "m13"), at(13 + 601));
        assert_eq!(summary(&later), ("create".to_string(), "m13".to_string()));
    }

    #[test]
    fn an_object_gets_a_burst_of_25_events_then_one_per_five_minutes() {
        let events = correlator();
        let decided: Vec<String> = (0..27)
            .map(|_| summary(&events.correlate(&draft("a", "Compose", "same"), at(0))).0)
            .map(|s| if s == "skip" { s } else { "sent".into() })
            .collect();
        assert_eq!(decided.iter().filter(|s| *s == "sent").count(), 25);
        assert_eq!(&decided[25..], ["skip", "skip"]);
        // Another object has its own bucket.
        assert_ne!(
            summary(&events.correlate(&draft("b", "Compose", "same"), at(0))).0,
            "skip"
        );
        // A token refills after five minutes; the dropped repeats still counted.
        assert_eq!(
            summary(&events.correlate(&draft("a", "Compose", "same"), at(299))).0,
            "skip"
        );
        assert_eq!(
            summary(&events.correlate(&draft("a", "Compose", "same"), at(300 + 299))).0,
            "patch 29"
        );
    }

    #[test]
    fn the_least_recently_used_key_is_forgotten_first() {
        let mut recent = Recent::<usize, usize>::default();
        for i in 0..REMEMBERED_KEYS {
            recent.put(i, i);
        }
        assert_eq!(recent.get(&0), Some(0), "0 is used again");
        recent.put(REMEMBERED_KEYS, REMEMBERED_KEYS);
        assert_eq!(recent.get(&0), Some(0));
        assert_eq!(recent.get(&1), None, "1 was the least recently used");
        assert_eq!(recent.entries.len(), REMEMBERED_KEYS);
    }
}
