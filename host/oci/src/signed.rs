//! Reading and writing cosign signatures in a registry: the
//! `sha256-<hex>.sig` tag beside an artifact, checked against trusted keys
//! before anything compiles the artifact, and written by `push --sign`.

use std::collections::BTreeMap;
use std::sync::PoisonError;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use oci_client::RegistryOperation;
use serde::{Deserialize, Serialize};

use crate::signature::{
    self, Authority, Payload, SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, SignatureLayer,
    SigningKey,
};
use crate::{Client, Error, Keychain, MAX_METADATA_BYTES, Session, layout};

const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// A signature manifest: an OCI image whose layers are signed payloads.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SignatureManifest {
    #[serde(rename = "schemaVersion")]
    schema_version: u32,
    #[serde(rename = "mediaType", default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    config: layout::Descriptor,
    layers: Vec<SignatureDescriptor>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SignatureDescriptor {
    #[serde(rename = "mediaType")]
    media_type: String,
    size: u64,
    digest: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<String, String>,
}

impl SignatureDescriptor {
    fn descriptor(&self) -> layout::Descriptor {
        layout::Descriptor {
            media_type: self.media_type.clone(),
            digest: self.digest.clone(),
            size: self.size,
            annotations: BTreeMap::new(),
        }
    }
}

/// An artifact whose signature verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The manifest digest the signature vouches for.
    pub digest: String,
    /// The authority whose key verified it.
    pub authority: String,
    /// Whether this verdict was remembered from an earlier check.
    pub remembered: bool,
}

/// The result of signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// `repo:sha256-<hex>.sig`, where the signature was written.
    pub signature_reference: String,
    /// Whether the signature was already there.
    pub unchanged: bool,
}

