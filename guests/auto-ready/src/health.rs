//! Readiness checks for well-known Kubernetes kinds, as function-auto-ready's
//! `healthchecks` package defines them (ArgoCD-style).
//!
//! Upstream reads some kinds through `unstructured` accessors and others by
//! converting the object to its typed Go struct first. The two fail
//! differently on malformed objects, so both styles are kept: [`nested`] and
//! friends mirror `unstructured.Nested*`, while [`Typed`] mirrors a typed
//! conversion, where a field of the wrong JSON type makes the whole check fail.

use std::cmp::Ordering;

use serde_json::Value;

/// A check that decides whether an observed object is ready.
pub type HealthCheck = fn(&Value) -> bool;

/// The check registered for an exact group, version and kind, if any.
pub fn health_check(group: &str, version: &str, kind: &str) -> Option<HealthCheck> {
    let check: HealthCheck = match (group, version, kind) {
        ("apps", "v1", "Deployment") => deployment,
        ("apps", "v1", "StatefulSet") => stateful_set,
        ("apps", "v1", "DaemonSet") => daemon_set,
        ("apps", "v1", "ReplicaSet") => replica_set,
        ("batch", "v1", "Job") => job,
        ("batch", "v1", "CronJob") => cron_job,
        ("", "v1", "Pod") => pod,
        ("", "v1", "Service") => service,
        ("networking.k8s.io", "v1", "Ingress") => ingress,
        ("autoscaling", "v2", "HorizontalPodAutoscaler") => horizontal_pod_autoscaler,
        ("", "v1", "PersistentVolumeClaim") => persistent_volume_claim,
        // These kinds have no meaningful status: existing is being ready.
        ("", "v1", "ConfigMap" | "Secret" | "ServiceAccount" | "Namespace")
        | ("rbac.authorization.k8s.io", "v1", "Role" | "RoleBinding") => exists,
        _ => return None,
    };
    Some(check)
}

fn exists(_: &Value) -> bool {
    true
}

// ---- unstructured accessors -------------------------------------------------

/// `unstructured.NestedFieldNoCopy`: the value at `path`, or `None` when a
/// segment is missing or a parent is not an object.
fn nested<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(obj, |value, field| value.as_object()?.get(*field))
}

/// function-auto-ready's `getInt64Field`: any JSON number, truncated to an integer.
fn nested_int(obj: &Value, path: &[&str]) -> Option<i64> {
    number_as_i64(nested(obj, path)?)
}

fn number_as_i64(value: &Value) -> Option<i64> {
    let number = value.as_number()?;
    number
        .as_i64()
        .or_else(|| {
            number
                .as_u64()
                .map(|u| i64::try_from(u).unwrap_or(i64::MAX))
        })
        // Go converts float64 to int64 by truncation, saturating here where Go's result is undefined.
        .or_else(|| number.as_f64().map(|f| f as i64))
}

fn nested_str<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    nested(obj, path)?.as_str()
}

fn nested_array<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Vec<Value>> {
    nested(obj, path)?.as_array()
}

// ---- typed-conversion accessors ---------------------------------------------

/// The object as a typed Kubernetes struct would see it: absent and `null`
/// fields read as zero values, and a field of the wrong JSON type fails the
/// conversion (upstream then reports the object as not ready).
struct Typed<'a>(&'a Value);

/// A field whose JSON type does not fit its Go type.
struct Mismatch;

