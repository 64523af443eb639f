//! plait-kube is in layers, each a module tree under `src/`, and a layer
//! imports only the layers below it:
//!
//! `vocabulary` → `access` → `stores` → `clusters` → `controllers` → `process`
//!
//! (read "→" as "is imported by"). This test reads every `crate::` and
//! `super::` path in the crate's sources and fails on one that reaches a
//! higher layer, or the crate root (whose re-exports would hide where an
//! item lives), and on a circle between the modules directly inside a layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first.
const LAYERS: &[&str] = &[
    "vocabulary",
    "access",
    "stores",
    "clusters",
    "controllers",
    "process",
];

/// A module: its path from the crate root.
type Module = Vec<String>;

/// One path a source file names: where it is written and what it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Import {
    file: String,
    from: Module,
    to: Module,
}

/// The module a file under `src/` holds.
fn module_of(relative: &Path) -> Module {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" {
            parts.push(stem.to_string());
        }
    }
    parts
}

/// `source` without comments, string and character literals, so only
/// code is read.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(_) => j += 1,
                }
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), else a lifetime.
            let literal_end = match (next, chars.get(i + 2)) {
                (Some('\\'), _) => (i + 2..chars.len()).find(|&k| chars[k] == '\''),
                (Some(_), Some('\'')) => Some(i + 2),
                _ => None,
            };
            match literal_end {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Other(char),
}

fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
            continue;
        }
        match c {
            ':' if chars.get(i + 1) == Some(&':') => {
                out.push(Token::PathSep);
                i += 2;
                continue;
            }
            '{' => out.push(Token::Open),
            '}' => out.push(Token::Close),
            ',' => out.push(Token::Comma),
            c if c.is_whitespace() => {}
            c => out.push(Token::Other(c)),
        }
        i += 1;
    }
    out
}

/// Every module path `source` (the file holding `module`) reaches through
/// `crate::` or `super::`, resolved from the crate root. A `use` group
/// (`crate::a::{b, c::d}`) reaches each of its members.
fn imports(file: &str, module: &Module, source: &str) -> Vec<Import> {
    let tokens = tokens(&code_only(source));
    let mut found = Vec::new();
    // Inline modules (`mod tests { .. }`) open at a brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Open => depth += 1,
            Token::Close => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Open)) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    inline.push((name.clone(), depth));
                }
            }
            Token::Ident(word)
                if (word == "crate" || word == "super")
                    && tokens.get(i + 1) == Some(&Token::PathSep)
                    && !matches!(i.checked_sub(1).map(|p| &tokens[p]), Some(Token::PathSep)) =>
            {
                let mut here: Module = module.clone();
                here.extend(inline.iter().map(|(name, _)| name.clone()));
                let mut base: Module = if word == "crate" { Vec::new() } else { here };
                let mut j = i;
                if word == "super" {
                    while tokens.get(j) == Some(&Token::Ident("super".into()))
                        && tokens.get(j + 1) == Some(&Token::PathSep)
                    {
                        base.pop();
                        j += 2;
                    }
                } else {
                    j += 2;
                }
                for path in paths_at(&tokens, j) {
                    let mut to = base.clone();
                    to.extend(path);
                    found.push(Import {
                        file: file.to_string(),
                        from: module.clone(),
                        to,
                    });
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The paths starting at `tokens[at]`: `a::b` is one, `{a, b::c}` two.
fn paths_at(tokens: &[Token], at: usize) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut j = at;
    while let Some(Token::Ident(name)) = tokens.get(j) {
        prefix.push(name.clone());
        if tokens.get(j + 1) != Some(&Token::PathSep) {
            return vec![prefix];
        }
        j += 2;
    }
    if tokens.get(j) != Some(&Token::Open) {
        return vec![prefix];
    }
    // A group: each member, one level deep is enough to know its module.
    let mut paths = Vec::new();
    let mut depth = 0;
    let mut member_start = true;
    j += 1;
    while let Some(token) = tokens.get(j) {
        match token {
            Token::Open => depth += 1,
            Token::Close if depth == 0 => break,
            Token::Close => depth -= 1,
            Token::Comma if depth == 0 => member_start = true,
            Token::Ident(_) if depth == 0 && member_start => {
                member_start = false;
                for mut path in paths_at(tokens, j) {
                    let mut full = prefix.clone();
                    full.append(&mut path);
                    paths.push(full);
                }
            }
            _ => {}
        }
        j += 1;
    }
    paths
}

/// The layer a module is in: its index in [`LAYERS`], `None` for the crate
/// root or anything that is not a layer (an item the root re-exports).
fn layer_of(module: &Module) -> Option<usize> {
    let first = module.first()?;
    LAYERS.iter().position(|layer| layer == first)
}

/// The module directly inside a layer that `module` is part of.
fn unit_of(module: &Module) -> String {
    module
        .iter()
        .take(2)
        .cloned()
        .collect::<Vec<_>>()
        .join("::")
}

/// What is wrong with `imports`: arrows that go up a layer (or to the
/// root), and circles between the modules directly inside a layer.
fn violations(imports: &[Import]) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut units: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for import in imports {
        let Some(from) = layer_of(&import.from) else {
            // The crate root names the layers and re-exports from them.
            continue;
        };
        match layer_of(&import.to) {
            None => wrong.push(format!(
                "{}: `{}` reaches the crate root, above every layer; name the layer",
                import.file,
                import.to.join("::")
            )),
            Some(to) if to > from => wrong.push(format!(
                "{}: `{}` goes up from {} to {}",
                import.file,
                import.to.join("::"),
                LAYERS[from],
                LAYERS[to]
            )),
            Some(to) if to == from && import.to.len() > 1 && import.from.len() > 1 => {
                let (a, b) = (unit_of(&import.from), unit_of(&import.to));
                if a != b {
                    units.entry(a).or_default().insert(b);
                }
            }
            Some(_) => {}
        }
    }
    for circle in circles(&units) {
        wrong.push(format!("circle: {}", circle.join(" → ")));
    }
    wrong
}

