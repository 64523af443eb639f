//! Leader election over a real API server's Leases.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use plait_controlplane::ControlPlane;
use plait_kube::LeaderElection;

const TIMEOUT: Duration = Duration::from_secs(60);

fn election(namespace: &str, identity: &str, lease_seconds: u64) -> LeaderElection {
    LeaderElection {
        lease_duration: Duration::from_secs(lease_seconds),
        renew_deadline: Duration::from_secs(lease_seconds * 2 / 3),
        retry_period: Duration::from_millis(500),
        ..LeaderElection::new(namespace, "plait-controller", identity)
    }
}

async fn holder(leases: &Api<Lease>) -> (Option<String>, i32) {
    let spec = leases.get("plait-controller").await.unwrap().spec.unwrap();
    (spec.holder_identity, spec.lease_transitions.unwrap_or(0))
}

#[tokio::test]
async fn one_replica_leads_and_a_released_lease_passes_to_the_standby() {
    let cluster = ControlPlane::shared().unwrap();
    let namespace = cluster.namespace("lease-handover").await;
    let client = cluster.client().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);

    let leader = election(&namespace, "replica-a", 15)
        .acquire(client.clone(), std::future::pending())
        .await
        .unwrap()
        .expect("the first replica acquires a free Lease");
    let standby_election = election(&namespace, "replica-b", 15);
    let standby_client = client.clone();
    let standby = tokio::spawn(async move {
        standby_election
            .acquire(standby_client, std::future::pending())
            .await
    });
    // Several of the standby's retries happen while the leader renews.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !standby.is_finished(),
        "the standby must wait while the leader renews"
    );
    assert_eq!(holder(&leases).await, (Some("replica-a".into()), 0));

    leader.release().await;
    let taken = tokio::time::timeout(TIMEOUT, standby)
        .await
        .expect("the standby takes a released Lease without waiting it out")
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(holder(&leases).await, (Some("replica-b".into()), 1));
    assert!(!taken.is_lost());
    taken.release().await;
}

#[tokio::test]
async fn a_lease_whose_holder_stopped_renewing_is_taken_over() {
    let cluster = ControlPlane::shared().unwrap();
    let namespace = cluster.namespace("lease-expired").await;
    let client = cluster.client().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    let stale = Lease {
        metadata: ObjectMeta {
            name: Some("plait-controller".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("crashed-replica".into()),
            lease_duration_seconds: Some(3),
            renew_time: Some(MicroTime(Timestamp::now())),
            lease_transitions: Some(4),
            ..LeaseSpec::default()
        }),
    };
    leases.create(&PostParams::default(), &stale).await.unwrap();

    let leadership = tokio::time::timeout(
        TIMEOUT,
        election(&namespace, "replica-c", 3).acquire(client.clone(), std::future::pending()),
    )
    .await
    .expect("a Lease nobody renews is taken after its duration")
    .unwrap()
    .unwrap();
    assert_eq!(holder(&leases).await, (Some("replica-c".into()), 5));
    leadership.release().await;
}

#[tokio::test]
async fn a_leader_whose_lease_is_taken_learns_it_lost() {
    let cluster = ControlPlane::shared().unwrap();
    let namespace = cluster.namespace("lease-lost").await;
    let client = cluster.client().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    let leadership = election(&namespace, "replica-d", 15)
        .acquire(client.clone(), std::future::pending())
        .await
        .unwrap()
        .unwrap();

    let mut lease = leases.get("plait-controller").await.unwrap();
    let spec = lease.spec.as_mut().unwrap();
    spec.holder_identity = Some("intruder".into());
    spec.renew_time = Some(MicroTime(Timestamp::now()));
    leases
        .replace("plait-controller", &PostParams::default(), &lease)
        .await
        .unwrap();

    tokio::time::timeout(TIMEOUT, leadership.lost())
        .await
        .expect("the leader notices at its next renewal");
    assert!(leadership.is_lost());
    assert_eq!(holder(&leases).await.0.as_deref(), Some("intruder"));
}

#[tokio::test]
async fn shutting_down_while_waiting_for_the_lease_returns_nothing() {
    let cluster = ControlPlane::shared().unwrap();
    let namespace = cluster.namespace("lease-shutdown").await;
    let client = cluster.client().await;
    let leader = election(&namespace, "replica-e", 15)
        .acquire(client.clone(), std::future::pending())
        .await
        .unwrap()
        .unwrap();
    let waited = election(&namespace, "replica-f", 15)
        .acquire(client, tokio::time::sleep(Duration::from_secs(1)))
        .await
        .unwrap();
    assert!(waited.is_none());
    leader.release().await;
}
