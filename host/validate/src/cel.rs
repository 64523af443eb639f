//! `x-kubernetes-validations` rules, evaluated with the Common Expression
//! Language as the API server evaluates them: `self` is the value at the
//! rule's level, `oldSelf` its previous state, and a rule that reads
//! `oldSelf` (a transition rule) is evaluated only when there is one.
//!
//! A failed rule is reported as the API server reports it:
//! `spec: Invalid value: "object": <message>`, the message being the rule's
//! `message`, its `messageExpression`'s result, or `failed rule: <rule>`,
//! at the rule's `fieldPath` and with its `reason`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cel::{Context, Env, Program};
use regex::Regex;
use serde_json::{Value, json};

use crate::problem::{Path, Problem};
use crate::structural::type_name;

/// The most rules and patterns kept compiled; one validation run over a
/// few hundred CRDs stays well below it.
const MAX_CACHED: usize = 4096;
/// The longest rule evaluated: the API server bounds a rule's cost, which
/// this evaluator cannot estimate, so the text itself is bounded.
pub const MAX_RULE_LENGTH: usize = 8192;

/// Compiled rules and patterns, shared by every object validated.
pub struct Rules {
    /// CEL's standard library with the extensions the API server's CEL
    /// environment has too: strings (`lowerAscii`, `indexOf`, `split`, …),
    /// lists and math.
    env: Arc<Env>,
    programs: Mutex<HashMap<String, Arc<Result<Program, String>>>>,
    patterns: Mutex<HashMap<String, Result<Regex, String>>>,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules").finish_non_exhaustive()
    }
}

/// One entry of `x-kubernetes-validations`.
struct Rule<'a> {
    rule: &'a str,
    message: Option<&'a str>,
    message_expression: Option<&'a str>,
    field_path: Option<&'a str>,
    reason: Option<&'a str>,
    optional_old_self: bool,
}

impl<'a> Rule<'a> {
    fn of(v: &'a Value) -> Option<Self> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        Some(Rule {
            rule: text("rule")?,
            message: text("message"),
            message_expression: text("messageExpression"),
            field_path: text("fieldPath"),
            reason: text("reason"),
            optional_old_self: v.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
        })
    }
}

impl Default for Rules {
    fn default() -> Self {
        let mut env = Env::stdlib();
        // Registering on a fresh environment cannot conflict; a failure
        // leaves rules that use the extension to fail to compile, by name.
        for extension in [
            cel::extensions::strings as fn(&mut Env) -> Result<(), cel::DeclarationError>,
            cel::extensions::lists,
            cel::extensions::math,
        ] {
            if let Err(e) = extension(&mut env) {
                tracing::warn!("a CEL extension cannot be registered: {e}");
            }
        }
        Rules {
            env: Arc::new(env),
            programs: Mutex::default(),
            patterns: Mutex::default(),
        }
    }
}

impl Rules {
    pub fn new() -> Self {
        Rules::default()
    }

    /// A schema `pattern`, compiled once.
    pub(crate) fn regex(&self, pattern: &str) -> Result<Regex, String> {
        let mut patterns = match self.patterns.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(re) = patterns.get(pattern) {
            return re.clone();
        }
        let compiled = Regex::new(pattern).map_err(|e| e.to_string());
        if patterns.len() >= MAX_CACHED {
            patterns.clear();
        }
        patterns.insert(pattern.to_string(), compiled.clone());
        compiled
    }

    fn program(&self, source: &str) -> Arc<Result<Program, String>> {
        let mut programs = match self.programs.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(p) = programs.get(source) {
            return p.clone();
        }
        let compiled = if source.len() > MAX_RULE_LENGTH {
            Err(format!("longer than {MAX_RULE_LENGTH} characters"))
        } else {
            self.env
                .compile(source)
                .map_err(|e| e.to_string().trim().to_string())
        };
        let compiled = Arc::new(compiled);
        if programs.len() >= MAX_CACHED {
            programs.clear();
        }
        programs.insert(source.to_string(), compiled.clone());
        compiled
    }

