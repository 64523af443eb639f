//! The required-resources index: for each XR, what its last reconcile's
//! functions read as required resources (by name, or by labels, in one
//! namespace or in all), and from a changed object back to the XRs that
//! read it. Kept exact: each reconcile replaces its XR's entry, a deleted
//! XR's goes. What an XR read was confined to what its tenant may read
//! before it was read, so a tenant's XR is indexed only for that.
//!
//! A requirement many XRs share (every XR of a Composition reading one
//! EnvironmentConfig) is held once: a change is matched against each
//! distinct requirement of its kind, not against each XR.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use plait_reconcile::ObjectRef;
use plait_sdk::{ResourceMatch, ResourceSelector};

use crate::stores::changes::{Change, Labels};
use crate::vocabulary::api::group_of;

/// A kind by API group and kind: an object read at one version is the same
/// object at every other.
pub type GroupKind = (String, String);

/// One requirement as it was read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Required {
    pub kind: GroupKind,
    /// The namespace it was read in; `None` for a cluster-scoped kind, or
    /// (by labels) every namespace.
    pub namespace: Option<String>,
    pub matching: Matching,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Matching {
    Name(String),
    /// Every object whose labels include these (all of them when empty).
    Labels(BTreeMap<String, String>),
}

impl Required {
    pub fn of(selector: &ResourceSelector) -> Required {
        Required {
            kind: (
                group_of(&selector.api_version).to_string(),
                selector.kind.clone(),
            ),
            namespace: selector.namespace.clone().filter(|ns| !ns.is_empty()),
            matching: match &selector.matching {
                ResourceMatch::Name(name) => Matching::Name(name.clone()),
                ResourceMatch::Labels(labels) => Matching::Labels(labels.clone()),
            },
        }
    }

    /// Whether the object of `kind` that `change` tells of is what this
    /// selects: by its name, or by labels it matched before or matches after.
    pub fn matches(&self, kind: &GroupKind, change: &Change) -> bool {
        if self.kind != *kind {
            return false;
        }
        match &self.matching {
            Matching::Name(name) => *name == change.name && self.namespace == change.namespace,
            Matching::Labels(_) => [&change.before, &change.after]
                .into_iter()
                .flatten()
                .any(|labels| self.selects(change.namespace.as_deref(), labels)),
        }
    }

    /// Whether an object in `namespace` with `labels` is what this selects
    /// by labels.
    fn selects(&self, namespace: Option<&str>, labels: &Labels) -> bool {
        let Matching::Labels(wanted) = &self.matching else {
            return false;
        };
        let in_scope = match &self.namespace {
            None => true,
            Some(ns) => namespace == Some(ns.as_str()),
        };
        in_scope
            && wanted
                .iter()
                .all(|(key, value)| labels.get(key) == Some(value))
    }
}

/// The distinct requirements of one kind, and the XRs that read each.
#[derive(Debug, Default)]
struct KindEntry {
    /// By name: at most one requirement per namespace and name.
    named: HashMap<(Option<String>, String), Arc<Required>>,
    /// By labels: each has to be matched against a change.
    labelled: HashSet<Arc<Required>>,
}

impl KindEntry {
    fn is_empty(&self) -> bool {
        self.named.is_empty() && self.labelled.is_empty()
    }
}

/// What the XRs required, and who required what.
#[derive(Debug, Default)]
pub struct RequiredIndex {
    by_xr: HashMap<Arc<ObjectRef>, Box<[Arc<Required>]>>,
    readers: HashMap<Arc<Required>, HashSet<Arc<ObjectRef>>>,
    kinds: HashMap<GroupKind, KindEntry>,
}

/// What a [`RequiredIndex::track`] changed in the kinds any XR requires.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KindsChanged {
    /// Kinds no XR required before.
    pub added: Vec<GroupKind>,
    /// Kinds no XR requires any more.
    pub released: Vec<GroupKind>,
}

