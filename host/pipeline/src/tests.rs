use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use plait_sdk::{
    Request, Resource, ResourceMatch, ResourceSelector, Response, SchemaSelector, State,
};
use serde_json::{Value, json};

use super::*;

struct Closure<F>(F, RefCell<Vec<Request>>);

impl<F: Fn(&str, &Request) -> Result<Response, RunnerError>> FunctionRunner for Closure<F> {
    fn run(&self, _: &str, function: &str, request: &Request) -> Result<Response, RunnerError> {
        self.1.borrow_mut().push(request.clone());
        (self.0)(function, request)
    }
}

#[derive(Default)]
struct Files {
    resources: Vec<Value>,
    secrets: BTreeMap<(String, String), BTreeMap<String, Vec<u8>>>,
    /// The namespace of every resources query, in order.
    asked: RefCell<Vec<Option<String>>>,
}

impl RequirementSource for Files {
    fn is_namespaced(&self, _: &str, kind: &str) -> Result<Option<bool>, RunnerError> {
        Ok(match kind {
            "ConfigMap" | "Secret" => Some(true),
            "Namespace" | "EnvironmentConfig" => Some(false),
            _ => None,
        })
    }

    fn resources(&self, selector: &ResourceSelector) -> Result<Vec<Value>, RunnerError> {
        self.asked.borrow_mut().push(selector.namespace.clone());
        Ok(self
            .resources
            .iter()
            .filter(|r| r["kind"] == selector.kind.as_str())
            .filter(|r| {
                selector
                    .namespace
                    .as_ref()
                    .is_none_or(|ns| r["metadata"]["namespace"] == ns.as_str())
            })
            .filter(|r| match &selector.matching {
                ResourceMatch::Name(n) => r["metadata"]["name"] == n.as_str(),
                ResourceMatch::Labels(_) => true,
            })
            .cloned()
            .collect())
    }
    fn schema(&self, _: &SchemaSelector) -> Result<Option<Value>, RunnerError> {
        Ok(None)
    }
    fn secret(&self, r: &SecretRef) -> Result<Option<BTreeMap<String, Vec<u8>>>, RunnerError> {
        Ok(self
            .secrets
            .get(&(r.namespace.clone(), r.name.clone()))
            .cloned())
    }
}

fn step(name: &str) -> Step {
    Step {
        name: name.into(),
        function: format!("fn-{name}"),
        ..Step::default()
    }
}

fn run_with(
    steps: &[Step],
    files: &Files,
    behaviour: impl Fn(&str, &Request) -> Result<Response, RunnerError>,
) -> (Result<PipelineOutput, Box<PipelineFailure>>, Vec<Request>) {
    run_for(None, steps, files, behaviour)
}

/// Runs `steps` for `tenant` (or the platform) with the default grants.
fn run_for(
    tenant: Option<&str>,
    steps: &[Step],
    files: &Files,
    behaviour: impl Fn(&str, &Request) -> Result<Response, RunnerError>,
) -> (Result<PipelineOutput, Box<PipelineFailure>>, Vec<Request>) {
    let runner = Closure(behaviour, RefCell::new(Vec::new()));
    let grants = ReadGrants::tenant_defaults();
    let pipeline = Pipeline {
        runner: &runner,
        source: files,
        rules: OutputRules::default(),
        reads: ReadPolicy {
            tenant: &Tenant::of_namespace(tenant),
            grants: &grants,
        },
    };
    let result = pipeline.run(steps, &State::default(), json!({}));
    (result, runner.1.into_inner())
}

fn add_resource(request: &Request, name: &str) -> Response {
    let mut response = Response::from_request(request);
    response.desired.resources.insert(
        name.into(),
        Resource::new(json!({"apiVersion": "v1", "kind": "ConfigMap"})),
    );
    response
}

#[test]
fn desired_state_and_context_chain_from_step_to_step() {
    let (result, requests) = run_with(&[step("a"), step("b")], &Files::default(), |f, req| {
        let mut response = add_resource(req, f);
        response.context[f] = json!(true);
        Ok(response)
    });
    let out = result.expect("pipeline succeeds");
    assert_eq!(
        out.desired.resources.keys().collect::<Vec<_>>(),
        ["fn-a", "fn-b"]
    );
    assert_eq!(out.context, json!({"fn-a": true, "fn-b": true}));
    assert!(requests[1].desired.resources.contains_key("fn-a"));
    assert_eq!(requests[1].context, json!({"fn-a": true}));
    assert_eq!(out.calls, ["a", "b"]);
}

