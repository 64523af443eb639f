//! A realistic request for benchmarks, shared by the native benchmark and
//! the host's WebAssembly one so both time the same work.

use plait_sdk::{Request, Resource, State};
use serde_json::{Value, json};

/// A steady-state request: an XR whose Composition has `resources` templates
/// (each with a string Format transform, a map transform, a Combine, a
/// ToCompositeFieldPath and a PatchSet), all of them already observed.
pub fn request(resources: usize) -> Request {
    let xr = json!({
        "apiVersion": "example.org/v1alpha1",
        "kind": "XBucketSet",
        "metadata": {
            "name": "bench",
            "labels": {"crossplane.io/composite": "bench", "team": "storage"},
        },
        "spec": {
            "parameters": {"prefix": "acme", "region": "eu", "tier": "gold", "environment": "prod"},
        },
        "status": {},
    });
    let templates: Vec<Value> = (0..resources).map(template).collect();
    let input = json!({
        "apiVersion": "pt.fn.crossplane.io/v1beta1",
        "kind": "Resources",
        "patchSets": [{
            "name": "common",
            "patches": [
                {"type": "FromCompositeFieldPath", "fromFieldPath": "metadata.labels", "toFieldPath": "metadata.labels",
                 "policy": {"toFieldPath": "MergeObjects"}},
                {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.parameters.environment",
                 "toFieldPath": "spec.forProvider.tags.environment"},
            ],
        }],
        "resources": templates,
    });
    let observed = (0..resources)
        .map(|i| {
            let resource = json!({
                "apiVersion": "s3.aws.upbound.io/v1beta1",
                "kind": "Bucket",
                "metadata": {"name": format!("bench-{i}-x7k2p"), "labels": {"crossplane.io/composite": "bench"}},
                "spec": {"forProvider": {"region": "eu-west-1"}},
                "status": {
                    "atProvider": {"arn": format!("arn:aws:s3:::acme-{i}"), "id": format!("acme-{i}")},
                    "conditions": [
                        {"type": "Ready", "status": "True", "reason": "Available"},
                        {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
                    ],
                },
            });
            (format!("bucket-{i}"), Resource::new(resource))
        })
        .collect();
    Request {
        observed: State {
            composite: Some(Resource::new(xr)),
            resources: observed,
        },
        input: Some(input),
        ..Request::default()
    }
}

fn template(i: usize) -> Value {
    json!({
        "name": format!("bucket-{i}"),
        "base": {
            "apiVersion": "s3.aws.upbound.io/v1beta1",
            "kind": "Bucket",
            "spec": {
                "forProvider": {"region": "us-east-1", "tags": {"managed-by": "crossplane"}},
                "deletionPolicy": "Delete",
            },
        },
        "patches": [
            {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.parameters.prefix",
             "toFieldPath": "metadata.annotations[crossplane.io/external-name]",
             "transforms": [{"type": "string", "string": {"type": "Format", "fmt": format!("%s-bucket-{i}")}}]},
            {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.parameters.region",
             "toFieldPath": "spec.forProvider.region",
             "transforms": [{"type": "map", "map": {"eu": "eu-west-1", "us": "us-east-1", "ap": "ap-southeast-1"}}]},
            {"type": "CombineFromComposite", "toFieldPath": "spec.forProvider.tags.name",
             "combine": {"strategy": "string",
                         "variables": [{"fromFieldPath": "spec.parameters.prefix"}, {"fromFieldPath": "spec.parameters.tier"}],
                         "string": {"fmt": "%s-%s"}}},
            {"type": "ToCompositeFieldPath", "fromFieldPath": "status.atProvider.arn",
             "toFieldPath": format!("status.buckets.bucket{i}")},
            {"type": "PatchSet", "patchSetName": "common"},
        ],
        "readinessChecks": [{"type": "MatchCondition", "matchCondition": {"type": "Ready", "status": "True"}}],
    })
}
