//! JSON pointers (RFC 6901) to the fields controllers and the reconcile
//! read by key: an annotation or label key holds `/`, which a pointer
//! token must escape.

/// `key` as one pointer token: `~` becomes `~0` and `/` becomes `~1`.
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The pointer to the object's annotation `key`.
pub fn annotation(key: &str) -> String {
    format!("/metadata/annotations/{}", escape(key))
}

/// The pointer to the object's label `key`.
pub fn label(key: &str) -> String {
    format!("/metadata/labels/{}", escape(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_becomes_one_token_that_points_at_it() {
        let object = serde_json::json!({"metadata": {
            "annotations": {"crossplane.io/paused": "true", "a~b/c": "tilde"},
            "labels": {"crossplane.io/composite": "x"},
        }});
        let cases = [
            (annotation("crossplane.io/paused"), Some("true")),
            (annotation("a~b/c"), Some("tilde")),
            (label("crossplane.io/composite"), Some("x")),
            (annotation("crossplane.io"), None),
        ];
        for (pointer, want) in cases {
            assert_eq!(
                object.pointer(&pointer).and_then(|v| v.as_str()),
                want,
                "{pointer}"
            );
        }
        assert_eq!(escape("a~/b"), "a~0~1b");
    }
}
