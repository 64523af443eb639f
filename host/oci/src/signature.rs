//! cosign's signature format, key-based: the simple-signing payload, ECDSA
//! keys as cosign writes them, and the rule that decides whether a set of
//! signatures vouches for one manifest digest.
//!
//! cosign keeps the signatures of `repo@sha256:<hex>` in the same repository
//! under the tag `sha256-<hex>.sig`: an OCI image whose layers are
//! simple-signing payloads (`application/vnd.dev.cosign.simplesigning.v1+json`),
//! each with its base64 ASN.1 DER signature in the layer annotation
//! `dev.cosignproject.cosign/signature`. A payload names the manifest digest
//! it signs in `critical.image.docker-manifest-digest`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use ecdsa::signature::hazmat::PrehashVerifier;
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The media type of a signature layer: one simple-signing payload.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the payload's base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// `critical.type` of every cosign image signature.
pub const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The PEM types cosign writes encrypted private keys under (current, older).
const PRIVATE_KEY_PEM_TYPES: [&str; 2] = [
    "ENCRYPTED SIGSTORE PRIVATE KEY",
    "ENCRYPTED COSIGN PRIVATE KEY",
];
/// The scrypt settings go-securesystemslib accepts (legacy, standard, OWASP).
const SCRYPT_PARAMETERS: [(u64, u32, u32); 3] = [(32768, 8, 1), (65536, 8, 1), (131072, 8, 1)];

/// A problem with a key or its settings, named by where the key came from.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{source_name}: not a PEM {expected}: {message}")]
    NotPem {
        source_name: String,
        expected: &'static str,
        message: String,
    },
    #[error("{source_name}: unsupported key ({message}); cosign keys are ECDSA P-256 or P-384")]
    Unsupported {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: cannot decrypt the private key: {message}")]
    Decrypt {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: unsupported hashAlgorithm {name:?} (sha256, sha384 or sha512)")]
    HashAlgorithm { source_name: String, name: String },
}

/// The hash a key's signatures are made over (an ImageConfig's `hashAlgorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HashAlgorithm {
    Sha256,
    Sha384,
    Sha512,
}

impl HashAlgorithm {
    /// Upstream's names; empty is its default, sha256.
    pub fn from_name(source_name: &str, name: &str) -> Result<HashAlgorithm, KeyError> {
        match name {
            "" | "sha256" => Ok(HashAlgorithm::Sha256),
            "sha384" => Ok(HashAlgorithm::Sha384),
            "sha512" => Ok(HashAlgorithm::Sha512),
            other => Err(KeyError::HashAlgorithm {
                source_name: source_name.to_string(),
                name: other.to_string(),
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            HashAlgorithm::Sha256 => "sha256",
            HashAlgorithm::Sha384 => "sha384",
            HashAlgorithm::Sha512 => "sha512",
        }
    }

    fn hash(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            HashAlgorithm::Sha256 => sha2::Sha256::digest(bytes).to_vec(),
            HashAlgorithm::Sha384 => sha2::Sha384::digest(bytes).to_vec(),
            HashAlgorithm::Sha512 => sha2::Sha512::digest(bytes).to_vec(),
        }
    }
}

#[derive(Debug, Clone)]
enum Verifying {
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
}

/// A public key that signatures are checked against.
#[derive(Debug, Clone)]
pub struct PublicKey {
    key: Verifying,
    /// sha256 of the key's SubjectPublicKeyInfo: names the key in verdicts.
    fingerprint: String,
}

impl PublicKey {
    /// A PEM `PUBLIC KEY` (SubjectPublicKeyInfo), as `cosign generate-key-pair`
    /// writes `cosign.pub`.
    pub fn from_pem(source_name: &str, pem: &[u8]) -> Result<PublicKey, KeyError> {
        let text = std::str::from_utf8(pem).map_err(|e| KeyError::NotPem {
            source_name: source_name.to_string(),
            expected: "public key",
            message: e.to_string(),
        })?;
        if let Ok(key) = p256::ecdsa::VerifyingKey::from_public_key_pem(text) {
            return Ok(PublicKey::of(Verifying::P256(key)));
        }
        if let Ok(key) = p384::ecdsa::VerifyingKey::from_public_key_pem(text) {
            return Ok(PublicKey::of(Verifying::P384(key)));
        }
        // Tell a PEM that is not a public key from a key of another kind.
        let (_, document) = spki::Document::from_pem(text).map_err(|e| KeyError::NotPem {
            source_name: source_name.to_string(),
            expected: "public key (-----BEGIN PUBLIC KEY-----)",
            message: e.to_string(),
        })?;
        let algorithm = document
            .decode_msg::<spki::SubjectPublicKeyInfoRef<'_>>()
            .map(|info| info.algorithm.oid.to_string())
            .unwrap_or_else(|e| e.to_string());
        Err(KeyError::Unsupported {
            source_name: source_name.to_string(),
            message: format!("algorithm {algorithm}"),
        })
    }

