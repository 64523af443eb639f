//! Usages and ClusterUsages on the test cluster's API server, with the
//! controller serving the admission webhook and the shipped
//! `ValidatingWebhookConfiguration` pointed at it: the deletion of a used
//! resource is refused with 409 until its user is gone, and replayed when
//! the Usage asks for it; selectors resolve with `matchControllerRef`; the
//! CRD's CEL rule and the namespace check refuse what they must; a Usage an
//! XR composes orders the deletion of what it composed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use plait_testcluster::TestCluster;
use serde_json::{Value, json};

mod common;
use common::kube_support::{WebhookController, apply, resource};

const NAMESPACE: &str = "usage-test";
const PATIENCE: Duration = Duration::from_secs(90);

/// Waits until `check` answers `Some`, or fails naming `what`.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(started.elapsed() < PATIENCE, "never: {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn create(api: &Api<DynamicObject>, value: Value) -> Result<DynamicObject, kube::Error> {
    let object: DynamicObject = serde_json::from_value(value).unwrap();
    api.create(&PostParams::default(), &object).await
}

async fn delete(api: &Api<DynamicObject>, name: &str) -> Result<(), kube::Error> {
    api.delete(name, &DeleteParams::default()).await.map(drop)
}

fn value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap()
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"]["labels"][key].as_str()
}

fn is_ready(object: &Value) -> bool {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True" && c["reason"] == "Available")
}

/// The controller serving the webhook on loopback, with the shipped
/// webhook configuration pointed at it, and the test's namespace.
struct Setup {
    client: kube::Client,
    controller: Option<WebhookController>,
}

/// The controller serving the webhook, with the shipped webhook
/// configuration pointed at it.
async fn start_controller(client: &kube::Client) -> WebhookController {
    // A deleted composed Usage looks this often whether its user is gone.
    WebhookController::start(
        TestCluster::shared().unwrap(),
        client,
        "plait-usage-test",
        &["--poll-interval=3s".to_string()],
    )
    .await
}

async fn setup() -> Setup {
    let cluster = TestCluster::shared().unwrap();
    let client = cluster.client().await;
    let controller = start_controller(&client).await;
    let namespaces = resource("v1", "Namespace", "namespaces");
    apply(
        &client,
        &namespaces,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        "usage-test",
    )
    .await;
    Setup {
        client,
        controller: Some(controller),
    }
}

fn usages(client: &kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &resource("protection.crossplane.io/v1beta1", "Usage", "usages"),
    )
}

fn cluster_usages(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &resource(
            "protection.crossplane.io/v1beta1",
            "ClusterUsage",
            "clusterusages",
        ),
    )
}

/// One scope's kinds: where its used and using resources live and what
/// protects them.
struct Scope {
    usage_kind: &'static str,
    usages: Api<DynamicObject>,
    used_kind: &'static str,
    used: ApiResource,
    resources: Api<DynamicObject>,
    namespace: Option<&'static str>,
}

impl Scope {
    fn namespaced(client: &kube::Client) -> Scope {
        let used = resource("v1", "ConfigMap", "configmaps");
        Scope {
            usage_kind: "Usage",
            usages: usages(client),
            used_kind: "ConfigMap",
            resources: Api::namespaced_with(client.clone(), NAMESPACE, &used),
            used,
            namespace: Some(NAMESPACE),
        }
    }

    fn cluster(client: &kube::Client) -> Scope {
        let used = resource(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "clusterroles",
        );
        Scope {
            usage_kind: "ClusterUsage",
            usages: cluster_usages(client),
            used_kind: "ClusterRole",
            resources: Api::all_with(client.clone(), &used),
            used,
            namespace: None,
        }
    }

    fn object(&self, name: &str) -> Value {
        let mut metadata = json!({"name": name});
        if let Some(namespace) = self.namespace {
            metadata["namespace"] = json!(namespace);
        }
        json!({"apiVersion": self.used.api_version, "kind": self.used_kind, "metadata": metadata})
    }

    fn usage(&self, name: &str, spec: Value) -> Value {
        let mut metadata = json!({"name": name});
        if let Some(namespace) = self.namespace {
            metadata["namespace"] = json!(namespace);
        }
        json!({"apiVersion": "protection.crossplane.io/v1beta1", "kind": self.usage_kind,
            "metadata": metadata, "spec": spec})
    }

    fn reference(&self, name: &str) -> Value {
        json!({"apiVersion": self.used.api_version, "kind": self.used_kind, "resourceRef": {"name": name}})
    }

