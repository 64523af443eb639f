//! The core group (`v1`): pods and pod templates, Services, ConfigMaps,
//! Secrets, PersistentVolumeClaims, Namespaces.

use std::collections::HashSet;
use std::net::IpAddr;

use base64::Engine;
use serde_json::{Map, Value};

use super::names::{self, dns1123_label, dns1123_subdomain, port_name, port_number};
use super::quantity::{self, Quantity};
use super::{Ctx, field, flag, int, is_empty, list, map, meta, text, text_or_empty};
use crate::problem::Path;

/// Which kind of object a pod spec is part of: what its restart policy and
/// deadlines may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PodOwner {
    Pod,
    /// A Deployment's, ReplicaSet's, StatefulSet's or DaemonSet's template.
    ReplicaSet,
    Job,
}

/// The most bytes a ConfigMap's or Secret's data may take.
const DATA_MAX_BYTES: usize = 1024 * 1024;

/// The volume sources, in the order Go checks them: the first is the
/// volume's type, each other one is refused.
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "projected",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// Resource names a container may request without a domain.
const CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// The other resource names Kubernetes defines (quotas, storage).
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

pub(crate) fn nothing(_: &mut Ctx, _: &Value) {}

pub(crate) fn namespace(_: &mut Ctx, _: &Value) {}

pub(crate) fn pod(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    pod_spec(ctx, &spec, &Path::root().child("spec"), PodOwner::Pod);
}

/// A pod template: its labels and annotations, and its spec with the
/// restart policy defaulted to `Always`.
pub(crate) fn pod_template(ctx: &mut Ctx, template: &Value, at: &Path, owner: PodOwner) {
    meta::template_meta(ctx, template.get("metadata"), &at.child("metadata"));
    let spec = template.get("spec").cloned().unwrap_or(Value::Null);
    pod_spec(ctx, &spec, &at.child("spec"), owner);
}

fn restart_policy(spec: &Value) -> &str {
    text(spec, "restartPolicy")
        .filter(|p| !p.is_empty())
        .unwrap_or("Always")
}

fn pod_spec(ctx: &mut Ctx, spec: &Value, at: &Path, owner: PodOwner) {
    let volumes = volumes(ctx, list(spec, "volumes"), &at.child("volumes"));
    let containers = list(spec, "containers");
    if containers.is_empty() {
        ctx.required(&at.child("containers"), "");
    }
    let mut names = HashSet::new();
    for (i, container) in containers.iter().enumerate() {
        let name = text_or_empty(container, "name");
        names.insert(name.to_string());
        validate_container(
            ctx,
            container,
            &volumes,
            &at.child("containers").index(i),
            owner,
        );
    }
    for (i, container) in list(spec, "initContainers").iter().enumerate() {
        let at = at.child("initContainers").index(i);
        let name = text_or_empty(container, "name");
        if !name.is_empty() && !names.insert(name.to_string()) {
            ctx.duplicate(&at.child("name"), name);
        }
        validate_container(ctx, container, &volumes, &at, owner);
    }
    let policy = restart_policy(spec);
    match owner {
        PodOwner::Pod if !matches!(policy, "Always" | "OnFailure" | "Never") => {
            ctx.not_supported(
                &at.child("restartPolicy"),
                policy,
                &["Always", "OnFailure", "Never"],
            );
        }
        PodOwner::ReplicaSet if policy != "Always" => {
            ctx.not_supported(&at.child("restartPolicy"), policy, &["Always"]);
        }
        PodOwner::Job if !matches!(policy, "OnFailure" | "Never") => {
            ctx.required(
                &at.child("restartPolicy"),
                "valid values: \"OnFailure\", \"Never\"",
            );
        }
        _ => {}
    }
    if let Some(policy) = text(spec, "dnsPolicy").filter(|p| !p.is_empty())
        && !matches!(
            policy,
            "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None"
        )
    {
        ctx.not_supported(
            &at.child("dnsPolicy"),
            policy,
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        );
    }
    if let Some(deadline) = int(spec, "activeDeadlineSeconds") {
        if owner == PodOwner::ReplicaSet {
            ctx.forbidden(
                &at.child("activeDeadlineSeconds"),
                "activeDeadlineSeconds in ReplicaSet is not Supported",
            );
        } else if !(1..=i64::from(i32::MAX)).contains(&deadline) {
            ctx.invalid(
                &at.child("activeDeadlineSeconds"),
                deadline,
                names::inclusive_range_error(1, i64::from(i32::MAX)),
            );
        }
    }
    if let Some(selector) = map(spec, "nodeSelector") {
        meta::validate_labels(ctx, selector, &at.child("nodeSelector"));
    }
    for key in ["serviceAccountName", "serviceAccount"] {
        if let Some(account) = text(spec, key).filter(|a| !a.is_empty()) {
            let messages = dns1123_subdomain(account);
            ctx.invalid_each(&at.child(key), account, messages);
        }
    }
    for key in ["hostname", "subdomain"] {
        if let Some(name) = text(spec, key).filter(|n| !n.is_empty()) {
            let messages = dns1123_label(name);
            ctx.invalid_each(&at.child(key), name, messages);
        }
    }
    for (i, toleration) in list(spec, "tolerations").iter().enumerate() {
        let value = text_or_empty(toleration, "value");
        if text(toleration, "operator") == Some("Exists") && !value.is_empty() {
            ctx.invalid(
                &at.child("tolerations").index(i).child("operator"),
                value,
                "value must be empty when `operator` is 'Exists'",
            );
        }
    }
    if let Some(security) = field(spec, "securityContext") {
        ids(
            ctx,
            security,
            &at.child("securityContext"),
            &["runAsUser", "runAsGroup", "fsGroup"],
        );
    }
}

