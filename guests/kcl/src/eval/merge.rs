//! KCL merges, before it evaluates, the top-level configs of the main
//! package that declare the same name (`a: S {…}` several times, or
//! `a = S {…}` then `a: S {…}`) into the last of them: one instance is
//! made from all their entries, so none of them alone needs to be
//! complete.

use std::rc::Rc;

use crate::collections::IndexMap;

use crate::ast::{ConfigEntry, ConfigEntryOperation, Expr, Module, Node, Stmt};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Union,
    Override,
}

/// The config entries of a mergeable statement (`None` when it is not
/// one).
fn config_items(stmt: &mut Stmt) -> Option<&mut Vec<Node<ConfigEntry>>> {
    let schema = match stmt {
        Stmt::Unification(u) => &mut u.value.node,
        Stmt::Assign(a) => match &mut a.value.node {
            Expr::Schema(s) => s,
            _ => return None,
        },
        _ => return None,
    };
    match &mut schema.config.node {
        Expr::Config(c) => Some(&mut c.items),
        _ => None,
    }
}

/// Groups entries by key, an `=` entry dropping the ones before it with
/// the same key, keyless entries together (KCL's order).
fn unify_entries(entries: Vec<Node<ConfigEntry>>) -> Vec<Node<ConfigEntry>> {
    let mut buckets: IndexMap<Option<String>, Vec<Node<ConfigEntry>>> = IndexMap::default();
    for entry in entries {
        let name = entry.node.key.as_ref().and_then(|k| match &k.node {
            Expr::Identifier(id) => Some(id.name()),
            Expr::StringLit(s) => Some(s.value.clone()),
            _ => None,
        });
        let bucket = buckets.entry(name).or_default();
        if entry.node.operation == ConfigEntryOperation::Override {
            bucket.clear();
        }
        bucket.push(entry);
    }
    let mut out: Vec<Node<ConfigEntry>> = buckets.into_values().flatten().collect();
    for entry in &mut out {
        let nested = match &mut entry.node.value.node {
            Expr::Schema(s) => match &mut s.config.node {
                Expr::Config(c) => Some(&mut c.items),
                _ => None,
            },
            Expr::Config(c) => Some(&mut c.items),
            _ => None,
        };
        if let Some(items) = nested {
            *items = unify_entries(std::mem::take(items));
        }
    }
    out
}

/// Merges the main package's same-name top-level configs.
pub(crate) fn merge_configs(modules: &mut [Rc<Module>]) {
    // name -> (module, statement, kind) in source order
    let mut declarations: IndexMap<String, Vec<(usize, usize, Kind)>> = IndexMap::default();
    for (m, module) in modules.iter().enumerate() {
        for (i, stmt) in module.body.iter().enumerate() {
            match &stmt.node {
                Stmt::Unification(u) => {
                    if let Some(first) = u.target.node.names.first() {
                        declarations.entry(first.node.clone()).or_default().push((
                            m,
                            i,
                            Kind::Union,
                        ));
                    }
                }
                Stmt::Assign(a) if matches!(a.value.node, Expr::Schema(_)) => {
                    for target in a.targets.iter().filter(|t| t.node.paths.is_empty()) {
                        let name = &target.node.name.node;
                        match declarations.get_mut(name) {
                            Some(list) => {
                                if name.starts_with('_') {
                                    list.clear();
                                    list.push((m, i, Kind::Override));
                                }
                            }
                            None => {
                                declarations.insert(name.clone(), vec![(m, i, Kind::Override)]);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut deleted: Vec<(usize, usize)> = Vec::new();
    for list in declarations.values() {
        let Some((&(last_m, last_i, _), earlier)) = list.split_last() else {
            continue;
        };
        if earlier.is_empty() {
            continue;
        }
        let mut items = Vec::new();
        for &(m, i, _) in list {
            if let Some(stmt) = modules.get(m).and_then(|module| module.body.get(i)) {
                let mut stmt = stmt.node.clone();
                if let Some(found) = config_items(&mut stmt) {
                    items.append(found);
                }
            }
        }
        if let Some(module) = modules.get_mut(last_m) {
            let module = Rc::make_mut(module);
            if let Some(stmt) = module.body.get_mut(last_i)
                && let Some(target) = config_items(&mut stmt.node)
            {
                *target = unify_entries(items);
            }
        }
        deleted.extend(earlier.iter().map(|&(m, i, _)| (m, i)));
    }
    for (m, module) in modules.iter_mut().enumerate() {
        if !deleted.iter().any(|(dm, _)| *dm == m) {
            continue;
        }
        let module = Rc::make_mut(module);
        let mut index = 0;
        module.body.retain(|_| {
            let keep = !deleted.contains(&(m, index));
            index += 1;
            keep
        });
    }
}
