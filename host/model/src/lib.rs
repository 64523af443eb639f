//! The Crossplane API as plait reads it: serde types for Compositions, XRDs, Functions,
//! ImageConfigs and EnvironmentConfigs, their field validation, the `mode: Resources` → Pipeline conversion and
//! XRD schema defaulting.

mod composition;
pub mod composition_hash;
mod composition_validation;
mod convert;
pub mod crd;
pub mod crd_width;
mod defaults;
mod environment_config;
mod error;
mod function;
mod image_config;
mod meta;
mod xrd;

pub use composition::*;
pub use convert::{
    ConvertError, ENVIRONMENT_CONFIGS_FUNCTION, ENVIRONMENT_CONFIGS_STEP,
    PATCH_AND_TRANSFORM_FUNCTION, PATCH_AND_TRANSFORM_STEP,
};
pub use defaults::{apply_schema_defaults, default_value};
pub use environment_config::EnvironmentConfig;
pub use error::ModelError;
pub use function::{Function, FunctionSpec, LocalObjectReference};
pub use image_config::{
    CosignAuthority, CosignVerificationConfig, ImageConfig, ImageConfigError, ImageConfigSpec,
    ImageMatch, ImagePolicy, ImageRewrite, ImageVerification, KeyRef, RegistryAuthentication,
    RegistryConfig, SecretKeySelector,
};
pub use meta::{Manifest, ObjectMeta, TypeReference, decode, parse_documents};
pub use plait_go_compat::field::{
    Error as FieldError, ErrorKind as FieldErrorKind, Path as FieldPath, render_errors,
};
pub use xrd::*;