/// User and group IDs: 0 to 2^31-1.
fn ids(ctx: &mut Ctx, security: &Value, at: &Path, keys: &[&str]) {
    for key in keys {
        if let Some(id) = int(security, key)
            && !(0..=i64::from(i32::MAX)).contains(&id)
        {
            ctx.invalid(
                &at.child(key),
                id,
                names::inclusive_range_error(0, i64::from(i32::MAX)),
            );
        }
    }
}

/// Volumes: names and sources; returns the names, for volume mounts.
fn volumes(ctx: &mut Ctx, volumes: &[Value], at: &Path) -> HashSet<String> {
    let mut seen = HashSet::new();
    for (i, volume) in volumes.iter().enumerate() {
        let at = at.index(i);
        let name = text_or_empty(volume, "name");
        if name.is_empty() {
            ctx.required(&at.child("name"), "");
        } else {
            let messages = dns1123_label(name);
            ctx.invalid_each(&at.child("name"), name, messages);
        }
        seen.insert(name.to_string());
        let mut sources = VOLUME_SOURCES.iter().filter(|s| field(volume, s).is_some());
        // A volume without a source is defaulted to an emptyDir.
        if let Some(first) = sources.next() {
            volume_source(ctx, first, &volume[*first], &at.child(first));
        }
        for other in sources {
            ctx.forbidden(&at.child(other), "may not specify more than 1 volume type");
        }
    }
    seen
}

fn volume_source(ctx: &mut Ctx, source: &str, value: &Value, at: &Path) {
    let required = match source {
        "secret" => Some("secretName"),
        "persistentVolumeClaim" => Some("claimName"),
        "hostPath" => Some("path"),
        _ => None,
    };
    if let Some(key) = required
        && text_or_empty(value, key).is_empty()
    {
        ctx.required(&at.child(key), "");
    }
    file_mode(ctx, value, "defaultMode", at);
    for (i, item) in list(value, "items").iter().enumerate() {
        let at = at.child("items").index(i);
        if source != "downwardAPI" && text_or_empty(item, "key").is_empty() {
            ctx.required(&at.child("key"), "");
        }
        local_path(ctx, text_or_empty(item, "path"), &at.child("path"));
        file_mode(ctx, item, "mode", &at);
    }
}