impl Client {
    /// Checks that the artifact `digest` in the repository of `reference`
    /// carries a cosign signature, by one of `authorities`, whose payload
    /// names `digest`. A digest verified with the same keys before is not
    /// checked again; a refusal is not remembered, so a signature added
    /// later is found.
    pub async fn verify_signature(
        &self,
        reference: &str,
        digest: &str,
        authorities: &[Authority],
        keychain: &Keychain,
    ) -> Result<Verified, Error> {
        let verdict = format!("{digest}|{}", signature::authorities_key(authorities));
        if let Some(authority) = self
            .verdicts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&verdict)
        {
            return Ok(Verified {
                digest: digest.to_string(),
                authority: authority.clone(),
                remembered: true,
            });
        }
        let tag_reference = signature_reference(reference, digest)?;
        let session = self.session(&tag_reference, keychain)?;
        let layers = match self.signature_manifest(&session).await? {
            None => Vec::new(),
            Some(manifest) => self.signature_layers(&session, &manifest).await?,
        };
        let authority =
            signature::check(digest, &tag_reference, &layers, authorities).map_err(|refusal| {
                Error::Signature {
                    reference: format!("{}@{digest}", repository_of(reference).unwrap_or_default()),
                    refusal,
                }
            })?;
        self.verdicts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(verdict, authority.clone());
        Ok(Verified {
            digest: digest.to_string(),
            authority,
            remembered: false,
        })
    }

    /// Signs the artifact `digest` in the repository of `reference` with
    /// `key` and writes the signature where cosign keeps it, beside any
    /// signatures already there.
    pub async fn sign(
        &self,
        reference: &str,
        digest: &str,
        key: &SigningKey,
        keychain: &Keychain,
    ) -> Result<Signed, Error> {
        let repository = repository_of(reference)?;
        let payload = Payload::new(&repository, digest).to_bytes();
        let payload_digest = crate::digest(&payload);
        let signature = BASE64.encode(key.sign(&payload));
        let tag_reference = signature_reference(reference, digest)?;
        let session = self.session(&tag_reference, keychain)?;
        self.retry("authenticating", || async {
            session
                .client
                .auth(&session.reference, &session.auth, RegistryOperation::Push)
                .await
                .map(drop)
                .map_err(|e| Error::from_registry(&session.name, e))
        })
        .await?;
        let mut layers = match self.signature_manifest(&session).await? {
            Some(manifest) => manifest.layers,
            None => Vec::new(),
        };
        let layer = SignatureDescriptor {
            media_type: SIMPLE_SIGNING_MEDIA_TYPE.into(),
            size: payload.len() as u64,
            digest: payload_digest.clone(),
            annotations: BTreeMap::from([(SIGNATURE_ANNOTATION.to_string(), signature)]),
        };
        // ECDSA signatures are randomised in cosign, deterministic here:
        // signing again with the same key adds nothing.
        if layers.contains(&layer) {
            return Ok(Signed {
                signature_reference: tag_reference,
                unchanged: true,
            });
        }
        layers.push(layer);
        let layer_digests: Vec<String> = layers.iter().map(|l| l.digest.clone()).collect();
        let config = signature::signature_config(&layer_digests);
        let config_digest = crate::digest(&config);
        for (bytes, blob_digest) in [
            (payload, payload_digest),
            (config.clone(), config_digest.clone()),
        ] {
            let data = bytes::Bytes::from(bytes);
            self.retry("pushing a blob", || async {
                session
                    .client
                    .push_blob(&session.reference, data.clone(), &blob_digest)
                    .await
                    .map_err(|e| Error::from_registry(&session.name, e))
            })
            .await?;
        }
        let manifest = SignatureManifest {
            schema_version: 2,
            media_type: Some(layout::MANIFEST_MEDIA_TYPE.into()),
            config: layout::Descriptor {
                media_type: CONFIG_MEDIA_TYPE.into(),
                digest: config_digest,
                size: config.len() as u64,
                annotations: BTreeMap::new(),
            },
            layers,
        };
        let manifest = bytes::Bytes::from(serde_json::to_vec(&manifest).unwrap_or_default());
        self.retry("pushing the signature manifest", || async {
            session
                .client
                .push_manifest_raw(
                    &session.reference,
                    manifest.clone(),
                    http::HeaderValue::from_static(layout::MANIFEST_MEDIA_TYPE),
                )
                .await
                .map_err(|e| Error::from_registry(&session.name, e))
        })
        .await?;
        Ok(Signed {
            signature_reference: tag_reference,
            unchanged: false,
        })
    }

    /// The signature manifest at the session's tag, always asked of the
    /// registry (signatures are added after the artifact); `None` when
    /// there is none.
    async fn signature_manifest(
        &self,
        session: &Session,
    ) -> Result<Option<SignatureManifest>, Error> {
        let accepted = [
            layout::MANIFEST_MEDIA_TYPE,
            layout::DOCKER_MANIFEST_MEDIA_TYPE,
        ];
        let pulled = self
            .retry("pulling the signature manifest", || async {
                session
                    .client
                    .pull_manifest_raw(&session.reference, &session.auth, &accepted)
                    .await
                    .map_err(|e| Error::from_registry(&session.name, e))
            })
            .await;
        let bytes = match pulled {
            Ok((bytes, _)) => bytes,
            Err(Error::NotFound { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        if bytes.len() as u64 > MAX_METADATA_BYTES {
            return Err(Error::TooLarge {
                reference: session.name.clone(),
                what: "the signature manifest",
                size: bytes.len() as u64,
                limit: MAX_METADATA_BYTES,
            });
        }
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::UnsupportedArtifact {
                reference: session.name.clone(),
                message: format!("not a cosign signature manifest: {e}"),
            })
    }

    /// The signed payloads of a signature manifest; a payload whose bytes
    /// do not match its digest is kept as a failure for the verdict.
    async fn signature_layers(
        &self,
        session: &Session,
        manifest: &SignatureManifest,
    ) -> Result<Vec<SignatureLayer>, Error> {
        let mut layers = Vec::new();
        for layer in &manifest.layers {
            if layer.media_type != SIMPLE_SIGNING_MEDIA_TYPE {
                continue;
            }
            let payload = match self
                .blob(session, &layer.descriptor(), MAX_METADATA_BYTES)
                .await
            {
                Ok(bytes) => Ok(bytes),
                Err(Error::DigestMismatch { actual, .. }) => Err(format!(
                    "does not hash to its digest {} (got {actual})",
                    layer.digest
                )),
                Err(error) => return Err(error),
            };
            layers.push(SignatureLayer {
                payload,
                signature: layer.annotations.get(SIGNATURE_ANNOTATION).cloned(),
            });
        }
        Ok(layers)
    }
}

/// `registry/repository` of a reference, as a payload's docker-reference.
fn repository_of(reference: &str) -> Result<String, Error> {
    let parsed = crate::parse_reference(reference)?;
    Ok(format!("{}/{}", parsed.registry(), parsed.repository()))
}

/// `registry/repository:sha256-<hex>.sig` for `digest` in the repository of `reference`.
pub fn signature_reference(reference: &str, digest: &str) -> Result<String, Error> {
    if !digest.starts_with("sha256:") {
        return Err(Error::InvalidReference {
            reference: reference.to_string(),
            message: format!("cosign signs sha256 digests, not {digest:?}"),
        });
    }
    Ok(format!(
        "{}:{}",
        repository_of(reference)?,
        signature::signature_tag(digest)
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn signatures_live_beside_the_artifact_they_sign() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let cases = [
            ("127.0.0.1:5000/fn/stamp:v1", "127.0.0.1:5000/fn/stamp"),
            (&format!("r.io/fn@{digest}")[..], "r.io/fn"),
        ];
        for (reference, repository) in cases {
            assert_eq!(
                signature_reference(reference, &digest).unwrap(),
                format!("{repository}:sha256-{}.sig", "ab".repeat(32))
            );
        }
        assert!(signature_reference("r.io/fn:v1", "sha512:00").is_err());
    }
}