impl<'a> Typed<'a> {
    fn field(&self, path: &[&str]) -> Result<Option<&'a Value>, Mismatch> {
        let mut value = self.0;
        for field in path {
            match value {
                Value::Object(map) => match map.get(*field) {
                    Some(next) => value = next,
                    None => return Ok(None),
                },
                Value::Null => return Ok(None),
                _ => return Err(Mismatch),
            }
        }
        Ok((!value.is_null()).then_some(value))
    }

    fn int(&self, path: &[&str]) -> Result<Option<i64>, Mismatch> {
        self.field(path)?
            .map(|v| number_as_i64(v).ok_or(Mismatch))
            .transpose()
    }

    fn string(&self, path: &[&str]) -> Result<&'a str, Mismatch> {
        match self.field(path)? {
            None => Ok(""),
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(Mismatch),
        }
    }

    fn bool(&self, path: &[&str]) -> Result<Option<bool>, Mismatch> {
        self.field(path)?
            .map(|v| v.as_bool().ok_or(Mismatch))
            .transpose()
    }

    fn array(&self, path: &[&str]) -> Result<&'a [Value], Mismatch> {
        match self.field(path)? {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(Mismatch),
        }
    }

    fn time(&self, path: &[&str]) -> Result<Option<Timestamp>, Mismatch> {
        match self.field(path)? {
            None => Ok(None),
            Some(Value::String(s)) => Timestamp::parse_rfc3339(s).map(Some).ok_or(Mismatch),
            Some(_) => Err(Mismatch),
        }
    }

    /// `status.conditions` as (type, status) pairs.
    fn conditions(&self) -> Result<Vec<(&'a str, &'a str)>, Mismatch> {
        self.array(&["status", "conditions"])?
            .iter()
            .map(|condition| {
                let condition = Typed(condition);
                if !matches!(condition.0, Value::Object(_) | Value::Null) {
                    return Err(Mismatch);
                }
                Ok((condition.string(&["type"])?, condition.string(&["status"])?))
            })
            .collect()
    }
}

// ---- checks ----------------------------------------------------------------

/// Every replica is updated and available, and the `Available` condition is `True`.
fn deployment(obj: &Value) -> bool {
    let spec_replicas = nested_int(obj, &["spec", "replicas"]).unwrap_or(1);
    let (Some(updated), Some(available)) = (
        nested_int(obj, &["status", "updatedReplicas"]),
        nested_int(obj, &["status", "availableReplicas"]),
    ) else {
        return false;
    };
    if spec_replicas != updated || spec_replicas != available {
        return false;
    }
    nested_array(obj, &["status", "conditions"]).is_some_and(|conditions| {
        conditions.iter().any(|c| {
            nested_str(c, &["type"]) == Some("Available")
                && nested_str(c, &["status"]) == Some("True")
        })
    })
}

/// Every replica is ready and current, and the current revision is the update revision.
fn stateful_set(obj: &Value) -> bool {
    let spec_replicas = nested_int(obj, &["spec", "replicas"]).unwrap_or(1);
    let (Some(ready), Some(current)) = (
        nested_int(obj, &["status", "readyReplicas"]),
        nested_int(obj, &["status", "currentReplicas"]),
    ) else {
        return false;
    };
    if spec_replicas != ready || spec_replicas != current {
        return false;
    }
    match (
        nested_str(obj, &["status", "currentRevision"]),
        nested_str(obj, &["status", "updateRevision"]),
    ) {
        (Some(current), Some(update)) => current == update,
        _ => false,
    }
}

/// Every desired pod is scheduled, ready, updated and available.
fn daemon_set(obj: &Value) -> bool {
    let field = |name| nested_int(obj, &["status", name]);
    let (Some(desired), Some(ready), Some(updated), Some(available)) = (
        field("desiredNumberScheduled"),
        field("numberReady"),
        field("updatedNumberScheduled"),
        field("numberAvailable"),
    ) else {
        return false;
    };
    desired == ready && updated == desired && available == desired
}

/// The controller has seen the latest generation, no replica failed, and
/// enough replicas are available.
fn replica_set(obj: &Value) -> bool {
    let rs = Typed(obj);
    let check = || -> Result<bool, Mismatch> {
        let generation = rs.int(&["metadata", "generation"])?.unwrap_or(0);
        let observed_generation = rs.int(&["status", "observedGeneration"])?.unwrap_or(0);
        let conditions = rs.conditions()?;
        let desired = rs.int(&["spec", "replicas"])?.unwrap_or(1);
        let available = rs.int(&["status", "availableReplicas"])?.unwrap_or(0);
        if observed_generation < generation {
            return Ok(false);
        }
        if conditions.contains(&("ReplicaFailure", "True")) {
            return Ok(false);
        }
        Ok(available >= desired)
    };
    check().unwrap_or(false)
}

/// The first decisive condition wins: `Failed` or `Suspended` means not
/// ready, `Complete` means ready.
fn job(obj: &Value) -> bool {
    let Ok(conditions) = Typed(obj).conditions() else {
        return false;
    };
    for (type_, status) in conditions {
        match (type_, status) {
            ("Failed" | "Suspended", "True") => return false,
            ("Complete", "True") => return true,
            _ => {}
        }
    }
    false
}

