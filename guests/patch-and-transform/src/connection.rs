//! Connection details (P&T `connection.go`): extracting them from observed
//! composed resources, and composing the connection Secret of a v2 XR.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::fieldpath;
use crate::input::{
    ConnectionDetail, FROM_CONNECTION_SECRET_KEY, FROM_FIELD_PATH, FROM_VALUE,
    WriteConnectionSecretToRef,
};
use crate::patches::{self, PatchError};

pub type ConnectionDetails = BTreeMap<String, Vec<u8>>;

/// The XR connection details `details` select from an observed composed
/// resource and its own connection details. Values that are not there (yet)
/// are left out silently.
pub fn extract(
    observed: &Value,
    observed_details: &ConnectionDetails,
    details: &[ConnectionDetail],
) -> ConnectionDetails {
    let mut out = ConnectionDetails::new();
    for detail in details {
        let value = match detail.type_.as_str() {
            FROM_VALUE => detail.value.as_ref().map(|v| v.as_bytes().to_vec()),
            FROM_CONNECTION_SECRET_KEY => detail
                .from_connection_secret_key
                .as_ref()
                .and_then(|key| observed_details.get(key).cloned()),
            FROM_FIELD_PATH => detail
                .from_field_path
                .as_deref()
                .and_then(|path| fieldpath::get_value(observed, path).ok())
                .map(|value| match value {
                    Value::String(s) => s.as_bytes().to_vec(),
                    other => plait_go_compat::json::go_json(other).into_bytes(),
                }),
            // Validation rejected every other type before anything ran.
            _ => None,
        };
        if let Some(value) = value {
            out.insert(detail.name.clone(), value);
        }
    }
    out
}

/// Whether the XR gets connection details from Crossplane: only legacy
/// (v1) XRs do; v2 XRs are recognised by their `spec.crossplane`.
pub fn supports_connection_details(xr: &Value) -> bool {
    fieldpath::get_value(xr, "spec.crossplane").is_err()
}

/// The Secret a v2 XR's connection details go into, or `None` when there are
/// none. `xr` is the observed XR.
pub fn compose_secret(
    xr: &Value,
    details: &ConnectionDetails,
    input: Option<&WriteConnectionSecretToRef>,
) -> Result<Option<Value>, PatchError> {
    if details.is_empty() {
        return Ok(None);
    }
    let (name, namespace) =
        secret_ref(xr, input).map_err(|e| e.wrap("cannot generate connection secret reference"))?;
    let data: serde_json::Map<String, Value> = details
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(STANDARD.encode(v))))
        .collect();
    let mut metadata = serde_json::Map::new();
    if !name.is_empty() {
        metadata.insert("name".to_owned(), Value::String(name));
    }
    if !namespace.is_empty() {
        metadata.insert("namespace".to_owned(), Value::String(namespace));
    }
    Ok(Some(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "data": data,
        "type": "connection.crossplane.io/v1alpha1",
    })))
}

