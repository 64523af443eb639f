//! Returns composed resources outside the composite's namespace: one in
//! another namespace and one cluster-scoped. The response itself is valid;
//! stopping the escape is the pipeline's job.

use plait_sdk::{Function, FunctionError, Request, Resource, Response};
use serde_json::json;

pub struct NamespaceEscape;

impl Function for NamespaceEscape {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut response = Response::from_request(&request);
        response.desired.resources.insert(
            "foreign-config".into(),
            Resource::new(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "stolen", "namespace": "other"},
                "data": {"k": "v"},
            })),
        );
        response.desired.resources.insert(
            "cluster-role".into(),
            Resource::new(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "escalate"},
                "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
            })),
        );
        Ok(response)
    }
}

plait_sdk::export_function!(NamespaceEscape);