    fn of(key: Verifying) -> PublicKey {
        let der = match &key {
            Verifying::P256(k) => k.to_public_key_der(),
            Verifying::P384(k) => k.to_public_key_der(),
        };
        let fingerprint = der.map(|d| crate::digest(d.as_bytes())).unwrap_or_default();
        PublicKey { key, fingerprint }
    }

    /// The PEM `PUBLIC KEY` of this key.
    pub fn to_pem(&self) -> String {
        let pem = match &self.key {
            Verifying::P256(k) => k.to_public_key_pem(p256::pkcs8::LineEnding::LF),
            Verifying::P384(k) => k.to_public_key_pem(p256::pkcs8::LineEnding::LF),
        };
        pem.unwrap_or_default()
    }

    /// `sha256:<hex>` of the key's SubjectPublicKeyInfo.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Whether `signature` (ASN.1 DER) signs `payload` hashed with `hash`.
    fn verify(&self, hash: HashAlgorithm, payload: &[u8], signature: &[u8]) -> Check {
        let prehash = hash.hash(payload);
        let verified = match &self.key {
            Verifying::P256(key) => match p256::ecdsa::DerSignature::try_from(signature) {
                Ok(signature) => key.verify_prehash(&prehash, &signature).is_ok(),
                Err(e) => return Check::Malformed(e.to_string()),
            },
            Verifying::P384(key) => match p384::ecdsa::DerSignature::try_from(signature) {
                Ok(signature) => key.verify_prehash(&prehash, &signature).is_ok(),
                Err(e) => return Check::Malformed(e.to_string()),
            },
        };
        if verified {
            Check::Valid
        } else {
            Check::Invalid
        }
    }
}

enum Check {
    Valid,
    Invalid,
    Malformed(String),
}

/// One of an ImageConfig's key authorities: a trusted key and the hash its
/// signatures use.
#[derive(Debug, Clone)]
pub struct Authority {
    pub name: String,
    pub key: PublicKey,
    pub hash: HashAlgorithm,
}

/// What names a set of authorities in the verdict cache: a change of key or
/// hash is a new verdict.
pub(crate) fn authorities_key(authorities: &[Authority]) -> String {
    let mut parts: Vec<String> = authorities
        .iter()
        .map(|a| format!("{}/{}", a.key.fingerprint(), a.hash.name()))
        .collect();
    parts.sort();
    parts.join(",")
}

#[derive(Clone)]
enum Signing {
    P256(p256::ecdsa::SigningKey),
    P384(p384::ecdsa::SigningKey),
}

/// A private key that signs payloads as cosign does (ECDSA over SHA-256,
/// ASN.1 DER).
#[derive(Clone)]
pub struct SigningKey {
    key: Signing,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public_key().fingerprint)
            .finish()
    }
}

/// go-securesystemslib's `encrypted` document: scrypt, then NaCl secretbox.
#[derive(Deserialize)]
struct EncryptedKey {
    kdf: Kdf,
    cipher: Cipher,
    #[serde(with = "base64_bytes")]
    ciphertext: Vec<u8>,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    #[serde(with = "base64_bytes")]
    salt: Vec<u8>,
}

#[derive(Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    #[serde(with = "base64_bytes")]
    nonce: Vec<u8>,
}

mod base64_bytes {
    use base64::Engine;
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        super::BASE64.decode(text).map_err(serde::de::Error::custom)
    }
}

