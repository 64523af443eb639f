//! The component side of the contract: generated bindings and the conversions
//! between them and the plain types of this crate.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::{
    Capability, Condition, ConditionStatus, Function, FunctionError, FunctionResult, LogLevel,
    Ready, Request, Requirements, Resource, ResourceMatch, Response, Severity, State, Target,
};

#[allow(unsafe_code, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "function",
        pub_export_macro: true,
        default_bindings_module: "plait_sdk::guest::bindings",
    });
}

use bindings::plait::function::{log as wit_log, types as wit};

pub fn log(level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Trace => wit_log::Level::Trace,
        LogLevel::Debug => wit_log::Level::Debug,
        LogLevel::Info => wit_log::Level::Info,
        LogLevel::Warn => wit_log::Level::Warn,
        LogLevel::Error => wit_log::Level::Error,
    };
    wit_log::log(level, message);
}

/// Runs `F` on a request in the component's representation.
pub fn run<F: Function>(mut request: wit::Request) -> Result<wit::Response, wit::Error> {
    let input = request.input.take();
    let request = request_from_wit(request).map_err(wit::Error::InvalidInput)?;
    match F::run_with_input_text(request, input.as_deref()) {
        Ok(response) => response_to_wit(response).map_err(wit::Error::Internal),
        Err(FunctionError::InvalidInput(m)) => Err(wit::Error::InvalidInput(m)),
        Err(FunctionError::Internal(m)) => Err(wit::Error::Internal(m)),
    }
}

fn details_from_wit(details: Vec<wit::ConnectionDetail>) -> BTreeMap<String, Vec<u8>> {
    details.into_iter().map(|d| (d.key, d.value)).collect()
}

fn details_to_wit(details: BTreeMap<String, Vec<u8>>) -> Vec<wit::ConnectionDetail> {
    details
        .into_iter()
        .map(|(key, value)| wit::ConnectionDetail { key, value })
        .collect()
}

fn resource_from_wit(what: &str, r: wit::Resource) -> Result<Resource, String> {
    Ok(Resource {
        resource: crate::parse_json_text(what, &r.resource)?,
        connection_details: details_from_wit(r.connection_details),
        ready: match r.ready {
            wit::Ready::Unspecified => Ready::Unspecified,
            wit::Ready::True => Ready::True,
            wit::Ready::False => Ready::False,
        },
    })
}

fn resource_to_wit(r: Resource) -> wit::Resource {
    let text = crate::json_text(&r.resource);
    crate::discard(r.resource);
    wit::Resource {
        resource: text,
        connection_details: details_to_wit(r.connection_details),
        ready: match r.ready {
            Ready::Unspecified => wit::Ready::Unspecified,
            Ready::True => wit::Ready::True,
            Ready::False => wit::Ready::False,
        },
    }
}

fn state_from_wit(which: &str, s: wit::State) -> Result<State, String> {
    let composite = s
        .composite
        .map(|c| resource_from_wit(&format!("{which} composite resource"), c))
        .transpose()?;
    let mut resources = BTreeMap::new();
    for c in s.resources {
        let what = format!("{which} resource {:?}", c.name);
        resources.insert(c.name, resource_from_wit(&what, c.resource)?);
    }
    Ok(State {
        composite,
        resources,
    })
}

fn state_to_wit(s: State) -> wit::State {
    wit::State {
        composite: s.composite.map(resource_to_wit),
        resources: s
            .resources
            .into_iter()
            .map(|(name, r)| wit::ComposedResource {
                name,
                resource: resource_to_wit(r),
            })
            .collect(),
    }
}

