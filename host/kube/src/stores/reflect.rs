//! The one way every watch-fed store is filled: a kube-runtime reflector
//! over all objects of a resource (or those a watch config selects),
//! objects kept without `managedFields`, and label selection over a store.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, Stream, StreamExt};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;

use crate::vocabulary::jitter::{jittered, random_fraction};
use crate::vocabulary::object;

/// The watch events of the objects of `resource` that `config` selects,
/// each taken into `writer`'s store (without `managedFields`) before it is
/// yielded; a failed watch backs off and resumes.
pub fn reflector(
    client: &Client,
    resource: &ApiResource,
    config: watcher::Config,
    writer: Writer<DynamicObject>,
) -> impl Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + 'static + use<>
{
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    watched(api, config).modify(object::trim).reflect(writer)
}

/// The watch events of `api`'s objects that `config` selects. A watch the
/// API server ends as too old (410 Gone, as every watch is after the API
/// server restarts) lists again at once, as client-go's reflector does:
/// backing off there would leave the store blind to changes for up to half
/// a minute. Any other failure backs off and resumes.
pub fn watched<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static + use<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watcher(api, config)
        .filter(|event| {
            let expired = expired(event);
            if expired {
                tracing::debug!("watch expired; listing again");
            }
            futures::future::ready(!expired)
        })
        .backoff(watch_backoff())
}

/// How a failed watch waits before it starts again: from 100 ms, doubling
/// up to 5 s, jittered, and from 100 ms again once 30 s passed without a
/// failure. kube-runtime's default waits up to 30 s and keeps its longer
/// waits for two minutes, so a watch that failed while the API server
/// restarted stays blind long after the API server is back. Every
/// controller's triggers wait by it too.
pub fn watch_backoff() -> WatchBackoff {
    WatchBackoff {
        next: WATCH_RETRY_FIRST,
        last: None,
    }
}

const WATCH_RETRY_FIRST: Duration = Duration::from_millis(100);
const WATCH_RETRY_LONGEST: Duration = Duration::from_secs(5);
const WATCH_RETRY_FORGOTTEN: Duration = Duration::from_secs(30);

/// See [`watch_backoff`].
pub struct WatchBackoff {
    /// The wait the next failure earns, before jitter.
    next: Duration,
    /// When the last wait was handed out.
    last: Option<Instant>,
}

impl WatchBackoff {
    fn wait_at(&mut self, now: Instant) -> Duration {
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) > WATCH_RETRY_FORGOTTEN)
        {
            self.next = WATCH_RETRY_FIRST;
        }
        self.last = Some(now);
        let wait = self.next;
        self.next = (self.next * 2).min(WATCH_RETRY_LONGEST);
        wait
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(jittered(self.wait_at(Instant::now()), random_fraction()))
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = WATCH_RETRY_FIRST;
    }
}

/// Whether `event` is the API server ending a watch whose resourceVersion
/// it no longer has; kube-runtime's watcher lists again after it.
fn expired<K>(event: &Result<watcher::Event<K>, watcher::Error>) -> bool {
    matches!(event, Err(watcher::Error::WatchError(status)) if status.code == 410)
}

/// A reflector of every object of `resource` into `writer`'s store,
/// without `managedFields`, yielding each object it takes in once the
/// store has it.
pub fn reflect(
    client: &Client,
    resource: ApiResource,
    writer: Writer<DynamicObject>,
) -> impl Stream<Item = Arc<DynamicObject>> + Send + 'static {
    let kind = resource.kind.clone();
    reflector(client, &resource, watcher::Config::default(), writer).filter_map(move |event| {
        let object = match event {
            Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Some(Arc::new(o)),
            Ok(_) => None,
            Err(error) => {
                tracing::debug!(kind, %error, "watch failed; retrying");
                None
            }
        };
        futures::future::ready(object)
    })
}

/// A future any number of tasks may await (each a clone) that ends once
/// every store of `stores` has listed its objects: `false` if a store's
/// writer went first (the controller is stopping). kube-runtime's
/// `Store::wait_until_ready` wakes only the last task that polled it, so a
/// store many tasks wait for is waited for through this, its one waiter.
pub fn listed_once(stores: Vec<Store<DynamicObject>>) -> Shared<BoxFuture<'static, bool>> {
    async move {
        for store in stores {
            if store.wait_until_ready().await.is_err() {
                return false;
            }
        }
        true
    }
    .boxed()
    .shared()
}

/// The stored objects whose labels include `labels`, as JSON.
pub fn listed(
    store: &Store<DynamicObject>,
    resource: &ApiResource,
    labels: &BTreeMap<String, String>,
) -> Vec<Value> {
    labelled(store, labels)
        .filter_map(|o| object::to_value(&o, resource).ok())
        .collect()
}

/// The stored objects whose labels include `labels`.
pub fn labelled(
    store: &Store<DynamicObject>,
    labels: &BTreeMap<String, String>,
) -> impl Iterator<Item = Arc<DynamicObject>> {
    store.state().into_iter().filter(move |o| {
        labels.iter().all(|(k, v)| {
            o.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(k))
                .is_some_and(|found| found == v)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_watch_waits_from_100_ms_up_to_5_s_and_starts_short_again_after_quiet() {
        let start = Instant::now();
        let mut backoff = watch_backoff();
        // (seconds after the start of a failure, the wait it earns in ms)
        let cases = [
            (0, 100),
            (1, 200),
            (2, 400),
            (3, 800),
            (4, 1600),
            (5, 3200),
            (6, 5000),
            (7, 5000),
            // Quiet for more than 30 s.
            (40, 100),
            (41, 200),
        ];
        for (at, want) in cases {
            let wait = backoff.wait_at(start + Duration::from_secs(at));
            assert_eq!(wait.as_millis(), want, "failure at {at} s");
        }
        backoff.reset();
        assert_eq!(
            backoff.wait_at(start + Duration::from_secs(42)).as_millis(),
            100
        );
    }

    #[test]
    fn only_a_watch_the_api_server_ended_as_too_old_is_relisted_without_backoff() {
        let status = |code: u16| {
            let mut status = kube::core::Status::failure("gone", "Expired");
            status.code = code;
            Box::new(status)
        };
        // (the watch's event, relisted at once)
        let cases: [(Result<watcher::Event<DynamicObject>, watcher::Error>, bool); 4] = [
            (Err(watcher::Error::WatchError(status(410))), true),
            (Err(watcher::Error::WatchError(status(500))), false),
            (Err(watcher::Error::NoResourceVersion), false),
            (Ok(watcher::Event::Init), false),
        ];
        for (i, (event, want)) in cases.iter().enumerate() {
            assert_eq!(expired(event), *want, "case {i}");
        }
    }
}
