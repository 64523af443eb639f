//! The estimated cost of `x-kubernetes-validations` rules, as kube-apiserver
//! estimates it when it accepts or refuses a CRD: cel-go's worst-case cost
//! model (a unit per call, select and identifier; strings cost by length,
//! comprehensions by the size of what they iterate), with the sizes the
//! schema allows (`maxLength`, `maxItems`, `maxProperties`, or else what fits
//! in a 3 MiB request), multiplied by how many times the rule's node can
//! occur. A rule over 10,000,000 and a CRD whose rules add up to over
//! 100,000,000 are refused with the API server's messages.

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use crate::problem::Problem;

/// `StaticEstimatedCostLimit`: one rule's estimated cost.
pub const RULE_LIMIT: u64 = 10_000_000;
/// `StaticEstimatedCRDCostLimit`: all rules of a CRD version's schema.
pub const CRD_LIMIT: u64 = 100_000_000;
/// The largest request the API server takes, which bounds what a schema
/// leaves unbounded.
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;
const STRING_TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;
const HINT: &str = " (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

/// A `[min, max]` range of costs or sizes; arithmetic saturates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    min: u64,
    max: u64,
}

impl Range {
    const fn fixed(n: u64) -> Range {
        Range { min: n, max: n }
    }

    const UNKNOWN: Range = Range {
        min: 0,
        max: u64::MAX,
    };

