//! The artifact layout: the CNCF TAG-Runtime Wasm OCI artifact (config
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer),
//! written byte-for-byte reproducibly, and read alongside the older
//! wasm-to-oci layout.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::component::ComponentWorld;
use crate::digest;

pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// Registries that predate OCI serve the same manifest shape under Docker's type.
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
pub const LEGACY_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v1+json";
pub const LEGACY_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";

/// The creation time written into every artifact, so the same component
/// always yields the same manifest digest.
pub const FIXED_CREATED: &str = "1970-01-01T00:00:00Z";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Descriptor {
    #[serde(rename = "mediaType")]
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    /// Crossplane marks its package's own layers here (`io.crossplane.xpkg`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    #[serde(rename = "schemaVersion")]
    pub schema_version: u32,
    #[serde(rename = "mediaType", default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
}

impl Descriptor {
    /// The descriptor of the blob `bytes`, without annotations.
    pub fn of(media_type: &str, bytes: &[u8]) -> Descriptor {
        Descriptor {
            media_type: media_type.to_string(),
            digest: digest(bytes),
            size: bytes.len() as u64,
            annotations: BTreeMap::new(),
        }
    }
}

/// Which of the two accepted layouts an artifact uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// CNCF TAG-Runtime: config v0, layer `application/wasm`.
    Cncf,
    /// wasm-to-oci: config v1 (usually `{}`), layer `…content.layer.v1+wasm`.
    WasmToOci,
}

impl Manifest {
    /// The layout and the single Wasm layer, or why this is no Wasm artifact.
    pub fn wasm_layer(&self) -> Result<(Layout, &Descriptor), String> {
        if self.schema_version != 2 {
            return Err(format!(
                "manifest schemaVersion {} (expected 2)",
                self.schema_version
            ));
        }
        let layout = match self.config.media_type.as_str() {
            CONFIG_MEDIA_TYPE => Layout::Cncf,
            LEGACY_CONFIG_MEDIA_TYPE => Layout::WasmToOci,
            other => {
                return Err(format!(
                    "config media type {other:?} (expected {CONFIG_MEDIA_TYPE} or {LEGACY_CONFIG_MEDIA_TYPE})"
                ));
            }
        };
        let [layer] = self.layers.as_slice() else {
            return Err(format!(
                "{} layers (a Wasm artifact has exactly one)",
                self.layers.len()
            ));
        };
        if layer.media_type != LAYER_MEDIA_TYPE && layer.media_type != LEGACY_LAYER_MEDIA_TYPE {
            return Err(format!(
                "layer media type {:?} (expected {LAYER_MEDIA_TYPE} or {LEGACY_LAYER_MEDIA_TYPE})",
                layer.media_type
            ));
        }
        Ok((layout, layer))
    }
}

/// The CNCF Wasm config. Every field is optional on read: wasm-to-oci
/// configs are `{}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WasmConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    #[serde(
        rename = "layerDigests",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub layer_digests: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentSection>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ComponentSection {
    #[serde(default)]
    pub exports: Vec<String>,
    #[serde(default)]
    pub imports: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// plait's world, recorded as the component's target.
pub const TARGET_WORLD: &str = "plait:function/function@1.0.0";

/// The blobs of one artifact, ready to push.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub config: Vec<u8>,
    pub config_digest: String,
    pub manifest: Vec<u8>,
    pub manifest_digest: String,
    pub layer_digest: String,
}