/// The Secret's name and namespace: the input's `name`/`namespace` when
/// either is set, else the XR's `spec.writeConnectionSecretToRef`, else
/// `<xr>-connection` in the XR's namespace; then the input's patches.
fn secret_ref(
    xr: &Value,
    input: Option<&WriteConnectionSecretToRef>,
) -> Result<(String, String), PatchError> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let (name, namespace) = match input {
        Some(r) if !r.name.is_empty() || !r.namespace.is_empty() => {
            (r.name.clone(), r.namespace.clone())
        }
        _ => match &xr["spec"]["writeConnectionSecretToRef"] {
            Value::Object(r) => (
                r.get("name").map(text).unwrap_or_default(),
                r.get("namespace").map(text).unwrap_or_default(),
            ),
            _ => (
                format!("{}-connection", text(&xr["metadata"]["name"])),
                text(&xr["metadata"]["namespace"]),
            ),
        },
    };
    let Some(input) = input.filter(|r| !r.patches.is_empty()) else {
        return Ok((name, namespace));
    };
    let mut reference = json!({
        "apiVersion": "v1",
        "kind": "SecretReference",
        "name": name,
        "namespace": namespace,
    });
    patches::apply_connection_secret_patches(&input.patches, xr, &mut reference)
        .map_err(|e| e.wrap("cannot apply connection secret patches"))?;
    Ok((
        reference["name"].as_str().map_or(name, str::to_owned),
        reference["namespace"]
            .as_str()
            .map_or(namespace, str::to_owned),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn detail(spec: Value) -> ConnectionDetail {
        serde_json::from_value(spec).unwrap()
    }

    #[test]
    fn details_are_extracted_by_type() {
        let observed = json!({
            "status": {
                "host": "db.example.org",
                "port": 5432,
                "ratio": 0.5,
                "big": 1e21,
                "tiny": 1e-7,
                "labels": {"b": "<2>", "a": 1},
                "nothing": null
            }
        });
        let secret: ConnectionDetails = [("password".to_owned(), b"hunter2".to_vec())]
            .into_iter()
            .collect();
        let cases = [
            (
                json!({"name": "pw", "type": "FromConnectionSecretKey", "fromConnectionSecretKey": "password"}),
                Some("hunter2"),
            ),
            (
                json!({"name": "user", "type": "FromConnectionSecretKey", "fromConnectionSecretKey": "username"}),
                None,
            ),
            (
                json!({"name": "host", "type": "FromFieldPath", "fromFieldPath": "status.host"}),
                Some("db.example.org"),
            ),
            (
                json!({"name": "port", "type": "FromFieldPath", "fromFieldPath": "status.port"}),
                Some("5432"),
            ),
            (
                json!({"name": "ratio", "type": "FromFieldPath", "fromFieldPath": "status.ratio"}),
                Some("0.5"),
            ),
            (
                json!({"name": "big", "type": "FromFieldPath", "fromFieldPath": "status.big"}),
                Some("1e+21"),
            ),
            (
                json!({"name": "tiny", "type": "FromFieldPath", "fromFieldPath": "status.tiny"}),
                Some("1e-7"),
            ),
            (
                json!({"name": "labels", "type": "FromFieldPath", "fromFieldPath": "status.labels"}),
                Some(r#"{"a":1,"b":"\u003c2\u003e"}"#),
            ),
            (
                json!({"name": "nothing", "type": "FromFieldPath", "fromFieldPath": "status.nothing"}),
                Some("null"),
            ),
            (
                json!({"name": "missing", "type": "FromFieldPath", "fromFieldPath": "status.missing"}),
                None,
            ),
            (
                json!({"name": "broken", "type": "FromFieldPath", "fromFieldPath": "status.host.x"}),
                None,
            ),
            (
                json!({"name": "fixed", "type": "FromValue", "value": "5432"}),
                Some("5432"),
            ),
        ];
        for (spec, expected) in cases {
            let d = detail(spec.clone());
            let got = extract(&observed, &secret, std::slice::from_ref(&d));
            assert_eq!(
                got.get(&d.name)
                    .map(|v| String::from_utf8_lossy(v).into_owned()),
                expected.map(str::to_owned),
                "{spec}"
            );
        }
    }

    #[test]
    fn later_details_overwrite_earlier_ones() {
        let details = [
            detail(json!({"name": "k", "type": "FromValue", "value": "one"})),
            detail(json!({"name": "k", "type": "FromValue", "value": "two"})),
        ];
        let got = extract(&json!({}), &ConnectionDetails::new(), &details);
        assert_eq!(got.get("k").map(Vec::as_slice), Some(b"two".as_slice()));
    }

    #[test]
    fn only_v2_xrs_lack_native_connection_details() {
        assert!(supports_connection_details(&json!({"spec": {}})));
        assert!(!supports_connection_details(
            &json!({"spec": {"crossplane": {}}})
        ));
    }

    #[test]
    fn secret_ref_precedence() {
        let xr = json!({
            "metadata": {"name": "my-xr", "namespace": "team"},
            "spec": {"id": "abc", "writeConnectionSecretToRef": {"name": "from-xr"}}
        });
        let bare_xr =
            json!({"metadata": {"name": "my-xr", "namespace": "team"}, "spec": {"id": "abc"}});
        let input =
            |spec: Value| -> WriteConnectionSecretToRef { serde_json::from_value(spec).unwrap() };
        let cases = [
            (bare_xr.clone(), None, ("my-xr-connection", "team")),
            (xr.clone(), None, ("from-xr", "")),
            (
                xr.clone(),
                Some(input(json!({"name": "from-input"}))),
                ("from-input", ""),
            ),
            (
                xr.clone(),
                Some(input(json!({"namespace": "elsewhere"}))),
                ("", "elsewhere"),
            ),
            (
                bare_xr.clone(),
                Some(input(json!({"patches": [
                    {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.id", "toFieldPath": "name"}
                ]}))),
                ("abc", "team"),
            ),
            (
                bare_xr.clone(),
                Some(input(json!({"patches": [
                    {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.missing", "toFieldPath": "name"}
                ]}))),
                ("my-xr-connection", "team"),
            ),
            (
                bare_xr.clone(),
                Some(input(json!({"patches": [{
                    "type": "CombineFromComposite", "toFieldPath": "name",
                    "combine": {"strategy": "string", "variables": [{"fromFieldPath": "metadata.name"}, {"fromFieldPath": "spec.id"}],
                                "string": {"fmt": "%s-%s"}}
                }]}))),
                ("my-xr-abc", "team"),
            ),
        ];
        for (xr, input, (name, namespace)) in cases {
            let got = secret_ref(&xr, input.as_ref()).unwrap();
            assert_eq!(
                got,
                (name.to_owned(), namespace.to_owned()),
                "{xr} {input:?}"
            );
        }
    }

    #[test]
    fn failing_required_secret_patches_are_errors() {
        let xr = json!({"metadata": {"name": "my-xr"}, "spec": {}});
        let input: WriteConnectionSecretToRef = serde_json::from_value(json!({"patches": [
            {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.missing", "toFieldPath": "name",
             "policy": {"fromFieldPath": "Required"}},
        ]}))
        .unwrap();
        let details: ConnectionDetails = [("k".to_owned(), b"v".to_vec())].into_iter().collect();
        let err = compose_secret(&xr, &details, Some(&input)).unwrap_err();
        assert_eq!(
            err.message,
            "cannot generate connection secret reference: cannot apply connection secret patches: \
             cannot apply patch type FromCompositeFieldPath at index 0: spec.missing: no such field"
        );
    }

    #[test]
    fn secret_holds_base64_details() {
        let xr = json!({"metadata": {"name": "x", "namespace": "ns"}, "spec": {"crossplane": {}}});
        let details: ConnectionDetails = [("user".to_owned(), b"admin".to_vec())]
            .into_iter()
            .collect();
        assert_eq!(
            compose_secret(&xr, &ConnectionDetails::new(), None).unwrap(),
            None
        );
        assert_eq!(
            compose_secret(&xr, &details, None).unwrap(),
            Some(json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "x-connection", "namespace": "ns"},
                "data": {"user": "YWRtaW4="},
                "type": "connection.crossplane.io/v1alpha1",
            }))
        );
    }
}
