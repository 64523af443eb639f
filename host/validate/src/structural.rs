//! Structural schema validation, as the API server validates a custom
//! resource: types, required fields, enums, formats, bounds, list types,
//! unknown fields (what the API server would prune), and the
//! `x-kubernetes-validations` rules at every level through [`crate::cel`].
//!
//! Messages are the API server's: kube-openapi's `… in body must be of type
//! integer: "string"` wrapped in a `field.Error`.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::catalog::KindSchema;
use crate::cel::Rules;
use crate::openapi::type_name;
use crate::problem::{Path, Problem};

/// How deep `$ref`s may chain before the schema is taken as cyclic.
const MAX_REF_DEPTH: usize = 32;
/// How deep a value may nest before validation stops descending.
const MAX_DEPTH: usize = 128;

/// The schema problems and the CEL rule failures of one object.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub schema: Vec<Problem>,
    pub cel: Vec<Problem>,
    /// A schema problem: the API server then leaves the rules unchecked, as
    /// they would read what the schema forbids.
    pub blocking: bool,
}

/// Walks one object against its kind's schema.
pub(crate) struct Walker<'a> {
    kind: &'a KindSchema,
    rules: &'a Rules,
    custom: bool,
    /// A fragment (a Composition's base): required fields and rules are
    /// not checked, as patches fill them in.
    partial: bool,
    findings: Findings,
}