/// Builds the CNCF artifact of a component. The bytes depend only on the
/// component and `author`, so pushing the same file twice gives one digest.
pub fn build(wasm: &[u8], world: &ComponentWorld, author: Option<&str>) -> Artifact {
    let layer_digest = digest(wasm);
    let config = WasmConfig {
        created: Some(FIXED_CREATED.to_string()),
        author: author.map(str::to_string),
        architecture: Some("wasm".to_string()),
        os: Some("wasip2".to_string()),
        layer_digests: vec![layer_digest.clone()],
        component: Some(ComponentSection {
            exports: world.exports.clone(),
            imports: world.imports.clone(),
            target: Some(TARGET_WORLD.to_string()),
        }),
    };
    let config = to_json(&config);
    let config_digest = digest(&config);
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_string()),
        config: Descriptor {
            media_type: CONFIG_MEDIA_TYPE.to_string(),
            digest: config_digest.clone(),
            size: config.len() as u64,
            annotations: BTreeMap::new(),
        },
        layers: vec![Descriptor {
            media_type: LAYER_MEDIA_TYPE.to_string(),
            digest: layer_digest.clone(),
            size: wasm.len() as u64,
            annotations: BTreeMap::new(),
        }],
    };
    let manifest = to_json(&manifest);
    let manifest_digest = digest(&manifest);
    Artifact {
        config,
        config_digest,
        manifest,
        manifest_digest,
        layer_digest,
    }
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Plain structs of strings and numbers always serialize.
    serde_json::to_vec(value).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn descriptor(media_type: &str) -> Descriptor {
        Descriptor {
            media_type: media_type.into(),
            digest: "sha256:00".into(),
            size: 1,
            annotations: BTreeMap::new(),
        }
    }

    fn manifest(config: &str, layers: &[&str]) -> Manifest {
        Manifest {
            schema_version: 2,
            media_type: None,
            config: descriptor(config),
            layers: layers.iter().map(|l| descriptor(l)).collect(),
        }
    }

    #[test]
    fn both_wasm_layouts_are_read_and_others_refused() {
        let cases = [
            (
                manifest(CONFIG_MEDIA_TYPE, &[LAYER_MEDIA_TYPE]),
                Ok(Layout::Cncf),
            ),
            (
                manifest(LEGACY_CONFIG_MEDIA_TYPE, &[LEGACY_LAYER_MEDIA_TYPE]),
                Ok(Layout::WasmToOci),
            ),
            (
                manifest(
                    "application/vnd.oci.image.config.v1+json",
                    &[LAYER_MEDIA_TYPE],
                ),
                Err("config media type"),
            ),
            (
                manifest(CONFIG_MEDIA_TYPE, &[LAYER_MEDIA_TYPE, LAYER_MEDIA_TYPE]),
                Err("2 layers"),
            ),
            (manifest(CONFIG_MEDIA_TYPE, &[]), Err("0 layers")),
            (
                manifest(
                    CONFIG_MEDIA_TYPE,
                    &["application/vnd.oci.image.layer.v1.tar+gzip"],
                ),
                Err("layer media type"),
            ),
        ];
        for (manifest, want) in cases {
            match (manifest.wasm_layer(), want) {
                (Ok((layout, _)), Ok(want)) => assert_eq!(layout, want),
                (Err(got), Err(want)) => assert!(got.contains(want), "{got}"),
                (got, want) => panic!("got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn artifacts_depend_only_on_the_component_and_author() {
        let world = ComponentWorld {
            imports: vec!["plait:function/log@1.0.0".into()],
            exports: vec!["run-function".into()],
        };
        let a = build(b"\0asm component", &world, None);
        let b = build(b"\0asm component", &world, None);
        let other = build(b"\0asm other", &world, None);
        let authored = build(b"\0asm component", &world, Some("me"));
        assert_eq!(a.manifest, b.manifest);
        assert_eq!(a.manifest_digest, b.manifest_digest);
        assert_ne!(a.manifest_digest, other.manifest_digest);
        assert_ne!(a.manifest_digest, authored.manifest_digest);

        let config: WasmConfig = serde_json::from_slice(&a.config).unwrap();
        assert_eq!(config.created.as_deref(), Some(FIXED_CREATED));
        assert_eq!(config.layer_digests, vec![digest(b"\0asm component")]);
        assert_eq!(config.component.unwrap().imports, world.imports);
        let manifest: Manifest = serde_json::from_slice(&a.manifest).unwrap();
        assert_eq!(manifest.wasm_layer().unwrap().0, Layout::Cncf);
        assert_eq!(manifest.config.digest, a.config_digest);
    }
}
