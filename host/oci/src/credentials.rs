//! Registry credentials, read from Docker's `config.json` or from the
//! contents of a Kubernetes `kubernetes.io/dockerconfigjson` Secret (the
//! same `{"auths": {...}}` document). Credentials are data: nothing here
//! knows where they came from beyond a name for error messages.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use crate::error::Error;

/// A user name and password (or token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicAuth")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// Credentials by registry host (`host[:port]`); registries not listed are
/// reached anonymously.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keychain {
    entries: BTreeMap<String, BasicAuth>,
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// Docker Hub's key in `config.json`, and the host its API lives on.
const DOCKER_HUB_KEYS: [&str; 3] = ["index.docker.io", "docker.io", "registry-1.docker.io"];

impl Keychain {
    /// No credentials: every registry is reached anonymously.
    pub fn anonymous() -> Keychain {
        Keychain::default()
    }

    /// Credentials for one registry.
    pub fn with(mut self, registry: &str, auth: BasicAuth) -> Keychain {
        self.entries.insert(normalize_host(registry), auth);
        self
    }

    /// Parses a Docker `config.json` or the `.dockerconfigjson` key of a
    /// Kubernetes Secret. `source` names the document in errors.
    pub fn from_docker_config(source: &str, json: &[u8]) -> Result<Keychain, Error> {
        let config_error = |message: String| Error::Configuration {
            source_name: source.to_string(),
            message,
        };
        let config: DockerConfig = serde_json::from_slice(json)
            .map_err(|e| config_error(format!("not a Docker config document: {e}")))?;
        let mut keychain = Keychain::default();
        for (key, entry) in config.auths {
            let auth = match (entry.auth, entry.username, entry.password) {
                (Some(encoded), _, _) if !encoded.is_empty() => {
                    let decoded = STANDARD.decode(encoded.trim()).map_err(|e| {
                        config_error(format!("auths.{key}.auth is not base64: {e}"))
                    })?;
                    let decoded = String::from_utf8(decoded).map_err(|_| {
                        config_error(format!("auths.{key}.auth is not UTF-8 user:password"))
                    })?;
                    let (username, password) = decoded.split_once(':').ok_or_else(|| {
                        config_error(format!("auths.{key}.auth is not user:password"))
                    })?;
                    BasicAuth {
                        username: username.to_string(),
                        password: password.to_string(),
                    }
                }
                (_, Some(username), Some(password)) => BasicAuth { username, password },
                // Entries managed by a credential helper carry no secret here.
                _ => continue,
            };
            keychain.entries.insert(normalize_host(&key), auth);
        }
        Ok(keychain)
    }

    /// Reads `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`;
    /// no file means no credentials.
    pub fn from_default_docker_config() -> Result<Keychain, Error> {
        match default_docker_config_path() {
            Some(path) => Keychain::from_docker_config_file(&path),
            None => Ok(Keychain::default()),
        }
    }

    /// Reads a Docker config file; a missing file means no credentials.
    pub fn from_docker_config_file(path: &Path) -> Result<Keychain, Error> {
        match std::fs::read(path) {
            Ok(bytes) => Keychain::from_docker_config(&path.display().to_string(), &bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Keychain::default()),
            Err(e) => Err(Error::Configuration {
                source_name: path.display().to_string(),
                message: format!("cannot read: {e}"),
            }),
        }
    }

    /// Adds `other`'s entries; on the same registry, `other` wins.
    pub fn merge(mut self, other: Keychain) -> Keychain {
        self.entries.extend(other.entries);
        self
    }

    /// The credentials for a registry host, if any.
    pub fn get(&self, registry: &str) -> Option<&BasicAuth> {
        self.entries.get(&normalize_host(registry))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn default_docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker").join("config.json"))
}

/// `https://host:port/v1/` and `host:port` name the same registry.
fn normalize_host(key: &str) -> String {
    let key = key.trim();
    let without_scheme = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = without_scheme
        .split('/')
        .next()
        .unwrap_or(without_scheme)
        .to_ascii_lowercase();
    if DOCKER_HUB_KEYS.contains(&host.as_str()) {
        DOCKER_HUB_KEYS[0].to_string()
    } else {
        host
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn basic(username: &str, password: &str) -> BasicAuth {
        BasicAuth {
            username: username.into(),
            password: password.into(),
        }
    }

    #[test]
    fn docker_configs_yield_credentials_by_host() {
        let encoded = STANDARD.encode("alice:s3cr:et");
        let json = format!(
            r#"{{"auths": {{
                "registry.example.com:5000": {{"auth": "{encoded}"}},
                "https://index.docker.io/v1/": {{"auth": "{encoded}"}},
                "https://ghcr.io": {{"username": "bob", "password": "tok"}},
                "helper.example.com": {{}}
            }}, "credsStore": "desktop"}}"#
        );
        let keychain = Keychain::from_docker_config("config.json", json.as_bytes()).unwrap();
        let cases = [
            ("registry.example.com:5000", Some(basic("alice", "s3cr:et"))),
            ("REGISTRY.example.com:5000", Some(basic("alice", "s3cr:et"))),
            ("registry.example.com", None),
            ("docker.io", Some(basic("alice", "s3cr:et"))),
            ("registry-1.docker.io", Some(basic("alice", "s3cr:et"))),
            ("ghcr.io", Some(basic("bob", "tok"))),
            ("helper.example.com", None),
            ("quay.io", None),
        ];
        for (host, want) in cases {
            assert_eq!(keychain.get(host).cloned(), want, "{host}");
        }
    }

    #[test]
    fn malformed_docker_configs_name_the_source_and_the_entry() {
        let cases = [
            ("not json", "not a Docker config document"),
            (
                r#"{"auths": {"r.io": {"auth": "%%%"}}}"#,
                "auths.r.io.auth is not base64",
            ),
            (
                &format!(
                    r#"{{"auths": {{"r.io": {{"auth": "{}"}}}}}}"#,
                    STANDARD.encode("nocolon")
                ),
                "auths.r.io.auth is not user:password",
            ),
        ];
        for (json, want) in cases {
            let error = Keychain::from_docker_config("secret default/pull", json.as_bytes())
                .unwrap_err()
                .to_string();
            assert!(error.starts_with("secret default/pull: "), "{error}");
            assert!(error.contains(want), "{error}");
        }
    }

    #[test]
    fn merged_keychains_prefer_the_later_entry() {
        let a = Keychain::anonymous().with("r.io", basic("a", "1"));
        let b = Keychain::anonymous().with("https://r.io/", basic("b", "2"));
        assert_eq!(a.merge(b).get("r.io"), Some(&basic("b", "2")));
    }

    #[test]
    fn a_missing_docker_config_file_means_anonymous() {
        let dir = tempfile::tempdir().unwrap();
        let keychain = Keychain::from_docker_config_file(&dir.path().join("config.json")).unwrap();
        assert!(keychain.is_empty());
    }
}