    /// How the webhook names a Usage of this scope.
    fn described(&self, name: &str) -> String {
        match self.namespace {
            Some(namespace) => format!("*v1beta1.Usage \"{name}\" (in namespace \"{namespace}\")"),
            None => format!("*v1beta1.ClusterUsage \"{name}\""),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usages_block_deletion_until_their_user_is_gone_and_refuse_what_upstream_refuses() {
    let mut setup = setup().await;
    let client = &setup.client.clone();

    deleting_a_used_resource_is_refused_until_its_user_is_gone(client).await;
    a_usage_with_a_reason_and_no_user_lets_go_when_deleted(&mut setup).await;
    a_selector_with_match_controller_ref_protects_the_resource_of_the_same_controller(client).await;
    a_usage_without_by_or_reason_is_refused_by_the_crd(client).await;
    a_namespaced_usage_of_another_namespace_or_a_cluster_scoped_kind_is_refused(client).await;
    a_composed_usage_orders_the_deletion_of_its_composite(client).await;

    let configs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &resource(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
    );
    configs
        .delete("plait-usage-test", &DeleteParams::default())
        .await
        .unwrap();
}

async fn deleting_a_used_resource_is_refused_until_its_user_is_gone(client: &kube::Client) {
    // (scope, replayDeletion)
    let cases = [
        (Scope::namespaced(client), false),
        (Scope::namespaced(client), true),
        (Scope::cluster(client), false),
        (Scope::cluster(client), true),
    ];
    for (scope, replay) in &cases {
        let case = format!(
            "{}-{}",
            scope.usage_kind.to_lowercase(),
            if *replay { "replay" } else { "keep" }
        );
        let (used, user, usage) = (
            format!("used-{case}"),
            format!("user-{case}"),
            format!("protect-{case}"),
        );
        create(&scope.resources, scope.object(&used)).await.unwrap();
        create(&scope.resources, scope.object(&user)).await.unwrap();
        create(
            &scope.usages,
            scope.usage(
                &usage,
                json!({"of": scope.reference(&used), "by": scope.reference(&user), "replayDeletion": replay}),
            ),
        )
        .await
        .unwrap();

        let ready = eventually(&format!("{case}: Usage Ready"), || async {
            let found = value(&scope.usages.get(&usage).await.ok()?);
            is_ready(&found).then_some(found)
        })
        .await;
        let user_uid = value(&scope.resources.get(&user).await.unwrap())["metadata"]["uid"].clone();
        assert!(
            ready["metadata"]["ownerReferences"]
                .as_array()
                .unwrap()
                .iter()
                .any(|o| o["uid"] == user_uid),
            "{case}: the user owns the Usage: {ready}"
        );
        assert_eq!(
            ready["metadata"]["finalizers"],
            json!(["usage.apiextensions.crossplane.io"]),
            "{case}"
        );
        assert_eq!(
            ready["metadata"]["annotations"]["crossplane.io/usage-details"],
            json!(format!("{0}/{user} uses {0}/{used}", scope.used_kind)),
            "{case}"
        );
        let labelled = value(&scope.resources.get(&used).await.unwrap());
        assert_eq!(
            label(&labelled, "crossplane.io/in-use"),
            Some("true"),
            "{case}"
        );

        // The API server picks the webhook configuration up within moments.
        let refusal = eventually(&format!("{case}: deletion refused"), || async {
            match delete(&scope.resources, &used).await {
                Err(kube::Error::Api(status)) => Some(status),
                other => panic!("{case}: the used resource's deletion was not refused: {other:?}"),
            }
        })
        .await;
        assert_eq!(refusal.code, 409, "{case}: {refusal:?}");
        assert!(
            refusal.message.contains(&format!(
                "admission webhook \"nousages.protection.crossplane.io\" denied the request: \
                 This resource is in-use by 1 usage(s), including the {} by resource {}/{user}.",
                scope.described(&usage),
                scope.used_kind
            )),
            "{case}: {}",
            refusal.message
        );
        let attempted = value(&scope.resources.get(&used).await.unwrap());
        assert_eq!(
            attempted["metadata"]["annotations"]["usage.crossplane.io/deletion-attempt-with-policy"],
            "Background",
            "{case}"
        );

        // The user goes; the garbage collector takes its Usage with it.
        delete(&scope.resources, &user).await.unwrap();
        eventually(&format!("{case}: Usage gone"), || async {
            scope
                .usages
                .get_opt(&usage)
                .await
                .unwrap()
                .is_none()
                .then_some(())
        })
        .await;
        if *replay {
            eventually(&format!("{case}: deletion replayed"), || async {
                scope
                    .resources
                    .get_opt(&used)
                    .await
                    .unwrap()
                    .is_none()
                    .then_some(())
            })
            .await;
        } else {
            let released = eventually(&format!("{case}: in-use label removed"), || async {
                let found = value(&scope.resources.get(&used).await.ok()?);
                label(&found, "crossplane.io/in-use")
                    .is_none()
                    .then_some(found)
            })
            .await;
            assert_eq!(released["metadata"]["name"], json!(used));
            delete(&scope.resources, &used).await.unwrap();
        }
    }
}

/// A Usage with a `reason` and no `by`, after a refused deletion of what it
/// protects: deleting the Usage takes its finalizer and the in-use label
/// off, so the resource can be deleted; likewise when the Usage is deleted
/// while the controller is down and the controller starts again.
async fn a_usage_with_a_reason_and_no_user_lets_go_when_deleted(setup: &mut Setup) {
    let client = setup.client.clone();
    // (scope, the controller restarts while the Usage is deleted)
    let cases = [
        (Scope::namespaced(&client), false),
        (Scope::cluster(&client), false),
        (Scope::namespaced(&client), true),
    ];
    for (scope, restart) in &cases {
        let case = format!(
            "reason-{}{}",
            scope.usage_kind.to_lowercase(),
            if *restart { "-restart" } else { "" }
        );
        let (used, usage) = (format!("used-{case}"), format!("protect-{case}"));
        create(&scope.resources, scope.object(&used)).await.unwrap();
        create(
            &scope.usages,
            scope.usage(
                &usage,
                json!({"of": scope.reference(&used), "reason": "production data"}),
            ),
        )
        .await
        .unwrap();
        eventually(&format!("{case}: Usage Ready"), || async {
            let found = value(&scope.usages.get(&usage).await.ok()?);
            is_ready(&found).then_some(())
        })
        .await;
        eventually(&format!("{case}: in-use label"), || async {
            let found = value(&scope.resources.get(&used).await.ok()?);
            (label(&found, "crossplane.io/in-use") == Some("true")).then_some(())
        })
        .await;
        let refusal = eventually(&format!("{case}: deletion refused"), || async {
            match delete(&scope.resources, &used).await {
                Err(kube::Error::Api(status)) => Some(status),
                other => panic!("{case}: the used resource's deletion was not refused: {other:?}"),
            }
        })
        .await;
        assert_eq!(refusal.code, 409, "{case}: {refusal:?}");

        if *restart {
            setup.controller = None;
        }
        delete(&scope.usages, &usage).await.unwrap();
        if *restart {
            let kept = value(&scope.usages.get(&usage).await.unwrap());
            assert_eq!(
                kept["metadata"]["finalizers"],
                json!(["usage.apiextensions.crossplane.io"]),
                "{case}: no controller, so the finalizer stays"
            );
            setup.controller = Some(start_controller(&client).await);
        }
        eventually(&format!("{case}: Usage gone"), || async {
            scope
                .usages
                .get_opt(&usage)
                .await
                .unwrap()
                .is_none()
                .then_some(())
        })
        .await;
        eventually(&format!("{case}: in-use label removed"), || async {
            let found = value(&scope.resources.get(&used).await.ok()?);
            label(&found, "crossplane.io/in-use")
                .is_none()
                .then_some(())
        })
        .await;
        delete(&scope.resources, &used).await.unwrap();
    }
}

async fn a_selector_with_match_controller_ref_protects_the_resource_of_the_same_controller(
    client: &kube::Client,
) {
    let scope = Scope::namespaced(client);
    let owner = |name: &str| {
        let scope = &scope;
        let name = name.to_string();
        async move {
            let created = create(&scope.resources, scope.object(&name)).await.unwrap();
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name,
                "uid": created.metadata.uid, "controller": true})
        }
    };
    let ours = owner("controller-ours").await;
    let theirs = owner("controller-theirs").await;
    for (name, controller) in [("selected-theirs", &theirs), ("selected-ours", &ours)] {
        let mut object = scope.object(name);
        object["metadata"]["labels"] = json!({"app": "database"});
        object["metadata"]["ownerReferences"] = json!([controller]);
        create(&scope.resources, object).await.unwrap();
    }
    let mut usage = scope.usage(
        "protect-selected",
        json!({
            "of": {"apiVersion": "v1", "kind": "ConfigMap",
                "resourceSelector": {"matchLabels": {"app": "database"}, "matchControllerRef": true}},
            "reason": "the database holds production data",
        }),
    );
    usage["metadata"]["ownerReferences"] = json!([ours]);
    create(&scope.usages, usage).await.unwrap();

    let ready = eventually("selector resolved and Usage Ready", || async {
        let found = value(&scope.usages.get("protect-selected").await.ok()?);
        is_ready(&found).then_some(found)
    })
    .await;
    assert_eq!(
        ready["spec"]["of"]["resourceRef"],
        json!({"name": "selected-ours"}),
        "{ready}"
    );
    let refusal = eventually("deletion of the selected resource refused", || async {
        match delete(&scope.resources, "selected-ours").await {
            Err(kube::Error::Api(status)) => Some(status),
            other => panic!("not refused: {other:?}"),
        }
    })
    .await;
    assert_eq!(refusal.code, 409);
    assert!(
        refusal.message.ends_with(
            "This resource is in-use by 1 usage(s), including the *v1beta1.Usage \"protect-selected\" \
             (in namespace \"usage-test\") with reason: \"the database holds production data\"."
        ),
        "{}",
        refusal.message
    );
    // The resource of the other controller is not protected.
    let other = value(&scope.resources.get("selected-theirs").await.unwrap());
    assert_eq!(label(&other, "crossplane.io/in-use"), None);
    delete(&scope.resources, "selected-theirs").await.unwrap();

    // Without `by` the Usage goes when it is deleted, and so does the label.
    delete(&scope.usages, "protect-selected").await.unwrap();
    eventually("in-use label removed", || async {
        let found = value(&scope.resources.get("selected-ours").await.ok()?);
        label(&found, "crossplane.io/in-use")
            .is_none()
            .then_some(())
    })
    .await;
    delete(&scope.resources, "selected-ours").await.unwrap();
}

async fn a_usage_without_by_or_reason_is_refused_by_the_crd(client: &kube::Client) {
    for scope in [Scope::namespaced(client), Scope::cluster(client)] {
        let refused = create(
            &scope.usages,
            scope.usage("neither", json!({"of": scope.reference("anything")})),
        )
        .await
        .unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("either \"spec.by\" or \"spec.reason\" must be specified."),
            "{}: {refused}",
            scope.usage_kind
        );
    }
}

