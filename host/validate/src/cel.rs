//! `x-kubernetes-validations` rules, evaluated with the Common Expression
//! Language as the API server evaluates them: `self` is the value at the
//! rule's level, `oldSelf` its previous state, and a rule that reads
//! `oldSelf` (a transition rule) is evaluated only when there is one.
//!
//! A failed rule is reported as the API server reports it:
//! `spec: Invalid value: "object": <message>`, the message being the rule's
//! `message`, its `messageExpression`'s result, or `failed rule: <rule>`,
//! at the rule's `fieldPath` and with its `reason`.

mod comprehensions;
mod cost;
mod format;
mod library;
mod net;
mod quantity;
mod semver;
pub(crate) mod url;
mod values;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cel::{Context, Env, Program};
use regex::Regex;
use serde_json::{Value, json};

use crate::openapi::type_name;
use crate::problem::{Path, Problem};

/// The most rules and patterns kept compiled; one validation run over a
/// few hundred CRDs stays well below it.
const MAX_CACHED: usize = 4096;
/// The longest rule evaluated: the API server bounds a rule's cost, which
/// this evaluator cannot estimate, so the text itself is bounded.
pub const MAX_RULE_LENGTH: usize = 8192;

/// Compiled rules and patterns, shared by every object validated.
pub struct Rules {
    /// CEL's standard library with the libraries kube-apiserver's CEL
    /// environment has for CRD rules: the strings extension and
    /// Kubernetes' own (see [`library`]).
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
    /// How the API server names the rule in an evaluation error: by its
    /// message if it has one.
    fn error_string(&self) -> &'a str {
        self.message.unwrap_or(self.rule).trim()
    }

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
            library::register,
            comprehensions::register,
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
                .and_then(|program| match absent_function(program.expression()) {
                    Some(name) => Err(format!(
                        "undeclared reference to '{name}' (in container '')"
                    )),
                    None => Ok(program),
                })
        };
        let compiled = Arc::new(compiled);
        if programs.len() >= MAX_CACHED {
            programs.clear();
        }
        programs.insert(source.to_string(), compiled.clone());
        compiled
    }

    /// The estimated cost problems of a CRD's rules, as the API server
    /// reports them when it refuses the CRD.
    pub(crate) fn crd_cost_problems(&self, crd: &Value) -> Vec<Problem> {
        cost::crd_problems(crd, &self.env)
    }

    /// The estimated cost problems of the CRDs an XRD generates (its XR's
    /// and its claim's), at those CRDs' field paths: what the API server
    /// answers when it refuses them. An XRD that generates no CRD has none.
    pub(crate) fn xrd_cost_problems(&self, xrd: &Value) -> Vec<Problem> {
        use plait_model::Manifest;
        let Ok(mut xrd) = plait_model::CompositeResourceDefinition::from_value(xrd.clone()) else {
            return Vec::new();
        };
        if xrd.metadata.uid.is_none() {
            xrd.metadata.uid = Some(String::new());
        }
        let mut crds: Vec<Value> = plait_model::crd::composite_crd(&xrd).into_iter().collect();
        if xrd.spec.claim_names.is_some() {
            crds.extend(plait_model::crd::claim_crd(&xrd));
        }
        crds.iter()
            .flat_map(|crd| cost::crd_problems(crd, &self.env))
            .collect()
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
        let mut context: Option<Context> = None;
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
            // One context serves every rule of the node: `self` and
            // `oldSelf` are converted once.
            let context = context.get_or_insert_with(|| {
                let mut context = Context::with_env(self.env.clone());
                context.add_variable_from_value("self", values::to_cel(value, Some(schema)));
                if let Some(old) = old {
                    context.add_variable_from_value("oldSelf", values::to_cel(old, Some(schema)));
                }
                context
            });
            let holds = match program.execute(context) {
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
                        format!(
                            "{} evaluating rule: {}",
                            error_text(&e),
                            rule.error_string()
                        ),
                    ));
                    continue;
                }
            };
            if holds {
                continue;
            }
            let message = self.message(&rule, context);
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

