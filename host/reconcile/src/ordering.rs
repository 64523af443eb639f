//! Ordering composed resources: a function says that a composed resource
//! depends on others by annotating it with [`DEPENDS_ON_ANNOTATION`]
//! (their names in the Composition, comma-separated). The reconcile
//! creates a resource only once every resource it depends on exists and
//! is ready, and an XR that goes deletes a resource only once nothing left
//! depends on it. The annotation stays on the composed resources, so the
//! graph can be read back from them when the XR is deleted, without
//! running the pipeline.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// The annotation a function sets on a desired composed resource to make it
/// wait for others: their names in the Composition, comma-separated.
pub const DEPENDS_ON_ANNOTATION: &str = "ordering.plait.dev/depends-on";

/// The XR condition that says what waits for what.
pub const ORDERED_CONDITION: &str = "Ordered";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderingError {
    #[error(
        "composed resources depend on each other in a cycle: {}",
        .cycle.join(" → ")
    )]
    Cycle {
        /// The resources of the cycle, the first repeated at the end.
        cycle: Vec<String>,
    },
    #[error(
        "composed resource {resource:?} depends on {dependency:?}, which the pipeline does not compose"
    )]
    Unknown {
        resource: String,
        dependency: String,
    },
}

/// Which composed resources depend on which, by their names in the Composition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    /// Each resource that depends on others, and those others.
    pub depends_on: BTreeMap<String, BTreeSet<String>>,
}

/// The resources `object` says it depends on.
pub fn dependencies_of(object: &Value) -> BTreeSet<String> {
    let pointer = crate::pointer::annotation(DEPENDS_ON_ANNOTATION);
    object
        .pointer(&pointer)
        .and_then(Value::as_str)
        .into_iter()
        .flat_map(|list| list.split(','))
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}

impl Graph {
    /// The graph the annotations of `resources` (name → object) declare.
    pub fn of<'a>(resources: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Graph {
        let depends_on = resources
            .into_iter()
            .map(|(name, object)| (name.to_string(), dependencies_of(object)))
            .filter(|(_, dependencies)| !dependencies.is_empty())
            .collect();
        Graph { depends_on }
    }

    pub fn is_empty(&self) -> bool {
        self.depends_on.is_empty()
    }

    /// Refuses a dependency on a resource not in `composed`, and cycles
    /// (naming the first found, in name order, so the message is stable).
    pub fn check(&self, composed: &BTreeSet<&str>) -> Result<(), OrderingError> {
        for (resource, dependencies) in &self.depends_on {
            if let Some(missing) = dependencies.iter().find(|d| !composed.contains(d.as_str())) {
                return Err(OrderingError::Unknown {
                    resource: resource.clone(),
                    dependency: missing.clone(),
                });
            }
        }
        // Depth-first, colouring what is on the current path.
        let mut done = BTreeSet::new();
        for start in self.depends_on.keys() {
            let mut path = Vec::new();
            if let Some(cycle) = self.find_cycle(start, &mut path, &mut done) {
                return Err(OrderingError::Cycle { cycle });
            }
        }
        Ok(())
    }

    fn find_cycle<'a>(
        &'a self,
        node: &'a str,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut cycle: Vec<String> = path[at..].iter().map(|n| n.to_string()).collect();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node);
        for next in self.depends_on.get(node).into_iter().flatten() {
            if let Some(cycle) = self.find_cycle(next, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node);
        None
    }

    /// Each resource of `new` (not created yet) that must wait, with the
    /// resources it waits for: those `ready` does not accept.
    pub fn waiting<'a>(
        &self,
        new: impl IntoIterator<Item = &'a str>,
        ready: impl Fn(&str) -> bool,
    ) -> BTreeMap<String, Vec<String>> {
        new.into_iter()
            .filter_map(|resource| {
                let blocked: Vec<String> = self
                    .depends_on
                    .get(resource)?
                    .iter()
                    .filter(|d| !ready(d))
                    .cloned()
                    .collect();
                (!blocked.is_empty()).then(|| (resource.to_string(), blocked))
            })
            .collect()
    }

    /// Which of `remaining` may be deleted now: those no other remaining
    /// resource depends on. Resources whose dependents are all gone go
    /// first, so the graph is torn down in reverse.
    pub fn deletable<'a>(&self, remaining: &BTreeSet<&'a str>) -> BTreeSet<&'a str> {
        remaining
            .iter()
            .copied()
            .filter(|resource| {
                !self.depends_on.iter().any(|(dependent, dependencies)| {
                    dependent != resource
                        && remaining.contains(dependent.as_str())
                        && dependencies.contains(*resource)
                })
            })
            .collect()
    }

    /// `b after a; c after a, b`: the graph as the XR's condition shows it.
    pub fn describe(&self) -> String {
        let mut text = String::new();
        for (resource, dependencies) in &self.depends_on {
            if !text.is_empty() {
                text.push_str("; ");
            }
            let list: Vec<&str> = dependencies.iter().map(String::as_str).collect();
            text.push_str(&format!("{resource} after {}", list.join(", ")));
        }
        text
    }
}

