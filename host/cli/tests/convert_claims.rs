//! `plait convert` of ResourceClaimDefinitions and ResourceBindingDefinitions
//! (tests/fixtures/claim-binding): the examples of the design that defined
//! them, with classes of the kinds they name, become an XRD and Compositions
//! that `plait validate` accepts and `plait render` composes from; what the
//! mapping cannot express is refused naming the field.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod common;
use common::repo;

fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/claim-binding")
}

fn plait(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(args)
        .current_dir(repo())
        .env("PLAIT_CACHE_DIR", repo().join("target/plait-test-cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("plait runs");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        std::io::Write::write_all(&mut input, text.as_bytes()).expect("write stdin");
    }
    drop(input);
    child.wait_with_output().expect("plait finishes")
}

fn succeeded(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn write_documents(path: &Path, values: &[Value]) {
    let text: String = values
        .iter()
        .map(|v| format!("---\n{}", serde_yaml_ng::to_string(v).unwrap()))
        .collect();
    std::fs::write(path, text).unwrap();
}

/// The converted definitions (XRD first, then the Compositions).
fn converted() -> Vec<Value> {
    let dir = fixtures().join("definitions");
    let out = plait(&["convert", dir.to_str().unwrap()], None);
    documents(&succeeded("plait convert", &out))
}

fn name(value: &Value) -> &str {
    value["metadata"]["name"].as_str().unwrap()
}

#[test]
fn the_designs_definitions_with_classes_convert_to_the_golden_xrd_and_compositions() {
    let dir = fixtures().join("definitions");
    let out = plait(&["convert", dir.to_str().unwrap()], None);
    let got = succeeded("plait convert", &out);
    let golden = fixtures().join("expected.yaml");
    if std::env::var_os("PLAIT_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).expect("expected.yaml");
    assert_eq!(
        got,
        want,
        "PLAIT_UPDATE_GOLDEN=1 writes {}",
        golden.display()
    );
}

#[test]
fn the_converted_xrd_and_compositions_pass_plait_validate() {
    let converted = converted();
    let kinds: Vec<&str> = converted
        .iter()
        .map(|v| v["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "CompositeResourceDefinition",
            "Composition",
            "Composition",
            "Composition"
        ]
    );
    let scratch = tempfile::tempdir().unwrap();
    let output = scratch.path().join("converted.yaml");
    write_documents(&output, &converted);
    let mut extensions =
        documents(&std::fs::read_to_string(fixtures().join("managed-crds.yaml")).unwrap());
    extensions.extend(converted.iter().cloned());
    let extensions_file = scratch.path().join("extensions.yaml");
    write_documents(&extensions_file, &extensions);
    let extensions_arg = extensions_file.to_str().unwrap();

    let report = succeeded(
        "plait validate of the XRD and Compositions",
        &plait(
            &[
                "validate",
                extensions_arg,
                output.to_str().unwrap(),
                "--error-on-missing-schemas",
            ],
            None,
        ),
    );
    assert!(
        report.contains("Total 4 resources: 0 missing schemas, 4 success cases, 0 failure cases"),
        "{report}"
    );

    for object in ["claim.yaml", "xr.yaml", "xr-unselected.yaml"] {
        let path = fixtures().join(object);
        succeeded(
            &format!("plait validate of {object}"),
            &plait(&["validate", extensions_arg, path.to_str().unwrap()], None),
        );
    }
    // The claim's schema is the design's: an engine version it does not list is refused.
    let claim = std::fs::read_to_string(fixtures().join("claim.yaml"))
        .unwrap()
        .replace("engineVersion: \"5.7\"\n", "engineVersion: \"8.0\"\n");
    let out = plait(&["validate", extensions_arg, "-"], Some(&claim));
    assert!(!out.status.success(), "a claim of MySQL 8.0 is valid");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("spec.engineVersion"), "{report}");
}

/// A composed resource's kind, and a field a class or translate sets, with its value.
type Expected = (&'static str, &'static str, Value);

#[test]
fn every_converted_composition_composes_its_bindings_resources_from_its_classes() {
    let converted = converted();
    let scratch = tempfile::tempdir().unwrap();
    let xrd = scratch.path().join("xrd.yaml");
    write_documents(&xrd, &converted[..1]);
    let xr = fixtures().join("xr-unselected.yaml");
    let cases: [(&str, &[Expected]); 3] = [
        (
            "mysqlinstance-cloudsqlinstance-standard-mysql",
            &[
                (
                    "CloudSQLInstance",
                    "/spec/forProvider/databaseVersion",
                    Value::from("5_6"),
                ),
                (
                    "CloudSQLInstance",
                    "/spec/forProvider/settings/tier",
                    Value::from("db-n1-standard-1"),
                ),
                (
                    "CloudSQLInstance",
                    "/spec/writeConnectionSecretToRef",
                    serde_json::json!({
                        "name": "9b2e7d41-0c6f-4a8e-b3d5-71f0e2a9c684-cloudsqlinstance",
                        "namespace": "crossplane-system",
                    }),
                ),
            ],
        ),
        (
            "mysqlinstance-cloudsqlinstance-mysql-56-westus-vnet",
            &[
                (
                    "MySQLServer",
                    "/spec/forProvider/version",
                    Value::from("5.6"),
                ),
                (
                    "MySQLServerVirtualNetworkRule",
                    "/spec/forProvider/resourceGroupName",
                    Value::from("group-westus-1"),
                ),
            ],
        ),
        (
            "mysqlinstance-cloudsqlinstance-mysql-57-westus-vnet",
            &[
                (
                    "MySQLServer",
                    "/spec/forProvider/version",
                    Value::from("5.7"),
                ),
                (
                    "MySQLServerVirtualNetworkRule",
                    "/spec/providerRef/name",
                    Value::from("azure-provider"),
                ),
            ],
        ),
    ];
    for (composition_name, want) in cases {
        let composition = converted
            .iter()
            .find(|c| name(c) == composition_name)
            .unwrap_or_else(|| panic!("no Composition {composition_name}"));
        let file = scratch.path().join(format!("{composition_name}.yaml"));
        write_documents(&file, std::slice::from_ref(composition));
        let out = plait(
            &[
                "render",
                xr.to_str().unwrap(),
                file.to_str().unwrap(),
                "--xrd",
                xrd.to_str().unwrap(),
            ],
            None,
        );
        let rendered = documents(&succeeded(
            &format!("plait render with {composition_name}"),
            &out,
        ));
        for (kind, pointer, value) in want {
            let resource = rendered
                .iter()
                .find(|r| r["kind"] == *kind)
                .unwrap_or_else(|| panic!("{composition_name}: no {kind} rendered"));
            assert_eq!(
                resource.pointer(pointer),
                Some(value),
                "{composition_name}: {kind} {pointer}"
            );
        }
    }
}

#[test]
fn a_claims_selector_picks_the_composition_of_the_class_its_match_strategy_picked() {
    let converted = converted();
    let scratch = tempfile::tempdir().unwrap();
    let xrd = scratch.path().join("xrd.yaml");
    write_documents(&xrd, &converted[..1]);
    let xr = fixtures().join("xr.yaml");
    let cases = [
        ("mysqlinstance-cloudsqlinstance-mysql-57-westus-vnet", true),
        ("mysqlinstance-cloudsqlinstance-mysql-56-westus-vnet", false),
        ("mysqlinstance-cloudsqlinstance-standard-mysql", false),
    ];
    for (composition_name, selected) in cases {
        let composition = converted
            .iter()
            .find(|c| name(c) == composition_name)
            .unwrap();
        let file = scratch.path().join(format!("{composition_name}.yaml"));
        write_documents(&file, std::slice::from_ref(composition));
        let out = plait(
            &[
                "render",
                xr.to_str().unwrap(),
                file.to_str().unwrap(),
                "--xrd",
                xrd.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(
            out.status.success(),
            selected,
            "{composition_name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if !selected {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("compositionSelector"),
                "{composition_name}: {stderr}"
            );
        }
    }
}

#[test]
fn the_designs_claim_definition_alone_converts_to_its_xrd_with_claim_names() {
    let file = fixtures().join("definitions/design-claim.yaml");
    let out = plait(&["convert", file.to_str().unwrap()], None);
    let converted = documents(&succeeded("plait convert", &out));
    assert_eq!(converted.len(), 1);
    let xrd = &converted[0];
    assert_eq!(name(xrd), "xmysqlinstances.database.crossplane.io");
    assert_eq!(xrd["spec"]["names"]["kind"], "XMySQLInstance");
    assert_eq!(xrd["spec"]["claimNames"]["kind"], "MySQLInstance");
    assert_eq!(xrd["spec"]["claimNames"]["plural"], "mysqlinstances");
    let schema = &xrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(schema["properties"]["spec"]["type"], "object");
    assert_eq!(
        schema["properties"]["spec"]["properties"]["engineVersion"]["enum"],
        serde_json::json!(["5.6", "5.7"])
    );
}

const CLAIM: &str = "
apiVersion: core.crossplane.io/v1alpha1
kind: ResourceClaimDefinition
metadata: {name: bucket}
spec:
  group: storage.example.org
  names: {kind: Bucket, plural: buckets}
  version: v1alpha1
  validation:
    openAPIV3Schema:
      properties:
        spec:
          properties:
            region: {type: string}
";

const CLASS: &str = "
apiVersion: storage.example.org/v1
kind: BucketClass
metadata: {name: standard}
specTemplate: {forProvider: {location: EU}}
";

/// A binding of Bucket to a managed Bucket through BucketClass with these strategies.
fn binding(strategies: &str) -> String {
    format!(
        "
apiVersion: core.crossplane.io/v1alpha1
kind: ResourceBindingDefinition
metadata: {{name: bucket-gcs}}
spec:
  claim: {{apiVersion: storage.example.org/v1alpha1, kind: Bucket}}
  resources:
  - resource: {{apiVersion: storage.example.org/v1, kind: GCSBucket}}
    class:
      apiVersion: storage.example.org/v1
      kind: BucketClass
      strategies: {strategies}
"
    )
}

#[test]
fn definitions_the_mapping_cannot_express_are_refused_naming_the_field() {
    let translate = |transforms: &str, from: &str| {
        binding(&format!(
            "{{translate: [{{fromClaimField: '{from}', toResourceField: .spec.forProvider.location, transforms: {transforms}}}]}}"
        ))
    };
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "an unknown transform",
            vec![CLAIM.into(), translate("{trim: true}", ".spec.region")],
            "spec.resources[0].class.strategies.translate[0].transforms: invalid: unknown field `trim`",
        ),
        (
            "a replace by regular expression",
            vec![
                CLAIM.into(),
                translate("{replace: {regexp: '[.]', with: _}}", ".spec.region"),
            ],
            "spec.resources[0].class.strategies.translate[0].transforms: invalid: unknown field `regexp`",
        ),
        (
            "a claim field outside the claim's schema",
            vec![CLAIM.into(), translate("{}", ".spec.zone")],
            "spec.resources[0].class.strategies.translate[0].fromClaimField: .spec.zone is not in Bucket's schema",
        ),
        (
            "a claim field that does not reach the composite",
            vec![CLAIM.into(), translate("{}", ".status.phase")],
            "spec.resources[0].class.strategies.translate[0].fromClaimField: .status.phase does not reach the composite resource",
        ),
        (
            "a field path with an index",
            vec![CLAIM.into(), translate("{}", ".spec.regions[0]")],
            "spec.resources[0].class.strategies.translate[0].fromClaimField: \".spec.regions[0]\" is not a field path",
        ),
        (
            "an unknown provisioning strategy",
            vec![CLAIM.into(), binding("{provisioning: [clone]}")],
            "spec.resources[0].class.strategies.provisioning[0]: \"clone\" is not a strategy plait convert knows",
        ),
        (
            "a listed strategy that is not configured",
            vec![CLAIM.into(), binding("{provisioning: [overlay]}")],
            "spec.resources[0].class.strategies.provisioning[0]: lists \"overlay\" but spec.resources[0].class.strategies.overlay is not set",
        ),
        (
            "a configured strategy that is not listed",
            vec![
                CLAIM.into(),
                CLASS.into(),
                binding(
                    "{provisioning: [], overlay: [{fromClassField: .specTemplate, toResourceField: .spec}]}",
                ),
            ],
            "spec.resources[0].class.strategies.overlay: is set but spec.resources[0].class.strategies.provisioning does not list it",
        ),
        (
            "an overlay after a translate to the same field",
            vec![
                CLAIM.into(),
                CLASS.into(),
                binding(
                    "{provisioning: [translate, overlay], translate: [{fromClaimField: .spec.region, toResourceField: .spec.forProvider.location}], overlay: [{fromClassField: .specTemplate, toResourceField: .spec}]}",
                ),
            ],
            "spec.resources[0].class.strategies.overlay[0].toResourceField: overlays .spec after a translate to .spec.forProvider.location",
        ),
        (
            "an overlay without any class of its kind",
            vec![
                CLAIM.into(),
                binding("{overlay: [{fromClassField: .specTemplate, toResourceField: .spec}]}"),
            ],
            "spec.resources[0].class.strategies.overlay: reads a storage.example.org/v1 BucketClass, and the input has none",
        ),
        (
            "an overlay of a field the class lacks",
            vec![
                CLAIM.into(),
                CLASS.into(),
                binding("{overlay: [{fromClassField: .spec, toResourceField: .spec}]}"),
            ],
            "spec.resources[0].class.strategies.overlay[0].fromClassField: BucketClass \"standard\" has no .spec",
        ),
        (
            "a match of a class field that is not a label value",
            vec![
                CLAIM.into(),
                CLASS.replace("location: EU", "location: 'EU west'"),
                binding(
                    "{match: [{fromClaimField: .spec.region, toClassField: .specTemplate.forProvider.location}]}",
                ),
            ],
            "spec.resources[0].class.strategies.match[0].toClassField: BucketClass \"standard\"'s .specTemplate.forProvider.location is \"EU west\", which is not a label value",
        ),
        (
            "a binding of a claim without its definition",
            vec![binding("{}")],
            "ResourceBindingDefinition \"bucket-gcs\": spec.claim: no ResourceClaimDefinition of storage.example.org/v1alpha1 Bucket in the input",
        ),
        (
            "a document that is no class of the bindings",
            vec![
                CLAIM.into(),
                binding("{}"),
                CLASS.replace("BucketClass", "TableClass"),
            ],
            "storage.example.org/v1 TableClass \"standard\" is neither a ResourceClaimDefinition, a ResourceBindingDefinition nor a class one of the bindings names",
        ),
        (
            "an unknown field of a claim definition",
            vec![CLAIM.replace(
                "version: v1alpha1",
                "version: v1alpha1\n  scope: Namespaced",
            )],
            "ResourceClaimDefinition \"bucket\": spec: invalid: unknown field `scope`",
        ),
        (
            "a claim schema with fields besides spec and status",
            vec![CLAIM.replace(
                "        spec:\n",
                "        metadata: {type: object}\n        spec:\n",
            )],
            "spec.validation.openAPIV3Schema.properties.metadata: an XRD's schema defines only spec and status",
        ),
        (
            "two bindings that make Compositions of one name",
            vec![CLAIM.into(), binding("{}"), binding("{}")],
            "its Composition \"bucket-gcs\" has the name of one ResourceBindingDefinition \"bucket-gcs\" makes",
        ),
    ];
    for (case, input, want) in cases {
        let input = input.join("\n---\n");
        let out = plait(&["convert", "-"], Some(&input));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{case}: converted:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(stderr.contains(want), "{case}: {stderr}");
    }
}

#[test]
fn a_binding_without_strategies_overlays_its_classes_template_and_translates_claim_names() {
    let input = [
        CLAIM.to_string(),
        CLASS.to_string(),
        binding("{translate: [{fromClaimField: .metadata.name, toResourceField: .spec.forProvider.name, transforms: {tolower: true}}], provisioning: [translate]}"),
        binding("{}").replace("bucket-gcs", "bucket-default"),
    ]
    .join("\n---\n");
    let out = plait(&["convert", "-"], Some(&input));
    let converted = documents(&succeeded("plait convert", &out));
    let resource = |composition: &str| {
        let c = converted.iter().find(|c| name(c) == composition).unwrap();
        c["spec"]["pipeline"][0]["input"]["resources"][0].clone()
    };
    let translated = resource("bucket-gcs-standard");
    assert_eq!(
        translated["base"],
        serde_json::json!({"apiVersion": "storage.example.org/v1", "kind": "GCSBucket"})
    );
    assert_eq!(
        translated["patches"],
        serde_json::json!([{
            "type": "FromCompositeFieldPath",
            "fromFieldPath": "metadata.labels[crossplane.io/claim-name]",
            "toFieldPath": "spec.forProvider.name",
            "transforms": [{"type": "string", "string": {"type": "Convert", "convert": "ToLower"}}],
        }])
    );
    let overlaid = resource("bucket-default-standard");
    assert_eq!(
        overlaid["base"]["spec"],
        serde_json::json!({"forProvider": {"location": "EU"}})
    );
}