#[test]
fn first_fatal_result_stops_the_pipeline_and_keeps_earlier_results() {
    let (result, requests) = run_with(
        &[step("a"), step("b"), step("c")],
        &Files::default(),
        |f: &str, req: &Request| {
            let mut response = Response::from_request(req);
            response.normal(format!("{f} ran"));
            if f == "fn-b" {
                response.fatal("boom");
            }
            Ok(response)
        },
    );
    let failure = result.expect_err("pipeline fails");
    assert_eq!(
        failure.to_string(),
        "pipeline step \"b\" returned a fatal result: boom"
    );
    assert_eq!(requests.len(), 2, "step c must not run");
    let messages: Vec<_> = failure
        .partial
        .results
        .iter()
        .map(|r| (r.step.as_str(), r.result.message.as_str()))
        .collect();
    assert_eq!(
        messages,
        [("a", "fn-a ran"), ("b", "fn-b ran"), ("b", "boom")]
    );
}

fn wants_config(req: &Request) -> Response {
    let mut response = Response::from_request(req);
    response.requirements.resources.insert(
        "config".into(),
        ResourceSelector {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            matching: ResourceMatch::Name("settings".into()),
            namespace: None,
        },
    );
    if let Some(items) = req.required_resources.get("config") {
        response.context["seen"] = json!(items.len());
    }
    response
}

#[test]
fn requirements_loop_calls_again_with_required_resources_until_stable() {
    let files = Files {
        resources: vec![json!({"kind": "ConfigMap", "metadata": {"name": "settings"}})],
        ..Files::default()
    };
    let (result, requests) = run_with(&[step("a")], &files, |_, req| Ok(wants_config(req)));
    let out = result.expect("pipeline succeeds");
    assert_eq!(requests.len(), 2);
    assert!(requests[0].required_resources.is_empty());
    assert_eq!(requests[1].required_resources["config"].len(), 1);
    assert_eq!(out.context["seen"], json!(1));
}

#[test]
fn what_a_pipeline_read_is_each_steps_selectors_of_its_last_call() {
    let selector = |name: &str| ResourceSelector {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        matching: ResourceMatch::Name(name.into()),
        namespace: Some("ns".into()),
    };
    let bootstrapped = |name: &str, wanted: &str| {
        let mut step = step(name);
        step.requirements
            .resources
            .insert("bootstrap".into(), selector(wanted));
        step
    };
    // Asks for `first` on its first call and `then` on every later one.
    let changing = |first: &'static str, then: &'static str| {
        move |request: &Request| {
            let mut response = Response::from_request(request);
            let wanted = if request.required_resources.contains_key("asked") {
                then
            } else {
                first
            };
            response.require_resource("asked", selector(wanted));
            response
        }
    };
    let fatal = |request: &Request| {
        let mut response = Response::from_request(request);
        response.results.push(plait_sdk::FunctionResult {
            severity: Severity::Fatal,
            message: "no".into(),
            reason: None,
            target: None,
        });
        response
    };
    type Behaviour = Box<dyn Fn(&Request) -> Response>;
    // (steps, how each step's function answers, the selectors recorded by name)
    let cases: Vec<(Vec<Step>, Vec<Behaviour>, Vec<&str>)> = vec![
        (
            vec![step("a")],
            vec![Box::new(Response::from_request)],
            vec![],
        ),
        (
            vec![bootstrapped("a", "boot")],
            vec![Box::new(Response::from_request)],
            vec!["boot"],
        ),
        (
            vec![step("a")],
            vec![Box::new(changing("x", "x"))],
            vec!["x"],
        ),
        (
            vec![step("a")],
            vec![Box::new(changing("x", "y"))],
            vec!["y"],
        ),
        (
            vec![bootstrapped("a", "boot"), step("b")],
            vec![Box::new(changing("x", "x")), Box::new(changing("z", "z"))],
            vec!["boot", "x", "z"],
        ),
        (
            vec![bootstrapped("a", "boot"), step("b")],
            vec![Box::new(changing("x", "x")), Box::new(fatal)],
            vec!["boot", "x"],
        ),
    ];
    for (steps, behaviours, want) in cases {
        let names: Vec<String> = steps.iter().map(|s| s.function.clone()).collect();
        let (result, _) = run_with(&steps, &Files::default(), |function, request| {
            let at = names.iter().position(|n| n == function).unwrap_or(0);
            Ok(behaviours[at](request))
        });
        let read = match result {
            Ok(out) => out.required,
            Err(failure) => failure.partial.required,
        };
        let mut read: Vec<String> = read
            .iter()
            .map(|s| match &s.matching {
                ResourceMatch::Name(name) => name.clone(),
                ResourceMatch::Labels(_) => String::new(),
            })
            .collect();
        read.sort();
        assert_eq!(read, want, "{names:?}");
    }
}

