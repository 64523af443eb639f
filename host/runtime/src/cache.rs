//! The on-disk cache of compiled components.
//!
//! Trust model: loading a compiled artifact maps native code into the
//! process, so an artifact must come from this host. The cache directory
//! belongs to the host alone (nothing else, in particular no function author,
//! may write to it). Within that model the checks here guard against
//! artifacts this host did not finish writing or that changed afterwards
//! (a crash mid-write, disk corruption, an operator copying files around):
//!
//! * an artifact is named `<sha256 of the component>-<engine hash>.cwasm`,
//!   so it is only ever looked up for the exact component bytes and the exact
//!   engine configuration (wasmtime version, compiler flags) that produced it;
//! * it is written to a temporary file and renamed into place, so a reader
//!   never sees a partial file;
//! * a `.crc32` sidecar with the length and CRC-32 of the artifact bytes is
//!   written after it, and the artifact is loaded only when its bytes still
//!   match. Anything else is compiled again and rewritten.
//!
//! The checksum is not a signature: someone who can write the directory can
//! write both files. Keeping others out of the directory is the operator's
//! job. What it catches is damage, and CRC-32 catches that at memory speed:
//! a cached load of a 35 MB artifact (a Python or JavaScript function) checks
//! it in a few milliseconds, where SHA-256 took longer than the rest of the
//! load together. The artifact is mapped, not read, so checking it copies
//! nothing and its pages are the ones wasmtime maps next.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

const ARTIFACT_EXTENSION: &str = "cwasm";
const SIDECAR_EXTENSION: &str = "cwasm.crc32";

/// `sha256:<hex>` of some bytes: how modules are named everywhere.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Feeds a `Hash` value into SHA-256, so the engine's compatibility hash
/// becomes a stable name rather than a per-process `u64`.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(first)
    }
}

/// Hex of the engine's precompile compatibility hash: two engines with the
/// same value can load each other's artifacts.
pub fn engine_key(engine: &Engine) -> String {
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hex::encode(&hasher.0.finalize()[..16])
}

/// A directory of compiled components for one engine configuration.
#[derive(Debug, Clone)]
pub struct DiskCache {
    dir: PathBuf,
    engine_key: String,
}

/// How a lookup in the disk cache ended.
pub enum Lookup {
    Hit(Component),
    /// Not there, or not provably written by this host.
    Miss,
}

impl DiskCache {
    pub fn new(dir: PathBuf, engine: &Engine) -> std::io::Result<DiskCache> {
        std::fs::create_dir_all(&dir)?;
        Ok(DiskCache {
            dir,
            engine_key: engine_key(engine),
        })
    }

    /// Where the artifact of the component with `digest` lives.
    pub fn artifact_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.dir
            .join(format!("{hex}-{}.{ARTIFACT_EXTENSION}", self.engine_key))
    }

    fn sidecar_path(&self, digest: &str) -> PathBuf {
        self.artifact_path(digest).with_extension(SIDECAR_EXTENSION)
    }

    /// Loads the artifact of `digest` if its sidecar vouches for its bytes.
    pub fn load(&self, engine: &Engine, digest: &str) -> Lookup {
        let path = self.artifact_path(digest);
        let Ok(expected) = std::fs::read_to_string(self.sidecar_path(digest)) else {
            return Lookup::Miss;
        };
        let Ok(actual) = map_trusted(&path).map(|bytes| checksum(&bytes)) else {
            return Lookup::Miss;
        };
        if actual != expected.trim() {
            tracing::warn!(path = %path.display(), "compiled artifact does not match its checksum; recompiling");
            return Lookup::Miss;
        }
        match deserialize_trusted(engine, &path) {
            Ok(component) => Lookup::Hit(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "compiled artifact cannot be loaded; recompiling");
                Lookup::Miss
            }
        }
    }

    /// Writes the artifact and then its sidecar, each atomically.
    pub fn store(&self, digest: &str, artifact: &[u8]) -> std::io::Result<()> {
        write_atomically(&self.artifact_path(digest), artifact)?;
        write_atomically(&self.sidecar_path(digest), checksum(artifact).as_bytes())
    }
}

/// What a sidecar holds: the length and the CRC-32 of the artifact bytes.
fn checksum(bytes: &[u8]) -> String {
    format!("{} crc32:{:08x}", bytes.len(), crc32fast::hash(bytes))
}