fn file_mode(ctx: &mut Ctx, value: &Value, key: &str, at: &Path) {
    if let Some(mode) = int(value, key)
        && !(0..=0o777).contains(&mode)
    {
        ctx.invalid(
            &at.child(key),
            mode,
            "must be a number between 0 and 0777 (octal), both inclusive",
        );
    }
}

/// A path inside a volume: relative, without `..`.
fn local_path(ctx: &mut Ctx, path: &str, at: &Path) {
    if path.is_empty() {
        ctx.required(at, "");
        return;
    }
    if path.starts_with('/') {
        ctx.invalid(at, path, "must be a relative path");
    }
    if path.split('/').any(|part| part == "..") {
        ctx.invalid(at, path, "must not contain '..'");
    }
}

fn validate_container(
    ctx: &mut Ctx,
    container: &Value,
    volumes: &HashSet<String>,
    at: &Path,
    owner: PodOwner,
) {
    let name = text_or_empty(container, "name");
    if name.is_empty() {
        ctx.required(&at.child("name"), "");
    } else {
        let messages = dns1123_label(name);
        ctx.invalid_each(&at.child("name"), name, messages);
    }
    let image = text_or_empty(container, "image");
    if image.is_empty() {
        ctx.required(&at.child("image"), "");
    } else if owner == PodOwner::Pod && image.trim() != image {
        ctx.invalid(
            &at.child("image"),
            image,
            "must not have leading or trailing whitespace",
        );
    }
    let mut port_names = HashSet::new();
    for (i, port) in list(container, "ports").iter().enumerate() {
        let at = at.child("ports").index(i);
        if let Some(name) = text(port, "name").filter(|n| !n.is_empty()) {
            let messages = port_name(name);
            ctx.invalid_each(&at.child("name"), name, messages);
            if !port_names.insert(name.to_string()) {
                ctx.duplicate(&at.child("name"), name);
            }
        }
        match int(port, "containerPort") {
            None | Some(0) => ctx.required(&at.child("containerPort"), ""),
            Some(n) => {
                for message in port_number(n) {
                    ctx.invalid(&at.child("containerPort"), n, message);
                }
            }
        }
        if let Some(host) = int(port, "hostPort").filter(|p| *p != 0) {
            for message in port_number(host) {
                ctx.invalid(&at.child("hostPort"), host, message);
            }
        }
    }
    for (i, env) in list(container, "env").iter().enumerate() {
        let at = at.child("env").index(i);
        let name = text_or_empty(env, "name");
        if name.is_empty() {
            ctx.required(&at.child("name"), "");
        } else {
            let messages = names::env_var_name(name);
            ctx.invalid_each(&at.child("name"), name, messages);
        }
        if let Some(from) = field(env, "valueFrom") {
            if !text_or_empty(env, "value").is_empty() {
                ctx.invalid(
                    &at.child("valueFrom"),
                    "",
                    "may not be specified when `value` is not empty",
                );
            }
            let sources = [
                "fieldRef",
                "resourceFieldRef",
                "configMapKeyRef",
                "secretKeyRef",
                "fileKeyRef",
            ]
            .iter()
            .filter(|s| field(from, s).is_some())
            .count();
            if sources == 0 {
                ctx.invalid(&at.child("valueFrom"), "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`");
            } else if sources > 1 {
                ctx.invalid(
                    &at.child("valueFrom"),
                    "",
                    "may not have more than one field specified at a time",
                );
            }
        }
    }
    for (i, mount) in list(container, "volumeMounts").iter().enumerate() {
        let at = at.child("volumeMounts").index(i);
        let name = text_or_empty(mount, "name");
        if name.is_empty() {
            ctx.required(&at.child("name"), "");
        } else if !volumes.contains(name) {
            ctx.not_found(&at.child("name"), name);
        }
        if text_or_empty(mount, "mountPath").is_empty() {
            ctx.required(&at.child("mountPath"), "");
        }
    }
    if let Some(resources) = field(container, "resources") {
        container_resources(ctx, resources, &at.child("resources"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(value) = field(container, probe) {
            handler(ctx, value, &at.child(probe), "must specify a handler type");
        }
    }
    if let Some(lifecycle) = field(container, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(value) = field(lifecycle, hook) {
                handler(
                    ctx,
                    value,
                    &at.child("lifecycle").child(hook),
                    "must specify a handler type",
                );
            }
        }
    }
    if let Some(security) = field(container, "securityContext") {
        ids(
            ctx,
            security,
            &at.child("securityContext"),
            &["runAsUser", "runAsGroup"],
        );
    }
}

/// A probe's or hook's one handler, and its port.
fn handler(ctx: &mut Ctx, probe: &Value, at: &Path, none: &str) {
    let mut handlers = ["exec", "httpGet", "tcpSocket", "grpc", "sleep"]
        .into_iter()
        .filter(|h| field(probe, h).is_some());
    let Some(first) = handlers.next() else {
        ctx.required(at, none);
        return;
    };
    for other in handlers {
        ctx.forbidden(&at.child(other), "may not specify more than 1 handler type");
    }
    if matches!(first, "httpGet" | "tcpSocket") {
        number_or_name(ctx, &probe[first], "port", &at.child(first));
    }
}

/// A port given as a number or as a container port's name.
fn number_or_name(ctx: &mut Ctx, parent: &Value, key: &str, at: &Path) {
    let at = at.child(key);
    match parent.get(key) {
        Some(Value::String(name)) => {
            let messages = port_name(name);
            ctx.invalid_each(&at, name, messages);
        }
        Some(n @ Value::Number(_)) => {
            let n = n.as_i64().unwrap_or(-1);
            for message in port_number(n) {
                ctx.invalid(&at, n, message);
            }
        }
        _ => {}
    }
}

/// Reads the quantities of a resource list; refuses the object if one
/// does not parse (the API server cannot decode it).
fn quantities(
    ctx: &mut Ctx,
    list: Option<&Map<String, Value>>,
    at: &Path,
) -> Vec<(String, String, Quantity)> {
    let mut read = Vec::new();
    for (name, value) in list.into_iter().flatten() {
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match quantity::parse(&shown) {
            Ok(q) => read.push((name.clone(), shown, q)),
            Err(why) => ctx.undecodable(&at.child(name), why),
        }
    }
    read
}

fn container_resources(ctx: &mut Ctx, resources: &Value, at: &Path) {
    let limits = quantities(ctx, map(resources, "limits"), &at.child("limits"));
    let requests = quantities(ctx, map(resources, "requests"), &at.child("requests"));
    for (key, read) in [("limits", &limits), ("requests", &requests)] {
        for (name, shown, q) in read {
            let at = at.child(key).key(name);
            resource_name(ctx, name, &at);
            if q.is_negative() {
                ctx.invalid(&at, shown.as_str(), "must be greater than or equal to 0");
            }
        }
    }
    for (name, shown, request) in &requests {
        let Some((_, limit_shown, limit)) = limits.iter().find(|(n, _, _)| n == name) else {
            continue;
        };
        if quantity::compare(*request, *limit).is_gt() {
            ctx.invalid(
                &at.child("requests"),
                shown.as_str(),
                format!("must be less than or equal to {name} limit of {limit_shown}"),
            );
        }
    }
}

fn resource_name(ctx: &mut Ctx, name: &str, at: &Path) {
    let messages = names::qualified_name(name);
    ctx.invalid_each(at, name, messages);
    let hugepages = name.starts_with("hugepages-");
    if !name.contains('/') {
        if !hugepages && !STANDARD_RESOURCES.contains(&name) {
            ctx.invalid(
                at,
                name,
                "must be a standard resource type or fully qualified",
            );
        }
        if !hugepages && !CONTAINER_RESOURCES.contains(&name) {
            ctx.invalid(at, name, "must be a standard resource for containers");
        }
    }
}

pub(crate) fn config_map(ctx: &mut Ctx, object: &Value) {
    let binary = map(object, "binaryData");
    let mut size = 0;
    for (key, value) in map(object, "data").into_iter().flatten() {
        let at = Path::root().child("data").key(key);
        let messages = names::config_map_key(key);
        ctx.invalid_each(&at, key, messages);
        if binary.is_some_and(|b| b.contains_key(key)) {
            ctx.invalid(&at, key.as_str(), "duplicate of key present in binaryData");
        }
        size += value.as_str().map_or(0, str::len);
    }
    for (key, value) in binary.into_iter().flatten() {
        let at = Path::root().child("binaryData").key(key);
        let messages = names::config_map_key(key);
        ctx.invalid_each(&at, key, messages);
        size += decoded_len(value);
    }
    if size > DATA_MAX_BYTES {
        ctx.too_long(&Path::root().key(""), DATA_MAX_BYTES as u64);
    }
}

fn decoded_len(value: &Value) -> usize {
    let text = value.as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_or(text.len(), |bytes| bytes.len())
}

/// An immutable ConfigMap's or Secret's data and `immutable` stay as they are.
fn immutable_data(ctx: &mut Ctx, object: &Value, old: &Value, data_keys: &[&str]) {
    if !flag(old, "immutable") {
        return;
    }
    let message = "field is immutable when `immutable` is set";
    let data_of = |o: &Value| -> Vec<Option<Value>> {
        data_keys
            .iter()
            .map(|k| field(o, k).cloned().filter(|v| !is_empty(Some(v))))
            .collect()
    };
    if data_of(object) != data_of(old) {
        ctx.forbidden(&Path::root().child("data"), message);
    }
    if !flag(object, "immutable") {
        ctx.forbidden(&Path::root().child("immutable"), message);
    }
}

pub(crate) fn config_map_update(ctx: &mut Ctx, object: &Value, old: &Value) {
    immutable_data(ctx, object, old, &["data", "binaryData"]);
}

/// The keys a Secret of a type must have.
fn secret_type_keys(secret_type: &str) -> &'static [&'static str] {
    match secret_type {
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/ssh-auth" => &["ssh-privatekey"],
        _ => &[],
    }
}

