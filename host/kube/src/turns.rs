//! Reconcile turns shared round robin between tenants.
//!
//! At most `slots` XR reconciles run at once. When one ends, the next turn
//! goes to the next tenant in turn that has a reconcile waiting, so a tenant
//! with ten times more XRs (or XRs that keep failing and retrying) waits
//! behind its own work, not everyone else's. Function calls inside a
//! reconcile are shared by guest time on top of this
//! (`plait_functions::FairShare`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// The reconcile slots and who waits for them.
pub struct Turns {
    slots: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    running: usize,
    /// Waiting reconciles, by tenant, oldest first.
    waiting: BTreeMap<String, VecDeque<oneshot::Sender<()>>>,
    /// The tenant served last, where round robin resumes.
    last: Option<String>,
}

impl State {
    /// Hands the slot being freed to the next tenant in turn that still
    /// waits; true when someone took it.
    fn hand_over(&mut self) -> bool {
        loop {
            let next = match &self.last {
                Some(last) => self
                    .waiting
                    .range::<String, _>((
                        std::ops::Bound::Excluded(last.clone()),
                        std::ops::Bound::Unbounded,
                    ))
                    .next()
                    .or_else(|| self.waiting.iter().next())
                    .map(|(t, _)| t.clone()),
                None => self.waiting.keys().next().cloned(),
            };
            let Some(tenant) = next else {
                return false;
            };
            let queue = self.waiting.get_mut(&tenant);
            let sender = queue.and_then(VecDeque::pop_front);
            if self.waiting.get(&tenant).is_some_and(VecDeque::is_empty) {
                self.waiting.remove(&tenant);
            }
            self.last = Some(tenant);
            // A waiter that went away (its reconcile was cancelled) passes.
            if let Some(sender) = sender
                && sender.send(()).is_ok()
            {
                return true;
            }
        }
    }
}

/// A running reconcile's slot; dropping it passes the slot on.
pub struct Turn {
    turns: Arc<Turns>,
}

impl Turns {
    /// At most `slots` reconciles at once (at least one).
    pub fn new(slots: usize) -> Arc<Turns> {
        Arc::new(Turns {
            slots: slots.max(1),
            state: Mutex::new(State::default()),
        })
    }

    /// Waits for `tenant`'s turn.
    pub async fn turn(self: &Arc<Self>, tenant: &str) -> Turn {
        let waiter = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.running < self.slots && state.waiting.is_empty() {
                state.running += 1;
                None
            } else {
                let (sender, receiver) = oneshot::channel();
                state
                    .waiting
                    .entry(tenant.to_string())
                    .or_default()
                    .push_back(sender);
                Some(receiver)
            }
        };
        if let Some(receiver) = waiter {
            // The slot was handed over with `running` unchanged; a dropped
            // sender only happens when the queue itself is gone.
            let _ = receiver.await;
        }
        Turn {
            turns: self.clone(),
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut state = self
            .turns
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !state.hand_over() {
            state.running = state.running.saturating_sub(1);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn turns_alternate_between_tenants_whatever_their_backlog() {
        let turns = Turns::new(1);
        let first = turns.turn("a").await;
        let (order_tx, mut order_rx) = tokio::sync::mpsc::unbounded_channel();
        // Tenant a queues ten reconciles before tenant b queues two.
        let mut tasks = Vec::new();
        for (tenant, count) in [("a", 10), ("b", 2)] {
            for _ in 0..count {
                let (turns, order_tx) = (turns.clone(), order_tx.clone());
                tasks.push(tokio::spawn(async move {
                    let turn = turns.turn(tenant).await;
                    order_tx.send(tenant).unwrap();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    drop(turn);
                }));
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        drop(first);
        for task in tasks {
            task.await.unwrap();
        }
        drop(order_tx);
        let mut order = Vec::new();
        while let Some(tenant) = order_rx.recv().await {
            order.push(tenant);
        }
        // b's two reconciles are served within the first four turns.
        let b_done = order.iter().rposition(|t| *t == "b").unwrap();
        assert!(b_done <= 3, "{order:?}");
        assert_eq!(order.len(), 12);
    }

    #[tokio::test]
    async fn a_cancelled_waiter_passes_its_turn_on() {
        let turns = Turns::new(1);
        let held = turns.turn("a").await;
        let cancelled = tokio::spawn({
            let turns = turns.clone();
            async move {
                let _turn = turns.turn("b").await;
            }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        cancelled.abort();
        let _ = cancelled.await;
        let waiting = tokio::spawn({
            let turns = turns.clone();
            async move { drop(turns.turn("c").await) }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(held);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("c gets the turn b gave up")
            .unwrap();
    }
}
