//! A directory the host owns (the compile cache, the blob cache), opened
//! once as a capability.
//!
//! Names in these caches come from digests, and a digest can come from a
//! registry or be handed over by a caller. Every access therefore goes
//! through a `cap_std::fs::Dir`, which resolves names beneath the directory
//! and refuses any that would leave it: `..`, an absolute path, or a symlink
//! whose target lies outside. A refused name is an error naming the cache and
//! the name; the directory itself is the only path opened with ambient
//! authority.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

/// A cache directory, opened once; every name is resolved beneath it.
#[derive(Debug)]
pub struct CacheDir {
    path: PathBuf,
    dir: Dir,
}

/// An access to a cache directory that failed or was refused.
#[derive(Debug, thiserror::Error)]
#[error("cache {}: cannot use {name:?}: {message}", path.display())]
pub struct CacheDirError {
    /// The cache directory.
    pub path: PathBuf,
    /// The name inside it.
    pub name: String,
    pub kind: io::ErrorKind,
    pub message: String,
}

impl CacheDirError {
    /// Whether the name is simply absent: a cache miss, not a fault.
    pub fn is_not_found(&self) -> bool {
        self.kind == io::ErrorKind::NotFound
    }
}

/// The hex of a `sha256:<64 lowercase hex>` digest, the only digests cache
/// names are made of; `None` for anything else.
pub fn sha256_hex(digest: &str) -> Option<&str> {
    let hex = digest.strip_prefix("sha256:")?;
    let valid = hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    valid.then_some(hex)
}

/// Makes temporary names unique within this process; the process id makes
/// them unique across processes sharing the directory.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl CacheDir {
    /// Creates `path` if needed and opens it.
    pub fn open(path: &Path) -> Result<CacheDir, CacheDirError> {
        let error = |e: io::Error| CacheDirError::new(path, ".", e);
        std::fs::create_dir_all(path).map_err(error)?;
        let dir = Dir::open_ambient_dir(path, ambient_authority()).map_err(error)?;
        Ok(CacheDir {
            path: path.to_path_buf(),
            dir,
        })
    }

    /// The subdirectory `name`, created if needed.
    pub fn subdir(&self, name: &str) -> Result<CacheDir, CacheDirError> {
        let error = |e| self.error(name, e);
        self.dir.create_dir_all(name).map_err(error)?;
        let dir = self.dir.open_dir(name).map_err(error)?;
        Ok(CacheDir {
            path: self.path.join(name),
            dir,
        })
    }

    /// Where the directory is, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An error about `name` in this directory, e.g. a name refused before
    /// it reached the filesystem.
    pub fn error(&self, name: &str, error: io::Error) -> CacheDirError {
        CacheDirError::new(&self.path, name, error)
    }

    pub fn read(&self, name: &str) -> Result<Vec<u8>, CacheDirError> {
        self.dir.read(name).map_err(|e| self.error(name, e))
    }

    pub fn read_to_string(&self, name: &str) -> Result<String, CacheDirError> {
        self.dir
            .read_to_string(name)
            .map_err(|e| self.error(name, e))
    }

    /// Opens `name` for reading, as a `std` file so it can be mapped.
    pub fn open_file(&self, name: &str) -> Result<std::fs::File, CacheDirError> {
        self.dir
            .open(name)
            .map(cap_std::fs::File::into_std)
            .map_err(|e| self.error(name, e))
    }

    pub fn remove(&self, name: &str) -> Result<(), CacheDirError> {
        self.dir.remove_file(name).map_err(|e| self.error(name, e))
    }

    /// Writes `bytes` to a temporary name, flushes them to disk, and renames
    /// that over `name`, so a reader sees the old file or the whole new one.
    pub fn write_atomically(&self, name: &str, bytes: &[u8]) -> Result<(), CacheDirError> {
        let temp = format!(
            ".tmp-{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let written = self
            .write_new(&temp, bytes)
            .and_then(|()| self.dir.rename(&temp, &self.dir, name));
        if let Err(e) = written {
            // The temporary file is ours alone; failing to remove it leaves
            // litter, not a wrong cache entry.
            let _ = self.dir.remove_file(&temp);
            return Err(self.error(name, e));
        }
        Ok(())
    }

    fn write_new(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut file = self
            .dir
            .open_with(name, OpenOptions::new().write(true).create_new(true))?;
        file.write_all(bytes)?;
        file.sync_all()
    }
}

impl CacheDirError {
    fn new(path: &Path, name: &str, error: io::Error) -> CacheDirError {
        CacheDirError {
            path: path.to_path_buf(),
            name: name.to_string(),
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_directory_are_refused_with_the_cache_and_name() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"secret").unwrap();
        let root = tempfile::tempdir().unwrap();
        let cache = CacheDir::open(&root.path().join("cache")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            root.path().join("cache/link"),
        )
        .unwrap();
        std::os::unix::fs::symlink("../../", root.path().join("cache/up")).unwrap();
        let absolute = outside.path().join("secret").display().to_string();

        // (case, name, whether a write is refused): writing over a symlink
        // replaces the link itself, inside the cache, so it is allowed.
        let cases = [
            ("parent", "../cache/x".to_string(), true),
            ("parent of the parent", "../../etc/passwd".to_string(), true),
            ("absolute", absolute, true),
            (
                "through a symlink to a parent",
                "up/etc/passwd".to_string(),
                true,
            ),
            ("symlink to a file outside", "link".to_string(), false),
        ];
        for (case, name, write_refused) in cases {
            let err = cache.read(&name).expect_err(case);
            let text = err.to_string();
            assert!(!err.is_not_found(), "{case}: {text}");
            assert!(
                text.contains(&root.path().join("cache").display().to_string()),
                "{case}: {text}"
            );
            assert!(text.contains(&name), "{case}: {text}");
            assert!(cache.open_file(&name).is_err(), "{case}");
            let written = cache.write_atomically(&name, b"x");
            assert_eq!(written.is_err(), write_refused, "{case}: {written:?}");
        }
        assert_eq!(cache.read("link").unwrap(), b"x");
        assert_eq!(
            std::fs::read(outside.path().join("secret")).unwrap(),
            b"secret"
        );
    }

    #[test]
    fn writes_round_trip_and_replace_whole_files() {
        let root = tempfile::tempdir().unwrap();
        let cache = CacheDir::open(root.path()).unwrap().subdir("sub").unwrap();
        let cases: [&[u8]; 3] = [b"first", b"", b"a longer second version"];
        for bytes in cases {
            cache.write_atomically("entry", bytes).unwrap();
            assert_eq!(cache.read("entry").unwrap(), bytes);
        }
        let names: Vec<_> = std::fs::read_dir(root.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["entry"], "no temporary file is left behind");
        cache.remove("entry").unwrap();
        assert!(cache.read("entry").unwrap_err().is_not_found());
    }

    #[test]
    fn only_sha256_digests_name_cache_entries() {
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let valid = format!("sha256:{hex}");
        let cases = [
            (valid.as_str(), Some(hex)),
            ("sha256:../../etc/passwd", None),
            ("sha256:/etc/passwd", None),
            ("sha256:abcd", None),
            ("sha512:00", None),
            (hex, None),
            ("", None),
        ];
        for (digest, expected) in cases {
            assert_eq!(sha256_hex(digest), expected, "{digest}");
        }
        assert_eq!(
            sha256_hex(&valid.to_uppercase().replace("SHA256", "sha256")),
            None
        );
    }
}
