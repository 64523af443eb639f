//! The controllers the XRD controller starts per XRD (one for its XRs, one
//! for its claims), kept by XRD name, started, refreshed and stopped the
//! same way.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Resolves when the child controller is asked to stop (or its registry is gone).
pub struct StopSignal(oneshot::Receiver<()>);

impl Future for StopSignal {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

struct Child<K, C> {
    /// What the controller runs for (the kinds it serves); a change starts a new one.
    kinds: K,
    context: Arc<C>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

/// Running child controllers of one sort, by XRD name.
pub struct Children<K, C> {
    /// What the children are, for logs ("XR controller").
    what: &'static str,
    running: Mutex<HashMap<String, Child<K, C>>>,
}

impl<K: Clone + PartialEq + std::fmt::Debug, C> Children<K, C> {
    pub fn new(what: &'static str) -> Children<K, C> {
        Children {
            what,
            running: Mutex::new(HashMap::new()),
        }
    }

    /// The kinds and context of the controller running for `xrd`.
    pub fn get(&self, xrd: &str) -> Option<(K, Arc<C>)> {
        self.lock()
            .get(xrd)
            .map(|c| (c.kinds.clone(), c.context.clone()))
    }

    /// Keeps a controller for `xrd` serving `kinds` running: one already
    /// serving them is only `refresh`ed; otherwise the previous one (whose
    /// kinds are returned) stops and `start` runs a new one with `context`
    /// until its stop signal.
    pub fn ensure<F, Fut>(
        &self,
        xrd: &str,
        kinds: K,
        refresh: impl FnOnce(&C),
        context: impl FnOnce() -> Arc<C>,
        start: F,
    ) -> Option<K>
    where
        F: FnOnce(Arc<C>, StopSignal) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut running = self.lock();
        if let Some(current) = running.get(xrd)
            && current.kinds == kinds
        {
            refresh(&current.context);
            return None;
        }
        let previous = running.remove(xrd).map(|c| self.halt(c));
        let context = context();
        let (stop, stopped) = oneshot::channel::<()>();
        let what = self.what;
        let name = xrd.to_string();
        let run = start(context.clone(), StopSignal(stopped));
        let task = tokio::spawn(async move {
            run.await;
            tracing::info!(xrd = name, "{what} stopped");
        });
        tracing::info!(xrd, kinds = ?kinds, "{what} started");
        running.insert(
            xrd.to_string(),
            Child {
                kinds,
                context,
                stop: Some(stop),
                task,
            },
        );
        previous
    }

    /// Stops the controller of `xrd`, returning the kinds it served.
    pub fn stop(&self, xrd: &str) -> Option<K> {
        let child = self.lock().remove(xrd);
        child.map(|c| self.halt(c))
    }

    /// Stops every controller and waits for running reconciles to finish,
    /// returning the kinds they served.
    pub async fn shutdown(&self) -> Vec<K> {
        let all: Vec<Child<K, C>> = self.lock().drain().map(|(_, c)| c).collect();
        let mut kinds = Vec::new();
        let mut tasks = Vec::new();
        for mut child in all {
            if let Some(stop) = child.stop.take() {
                let _ = stop.send(());
            }
            kinds.push(child.kinds);
            tasks.push(child.task);
        }
        for task in tasks {
            let _ = task.await;
        }
        kinds
    }

    fn halt(&self, mut child: Child<K, C>) -> K {
        if let Some(stop) = child.stop.take() {
            let _ = stop.send(());
        }
        tracing::info!(kinds = ?child.kinds, "stopping {}", self.what);
        child.kinds
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Child<K, C>>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