    fn add(self, o: Range) -> Range {
        Range {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    fn mul(self, o: Range) -> Range {
        Range {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    fn union(self, o: Range) -> Range {
        Range {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }

    /// cel-go's `MultiplyByCostFactor`: rounded up, saturating.
    fn factor(self, f: f64) -> Range {
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let scale = |x: u64| {
            let product = (x as f64 * f).ceil();
            if product >= 18_446_744_073_709_551_616.0 {
                u64::MAX
            } else {
                product as u64
            }
        };
        Range {
            min: scale(self.min),
            max: scale(self.max),
        }
    }
}

/// What the estimator knows of an expression's value.
#[derive(Debug, Clone, Copy)]
struct Shape<'s> {
    /// Its size: a string's length, a list's or map's entries.
    size: Option<Range>,
    /// Its schema, when it is (part of) `self` or `oldSelf`.
    schema: Option<&'s Value>,
    /// Whether it is a string, for the operators priced by length.
    string: bool,
}

impl<'s> Shape<'s> {
    const NONE: Shape<'static> = Shape {
        size: None,
        schema: None,
        string: false,
    };

    fn of_schema(schema: &'s Value) -> Shape<'s> {
        Shape {
            size: schema_size(schema),
            schema: Some(schema),
            string: is_string(schema),
        }
    }

    fn sized(size: Range) -> Shape<'s> {
        Shape {
            size: Some(size),
            ..Shape::NONE
        }
    }

    fn size_or_unknown(&self) -> Range {
        self.size.unwrap_or(Range::UNKNOWN)
    }
}

fn is_string(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("string")
        && !matches!(
            schema.get("format").and_then(Value::as_str),
            Some("date-time" | "duration" | "byte")
        )
}

fn number(schema: &Value, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

/// The fewest bytes a value of `schema` takes in JSON.
fn min_json_size(schema: &Value) -> u64 {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => 2 + number(schema, "minLength").unwrap_or(0),
        Some("boolean") => 4,
        Some("integer" | "number") => 1,
        _ => 2,
    }
}

/// How many entries fit in a request when each takes `min` bytes and a
/// separator.
fn fitting(min: u64) -> u64 {
    (MAX_REQUEST_BYTES - 2) / (min + 1)
}

/// The size range a schema allows its values.
fn schema_size(schema: &Value) -> Option<Range> {
    let ty = schema.get("type").and_then(Value::as_str);
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Some(Range {
            min: 0,
            max: number(schema, "maxLength").unwrap_or(MAX_REQUEST_BYTES - 2),
        });
    }
    match ty {
        Some("string") => {
            let max = number(schema, "maxLength").unwrap_or_else(|| {
                match schema.get("format").and_then(Value::as_str) {
                    Some("duration") => 21,
                    Some("date") => 10,
                    Some("date-time") => 32,
                    _ => MAX_REQUEST_BYTES - 2,
                }
            });
            Some(Range {
                min: number(schema, "minLength").unwrap_or(0),
                max,
            })
        }
        Some("array") => {
            let item_min = schema.get("items").map_or(2, min_json_size);
            Some(Range {
                min: number(schema, "minItems").unwrap_or(0),
                max: number(schema, "maxItems").unwrap_or_else(|| fitting(item_min)),
            })
        }
        Some("object") => {
            let value_min = schema
                .get("additionalProperties")
                .filter(|a| a.is_object())
                .map_or(2, min_json_size);
            // A `"key":` takes at least three bytes besides the value.
            let max = number(schema, "maxProperties").unwrap_or_else(|| {
                match schema.get("properties").and_then(Value::as_object) {
                    Some(p) if schema.get("additionalProperties").is_none() => p.len() as u64,
                    _ => fitting(value_min + 3),
                }
            });
            Some(Range {
                min: number(schema, "minProperties").unwrap_or(0),
                max,
            })
        }
        Some("integer" | "number" | "boolean") => Some(Range::fixed(1)),
        _ => None,
    }
}

/// How many times the node at `schema` can occur below an ancestor: the
/// entries its parent list or map can hold.
fn entries(schema: &Value) -> u64 {
    schema_size(schema).map_or(1, |r| r.max.max(1))
}

/// The schema of a field of an object, of the items of a list, or of the
/// values of a map.
fn field<'s>(schema: &'s Value, name: &str) -> Option<&'s Value> {
    schema
        .get("properties")
        .and_then(|p| p.get(name))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

fn element(schema: &Value) -> Option<&Value> {
    schema
        .get("items")
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

struct Estimator<'s> {
    self_schema: &'s Value,
    /// Comprehension variables, innermost last.
    locals: Vec<(String, Shape<'s>)>,
}

impl<'s> Estimator<'s> {
    fn cost(&mut self, e: &IdedExpr) -> (Range, Shape<'s>) {
        match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => (
                Range::fixed(0),
                Shape {
                    size: Some(Range::fixed(s.inner().chars().count() as u64)),
                    schema: None,
                    string: true,
                },
            ),
            Expr::Literal(LiteralValue::Bytes(b)) => (
                Range::fixed(0),
                Shape::sized(Range::fixed(b.inner().len() as u64)),
            ),
            Expr::Literal(_) => (Range::fixed(0), Shape::sized(Range::fixed(1))),
            Expr::Ident(name) => {
                let local = self.locals.iter().rev().find(|(n, _)| n == name);
                let shape = match (local, name.as_str()) {
                    (Some((_, shape)), _) => *shape,
                    (None, "self" | "oldSelf") => Shape::of_schema(self.self_schema),
                    (None, _) => Shape::NONE,
                };
                (Range::fixed(1), shape)
            }
            Expr::Select(select) => {
                let (operand_cost, operand) = self.cost(&select.operand);
                let shape = operand
                    .schema
                    .and_then(|s| field(s, &select.field))
                    .map_or(Shape::NONE, Shape::of_schema);
                if select.test {
                    // `has()` costs nothing beyond its operand.
                    return (operand_cost, Shape::sized(Range::fixed(1)));
                }
                (operand_cost.add(Range::fixed(1)), shape)
            }
            Expr::List(list) => {
                let mut cost = Range::fixed(LIST_CREATE);
                for element in &list.elements {
                    cost = cost.add(self.cost(element).0);
                }
                (cost, Shape::sized(Range::fixed(list.elements.len() as u64)))
            }
            Expr::Map(map) => {
                let mut cost = Range::fixed(MAP_CREATE);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        cost = cost
                            .add(self.cost(&entry.key).0)
                            .add(self.cost(&entry.value).0);
                    }
                }
                (cost, Shape::sized(Range::fixed(map.entries.len() as u64)))
            }
            Expr::Struct(_) | Expr::Unspecified => (Range::fixed(1), Shape::NONE),
            Expr::Comprehension(c) => {
                let (range_cost, range) = self.cost(&c.iter_range);
                let (init_cost, init) = self.cost(&c.accu_init);
                let item = range
                    .schema
                    .and_then(|s| {
                        if s.get("type").and_then(Value::as_str) == Some("array") {
                            element(s).map(Shape::of_schema)
                        } else {
                            // A map's keys: the API server's key type is a
                            // plain string type, which declares no size.
                            Some(Shape {
                                size: Some(Range::fixed(0)),
                                schema: None,
                                string: true,
                            })
                        }
                    })
                    .unwrap_or(Shape::NONE);
                self.locals.push((c.accu_var.clone(), init));
                self.locals.push((c.iter_var.clone(), item));
                let (cond, _) = self.cost(&c.loop_cond);
                let (step, _) = self.cost(&c.loop_step);
                self.locals.pop();
                let (result, _) = self.cost(&c.result);
                self.locals.pop();
                let count = range.size_or_unknown();
                let total = range_cost
                    .add(init_cost)
                    .add(result)
                    .add(count.mul(step.add(cond)));
                let shape = match &c.accu_init.expr {
                    Expr::List(_) | Expr::Map(_) => Shape::sized(count),
                    _ => Shape::sized(Range::fixed(1)),
                };
                (total, shape)
            }
            Expr::Call(call) => self.call(&call.func_name, call.target.as_deref(), &call.args),
        }
    }

    fn call(
        &mut self,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) -> (Range, Shape<'s>) {
        let mut args_cost = Range::fixed(0);
        let mut shapes = Vec::with_capacity(args.len());
        let mut costs = Vec::with_capacity(args.len());
        for a in args {
            let (c, s) = self.cost(a);
            args_cost = args_cost.add(c);
            costs.push(c);
            shapes.push(s);
        }
        let (target_cost, this) = match target {
            Some(t) => {
                let (c, s) = self.cost(t);
                (c, Some(s))
            }
            None => (Range::fixed(0), None),
        };
        let base = args_cost.add(target_cost);
        let size = |i: usize| shapes.get(i).map_or(Range::UNKNOWN, Shape::size_or_unknown);
        let this_size = this.map_or(Range::UNKNOWN, |s| s.size_or_unknown());
        let traverse = |r: Range| r.factor(STRING_TRAVERSAL);
        let one = Range::fixed(1);
        let string_result = |size: Range| Shape {
            size: Some(size),
            schema: None,
            string: true,
        };
        match (name, this.is_some(), args.len()) {
            ("_&&_" | "_||_", false, 2) => (
                Range {
                    min: costs[0].min,
                    max: costs[0].max.saturating_add(costs[1].max),
                },
                Shape::sized(one),
            ),
            ("_?_:_", false, 3) => (
                costs[0].add(costs[1].union(costs[2])),
                Shape {
                    size: Some(size(1).union(size(2))),
                    schema: shapes[1].schema.or(shapes[2].schema),
                    string: shapes[1].string || shapes[2].string,
                },
            ),
            // Equality, and the order of strings, read the shorter side.
            ("_==_" | "_!=_", false, 2) => (
                traverse(shorter(size(0), size(1))).add(base),
                Shape::sized(one),
            ),
            ("_<_" | "_<=_" | "_>_" | "_>=_", false, 2) if shapes.iter().any(|s| s.string) => (
                traverse(shorter(size(0), size(1))).add(base),
                Shape::sized(one),
            ),
            ("_+_", false, 2) if shapes.iter().any(|s| s.string) => {
                let total = size(0).add(size(1));
                (traverse(total).add(base), string_result(total))
            }
            ("_+_", false, 2) => (one.add(base), Shape::sized(size(0).add(size(1)))),
            ("_[_]", false, 2) => {
                let item = shapes[0]
                    .schema
                    .and_then(element)
                    .map_or(Shape::NONE, Shape::of_schema);
                (one.add(base), item)
            }
            ("@in", false, 2) => (size(1).add(base), Shape::sized(one)),
            ("matches", true, 1) | ("find" | "findAll", true, 1 | 2) => {
                let string = traverse(this_size.add(one));
                let regex = size(0).factor(REGEX_LENGTH);
                (string.mul(regex).add(base), string_result(this_size))
            }
            ("contains", true, 1) => (
                traverse(this_size).mul(traverse(size(0))).add(base),
                Shape::sized(one),
            ),
            ("startsWith" | "endsWith", true, 1) => {
                (traverse(size(0)).add(base), Shape::sized(one))
            }
            ("size", _, _) => (one.add(base), Shape::sized(one)),
            // What two-variable comprehensions expand to.
            ("@keys", true, 0) => (one.add(base), Shape::sized(this_size)),
            ("@zipmap" | "@mergemaps", false, _) => (one.add(base), Shape::sized(size(0))),
            ("string", false, 1) if shapes[0].string => (one.add(base), shapes[0]),
            // A conversion to string: its length is not known.
            ("string", false, 1) => (one.add(base), string_result(Range::UNKNOWN)),
            // The strings extension, priced by the string's length.
            (
                "charAt" | "lowerAscii" | "upperAscii" | "trim" | "substring" | "indexOf"
                | "lastIndexOf",
                true,
                _,
            ) if this.is_some_and(|t| t.string) => {
                let result = if matches!(name, "indexOf" | "lastIndexOf" | "charAt") {
                    one
                } else {
                    this_size
                };
                (traverse(this_size).add(base), string_result(result))
            }
            ("replace" | "split", true, _) => (
                traverse(this_size)
                    .mul(traverse(size(0).add(one)))
                    .add(base),
                string_result(this_size),
            ),
            ("join", true, _) => (traverse(this_size).add(base), string_result(Range::UNKNOWN)),
            ("format", true, 1) => (
                traverse(this_size).add(base),
                string_result(this_size.add(size(0))),
            ),
            ("strings.quote", false, 1) => (
                traverse(size(0)).add(base),
                string_result(size(0).factor(2.0).add(Range::fixed(2))),
            ),
            // The Kubernetes list library walks the list.
            ("isSorted" | "sum" | "min" | "max" | "indexOf" | "lastIndexOf", true, _) => {
                (this_size.add(base), Shape::sized(one))
            }
            // Parsers walk their string.
            (
                "url" | "isURL" | "quantity" | "isQuantity" | "ip" | "isIP" | "cidr" | "isCIDR"
                | "semver" | "isSemver" | "ip.isCanonical",
                false,
                _,
            ) => (traverse(size(0)).add(one).add(base), Shape::sized(one)),
            ("validate", true, 1) => (
                traverse(size(0)).mul(Range::fixed(60)).add(base),
                Shape::sized(one),
            ),
            ("sets.contains" | "sets.equivalent" | "sets.intersects", false, 2) => {
                (size(0).mul(size(1)).add(base), Shape::sized(one))
            }
            _ => (one.add(base), Shape::NONE),
        }
    }
}