impl SigningKey {
    /// A cosign private key file (`ENCRYPTED SIGSTORE PRIVATE KEY` or the
    /// older `ENCRYPTED COSIGN PRIVATE KEY`), decrypted with `password`.
    pub fn from_cosign_pem(
        source_name: &str,
        pem: &[u8],
        password: &[u8],
    ) -> Result<SigningKey, KeyError> {
        let not_pem = |message: String| KeyError::NotPem {
            source_name: source_name.to_string(),
            expected: "cosign private key (-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----)",
            message,
        };
        let decrypt = |message: String| KeyError::Decrypt {
            source_name: source_name.to_string(),
            message,
        };
        let text = std::str::from_utf8(pem).map_err(|e| not_pem(e.to_string()))?;
        let (label, document) =
            pem_rfc7468::decode_vec(text.trim().as_bytes()).map_err(|e| not_pem(e.to_string()))?;
        if !PRIVATE_KEY_PEM_TYPES.contains(&label) {
            return Err(not_pem(format!("found a PEM {label:?}")));
        }
        let encrypted: EncryptedKey = serde_json::from_slice(&document)
            .map_err(|e| not_pem(format!("not an encrypted key document: {e}")))?;
        if encrypted.kdf.name != "scrypt" || encrypted.cipher.name != "nacl/secretbox" {
            return Err(decrypt(format!(
                "unsupported kdf {:?} or cipher {:?} (scrypt, nacl/secretbox)",
                encrypted.kdf.name, encrypted.cipher.name
            )));
        }
        let KdfParams { n, r, p } = encrypted.kdf.params;
        if !SCRYPT_PARAMETERS.contains(&(n, r, p)) {
            return Err(decrypt(format!(
                "unsupported scrypt parameters N={n} r={r} p={p}"
            )));
        }
        let params = scrypt::Params::new(n.trailing_zeros() as u8, r, p, 32)
            .map_err(|e| decrypt(e.to_string()))?;
        let mut box_key = [0u8; 32];
        scrypt::scrypt(password, &encrypted.kdf.salt, &params, &mut box_key)
            .map_err(|e| decrypt(e.to_string()))?;
        let nonce: [u8; 24] = encrypted
            .cipher
            .nonce
            .as_slice()
            .try_into()
            .map_err(|_| decrypt("the nonce is not 24 bytes".into()))?;
        use crypto_secretbox::aead::{Aead, KeyInit};
        let cipher = crypto_secretbox::XSalsa20Poly1305::new(&box_key.into());
        let der = cipher
            .decrypt(&nonce.into(), encrypted.ciphertext.as_slice())
            .map_err(|_| decrypt("wrong password, or the key file is damaged".into()))?;
        if let Ok(key) = p256::ecdsa::SigningKey::from_pkcs8_der(&der) {
            return Ok(SigningKey {
                key: Signing::P256(key),
            });
        }
        if let Ok(key) = p384::ecdsa::SigningKey::from_pkcs8_der(&der) {
            return Ok(SigningKey {
                key: Signing::P384(key),
            });
        }
        Err(KeyError::Unsupported {
            source_name: source_name.to_string(),
            message: "the private key is not ECDSA P-256 or P-384".into(),
        })
    }

    /// Signs `payload` as cosign signs with a key file: ECDSA over its
    /// SHA-256, ASN.1 DER.
    pub fn sign(&self, payload: &[u8]) -> Vec<u8> {
        use ecdsa::signature::hazmat::PrehashSigner;
        let prehash = HashAlgorithm::Sha256.hash(payload);
        // Signing a 32-byte prehash with a valid key cannot fail.
        match &self.key {
            Signing::P256(key) => {
                PrehashSigner::<p256::ecdsa::Signature>::sign_prehash(key, &prehash)
                    .map(|s| s.to_der().as_bytes().to_vec())
                    .unwrap_or_default()
            }
            Signing::P384(key) => {
                PrehashSigner::<p384::ecdsa::Signature>::sign_prehash(key, &prehash)
                    .map(|s| s.to_der().as_bytes().to_vec())
                    .unwrap_or_default()
            }
        }
    }

    pub fn public_key(&self) -> PublicKey {
        match &self.key {
            Signing::P256(key) => PublicKey::of(Verifying::P256(*key.verifying_key())),
            Signing::P384(key) => PublicKey::of(Verifying::P384(*key.verifying_key())),
        }
    }
}

