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
//! * the directory is opened once as a capability ([`CacheDir`]) and every
//!   read, write, rename and mapping goes through it, so no name can reach
//!   outside it (`..`, an absolute path, a symlink out are refused), and only
//!   a `sha256:<hex>` digest makes a name at all;
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
use std::path::Path;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::cache_dir::{CacheDir, CacheDirError, sha256_hex};

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
#[derive(Debug)]
pub struct DiskCache {
    dir: CacheDir,
    engine_key: String,
}

/// How a lookup in the disk cache ended.
pub enum Lookup {
    Hit(Component),
    /// Not there, or not provably written by this host.
    Miss,
}

impl DiskCache {
    pub fn new(dir: &Path, engine: &Engine) -> Result<DiskCache, CacheDirError> {
        Ok(DiskCache {
            dir: CacheDir::open(dir)?,
            engine_key: engine_key(engine),
        })
    }

    /// The name of the artifact of the component with `digest`; only a
    /// sha256 digest names one, so nothing else reaches the filesystem.
    pub fn artifact_name(&self, digest: &str) -> Result<String, CacheDirError> {
        let Some(hex) = sha256_hex(digest) else {
            return Err(self.dir.error(
                digest,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "not a component digest (sha256:<64 lowercase hex digits>)",
                ),
            ));
        };
        Ok(format!("{hex}-{}.{ARTIFACT_EXTENSION}", self.engine_key))
    }

    fn sidecar_name(&self, digest: &str) -> Result<String, CacheDirError> {
        let artifact = self.artifact_name(digest)?;
        let stem = artifact.trim_end_matches(ARTIFACT_EXTENSION);
        Ok(format!("{stem}{SIDECAR_EXTENSION}"))
    }

    /// Loads the artifact of `digest` if its sidecar vouches for its bytes.
    /// An absent or damaged artifact is a miss; a name the cache refuses
    /// (not a digest, or a symlink leading out of the directory) is an error.
    pub fn load(&self, engine: &Engine, digest: &str) -> Result<Lookup, CacheDirError> {
        let name = self.artifact_name(digest)?;
        let expected = match self.dir.read_to_string(&self.sidecar_name(digest)?) {
            Ok(expected) => expected,
            Err(e) if e.is_not_found() => return Ok(Lookup::Miss),
            Err(e) => return Err(e),
        };
        let file = match self.dir.open_file(&name) {
            Ok(file) => file,
            Err(e) if e.is_not_found() => return Ok(Lookup::Miss),
            Err(e) => return Err(e),
        };
        let Ok(actual) = map_trusted(&file).map(|bytes| checksum(&bytes)) else {
            return Ok(Lookup::Miss);
        };
        let path = self.dir.path().join(&name);
        if actual != expected.trim() {
            tracing::warn!(path = %path.display(), "compiled artifact does not match its checksum; recompiling");
            return Ok(Lookup::Miss);
        }
        match deserialize_trusted(engine, file) {
            Ok(component) => Ok(Lookup::Hit(component)),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "compiled artifact cannot be loaded; recompiling");
                Ok(Lookup::Miss)
            }
        }
    }

    /// Writes the artifact and then its sidecar, each atomically.
    pub fn store(&self, digest: &str, artifact: &[u8]) -> Result<(), CacheDirError> {
        self.dir
            .write_atomically(&self.artifact_name(digest)?, artifact)?;
        self.dir
            .write_atomically(&self.sidecar_name(digest)?, checksum(artifact).as_bytes())
    }
}

/// What a sidecar holds: the length and the CRC-32 of the artifact bytes.
fn checksum(bytes: &[u8]) -> String {
    format!("{} crc32:{:08x}", bytes.len(), crc32fast::hash(bytes))
}

/// Maps an artifact of this host's cache to check its bytes.
#[allow(unsafe_code)]
fn map_trusted(file: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: a mapped file must not change while mapped. Only the host
    // writes the cache directory and it replaces files by rename, never
    // rewriting them in place (see the module documentation). Populating
    // the mapping up front costs less than faulting it in page by page.
    unsafe { memmap2::MmapOptions::new().populate().map(file) }
}

/// Maps an artifact this host wrote and whose checksum was just verified.
/// wasmtime maps a component only from a path; on Linux the open file's
/// entry in `/proc` names the very file the cache directory handed out, so
/// no name in the cache is resolved twice.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn deserialize_trusted(engine: &Engine, file: std::fs::File) -> wasmtime::Result<Component> {
    use std::os::fd::AsRawFd;
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    // SAFETY: wasmtime requires that the file be an artifact it produced and
    // that it not change while mapped. The caller verified the checksum the
    // host wrote alongside it, and only the host writes the cache directory
    // (see the module documentation); files are replaced by rename, never
    // rewritten in place, so a mapped file keeps its contents. `file` stays
    // open until wasmtime has opened its own handle through the path.
    unsafe { Component::deserialize_file(engine, path) }
}