/// Every circle in `graph`, each found once from its smallest member.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        path: &mut Vec<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        let Some(last) = path.last().cloned() else {
            return;
        };
        for next in graph.get(&last).into_iter().flatten() {
            if next == start {
                let mut circle = path.clone();
                circle.push(start.to_string());
                found.push(circle);
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                walk(graph, start, path, found);
                path.pop();
            }
        }
    }
    let mut found = Vec::new();
    for start in graph.keys() {
        walk(graph, start, &mut vec![start.clone()], &mut found);
    }
    found
}

fn crate_imports() -> Vec<Import> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{dir:?}: {e}")).path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut all = Vec::new();
    for path in files {
        let relative = path.strip_prefix(&src).unwrap_or(&path);
        let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let module = module_of(relative);
        all.extend(imports(&relative.to_string_lossy(), &module, &source));
    }
    all
}

#[test]
fn every_layer_imports_only_the_layers_below_it() {
    let imports = crate_imports();
    // The arrows between layers, for whoever reads the test's output.
    let mut arrows: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for import in &imports {
        if let (Some(from), Some(to)) = (layer_of(&import.from), layer_of(&import.to))
            && from != to
        {
            *arrows.entry((from, to)).or_default() += 1;
        }
    }
    println!("{} crate paths read; between layers:", imports.len());
    for ((from, to), count) in &arrows {
        println!("  {} → {}: {count}", LAYERS[*from], LAYERS[*to]);
    }
    assert!(
        imports.iter().any(|i| layer_of(&i.to).is_some()),
        "no import was read: is the source where the test looks?"
    );
    let wrong = violations(&imports);
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn an_import_that_goes_up_a_layer_is_found() {
    let cases = [
        (
            "access/client.rs",
            "use crate::controllers::timing::Timing;",
            true,
        ),
        (
            "stores/catalog.rs",
            "use crate::{vocabulary::api, clusters::cluster::KubeCluster};",
            true,
        ),
        (
            "stores/catalog.rs",
            "fn f() { super::super::process::run(); }",
            true,
        ),
        ("controllers/xrd/mod.rs", "use crate::Timing;", true),
        (
            "controllers/claim/offer.rs",
            "mod tests { use super::super::tests::resources; }",
            false,
        ),
        (
            "controllers/xrd/mod.rs",
            "use crate::clusters::cluster::KubeCluster; // crate::process::x\nconst S: &str = \"crate::process\";",
            false,
        ),
        (
            "process/mod.rs",
            "use crate::{access, controllers::xrd};",
            false,
        ),
    ];
    for (file, source, upward) in cases {
        let module = module_of(Path::new(file));
        let found = violations(&imports(file, &module, source));
        assert_eq!(!found.is_empty(), upward, "{file}: {source}: {found:?}");
    }
}

#[test]
fn a_circle_inside_a_layer_is_found() {
    let imports = [
        ("stores/catalog.rs", "use crate::stores::environment::X;"),
        ("stores/environment.rs", "use crate::stores::reflect::Y;"),
        ("stores/reflect.rs", "use crate::stores::catalog::Z;"),
    ]
    .iter()
    .flat_map(|(file, source)| imports(file, &module_of(Path::new(file)), source))
    .collect::<Vec<_>>();
    let found = violations(&imports);
    assert_eq!(
        found,
        vec!["circle: stores::catalog → stores::environment → stores::reflect → stores::catalog"]
    );
}