/// Suspended, running a job, or its last scheduled run succeeded.
fn cron_job(obj: &Value) -> bool {
    let cron = Typed(obj);
    let check = || -> Result<bool, Mismatch> {
        let suspend = cron.bool(&["spec", "suspend"])?;
        let last_schedule = cron.time(&["status", "lastScheduleTime"])?;
        let active = cron.array(&["status", "active"])?;
        let last_successful = cron.time(&["status", "lastSuccessfulTime"])?;
        if suspend == Some(true) {
            return Ok(true);
        }
        let Some(last_schedule) = last_schedule else {
            return Ok(false);
        };
        if !active.is_empty() {
            return Ok(true);
        }
        Ok(last_successful.is_some_and(|success| success >= last_schedule))
    };
    check().unwrap_or(false)
}

/// Succeeded, or running with `restartPolicy: Always` and the `Ready` condition `True`.
fn pod(obj: &Value) -> bool {
    let pod = Typed(obj);
    let check = || -> Result<bool, Mismatch> {
        let phase = pod.string(&["status", "phase"])?;
        let restart_policy = pod.string(&["spec", "restartPolicy"])?;
        let conditions = pod.conditions()?;
        Ok(match phase {
            "Succeeded" => true,
            "Running" => restart_policy == "Always" && conditions.contains(&("Ready", "True")),
            _ => false,
        })
    };
    check().unwrap_or(false)
}

/// A `LoadBalancer` Service needs an ingress point; every other type is ready at once.
fn service(obj: &Value) -> bool {
    let service_type = nested_str(obj, &["spec", "type"]).unwrap_or("ClusterIP");
    service_type != "LoadBalancer" || has_load_balancer_ingress(obj)
}

/// The load balancer has assigned an ingress point.
fn ingress(obj: &Value) -> bool {
    has_load_balancer_ingress(obj)
}

fn has_load_balancer_ingress(obj: &Value) -> bool {
    nested_array(obj, &["status", "loadBalancer", "ingress"]).is_some_and(|i| !i.is_empty())
}

/// The first decisive condition wins: a failure condition means not ready,
/// `ScalingActive` or `ScalingLimited` means ready.
fn horizontal_pod_autoscaler(obj: &Value) -> bool {
    let Ok(conditions) = Typed(obj).conditions() else {
        return false;
    };
    for (type_, status) in conditions {
        if status != "True" {
            continue;
        }
        match type_ {
            "FailedGetScale"
            | "FailedUpdateScale"
            | "FailedGetResourceMetric"
            | "InvalidSelector" => {
                return false;
            }
            "ScalingActive" | "ScalingLimited" => return true,
            _ => {}
        }
    }
    false
}

/// The claim is bound to a volume.
fn persistent_volume_claim(obj: &Value) -> bool {
    Typed(obj)
        .string(&["status", "phase"])
        .is_ok_and(|phase| phase == "Bound")
}

// ---- time ------------------------------------------------------------------

/// An instant parsed from an RFC 3339 timestamp, as `metav1.Time` accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Timestamp {
    seconds: i64,
    nanos: u32,
}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.seconds, self.nanos).cmp(&(other.seconds, other.nanos))
    }
}

