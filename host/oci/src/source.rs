//! Project builds: function packages that are not Wasm artifacts but
//! function-kcl's runtime image with a KCL package in the directory its
//! config's `FUNCTION_KCL_DEFAULT_SOURCE` names (`/src`), as `up project
//! build` and `crossplane project build` make them for a project's
//! embedded KCL functions. plait runs them with its built-in function-kcl,
//! so only the layer holding that directory is pulled (from the last layer
//! backwards, Crossplane's package layers skipped; the runtime's own layers
//! are never reached), verified by digest like every blob, and its entries
//! under the directory extracted to `<sources>/<layer hex>/<directory>`.
//! Extraction refuses entries that climb out (`..`), links whose target
//! leaves the directory, and more than [`MAX_SOURCE_BYTES`] or
//! [`MAX_SOURCE_ENTRIES`]; links that stay inside are written as copies
//! of their targets, so the extracted tree holds no link at all.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use crate::layout::Manifest;
use crate::{Client, Error, Resolved, Session, pinned};

/// The variable function-kcl reads its default source from.
pub const DEFAULT_SOURCE_ENV: &str = "FUNCTION_KCL_DEFAULT_SOURCE";
/// Where the built-in function-kcl finds the package it runs when a step
/// gives no source: the extracted directory is granted there.
pub const SOURCE_GUEST_PATH: &str = "/src";
/// Crossplane's annotation on a package's own layers (`package.yaml`,
/// examples): never the source.
pub const PACKAGE_LAYER_ANNOTATION: &str = "io.crossplane.xpkg";
pub const IMAGE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
pub const DOCKER_IMAGE_CONFIG_MEDIA_TYPE: &str = "application/vnd.docker.container.image.v1+json";
/// The largest source layer pulled (compressed).
pub const MAX_SOURCE_LAYER_BYTES: u64 = 64 << 20;
/// The most bytes a layer may unpack to while it is read.
const MAX_UNPACKED_LAYER_BYTES: u64 = 512 << 20;
/// The most bytes of files extracted from one source directory.
pub const MAX_SOURCE_BYTES: u64 = 64 << 20;
/// The most entries extracted from one source directory.
pub const MAX_SOURCE_ENTRIES: usize = 10_000;

/// A function package resolved to its manifest digest: a Wasm component,
/// or a project build's KCL source.
#[derive(Debug, Clone)]
pub enum FunctionPackage {
    Wasm(Box<Resolved>),
    Source(SourcePackage),
}

impl FunctionPackage {
    /// The reference pinned to the manifest digest.
    pub fn pinned(&self) -> &str {
        match self {
            FunctionPackage::Wasm(resolved) => &resolved.pinned,
            FunctionPackage::Source(source) => &source.pinned,
        }
    }

    /// The manifest digest: the package's identity.
    pub fn digest(&self) -> &str {
        match self {
            FunctionPackage::Wasm(resolved) => &resolved.digest,
            FunctionPackage::Source(source) => &source.digest,
        }
    }
}

/// A project build, its source extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePackage {
    pub reference: String,
    pub pinned: String,
    /// The image's manifest digest.
    pub digest: String,
    /// The digest of the layer the source came from.
    pub layer_digest: String,
    /// The directory `FUNCTION_KCL_DEFAULT_SOURCE` names in the image.
    pub image_dir: String,
    /// Where the directory was extracted on this host.
    pub dir: PathBuf,
}

/// The part of an image config plait reads.
#[derive(Debug, Default, Deserialize)]
struct ImageConfig {
    #[serde(default)]
    config: Option<RunConfig>,
}

#[derive(Debug, Default, Deserialize)]
struct RunConfig {
    #[serde(rename = "Env", default)]
    env: Option<Vec<String>>,
}

/// The directory an image config's `FUNCTION_KCL_DEFAULT_SOURCE` names;
/// `None` when it sets none (the last setting wins, as in a process
/// environment).
pub fn default_source(config: &[u8]) -> Result<Option<String>, String> {
    let config: ImageConfig =
        serde_json::from_slice(config).map_err(|e| format!("the image config: {e}"))?;
    Ok(config
        .config
        .and_then(|c| c.env)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            entry
                .strip_prefix(DEFAULT_SOURCE_ENV)
                .and_then(|rest| rest.strip_prefix('='))
                .map(str::to_string)
        })
        .next_back()
        .filter(|dir| !dir.is_empty()))
}

