//! `plait xr generate` and `plait xr patch`: the crossplane CLI's (v2.3+)
//! `xr` commands. `generate` turns a claim into the XR it would bind, as an
//! XR file for `plait render`; `patch` applies an XRD's schema defaults to
//! an XR.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use plait_model::{CompositeResourceDefinition, Manifest};
use serde_json::{Map, Value, json};

use crate::files;

const LABEL_CLAIM_NAME: &str = "crossplane.io/claim-name";
const LABEL_CLAIM_NAMESPACE: &str = "crossplane.io/claim-namespace";
const LABEL_COMPOSITE: &str = "crossplane.io/composite";

#[derive(clap::Subcommand)]
pub enum XrCommand {
    /// Generate a composite resource (XR) from a claim: the claim's spec,
    /// kind `X` + the claim's kind, and a reference to the claim.
    Generate(GenerateArgs),
    /// Patch a composite resource (XR): apply an XRD's schema defaults.
    Patch(PatchArgs),
}

#[derive(clap::Args)]
pub struct GenerateArgs {
    /// The claim YAML file to convert, or '-' for standard input.
    #[arg(default_value = "-")]
    pub input_file: PathBuf,
    /// The file to write the generated XR YAML to [default: standard output].
    #[arg(short = 'o', long = "output-file")]
    pub output_file: Option<PathBuf>,
    /// The XR's name [default: the claim's name (with --direct), else the
    /// claim's name with a random suffix].
    #[arg(long)]
    pub name: Option<String>,
    /// The XR's kind [default: 'X' + the claim's kind].
    #[arg(long)]
    pub kind: Option<String>,
    /// A directly created XR: no claim reference, no name suffix.
    #[arg(long, overrides_with = "no_direct")]
    pub direct: bool,
    #[arg(long = "no-direct", hide = true)]
    pub no_direct: bool,
    /// Set a fresh random metadata.uid on the XR.
    #[arg(long = "gen-uid")]
    pub gen_uid: bool,
}

#[derive(clap::Args)]
pub struct PatchArgs {
    /// The XR YAML file to patch, or '-' for standard input.
    #[arg(default_value = "-")]
    pub input_file: PathBuf,
    /// The file to write the patched XR YAML to [default: standard output].
    #[arg(short = 'o', long = "output-file")]
    pub output_file: Option<PathBuf>,
    /// Apply the defaults of this XRD's schema to the XR.
    #[arg(long)]
    pub xrd: Option<PathBuf>,
}

pub fn run(command: &XrCommand) -> Result<String> {
    let (output, file) = match command {
        XrCommand::Generate(args) => {
            let claim = files::read_one(&args.input_file, "claim")?;
            let options = GenerateOptions {
                name: args.name.clone(),
                kind: args.kind.clone(),
                direct: args.direct,
                uid: args.gen_uid.then(random_uid),
            };
            let xr = xr_from_claim(&claim, &options, &random_suffix()).with_context(|| {
                format!(
                    "{}: cannot convert the claim to an XR",
                    args.input_file.display()
                )
            })?;
            (files::to_yaml_stream(&[xr])?, &args.output_file)
        }
        XrCommand::Patch(args) => {
            let Some(xrd_path) = &args.xrd else {
                bail!("xr patch needs a patching flag: --xrd");
            };
            let mut xr = files::read_one(&args.input_file, "composite resource")?;
            let xrd = CompositeResourceDefinition::from_value(files::read_one(xrd_path, "XRD")?)
                .with_context(|| format!("{}: not a valid XRD", xrd_path.display()))?;
            plait_model::apply_schema_defaults(&mut xr, &xrd)?;
            (files::to_yaml_stream(&[xr])?, &args.output_file)
        }
    };
    match file {
        Some(path) => {
            std::fs::write(path, output)
                .with_context(|| format!("cannot write output file {}", path.display()))?;
            Ok(String::new())
        }
        None => Ok(output),
    }
}

/// How `xr generate` shapes the XR.
#[derive(Debug, Default)]
pub struct GenerateOptions {
    pub name: Option<String>,
    pub kind: Option<String>,
    pub direct: bool,
    pub uid: Option<String>,
}

/// Why a claim cannot become an XR.
#[derive(Debug, PartialEq, Eq)]
pub enum GenerateError {
    Missing(&'static str),
    ApiVersion(String),
}

impl std::fmt::Display for GenerateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GenerateError::Missing(field) => write!(f, "the claim has no {field}"),
            GenerateError::ApiVersion(version) => write!(
                f,
                "the claim's apiVersion {version:?} is not GROUP/VERSION or VERSION"
            ),
        }
    }
}

impl std::error::Error for GenerateError {}

