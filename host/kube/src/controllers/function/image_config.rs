//! What ImageConfigs do to a package, once their Secrets are read: the
//! reference to pull, the pull secret's credentials, and the keys its
//! signature must verify with. The controller reads the Secrets from its
//! namespace, `plait render` from the Secrets among its inputs; both apply
//! them here.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{ApiResource, DynamicObject};
use plait_model::{ImageConfig, ImageConfigSpec, ImagePolicy, ObjectMeta};
use plait_oci::{Authority, HashAlgorithm, Keychain, PublicKey};

/// The key of a `kubernetes.io/dockerconfigjson` Secret.
pub const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";
pub const IMAGE_CONFIG_API_VERSION: &str = "pkg.crossplane.io/v1beta1";
pub const IMAGE_CONFIG_KIND: &str = "ImageConfig";
/// Upstream's `appliedImageConfigRefs[].reason` values.
pub const REASON_REWRITE: &str = "RewriteImage";
pub const REASON_PULL_SECRET: &str = "SetImagePullSecret";
pub const REASON_VERIFY: &str = "VerifyImage";

pub fn image_config_resource() -> ApiResource {
    ApiResource {
        group: "pkg.crossplane.io".into(),
        version: "v1beta1".into(),
        api_version: IMAGE_CONFIG_API_VERSION.into(),
        kind: IMAGE_CONFIG_KIND.into(),
        plural: "imageconfigs".into(),
    }
}

/// An ImageConfig as the API server serves it (list items carry no kind).
pub fn image_config_of(object: &DynamicObject) -> Result<ImageConfig, serde_json::Error> {
    let spec: ImageConfigSpec = match object.data.get("spec") {
        Some(spec) => serde_json::from_value(spec.clone())?,
        None => ImageConfigSpec::default(),
    };
    Ok(ImageConfig {
        api_version: IMAGE_CONFIG_API_VERSION.into(),
        kind: IMAGE_CONFIG_KIND.into(),
        metadata: ObjectMeta {
            name: object.metadata.name.clone(),
            ..ObjectMeta::default()
        },
        spec,
    })
}

/// The Secrets `policy` reads, by name.
pub fn secrets_needed(policy: &ImagePolicy) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    if let Some((_, secret)) = &policy.pull_secret {
        names.insert(secret.clone());
    }
    if let Some((_, verification)) = &policy.verification {
        for authority in verification.cosign.iter().flat_map(|c| &c.authorities) {
            if let Some(key) = &authority.key {
                names.insert(key.secret_ref.name.clone());
            }
        }
    }
    names
}

/// The data of Secrets by name, as read for a policy; a name that is
/// missing had no Secret.
pub type SecretData = BTreeMap<String, BTreeMap<String, Vec<u8>>>;

/// Signature verification as an ImageConfig asks it.
#[derive(Debug, Clone)]
pub struct Verification {
    /// The ImageConfig that asks for it.
    pub config: String,
    pub authorities: Vec<Authority>,
}

/// What the ImageConfigs make of one package.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// The reference to pull: the package, or where a config rewrites it to.
    pub reference: String,
    /// Credentials from a config's pull secret.
    pub keychain: Keychain,
    pub verification: Option<Verification>,
    /// `(ImageConfig, reason)` for `status.appliedImageConfigRefs`.
    pub refs: Vec<(String, &'static str)>,
}

impl Applied {
    /// Changes when what is pulled, or what it must be signed by, does;
    /// a Function installed under another fingerprint is installed again.
    pub fn fingerprint(&self) -> String {
        let keys = self.verification.as_ref().map(|v| {
            let mut keys: Vec<String> = v
                .authorities
                .iter()
                .map(|a| format!("{}/{}", a.key.fingerprint(), a.hash.name()))
                .collect();
            keys.sort();
            format!("{}:{}", v.config, keys.join(","))
        });
        format!("{}|{:?}|{:?}", self.reference, self.refs, keys)
    }
}