impl RequiredIndex {
    /// Records that `xr` now requires exactly `required` (nothing, once it
    /// is gone), replacing what it required before.
    pub fn track(&mut self, xr: &ObjectRef, required: &[Required]) -> KindsChanged {
        let mut distinct: Vec<&Required> = required.iter().collect();
        distinct.sort();
        distinct.dedup();
        let before = self.by_xr.get(xr);
        let unchanged = match before {
            Some(before) => before.iter().map(Arc::as_ref).eq(distinct.iter().copied()),
            None => distinct.is_empty(),
        };
        if unchanged {
            return KindsChanged::default();
        }
        let (key, before) = match self.by_xr.remove_entry(xr) {
            Some((key, before)) => (key, before.into_vec()),
            None => (Arc::new(xr.clone()), Vec::new()),
        };
        let kinds_before: HashSet<GroupKind> = self.kinds.keys().cloned().collect();
        for requirement in &before {
            self.unread(&key, requirement);
        }
        let mut now = Vec::with_capacity(distinct.len());
        for requirement in distinct {
            now.push(self.read(&key, requirement));
        }
        if !now.is_empty() {
            self.by_xr.insert(key, now.into_boxed_slice());
        }
        let mut changed = KindsChanged::default();
        for kind in self.kinds.keys() {
            if !kinds_before.contains(kind) {
                changed.added.push(kind.clone());
            }
        }
        for kind in kinds_before {
            if !self.kinds.contains_key(&kind) {
                changed.released.push(kind);
            }
        }
        changed.added.sort();
        changed.released.sort();
        changed
    }

    /// Records that `xr` read `requirement`, sharing the one entry every
    /// XR that read it holds.
    fn read(&mut self, xr: &Arc<ObjectRef>, requirement: &Required) -> Arc<Required> {
        let shared = match self.readers.get_key_value(requirement) {
            Some((shared, _)) => shared.clone(),
            None => {
                let shared = Arc::new(requirement.clone());
                let entry = self.kinds.entry(requirement.kind.clone()).or_default();
                match &requirement.matching {
                    Matching::Name(name) => {
                        entry.named.insert(
                            (requirement.namespace.clone(), name.clone()),
                            shared.clone(),
                        );
                    }
                    Matching::Labels(_) => {
                        entry.labelled.insert(shared.clone());
                    }
                }
                shared
            }
        };
        self.readers
            .entry(shared.clone())
            .or_default()
            .insert(xr.clone());
        shared
    }

    /// Forgets that `xr` read `requirement`; the requirement goes with its last reader.
    fn unread(&mut self, xr: &ObjectRef, requirement: &Arc<Required>) {
        let Some(readers) = self.readers.get_mut(requirement) else {
            return;
        };
        readers.remove(xr);
        if !readers.is_empty() {
            return;
        }
        self.readers.remove(requirement);
        let kind = &requirement.kind;
        if let Some(entry) = self.kinds.get_mut(kind) {
            match &requirement.matching {
                Matching::Name(name) => {
                    entry
                        .named
                        .remove(&(requirement.namespace.clone(), name.clone()));
                }
                Matching::Labels(_) => {
                    entry.labelled.remove(requirement);
                }
            }
            if entry.is_empty() {
                self.kinds.remove(kind);
            }
        }
    }

    /// The XRs that read the object of `kind` that `change` tells of: by
    /// its name, or by labels it matched before or matches after.
    pub fn readers_of(&self, kind: &GroupKind, change: &Change) -> HashSet<Arc<ObjectRef>> {
        let mut found = HashSet::new();
        let Some(entry) = self.kinds.get(kind) else {
            return found;
        };
        let mut add = |requirement: &Arc<Required>| {
            if let Some(readers) = self.readers.get(requirement) {
                found.extend(readers.iter().cloned());
            }
        };
        if let Some(requirement) = entry
            .named
            .get(&(change.namespace.clone(), change.name.clone()))
        {
            add(requirement);
        }
        let namespace = change.namespace.as_deref();
        for requirement in &entry.labelled {
            let matched = [&change.before, &change.after]
                .into_iter()
                .flatten()
                .any(|labels| requirement.selects(namespace, labels));
            if matched {
                add(requirement);
            }
        }
        found
    }

    /// Whether some XR requires objects of `kind`.
    pub fn requires(&self, kind: &GroupKind) -> bool {
        self.kinds.contains_key(kind)
    }