/// A function cel-rust's extensions have that the API server's CRD rules do
/// not: the strings extension's `reverse()` (its version 3; the API server
/// has version 2).
fn absent_function(expr: &cel::IdedExpr) -> Option<&'static str> {
    use cel::common::ast::{EntryExpr, Expr};
    match &expr.expr {
        Expr::Call(call) => {
            if call.func_name == "reverse" && call.target.is_some() && call.args.is_empty() {
                return Some("reverse");
            }
            call.target
                .iter()
                .map(AsRef::as_ref)
                .chain(&call.args)
                .find_map(absent_function)
        }
        Expr::Select(select) => absent_function(&select.operand),
        Expr::List(list) => list.elements.iter().find_map(absent_function),
        Expr::Map(map) => map.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => absent_function(&e.key).or_else(|| absent_function(&e.value)),
            EntryExpr::StructField(f) => absent_function(&f.value),
        }),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .find_map(absent_function),
        _ => None,
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

/// An evaluation error as the API server words it: the libraries' errors
/// in their own words.
fn error_text(e: &cel::ExecutionError) -> String {
    use cel::ExecutionError as E;
    match e {
        E::FunctionError { message, .. } => message.clone(),
        E::Overflow(_, cel::Value::UInt(_), _) => "unsigned integer overflow".to_string(),
        E::Overflow(..) => "integer overflow".to_string(),
        E::DivisionByZero(_) => "division by zero".to_string(),
        E::RemainderByZero(_) => "modulus by zero".to_string(),
        E::NoSuchKey(key) => format!("no such key: {key}"),
        other => other.to_string(),
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

    /// Evaluates `rule` with `self` bound to `value` of schema `schema`:
    /// the rule's bool, or the error text the API server would report.
    fn evaluate(rules: &Rules, rule: &str, value: &Value, schema: &Value) -> Result<bool, String> {
        let program = rules.program(rule);
        let program = program.as_ref().as_ref().map_err(Clone::clone)?;
        let mut context = Context::with_env(rules.env.clone());
        context.add_variable_from_value("self", values::to_cel(value, Some(schema)));
        match program.execute(&context) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("not a bool: {other:?}")),
            Err(e) => Err(error_text(&e)),
        }
    }

    /// Runs a table of `(rule, self, expected)`: `Ok(bool)` for the rule's
    /// result, `Err(text)` for an error containing `text`.
    fn check_table(schema: &Value, table: &[(&str, Value, Result<bool, &str>)]) {
        let rules = Rules::new();
        for (rule, value, expected) in table {
            let got = evaluate(&rules, rule, value, schema);
            match (expected, &got) {
                (Ok(want), Ok(have)) if want == have => {}
                (Err(want), Err(have)) if have.contains(want) => {}
                _ => panic!("{rule} on {value}: expected {expected:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn the_kubernetes_list_library_answers_as_upstream() {
        let schema = json!({"type": "array", "items": {"type": "integer"}});
        check_table(
            &schema,
            &[
                ("self.isSorted()", json!([1, 2, 2, 3]), Ok(true)),
                ("self.isSorted()", json!([3, 1]), Ok(false)),
                ("self.sum() == 6", json!([1, 2, 3]), Ok(true)),
                ("self.sum() == 0", json!([]), Ok(true)),
                (
                    "self.min() == 1 && self.max() == 3",
                    json!([2, 1, 3]),
                    Ok(true),
                ),
                (
                    "self.min() == 0",
                    json!([]),
                    Err("min called on empty list"),
                ),
                (
                    "self.max() == 0",
                    json!([]),
                    Err("max called on empty list"),
                ),
                (
                    "self.indexOf(2) == 1 && self.lastIndexOf(2) == 3",
                    json!([1, 2, 3, 2]),
                    Ok(true),
                ),
                ("self.indexOf(9) == -1", json!([1]), Ok(true)),
                ("['b', 'a'].isSorted()", json!([]), Ok(false)),
                ("[1.5, 2.5].sum() == 4.0", json!([]), Ok(true)),
                (
                    "[duration('1s'), duration('2s')].sum() == duration('3s')",
                    json!([]),
                    Ok(true),
                ),
            ],
        );
    }

    #[test]
    fn the_regex_library_finds_as_upstream() {
        let schema = json!({"type": "string"});
        check_table(
            &schema,
            &[
                (
                    "self.find('[0-9]+') == '123'",
                    json!("abc123def456"),
                    Ok(true),
                ),
                ("self.find('x') == ''", json!("abc"), Ok(true)),
                (
                    "self.findAll('[0-9]+') == ['123', '456']",
                    json!("abc123def456"),
                    Ok(true),
                ),
                (
                    "self.findAll('[0-9]+', 1) == ['123']",
                    json!("abc123def456"),
                    Ok(true),
                ),
                ("self.findAll('[0-9]+', 0) == []", json!("abc123"), Ok(true)),
                ("self.find('[') == ''", json!("a"), Err("Illegal regex")),
            ],
        );
    }

    #[test]
    fn the_url_library_reads_urls_as_upstream() {
        let schema = json!({"type": "string"});
        check_table(
            &schema,
            &[
                (
                    "isURL(self)",
                    json!("https://example.com/path?q=1"),
                    Ok(true),
                ),
                ("isURL(self)", json!("example.com"), Ok(false)),
                (
                    "url(self).getScheme() == 'https'",
                    json!("https://example.com"),
                    Ok(true),
                ),
                (
                    "url(self).getHost() == 'example.com:80'",
                    json!("https://example.com:80/x"),
                    Ok(true),
                ),
                (
                    "url(self).getHostname() == '::1'",
                    json!("https://[::1]:80/x"),
                    Ok(true),
                ),
                (
                    "url(self).getPort() == '80'",
                    json!("https://[::1]:80/x"),
                    Ok(true),
                ),
                (
                    "url(self).getEscapedPath() == '/a%20b'",
                    json!("https://a/a%20b"),
                    Ok(true),
                ),
                (
                    "url(self).getQuery() == {'x': ['1', '2']}",
                    json!("https://a/?x=1&x=2"),
                    Ok(true),
                ),
                (
                    "url(self).getScheme() == ''",
                    json!("nope"),
                    Err("URL parse error during conversion from string"),
                ),
                (
                    "type(url(self)) == kubernetes.URL",
                    json!("https://a"),
                    Err(""),
                ),
            ],
        );
    }

    #[test]
    fn the_quantity_library_computes_as_upstream() {
        let schema = json!({"x-kubernetes-int-or-string": true});
        check_table(
            &schema,
            &[
                ("isQuantity(self)", json!("1.5Gi"), Ok(true)),
                ("isQuantity(self)", json!("1.5GiB"), Ok(false)),
                (
                    "quantity(self) == quantity('1536Mi')",
                    json!("1.5Gi"),
                    Ok(true),
                ),
                (
                    "quantity(self).isGreaterThan(quantity('1'))",
                    json!("1001m"),
                    Ok(true),
                ),
                (
                    "quantity(self).isLessThan(quantity('1'))",
                    json!("999m"),
                    Ok(true),
                ),
                (
                    "quantity(self).compareTo(quantity('1k')) == 0",
                    json!("1000"),
                    Ok(true),
                ),
                ("quantity(self).asInteger() == 1024", json!("1Ki"), Ok(true)),
                (
                    "quantity(self).asInteger() == 1",
                    json!("1.5"),
                    Err("cannot convert value to integer"),
                ),
                ("quantity(self).isInteger()", json!("1.5"), Ok(false)),
                (
                    "quantity(self).asApproximateFloat() == 1.5",
                    json!("1.5"),
                    Ok(true),
                ),
                ("sign(quantity(self)) == -1", json!("-3m"), Ok(true)),
                (
                    "quantity(self).add(quantity('500m')) == quantity('2')",
                    json!("1.5"),
                    Ok(true),
                ),
                (
                    "quantity(self).add(2) == quantity('3')",
                    json!("1"),
                    Ok(true),
                ),
                (
                    "quantity(self).sub(quantity('1')) == quantity('500m')",
                    json!("1.5"),
                    Ok(true),
                ),
                ("sign(quantity(self).sub(1)) == 0", json!("1"), Ok(true)),
                (
                    "quantity(self) == quantity('1')",
                    json!("x"),
                    Err("quantities must match the regular expression"),
                ),
                ("quantity(self) == quantity('1')", json!(5), Err("")),
            ],
        );
    }

    #[test]
    fn the_ip_and_cidr_libraries_answer_as_upstream() {
        let schema = json!({"type": "string"});
        check_table(
            &schema,
            &[
                ("isIP(self)", json!("10.0.0.1"), Ok(true)),
                ("isIP(self)", json!("10.0.0.01"), Ok(false)),
                ("isIP(self)", json!("::ffff:10.0.0.1"), Ok(false)),
                ("ip(self).family() == 6", json!("2001:db8::1"), Ok(true)),
                ("ip(self).isLoopback()", json!("127.0.0.1"), Ok(true)),
                ("ip(self).isUnspecified()", json!("::"), Ok(true)),
                ("ip(self).isGlobalUnicast()", json!("192.168.0.1"), Ok(true)),
                ("ip(self).isLinkLocalUnicast()", json!("fe80::1"), Ok(true)),
                (
                    "ip(self).isLinkLocalMulticast()",
                    json!("224.0.0.5"),
                    Ok(true),
                ),
                (
                    "string(ip(self)) == '2001:db8::1'",
                    json!("2001:DB8::1"),
                    Ok(true),
                ),
                ("ip.isCanonical(self)", json!("2001:DB8::1"), Ok(false)),
                ("ip(self) == ip('10.0.0.1')", json!("10.0.0.1"), Ok(true)),
                (
                    "ip(self).family() == 4",
                    json!("nope"),
                    Err("parse error during conversion from string"),
                ),
                ("isCIDR(self)", json!("10.0.0.0/8"), Ok(true)),
                ("isCIDR(self)", json!("10.0.0.0/33"), Ok(false)),
                (
                    "cidr(self).containsIP('10.1.2.3')",
                    json!("10.0.0.0/8"),
                    Ok(true),
                ),
                (
                    "cidr(self).containsIP(ip('11.0.0.1'))",
                    json!("10.0.0.0/8"),
                    Ok(false),
                ),
                (
                    "cidr(self).containsCIDR('10.1.0.0/16')",
                    json!("10.0.0.0/8"),
                    Ok(true),
                ),
                (
                    "cidr(self).containsCIDR(cidr('0.0.0.0/0'))",
                    json!("10.0.0.0/8"),
                    Ok(false),
                ),
                (
                    "cidr(self).prefixLength() == 8",
                    json!("10.0.0.0/8"),
                    Ok(true),
                ),
                (
                    "string(cidr(self).masked()) == '10.0.0.0/8'",
                    json!("10.1.2.3/8"),
                    Ok(true),
                ),
                (
                    "cidr(self).ip() == ip('10.1.2.3')",
                    json!("10.1.2.3/8"),
                    Ok(true),
                ),
            ],
        );
    }

    #[test]
    fn the_format_library_validates_as_upstream() {
        let schema = json!({"type": "string"});
        check_table(
            &schema,
            &[
                (
                    "!format.dns1123Label().validate(self).hasValue()",
                    json!("my-name"),
                    Ok(true),
                ),
                (
                    "format.dns1123Label().validate(self).hasValue()",
                    json!("My_Name"),
                    Ok(true),
                ),
                (
                    "format.named('dns1123Subdomain').value().validate(self) == optional.none()",
                    json!("a.b"),
                    Ok(true),
                ),
                ("!format.named('nope').hasValue()", json!(""), Ok(true)),
                (
                    "format.uuid().validate(self).value() == ['does not match the UUID format']",
                    json!("x"),
                    Ok(true),
                ),
                (
                    "format.labelValue().validate(self).value().size() == 1",
                    json!("-x"),
                    Ok(true),
                ),
            ],
        );
    }

    #[test]
    fn the_semver_library_compares_as_upstream() {
        let schema = json!({"type": "string"});
        check_table(
            &schema,
            &[
                ("isSemver(self)", json!("1.2.3-rc.1+build"), Ok(true)),
                ("isSemver(self)", json!("v1.2.3"), Ok(false)),
                ("isSemver(self, true)", json!("v1.2"), Ok(true)),
                (
                    "semver(self).major() == 1 && semver(self).minor() == 2 && semver(self).patch() == 3",
                    json!("1.2.3"),
                    Ok(true),
                ),
                (
                    "semver(self).isLessThan(semver('1.0.0'))",
                    json!("1.0.0-alpha"),
                    Ok(true),
                ),
                (
                    "semver(self).isGreaterThan(semver('1.9.9'))",
                    json!("1.10.0"),
                    Ok(true),
                ),
                (
                    "semver(self).compareTo(semver('1.2.3+other')) == 0",
                    json!("1.2.3"),
                    Ok(true),
                ),
                (
                    "semver(self, true) == semver('1.0.0')",
                    json!("v1"),
                    Ok(true),
                ),
                (
                    "semver(self).major() == 1",
                    json!("1.2"),
                    Err("No Major.Minor.Patch elements found"),
                ),
            ],
        );
    }

    #[test]
    fn the_strings_and_sets_extensions_answer_as_upstream() {
        let schema = json!({"type": "string"});
        check_table(
            &schema,
            &[
                ("self.charAt(1) == 'b'", json!("abc"), Ok(true)),
                (
                    "self.indexOf('c') == 2 && self.lastIndexOf('a') == 0",
                    json!("abc"),
                    Ok(true),
                ),
                (
                    "self.lowerAscii() == 'abc' && self.upperAscii() == 'ABC'",
                    json!("aBc"),
                    Ok(true),
                ),
                ("self.replace('b', 'x') == 'axc'", json!("abc"), Ok(true)),
                ("self.split(',') == ['a', 'b']", json!("a,b"), Ok(true)),
                ("self.substring(1, 2) == 'b'", json!("abc"), Ok(true)),
                ("self.trim() == 'a'", json!("  a "), Ok(true)),
                ("['a', 'b'].join('-') == 'a-b'", json!(""), Ok(true)),
                ("strings.quote(self) == '\"a\"'", json!("a"), Ok(true)),
                ("'%s-%d'.format([self, 1]) == 'a-1'", json!("a"), Ok(true)),
                (
                    "self.reverse() == 'a'",
                    json!("a"),
                    Err("undeclared reference to 'reverse'"),
                ),
                ("sets.contains([1, 2, 3], [2, 3])", json!(""), Ok(true)),
                ("sets.contains([1], [2])", json!(""), Ok(false)),
                ("sets.equivalent([1, 2, 1], [2, 1])", json!(""), Ok(true)),
                ("sets.intersects([1, 2], [3, 2])", json!(""), Ok(true)),
                ("sets.intersects([1], [])", json!(""), Ok(false)),
            ],
        );
    }

    #[test]
    fn an_xrds_generated_crds_are_cost_estimated() {
        let xrd = |list: Value| {
            json!({
                "apiVersion": "apiextensions.crossplane.io/v1",
                "kind": "CompositeResourceDefinition",
                "metadata": {"name": "xbuckets.example.org"},
                "spec": {
                    "group": "example.org",
                    "names": {"kind": "XBucket", "plural": "xbuckets"},
                    "claimNames": {"kind": "Bucket", "plural": "buckets"},
                    "versions": [{"name": "v1", "served": true, "referenceable": true, "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": {
                            "type": "object",
                            "properties": {"names": list},
                            "x-kubernetes-validations": [{"rule": "self.names.all(n, n.matches('^[a-z]+$'))"}],
                        }},
                    }}}],
                },
            })
        };
        let rules = Rules::new();
        let over =
            rules.xrd_cost_problems(&xrd(json!({"type": "array", "items": {"type": "string"}})));
        let rule_path = "properties[spec].x-kubernetes-validations[0].rule";
        // Once for the XR's CRD, once for the claim's.
        assert_eq!(
            over.iter()
                .filter(
                    |p| p.field.ends_with(rule_path) && p.detail.starts_with("estimated rule cost")
                )
                .count(),
            2,
            "{over:?}"
        );
        let within = rules.xrd_cost_problems(&xrd(
            json!({"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 32}}),
        ));
        assert!(within.is_empty(), "{within:?}");
    }

    #[test]
    fn two_variable_comprehensions_iterate_indices_or_keys_with_values() {
        let schema = json!({"type": "object", "properties": {
            "l": {"type": "array", "items": {"type": "string"}},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
        }});
        let value = json!({"l": ["a", "b", "c"], "m": {"x": 1, "y": 2}});
        check_table(
            &schema,
            &[
                (
                    "self.l.all(i, v, i < 3 && v.size() == 1)",
                    value.clone(),
                    Ok(true),
                ),
                (
                    "self.l.all(i, v, i == 0 || v != 'a')",
                    value.clone(),
                    Ok(true),
                ),
                (
                    "self.l.exists(i, v, i == 2 && v == 'c')",
                    value.clone(),
                    Ok(true),
                ),
                (
                    "self.l.exists(i, v, i == 2 && v == 'a')",
                    value.clone(),
                    Ok(false),
                ),
                (
                    "self.m.all(k, v, v > 0 && k.size() == 1)",
                    value.clone(),
                    Ok(true),
                ),
                ("self.m.existsOne(k, v, v == 2)", value.clone(), Ok(true)),
                (
                    "self.l.transformList(i, v, v + string(i)) == ['a0', 'b1', 'c2']",
                    value.clone(),
                    Ok(true),
                ),
                (
                    "self.l.transformList(i, v, i > 0, v) == ['b', 'c']",
                    value.clone(),
                    Ok(true),
                ),
                (
                    "self.m.transformMap(k, v, v * 10) == {'x': 10, 'y': 20}",
                    value.clone(),
                    Ok(true),
                ),
                (
                    "self.m.transformMap(k, v, v > 1, v) == {'y': 2}",
                    value.clone(),
                    Ok(true),
                ),
                (
                    "self.m.transformMapEntry(k, v, {k + k: v}) == {'xx': 1, 'yy': 2}",
                    value.clone(),
                    Ok(true),
                ),
                (
                    "self.m.transformMapEntry(k, v, {'same': v}).size() == 1",
                    value.clone(),
                    Err("already exists"),
                ),
                (
                    "self.l.all(i, v, self.l.exists(j, w, w == v && j == i))",
                    value.clone(),
                    Ok(true),
                ),
                (
                    "self.l.all(x, x.size() == 1) && self.l.map(x, x + x)[0] == 'aa'",
                    value,
                    Ok(true),
                ),
            ],
        );
    }

    #[test]
    fn dates_and_durations_of_the_schema_are_timestamps_and_durations() {
        let schema = json!({"type": "object", "properties": {
            "when": {"type": "string", "format": "date-time"},
            "every": {"type": "string", "format": "duration"},
            "ratio": {"type": "number"},
        }});
        check_table(
            &schema,
            &[
                (
                    "self.when > timestamp('2020-01-01T00:00:00Z')",
                    json!({"when": "2024-05-01T10:00:00Z"}),
                    Ok(true),
                ),
                (
                    "self.when.getFullYear() == 2024",
                    json!({"when": "2024-05-01T10:00:00Z"}),
                    Ok(true),
                ),
                (
                    "self.every < duration('2h')",
                    json!({"every": "1h30m"}),
                    Ok(true),
                ),
                (
                    "self.ratio == 2.0 && type(self.ratio) == double",
                    json!({"ratio": 2}),
                    Ok(true),
                ),
                ("self.?missing.orValue(1) == 1", json!({}), Ok(true)),
            ],
        );
    }
}
