//! What `plait validate` spends on 150 objects of a CRD whose rules use
//! every Kubernetes CEL library: loading the built-in catalog and the CRD
//! (with its rules' cost estimate), then validating the objects, as one
//! `plait validate crd.yaml objects.yaml` call does. Prints the median of
//! several runs of each part and of the whole.
//!
//! `cargo bench -p plait-validate --bench cel_rules`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use plait_validate::{Catalog, Validator};
use serde_json::{Value, json};

const OBJECTS: usize = 150;
const RUNS: usize = 15;

const RULES: [&str; 16] = [
    "quantity(self.memory).isLessThan(quantity('64Gi'))",
    "quantity(self.memory).add(quantity('1Gi')).asApproximateFloat() > 0.0",
    "isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https'",
    "url(self.endpoint).getHostname().endsWith('.example.com')",
    "cidr(self.network).containsIP(self.address)",
    "ip(self.address).isGlobalUnicast() && ip(self.address).family() == 4",
    "isSemver(self.version) && semver(self.version).isGreaterThan(semver('1.0.0'))",
    "!format.dns1123Label().validate(self.name).hasValue()",
    "self.ports.isSorted() && self.ports.max() < 65536 && self.ports.min() > 0",
    "self.tags.all(t, t.matches('^[a-z]+$'))",
    "sets.contains(['web', 'db', 'cache', 'queue'], self.tags)",
    "self.timeout < duration('1h')",
    "self.created > timestamp('2020-01-01T00:00:00Z')",
    "self.name.find('[0-9]+') != '' || self.name.lowerAscii() == self.name",
    "self.labels.all(k, self.labels[k].size() < 64)",
    "self.?owner.orValue('nobody') != ''",
];

fn crd() -> Value {
    let rules: Vec<Value> = RULES.iter().map(|r| json!({"rule": r})).collect();
    let string = |max: u64| json!({"type": "string", "maxLength": max});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "services.bench.example.org"},
        "spec": {
            "group": "bench.example.org",
            "names": {"kind": "Service", "plural": "services"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": rules,
                    "properties": {
                        "name": string(63),
                        "memory": string(32),
                        "endpoint": string(256),
                        "network": string(64),
                        "address": string(64),
                        "version": string(64),
                        "owner": string(64),
                        "ports": {"type": "array", "maxItems": 16, "items": {"type": "integer"}},
                        "tags": {"type": "array", "maxItems": 8, "items": string(16)},
                        "labels": {"type": "object", "maxProperties": 16, "additionalProperties": string(128)},
                        "timeout": {"type": "string", "format": "duration", "maxLength": 32},
                        "created": {"type": "string", "format": "date-time", "maxLength": 64},
                    },
                }},
            }}}],
        },
    })
}

fn object(i: usize) -> Value {
    // Every tenth object breaks a rule or two.
    let broken = i % 10 == 9;
    json!({
        "apiVersion": "bench.example.org/v1",
        "kind": "Service",
        "metadata": {"name": format!("service-{i}"), "namespace": "default"},
        "spec": {
            "name": if broken { format!("Service_{i}") } else { format!("service-{i}") },
            "memory": format!("{}Mi", 256 + i),
            "endpoint": format!("https://svc{i}.example.com:8443/api?x={i}"),
            "network": "10.0.0.0/8",
            "address": format!("10.0.{}.{}", i / 250, i % 250 + 1),
            "version": format!("1.{}.{}", i % 7 + 1, i % 3),
            "ports": [80, 443, 8000 + i],
            "tags": if broken { json!(["web", "Other"]) } else { json!(["web", "db"]) },
            "labels": {"team": "core", "tier": format!("t{}", i % 4)},
            "timeout": format!("{}s", 30 + i),
            "created": "2024-05-01T10:00:00Z",
        },
    })
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let crd = crd();
    let objects: Vec<Value> = (0..OBJECTS).map(object).collect();
    let (mut load, mut validate, mut whole) = (Vec::new(), Vec::new(), Vec::new());
    let mut invalid = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let mut catalog = Catalog::builtin().unwrap();
        catalog.add_definition(&crd).unwrap();
        let validator = Validator::new(catalog);
        let crd_findings = validator.validate(&crd, None).findings.len();
        assert_eq!(crd_findings, 0, "the bench's CRD is within the cost budget");
        let loaded = started.elapsed();
        invalid = objects
            .iter()
            .filter(|o| !validator.validate(o, None).findings.is_empty())
            .count();
        let total = started.elapsed();
        load.push(loaded);
        validate.push(total - loaded);
        whole.push(total);
    }
    assert_eq!(invalid, OBJECTS / 10, "every tenth object is invalid");
    println!("| part | median of {RUNS} runs |");
    println!("|---|---|");
    println!(
        "| built-in catalog + CRD (with cost estimate) | {:.1} ms |",
        median(load).as_secs_f64() * 1e3
    );
    println!(
        "| {OBJECTS} objects × {} rules | {:.1} ms |",
        RULES.len(),
        median(validate).as_secs_f64() * 1e3
    );
    println!(
        "| whole `plait validate` call | {:.1} ms |",
        median(whole).as_secs_f64() * 1e3
    );
}