/// The cost range of reading the shorter of two values: none when one is
/// empty.
fn shorter(a: Range, b: Range) -> Range {
    let max = a.max.min(b.max);
    Range {
        min: u64::from(max > 0),
        max,
    }
}

/// The estimated cost of `rule` on a node of `schema`, before multiplying
/// by how often the node occurs; `None` when the rule does not parse.
pub fn estimate(rule: &str, schema: &Value, env: &cel::Env) -> Option<u64> {
    let program = env.compile(rule).ok()?;
    let mut estimator = Estimator {
        self_schema: schema,
        locals: Vec::new(),
    };
    Some(estimator.cost(program.expression()).0.max)
}

/// `getCostErrorMessage`.
fn exceeds(what: &str, cost: u64, limit: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else {
        format!("{factor:.1}x")
    };
    format!("{what} exceeds budget by factor of {factor}{HINT}")
}

struct Walk<'e> {
    env: &'e cel::Env,
    /// `(path, cost)` of every rule.
    costs: Vec<(String, u64)>,
    problems: Vec<Problem>,
}

impl Walk<'_> {
    fn schema(&mut self, schema: &Value, path: &str, cardinality: u64) {
        if let Some(rules) = schema
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
        {
            for (i, rule) in rules.iter().enumerate() {
                let Some(text) = rule.get("rule").and_then(Value::as_str) else {
                    continue;
                };
                let Some(cost) = estimate(text, schema, self.env) else {
                    continue;
                };
                let cost = cost.saturating_mul(cardinality);
                let rule_path = format!("{path}.x-kubernetes-validations[{i}].rule");
                if cost > RULE_LIMIT {
                    self.problems.push(Problem::forbidden(
                        rule_path.clone(),
                        exceeds("estimated rule cost", cost, RULE_LIMIT),
                    ));
                }
                self.costs.push((rule_path, cost));
            }
        }
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                self.schema(property, &format!("{path}.properties[{name}]"), cardinality);
            }
        }
        let repeated = cardinality.saturating_mul(entries(schema));
        if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
            self.schema(items, &format!("{path}.items"), repeated);
        }
        if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
            self.schema(values, &format!("{path}.additionalProperties"), repeated);
        }
    }
}