    /// Evaluates the rules of one schema node against `value`.
    pub(crate) fn evaluate(
        &self,
        rules: &Value,
        value: &Value,
        old: Option<&Value>,
        schema: &Value,
        path: &Path,
    ) -> Vec<Problem> {
        let mut problems = Vec::new();
        let schema_type = match schema.get("type").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None => type_name(value).to_string(),
        };
        for rule in rules.as_array().into_iter().flatten().filter_map(Rule::of) {
            let program = self.program(rule.rule);
            let program = match program.as_ref() {
                Ok(p) => p,
                Err(e) => {
                    problems.push(Problem::invalid(
                        path.as_str(),
                        json!(schema_type),
                        format!("compilation failed: {e}: {}", rule.rule.trim()),
                    ));
                    continue;
                }
            };
            let transition = program.references().has_variable("oldSelf");
            if transition && old.is_none() {
                // A transition rule is checked on update only; with
                // `optionalOldSelf` on create too, where `oldSelf` has no
                // value, which this evaluator cannot express.
                let _ = rule.optional_old_self;
                continue;
            }
            let mut context = Context::with_env(self.env.clone());
            if let Err(e) = context.add_variable("self", AsKubernetesCel(value)) {
                problems.push(Problem::invalid(
                    path.as_str(),
                    json!(schema_type),
                    format!("{e} evaluating rule: {}", rule.rule.trim()),
                ));
                continue;
            }
            if let Some(old) = old
                && let Err(e) = context.add_variable("oldSelf", AsKubernetesCel(old))
            {
                problems.push(Problem::invalid(
                    path.as_str(),
                    json!(schema_type),
                    format!("{e} evaluating rule: {}", rule.rule.trim()),
                ));
                continue;
            }
            let holds = match program.execute(&context) {
                Ok(cel::Value::Bool(b)) => b,
                Ok(other) => {
                    problems.push(Problem::invalid(
                        path.as_str(),
                        json!(schema_type),
                        format!(
                            "rule {} evaluated to {other:?}, not a bool",
                            plait_go_compat::strconv::quote(rule.rule.trim())
                        ),
                    ));
                    continue;
                }
                Err(e) => {
                    problems.push(Problem::invalid(
                        path.as_str(),
                        json!(schema_type),
                        format!("{e} evaluating rule: {}", rule.rule.trim()),
                    ));
                    continue;
                }
            };
            if holds {
                continue;
            }
            let message = self.message(&rule, &context);
            let field = match rule.field_path {
                Some(fp) => join_field_path(path, fp),
                None => path.as_str().to_string(),
            };
            problems.push(match rule.reason {
                Some("FieldValueRequired") => Problem {
                    detail: message,
                    ..Problem::required(field)
                },
                Some("FieldValueForbidden") => Problem::forbidden(field, message),
                Some("FieldValueDuplicate") => Problem {
                    detail: message,
                    ..Problem::duplicate(field, json!(schema_type))
                },
                _ => Problem::invalid(field, json!(schema_type), message),
            });
        }
        problems
    }

    /// The message of a failed rule: its `messageExpression`'s result if
    /// that evaluates to a non-empty string, else `message`, else
    /// `failed rule: <rule>`.
    fn message(&self, rule: &Rule, context: &Context) -> String {
        if let Some(expression) = rule.message_expression
            && let Ok(program) = self.program(expression).as_ref()
            && let Ok(cel::Value::String(s)) = program.execute(context)
            && !s.trim().is_empty()
        {
            return s.to_string();
        }
        match rule.message {
            Some(m) => m.to_string(),
            None => format!("failed rule: {}", rule.rule.trim()),
        }
    }
}

/// A rule's `fieldPath` (`.spec.replicas`, `.tags['a.b']`) joined to the
/// path of the node the rule is on.
fn join_field_path(base: &Path, field_path: &str) -> String {
    let mut out = base.as_str().to_string();
    let mut rest = field_path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').unwrap_or(r.len());
            let key = r[..end].trim_matches(|c| c == '\'' || c == '"');
            out.push('[');
            out.push_str(key);
            out.push(']');
            rest = r.get(end + 1..).unwrap_or_default();
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(rest);
            break;
        }
    }
    out
}

/// A JSON value as the API server hands it to CEL: every integer an `int`
/// (serde_json would hand a non-negative one over as a `uint`, which
/// `self >= 1` or `type(self) == int` then do not match).
struct AsKubernetesCel<'a>(&'a Value);

impl serde::Serialize for AsKubernetesCel<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => serializer.serialize_i64(i),
                // Past i64: what the API server's decoder makes of it, a float.
                #[allow(clippy::cast_precision_loss)]
                (None, Some(u)) => serializer.serialize_f64(u as f64),
                (None, None) => n.serialize(serializer),
            },
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&AsKubernetesCel(item))?;
                }
                seq.end()
            }
            Value::Object(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (key, item) in fields {
                    map.serialize_entry(key, &AsKubernetesCel(item))?;
                }
                map.end()
            }
            other => other.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_join_below_the_rules_node() {
        let spec = Path::root().child("spec");
        assert_eq!(join_field_path(&spec, ".replicas"), "spec.replicas");
        assert_eq!(join_field_path(&spec, ".tags['a.b']"), "spec.tags[a.b]");
        assert_eq!(join_field_path(&Path::root(), ".spec.x"), "spec.x");
    }
}
