//! The validating admission webhook (`plait controller --webhook-address`).
//! At `/validate`, `plait validate`'s checks on what the API server is about
//! to store: a Composition is checked against the schemas of its XR and
//! composed kinds, an XR against its XRD, with the XRDs and CRDs the cluster
//! has (read again at most every [`CATALOG_TTL`]) and the built-in kinds; a
//! kind without a schema is admitted. At `/validate-no-usages`, the deletion
//! of a resource labelled `crossplane.io/in-use`, refused while a Usage or
//! ClusterUsage protects it (`plait_kube::refuse_deletion`). At
//! `/validate-usages`, a namespaced Usage that would protect a resource in
//! another namespace, or of a cluster-scoped kind, is refused.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use plait_validate::{Catalog, Status, Validator};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};

use crate::webhook_certificate::Pair;

/// How long the cluster's XRDs and CRDs are taken as read.
const CATALOG_TTL: Duration = Duration::from_secs(10);
/// The largest AdmissionReview read.
const MAX_REVIEW_BYTES: usize = 8 << 20;

/// The validator over the cluster's definitions, read at most every [`CATALOG_TTL`].
struct Validators {
    client: kube::Client,
    current: Mutex<Option<(Instant, Arc<Validator>)>>,
}

impl Validators {
    async fn get(&self) -> Result<Arc<Validator>> {
        if let Some((read, validator)) =
            &*self.current.lock().unwrap_or_else(PoisonError::into_inner)
            && read.elapsed() < CATALOG_TTL
        {
            return Ok(validator.clone());
        }
        let mut catalog = Catalog::builtin()?;
        for resource in [
            ApiResource {
                group: "apiextensions.k8s.io".into(),
                version: "v1".into(),
                api_version: "apiextensions.k8s.io/v1".into(),
                kind: "CustomResourceDefinition".into(),
                plural: "customresourcedefinitions".into(),
            },
            // Read as v1, every XRD carries its scope (v1's default is stored).
            ApiResource {
                group: "apiextensions.crossplane.io".into(),
                version: "v1".into(),
                api_version: "apiextensions.crossplane.io/v1".into(),
                kind: "CompositeResourceDefinition".into(),
                plural: "compositeresourcedefinitions".into(),
            },
        ] {
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
            let list = api
                .list(&ListParams::default())
                .await
                .with_context(|| format!("cannot list {}", resource.plural))?;
            for item in list.items {
                let mut value = serde_json::to_value(&item).context("cannot read a definition")?;
                value["apiVersion"] = json!(resource.api_version);
                value["kind"] = json!(resource.kind);
                // XR and claim CRDs are generated from XRDs: the XRDs say it.
                if let Err(error) = catalog.add_definition(&value) {
                    tracing::warn!(%error, "a definition's schemas are left out");
                }
            }
        }
        let validator = Arc::new(Validator::new(catalog));
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now(), validator.clone()));
        Ok(validator)
    }
}

/// What the webhook serves with.
pub enum Identity {
    /// `--webhook-cert-file` and `--webhook-key-file` (cert-manager's, or
    /// any other).
    Files { cert: PathBuf, key: PathBuf },
    /// The certificate plait manages (`webhook_certificate`).
    Managed(Pair),
}

impl Identity {
    fn tls_config(&self) -> Result<rustls::ServerConfig> {
        let (certs, key) = match self {
            Identity::Files { cert, key } => (
                CertificateDer::pem_file_iter(cert)
                    .with_context(|| format!("cannot read --webhook-cert-file {}", cert.display()))?
                    .collect::<Result<Vec<_>, _>>()
                    .with_context(|| {
                        format!(
                            "--webhook-cert-file {}: not PEM certificates",
                            cert.display()
                        )
                    })?,
                PrivateKeyDer::from_pem_file(key).with_context(|| {
                    format!("--webhook-key-file {}: no PEM private key", key.display())
                })?,
            ),
            Identity::Managed(pair) => (
                CertificateDer::pem_slice_iter(pair.cert_pem.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .context("the managed serving certificate is not PEM")?,
                PrivateKeyDer::from_pem_slice(pair.key_pem.as_bytes())
                    .context("the managed serving key is not PEM")?,
            ),
        };
        tls_config(certs, key)
    }
}

fn tls_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .context("cannot configure TLS")?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .context("the webhook's certificate and key do not make a TLS identity")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Serves `POST /validate` over TLS on `address` until `shutdown` resolves.
pub async fn serve(
    address: SocketAddr,
    identity: &Identity,
    client: kube::Client,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(identity.tls_config()?));
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on --webhook-address {address}"))?;
    tracing::info!(address = %listener.local_addr().unwrap_or(address), "serving the validating webhook at /validate, /validate-no-usages and /validate-usages");
    let validators = Arc::new(Validators {
        client,
        current: Mutex::new(None),
    });
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => accepted.context("cannot accept a webhook connection")?,
        };
        let acceptor = acceptor.clone();
        let validators = validators.clone();
        tokio::spawn(async move {
            let stream = match acceptor.accept(stream).await {
                Ok(stream) => stream,
                Err(error) => {
                    tracing::debug!(%error, "webhook TLS handshake failed");
                    return;
                }
            };
            let service = service_fn(move |request| {
                let validators = validators.clone();
                async move { Ok::<_, Infallible>(respond(request, &validators).await) }
            });
            if let Err(error) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(%error, "webhook connection ended with an error");
            }
        });
    }
}

