//! `plait validate` end to end: a table of valid and invalid resources per
//! check (schema, unknown field, CEL with and without `oldSelf`, built-in
//! kinds, Composition paths and transforms), in Crossplane's output format,
//! and every corpus case's render output validated against its XRD.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::{corpus_refused, repo};

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
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// An XRD whose schema exercises every structural check and CEL rules at
/// the root, in spec, and a transition rule.
const XRD: &str = r#"
apiVersion: apiextensions.crossplane.io/v2
kind: CompositeResourceDefinition
metadata:
  name: xbuckets.example.org
spec:
  group: example.org
  names: {kind: XBucket, plural: xbuckets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    referenceable: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: "self.metadata.name.startsWith('b-')"
          message: "a bucket's name starts with b-"
        properties:
          spec:
            type: object
            required: [region]
            x-kubernetes-validations:
            - rule: "self.minSize <= self.maxSize"
              message: minSize must not exceed maxSize
            - rule: "self.region == oldSelf.region"
              message: region is immutable
            properties:
              region:
                type: string
                enum: [eu, us]
              minSize: {type: integer, default: 1, minimum: 0}
              maxSize: {type: integer, default: 10}
              owner: {type: string, maxLength: 8, pattern: "^[a-z]+$"}
              tags:
                type: array
                maxItems: 2
                items: {type: string}
              expires: {type: string, format: date-time}
"#;

/// A CRD of a composed kind, with a rule pointing at a field.
const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: disks.storage.example.org
spec:
  group: storage.example.org
  names: {kind: Disk, plural: disks}
  scope: Cluster
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              forProvider:
                type: object
                x-kubernetes-validations:
                - rule: "!has(self.encrypted) || self.encrypted"
                  fieldPath: .encrypted
                  reason: FieldValueForbidden
                  message: disks must be encrypted
                properties:
                  sizeGb: {type: integer}
                  encrypted: {type: boolean}
                  labels:
                    type: object
                    additionalProperties: {type: string}
          status:
            type: object
            properties:
              atProvider:
                type: object
                properties:
                  id: {type: string}
"#;

fn bucket(spec: &str) -> String {
    format!(
        "apiVersion: example.org/v1\nkind: XBucket\nmetadata: {{name: b-one, namespace: team}}\nspec: {spec}\n"
    )
}

fn disk(spec: &str) -> String {
    format!(
        "apiVersion: storage.example.org/v1beta1\nkind: Disk\nmetadata: {{name: d}}\nspec: {spec}\n"
    )
}

fn composition(patches: &str, transforms_extra: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata: {{name: buckets}}
spec:
  compositeTypeRef: {{apiVersion: example.org/v1, kind: XBucket}}
  mode: Pipeline
  pipeline:
  - step: pt
    functionRef: {{name: function-patch-and-transform}}
    input:
      apiVersion: pt.fn.crossplane.io/v1beta1
      kind: Resources
      resources:
      - name: disk
        base:
          apiVersion: storage.example.org/v1beta1
          kind: Disk
          spec:
            forProvider: {{sizeGb: 1{transforms_extra}}}
        patches: {patches}
"#
    )
}

struct Case {
    name: &'static str,
    resources: String,
    old: Option<String>,
    /// Lines the report has (the total line is checked apart).
    want: Vec<String>,
    success: bool,
}

fn case(name: &'static str, resources: String, want: &[&str], success: bool) -> Case {
    Case {
        name,
        resources,
        old: None,
        want: want.iter().map(|s| s.to_string()).collect(),
        success,
    }
}

const BUCKET: &str = "example.org/v1, Kind=XBucket, b-one";
/// What the API server adds when a wrong type leaves the rules unchecked.
const NOT_CHECKED: &str = "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";
const DISK: &str = "storage.example.org/v1beta1, Kind=Disk, d";

