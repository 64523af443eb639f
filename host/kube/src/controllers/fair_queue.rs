//! Which XR and claim reconcile runs next: a queue fair between tenants.
//!
//! kube-runtime's controllers still collect triggers (deduplicated per
//! object) and time requeues and backoff per object, but hand every object
//! that is due to its reconcile at once (no concurrency limit of their own:
//! theirs picks the next object in hash order, which can pass over some
//! objects for as long as others keep coming back). Each reconcile then
//! waits here for its turn:
//!
//! - **Working slots.** At most `working` reconciles do work at once. A
//!   reconcile whose function call waits for a call slot gives its working
//!   slot back while it waits ([`Grant`] is a [`WaitNotice`]) and takes it
//!   again, without queueing, when its call may run: waiting for CPU holds
//!   nothing another tenant's reconcile needs.
//! - **In flight.** Each tenant has at most `per_tenant` reconciles admitted
//!   and not yet finished (working or waiting for CPU), so one tenant's
//!   waiting reconciles cannot fill the controller.
//! - **Who is next.** Among tenants with reconciles waiting (and under their
//!   limit), the one with the least virtual time goes next: each admitted
//!   reconcile adds the CPU its tenant's reconciles recently took (an
//!   estimate, corrected by what it really took when it ends). A tenant
//!   that becomes active starts level with the least-served active tenant,
//!   and no tenant's debt grows beyond [`MAX_DEBT`], so none waits behind
//!   more than a bounded number of others' reconciles. Within a tenant,
//!   reconciles go in the order they arrived.
//!
//! However it is held up, an admitted reconcile ends: [`FairQueue::run`]
//! abandons it past a limit, saying at which [`stage`] it was held up, so
//! the object is retried rather than kept waiting behind it for good.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use plait_functions::WaitNotice;
use plait_pipeline::Tenant;
use tokio::sync::oneshot;

use crate::vocabulary::metrics::metrics;

/// The estimate of a reconcile's CPU before a tenant's first one ends.
const FIRST_ESTIMATE: Duration = Duration::from_millis(10);
/// The least a reconcile is charged: virtual time always moves forward.
const LEAST_COST: Duration = Duration::from_micros(100);
/// How far a tenant's virtual time may run ahead of the least-served
/// active tenant's: a tenant whose reconciles took long waits at most this
/// much of others' CPU before its next one.
pub const MAX_DEBT: Duration = Duration::from_secs(5);
/// The weight of a reconcile's CPU in its tenant's estimate.
const ESTIMATE_WEIGHT: f64 = 0.25;

/// How many reconciles run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FairQueueLimits {
    /// Reconciles doing work (not waiting for a call slot) at once.
    pub working: usize,
    /// Reconciles of one tenant admitted and not finished, working or
    /// waiting for a call slot.
    pub per_tenant: usize,
}

/// The fair queue of reconciles.
pub struct FairQueue {
    limits: FairQueueLimits,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    working: usize,
    next_ticket: u64,
    tenants: HashMap<Tenant, Account>,
}

#[derive(Default)]
struct Account {
    /// Reconciles waiting, in arrival order.
    queue: VecDeque<Waiter>,
    /// Admitted and not finished.
    in_flight: usize,
    /// CPU charged to the tenant while active, in seconds.
    virtual_time: f64,
    /// Recent CPU per reconcile, in seconds.
    estimate: f64,
    /// The ticket of its last admission: among equals, the tenant served
    /// longest ago goes first.
    last_admitted: u64,
}

struct Waiter {
    ticket: u64,
    grant: oneshot::Sender<Grant>,
}

impl Account {
    fn is_active(&self) -> bool {
        !self.queue.is_empty() || self.in_flight > 0
    }
}

impl State {
    /// The least virtual time among active tenants.
    fn floor(&self) -> Option<f64> {
        self.tenants
            .values()
            .filter(|t| t.is_active())
            .map(|t| t.virtual_time)
            .min_by(f64::total_cmp)
    }

    /// The tenant whose first waiter goes next.
    fn next(&self, limits: FairQueueLimits) -> Option<Tenant> {
        self.tenants
            .iter()
            .filter(|(_, t)| !t.queue.is_empty() && t.in_flight < limits.per_tenant)
            .min_by(|(_, a), (_, b)| {
                a.virtual_time
                    .total_cmp(&b.virtual_time)
                    .then(a.last_admitted.cmp(&b.last_admitted))
            })
            .map(|(name, _)| name.clone())
    }
}

