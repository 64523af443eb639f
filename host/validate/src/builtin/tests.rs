//! The Go validation of the built-in kinds, one table of objects and the
//! messages kube-apiserver v1.34 answers them with.

use serde_json::{Value, json};

use super::check;

fn deployment(spec: Value) -> Value {
    let mut base = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}},
        },
    });
    if let (Some(base_spec), Value::Object(patch)) = (base["spec"].as_object_mut(), spec) {
        base_spec.extend(patch);
    }
    base
}

fn messages(object: &Value, old: Option<&Value>) -> Vec<String> {
    let mut found: Vec<String> = check(object, old).iter().map(ToString::to_string).collect();
    found.sort();
    found
}

#[test]
fn the_mistakes_composition_authors_make_most_are_refused_as_kube_apiserver_refuses_them() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (deployment(json!({})), vec![]),
        (
            deployment(json!({"selector": {"matchLabels": {"app": "api"}}})),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"app": "a b"}}}),
            vec![
                "metadata.labels: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"ports": [{"port": 70000, "targetPort": 8080}]}}),
            vec![
                "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"my key": "x"}}),
            vec![
                "data[my key]: Invalid value: \"my key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "My_Pod"}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}),
            vec![
                "metadata.name: Invalid value: \"My_Pod\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ],
        ),
        (
            deployment(
                json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "lots"}}}]}}}),
            ),
            vec![
                "Deployment in version \"v1\" cannot be handled as a Deployment: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            ],
        ),
        (
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"backoffLimit": -1, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "app", "image": "busybox"}]}}}}),
            vec!["spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": {"schedule": "every minute", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "app", "image": "busybox"}]}}}}}}),
            vec![
                "spec.schedule: Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]",
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"annotations": {"crossplane.io/composition-resource-name": "settings"}}}),
            vec![],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "Settings_"}}),
            vec![
                "metadata.generateName: Invalid value: \"Settings_\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "metadata.name: Invalid value: \"Settings_xxxxx\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ],
        ),
        (
            json!({"apiVersion": "example.org/v1", "kind": "Anything", "metadata": {"name": "Not_Checked"}}),
            vec![],
        ),
    ];
    for (object, want) in cases {
        assert_eq!(messages(&object, None), want, "{object}");
    }
}

#[test]
fn fields_that_cannot_change_are_refused_on_update() {
    let config_map = |data: &str, immutable: bool| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": data}, "immutable": immutable});
    let moved = deployment(
        json!({"selector": {"matchLabels": {"app": "web", "tier": "x"}}, "template": {"metadata": {"labels": {"app": "web", "tier": "x"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}),
    );
    let cases: Vec<(Value, Value, Vec<&str>)> = vec![
        (
            config_map("2", true),
            config_map("1", true),
            vec!["data: Forbidden: field is immutable when `immutable` is set"],
        ),
        (config_map("2", false), config_map("1", false), vec![]),
        (
            moved,
            deployment(json!({})),
            vec![
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"x\"}}: field is immutable",
            ],
        ),
        (
            deployment(json!({"replicas": 5})),
            deployment(json!({})),
            vec![],
        ),
    ];
    for (object, old, want) in cases {
        assert_eq!(messages(&object, Some(&old)), want, "{object}");
    }
}