/// The directory an image path names, relative to the image's root: an
/// absolute path of plain components.
fn image_dir_relative(dir: &str) -> Result<PathBuf, String> {
    let path = Path::new(dir);
    let mut relative = PathBuf::new();
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(part) => relative.push(part),
            _ => {
                return Err(format!(
                    "{DEFAULT_SOURCE_ENV}={dir:?} is not an absolute path of plain directory names"
                ));
            }
        }
    }
    if !path.is_absolute() || relative.as_os_str().is_empty() {
        return Err(format!(
            "{DEFAULT_SOURCE_ENV}={dir:?} is not an absolute path below the image's root"
        ));
    }
    Ok(relative)
}

/// An archive entry's path relative to the image's root: `None` for one
/// that climbs out.
fn entry_relative(path: &Path) -> Option<PathBuf> {
    let mut relative = PathBuf::new();
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(part) => relative.push(part),
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(relative)
}

/// A link's target as a path below the source directory: `link` is the
/// link's own path there, `target` what it points at (absolute targets are
/// read in the image, where the directory is `image_dir`). `None` when it
/// leaves the directory.
fn link_target(link: &Path, target: &Path, image_dir: &Path) -> Option<PathBuf> {
    let joined = if target.is_absolute() {
        let in_image = entry_relative(target)?;
        in_image.strip_prefix(image_dir).ok()?.to_path_buf()
    } else {
        link.parent().unwrap_or(Path::new("")).join(target)
    };
    let mut resolved = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::Normal(part) => resolved.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !resolved.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(resolved)
}

/// Reads at most a number of bytes, then fails: a small layer cannot
/// unpack to an unbounded stream.
struct Bounded<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.left = self.left.checked_sub(read as u64).ok_or_else(|| {
            std::io::Error::other(format!(
                "the layer unpacks to more than {MAX_UNPACKED_LAYER_BYTES} bytes"
            ))
        })?;
        Ok(read)
    }
}

/// Extracts the entries of `layer` (a tar, gzipped or not) under
/// `image_dir` (relative to the image's root) into `into`; false when the
/// layer has none. Links that stay inside become copies of their targets.
pub fn extract(layer: &[u8], image_dir: &Path, into: &Path) -> Result<bool, String> {
    if layer.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return Err("the layer is zstd-compressed; plait reads gzipped or plain tar layers".into());
    }
    let reader: Box<dyn Read> = if layer.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(layer))
    } else {
        Box::new(layer)
    };
    let mut archive = tar::Archive::new(Bounded {
        inner: reader,
        left: MAX_UNPACKED_LAYER_BYTES,
    });
    let entries = archive
        .entries()
        .map_err(|e| format!("not a tar archive: {e}"))?;
    let mut found = false;
    let mut count = 0usize;
    let mut bytes = 0u64;
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    let write_error =
        |path: &Path, e: std::io::Error| format!("cannot write {}: {e}", path.display());
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("cannot read the layer: {e}"))?;
        let raw = entry
            .path()
            .map_err(|e| format!("an entry's path: {e}"))?
            .into_owned();
        let relative = entry_relative(&raw)
            .ok_or_else(|| format!("entry {} climbs out of the image's root", raw.display()))?;
        let Ok(inside) = relative.strip_prefix(image_dir) else {
            continue;
        };
        let inside = inside.to_path_buf();
        found = true;
        // Whiteouts say what an earlier layer deleted; nothing to write.
        if inside
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(".wh."))
        {
            continue;
        }
        count += 1;
        if count > MAX_SOURCE_ENTRIES {
            return Err(format!(
                "the source has more than {MAX_SOURCE_ENTRIES} entries"
            ));
        }
        let to = into.join(&inside);
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&to).map_err(|e| write_error(&to, e))?;
        } else if kind.is_file() {
            let size = entry.size();
            bytes = bytes.saturating_add(size);
            if bytes > MAX_SOURCE_BYTES {
                return Err(format!("the source is more than {MAX_SOURCE_BYTES} bytes"));
            }
            let mut content = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            entry
                .read_to_end(&mut content)
                .map_err(|e| format!("entry {}: {e}", raw.display()))?;
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| write_error(parent, e))?;
            }
            std::fs::write(&to, content).map_err(|e| write_error(&to, e))?;
        } else if kind.is_symlink() || kind.is_hard_link() {
            let target = entry
                .link_name()
                .map_err(|e| format!("entry {}: {e}", raw.display()))?
                .unwrap_or_default()
                .into_owned();
            // A hard link names its target from the image's root.
            let target = if kind.is_hard_link() && !target.is_absolute() {
                Path::new("/").join(target)
            } else {
                target
            };
            let resolved = link_target(&inside, &target, image_dir).ok_or_else(|| {
                format!(
                    "entry {} links to {}, outside {}",
                    raw.display(),
                    target.display(),
                    image_dir.display()
                )
            })?;
            links.push((inside, resolved));
        } else {
            return Err(format!(
                "entry {} is neither a file, a directory nor a link",
                raw.display()
            ));
        }
    }
    // Each link becomes a copy of what it points at; a link to a link, or
    // to nothing, is left out, as a build that follows links leaves out a
    // dangling one.
    for (link, target) in links {
        let from = into.join(&target);
        let to = into.join(&link);
        match std::fs::symlink_metadata(&from) {
            Ok(metadata) if metadata.is_file() => {
                bytes = bytes.saturating_add(metadata.len());
                if bytes > MAX_SOURCE_BYTES {
                    return Err(format!("the source is more than {MAX_SOURCE_BYTES} bytes"));
                }
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| write_error(parent, e))?;
                }
                std::fs::copy(&from, &to).map_err(|e| write_error(&to, e))?;
            }
            Ok(metadata) if metadata.is_dir() => {
                copy_dir(&from, &to, &mut bytes, &mut count)?;
            }
            _ => {
                tracing::debug!(link = %link.display(), "a link to nothing in the source; left out")
            }
        }
    }
    Ok(found)
}

