//! What one `plait validate` call over 150 built-in objects costs, process
//! start and file reading aside: reading the built-in schemas into a
//! catalog, and validating the objects (a mix of Deployments, Services,
//! ConfigMaps, Secrets, Jobs, CronJobs, Ingresses, RBAC and policy
//! objects, a fifth of them invalid). Prints one line per step; each
//! figure is the median of a few runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use plait_validate::{Catalog, Status, Validator};
use serde_json::{Value, json};

const RUNS: usize = 7;
const OBJECTS: usize = 150;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The `i`th object: a kind in turn, every third one with a mistake.
fn object(i: usize) -> Value {
    let bad = i.is_multiple_of(3);
    let name = format!("app-{i}");
    let container = json!({
        "name": if bad { "App" } else { "app" }, "image": "nginx:1.27",
        "ports": [{"name": "http", "containerPort": if bad { 70000 } else { 8080 }}],
        "env": [{"name": "MODE", "value": "prod"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}},
    });
    let template =
        json!({"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}});
    let selector = json!({"matchLabels": {"app": if bad { "other" } else { name.as_str() }}});
    match i % 10 {
        0 => {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"replicas": 2, "selector": selector, "template": template}})
        }
        1 => {
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": if bad { 70000 } else { 80 }, "targetPort": "http"}]}})
        }
        2 => {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop", "labels": {"app": name}},
            "data": {if bad { "my key" } else { "app.yaml" }: "port: 8080\n"}})
        }
        3 => {
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "shop"},
            "type": "kubernetes.io/tls", "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}})
        }
        4 => {
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"backoffLimit": if bad { -1 } else { 3 }, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "job", "image": "busybox"}]}}}})
        }
        5 => {
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"schedule": if bad { "every minute" } else { "*/5 * * * *" }, "timeZone": "Europe/Berlin",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "job", "image": "busybox"}]}}}}}})
        }
        6 => {
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": name, "port": {"name": "http"}}}}]}}]}})
        }
        7 => {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name, "namespace": "shop"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]})
        }
        8 => {
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"podSelector": {"matchLabels": {"app": name}}, "ingress": [{"ports": [{"port": 8080}]}]}})
        }
        _ => {
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"serviceName": name, "selector": selector, "template": template,
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})
        }
    }
}

fn main() {
    let objects: Vec<Value> = (0..OBJECTS).map(object).collect();
    let mut catalog_times = Vec::new();
    let mut validate_times = Vec::new();
    let mut invalid = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let catalog = Catalog::builtin().unwrap();
        let validator = Validator::new(catalog);
        catalog_times.push(started.elapsed());
        let started = Instant::now();
        invalid = objects
            .iter()
            .map(|o| validator.validate(o, None))
            .filter(|outcome| outcome.status == Status::Invalid)
            .count();
        validate_times.push(started.elapsed());
    }
    let catalog = median(catalog_times);
    let validate = median(validate_times);
    println!("built-in catalog            {catalog:>10.2?}");
    println!("validate {OBJECTS} objects        {validate:>10.2?}  ({invalid} invalid)");
    println!(
        "per object                  {:>10.2?}",
        validate / OBJECTS as u32
    );
    println!("catalog and validation      {:>10.2?}", catalog + validate);
}