#[test]
fn requirements_that_never_stabilize_fail_after_the_iteration_cap() {
    let (result, requests) = run_with(&[step("a")], &Files::default(), |_, req| {
        let mut response = wants_config(req);
        let n = req.required_resources.len() + req.context["n"].as_u64().unwrap_or(0) as usize;
        response.context["n"] = json!(n);
        if let Some(sel) = response.requirements.resources.get_mut("config") {
            sel.matching = ResourceMatch::Name(format!("settings-{n}"));
        }
        Ok(response)
    });
    let failure = result.expect_err("must not stabilize");
    assert!(matches!(
        failure.error,
        PipelineError::RequirementsDidNotStabilize { .. }
    ));
    assert_eq!(requests.len(), MAX_REQUIREMENTS_ITERATIONS + 1);
}

#[test]
fn pipeline_ttl_is_the_smallest_non_zero_step_ttl() {
    let ttls = [
        ("a", Some(Duration::from_secs(60))),
        ("b", Some(Duration::ZERO)),
        ("c", Some(Duration::from_secs(30))),
        ("d", None),
    ];
    let steps: Vec<_> = ttls.iter().map(|(n, _)| step(n)).collect();
    let (result, _) = run_with(&steps, &Files::default(), |f, req| {
        let mut response = Response::from_request(req);
        response.ttl = ttls
            .iter()
            .find(|(n, _)| format!("fn-{n}") == f)
            .and_then(|(_, t)| *t);
        Ok(response)
    });
    assert_eq!(result.expect("ok").ttl, Some(Duration::from_secs(30)));
}

#[test]
fn step_credentials_come_from_secrets() {
    let mut files = Files::default();
    files.secrets.insert(
        ("crossplane-system".into(), "db".into()),
        BTreeMap::from([("password".into(), b"hunter2".to_vec())]),
    );
    let mut with_secret = step("a");
    with_secret.credentials = vec![
        StepCredential {
            name: "db".into(),
            secret: Some(SecretRef {
                namespace: "crossplane-system".into(),
                name: "db".into(),
            }),
        },
        StepCredential {
            name: "none".into(),
            secret: None,
        },
    ];
    let (result, requests) = run_with(&[with_secret.clone()], &files, |_, req| {
        Ok(Response::from_request(req))
    });
    result.expect("ok");
    assert_eq!(requests[0].credentials["db"]["password"], b"hunter2");
    assert!(!requests[0].credentials.contains_key("none"));

    let (result, requests) = run_with(&[with_secret], &Files::default(), |_, req| {
        Ok(Response::from_request(req))
    });
    let failure = result.expect_err("missing secret");
    assert_eq!(
        failure.to_string(),
        "pipeline step \"a\": cannot get credentials \"db\": Secret crossplane-system/db not found"
    );
    assert!(requests.is_empty(), "the function must not be called");
}

#[test]
fn invalid_output_is_an_error_naming_step_and_resource() {
    let cases: [(&str, Value, &str); 4] = [
        (
            "missing-kind",
            json!({"apiVersion": "v1"}),
            "composed resource \"bad\": kind: Required value",
        ),
        (
            "bad-name",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_Valid"}}),
            "metadata.name: Invalid value: \"Not_Valid\"",
        ),
        (
            "not-object",
            json!("a string"),
            "must be a JSON object, got a string",
        ),
        (
            "label-not-string",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"a": 1}}}),
            "metadata.labels[a]: Invalid value: must be a string",
        ),
    ];
    for (case, object, want) in cases {
        let (result, _) = run_with(&[step("a")], &Files::default(), |_, req| {
            let mut response = Response::from_request(req);
            response
                .desired
                .resources
                .insert("bad".into(), Resource::new(object.clone()));
            Ok(response)
        });
        let message = result.expect_err(case).to_string();
        assert!(
            message.starts_with(
                "pipeline step \"a\" (function \"fn-a\") returned invalid desired state"
            ),
            "{case}: {message}"
        );
        assert!(message.contains(want), "{case}: {message}");
    }
}