/// `c waits for b; d waits for a, b`.
pub fn describe_waiting(waiting: &BTreeMap<String, Vec<String>>) -> String {
    waiting
        .iter()
        .map(|(resource, blocked)| format!("{resource} waits for {}", blocked.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(depends_on: Option<&str>) -> Value {
        match depends_on {
            Some(list) => json!({"metadata": {"annotations": {DEPENDS_ON_ANNOTATION: list}}}),
            None => json!({"metadata": {}}),
        }
    }

    fn graph(entries: &[(&str, Option<&str>)]) -> Graph {
        let objects: Vec<(String, Value)> = entries
            .iter()
            .map(|(name, list)| (name.to_string(), object(*list)))
            .collect();
        Graph::of(objects.iter().map(|(n, o)| (n.as_str(), o)))
    }

    fn names<'a>(list: &[&'a str]) -> BTreeSet<&'a str> {
        list.iter().copied().collect()
    }

    #[test]
    fn annotations_declare_the_graph() {
        let g = graph(&[("a", None), ("b", Some("a")), ("c", Some(" b , a,,"))]);
        assert_eq!(g.describe(), "b after a; c after a, b");
        assert!(graph(&[("a", None)]).is_empty());
        assert!(g.check(&names(&["a", "b", "c"])).is_ok());
    }

    #[test]
    fn cycles_and_unknown_dependencies_are_refused_by_name() {
        let cases = [
            (
                graph(&[("a", Some("c")), ("b", Some("a")), ("c", Some("b"))]),
                "composed resources depend on each other in a cycle: a → c → b → a",
            ),
            (
                graph(&[("a", Some("a"))]),
                "composed resources depend on each other in a cycle: a → a",
            ),
            (
                graph(&[
                    ("a", None),
                    ("b", Some("a")),
                    ("c", Some("b, d")),
                    ("d", Some("c")),
                ]),
                "composed resources depend on each other in a cycle: c → d → c",
            ),
            (
                graph(&[("b", Some("zz"))]),
                "composed resource \"b\" depends on \"zz\", which the pipeline does not compose",
            ),
        ];
        for (g, want) in cases {
            let composed: BTreeSet<&str> = ["a", "b", "c", "d"].into_iter().collect();
            assert_eq!(g.check(&composed).err().unwrap().to_string(), want);
        }
    }

    #[test]
    fn a_new_resource_waits_for_dependencies_that_are_not_ready() {
        let g = graph(&[("a", None), ("b", Some("a")), ("c", Some("a, b"))]);
        let ready = |set: &'static [&'static str]| move |name: &str| set.contains(&name);
        assert_eq!(
            g.waiting(["a", "b", "c"], ready(&[])),
            BTreeMap::from([
                ("b".to_string(), vec!["a".to_string()]),
                ("c".to_string(), vec!["a".to_string(), "b".to_string()]),
            ])
        );
        assert_eq!(
            describe_waiting(&g.waiting(["c"], ready(&["a"]))),
            "c waits for b"
        );
        assert!(g.waiting(["b", "c"], ready(&["a", "b"])).is_empty());
    }

    #[test]
    fn resources_are_deleted_once_nothing_left_depends_on_them() {
        let g = graph(&[("a", None), ("b", Some("a")), ("c", Some("b")), ("d", None)]);
        assert_eq!(
            g.deletable(&names(&["a", "b", "c", "d"])),
            names(&["c", "d"])
        );
        assert_eq!(g.deletable(&names(&["a", "b"])), names(&["b"]));
        assert_eq!(g.deletable(&names(&["a"])), names(&["a"]));
        // A dependent already gone holds nothing back.
        assert_eq!(g.deletable(&names(&["a", "c"])), names(&["a", "c"]));
    }
}