fn request_from_wit(r: wit::Request) -> Result<Request, String> {
    let mut required_resources = BTreeMap::new();
    for rr in r.required_resources {
        let items = rr
            .items
            .iter()
            .map(|i| crate::parse_json_text(&format!("required resource {:?}", rr.name), i))
            .collect::<Result<Vec<_>, _>>()?;
        required_resources.insert(rr.name, items);
    }
    let mut required_schemas = BTreeMap::new();
    for s in r.required_schemas {
        let schema = s
            .openapi_v3
            .as_deref()
            .map(|t| crate::parse_json_text(&format!("required schema {:?}", s.name), t))
            .transpose()?;
        required_schemas.insert(s.name, schema);
    }
    Ok(Request {
        tag: r.meta.tag,
        capabilities: r
            .meta
            .capabilities
            .into_iter()
            .map(|c| match c {
                wit::Capability::Capabilities => Capability::Capabilities,
                wit::Capability::RequiredResources => Capability::RequiredResources,
                wit::Capability::Credentials => Capability::Credentials,
                wit::Capability::Conditions => Capability::Conditions,
                wit::Capability::RequiredSchemas => Capability::RequiredSchemas,
            })
            .collect(),
        observed: state_from_wit("observed", r.observed)?,
        desired: state_from_wit("desired", r.desired)?,
        // The input goes to the function as text: see `run`.
        input: None,
        context: crate::parse_json_text("context", &r.context)?,
        required_resources,
        required_schemas,
        credentials: r
            .credentials
            .into_iter()
            .map(|c| (c.name, details_from_wit(c.data)))
            .collect(),
    })
}

fn target_to_wit(t: Option<Target>) -> Option<wit::Target> {
    t.map(|t| match t {
        Target::Composite => wit::Target::Composite,
        Target::CompositeAndClaim => wit::Target::CompositeAndClaim,
    })
}

fn response_to_wit(r: Response) -> Result<wit::Response, String> {
    let Requirements { resources, schemas } = r.requirements;
    Ok(wit::Response {
        meta: wit::ResponseMeta {
            tag: r.tag,
            ttl_ms: r
                .ttl
                .map(|d: Duration| d.as_millis().min(u128::from(u64::MAX)) as u64),
        },
        desired: state_to_wit(r.desired),
        results: r
            .results
            .into_iter()
            .map(
                |FunctionResult {
                     severity,
                     message,
                     reason,
                     target,
                 }| wit::FunctionResult {
                    severity: match severity {
                        Severity::Fatal => wit::Severity::Fatal,
                        Severity::Warning => wit::Severity::Warning,
                        Severity::Normal => wit::Severity::Normal,
                    },
                    message,
                    reason,
                    target: target_to_wit(target),
                },
            )
            .collect(),
        context: crate::json_text(&r.context),
        requirements: wit::Requirements {
            resources: resources
                .into_iter()
                .map(|(name, s)| wit::ResourceRequirement {
                    name,
                    selector: wit::ResourceSelector {
                        api_version: s.api_version,
                        kind: s.kind,
                        match_: match s.matching {
                            ResourceMatch::Name(n) => wit::ResourceMatch::Name(n),
                            ResourceMatch::Labels(l) => {
                                wit::ResourceMatch::Labels(wit::MatchLabels {
                                    labels: l.into_iter().collect(),
                                })
                            }
                        },
                        namespace: s.namespace,
                    },
                })
                .collect(),
            schemas: schemas
                .into_iter()
                .map(|(name, s)| wit::SchemaRequirement {
                    name,
                    selector: wit::SchemaSelector {
                        api_version: s.api_version,
                        kind: s.kind,
                    },
                })
                .collect(),
        },
        conditions: r
            .conditions
            .into_iter()
            .map(
                |Condition {
                     type_,
                     status,
                     reason,
                     message,
                     target,
                 }| wit::Condition {
                    type_,
                    status: match status {
                        ConditionStatus::True => wit::ConditionStatus::True,
                        ConditionStatus::False => wit::ConditionStatus::False,
                        ConditionStatus::Unknown => wit::ConditionStatus::Unknown,
                    },
                    reason,
                    message,
                    target: target_to_wit(target),
                },
            )
            .collect(),
        output: r.output.as_ref().map(crate::json_text),
    })
}
