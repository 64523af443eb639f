//! Where plait keeps things between runs, and the content-addressed store
//! of pulled blobs (manifests, configs and components) under it.

use std::path::{Path, PathBuf};

use plait_runtime::{CacheDir, CacheDirError, sha256_hex};

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
/// returned when its bytes still hash to its name. The directory is opened
/// once and every access goes through it, so no digest from a registry can
/// name a file outside it.
#[derive(Debug)]
pub struct BlobCache {
    dir: CacheDir,
}

impl BlobCache {
    /// The blob store under a cache root (see [`cache_root`]), created if
    /// needed.
    pub fn open(root: &Path) -> Result<BlobCache, Error> {
        let dir = CacheDir::open(&root.join("blobs")).and_then(|blobs| blobs.subdir("sha256"))?;
        Ok(BlobCache { dir })
    }

    /// The file name of `digest`: its hex, and only for a sha256 digest.
    fn name<'d>(&self, digest: &'d str) -> Result<&'d str, Error> {
        sha256_hex(digest).ok_or_else(|| {
            let invalid = std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a blob digest (sha256:<64 lowercase hex digits>)",
            );
            self.dir.error(digest, invalid).into()
        })
    }

    /// The blob named `digest` if it is stored and intact; `None` when it is
    /// not stored. A blob whose bytes no longer match is removed so the next
    /// pull replaces it. A name the cache refuses is an error.
    pub fn get(&self, digest_name: &str) -> Result<Option<Vec<u8>>, Error> {
        let name = self.name(digest_name)?;
        let bytes = match self.dir.read(name) {
            Ok(bytes) => bytes,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if digest(&bytes) == digest_name {
            return Ok(Some(bytes));
        }
        let path = self.dir.path().join(name);
        tracing::warn!(path = %path.display(), "cached blob does not match its digest; removing it");
        // Removal only saves a re-check; a failure leaves the same miss.
        let _ = self.dir.remove(name);
        Ok(None)
    }

    /// Stores `bytes` under their digest, atomically.
    pub fn put(&self, bytes: &[u8]) -> Result<String, Error> {
        let digest = digest(bytes);
        self.dir.write_atomically(self.name(&digest)?, bytes)?;
        Ok(digest)
    }
}

impl From<CacheDirError> for Error {
    fn from(e: CacheDirError) -> Error {
        Error::Cache {
            message: format!("cannot use {:?}: {}", e.name, e.message),
            path: e.path,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_returned_only_while_they_match_their_digest() {
        let root = tempfile::tempdir().unwrap();
        let cache = BlobCache::open(root.path()).unwrap();
        let name = cache.put(b"component").unwrap();
        assert_eq!(name, digest(b"component"));
        assert_eq!(
            cache.get(&name).unwrap().as_deref(),
            Some(&b"component"[..])
        );

        let path = root
            .path()
            .join("blobs/sha256")
            .join(name.trim_start_matches("sha256:"));
        std::fs::write(&path, b"tampered").unwrap();
        assert_eq!(cache.get(&name).unwrap(), None);
        assert!(!path.exists());
        assert_eq!(cache.get(&digest(b"never stored")).unwrap(), None);
    }

    #[test]
    fn names_outside_the_cache_are_refused_with_the_cache_and_the_name() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let cache = BlobCache::open(root.path()).unwrap();
        // A symlink planted under a blob's name, pointing at the same bytes
        // outside the cache.
        let planted = digest(b"outside");
        let hex = planted.trim_start_matches("sha256:");
        std::fs::write(outside.path().join(hex), b"outside").unwrap();
        let blobs = root.path().join("blobs/sha256");
        std::os::unix::fs::symlink(outside.path().join(hex), blobs.join(hex)).unwrap();
        let absolute = format!("sha256:{}", outside.path().join(hex).display());

        let cases = [
            (
                "a digest with ../",
                "sha256:../../etc/passwd".to_string(),
                "sha256:../../etc/passwd".to_string(),
            ),
            ("an absolute path", absolute.clone(), absolute),
            ("another algorithm", "sha512:00".into(), "sha512:00".into()),
            ("no algorithm", "nodigest".into(), "nodigest".into()),
            (
                "upper-case hex",
                format!("sha256:{}", hex.to_uppercase()),
                hex.to_uppercase(),
            ),
            (
                "a symlink inside pointing outside",
                planted.clone(),
                hex.to_string(),
            ),
        ];
        for (case, digest, named) in cases {
            let text = match cache.get(&digest) {
                Err(e) => e.to_string(),
                Ok(found) => panic!("{case}: {found:?}"),
            };
            assert!(
                text.contains(&blobs.display().to_string()),
                "{case}: {text}"
            );
            assert!(text.contains(&named), "{case}: {text}");
        }
        assert_eq!(std::fs::read(outside.path().join(hex)).unwrap(), b"outside");
    }
}