/// The cost problems of one CRD's rules, at the CRD's field paths, as the
/// API server reports them when it refuses the CRD.
pub fn crd_problems(crd: &Value, env: &cel::Env) -> Vec<Problem> {
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let schemas: Vec<&Value> = versions
        .iter()
        .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    // Identical schemas are validated once, as `spec.validation`.
    let roots: Vec<(String, &Value)> = match schemas.first() {
        Some(first) if schemas.len() == versions.len() && schemas.iter().all(|s| s == first) => {
            vec![("spec.validation.openAPIV3Schema".to_string(), *first)]
        }
        _ => versions
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                v.pointer("/schema/openAPIV3Schema")
                    .map(|s| (format!("spec.versions[{i}].schema.openAPIV3Schema"), s))
            })
            .collect(),
    };
    let mut problems = Vec::new();
    for (path, root) in roots {
        let mut walk = Walk {
            env,
            costs: Vec::new(),
            problems: Vec::new(),
        };
        walk.schema(root, &path, 1);
        let total = walk
            .costs
            .iter()
            .fold(0u64, |sum, (_, c)| sum.saturating_add(*c));
        problems.append(&mut walk.problems);
        if total > CRD_LIMIT {
            let mut expensive: Vec<&(String, u64)> = walk
                .costs
                .iter()
                .filter(|(_, c)| *c > CRD_LIMIT / 100)
                .collect();
            expensive.sort_by_key(|(_, cost)| std::cmp::Reverse(*cost));
            for (rule_path, _) in expensive.into_iter().take(4) {
                problems.push(Problem::forbidden(
                    rule_path.clone(),
                    "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
                ));
            }
            problems.push(Problem::forbidden(
                path,
                exceeds(
                    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                    total,
                    CRD_LIMIT,
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env() -> cel::Env {
        let mut env = cel::Env::stdlib();
        for extension in [
            cel::extensions::strings as fn(&mut cel::Env) -> Result<(), cel::DeclarationError>,
            super::super::library::register,
        ] {
            extension(&mut env).unwrap_or_else(|e| panic!("{e}"));
        }
        env
    }

    #[test]
    fn costs_grow_with_what_the_schema_leaves_unbounded() {
        let bounded = json!({"type": "object", "properties": {
            "s": {"type": "string", "maxLength": 100},
            "l": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}},
        }});
        let unbounded = json!({"type": "object", "properties": {
            "s": {"type": "string"},
            "l": {"type": "array", "items": {"type": "string"}},
        }});
        let env = env();
        // (rule, most it may cost bounded, least it costs unbounded)
        let cases = [
            ("self.s == 'a'", 10, 3),
            ("self.s.matches('^[a-z]+$')", 50, 200_000),
            ("self.l.all(x, x.startsWith('a'))", 200, 1_000_000),
            ("self.l.all(x, self.l.exists(y, x == y))", 2_000, RULE_LIMIT),
            ("isQuantity(string(1))", 10_000, 1_000_000_000_000),
        ];
        for (rule, bounded_most, unbounded_least) in cases {
            let b = estimate(rule, &bounded, &env).unwrap_or_else(|| panic!("{rule}"));
            let u = estimate(rule, &unbounded, &env).unwrap_or_else(|| panic!("{rule}"));
            if rule.contains("string(1)") {
                // A conversion's length is unknown, bounded schema or not.
                assert!(b > unbounded_least, "{rule}: {b}");
                continue;
            }
            assert!(b <= bounded_most, "{rule} bounded: {b}");
            assert!(u >= unbounded_least, "{rule} unbounded: {u}");
        }
    }

    #[test]
    fn budgets_are_reported_in_the_api_servers_words() {
        assert_eq!(
            exceeds("estimated rule cost", RULE_LIMIT * 1000, RULE_LIMIT),
            format!("estimated rule cost exceeds budget by factor of more than 100x{HINT}")
        );
        assert_eq!(
            exceeds("estimated rule cost", RULE_LIMIT / 10 * 54, RULE_LIMIT),
            format!("estimated rule cost exceeds budget by factor of 5.4x{HINT}")
        );
        let crd = |spec: Value| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": spec}}}}]}})
        };
        let expensive = crd(json!({"type": "object",
            "properties": {"l": {"type": "array", "items": {"type": "string"}}, "i": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.i > 0"}, {"rule": "self.l.all(x, x.matches('^a+$'))"}]}));
        let messages: Vec<String> = crd_problems(&expensive, &env())
            .iter()
            .map(ToString::to_string)
            .collect();
        let rule =
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule";
        assert_eq!(
            messages,
            [
                format!(
                    "{rule}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x{HINT}"
                ),
                format!(
                    "{rule}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
                ),
                format!(
                    "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x{HINT}"
                ),
            ]
        );
        let cheap = crd(json!({"type": "object",
            "properties": {"l": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 8}}},
            "x-kubernetes-validations": [{"rule": "self.l.all(x, x.matches('^a+$'))"}]}));
        assert!(crd_problems(&cheap, &env()).is_empty());
    }

    #[test]
    fn a_rule_below_a_list_costs_once_per_item() {
        let env = env();
        let crd = |max_items: Option<u64>| {
            let mut list = json!({"type": "array", "items": {"type": "object",
                "properties": {"s": {"type": "string", "maxLength": 1000}},
                "x-kubernetes-validations": [{"rule": "self.s.matches('^[a-z]+[0-9]*$')"}]}});
            if let Some(n) = max_items {
                list["maxItems"] = json!(n);
            }
            json!({"spec": {"versions": [{"schema": {"openAPIV3Schema": {"type": "object",
                "properties": {"list": list}}}}]}})
        };
        assert!(crd_problems(&crd(Some(10)), &env).is_empty());
        let unbounded = crd_problems(&crd(None), &env);
        assert!(
            unbounded.iter().any(|p| p.field
                == "spec.validation.openAPIV3Schema.properties[list].items.x-kubernetes-validations[0].rule"),
            "{unbounded:?}"
        );
    }
}
