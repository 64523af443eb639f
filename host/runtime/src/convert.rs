//! Conversions between the SDK's plain types and the component's types.
//!
//! Requests go out as they are; responses come back from an untrusted guest,
//! so every JSON text is parsed and a failure names the field it came from.

use std::collections::BTreeMap;
use std::time::Duration;

use plait_sdk::{
    Capability, Condition, ConditionStatus, FunctionError, FunctionResult, Ready, Request,
    Requirements, Resource, ResourceMatch, ResourceSelector, Response, SchemaSelector, Severity,
    State, Target,
};

use crate::bindings::plait::function::types as wit;

pub(crate) fn request_to_wit(r: &Request) -> wit::Request {
    wit::Request {
        meta: wit::RequestMeta {
            tag: r.tag.clone(),
            capabilities: r
                .capabilities
                .iter()
                .map(|c| match c {
                    Capability::Capabilities => wit::Capability::Capabilities,
                    Capability::RequiredResources => wit::Capability::RequiredResources,
                    Capability::Credentials => wit::Capability::Credentials,
                    Capability::Conditions => wit::Capability::Conditions,
                    Capability::RequiredSchemas => wit::Capability::RequiredSchemas,
                })
                .collect(),
        },
        observed: state_to_wit(&r.observed),
        desired: state_to_wit(&r.desired),
        input: r.input.as_ref().map(plait_sdk::json_text),
        context: plait_sdk::json_text(&r.context),
        required_resources: r
            .required_resources
            .iter()
            .map(|(name, items)| wit::RequiredResources {
                name: name.clone(),
                items: items.iter().map(plait_sdk::json_text).collect(),
            })
            .collect(),
        required_schemas: r
            .required_schemas
            .iter()
            .map(|(name, schema)| wit::RequiredSchema {
                name: name.clone(),
                openapi_v3: schema.as_ref().map(plait_sdk::json_text),
            })
            .collect(),
        credentials: r
            .credentials
            .iter()
            .map(|(name, data)| wit::Credentials {
                name: name.clone(),
                data: details_to_wit(data),
            })
            .collect(),
    }
}

fn details_to_wit(details: &BTreeMap<String, Vec<u8>>) -> Vec<wit::ConnectionDetail> {
    details
        .iter()
        .map(|(key, value)| wit::ConnectionDetail {
            key: key.clone(),
            value: value.clone(),
        })
        .collect()
}

fn resource_to_wit(r: &Resource) -> wit::Resource {
    wit::Resource {
        resource: plait_sdk::json_text(&r.resource),
        connection_details: details_to_wit(&r.connection_details),
        ready: match r.ready {
            Ready::Unspecified => wit::Ready::Unspecified,
            Ready::True => wit::Ready::True,
            Ready::False => wit::Ready::False,
        },
    }
}

fn state_to_wit(s: &State) -> wit::State {
    wit::State {
        composite: s.composite.as_ref().map(resource_to_wit),
        resources: s
            .resources
            .iter()
            .map(|(name, r)| wit::ComposedResource {
                name: name.clone(),
                resource: resource_to_wit(r),
            })
            .collect(),
    }
}

pub(crate) fn error_from_wit(e: wit::Error) -> FunctionError {
    match e {
        wit::Error::InvalidInput(m) => FunctionError::InvalidInput(m),
        wit::Error::Internal(m) => FunctionError::Internal(m),
    }
}