impl Timestamp {
    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    fn parse_rfc3339(s: &str) -> Option<Timestamp> {
        let b = s.as_bytes();
        let digits = |range: std::ops::Range<usize>| -> Option<i64> {
            let part = b.get(range)?;
            part.iter()
                .all(u8::is_ascii_digit)
                .then(|| part.iter().fold(0_i64, |n, d| n * 10 + i64::from(d - b'0')))
        };
        let year = digits(0..4)?;
        let month = digits(5..7)?;
        let day = digits(8..10)?;
        let hour = digits(11..13)?;
        let minute = digits(14..16)?;
        let second = digits(17..19)?;
        if b.get(4) != Some(&b'-')
            || b.get(7) != Some(&b'-')
            || b.get(10) != Some(&b'T')
            || b.get(13) != Some(&b':')
            || b.get(16) != Some(&b':')
        {
            return None;
        }
        if !(1..=12).contains(&month)
            || day < 1
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || second > 59
        {
            return None;
        }
        let mut rest = &s[19..];
        let mut nanos = 0_u32;
        if let Some(fraction) = rest.strip_prefix('.') {
            let len = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if len == 0 || len > 9 {
                return None;
            }
            let value: u32 = fraction[..len].parse().ok()?;
            nanos = value * 10_u32.pow(9 - len as u32);
            rest = &fraction[len..];
        }
        let offset = match rest.as_bytes() {
            [b'Z'] => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let two = |a: &u8, b: &u8| -> Option<i64> {
                    (a.is_ascii_digit() && b.is_ascii_digit())
                        .then(|| i64::from(a - b'0') * 10 + i64::from(b - b'0'))
                };
                let (h, m) = (two(h1, h2)?, two(m1, m2)?);
                if h > 23 || m > 59 {
                    return None;
                }
                let offset = h * 3600 + m * 60;
                if *sign == b'-' { -offset } else { offset }
            }
            _ => return None,
        };
        let days = days_from_civil(year, month, day);
        Some(Timestamp {
            seconds: days * 86_400 + hour * 3600 + minute * 60 + second - offset,
            nanos,
        })
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(api_version: &str, kind: &str) -> HealthCheck {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        health_check(group, version, kind).unwrap()
    }

    #[test]
    fn kinds_without_a_check_are_not_registered() {
        for (group, version, kind) in [
            ("apps", "v1beta1", "Deployment"),
            ("autoscaling", "v1", "HorizontalPodAutoscaler"),
            ("", "v1", "Node"),
            ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
            ("example.org", "v1", "Deployment"),
        ] {
            assert!(
                health_check(group, version, kind).is_none(),
                "{group}/{version} {kind}"
            );
        }
    }