/// Applies `policy` to `package` with the Secrets it names, read from
/// `place` (a namespace, or render's inputs). A Secret that is missing or
/// lacks the key named is the ImageConfig's fault, reported naming both.
pub fn apply(
    policy: &ImagePolicy,
    package: &str,
    secrets: &SecretData,
    place: &str,
) -> Result<Applied, plait_oci::Error> {
    let mut applied = Applied {
        reference: package.to_string(),
        ..Applied::default()
    };
    if let Some((config, rewritten)) = &policy.rewrite {
        applied.reference = rewritten.clone();
        applied.refs.push((config.clone(), REASON_REWRITE));
    }
    let value = |config: &str, field: &str, secret: &str, key: &str| {
        let source_name = format!("ImageConfig {config:?}: {field}: Secret {place}/{secret}");
        let configuration = |message: String| plait_oci::Error::Configuration {
            source_name: source_name.clone(),
            message,
        };
        let data = secrets
            .get(secret)
            .ok_or_else(|| configuration("not found".into()))?;
        data.get(key)
            .cloned()
            .map(|bytes| (source_name.clone(), bytes))
            .ok_or_else(|| configuration(format!("has no key {key:?}")))
    };
    if let Some((config, secret)) = &policy.pull_secret {
        let (source_name, bytes) = value(
            config,
            "spec.registry.authentication.pullSecretRef",
            secret,
            DOCKER_CONFIG_KEY,
        )?;
        applied.keychain = Keychain::from_docker_config(&source_name, &bytes)?;
        applied.refs.push((config.clone(), REASON_PULL_SECRET));
    }
    if let Some((config, verification)) = &policy.verification {
        let mut authorities = Vec::new();
        for authority in verification.cosign.iter().flat_map(|c| &c.authorities) {
            // ImagePolicy::for_package refused authorities without a key.
            let Some(key) = &authority.key else { continue };
            let (source_name, pem) = value(
                config,
                "spec.verification.cosign.authorities[].key.secretRef",
                &key.secret_ref.name,
                &key.secret_ref.key,
            )?;
            let configuration = |e: plait_oci::KeyError| plait_oci::Error::Configuration {
                source_name: format!("ImageConfig {config:?}: authority {:?}", authority.name),
                message: e.to_string(),
            };
            authorities.push(Authority {
                name: authority.name.clone(),
                key: PublicKey::from_pem(&source_name, &pem).map_err(configuration)?,
                hash: HashAlgorithm::from_name(
                    "spec.verification.cosign.authorities[].key.hashAlgorithm",
                    &key.hash_algorithm,
                )
                .map_err(configuration)?,
            });
        }
        applied.verification = Some(Verification {
            config: config.clone(),
            authorities,
        });
        applied.refs.push((config.clone(), REASON_VERIFY));
    }
    Ok(applied)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use plait_model::Manifest;
    use serde_json::json;

    use super::*;

    fn policy(spec: serde_json::Value) -> ImagePolicy {
        let config = ImageConfig::from_value(json!({
            "apiVersion": IMAGE_CONFIG_API_VERSION, "kind": IMAGE_CONFIG_KIND,
            "metadata": {"name": "ic"}, "spec": spec,
        }))
        .unwrap();
        ImagePolicy::for_package(&[config], "r.io/fn:v1").unwrap()
    }

    #[test]
    fn secrets_an_image_config_names_must_exist_and_hold_their_key() {
        let verify = policy(
            json!({"matchImages": [{"prefix": "r.io/"}], "verification": {
            "provider": "Cosign", "cosign": {"authorities": [
                {"name": "team", "key": {"secretRef": {"name": "keys", "key": "cosign.pub"}, "hashAlgorithm": "sha256"}}]}}}),
        );
        let pull = policy(json!({"matchImages": [{"prefix": "r.io/"}],
            "registry": {"authentication": {"pullSecretRef": {"name": "pull"}}}}));
        let cases = [
            (&verify, SecretData::new(), "Secret ns/keys: not found"),
            (
                &verify,
                SecretData::from([("keys".into(), BTreeMap::from([("other".into(), vec![])]))]),
                "has no key \"cosign.pub\"",
            ),
            (
                &verify,
                SecretData::from([(
                    "keys".into(),
                    BTreeMap::from([("cosign.pub".into(), b"junk".to_vec())]),
                )]),
                "not a PEM public key",
            ),
            (
                &pull,
                SecretData::new(),
                "pullSecretRef: Secret ns/pull: not found",
            ),
        ];
        for (policy, secrets, want) in cases {
            let error = apply(policy, "r.io/fn:v1", &secrets, "ns").unwrap_err();
            assert_eq!(error.reason(), plait_oci::Reason::InvalidConfiguration);
            let message = error.to_string();
            assert!(
                message.contains("ImageConfig \"ic\"") && message.contains(want),
                "{message}"
            );
        }
        assert_eq!(
            secrets_needed(&verify)
                .into_iter()
                .chain(secrets_needed(&pull))
                .collect::<Vec<_>>(),
            ["keys", "pull"]
        );
    }
}
