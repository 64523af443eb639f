//! The schemas Crossplane packages carry, for `plait validate`: each
//! `pkg.crossplane.io` Provider, Function and Configuration among the
//! extensions is pulled from its registry, its `package.yaml` read from the
//! image's layers, its CRDs and XRDs taken, and its `dependsOn` followed.
//! Each package's `package.yaml` is kept under plait's cache directory
//! (`packages/`), so a second run reads no registry.

use std::collections::{BTreeSet, VecDeque};
use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::function::Registry;

/// The most packages one validation pulls, dependencies included.
const MAX_PACKAGES: usize = 64;
/// The largest `package.yaml` read from a layer.
const MAX_PACKAGE_YAML_BYTES: u64 = 64 << 20;

/// A package to read, and who asked for it.
struct Wanted {
    reference: String,
    kind: String,
    wanted_by: String,
}

/// The package references of the `pkg.crossplane.io` Providers, Functions and
/// Configurations among `extensions`.
pub fn references(extensions: &[(PathBuf, Value)]) -> Vec<(String, String, String)> {
    extensions
        .iter()
        .filter_map(|(file, object)| {
            let group = object.get("apiVersion")?.as_str()?.split('/').next()?;
            let kind = object.get("kind")?.as_str()?;
            if group != "pkg.crossplane.io"
                || !matches!(kind, "Provider" | "Function" | "Configuration")
            {
                return None;
            }
            let package = object.pointer("/spec/package")?.as_str()?;
            Some((
                package.to_string(),
                kind.to_string(),
                file.display().to_string(),
            ))
        })
        .collect()
}

/// Where package.yaml files are kept, by reference.
fn cache_dir() -> Option<PathBuf> {
    plait_oci::cache_root().map(|root| root.join("packages"))
}

fn cache_file(reference: &str) -> Option<PathBuf> {
    let name: String = reference
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    cache_dir().map(|dir| dir.join(format!("{name}.yaml")))
}

/// Every CRD and XRD the packages (and their dependencies) carry. A
/// Function whose package is not a Crossplane package (a plait Wasm
/// function) carries none.
pub fn definitions(
    wanted: Vec<(String, String, String)>,
    registry: impl Fn() -> Result<Registry>,
    clean_cache: bool,
) -> Result<Vec<Value>> {
    if clean_cache && let Some(dir) = cache_dir() {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot clean {}", dir.display())),
        }
    }
    let mut queue: VecDeque<Wanted> = wanted
        .into_iter()
        .map(|(reference, kind, wanted_by)| Wanted {
            reference,
            kind,
            wanted_by,
        })
        .collect();
    let mut seen = BTreeSet::new();
    let mut opened: Option<Registry> = None;
    let mut out = Vec::new();
    while let Some(next) = queue.pop_front() {
        if !seen.insert(next.reference.clone()) {
            continue;
        }
        if seen.len() > MAX_PACKAGES {
            bail!("more than {MAX_PACKAGES} packages with their dependencies");
        }
        let text = match cached(&next.reference) {
            Some(text) => text,
            None => {
                if opened.is_none() {
                    opened = Some(registry()?);
                }
                let Some(registry) = opened.as_ref() else {
                    continue;
                };
                match pull(registry, &next.reference).with_context(|| {
                    format!("{}: {} {}", next.wanted_by, next.kind, next.reference)
                })? {
                    Some(text) => {
                        keep(&next.reference, &text);
                        text
                    }
                    None if next.kind == "Function" => {
                        tracing::info!(reference = %next.reference, "not a Crossplane package: no schemas");
                        continue;
                    }
                    None => bail!(
                        "{}: {} {}: no package.yaml in any layer of the image",
                        next.wanted_by,
                        next.kind,
                        next.reference
                    ),
                }
            }
        };
        let documents = plait_model::parse_documents(&text, &next.reference)
            .with_context(|| format!("{}: package.yaml", next.reference))?;
        for document in documents {
            let group = document
                .get("apiVersion")
                .and_then(Value::as_str)
                .and_then(|v| v.split('/').next())
                .unwrap_or_default();
            if group == "meta.pkg.crossplane.io" {
                queue.extend(dependencies(&document, &next.reference)?);
            } else {
                out.push(document);
            }
        }
    }
    Ok(out)
}