    /// (case, apiVersion, kind, observed object, ready?)
    type Case = (&'static str, &'static str, &'static str, Value, bool);

    fn run(cases: Vec<Case>) {
        for (name, api_version, kind, obj, want) in cases {
            assert_eq!(check(api_version, kind)(&obj), want, "{name}");
        }
    }

    #[test]
    fn deployment_needs_all_replicas_updated_available_and_the_available_condition() {
        let available = json!([{"type": "Available", "status": "True"}]);
        run(vec![
            (
                "all replicas available",
                "apps/v1",
                "Deployment",
                json!({"spec": {"replicas": 3}, "status": {"updatedReplicas": 3, "availableReplicas": 3, "conditions": available}}),
                true,
            ),
            (
                "replicas default to one",
                "apps/v1",
                "Deployment",
                json!({"spec": {}, "status": {"updatedReplicas": 1, "availableReplicas": 1, "conditions": available}}),
                true,
            ),
            (
                "float replica counts are truncated",
                "apps/v1",
                "Deployment",
                json!({"spec": {"replicas": 2.0}, "status": {"updatedReplicas": 2, "availableReplicas": 2.5, "conditions": available}}),
                true,
            ),
            (
                "too few available",
                "apps/v1",
                "Deployment",
                json!({"spec": {"replicas": 3}, "status": {"updatedReplicas": 3, "availableReplicas": 2, "conditions": available}}),
                false,
            ),
            (
                "not all updated",
                "apps/v1",
                "Deployment",
                json!({"spec": {"replicas": 3}, "status": {"updatedReplicas": 2, "availableReplicas": 3, "conditions": available}}),
                false,
            ),
            (
                "no updatedReplicas",
                "apps/v1",
                "Deployment",
                json!({"spec": {"replicas": 1}, "status": {"availableReplicas": 1, "conditions": available}}),
                false,
            ),
            (
                "Available condition False",
                "apps/v1",
                "Deployment",
                json!({"spec": {"replicas": 1}, "status": {"updatedReplicas": 1, "availableReplicas": 1, "conditions": [{"type": "Available", "status": "False"}]}}),
                false,
            ),
            (
                "no conditions",
                "apps/v1",
                "Deployment",
                json!({"spec": {"replicas": 1}, "status": {"updatedReplicas": 1, "availableReplicas": 1}}),
                false,
            ),
            (
                "no status",
                "apps/v1",
                "Deployment",
                json!({"spec": {"replicas": 1}}),
                false,
            ),
        ]);
    }

    #[test]
    fn stateful_set_needs_ready_current_replicas_on_the_update_revision() {
        let status = |ready: i64, current: i64, cur_rev: &str, upd_rev: &str| json!({"spec": {"replicas": 2}, "status": {"readyReplicas": ready, "currentReplicas": current, "currentRevision": cur_rev, "updateRevision": upd_rev}});
        run(vec![
            (
                "all ready on one revision",
                "apps/v1",
                "StatefulSet",
                status(2, 2, "r1", "r1"),
                true,
            ),
            (
                "revision rolling",
                "apps/v1",
                "StatefulSet",
                status(2, 2, "r1", "r2"),
                false,
            ),
            (
                "one not ready",
                "apps/v1",
                "StatefulSet",
                status(1, 2, "r1", "r1"),
                false,
            ),
            (
                "one not current",
                "apps/v1",
                "StatefulSet",
                status(2, 1, "r1", "r1"),
                false,
            ),
            (
                "no revisions",
                "apps/v1",
                "StatefulSet",
                json!({"spec": {"replicas": 1}, "status": {"readyReplicas": 1, "currentReplicas": 1}}),
                false,
            ),
            (
                "replicas default to one",
                "apps/v1",
                "StatefulSet",
                json!({"status": {"readyReplicas": 1, "currentReplicas": 1, "currentRevision": "a", "updateRevision": "a"}}),
                true,
            ),
        ]);
    }

    #[test]
    fn daemon_set_needs_every_desired_pod_ready_updated_and_available() {
        let status = |desired: i64, ready: i64, updated: i64, available: i64| json!({"status": {"desiredNumberScheduled": desired, "numberReady": ready, "updatedNumberScheduled": updated, "numberAvailable": available}});
        run(vec![
            (
                "all ready",
                "apps/v1",
                "DaemonSet",
                status(3, 3, 3, 3),
                true,
            ),
            (
                "one not ready",
                "apps/v1",
                "DaemonSet",
                status(3, 2, 3, 3),
                false,
            ),
            (
                "one not updated",
                "apps/v1",
                "DaemonSet",
                status(3, 3, 2, 3),
                false,
            ),
            (
                "one not available",
                "apps/v1",
                "DaemonSet",
                status(3, 3, 3, 2),
                false,
            ),
            (
                "no numberAvailable",
                "apps/v1",
                "DaemonSet",
                json!({"status": {"desiredNumberScheduled": 0, "numberReady": 0, "updatedNumberScheduled": 0}}),
                false,
            ),
        ]);
    }

    #[test]
    fn replica_set_needs_the_latest_generation_no_failure_and_enough_available() {
        run(vec![
            (
                "available and observed",
                "apps/v1",
                "ReplicaSet",
                json!({"metadata": {"generation": 2}, "spec": {"replicas": 2}, "status": {"observedGeneration": 2, "availableReplicas": 2}}),
                true,
            ),
            (
                "more available than desired",
                "apps/v1",
                "ReplicaSet",
                json!({"spec": {"replicas": 1}, "status": {"availableReplicas": 2}}),
                true,
            ),
            (
                "generation not yet observed",
                "apps/v1",
                "ReplicaSet",
                json!({"metadata": {"generation": 3}, "spec": {"replicas": 2}, "status": {"observedGeneration": 2, "availableReplicas": 2}}),
                false,
            ),
            (
                "replica failure",
                "apps/v1",
                "ReplicaSet",
                json!({"spec": {"replicas": 1}, "status": {"availableReplicas": 1, "conditions": [{"type": "ReplicaFailure", "status": "True"}]}}),
                false,
            ),
            (
                "too few available",
                "apps/v1",
                "ReplicaSet",
                json!({"spec": {"replicas": 2}, "status": {"availableReplicas": 1}}),
                false,
            ),
            (
                "replicas default to one",
                "apps/v1",
                "ReplicaSet",
                json!({"status": {}}),
                false,
            ),
            (
                "malformed replicas fail the conversion",
                "apps/v1",
                "ReplicaSet",
                json!({"spec": {"replicas": "2"}, "status": {"availableReplicas": 2}}),
                false,
            ),
        ]);
    }

    #[test]
    fn job_is_ready_once_complete_and_never_when_failed_or_suspended() {
        let job = |conditions: Value| json!({"status": {"conditions": conditions}});
        run(vec![
            (
                "complete",
                "batch/v1",
                "Job",
                job(json!([{"type": "Complete", "status": "True"}])),
                true,
            ),
            (
                "failed",
                "batch/v1",
                "Job",
                job(json!([{"type": "Failed", "status": "True"}])),
                false,
            ),
            (
                "failed before complete",
                "batch/v1",
                "Job",
                job(
                    json!([{"type": "Failed", "status": "True"}, {"type": "Complete", "status": "True"}]),
                ),
                false,
            ),
            (
                "suspended",
                "batch/v1",
                "Job",
                job(json!([{"type": "Suspended", "status": "True"}])),
                false,
            ),
            (
                "complete False",
                "batch/v1",
                "Job",
                job(json!([{"type": "Complete", "status": "False"}])),
                false,
            ),
            (
                "running",
                "batch/v1",
                "Job",
                json!({"status": {"active": 1}}),
                false,
            ),
        ]);
    }

    #[test]
    fn cron_job_is_ready_when_suspended_active_or_its_last_run_succeeded() {
        run(vec![
            (
                "suspended",
                "batch/v1",
                "CronJob",
                json!({"spec": {"suspend": true}}),
                true,
            ),
            (
                "never scheduled",
                "batch/v1",
                "CronJob",
                json!({"spec": {"suspend": false}}),
                false,
            ),
            (
                "active job",
                "batch/v1",
                "CronJob",
                json!({"status": {"lastScheduleTime": "2024-01-01T00:00:00Z", "active": [{"name": "j"}]}}),
                true,
            ),
            (
                "last run succeeded",
                "batch/v1",
                "CronJob",
                json!({"status": {"lastScheduleTime": "2024-01-01T00:00:00Z", "lastSuccessfulTime": "2024-01-01T00:01:00Z"}}),
                true,
            ),
            (
                "success at the same instant in another zone",
                "batch/v1",
                "CronJob",
                json!({"status": {"lastScheduleTime": "2024-01-01T00:00:00Z", "lastSuccessfulTime": "2024-01-01T01:00:00+01:00"}}),
                true,
            ),
            (
                "last run failed",
                "batch/v1",
                "CronJob",
                json!({"status": {"lastScheduleTime": "2024-01-02T00:00:00Z", "lastSuccessfulTime": "2024-01-01T23:59:59.5Z"}}),
                false,
            ),
            (
                "never succeeded",
                "batch/v1",
                "CronJob",
                json!({"status": {"lastScheduleTime": "2024-01-01T00:00:00Z"}}),
                false,
            ),
            (
                "unparseable time",
                "batch/v1",
                "CronJob",
                json!({"status": {"lastScheduleTime": "yesterday", "active": [{}]}}),
                false,
            ),
        ]);
    }

    #[test]
    fn pod_is_ready_when_succeeded_or_running_ready_with_restart_always() {
        let ready = json!([{"type": "Ready", "status": "True"}]);
        run(vec![
            (
                "succeeded",
                "v1",
                "Pod",
                json!({"status": {"phase": "Succeeded"}}),
                true,
            ),
            (
                "running and ready",
                "v1",
                "Pod",
                json!({"spec": {"restartPolicy": "Always"}, "status": {"phase": "Running", "conditions": ready}}),
                true,
            ),
            (
                "running, not ready",
                "v1",
                "Pod",
                json!({"spec": {"restartPolicy": "Always"}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}}),
                false,
            ),
            (
                "running to completion",
                "v1",
                "Pod",
                json!({"spec": {"restartPolicy": "Never"}, "status": {"phase": "Running", "conditions": ready}}),
                false,
            ),
            (
                "pending",
                "v1",
                "Pod",
                json!({"status": {"phase": "Pending"}}),
                false,
            ),
            (
                "failed",
                "v1",
                "Pod",
                json!({"status": {"phase": "Failed"}}),
                false,
            ),
        ]);
    }

