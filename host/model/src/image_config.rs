//! `pkg.crossplane.io/v1beta1` ImageConfig: per image prefix, a pull
//! secret, a rewritten registry path and signature verification, chosen as
//! upstream's package manager chooses them.

use serde::{Deserialize, Serialize};

use crate::function::LocalObjectReference;
use crate::meta::{Manifest, ObjectMeta, nullable};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageConfig {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ImageConfigSpec,
}

impl Manifest for ImageConfig {
    const KIND: &'static str = "ImageConfig";
    const API_VERSIONS: &'static [&'static str] = &["pkg.crossplane.io/v1beta1"];
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageConfigSpec {
    #[serde(default, deserialize_with = "nullable")]
    pub match_images: Vec<ImageMatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<RegistryConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<ImageVerification>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite_image: Option<ImageRewrite>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImageMatch {
    /// Only `Prefix` exists upstream (and is the default).
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    #[serde(default)]
    pub prefix: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RegistryConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<RegistryAuthentication>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryAuthentication {
    #[serde(default)]
    pub pull_secret_ref: LocalObjectReference,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImageVerification {
    /// Only `Cosign` exists upstream.
    #[serde(default)]
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cosign: Option<CosignVerificationConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CosignVerificationConfig {
    #[serde(default, deserialize_with = "nullable")]
    pub authorities: Vec<CosignAuthority>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CosignAuthority {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<KeyRef>,
    /// Fulcio identities: accepted by the API, refused by plait, which
    /// verifies without network access to Fulcio or Rekor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyless: Option<serde_json::Value>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub attestations: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRef {
    #[serde(default)]
    pub secret_ref: SecretKeySelector,
    /// `sha256` (the default), `sha384` or `sha512`.
    #[serde(default)]
    pub hash_algorithm: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SecretKeySelector {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImageRewrite {
    #[serde(default)]
    pub prefix: String,
}

impl ImageConfig {
    pub fn name(&self) -> &str {
        self.metadata.name()
    }

    /// The length of this config's longest prefix that `image` starts with.
    fn longest_match(&self, image: &str) -> Option<usize> {
        self.spec
            .match_images
            .iter()
            .filter(|m| image.starts_with(&m.prefix))
            .map(|m| m.prefix.len())
            .max()
    }
}

/// What the ImageConfigs say about one package: each part chosen
/// separately, as upstream does, among the configs that set it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImagePolicy {
    /// Where the package is pulled from, when a config rewrites it:
    /// `(config, rewritten reference)`.
    pub rewrite: Option<(String, String)>,
    /// The pull secret a config names for the (rewritten) reference: `(config, secret)`.
    pub pull_secret: Option<(String, String)>,
    /// The verification a config asks of the (rewritten) reference.
    pub verification: Option<(String, ImageVerification)>,
}

/// A rule an ImageConfig breaks, named by the config and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ImageConfig {config:?}: {field}: {message}")]
pub struct ImageConfigError {
    pub config: String,
    pub field: &'static str,
    pub message: String,
}

impl ImagePolicy {
    /// The policy for `package` under `configs`. The rewrite is chosen by
    /// the package as written; the pull secret and verification by the
    /// rewritten reference, which is what is pulled. Among the configs that
    /// set a part, the one with the longest matching prefix wins.
    pub fn for_package(
        configs: &[ImageConfig],
        package: &str,
    ) -> Result<ImagePolicy, ImageConfigError> {
        let mut policy = ImagePolicy::default();
        let mut image = package.to_string();
        if let Some(config) = best_match(configs, &image, |c| c.spec.rewrite_image.is_some()) {
            let prefix = config
                .spec
                .rewrite_image
                .as_ref()
                .map(|r| r.prefix.as_str())
                .unwrap_or_default();
            if prefix.is_empty() {
                return Err(ImageConfigError {
                    config: config.name().into(),
                    field: "spec.rewriteImage.prefix",
                    message: "rewrite prefix is missing".into(),
                });
            }
            let matched = config.longest_match(&image).unwrap_or_default();
            image = format!("{prefix}{}", &image[matched..]);
            policy.rewrite = Some((config.name().into(), image.clone()));
        }
        if let Some(config) = best_match(configs, &image, |c| {
            c.spec
                .registry
                .as_ref()
                .and_then(|r| r.authentication.as_ref())
                .is_some_and(|a| !a.pull_secret_ref.name.is_empty())
        }) && let Some(auth) = config
            .spec
            .registry
            .as_ref()
            .and_then(|r| r.authentication.as_ref())
        {
            policy.pull_secret = Some((config.name().into(), auth.pull_secret_ref.name.clone()));
        }
        if let Some(config) = best_match(configs, &image, |c| c.spec.verification.is_some())
            && let Some(verification) = &config.spec.verification
        {
            check_verification(config.name(), verification)?;
            policy.verification = Some((config.name().into(), verification.clone()));
        }
        Ok(policy)
    }
}

/// Refuses what plait cannot verify rather than skipping it: a provider
/// other than Cosign, no key authority, or keyless authorities.
fn check_verification(
    config: &str,
    verification: &ImageVerification,
) -> Result<(), ImageConfigError> {
    let error = |field: &'static str, message: String| ImageConfigError {
        config: config.into(),
        field,
        message,
    };
    if verification.provider != "Cosign" {
        return Err(error(
            "spec.verification.provider",
            format!("unsupported provider {:?} (Cosign)", verification.provider),
        ));
    }
    let Some(cosign) = &verification.cosign else {
        return Err(error(
            "spec.verification.cosign",
            "cosign verification config is missing".into(),
        ));
    };
    if cosign.authorities.is_empty() {
        return Err(error(
            "spec.verification.cosign.authorities",
            "no authority: nothing could verify a signature".into(),
        ));
    }
    for (index, authority) in cosign.authorities.iter().enumerate() {
        match &authority.key {
            Some(key) if !key.secret_ref.name.is_empty() && !key.secret_ref.key.is_empty() => {}
            Some(_) => {
                return Err(error(
                    "spec.verification.cosign.authorities[].key.secretRef",
                    format!(
                        "authority {index} ({:?}) needs a secret name and key",
                        authority.name
                    ),
                ));
            }
            None => {
                return Err(error(
                    "spec.verification.cosign.authorities[].key",
                    format!(
                        "authority {index} ({:?}) has no key: plait verifies key-based signatures only (keyless needs Fulcio and Rekor)",
                        authority.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The config with the longest prefix `image` starts with, among those `valid` accepts.
fn best_match<'c>(
    configs: &'c [ImageConfig],
    image: &str,
    valid: impl Fn(&ImageConfig) -> bool,
) -> Option<&'c ImageConfig> {
    let mut best: Option<(&ImageConfig, usize)> = None;
    for config in configs.iter().filter(|c| valid(c)) {
        if let Some(length) = config.longest_match(image)
            && best.is_none_or(|(_, longest)| length > longest)
        {
            best = Some((config, length));
        }
    }
    best.map(|(config, _)| config)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(value: serde_json::Value) -> ImageConfig {
        ImageConfig::from_value(value).unwrap()
    }

    fn image_config(name: &str, prefixes: &[&str], spec: serde_json::Value) -> ImageConfig {
        let mut spec = spec;
        spec["matchImages"] = json!(
            prefixes
                .iter()
                .map(|p| json!({"prefix": p}))
                .collect::<Vec<_>>()
        );
        config(json!({
            "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
            "metadata": {"name": name}, "spec": spec,
        }))
    }

    fn verification(secret: &str) -> serde_json::Value {
        json!({"provider": "Cosign", "cosign": {"authorities": [
            {"name": "team", "key": {"secretRef": {"name": secret, "key": "cosign.pub"}, "hashAlgorithm": "sha256"}},
        ]}})
    }

    #[test]
    fn each_part_goes_to_the_longest_prefix_that_sets_it() {
        let configs = [
            image_config(
                "broad",
                &["r.io/"],
                json!({
                    "registry": {"authentication": {"pullSecretRef": {"name": "broad-pull"}}},
                    "verification": verification("broad-keys"),
                }),
            ),
            image_config(
                "narrow",
                &["r.io/team/", "x.io/"],
                json!({
                    "verification": verification("team-keys"),
                }),
            ),
            image_config(
                "mirror",
                &["upstream.io/fn"],
                json!({
                    "rewriteImage": {"prefix": "r.io/team/mirror"},
                }),
            ),
        ];
        let cases = [
            ("r.io/other/fn:v1", None, Some("broad"), Some("broad")),
            ("r.io/team/fn:v1", None, Some("broad"), Some("narrow")),
            (
                "upstream.io/fn/stamp:v1",
                Some("r.io/team/mirror/stamp:v1"),
                Some("broad"),
                Some("narrow"),
            ),
            ("elsewhere.io/fn:v1", None, None, None),
        ];
        for (package, rewritten, pull, verify) in cases {
            let policy = ImagePolicy::for_package(&configs, package).unwrap();
            assert_eq!(
                policy.rewrite.as_ref().map(|(_, r)| r.as_str()),
                rewritten,
                "{package}"
            );
            assert_eq!(
                policy.pull_secret.as_ref().map(|(c, _)| c.as_str()),
                pull,
                "{package}"
            );
            assert_eq!(
                policy.verification.as_ref().map(|(c, _)| c.as_str()),
                verify,
                "{package}"
            );
        }
    }

    #[test]
    fn what_plait_cannot_verify_is_refused_naming_the_config_and_field() {
        let cases = [
            (
                json!({"provider": "Notation"}),
                "spec.verification.provider",
            ),
            (json!({"provider": "Cosign"}), "spec.verification.cosign"),
            (
                json!({"provider": "Cosign", "cosign": {"authorities": []}}),
                "spec.verification.cosign.authorities",
            ),
            (
                json!({"provider": "Cosign", "cosign": {"authorities": [{"name": "k", "keyless": {"identities": []}}]}}),
                "spec.verification.cosign.authorities[].key",
            ),
        ];
        for (verification, field) in cases {
            let configs = [image_config(
                "ic",
                &["r.io/"],
                json!({"verification": verification}),
            )];
            let error = ImagePolicy::for_package(&configs, "r.io/fn:v1").unwrap_err();
            assert_eq!(
                (error.config.as_str(), error.field),
                ("ic", field),
                "{error}"
            );
        }
        let configs = [image_config(
            "ic",
            &["r.io/"],
            json!({"rewriteImage": {"prefix": ""}}),
        )];
        let error = ImagePolicy::for_package(&configs, "r.io/fn:v1").unwrap_err();
        assert_eq!(error.field, "spec.rewriteImage.prefix");
    }
}
