//! Bypasses the SDK's conversions to return a desired composite that is not JSON.

#[cfg(target_arch = "wasm32")]
mod component {
    use plait_sdk::guest::bindings::plait::function::types as wit;
    use plait_sdk::guest::bindings::{Error, Guest, Request, Response};

    struct MalformedJson;

    impl Guest for MalformedJson {
        fn run_function(request: Request) -> Result<Response, Error> {
            Ok(Response {
                meta: wit::ResponseMeta {
                    tag: request.meta.tag,
                    ttl_ms: None,
                },
                desired: wit::State {
                    composite: Some(wit::Resource {
                        resource: "{not json".to_string(),
                        connection_details: Vec::new(),
                        ready: wit::Ready::Unspecified,
                    }),
                    resources: Vec::new(),
                },
                results: Vec::new(),
                context: request.context,
                requirements: wit::Requirements {
                    resources: Vec::new(),
                    schemas: Vec::new(),
                },
                conditions: Vec::new(),
                output: None,
            })
        }
    }

    plait_sdk::guest::bindings::export!(MalformedJson with_types_in plait_sdk::guest::bindings);
}
