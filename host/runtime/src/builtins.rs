//! The functions built into the host: their names, the upstream packages
//! they stand in for, and their embedded components.

use std::sync::LazyLock;

use crate::cache::digest;

/// The functions built into the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    PatchAndTransform,
    AutoReady,
    EnvironmentConfigs,
    GoTemplating,
    Kcl,
    Sequencer,
    Cidr,
    ExtraResources,
    StatusTransformer,
}

static PATCH_AND_TRANSFORM_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/plait_patch_and_transform.wasm"));
static AUTO_READY_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/plait_auto_ready.wasm"));
static ENVIRONMENT_CONFIGS_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/plait_environment_configs.wasm"));
static GO_TEMPLATING_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/plait_go_templating.wasm"));
static KCL_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/plait_function_kcl.wasm"));
static SEQUENCER_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/plait_sequencer.wasm"));
static CIDR_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/plait_cidr.wasm"));
static EXTRA_RESOURCES_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/plait_extra_resources.wasm"));
static STATUS_TRANSFORMER_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/plait_status_transformer.wasm"));

static BUILTIN_DIGESTS: LazyLock<[String; 9]> =
    LazyLock::new(|| Builtin::ALL.map(|b| digest(b.wasm())));

impl Builtin {
    pub const ALL: [Builtin; 9] = [
        Builtin::PatchAndTransform,
        Builtin::AutoReady,
        Builtin::EnvironmentConfigs,
        Builtin::GoTemplating,
        Builtin::Kcl,
        Builtin::Sequencer,
        Builtin::Cidr,
        Builtin::ExtraResources,
        Builtin::StatusTransformer,
    ];

