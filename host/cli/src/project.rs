//! Projects (`upbound.yaml` for `up`, `crossplane-project.yaml` for the
//! Crossplane CLI) and the KCL functions they embed: which step names them,
//! the Functions their dependencies declare, and the directories the
//! built-in function-kcl reads to run one as the project's build would.
//!
//! A project's build packages `functions/<fn>/` as function-kcl's runtime
//! with the directory at `/src` (symbolic links followed) and
//! `FUNCTION_KCL_DEFAULT_SOURCE=/src`; a Composition step names it
//! `ToDNSLabel(repository path of "<spec.repository>_<fn>")`. `plait render`
//! runs the same directory with the built-in: a copy of it, with the
//! project's KCL models in place of the link to them, granted read-only at
//! `/src`. Nothing is written into the project.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use plait_runtime::ReadOnlyDir;
use serde_json::{Value, json};

use crate::files;

/// `up`'s project file.
pub const UPBOUND_PROJECT_FILE: &str = "upbound.yaml";
/// The Crossplane CLI's project file.
pub const CROSSPLANE_PROJECT_FILE: &str = "crossplane-project.yaml";

/// Where a project build puts a function's directory, and where
/// function-kcl's `FUNCTION_KCL_DEFAULT_SOURCE` points.
pub const SOURCE_GUEST_PATH: &str = "/src";

/// The KCL manifest that makes a function directory a KCL function, as
/// both tools decide it.
const KCL_MOD: &str = "kcl.mod";

/// How deep a copied function directory (with the links it follows) may go:
/// a link to one of its own ancestors would otherwise never end.
const MAX_COPY_DEPTH: usize = 32;

/// Which tool a project belongs to: it decides where the project's
/// generated KCL models live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Up,
    CrossplaneCli,
}

/// A project read from its project file.
#[derive(Debug)]
pub struct Project {
    /// The directory of the project file, absolute.
    pub root: PathBuf,
    /// `spec.repository`: the embedded functions' repositories start with it.
    pub repository: String,
    /// The directory of the embedded functions (`spec.paths.functions`).
    pub functions_dir: PathBuf,
    /// The directory of the XRDs and Compositions (`spec.paths.apis`).
    pub apis_dir: PathBuf,
    /// Where the tool generates the KCL models the functions import:
    /// `.up/kcl/models` (up), `<spec.paths.schemas>/kcl` (Crossplane CLI).
    pub models_dir: PathBuf,
    /// The Functions the project depends on, by the name the tool gives
    /// them: `ToDNSLabel` of the package's repository path.
    pub function_dependencies: BTreeMap<String, String>,
}

/// One directory of the project's functions.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectFunction {
    /// The directory's name.
    pub name: String,
    pub dir: PathBuf,
    /// Whether it holds a `kcl.mod`: plait runs KCL functions only.
    pub is_kcl: bool,
}

impl Project {
    /// The project whose file is in `dir`.
    pub fn open(dir: &Path) -> Result<Project> {
        let root = std::fs::canonicalize(dir)
            .with_context(|| format!("project directory {}", dir.display()))?;
        for (file, tool) in [
            (UPBOUND_PROJECT_FILE, Tool::Up),
            (CROSSPLANE_PROJECT_FILE, Tool::CrossplaneCli),
        ] {
            let path = root.join(file);
            if path.is_file() {
                let document = files::read_one(&path, "project")?;
                return Project::from_document(root, tool, &document)
                    .with_context(|| format!("{}: not a valid project", path.display()));
            }
        }
        bail!(
            "{} has neither {UPBOUND_PROJECT_FILE} nor {CROSSPLANE_PROJECT_FILE}",
            root.display()
        )
    }

    /// The project `file` lies in: the nearest directory above it with a
    /// project file, if any.
    pub fn find_above(file: &Path) -> Result<Option<Project>> {
        let Ok(file) = std::fs::canonicalize(file) else {
            return Ok(None);
        };
        for dir in file.ancestors().skip(1) {
            if dir.join(UPBOUND_PROJECT_FILE).is_file()
                || dir.join(CROSSPLANE_PROJECT_FILE).is_file()
            {
                return Project::open(dir).map(Some);
            }
        }
        Ok(None)
    }

