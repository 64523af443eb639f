//! `ObjectMeta` and label selectors, as apimachinery validates them.

use serde_json::{Map, Value};

use super::names::{self, dns1123_label, dns1123_subdomain, qualified_name};
use super::{Ctx, NameRule, field, list, map, text, text_or_empty};
use crate::problem::Path;

/// The most bytes all of an object's annotations may take.
const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

/// A generated name's random part: kube-apiserver appends five random
/// characters to `generateName`; plait shows them as `xxxxx`.
pub(crate) const GENERATED_SUFFIX: &str = "xxxxx";

/// The finalizers Kubernetes itself knows, which need no domain.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

fn name_messages(rule: NameRule, name: &str, prefix: bool) -> Vec<String> {
    // A generateName may end in '-': the generated part follows it.
    let masked;
    let name = if prefix && name.ends_with('-') {
        masked = format!("{}a", &name[..name.len() - 1]);
        masked.as_str()
    } else {
        name
    };
    match rule {
        NameRule::Subdomain | NameRule::CronJob => dns1123_subdomain(name),
        NameRule::Label => dns1123_label(name),
        NameRule::Dns1035 => names::dns1035_label(name),
        NameRule::PathSegment => names::path_segment_name(name),
    }
}

/// The object's own metadata.
pub(crate) fn object_meta(ctx: &mut Ctx, namespaced: bool, rule: NameRule, named_later: bool) {
    let at = Path::root().child("metadata");
    let metadata = ctx.object.get("metadata").cloned().unwrap_or(Value::Null);
    let generate_name = text_or_empty(&metadata, "generateName");
    if !generate_name.is_empty() {
        let messages = name_messages(rule, generate_name, true);
        ctx.invalid_each(&at.child("generateName"), generate_name, messages);
    }
    let mut name = text_or_empty(&metadata, "name").to_string();
    if name.is_empty() && !generate_name.is_empty() {
        // What the API server generates: at most 58 characters of the prefix.
        let mut cut = generate_name.len().min(58);
        while !generate_name.is_char_boundary(cut) {
            cut -= 1;
        }
        name = format!("{}{GENERATED_SUFFIX}", &generate_name[..cut]);
    }
    if name.is_empty() {
        if !named_later {
            ctx.required(&at.child("name"), "name or generateName is required");
        }
    } else {
        let messages = name_messages(rule, &name, false);
        ctx.invalid_each(&at.child("name"), &name, messages);
        if matches!(rule, NameRule::CronJob) && name.len() > 52 {
            ctx.invalid(&at.child("name"), name.as_str(), names::max_len_error(52));
        }
    }
    if namespaced && let Some(namespace) = text(&metadata, "namespace").filter(|n| !n.is_empty()) {
        let messages = dns1123_label(namespace);
        ctx.invalid_each(&at.child("namespace"), namespace, messages);
    }
    // A namespace is labelled with its own name before it is validated.
    let mut labels = map(&metadata, "labels").cloned().unwrap_or_default();
    if matches!(rule, NameRule::Label) && !name.is_empty() {
        labels.insert(
            "kubernetes.io/metadata.name".into(),
            Value::String(name.clone()),
        );
    }
    validate_labels(ctx, &labels, &at.child("labels"));
    annotations(ctx, map(&metadata, "annotations"), &at.child("annotations"));
    owner_references(
        ctx,
        list(&metadata, "ownerReferences"),
        &at.child("ownerReferences"),
    );
    finalizers(ctx, list(&metadata, "finalizers"), &at.child("finalizers"));
}

/// A pod template's (or a claim template's) metadata: labels and annotations.
pub(crate) fn template_meta(ctx: &mut Ctx, metadata: Option<&Value>, at: &Path) {
    let Some(metadata) = metadata else { return };
    if let Some(labels) = map(metadata, "labels") {
        validate_labels(ctx, labels, &at.child("labels"));
    }
    annotations(ctx, map(metadata, "annotations"), &at.child("annotations"));
}

/// Label keys and values, each problem at the labels' own path.
pub(crate) fn validate_labels(ctx: &mut Ctx, labels: &Map<String, Value>, at: &Path) {
    for (key, value) in labels {
        let messages = qualified_name(key);
        ctx.invalid_each(at, key, messages);
        let value = value.as_str().unwrap_or_default();
        let messages = names::label_value(value);
        ctx.invalid_each(at, value, messages);
    }
}