/// A Secret's data as the API server sees it: `stringData` merged in.
fn secret_data(object: &Value) -> Map<String, Value> {
    let mut data = map(object, "data").cloned().unwrap_or_default();
    for (key, value) in map(object, "stringData").into_iter().flatten() {
        data.insert(key.clone(), value.clone());
    }
    data
}

pub(crate) fn secret(ctx: &mut Ctx, object: &Value) {
    let data = secret_data(object);
    let string_data = map(object, "stringData");
    let mut size = 0;
    for (key, value) in &data {
        let messages = names::config_map_key(key);
        ctx.invalid_each(&Path::root().child("data").key(key), key, messages);
        size += match string_data.and_then(|s| s.get(key)) {
            Some(text) => text.as_str().map_or(0, str::len),
            None => decoded_len(value),
        };
    }
    if size > DATA_MAX_BYTES {
        ctx.too_long(&Path::root().child("data"), DATA_MAX_BYTES as u64);
    }
    let secret_type = text(object, "type")
        .filter(|t| !t.is_empty())
        .unwrap_or("Opaque");
    for key in secret_type_keys(secret_type) {
        if !data.contains_key(*key) {
            ctx.required(&Path::root().child("data").key(key), "");
        }
    }
    match secret_type {
        // Either may be empty, but one must be there.
        "kubernetes.io/basic-auth"
            if !data.contains_key("username") && !data.contains_key("password") =>
        {
            ctx.required(&Path::root().child("data").key("username"), "");
            ctx.required(&Path::root().child("data").key("password"), "");
        }
        "kubernetes.io/service-account-token" => {
            let named = object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !named {
                ctx.required(
                    &Path::root()
                        .child("metadata")
                        .child("annotations")
                        .key("kubernetes.io/service-account.name"),
                    "",
                );
            }
        }
        "kubernetes.io/dockerconfigjson" | "kubernetes.io/dockercfg" => {
            let key = secret_type_keys(secret_type)[0];
            if let Some(value) = data.get(key) {
                let bytes = match (value, map(object, "stringData").and_then(|s| s.get(key))) {
                    (_, Some(Value::String(s))) => s.clone().into_bytes(),
                    (Value::String(s), None) => base64::engine::general_purpose::STANDARD
                        .decode(s)
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                if let Err(e) = serde_json::from_slice::<Value>(&bytes) {
                    ctx.invalid(
                        &Path::root().child("data").key(key),
                        "<secret contents redacted>",
                        e.to_string(),
                    );
                }
            }
        }
        _ => {}
    }
}

pub(crate) fn secret_update(ctx: &mut Ctx, object: &Value, old: &Value) {
    let type_of = |o: &Value| {
        text(o, "type")
            .filter(|t| !t.is_empty())
            .unwrap_or("Opaque")
            .to_string()
    };
    let new_type = type_of(object);
    if new_type != type_of(old) {
        ctx.invalid(&Path::root().child("type"), new_type, "field is immutable");
    }
    let with_data = |o: &Value| {
        let mut o = o.clone();
        o["data"] = Value::Object(secret_data(&o));
        o
    };
    immutable_data(ctx, &with_data(object), &with_data(old), &["data"]);
}

pub(crate) fn service(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let at = Path::root().child("spec");
    let service_type = text(&spec, "type")
        .filter(|t| !t.is_empty())
        .unwrap_or("ClusterIP");
    let cluster_ip = text_or_empty(&spec, "clusterIP");
    let headless = cluster_ip == "None";
    let ports = list(&spec, "ports");
    if ports.is_empty() && !headless && service_type != "ExternalName" {
        ctx.required(&at.child("ports"), "");
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let at = at.child("ports").index(i);
        let name = text_or_empty(port, "name");
        if ports.len() > 1 && name.is_empty() {
            ctx.required(&at.child("name"), "");
        } else if !name.is_empty() {
            let messages = dns1123_label(name);
            ctx.invalid_each(&at.child("name"), name, messages);
            if !names.insert(name.to_string()) {
                ctx.duplicate(&at.child("name"), name);
            }
        }
        let number = int(port, "port").unwrap_or(0);
        for message in port_number(number) {
            ctx.invalid(&at.child("port"), number, message);
        }
        // The target port defaults to the port.
        match port.get("targetPort") {
            Some(Value::String(target)) if !target.is_empty() => {
                let messages = port_name(target);
                ctx.invalid_each(&at.child("targetPort"), target, messages);
            }
            target => {
                let target = target
                    .and_then(Value::as_i64)
                    .filter(|t| *t != 0)
                    .unwrap_or(number);
                for message in port_number(target) {
                    ctx.invalid(&at.child("targetPort"), target, message);
                }
            }
        }
        if service_type == "ClusterIP" && int(port, "nodePort").is_some_and(|p| p != 0) {
            ctx.forbidden(
                &at.child("nodePort"),
                "may not be used when `type` is 'ClusterIP'",
            );
        }
    }
    if !cluster_ip.is_empty() && !headless && cluster_ip.parse::<IpAddr>().is_err() {
        ctx.invalid(
            &at.child("clusterIPs").index(0),
            cluster_ip,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        );
    }
    if service_type == "ExternalName" {
        match text(&spec, "externalName").filter(|n| !n.is_empty()) {
            None => ctx.required(&at.child("externalName"), ""),
            Some(name) => {
                let name = name.strip_suffix('.').unwrap_or(name);
                let messages = dns1123_subdomain(name);
                ctx.invalid_each(&at.child("externalName"), name, messages);
            }
        }
    }
    if let Some(selector) = map(&spec, "selector") {
        meta::validate_labels(ctx, selector, &at.child("selector"));
    }
    let external = matches!(service_type, "NodePort" | "LoadBalancer");
    if let Some(policy) = text(&spec, "externalTrafficPolicy").filter(|p| !p.is_empty())
        && !external
    {
        ctx.invalid(
            &at.child("externalTrafficPolicy"),
            policy,
            "may only be set for externally-accessible services",
        );
    }
    for (i, range) in list(&spec, "loadBalancerSourceRanges").iter().enumerate() {
        let range = range.as_str().unwrap_or_default();
        if !is_cidr(range.trim()) {
            ctx.invalid(
                &at.child("LoadBalancerSourceRanges").index(i),
                range,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            );
        }
    }
}

/// An address and prefix length, as Go's `netip.ParsePrefix` reads it.
pub(crate) fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let width = match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => 32,
        Ok(IpAddr::V6(_)) => 128,
        Err(_) => return false,
    };
    !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u16>().is_ok_and(|n| n <= width)
}

