//! `networking.k8s.io/v1`: Ingresses and NetworkPolicies.

use std::net::IpAddr;

use serde_json::Value;

use super::core::is_cidr;
use super::names::{
    dns1035_label, dns1123_subdomain, port_name, port_number, wildcard_dns1123_subdomain,
};
use super::{Ctx, field, int, list, meta, text, text_or_empty};
use crate::problem::Path;

pub(crate) fn ingress(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let at = Path::root().child("spec");
    let rules = list(&spec, "rules");
    let default_backend = field(&spec, "defaultBackend");
    if rules.is_empty() && default_backend.is_none() {
        ctx.invalid(
            &at,
            Value::Null,
            "either `defaultBackend` or `rules` must be specified",
        );
    }
    if let Some(backend) = default_backend {
        ingress_backend(ctx, backend, &at.child("defaultBackend"));
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = at.child("rules").index(i);
        if let Some(host) = text(rule, "host").filter(|h| !h.is_empty()) {
            host_name(ctx, host, &at.child("host"));
        }
        let Some(http) = field(rule, "http") else {
            continue;
        };
        let paths = list(http, "paths");
        if paths.is_empty() {
            ctx.required(&at.child("http").child("paths"), "");
        }
        for (j, path) in paths.iter().enumerate() {
            let at = at.child("http").child("paths").index(j);
            http_path(ctx, path, &at);
            if let Some(backend) = field(path, "backend") {
                ingress_backend(ctx, backend, &at.child("backend"));
            }
        }
    }
    if let Some(class) = text(&spec, "ingressClassName") {
        let messages = dns1123_subdomain(class);
        ctx.invalid_each(&at.child("ingressClassName"), class, messages);
    }
    for (i, tls) in list(&spec, "tls").iter().enumerate() {
        for (j, host) in list(tls, "hosts").iter().enumerate() {
            let host = host.as_str().unwrap_or_default();
            let at = at.child("tls").index(i).child("hosts").index(j);
            let messages = if host.contains('*') {
                wildcard_dns1123_subdomain(host)
            } else {
                dns1123_subdomain(host)
            };
            ctx.invalid_each(&at, host, messages);
        }
    }
}

fn host_name(ctx: &mut Ctx, host: &str, at: &Path) {
    if host.parse::<IpAddr>().is_ok() {
        ctx.invalid(at, host, "must be a DNS name, not an IP address");
    }
    let messages = if host.contains('*') {
        wildcard_dns1123_subdomain(host)
    } else {
        dns1123_subdomain(host)
    };
    ctx.invalid_each(at, host, messages);
}

fn http_path(ctx: &mut Ctx, path: &Value, at: &Path) {
    let value = text_or_empty(path, "path");
    match text(path, "pathType") {
        None | Some("") => ctx.required(&at.child("pathType"), "pathType must be specified"),
        Some("Exact" | "Prefix") => {
            if !value.starts_with('/') {
                ctx.invalid(&at.child("path"), value, "must be an absolute path");
            }
            if !value.is_empty() {
                for sequence in ["//", "/./", "/../", "%2f", "%2F"] {
                    if value.contains(sequence) {
                        ctx.invalid(
                            &at.child("path"),
                            value,
                            format!("must not contain '{sequence}'"),
                        );
                    }
                }
                for suffix in ["/..", "/."] {
                    if value.ends_with(suffix) {
                        ctx.invalid(
                            &at.child("path"),
                            value,
                            format!("cannot end with '{suffix}'"),
                        );
                    }
                }
            }
        }
        Some("ImplementationSpecific") => {
            if !value.is_empty() && !value.starts_with('/') {
                ctx.invalid(&at.child("path"), value, "must be an absolute path");
            }
        }
        Some(_) => {}
    }
}

fn ingress_backend(ctx: &mut Ctx, backend: &Value, at: &Path) {
    let service = field(backend, "service");
    if service.is_some() && field(backend, "resource").is_some() {
        ctx.invalid(at, "", "cannot set both resource and service backends");
        return;
    }
    let Some(service) = service else { return };
    let name = text_or_empty(service, "name");
    let messages = dns1035_label(name);
    ctx.invalid_each(&at.child("service").child("name"), name, messages);
    let port = service.get("port").cloned().unwrap_or(Value::Null);
    let port_at = at.child("service").child("port");
    let port_named = text(&port, "name").is_some_and(|n| !n.is_empty());
    let number = int(&port, "number").filter(|n| *n != 0);
    match (port_named, number) {
        (true, Some(_)) => ctx.invalid(at, "", "cannot set both port name & port number"),
        (true, None) => {
            let name = text_or_empty(&port, "name");
            let messages = port_name(name);
            ctx.invalid_each(&port_at.child("name"), name, messages);
        }
        (false, Some(n)) => {
            for message in port_number(n) {
                ctx.invalid(&port_at.child("number"), n, message);
            }
        }
        (false, None) => ctx.required(&port_at, "port name or number is required"),
    }
}

