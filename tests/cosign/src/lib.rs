//! cosign for tests: the binary `build-cosign.sh` builds from cosign's Go
//! module at a pinned version and caches under `~/.cache/plait/`, and key
//! pairs it generates. Tests run it against the test registry on loopback
//! with the transparency log off: there is no Rekor to reach.

// Test support: a cosign that cannot run is a failed test, said loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The script that builds (or finds) cosign; it prints the binary's path.
const BUILD_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/build-cosign.sh");

/// The password every generated private key is encrypted with.
pub const PASSWORD: &str = "plait-test-password";

/// The cosign binary, built first if it is not cached yet.
pub fn cosign() -> &'static Path {
    static COSIGN: OnceLock<PathBuf> = OnceLock::new();
    COSIGN.get_or_init(|| {
        let listed = Command::new("bash")
            .args([BUILD_SCRIPT, "--bin"])
            .output()
            .expect("build-cosign.sh runs");
        let path = PathBuf::from(String::from_utf8_lossy(&listed.stdout).trim());
        if path.is_file() {
            return path;
        }
        eprintln!(
            "plait-testcosign: building cosign with {BUILD_SCRIPT} (a cold build takes minutes)"
        );
        let built = Command::new("bash")
            .arg(BUILD_SCRIPT)
            .stdout(Stdio::null())
            .status()
            .expect("build-cosign.sh runs");
        assert!(built.success(), "{BUILD_SCRIPT} failed: {built}");
        path
    })
}

/// A cosign key pair in its own directory: `cosign.key` (encrypted with
/// [`PASSWORD`]) and `cosign.pub`.
pub struct KeyPair {
    pub dir: tempfile::TempDir,
}

impl KeyPair {
    pub fn generate() -> KeyPair {
        let dir = tempfile::tempdir().unwrap();
        let output = run(dir.path(), &["generate-key-pair"]);
        assert!(
            output.status.success(),
            "cosign generate-key-pair: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        KeyPair { dir }
    }

    pub fn private_key(&self) -> PathBuf {
        self.dir.path().join("cosign.key")
    }

    pub fn public_key(&self) -> PathBuf {
        self.dir.path().join("cosign.pub")
    }

    pub fn public_pem(&self) -> String {
        std::fs::read_to_string(self.public_key()).unwrap()
    }
}

/// Runs cosign in `dir` with the test password, offline: no transparency
/// log, plain HTTP to the loopback registry, and a home of its own so no
/// user configuration or TUF cache is read.
pub fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(cosign())
        .args(args)
        .current_dir(dir)
        .env("COSIGN_PASSWORD", PASSWORD)
        .env("HOME", dir)
        .env("DOCKER_CONFIG", dir.join("docker"))
        .env("TUF_ROOT", dir.join("tuf"))
        .env("SIGSTORE_NO_CACHE", "true")
        .stdin(Stdio::null())
        .output()
        .expect("cosign runs")
}

/// `cosign sign --key KEY REF` without a transparency log entry.
pub fn sign(key: &KeyPair, reference: &str) -> Output {
    run(
        key.dir.path(),
        &[
            "sign",
            "--key",
            key.private_key().to_str().unwrap(),
            "--tlog-upload=false",
            "--allow-insecure-registry",
            "--allow-http-registry",
            "--yes",
            reference,
        ],
    )
}

/// `cosign verify --key PUB REF` without a transparency log.
pub fn verify(key: &KeyPair, reference: &str) -> Output {
    run(
        key.dir.path(),
        &[
            "verify",
            "--key",
            key.public_key().to_str().unwrap(),
            "--insecure-ignore-tlog=true",
            "--allow-insecure-registry",
            "--allow-http-registry",
            reference,
        ],
    )
}