/// Elsewhere there is no such name, so the checked bytes are copied.
#[cfg(not(target_os = "linux"))]
#[allow(unsafe_code)]
fn deserialize_trusted(engine: &Engine, file: std::fs::File) -> wasmtime::Result<Component> {
    let bytes = map_trusted(&file)?;
    // SAFETY: as on Linux; the bytes are copied out of the mapping.
    unsafe { Component::deserialize(engine, &bytes) }
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

    const HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn artifact_names_combine_component_and_engine() {
        let engine = Engine::default();
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path(), &engine).unwrap();
        let digest = format!("sha256:{HEX}");
        assert_eq!(
            cache.artifact_name(&digest).unwrap(),
            format!("{HEX}-{}.cwasm", engine_key(&engine))
        );
        assert_eq!(
            cache.sidecar_name(&digest).unwrap(),
            format!("{HEX}-{}.cwasm.crc32", engine_key(&engine))
        );
    }

    /// A path inside the cache, for damaging what the cache wrote.
    fn file(dir: &Path, cache: &DiskCache, digest: &str, sidecar: bool) -> std::path::PathBuf {
        let name = if sidecar {
            cache.sidecar_name(digest)
        } else {
            cache.artifact_name(digest)
        };
        dir.join(name.unwrap())
    }

    #[test]
    fn only_artifacts_matching_their_sidecar_are_loaded() {
        let engine = Engine::default();
        let wasm = crate::Builtin::AutoReady.wasm();
        let artifact = Component::new(&engine, wasm).unwrap().serialize().unwrap();
        let digest = digest(wasm);
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path(), &engine).unwrap();
        let artifact_path = file(dir.path(), &cache, &digest, false);
        let sidecar_path = file(dir.path(), &cache, &digest, true);

        let cases: [(&str, &dyn Fn(), bool); 7] = [
            ("intact", &|| {}, true),
            (
                "artifact bytes changed",
                &|| {
                    let mut bytes = std::fs::read(&artifact_path).unwrap();
                    let last = bytes.len() - 1;
                    bytes[last] ^= 1;
                    std::fs::write(&artifact_path, bytes).unwrap();
                },
                false,
            ),
            (
                "artifact truncated",
                &|| {
                    let bytes = std::fs::read(&artifact_path).unwrap();
                    std::fs::write(&artifact_path, &bytes[..bytes.len() / 2]).unwrap();
                },
                false,
            ),
            (
                "sidecar missing",
                &|| std::fs::remove_file(&sidecar_path).unwrap(),
                false,
            ),
            (
                "sidecar of other bytes",
                &|| std::fs::write(&sidecar_path, checksum(b"x")).unwrap(),
                false,
            ),
            (
                "artifact of the same length changed in the middle",
                &|| {
                    let mut bytes = std::fs::read(&artifact_path).unwrap();
                    let middle = bytes.len() / 2;
                    bytes[middle] = bytes[middle].wrapping_add(1);
                    std::fs::write(&artifact_path, bytes).unwrap();
                },
                false,
            ),
            (
                "artifact replaced by an empty file",
                &|| std::fs::write(&artifact_path, b"").unwrap(),
                false,
            ),
        ];
        for (name, damage, loads) in cases {
            cache.store(&digest, &artifact).unwrap();
            damage();
            let hit = matches!(cache.load(&engine, &digest), Ok(Lookup::Hit(_)));
            assert_eq!(hit, loads, "{name}");
        }
        let absent = format!("sha256:{HEX}");
        assert!(matches!(cache.load(&engine, &absent), Ok(Lookup::Miss)));
    }

    #[test]
    fn names_outside_the_cache_are_refused_with_the_cache_and_the_name() {
        let engine = Engine::default();
        let wasm = crate::Builtin::AutoReady.wasm();
        let artifact = Component::new(&engine, wasm).unwrap().serialize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path(), &engine).unwrap();
        // A symlink planted under a digest's name, pointing at an artifact
        // and sidecar outside the cache that would otherwise load.
        let planted = format!("sha256:{HEX}");
        let outside_cache = DiskCache::new(outside.path(), &engine).unwrap();
        outside_cache.store(&planted, &artifact).unwrap();
        for sidecar in [false, true] {
            std::os::unix::fs::symlink(
                file(outside.path(), &outside_cache, &planted, sidecar),
                file(dir.path(), &cache, &planted, sidecar),
            )
            .unwrap();
        }
        let absolute = format!("sha256:{}", outside.path().join(HEX).display());
        let cases = [
            (
                "a digest with ../",
                format!("sha256:../../{HEX}"),
                format!("sha256:../../{HEX}"),
            ),
            ("an absolute path", absolute.clone(), absolute),
            (
                "not sha256",
                format!("sha512:{HEX}"),
                format!("sha512:{HEX}"),
            ),
            (
                "a symlink inside pointing outside",
                planted.clone(),
                cache.sidecar_name(&planted).unwrap(),
            ),
        ];
        let cache_path = dir.path().display().to_string();
        for (case, digest, named) in cases {
            let text = match cache.load(&engine, &digest) {
                Err(e) => e.to_string(),
                Ok(Lookup::Hit(_)) => panic!("{case}: loaded"),
                Ok(Lookup::Miss) => panic!("{case}: a plain miss"),
            };
            assert!(text.contains(&cache_path), "{case}: {text}");
            assert!(text.contains(&named), "{case}: {text}");
        }
        for case in ["sha256:../x", "/etc/passwd", "sha256:"] {
            assert!(cache.store(case, &artifact).is_err(), "{case}");
        }
    }

    #[test]
    fn an_artifact_is_not_shared_across_engine_configurations() {
        let engine = Engine::default();
        let wasm = crate::Builtin::AutoReady.wasm();
        let artifact = Component::new(&engine, wasm).unwrap().serialize().unwrap();
        let dir = tempfile::tempdir().unwrap();
        DiskCache::new(dir.path(), &engine)
            .unwrap()
            .store(&digest(wasm), &artifact)
            .unwrap();
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let other = Engine::new(&config).unwrap();
        let cache = DiskCache::new(dir.path(), &other).unwrap();
        assert!(matches!(
            cache.load(&other, &digest(wasm)),
            Ok(Lookup::Miss)
        ));
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