/// Copies the directory `from` (which holds no links) to `to`, counting
/// against the source's bounds; a copy into itself copies what was there
/// before.
fn copy_dir(from: &Path, to: &Path, bytes: &mut u64, count: &mut usize) -> Result<(), String> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let dir = from.join(&relative);
        let listing = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in listing {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            let path = relative.join(entry.file_name());
            let kind = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            *count += 1;
            if *count > MAX_SOURCE_ENTRIES {
                return Err(format!(
                    "the source has more than {MAX_SOURCE_ENTRIES} entries"
                ));
            }
            if kind.is_dir() {
                pending.push(path.clone());
            }
            files.push((path, kind.is_dir()));
        }
    }
    std::fs::create_dir_all(to).map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    for (path, is_dir) in files {
        let target = to.join(&path);
        if is_dir {
            std::fs::create_dir_all(&target)
                .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
            continue;
        }
        let source = from.join(&path);
        let size = std::fs::metadata(&source)
            .map_err(|e| format!("{}: {e}", source.display()))?
            .len();
        *bytes = bytes.saturating_add(size);
        if *bytes > MAX_SOURCE_BYTES {
            return Err(format!("the source is more than {MAX_SOURCE_BYTES} bytes"));
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot write {}: {e}", parent.display()))?;
        }
        std::fs::copy(&source, &target)
            .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    }
    Ok(())
}

/// Fills a staging directory under `root` with `fill` and renames it to
/// `dir` whole, so a directory under that name is always complete (two
/// hosts filling it at once both succeed: the second rename finds it
/// there). Nothing is renamed when `fill` fails or says it found nothing
/// (false, which is returned).
pub(crate) fn install_staged(
    root: &Path,
    dir: &Path,
    fill: impl FnOnce(&Path) -> Result<bool, Error>,
) -> Result<bool, Error> {
    let cache_error = |path: &Path, e: std::io::Error| Error::Cache {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(root).map_err(|e| cache_error(root, e))?;
    let staging = tempfile::tempdir_in(root).map_err(|e| cache_error(root, e))?;
    let staged = staging.path().join("staged");
    if !fill(&staged)? {
        return Ok(false);
    }
    std::fs::create_dir_all(&staged).map_err(|e| cache_error(&staged, e))?;
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| cache_error(parent, e))?;
    }
    if let Err(e) = std::fs::rename(&staged, dir)
        && !dir.is_dir()
    {
        return Err(cache_error(dir, e));
    }
    Ok(true)
}

