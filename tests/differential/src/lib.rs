//! A differential check of plait against upstream Crossplane: the same XR,
//! Composition and functions rendered by `plait render` and by upstream's
//! `crossplane render` (built from its Go modules, functions served on
//! loopback), compared document by document after normalising only what
//! must differ. A difference is either explained by an entry of the
//! documented list of deliberate differences (`docs/patch-and-transform.md`)
//! or it fails the suite.

pub mod corpus;
pub mod deliberate;
pub mod generate;
pub mod upstream;

use std::collections::BTreeMap;

use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("building upstream Crossplane: {0}")]
    Build(String),
    #[error("render output is not YAML: {0}")]
    Yaml(#[source] serde_yaml_ng::Error),
}

/// What one renderer made of a case.
#[derive(Debug, Clone)]
pub enum Rendered {
    /// The documents it printed.
    Output(Vec<Value>),
    /// It exited with an error; its message.
    Failed(String),
    /// The case cannot be given to this renderer, and why.
    NotComparable(String),
}

/// Every document of a YAML stream, empty documents left out.
pub fn parse_stream(text: &str) -> Result<Vec<Value>, Error> {
    let mut documents = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(document).map_err(Error::Yaml)?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

/// One place where the two renders disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// `composite`, `resource <name>`, `results`, or `render` for a failure.
    pub document: String,
    /// Where in the document, as a JSON pointer.
    pub path: String,
    pub plait: Option<Value>,
    pub upstream: Option<Value>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| match v {
            Some(v) => v.to_string(),
            None => "(absent)".into(),
        };
        write!(
            f,
            "{} {}: plait {} / upstream {}",
            self.document,
            if self.path.is_empty() {
                "/"
            } else {
                &self.path
            },
            show(&self.plait),
            show(&self.upstream)
        )
    }
}

/// The fixed time both renderers print for condition transitions.
const TRANSITION_TIME: &str = "2024-01-01T00:00:00Z";

/// Rewrites what must differ between two runs or two renderers: condition
/// transition times. (The order of results is the other; see `keyed`.)
pub fn normalise(document: &mut Value) {
    match document {
        Value::Object(map) => {
            if map.contains_key("lastTransitionTime") {
                map.insert("lastTransitionTime".into(), Value::from(TRANSITION_TIME));
            }
            map.values_mut().for_each(normalise);
        }
        Value::Array(items) => items.iter_mut().for_each(normalise),
        _ => {}
    }
}

/// The documents of a render keyed by what they are.
fn keyed(documents: &[Value]) -> BTreeMap<String, Value> {
    let mut keyed = BTreeMap::new();
    let mut results = Vec::new();
    for document in documents {
        let mut document = document.clone();
        normalise(&mut document);
        if document["kind"] == "Result"
            && document["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("render.crossplane.io/"))
        {
            results.push(document);
            continue;
        }
        let key = match document
            .pointer("/metadata/annotations/crossplane.io~1composition-resource-name")
            .and_then(Value::as_str)
        {
            Some(name) => format!("resource {name}"),
            None if !keyed.contains_key("composite") => "composite".into(),
            None => format!(
                "{} {}",
                document["kind"].as_str().unwrap_or("?"),
                document
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ),
        };
        keyed.insert(key, document);
    }
    if !results.is_empty() {
        // Upstream records "not yet ready" events walking a Go map, in an
        // order that changes from run to run; results compare as a set.
        results.sort_by_key(|r| r.to_string());
        keyed.insert("results".into(), Value::Array(results));
    }
    keyed
}

/// Where the two renders disagree. Failures compare by whether both failed;
/// their messages are one difference at `render`.
pub fn compare(plait: &Rendered, upstream: &Rendered) -> Vec<Difference> {
    match (plait, upstream) {
        (Rendered::Output(p), Rendered::Output(u)) => {
            let (p, u) = (keyed(p), keyed(u));
            let mut differences = Vec::new();
            let keys: std::collections::BTreeSet<&String> = p.keys().chain(u.keys()).collect();
            for key in keys {
                diff_values(key, String::new(), p.get(key), u.get(key), &mut differences);
            }
            differences
        }
        (Rendered::Failed(p), Rendered::Failed(u)) if failure_cause(p) == failure_cause(u) => {
            Vec::new()
        }
        _ => vec![Difference {
            document: "render".into(),
            path: String::new(),
            plait: Some(rendered_summary(plait)),
            upstream: Some(rendered_summary(upstream)),
        }],
    }
}

/// The part of a render error both renderers word alike: what the function
/// said, after each tool's own prefix. The JSON library upstream reads its
/// input with words its errors "json: cannot" or "json: unable to" at random
/// (so that no caller matches them); plait says the first, and the second
/// reads as it.
pub(crate) fn failure_cause(message: &str) -> String {
    message
        .rsplit_once("returned a fatal result: ")
        .map(|(_, cause)| cause.trim())
        .unwrap_or(message.trim())
        .replace("json: unable to ", "json: cannot ")
}

fn rendered_summary(rendered: &Rendered) -> Value {
    match rendered {
        Rendered::Output(_) => Value::from("rendered"),
        Rendered::Failed(message) => Value::from(format!("failed: {message}")),
        Rendered::NotComparable(why) => Value::from(format!("not comparable: {why}")),
    }
}

fn diff_values(
    document: &str,
    path: String,
    plait: Option<&Value>,
    upstream: Option<&Value>,
    out: &mut Vec<Difference>,
) {
    match (plait, upstream) {
        (Some(Value::Object(p)), Some(Value::Object(u))) => {
            let keys: std::collections::BTreeSet<&String> = p.keys().chain(u.keys()).collect();
            for key in keys {
                let child = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                diff_values(document, child, p.get(key), u.get(key), out);
            }
        }
        (Some(Value::Array(p)), Some(Value::Array(u))) if p.len() == u.len() => {
            for (i, (p, u)) in p.iter().zip(u).enumerate() {
                diff_values(document, format!("{path}/{i}"), Some(p), Some(u), out);
            }
        }
        (p, u) if p == u => {}
        (p, u) if numbers_equal(p, u) => {}
        (p, u) => out.push(Difference {
            document: document.to_string(),
            path,
            plait: p.cloned(),
            upstream: u.cloned(),
        }),
    }
}

/// `5` and `5.0` are one number on the wire both renderers use.
fn numbers_equal(p: Option<&Value>, u: Option<&Value>) -> bool {
    match (p, u) {
        (Some(Value::Number(p)), Some(Value::Number(u))) => p.as_f64() == u.as_f64(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_agree_whichever_wording_upstreams_json_library_picks() {
        let cause = |wording: &str| {
            format!(
                "cannot render composite resource: pipeline step \"pt\" returned a fatal result: \
                 cannot get Function input: json: {wording} unmarshal Go value of type \
                 v1beta1.StringCombine: unknown name \"type\""
            )
        };
        let plait = Rendered::Failed(cause("cannot"));
        for upstream in ["cannot", "unable to"] {
            assert_eq!(
                compare(&plait, &Rendered::Failed(cause(upstream))),
                [],
                "{upstream}"
            );
        }
        let other = Rendered::Failed(cause("cannot").replace("\"type\"", "\"fmt\""));
        assert_eq!(compare(&plait, &other).len(), 1);
    }
}
