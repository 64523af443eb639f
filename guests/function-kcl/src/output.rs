//! The program's documents as upstream reads them back: through krm-kcl's
//! YAML pipeline (kyaml's reader, `UnwrapResources`, kyaml's writer) and
//! then function-kcl's own split of the YAML stream. Each stage's effect
//! on the data is reproduced here on the values themselves.

use plait_kcl::value::Value as KclValue;
use serde_json::{Map, Value};

/// Annotations kyaml's reader and writer use for their own bookkeeping;
/// its writer removes them from every item.
const READER_ANNOTATIONS: [&str; 3] = [
    "internal.config.kubernetes.io/index",
    "config.kubernetes.io/index",
    "internal.config.kubernetes.io/seqindent",
];

/// Why the program's output cannot be read as resources.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OutputError {
    #[error("wrong node kind: expected SequenceNode but got {0}Node")]
    ItemsNotAList(&'static str),
    #[error("wrong node kind: expected MappingNode but got {0}Node")]
    MetadataNotAnObject(&'static str),
    /// Upstream's Go code assumes every item is an object and crashes on
    /// another value; plait reports it instead.
    #[error("the KCL output's item {index} is not an object but {kind}")]
    ItemNotAnObject { index: usize, kind: &'static str },
}

/// One step from a document down to an item: a key, or a list index.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A node and where it came from: its document and the steps below it.
type Node = (Value, usize, Vec<Step>);

/// The resources in a program's documents, in order, with null items
/// left out. `values` are the same documents as KCL values, whose key
/// order (lost in JSON objects) decides which string ends each item's
/// YAML text; with `sort_keys` the keys are sorted instead.
pub fn resources(
    documents: Vec<Value>,
    values: &[KclValue],
    sort_keys: bool,
) -> Result<Vec<Map<String, Value>>, OutputError> {
    let nodes = read_nodes(documents);
    let items = unwrap_items(nodes)?;
    let count = items.len();
    let mut out = Vec::with_capacity(count);
    for (index, (item, document, steps)) in items.into_iter().enumerate() {
        let item = match item {
            Value::Null => continue,
            Value::Object(object) => object,
            other => {
                return Err(OutputError::ItemNotAnObject {
                    index,
                    kind: kind_name(&other),
                });
            }
        };
        let mut item = clear_writer_annotations(item)?;
        if index + 1 < count {
            let last = if sort_keys {
                last_string_in_json(&Value::Object(item.clone()))
            } else {
                values
                    .get(document)
                    .and_then(|v| follow(v, &steps))
                    .and_then(last_string_in_kcl)
            };
            if let Some(path) = last {
                drop_final_block_newline(&mut item, &path);
            }
        }
        out.push(item);
    }
    Ok(out)
}

/// kyaml's reader: null documents are skipped, and a stream of one
/// `ResourceList` or `List` with `items` or `functionConfig` stands for
/// its items.
fn read_nodes(documents: Vec<Value>) -> Vec<Node> {
    let single = documents.len() == 1;
    let mut nodes = Vec::new();
    for (index, document) in documents.into_iter().enumerate() {
        if document.is_null() {
            continue;
        }
        if single
            && let Value::Object(object) = &document
            && matches!(
                object.get("kind").and_then(Value::as_str),
                Some("ResourceList" | "List")
            )
            && (object.contains_key("items") || object.contains_key("functionConfig"))
        {
            if let Some(Value::Array(items)) = object.get("items") {
                nodes.extend(items.iter().enumerate().map(|(i, item)| {
                    (
                        item.clone(),
                        index,
                        vec![Step::Key("items".into()), Step::Index(i)],
                    )
                }));
            }
            continue;
        }
        nodes.push((document, index, Vec::new()));
    }
    nodes
}

/// krm-kcl's `UnwrapResources`: one node's `items` (or the node itself
/// when it has none); several nodes are the items, less any `KCLRun`.
fn unwrap_items(mut nodes: Vec<Node>) -> Result<Vec<Node>, OutputError> {
    match nodes.len() {
        0 => Ok(Vec::new()),
        1 => {
            let (node, document, steps) = nodes.remove(0);
            match &node {
                Value::Object(object) => match object.get("items") {
                    None => Ok(vec![(node, document, steps)]),
                    Some(Value::Null) => Ok(Vec::new()),
                    Some(Value::Array(items)) => Ok(items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| {
                            let mut steps = steps.clone();
                            steps.extend([Step::Key("items".into()), Step::Index(i)]);
                            (item.clone(), document, steps)
                        })
                        .collect()),
                    Some(other) => Err(OutputError::ItemsNotAList(node_kind(other))),
                },
                _ => Ok(vec![(node, document, steps)]),
            }
        }
        _ => Ok(nodes
            .into_iter()
            .filter(|(node, _, _)| {
                !(node.get("apiVersion").and_then(Value::as_str) == Some("krm.kcl.dev/v1alpha1")
                    && node.get("kind").and_then(Value::as_str) == Some("KCLRun"))
            })
            .collect()),
    }
}

/// Whether KCL's JSON output keeps a value (it leaves out `Undefined` and
/// functions, in lists and dicts alike).
fn printed(value: &KclValue) -> bool {
    !matches!(value, KclValue::Undefined | KclValue::Function(_))
}

fn printed_entries(
    dict: &plait_kcl::value::Dict,
) -> impl DoubleEndedIterator<Item = (&String, &KclValue)> {
    dict.entries
        .iter()
        .filter(|(k, v)| !k.starts_with('_') && printed(v))
}

/// The KCL value `steps` below `value`, as the JSON steps were taken.
fn follow<'a>(value: &'a KclValue, steps: &[Step]) -> Option<&'a KclValue> {
    let mut value = value;
    for step in steps {
        value = match (step, value) {
            (Step::Key(key), v) => printed_entries(v.as_dict()?).find(|(k, _)| *k == key)?.1,
            (Step::Index(i), KclValue::List(items)) => {
                items.iter().filter(|v| printed(v)).nth(*i)?
            }
            _ => return None,
        };
    }
    Some(value)
}