    fn from_document(root: PathBuf, tool: Tool, document: &Value) -> Result<Project> {
        let text = |pointer: &str| document.pointer(pointer).and_then(Value::as_str);
        let api_version = text("/apiVersion").unwrap_or_default();
        let group = match tool {
            Tool::Up => "meta.dev.upbound.io/",
            Tool::CrossplaneCli => "dev.crossplane.io/",
        };
        if !api_version.starts_with(group) || text("/kind") != Some("Project") {
            bail!(
                "expected kind Project of {group}*, found kind {:?} of {api_version:?}",
                text("/kind").unwrap_or_default()
            );
        }
        let repository = text("/spec/repository")
            .filter(|r| !r.is_empty())
            .context("spec.repository is missing: it names the project's functions")?
            .to_string();
        let path = |key: &str, default: &str| -> Result<PathBuf> {
            let relative = text(&format!("/spec/paths/{key}")).unwrap_or(default);
            inside(&root, relative).with_context(|| format!("spec.paths.{key}"))
        };
        let functions_dir = path("functions", "functions")?;
        let apis_dir = path("apis", "apis")?;
        let models_dir = match tool {
            Tool::Up => root.join(".up").join("kcl").join("models"),
            Tool::CrossplaneCli => path("schemas", "schemas")?.join("kcl"),
        };
        let mut function_dependencies = BTreeMap::new();
        let dependencies = match tool {
            Tool::Up => document.pointer("/spec/dependsOn"),
            Tool::CrossplaneCli => document.pointer("/spec/dependencies"),
        };
        for (index, dependency) in dependencies
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let Some(package) = function_package(dependency) else {
                continue;
            };
            let repository = repository_path(package)
                .with_context(|| format!("dependency {index}: package {package:?}"))?;
            function_dependencies.insert(to_dns_label(&repository), package.to_string());
        }
        Ok(Project {
            root,
            repository,
            functions_dir,
            apis_dir,
            models_dir,
            function_dependencies,
        })
    }

    /// Every directory of the project's functions, by the `functionRef.name`
    /// a Composition step calls it by.
    pub fn functions(&self) -> Result<BTreeMap<String, ProjectFunction>> {
        let mut functions = BTreeMap::new();
        let Ok(entries) = std::fs::read_dir(&self.functions_dir) else {
            return Ok(functions);
        };
        for entry in entries {
            let dir = entry
                .with_context(|| format!("cannot read {}", self.functions_dir.display()))?
                .path();
            let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !dir.is_dir() {
                continue;
            }
            let reference = function_ref_name(&self.repository, name)
                .with_context(|| format!("function {name:?}"))?;
            functions.insert(
                reference,
                ProjectFunction {
                    name: name.to_string(),
                    is_kcl: dir.join(KCL_MOD).is_file(),
                    dir,
                },
            );
        }
        Ok(functions)
    }

    /// The Function objects of the project's function dependencies, as the
    /// tool installs them: named by their package's repository path.
    pub fn function_objects(&self) -> BTreeMap<String, Value> {
        self.function_dependencies
            .iter()
            .map(|(name, package)| {
                let object = json!({
                    "apiVersion": "pkg.crossplane.io/v1",
                    "kind": "Function",
                    "metadata": {"name": name},
                    "spec": {"package": package},
                });
                (name.clone(), object)
            })
            .collect()
    }

    /// The project's XRDs: every CompositeResourceDefinition under its apis
    /// directory.
    pub fn definitions(&self) -> Result<Vec<Value>> {
        if !self.apis_dir.is_dir() {
            return Ok(Vec::new());
        }
        Ok(files::read_documents_recursive(&self.apis_dir)?
            .into_iter()
            .map(|(_, document)| document)
            .filter(|d| d["kind"] == "CompositeResourceDefinition")
            .collect())
    }

    /// The XRD that defines `xr`'s kind, if the project has it.
    pub fn definition_of(&self, xr: &Value) -> Result<Option<Value>> {
        let api_version = xr["apiVersion"].as_str().unwrap_or_default();
        let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
        Ok(self.definitions()?.into_iter().find(|xrd| {
            xrd["spec"]["group"] == group && xrd["spec"]["names"]["kind"] == xr["kind"]
        }))
    }
}