#[test]
fn empty_metadata_name_and_namespace_count_as_unset() {
    let cases: [(&str, Value); 3] = [
        (
            "empty-name",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ""}}),
        ),
        (
            "empty-namespace",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ""}}),
        ),
        (
            "empty-name-with-generate-name",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "", "generateName": "cm-"}}),
        ),
    ];
    for (case, object) in cases {
        let (result, _) = run_with(&[step("a")], &Files::default(), |_, req| {
            let mut response = Response::from_request(req);
            response
                .desired
                .resources
                .insert("cm".into(), Resource::new(object.clone()));
            Ok(response)
        });
        result.unwrap_or_else(|e| panic!("{case}: {e}"));
    }
}

#[test]
fn namespaced_composite_confines_composed_resources() {
    let cases: [(&str, Value, Option<&str>); 9] = [
        (
            "same-namespace",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "team-a"}}),
            None,
        ),
        (
            "no-namespace",
            json!({"apiVersion": "v1", "kind": "ConfigMap"}),
            None,
        ),
        (
            "other-namespace",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}}),
            Some(
                "composed resource \"x\" (ConfigMap) is in namespace \"other\", but the composite resource is namespaced and may compose only in its own namespace \"team-a\"",
            ),
        ),
        (
            "cluster-scoped",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}),
            Some(
                "composed resource \"r\" is a cluster-scoped ClusterRole, but a namespaced composite resource may compose only namespaced resources",
            ),
        ),
        (
            "usage-of-own-namespace",
            json!({"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
                "spec": {"of": {"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c", "namespace": "team-a"}}, "reason": "r"}}),
            None,
        ),
        (
            "usage-of-other-namespace",
            json!({"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
                "spec": {"of": {"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c", "namespace": "other"}}, "reason": "r"}}),
            Some(
                "composed resource \"r\" is a Usage of a resource in namespace \"other\", but a namespaced composite resource may protect only resources in its own namespace \"team-a\"",
            ),
        ),
        (
            "usage-selecting-in-other-namespace",
            json!({"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
                "spec": {"of": {"apiVersion": "v1", "kind": "ConfigMap", "resourceSelector": {"namespace": "other"}}, "reason": "r"}}),
            Some(
                "composed resource \"r\" is a Usage of a resource in namespace \"other\", but a namespaced composite resource may protect only resources in its own namespace \"team-a\"",
            ),
        ),
        (
            "cluster-usage",
            json!({"apiVersion": "protection.crossplane.io/v1beta1", "kind": "ClusterUsage"}),
            Some(
                "composed resource \"r\" is a cluster-scoped ClusterUsage, but a namespaced composite resource may compose only namespaced resources",
            ),
        ),
        (
            "legacy-usage",
            json!({"apiVersion": "apiextensions.crossplane.io/v1beta1", "kind": "Usage"}),
            Some(
                "composed resource \"r\" is a cluster-scoped Usage, but a namespaced composite resource may compose only namespaced resources",
            ),
        ),
    ];
    for (case, object, want) in cases {
        let state = State {
            composite: None,
            resources: BTreeMap::from([("r".to_string(), Resource::new(object))]),
        };
        let rules = OutputRules {
            namespace: Some("team-a"),
            ..OutputRules::default()
        };
        let got = check::check_state(&state, &rules)
            .err()
            .map(|e| e.to_string());
        assert_eq!(got.as_deref(), want, "{case}");
    }
}

#[test]
fn count_and_size_caps_are_enforced() {
    let mut state = State::default();
    for i in 0..3 {
        state.resources.insert(
            format!("r{i}"),
            Resource::new(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "x".repeat(100)}}),
            ),
        );
    }
    let count = OutputRules {
        max_resources: 2,
        ..OutputRules::default()
    };
    assert_eq!(
        check::check_state(&state, &count)
            .err()
            .map(|e| e.to_string()),
        Some("3 composed resources exceed the limit of 2".into())
    );
    let size = OutputRules {
        max_total_bytes: 200,
        ..OutputRules::default()
    };
    assert!(matches!(
        check::check_state(&state, &size),
        Err(check::CheckError::TooLarge { limit: 200, .. })
    ));
}

