//! What a function may read for its XR's tenant.
//!
//! A tenant is a namespace: a namespaced XR's, or the claim's for an XR
//! bound to a claim. The platform owns everything cluster-scoped. A function
//! running for a tenant reads objects of namespaced kinds in the tenant's
//! namespace; other namespaces and cluster-scoped kinds only where the
//! platform granted it, with the Function's `tenancy.plait.dev/reads`
//! annotation or controller-wide defaults. A function running for the
//! platform (a cluster-scoped XR without a claim) reads what Crossplane
//! lets it read.

use std::collections::BTreeMap;
use std::fmt;

/// Whose an XR is: the platform's, or a tenant namespace's. It decides what
/// the XR's functions may read, the identity its pipeline acts as, and the
/// share of reconciles and function-call slots its work counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tenant {
    /// The platform's own XRs: cluster-scoped, and not bound to a claim.
    Platform,
    /// A namespaced XR's namespace, or the namespace of the claim an XR is
    /// bound to.
    Namespace(String),
}

impl Tenant {
    /// The label of [`Tenant::Platform`] in metrics and messages; no
    /// namespace can be named this.
    pub const PLATFORM_LABEL: &'static str = "(platform)";

    /// The tenant of `namespace`; the platform for none (or an empty one).
    pub fn of_namespace(namespace: Option<&str>) -> Tenant {
        match namespace.filter(|ns| !ns.is_empty()) {
            Some(ns) => Tenant::Namespace(ns.to_string()),
            None => Tenant::Platform,
        }
    }

    /// The tenant's namespace; `None` for the platform.
    pub fn namespace(&self) -> Option<&str> {
        match self {
            Tenant::Platform => None,
            Tenant::Namespace(ns) => Some(ns),
        }
    }

    /// How the tenant is named in metrics' `tenant` label and in messages.
    pub fn label(&self) -> &str {
        self.namespace().unwrap_or(Tenant::PLATFORM_LABEL)
    }
}

impl fmt::Display for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The annotation on a Function that grants its reads beyond the tenant.
pub const READS_ANNOTATION: &str = "tenancy.plait.dev/reads";

/// One grant: objects of `kind` in `group`, either cluster-scoped
/// (`namespace: None`) or in one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadGrant {
    pub group: String,
    pub kind: String,
    pub namespace: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{READS_ANNOTATION}: entry {entry:?}: {reason} (entries are KIND[.GROUP][/NAMESPACE], separated by commas, e.g. \"EnvironmentConfig.apiextensions.crossplane.io, ConfigMap/shared\")"
)]
pub struct GrantError {
    pub entry: String,
    pub reason: &'static str,
}

impl ReadGrant {
    /// Parses an annotation's comma-separated `KIND[.GROUP][/NAMESPACE]` entries.
    pub fn parse_list(text: &str) -> Result<Vec<ReadGrant>, GrantError> {
        text.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(ReadGrant::parse)
            .collect()
    }

    fn parse(entry: &str) -> Result<ReadGrant, GrantError> {
        let error = |reason| GrantError {
            entry: entry.into(),
            reason,
        };
        let (kind_group, namespace) = match entry.split_once('/') {
            Some((kg, ns)) => (kg, Some(ns)),
            None => (entry, None),
        };
        let (kind, group) = kind_group.split_once('.').unwrap_or((kind_group, ""));
        if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(error("the kind must be a non-empty alphanumeric name"));
        }
        if !group
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        {
            return Err(error("the group must be a DNS subdomain"));
        }
        if let Some(ns) = namespace
            && (ns.is_empty()
                || !ns
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        {
            return Err(error("the namespace must be an RFC 1123 label"));
        }
        Ok(ReadGrant {
            group: group.into(),
            kind: kind.into(),
            namespace: namespace.map(str::to_string),
        })
    }

