//! A throw-away OCI registry for tests: Debian's `docker-registry` (CNCF
//! distribution) on 127.0.0.1 with its storage in a temporary directory,
//! optionally behind htpasswd basic auth. Stopped, and its directory
//! removed, when dropped or when the test process exits, whichever comes
//! first: a registry kept in a `static` for a whole test binary (see
//! [`Registry::shared`]) is never dropped, so a small shell supervisor
//! stops it once the test process's end closes its standard input.
//!
//! Also the images tests push: tar layers, a project build's parts (for
//! `plait_oci::Client::push_image`), and KCL modules laid out as `kcl mod
//! push` lays them out, pushed over the registry's HTTP API as is.

// Test support: a registry that cannot start is a failed test, said loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
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
    /// The `Authorization` header of a registry that asks for credentials.
    authorization: Option<String>,
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
        let authorization = auth.map(|(user, password)| {
            use base64::Engine;
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            format!("Basic {encoded}")
        });
        let mut registry = Registry {
            child,
            stdin,
            addr,
            dir,
            authorization,
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

/// A tar of `files` (path, text), gzipped when `gzip`.
pub fn tar(files: &[(&str, &str)], gzip: bool) -> Vec<u8> {
    let mut archive = tar::Builder::new(Vec::new());
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        archive
            .append_data(&mut header, path, text.as_bytes())
            .unwrap();
    }
    let plain = archive.into_inner().unwrap();
    if !gzip {
        return plain;
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&plain).unwrap();
    encoder.finish().unwrap()
}

/// A gzipped tar layer of `files` (path in the image, text).
pub fn tar_layer(files: &[(&str, &str)]) -> Vec<u8> {
    tar(files, true)
}

/// The media type of gzipped image layers.
pub const GZIP_LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
pub const IMAGE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";

/// An image's config and layers (media type, bytes, annotations), as
/// `plait_oci::Client::push_image` takes them.
pub struct ImageParts {
    pub config: Vec<u8>,
    pub layers: Vec<(&'static str, Vec<u8>, BTreeMap<String, String>)>,
}

/// A project build of an embedded KCL function, as `up project build`
/// pushes one: function-kcl's runtime layer, a layer with `src` (paths
/// relative to the function's directory) at `/src`, and Crossplane's
/// package layer (annotated `io.crossplane.xpkg: base`), with `env` in
/// the image config.
pub fn project_build(env: &[&str], src: &[(&str, &str)]) -> ImageParts {
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": env, "Entrypoint": ["/function"]},
        "rootfs": {"type": "layers", "diff_ids": []},
    })
    .to_string()
    .into_bytes();
    let src: Vec<(String, &str)> = src
        .iter()
        .map(|(path, text)| (format!("src/{path}"), *text))
        .collect();
    let src: Vec<(&str, &str)> = src.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    let package = BTreeMap::from([("io.crossplane.xpkg".to_string(), "base".to_string())]);
    ImageParts {
        config,
        layers: vec![
            (
                GZIP_LAYER,
                tar_layer(&[("function", "#!/bin/false\n")]),
                BTreeMap::new(),
            ),
            (GZIP_LAYER, tar_layer(&src), BTreeMap::new()),
            (
                GZIP_LAYER,
                tar_layer(&[(
                    "package.yaml",
                    "apiVersion: meta.pkg.crossplane.io/v1\nkind: Function\nmetadata: {name: compose}\n",
                )]),
                package,
            ),
        ],
    }
}

/// A KCL package to push as `kcl mod push` does.
pub struct KclModule<'a> {
    pub name: &'a str,
    pub version: &'a str,
    /// Its files (path in the package, text), `kcl.mod` among them.
    pub files: &'a [(&'a str, &'a str)],
    /// kpm 0.13 and later push a gzipped tar; earlier ones a plain tar.
    pub gzip: bool,
}

impl KclModule<'_> {
    /// The layer's media type, which kpm also writes as the manifest's
    /// `artifactType`.
    pub fn media_type(&self) -> &'static str {
        if self.gzip {
            GZIP_LAYER
        } else {
            "application/vnd.oci.image.layer.v1.tar"
        }
    }
}

/// The sha256 digest of `bytes`, as registries name blobs.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