async fn a_namespaced_usage_of_another_namespace_or_a_cluster_scoped_kind_is_refused(
    client: &kube::Client,
) {
    let scope = Scope::namespaced(client);
    let of_elsewhere = [
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "resourceRef": {"name": "kube-root-ca.crt", "namespace": "default"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "resourceSelector": {"namespace": "default", "matchLabels": {"app": "x"}}}),
    ];
    for of in of_elsewhere {
        // Without `by`, the CRD's own rule refuses it, as upstream's does.
        let refused = create(
            &scope.usages,
            scope.usage(
                "elsewhere",
                json!({"of": of, "reason": "not mine to protect"}),
            ),
        )
        .await
        .unwrap_err();
        assert!(
            refused.to_string().contains(
                "cross-namespace \"spec.of\" is not allowed without \"spec.by\" resource."
            ),
            "{of}: {refused}"
        );
        // With `by`, the webhook refuses it: a tenant protects only its own.
        let by = json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "user"}});
        let refused = create(
            &scope.usages,
            scope.usage("elsewhere", json!({"of": of, "by": by})),
        )
        .await
        .unwrap_err();
        assert!(
            refused.to_string().contains(
                "namespaced Usage \"elsewhere\" in namespace \"usage-test\" refers to a resource in \
                 namespace \"default\": a Usage may protect only resources in its own namespace"
            ),
            "{of}: {refused}"
        );
    }
    let refused = create(
        &scope.usages,
        scope.usage(
            "cluster-scoped",
            json!({"of": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "resourceRef": {"name": "admin"}}, "reason": "not mine to protect"}),
        ),
    )
    .await
    .unwrap_err();
    assert!(
        refused.to_string().contains(
            "a namespaced Usage cannot protect the cluster-scoped resource kind \
             rbac.authorization.k8s.io/v1, Kind=ClusterRole - use a ClusterUsage instead"
        ),
        "{refused}"
    );
    // Naming its own namespace is allowed, with `by` (the CRD's rule, as
    // upstream's, cannot tell a Usage's own namespace from another).
    create(
        &scope.usages,
        scope.usage(
            "own-namespace",
            json!({"of": {"apiVersion": "v1", "kind": "ConfigMap",
                "resourceRef": {"name": "kube-root-ca.crt", "namespace": NAMESPACE}},
                "by": {"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "user"}}}),
        ),
    )
    .await
    .unwrap();
    delete(&scope.usages, "own-namespace").await.unwrap();
}

async fn a_composed_usage_orders_the_deletion_of_its_composite(client: &kube::Client) {
    let xrds = resource(
        "apiextensions.crossplane.io/v2",
        "CompositeResourceDefinition",
        "compositeresourcedefinitions",
    );
    let xrd = json!({
        "apiVersion": "apiextensions.crossplane.io/v2",
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": "xstacks.usage.example.org"},
        "spec": {"group": "usage.example.org", "names": {"kind": "XStack", "plural": "xstacks"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "referenceable": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object"}},
            }}}]},
    });
    apply(client, &xrds, &xrd, "usage-test").await;
    let config_map = |role: &str| {
        json!({"name": role, "base": {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"labels": {"role": role}}, "data": {"role": role}}})
    };
    let selected = |role: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "resourceSelector": {"matchLabels": {"role": role}, "matchControllerRef": true}})
    };
    // The database is in use by the app: the XR's deletion deletes the app
    // first, then the database once the Usage lets it go.
    let usage = json!({"name": "usage", "base": {
        "apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
        "spec": {"of": selected("database"), "by": selected("app"), "replayDeletion": true},
    }});
    let composition = json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": "xstacks.usage.example.org"},
        "spec": {
            "compositeTypeRef": {"apiVersion": "usage.example.org/v1", "kind": "XStack"},
            "mode": "Pipeline",
            "pipeline": [{"step": "compose", "functionRef": {"name": "function-patch-and-transform"},
                "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                    "resources": [config_map("database"), config_map("app"), usage]}}],
        },
    });
    let compositions = resource(
        "apiextensions.crossplane.io/v1",
        "Composition",
        "compositions",
    );
    apply(client, &compositions, &composition, "usage-test").await;

    let stacks: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &resource("usage.example.org/v1", "XStack", "xstacks"),
    );
    // The XR kind is served once the XRD controller has made its CRD.
    eventually("XStack served and created", || async {
        create(
            &stacks,
            json!({"apiVersion": "usage.example.org/v1", "kind": "XStack",
                "metadata": {"name": "stack", "namespace": NAMESPACE}, "spec": {}}),
        )
        .await
        .ok()
    })
    .await;

    let scope = Scope::namespaced(client);
    let composed = |role: &'static str| {
        let scope = &scope;
        async move {
            let listed = scope
                .resources
                .list(
                    &kube::api::ListParams::default()
                        .labels(&format!("role={role},crossplane.io/composite=stack")),
                )
                .await
                .ok()?;
            listed.items.first().map(value)
        }
    };
    let usage = eventually("the composed Usage Ready", || async {
        let listed = scope
            .usages
            .list(&kube::api::ListParams::default().labels("crossplane.io/composite=stack"))
            .await
            .ok()?;
        listed.items.iter().map(value).find(is_ready)
    })
    .await;
    let database = composed("database").await.unwrap();
    let app = composed("app").await.unwrap();
    let database_name = database["metadata"]["name"].as_str().unwrap().to_string();
    let app_name = app["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(
        usage["spec"]["of"]["resourceRef"]["name"],
        json!(database_name),
        "{usage}"
    );
    assert_eq!(
        usage["spec"]["by"]["resourceRef"]["name"],
        json!(app_name),
        "{usage}"
    );
    assert_eq!(label(&database, "crossplane.io/in-use"), Some("true"));

    let refusal = match delete(&scope.resources, &database_name).await {
        Err(kube::Error::Api(status)) => status,
        other => panic!("the database's deletion was not refused: {other:?}"),
    };
    assert_eq!(refusal.code, 409);
    assert!(
        refusal
            .message
            .ends_with(&format!("by resource ConfigMap/{app_name}.")),
        "{}",
        refusal.message
    );

    // The composite goes, and everything it composed with it.
    delete(&stacks, "stack").await.unwrap();
    eventually("the XR and what it composed gone", || async {
        let xr_gone = stacks.get_opt("stack").await.unwrap().is_none();
        let database_gone = scope
            .resources
            .get_opt(&database_name)
            .await
            .unwrap()
            .is_none();
        let app_gone = scope.resources.get_opt(&app_name).await.unwrap().is_none();
        (xr_gone && database_gone && app_gone).then_some(())
    })
    .await;
}