/// The tag cosign keeps the signatures of `digest` under: `sha256-<hex>.sig`.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The simple-signing payload, as cosign writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    pub critical: Critical,
    pub optional: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Critical {
    pub identity: Identity,
    pub image: Image,
    #[serde(rename = "type")]
    pub type_: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    #[serde(rename = "docker-reference")]
    pub docker_reference: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    #[serde(rename = "docker-manifest-digest")]
    pub docker_manifest_digest: String,
}

impl Payload {
    /// The payload signing `digest` in `repository` (`registry/path`, no tag).
    pub fn new(repository: &str, digest: &str) -> Payload {
        Payload {
            critical: Critical {
                identity: Identity {
                    docker_reference: repository.to_string(),
                },
                image: Image {
                    docker_manifest_digest: digest.to_string(),
                },
                type_: PAYLOAD_TYPE.to_string(),
            },
            optional: None,
        }
    }

    /// The bytes cosign signs: Go's `encoding/json` of the payload.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// One signature layer as read from the registry.
#[derive(Debug, Clone)]
pub struct SignatureLayer {
    /// The payload, or why it could not be read intact (its bytes do not
    /// hash to the layer's digest).
    pub payload: Result<Vec<u8>, String>,
    /// The `dev.cosignproject.cosign/signature` annotation.
    pub signature: Option<String>,
}

/// Why the signatures of an artifact do not vouch for its digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("it has no signature: there is no {tag} in its repository")]
    NoSignature { tag: String },
    #[error(
        "no signature verifies with the trusted keys ({authorities}): it was signed with another key, or its signature changed after signing"
    )]
    UntrustedSignature { authorities: String },
    #[error(
        "the signature that verifies with {authority:?} signs another digest, {signed}: it was made for other content"
    )]
    OtherDigest { authority: String, signed: String },
    #[error("signature {index} was tampered with: {message}")]
    Tampered { index: usize, message: String },
}

/// Decides whether `layers` hold a signature by one of `authorities` whose
/// payload names `digest`; the authority that signed it when one does.
///
/// When none does, the most telling failure wins: a trusted signature for
/// another digest, then a damaged signature or payload, then signatures by
/// keys nobody trusts.
pub fn check(
    digest: &str,
    tag: &str,
    layers: &[SignatureLayer],
    authorities: &[Authority],
) -> Result<String, Refusal> {
    if layers.is_empty() {
        return Err(Refusal::NoSignature {
            tag: tag.to_string(),
        });
    }
    let mut other_digest = None;
    let mut tampered = None;
    for (index, layer) in layers.iter().enumerate() {
        let index = index + 1;
        let mut tamper = |message: String| {
            tampered.get_or_insert(Refusal::Tampered { index, message });
        };
        let payload = match &layer.payload {
            Ok(payload) => payload,
            Err(message) => {
                tamper(format!("its payload {message}"));
                continue;
            }
        };
        let Some(encoded) = &layer.signature else {
            tamper(format!(
                "the layer has no {SIGNATURE_ANNOTATION} annotation"
            ));
            continue;
        };
        let signature = match BASE64.decode(encoded.trim()) {
            Ok(signature) => signature,
            Err(e) => {
                tamper(format!("the signature is not base64: {e}"));
                continue;
            }
        };
        for authority in authorities {
            match authority.key.verify(authority.hash, payload, &signature) {
                Check::Invalid => continue,
                Check::Malformed(message) => {
                    tamper(format!(
                        "the signature is not an ASN.1 DER ECDSA signature: {message}"
                    ));
                    break;
                }
                Check::Valid => {}
            }
            match serde_json::from_slice::<Payload>(payload) {
                Ok(signed) if signed.critical.type_ != PAYLOAD_TYPE => tamper(format!(
                    "its payload is of type {:?}, not {PAYLOAD_TYPE:?}",
                    signed.critical.type_
                )),
                Ok(signed) if signed.critical.image.docker_manifest_digest == digest => {
                    return Ok(authority.name.clone());
                }
                Ok(signed) => {
                    other_digest.get_or_insert(Refusal::OtherDigest {
                        authority: authority.name.clone(),
                        signed: signed.critical.image.docker_manifest_digest,
                    });
                }
                Err(e) => tamper(format!("its payload is not a simple-signing document: {e}")),
            }
        }
    }
    Err(other_digest
        .or(tampered)
        .unwrap_or_else(|| Refusal::UntrustedSignature {
            authorities: authorities
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }))
}

