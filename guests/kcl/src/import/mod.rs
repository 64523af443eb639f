//! KCL models from CustomResourceDefinitions, as `kcl import -m crd` writes
//! them and as Upbound's `up` lays them out for project functions.
//!
//! Pure: CRD documents come in as JSON values, files go out as a map from a
//! path relative to the models directory to its text. An XRD is turned into
//! its CRDs by the caller first (the host holds Crossplane's derivation).
//!
//! Two layouts:
//! - [`Layout::Kcl`], `kcl import -m crd`'s: `<version>/<group>_<version>_<kind>.k`
//!   (group and kind in snake case), beside `k8s/apimachinery/pkg/apis/meta/v1/`
//!   and a `kcl.mod` naming the package `models`.
//! - [`Layout::Upbound`], what `up` makes of it under `.up/kcl/models`: the
//!   group reversed into directories, then the version, then the kind in
//!   lower case (`io/upbound/aws/ec2/v1beta1/vpc.k`, imported as
//!   `models.io.upbound.aws.ec2.v1beta1`), and `ObjectMeta.managedFields`
//!   typed `any` (its `ManagedFieldsEntry` file left out).

mod names;
mod schema;

use serde_json::Value;
use std::collections::BTreeMap;

const OBJECT_META: &str = include_str!("k8s/object_meta.k");
const OWNER_REFERENCE: &str = include_str!("k8s/owner_reference.k");
const MANAGED_FIELDS_ENTRY: &str = include_str!("k8s/managed_fields_entry.k");
const META_DIR: &str = "k8s/apimachinery/pkg/apis/meta/v1";

/// How the generated files are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// As `kcl import -m crd` writes them.
    #[default]
    Kcl,
    /// As `up` (Upbound projects) lays them out under `.up/kcl/models`.
    Upbound,
}

/// What `import` is asked for.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    pub layout: Layout,
    /// Keep the attributes of objects reached from the root through objects
    /// first and nested schemas last, as kcl-openapi's own command does;
    /// `kcl import` (and `up`) sorts every schema's attributes by name.
    pub keep_order: bool,
}

/// A CRD to import, named for errors (its file, or `file#2` in a stream).
#[derive(Debug, Clone)]
pub struct Document {
    pub name: String,
    pub value: Value,
}

/// What a document is, as `kcl import` and `up` tell them apart: by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentKind {
    CustomResourceDefinition,
    CompositeResourceDefinition,
    Other,
}

/// The kind of a document.
pub fn document_kind(value: &Value) -> DocumentKind {
    match value.get("kind").and_then(Value::as_str) {
        Some("CustomResourceDefinition") => DocumentKind::CustomResourceDefinition,
        Some("CompositeResourceDefinition") => DocumentKind::CompositeResourceDefinition,
        _ => DocumentKind::Other,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("{document}: {field}: {problem}")]
    Field {
        document: String,
        field: String,
        problem: String,
    },
    #[error("{document}: kind {kind:?} is not a CustomResourceDefinition")]
    NotACrd { document: String, kind: String },
    #[error(
        "{document}: spec.versions: no version has a schema (spec.versions[*].schema.openAPIV3Schema or spec.validation.openAPIV3Schema)"
    )]
    NoSchema { document: String },
    #[error("{document} and {other}: both define {path}")]
    Duplicate {
        document: String,
        other: String,
        path: String,
    },
}

fn text_field<'v>(
    document: &Document,
    value: &'v Value,
    field: &str,
) -> Result<&'v str, ImportError> {
    let mut current = value;
    for part in field.split('.') {
        current = current.get(part).unwrap_or(&Value::Null);
    }
    current
        .as_str()
        .filter(|text| !text.is_empty())
        .ok_or_else(|| ImportError::Field {
            document: document.name.clone(),
            field: field.to_string(),
            problem: "must be a non-empty string".to_string(),
        })
}

/// Whether a path segment is a Kubernetes API version (`v1`, `v1beta1`).
fn is_api_version(segment: &str) -> bool {
    let Some(rest) = segment.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let rest = &rest[digits..];
    if rest.is_empty() {
        return true;
    }
    let Some(number) = rest
        .strip_prefix("alpha")
        .or_else(|| rest.strip_prefix("beta"))
    else {
        return false;
    };
    !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
}

