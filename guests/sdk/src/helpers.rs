//! One-line helpers for the things most functions do: read the XR, build
//! composed resources, report status, readiness, results and conditions.
//!
//! ```
//! use plait_sdk::{Condition, ConditionStatus, FunctionError, Ready, Request, Response};
//! use serde_json::json;
//!
//! fn run(request: Request) -> Result<Response, FunctionError> {
//!     // Start from what earlier steps built, so it passes through untouched.
//!     let mut response = Response::from_request(&request);
//!     let name: String = request.composite_value("metadata.name")?.unwrap_or_default();
//!     let replicas: i64 = request.composite_value("spec.replicas")?.unwrap_or(1);
//!
//!     response.set_resource("config", json!({
//!         "apiVersion": "v1",
//!         "kind": "ConfigMap",
//!         "data": {"owner": name, "replicas": replicas.to_string()},
//!     }));
//!     // ConfigMaps are ready as soon as they exist.
//!     let exists = request.observed_resource("config").is_some();
//!     response.set_ready("config", Ready::from(exists))?;
//!     response.set_composite_field("status.replicas", json!(replicas))?;
//!     response.add_condition(Condition::new("Configured", ConditionStatus::True, "Available"));
//!     response.normal(format!("composed the config for {name}"));
//!     Ok(response)
//! }
//!
//! let request = Request {
//!     observed: plait_sdk::State {
//!         composite: Some(plait_sdk::Resource::new(json!({
//!             "apiVersion": "example.org/v1", "kind": "App",
//!             "metadata": {"name": "web"}, "spec": {"replicas": 3},
//!         }))),
//!         ..Default::default()
//!     },
//!     ..Default::default()
//! };
//! let response = run(request).unwrap();
//! assert_eq!(response.desired.resources["config"].resource["data"]["replicas"], "3");
//! assert_eq!(response.desired.resources["config"].ready, Ready::False);
//! assert_eq!(response.desired.composite.unwrap().resource["status"]["replicas"], 3);
//! ```

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::fieldpath;
use crate::{
    Condition, ConditionStatus, FunctionError, FunctionResult, Ready, Request, Requirements,
    Resource, ResourceMatch, ResourceSelector, Response, SchemaSelector, Severity, Target,
};

impl From<bool> for Ready {
    fn from(ready: bool) -> Self {
        if ready { Ready::True } else { Ready::False }
    }
}

impl Request {
    /// The observed composite resource (the XR) as JSON.
    pub fn observed_composite(&self) -> Option<&Value> {
        self.observed.composite.as_ref().map(|c| &c.resource)
    }

    /// A field of the observed XR, e.g. `spec.parameters.region`.
    pub fn composite_field(&self, path: &str) -> Option<&Value> {
        fieldpath::get(self.observed_composite()?, path)
    }

    /// A field of the observed XR converted to `T`; `Ok(None)` when it is
    /// absent or null, an invalid-input error naming the field when it has
    /// the wrong type.
    ///
    /// ```
    /// # use plait_sdk::{Request, Resource, State};
    /// # use serde_json::json;
    /// let request = Request {
    ///     observed: State {
    ///         composite: Some(Resource::new(json!({"spec": {"teams": ["a", "b"], "size": "big"}}))),
    ///         ..Default::default()
    ///     },
    ///     ..Default::default()
    /// };
    /// let teams: Vec<String> = request.composite_value("spec.teams").unwrap().unwrap_or_default();
    /// assert_eq!(teams, ["a", "b"]);
    /// assert!(request.composite_value::<i64>("spec.size").is_err());
    /// assert_eq!(request.composite_value::<i64>("spec.missing").unwrap(), None);
    /// ```
    pub fn composite_value<T: DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<T>, FunctionError> {
        match self.composite_field(path) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::deserialize(value).map(Some).map_err(|e| {
                FunctionError::InvalidInput(format!("composite resource field {path}: {e}"))
            }),
        }
    }

    /// An observed composed resource as JSON, by its name in the Composition.
    pub fn observed_resource(&self, name: &str) -> Option<&Value> {
        self.observed.resources.get(name).map(|r| &r.resource)
    }

    /// A field of an observed composed resource, e.g. `status.readyReplicas`.
    pub fn observed_field(&self, name: &str, path: &str) -> Option<&Value> {
        fieldpath::get(self.observed_resource(name)?, path)
    }

    /// The step's input converted to `T`. An absent input reads as `{}`, so
    /// a struct whose fields all have defaults accepts it.
    ///
    /// ```
    /// # use plait_sdk::Request;
    /// #[derive(serde::Deserialize, Default)]
    /// #[serde(default)]
    /// struct Input { prefix: String }
    ///
    /// let request = Request { input: Some(serde_json::json!({"prefix": "team-"})), ..Default::default() };
    /// assert_eq!(request.input_as::<Input>().unwrap().prefix, "team-");
    /// assert_eq!(Request::default().input_as::<Input>().unwrap().prefix, "");
    /// ```
    pub fn input_as<T: DeserializeOwned>(&self) -> Result<T, FunctionError> {
        let empty = Value::Object(Map::new());
        T::deserialize(self.input.as_ref().unwrap_or(&empty))
            .map_err(|e| FunctionError::InvalidInput(format!("step input: {e}")))
    }

    /// The resources supplied for a requirement; empty until the host has
    /// resolved it.
    pub fn required(&self, name: &str) -> &[Value] {
        self.required_resources
            .get(name)
            .map_or(&[][..], Vec::as_slice)
    }
}