fn reply(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = "application/json".parse() {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

/// What the webhook checks, by the path the API server posts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// `/validate`: Compositions and XRs against their schemas.
    Schemas,
    /// `/validate-no-usages`: the deletion of a resource labelled
    /// `crossplane.io/in-use`, refused while a Usage protects it.
    NoUsages,
    /// `/validate-usages`: a Usage created or updated, refused when it
    /// would protect a resource in another namespace or of a
    /// cluster-scoped kind.
    Usages,
}

impl Check {
    fn of(path: &str) -> Option<Check> {
        match path {
            "/validate" => Some(Check::Schemas),
            "/validate-no-usages" => Some(Check::NoUsages),
            "/validate-usages" => Some(Check::Usages),
            _ => None,
        }
    }
}

async fn respond(request: Request<Incoming>, validators: &Validators) -> Response<Full<Bytes>> {
    let check = match Check::of(request.uri().path()) {
        Some(check) if request.method() == Method::POST => check,
        _ => {
            return reply(
                StatusCode::NOT_FOUND,
                "{\"error\":\"POST /validate, /validate-no-usages or /validate-usages\"}".into(),
            );
        }
    };
    let body = match Limited::new(request.into_body(), MAX_REVIEW_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(error) => {
            return reply(
                StatusCode::BAD_REQUEST,
                json!({"error": error.to_string()}).to_string(),
            );
        }
    };
    let review: Value = match serde_json::from_slice(&body) {
        Ok(review) => review,
        Err(error) => {
            return reply(
                StatusCode::BAD_REQUEST,
                json!({"error": error.to_string()}).to_string(),
            );
        }
    };
    let uid = review
        .pointer("/request/uid")
        .cloned()
        .unwrap_or(Value::Null);
    let mut response = match check {
        Check::Schemas => check_schemas(&review, validators).await,
        Check::NoUsages => check_deletion(&review, &validators.client).await,
        Check::Usages => check_usage(&review, &validators.client).await,
    };
    response["uid"] = uid;
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    });
    reply(StatusCode::OK, review.to_string())
}

/// An AdmissionResponse (without its uid) refusing with `code`, the way
/// controller-runtime's `admission.Errored` does.
fn errored(code: u16, message: String) -> Value {
    json!({"allowed": false, "status": {"code": code, "message": message}})
}

/// A deletion of a resource a Usage protects is refused with 409 and
/// upstream's message as the status reason; the attempt is stamped on the
/// resource for `replayDeletion` (unless the deletion is a dry run).
async fn check_deletion(review: &Value, client: &kube::Client) -> Value {
    let operation = review
        .pointer("/request/operation")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if operation != "DELETE" {
        return errored(
            400,
            format!("unexpected operation \"{operation}\", expected \"DELETE\""),
        );
    }
    let Some(object) = review
        .pointer("/request/oldObject")
        .filter(|o| o.is_object())
    else {
        return errored(400, "the review has no oldObject".into());
    };
    let policy = review
        .pointer("/request/options/propagationPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Background");
    let dry_run = review.pointer("/request/dryRun") == Some(&Value::Bool(true));
    match plait_kube::refuse_deletion(client, object, policy, dry_run).await {
        Ok(None) => json!({"allowed": true}),
        Ok(Some(message)) => {
            let described = format!(
                "{} {}",
                object["kind"].as_str().unwrap_or_default(),
                object["metadata"]["name"].as_str().unwrap_or_default()
            );
            tracing::debug!(
                object = described,
                %message,
                "refused the deletion of a resource in use"
            );
            json!({"allowed": false, "status": {"code": 409, "reason": message}})
        }
        Err(error) => errored(
            500,
            format!("plait cannot find the Usages of the resource: {error}"),
        ),
    }
}

/// A namespaced Usage may protect only a resource in its own namespace.
async fn check_usage(review: &Value, client: &kube::Client) -> Value {
    let Some(usage) = review.pointer("/request/object").filter(|o| o.is_object()) else {
        return json!({"allowed": true});
    };
    // A Usage being deleted protects nothing new, and refusing its updates
    // would keep its finalizers on; an update that leaves `spec.of` as it
    // was introduces nothing either (the Usage may predate the webhook, and
    // the controller does not act on it).
    let old_of = review.pointer("/request/oldObject/spec/of");
    if usage.pointer("/metadata/deletionTimestamp").is_some()
        || (old_of.is_some() && old_of == usage.pointer("/spec/of"))
    {
        return json!({"allowed": true});
    }
    match plait_kube::refuse_usage(client, usage).await {
        Ok(None) => json!({"allowed": true}),
        Ok(Some(message)) => json!({"allowed": false, "status": {
            "code": 403, "reason": "Forbidden", "message": message,
        }}),
        Err(error) => errored(
            500,
            format!("plait cannot tell the scope of the used kind: {error}"),
        ),
    }
}

async fn check_schemas(review: &Value, validators: &Validators) -> Value {
    let verdict = match review.pointer("/request/object").filter(|o| o.is_object()) {
        None => Ok(()),
        Some(object) => match validators.get().await {
            Err(error) => Err(format!(
                "plait cannot read the cluster's schemas: {error:#}"
            )),
            Ok(validator) => {
                let old = review
                    .pointer("/request/oldObject")
                    .filter(|o| o.is_object());
                let outcome = validator.validate(object, old);
                match outcome.status {
                    Status::Invalid => Err(outcome
                        .findings
                        .iter()
                        .map(|f| f.message.clone())
                        .collect::<Vec<_>>()
                        .join("; ")),
                    Status::Valid | Status::MissingSchema => Ok(()),
                }
            }
        },
    };
    match verdict {
        Ok(()) => json!({"allowed": true}),
        Err(message) => json!({"allowed": false, "status": {
            "code": 422, "reason": "Invalid", "message": format!("plait: {message}"),
        }}),
    }
}