/// Maps an artifact of this host's cache to check its bytes.
#[allow(unsafe_code)]
fn map_trusted(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = std::fs::File::open(path)?;
    // SAFETY: a mapped file must not change while mapped. Only the host
    // writes the cache directory and it replaces files by rename, never
    // rewriting them in place (see the module documentation). Populating
    // the mapping up front costs less than faulting it in page by page.
    unsafe { memmap2::MmapOptions::new().populate().map(&file) }
}

/// Maps an artifact this host wrote and whose checksum was just verified.
#[allow(unsafe_code)]
fn deserialize_trusted(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: wasmtime requires that the file be an artifact it produced and
    // that it not change while mapped. The caller verified the checksum the
    // host wrote alongside it, and only the host writes the cache directory
    // (see the module documentation); files are replaced by rename, never
    // rewritten in place, so a mapped file keeps its contents.
    unsafe { Component::deserialize_file(engine, path) }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_prefixed_sha256_hex() {
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn artifact_names_combine_component_and_engine() {
        let engine = Engine::default();
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path().to_path_buf(), &engine).unwrap();
        let path = cache.artifact_path("sha256:abcd");
        let name = path.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, format!("abcd-{}.cwasm", engine_key(&engine)));
        assert_eq!(
            cache.sidecar_path("sha256:abcd").file_name().unwrap(),
            format!("abcd-{}.cwasm.crc32", engine_key(&engine)).as_str()
        );
    }

    #[test]
    fn only_artifacts_matching_their_sidecar_are_loaded() {
        let engine = Engine::default();
        let wasm = crate::Builtin::AutoReady.wasm();
        let artifact = Component::new(&engine, wasm).unwrap().serialize().unwrap();
        let digest = digest(wasm);
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path().to_path_buf(), &engine).unwrap();

        type Damage = fn(&DiskCache, &str);
        let cases: [(&str, Damage, bool); 7] = [
            ("intact", |_, _| {}, true),
            (
                "artifact bytes changed",
                |c, d| {
                    let path = c.artifact_path(d);
                    let mut bytes = std::fs::read(&path).unwrap();
                    let last = bytes.len() - 1;
                    bytes[last] ^= 1;
                    std::fs::write(path, bytes).unwrap();
                },
                false,
            ),
            (
                "artifact truncated",
                |c, d| {
                    let path = c.artifact_path(d);
                    let bytes = std::fs::read(&path).unwrap();
                    std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
                },
                false,
            ),
            (
                "sidecar missing",
                |c, d| std::fs::remove_file(c.sidecar_path(d)).unwrap(),
                false,
            ),
            (
                "sidecar of other bytes",
                |c, d| std::fs::write(c.sidecar_path(d), checksum(b"x")).unwrap(),
                false,
            ),
            (
                "artifact of the same length changed in the middle",
                |c, d| {
                    let path = c.artifact_path(d);
                    let mut bytes = std::fs::read(&path).unwrap();
                    let middle = bytes.len() / 2;
                    bytes[middle] = bytes[middle].wrapping_add(1);
                    std::fs::write(path, bytes).unwrap();
                },
                false,
            ),
            (
                "artifact replaced by an empty file",
                |c, d| std::fs::write(c.artifact_path(d), b"").unwrap(),
                false,
            ),
        ];
        for (name, damage, loads) in cases {
            cache.store(&digest, &artifact).unwrap();
            damage(&cache, &digest);
            let hit = matches!(cache.load(&engine, &digest), Lookup::Hit(_));
            assert_eq!(hit, loads, "{name}");
        }
        assert!(matches!(cache.load(&engine, "sha256:0000"), Lookup::Miss));
    }

    #[test]
    fn an_artifact_is_not_shared_across_engine_configurations() {
        let engine = Engine::default();
        let wasm = crate::Builtin::AutoReady.wasm();
        let artifact = Component::new(&engine, wasm).unwrap().serialize().unwrap();
        let dir = tempfile::tempdir().unwrap();
        DiskCache::new(dir.path().to_path_buf(), &engine)
            .unwrap()
            .store(&digest(wasm), &artifact)
            .unwrap();
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let other = Engine::new(&config).unwrap();
        let cache = DiskCache::new(dir.path().to_path_buf(), &other).unwrap();
        assert!(matches!(cache.load(&other, &digest(wasm)), Lookup::Miss));
    }

    #[test]
    fn the_engine_key_follows_the_engine_configuration() {
        let default = Engine::default();
        let same = Engine::default();
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let different = Engine::new(&config).unwrap();
        assert_eq!(engine_key(&default), engine_key(&same));
        assert_ne!(engine_key(&default), engine_key(&different));
        assert_eq!(engine_key(&default).len(), 32);
    }
}