#[test]
fn runner_errors_name_the_step_and_function() {
    let (result, _) = run_with(&[step("a")], &Files::default(), |_, _| {
        Err("wasm trap: interrupt".into())
    });
    assert_eq!(
        result.expect_err("fails").to_string(),
        "pipeline step \"a\" (function \"fn-a\") failed: wasm trap: interrupt"
    );
}

#[test]
fn rfc1123_names_follow_kubernetes_rules() {
    let cases = [
        ("my-bucket", true),
        ("a.b-c.d", true),
        ("0abc", true),
        ("", false),
        ("-abc", false),
        ("abc-", false),
        ("a..b", false),
        ("UPPER", false),
        ("under_score", false),
    ];
    for (name, ok) in cases {
        assert_eq!(check::rfc1123_subdomain(name).is_ok(), ok, "{name:?}");
    }
    assert!(check::rfc1123_subdomain(&"a".repeat(254)).is_err());
}

fn requiring(
    selector: ResourceSelector,
) -> impl Fn(&str, &Request) -> Result<Response, RunnerError> {
    move |_, request: &Request| {
        let mut response = Response::from_request(request);
        response.require_resource("wanted", selector.clone());
        Ok(response)
    }
}

#[test]
fn a_tenants_reads_stay_in_its_namespace_unless_granted() {
    let object = |kind: &str, namespace: Option<&str>| {
        let mut o = json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}});
        if let Some(ns) = namespace {
            o["metadata"]["namespace"] = json!(ns);
        }
        o
    };
    let files = || Files {
        resources: vec![
            object("Secret", Some("team-a")),
            object("Secret", Some("team-b")),
            object("ConfigMap", Some("team-a")),
            object("ConfigMap", Some("team-b")),
            object("Namespace", None),
            json!({"apiVersion": "apiextensions.crossplane.io/v1beta1", "kind": "EnvironmentConfig", "metadata": {"name": "x"}}),
        ],
        ..Files::default()
    };
    let by_name = |api_version: &str, kind: &str, namespace: Option<&str>| ResourceSelector {
        api_version: api_version.into(),
        kind: kind.into(),
        matching: ResourceMatch::Name("x".into()),
        namespace: namespace.map(str::to_string),
    };
    let by_labels = |kind: &str, namespace: Option<&str>| ResourceSelector {
        api_version: "v1".into(),
        kind: kind.into(),
        matching: ResourceMatch::Labels(BTreeMap::new()),
        namespace: namespace.map(str::to_string),
    };
    // (tenant, selector, Ok(namespace the source was asked, objects found) or the refusal's start)
    type Want = Result<(Option<&'static str>, usize), &'static str>;
    let cases: Vec<(Option<&str>, ResourceSelector, Want)> = vec![
        (
            Some("team-a"),
            by_name("v1", "Secret", None),
            Ok((Some("team-a"), 1)),
        ),
        (
            Some("team-a"),
            by_name("v1", "Secret", Some("team-a")),
            Ok((Some("team-a"), 1)),
        ),
        (
            Some("team-a"),
            by_name("v1", "Secret", Some("team-b")),
            Err(
                "pipeline step \"a\": required resources \"wanted\" refused: function \"fn-a\" may not read v1 Secret in namespace team-b",
            ),
        ),
        (
            Some("team-a"),
            by_name("v1", "ConfigMap", Some("kube-system")),
            Err("pipeline step \"a\": required resources \"wanted\" refused"),
        ),
        (
            Some("team-a"),
            by_labels("ConfigMap", None),
            Ok((Some("team-a"), 1)),
        ),
        (
            Some("team-a"),
            by_labels("ConfigMap", Some("team-b")),
            Err("pipeline step \"a\": required resources \"wanted\" refused"),
        ),
        (
            Some("team-a"),
            by_name("v1", "Namespace", None),
            Err(
                "pipeline step \"a\": required resources \"wanted\" refused: function \"fn-a\" may not read v1 Namespace (cluster-scoped)",
            ),
        ),
        (
            Some("team-a"),
            by_name(
                "apiextensions.crossplane.io/v1beta1",
                "EnvironmentConfig",
                None,
            ),
            Ok((None, 1)),
        ),
        (
            None,
            by_name("v1", "Secret", Some("team-b")),
            Ok((Some("team-b"), 1)),
        ),
        (None, by_labels("ConfigMap", None), Ok((None, 2))),
    ];
    for (tenant, selector, want) in cases {
        let files = files();
        let (result, requests) = run_for(tenant, &[step("a")], &files, requiring(selector.clone()));
        match want {
            Ok((asked, found)) => {
                let read = result
                    .as_ref()
                    .map(|out| out.required.clone())
                    .unwrap_or_default();
                assert!(result.is_ok(), "{tenant:?} {selector:?}: {result:?}");
                let confined = ResourceSelector {
                    namespace: asked.map(str::to_string),
                    ..selector.clone()
                };
                assert_eq!(
                    read,
                    [confined],
                    "{tenant:?} {selector:?}: what was read is recorded as confined"
                );
                assert_eq!(
                    files.asked.borrow().last().cloned(),
                    Some(asked.map(str::to_string)),
                    "{selector:?}"
                );
                let last = requests.last().expect("called");
                assert_eq!(
                    last.required("wanted").len(),
                    found,
                    "{tenant:?} {selector:?}"
                );
            }
            Err(start) => {
                let failure = result.err();
                assert_eq!(
                    failure.as_ref().map(|f| f.partial.required.len()),
                    Some(0),
                    "{tenant:?} {selector:?}: nothing refused is recorded as read"
                );
                let message = failure.map(|f| f.error.to_string()).unwrap_or_default();
                assert!(
                    message.starts_with(start),
                    "{tenant:?} {selector:?}: {message}"
                );
                assert!(
                    files.asked.borrow().is_empty(),
                    "a refused read never reaches the source"
                );
                assert_eq!(
                    requests.len(),
                    1,
                    "the function is not called with anything refused"
                );
            }
        }
    }
}