impl Client {
    /// Resolves `reference` to a digest and returns the function package:
    /// a verified Wasm component (see [`Client::resolve`]), or a project
    /// build (an image whose config sets `FUNCTION_KCL_DEFAULT_SOURCE`)
    /// with that directory extracted to this host.
    pub async fn resolve_function(
        &self,
        reference: &str,
        keychain: &crate::Keychain,
    ) -> Result<FunctionPackage, Error> {
        let session = self.session(reference, keychain)?;
        let (digest, manifest) = self.manifest(&session).await?;
        if manifest.wasm_layer().is_ok() {
            return self
                .resolved_wasm(&session, reference, digest, &manifest)
                .await
                .map(|resolved| FunctionPackage::Wasm(Box::new(resolved)));
        }
        self.source(&session, reference, digest, &manifest)
            .await
            .map(FunctionPackage::Source)
    }

    /// [`Client::resolve_function`], asking the registry for a tag's
    /// digest again (see [`Client::resolve_latest`]).
    pub async fn resolve_function_latest(
        &self,
        reference: &str,
        keychain: &crate::Keychain,
    ) -> Result<FunctionPackage, Error> {
        self.forget_tag(reference)?;
        self.resolve_function(reference, keychain).await
    }

    async fn source(
        &self,
        session: &Session,
        reference: &str,
        digest: String,
        manifest: &Manifest,
    ) -> Result<SourcePackage, Error> {
        let unsupported = |message: String| Error::UnsupportedArtifact {
            reference: session.name.clone(),
            message,
        };
        let not_wasm = manifest.wasm_layer().err().unwrap_or_default();
        if !matches!(
            manifest.config.media_type.as_str(),
            IMAGE_CONFIG_MEDIA_TYPE | DOCKER_IMAGE_CONFIG_MEDIA_TYPE
        ) {
            return Err(unsupported(not_wasm));
        }
        let config = self
            .blob(session, &manifest.config, crate::MAX_METADATA_BYTES)
            .await?;
        let image_dir = default_source(&config)
            .map_err(&unsupported)?
            .ok_or_else(|| {
                unsupported(format!(
                    "an image whose config sets no {DEFAULT_SOURCE_ENV}: plait runs Wasm \
                     components and project builds of KCL functions (function-kcl's image \
                     with {DEFAULT_SOURCE_ENV} set), not other images"
                ))
            })?;
        let relative = image_dir_relative(&image_dir).map_err(&unsupported)?;
        let root = self.extraction_root("sources")?;
        for layer in manifest.layers.iter().rev() {
            if layer.annotations.contains_key(PACKAGE_LAYER_ANNOTATION) {
                continue;
            }
            let Some(hex) = plait_runtime::sha256_hex(&layer.digest) else {
                return Err(unsupported(format!(
                    "layer digest {:?} is not a sha256 digest",
                    layer.digest
                )));
            };
            let dir = root.join(hex).join(&relative);
            let found = |dir: PathBuf| SourcePackage {
                reference: reference.to_string(),
                pinned: pinned(&session.reference, &digest),
                digest: digest.clone(),
                layer_digest: layer.digest.clone(),
                image_dir: image_dir.clone(),
                dir,
            };
            if dir.is_dir() {
                return Ok(found(dir));
            }
            if layer.size > MAX_SOURCE_LAYER_BYTES {
                return Err(Error::TooLarge {
                    reference: session.name.clone(),
                    what: "the layer looked in for the KCL source",
                    size: layer.size,
                    limit: MAX_SOURCE_LAYER_BYTES,
                });
            }
            let bytes = self.blob(session, layer, MAX_SOURCE_LAYER_BYTES).await?;
            let extracted = install_staged(&root, &dir, |staged| {
                extract(&bytes, &relative, staged)
                    .map_err(|message| unsupported(format!("layer {}: {message}", layer.digest)))
            })?;
            if !extracted {
                continue;
            }
            tracing::info!(
                reference = session.name,
                layer = layer.digest,
                dir = %dir.display(),
                "extracted a project build's KCL source"
            );
            return Ok(found(dir));
        }
        Err(unsupported(format!(
            "no layer of the image holds {image_dir} ({DEFAULT_SOURCE_ENV})"
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    enum Item<'a> {
        File(&'a str, &'a str),
        Dir(&'a str),
        Symlink(&'a str, &'a str),
        HardLink(&'a str, &'a str),
        Fifo(&'a str),
    }

    fn layer(items: &[Item]) -> Vec<u8> {
        let mut archive = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for item in items {
            let mut header = tar::Header::new_gnu();
            header.set_mode(0o644);
            let (path, kind, data, link): (&str, tar::EntryType, &[u8], Option<&str>) = match item {
                Item::File(path, text) => (path, tar::EntryType::Regular, text.as_bytes(), None),
                Item::Dir(path) => (path, tar::EntryType::Directory, b"", None),
                Item::Symlink(path, to) => (path, tar::EntryType::Symlink, b"", Some(to)),
                Item::HardLink(path, to) => (path, tar::EntryType::Link, b"", Some(to)),
                Item::Fifo(path) => (path, tar::EntryType::Fifo, b"", None),
            };
            header.set_entry_type(kind);
            header.set_size(data.len() as u64);
            // Paths with `..` are written raw: the builder refuses them.
            let name = header.as_old_mut();
            name.name[..path.len()].copy_from_slice(path.as_bytes());
            if let Some(link) = link {
                name.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            header.set_cksum();
            archive.append(&header, data).unwrap();
        }
        archive.into_inner().unwrap().finish().unwrap()
    }

    fn tree(dir: &Path) -> BTreeMap<String, String> {
        let mut files = BTreeMap::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(current) = pending.pop() {
            for entry in std::fs::read_dir(&current).unwrap() {
                let entry = entry.unwrap();
                let path = entry.path();
                let relative = path.strip_prefix(dir).unwrap().display().to_string();
                let kind = entry.file_type().unwrap();
                assert!(!kind.is_symlink(), "{relative} is a link");
                if kind.is_dir() {
                    files.insert(format!("{relative}/"), String::new());
                    pending.push(path);
                } else {
                    files.insert(relative, std::fs::read_to_string(&path).unwrap());
                }
            }
        }
        files
    }

    #[test]
    fn a_project_builds_source_is_extracted_and_what_leaves_it_refused() {
        use Item::*;
        let main = File("src/main.k", "a = 1\n");
        // (case, entries, Ok(the files under src) or the error's text)
        type Want<'a> = Result<&'a [(&'a str, &'a str)], &'a str>;
        let cases: Vec<(&str, Vec<Item>, Want)> = vec![
            (
                "files and directories, the rest of the image left out",
                vec![
                    Dir("src"),
                    File("src/kcl.mod", "[package]\n"),
                    File("./src/lib/l.k", "l = 1\n"),
                    File("/etc/passwd", "root"),
                    File("srcs/other.k", "no"),
                    main,
                ],
                Ok(&[
                    ("kcl.mod", "[package]\n"),
                    ("lib/", ""),
                    ("lib/l.k", "l = 1\n"),
                    ("main.k", "a = 1\n"),
                ]),
            ),
            (
                "links inside become copies",
                vec![
                    File("src/model/v1/x.k", "x = 1\n"),
                    Symlink("src/models", "model"),
                    Symlink("src/m.k", "/src/model/v1/x.k"),
                    HardLink("src/h.k", "src/model/v1/x.k"),
                    Symlink("src/dangling", "nothing"),
                ],
                Ok(&[
                    ("h.k", "x = 1\n"),
                    ("m.k", "x = 1\n"),
                    ("model/", ""),
                    ("model/v1/", ""),
                    ("model/v1/x.k", "x = 1\n"),
                    ("models/", ""),
                    ("models/v1/", ""),
                    ("models/v1/x.k", "x = 1\n"),
                ]),
            ),
            (
                "whiteouts are skipped",
                vec![File("src/.wh.old.k", ""), File("src/main.k", "a = 1\n")],
                Ok(&[("main.k", "a = 1\n")]),
            ),
            (
                "an entry that climbs out",
                vec![File("src/../../etc/x", "x")],
                Err("entry src/../../etc/x climbs out of the image's root"),
            ),
            (
                "a relative link out",
                vec![Symlink("src/escape", "../etc/passwd")],
                Err("entry src/escape links to ../etc/passwd, outside src"),
            ),
            (
                "an absolute link out",
                vec![Symlink("src/escape", "/etc/passwd")],
                Err("entry src/escape links to /etc/passwd, outside src"),
            ),
            (
                "a hard link out",
                vec![HardLink("src/escape", "etc/passwd")],
                Err("entry src/escape links to /etc/passwd, outside src"),
            ),
            (
                "a device or fifo",
                vec![Fifo("src/pipe")],
                Err("entry src/pipe is neither a file, a directory nor a link"),
            ),
        ];
        for (case, items, want) in cases {
            let into = tempfile::tempdir().unwrap();
            let got = extract(&layer(&items), Path::new("src"), into.path());
            match want {
                Ok(files) => {
                    assert_eq!(got, Ok(true), "{case}");
                    let want: BTreeMap<String, String> = files
                        .iter()
                        .map(|(p, t)| (p.to_string(), t.to_string()))
                        .collect();
                    assert_eq!(tree(into.path()), want, "{case}");
                }
                Err(message) => {
                    let error = got.err().unwrap_or_default();
                    assert!(error.contains(message), "{case}: {error}");
                }
            }
        }
        let into = tempfile::tempdir().unwrap();
        let runtime_layer = layer(&[File("usr/bin/function", "ELF")]);
        assert_eq!(
            extract(&runtime_layer, Path::new("src"), into.path()),
            Ok(false),
            "a layer without the directory"
        );
        assert!(
            extract(b"\x28\xb5\x2f\xfd zstd", Path::new("src"), into.path())
                .err()
                .unwrap_or_default()
                .contains("zstd")
        );
    }

    #[test]
    fn extraction_is_bounded_in_bytes() {
        let big = "x".repeat(usize::try_from(MAX_SOURCE_BYTES).unwrap() / 2 + 1);
        let layer = layer(&[Item::File("src/a", &big), Item::File("src/b", &big)]);
        let into = tempfile::tempdir().unwrap();
        let error = extract(&layer, Path::new("src"), into.path())
            .err()
            .unwrap_or_default();
        assert!(error.contains("more than"), "{error}");
    }

    #[test]
    fn the_default_source_is_read_from_the_image_configs_env() {
        // (config, Ok(directory) or the error's text)
        let cases: [(&str, Result<Option<&str>, &str>); 5] = [
            (
                r#"{"config": {"Env": ["PATH=/usr/bin", "FUNCTION_KCL_DEFAULT_SOURCE=/src", "KCL_PKG_PATH=/src"]}}"#,
                Ok(Some("/src")),
            ),
            (
                r#"{"config": {"Env": ["FUNCTION_KCL_DEFAULT_SOURCE=/a", "FUNCTION_KCL_DEFAULT_SOURCE=/b"]}}"#,
                Ok(Some("/b")),
            ),
            (r#"{"config": {"Env": null}}"#, Ok(None)),
            (r#"{"architecture": "amd64"}"#, Ok(None)),
            ("not json", Err("the image config")),
        ];
        for (config, want) in cases {
            let got = default_source(config.as_bytes());
            match want {
                Ok(dir) => assert_eq!(got.ok().flatten().as_deref(), dir, "{config}"),
                Err(message) => assert!(got.is_err_and(|e| e.contains(message)), "{config}"),
            }
        }
        let dirs = [
            ("/src", Ok("src")),
            ("/opt/fn/src/", Ok("opt/fn/src")),
            ("src", Err("not an absolute path")),
            ("/", Err("not an absolute path")),
            ("/src/../etc", Err("plain directory names")),
        ];
        for (dir, want) in dirs {
            let got = image_dir_relative(dir);
            match want {
                Ok(relative) => assert_eq!(got, Ok(PathBuf::from(relative)), "{dir}"),
                Err(message) => assert!(got.is_err_and(|e| e.contains(message)), "{dir}"),
            }
        }
    }
}