impl Resource {
    /// A field of this resource's object.
    pub fn field(&self, path: &str) -> Option<&Value> {
        fieldpath::get(&self.resource, path)
    }

    /// Sets a field of this resource's object, creating what is missing.
    pub fn set_field(&mut self, path: &str, value: Value) -> Result<&mut Self, FunctionError> {
        fieldpath::set(&mut self.resource, path, value)
            .map_err(|e| FunctionError::Internal(e.to_string()))?;
        Ok(self)
    }
}

impl Response {
    /// Adds or replaces the desired composed resource `name` with `object`,
    /// keeping the connection details and readiness earlier steps gave it.
    pub fn set_resource(&mut self, name: impl Into<String>, object: Value) -> &mut Resource {
        let resource = self.desired.resources.entry(name.into()).or_default();
        resource.resource = object;
        resource
    }

    /// A desired composed resource, to change what an earlier step built.
    pub fn resource_mut(&mut self, name: &str) -> Option<&mut Resource> {
        self.desired.resources.get_mut(name)
    }

    /// Marks a desired composed resource ready or not; fails when this
    /// response does not compose it.
    pub fn set_ready(&mut self, name: &str, ready: Ready) -> Result<&mut Self, FunctionError> {
        let resource = self.resource_mut(name).ok_or_else(|| {
            FunctionError::Internal(format!(
                "cannot set readiness of {name:?}: it is not a desired resource"
            ))
        })?;
        resource.ready = ready;
        Ok(self)
    }

    /// The desired composite resource, started empty when no step set it.
    /// plait merges its `status` and connection details into the XR.
    pub fn composite_mut(&mut self) -> &mut Resource {
        self.desired
            .composite
            .get_or_insert_with(|| Resource::new(Value::Object(Map::new())))
    }

    /// Sets a field of the desired composite resource, usually under `status`.
    pub fn set_composite_field(
        &mut self,
        path: &str,
        value: Value,
    ) -> Result<&mut Self, FunctionError> {
        self.composite_mut().set_field(path, value)?;
        Ok(self)
    }

    /// Overrides whether the XR is ready; `Unspecified` leaves it to plait.
    pub fn set_composite_ready(&mut self, ready: Ready) -> &mut Self {
        self.composite_mut().ready = ready;
        self
    }

    /// Adds a key to the XR's connection secret.
    pub fn set_connection_detail(
        &mut self,
        key: impl Into<String>,
        value: impl Into<Vec<u8>>,
    ) -> &mut Self {
        self.composite_mut()
            .connection_details
            .insert(key.into(), value.into());
        self
    }

    /// Adds a result, for results with a reason or a target.
    pub fn add_result(&mut self, result: FunctionResult) -> &mut Self {
        self.results.push(result);
        self
    }

    /// Sets a status condition on the XR.
    pub fn add_condition(&mut self, condition: Condition) -> &mut Self {
        self.conditions.push(condition);
        self
    }

    /// Asks plait to call this step again with the resources `selector`
    /// matches, under `name` in [`Request::required_resources`].
    ///
    /// ```
    /// # use plait_sdk::{Request, Response, ResourceSelector};
    /// let request = Request::default();
    /// let mut response = Response::from_request(&request);
    /// if request.required("settings").is_empty() {
    ///     response.require_resource(
    ///         "settings",
    ///         ResourceSelector::by_name("v1", "ConfigMap", "platform-settings").in_namespace("platform"),
    ///     );
    /// }
    /// assert_eq!(response.requirements.resources.len(), 1);
    /// ```
    pub fn require_resource(
        &mut self,
        name: impl Into<String>,
        selector: ResourceSelector,
    ) -> &mut Self {
        self.requirements.resources.insert(name.into(), selector);
        self
    }

    /// Asks for the OpenAPI v3 schema of a kind, under `name` in
    /// [`Request::required_schemas`].
    pub fn require_schema(
        &mut self,
        name: impl Into<String>,
        api_version: impl Into<String>,
        kind: impl Into<String>,
    ) -> &mut Self {
        self.requirements.schemas.insert(
            name.into(),
            SchemaSelector {
                api_version: api_version.into(),
                kind: kind.into(),
            },
        );
        self
    }

    /// Drops every requirement, for a step that has what it needs.
    pub fn clear_requirements(&mut self) -> &mut Self {
        self.requirements = Requirements::default();
        self
    }
}

impl ResourceSelector {
    /// The one object of this kind with this name.
    pub fn by_name(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        ResourceSelector {
            api_version: api_version.into(),
            kind: kind.into(),
            matching: ResourceMatch::Name(name.into()),
            namespace: None,
        }
    }