    fn covers(&self, target: &ReadTarget) -> bool {
        self.group == group_of(&target.api_version)
            && self.kind == target.kind
            && self.namespace == target.namespace
    }
}

impl fmt::Display for ReadGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kind)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        if let Some(ns) = &self.namespace {
            write!(f, "/{ns}")?;
        }
        Ok(())
    }
}

fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

/// What the platform granted: to every function, and per function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadGrants {
    pub defaults: Vec<ReadGrant>,
    pub by_function: BTreeMap<String, Vec<ReadGrant>>,
}

impl ReadGrants {
    /// What every tenant's functions may read unless the platform says
    /// otherwise: EnvironmentConfigs, the platform's published
    /// configuration, which function-environment-configs exists to read.
    pub fn tenant_defaults() -> ReadGrants {
        ReadGrants {
            defaults: vec![ReadGrant {
                group: "apiextensions.crossplane.io".into(),
                kind: "EnvironmentConfig".into(),
                namespace: None,
            }],
            by_function: BTreeMap::new(),
        }
    }

    fn allow(&self, function: &str, target: &ReadTarget) -> bool {
        self.defaults
            .iter()
            .chain(self.by_function.get(function).into_iter().flatten())
            .any(|g| g.covers(target))
    }
}

/// An object, or objects, a step wants to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadTarget {
    pub api_version: String,
    pub kind: String,
    /// `None` for a cluster-scoped kind.
    pub namespace: Option<String>,
}

impl fmt::Display for ReadTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {} in namespace {ns}", self.api_version, self.kind),
            None => write!(f, "{} {} (cluster-scoped)", self.api_version, self.kind),
        }
    }
}

/// A read the tenancy rules refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "function {function:?} may not read {target}: a function composing for tenant \"{tenant}\" reads only namespaced objects in namespace \"{tenant}\" unless the platform grants more (annotate the Function with {READS_ANNOTATION}: \"{grant}\")"
)]
pub struct ReadRefused {
    pub tenant: Tenant,
    pub function: String,
    pub target: ReadTarget,
    /// The grant that would allow it.
    pub grant: String,
}

/// The reads of one reconcile: whose they are, and what was granted.
#[derive(Debug, Clone, Copy)]
pub struct ReadPolicy<'a> {
    /// Whose XR's reads these are.
    pub tenant: &'a Tenant,
    pub grants: &'a ReadGrants,
}