/// The image config of a signature manifest, as go-containerregistry writes
/// it for cosign: empty but for the payloads' digests.
pub(crate) fn signature_config(layer_digests: &[String]) -> Vec<u8> {
    let config = serde_json::json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": layer_digests.iter().map(|_| serde_json::json!({"created": "0001-01-01T00:00:00Z"})).collect::<Vec<_>>(),
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": layer_digests},
        "config": {},
    });
    serde_json::to_vec(&config).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn key(seed: u8) -> SigningKey {
        SigningKey {
            key: Signing::P256(p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap()),
        }
    }

    fn authority(name: &str, key: &SigningKey) -> Authority {
        Authority {
            name: name.into(),
            key: key.public_key(),
            hash: HashAlgorithm::Sha256,
        }
    }

    fn layer(key: &SigningKey, digest: &str) -> SignatureLayer {
        let payload = Payload::new("r.io/fn", digest).to_bytes();
        SignatureLayer {
            signature: Some(BASE64.encode(key.sign(&payload))),
            payload: Ok(payload),
        }
    }

    #[test]
    fn payloads_are_written_as_cosign_writes_them() {
        assert_eq!(
            String::from_utf8(Payload::new("127.0.0.1:5000/fn", DIGEST).to_bytes()).unwrap(),
            format!(
                r#"{{"critical":{{"identity":{{"docker-reference":"127.0.0.1:5000/fn"}},"image":{{"docker-manifest-digest":"{DIGEST}"}},"type":"cosign container image signature"}},"optional":null}}"#
            )
        );
        assert_eq!(
            signature_tag(DIGEST),
            format!("sha256-{}.sig", "1".repeat(64))
        );
    }

    #[test]
    fn signatures_are_judged_by_key_digest_and_integrity() {
        let trusted = key(1);
        let stranger = key(2);
        let good = layer(&trusted, DIGEST);
        let mut altered_signature = good.clone();
        let mut bytes = BASE64.decode(good.signature.clone().unwrap()).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        altered_signature.signature = Some(BASE64.encode(&bytes));
        let not_der = SignatureLayer {
            signature: Some(BASE64.encode(b"not a signature")),
            ..good.clone()
        };
        let damaged_payload = SignatureLayer {
            payload: Err("does not hash to its digest".into()),
            ..good.clone()
        };
        type Want = fn(&Result<String, Refusal>) -> bool;
        let cases: Vec<(&str, Vec<SignatureLayer>, Want)> = vec![
            ("signed by the trusted key", vec![good.clone()], |r| {
                r.as_deref() == Ok("trusted")
            }),
            (
                "a trusted signature beside a stranger's",
                vec![layer(&stranger, DIGEST), good.clone()],
                |r| r.is_ok(),
            ),
            ("no signature", vec![], |r| {
                matches!(r, Err(Refusal::NoSignature { .. }))
            }),
            ("another key", vec![layer(&stranger, DIGEST)], |r| {
                matches!(r, Err(Refusal::UntrustedSignature { .. }))
            }),
            (
                "another digest",
                vec![layer(&trusted, OTHER)],
                |r| matches!(r, Err(Refusal::OtherDigest { signed, .. }) if signed == OTHER),
            ),
            ("a changed signature", vec![altered_signature], |r| {
                matches!(r, Err(Refusal::UntrustedSignature { .. }))
            }),
            ("a signature that is not DER", vec![not_der], |r| {
                matches!(r, Err(Refusal::Tampered { index: 1, .. }))
            }),
            ("a damaged payload", vec![damaged_payload], |r| {
                matches!(r, Err(Refusal::Tampered { index: 1, .. }))
            }),
        ];
        for (name, layers, want) in cases {
            let verdict = check(
                DIGEST,
                "r.io/fn:sha256-1.sig",
                &layers,
                &[authority("trusted", &trusted)],
            );
            assert!(want(&verdict), "{name}: {verdict:?}");
        }
    }

    #[test]
    fn every_upstream_hash_algorithm_verifies_and_others_are_refused() {
        let trusted = key(3);
        let payload = Payload::new("r.io/fn", DIGEST).to_bytes();
        for hash in [
            HashAlgorithm::Sha256,
            HashAlgorithm::Sha384,
            HashAlgorithm::Sha512,
        ] {
            let Signing::P256(signing) = &trusted.key else {
                unreachable!()
            };
            let signature: p256::ecdsa::Signature =
                ecdsa::signature::hazmat::PrehashSigner::sign_prehash(
                    signing,
                    &hash.hash(&payload),
                )
                .unwrap();
            let layer = SignatureLayer {
                payload: Ok(payload.clone()),
                signature: Some(BASE64.encode(signature.to_der().as_bytes())),
            };
            let authority = Authority {
                hash,
                ..authority("k", &trusted)
            };
            assert!(
                check(DIGEST, "t", &[layer], &[authority]).is_ok(),
                "{hash:?}"
            );
            assert_eq!(HashAlgorithm::from_name("k", hash.name()).unwrap(), hash);
        }
        let error = HashAlgorithm::from_name("ImageConfig \"ic\"", "md5").unwrap_err();
        assert!(error.to_string().contains("\"md5\""), "{error}");
    }

    /// Made by cosign v2.6.5: `generate-key-pair` (COSIGN_PASSWORD=plait-fixture)
    /// and `sign-blob --key cosign.key --tlog-upload=false payload.json`.
    const COSIGN_KEY: &str = include_str!("../testdata/cosign/cosign.key");
    const COSIGN_PUB: &str = include_str!("../testdata/cosign/cosign.pub");
    const COSIGN_PAYLOAD: &str = include_str!("../testdata/cosign/payload.json");
    const COSIGN_SIGNATURE: &str = include_str!("../testdata/cosign/payload.sig");

    #[test]
    fn keys_and_signatures_made_by_cosign_are_read_and_verified() {
        let private =
            SigningKey::from_cosign_pem("cosign.key", COSIGN_KEY.as_bytes(), b"plait-fixture")
                .unwrap();
        let public = PublicKey::from_pem("cosign.pub", COSIGN_PUB.as_bytes()).unwrap();
        assert_eq!(private.public_key().fingerprint(), public.fingerprint());
        assert_eq!(
            COSIGN_PAYLOAD.as_bytes(),
            Payload::new("r.io/fn", DIGEST).to_bytes(),
            "plait writes the payload cosign signs"
        );
        let trusted = [Authority {
            name: "cosign".into(),
            key: public,
            hash: HashAlgorithm::Sha256,
        }];
        let layer = |signature: String| SignatureLayer {
            payload: Ok(COSIGN_PAYLOAD.as_bytes().to_vec()),
            signature: Some(signature),
        };
        let by_cosign = layer(COSIGN_SIGNATURE.trim().to_string());
        let by_plait = layer(BASE64.encode(private.sign(COSIGN_PAYLOAD.as_bytes())));
        for signed in [by_cosign, by_plait] {
            assert_eq!(check(DIGEST, "t", &[signed], &trusted).unwrap(), "cosign");
        }

        let error =
            SigningKey::from_cosign_pem("cosign.key", COSIGN_KEY.as_bytes(), b"wrong").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("cosign.key: cannot decrypt the private key: wrong password"),
            "{error}"
        );
        let error =
            SigningKey::from_cosign_pem("cosign.pub", COSIGN_PUB.as_bytes(), b"").unwrap_err();
        assert!(
            error.to_string().contains("found a PEM \"PUBLIC KEY\""),
            "{error}"
        );
    }

    #[test]
    fn public_keys_round_trip_through_pem_and_bad_pem_is_named() {
        let public = key(4).public_key();
        let parsed = PublicKey::from_pem("cosign.pub", public.to_pem().as_bytes()).unwrap();
        assert_eq!(parsed.fingerprint(), public.fingerprint());
        for bad in [
            &b"nothing"[..],
            b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        ] {
            let error = PublicKey::from_pem("secret ns/keys key cosign.pub", bad).unwrap_err();
            assert!(
                error
                    .to_string()
                    .starts_with("secret ns/keys key cosign.pub: "),
                "{error}"
            );
        }
    }
}
