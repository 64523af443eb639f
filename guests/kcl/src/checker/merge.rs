//! KCL merges the main package's top-level configs of one name before it
//! checks them: `config: C {…}` twice (or `config = C {…}` then
//! `config: C {…}`) is checked as one config, in the last statement's
//! place, with an entry overridden by a later `=` dropped. Without this a
//! value overridden later would be reported although KCL accepts it.

use crate::collections::IndexMap;

use crate::ast::{ConfigEntry, ConfigEntryOperation, Expr, Module, Node, Stmt};

#[derive(Clone, Copy)]
enum Kind {
    Union,
    Override,
}

/// (module index, statement index, how the statement declares the name)
type Declaration = (usize, usize, Kind);

/// The main package's modules with same-name configs merged, or `None`
/// when no name is declared twice.
pub fn merge_configs(modules: &[&Module]) -> Option<Vec<Module>> {
    let mut declarations: IndexMap<String, Vec<Declaration>> = IndexMap::default();
    for (mi, module) in modules.iter().enumerate() {
        for (si, stmt) in module.body.iter().enumerate() {
            match &stmt.node {
                Stmt::Unification(u) => {
                    if let Some(first) = u.target.node.names.first() {
                        declarations.entry(first.node.clone()).or_default().push((
                            mi,
                            si,
                            Kind::Union,
                        ));
                    }
                }
                Stmt::Assign(a) if matches!(a.value.node, Expr::Schema(_)) => {
                    for target in a.targets.iter().filter(|t| t.node.paths.is_empty()) {
                        let name = &target.node.name.node;
                        match declarations.get_mut(name) {
                            // A private name is mutable: the last assignment wins.
                            Some(list) if name.starts_with('_') => {
                                list.clear();
                                list.push((mi, si, Kind::Override));
                            }
                            Some(_) => {}
                            None => {
                                declarations.insert(name.clone(), vec![(mi, si, Kind::Override)]);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let merges: Vec<&Vec<Declaration>> = declarations.values().filter(|d| d.len() > 1).collect();
    if merges.is_empty() {
        return None;
    }
    let mut out: Vec<Module> = modules.iter().map(|m| (*m).clone()).collect();
    let mut deleted: Vec<(usize, usize)> = Vec::new();
    for list in merges {
        let mut items: Vec<Node<ConfigEntry>> = Vec::new();
        for &(mi, si, kind) in list {
            if let Some(entries) = modules
                .get(mi)
                .and_then(|m| m.body.get(si))
                .and_then(|stmt| config_entries(&stmt.node, kind))
            {
                items.extend(entries.iter().cloned());
            }
        }
        let Some(&(last_mi, last_si, last_kind)) = list.last() else {
            continue;
        };
        if let Some(entries) = out
            .get_mut(last_mi)
            .and_then(|m| m.body.get_mut(last_si))
            .and_then(|stmt| config_entries_mut(&mut stmt.node, last_kind))
        {
            *entries = unify_entries(items);
        }
        deleted.extend(list[..list.len() - 1].iter().map(|&(mi, si, _)| (mi, si)));
    }
    for (mi, module) in out.iter_mut().enumerate() {
        let mut si = 0;
        module.body.retain(|_| {
            let keep = !deleted.contains(&(mi, si));
            si += 1;
            keep
        });
    }
    Some(out)
}

fn config_entries(stmt: &Stmt, kind: Kind) -> Option<&Vec<Node<ConfigEntry>>> {
    let schema_expr = match (stmt, kind) {
        (Stmt::Unification(u), Kind::Union) => &u.value.node,
        (Stmt::Assign(a), Kind::Override) => match &a.value.node {
            Expr::Schema(s) => s,
            _ => return None,
        },
        _ => return None,
    };
    match &schema_expr.config.node {
        Expr::Config(c) => Some(&c.items),
        _ => None,
    }
}

fn config_entries_mut(stmt: &mut Stmt, kind: Kind) -> Option<&mut Vec<Node<ConfigEntry>>> {
    let schema_expr = match (stmt, kind) {
        (Stmt::Unification(u), Kind::Union) => &mut u.value.node,
        (Stmt::Assign(a), Kind::Override) => match &mut a.value.node {
            Expr::Schema(s) => s,
            _ => return None,
        },
        _ => return None,
    };
    match &mut schema_expr.config.node {
        Expr::Config(c) => Some(&mut c.items),
        _ => None,
    }
}

/// Entries grouped by key in first-seen order; an `=` drops the entries of
/// its key before it.
fn unify_entries(entries: Vec<Node<ConfigEntry>>) -> Vec<Node<ConfigEntry>> {
    let mut buckets: IndexMap<Option<String>, Vec<Node<ConfigEntry>>> = IndexMap::default();
    for entry in entries {
        let key = entry.node.key.as_ref().and_then(|k| match &k.node {
            Expr::Identifier(ident) => Some(ident.name()),
            Expr::StringLit(s) => Some(s.value.clone()),
            _ => None,
        });
        let bucket = buckets.entry(key).or_default();
        if entry.node.operation == ConfigEntryOperation::Override {
            bucket.clear();
        }
        bucket.push(entry);
    }
    buckets.into_values().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_file;

    fn keys(module: &Module) -> Vec<String> {
        module
            .body
            .iter()
            .filter_map(|stmt| config_entries(&stmt.node, Kind::Union))
            .flatten()
            .filter_map(|e| match e.node.key.as_deref().map(|k| &k.node) {
                Some(Expr::Identifier(i)) => {
                    Some(format!("{}{}", i.name(), e.node.operation.symbol()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn same_name_configs_merge_into_the_last() {
        let cases = [
            (
                "config: C {\n    a = 1\n    b: 1\n}\nconfig: C {\n    a = 2\n}\n",
                Some(vec!["a=".to_string(), "b:".to_string()]),
            ),
            (
                "config: C {\n    a = 1\n}\nother: C {\n    a = 2\n}\n",
                None,
            ),
        ];
        for (src, want) in cases {
            let module = parse_file(0, "main.k", crate::ast::MAIN_PKG, src).module;
            let merged = merge_configs(&[&module]);
            assert_eq!(
                merged.as_ref().map(|m| m[0].body.len()),
                want.as_ref().map(|_| 1),
                "{src}"
            );
            assert_eq!(merged.map(|m| keys(&m[0])), want, "{src}");
        }
    }
}