/// The bytes a response occupies: its strings and byte lists, which is what
/// the host has to hold and parse.
pub(crate) fn response_size(r: &wit::Response) -> usize {
    let details = |d: &[wit::ConnectionDetail]| -> usize {
        d.iter().map(|d| d.key.len() + d.value.len()).sum()
    };
    let resource = |r: &wit::Resource| r.resource.len() + details(&r.connection_details);
    let state = r.desired.composite.as_ref().map_or(0, resource)
        + r.desired
            .resources
            .iter()
            .map(|c| c.name.len() + resource(&c.resource))
            .sum::<usize>();
    let results: usize = r
        .results
        .iter()
        .map(|x| x.message.len() + x.reason.as_ref().map_or(0, String::len))
        .sum();
    let conditions: usize = r
        .conditions
        .iter()
        .map(|c| c.type_.len() + c.reason.len() + c.message.as_ref().map_or(0, String::len))
        .sum();
    let requirements: usize = r
        .requirements
        .resources
        .iter()
        .map(|q| {
            let s = &q.selector;
            let matching = match &s.match_ {
                wit::ResourceMatch::Name(n) => n.len(),
                wit::ResourceMatch::Labels(l) => {
                    l.labels.iter().map(|(k, v)| k.len() + v.len()).sum()
                }
            };
            q.name.len()
                + s.api_version.len()
                + s.kind.len()
                + s.namespace.as_ref().map_or(0, String::len)
                + matching
        })
        .sum::<usize>()
        + r.requirements
            .schemas
            .iter()
            .map(|q| q.name.len() + q.selector.api_version.len() + q.selector.kind.len())
            .sum::<usize>();
    r.meta.tag.len()
        + state
        + results
        + r.context.len()
        + requirements
        + conditions
        + r.output.as_ref().map_or(0, String::len)
}

fn details_from_wit(
    field: &str,
    details: Vec<wit::ConnectionDetail>,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    for d in details {
        if out.contains_key(&d.key) {
            return Err(format!(
                "{field}.connectionDetails has the key {:?} twice",
                d.key
            ));
        }
        out.insert(d.key, d.value);
    }
    Ok(out)
}

fn resource_from_wit(field: &str, r: wit::Resource) -> Result<Resource, String> {
    let resource = plait_sdk::parse_json_text(&format!("{field}.resource"), &r.resource)?;
    if !resource.is_object() {
        return Err(format!("{field}.resource is not a JSON object"));
    }
    Ok(Resource {
        resource,
        connection_details: details_from_wit(field, r.connection_details)?,
        ready: match r.ready {
            wit::Ready::Unspecified => Ready::Unspecified,
            wit::Ready::True => Ready::True,
            wit::Ready::False => Ready::False,
        },
    })
}

fn state_from_wit(s: wit::State) -> Result<State, String> {
    let composite = s
        .composite
        .map(|c| resource_from_wit("desired.composite", c))
        .transpose()?;
    let mut resources = BTreeMap::new();
    for c in s.resources {
        let field = format!("desired.resources[{:?}]", c.name);
        if resources.contains_key(&c.name) {
            return Err(format!("{field} appears more than once"));
        }
        let resource = resource_from_wit(&field, c.resource)?;
        resources.insert(c.name, resource);
    }
    Ok(State {
        composite,
        resources,
    })
}

fn target_from_wit(t: Option<wit::Target>) -> Option<Target> {
    t.map(|t| match t {
        wit::Target::Composite => Target::Composite,
        wit::Target::CompositeAndClaim => Target::CompositeAndClaim,
    })
}