/// The steps to the last scalar YAML prints for `value`, when it is a string.
fn last_string_in_kcl(value: &KclValue) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut value = value;
    loop {
        match value {
            KclValue::Str(_) => return Some(steps),
            KclValue::List(items) => {
                let (i, last) = items.iter().filter(|v| printed(v)).enumerate().last()?;
                steps.push(Step::Index(i));
                value = last;
            }
            other => {
                let (key, last) = printed_entries(other.as_dict()?).next_back()?;
                steps.push(Step::Key(key.clone()));
                value = last;
            }
        }
    }
}

/// [`last_string_in_kcl`] for keys printed in sorted order.
fn last_string_in_json(value: &Value) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut value = value;
    loop {
        match value {
            Value::String(_) => return Some(steps),
            Value::Array(items) => {
                steps.push(Step::Index(items.len().checked_sub(1)?));
                value = items.last()?;
            }
            Value::Object(map) => {
                let (key, last) = map.iter().next_back()?;
                steps.push(Step::Key(key.clone()));
                value = last;
            }
            _ => return None,
        }
    }
}

/// kyaml's writer: its reader's annotations removed, then `annotations`
/// and `metadata` removed when they hold nothing (a scalar counts as
/// nothing, except a `metadata` that is not null, which it refuses).
fn clear_writer_annotations(
    mut item: Map<String, Value>,
) -> Result<Map<String, Value>, OutputError> {
    let Some(metadata) = item.get_mut("metadata") else {
        return Ok(item);
    };
    match metadata {
        Value::Object(meta) => {
            if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
                for key in READER_ANNOTATIONS {
                    annotations.remove(key);
                }
            }
            if meta.get("annotations").is_some_and(holds_nothing) {
                meta.remove("annotations");
            }
        }
        Value::Null => {}
        other => return Err(OutputError::MetadataNotAnObject(node_kind(other))),
    }
    if item.get("metadata").is_some_and(holds_nothing) {
        item.remove("metadata");
    }
    Ok(item)
}

/// Whether kyaml's YAML node for `value` has no content: an empty
/// mapping or sequence, or any scalar.
fn holds_nothing(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => true,
    }
}

/// function-kcl splits the YAML stream at `\n---…\n` and keeps the text
/// before the separator without its last line break: when a document
/// ends with a literal block string (`|`, `|+`), that string loses one
/// final newline. `path` leads to the document's last scalar.
fn drop_final_block_newline(item: &mut Map<String, Value>, path: &[Step]) {
    let Some((Step::Key(first), rest)) = path.split_first() else {
        return;
    };
    let Some(mut value) = item.get_mut(first) else {
        return;
    };
    for step in rest {
        let next = match (step, value) {
            (Step::Key(key), Value::Object(map)) => map.get_mut(key),
            (Step::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        value = next;
    }
    if let Value::String(s) = value
        && s.ends_with('\n')
        && is_literal_block(s)
    {
        s.pop();
    }
}

fn node_kind(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "Mapping",
        Value::Array(_) => "Sequence",
        _ => "Scalar",
    }
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Whether KCL prints `s` as a literal block (`|`): the YAML emitter
/// upstream's output passes through afterwards keeps a block's style.
fn is_literal_block(s: &str) -> bool {
    use plait_kcl::value::{json::EncodeOptions, yaml};
    yaml::encode(&KclValue::str(s), &EncodeOptions::default()).starts_with('|')
}
