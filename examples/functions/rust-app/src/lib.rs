//! A web application: a Deployment, a Service in front of it and, when
//! asked for, a HorizontalPodAutoscaler. The XR is ready when the Deployment
//! has as many available replicas as it should.

use plait_sdk::{Function, FunctionError, Ready, Request, Response, export_function};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Autoscaling {
    #[serde(default)]
    enabled: bool,
    #[serde(default = "default_min")]
    min_replicas: i64,
    #[serde(default = "default_max")]
    max_replicas: i64,
    #[serde(default = "default_cpu")]
    cpu_utilization: i64,
}

fn default_min() -> i64 {
    2
}
fn default_max() -> i64 {
    5
}
fn default_cpu() -> i64 {
    75
}

struct App;

impl Function for App {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut response = Response::from_request(&request);
        let name: String = request
            .composite_value("metadata.name")?
            .ok_or_else(|| FunctionError::InvalidInput("the XR has no metadata.name".into()))?;
        let image: String = request
            .composite_value("spec.image")?
            .ok_or_else(|| FunctionError::InvalidInput("spec.image is required".into()))?;
        let port: i64 = request.composite_value("spec.port")?.unwrap_or(8080);
        let replicas: i64 = request.composite_value("spec.replicas")?.unwrap_or(2);
        let autoscaling: Option<Autoscaling> = request
            .composite_value("spec.autoscaling")?
            .filter(|a: &Autoscaling| a.enabled);
        if let Some(a) = &autoscaling
            && a.max_replicas < a.min_replicas
        {
            response.fatal(format!(
                "spec.autoscaling.maxReplicas ({}) is below minReplicas ({})",
                a.max_replicas, a.min_replicas
            ));
            return Ok(response);
        }

        let labels = json!({"app.kubernetes.io/name": name});
        let mut deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{
                        "name": "app",
                        "image": image,
                        "ports": [{"name": "http", "containerPort": port}],
                    }]},
                },
            },
        });
        // The autoscaler owns the replica count when there is one.
        let wanted = match &autoscaling {
            Some(a) => a.min_replicas,
            None => {
                deployment["spec"]["replicas"] = json!(replicas);
                replicas
            }
        };
        response.set_resource("deployment", deployment);
        response.set_resource(
            "service",
            json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "selector": labels,
                    "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
                },
            }),
        );
        if let Some(a) = &autoscaling {
            response.set_resource(
                "autoscaler",
                json!({
                    "apiVersion": "autoscaling/v2",
                    "kind": "HorizontalPodAutoscaler",
                    "metadata": {"labels": labels},
                    "spec": {
                        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                        "minReplicas": a.min_replicas,
                        "maxReplicas": a.max_replicas,
                        "metrics": [{"type": "Resource", "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": a.cpu_utilization},
                        }}],
                    },
                }),
            );
        }

        let available = request
            .observed_field("deployment", "status.availableReplicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        response.set_ready("deployment", Ready::from(available >= wanted))?;
        for other in ["service", "autoscaler"] {
            if response.resource_mut(other).is_some() {
                let exists = request.observed_resource(other).is_some();
                response.set_ready(other, Ready::from(exists))?;
            }
        }
        let namespace: String = request
            .composite_value("metadata.namespace")?
            .unwrap_or_else(|| "default".into());
        response
            .set_composite_field("status.availableReplicas", json!(available))?
            .set_composite_field(
                "status.address",
                json!(format!("http://{name}.{namespace}.svc.cluster.local")),
            )?;
        if available < wanted {
            response.normal(format!(
                "{available} of {wanted} replicas of {name} are available"
            ));
        }
        Ok(response)
    }
}

export_function!(App);