/// Checks and converts a guest's response; the error names the bad field.
pub(crate) fn response_from_wit(r: wit::Response) -> Result<Response, String> {
    let desired = state_from_wit(r.desired)?;
    let context = plait_sdk::parse_json_text("context", &r.context)?;
    if !context.is_object() {
        return Err("context is not a JSON object".to_string());
    }
    let output = r
        .output
        .as_deref()
        .map(|o| plait_sdk::parse_json_text("output", o))
        .transpose()?;

    let mut resources = BTreeMap::new();
    for q in r.requirements.resources {
        let s = q.selector;
        let matching = match s.match_ {
            wit::ResourceMatch::Name(n) => ResourceMatch::Name(n),
            wit::ResourceMatch::Labels(l) => ResourceMatch::Labels(l.labels.into_iter().collect()),
        };
        let selector = ResourceSelector {
            api_version: s.api_version,
            kind: s.kind,
            matching,
            namespace: s.namespace,
        };
        if resources.insert(q.name.clone(), selector).is_some() {
            return Err(format!(
                "requirements.resources[{:?}] appears more than once",
                q.name
            ));
        }
    }
    let mut schemas = BTreeMap::new();
    for q in r.requirements.schemas {
        let selector = SchemaSelector {
            api_version: q.selector.api_version,
            kind: q.selector.kind,
        };
        if schemas.insert(q.name.clone(), selector).is_some() {
            return Err(format!(
                "requirements.schemas[{:?}] appears more than once",
                q.name
            ));
        }
    }

    Ok(Response {
        tag: r.meta.tag,
        ttl: r.meta.ttl_ms.map(Duration::from_millis),
        desired,
        results: r
            .results
            .into_iter()
            .map(|x| FunctionResult {
                severity: match x.severity {
                    wit::Severity::Fatal => Severity::Fatal,
                    wit::Severity::Warning => Severity::Warning,
                    wit::Severity::Normal => Severity::Normal,
                },
                message: x.message,
                reason: x.reason,
                target: target_from_wit(x.target),
            })
            .collect(),
        context,
        requirements: Requirements { resources, schemas },
        conditions: r
            .conditions
            .into_iter()
            .map(|c| Condition {
                type_: c.type_,
                status: match c.status {
                    wit::ConditionStatus::True => ConditionStatus::True,
                    wit::ConditionStatus::False => ConditionStatus::False,
                    wit::ConditionStatus::Unknown => ConditionStatus::Unknown,
                },
                reason: c.reason,
                message: c.message,
                target: target_from_wit(c.target),
            })
            .collect(),
        output,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wit_resource(text: &str) -> wit::Resource {
        wit::Resource {
            resource: text.to_string(),
            connection_details: vec![],
            ready: wit::Ready::True,
        }
    }

    fn wit_response() -> wit::Response {
        wit::Response {
            meta: wit::ResponseMeta {
                tag: "t".into(),
                ttl_ms: Some(1500),
            },
            desired: wit::State {
                composite: Some(wit_resource(r#"{"kind":"XR"}"#)),
                resources: vec![wit::ComposedResource {
                    name: "bucket".into(),
                    resource: wit_resource(r#"{"kind":"Bucket"}"#),
                }],
            },
            results: vec![wit::FunctionResult {
                severity: wit::Severity::Warning,
                message: "careful".into(),
                reason: Some("Reason".into()),
                target: Some(wit::Target::CompositeAndClaim),
            }],
            context: r#"{"k":1}"#.into(),
            requirements: wit::Requirements {
                resources: vec![wit::ResourceRequirement {
                    name: "cfg".into(),
                    selector: wit::ResourceSelector {
                        api_version: "v1".into(),
                        kind: "ConfigMap".into(),
                        match_: wit::ResourceMatch::Labels(wit::MatchLabels {
                            labels: vec![("a".into(), "b".into())],
                        }),
                        namespace: Some("ns".into()),
                    },
                }],
                schemas: vec![],
            },
            conditions: vec![wit::Condition {
                type_: "Synced".into(),
                status: wit::ConditionStatus::True,
                reason: "Ok".into(),
                message: None,
                target: None,
            }],
            output: Some("[1,2]".into()),
        }
    }

    #[test]
    fn a_valid_response_converts_field_by_field() {
        let r = response_from_wit(wit_response()).unwrap();
        assert_eq!(r.tag, "t");
        assert_eq!(r.ttl, Some(Duration::from_millis(1500)));
        assert_eq!(r.desired.composite.unwrap().resource, json!({"kind":"XR"}));
        assert_eq!(r.desired.resources["bucket"].ready, Ready::True);
        assert_eq!(r.results[0].severity, Severity::Warning);
        assert_eq!(r.results[0].target, Some(Target::CompositeAndClaim));
        assert_eq!(r.context, json!({"k":1}));
        assert_eq!(
            r.requirements.resources["cfg"].matching,
            ResourceMatch::Labels([("a".to_string(), "b".to_string())].into())
        );
        assert_eq!(r.conditions[0].status, ConditionStatus::True);
        assert_eq!(r.output, Some(json!([1, 2])));
    }

    #[test]
    fn malformed_responses_name_the_field() {
        type Edit = fn(&mut wit::Response);
        let cases: Vec<(Edit, &str)> = vec![
            (
                |r| r.desired.composite = Some(wit_resource("{not json")),
                "desired.composite.resource is not valid JSON",
            ),
            (
                |r| r.desired.resources[0].resource = wit_resource("[1"),
                r#"desired.resources["bucket"].resource is not valid JSON"#,
            ),
            (
                |r| r.desired.resources[0].resource = wit_resource("42"),
                r#"desired.resources["bucket"].resource is not a JSON object"#,
            ),
            (
                |r| {
                    let dup = r.desired.resources[0].clone();
                    r.desired.resources.push(dup);
                },
                r#"desired.resources["bucket"] appears more than once"#,
            ),
            (|r| r.context = "nope".into(), "context is not valid JSON"),
            (|r| r.context = "[]".into(), "context is not a JSON object"),
            (|r| r.output = Some("{".into()), "output is not valid JSON"),
            (
                |r| {
                    let dup = r.requirements.resources[0].clone();
                    r.requirements.resources.push(dup);
                },
                r#"requirements.resources["cfg"] appears more than once"#,
            ),
        ];
        for (edit, expected) in cases {
            let mut response = wit_response();
            edit(&mut response);
            let err = response_from_wit(response).unwrap_err();
            assert!(
                err.starts_with(expected),
                "{err:?} does not start with {expected:?}"
            );
        }
    }

    #[test]
    fn response_size_counts_every_text() {
        let base = response_size(&wit_response());
        let mut bigger = wit_response();
        bigger.desired.resources[0].resource.resource = format!(r#"{{"x":"{}"}}"#, "a".repeat(100));
        assert_eq!(
            response_size(&bigger) - base,
            bigger.desired.resources[0].resource.resource.len() - r#"{"kind":"Bucket"}"#.len()
        );
        let mut with_output = wit_response();
        with_output.output = Some("x".repeat(10));
        assert_eq!(response_size(&with_output) - base, 10 - "[1,2]".len());
    }

    #[test]
    fn requests_convert_to_json_texts() {
        let request = Request {
            tag: "tag".into(),
            input: Some(json!({"a": 1})),
            observed: State {
                composite: Some(Resource::new(json!({"kind": "XR"}))),
                resources: [("r".to_string(), Resource::new(json!({"kind": "B"})))].into(),
            },
            required_resources: [("cm".to_string(), vec![json!({"kind": "ConfigMap"})])].into(),
            required_schemas: [("s".to_string(), None)].into(),
            credentials: [(
                "creds".to_string(),
                [("k".to_string(), b"v".to_vec())].into(),
            )]
            .into(),
            ..Request::default()
        };
        let w = request_to_wit(&request);
        assert_eq!(w.meta.tag, "tag");
        assert_eq!(w.meta.capabilities.len(), Capability::ALL.len());
        assert_eq!(w.input.as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(w.context, "{}");
        assert_eq!(w.observed.composite.unwrap().resource, r#"{"kind":"XR"}"#);
        assert_eq!(w.observed.resources[0].name, "r");
        assert!(w.desired.composite.is_none());
        assert_eq!(
            w.required_resources[0].items,
            vec![r#"{"kind":"ConfigMap"}"#]
        );
        assert_eq!(w.required_schemas[0].openapi_v3, None);
        assert_eq!(w.credentials[0].data[0].value, b"v");
    }
}
