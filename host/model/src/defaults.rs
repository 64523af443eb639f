//! Structural defaulting of XRs from an XRD's schema, as the Kubernetes API server does it.

use serde_json::{Value, json};

use crate::ModelError;
use crate::xrd::{CompositeResourceDefinition, XrdScope};

/// Applies the `default:`s of the XRD schema for the XR's version (or, when the XR's
/// apiVersion is not one of the XRD's, the referenceable version) to `xr`.
///
/// Like the generated CRD, only the `spec` and `status` subtrees carry user defaults. A
/// `defaultCompositionUpdatePolicy` written in the XRD becomes the default of the XR's
/// `compositionUpdatePolicy` (under `spec.crossplane` for v2-style XRs), as Crossplane injects it.
pub fn apply_schema_defaults(
    xr: &mut Value,
    xrd: &CompositeResourceDefinition,
) -> Result<(), ModelError> {
    let fail = |message: String| ModelError::Defaults {
        xrd: xrd.metadata.name().to_string(),
        message,
    };
    let api_version = xr
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let own_version = api_version
        .split_once('/')
        .filter(|(group, _)| *group == xrd.spec.group)
        .and_then(|(_, version)| xrd.version(version));
    let version = own_version
        .or_else(|| xrd.referenceable_version())
        .ok_or_else(|| fail("it has no referenceable version".into()))?;
    let Value::Object(obj) = xr else {
        return Err(fail("the composite resource is not an object".into()));
    };
    if let Some(schema) = version.open_api_v3_schema() {
        for key in ["spec", "status"] {
            if let (Some(value), Some(sub)) = (obj.get_mut(key), schema_property(schema, key)) {
                default_value(value, sub);
            }
        }
    }
    if let Some(policy) = xrd.spec.default_composition_update_policy {
        let holder = match xrd.scope() {
            XrdScope::LegacyCluster => obj.get_mut("spec"),
            XrdScope::Namespaced | XrdScope::Cluster => {
                obj.get_mut("spec").and_then(|s| s.get_mut("crossplane"))
            }
        };
        if let Some(Value::Object(holder)) = holder
            && holder
                .get("compositionUpdatePolicy")
                .is_none_or(Value::is_null)
        {
            holder.insert("compositionUpdatePolicy".into(), json!(policy));
        }
    }
    Ok(())
}

fn schema_property<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema.get("properties")?.get(key)
}

fn is_nullable(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool) == Some(true)
}

/// Sets defaults of missing (or null but not nullable) properties of objects that exist, then
/// recurses into every property, `additionalProperties` value and array item, including the
/// values just defaulted.
pub fn default_value(x: &mut Value, schema: &Value) {
    match x {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            for (k, prop) in props.into_iter().flatten() {
                let Some(default) = prop.get("default") else {
                    continue;
                };
                let missing = match map.get(k) {
                    None => true,
                    Some(Value::Null) => !is_nullable(prop),
                    Some(_) => false,
                };
                if missing {
                    map.insert(k.clone(), default.clone());
                }
            }
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (k, v) in map.iter_mut() {
                if let Some(prop) = props.and_then(|p| p.get(k)) {
                    default_value(v, prop);
                } else if let Some(a) = additional {
                    default_value(v, a);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for v in items {
                    default_value(v, item_schema);
                }
            }
        }
        _ => {}
    }
}