pub(crate) fn network_policy(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let at = Path::root().child("spec");
    if let Some(selector) = field(&spec, "podSelector") {
        meta::label_selector(ctx, selector, &at.child("podSelector"));
    }
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in list(&spec, direction).iter().enumerate() {
            let at = at.child(direction).index(i);
            for (j, port) in list(rule, "ports").iter().enumerate() {
                policy_port(ctx, port, &at.child("ports").index(j));
            }
            for (j, peer) in list(rule, peers).iter().enumerate() {
                policy_peer(ctx, peer, &at.child(peers).index(j));
            }
        }
    }
    let types = list(&spec, "policyTypes");
    for (i, policy_type) in types.iter().enumerate() {
        let policy_type = policy_type.as_str().unwrap_or_default();
        if !matches!(policy_type, "Ingress" | "Egress") {
            ctx.not_supported(
                &at.child("policyTypes").index(i),
                policy_type,
                &["Ingress", "Egress"],
            );
        }
    }
    if types.len() > 2 {
        ctx.invalid(
            &at.child("policyTypes"),
            Value::Array(types.to_vec()),
            "may not specify more than two policyTypes",
        );
    }
}

fn policy_port(ctx: &mut Ctx, port: &Value, at: &Path) {
    if let Some(protocol) = text(port, "protocol")
        && !matches!(protocol, "TCP" | "UDP" | "SCTP")
    {
        ctx.not_supported(&at.child("protocol"), protocol, &["TCP", "UDP", "SCTP"]);
    }
    match port.get("port") {
        Some(Value::String(name)) => {
            let messages = port_name(name);
            ctx.invalid_each(&at.child("port"), name, messages);
        }
        Some(v @ Value::Number(_)) => {
            let n = v.as_i64().unwrap_or(0);
            for message in port_number(n) {
                ctx.invalid(&at.child("port"), n, message);
            }
            if let Some(end) = int(port, "endPort") {
                if end < n {
                    ctx.invalid(
                        &at.child("endPort"),
                        n,
                        "must be greater than or equal to `port`",
                    );
                }
                for message in port_number(end) {
                    ctx.invalid(&at.child("endPort"), end, message);
                }
            }
        }
        _ => {}
    }
}

fn policy_peer(ctx: &mut Ctx, peer: &Value, at: &Path) {
    let mut peers = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(selector) = field(peer, key) {
            peers += 1;
            meta::label_selector(ctx, selector, &at.child(key));
        }
    }
    let Some(block) = field(peer, "ipBlock") else {
        if peers == 0 {
            ctx.required(at, "must specify a peer");
        }
        return;
    };
    if peers > 0 {
        ctx.forbidden(at, "may not specify both ipBlock and another peer");
        return;
    }
    let at = at.child("ipBlock");
    let cidr = text_or_empty(block, "cidr");
    if cidr.is_empty() {
        ctx.required(&at.child("cidr"), "");
        return;
    }
    if !is_cidr(cidr) {
        ctx.invalid(
            &at.child("cidr"),
            cidr,
            "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
        );
        return;
    }
    for (i, except) in list(block, "except").iter().enumerate() {
        let except = except.as_str().unwrap_or_default();
        let at = at.child("except").index(i);
        if !is_cidr(except) {
            ctx.invalid(
                &at,
                except,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            );
        } else if !strict_subset(except, cidr) {
            ctx.invalid(&at, except, "must be a strict subset of `cidr`");
        }
    }
}

/// Whether the (valid) prefix `inner` lies strictly inside `outer`.
fn strict_subset(inner: &str, outer: &str) -> bool {
    let parse = |s: &str| -> Option<(u128, u32, bool)> {
        let (ip, bits) = s.split_once('/')?;
        let bits: u32 = bits.parse().ok()?;
        match ip.parse::<IpAddr>().ok()? {
            IpAddr::V4(v4) => Some((u128::from(u32::from(v4)) << 96, bits, true)),
            IpAddr::V6(v6) => Some((u128::from(v6), bits, false)),
        }
    };
    let (Some((inner_ip, inner_bits, inner_v4)), Some((outer_ip, outer_bits, outer_v4))) =
        (parse(inner), parse(outer))
    else {
        return false;
    };
    if inner_v4 != outer_v4 {
        return false;
    }
    let width = if outer_v4 { 32 } else { 128 };
    let shift = 128 - width + (width - outer_bits);
    let mask = if shift >= 128 { 0 } else { u128::MAX << shift };
    inner_bits > outer_bits && (inner_ip & mask) == (outer_ip & mask)
}
