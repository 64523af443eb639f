//! The differential property test: programs made from a seed (configs with
//! `:`, `=` and `+=`, unions, comprehensions, quantifiers, schemas, lambdas,
//! string formatting), each run by plait and by KCL 0.12.3, which must
//! agree. The generator writes programs that are meant to be valid; the
//! few KCL refuses are left out, and the test fails if that is more than a
//! tenth, so the generator keeps testing what it means to.
//!
//! `PLAIT_KCL_DIFF_SEED` and `PLAIT_KCL_DIFF_PROGRAMS` change the seed and
//! the number of programs; a difference names the seed and the program's
//! index, and prints the program.

use std::fmt::Write as _;

use crate::{Outcome, Program, compare};

const DEFAULT_SEED: u64 = 0x6b63_6c5f_706c_6169;
/// kcl-lib runs a program in about a millisecond and plait (a debug build)
/// in a few: a thousand programs take 6 to 7 s on the 2-core machine.
const DEFAULT_PROGRAMS: usize = 1000;

/// splitmix64: small, seeded, and the same on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn int(&mut self) -> i64 {
        self.below(120) as i64 - 20
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ty {
    Int,
    Str,
    Bool,
    Ints,
    Strs,
    Dict,
}

const KEYS: &[&str] = &[
    "name", "kind", "spec", "items", "value", "n", "y", "on", "labels", "port", "_private",
];
const WORDS: &[&str] = &[
    "alpha",
    "beta",
    "",
    "yes",
    "123",
    "null",
    "True",
    "1.5",
    "a b",
    "x: y",
    "-",
    "#x",
    "ünï",
    "Mixed Case",
    "~",
    "on",
];

struct Schema {
    name: String,
    /// (attribute, type, has a default or is optional)
    attributes: Vec<(String, Ty, bool)>,
}

struct Lambda {
    name: String,
    params: Vec<Ty>,
    returns: Ty,
}

/// What names a program has defined so far, to refer to them.
#[derive(Default)]
struct Scope {
    variables: Vec<(String, Ty)>,
    schemas: Vec<Schema>,
    lambdas: Vec<Lambda>,
}

struct Generator {
    rng: Rng,
    scope: Scope,
    /// Names bound by enclosing comprehensions or quantifiers: (name, type).
    locals: Vec<(String, Ty)>,
    fresh: usize,
    /// Write the next config literal as a block: an entry a line, `if`,
    /// `elif` and `else` entries with indented bodies.
    block: bool,
}

