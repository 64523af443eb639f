//! plait answers for the built-in kinds as kube-apiserver v1.34 does: each
//! object of a table is sent to the test cluster's kube-apiserver with
//! `dryRun=All` (created; server-side applied for the cases where the two
//! write paths answer differently; updated over a stored old object for the
//! immutable fields) and the verdict, the fields and the messages it answers
//! with are compared with what `plait-validate` finds.

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use plait_controlplane::ControlPlane;
use plait_validate::{Catalog, Validator};
use serde_json::{Value, json};

/// How an object reaches the API server.
enum Write {
    /// `POST`, as `kubectl create` sends it.
    Create,
    /// Server-side apply, as plait's controller sends composed resources.
    Apply,
    /// `PUT` of the stored object with this merge patch applied to it.
    Update(Value),
}

struct Case {
    object: Value,
    write: Write,
    /// Compare the fields and kinds of problems only: the API server's
    /// message shows what plait cannot know (a generated UID, Go's dump of
    /// an internal struct, a diff, Go's JSON decoder's wording).
    fields_only: bool,
}

fn create(object: Value) -> Case {
    Case {
        object,
        write: Write::Create,
        fields_only: false,
    }
}

fn apply(object: Value) -> Case {
    Case {
        object,
        write: Write::Apply,
        fields_only: false,
    }
}

fn update(object: Value, patch: Value) -> Case {
    Case {
        object,
        write: Write::Update(patch),
        fields_only: false,
    }
}

impl Case {
    fn fields_only(mut self) -> Self {
        self.fields_only = true;
        self
    }
}

/// A line cut after its kind of problem: `spec.x: Invalid value`.
fn field_and_kind(line: &str) -> String {
    const KINDS: &[&str] = &[
        "Invalid value",
        "Forbidden",
        "Required value",
        "Unsupported value",
        "Duplicate value",
        "Not found",
        "Too long",
    ];
    KINDS
        .iter()
        .filter_map(|k| line.find(k).map(|i| &line[..i + k.len()]))
        .min_by_key(|cut| cut.len())
        .unwrap_or(line)
        .to_string()
}

/// The API server's generated name with plait's stand-in for its random
/// suffix.
fn without_random_suffix(line: &str, generate_name: &str) -> String {
    if generate_name.is_empty() {
        return line.to_string();
    }
    let quoted = format!("\"{generate_name}");
    match line.find(&quoted) {
        Some(i) => {
            let start = i + quoted.len();
            match line.get(start..start + 6) {
                Some(rest) if rest.ends_with('"') => {
                    format!("{}xxxxx{}", &line[..start], &line[start + 5..])
                }
                _ => line.to_string(),
            }
        }
        None => line.to_string(),
    }
}

/// A CRD whose kind has a status subresource, a list-map, a
/// non-nullable field and a root rule: where create and server-side apply
/// answer differently.
fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.corekinds.example.org"},
        "spec": {
            "group": "corekinds.example.org",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.metadata.name != 'forbidden'", "message": "that name is taken"}],
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "string"},
                            "parts": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "count": {"type": "integer"}}}},
                        }},
                        "status": {"type": "object", "properties": {"phase": {"type": "string", "enum": ["Ready", "Pending"]}, "count": {"type": "integer"}}},
                    },
                }}}],
        },
    })
}

fn widget(name: &str, rest: Value) -> Value {
    object("corekinds.example.org/v1", "Widget", name, rest)
}

/// RFC 7386 merge patch: objects merge, `null` deletes, anything else
/// replaces.
fn merge(mut base: Value, patch: Value) -> Value {
    match (&mut base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    b.remove(&k);
                } else {
                    let old = b.remove(&k).unwrap_or(Value::Null);
                    b.insert(k, merge(old, v));
                }
            }
            base
        }
        (_, patch) => patch,
    }
}

fn object(api_version: &str, kind: &str, name: &str, rest: Value) -> Value {
    merge(
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}),
        rest,
    )
}

fn config_map(name: &str, rest: Value) -> Value {
    object("v1", "ConfigMap", name, rest)
}

fn container(patch: Value) -> Value {
    merge(json!({"name": "app", "image": "nginx:1.27"}), patch)
}

/// A pod spec of one container, the container patched, the spec then patched.
fn pod_spec(container_patch: Value, spec_patch: Value) -> Value {
    merge(
        json!({"containers": [container(container_patch)]}),
        spec_patch,
    )
}

fn pod(name: &str, container_patch: Value, spec_patch: Value) -> Value {
    object(
        "v1",
        "Pod",
        name,
        json!({"spec": pod_spec(container_patch, spec_patch)}),
    )
}

fn template(labels: Value, spec: Value) -> Value {
    json!({"metadata": {"labels": labels}, "spec": spec})
}

/// A Deployment, StatefulSet, DaemonSet or ReplicaSet selecting `app: web`,
/// its spec patched.
fn workload(kind: &str, name: &str, spec_patch: Value) -> Value {
    let spec = json!({
        "selector": {"matchLabels": {"app": "web"}},
        "template": template(json!({"app": "web"}), pod_spec(json!({}), json!({}))),
    });
    object(
        "apps/v1",
        kind,
        name,
        json!({"spec": merge(spec, spec_patch)}),
    )
}

fn deployment(name: &str, spec_patch: Value) -> Value {
    workload("Deployment", name, spec_patch)
}

/// A Deployment whose one container is patched.
fn deployment_container(name: &str, container_patch: Value) -> Value {
    deployment(
        name,
        json!({"template": {"spec": {"containers": [container(container_patch)]}}}),
    )
}

/// A Deployment whose pod spec is patched.
fn deployment_pod(name: &str, spec_patch: Value) -> Value {
    deployment(name, json!({"template": {"spec": spec_patch}}))
}

fn job_spec(patch: Value) -> Value {
    merge(
        json!({"template": template(json!({}), pod_spec(json!({}), json!({"restartPolicy": "Never"})))}),
        patch,
    )
}

fn job(name: &str, spec_patch: Value) -> Value {
    object(
        "batch/v1",
        "Job",
        name,
        json!({"spec": job_spec(spec_patch)}),
    )
}

fn cron_job(name: &str, spec_patch: Value) -> Value {
    let spec = json!({"schedule": "*/5 * * * *", "jobTemplate": {"spec": job_spec(json!({}))}});
    object(
        "batch/v1",
        "CronJob",
        name,
        json!({"spec": merge(spec, spec_patch)}),
    )
}