/// A resolved schema, and whether it is one of the built-in kinds' types a
/// manifest may write as a string or a number (`IntOrString`, `Quantity`).
struct Resolved<'s> {
    schema: &'s Value,
    int_or_string: bool,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(kind: &'a KindSchema, rules: &'a Rules) -> Self {
        Walker {
            kind,
            rules,
            custom: kind.origin.is_custom(),
            partial: false,
            findings: Findings::default(),
        }
    }

    /// Checks a fragment: no required fields, no rules.
    pub(crate) fn partial(mut self) -> Self {
        self.partial = true;
        self
    }

    /// Validates `object` (and, where given, its previous state for
    /// transition rules).
    pub(crate) fn run(mut self, object: &Value, old: Option<&Value>) -> Findings {
        let root = self.kind.root.clone();
        self.check(object, old, &root, &Path::root(), 0, true);
        self.findings
    }

    fn resolve<'s>(kind: &'s KindSchema, mut schema: &'s Value) -> Resolved<'s> {
        let mut int_or_string = false;
        for _ in 0..MAX_REF_DEPTH {
            let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
                // The API server wraps a `$ref` in a one-element `allOf` to
                // give it a default or a description.
                let all_of = schema.get("allOf")?.as_array()?;
                match all_of.as_slice() {
                    [only] if schema.get("properties").is_none() => only.get("$ref")?.as_str(),
                    _ => None,
                }
            });
            let Some(reference) = reference else { break };
            let name = reference.rsplit('/').next().unwrap_or_default();
            if name.ends_with("intstr.IntOrString") || name.ends_with("resource.Quantity") {
                int_or_string = true;
            }
            match kind.components.get(name) {
                Some(target) => schema = target,
                None => break,
            }
        }
        if schema
            .get("x-kubernetes-int-or-string")
            .and_then(Value::as_bool)
            == Some(true)
            || schema.get("format").and_then(Value::as_str) == Some("int-or-string")
        {
            int_or_string = true;
        }
        Resolved {
            schema,
            int_or_string,
        }
    }

    /// Records a schema problem, and whether it leaves the object's rules
    /// unchecked.
    fn schema_problem(&mut self, problem: Problem) {
        if problem.blocks_rules() {
            self.findings.blocking = true;
        }
        self.findings.schema.push(problem);
    }

    fn check(
        &mut self,
        value: &Value,
        old: Option<&Value>,
        schema: &Value,
        path: &Path,
        depth: usize,
        resource_root: bool,
    ) {
        if depth > MAX_DEPTH {
            self.schema_problem(Problem::forbidden(
                path.as_str(),
                format!("nested more than {MAX_DEPTH} levels deep"),
            ));
            return;
        }
        let kind = self.kind;
        let resolved = Self::resolve(kind, schema);
        let schema = resolved.schema;
        if value.is_null() {
            // Go decodes null into a built-in type's zero value; a custom
            // resource's non-nullable null is kept by server-side apply.
            let nullable = schema.get("nullable").and_then(Value::as_bool) == Some(true);
            if self.custom && !nullable && schema.get("type").is_some() {
                let t = schema_type(schema).unwrap_or_default();
                self.schema_problem(Problem::type_invalid(
                    path.as_str(),
                    json!("null"),
                    format!("{} in body must be of type {t}: \"null\"", path.in_body()),
                ));
            }
            return;
        }
        if !self.check_type(value, schema, &resolved, path) {
            return;
        }
        self.check_enum(value, schema, path);
        match value {
            Value::Object(map) => self.check_object(map, old, schema, path, depth, resource_root),
            Value::Array(items) => self.check_array(items, old, schema, path, depth),
            Value::String(s) => self.check_string(s, schema, path),
            Value::Number(_) => self.check_number(value, schema, path),
            _ => {}
        }
        self.check_combinators(value, schema, path, depth);
        if let Some(rules) = schema.get("x-kubernetes-validations")
            && !self.partial
        {
            let problems = self.rules.evaluate(rules, value, old, schema, path);
            self.findings.cel.extend(problems);
        }
    }

    /// Checks the value's JSON type; false when it is wrong (nothing below
    /// it is checked then, as the API server stops there too).
    fn check_type(
        &mut self,
        value: &Value,
        schema: &Value,
        resolved: &Resolved,
        path: &Path,
    ) -> bool {
        let actual = type_name(value);
        if resolved.int_or_string {
            // A custom resource's int-or-string takes only whole numbers;
            // a built-in quantity also takes a fraction.
            let whole = value.is_i64() || value.is_u64() || is_whole_float(value);
            if value.is_string() || (value.is_number() && (whole || !self.custom)) {
                return true;
            }
            self.schema_problem(Problem::type_invalid(
                path.as_str(),
                json!(actual),
                format!(
                    "{} in body must be of type integer,string: {}",
                    path.in_body(),
                    plait_go_compat::strconv::quote(actual)
                ),
            ));
            return false;
        }
        let Some(expected) = schema_type(schema) else {
            return true;
        };
        let ok = match expected {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            // The API server's JSON decoding reads a whole float (14.0) as
            // an integer.
            "integer" => value.is_i64() || value.is_u64() || is_whole_float(value),
            "number" => value.is_number(),
            _ => true,
        };
        if !ok {
            self.schema_problem(Problem::type_invalid(
                path.as_str(),
                json!(actual),
                format!(
                    "{} in body must be of type {expected}: {}",
                    path.in_body(),
                    plait_go_compat::strconv::quote(actual)
                ),
            ));
        }
        ok
    }

    fn check_enum(&mut self, value: &Value, schema: &Value, path: &Path) {
        let Some(allowed) = schema.get("enum").and_then(Value::as_array) else {
            return;
        };
        if !allowed.iter().any(|a| json_equal(a, value)) {
            self.schema_problem(Problem::not_supported(
                path.as_str(),
                value.clone(),
                allowed,
            ));
        }
    }

    fn check_object(
        &mut self,
        map: &Map<String, Value>,
        old: Option<&Value>,
        schema: &Value,
        path: &Path,
        depth: usize,
        resource_root: bool,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        let preserve = schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true);
        let embedded = schema
            .get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true);

        for name in schema
            .get("required")
            .filter(|_| !self.partial)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !map.contains_key(name) {
                self.schema_problem(Problem::required(path.child(name).as_str()));
            }
        }
        if embedded && !self.partial {
            self.check_embedded_type_meta(map, path);
        }
        if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
            && (map.len() as u64) < min
        {
            self.schema_problem(Problem::invalid(
                path.as_str(),
                Value::from(map.len()),
                format!(
                    "{} in body should have at least {min} properties",
                    path.in_body()
                ),
            ));
        }
        if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
            && (map.len() as u64) > max
        {
            self.schema_problem(Problem::too_many(path.as_str(), map.len(), max));
        }

        for (name, child) in map {
            let child_path = path.child(name);
            let child_old = old.and_then(|o| o.get(name));
            if let Some(child_schema) = properties.and_then(|p| p.get(name)) {
                if self.custom && resource_root && name == "metadata" {
                    self.check_custom_metadata(child, child_schema, &child_path);
                    continue;
                }
                // A built-in kind's status is the controllers' to write: its
                // schema's required fields are what Go always serialises,
                // not what a manifest must give.
                let status_of_builtin = !self.custom && resource_root && name == "status";
                let was_partial = self.partial;
                self.partial |= status_of_builtin;
                self.check(
                    child,
                    child_old,
                    child_schema,
                    &child_path,
                    depth + 1,
                    false,
                );
                self.partial = was_partial;
                continue;
            }
            match additional {
                Some(Value::Object(_)) => {
                    if let Some(a) = additional {
                        self.check(child, child_old, a, &child_path, depth + 1, false);
                    }
                    continue;
                }
                Some(Value::Bool(true)) => continue,
                _ => {}
            }
            if preserve {
                continue;
            }
            let machinery = matches!(name.as_str(), "apiVersion" | "kind" | "metadata");
            if machinery && (resource_root || embedded) {
                continue;
            }
            // A built-in type without properties is free-form; a custom
            // resource's schema prunes whatever it does not name.
            if !self.custom && properties.is_none() {
                continue;
            }
            self.schema_problem(Problem::invalid(
                child_path.as_str(),
                json!(name),
                format!("unknown field: {}", plait_go_compat::strconv::quote(name)),
            ));
        }
    }

    /// A custom resource's `metadata` is validated as `ObjectMeta` by the
    /// API server; its schema may only bound `name` and `generateName`.
    fn check_custom_metadata(&mut self, metadata: &Value, schema: &Value, path: &Path) {
        let Some(map) = metadata.as_object() else {
            self.schema_problem(Problem::type_invalid(
                path.as_str(),
                json!(type_name(metadata)),
                format!(
                    "{} in body must be of type object: {}",
                    path.in_body(),
                    plait_go_compat::strconv::quote(type_name(metadata))
                ),
            ));
            return;
        };
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, child_schema) in properties.into_iter().flatten() {
            if let Some(child) = map.get(name) {
                let child_path = path.child(name);
                let kind = self.kind;
                let resolved = Self::resolve(kind, child_schema).schema;
                if let (Some(s), true) = (child.as_str(), child.is_string()) {
                    self.check_string(s, resolved, &child_path);
                }
            }
        }
    }

    fn check_array(
        &mut self,
        items: &[Value],
        old: Option<&Value>,
        schema: &Value,
        path: &Path,
        depth: usize,
    ) {
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && (items.len() as u64) < min
        {
            self.schema_problem(Problem::invalid(
                path.as_str(),
                Value::from(items.len()),
                format!(
                    "{} in body should have at least {min} items",
                    path.in_body()
                ),
            ));
        } else if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && (items.len() as u64) > max
        {
            self.schema_problem(Problem::too_many(path.as_str(), items.len(), max));
        }
        let list_type = schema.get("x-kubernetes-list-type").and_then(Value::as_str);
        let map_keys: Vec<&str> = schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match list_type {
            Some("set") => {
                let mut seen = HashSet::new();
                for (i, item) in items.iter().enumerate() {
                    if !seen.insert(item.to_string()) {
                        self.schema_problem(Problem::duplicate(
                            path.index(i).as_str(),
                            item.clone(),
                        ));
                    }
                }
            }
            Some("map") if !map_keys.is_empty() => {
                let mut seen = HashSet::new();
                for (i, item) in items.iter().enumerate() {
                    let key: Map<String, Value> = map_keys
                        .iter()
                        .filter_map(|k| Some(((*k).to_string(), item.get(*k)?.clone())))
                        .collect();
                    if !seen.insert(Value::Object(key.clone()).to_string()) {
                        self.schema_problem(Problem::duplicate(
                            path.index(i).as_str(),
                            Value::Object(key),
                        ));
                    }
                }
            }
            _ => {}
        }
        let Some(item_schema) = schema.get("items") else {
            return;
        };
        let old_items = old.and_then(Value::as_array);
        for (i, item) in items.iter().enumerate() {
            // Only map and set lists correlate an item with its old self.
            let item_old = match (list_type, old_items) {
                (Some("map"), Some(olds)) if !map_keys.is_empty() => olds
                    .iter()
                    .find(|o| map_keys.iter().all(|k| o.get(*k) == item.get(*k))),
                (Some("set"), Some(olds)) => olds.iter().find(|o| *o == item),
                _ => None,
            };
            self.check(
                item,
                item_old,
                item_schema,
                &path.index(i),
                depth + 1,
                false,
            );
        }
    }

    /// A string's format, then its length and pattern: kube-openapi
    /// reports only the first of maxLength, minLength and pattern that fails.
    fn check_string(&mut self, s: &str, schema: &Value, path: &Path) {
        if let Some(format) = schema.get("format").and_then(Value::as_str)
            && !crate::formats::schema_format_matches(format, s)
        {
            self.schema_problem(Problem::type_invalid(
                path.as_str(),
                json!(s),
                format!(
                    "{} in body must be of type {format}: {}",
                    path.in_body(),
                    plait_go_compat::strconv::quote(s)
                ),
            ));
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && (s.chars().count() as u64) > max
        {
            self.schema_problem(Problem::too_long(path.as_str(), max));
            return;
        }
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && (s.chars().count() as u64) < min
        {
            self.schema_problem(Problem::invalid(
                path.as_str(),
                json!(s),
                format!(
                    "{} in body should be at least {min} chars long",
                    path.in_body()
                ),
            ));
            return;
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            match self.rules.regex(pattern) {
                Ok(re) if !re.is_match(s) => self.schema_problem(Problem::invalid(
                    path.as_str(),
                    json!(s),
                    format!("{} in body should match '{pattern}'", path.in_body()),
                )),
                Ok(_) => {}
                Err(e) => self.schema_problem(Problem::invalid(
                    path.as_str(),
                    json!(s),
                    format!("the schema's pattern '{pattern}' does not compile: {e}"),
                )),
            }
        }
    }

    /// A number's bounds: kube-openapi reports only the first of
    /// multipleOf, maximum and minimum that fails.
    fn check_number(&mut self, value: &Value, schema: &Value, path: &Path) {
        let Some(n) = value.as_f64() else { return };
        let exclusive = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
        let shown = plait_go_compat::printf::format_v;
        let factor = schema.get("multipleOf").and_then(Value::as_f64);
        // kube-openapi divides integer data by the factor cut to an integer
        // (0.5 becomes 0, which it refuses), unless the schema's integer
        // type cannot hold the factor.
        let integral_factor = factor.filter(|f| {
            (value.is_i64() || value.is_u64())
                && (f.fract() == 0.0 || schema_type(schema) != Some("integer"))
        });
        if let Some(f) = integral_factor
            && f.trunc() < 1.0
        {
            let cut = f.trunc() as i64;
            self.schema_problem(Problem::invalid(
                path.as_str(),
                json!(cut),
                format!(
                    "factor MultipleOf declared for {} must be positive: {cut}",
                    path.in_body()
                ),
            ));
            return;
        }
        let failed = if let Some(f) = factor
            && f > 0.0
            && match (integral_factor, value.as_i64()) {
                (Some(_), Some(i)) => i % (f.trunc() as i64) != 0,
                (Some(_), None) => !value.as_u64().unwrap_or(0).is_multiple_of(f.trunc() as u64),
                (None, _) => (n / f).fract() != 0.0,
            } {
            let shown_factor = if integral_factor.is_some() {
                json!(f.trunc() as i64)
            } else {
                schema.get("multipleOf").cloned().unwrap_or_default()
            };
            Some(format!("should be a multiple of {}", shown(&shown_factor)))
        } else if let Some(max) = schema.get("maximum").filter(|m| m.is_number())
            && let Some(bound) = max.as_f64()
            && (n > bound || (exclusive("exclusiveMaximum") && n >= bound))
        {
            let words = if exclusive("exclusiveMaximum") {
                "less than"
            } else {
                "less than or equal to"
            };
            Some(format!("should be {words} {}", shown(max)))
        } else if let Some(min) = schema.get("minimum").filter(|m| m.is_number())
            && let Some(bound) = min.as_f64()
            && (n < bound || (exclusive("exclusiveMinimum") && n <= bound))
        {
            let words = if exclusive("exclusiveMinimum") {
                "greater than"
            } else {
                "greater than or equal to"
            };
            Some(format!("should be {words} {}", shown(min)))
        } else {
            None
        };
        if let Some(detail) = failed {
            self.schema_problem(Problem::invalid(
                path.as_str(),
                value.clone(),
                format!("{} in body {detail}", path.in_body()),
            ));
        }
    }

    /// An embedded resource names its kind, as the API server requires:
    /// `apiVersion` and `kind` present, strings, and not empty.
    fn check_embedded_type_meta(&mut self, map: &Map<String, Value>, path: &Path) {
        for field in ["apiVersion", "kind"] {
            let at = path.child(field);
            match map.get(field) {
                None => self.schema_problem(Problem::required(at.as_str())),
                Some(Value::String(s)) if s.is_empty() => self.schema_problem(Problem::invalid(
                    at.as_str(),
                    json!(""),
                    "must not be empty",
                )),
                Some(Value::String(_)) => {}
                Some(other) => self.schema_problem(Problem::invalid(
                    at.as_str(),
                    other.clone(),
                    "must be a string",
                )),
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf` and `not`: value validations only, as a
    /// structural schema allows them.
    /// `allOf`, `anyOf`, `oneOf` and `not` as kube-openapi reports them:
    /// a message of no field naming the combinator, and the problems of the
    /// failing branches it keeps (every failing `allOf` branch; the first
    /// failing branch of an `anyOf` or `oneOf` none of whose branches pass).
    fn check_combinators(&mut self, value: &Value, schema: &Value, path: &Path, depth: usize) {
        let probe = |walker: &Walker, sub: &Value| {
            let mut probe = Walker {
                kind: walker.kind,
                rules: walker.rules,
                custom: walker.custom,
                partial: walker.partial,
                findings: Findings::default(),
            };
            probe.check(value, None, &value_only(sub), path, depth + 1, false);
            probe.findings
        };
        let combinator = |detail: String| Problem::invalid("", json!(""), detail);
        let named = path.as_str();
        if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
            let mut first_failure = None;
            let mut passed = false;
            for sub in any {
                let findings = probe(self, sub);
                if findings.schema.is_empty() {
                    passed = true;
                    break;
                }
                first_failure.get_or_insert(findings);
            }
            if !passed {
                self.schema_problem(combinator(format!(
                    "\"{named}\" must validate at least one schema (anyOf)"
                )));
                self.keep(first_failure);
            }
        }
        if let Some(one) = schema.get("oneOf").and_then(Value::as_array) {
            let mut first_failure = None;
            let mut passed = 0;
            for sub in one {
                let findings = probe(self, sub);
                if findings.schema.is_empty() {
                    passed += 1;
                } else if passed == 0 {
                    first_failure.get_or_insert(findings);
                }
            }
            if passed != 1 {
                let found = if passed == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {passed} valid alternatives")
                };
                self.schema_problem(combinator(format!(
                    "\"{named}\" must validate one and only one schema (oneOf). {found}"
                )));
                if passed == 0 {
                    self.keep(first_failure);
                }
            }
        }
        if let Some(all) = schema.get("allOf").and_then(Value::as_array)
            && !(all.len() == 1 && all[0].get("$ref").is_some())
        {
            let mut passed = 0;
            for sub in all {
                let findings = probe(self, sub);
                if findings.schema.is_empty() {
                    passed += 1;
                }
                self.keep(Some(findings));
            }
            if passed != all.len() {
                let none = if passed == 0 { ". None validated" } else { "" };
                self.schema_problem(combinator(format!(
                    "\"{named}\" must validate all the schemas (allOf){none}"
                )));
            }
        }
        if let Some(not) = schema.get("not")
            && probe(self, not).schema.is_empty()
        {
            self.schema_problem(combinator(format!(
                "\"{named}\" must not validate the schema (not)"
            )));
        }
    }

    /// Keeps a combinator branch's schema problems as the object's own.
    fn keep(&mut self, findings: Option<Findings>) {
        if let Some(findings) = findings {
            self.findings.schema.extend(findings.schema);
            self.findings.blocking |= findings.blocking;
        }
    }
}

/// A combinator branch checks values only: fields it does not name (all
/// of them, in a branch of only `required`) are not unknown.
fn value_only(sub: &Value) -> Value {
    let mut sub = sub.clone();
    if let Some(obj) = sub.as_object_mut()
        && obj.get("additionalProperties").is_none()
    {
        obj.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
    }
    sub
}

/// A float with no fractional part, within the range of an int64.
fn is_whole_float(value: &Value) -> bool {
    // 2^63, exactly representable.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    value.is_f64()
        && value
            .as_f64()
            .is_some_and(|f| f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f))
}

fn schema_type(schema: &Value) -> Option<&str> {
    schema.get("type").and_then(Value::as_str)
}

/// JSON equality with integers and floats of the same value equal.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_floats_are_integers_as_the_api_server_reads_them() {
        let cases = [
            (json!(14.0), true),
            (json!(-3.0), true),
            (json!(14.5), false),
            (json!(1e19), false),
            (json!(14), false),
            (json!("14"), false),
        ];
        for (value, want) in cases {
            assert_eq!(is_whole_float(&value), want, "{value}");
        }
    }

    #[test]
    fn a_branch_of_only_required_fields_checks_values_only() {
        let cases = [
            (json!({"required": ["host"]}), true),
            (json!({"properties": {"host": {"type": "string"}}}), true),
            (
                json!({"properties": {"host": {"type": "string"}}, "additionalProperties": false}),
                false,
            ),
        ];
        for (branch, preserves) in cases {
            let got = value_only(&branch)
                .get("x-kubernetes-preserve-unknown-fields")
                .is_some();
            assert_eq!(got, preserves, "{branch}");
        }
    }
}