#[test]
fn each_check_reports_in_crossplanes_format() {
    let dir = tempfile::tempdir().unwrap();
    let extensions = dir.path().join("extensions");
    std::fs::create_dir(&extensions).unwrap();
    std::fs::write(extensions.join("xrd.yaml"), XRD).unwrap();
    // Extensions are read from subdirectories too.
    std::fs::create_dir(extensions.join("crds")).unwrap();
    std::fs::write(extensions.join("crds/disk.yaml"), CRD).unwrap();

    let x = |what: &str, problem: &str| format!("[x] {what} validation error {BUCKET} : {problem}");
    let cases = vec![
        case(
            "a valid XR, defaults applied",
            bucket("{region: eu}"),
            &[&format!("[✓] {BUCKET} validated successfully")],
            true,
        ),
        case(
            "a missing required field",
            bucket("{minSize: 1}"),
            &[&x("schema", "spec.region: Required value"), &x("CEL", NOT_CHECKED)],
            false,
        ),
        case(
            "a value not in the enum",
            bucket("{region: mars}"),
            &[
                &x("schema", "spec.region: Unsupported value: \"mars\": supported values: \"eu\", \"us\""),
                &x("CEL", NOT_CHECKED),
            ],
            false,
        ),
        case(
            "a wrong type (server-side apply refuses the whole object)",
            bucket("{region: eu, minSize: \"3\"}"),
            &[&x("schema", "failed to create typed patch object (team/b-one; example.org/v1, Kind=XBucket): .spec.minSize: expected numeric (int or float), got string")],
            false,
        ),
        case(
            "an unknown field",
            bucket("{region: eu, colour: red}"),
            &[&x("schema", "spec.colour: Invalid value: \"colour\": unknown field: \"colour\"")],
            false,
        ),
        case(
            "too long (the pattern is then not checked, as on the API server)",
            bucket("{region: eu, owner: Alice-Smith}"),
            &[
                &x("schema", "spec.owner: Too long: may not be more than 8 bytes"),
                &x("CEL", NOT_CHECKED),
            ],
            false,
        ),
        case(
            "too many items, a bad format, below a minimum",
            bucket("{region: eu, tags: [a, b, c], expires: tomorrow, minSize: -1}"),
            &[
                &x("schema", "spec.expires: Invalid value: \"tomorrow\": spec.expires in body must be of type date-time: \"tomorrow\""),
                &x("schema", "spec.minSize: Invalid value: -1: spec.minSize in body should be greater than or equal to 0"),
                &x("schema", "spec.tags: Too many: 3: must have at most 2 items"),
                &x("CEL", NOT_CHECKED),
            ],
            false,
        ),
        case(
            "a CEL rule in spec, over defaulted fields",
            bucket("{region: eu, minSize: 20}"),
            &[&x("CEL", "spec: Invalid value: \"object\": minSize must not exceed maxSize")],
            false,
        ),
        case(
            "a pattern",
            bucket("{region: eu, owner: Al}"),
            &[&x("schema", "spec.owner: Invalid value: \"Al\": spec.owner in body should match '^[a-z]+$'")],
            false,
        ),
        case(
            "a CEL rule at the root",
            bucket("{region: eu}").replace("b-one", "one"),
            &["[x] CEL validation error example.org/v1, Kind=XBucket, one : <nil>: Invalid value: \"object\": a bucket's name starts with b-"],
            false,
        ),
        Case {
            name: "a transition rule, with the old resource",
            resources: bucket("{region: us}"),
            old: Some(bucket("{region: eu}")),
            want: vec![x("CEL", "spec: Invalid value: \"object\": region is immutable")],
            success: false,
        },
        Case {
            name: "a transition rule that holds",
            resources: bucket("{region: eu, maxSize: 20}"),
            old: Some(bucket("{region: eu}")),
            want: vec![format!("[✓] {BUCKET} validated successfully")],
            success: true,
        },
        case(
            "a CEL rule with fieldPath and reason on a CRD",
            disk("{forProvider: {sizeGb: 2, encrypted: false}}"),
            &[&format!("[x] CEL validation error {DISK} : spec.forProvider.encrypted: Forbidden: disks must be encrypted")],
            false,
        ),
        case(
            "a map of strings",
            disk("{forProvider: {labels: {a: x, b: 2}}}"),
            &[&format!("[x] schema validation error {DISK} : failed to create typed patch object (/d; storage.example.org/v1beta1, Kind=Disk): .spec.forProvider.labels.b: expected string, got &value.valueUnstructured{{Value:2}}")],
            false,
        ),
        case(
            "a built-in kind",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: team}\ndata: {a: x}\n".into(),
            &["[✓] /v1, Kind=ConfigMap, c validated successfully"],
            true,
        ),
        case(
            "a built-in kind with an unknown field and a wrong type",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: two\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx, imagePullPolicyy: Always}]\n".into(),
            &[
                "[x] schema validation error apps/v1, Kind=Deployment, web : spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                "[x] schema validation error apps/v1, Kind=Deployment, web : spec.template.spec.containers[0].imagePullPolicyy: Invalid value: \"imagePullPolicyy\": unknown field: \"imagePullPolicyy\"",
            ],
            false,
        ),
        case(
            "a Secret whose data is not base64",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: \"not base64!\"}\n".into(),
            &["[x] schema validation error /v1, Kind=Secret, s : data.password: Invalid value: \"not base64!\": data.password in body must be of type byte: \"not base64!\""],
            false,
        ),
        case(
            "a kind without a schema",
            "apiVersion: unknown.example.org/v1\nkind: Thing\nmetadata: {name: t}\n".into(),
            &["[!] could not find CRD/XRD for: unknown.example.org/v1, Kind=Thing"],
            true,
        ),
        case(
            "a Composition whose patches fit both schemas",
            composition(
                "[{fromFieldPath: spec.maxSize, toFieldPath: spec.forProvider.sizeGb}, \
                  {fromFieldPath: spec.region, toFieldPath: 'spec.forProvider.labels[region]'}, \
                  {type: ToCompositeFieldPath, fromFieldPath: status.atProvider.id, toFieldPath: 'metadata.annotations[disk-id]'}]",
                "",
            ),
            &["[✓] apiextensions.crossplane.io/v1, Kind=Composition, buckets validated successfully"],
            true,
        ),
        case(
            "a Composition patch from a field the XR does not have",
            composition("[{fromFieldPath: spec.sise, toFieldPath: spec.forProvider.sizeGb}]", ""),
            &["[x] composition validation error apiextensions.crossplane.io/v1, Kind=Composition, buckets : spec.pipeline[0].input.resources[0].patches[0].fromFieldPath: Invalid value: \"spec.sise\": resource \"disk\": no field \"sise\" under spec in the schema of example.org/v1, Kind=XBucket"],
            false,
        ),
        case(
            "a Composition patch to a field the composed kind does not have",
            composition("[{fromFieldPath: spec.maxSize, toFieldPath: spec.forProvider.size}]", ""),
            &["[x] composition validation error apiextensions.crossplane.io/v1, Kind=Composition, buckets : spec.pipeline[0].input.resources[0].patches[0].toFieldPath: Invalid value: \"spec.forProvider.size\": resource \"disk\": no field \"size\" under spec.forProvider in the schema of storage.example.org/v1beta1, Kind=Disk"],
            false,
        ),
        case(
            "a Composition patch writing a string to an integer",
            composition("[{fromFieldPath: spec.region, toFieldPath: spec.forProvider.sizeGb}]", ""),
            &["[x] composition validation error apiextensions.crossplane.io/v1, Kind=Composition, buckets : spec.pipeline[0].input.resources[0].patches[0].toFieldPath: Invalid value: \"spec.forProvider.sizeGb\": resource \"disk\": the patch writes a value of type string to a field of type integer"],
            false,
        ),
        case(
            "a Composition transform given the wrong type",
            composition("[{fromFieldPath: spec.region, toFieldPath: spec.forProvider.sizeGb, transforms: [{type: math, math: {type: Multiply, multiply: 2}}]}]", ""),
            &["[x] composition validation error apiextensions.crossplane.io/v1, Kind=Composition, buckets : spec.pipeline[0].input.resources[0].patches[0].transforms[0]: Invalid value: \"math\": resource \"disk\": a math transform needs integer or number input, but gets string"],
            false,
        ),
        case(
            "a Composition transform converting to the right type",
            composition("[{fromFieldPath: spec.owner, toFieldPath: spec.forProvider.sizeGb, transforms: [{type: convert, convert: {toType: int64}}]}]", ""),
            &["[✓] apiextensions.crossplane.io/v1, Kind=Composition, buckets validated successfully"],
            true,
        ),
        case(
            "a math transform without a type",
            composition("[{fromFieldPath: spec.maxSize, toFieldPath: spec.forProvider.sizeGb, transforms: [{type: math, math: {clampMin: 1}}]}]", ""),
            &["[x] composition validation error apiextensions.crossplane.io/v1, Kind=Composition, buckets : spec.pipeline[0].input.resources[0].patches[0].transforms[0].math.type: Required value: math transform type is required"],
            false,
        ),
        case(
            "a Composition base with a field its kind does not have",
            composition("[]", ", sizeMb: 3"),
            &["[x] composition validation error apiextensions.crossplane.io/v1, Kind=Composition, buckets : spec.pipeline[0].input.resources[0].base.spec.forProvider.sizeMb: Invalid value: \"sizeMb\": resource \"disk\": unknown field: \"sizeMb\""],
            false,
        ),
    ];
    let mut failures = Vec::new();
    for case in &cases {
        let resources = dir.path().join("resources.yaml");
        std::fs::write(&resources, &case.resources).unwrap();
        let mut args = vec![
            "validate".to_string(),
            extensions.display().to_string(),
            resources.display().to_string(),
        ];
        if let Some(old) = &case.old {
            let old_path = dir.path().join("old.yaml");
            std::fs::write(&old_path, old).unwrap();
            args.extend(["--old-resources".into(), old_path.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = plait(&args, None);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        let (body, total) = lines.split_at(lines.len().saturating_sub(1));
        let want: Vec<&str> = case.want.iter().map(String::as_str).collect();
        if body != want.as_slice() {
            failures.push(format!(
                "{}:\n  got  {body:#?}\n  want {want:#?}\n  stderr {}",
                case.name,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        if out.status.success() != case.success {
            failures.push(format!("{}: exit {:?}", case.name, out.status.code()));
        }
        if !total
            .first()
            .is_some_and(|t| t.starts_with("Total 1 resources: "))
        {
            failures.push(format!("{}: total line {total:?}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn flags_shape_the_report_and_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let xrd = dir.path().join("xrd.yaml");
    std::fs::write(&xrd, XRD).unwrap();
    let resources = format!(
        "{}---\n{}---\napiVersion: other.example.org/v1\nkind: Thing\nmetadata: {{name: t}}\n",
        bucket("{region: eu}"),
        bucket("{region: mars}").replace("b-one", "b-two"),
    );
    let xrd = xrd.display().to_string();

    let out = plait(
        &["validate", &xrd, "-", "--skip-success-results"],
        Some(&resources),
    );
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[x] schema validation error example.org/v1, Kind=XBucket, b-two : spec.region: Unsupported value: \"mars\": supported values: \"eu\", \"us\"\n\
         [x] CEL validation error example.org/v1, Kind=XBucket, b-two : <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation\n\
         [!] could not find CRD/XRD for: other.example.org/v1, Kind=Thing\n\
         Total 3 resources: 1 missing schemas, 1 success cases, 1 failure cases\n"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not validate all resources"));

    let valid_and_missing = format!(
        "{}---\napiVersion: other.example.org/v1\nkind: Thing\nmetadata: {{name: t}}\n",
        bucket("{region: eu}")
    );
    let out = plait(&["validate", &xrd, "-"], Some(&valid_and_missing));
    assert!(
        out.status.success(),
        "a missing schema alone is not a failure"
    );
    let out = plait(
        &["validate", &xrd, "-", "--error-on-missing-schemas"],
        Some(&valid_and_missing),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("schema(s) missing"));

    let out = plait(&["validate", &xrd, "-", "-o", "json"], Some(&resources));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["total"],
        serde_json::json!({"resources": 3, "missingSchemas": 1, "success": 1, "failure": 1})
    );
    assert_eq!(report["resources"][1]["status"], "invalid");
    assert_eq!(report["resources"][1]["findings"][0]["check"], "schema");
    assert_eq!(
        report["resources"][1]["findings"][0]["field"],
        "spec.region"
    );
    assert_eq!(report["resources"][2]["status"], "missingSchema");

    let out = plait(&["validate", &xrd, "-", "-o", "yaml"], Some(&resources));
    let report: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(report["total"]["failure"], 1);

    let out = plait(&["validate", "-", "-"], Some(""));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read both"));
    let out = plait(&["validate", "missing-dir", &xrd], None);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot load extensions from missing-dir")
    );
}

/// Placeholders the corpus sources leave for their own templating to fill.
const PLACEHOLDERS: &[(&str, &str)] = &[("$CLAIM_NAME", "claim-name")];

fn corpus_cases() -> Vec<PathBuf> {
    let corpus = repo().join("tests/corpus");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("composition.yaml").exists())
        .collect();
    dirs.sort();
    dirs
}

/// Renders a corpus case with the full XR, as `plait render -x` prints it.
fn render(dir: &Path, scratch: &Path) -> String {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap();
    let mut xr = std::fs::read_to_string(dir.join("xr.yaml")).unwrap();
    for (placeholder, value) in PLACEHOLDERS {
        xr = xr.replace(placeholder, value);
    }
    let xr_path = scratch.join(format!("{name}-xr.yaml"));
    std::fs::write(&xr_path, xr).unwrap();
    let path = |f: &str| dir.join(f).display().to_string();
    let mut args = vec![
        "render".to_string(),
        xr_path.display().to_string(),
        path("composition.yaml"),
        "-x".into(),
    ];
    if dir.join("functions.yaml").exists() {
        args.push(path("functions.yaml"));
    }
    if dir.join("xrd.yaml").exists() {
        args.extend(["--xrd".into(), path("xrd.yaml")]);
    }
    if dir.join("environmentconfigs.yaml").exists() {
        args.extend(["-e".into(), path("environmentconfigs.yaml")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = plait(&args, None);
    assert!(
        out.status.success(),
        "render {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Defects of the corpus itself: claims (and the XRs made from them) that
/// set fields their XRD does not declare. The API server refuses them
/// (`unknown field`, kubectl's default strict field validation) or, without
/// it, silently drops them; either way the source repositories' manifests
/// are wrong, not plait.
const CORPUS_DEFECTS: &[(&str, &str)] = &[
    (
        "crossplane-on-eks__irsa-environment",
        "[x] schema validation error awsblueprints.io/v1alpha1, Kind=XIRSA, irsa-example : spec.resourceConfig.region: Invalid value: \"region\": unknown field: \"region\"",
    ),
    (
        "devops-toolkit__sql-local-k8s",
        "[x] schema validation error devopstoolkitseries.com/v1alpha1, Kind=SQL, my-db : spec.parameters.namespace: Invalid value: \"namespace\": unknown field: \"namespace\"",
    ),
];

#[test]
fn every_corpus_render_output_validates_against_its_xrd() {
    let dirs = corpus_cases();
    assert_eq!(dirs.len(), 37, "the corpus has 37 cases");
    let scratch = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for dir in dirs.iter().filter(|d| d.join("xrd.yaml").exists()) {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap();
        // Refused as upstream refuses it: there is no output to validate
        // (render.rs checks the refusal).
        if corpus_refused(name).is_some() {
            continue;
        }
        let rendered = render(dir, scratch.path());
        let xrd = dir.join("xrd.yaml").display().to_string();
        let out = plait(
            &["validate", &xrd, "-", "--skip-success-results"],
            Some(&rendered),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let problems: Vec<&str> = stdout.lines().filter(|l| l.starts_with("[x]")).collect();
        let known: Vec<&str> = CORPUS_DEFECTS
            .iter()
            .filter(|(case, _)| *case == name)
            .map(|(_, line)| *line)
            .collect();
        if problems != known || out.status.success() != known.is_empty() {
            failures.push(format!(
                "{name}:\n{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        // The XR itself was checked, not skipped as missing.
        if stdout.contains("could not find CRD/XRD for: ") {
            let xr_kind = std::fs::read_to_string(dir.join("xr.yaml")).unwrap();
            let kind_line = xr_kind
                .lines()
                .find(|l| l.starts_with("kind: "))
                .unwrap_or_default();
            let kind = kind_line.trim_start_matches("kind: ").trim();
            if stdout.contains(&format!("Kind={kind}\n")) {
                failures.push(format!("{name}: the XR's schema was not found:\n{stdout}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Defects of the corpus's Compositions, all of the source repositories: a
/// function input upstream's function cannot read (so nothing in it is
/// checked further), and a patch that reads a field its XRD does not
/// declare (the API server prunes such fields, so it can never apply).
const CORPUS_COMPOSITION_DEFECTS: &[(&str, &str)] = &[
    (
        "crossplane-on-eks__microservice-pipeline",
        "[x] composition validation error apiextensions.crossplane.io/v1, Kind=Composition, microservices.upbound.awsblueprints.io : spec.pipeline[0].input: Invalid value: \"object\": json: cannot unmarshal Go value of type v1beta1.StringCombine: unknown name \"type\"",
    ),
    (
        "platform-ref-aws__xcluster-pipeline",
        "[x] composition validation error apiextensions.crossplane.io/v1, Kind=Composition, xclusters.aws.platformref.upbound.io : spec.pipeline[0].input.resources[4].patches[0].fromFieldPath: Invalid value: \"status.oidcProvider\": resource \"XAWSLBController\": no field \"oidcProvider\" under status in the schema of aws.platformref.upbound.io/v1alpha1, Kind=XCluster",
    ),
];

#[test]
fn every_corpus_composition_is_checked_against_its_xrd() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for dir in corpus_cases()
        .iter()
        .filter(|d| d.join("xrd.yaml").exists())
    {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap();
        let xrd = dir.join("xrd.yaml").display().to_string();
        let composition = dir.join("composition.yaml").display().to_string();
        let out = plait(&["validate", &xrd, &composition], None);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let problems: Vec<&str> = stdout.lines().filter(|l| l.starts_with("[x]")).collect();
        let known: Vec<&str> = CORPUS_COMPOSITION_DEFECTS
            .iter()
            .filter(|(case, _)| *case == name)
            .map(|(_, line)| *line)
            .collect();
        if problems != known || !stdout.contains("Total 1 resources: 0 missing schemas") {
            failures.push(format!(
                "{name}:\n{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        checked += 1;
    }
    assert_eq!(checked, 36, "every corpus case with an XRD");
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