fn cached(reference: &str) -> Option<String> {
    std::fs::read_to_string(cache_file(reference)?).ok()
}

fn keep(reference: &str, text: &str) {
    let Some(file) = cache_file(reference) else {
        return;
    };
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&file, text));
    if let Err(error) = written {
        // The cache only saves pulls: a write failure is not a failure.
        tracing::warn!(%error, file = %file.display(), "cannot cache a package");
    }
}

/// The `dependsOn` of a package's metadata, as references: the package
/// with its version as the tag. A version constraint (`>=v1.0.0`) cannot be
/// a tag and is refused, naming the dependency.
fn dependencies(meta: &Value, of: &str) -> Result<Vec<Wanted>> {
    let mut out = Vec::new();
    for (i, dependency) in meta
        .pointer("/spec/dependsOn")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some((kind, package)) = ["provider", "configuration", "function", "package"]
            .iter()
            .find_map(|k| Some((*k, dependency.get(*k)?.as_str()?)))
        else {
            bail!("{of}: spec.dependsOn[{i}] names no provider, configuration or function");
        };
        let version = dependency
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim();
        let reference = if version.is_empty() || package.contains('@') {
            package.to_string()
        } else if version.starts_with(|c: char| c == 'v' || c.is_ascii_digit())
            && !version.contains([' ', ',', '*', '<', '>', '=', '~', '^'])
        {
            format!("{package}:{version}")
        } else {
            bail!(
                "{of}: spec.dependsOn[{i}] ({package}) asks for versions {version:?}; \
                 only an exact version can be pulled: give the dependency itself among the extensions"
            );
        };
        out.push(Wanted {
            reference,
            kind: kind.to_string(),
            wanted_by: of.to_string(),
        });
    }
    Ok(out)
}

/// The `package.yaml` of an image: from the first layer (gzipped tar or
/// plain tar) that has one; `None` when none has.
fn pull(registry: &Registry, reference: &str) -> Result<Option<String>> {
    let image = registry
        .block_on(registry.client.pull_package(reference, &registry.keychain))
        .map_err(anyhow::Error::from)?;
    for layer in &image.layers {
        if let Some(text) =
            package_yaml(layer).with_context(|| format!("{}: cannot read a layer", image.pinned))?
        {
            return Ok(Some(text));
        }
    }
    Ok(None)
}

fn package_yaml(layer: &[u8]) -> Result<Option<String>> {
    let gzipped = layer.starts_with(&[0x1f, 0x8b]);
    let reader: Box<dyn Read> = if gzipped {
        Box::new(flate2::read::GzDecoder::new(layer))
    } else {
        Box::new(layer)
    };
    let mut archive = tar::Archive::new(reader);
    let entries = match archive.entries() {
        Ok(entries) => entries,
        // Not an archive (a Wasm component, a config): no package here.
        Err(_) => return Ok(None),
    };
    for entry in entries {
        let Ok(entry) = entry else {
            return Ok(None);
        };
        let path = entry.path().map(|p| p.to_path_buf()).unwrap_or_default();
        if path.file_name().and_then(|n| n.to_str()) != Some("package.yaml")
            || path.components().count() > 2
        {
            continue;
        }
        let mut text = String::new();
        entry
            .take(MAX_PACKAGE_YAML_BYTES)
            .read_to_string(&mut text)
            .context("package.yaml is not UTF-8 text")?;
        return Ok(Some(text));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dependencies_become_references_and_constraints_are_refused() {
        let meta = json!({"spec": {"dependsOn": [
            {"provider": "registry.example.org/provider-a", "version": "v0.2.0"},
            {"function": "registry.example.org/fn@sha256:abc"},
        ]}});
        let got: Vec<String> = dependencies(&meta, "cfg")
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .map(|w| w.reference)
            .collect();
        assert_eq!(
            got,
            [
                "registry.example.org/provider-a:v0.2.0",
                "registry.example.org/fn@sha256:abc"
            ]
        );
        let constrained =
            json!({"spec": {"dependsOn": [{"provider": "p", "version": ">=v1.0.0"}]}});
        let error = dependencies(&constrained, "cfg")
            .err()
            .map(|e| e.to_string());
        assert!(error.is_some_and(|e| e.contains("only an exact version")));
    }
}