/// A reconcile's admission: dropping it (and every clone the pipeline
/// holds) ends it, charging the CPU recorded on it to its tenant.
#[derive(Clone)]
pub struct Permit(Arc<Grant>);

/// What one admitted reconcile holds.
pub struct Grant {
    fair_queue: Arc<FairQueue>,
    tenant: Tenant,
    /// What its tenant was charged on admission, in seconds.
    charged: f64,
    /// CPU recorded by the reconcile, in nanoseconds.
    cpu: AtomicU64,
    /// Its working slot is lent out while its call waits for a slot.
    lent: AtomicBool,
}

impl FairQueue {
    pub fn new(limits: FairQueueLimits) -> Arc<FairQueue> {
        Arc::new(FairQueue {
            limits: FairQueueLimits {
                working: limits.working.max(1),
                per_tenant: limits.per_tenant.max(1),
            },
            state: Mutex::new(State::default()),
        })
    }

    pub fn limits(&self) -> FairQueueLimits {
        self.limits
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for `tenant`'s turn to reconcile. Dropped while waiting, the
    /// reconcile leaves the queue.
    pub async fn admit(self: &Arc<Self>, tenant: &Tenant) -> Permit {
        loop {
            let (sender, receiver) = oneshot::channel();
            let ticket = self.enqueue(tenant, sender);
            let mut leave = Leave {
                fair_queue: self,
                tenant,
                ticket,
                waiting: true,
            };
            self.dispatch();
            let granted = receiver.await;
            leave.waiting = false;
            // A waiter's sender is only dropped unsent by `Leave`, when
            // this future is dropped; should it ever be, queue again.
            if let Ok(grant) = granted {
                return Permit(Arc::new(grant));
            }
        }
    }

    /// Runs `reconcile` with its permit once it is `tenant`'s turn; past
    /// `limit` after its admission it is abandoned. The reconcile's state
    /// is created (and boxed) only once it is admitted, so a backlog of
    /// waiting reconciles holds only what waiting takes.
    pub async fn run<T, F, Fut>(
        self: &Arc<Self>,
        tenant: &Tenant,
        limit: Duration,
        reconcile: F,
    ) -> Result<T, Abandoned>
    where
        F: FnOnce(Permit) -> Fut,
        Fut: Future<Output = T>,
    {
        let asked = Instant::now();
        let permit = self.admit(tenant).await;
        metrics().admitted(tenant, asked.elapsed());
        let stage = Arc::new(Mutex::new(ADMITTED));
        let running = STAGE.scope(stage.clone(), Box::pin(reconcile(permit)));
        tokio::time::timeout(limit, running)
            .await
            .map_err(|_| Abandoned {
                after: limit,
                stage: *stage.lock().unwrap_or_else(PoisonError::into_inner),
            })
    }

    /// Puts a waiter of `tenant` at the back of its tenant's line.
    fn enqueue(&self, tenant: &Tenant, grant: oneshot::Sender<Grant>) -> u64 {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        let floor = state.floor();
        let entry = state
            .tenants
            .entry(tenant.clone())
            .or_insert_with(|| Account {
                estimate: FIRST_ESTIMATE.as_secs_f64(),
                ..Account::default()
            });
        if !entry.is_active()
            && let Some(floor) = floor
        {
            entry.virtual_time = entry.virtual_time.max(floor);
        }
        entry.queue.push_back(Waiter { ticket, grant });
        ticket
    }

    /// Admits waiters while there is room.
    fn dispatch(self: &Arc<Self>) {
        // Grants whose waiter has gone are dropped after the lock is
        // released: their drop ends them, which locks again.
        let mut unclaimed = Vec::new();
        {
            let mut state = self.lock();
            while state.working < self.limits.working {
                let Some(name) = state.next(self.limits) else {
                    break;
                };
                let ticket = state.next_ticket;
                state.next_ticket += 1;
                let floor = state.floor().unwrap_or_default();
                let Some(tenant) = state.tenants.get_mut(&name) else {
                    break;
                };
                let Some(waiter) = tenant.queue.pop_front() else {
                    break;
                };
                tenant.in_flight += 1;
                tenant.last_admitted = ticket;
                let charged = tenant.estimate.max(LEAST_COST.as_secs_f64());
                tenant.virtual_time =
                    (tenant.virtual_time + charged).min(floor + MAX_DEBT.as_secs_f64());
                state.working += 1;
                let grant = Grant {
                    fair_queue: self.clone(),
                    tenant: name,
                    charged,
                    cpu: AtomicU64::new(0),
                    lent: AtomicBool::new(false),
                };
                if let Err(grant) = waiter.grant.send(grant) {
                    unclaimed.push(grant);
                }
            }
        }
        drop(unclaimed);
    }

    /// Ends an admitted reconcile of `tenant` that took `cpu`.
    fn finish(self: &Arc<Self>, grant: &Grant) {
        {
            let mut state = self.lock();
            if !grant.lent.load(Ordering::SeqCst) {
                state.working = state.working.saturating_sub(1);
            }
            let floor = state.floor().unwrap_or_default();
            let cpu = Duration::from_nanos(grant.cpu.load(Ordering::Relaxed)).as_secs_f64();
            if let Some(tenant) = state.tenants.get_mut(&grant.tenant) {
                tenant.in_flight = tenant.in_flight.saturating_sub(1);
                tenant.estimate += ESTIMATE_WEIGHT * (cpu - tenant.estimate);
                let corrected =
                    tenant.virtual_time + cpu.max(LEAST_COST.as_secs_f64()) - grant.charged;
                tenant.virtual_time = corrected.clamp(0.0, floor + MAX_DEBT.as_secs_f64());
                if !tenant.is_active() {
                    state.tenants.remove(&grant.tenant);
                }
            }
        }
        self.dispatch();
    }

    /// Reconciles waiting, admitted and working, for metrics and tests.
    pub fn counts(&self) -> FairQueueCounts {
        let state = self.lock();
        FairQueueCounts {
            waiting: state.tenants.values().map(|t| t.queue.len()).sum(),
            in_flight: state.tenants.values().map(|t| t.in_flight).sum(),
            working: state.working,
        }
    }
}

/// A snapshot of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FairQueueCounts {
    pub waiting: usize,
    pub in_flight: usize,
    pub working: usize,
}