    #[test]
    fn service_waits_for_an_ingress_point_only_when_it_is_a_load_balancer() {
        run(vec![
            (
                "ClusterIP",
                "v1",
                "Service",
                json!({"spec": {"type": "ClusterIP"}}),
                true,
            ),
            (
                "type defaults to ClusterIP",
                "v1",
                "Service",
                json!({"spec": {}}),
                true,
            ),
            (
                "NodePort",
                "v1",
                "Service",
                json!({"spec": {"type": "NodePort"}}),
                true,
            ),
            (
                "LoadBalancer with ingress",
                "v1",
                "Service",
                json!({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}}),
                true,
            ),
            (
                "LoadBalancer pending",
                "v1",
                "Service",
                json!({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}}),
                false,
            ),
            (
                "LoadBalancer with empty ingress",
                "v1",
                "Service",
                json!({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": []}}}),
                false,
            ),
        ]);
    }

    #[test]
    fn ingress_waits_for_an_ingress_point() {
        run(vec![
            (
                "assigned",
                "networking.k8s.io/v1",
                "Ingress",
                json!({"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.org"}]}}}),
                true,
            ),
            (
                "pending",
                "networking.k8s.io/v1",
                "Ingress",
                json!({"status": {"loadBalancer": {}}}),
                false,
            ),
        ]);
    }

    #[test]
    fn hpa_is_ready_when_scaling_and_not_failing() {
        let hpa = |conditions: Value| json!({"status": {"conditions": conditions}});
        run(vec![
            (
                "scaling active",
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                hpa(
                    json!([{"type": "AbleToScale", "status": "True"}, {"type": "ScalingActive", "status": "True"}]),
                ),
                true,
            ),
            (
                "scaling limited",
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                hpa(json!([{"type": "ScalingLimited", "status": "True"}])),
                true,
            ),
            (
                "failed to get scale",
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                hpa(
                    json!([{"type": "FailedGetScale", "status": "True"}, {"type": "ScalingActive", "status": "True"}]),
                ),
                false,
            ),
            (
                "scaling inactive",
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                hpa(json!([{"type": "ScalingActive", "status": "False"}])),
                false,
            ),
            (
                "no conditions",
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                json!({}),
                false,
            ),
        ]);
    }

    #[test]
    fn pvc_is_ready_when_bound() {
        run(vec![
            (
                "bound",
                "v1",
                "PersistentVolumeClaim",
                json!({"status": {"phase": "Bound"}}),
                true,
            ),
            (
                "pending",
                "v1",
                "PersistentVolumeClaim",
                json!({"status": {"phase": "Pending"}}),
                false,
            ),
            (
                "lost",
                "v1",
                "PersistentVolumeClaim",
                json!({"status": {"phase": "Lost"}}),
                false,
            ),
            ("no status", "v1", "PersistentVolumeClaim", json!({}), false),
        ]);
    }

    #[test]
    fn kinds_without_status_are_ready_when_they_exist() {
        run(vec![
            ("ConfigMap", "v1", "ConfigMap", json!({}), true),
            ("Secret", "v1", "Secret", json!({}), true),
            ("ServiceAccount", "v1", "ServiceAccount", json!({}), true),
            (
                "Namespace",
                "v1",
                "Namespace",
                json!({"status": {"phase": "Terminating"}}),
                true,
            ),
            (
                "Role",
                "rbac.authorization.k8s.io/v1",
                "Role",
                json!({}),
                true,
            ),
            (
                "RoleBinding",
                "rbac.authorization.k8s.io/v1",
                "RoleBinding",
                json!({}),
                true,
            ),
        ]);
    }

    #[test]
    fn rfc3339_timestamps_compare_as_instants() {
        let t = |s| Timestamp::parse_rfc3339(s);
        assert_eq!(
            t("1970-01-01T00:00:00Z"),
            Some(Timestamp {
                seconds: 0,
                nanos: 0
            })
        );
        assert_eq!(
            t("2024-02-29T12:00:00.25Z").map(|t| t.nanos),
            Some(250_000_000)
        );
        assert_eq!(t("2024-01-01T01:00:00+01:00"), t("2024-01-01T00:00:00Z"));
        assert!(t("2024-01-01T00:00:00Z") < t("2024-01-01T00:00:00.000000001Z"));
        for bad in [
            "2023-02-29T00:00:00Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00",
            "",
            "2024-13-01T00:00:00Z",
        ] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }
}