/// The package of a Function dependency: `function: <pkg>` (up's
/// `meta.dev.upbound.io/v1alpha1`), `kind: Function` with `package` (its
/// `v2alpha1`), or the same under `xpkg` (Crossplane CLI).
fn function_package(dependency: &Value) -> Option<&str> {
    if let Some(package) = dependency["function"].as_str() {
        return Some(package);
    }
    [dependency, &dependency["xpkg"]]
        .into_iter()
        .find(|d| d["kind"] == "Function")
        .and_then(|d| d["package"].as_str())
}

/// `relative` below `root`, refused when it climbs out.
fn inside(root: &Path, relative: &str) -> Result<PathBuf> {
    let path = Path::new(relative);
    if path.is_absolute()
        || path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        bail!("{relative:?} is not a path inside the project");
    }
    Ok(root.join(path))
}

/// The name a Composition step gives the project function `function`: the
/// DNS label of the repository path of `<repository>_<function>`, as `up`
/// and the Crossplane CLI write it into the step they add.
pub fn function_ref_name(repository: &str, function: &str) -> Result<String> {
    Ok(to_dns_label(&repository_path(&format!(
        "{repository}_{function}"
    ))?))
}

/// The path of an OCI repository without its registry, tag or digest, as
/// go-containerregistry's `RepositoryStr` gives it: the first component is
/// the registry when it has a `.` or `:` or is `localhost`; a Docker Hub
/// name of one component is in `library/`.
pub fn repository_path(reference: &str) -> Result<String> {
    let without_digest = reference.split('@').next().unwrap_or(reference);
    let repository = match without_digest.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => repository,
        _ => without_digest,
    };
    let (registry, path) = match repository.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (Some(first), rest)
        }
        _ => (None, repository),
    };
    let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-/".contains(c);
    if path.is_empty() || !path.chars().all(valid) {
        bail!(
            "{reference:?} is not a valid repository: its path must be lowercase letters, digits and . _ - /"
        );
    }
    Ok(match registry {
        None if !path.contains('/') => format!("library/{path}"),
        _ => path.to_string(),
    })
}

/// Crossplane's `xpkg.ToDNSLabel`: lowercase letters and digits kept,
/// `.`, `/`, `:` and `-` turned into `-` (except as the first, the 63rd or
/// the last byte), everything else dropped (`_` among it), at most the first
/// 63 bytes read, and `-` trimmed from both ends.
pub fn to_dns_label(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut label = String::new();
    for (index, &byte) in bytes.iter().enumerate() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() {
            label.push(char::from(byte));
        }
        if matches!(byte, b'.' | b'/' | b':' | b'-')
            && index != 0
            && index != 62
            && index != bytes.len() - 1
        {
            label.push('-');
        }
        if index == 62 {
            break;
        }
    }
    label.trim_matches('-').to_string()
}

/// The project's KCL models, as the functions' `model` dependency gets them.
#[derive(Clone)]
pub enum Models {
    /// Generated by plait: relative path → KCL text.
    Generated(BTreeMap<PathBuf, String>),
    /// The directory the project's tool generated.
    Existing(PathBuf),
}

/// The staged copies of the functions a render runs, and what each call of
/// them may read. The copies go when this is dropped.
pub struct StagedFunctions {
    _dir: tempfile::TempDir,
    /// Guest path grants, by `functionRef.name`.
    pub grants: BTreeMap<String, Vec<ReadOnlyDir>>,
}