/// Takes a waiter out of the queue when its reconcile is dropped before its turn.
struct Leave<'a> {
    fair_queue: &'a Arc<FairQueue>,
    tenant: &'a Tenant,
    ticket: u64,
    waiting: bool,
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        if !self.waiting {
            return;
        }
        let mut state = self.fair_queue.lock();
        if let Some(tenant) = state.tenants.get_mut(self.tenant) {
            tenant.queue.retain(|w| w.ticket != self.ticket);
            if !tenant.is_active() {
                state.tenants.remove(self.tenant);
            }
        }
    }
}

impl Permit {
    /// Counts `cpu` more against the reconcile's tenant when it ends.
    pub fn add_cpu(&self, cpu: Duration) {
        let nanos = u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX);
        self.0.cpu.fetch_add(nanos, Ordering::Relaxed);
    }

    /// What the reconcile's function calls tell while they wait for a slot.
    pub fn notice(&self) -> Arc<dyn WaitNotice> {
        self.0.clone()
    }

    pub fn tenant(&self) -> &Tenant {
        &self.0.tenant
    }
}

impl WaitNotice for Grant {
    fn waiting(&self) {
        if !self.lent.swap(true, Ordering::SeqCst) {
            {
                let mut state = self.fair_queue.lock();
                state.working = state.working.saturating_sub(1);
            }
            self.fair_queue.dispatch();
        }
    }

    fn resumed(&self) {
        if self.lent.swap(false, Ordering::SeqCst) {
            self.fair_queue.lock().working += 1;
        }
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let fair_queue = self.fair_queue.clone();
        fair_queue.finish(self);
    }
}

/// The stage of a reconcile that has just been admitted.
const ADMITTED: &str = "admitted";

tokio::task_local! {
    /// Where the reconcile this task runs is.
    static STAGE: Arc<Mutex<&'static str>>;
}

