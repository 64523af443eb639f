//! The program's documents as upstream reads them back: through krm-kcl's
//! YAML pipeline (kyaml's reader, `UnwrapResources`, kyaml's writer) and
//! then function-kcl's own split of the YAML stream. Each stage's effect
//! on the data is reproduced here on the values themselves.

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

/// The resources in a program's documents, in order, with null items
/// left out.
pub fn resources(documents: Vec<Value>) -> Result<Vec<Map<String, Value>>, OutputError> {
    let nodes = read_nodes(documents);
    let items = unwrap_items(nodes)?;
    let count = items.len();
    let mut out = Vec::with_capacity(count);
    for (index, item) in items.into_iter().enumerate() {
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
            drop_final_block_newline(&mut item);
        }
        out.push(item);
    }
    Ok(out)
}

/// kyaml's reader: null documents are skipped, and a stream of one
/// `ResourceList` or `List` with `items` or `functionConfig` stands for
/// its items.
fn read_nodes(documents: Vec<Value>) -> Vec<Value> {
    let single = documents.len() == 1;
    let mut nodes = Vec::new();
    for document in documents {
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
                nodes.extend(items.iter().cloned());
            }
            continue;
        }
        nodes.push(document);
    }
    nodes
}

/// krm-kcl's `UnwrapResources`: one node's `items` (or the node itself
/// when it has none); several nodes are the items, less any `KCLRun`.
fn unwrap_items(mut nodes: Vec<Value>) -> Result<Vec<Value>, OutputError> {
    match nodes.len() {
        0 => Ok(Vec::new()),
        1 => {
            let node = nodes.remove(0);
            match &node {
                Value::Object(object) => match object.get("items") {
                    None => Ok(vec![node]),
                    Some(Value::Null) => Ok(Vec::new()),
                    Some(Value::Array(items)) => Ok(items.clone()),
                    Some(other) => Err(OutputError::ItemsNotAList(node_kind(other))),
                },
                _ => Ok(vec![node]),
            }
        }
        _ => Ok(nodes
            .into_iter()
            .filter(|node| {
                !(node.get("apiVersion").and_then(Value::as_str) == Some("krm.kcl.dev/v1alpha1")
                    && node.get("kind").and_then(Value::as_str) == Some("KCLRun"))
            })
            .collect()),
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
/// final newline. The document's last scalar is its last key's value,
/// followed down through the last entry of each object or list.
fn drop_final_block_newline(item: &mut Map<String, Value>) {
    let Some((_, mut value)) = item.iter_mut().next_back() else {
        return;
    };
    loop {
        match value {
            Value::Object(map) => match map.iter_mut().next_back() {
                Some((_, last)) => value = last,
                None => return,
            },
            Value::Array(items) => match items.last_mut() {
                Some(last) => value = last,
                None => return,
            },
            Value::String(s) => {
                if s.ends_with('\n') && is_literal_block(s) {
                    s.pop();
                }
                return;
            }
            _ => return,
        }
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
    use plait_kcl::value::{Value as KclValue, json::EncodeOptions, yaml};
    yaml::encode(&KclValue::str(s), &EncodeOptions::default()).starts_with('|')
}