impl Registry {
    /// Pushes `module` to `repository:tag` laid out as `kcl mod push`
    /// lays it out (ORAS's image manifest with an empty config, one tar
    /// layer titled `<name>_<version>.tgz`, `org.kcllang.package.*`
    /// annotations); returns the manifest digest.
    pub fn push_kcl_module(&self, repository: &str, tag: &str, module: &KclModule) -> String {
        let layer = tar(module.files, module.gzip);
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "artifactType": module.media_type(),
            "config": {
                "mediaType": "application/vnd.oci.empty.v1+json",
                "digest": digest(b"{}"), "size": 2, "data": "e30=",
            },
            "layers": [{
                "mediaType": module.media_type(),
                "digest": digest(&layer), "size": layer.len(),
                "annotations": {"org.opencontainers.image.title": format!("{}_{}.tgz", module.name, module.version)},
            }],
            "annotations": {
                "org.kcllang.package.name": module.name,
                "org.kcllang.package.version": module.version,
                "org.opencontainers.image.created": "2024-01-01T00:00:00Z",
            },
        });
        self.push_manifest(
            repository,
            tag,
            "application/vnd.oci.image.manifest.v1+json",
            &serde_json::to_vec(&manifest).unwrap(),
            &[b"{}".to_vec(), layer],
        )
    }

    /// Pushes `blobs`, then `manifest` (of `media_type`) as
    /// `repository:tag`, over the registry's HTTP API (with the
    /// registry's own credentials when it asks for some); returns the
    /// manifest's digest.
    pub fn push_manifest(
        &self,
        repository: &str,
        tag: &str,
        media_type: &str,
        manifest: &[u8],
        blobs: &[Vec<u8>],
    ) -> String {
        for blob in blobs {
            // An upload session, then the blob in one PUT.
            let path = format!("/v2/{repository}/blobs/uploads/");
            let (status, head) = self.request("POST", &path, "application/octet-stream", b"");
            assert_eq!(status, 202, "POST {path}: {head}\n{}", self.log());
            let location = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("location")
                        .then(|| value.trim().to_string())
                })
                .unwrap_or_else(|| panic!("POST {path}: no Location in {head}"));
            let location = location
                .strip_prefix(&format!("http://{}", self.addr))
                .unwrap_or(&location);
            let separator = if location.contains('?') { '&' } else { '?' };
            let upload = format!("{location}{separator}digest={}", digest(blob));
            let (status, head) = self.request("PUT", &upload, "application/octet-stream", blob);
            assert_eq!(status, 201, "PUT {upload}: {head}\n{}", self.log());
        }
        let path = format!("/v2/{repository}/manifests/{tag}");
        let (status, head) = self.request("PUT", &path, media_type, manifest);
        assert_eq!(status, 201, "PUT {path}: {head}\n{}", self.log());
        digest(manifest)
    }

    /// One HTTP request with `body`; its status code and response head.
    fn request(&self, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let authorization = self
            .authorization
            .as_ref()
            .map(|value| format!("Authorization: {value}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{authorization}Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let response = String::from_utf8_lossy(&response);
        let head = response
            .split("\r\n\r\n")
            .next()
            .unwrap_or_default()
            .to_string();
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("{method} {path}: no status in {response:?}"));
        (status, head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kcl_modules_are_pushed_as_kcl_mod_push_lays_them_out_with_or_without_credentials() {
        for registry in [
            Registry::start(),
            Registry::start_with_auth("kcl", "s3cret"),
        ] {
            let files = [
                ("kcl.mod", "[package]\nname = \"m\"\n"),
                ("main.k", "a = 1\n"),
            ];
            let pushed = registry.push_kcl_module(
                "kcl/m",
                "0.1.0",
                &KclModule {
                    name: "m",
                    version: "0.1.0",
                    files: &files,
                    gzip: true,
                },
            );
            let manifest: serde_json::Value =
                serde_json::from_slice(&std::fs::read(registry.blob_path(&pushed)).unwrap())
                    .unwrap();
            let layer = tar(&files, true);
            assert_eq!(manifest["artifactType"], GZIP_LAYER);
            assert_eq!(manifest["layers"][0]["digest"], digest(&layer));
            assert_eq!(
                manifest["annotations"]["org.kcllang.package.name"], "m",
                "{manifest}"
            );
            assert_eq!(
                std::fs::read(registry.blob_path(&digest(&layer))).unwrap(),
                layer
            );
        }
    }
}
