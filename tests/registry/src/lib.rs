//! A throw-away OCI registry for tests: Debian's `docker-registry` (CNCF
//! distribution) on 127.0.0.1 with its storage in a temporary directory,
//! optionally behind htpasswd basic auth. Stopped, and its directory
//! removed, when dropped or when the test process exits, whichever comes
//! first: a registry kept in a `static` for a whole test binary (see
//! [`Registry::shared`]) is never dropped, so a small shell supervisor
//! stops it once the test process's end closes its standard input.

// Test support: a registry that cannot start is a failed test, said loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const REGISTRY_BINARY: &str = "/usr/bin/docker-registry";

/// Runs the registry (`$0 serve $1`) until standard input closes, then
/// stops it and removes its directory (`$2`).
const SUPERVISOR: &str = r#""$0" serve "$1" </dev/null & registry=$!
read -r _
kill "$registry" 2>/dev/null
wait "$registry"
rm -rf "$2""#;

pub struct Registry {
    /// The supervisor.
    child: Child,
    /// Closing it stops the registry.
    stdin: Option<ChildStdin>,
    /// `127.0.0.1:<port>`: the registry part of references.
    pub addr: String,
    dir: PathBuf,
}

impl Registry {
    /// A registry anyone may push to and pull from.
    pub fn start() -> Registry {
        Registry::launch(None)
    }

    /// A registry that only `user`/`password` may use.
    pub fn start_with_auth(user: &str, password: &str) -> Registry {
        Registry::launch(Some((user, password)))
    }

    /// One open registry for every test of the binary.
    pub fn shared() -> &'static Registry {
        static SHARED: OnceLock<Registry> = OnceLock::new();
        SHARED.get_or_init(Registry::start)
    }

    /// One registry for every test of the binary that only `user`/`password`
    /// may use; the first caller's credentials count.
    pub fn shared_with_auth(user: &str, password: &str) -> &'static Registry {
        static SHARED: OnceLock<Registry> = OnceLock::new();
        SHARED.get_or_init(|| Registry::start_with_auth(user, password))
    }

    fn launch(auth: Option<(&str, &str)>) -> Registry {
        assert!(
            Path::new(REGISTRY_BINARY).exists(),
            "{REGISTRY_BINARY} is missing: run `make test-deps` (apt-get install docker-registry apache2-utils)"
        );
        // The supervisor removes the directory.
        let dir = tempfile::tempdir().unwrap().keep();
        let storage = dir.join("storage");
        std::fs::create_dir_all(&storage).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: {addr}\n",
            storage.display()
        );
        if let Some((user, password)) = auth {
            let output = Command::new("htpasswd")
                .args(["-Bbn", user, password])
                .output()
                .expect("htpasswd (apache2-utils) is missing: run `make test-deps`");
            assert!(output.status.success(), "htpasswd failed: {output:?}");
            let htpasswd = dir.join("htpasswd");
            std::fs::write(&htpasswd, &output.stdout).unwrap();
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: plait-test\n    path: {}\n",
                htpasswd.display()
            ));
        }
        let config_path = dir.join("config.yml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(dir.join("registry.log")).unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg(REGISTRY_BINARY)
            .arg(&config_path)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut registry = Registry {
            child,
            stdin,
            addr,
            dir,
        };
        registry.wait_until_ready();
        registry
    }

    fn wait_until_ready(&mut self) {
        let started = Instant::now();
        loop {
            if let Ok(mut stream) = TcpStream::connect(&self.addr) {
                let request = format!("GET /v2/ HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr);
                let mut response = String::new();
                if stream.write_all(request.as_bytes()).is_ok()
                    && stream.read_to_string(&mut response).is_ok()
                    && response.starts_with("HTTP/1")
                {
                    return;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("docker-registry exited with {status}: {}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "docker-registry did not answer on {}: {}",
                self.addr,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the registry logged, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("registry.log")).unwrap_or_default()
    }

    /// Where the registry keeps the bytes of a blob.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.dir
            .join("storage/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// A reference to `repository:tag` in this registry.
    pub fn reference(&self, repository: &str, tag: &str) -> String {
        format!("{}/{repository}:{tag}", self.addr)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Closing standard input makes the supervisor stop the registry
        // and remove its directory; waiting means both are done.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
