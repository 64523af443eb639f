//! Field validation of Compositions and XRDs, with upstream-style messages.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use plait_model::{CompositeResourceDefinition, Composition, Manifest};
use serde_json::{Value, json};

fn composition(spec: Value) -> Composition {
    let mut spec = spec;
    if spec.get("compositeTypeRef").is_none() {
        spec["compositeTypeRef"] = json!({"apiVersion": "ex.org/v1", "kind": "X"});
    }
    Composition::from_value(json!({
        "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
        "metadata": {"name": "c"}, "spec": spec}))
    .unwrap()
}

fn messages(r: Result<(), Vec<plait_model::FieldError>>) -> Vec<String> {
    r.err()
        .unwrap_or_default()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn step(name: &str, function: &str) -> Value {
    json!({"step": name, "functionRef": {"name": function}})
}

#[test]
fn composition_validation_reports_upstream_style_errors() {
    let base = json!({"base": {"apiVersion": "v1", "kind": "ConfigMap"}});
    let named = |n: &str| {
        let mut r = base.clone();
        r["name"] = json!(n);
        r
    };
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "valid pipeline",
            json!({"mode": "Pipeline", "pipeline": [step("a", "f")]}),
            vec![],
        ),
        (
            "valid anonymous resources",
            json!({"resources": [base, base]}),
            vec![],
        ),
        (
            "v2-style pipeline without mode",
            json!({"pipeline": [step("a", "f")]}),
            vec![],
        ),
        (
            "missing compositeTypeRef",
            json!({"compositeTypeRef": {}, "mode": "Pipeline", "pipeline": [step("a", "f")]}),
            vec![
                "spec.compositeTypeRef.apiVersion: Required value",
                "spec.compositeTypeRef.kind: Required value",
            ],
        ),
        (
            "pipeline mode needs steps",
            json!({"mode": "Pipeline"}),
            vec![
                "spec.pipeline: Required value: an array of pipeline steps is required in Pipeline mode",
            ],
        ),
        (
            "resources mode needs resources",
            json!({}),
            vec![
                "spec.resources: Required value: an array of resources is required in Resources mode (the default if no mode is specified)",
            ],
        ),
        (
            "duplicate and empty steps, missing functionRef",
            json!({"mode": "Pipeline", "pipeline": [step("a", "f"), step("a", ""), step("", "f")]}),
            vec![
                "spec.pipeline[1].step: Duplicate value: \"a\"",
                "spec.pipeline[1].functionRef.name: Required value: every pipeline step must name the Function it runs",
                "spec.pipeline[2].step: Required value: every pipeline step needs a name",
            ],
        ),
        (
            "credentials",
            json!({"mode": "Pipeline", "pipeline": [{
                "step": "a", "functionRef": {"name": "f"},
                "credentials": [
                    {"name": "c", "source": "Secret"},
                    {"name": "c", "source": "None"},
                    {"name": "d", "source": "Secret", "secretRef": {"name": "s"}},
                    {"name": "e"}]}]}),
            vec![
                "spec.pipeline[0].credentials[0].secretRef: Required value: must be specified when source is Secret",
                "spec.pipeline[0].credentials[1].name: Duplicate value: \"c\"",
                "spec.pipeline[0].credentials[2].secretRef.namespace: Required value",
                "spec.pipeline[0].credentials[3].source: Required value",
            ],
        ),
        (
            "required resources need exactly one of name and matchLabels",
            json!({"mode": "Pipeline", "pipeline": [{
                "step": "a", "functionRef": {"name": "f"},
                "requirements": {"requiredResources": [
                    {"requirementName": "r", "apiVersion": "v1", "kind": "ConfigMap"},
                    {"requirementName": "r", "apiVersion": "v1", "kind": "ConfigMap", "name": "x"}]}}]}),
            vec![
                "spec.pipeline[0].requirements.requiredResources[0]: Invalid value: \"object\": either name or matchLabels must be specified, but not both",
                "spec.pipeline[0].requirements.requiredResources[1].requirementName: Duplicate value: \"r\"",
            ],
        ),
        (
            "mixed named and anonymous resources",
            json!({"resources": [named("a"), base.clone(), named("a"), named("b")]}),
            vec![
                "spec.resources[1].name: Required value: cannot mix named and anonymous resources, all resources must have a name or none must have a name",
                "spec.resources[2].name: Duplicate value: \"a\"",
            ],
        ),
        (
            "named after anonymous",
            json!({"resources": [base.clone(), named("a")]}),
            vec![
                "spec.resources[1].name: Invalid value: \"a\": cannot mix named and anonymous resources, all resources must have a name or none must have a name",
            ],
        ),
        (
            "anonymous resources with functions",
            json!({"mode": "Pipeline", "pipeline": [step("a", "f")], "resources": [base.clone()]}),
            vec![
                "spec.resources[0].name: Required value: cannot have anonymous resources when composition has functions",
            ],
        ),
        (
            "patches",
            json!({"patchSets": [{"name": "ps", "patches": [{"type": "PatchSet", "patchSetName": "ps"}, {"toFieldPath": "x"}]}],
                   "resources": [{"name": "r", "patches": [
                        {"type": "PatchSet", "patchSetName": "nope"},
                        {"type": "CombineFromComposite", "toFieldPath": "x", "combine": {"variables": [], "strategy": "string"}},
                        {"type": "CombineFromComposite", "toFieldPath": "x", "combine": {"variables": [{"fromFieldPath": "a"}], "strategy": "concat"}},
                        {"type": "FromCompositeFieldPath", "fromFieldPath": "a", "transforms": [{"type": "math"}, {"string": {"fmt": "%s"}}, {}]},
                        {"type": "Sideways", "fromFieldPath": "a"}]}]}),
            vec![
                "spec.patchSets[0].patches[0].type: Invalid value: \"PatchSet\": cannot use patches within patches",
                "spec.patchSets[0].patches[1].fromFieldPath: Required value: fromFieldPath must be set for patch type FromCompositeFieldPath",
                "spec.resources[0].patches[0].patchSetName: Invalid value: \"nope\": patchSetName must be the name of a declared patchSet",
                "spec.resources[0].patches[1].combine.variables: Required value: at least one variable must be provided",
                "spec.resources[0].patches[2].combine.strategy: Unsupported value: \"concat\": supported values: \"string\"",
                "spec.resources[0].patches[3].transforms[0].math: Required value: given transform type math requires configuration",
                "spec.resources[0].patches[4].type: Unsupported value: \"Sideways\": supported values: \"FromCompositeFieldPath\", \"FromEnvironmentFieldPath\", \"PatchSet\", \"ToCompositeFieldPath\", \"ToEnvironmentFieldPath\", \"CombineFromEnvironment\", \"CombineFromComposite\", \"CombineToComposite\", \"CombineToEnvironment\"",
            ],
        ),
        (
            "readiness checks",
            json!({"resources": [{"name": "r", "readinessChecks": [
                {"type": "None"}, {"type": "MatchString", "fieldPath": "a"}, {"type": "NonEmpty"},
                {"type": "MatchCondition", "matchCondition": {"type": "Ready", "status": "True"}}, {"type": "Maybe"}]}]}),
            vec![
                "spec.resources[0].readinessChecks[1].matchString: Required value: matchString is required for readiness check type MatchString",
                "spec.resources[0].readinessChecks[2].fieldPath: Required value: fieldPath is required for readiness check type NonEmpty",
                "spec.resources[0].readinessChecks[4].type: Unsupported value: \"Maybe\": supported values: \"MatchString\", \"MatchInteger\", \"NonEmpty\", \"MatchCondition\", \"MatchTrue\", \"MatchFalse\", \"None\"",
            ],
        ),
        (
            "environment",
            json!({"resources": [base.clone()], "environment": {
                "environmentConfigs": [
                    {"ref": {"name": "a"}},
                    {"type": "Reference"},
                    {"type": "Selector", "selector": {"matchLabels": []}},
                    {"type": "Selector", "selector": {"matchLabels": [{"key": "k"}]}},
                    {"type": "Selector", "selector": {"matchLabels": [{"key": "k", "type": "Value", "value": ""}]}}],
                "patches": [{"type": "FromEnvironmentFieldPath", "fromFieldPath": "a"}]}}),
            vec![
                "spec.environment.patches[0].type: Unsupported value: \"FromEnvironmentFieldPath\": supported values: \"FromCompositeFieldPath\", \"ToCompositeFieldPath\", \"CombineFromComposite\", \"CombineToComposite\"",
                "spec.environment.environmentConfigs[1].ref: Required value: ref is required",
                "spec.environment.environmentConfigs[2].selector.matchLabels: Required value: selector must have at least one match label",
                "spec.environment.environmentConfigs[3].selector.matchLabels[0].valueFromFieldPath: Required value: valueFromFieldPath is required",
                "spec.environment.environmentConfigs[4].selector.matchLabels[0].value: Required value: value must not be empty",
            ],
        ),
    ];
    for (name, spec, want) in cases {
        assert_eq!(messages(composition(spec).validate()), want, "{name}");
    }
}

