//! The modules directly under `src/` (a module's file and its folder, such
//! as `cel.rs` and `cel/`, being one) import each other without a circle,
//! so each can be read knowing only the ones it names. The crate root,
//! which declares and re-exports them, is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// `source` without its line comments (doc comments included), so a path
/// named in prose is not read as an import.
fn code_only(source: &str) -> String {
    source
        .lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules of `modules` that `source` reaches through `crate::`, also
/// inside a group (`crate::{a, b::c}`).
fn reached(source: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code = code_only(source);
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => {
                let group = group.split('}').next().unwrap_or_default();
                group.split(',').collect()
            }
            None => vec![rest],
        };
        for name in names {
            let first: String = name
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if modules.contains(&first) {
                found.insert(first);
            }
        }
    }
    found
}

/// Every circle in `graph`, each found once from its smallest member.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    fn walk(graph: &Graph, start: &str, path: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
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

/// The `.rs` files under `dir`, at any depth.
fn sources_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
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
    files
}

/// Which top-level modules each top-level module of the crate imports.
fn crate_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let unit_of = |path: &Path| -> Option<String> {
        let first = path.strip_prefix(&src).ok()?.iter().next()?;
        let name = first.to_string_lossy();
        let name = name.trim_end_matches(".rs");
        (name != "lib").then(|| name.to_string())
    };
    let files = sources_under(&src);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| unit_of(f)).collect();
    let mut graph = Graph::new();
    for file in &files {
        let Some(unit) = unit_of(file) else {
            continue;
        };
        let source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let targets = graph.entry(unit.clone()).or_default();
        targets.extend(
            reached(&source, &modules)
                .into_iter()
                .filter(|m| *m != unit),
        );
    }
    graph
}

#[test]
fn the_modules_of_the_crate_import_each_other_without_a_circle() {
    let graph = crate_graph();
    for (module, imports) in &graph {
        println!("{module} → {imports:?}");
    }
    assert!(
        graph.values().any(|imports| !imports.is_empty()),
        "no import was read: is the source where the test looks?"
    );
    let found = circles(&graph);
    assert!(
        found.is_empty(),
        "circles between modules:\n{}",
        found
            .iter()
            .map(|circle| circle.join(" → "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_circle_between_modules_is_found_and_a_one_way_import_is_not() {
    let modules: BTreeSet<String> = ["cel", "openapi", "structural"].map(String::from).into();
    // (sources of cel, openapi, structural; the circles expected)
    let cases: [([&str; 3], Vec<&str>); 4] = [
        (
            [
                "use crate::openapi::type_name;",
                "",
                "use crate::{cel::Rules, openapi::format_matches};",
            ],
            vec![],
        ),
        (
            [
                "use crate::structural::type_name;",
                "",
                "use crate::cel::Rules;",
            ],
            vec!["cel → structural → cel"],
        ),
        (
            [
                "fn f() { crate::structural::format_matches(\"uuid\", s); }",
                "",
                "use crate::{problem::Path, cel::Rules};",
            ],
            vec!["cel → structural → cel"],
        ),
        (
            [
                "/// Messages as [`crate::structural`] gives them.",
                "",
                "use crate::cel::Rules;",
            ],
            vec![],
        ),
    ];
    for (sources, expected) in cases {
        let graph: Graph = modules
            .iter()
            .zip(sources)
            .map(|(module, source)| (module.clone(), reached(source, &modules)))
            .collect();
        let found: Vec<String> = circles(&graph).iter().map(|c| c.join(" → ")).collect();
        assert_eq!(found, expected, "{sources:?}");
    }
}