/// Stages each of `functions` (by `functionRef.name`) as its project build
/// would lay it out: the function's directory at `/src` (links followed),
/// with `models` wherever a path dependency of its `kcl.mod` leads to the
/// project's models directory; a path dependency outside the function's
/// directory is granted at the guest path it resolves to from `/src`.
pub fn stage(
    project: &Project,
    functions: &BTreeMap<String, ProjectFunction>,
    models: &Models,
) -> Result<StagedFunctions> {
    let dir = tempfile::Builder::new()
        .prefix("plait-project-")
        .tempdir()
        .context("cannot create a directory for the project's functions")?;
    let models_dir = normalize(&project.models_dir);
    let mut grants = BTreeMap::new();
    for (reference, function) in functions {
        let context = || format!("project function {:?}", function.name);
        let staged = dir.path().join(&function.name);
        let source = staged.join("src");
        let kcl_mod = std::fs::read_to_string(function.dir.join(KCL_MOD))
            .with_context(|| format!("cannot read {}", function.dir.join(KCL_MOD).display()))
            .with_context(context)?;
        let mut model_targets = Vec::new();
        let mut function_grants = Vec::new();
        for (name, path) in path_dependencies(&kcl_mod) {
            let guest = guest_path(&path)
                .with_context(|| format!("{KCL_MOD}: dependency {name:?}"))
                .with_context(context)?;
            let host = resolve_links(&function.dir.join(&path));
            let inside_source = Path::new(&guest).strip_prefix(SOURCE_GUEST_PATH).ok();
            if host == models_dir {
                match inside_source {
                    Some(relative) => model_targets.push(source.join(relative)),
                    None => {
                        let target = staged.join("dependencies").join(&name);
                        model_targets.push(target.clone());
                        function_grants.push(ReadOnlyDir {
                            host: target,
                            guest,
                        });
                    }
                }
            } else if !host.is_dir() {
                bail!(
                    "{}: {KCL_MOD}: path dependency {name:?} ({path}) is not a directory: {}",
                    function.name,
                    host.display()
                );
            } else if inside_source.is_none() {
                function_grants.push(ReadOnlyDir { host, guest });
            }
        }
        copy_tree(&function.dir, &source, &|path| {
            resolve_links(path) == models_dir
        })
        .with_context(context)?;
        for target in &model_targets {
            write_models(models, target).with_context(context)?;
        }
        function_grants.insert(
            0,
            ReadOnlyDir {
                host: source,
                guest: SOURCE_GUEST_PATH.into(),
            },
        );
        grants.insert(reference.clone(), function_grants);
    }
    Ok(StagedFunctions { _dir: dir, grants })
}

fn write_models(models: &Models, target: &Path) -> Result<()> {
    match models {
        Models::Generated(files) => {
            for (relative, text) in files {
                let path = target.join(relative);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("cannot create {}", parent.display()))?;
                }
                std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            Ok(())
        }
        Models::Existing(dir) => copy_tree(dir, target, &|_| false),
    }
}

/// The `[dependencies]` of a `kcl.mod` given by path
/// (`name = { path = "./model" }`), in order.
pub fn path_dependencies(kcl_mod: &str) -> Vec<(String, String)> {
    let mut dependencies = Vec::new();
    let mut in_dependencies = false;
    for line in kcl_mod.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        let Some((name, value)) = line.split_once('=').filter(|_| in_dependencies) else {
            continue;
        };
        let Some(table) = value
            .trim()
            .strip_prefix('{')
            .and_then(|v| v.strip_suffix('}'))
        else {
            continue;
        };
        for field in table.split(',') {
            if let Some((key, path)) = field.split_once('=')
                && key.trim() == "path"
            {
                dependencies.push((
                    name.trim().trim_matches('"').to_string(),
                    path.trim().trim_matches('"').to_string(),
                ));
            }
        }
    }
    dependencies
}

/// Where KCL looks for a path dependency of the package at `/src`: the
/// path joined to `/src`, `.` and `..` resolved.
fn guest_path(dependency: &str) -> Result<String> {
    let mut parts: Vec<&str> = vec!["src"];
    if Path::new(dependency).is_absolute() {
        bail!("path {dependency:?} is absolute; a project build has only its directory");
    }
    for component in Path::new(dependency).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str().unwrap_or_default()),
            // As on Linux, `..` at the root stays at the root.
            Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `path` with each symbolic link along it replaced by its target, even