/// Notes that the admitted reconcile running on this task has reached
/// `stage` (e.g. "running its pipeline"): if it is abandoned, its error
/// names the last stage it reached.
pub fn stage(stage: &'static str) {
    // Outside an admitted reconcile there is nothing to note it on.
    let _ = STAGE.try_with(|current| {
        *current.lock().unwrap_or_else(PoisonError::into_inner) = stage;
    });
}

/// An admitted reconcile that did not end within its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("did not end within {after:?} (held up {stage}); abandoned, to be retried")]
pub struct Abandoned {
    pub after: Duration,
    /// The last stage the reconcile reached.
    pub stage: &'static str,
}

/// CPU time the calling thread has used.
pub fn thread_cpu() -> Duration {
    let spent = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(spent.tv_sec).unwrap_or_default(),
        u32::try_from(spent.tv_nsec).unwrap_or_default(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// The tenant of namespace `name`.
    fn ns(name: &str) -> Tenant {
        Tenant::Namespace(name.into())
    }

    fn fair_queue(working: usize, per_tenant: usize) -> Arc<FairQueue> {
        FairQueue::new(FairQueueLimits {
            working,
            per_tenant,
        })
    }

    /// Lets spawned tasks run until the queue holds `waiting`.
    async fn until_waiting(fair_queue: &FairQueue, waiting: usize) {
        for _ in 0..10_000 {
            if fair_queue.counts().waiting == waiting {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("never {waiting} waiting: {:?}", fair_queue.counts());
    }

    /// Starts `n` reconciles of `tenant` that wait for their turn; each
    /// reports its label once admitted and holds its permit until told.
    fn waiters(
        fair_queue: &Arc<FairQueue>,
        tenant: &str,
        labels: &[&str],
        admitted: &tokio::sync::mpsc::UnboundedSender<(String, Permit)>,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        labels
            .iter()
            .map(|label| {
                let (fair_queue, tenant, label, admitted) = (
                    fair_queue.clone(),
                    tenant.to_string(),
                    label.to_string(),
                    admitted.clone(),
                );
                tokio::spawn(async move {
                    let permit = fair_queue.admit(&ns(&tenant)).await;
                    admitted.send((label, permit)).unwrap();
                })
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn an_admitted_reconcile_held_up_past_its_limit_is_abandoned_naming_its_stage() {
        let limit = Duration::from_secs(150);
        // (how long the reconcile takes, the stages it reaches, result)
        let cases: [(Duration, &[&'static str], Result<u32, Abandoned>); 3] = [
            (Duration::from_secs(1), &["running its pipeline"], Ok(7)),
            (
                Duration::from_secs(3600),
                &["adding its finalizer", "selecting its Composition revision"],
                Err(Abandoned {
                    after: limit,
                    stage: "selecting its Composition revision",
                }),
            ),
            (
                Duration::from_secs(3600),
                &[],
                Err(Abandoned {
                    after: limit,
                    stage: ADMITTED,
                }),
            ),
        ];
        for (takes, stages, expected) in cases {
            let fair_queue = fair_queue(1, 1);
            let ran = fair_queue
                .run(&ns("team-a"), limit, |_permit| async move {
                    for reached in stages {
                        stage(reached);
                    }
                    tokio::time::sleep(takes).await;
                    7
                })
                .await;
            assert_eq!(ran, expected, "{takes:?} {stages:?}");
            let counts = fair_queue.counts();
            assert_eq!(
                (counts.in_flight, counts.working),
                (0, 0),
                "{takes:?}: permit freed"
            );
        }
    }

    /// kube-runtime's controller with a concurrency limit takes the first
    /// object its pending set yields that is not running: with objects that
    /// come back as soon as they finish, that is the same object each time.
    fn hash_order_waits(objects: usize, picks: usize) -> usize {
        let mut pending: HashSet<String> = (0..objects).map(|i| format!("xr-{i:03}")).collect();
        let mut waited: HashMap<String, usize> = HashMap::new();
        for _ in 0..picks {
            let Some(next) = pending.iter().next().cloned() else {
                break;
            };
            pending.remove(&next);
            for other in &pending {
                *waited.entry(other.clone()).or_default() += 1;
            }
            waited.insert(next.clone(), 0);
            // Requeued at once, as an XR that created resources is.
            pending.insert(next);
        }
        waited.values().copied().max().unwrap_or_default()
    }

    #[tokio::test]
    async fn no_reconcile_waits_behind_more_than_a_bounded_number_of_others() {
        const OBJECTS: usize = 40;
        const ROUNDS: usize = 25;
        // The same load picked in hash order leaves some object waiting
        // through every pick.
        assert!(hash_order_waits(OBJECTS, OBJECTS * ROUNDS) >= OBJECTS * ROUNDS - 1);

        // Here every object comes back as soon as it is done, in two
        // tenants; each waits at most for the others once round.
        let fair_queue = fair_queue(2, 16);
        let admissions = Arc::new(AtomicUsize::new(0));
        let worst = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..OBJECTS {
            let tenant = if i % 4 == 0 { "b" } else { "a" };
            let (fair_queue, admissions, worst) =
                (fair_queue.clone(), admissions.clone(), worst.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    let asked = admissions.load(Ordering::SeqCst);
                    let permit = fair_queue.admit(&ns(tenant)).await;
                    let others = admissions.fetch_add(1, Ordering::SeqCst) - asked;
                    worst.fetch_max(others, Ordering::SeqCst);
                    permit.add_cpu(Duration::from_millis(1));
                    tokio::task::yield_now().await;
                    drop(permit);
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(admissions.load(Ordering::SeqCst), OBJECTS * ROUNDS);
        let worst = worst.load(Ordering::SeqCst);
        assert!(
            worst <= 2 * OBJECTS,
            "an object waited behind {worst} others"
        );
    }

    #[tokio::test]
    async fn reconciles_of_one_tenant_go_in_the_order_they_arrived() {
        let fair_queue = fair_queue(1, 16);
        let held = fair_queue.admit(&ns("a")).await;
        let (sender, mut admitted) = tokio::sync::mpsc::unbounded_channel();
        let labels = ["1", "2", "3", "4", "5"];
        for (i, label) in labels.iter().enumerate() {
            waiters(&fair_queue, "a", &[label], &sender);
            until_waiting(&fair_queue, i + 1).await;
        }
        drop(held);
        let mut order = Vec::new();
        while order.len() < labels.len() {
            let (label, permit) = admitted.recv().await.unwrap();
            order.push(label);
            drop(permit);
        }
        assert_eq!(order, labels);
    }

    #[tokio::test]
    async fn a_tenant_that_takes_more_cpu_gets_fewer_turns_but_still_some() {
        // (A's CPU per reconcile, B's, least share of B's turns, least of A's)
        let cases = [
            (Duration::from_millis(1), Duration::from_millis(1), 0.4, 0.4),
            (
                Duration::from_millis(40),
                Duration::from_millis(1),
                0.9,
                0.005,
            ),
        ];
        for (a_cpu, b_cpu, b_least, a_least) in cases {
            let fair_queue = fair_queue(1, 16);
            let turns: Arc<Mutex<Vec<&str>>> = Arc::default();
            let mut tasks = Vec::new();
            for (tenant, cpu) in [("a", a_cpu), ("a", a_cpu), ("b", b_cpu), ("b", b_cpu)] {
                let (fair_queue, turns) = (fair_queue.clone(), turns.clone());
                tasks.push(tokio::spawn(async move {
                    loop {
                        let permit = fair_queue.admit(&ns(tenant)).await;
                        let full = {
                            let mut turns = turns.lock().unwrap();
                            let full = turns.len() >= 400;
                            if !full {
                                turns.push(tenant);
                            }
                            full
                        };
                        if full {
                            break;
                        }
                        permit.add_cpu(cpu);
                        tokio::task::yield_now().await;
                    }
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
            let turns = turns.lock().unwrap();
            let share =
                |t: &str| turns.iter().filter(|x| **x == t).count() as f64 / turns.len() as f64;
            assert!(
                share("b") >= b_least,
                "{a_cpu:?}/{b_cpu:?}: b had {}",
                share("b")
            );
            assert!(
                share("a") >= a_least,
                "{a_cpu:?}/{b_cpu:?}: a had {}",
                share("a")
            );
        }
    }

    #[tokio::test]
    async fn a_reconcile_dropped_while_it_waits_leaves_the_queue() {
        let fair_queue = fair_queue(1, 16);
        let held = fair_queue.admit(&ns("a")).await;
        let gone = tokio::spawn({
            let fair_queue = fair_queue.clone();
            async move {
                let _never = fair_queue.admit(&ns("b")).await;
            }
        });
        until_waiting(&fair_queue, 1).await;
        gone.abort();
        let _ = gone.await;
        assert_eq!(fair_queue.counts().waiting, 0);
        drop(held);
        // The slot is free: the next reconcile goes at once.
        let next = tokio::time::timeout(Duration::from_secs(5), fair_queue.admit(&ns("c"))).await;
        assert!(next.is_ok());
        assert_eq!(
            fair_queue.counts(),
            FairQueueCounts {
                waiting: 0,
                in_flight: 1,
                working: 1
            }
        );
    }

    #[tokio::test]
    async fn a_tenant_that_left_is_forgotten_and_returns_level_with_the_others() {
        let fair_queue = fair_queue(1, 16);
        // A runs up a debt, then has nothing left to reconcile.
        for _ in 0..3 {
            let permit = fair_queue.admit(&ns("a")).await;
            permit.add_cpu(Duration::from_secs(2));
        }
        assert!(
            fair_queue.lock().tenants.is_empty(),
            "an idle tenant is forgotten"
        );
        // B is busy with reconciles of 10 ms; A comes back and is not held
        // back by its past: it goes within B's next two.
        let held = fair_queue.admit(&ns("b")).await;
        held.add_cpu(Duration::from_millis(10));
        let (sender, mut admitted) = tokio::sync::mpsc::unbounded_channel();
        let bs: Vec<String> = (0..10).map(|i| format!("b{i}")).collect();
        let bs: Vec<&str> = bs.iter().map(String::as_str).collect();
        waiters(&fair_queue, "b", &bs, &sender);
        until_waiting(&fair_queue, 10).await;
        waiters(&fair_queue, "a", &["a"], &sender);
        until_waiting(&fair_queue, 11).await;
        drop(held);
        let mut order = Vec::new();
        while order.len() < 11 {
            let (label, permit) = admitted.recv().await.unwrap();
            permit.add_cpu(Duration::from_millis(10));
            order.push(label);
            drop(permit);
        }
        let a_at = order.iter().position(|l| l == "a").unwrap();
        assert!(a_at <= 2, "{order:?}");
    }

    #[tokio::test]
    async fn a_reconcile_waiting_for_a_call_slot_lends_its_working_slot() {
        let fair_queue = fair_queue(1, 16);
        let a = fair_queue.admit(&ns("a")).await;
        let (sender, mut admitted) = tokio::sync::mpsc::unbounded_channel();
        waiters(&fair_queue, "b", &["b"], &sender);
        until_waiting(&fair_queue, 1).await;
        // A's call waits for a slot: B may work meanwhile.
        a.notice().waiting();
        let (_, b) = admitted.recv().await.unwrap();
        assert_eq!(fair_queue.counts().working, 1);
        // A's call runs: A works again at once, beside B.
        a.notice().resumed();
        assert_eq!(fair_queue.counts().working, 2);
        waiters(&fair_queue, "c", &["c"], &sender);
        until_waiting(&fair_queue, 1).await;
        drop(b);
        assert_eq!(
            fair_queue.counts().waiting,
            1,
            "over the limit, C still waits"
        );
        drop(a);
        let (label, _) = admitted.recv().await.unwrap();
        assert_eq!(label, "c");
    }

    #[tokio::test]
    async fn a_tenant_at_its_limit_leaves_working_slots_to_others() {
        let fair_queue = fair_queue(4, 1);
        let a = fair_queue.admit(&ns("a")).await;
        a.notice().waiting();
        let (sender, mut admitted) = tokio::sync::mpsc::unbounded_channel();
        waiters(&fair_queue, "a", &["a2"], &sender);
        waiters(&fair_queue, "b", &["b"], &sender);
        let (label, _b) = admitted.recv().await.unwrap();
        assert_eq!(label, "b");
        assert_eq!(
            fair_queue.counts().waiting,
            1,
            "A's second waits for its first"
        );
        drop(a);
        let (label, _) = admitted.recv().await.unwrap();
        assert_eq!(label, "a2");
    }
}