#[test]
fn credentials_the_composition_names_are_read_in_any_namespace_for_any_tenant() {
    let mut files = Files::default();
    for ns in ["team-a", "crossplane-system"] {
        files.secrets.insert(
            (ns.into(), "db".into()),
            BTreeMap::from([("k".to_string(), ns.as_bytes().to_vec())]),
        );
    }
    let with_secret = |ns: &str, name: &str| Step {
        credentials: vec![StepCredential {
            name: "db".into(),
            secret: Some(SecretRef {
                namespace: ns.into(),
                name: name.into(),
            }),
        }],
        ..step("a")
    };
    // (tenant, the Secret's namespace and name, what the step receives or
    // how the pipeline fails)
    type Case<'a> = (Option<&'a str>, &'a str, &'a str, Result<&'a [u8], &'a str>);
    let cases: [Case; 5] = [
        (Some("team-a"), "team-a", "db", Ok(b"team-a")),
        // The platform named the Secret in its Composition: its grant.
        (
            Some("team-a"),
            "crossplane-system",
            "db",
            Ok(b"crossplane-system"),
        ),
        (None, "crossplane-system", "db", Ok(b"crossplane-system")),
        (
            Some("team-a"),
            "crossplane-system",
            "missing",
            Err(
                "pipeline step \"a\": cannot get credentials \"db\": Secret crossplane-system/missing not found",
            ),
        ),
        (
            None,
            "team-b",
            "db",
            Err("pipeline step \"a\": cannot get credentials \"db\": Secret team-b/db not found"),
        ),
    ];
    for (tenant, namespace, name, want) in cases {
        let (result, requests) =
            run_for(tenant, &[with_secret(namespace, name)], &files, |_, req| {
                Ok(Response::from_request(req))
            });
        match want {
            Ok(data) => {
                assert!(result.is_ok(), "{tenant:?} {namespace}: {result:?}");
                assert_eq!(
                    requests[0].credentials["db"]["k"], data,
                    "{tenant:?} {namespace}"
                );
            }
            Err(message) => {
                let got = result
                    .err()
                    .map(|f| f.error.to_string())
                    .unwrap_or_default();
                assert_eq!(got, message, "{tenant:?} {namespace}");
                assert!(requests.is_empty(), "{tenant:?} {namespace}");
            }
        }
    }
}
