//! What a watch's events change, object by object: the labels an object
//! had before and has after, so that whoever selected it by name, or by
//! labels it matched before or matches now, can be told. A relist (after
//! a watch was down) tells only of objects whose resourceVersion moved,
//! that appeared, or that are gone; the first list of a watch tells of none
//! (whoever depends on the kind read it moments before the watch started).

use std::collections::{BTreeMap, HashMap, HashSet};

use kube::ResourceExt;
use kube::runtime::watcher;

pub type Labels = BTreeMap<String, String>;

/// One object that appeared, changed or went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub namespace: Option<String>,
    pub name: String,
    /// Its labels before the change; `None` if it did not exist.
    pub before: Option<Labels>,
    /// Its labels after the change; `None` if it is gone.
    pub after: Option<Labels>,
}

type Key = (Option<String>, String);

/// The objects a watch has seen, by namespace and name, with their
/// resourceVersion and labels: all a change needs to be told apart.
#[derive(Debug, Default)]
pub struct SeenObjects {
    objects: HashMap<Key, (Option<String>, Labels)>,
    /// While a list is under way, the objects it has shown so far.
    listing: Option<HashSet<Key>>,
    /// Whether a list has finished before: the first one tells of nothing.
    listed: bool,
}

impl SeenObjects {
    /// Takes in one watch event and says what it changed.
    pub fn apply<K: kube::Resource>(&mut self, event: &watcher::Event<K>) -> Vec<Change> {
        match event {
            watcher::Event::Init => {
                self.listing = Some(HashSet::new());
                Vec::new()
            }
            watcher::Event::InitApply(object) => {
                let key = key_of(object);
                if let Some(listing) = &mut self.listing {
                    listing.insert(key.clone());
                }
                let listed = self.listed;
                let change = self.seen(key, object);
                change.filter(|_| listed).into_iter().collect()
            }
            watcher::Event::InitDone => {
                let listing = self.listing.take().unwrap_or_default();
                let was_listed = std::mem::replace(&mut self.listed, true);
                let gone: Vec<Key> = self
                    .objects
                    .keys()
                    .filter(|key| !listing.contains(*key))
                    .cloned()
                    .collect();
                let mut changes = Vec::new();
                for key in gone {
                    if let Some((_, labels)) = self.objects.remove(&key) {
                        changes.push(Change {
                            namespace: key.0,
                            name: key.1,
                            before: Some(labels),
                            after: None,
                        });
                    }
                }
                if was_listed { changes } else { Vec::new() }
            }
            watcher::Event::Apply(object) => {
                let key = key_of(object);
                self.seen(key, object).into_iter().collect()
            }
            watcher::Event::Delete(object) => {
                let key = key_of(object);
                let before = self
                    .objects
                    .remove(&key)
                    .map_or_else(|| labels_of(object), |(_, labels)| labels);
                vec![Change {
                    namespace: key.0,
                    name: key.1,
                    before: Some(before),
                    after: None,
                }]
            }
        }
    }

    /// Records `object` as seen now; the change, unless its resourceVersion
    /// is the one already seen.
    fn seen<K: kube::Resource>(&mut self, key: Key, object: &K) -> Option<Change> {
        let version = object.meta().resource_version.clone();
        let labels = labels_of(object);
        let before = match self.objects.get(&key) {
            Some((seen, _)) if version.is_some() && *seen == version => return None,
            Some((_, labels)) => Some(labels.clone()),
            None => None,
        };
        self.objects.insert(key.clone(), (version, labels.clone()));
        Some(Change {
            namespace: key.0,
            name: key.1,
            before,
            after: Some(labels),
        })
    }
}

fn key_of<K: kube::Resource>(object: &K) -> Key {
    (object.namespace(), object.name_any())
}

fn labels_of<K: kube::Resource>(object: &K) -> Labels {
    object.labels().clone()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;

    fn object(name: &str, version: &str, labels: &[(&str, &str)]) -> DynamicObject {
        let labels: Labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": version, "labels": labels},
        }))
        .unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> Option<Labels> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn change(name: &str, before: Option<Labels>, after: Option<Labels>) -> Change {
        Change {
            namespace: Some("ns".into()),
            name: name.into(),
            before,
            after,
        }
    }

    #[test]
    fn a_watch_tells_of_what_changed_and_a_relist_of_what_moved_while_it_was_down() {
        use watcher::Event::{Apply, Delete, Init, InitApply, InitDone};
        let prod = &[("stage", "prod")];
        let dev = &[("stage", "dev")];
        // (event, the changes it tells of)
        let steps: Vec<(watcher::Event<DynamicObject>, Vec<Change>)> = vec![
            // The first list tells of nothing.
            (Init, vec![]),
            (InitApply(object("a", "1", prod)), vec![]),
            (InitApply(object("b", "1", dev)), vec![]),
            (InitApply(object("c", "1", dev)), vec![]),
            (InitDone, vec![]),
            (
                Apply(object("a", "2", dev)),
                vec![change("a", labels(prod), labels(dev))],
            ),
            // The same version again (a resync) is no change.
            (Apply(object("a", "2", dev)), vec![]),
            (
                Apply(object("d", "3", prod)),
                vec![change("d", None, labels(prod))],
            ),
            (
                Delete(object("d", "4", prod)),
                vec![change("d", labels(prod), None)],
            ),
            // A relist: `a` unchanged, `b` changed, `c` gone, `e` new.
            (Init, vec![]),
            (InitApply(object("a", "2", dev)), vec![]),
            (
                InitApply(object("b", "5", prod)),
                vec![change("b", labels(dev), labels(prod))],
            ),
            (
                InitApply(object("e", "5", dev)),
                vec![change("e", None, labels(dev))],
            ),
            (InitDone, vec![change("c", labels(dev), None)]),
        ];
        let mut seen = SeenObjects::default();
        for (i, (event, want)) in steps.iter().enumerate() {
            assert_eq!(seen.apply(event), *want, "step {i}: {event:?}");
        }
    }
}