    /// The function name a Composition step refers to.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::PatchAndTransform => "function-patch-and-transform",
            Builtin::AutoReady => "function-auto-ready",
            Builtin::EnvironmentConfigs => "function-environment-configs",
            Builtin::GoTemplating => "function-go-templating",
            Builtin::Kcl => "function-kcl",
            Builtin::Sequencer => "function-sequencer",
            Builtin::Cidr => "function-cidr",
            Builtin::ExtraResources => "function-extra-resources",
            Builtin::StatusTransformer => "function-status-transformer",
        }
    }

    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The built-in a Function's package stands for: upstream's own package
    /// of a function plait ships, or Upbound's mirror of it
    /// (`xpkg.upbound.io/upbound/function-…`), from any registry, at any
    /// version.
    pub fn from_package(package: &str) -> Option<Builtin> {
        let without_digest = package.split('@').next().unwrap_or(package);
        let repository = match without_digest.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => repo,
            _ => without_digest,
        };
        Builtin::ALL.into_iter().find(|b| {
            repository.strip_suffix(b.name()).is_some_and(|rest| {
                ["crossplane-contrib/", "upbound/"]
                    .iter()
                    .any(|organisation| {
                        rest == *organisation || rest.ends_with(&format!("/{organisation}"))
                    })
            })
        })
    }

    /// The upstream release whose behaviour the built-in matches.
    pub fn upstream_version(self) -> &'static str {
        match self {
            Builtin::PatchAndTransform => "v0.10.7",
            Builtin::AutoReady => "v0.7.0",
            Builtin::EnvironmentConfigs => "v0.7.1",
            Builtin::GoTemplating => "v0.12.2",
            Builtin::Kcl => "v0.12.2",
            Builtin::Sequencer => "v0.6.0",
            Builtin::Cidr => "v0.7.0",
            Builtin::ExtraResources => "v0.3.0",
            Builtin::StatusTransformer => "v0.5.1",
        }
    }

    /// Whether the built-in's response depends on its request alone. Go
    /// templates may read the clock and randomness (`now`, `randomChoice`,
    /// `uuidv4`, `randAlphaNum`), so function-go-templating's does not;
    /// neither does function-kcl's (KCL reads the clock, and a project
    /// function's package at `/src`).
    pub fn reads_only_its_request(self) -> bool {
        !matches!(self, Builtin::GoTemplating | Builtin::Kcl)
    }

    /// The embedded component.
    pub fn wasm(self) -> &'static [u8] {
        match self {
            Builtin::PatchAndTransform => PATCH_AND_TRANSFORM_WASM,
            Builtin::AutoReady => AUTO_READY_WASM,
            Builtin::EnvironmentConfigs => ENVIRONMENT_CONFIGS_WASM,
            Builtin::GoTemplating => GO_TEMPLATING_WASM,
            Builtin::Kcl => KCL_WASM,
            Builtin::Sequencer => SEQUENCER_WASM,
            Builtin::Cidr => CIDR_WASM,
            Builtin::ExtraResources => EXTRA_RESOURCES_WASM,
            Builtin::StatusTransformer => STATUS_TRANSFORMER_WASM,
        }
    }

    /// The `sha256:<hex>` of the embedded component.
    pub fn digest(self) -> &'static str {
        &BUILTIN_DIGESTS[self as usize]
    }

    /// The built-in whose component has `digest`, whatever the Function
    /// that named it calls it or wherever it was pulled from.
    pub fn from_digest(digest: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.digest() == digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_packages_map_to_builtins() {
        let cases = [
            (
                "xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.8.2",
                Some(Builtin::PatchAndTransform),
            ),
            (
                "xpkg.upbound.io/crossplane-contrib/function-patch-and-transform:v0.1.4",
                Some(Builtin::PatchAndTransform),
            ),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.6.3",
                Some(Builtin::AutoReady),
            ),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-auto-ready@sha256:abcd",
                Some(Builtin::AutoReady),
            ),
            (
                "localhost:5000/crossplane-contrib/function-auto-ready",
                Some(Builtin::AutoReady),
            ),
            (
                "xpkg.upbound.io/upbound/function-go-templating:v0.9.2",
                Some(Builtin::GoTemplating),
            ),
            (
                "xpkg.upbound.io/upbound/function-auto-ready:v0.2.1",
                Some(Builtin::AutoReady),
            ),
            (
                "xpkg.crossplane.io/someone-else/function-patch-and-transform:v1",
                None,
            ),
            (
                "xpkg.upbound.io/notupbound/function-auto-ready:v0.2.1",
                None,
            ),
            (
                "xpkg.crossplane.io/not-crossplane-contrib/function-auto-ready:v0.7.0",
                None,
            ),
            (
                "crossplane-contrib/function-auto-ready:v0.7.0",
                Some(Builtin::AutoReady),
            ),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-go-templating:v0.12.2",
                Some(Builtin::GoTemplating),
            ),
            (
                "xpkg.upbound.io/crossplane-contrib/function-go-templating@sha256:abcd",
                Some(Builtin::GoTemplating),
            ),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-kcl:v0.11.0",
                Some(Builtin::Kcl),
            ),
            (
                "xpkg.upbound.io/crossplane-contrib/function-kcl@sha256:abcd",
                Some(Builtin::Kcl),
            ),
            (
                "xpkg.upbound.io/upbound/function-kcl:v0.12.2",
                Some(Builtin::Kcl),
            ),
            ("xpkg.crossplane.io/kcl-lang/function-kcl:v0.12.2", None),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-sequencer:v0.6.0",
                Some(Builtin::Sequencer),
            ),
            (
                "xpkg.upbound.io/crossplane-contrib/function-sequencer@sha256:abcd",
                Some(Builtin::Sequencer),
            ),
            (
                "xpkg.upbound.io/upbound/function-cidr:v0.7.0",
                Some(Builtin::Cidr),
            ),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-cidr:v0.7.0",
                Some(Builtin::Cidr),
            ),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-extra-resources:v0.3.0",
                Some(Builtin::ExtraResources),
            ),
            (
                "xpkg.upbound.io/crossplane-contrib/function-status-transformer:v0.5.1",
                Some(Builtin::StatusTransformer),
            ),
        ];
        for (package, want) in cases {
            assert_eq!(Builtin::from_package(package), want, "{package}");
        }
    }

    #[test]
    fn only_go_templating_and_kcl_may_read_more_than_their_request() {
        let cases = [
            (Builtin::PatchAndTransform, true),
            (Builtin::AutoReady, true),
            (Builtin::EnvironmentConfigs, true),
            (Builtin::GoTemplating, false),
            (Builtin::Kcl, false),
            (Builtin::Sequencer, true),
            (Builtin::Cidr, true),
            (Builtin::ExtraResources, true),
            (Builtin::StatusTransformer, true),
        ];
        for (builtin, want) in cases {
            assert_eq!(builtin.reads_only_its_request(), want, "{builtin:?}");
        }
    }

    #[test]
    fn builtins_round_trip_through_their_names_and_digests() {
        for builtin in Builtin::ALL {
            assert_eq!(Builtin::from_name(builtin.name()), Some(builtin));
            assert_eq!(Builtin::from_digest(builtin.digest()), Some(builtin));
            assert!(builtin.digest().starts_with("sha256:"));
            assert!(!builtin.wasm().is_empty());
        }
        assert_eq!(Builtin::from_name("function-kcl"), Some(Builtin::Kcl));
        assert_eq!(Builtin::from_name("function-cue"), None);
        assert_eq!(Builtin::from_digest("sha256:0000"), None);
        assert_eq!(
            Builtin::from_name("function-patch-and-transform"),
            Some(Builtin::PatchAndTransform)
        );
        assert_eq!(
            Builtin::from_name("function-auto-ready"),
            Some(Builtin::AutoReady)
        );
    }
}