impl ReadPolicy<'_> {
    /// Where a read that names no namespace looks: the tenant's namespace,
    /// or (for the platform) everywhere.
    pub fn default_namespace(&self) -> Option<&str> {
        self.tenant.namespace()
    }

    /// Whether `function` may read `target`.
    pub fn check(&self, function: &str, target: &ReadTarget) -> Result<(), Box<ReadRefused>> {
        let Some(tenant) = self.tenant.namespace() else {
            return Ok(());
        };
        if target.namespace.as_deref() == Some(tenant) || self.grants.allow(function, target) {
            return Ok(());
        }
        let grant = ReadGrant {
            group: group_of(&target.api_version).into(),
            kind: target.kind.clone(),
            namespace: target.namespace.clone(),
        };
        Err(Box::new(ReadRefused {
            tenant: self.tenant.clone(),
            function: function.into(),
            target: target.clone(),
            grant: grant.to_string(),
        }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn target(api_version: &str, kind: &str, namespace: Option<&str>) -> ReadTarget {
        ReadTarget {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.map(str::to_string),
        }
    }

    #[test]
    fn grant_lists_parse_kind_group_and_namespace() {
        // (annotation, Ok((group, kind, namespace) per entry) or part of the error)
        type Want<'a> = Result<Vec<(&'a str, &'a str, Option<&'a str>)>, &'a str>;
        let cases: [(&str, Want); 6] = [
            ("", Ok(vec![])),
            (
                "EnvironmentConfig.apiextensions.crossplane.io, ConfigMap/shared",
                Ok(vec![
                    ("apiextensions.crossplane.io", "EnvironmentConfig", None),
                    ("", "ConfigMap", Some("shared")),
                ]),
            ),
            (
                "Bucket.s3.aws.upbound.io/team-b,",
                Ok(vec![("s3.aws.upbound.io", "Bucket", Some("team-b"))]),
            ),
            ("Config Map", Err("\"Config Map\": the kind")),
            ("ConfigMap/", Err("\"ConfigMap/\": the namespace")),
            ("Secret.UPPER", Err("\"Secret.UPPER\": the group")),
        ];
        for (text, want) in cases {
            let got = ReadGrant::parse_list(text);
            match want {
                Ok(grants) => {
                    let got: Vec<(String, String, Option<String>)> = got
                        .unwrap()
                        .into_iter()
                        .map(|g| (g.group, g.kind, g.namespace))
                        .collect();
                    let want: Vec<(String, String, Option<String>)> = grants
                        .into_iter()
                        .map(|(g, k, n)| (g.into(), k.into(), n.map(str::to_string)))
                        .collect();
                    assert_eq!(got, want, "{text}");
                }
                Err(part) => {
                    let message = got.unwrap_err().to_string();
                    assert!(message.contains(part), "{text}: {message}");
                }
            }
        }
    }

    #[test]
    fn tenants_read_their_namespace_and_what_was_granted() {
        let mut grants = ReadGrants::tenant_defaults();
        grants.by_function.insert(
            "fn-a".into(),
            ReadGrant::parse_list("ConfigMap/shared, Node").unwrap(),
        );
        // (tenant, function, target, allowed)
        let cases = [
            (
                Some("team-a"),
                "fn-a",
                target("v1", "Secret", Some("team-a")),
                true,
            ),
            (
                Some("team-a"),
                "fn-a",
                target("v1", "Secret", Some("team-b")),
                false,
            ),
            (
                Some("team-a"),
                "fn-a",
                target("v1", "Secret", Some("kube-system")),
                false,
            ),
            (
                Some("team-a"),
                "fn-a",
                target("v1", "ConfigMap", Some("shared")),
                true,
            ),
            (
                Some("team-a"),
                "fn-b",
                target("v1", "ConfigMap", Some("shared")),
                false,
            ),
            (Some("team-a"), "fn-a", target("v1", "Node", None), true),
            (Some("team-a"), "fn-b", target("v1", "Node", None), false),
            (
                Some("team-a"),
                "fn-b",
                target("v1", "Namespace", None),
                false,
            ),
            (
                Some("team-a"),
                "fn-b",
                target(
                    "apiextensions.crossplane.io/v1beta1",
                    "EnvironmentConfig",
                    None,
                ),
                true,
            ),
            (
                None,
                "fn-b",
                target("v1", "Secret", Some("kube-system")),
                true,
            ),
            (None, "fn-b", target("v1", "Namespace", None), true),
        ];
        for (namespace, function, target, allowed) in cases {
            let tenant = Tenant::of_namespace(namespace);
            let policy = ReadPolicy {
                tenant: &tenant,
                grants: &grants,
            };
            assert_eq!(
                policy.check(function, &target).is_ok(),
                allowed,
                "{tenant} {function} {target}"
            );
        }
    }

    #[test]
    fn a_refusal_names_the_function_what_it_asked_for_and_the_grant() {
        let grants = ReadGrants::default();
        let tenant = Tenant::Namespace("team-a".into());
        let policy = ReadPolicy {
            tenant: &tenant,
            grants: &grants,
        };
        let refused = policy
            .check("fn-a", &target("v1", "Secret", Some("team-b")))
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "function \"fn-a\" may not read v1 Secret in namespace team-b: a function composing for tenant \"team-a\" reads only namespaced objects in namespace \"team-a\" unless the platform grants more (annotate the Function with tenancy.plait.dev/reads: \"Secret/team-b\")"
        );
    }
}