fn annotations(ctx: &mut Ctx, annotations: Option<&Map<String, Value>>, at: &Path) {
    let Some(annotations) = annotations else {
        return;
    };
    let mut size = 0;
    for (key, value) in annotations {
        // Annotation keys are qualified names in any case.
        let messages = qualified_name(&key.to_lowercase());
        ctx.invalid_each(at, key, messages);
        size += key.len() + value.as_str().map_or(0, str::len);
    }
    if size > ANNOTATIONS_MAX_BYTES {
        ctx.too_long(at, ANNOTATIONS_MAX_BYTES as u64);
    }
}

fn owner_references(ctx: &mut Ctx, references: &[Value], at: &Path) {
    for reference in references {
        let api_version = text_or_empty(reference, "apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or_default();
        if version.is_empty() {
            ctx.invalid(
                &at.child("apiVersion"),
                api_version,
                "version must not be empty",
            );
        }
        for key in ["kind", "name", "uid"] {
            if text_or_empty(reference, key).is_empty() {
                ctx.invalid(&at.child(key), "", "must not be empty");
            }
        }
    }
}

fn finalizers(ctx: &mut Ctx, finalizers: &[Value], at: &Path) {
    for (i, finalizer) in finalizers.iter().enumerate() {
        let finalizer = finalizer.as_str().unwrap_or_default();
        let messages = qualified_name(finalizer);
        ctx.invalid_each(at, finalizer, messages);
        if !finalizer.contains('/') && !STANDARD_FINALIZERS.contains(&finalizer) {
            ctx.invalid(
                &at.index(i),
                finalizer,
                "name is neither a standard finalizer name nor is it fully qualified",
            );
        }
    }
}

/// A label selector as Go prints it (`matchLabels` before `matchExpressions`).
pub(crate) fn selector_shown(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(labels) = field(selector, "matchLabels").filter(|l| !super::is_empty(Some(l))) {
        parts.push(format!("\"matchLabels\":{labels}"));
    }
    let expressions = list(selector, "matchExpressions");
    if !expressions.is_empty() {
        let shown: Vec<String> = expressions
            .iter()
            .map(|e| {
                let mut fields = vec![
                    format!("\"key\":{}", Value::from(text_or_empty(e, "key"))),
                    format!("\"operator\":{}", Value::from(text_or_empty(e, "operator"))),
                ];
                if !list(e, "values").is_empty() {
                    fields.push(format!("\"values\":{}", e["values"]));
                }
                format!("{{{}}}", fields.join(","))
            })
            .collect();
        parts.push(format!("\"matchExpressions\":[{}]", shown.join(",")));
    }
    format!("{{{}}}", parts.join(","))
}

/// `ValidateLabelSelector`; true when the selector converts to a
/// `labels.Selector` (`LabelSelectorAsSelector` succeeds).
pub(crate) fn label_selector(ctx: &mut Ctx, selector: &Value, at: &Path) -> bool {
    let mut valid = true;
    for (i, expression) in list(selector, "matchExpressions").iter().enumerate() {
        let at = at.child("matchExpressions").index(i);
        let values = list(expression, "values");
        match text_or_empty(expression, "operator") {
            "In" | "NotIn" if values.is_empty() => {
                valid = false;
                ctx.required(
                    &at.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                );
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                valid = false;
                ctx.forbidden(
                    &at.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                );
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => {
                valid = false;
                ctx.invalid(
                    &at.child("operator"),
                    other,
                    "not a valid selector operator",
                );
            }
        }
        let key = text_or_empty(expression, "key");
        let messages = qualified_name(key);
        valid &= messages.is_empty();
        ctx.invalid_each(&at.child("key"), key, messages);
    }
    if let Some(labels) = map(selector, "matchLabels") {
        let before = ctx.problems.len();
        validate_labels(ctx, labels, &at.child("matchLabels"));
        valid &= ctx.problems.len() == before;
    }
    valid
}

/// Whether a (valid) selector selects `labels`; an empty one selects all.
pub(crate) fn selects(selector: &Value, labels: Option<&Map<String, Value>>) -> bool {
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    let matched = map(selector, "matchLabels")
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    matched
        && list(selector, "matchExpressions").iter().all(|e| {
            let key = text_or_empty(e, "key");
            let values: Vec<&str> = list(e, "values").iter().filter_map(Value::as_str).collect();
            match text_or_empty(e, "operator") {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                _ => false,
            }
        })
}

/// Whether a selector has no requirement at all.
pub(crate) fn selector_is_empty(selector: &Value) -> bool {
    super::is_empty(selector.get("matchLabels"))
        && super::is_empty(selector.get("matchExpressions"))
}
