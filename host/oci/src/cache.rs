//! Where plait keeps things between runs, and the content-addressed store
//! of pulled blobs (manifests, configs and components) under it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::digest;
use crate::error::Error;

/// plait's cache directory: `$PLAIT_CACHE_DIR`, else `$XDG_CACHE_HOME/plait`,
/// else `~/.cache/plait`. Pulled blobs live in `blobs/`, compiled
/// components in `components/`.
pub fn cache_root() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PLAIT_CACHE_DIR") {
        return Some(dir.into());
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("plait"))
}

/// Where compiled components are kept (for `plait_runtime::RuntimeConfig::cache_dir`).
pub fn compile_cache_dir() -> Option<PathBuf> {
    cache_root().map(|root| root.join("components"))
}

/// Blobs by digest: `<root>/blobs/sha256/<hex>`. A blob is only ever
/// returned when its bytes still hash to its name.
#[derive(Debug, Clone)]
pub struct BlobCache {
    dir: PathBuf,
}

impl BlobCache {
    /// The blob store under a cache root (see [`cache_root`]).
    pub fn new(root: &Path) -> BlobCache {
        BlobCache {
            dir: root.join("blobs"),
        }
    }

    fn path(&self, digest: &str) -> Option<PathBuf> {
        let (algorithm, hex) = digest.split_once(':')?;
        let valid = algorithm == "sha256"
            && hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| self.dir.join(algorithm).join(hex))
    }

    /// The blob named `digest`, if it is stored and intact. A blob whose
    /// bytes no longer match is removed so the next pull replaces it.
    pub fn get(&self, digest_name: &str) -> Option<Vec<u8>> {
        let path = self.path(digest_name)?;
        let bytes = std::fs::read(&path).ok()?;
        if digest(&bytes) == digest_name {
            Some(bytes)
        } else {
            tracing::warn!(path = %path.display(), "cached blob does not match its digest; removing it");
            // Removal only saves a re-check; a failure leaves the same miss.
            let _ = std::fs::remove_file(&path);
            None
        }
    }

    /// Stores `bytes` under their digest, atomically.
    pub fn put(&self, bytes: &[u8]) -> Result<String, Error> {
        let name = digest(bytes);
        let Some(path) = self.path(&name) else {
            return Err(Error::Cache {
                path: self.dir.clone(),
                message: format!("cannot name blob {name}"),
            });
        };
        let cache_error = |e: std::io::Error| Error::Cache {
            path: path.clone(),
            message: e.to_string(),
        };
        let parent = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent).map_err(cache_error)?;
        let mut file = tempfile::NamedTempFile::new_in(parent).map_err(cache_error)?;
        file.write_all(bytes).map_err(cache_error)?;
        file.persist(&path).map_err(|e| cache_error(e.error))?;
        Ok(name)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_returned_only_while_they_match_their_digest() {
        let root = tempfile::tempdir().unwrap();
        let cache = BlobCache::new(root.path());
        let name = cache.put(b"component").unwrap();
        assert_eq!(name, digest(b"component"));
        assert_eq!(cache.get(&name).as_deref(), Some(&b"component"[..]));

        let path = root
            .path()
            .join("blobs/sha256")
            .join(name.trim_start_matches("sha256:"));
        std::fs::write(&path, b"tampered").unwrap();
        assert_eq!(cache.get(&name), None);
        assert!(!path.exists());
    }

    #[test]
    fn malformed_digests_never_reach_the_filesystem() {
        let root = tempfile::tempdir().unwrap();
        let cache = BlobCache::new(root.path());
        for name in [
            "sha256:../../etc/passwd",
            "sha512:00",
            "nodigest",
            "sha256:ABCDEF",
        ] {
            assert_eq!(cache.get(name), None, "{name}");
        }
    }
}