pub(crate) fn service_update(ctx: &mut Ctx, object: &Value, old: &Value) {
    let ips = |o: &Value| -> Vec<Value> {
        let listed = o
            .pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if listed.is_empty() {
            o.pointer("/spec/clusterIP")
                .filter(|v| !is_empty(Some(v)))
                .cloned()
                .into_iter()
                .collect()
        } else {
            listed
        }
    };
    let (new_ips, old_ips) = (ips(object), ips(old));
    if !old_ips.is_empty() && !new_ips.is_empty() && new_ips.first() != old_ips.first() {
        ctx.invalid(
            &Path::root().child("spec").child("clusterIPs").index(0),
            Value::Array(new_ips),
            "may not change once set",
        );
    }
}

pub(crate) fn persistent_volume_claim(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    claim_spec(ctx, &spec, &Path::root().child("spec"));
}

/// A claim's spec: access modes and the storage it requests.
pub(crate) fn claim_spec(ctx: &mut Ctx, spec: &Value, at: &Path) {
    let modes: Vec<&str> = list(spec, "accessModes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if modes.is_empty() {
        ctx.required(
            &at.child("accessModes"),
            "at least 1 access mode is required",
        );
    }
    const MODES: &[&str] = &[
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    for mode in &modes {
        if !MODES.contains(mode) {
            ctx.not_supported(&at.child("accessModes"), *mode, MODES);
        }
    }
    if modes.contains(&"ReadWriteOncePod") && modes.len() > 1 {
        ctx.forbidden(
            &at.child("accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        );
    }
    let requests = spec
        .pointer("/resources/requests")
        .and_then(Value::as_object);
    let storage_at = at.child("resources").key("storage");
    match requests.and_then(|r| r.get("storage")) {
        None => ctx.required(&storage_at, ""),
        Some(value) => {
            let shown = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_string);
            match quantity::parse(&shown) {
                Err(why) => ctx.undecodable(
                    &at.child("resources").child("requests").child("storage"),
                    why,
                ),
                Ok(q) if q.is_negative() || q.is_zero() => {
                    ctx.invalid(&storage_at, shown.as_str(), "must be greater than zero");
                }
                Ok(_) => {}
            }
        }
    }
}

pub(crate) fn persistent_volume_claim_update(ctx: &mut Ctx, object: &Value, old: &Value) {
    // What may change: the requests, the attributes class, and a storage
    // class that was not set.
    let comparable = |o: &Value, other: &Value| {
        let mut spec = o.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(spec) = spec.as_object_mut() {
            if let Some(resources) = spec.get_mut("resources").and_then(Value::as_object_mut) {
                resources.remove("requests");
            }
            spec.remove("volumeAttributesClassName");
            if other
                .pointer("/spec/storageClassName")
                .is_none_or(Value::is_null)
            {
                spec.remove("storageClassName");
            }
        }
        spec
    };
    if comparable(object, old) != comparable(old, old) {
        ctx.forbidden(
            &Path::root().child("spec"),
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        );
    }
}