impl Generator {
    fn fresh(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn word(&mut self) -> String {
        format!("{:?}", self.rng.pick(WORDS))
    }

    /// A name of type `ty` in scope, if any.
    fn reference(&mut self, ty: Ty) -> Option<String> {
        let names: Vec<String> = self
            .locals
            .iter()
            .chain(&self.scope.variables)
            .filter(|(_, t)| *t == ty)
            .map(|(name, _)| name.clone())
            .collect();
        if names.is_empty() {
            None
        } else {
            Some(self.rng.pick(&names).clone())
        }
    }

    fn expr(&mut self, ty: Ty, depth: u32) -> String {
        if depth == 0 || self.rng.chance(25) {
            if self.rng.chance(50)
                && let Some(name) = self.reference(ty)
            {
                return name;
            }
            return self.leaf(ty);
        }
        let d = depth - 1;
        match ty {
            Ty::Int => match self.rng.below(9) {
                0 => format!("{} + {}", self.expr(Ty::Int, d), self.expr(Ty::Int, d)),
                1 => format!("({}) * {}", self.expr(Ty::Int, d), self.rng.below(5)),
                2 => format!("{} - {}", self.expr(Ty::Int, d), self.expr(Ty::Int, d)),
                3 => format!("({}) // {}", self.expr(Ty::Int, d), 1 + self.rng.below(7)),
                4 => format!("({}) % {}", self.expr(Ty::Int, d), 1 + self.rng.below(7)),
                5 => {
                    let ty = *self.rng.pick(&[Ty::Ints, Ty::Strs, Ty::Str, Ty::Dict]);
                    format!("len({})", self.expr(ty, d))
                }
                6 => format!("sum({})", self.expr(Ty::Ints, d)),
                7 => format!(
                    "{} if {} else {}",
                    self.expr(Ty::Int, d),
                    self.expr(Ty::Bool, d),
                    self.expr(Ty::Int, d)
                ),
                _ => self
                    .call(Ty::Int, d)
                    .unwrap_or_else(|| format!("max({}, {})", self.rng.int(), self.rng.int())),
            },
            Ty::Str => match self.rng.below(9) {
                // KCL allows no quotes inside `${}`: names and numbers only.
                0 => {
                    let number = self
                        .reference(Ty::Int)
                        .unwrap_or_else(|| self.leaf(Ty::Int));
                    let text = self
                        .reference(Ty::Str)
                        .unwrap_or_else(|| self.rng.int().to_string());
                    format!("\"${{{number}}}-${{{text}}}x\"")
                }
                1 => format!(
                    "\"{{}}/{{}}\".format({}, {})",
                    self.expr(Ty::Str, d),
                    self.expr(Ty::Int, d)
                ),
                2 => {
                    let spec = self
                        .rng
                        .pick(&["{:>8}", "{:<6}|", "{:^9}", "{:*>5}", "{!r}"]);
                    format!("\"{spec}\".format({})", self.expr(Ty::Str, d))
                }
                3 => {
                    let spec = self
                        .rng
                        .pick(&["{:05d}", "{:+d}", "{:x}", "{:#o}", "{:b}", "{:,}", "{:.2f}"]);
                    format!("\"{spec}\".format({})", self.expr(Ty::Int, d))
                }
                4 => {
                    let method = self.rng.pick(&[
                        "upper()",
                        "lower()",
                        "strip()",
                        "title()",
                        "capitalize()",
                        "replace(\"a\", \"@\")",
                    ]);
                    format!("({}).{method}", self.expr(Ty::Str, d))
                }
                5 => format!(
                    "\"{}\".join({})",
                    self.rng.pick(&["-", ", ", ""]),
                    self.expr(Ty::Strs, d)
                ),
                6 => format!("{} + {}", self.expr(Ty::Str, d), self.expr(Ty::Str, d)),
                7 => {
                    let ty = *self.rng.pick(&[Ty::Int, Ty::Bool, Ty::Ints, Ty::Dict]);
                    format!("str({})", self.expr(ty, d))
                }
                _ => self.call(Ty::Str, d).unwrap_or_else(|| self.leaf(Ty::Str)),
            },
            Ty::Bool => match self.rng.below(6) {
                0 => format!(
                    "{} {} {}",
                    self.expr(Ty::Int, d),
                    self.rng.pick(&["<", "<=", "==", "!=", ">", ">="]),
                    self.expr(Ty::Int, d)
                ),
                1 => format!("{} in {}", self.expr(Ty::Int, d), self.expr(Ty::Ints, d)),
                2 => self.quantifier(Ty::Bool, d),
                3 => format!(
                    "{} and not {}",
                    self.expr(Ty::Bool, d),
                    self.expr(Ty::Bool, d)
                ),
                4 => format!("{}.startswith({})", self.expr(Ty::Str, d), self.word()),
                _ => format!("{} in {}", self.word(), self.expr(Ty::Dict, d)),
            },
            Ty::Ints => match self.rng.below(8) {
                // `if` entries and `*` spreads in a list literal.
                7 => {
                    let first = self.expr(Ty::Int, d);
                    let cond = self.expr(Ty::Bool, d);
                    let then = self.expr(Ty::Int, d);
                    let spread = self.expr(Ty::Ints, d);
                    if self.rng.chance(50) {
                        let otherwise = self.expr(Ty::Int, d);
                        format!("[{first}, if {cond}: {then} else: {otherwise}, *{spread}]")
                    } else {
                        format!("[{first}, if {cond}: {then}, *{spread}]")
                    }
                }
                0 => {
                    let x = self.fresh("x");
                    self.locals.push((x.clone(), Ty::Int));
                    let body = self.expr(Ty::Int, d);
                    let cond = self.expr(Ty::Bool, d);
                    self.locals.pop();
                    let source = self.expr(Ty::Ints, d);
                    if self.rng.chance(50) {
                        format!("[{body} for {x} in {source} if {cond}]")
                    } else {
                        format!("[{body} for {x} in {source}]")
                    }
                }
                1 => format!("range({})", self.rng.below(6)),
                2 => format!("{} + {}", self.expr(Ty::Ints, d), self.expr(Ty::Ints, d)),
                3 => format!("sorted({})", self.expr(Ty::Ints, d)),
                4 | 5 => self.quantifier(Ty::Ints, d),
                _ => self
                    .call(Ty::Ints, d)
                    .unwrap_or_else(|| self.leaf(Ty::Ints)),
            },
            Ty::Strs => match self.rng.below(4) {
                0 => {
                    let s = self.fresh("s");
                    self.locals.push((s.clone(), Ty::Str));
                    let body = self.expr(Ty::Str, d);
                    self.locals.pop();
                    format!("[{body} for {s} in {}]", self.expr(Ty::Strs, d))
                }
                1 => format!("[k for k in {}]", self.expr(Ty::Dict, d)),
                2 => format!(
                    "{}.split({})",
                    self.expr(Ty::Str, d),
                    self.rng.pick(&["\" \"", "\"a\"", "\"-\""])
                ),
                _ => self.leaf(Ty::Strs),
            },
            Ty::Dict => self.dict(d),
        }
    }

    fn leaf(&mut self, ty: Ty) -> String {
        match ty {
            Ty::Int => self.rng.int().to_string(),
            Ty::Str => self.word(),
            Ty::Bool => self.rng.pick(&["True", "False"]).to_string(),
            Ty::Ints => {
                let items: Vec<String> = (0..self.rng.below(4))
                    .map(|_| self.rng.int().to_string())
                    .collect();
                format!("[{}]", items.join(", "))
            }
            Ty::Strs => {
                let items: Vec<String> = (0..self.rng.below(4)).map(|_| self.word()).collect();
                format!("[{}]", items.join(", "))
            }
            Ty::Dict => "{}".to_string(),
        }
    }

    /// A quantifier, in parentheses; its source is a name or a list literal:
    /// after `in`, KCL reads `f(x) {` as a schema instance.
    fn quantifier(&mut self, ty: Ty, d: u32) -> String {
        let x = self.fresh("q");
        let source = self
            .reference(Ty::Ints)
            .unwrap_or_else(|| self.leaf(Ty::Ints));
        self.locals.push((x.clone(), Ty::Int));
        let text = match ty {
            Ty::Bool => {
                let which = self.rng.pick(&["all", "any"]);
                format!("({which} {x} in {source} {{ {} }})", self.expr(Ty::Bool, d))
            }
            _ if self.rng.chance(50) => {
                format!("(map {x} in {source} {{ {} }})", self.expr(Ty::Int, d))
            }
            _ => format!("(filter {x} in {source} {{ {} }})", self.expr(Ty::Bool, d)),
        };
        self.locals.pop();
        text
    }

    fn call(&mut self, returns: Ty, d: u32) -> Option<String> {
        let candidates: Vec<usize> = (0..self.scope.lambdas.len())
            .filter(|&i| self.scope.lambdas[i].returns == returns)
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let index = *self.rng.pick(&candidates);
        let params = self.scope.lambdas[index].params.clone();
        let args: Vec<String> = params.iter().map(|ty| self.expr(*ty, d)).collect();
        Some(format!(
            "{}({})",
            self.scope.lambdas[index].name,
            args.join(", ")
        ))
    }

    /// A config literal with `=`, `:` (twice on one key, to unify), `+=`,
    /// dotted keys, `if`, `**` spread; sometimes unioned with another.
    fn dict(&mut self, d: u32) -> String {
        // Only the outermost literal of a statement is written as a block.
        let block = std::mem::take(&mut self.block);
        if self.rng.chance(15) {
            let i = self.fresh("i");
            self.locals.push((i.clone(), Ty::Int));
            let value = self.expr(Ty::Str, d);
            self.locals.pop();
            return format!(
                "{{\"k${{{i}}}\": {value} for {i} in range({})}}",
                self.rng.below(4)
            );
        }
        let mut entries = Vec::new();
        let mut used = Vec::new();
        for _ in 0..1 + self.rng.below(4) {
            let key = self.rng.pick(KEYS).to_string();
            if used.contains(&key) {
                continue;
            }
            used.push(key.clone());
            match self.rng.below(7) {
                0 => {
                    entries.push(format!("{key}: {{a = {}}}", self.expr(Ty::Int, d)));
                    entries.push(format!("{key}: {{b = {}}}", self.expr(Ty::Str, d)));
                }
                1 => {
                    // A fresh list: KCL's `+=` would extend a list another
                    // name holds in place (a known difference, docs/kcl.md).
                    entries.push(format!("{key} = [*{}]", self.expr(Ty::Ints, d)));
                    entries.push(format!("{key} += {}", self.expr(Ty::Ints, d)));
                }
                2 => entries.push(format!("{key}.inner.leaf = {}", self.expr(Ty::Str, d))),
                3 if block => {
                    let (cond, other) = (self.expr(Ty::Bool, d), self.expr(Ty::Bool, d));
                    let (a, b, c) = (
                        self.expr(Ty::Int, d),
                        self.expr(Ty::Str, d),
                        self.expr(Ty::Ints, d),
                    );
                    entries.push(format!(
                        "if {cond}:\n        {key} = {a}\n    elif {other}:\n        {key} = {b}\n    else:\n        {key} = {c}"
                    ));
                }
                3 => entries.push(format!(
                    "if {}: {key} = {}",
                    self.expr(Ty::Bool, d),
                    self.expr(Ty::Int, d)
                )),
                4 => {
                    entries.push(format!("{key} = {}", self.expr(Ty::Int, d)));
                    entries.push(format!("{key} = {}", self.expr(Ty::Str, d)));
                }
                5 if d > 0 => entries.push(format!("{key} = {}", self.dict(d - 1))),
                _ => {
                    let ty = *self.rng.pick(&[Ty::Int, Ty::Str, Ty::Bool, Ty::Strs]);
                    entries.push(format!("{key} = {}", self.expr(ty, d)));
                }
            }
        }
        if self.rng.chance(20)
            && let Some(other) = self.reference(Ty::Dict)
        {
            entries.insert(0, format!("**{other}"));
        }
        let literal = if block {
            format!("{{\n    {}\n}}", entries.join("\n    "))
        } else {
            format!("{{{}}}", entries.join(", "))
        };
        if self.rng.chance(20) {
            format!(
                "{literal} | {{{} = {}}}",
                self.rng.pick(KEYS),
                self.expr(Ty::Int, d)
            )
        } else {
            literal
        }
    }

    fn schema(&mut self, out: &mut String) {
        let name = format!("S{}", self.scope.schemas.len());
        let parent = if self.rng.chance(30) && !self.scope.schemas.is_empty() {
            Some(self.rng.below(self.scope.schemas.len()))
        } else {
            None
        };
        let _ = match parent {
            Some(p) => writeln!(out, "schema {name}({}):", self.scope.schemas[p].name),
            None => writeln!(out, "schema {name}:"),
        };
        let mut attributes = parent
            .map(|p| self.scope.schemas[p].attributes.clone())
            .unwrap_or_default();
        for _ in 0..1 + self.rng.below(3) {
            let attribute = self.fresh("attr");
            let (ty, annotation) = *self.rng.pick(&[
                (Ty::Int, "int"),
                (Ty::Str, "str"),
                (Ty::Ints, "[int]"),
                (Ty::Strs, "[str]"),
                (Ty::Bool, "bool"),
            ]);
            let provided = match self.rng.below(3) {
                0 => {
                    let _ = writeln!(out, "    {attribute}: {annotation}");
                    false
                }
                1 => {
                    let _ = writeln!(out, "    {attribute}?: {annotation}");
                    true
                }
                _ => {
                    let default = self.expr(ty, 1);
                    let _ = writeln!(out, "    {attribute}: {annotation} = {default}");
                    true
                }
            };
            attributes.push((attribute, ty, provided));
        }
        if self.rng.chance(30)
            && let Some((attribute, _, _)) = attributes
                .iter()
                .find(|(_, ty, given)| *ty == Ty::Int && !given)
        {
            let _ = writeln!(
                out,
                "    check:\n        {attribute} > -1000, \"{attribute} is too small\""
            );
        }
        self.scope.schemas.push(Schema { name, attributes });
    }

    fn instance(&mut self, d: u32) -> String {
        let index = self.rng.below(self.scope.schemas.len());
        let schema_name = self.scope.schemas[index].name.clone();
        let attributes: Vec<(String, Ty, bool)> = self.scope.schemas[index].attributes.clone();
        let mut entries = Vec::new();
        for (attribute, ty, provided) in attributes {
            if !provided || self.rng.chance(40) {
                entries.push(format!("{attribute} = {}", self.expr(ty, d)));
            }
        }
        let instance = format!("{schema_name} {{{}}}", entries.join(", "));
        // A union with a config: the schema's attributes checked again.
        let unions: Vec<(String, Ty)> = self.scope.schemas[index]
            .attributes
            .iter()
            .map(|(attribute, ty, _)| (attribute.clone(), *ty))
            .collect();
        if self.rng.chance(25) {
            let (attribute, ty) = self.rng.pick(&unions).clone();
            format!("{instance} | {{{attribute} = {}}}", self.expr(ty, d))
        } else {
            instance
        }
    }

    fn lambda(&mut self, out: &mut String) {
        let name = format!("_f{}", self.scope.lambdas.len());
        let (returns, annotation) =
            *self
                .rng
                .pick(&[(Ty::Int, "int"), (Ty::Str, "str"), (Ty::Ints, "[int]")]);
        let params: Vec<(String, Ty, &str)> = (0..1 + self.rng.below(2))
            .map(|_| {
                let (ty, annotation) = *self.rng.pick(&[(Ty::Int, "int"), (Ty::Str, "str")]);
                (self.fresh("p"), ty, annotation)
            })
            .collect();
        let signature: Vec<String> = params.iter().map(|(p, _, a)| format!("{p}: {a}")).collect();
        for (p, ty, _) in &params {
            self.locals.push((p.clone(), *ty));
        }
        let body = self.expr(returns, 2);
        self.locals.clear();
        let _ = writeln!(
            out,
            "{name} = lambda {} -> {annotation} {{\n    {body}\n}}",
            signature.join(", ")
        );
        self.scope.lambdas.push(Lambda {
            name,
            params: params.iter().map(|(_, ty, _)| *ty).collect(),
            returns,
        });
    }

    fn program(&mut self) -> String {
        let mut out = String::new();
        for _ in 0..self.rng.below(3) {
            self.schema(&mut out);
        }
        for _ in 0..self.rng.below(3) {
            self.lambda(&mut out);
        }
        for index in 0..2 + self.rng.below(5) {
            let name = if self.rng.chance(15) {
                format!("_v{index}")
            } else {
                format!("v{index}")
            };
            let (ty, value) = if !self.scope.schemas.is_empty() && self.rng.chance(30) {
                (None, self.instance(2))
            } else {
                let ty = *self.rng.pick(&[
                    Ty::Int,
                    Ty::Str,
                    Ty::Bool,
                    Ty::Ints,
                    Ty::Strs,
                    Ty::Dict,
                    Ty::Dict,
                ]);
                self.block = ty == Ty::Dict && self.rng.chance(40);
                let value = self.expr(ty, 3);
                self.block = false;
                (Some(ty), value)
            };
            let annotation = match ty {
                Some(Ty::Int) => "int",
                Some(Ty::Str) => "str",
                Some(Ty::Bool) => "bool",
                Some(Ty::Ints) => "[int]",
                Some(Ty::Strs) => "[str]",
                Some(Ty::Dict) => "{str:}",
                None => "",
            };
            if !annotation.is_empty() && self.rng.chance(20) {
                let _ = writeln!(out, "{name}: {annotation} = {value}");
            } else {
                let _ = writeln!(out, "{name} = {value}");
            }
            if let Some(ty) = ty {
                self.scope.variables.push((name, ty));
            }
        }
        out
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn programs(seed: u64, count: usize) -> Vec<Program> {
    (0..count)
        .map(|index| {
            let mut generator = Generator {
                rng: Rng(seed ^ (index as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)),
                scope: Scope::default(),
                locals: Vec::new(),
                fresh: 0,
                block: false,
            };
            Program::new(
                format!("seed {seed:#x} program {index}"),
                generator.program(),
            )
        })
        .collect()
}

#[test]
fn generated_programs_run_as_in_kcl() {
    let seed = env_or("PLAIT_KCL_DIFF_SEED", DEFAULT_SEED);
    let count = env_or("PLAIT_KCL_DIFF_PROGRAMS", DEFAULT_PROGRAMS);
    let programs = programs(seed, count);
    let valid = |outcome: &Outcome| matches!(outcome, Outcome::Output { .. });
    let (expected, report) = compare(&programs, valid);
    let refused: Vec<String> = programs
        .iter()
        .zip(&expected)
        .filter(|(_, outcome)| !valid(outcome))
        .map(|(program, outcome)| {
            format!(
                "--- {} ---\n{}\n  kcl: {outcome:?}\n",
                program.name, program.source
            )
        })
        .collect();
    assert!(
        refused.len() * 10 <= count,
        "KCL refused {} of {count} generated programs (seed {seed:#x}): the generator should \
         write valid ones. The first refused:\n{}",
        refused.len(),
        refused.iter().take(5).cloned().collect::<String>()
    );
    assert!(report.is_empty(), "seed {seed:#x}: {report}");
}

#[test]
fn the_generator_is_deterministic_and_varied() {
    let first = programs(DEFAULT_SEED, 200);
    let again = programs(DEFAULT_SEED, 200);
    assert!(first.iter().zip(&again).all(|(a, b)| a.source == b.source));
    let distinct: std::collections::HashSet<&str> =
        first.iter().map(|p| p.source.as_str()).collect();
    assert!(
        distinct.len() > 190,
        "{} distinct programs of 200",
        distinct.len()
    );
    // Every construct the generator knows appears in the first programs.
    for construct in [
        "schema ",
        "check:",
        "lambda ",
        " += ",
        ": {a = ",
        ".inner.leaf = ",
        "**",
        " | {",
        "\n    elif ",
        "if ",
        " for ",
        "map ",
        "filter ",
        "all ",
        "any ",
        ".format(",
        "${",
        "*[",
        ": int = ",
        "?: ",
    ] {
        let count = first
            .iter()
            .filter(|p| p.source.contains(construct))
            .count();
        assert!(count > 0, "no program of 200 has {construct:?}");
    }
}