/// when the target does not exist (a function's `model` link before the
/// tool generated the models), and `.`/`..` resolved.
fn resolve_links(path: &Path) -> PathBuf {
    let mut resolved = PathBuf::new();
    let mut pending: Vec<PathBuf> = normalize(path)
        .components()
        .rev()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut links_followed = 0;
    while let Some(part) = pending.pop() {
        let next = normalize(&resolved.join(&part));
        match std::fs::read_link(&next) {
            Ok(target) if links_followed < MAX_COPY_DEPTH => {
                links_followed += 1;
                let target = resolved.join(target);
                resolved = PathBuf::new();
                pending.extend(
                    normalize(&target)
                        .components()
                        .rev()
                        .map(|c| PathBuf::from(c.as_os_str())),
                );
            }
            _ => resolved = next,
        }
    }
    resolved
}

/// Copies the directory `from` to `to`, following links as a project build
/// does; a dangling link, and any path `skip` says, is left out.
fn copy_tree(from: &Path, to: &Path, skip: &dyn Fn(&Path) -> bool) -> Result<()> {
    let mut pending = vec![(from.to_path_buf(), to.to_path_buf(), 0)];
    while let Some((from, to, depth)) = pending.pop() {
        if depth > MAX_COPY_DEPTH {
            bail!(
                "{} is more than {MAX_COPY_DEPTH} directories deep (a link to a directory above it?)",
                from.display()
            );
        }
        std::fs::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
        for entry in
            std::fs::read_dir(&from).with_context(|| format!("cannot read {}", from.display()))?
        {
            let path = entry
                .with_context(|| format!("cannot read {}", from.display()))?
                .path();
            let Some(name) = path.file_name() else {
                continue;
            };
            if skip(&path) {
                continue;
            }
            // Follows links; a dangling one has no metadata.
            let Ok(metadata) = std::fs::metadata(&path) else {
                continue;
            };
            if metadata.is_dir() {
                pending.push((path.clone(), to.join(name), depth + 1));
            } else if metadata.is_file() {
                std::fs::copy(&path, to.join(name))
                    .with_context(|| format!("cannot copy {}", path.display()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_steps_function_name_is_the_dns_label_of_the_functions_repository() {
        // (spec.repository, function directory, functionRef.name or error)
        let cases: [(&str, &str, Result<&str, &str>); 6] = [
            (
                "xpkg.upbound.io/upbound/configuration-app",
                "xapp",
                Ok("upbound-configuration-appxapp"),
            ),
            (
                "xpkg.upbound.io/upbound/configuration-aws-network",
                "network",
                Ok("upbound-configuration-aws-networknetwork"),
            ),
            // The registry is not part of the name, a port included.
            (
                "localhost:5000/team/platform",
                "compose-db",
                Ok("team-platformcompose-db"),
            ),
            // A Docker Hub name of one component is in library/.
            ("platform", "fn", Ok("library-platformfn")),
            // At most 63 bytes are read, and the trailing - is trimmed.
            (
                "xpkg.upbound.io/an-organisation-with-a-long-name/a-project-with-an-even-longer-name",
                "function",
                Ok("an-organisation-with-a-long-name-a-project-with-an-even-longer"),
            ),
            (
                "xpkg.upbound.io/Upbound/App",
                "fn",
                Err("is not a valid repository"),
            ),
        ];
        for (repository, function, want) in cases {
            let got = function_ref_name(repository, function).map_err(|e| e.to_string());
            match want {
                Ok(name) => assert_eq!(got.as_deref(), Ok(name), "{repository} {function}"),
                Err(message) => assert!(
                    got.as_ref().is_err_and(|e| e.contains(message)),
                    "{repository} {function}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn kcl_mod_path_dependencies_resolve_from_src_in_the_guest() {
        let kcl_mod = "[package]\nname = \"xapp\"\n\n[dependencies]\n\
                       models = { path = \"./model\" }\n\
                       up = { path = \"../../.up/kcl/models\" } # the link's target\n\
                       k8s = \"1.31.2\"\n\
                       [profile]\nentries = { path = \"nope\" }\n";
        let dependencies = path_dependencies(kcl_mod);
        assert_eq!(
            dependencies,
            [
                ("models".to_string(), "./model".to_string()),
                ("up".to_string(), "../../.up/kcl/models".to_string()),
            ]
        );
        let cases = [
            ("./model", Ok("/src/model")),
            ("model/../lib", Ok("/src/lib")),
            ("../../.up/kcl/models", Ok("/.up/kcl/models")),
            ("../../../x", Ok("/x")),
            ("/abs", Err("is absolute")),
        ];
        for (path, want) in cases {
            let got = guest_path(path).map_err(|e| e.to_string());
            match want {
                Ok(guest) => assert_eq!(got.as_deref(), Ok(guest), "{path}"),
                Err(message) => assert!(
                    got.as_ref().is_err_and(|e| e.contains(message)),
                    "{path}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn each_tools_project_file_gives_its_functions_dependencies_and_models() {
        let up = r#"
apiVersion: meta.dev.upbound.io/v2alpha1
kind: Project
metadata: {name: p}
spec:
  repository: xpkg.upbound.io/acme/p
  dependsOn:
  - {apiVersion: pkg.crossplane.io/v1, kind: Function, package: xpkg.upbound.io/crossplane-contrib/function-auto-ready, version: '>=v0.0.0'}
  - {apiVersion: pkg.crossplane.io/v1, kind: Provider, package: xpkg.upbound.io/upbound/provider-aws-ec2, version: v2}
  - {function: xpkg.upbound.io/crossplane-contrib/function-patch-and-transform, version: v0}
"#;
        let crossplane = r#"
apiVersion: dev.crossplane.io/v1alpha1
kind: Project
metadata: {name: p}
spec:
  repository: registry.example.com/acme/p
  paths: {schemas: generated}
  dependencies:
  - type: xpkg
    xpkg: {apiVersion: pkg.crossplane.io/v1, kind: Function, package: xpkg.crossplane.io/crossplane-contrib/function-auto-ready, version: v0.7.0}
"#;
        let wrong = "apiVersion: meta.pkg.crossplane.io/v1\nkind: Configuration\nspec: {}\n";
        let no_repository = "apiVersion: meta.dev.upbound.io/v1alpha1\nkind: Project\nspec: {}\n";
        let escaping = "apiVersion: meta.dev.upbound.io/v1alpha1\nkind: Project\n\
                        spec: {repository: a.io/b/c, paths: {functions: ../x}}\n";
        // (file, text, dependencies' names, models dir below the root, or the error)
        type Want<'a> = Result<(&'a [&'a str], &'a str), &'a str>;
        let cases: [(&str, &str, Want); 5] = [
            (
                UPBOUND_PROJECT_FILE,
                up,
                Ok((
                    &[
                        "crossplane-contrib-function-auto-ready",
                        "crossplane-contrib-function-patch-and-transform",
                    ],
                    ".up/kcl/models",
                )),
            ),
            (
                CROSSPLANE_PROJECT_FILE,
                crossplane,
                Ok((&["crossplane-contrib-function-auto-ready"], "generated/kcl")),
            ),
            (UPBOUND_PROJECT_FILE, wrong, Err("expected kind Project")),
            (
                UPBOUND_PROJECT_FILE,
                no_repository,
                Err("spec.repository is missing"),
            ),
            (UPBOUND_PROJECT_FILE, escaping, Err("spec.paths.functions")),
        ];
        for (file, text, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(file), text).unwrap();
            let got = Project::open(dir.path()).map_err(|e| format!("{e:#}"));
            match want {
                Ok((dependencies, models)) => {
                    let project = got.unwrap();
                    let names: Vec<&str> = project
                        .function_dependencies
                        .keys()
                        .map(String::as_str)
                        .collect();
                    assert_eq!(names, dependencies, "{file}");
                    assert_eq!(project.models_dir, project.root.join(models), "{file}");
                }
                Err(message) => assert!(
                    got.as_ref().is_err_and(|e| e.contains(message)),
                    "{file}: {got:?}"
                ),
            }
        }
    }

    /// Every file below `dir`, relative, with its text.
    fn tree(dir: &Path) -> BTreeMap<String, String> {
        let mut files = BTreeMap::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(current) = pending.pop() {
            for entry in std::fs::read_dir(&current).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let relative = path.strip_prefix(dir).unwrap().display().to_string();
                    files.insert(relative, std::fs::read_to_string(&path).unwrap());
                }
            }
        }
        files
    }

    #[test]
    fn a_function_is_staged_as_its_build_lays_it_out_with_the_models_in_place_of_their_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join(UPBOUND_PROJECT_FILE),
            "apiVersion: meta.dev.upbound.io/v1alpha1\nkind: Project\nspec: {repository: xpkg.upbound.io/acme/p}\n",
        )
        .unwrap();
        let function = root.join("functions/compose");
        std::fs::create_dir_all(function.join("lib")).unwrap();
        std::fs::create_dir_all(root.join("shared")).unwrap();
        std::fs::write(root.join("shared/s.k"), "s = 1\n").unwrap();
        std::fs::write(function.join("main.k"), "import models.v1\n").unwrap();
        std::fs::write(function.join("lib/l.k"), "l = 1\n").unwrap();
        std::fs::write(
            function.join(KCL_MOD),
            "[dependencies]\nmodels = { path = \"./model\" }\nlib = { path = \"lib\" }\n\
             shared = { path = \"../../shared\" }\n",
        )
        .unwrap();
        // As up writes it, before any model is generated: a dangling link.
        std::os::unix::fs::symlink("../../.up/kcl/models", function.join("model")).unwrap();

        let project = Project::open(root).unwrap();
        let functions = project.functions().unwrap();
        assert_eq!(
            functions.keys().collect::<Vec<_>>(),
            ["acme-pcompose"],
            "the step name"
        );
        let models = Models::Generated(BTreeMap::from([
            (
                PathBuf::from("kcl.mod"),
                "[package]\nname = \"models\"\n".to_string(),
            ),
            (
                PathBuf::from("v1/x.k"),
                "schema X:\n    a: str\n".to_string(),
            ),
        ]));
        let staged = stage(&project, &functions, &models).unwrap();
        let grants = &staged.grants["acme-pcompose"];
        let guests: Vec<&str> = grants.iter().map(|g| g.guest.as_str()).collect();
        assert_eq!(guests, ["/src", "/shared"]);
        assert_eq!(
            tree(&grants[0].host),
            BTreeMap::from([
                (
                    "kcl.mod".to_string(),
                    std::fs::read_to_string(function.join(KCL_MOD)).unwrap()
                ),
                ("lib/l.k".to_string(), "l = 1\n".to_string()),
                ("main.k".to_string(), "import models.v1\n".to_string()),
                (
                    "model/kcl.mod".to_string(),
                    "[package]\nname = \"models\"\n".to_string()
                ),
                (
                    "model/v1/x.k".to_string(),
                    "schema X:\n    a: str\n".to_string()
                ),
            ])
        );
        assert_eq!(grants[1].host, project.root.join("shared"));
        // Nothing was written into the project.
        assert!(!root.join(".up").exists());

        // The models up already generated are used when plait generates none.
        std::fs::create_dir_all(root.join(".up/kcl/models/v1")).unwrap();
        std::fs::write(root.join(".up/kcl/models/v1/y.k"), "y = 1\n").unwrap();
        let staged = stage(
            &project,
            &functions,
            &Models::Existing(project.models_dir.clone()),
        )
        .unwrap();
        let files = tree(&staged.grants["acme-pcompose"][0].host);
        assert_eq!(
            files.get("model/v1/y.k").map(String::as_str),
            Some("y = 1\n")
        );
        assert!(!files.contains_key("model/v1/x.k"));

        // A path dependency that is not there is named.
        std::fs::remove_dir_all(root.join("shared")).unwrap();
        let error = stage(&project, &functions, &models).err().unwrap();
        assert!(
            format!("{error:#}")
                .contains("path dependency \"shared\" (../../shared) is not a directory"),
            "{error:#}"
        );
    }
}