/// The XR a claim would bind, as the crossplane CLI's `xr generate` writes
/// it: the claim's apiVersion, annotations, labels and spec; kind `X` +
/// the claim's kind unless given; unless `direct`, a name with
/// `suffix` after the claim's, the claim labels and `spec.claimRef`.
pub fn xr_from_claim(
    claim: &Value,
    options: &GenerateOptions,
    suffix: &str,
) -> Result<Value, GenerateError> {
    let text = |pointer: &str| {
        claim
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let claim_kind = text("/kind");
    if claim_kind.is_empty() {
        return Err(GenerateError::Missing("kind"));
    }
    let api_version = text("/apiVersion");
    if api_version.is_empty() {
        return Err(GenerateError::Missing("apiVersion"));
    }
    if api_version.split('/').count() > 2 || api_version.split('/').any(str::is_empty) {
        return Err(GenerateError::ApiVersion(api_version.into()));
    }
    let Some(spec) = claim.get("spec").filter(|s| s.is_object()) else {
        return Err(GenerateError::Missing("spec"));
    };
    let claim_name = text("/metadata/name");
    let claim_namespace = text("/metadata/namespace");
    let mut labels: Map<String, Value> = claim
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut xr = json!({
        "apiVersion": api_version,
        "kind": options.kind.as_deref().unwrap_or(&format!("X{claim_kind}")),
        "metadata": {},
        "spec": spec,
    });
    if let Some(annotations) = claim
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .filter(|a| !a.is_empty())
    {
        xr["metadata"]["annotations"] = Value::Object(annotations.clone());
    }
    let mut name = claim_name.to_string();
    if !options.direct {
        name = format!("{claim_name}-{suffix}");
        labels.insert(LABEL_CLAIM_NAME.into(), json!(claim_name));
        labels.insert(LABEL_CLAIM_NAMESPACE.into(), json!(claim_namespace));
        xr["spec"]["claimRef"] = json!({
            "apiVersion": api_version, "kind": claim_kind,
            "name": claim_name, "namespace": claim_namespace,
        });
    }
    if let Some(given) = &options.name {
        name.clone_from(given);
    }
    xr["metadata"]["name"] = json!(name);
    // The composite label is the XR's own, set by its controller.
    labels.remove(LABEL_COMPOSITE);
    if !labels.is_empty() {
        xr["metadata"]["labels"] = Value::Object(labels);
    }
    if let Some(uid) = &options.uid {
        xr["metadata"]["uid"] = json!(uid);
    }
    Ok(xr)
}

/// A random number from the standard library's per-process hash keys.
fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

/// Five characters as Kubernetes' generated names end (no vowels, no
/// look-alike digits).
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut n = random_u64();
    (0..5)
        .map(|_| {
            let c = ALPHABET[(n % ALPHABET.len() as u64) as usize];
            n /= ALPHABET.len() as u64;
            char::from(c)
        })
        .collect()
}

/// A random (version 4) UUID.
fn random_uid() -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&random_u64().to_le_bytes());
    bytes[8..].copy_from_slice(&random_u64().to_le_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_becomes_the_xr_the_crossplane_cli_generates() {
        let claim = json!({
            "apiVersion": "example.org/v1", "kind": "App",
            "metadata": {"name": "app", "namespace": "team-a",
                "labels": {"team": "a", "crossplane.io/composite": "stale"},
                "annotations": {"note": "n"}},
            "spec": {"image": "one"},
        });
        let options = |name: Option<&str>, kind: Option<&str>, direct: bool| GenerateOptions {
            name: name.map(str::to_string),
            kind: kind.map(str::to_string),
            direct,
            uid: None,
        };
        let bound = json!({
            "apiVersion": "example.org/v1", "kind": "XApp",
            "metadata": {"name": "app-x2b4c", "annotations": {"note": "n"}, "labels": {
                "team": "a", "crossplane.io/claim-name": "app", "crossplane.io/claim-namespace": "team-a"}},
            "spec": {"image": "one", "claimRef": {
                "apiVersion": "example.org/v1", "kind": "App", "name": "app", "namespace": "team-a"}},
        });
        let mut named = bound.clone();
        named["metadata"]["name"] = json!("my-xr");
        named["kind"] = json!("Application");
        let direct = json!({
            "apiVersion": "example.org/v1", "kind": "XApp",
            "metadata": {"name": "app", "annotations": {"note": "n"}, "labels": {"team": "a"}},
            "spec": {"image": "one"},
        });
        let cases = [
            (options(None, None, false), Ok(bound)),
            (
                options(Some("my-xr"), Some("Application"), false),
                Ok(named),
            ),
            (options(None, None, true), Ok(direct)),
        ];
        for (options, want) in cases {
            assert_eq!(
                xr_from_claim(&claim, &options, "x2b4c"),
                want,
                "{options:?}"
            );
        }
        let broken = [
            (
                json!({"apiVersion": "example.org/v1", "spec": {}}),
                GenerateError::Missing("kind"),
            ),
            (
                json!({"kind": "App", "spec": {}}),
                GenerateError::Missing("apiVersion"),
            ),
            (
                json!({"apiVersion": "example.org/v1", "kind": "App"}),
                GenerateError::Missing("spec"),
            ),
            (
                json!({"apiVersion": "a/b/c", "kind": "App", "spec": {}}),
                GenerateError::ApiVersion("a/b/c".into()),
            ),
        ];
        for (claim, want) in broken {
            assert_eq!(
                xr_from_claim(&claim, &GenerateOptions::default(), "s"),
                Err(want),
                "{claim}"
            );
        }
    }

    #[test]
    fn random_names_and_uids_have_kubernetes_shapes() {
        let suffix = random_suffix();
        assert_eq!(suffix.len(), 5);
        assert!(
            suffix
                .bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)),
            "{suffix}"
        );
        let uid = random_uid();
        let groups: Vec<usize> = uid.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{uid}");
        assert_eq!(&uid[14..15], "4", "{uid}");
        assert_ne!(random_uid(), uid);
    }
}