/// Where a generated file goes in a layout, from its `kcl import` file name.
fn layout_path(layout: Layout, version: &str, file_name: &str) -> String {
    match layout {
        Layout::Kcl => format!("{version}/{file_name}.k"),
        Layout::Upbound => {
            // As `up` moves it: the parts before the first API version
            // reversed into directories, the rest joined into the name.
            let parts: Vec<&str> = file_name.split('_').collect();
            match parts.iter().position(|part| is_api_version(part)) {
                Some(index) if index > 0 => {
                    let mut dirs: Vec<&str> = parts[..index].to_vec();
                    dirs.reverse();
                    dirs.push(parts[index]);
                    let name = parts[index + 1..].concat().replace("swagger", "");
                    format!("{}/{name}.k", dirs.join("/"))
                }
                _ => format!("{version}/{file_name}.k"),
            }
        }
    }
}

/// The `kcl.mod` of the models package.
pub const MODELS_KCL_MOD: &str =
    "[package]\nname = \"models\"\nedition = \"v0.11.2\"\nversion = \"0.0.1\"\n";

/// Generates the KCL models of `documents` (CRDs): every version with a
/// schema, and the Kubernetes `ObjectMeta` models they import.
pub fn import(
    documents: &[Document],
    options: &ImportOptions,
) -> Result<BTreeMap<String, String>, ImportError> {
    let mut files = BTreeMap::new();
    let mut origin: BTreeMap<String, String> = BTreeMap::new();
    for document in documents {
        if document_kind(&document.value) != DocumentKind::CustomResourceDefinition {
            return Err(ImportError::NotACrd {
                document: document.name.clone(),
                kind: document
                    .value
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            });
        }
        for (path, text) in import_crd(document, options)? {
            if let Some(other) = origin.get(&path) {
                return Err(ImportError::Duplicate {
                    document: document.name.clone(),
                    other: other.clone(),
                    path,
                });
            }
            origin.insert(path.clone(), document.name.clone());
            files.insert(path, text);
        }
    }
    files.insert("kcl.mod".to_string(), MODELS_KCL_MOD.to_string());
    files.insert(
        format!("{META_DIR}/owner_reference.k"),
        OWNER_REFERENCE.to_string(),
    );
    match options.layout {
        Layout::Kcl => {
            files.insert(format!("{META_DIR}/object_meta.k"), OBJECT_META.to_string());
            files.insert(
                format!("{META_DIR}/managed_fields_entry.k"),
                MANAGED_FIELDS_ENTRY.to_string(),
            );
        }
        Layout::Upbound => {
            files.insert(
                format!("{META_DIR}/object_meta.k"),
                OBJECT_META.replace(
                    "managedFields?: [ManagedFieldsEntry]",
                    "managedFields?: any",
                ),
            );
        }
    }
    Ok(files)
}

