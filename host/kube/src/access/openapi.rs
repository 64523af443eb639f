//! Kinds' OpenAPI v3 schemas as the API server publishes them at
//! `/openapi/v3`, for functions that require them.
//!
//! The index (one document per group-version, each URL carrying a hash of
//! its content) is read at most every [`INDEX_TTL`]; a group-version's
//! document is fetched once per hash. A CRD that is installed or changed is
//! therefore served within the TTL, and nothing is fetched again while
//! nothing changed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::Client;
use plait_reconcile::ClusterError;
use serde_json::Value;

/// How long the index of group-versions is trusted.
pub const INDEX_TTL: Duration = Duration::from_secs(10);

/// The index: each group-version's path and its document's current URL.
struct Index {
    read: Instant,
    urls: HashMap<String, String>,
}

/// A cache of the API server's OpenAPI v3 documents.
#[derive(Default)]
pub struct OpenApi {
    index: Mutex<Option<Index>>,
    /// Documents by URL (hash included), so a changed group-version is
    /// fetched anew and an unchanged one never is.
    documents: Mutex<HashMap<String, Arc<Value>>>,
}

fn other(what: String) -> ClusterError {
    ClusterError::Other(what)
}

impl OpenApi {
    /// The schema of `apiVersion`/`kind`, marked with its
    /// `x-kubernetes-group-version-kind`; `None` when it is not served.
    pub async fn schema(
        &self,
        client: &Client,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<Value>, ClusterError> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let path = match group {
            "" => format!("api/{version}"),
            _ => format!("apis/{group}/{version}"),
        };
        let Some(url) = self.url(client, &path).await? else {
            return Ok(None);
        };
        let document = self.document(client, &url).await?;
        Ok(find(&document, group, version, kind).cloned())
    }

    async fn url(&self, client: &Client, path: &str) -> Result<Option<String>, ClusterError> {
        {
            let index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(index) = index.as_ref().filter(|i| i.read.elapsed() < INDEX_TTL) {
                return Ok(index.urls.get(path).cloned());
            }
        }
        let root: Value = get(client, "/openapi/v3").await?;
        let urls: HashMap<String, String> = root
            .get("paths")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(path, entry)| {
                let url = entry.get("serverRelativeURL")?.as_str()?;
                Some((path.clone(), url.to_string()))
            })
            .collect();
        let found = urls.get(path).cloned();
        *self.index.lock().unwrap_or_else(PoisonError::into_inner) = Some(Index {
            read: Instant::now(),
            urls,
        });
        Ok(found)
    }

    async fn document(&self, client: &Client, url: &str) -> Result<Arc<Value>, ClusterError> {
        if let Some(found) = self
            .documents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(url)
        {
            return Ok(found.clone());
        }
        let document = Arc::new(get::<Value>(client, url).await?);
        let mut documents = self
            .documents
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Older hashes of the same group-version are stale for good.
        let path = url.split('?').next().unwrap_or(url);
        documents.retain(|cached, _| cached.split('?').next() != Some(path));
        documents.insert(url.to_string(), document.clone());
        Ok(document)
    }
}

async fn get<T: serde::de::DeserializeOwned>(
    client: &Client,
    url: &str,
) -> Result<T, ClusterError> {
    let request = http::Request::get(url)
        .header(http::header::ACCEPT, "application/json")
        .body(Vec::new())
        .map_err(|e| other(format!("cannot build a request for {url}: {e}")))?;
    client
        .request::<T>(request)
        .await
        .map_err(|e| other(format!("cannot read OpenAPI v3 document {url}: {e}")))
}

/// The component schema marked as `group`/`version`/`kind`.
fn find<'a>(document: &'a Value, group: &str, version: &str, kind: &str) -> Option<&'a Value> {
    document
        .pointer("/components/schemas")?
        .as_object()?
        .values()
        .find(|schema| {
            schema
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .is_some_and(|gvks| {
                    gvks.iter().any(|gvk| {
                        gvk["group"] == group && gvk["version"] == version && gvk["kind"] == kind
                    })
                })
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_kind_is_found_by_its_group_version_kind() {
        let document = json!({"components": {"schemas": {
            "io.k8s.api.core.v1.ConfigMap": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}]},
            "io.k8s.api.core.v1.Secret": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Secret"}]},
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object"},
        }}});
        let cases = [
            (
                ("", "v1", "ConfigMap"),
                Some("io.k8s.api.core.v1.ConfigMap"),
            ),
            (("", "v1", "Secret"), Some("io.k8s.api.core.v1.Secret")),
            (("", "v2", "Secret"), None),
            (("apps", "v1", "ConfigMap"), None),
            (("", "v1", "ObjectMeta"), None),
        ];
        for ((group, version, kind), want) in cases {
            let found = find(&document, group, version, kind);
            let want = want.map(|name| &document["components"]["schemas"][name]);
            assert_eq!(found, want, "{group}/{version} {kind}");
        }
    }
}