    /// How many XRs required something.
    pub fn xrs(&self) -> usize {
        self.by_xr.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xr(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "example.org/v1".into(),
            kind: "App".into(),
            namespace: Some("team-a".into()),
            name: name.into(),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn environment() -> GroupKind {
        (
            "apiextensions.crossplane.io".into(),
            "EnvironmentConfig".into(),
        )
    }

    fn config_map() -> GroupKind {
        (String::new(), "ConfigMap".into())
    }

    /// An EnvironmentConfig (cluster-scoped) by name.
    fn config(name: &str) -> Required {
        Required {
            kind: environment(),
            namespace: None,
            matching: Matching::Name(name.into()),
        }
    }

    /// ConfigMaps by labels, in `namespace` or in every one.
    fn maps(namespace: Option<&str>, pairs: &[(&str, &str)]) -> Required {
        Required {
            kind: config_map(),
            namespace: namespace.map(str::to_string),
            matching: Matching::Labels(labels(pairs)),
        }
    }

    fn change(
        namespace: Option<&str>,
        name: &str,
        before: Option<&[(&str, &str)]>,
        after: Option<&[(&str, &str)]>,
    ) -> Change {
        Change {
            namespace: namespace.map(str::to_string),
            name: name.into(),
            before: before.map(labels),
            after: after.map(labels),
        }
    }

    fn readers(index: &RequiredIndex, kind: &GroupKind, change: &Change) -> Vec<String> {
        let mut names: Vec<String> = index
            .readers_of(kind, change)
            .iter()
            .map(|xr| xr.name.clone())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_changed_object_wakes_exactly_the_xrs_whose_last_reconcile_read_it() {
        let prod: &[(&str, &str)] = &[("stage", "prod")];
        let dev: &[(&str, &str)] = &[("stage", "dev")];
        // (what each XR's reconcile read, in order; the change; the XRs it wakes)
        type Case = (
            Vec<(&'static str, Vec<Required>)>,
            GroupKind,
            Change,
            Vec<&'static str>,
        );
        let cases: Vec<Case> = vec![
            // By name: only the object of that name.
            (
                vec![("a", vec![config("shared")]), ("b", vec![config("other")])],
                environment(),
                change(None, "shared", Some(&[]), Some(&[])),
                vec!["a"],
            ),
            // A name that did not exist yet is woken for once it appears.
            (
                vec![("a", vec![config("later")])],
                environment(),
                change(None, "later", None, Some(&[])),
                vec!["a"],
            ),
            // The same name of another kind wakes none.
            (
                vec![("a", vec![config("shared")])],
                config_map(),
                change(None, "shared", Some(&[]), Some(&[])),
                vec![],
            ),
            // A change to an object no XR read wakes none.
            (
                vec![("a", vec![config("shared")]), ("b", vec![maps(None, prod)])],
                environment(),
                change(None, "unread", Some(&[]), Some(&[])),
                vec![],
            ),
            // Replaced: what an XR read before no longer wakes it.
            (
                vec![
                    ("a", vec![config("old")]),
                    ("a", vec![config("new")]),
                    ("b", vec![config("old")]),
                ],
                environment(),
                change(None, "old", Some(&[]), Some(&[])),
                vec!["b"],
            ),
            // Removed: an XR that is gone (it reads nothing) is woken by nothing.
            (
                vec![
                    ("a", vec![config("shared")]),
                    ("b", vec![config("shared")]),
                    ("a", vec![]),
                ],
                environment(),
                change(None, "shared", Some(&[]), None),
                vec!["b"],
            ),
            // By labels: objects that match after the change...
            (
                vec![("a", vec![maps(None, prod)]), ("b", vec![maps(None, dev)])],
                config_map(),
                change(Some("team-a"), "x", None, Some(prod)),
                vec!["a"],
            ),
            // ...or matched before it (an object that stopped matching),
            (
                vec![("a", vec![maps(None, prod)]), ("b", vec![maps(None, dev)])],
                config_map(),
                change(Some("team-a"), "x", Some(prod), Some(dev)),
                vec!["a", "b"],
            ),
            // and one that went.
            (
                vec![("a", vec![maps(None, prod)]), ("b", vec![maps(None, dev)])],
                config_map(),
                change(Some("team-a"), "x", Some(dev), None),
                vec!["b"],
            ),
            // Every label must match; an empty selector matches everything.
            (
                vec![
                    ("a", vec![maps(None, &[("stage", "prod"), ("tier", "1")])]),
                    ("b", vec![maps(None, &[])]),
                ],
                config_map(),
                change(Some("team-a"), "x", None, Some(prod)),
                vec!["b"],
            ),
            // Tenancy: a tenant's XR read ConfigMaps in its namespace only,
            // so the same labels in another namespace wake only the
            // platform's XR, which read them in every namespace.
            (
                vec![
                    ("tenant", vec![maps(Some("team-a"), prod)]),
                    ("platform", vec![maps(None, prod)]),
                ],
                config_map(),
                change(Some("team-b"), "x", None, Some(prod)),
                vec!["platform"],
            ),
            (
                vec![
                    ("tenant", vec![maps(Some("team-a"), prod)]),
                    ("platform", vec![maps(None, prod)]),
                ],
                config_map(),
                change(Some("team-a"), "x", None, Some(prod)),
                vec!["platform", "tenant"],
            ),
            // A name read in a tenant's namespace is not the same name elsewhere.
            (
                vec![(
                    "tenant",
                    vec![Required {
                        kind: config_map(),
                        namespace: Some("team-a".into()),
                        matching: Matching::Name("db".into()),
                    }],
                )],
                config_map(),
                change(Some("team-b"), "db", Some(&[]), Some(&[])),
                vec![],
            ),
            // An XR that read one object twice (two steps) is woken once.
            (
                vec![("a", vec![config("shared"), config("shared")])],
                environment(),
                change(None, "shared", Some(&[]), Some(&[])),
                vec!["a"],
            ),
        ];
        for (i, (reads, kind, change, want)) in cases.into_iter().enumerate() {
            let mut index = RequiredIndex::default();
            let mut last: BTreeMap<&str, &Vec<Required>> = BTreeMap::new();
            for (name, required) in &reads {
                index.track(&xr(name), required);
                last.insert(name, required);
            }
            assert_eq!(
                readers(&index, &kind, &change),
                want,
                "case {i}: {change:?}"
            );
            // One XR's requirements, matched alone, say the same.
            let matched: Vec<&str> = last
                .iter()
                .filter(|(_, required)| required.iter().any(|r| r.matches(&kind, &change)))
                .map(|(name, _)| *name)
                .collect();
            assert_eq!(matched, want, "case {i}, matched alone: {change:?}");
        }
    }

    #[test]
    fn kinds_are_added_with_their_first_reader_and_released_with_their_last() {
        // (xr, what it reads now, kinds added, kinds released)
        type Step = (&'static str, Vec<Required>, Vec<GroupKind>, Vec<GroupKind>);
        let steps: Vec<Step> = vec![
            ("a", vec![config("x")], vec![environment()], vec![]),
            (
                "b",
                vec![config("x"), maps(None, &[])],
                vec![config_map()],
                vec![],
            ),
            ("a", vec![config("x")], vec![], vec![]),
            ("a", vec![config("y")], vec![], vec![]),
            ("b", vec![config("y")], vec![], vec![config_map()]),
            ("a", vec![], vec![], vec![]),
            ("b", vec![], vec![], vec![environment()]),
            ("c", vec![], vec![], vec![]),
        ];
        let mut index = RequiredIndex::default();
        for (i, (name, required, added, released)) in steps.into_iter().enumerate() {
            let changed = index.track(&xr(name), &required);
            assert_eq!(changed, KindsChanged { added, released }, "step {i}");
        }
        assert!(index.by_xr.is_empty() && index.readers.is_empty() && index.kinds.is_empty());
    }

    #[test]
    fn a_requirement_many_xrs_read_is_held_once() {
        let mut index = RequiredIndex::default();
        for i in 0..100 {
            index.track(&xr(&format!("xr-{i}")), &[config("shared")]);
        }
        assert_eq!(index.readers.len(), 1);
        assert_eq!(index.xrs(), 100);
        let held = index.readers.keys().next().map(Arc::strong_count);
        // The readers' key, the kind's entry and each XR's own list.
        assert_eq!(held, Some(102));
    }
}