/// One CRD's models: a file per version that has a schema.
fn import_crd(
    document: &Document,
    options: &ImportOptions,
) -> Result<Vec<(String, String)>, ImportError> {
    let value = &document.value;
    let group = text_field(document, value, "spec.group")?;
    let kind = text_field(document, value, "spec.names.kind")?;
    let spec = value.get("spec").unwrap_or(&Value::Null);
    // apiextensions.k8s.io/v1beta1 may give one schema for every version.
    let shared_schema = spec
        .get("validation")
        .and_then(|validation| validation.get("openAPIV3Schema"));
    let mut versions: Vec<(String, &Value, String)> = Vec::new();
    match spec.get("versions") {
        Some(Value::Array(list)) if !list.is_empty() => {
            for (index, version) in list.iter().enumerate() {
                let name = version
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|name| !name.is_empty())
                    .ok_or_else(|| ImportError::Field {
                        document: document.name.clone(),
                        field: format!("spec.versions[{index}].name"),
                        problem: "must be a non-empty string".to_string(),
                    })?;
                let own = version
                    .get("schema")
                    .and_then(|schema| schema.get("openAPIV3Schema"))
                    .filter(|schema| !schema.is_null());
                if let Some(schema) = own {
                    versions.push((
                        name.to_string(),
                        schema,
                        format!("spec.versions[{index}].schema.openAPIV3Schema"),
                    ));
                } else if let Some(schema) = shared_schema {
                    versions.push((
                        name.to_string(),
                        schema,
                        "spec.validation.openAPIV3Schema".to_string(),
                    ));
                }
            }
        }
        _ => {
            if let (Some(schema), Some(name)) =
                (shared_schema, spec.get("version").and_then(Value::as_str))
            {
                versions.push((
                    name.to_string(),
                    schema,
                    "spec.validation.openAPIV3Schema".to_string(),
                ));
            }
        }
    }
    if versions.is_empty() {
        return Err(ImportError::NoSchema {
            document: document.name.clone(),
        });
    }
    let mut files = Vec::new();
    for (version, schema, field) in versions {
        let definition = schema::Definition {
            document: &document.name,
            group,
            version: &version,
            kind,
            field,
            schema,
            keep_order: options.keep_order,
        };
        let (file_name, text) = schema::generate(&definition)?;
        files.push((layout_path(options.layout, &version, &file_name), text));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_go_where_the_layout_puts_them() {
        let cases = [
            (
                Layout::Kcl,
                "v1beta1",
                "ec2_aws_upbound_io_v1beta1_v_p_c",
                "v1beta1/ec2_aws_upbound_io_v1beta1_v_p_c.k",
            ),
            (
                Layout::Upbound,
                "v1beta1",
                "ec2_aws_upbound_io_v1beta1_v_p_c",
                "io/upbound/aws/ec2/v1beta1/vpc.k",
            ),
            (
                Layout::Upbound,
                "v1alpha1",
                "platform_upbound_io_v1alpha1_x_app",
                "io/upbound/platform/v1alpha1/xapp.k",
            ),
            (
                Layout::Upbound,
                "v1",
                "example_org_v1_test_swagger",
                "org/example/v1/test.k",
            ),
            (
                Layout::Upbound,
                "v2",
                "helm_crossplane_io_v2_release",
                "io/crossplane/helm/v2/release.k",
            ),
        ];
        for (layout, version, file_name, path) in cases {
            assert_eq!(
                layout_path(layout, version, file_name),
                path,
                "{layout:?} {file_name}"
            );
        }
    }

    #[test]
    fn api_versions_are_recognised() {
        for (segment, is_version) in [
            ("v1", true),
            ("v1beta1", true),
            ("v2alpha3", true),
            ("v1beta", false),
            ("io", false),
            ("vpc", false),
            ("v", false),
        ] {
            assert_eq!(is_api_version(segment), is_version, "{segment}");
        }
    }

    fn crd(versions: Value) -> Value {
        serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "spec": {"group": "example.org", "names": {"kind": "Widget"}, "versions": versions}
        })
    }

    #[test]
    fn bad_documents_are_refused_naming_the_field() {
        let cases = [
            (
                serde_json::json!({"kind": "ConfigMap"}),
                "w.yaml: kind \"ConfigMap\" is not a CustomResourceDefinition",
            ),
            (
                serde_json::json!({"kind": "CustomResourceDefinition", "spec": {"names": {"kind": "W"}}}),
                "w.yaml: spec.group: must be a non-empty string",
            ),
            (
                crd(serde_json::json!([{"name": "v1"}])),
                "w.yaml: spec.versions: no version has a schema (spec.versions[*].schema.openAPIV3Schema or spec.validation.openAPIV3Schema)",
            ),
            (
                crd(
                    serde_json::json!([{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": 3}}}}]),
                ),
                "w.yaml: spec.versions[0].schema.openAPIV3Schema.properties.spec: must be an object",
            ),
            (
                crd(
                    serde_json::json!([{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "color"}}}}}}}]),
                ),
                "w.yaml: spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size.type: unsupported type \"color\"",
            ),
        ];
        for (value, message) in cases {
            let documents = [Document {
                name: "w.yaml".into(),
                value,
            }];
            let error = import(&documents, &ImportOptions::default()).expect_err(message);
            assert_eq!(error.to_string(), message);
        }
    }

    #[test]
    fn upbound_layout_types_managed_fields_as_any_and_drops_its_entry() {
        let documents = [Document {
            name: "w.yaml".into(),
            value: crd(
                serde_json::json!([{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object"}}}]),
            ),
        }];
        let options = ImportOptions {
            layout: Layout::Upbound,
            keep_order: false,
        };
        let files = import(&documents, &options).expect("imports");
        let paths: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            [
                "k8s/apimachinery/pkg/apis/meta/v1/object_meta.k",
                "k8s/apimachinery/pkg/apis/meta/v1/owner_reference.k",
                "kcl.mod",
                "org/example/v1/widget.k",
            ]
        );
        assert!(
            files["k8s/apimachinery/pkg/apis/meta/v1/object_meta.k"]
                .contains("    managedFields?: any\n")
        );
    }
}
