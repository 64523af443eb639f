//! Leader election with a `coordination.k8s.io/v1` Lease, as client-go does
//! it: one replica holds the Lease and renews it; the others watch it and
//! take over once it has not changed for a whole lease duration.
//!
//! Expiry is judged by when *this* replica last saw the Lease change, never
//! by comparing the holder's clock with ours, so clock skew between replicas
//! cannot hand the Lease to two of them.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;
use tokio::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("Lease {namespace}/{name}: {source}")]
    Lease {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "leader election: the renew deadline ({renew_deadline:?}) must be shorter than the lease duration ({lease_duration:?}) and longer than the retry period ({retry_period:?})"
    )]
    Timing {
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    },
}

/// Where the Lease lives, who we are, and client-go's three durations.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    pub namespace: String,
    pub name: String,
    /// Unique per replica; the pod name plus a random suffix is typical.
    pub identity: String,
    /// How long a Lease that stopped changing is still honoured.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
}

impl LeaderElection {
    /// client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retries.
    pub fn new(namespace: &str, name: &str, identity: &str) -> LeaderElection {
        LeaderElection {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    pub(crate) fn check(&self) -> Result<(), LeaderError> {
        if self.renew_deadline >= self.lease_duration || self.retry_period >= self.renew_deadline {
            return Err(LeaderError::Timing {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        Ok(())
    }

    fn error(&self, source: kube::Error) -> LeaderError {
        LeaderError::Lease {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    /// Waits until this replica holds the Lease, then keeps renewing it in
    /// the background. `None` when `shutdown` resolved first.
    pub async fn acquire(
        &self,
        client: Client,
        shutdown: impl Future<Output = ()>,
    ) -> Result<Option<Leadership>, LeaderError> {
        self.check()?;
        let mut elector = Elector::new(self.clone(), client);
        tokio::pin!(shutdown);
        loop {
            match elector.try_acquire_or_renew().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "cannot acquire the leader Lease; retrying"),
            }
            tokio::select! {
                _ = &mut shutdown => return Ok(None),
                _ = tokio::time::sleep(self.retry_period) => {}
            }
        }
        tracing::info!(
            identity = self.identity,
            lease = format!("{}/{}", self.namespace, self.name),
            "became the leader"
        );
        let (lost_tx, lost_rx) = watch::channel(false);
        let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
        let renewing = tokio::spawn(elector.renew_until_lost_or_released(lost_tx, release_rx));
        Ok(Some(Leadership {
            lost: lost_rx,
            release: Some(release_tx),
            renewing,
        }))
    }
}

/// The Lease, held. Dropping it stops renewing without releasing.
pub struct Leadership {
    lost: watch::Receiver<bool>,
    release: Option<tokio::sync::oneshot::Sender<()>>,
    renewing: tokio::task::JoinHandle<()>,
}

impl Leadership {
    /// Resolves when the Lease could not be renewed within the renew deadline.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        let mut lost = self.lost.clone();
        async move {
            // An error means the renewing task ended, which it only does
            // after reporting a loss or on release.
            let _ = lost.wait_for(|lost| *lost).await;
        }
    }

    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Gives the Lease up so a standby replica takes over at once instead of
    /// after a lease duration.
    pub async fn release(mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.send(());
        }
        let _ = (&mut self.renewing).await;
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.renewing.abort();
    }
}

/// One replica's view of one Lease: client-go's elector.
pub(crate) struct Elector {
    config: LeaderElection,
    api: Api<Lease>,
    /// The holder and renew time last seen, and when we saw them change.
    observed: Option<(Option<String>, Option<MicroTime>, Instant)>,
}

impl Elector {
    pub(crate) fn new(config: LeaderElection, client: Client) -> Elector {
        Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
        }
    }

    /// One client-go `tryAcquireOrRenew`: true when we hold the Lease after it.
    pub(crate) async fn try_acquire_or_renew(&mut self) -> Result<bool, LeaderError> {
        let now = MicroTime(Timestamp::now());
        let config = &self.config;
        let lease_seconds = i32::try_from(config.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let Some(mut lease) = self
            .api
            .get_opt(&config.name)
            .await
            .map_err(|e| config.error(e))?
        else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(config.name.clone()),
                    namespace: Some(config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(config.identity.clone()),
                    lease_duration_seconds: Some(lease_seconds),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(e) => Err(config.error(e)),
            };
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let record = (holder.clone(), spec.renew_time.clone());
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|(h, r, _)| (h, r) != (&record.0, &record.1));
        if changed {
            self.observed = Some((record.0, record.1, Instant::now()));
        }
        let held_by_us = holder.as_deref() == Some(config.identity.as_str());
        if let (Some(_), false) = (&holder, held_by_us) {
            // The holder's own lease duration counts, as in client-go.
            let honoured = spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map_or(config.lease_duration, Duration::from_secs);
            let seen = self.observed.as_ref().map_or_else(Instant::now, |o| o.2);
            if seen.elapsed() < honoured {
                return Ok(false);
            }
        }
        if !held_by_us {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        spec.holder_identity = Some(config.identity.clone());
        spec.lease_duration_seconds = Some(lease_seconds);
        spec.renew_time = Some(now);
        // The resourceVersion from the read makes this a compare-and-swap:
        // if another replica wrote the Lease since, the replace conflicts.
        match self
            .api
            .replace(&config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(stored) => {
                let spec = stored.spec.unwrap_or_default();
                self.observed = Some((spec.holder_identity, spec.renew_time, Instant::now()));
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(e) => Err(config.error(e)),
        }
    }

    async fn renew_until_lost_or_released(
        mut self,
        lost: watch::Sender<bool>,
        mut release: tokio::sync::oneshot::Receiver<()>,
    ) {
        let mut last_renewed = Instant::now();
        loop {
            tokio::select! {
                _ = &mut release => {
                    self.release().await;
                    return;
                }
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
            let deadline = last_renewed + self.config.renew_deadline;
            match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                Ok(Ok(true)) => last_renewed = Instant::now(),
                Ok(Ok(false)) => {
                    tracing::error!(
                        identity = self.config.identity,
                        "the leader Lease was taken by another replica"
                    );
                    let _ = lost.send(true);
                    return;
                }
                Ok(Err(e)) => tracing::warn!(error = %e, "cannot renew the leader Lease; retrying"),
                Err(_) => {}
            }
            if Instant::now() >= deadline {
                tracing::error!(
                    identity = self.config.identity,
                    "could not renew the leader Lease within the renew deadline"
                );
                let _ = lost.send(true);
                return;
            }
        }
    }

    /// Empties the holder so the next replica need not wait out the lease.
    pub(crate) async fn release(&self) {
        let config = &self.config;
        let Ok(Some(mut lease)) = self.api.get_opt(&config.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        match self
            .api
            .replace(&config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => tracing::info!(
                identity = config.identity,
                lease = config.name,
                "released the Lease"
            ),
            Err(e) => tracing::warn!(error = %e, "cannot release the leader Lease"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_must_nest_as_client_go_requires() {
        let base = LeaderElection::new("ns", "lease", "me");
        let cases = [
            (15, 10, 2, true),
            (10, 10, 2, false),
            (15, 20, 2, false),
            (15, 10, 10, false),
        ];
        for (lease, renew, retry, ok) in cases {
            let config = LeaderElection {
                lease_duration: Duration::from_secs(lease),
                renew_deadline: Duration::from_secs(renew),
                retry_period: Duration::from_secs(retry),
                ..base.clone()
            };
            assert_eq!(config.check().is_ok(), ok, "{lease}/{renew}/{retry}");
        }
    }
}