fn xrd(api: &str, name: &str, spec: Value) -> CompositeResourceDefinition {
    let mut full = json!({"group": "ex.org", "names": {"kind": "XThing", "plural": "xthings"},
                          "versions": [{"name": "v1", "served": true, "referenceable": true}]});
    for (k, v) in spec.as_object().unwrap() {
        full[k] = v.clone();
    }
    CompositeResourceDefinition::from_value(json!({
        "apiVersion": format!("apiextensions.crossplane.io/{api}"), "kind": "CompositeResourceDefinition",
        "metadata": {"name": name}, "spec": full}))
    .unwrap()
}

#[test]
fn xrd_validation_reports_upstream_style_errors() {
    let claims = json!({"claimNames": {"kind": "Thing", "plural": "things"}});
    let cases: Vec<(&str, &str, &str, Value, Vec<&str>)> = vec![
        (
            "valid v1 with claims",
            "v1",
            "xthings.ex.org",
            claims.clone(),
            vec![],
        ),
        ("valid v2", "v2", "xthings.ex.org", json!({}), vec![]),
        (
            "valid v2 cluster",
            "v2",
            "xthings.ex.org",
            json!({"scope": "Cluster"}),
            vec![],
        ),
        (
            "name must be plural.group",
            "v2",
            "things.ex.org",
            json!({}),
            vec![
                "metadata.name: Invalid value: \"things.ex.org\": must be spec.names.plural+\".\"+spec.group",
            ],
        ),
        (
            "group needs a dot",
            "v2",
            "xthings.ex",
            json!({"group": "ex"}),
            vec!["spec.group: Invalid value: \"ex\": should be a domain with at least one dot"],
        ),
        (
            "names lowercase and required",
            "v2",
            "XThings.ex.org",
            json!({"names": {"kind": "", "plural": "XThings", "singular": "XThing"}}),
            vec![
                "spec.names.kind: Required value",
                "spec.names: Invalid value: \"object\": Plural name must be lowercase",
                "spec.names: Invalid value: \"object\": Singular name must be lowercase",
            ],
        ),
        (
            "claims in v2",
            "v2",
            "xthings.ex.org",
            claims.clone(),
            vec![
                "spec: Invalid value: \"object\": Claims aren't supported in apiextensions.crossplane.io/v2",
            ],
        ),
        (
            "claims on a non-legacy v1 XRD",
            "v1",
            "xthings.ex.org",
            json!({"scope": "Namespaced", "claimNames": {"kind": "Thing", "plural": "things"}}),
            vec![
                "spec: Invalid value: \"object\": Only LegacyCluster composite resources can offer claims",
            ],
        ),
        (
            "claim names clash with XR names",
            "v1",
            "xthings.ex.org",
            json!({"claimNames": {"kind": "XThing", "plural": "xthings"}}),
            vec![
                "spec.claimNames.kind: Invalid value: \"XThing\": conflicts with composite resource name",
                "spec.claimNames.plural: Invalid value: \"xthings\": conflicts with composite resource name",
            ],
        ),
        (
            "connection secret keys",
            "v2",
            "xthings.ex.org",
            json!({"connectionSecretKeys": ["a"]}),
            vec![
                "spec: Invalid value: \"object\": XR connection secrets aren't supported in apiextensions.crossplane.io/v2",
            ],
        ),
        (
            "connection secret keys on a cluster v1 XRD",
            "v1",
            "xthings.ex.org",
            json!({"scope": "Cluster", "connectionSecretKeys": ["a"]}),
            vec![
                "spec: Invalid value: \"object\": Only LegacyCluster composite resources support connection secrets",
            ],
        ),
        (
            "LegacyCluster in v2",
            "v2",
            "xthings.ex.org",
            json!({"scope": "LegacyCluster"}),
            vec![
                "spec.scope: Unsupported value: \"LegacyCluster\": supported values: \"Namespaced\", \"Cluster\"",
            ],
        ),
        (
            "two referenceable versions",
            "v1",
            "xthings.ex.org",
            json!({"versions": [{"name": "v1", "served": true, "referenceable": true},
                                {"name": "v2", "served": true, "referenceable": true}]}),
            vec![
                "spec.versions: Invalid value: \"v1, v2\": exactly one version must be referenceable, found 2",
            ],
        ),
        (
            "no referenceable version, duplicate names, unserved referenceable",
            "v1",
            "xthings.ex.org",
            json!({"versions": [{"name": "v1", "served": true}, {"name": "v1", "served": true}]}),
            vec![
                "spec.versions[1].name: Duplicate value: \"v1\"",
                "spec.versions: Invalid value: \"\": exactly one version must be referenceable, found 0",
            ],
        ),
        (
            "referenceable must be served; schema must be an object",
            "v1",
            "xthings.ex.org",
            json!({"versions": [{"name": "v1", "served": false, "referenceable": true,
                                 "schema": {"openAPIV3Schema": "nope"}}]}),
            vec![
                "spec.versions[0].served: Invalid value: false: the referenceable version must be served",
                "spec.versions[0].schema.openAPIV3Schema: Invalid value: \"nope\": must be an object",
            ],
        ),
        (
            "no versions",
            "v1",
            "xthings.ex.org",
            json!({"versions": []}),
            vec!["spec.versions: Required value: must have exactly one version"],
        ),
        (
            "composition refs need names",
            "v1",
            "xthings.ex.org",
            json!({"defaultCompositionRef": {}, "enforcedCompositionRef": {"name": "x"}}),
            vec!["spec.defaultCompositionRef.name: Required value"],
        ),
    ];
    for (name, api, meta_name, spec, want) in cases {
        assert_eq!(
            messages(xrd(api, meta_name, spec).validate()),
            want,
            "{name}"
        );
    }
}