    /// Every object of this kind carrying all of these labels.
    pub fn by_labels<K: Into<String>, V: Into<String>>(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        labels: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        ResourceSelector {
            api_version: api_version.into(),
            kind: kind.into(),
            matching: ResourceMatch::Labels(
                labels
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            namespace: None,
        }
    }

    /// Looks in one namespace.
    pub fn in_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }
}

impl Condition {
    pub fn new(
        type_: impl Into<String>,
        status: ConditionStatus,
        reason: impl Into<String>,
    ) -> Self {
        Condition {
            type_: type_.into(),
            status,
            reason: reason.into(),
            message: None,
            target: None,
        }
    }

    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Also shows the condition on the claim.
    pub fn for_target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }
}

impl FunctionResult {
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        FunctionResult {
            severity,
            message: message.into(),
            reason: None,
            target: None,
        }
    }

    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    pub fn for_target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::State;
    use serde_json::json;

    fn request_with(xr: Value, desired: State) -> Request {
        Request {
            observed: State {
                composite: Some(Resource::new(xr)),
                resources: BTreeMap::from([(
                    "db".to_string(),
                    Resource::new(json!({"status": {"ready": true}})),
                )]),
            },
            desired,
            ..Request::default()
        }
    }

    #[test]
    fn composite_values_convert_or_name_the_field_at_fault() {
        let request = request_with(
            json!({"spec": {"n": 3, "s": "x", "z": null}}),
            State::default(),
        );
        assert_eq!(request.composite_value::<i64>("spec.n").unwrap(), Some(3));
        assert_eq!(request.composite_value::<i64>("spec.z").unwrap(), None);
        assert_eq!(request.composite_value::<i64>("spec.absent").unwrap(), None);
        let err = request.composite_value::<i64>("spec.s").unwrap_err();
        assert!(
            matches!(&err, FunctionError::InvalidInput(m) if m.starts_with("composite resource field spec.s:")),
            "{err}"
        );
        assert_eq!(
            request.observed_field("db", "status.ready"),
            Some(&json!(true))
        );
        assert_eq!(request.observed_field("nope", "status.ready"), None);
    }

    #[test]
    fn set_resource_keeps_what_earlier_steps_said_about_it() {
        let mut earlier = Resource::new(json!({"kind": "Old"}));
        earlier.ready = Ready::True;
        earlier.connection_details.insert("k".into(), b"v".to_vec());
        let desired = State {
            composite: None,
            resources: BTreeMap::from([
                ("a".to_string(), earlier),
                (
                    "untouched".to_string(),
                    Resource::new(json!({"kind": "Keep"})),
                ),
            ]),
        };
        let request = request_with(json!({}), desired);
        let mut response = Response::from_request(&request);
        response.set_resource("a", json!({"kind": "New"}));
        let a = &response.desired.resources["a"];
        assert_eq!(
            (a.resource.clone(), a.ready),
            (json!({"kind": "New"}), Ready::True)
        );
        assert_eq!(a.connection_details["k"], b"v");
        assert_eq!(
            response.desired.resources["untouched"].resource,
            json!({"kind": "Keep"})
        );
    }

    #[test]
    fn readiness_of_an_unknown_resource_is_an_error_naming_it() {
        let mut response = Response::default();
        let err = response.set_ready("ghost", Ready::True).unwrap_err();
        assert!(err.to_string().contains("\"ghost\""), "{err}");
    }

    #[test]
    fn composite_helpers_fill_the_desired_composite() {
        let mut response = Response::default();
        response
            .set_composite_field("status.address", json!("db.svc"))
            .unwrap()
            .set_composite_ready(Ready::False)
            .set_connection_detail("password", "s3cret");
        let composite = response.desired.composite.unwrap();
        assert_eq!(composite.resource, json!({"status": {"address": "db.svc"}}));
        assert_eq!(composite.ready, Ready::False);
        assert_eq!(composite.connection_details["password"], b"s3cret");
    }

    #[test]
    fn selectors_results_and_conditions_build_the_wire_shape() {
        let mut response = Response::default();
        response
            .require_resource(
                "teams",
                ResourceSelector::by_labels("v1", "ConfigMap", [("kind", "team")]),
            )
            .require_schema("schema", "apps/v1", "Deployment")
            .add_result(
                FunctionResult::new(Severity::Warning, "slow")
                    .with_reason("Slow")
                    .for_target(Target::CompositeAndClaim),
            )
            .add_condition(
                Condition::new("DatabaseReady", ConditionStatus::False, "Creating")
                    .with_message("waiting"),
            );
        let wire = serde_json::to_value(&response).unwrap();
        assert_eq!(
            wire["requirements"]["resources"]["teams"],
            json!({"apiVersion": "v1", "kind": "ConfigMap", "match": {"labels": {"kind": "team"}}})
        );
        assert_eq!(
            wire["results"][0],
            json!({"severity": "Warning", "message": "slow", "reason": "Slow", "target": "CompositeAndClaim"})
        );
        assert_eq!(
            wire["conditions"][0],
            json!({"type": "DatabaseReady", "status": "False", "reason": "Creating", "message": "waiting"})
        );
        response.clear_requirements();
        assert!(response.requirements.is_empty());
    }
}