fn service(name: &str, spec_patch: Value) -> Value {
    let spec = json!({"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]});
    object(
        "v1",
        "Service",
        name,
        json!({"spec": merge(spec, spec_patch)}),
    )
}

fn secret(name: &str, rest: Value) -> Value {
    object("v1", "Secret", name, rest)
}

fn role(kind: &str, name: &str, rules: Value) -> Value {
    object(
        "rbac.authorization.k8s.io/v1",
        kind,
        name,
        json!({"rules": rules}),
    )
}

fn binding(kind: &str, name: &str, role_ref: Value, subjects: Value) -> Value {
    let role_ref = merge(
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}),
        role_ref,
    );
    object(
        "rbac.authorization.k8s.io/v1",
        kind,
        name,
        json!({"roleRef": role_ref, "subjects": subjects}),
    )
}

fn ingress(name: &str, spec: Value) -> Value {
    object(
        "networking.k8s.io/v1",
        "Ingress",
        name,
        json!({"spec": spec}),
    )
}

fn ingress_path(path_patch: Value) -> Value {
    ingress(
        "web",
        json!({"rules": [{"host": "example.com", "http": {"paths": [merge(
            json!({"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}),
            path_patch,
        )]}}]}),
    )
}

fn network_policy(name: &str, spec_patch: Value) -> Value {
    let spec = json!({"podSelector": {"matchLabels": {"app": "web"}}});
    object(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        name,
        json!({"spec": merge(spec, spec_patch)}),
    )
}

fn pvc(name: &str, spec_patch: Value) -> Value {
    let spec =
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
    object(
        "v1",
        "PersistentVolumeClaim",
        name,
        json!({"spec": merge(spec, spec_patch)}),
    )
}

fn cases() -> Vec<Case> {
    let long = |n: usize| "a".repeat(n);
    vec![
        // Object metadata, on a ConfigMap.
        create(config_map("settings", json!({"data": {"a": "1"}}))),
        create(config_map("My_Settings", json!({}))),
        create(config_map(&long(254), json!({}))),
        create(config_map("a.b.c", json!({}))),
        create(object(
            "v1",
            "ConfigMap",
            "",
            json!({"metadata": {"name": null, "generateName": "settings-"}}),
        )),
        create(object(
            "v1",
            "ConfigMap",
            "",
            json!({"metadata": {"name": null, "generateName": "Settings_"}}),
        )),
        create(object(
            "v1",
            "ConfigMap",
            "",
            json!({"metadata": {"name": null}}),
        )),
        create(config_map(
            "labels",
            json!({"metadata": {"labels": {"app": "a b"}}}),
        )),
        create(config_map(
            "labels",
            json!({"metadata": {"labels": {"-app": "x"}}}),
        )),
        create(config_map(
            "labels",
            json!({"metadata": {"labels": {"example.com/app": "x", "app.kubernetes.io/name": "web", "tier": ""}}}),
        )),
        create(config_map(
            "labels",
            json!({"metadata": {"labels": {"Example_com/app": "x"}}}),
        )),
        create(config_map(
            "labels",
            json!({"metadata": {"labels": {"a/b/c": "x"}}}),
        )),
        create(config_map(
            "labels",
            json!({"metadata": {"labels": {"app": long(64)}}}),
        )),
        create(config_map(
            "labels",
            json!({"metadata": {"labels": {long(64): "x"}}}),
        )),
        create(config_map(
            "notes",
            json!({"metadata": {"annotations": {"bad key": "x"}}}),
        )),
        create(config_map(
            "notes",
            json!({"metadata": {"annotations": {"Example.com/Note": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"}}}),
        )),
        create(config_map(
            "notes",
            json!({"metadata": {"annotations": {"big": "x".repeat(262_145)}}}),
        )),
        create(config_map(
            "final",
            json!({"metadata": {"finalizers": ["example.com/cleanup", "bad finalizer"]}}),
        )),
        create(config_map(
            "owned",
            json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": ""}]}}),
        )),
        // ConfigMap.
        create(config_map("keys", json!({"data": {"my key": "x"}}))),
        create(config_map(
            "keys",
            json!({"data": {".env": "x", "app.properties": "y", "KEY_1": "z", "a-b": ""}}),
        )),
        create(config_map("keys", json!({"data": {"..x": "x"}}))),
        create(config_map(
            "keys",
            json!({"data": {"a": "x"}, "binaryData": {"a": "eA=="}}),
        )),
        create(config_map(
            "keys",
            json!({"binaryData": {"logo.png": "iVBORw0KGgo="}}),
        )),
        create(config_map(
            "big",
            json!({"data": {"a": "x".repeat(1_048_577)}}),
        )),
        update(
            config_map("frozen", json!({"data": {"a": "1"}, "immutable": true})),
            json!({"data": {"a": "2"}}),
        ),
        update(
            config_map("frozen", json!({"data": {"a": "1"}, "immutable": true})),
            json!({"immutable": false}),
        ),
        update(
            config_map("thawed", json!({"data": {"a": "1"}})),
            json!({"data": {"a": "2"}, "immutable": true}),
        ),
        // Secret.
        create(secret(
            "creds",
            json!({"data": {"password": "c2VjcmV0"}, "stringData": {"user": "admin"}}),
        )),
        create(secret("creds", json!({"stringData": {"my key": "x"}}))),
        create(secret(
            "tls",
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}),
        )),
        create(secret(
            "tls",
            json!({"type": "kubernetes.io/tls", "stringData": {"tls.crt": "x", "tls.key": "y"}}),
        )),
        create(secret(
            "docker",
            json!({"type": "kubernetes.io/dockerconfigjson", "stringData": {"config": "{}"}}),
        )),
        create(secret(
            "docker",
            json!({"type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": "{\"auths\":{}}"}}),
        )),
        create(secret(
            "docker",
            json!({"type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": "not json"}}),
        ))
        .fields_only(),
        create(secret(
            "basic",
            json!({"type": "kubernetes.io/basic-auth", "stringData": {"token": "x"}}),
        )),
        create(secret(
            "basic",
            json!({"type": "kubernetes.io/basic-auth", "stringData": {"username": "u", "password": "p"}}),
        )),
        create(secret(
            "ssh",
            json!({"type": "kubernetes.io/ssh-auth", "stringData": {"key": "x"}}),
        )),
        create(secret(
            "token",
            json!({"type": "kubernetes.io/service-account-token"}),
        )),
        create(secret(
            "opaque",
            json!({"type": "example.com/custom", "stringData": {"a": "b"}}),
        )),
        update(
            secret("typed", json!({"stringData": {"a": "b"}})),
            json!({"type": "example.com/other"}),
        ),
        update(
            secret(
                "frozen",
                json!({"stringData": {"a": "b"}, "immutable": true}),
            ),
            json!({"data": {"a": "Yw=="}}),
        ),
        // ServiceAccount and Namespace.
        create(object(
            "v1",
            "ServiceAccount",
            "builder",
            json!({"automountServiceAccountToken": false, "imagePullSecrets": [{"name": "registry"}]}),
        )),
        create(object("v1", "ServiceAccount", "Builder", json!({}))),
        create(object(
            "v1",
            "Namespace",
            "team-a",
            json!({"metadata": {"labels": {"team": "a"}}}),
        )),
        create(object("v1", "Namespace", "team.a", json!({}))),
        create(object("v1", "Namespace", "Team_A", json!({}))),
        create(object("v1", "Namespace", &long(64), json!({}))),
        // Pod.
        create(pod("web", json!({}), json!({}))),
        create(pod("My_Pod", json!({}), json!({}))),
        create(pod("web", json!({"image": null}), json!({}))),
        create(pod("web", json!({"image": " nginx"}), json!({}))),
        create(pod("web", json!({"name": "App"}), json!({}))),
        create(pod(
            "web",
            json!({"ports": [{"containerPort": 70000}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"ports": [{"containerPort": 8080, "protocol": "tcp"}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"ports": [{"containerPort": 8080, "name": "http-port-too-long"}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"ports": [{"containerPort": 8080, "name": "Http"}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "512Mi"}}}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"resources": {"requests": {"cpu": "-1"}}}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"resources": {"requests": {"cpus": "1"}}}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"resources": {"limits": {"cpu": "500m", "memory": "256Mi", "example.com/gpu": "1"}, "requests": {"example.com/gpu": "1"}}}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"env": [{"name": "A=B", "value": "x"}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"env": [{"name": "", "value": "x"}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c"}}}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}, {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"volumeMounts": [{"name": "data", "mountPath": "/data"}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"volumeMounts": [{"name": "data", "mountPath": ""}]}),
            json!({"volumes": [{"name": "data", "emptyDir": {}}]}),
        )),
        create(pod(
            "web",
            json!({}),
            json!({"volumes": [{"name": "Data", "emptyDir": {}}]}),
        )),
        create(pod(
            "web",
            json!({}),
            json!({"volumes": [{"name": "data"}]}),
        )),
        create(pod(
            "web",
            json!({}),
            json!({"volumes": [{"name": "data", "emptyDir": {}, "configMap": {"name": "c"}}]}),
        )),
        create(pod(
            "web",
            json!({}),
            json!({"volumes": [{"name": "data", "secret": {"secretName": "s", "defaultMode": 1000}}]}),
        )),
        create(pod(
            "web",
            json!({}),
            json!({"volumes": [{"name": "data", "configMap": {"name": "c", "items": [{"key": "a", "path": "../x"}]}}]}),
        )),
        create(pod("web", json!({}), json!({"restartPolicy": "Sometimes"}))),
        create(pod("web", json!({}), json!({"dnsPolicy": "Sometimes"}))),
        create(pod(
            "web",
            json!({"imagePullPolicy": "Sometimes"}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({}),
            json!({"terminationGracePeriodSeconds": -1}),
        )),
        create(pod("web", json!({}), json!({"activeDeadlineSeconds": 0}))),
        create(pod(
            "web",
            json!({}),
            json!({"nodeSelector": {"disk": "fast ssd"}}),
        )),
        create(deployment_pod("web", json!({"serviceAccountName": "Builder"}))),
        create(pod("web", json!({}), json!({"hostname": "Web_1"}))),
        create(pod(
            "web",
            json!({}),
            json!({"tolerations": [{"key": "k", "operator": "Sometimes"}]}),
        )),
        create(pod(
            "web",
            json!({}),
            json!({"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}),
        )),
        create(pod(
            "web",
            json!({}),
            json!({"initContainers": [{"name": "app", "image": "busybox"}]}),
        )),
        create(pod(
            "web",
            json!({"securityContext": {"runAsUser": -1}}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"livenessProbe": {"httpGet": {"port": 8080}, "exec": {"command": ["true"]}}}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"livenessProbe": {"httpGet": {"port": 0}}}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 0}}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"readinessProbe": {"tcpSocket": {"port": "http"}}, "ports": [{"name": "http", "containerPort": 8080}]}),
            json!({}),
        )),
        create(pod(
            "web",
            json!({"livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "initialDelaySeconds": 5, "periodSeconds": 10, "failureThreshold": 3}, "command": ["/bin/app"], "args": ["--port=8080"], "workingDir": "/srv"}),
            json!({"securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "fsGroup": 2000}}),
        )),
        // Deployment.
        create(deployment("web", json!({"replicas": 3}))),
        create(deployment(
            "web",
            json!({"selector": {"matchLabels": {"app": "api"}}}),
        )),
        create(deployment("web", json!({"selector": null}))),
        create(deployment(
            "web",
            json!({"selector": {"matchLabels": null}}),
        )),
        create(deployment(
            "web",
            json!({"selector": {"matchLabels": null, "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}}),
        )),
        create(deployment(
            "web",
            json!({"selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}),
        )),
        create(deployment(
            "web",
            json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists", "values": ["x"]}]}}),
        )),
        create(deployment(
            "web",
            json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "Sometimes", "values": ["x"]}]}}),
        )),
        create(deployment(
            "web",
            json!({"selector": {"matchLabels": {"app": "a b"}}, "template": {"metadata": {"labels": {"app": "a b"}}}}),
        )),
        create(deployment("web", json!({"replicas": -1}))),
        create(deployment(
            "web",
            json!({"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}),
        )),
        create(deployment(
            "web",
            json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}),
        )),
        create(deployment(
            "web",
            json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "abc"}}}),
        )),
        create(deployment(
            "web",
            json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "120%"}}}),
        )),
        create(deployment(
            "web",
            json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}}),
        )),
        create(deployment(
            "web",
            json!({"strategy": {"type": "Sometimes"}}),
        )),
        create(deployment("web", json!({"revisionHistoryLimit": -1}))),
        create(deployment(
            "web",
            json!({"minReadySeconds": 10, "progressDeadlineSeconds": 5}),
        )),
        create(deployment(
            "web",
            json!({"template": {"spec": {"restartPolicy": "Never"}}}),
        )),
        create(deployment_container("web", json!({"name": "App"}))),
        create(deployment_container("web", json!({"image": null}))),
        create(deployment_container(
            "web",
            json!({"ports": [{"containerPort": 70000}]}),
        )),
        create(deployment_container(
            "web",
            json!({"resources": {"requests": {"cpu": "lots"}}}),
        )),
        create(deployment_container(
            "web",
            json!({"resources": {"limits": {"memory": "1Gi", "cpu": "500m"}, "requests": {"memory": "2Gi"}}}),
        )),
        create(deployment_container(
            "web",
            json!({"volumeMounts": [{"name": "config", "mountPath": "/etc/app"}]}),
        )),
        create(deployment_pod(
            "web",
            json!({"volumes": [{"name": "config", "configMap": {"name": "app"}}], "containers": [container(json!({"volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": true}]}))]}),
        )),
        create(deployment(
            "web",
            json!({"template": {"metadata": {"labels": {"app": "web", "version": "v1.2.3"}, "annotations": {"prometheus.io/scrape": "true"}}, "spec": {"containers": [container(json!({"ports": [{"name": "http", "containerPort": 8080}], "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}, "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}}}))], "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}}]}}, "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]}}}),
        )),
        apply(deployment_pod(
            "web",
            json!({"containers": [container(json!({})), container(json!({"image": "busybox"}))]}),
        )),
        apply(deployment_container(
            "web",
            json!({"ports": [{"containerPort": 80}, {"containerPort": 80}]}),
        )),
        apply(deployment_pod(
            "web",
            json!({"volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]}),
        )),
        apply(deployment_container(
            "web",
            json!({"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}),
        )),
        apply(deployment(
            "web",
            json!({"replicas": null, "template": {"spec": {"containers": [container(json!({"image": null}))]}}}),
        )),
        apply(deployment(
            "web",
            json!({"paused": null, "minReadySeconds": null}),
        )),
        apply(merge(
            deployment("web", json!({})),
            json!({"status": {"replicas": 3, "readyReplicas": 3}}),
        )),
        update(
            deployment("moving", json!({})),
            json!({"spec": {"selector": {"matchLabels": {"app": "web", "tier": "x"}}, "template": {"metadata": {"labels": {"tier": "x"}}}}}),
        ),
        update(
            deployment("scaling", json!({})),
            json!({"spec": {"replicas": 5}}),
        ),
        // StatefulSet, DaemonSet, ReplicaSet.
        create(workload(
            "StatefulSet",
            "db",
            json!({"serviceName": "db", "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}]}),
        )),
        create(workload(
            "StatefulSet",
            "db",
            json!({"selector": {"matchLabels": {"app": "db"}}}),
        )),
        create(workload(
            "StatefulSet",
            "db",
            json!({"podManagementPolicy": "Sometimes"}),
        )),
        create(workload(
            "StatefulSet",
            "db",
            json!({"updateStrategy": {"type": "Sometimes"}}),
        )),
        create(workload("StatefulSet", "db", json!({"replicas": -2}))),
        create(workload(
            "StatefulSet",
            "db",
            json!({"volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "10Gi"}}}}]}),
        )),
        create(workload(
            "StatefulSet",
            "db",
            json!({"template": {"spec": {"restartPolicy": "OnFailure"}}}),
        )),
        update(
            workload("StatefulSet", "frozen", json!({})),
            json!({"spec": {"podManagementPolicy": "Parallel"}}),
        ),
        create(workload(
            "DaemonSet",
            "agent",
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}, "template": {"spec": {"hostNetwork": true, "tolerations": [{"operator": "Exists"}], "volumes": [{"name": "logs", "hostPath": {"path": "/var/log"}}], "containers": [container(json!({"volumeMounts": [{"name": "logs", "mountPath": "/var/log", "readOnly": true}]}))]}}}),
        )),
        create(workload(
            "DaemonSet",
            "agent",
            json!({"selector": {"matchLabels": {"app": "agent"}}}),
        )),
        create(workload(
            "DaemonSet",
            "agent",
            json!({"template": {"spec": {"restartPolicy": "OnFailure"}}}),
        )),
        create(workload(
            "DaemonSet",
            "agent",
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}}),
        )),
        create(workload("ReplicaSet", "web", json!({"replicas": 2}))),
        create(workload(
            "ReplicaSet",
            "web",
            json!({"template": {"metadata": {"labels": {"app": "other"}}}}),
        )),
        create(workload("ReplicaSet", "web", json!({"replicas": -1}))),
        // Job and CronJob.
        create(job(
            "migrate",
            json!({"backoffLimit": 4, "ttlSecondsAfterFinished": 600}),
        )),
        create(job("migrate", json!({"backoffLimit": -1}))),
        create(job(
            "migrate",
            json!({"template": {"spec": {"restartPolicy": "Always"}}}),
        )),
        create(job(
            "migrate",
            json!({"template": {"spec": {"restartPolicy": null}}}),
        )),
        create(job(
            "migrate",
            json!({"selector": {"matchLabels": {"job": "x"}}, "template": {"metadata": {"labels": {"job": "x"}}}}),
        ))
        .fields_only(),
        create(job(
            "migrate",
            json!({"manualSelector": true, "selector": {"matchLabels": {"job": "x"}}, "template": {"metadata": {"labels": {"job": "x"}}}}),
        )),
        create(job(
            "migrate",
            json!({"completions": -1, "parallelism": -1}),
        )),
        create(job("migrate", json!({"activeDeadlineSeconds": 0}))),
        create(job("migrate", json!({"completionMode": "Indexed"}))),
        create(job(
            "migrate",
            json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3}),
        )),
        create(job("migrate", json!({"completionMode": "Sometimes"}))),
        create(job("migrate", json!({"ttlSecondsAfterFinished": -1}))),
        update(
            job("frozen", json!({})),
            json!({"spec": {"template": {"spec": {"containers": [container(json!({"image": "nginx:1.28"}))]}}}}),
        )
        .fields_only(),
        update(
            job("frozen", json!({})),
            json!({"spec": {"completions": 2}}),
        ),
        create(cron_job(
            "backup",
            json!({"schedule": "0 3 * * *", "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1, "timeZone": "Europe/Berlin"}),
        )),
        create(cron_job("backup", json!({"schedule": "every minute"}))),
        create(cron_job("backup", json!({"schedule": "61 * * * *"}))),
        create(cron_job("backup", json!({"schedule": "* * * * * *"}))),
        create(cron_job("backup", json!({"schedule": "0 0 30 2 *"}))),
        create(cron_job("backup", json!({"schedule": "@hourly"}))),
        create(cron_job("backup", json!({"schedule": "@every 5m"}))),
        create(cron_job("backup", json!({"schedule": "@sometimes"}))),
        create(cron_job(
            "backup",
            json!({"schedule": "0 9-17/2 * * MON-FRI"}),
        )),
        create(cron_job("backup", json!({"schedule": "0 0 * JAN,jul sun"}))),
        create(cron_job("backup", json!({"schedule": "5-1 * * * *"}))),
        create(cron_job("backup", json!({"schedule": "*/0 * * * *"}))),
        create(cron_job("backup", json!({"schedule": "TZ=UTC 0 3 * * *"}))),
        create(cron_job(
            "backup",
            json!({"schedule": "CRON_TZ=UTC 0 3 * * *"}),
        )),
        create(cron_job("backup", json!({"schedule": ""}))),
        create(cron_job("backup", json!({"timeZone": "Mars/Olympus"}))),
        create(cron_job("backup", json!({"timeZone": " UTC"}))),
        create(cron_job("backup", json!({"timeZone": "Local"}))),
        create(cron_job("backup", json!({"timeZone": "UTC"}))),
        create(cron_job(
            "backup",
            json!({"concurrencyPolicy": "Sometimes"}),
        )),
        create(cron_job(
            "backup",
            json!({"startingDeadlineSeconds": -1, "successfulJobsHistoryLimit": -1}),
        )),
        create(cron_job(
            "backup",
            json!({"jobTemplate": {"spec": {"backoffLimit": -1}}}),
        )),
        create(cron_job(&long(53), json!({}))),
        create(cron_job(&long(52), json!({}))),
        // Service.
        create(service("web", json!({}))),
        create(service("web", json!({"ports": [{"port": 70000}]}))),
        create(service("web", json!({"ports": [{"port": 0}]}))),
        create(service("web", json!({"ports": null}))),
        create(service(
            "web",
            json!({"ports": [{"port": 80, "targetPort": 0}]}),
        )),
        create(service(
            "web",
            json!({"ports": [{"port": 80, "targetPort": 70000}]}),
        )),
        create(service(
            "web",
            json!({"ports": [{"port": 80, "targetPort": "Http_Port"}]}),
        )),
        create(service(
            "web",
            json!({"ports": [{"port": 80, "targetPort": "http"}]}),
        )),
        create(service(
            "web",
            json!({"ports": [{"port": 80}, {"port": 443}]}),
        )),
        create(service(
            "web",
            json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}),
        )),
        create(service(
            "web",
            json!({"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 443}]}),
        )),
        create(service(
            "web",
            json!({"ports": [{"name": "Http", "port": 80}]}),
        )),
        create(service(
            "web",
            json!({"ports": [{"port": 80, "protocol": "tcp"}]}),
        )),
        create(service(
            "web",
            json!({"ports": [{"port": 53, "protocol": "UDP", "name": "dns"}, {"port": 53, "protocol": "TCP", "name": "dns-tcp"}]}),
        )),
        create(service("web", json!({"type": "Public"}))),
        create(service("web", json!({"clusterIP": "None"}))),
        create(service("web", json!({"clusterIP": "None", "ports": null}))),
        create(service("web", json!({"clusterIP": "bogus"}))),
        create(service(
            "web",
            json!({"type": "ExternalName", "ports": null, "selector": null}),
        )),
        create(service(
            "web",
            json!({"type": "ExternalName", "externalName": "db.example.com", "ports": null, "selector": null}),
        )),
        create(service(
            "web",
            json!({"type": "ExternalName", "externalName": "Not A Host", "ports": null}),
        )),
        create(service(
            "web",
            json!({"ports": [{"port": 80, "nodePort": 30080}]}),
        )),
        create(service(
            "web",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 0}]}),
        )),
        create(service("web", json!({"selector": {"app": "a b"}}))),
        create(service("web", json!({"sessionAffinity": "Sometimes"}))),
        create(service("web", json!({"externalTrafficPolicy": "Local"}))),
        create(service(
            "web",
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "loadBalancerSourceRanges": ["10.0.0.0/8"]}),
        )),
        create(service(
            "web",
            json!({"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/33"]}),
        )),
        create(service("web", json!({"ipFamilyPolicy": "Sometimes"}))),
        apply(service(
            "web",
            json!({"ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "b"}]}),
        )),
        apply(merge(
            service("web", json!({})),
            json!({"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}}),
        )),
        update(
            service("fixed", json!({})),
            json!({"spec": {"clusterIP": "10.96.99.99", "clusterIPs": ["10.96.99.99"]}}),
        ),
        update(
            service("fixed", json!({})),
            json!({"spec": {"ports": [{"port": 81, "targetPort": 8080}]}}),
        ),
        // RBAC.
        create(role(
            "Role",
            "reader",
            json!([{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]}]),
        )),
        create(role(
            "Role",
            "reader",
            json!([{"apiGroups": [""], "resources": ["pods"]}]),
        )),
        create(role(
            "Role",
            "reader",
            json!([{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]),
        )),
        create(role(
            "Role",
            "reader",
            json!([{"resources": ["pods"], "verbs": ["get"]}]),
        )),
        create(role(
            "ClusterRole",
            "core-kinds-reader",
            json!([{"nonResourceURLs": ["/healthz", "/metrics"], "verbs": ["get"]}, {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["*"]}]),
        )),
        create(role(
            "ClusterRole",
            "core-kinds-mixed",
            json!([{"nonResourceURLs": ["/healthz"], "apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
        )),
        create(role("ClusterRole", "Core_Kinds", json!([]))),
        create(object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "core-kinds-aggregate",
            json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-view": "true"}}]}}),
        )),
        create(object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "core-kinds-aggregate",
            json!({"aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]}}),
        )),
        create(binding(
            "RoleBinding",
            "readers",
            json!({}),
            json!([{"kind": "ServiceAccount", "name": "builder"}, {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}, {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]),
        )),
        create(binding(
            "RoleBinding",
            "readers",
            json!({"kind": "Deployment"}),
            json!([]),
        )),
        create(binding(
            "RoleBinding",
            "readers",
            json!({"apiGroup": "rbac"}),
            json!([]),
        )),
        create(binding(
            "RoleBinding",
            "readers",
            json!({"name": ""}),
            json!([]),
        )),
        create(binding(
            "RoleBinding",
            "readers",
            json!({}),
            json!([{"kind": "Robot", "name": "r2"}]),
        )),
        create(binding(
            "RoleBinding",
            "readers",
            json!({}),
            json!([{"kind": "User", "name": "alice"}]),
        )),
        create(binding(
            "RoleBinding",
            "readers",
            json!({}),
            json!([{"kind": "ServiceAccount", "name": "Builder"}]),
        )),
        create(binding(
            "ClusterRoleBinding",
            "core-kinds-readers",
            json!({}),
            json!([{"kind": "ServiceAccount", "name": "builder"}]),
        )),
        create(binding(
            "ClusterRoleBinding",
            "core-kinds-readers",
            json!({"kind": "Role"}),
            json!([{"kind": "ServiceAccount", "name": "builder", "namespace": "default"}]),
        )),
        update(
            binding("RoleBinding", "readers", json!({}), json!([])),
            json!({"roleRef": {"name": "edit"}}),
        ),
        // Ingress.
        create(ingress(
            "web",
            json!({"ingressClassName": "nginx", "tls": [{"hosts": ["example.com"], "secretName": "web-tls"}], "rules": [{"host": "example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}, {"path": "/api", "pathType": "ImplementationSpecific", "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}),
        )),
        create(ingress_path(json!({"pathType": null}))),
        create(ingress_path(json!({"path": "api"}))),
        create(ingress_path(json!({"pathType": "Sometimes"}))),
        create(ingress_path(
            json!({"backend": {"service": {"name": "web", "port": {"number": 70000}}}}),
        )),
        create(ingress_path(
            json!({"backend": {"service": {"name": "web", "port": {"number": 80, "name": "http"}}}}),
        )),
        create(ingress_path(
            json!({"backend": {"service": {"name": "Web", "port": {"number": 80}}}}),
        )),
        create(ingress_path(
            json!({"backend": {"service": {"name": "web", "port": {"number": 80}}, "resource": {"apiGroup": "example.com", "kind": "Bucket", "name": "b"}}}),
        )),
        create(ingress_path(json!({"path": "/a//b", "pathType": "Exact"}))),
        create(ingress(
            "web",
            json!({"rules": [{"host": "10.0.0.1", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}),
        )),
        create(ingress(
            "web",
            json!({"rules": [{"host": "*.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}),
        )),
        create(ingress("web", json!({"rules": [{"host": "foo.*.com"}]}))),
        create(ingress("web", json!({}))),
        create(ingress(
            "web",
            json!({"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}),
        )),
        create(ingress(
            "web",
            json!({"ingressClassName": "Nginx_Class", "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}),
        )),
        // NetworkPolicy.
        create(network_policy(
            "deny-all",
            json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
        )),
        create(network_policy(
            "web",
            json!({"ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}, {"namespaceSelector": {"matchLabels": {"team": "a"}}}, {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}], "ports": [{"protocol": "TCP", "port": 8080}, {"port": "http"}, {"port": 30000, "endPort": 32000}]}]}),
        )),
        create(network_policy(
            "web",
            json!({"ingress": [{"ports": [{"port": 70000}]}]}),
        )),
        create(network_policy(
            "web",
            json!({"ingress": [{"ports": [{"port": 8080, "protocol": "tcp"}]}]}),
        )),
        create(network_policy(
            "web",
            json!({"ingress": [{"ports": [{"port": 9000, "endPort": 8000}]}]}),
        )),
        create(network_policy(
            "web",
            json!({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}),
        )),
        create(network_policy(
            "web",
            json!({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["192.168.0.0/24"]}}]}]}),
        )),
        create(network_policy(
            "web",
            json!({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16"}, "podSelector": {}}]}]}),
        )),
        create(network_policy("web", json!({"policyTypes": ["Sideways"]}))),
        create(network_policy(
            "web",
            json!({"podSelector": {"matchLabels": {"app": "a b"}}}),
        )),
        create(network_policy(
            "web",
            json!({"egress": [{"ports": [{"port": "Not_A_Name"}]}]}),
        )),
        // PersistentVolumeClaim.
        create(pvc(
            "data",
            json!({"storageClassName": "standard", "volumeMode": "Filesystem"}),
        )),
        create(pvc("data", json!({"accessModes": null}))),
        create(pvc("data", json!({"accessModes": ["ReadWriteSometimes"]}))),
        create(pvc("data", json!({"resources": {"requests": null}}))),
        create(pvc(
            "data",
            json!({"resources": {"requests": {"storage": "0"}}}),
        )),
        create(pvc(
            "data",
            json!({"resources": {"requests": {"storage": "lots"}}}),
        )),
        create(pvc(
            "data",
            json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]}),
        )),
        create(pvc("data", json!({"volumeMode": "Sometimes"}))),
        update(
            pvc("frozen", json!({})),
            json!({"spec": {"storageClassName": "fast"}}),
        ),
        update(
            pvc("frozen", json!({})),
            json!({"spec": {"accessModes": ["ReadWriteMany"]}}),
        )
        .fields_only(),
        // More of the Go validation.
        create(secret("big", json!({"stringData": {"a": "x".repeat(1_048_577)}}))),
        create(ingress("web", json!({"rules": [{"host": "example.com", "http": {"paths": []}}]}))),
        create(ingress_path(json!({"backend": {"service": {"name": "web", "port": {}}}}))),
        create(network_policy("web", json!({"ingress": [{"from": [{}]}]}))),
        create(pod("web", json!({}), json!({"volumes": [{"name": "s", "secret": {}}]}))),
        create(pod("web", json!({}), json!({"volumes": [{"name": "c", "configMap": {"name": "c", "items": [{"key": "a", "path": "/etc/a"}]}}]}))),
        create(pod("web", json!({"env": [{"name": "A", "valueFrom": {}}]}), json!({}))),
        create(pod("web", json!({"livenessProbe": {"periodSeconds": 5}}), json!({}))),
        create(pod("web", json!({"ports": [{"name": "http"}]}), json!({}))),
        create(pod("web", json!({"ports": [{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81}]}), json!({}))),
        create(pod("web", json!({"ports": [{"containerPort": 80, "hostPort": 70000}]}), json!({}))),
        create(pod("web", json!({}), json!({"securityContext": {"runAsGroup": -1, "fsGroup": -5}}))),
        create(binding("RoleBinding", "readers", json!({"name": "a/b"}), json!([]))),
        create(binding("RoleBinding", "readers", json!({}), json!([{"kind": "ServiceAccount", "name": "builder", "apiGroup": "rbac.authorization.k8s.io"}]))),
        create(deployment("web", json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": -1}}}))),
        create(config_map("owned", json!({"metadata": {"ownerReferences": [{"apiVersion": "", "kind": "", "name": "", "uid": "u"}]}}))),
        create(service("web", json!({"type": "ExternalName", "externalName": "db.example.com.", "ports": null}))),
        create(service("web", json!({"ports": [{"port": 80, "name": "http", "protocol": "UDP"}, {"port": 80, "name": "http-tcp"}]}))),
        // Real-world objects, all valid.
        create(object("apps/v1", "Deployment", "frontend", json!({
            "metadata": {"labels": {"app.kubernetes.io/name": "frontend", "app.kubernetes.io/part-of": "shop"}, "annotations": {"deployment.kubernetes.io/revision": "3"}},
            "spec": {
                "replicas": 2, "revisionHistoryLimit": 5, "progressDeadlineSeconds": 300, "minReadySeconds": 5,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                "selector": {"matchLabels": {"app.kubernetes.io/name": "frontend"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]},
                "template": {
                    "metadata": {"labels": {"app.kubernetes.io/name": "frontend", "tier": "web"}, "annotations": {"checksum/config": "abc123"}},
                    "spec": {
                        "serviceAccountName": "default",
                        "automountServiceAccountToken": false,
                        "imagePullSecrets": [{"name": "registry"}],
                        "securityContext": {"runAsNonRoot": true, "runAsUser": 101, "runAsGroup": 101, "fsGroup": 101, "seccompProfile": {"type": "RuntimeDefault"}},
                        "initContainers": [{"name": "migrate", "image": "shop/migrate:1.4", "command": ["/migrate", "up"], "envFrom": [{"configMapRef": {"name": "frontend"}}, {"secretRef": {"name": "db", "optional": true}, "prefix": "DB_"}]}],
                        "containers": [{
                            "name": "frontend", "image": "registry.example.com/shop/frontend@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                            "imagePullPolicy": "IfNotPresent",
                            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090}],
                            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}, {"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}, {"name": "LOG_LEVEL", "value": "info"}, {"name": "my.dotted-name", "value": "x"}],
                            "resources": {"requests": {"cpu": "250m", "memory": "256Mi", "ephemeral-storage": "1Gi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
                            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "httpHeaders": [{"name": "X-Probe", "value": "1"}]}, "periodSeconds": 20},
                            "readinessProbe": {"grpc": {"port": 9090}},
                            "startupProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "failureThreshold": 30},
                            "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}},
                            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}},
                            "volumeMounts": [{"name": "config", "mountPath": "/etc/frontend", "readOnly": true}, {"name": "tmp", "mountPath": "/tmp"}, {"name": "token", "mountPath": "/var/run/secrets/tokens"}, {"name": "info", "mountPath": "/etc/podinfo"}],
                        }],
                        "volumes": [
                            {"name": "config", "configMap": {"name": "frontend", "defaultMode": 420, "items": [{"key": "app.yaml", "path": "app.yaml"}]}},
                            {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi", "medium": "Memory"}},
                            {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600, "audience": "vault"}}]}},
                            {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                        ],
                        "nodeSelector": {"kubernetes.io/os": "linux"},
                        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}, {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}]}}},
                        "terminationGracePeriodSeconds": 45,
                        "dnsPolicy": "ClusterFirst",
                        "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]},
                    },
                },
            },
        }))),
        create(workload("StatefulSet", "postgres", json!({
            "serviceName": "postgres", "replicas": 3, "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container(json!({"name": "postgres", "image": "postgres:16", "ports": [{"name": "pg", "containerPort": 5432}], "env": [{"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"}], "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"}]}))]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"app": "postgres"}}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "resources": {"requests": {"storage": "20Gi"}}}}],
        }))),
        create(workload("DaemonSet", "node-exporter", json!({
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "hostNetwork": true, "hostPID": true,
                "containers": [container(json!({"name": "node-exporter", "image": "prom/node-exporter:v1.8.2", "args": ["--path.rootfs=/host"], "ports": [{"name": "metrics", "containerPort": 9100, "hostPort": 9100}], "volumeMounts": [{"name": "root", "mountPath": "/host", "readOnly": true, "mountPropagation": "HostToContainer"}]}))],
                "volumes": [{"name": "root", "hostPath": {"path": "/", "type": "Directory"}}],
                "tolerations": [{"operator": "Exists"}],
            }},
        }))),
        create(job("reindex", json!({
            "completionMode": "Indexed", "completions": 5, "parallelism": 2, "backoffLimitPerIndex": 1, "maxFailedIndexes": 2,
            "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "app", "operator": "In", "values": [42]}}]},
            "activeDeadlineSeconds": 3600, "ttlSecondsAfterFinished": 86400,
        }))),
        create(job("once", json!({"template": {"spec": {"restartPolicy": "OnFailure"}}}))),
        create(cron_job("report", json!({"schedule": "30 2 * * 1-5", "timeZone": "America/New_York", "suspend": false, "startingDeadlineSeconds": 200, "concurrencyPolicy": "Replace"}))),
        create(cron_job("cleanup", json!({"schedule": "@daily"}))),
        create(cron_job("every-quarter", json!({"schedule": "0,15,30,45 * * * ?"}))),
        create(service("public", json!({"type": "LoadBalancer", "ports": [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}], "externalTrafficPolicy": "Cluster", "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 3600}}}))),
        create(service("node", json!({"type": "NodePort", "ports": [{"name": "http", "port": 80, "nodePort": 31234}]}))),
        create(service("postgres", json!({"clusterIP": "None", "publishNotReadyAddresses": true, "ports": [{"name": "pg", "port": 5432}]}))),
        create(service("single", json!({"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"], "ports": [{"port": 8080, "appProtocol": "http"}]}))),
        create(object("v1", "Service", "", json!({"metadata": {"name": null, "generateName": "web-"}, "spec": {"ports": [{"port": 80}]}}))),
        create(config_map("app-config", json!({"data": {"app.yaml": "server:\n  port: 8080\n", "LOG_LEVEL": "debug", "feature.flags": "a,b"}}))),
        create(secret("web-tls", json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}}))),
        create(secret("pull", json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}}))),
        create(secret("sa-token", json!({"type": "kubernetes.io/service-account-token", "metadata": {"annotations": {"kubernetes.io/service-account.name": "default"}}}))),
        create(object("v1", "ServiceAccount", "irsa", json!({"metadata": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/app"}}}))),
        create(role("Role", "leader-election", json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}, {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]))),
        create(role("ClusterRole", "system:core-kinds-reader", json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]))),
        create(binding("RoleBinding", "leader-election", json!({"kind": "Role", "name": "leader-election"}), json!([{"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}]))),
        create(binding("ClusterRoleBinding", "system:core-kinds-reader", json!({"name": "system:core-kinds-reader"}), json!([{"kind": "Group", "name": "system:authenticated"}, {"kind": "User", "name": "jane@example.com"}]))),
        create(ingress("shop", json!({"rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "frontend", "port": {"name": "http"}}}}, {"path": "/api/v1/orders", "pathType": "Exact", "backend": {"service": {"name": "orders", "port": {"number": 8080}}}}]}}, {"host": "*.shop.example.com", "http": {"paths": [{"path": "/static", "pathType": "ImplementationSpecific", "backend": {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static"}}}]}}], "tls": [{"hosts": ["shop.example.com", "*.shop.example.com"], "secretName": "shop-tls"}]}))),
        create(network_policy("allow-dns", json!({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]}))),
        create(network_policy("from-ingress", json!({"ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["ingress", "edge"]}]}}, {"ipBlock": {"cidr": "fd00::/8", "except": ["fd00:1::/32"]}}]}]}))),
        create(pvc("shared", json!({"accessModes": ["ReadWriteMany", "ReadOnlyMany"], "storageClassName": "", "volumeMode": "Filesystem", "selector": {"matchLabels": {"tier": "shared"}}, "resources": {"requests": {"storage": "500Gi"}, "limits": {"storage": "1Ti"}}}))),
        create(object("v1", "Namespace", "team-b", json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}, "annotations": {"scheduler.alpha.kubernetes.io/node-selector": "pool=b"}}}))),
        create(pod("debug", json!({"image": "busybox:1.36", "command": ["sh", "-c", "sleep 3600"], "stdin": true, "tty": true, "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}), json!({"restartPolicy": "Never", "hostname": "debug", "subdomain": "tools", "enableServiceLinks": false}))),
        create(pod("sidecar", json!({}), json!({"initContainers": [{"name": "proxy", "image": "envoyproxy/envoy:v1.31", "restartPolicy": "Always"}], "shareProcessNamespace": true}))),
        create(workload("ReplicaSet", "legacy", json!({"replicas": 0, "selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}))),
        // Where create and server-side apply answer differently, plait
        // answers as apply does.
        apply(widget("w", json!({"spec": {"parts": [{"name": "a"}, {"name": "a", "count": 2}]}}))),
        apply(widget("w", json!({"spec": {"size": null}}))),
        apply(widget("w", json!({"spec": {"size": "s"}, "status": {"phase": "Exploded", "count": "many"}}))),
        apply(widget("forbidden", json!({"spec": {"size": "s"}}))),
        create(widget("forbidden", json!({"spec": {"size": "s"}}))),
        create(widget("w", json!({"spec": {"parts": [{"name": "a"}, {"name": "b"}]}}))),
    ]
}

/// The plural the API server serves a kind as, and whether it is namespaced.
fn resource_of(api_version: &str, kind: &str) -> (kube::discovery::ApiResource, bool) {
    let (plural, namespaced) = match kind {
        "Namespace" => ("namespaces", false),
        "ClusterRole" => ("clusterroles", false),
        "ClusterRoleBinding" => ("clusterrolebindings", false),
        "NetworkPolicy" => ("networkpolicies", true),
        "Ingress" => ("ingresses", true),
        "Widget" => ("widgets", true),
        other => {
            let lower = other.to_lowercase();
            return (
                plait_controlplane::resource(api_version, kind, &format!("{lower}s")),
                true,
            );
        }
    };
    (
        plait_controlplane::resource(api_version, kind, plural),
        namespaced,
    )
}

/// The API server's causes as `field: message` lines, sorted; empty when it
/// accepts the object.
fn causes(answer: Result<DynamicObject, kube::Error>, what: &str) -> Vec<String> {
    let mut lines = match answer {
        Ok(_) => Vec::new(),
        Err(kube::Error::Api(status)) => match status.details {
            Some(d) if !d.causes.is_empty() => d
                .causes
                .into_iter()
                .map(|c| {
                    if c.field.is_empty() {
                        c.message
                    } else {
                        format!("{}: {}", c.field, c.message)
                    }
                })
                .collect(),
            _ => vec![status.message],
        },
        Err(e) => panic!("{what}: {e}"),
    };
    lines.sort();
    lines
}

/// Sends a request again while the API server does not serve the kind yet
/// (a CRD just applied).
async fn served<F, Fut>(send: F) -> Result<DynamicObject, kube::Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<DynamicObject, kube::Error>>,
{
    let started = std::time::Instant::now();
    loop {
        match send().await {
            Err(kube::Error::Api(s))
                if s.code == 404 && started.elapsed() < std::time::Duration::from_secs(30) =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            other => return other,
        }
    }
}

#[tokio::test]
async fn plait_answers_for_core_kinds_as_the_api_server_does() {
    let cluster = ControlPlane::shared().unwrap_or_else(|e| panic!("test cluster: {e}"));
    let client = cluster.client().await;
    let ns = cluster.namespace("core-kinds").await;
    // Pods need the namespace's default service account, which the
    // service-account controller creates shortly after the namespace.
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), &ns);
    for _ in 0..100 {
        if accounts.get_opt("default").await.ok().flatten().is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let crd = widget_crd();
    plait_controlplane::apply(
        &client,
        &plait_controlplane::resource(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
        &crd,
        "core-kinds-test",
    )
    .await;
    let mut catalog = Catalog::builtin().unwrap_or_else(|e| panic!("{e}"));
    catalog
        .add_definition(&crd)
        .unwrap_or_else(|e| panic!("{e}"));
    let validator = Validator::new(catalog);
    let dry_run = PostParams {
        dry_run: true,
        field_manager: None,
    };
    let mut failures = Vec::new();
    let cases = cases();
    assert!(cases.len() >= 150, "{} cases", cases.len());
    for (i, case) in cases.into_iter().enumerate() {
        let mut object = case.object;
        let api_version = object["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        let (resource, namespaced) = resource_of(&api_version, &kind);
        if namespaced {
            object["metadata"]["namespace"] = json!(ns);
        }
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(client.clone(), &ns, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        let what = format!("case {i} ({kind})");
        let dynamic = |v: &Value| -> DynamicObject {
            serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{what}: {e}"))
        };
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (server, plait, sent) = match case.write {
            Write::Create => {
                let sent = dynamic(&object);
                let server = causes(served(|| api.create(&dry_run, &sent)).await, &what);
                (server, validator.validate(&object, None), object)
            }
            Write::Apply => {
                let params = PatchParams {
                    dry_run: true,
                    ..PatchParams::apply("core-kinds-test").force()
                };
                let server = causes(
                    api.patch(&name, &params, &Patch::Apply(&object)).await,
                    &what,
                );
                (server, validator.validate(&object, None), object)
            }
            Write::Update(patch) => {
                // A name of its own, as the old object is stored.
                let name = format!("{name}-{i}");
                object["metadata"]["name"] = json!(name);
                let stored = api
                    .create(&PostParams::default(), &dynamic(&object))
                    .await
                    .unwrap_or_else(|e| panic!("{what}: storing the old object: {e}"));
                let old = serde_json::to_value(&stored).unwrap_or_else(|e| panic!("{e}"));
                let new = merge(old.clone(), patch);
                let server = causes(api.replace(&name, &dry_run, &dynamic(&new)).await, &what);
                (server, validator.validate(&new, Some(&old)), new)
            }
        };
        let mut mine: Vec<String> = plait.findings.iter().map(|f| f.message.clone()).collect();
        let generate_name = sent["metadata"]["generateName"]
            .as_str()
            .unwrap_or_default();
        let mut server: Vec<String> = server
            .iter()
            .map(|line| without_random_suffix(line, generate_name))
            .collect();
        if case.fields_only {
            server = server.iter().map(|l| field_and_kind(l)).collect();
            mine = mine.iter().map(|l| field_and_kind(l)).collect();
        }
        server.sort();
        mine.sort();
        if server != mine {
            let mut shown = sent.to_string();
            if shown.len() > 600 {
                shown.truncate(600);
                shown.push('…');
            }
            failures.push(format!(
                "{what}: {shown}\n  api server {server:#?}\n  plait      {mine:#?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
