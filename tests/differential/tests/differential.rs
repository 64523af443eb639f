//! plait render against upstream `crossplane render`, on every case of the
//! corpus, every example and generated inputs. Built and run as a test of
//! the `plait` package (`cargo test -p plait --test differential`) so it
//! renders with the plait binary of this build.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use plait_differential::deliberate::{self, CaseInputs};
use plait_differential::generate;
use plait_differential::upstream::{RenderInput, Upstream, UpstreamFunction};
use plait_differential::{Rendered, compare, parse_stream};
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Placeholders the corpus sources leave for their own templating to fill.
const PLACEHOLDERS: &[(&str, &str)] = &[("$CLAIM_NAME", "claim-name")];

/// One input rendered by both.
struct Case {
    name: String,
    xr: PathBuf,
    composition: PathBuf,
    functions: Option<PathBuf>,
    xrd: Option<PathBuf>,
    required: Vec<PathBuf>,
    observed: Option<PathBuf>,
}

fn corpus_cases(scratch: &Path) -> Vec<Case> {
    let corpus = repo().join("tests/corpus");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("composition.yaml").exists())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().to_string();
            let mut xr = std::fs::read_to_string(dir.join("xr.yaml")).unwrap();
            for (placeholder, value) in PLACEHOLDERS {
                xr = xr.replace(placeholder, value);
            }
            let xr_path = scratch.join(format!("{name}-xr.yaml"));
            std::fs::write(&xr_path, xr).unwrap();
            let existing = |f: &str| Some(dir.join(f)).filter(|p| p.exists());
            Case {
                name: format!("corpus/{name}"),
                xr: xr_path,
                composition: dir.join("composition.yaml"),
                functions: existing("functions.yaml"),
                xrd: existing("xrd.yaml"),
                required: existing("environmentconfigs.yaml").into_iter().collect(),
                observed: None,
            }
        })
        .collect()
}

fn example_cases() -> Vec<Case> {
    let mut dirs = vec![repo().join("examples/getting-started")];
    let mut functions: Vec<PathBuf> = std::fs::read_dir(repo().join("examples/functions"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("composition.yaml").exists())
        .collect();
    functions.sort();
    dirs.extend(functions);
    let mut cases = Vec::new();
    for dir in dirs {
        let rel = dir.strip_prefix(repo()).unwrap().display().to_string();
        let existing = |f: &str| Some(dir.join(f)).filter(|p| p.exists());
        let variants = [None, existing("observed.yaml")];
        for observed in variants
            .iter()
            .enumerate()
            .filter(|(i, o)| *i == 0 || o.is_some())
            .map(|(_, o)| o)
        {
            cases.push(Case {
                name: match observed {
                    Some(_) => format!("{rel} (observed)"),
                    None => rel.clone(),
                },
                xr: dir.join("xr.yaml"),
                composition: dir.join("composition.yaml"),
                functions: existing("functions.yaml"),
                xrd: existing("xrd.yaml"),
                required: existing("required.yaml").into_iter().collect(),
                observed: observed.clone(),
            });
        }
    }
    cases
}

fn plait(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(args)
        .current_dir(repo())
        .env("PLAIT_CACHE_DIR", repo().join("target/plait-test-cache"))
        .output()
        .expect("plait runs")
}

fn render_plait(case: &Case) -> Rendered {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "render".as_ref(),
        case.xr.as_os_str(),
        case.composition.as_os_str(),
    ];
    if let Some(f) = &case.functions {
        args.push(f.as_os_str());
    }
    args.push("-r".as_ref());
    if let Some(xrd) = &case.xrd {
        args.push("--xrd".as_ref());
        args.push(xrd.as_os_str());
    }
    for r in &case.required {
        args.push("-e".as_ref());
        args.push(r.as_os_str());
    }
    if let Some(o) = &case.observed {
        args.push("-o".as_ref());
        args.push(o.as_os_str());
    }
    let out = plait(&args);
    if !out.status.success() {
        return Rendered::Failed(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Rendered::Output(parse_stream(&String::from_utf8_lossy(&out.stdout)).unwrap())
}

/// The Function objects a Composition's steps name: from the case's
/// functions file where it has one, otherwise each functionRef name itself.
fn step_functions(composition: &Value, functions: Option<&Path>) -> Vec<Value> {
    let given = functions
        .map(|f| parse_stream(&std::fs::read_to_string(f).unwrap()).unwrap())
        .unwrap_or_default();
    let mut names: Vec<String> = composition
        .pointer("/spec/pipeline")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.pointer("/functionRef/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            given
                .iter()
                .find(|f| f.pointer("/metadata/name").and_then(Value::as_str) == Some(&name))
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"metadata": {"name": name}}))
        })
        .collect()
}

fn render_upstream(upstream: &Upstream, case: &Case, scratch: &Path) -> Rendered {
    let text = std::fs::read_to_string(&case.composition).unwrap();
    let mut composition = parse_stream(&text).unwrap().remove(0);
    let pipeline_path =
        if composition.pointer("/spec/mode").and_then(Value::as_str) == Some("Pipeline") {
            case.composition.clone()
        } else {
            // Upstream v2 renders pipelines only; both sides then run the same
            // conversion's output, plait's own `convert`.
            let out = plait(&["convert".as_ref(), case.composition.as_os_str()]);
            if !out.status.success() {
                return Rendered::Failed(String::from_utf8_lossy(&out.stderr).to_string());
            }
            let converted = scratch.join("converted-composition.yaml");
            std::fs::write(&converted, &out.stdout).unwrap();
            composition = parse_stream(&String::from_utf8_lossy(&out.stdout))
                .unwrap()
                .remove(0);
            converted
        };
    let functions = step_functions(&composition, case.functions.as_deref());
    upstream
        .render(
            &RenderInput {
                xr: &case.xr,
                composition: &pipeline_path,
                functions: &functions,
                xrd: case.xrd.as_deref(),
                required: &case.required,
                observed: case.observed.as_deref(),
            },
            scratch,
        )
        .unwrap()
}

#[derive(Default)]
struct Tally {
    identical: usize,
    explained: Vec<(String, Vec<&'static str>)>,
    not_comparable: Vec<(String, String)>,
    unexplained: Vec<(String, Vec<String>)>,
}

impl Tally {
    fn record(&mut self, case: &str, composition: &str, plait: &Rendered, upstream: &Rendered) {
        if let Rendered::NotComparable(why) = upstream {
            self.not_comparable.push((case.into(), why.clone()));
            return;
        }
        let inputs = CaseInputs { composition };
        let differences = compare(plait, upstream);
        if differences.is_empty() {
            self.identical += 1;
            return;
        }
        let mut ids = Vec::new();
        let mut unexplained = Vec::new();
        for d in differences {
            match deliberate::explain(&inputs, &d) {
                Some(id) => {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                None => unexplained.push(d.to_string()),
            }
        }
        if unexplained.is_empty() {
            self.explained.push((case.into(), ids));
        } else {
            self.unexplained.push((case.into(), unexplained));
        }
    }

    fn report(&self, what: &str) -> String {
        let mut report = format!(
            "{what}: {} cases, {} identical, {} differing only as documented, {} not comparable, {} with unexplained differences\n",
            self.identical
                + self.explained.len()
                + self.not_comparable.len()
                + self.unexplained.len(),
            self.identical,
            self.explained.len(),
            self.not_comparable.len(),
            self.unexplained.len()
        );
        for (case, ids) in &self.explained {
            report.push_str(&format!("  documented  {case}: {}\n", ids.join(", ")));
        }
        for (case, why) in &self.not_comparable {
            report.push_str(&format!("  not compared {case}: {why}\n"));
        }
        for (case, differences) in &self.unexplained {
            report.push_str(&format!("  DIFFERS     {case}:\n"));
            for d in differences {
                report.push_str(&format!("      {d}\n"));
            }
        }
        report
    }
}

fn run_cases(upstream: &Upstream, cases: &[Case], what: &str) -> Tally {
    let mut tally = Tally::default();
    let (mut plait_time, mut upstream_time) = (Duration::ZERO, Duration::ZERO);
    for case in cases {
        let scratch = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let plait = render_plait(case);
        plait_time += started.elapsed();
        let started = Instant::now();
        let upstream = render_upstream(upstream, case, scratch.path());
        upstream_time += started.elapsed();
        let composition = std::fs::read_to_string(&case.composition).unwrap();
        tally.record(&case.name, &composition, &plait, &upstream);
    }
    eprintln!(
        "{}  rendering took {:.1} s with plait, {:.1} s with upstream\n",
        tally.report(what),
        plait_time.as_secs_f64(),
        upstream_time.as_secs_f64()
    );
    tally
}

fn upstream() -> Upstream {
    Upstream::start(&repo().join("tests/differential/build-upstream.sh"))
        .expect("upstream Crossplane builds and its functions start")
}

/// How many generated inputs `make test` tries; PLAIT_DIFFERENTIAL_CASES asks for more.
const GENERATED_CASES: usize = 200;
const GENERATOR_SEED: u64 = 0x70_6c61_6974;

/// The generated inputs (`GENERATED_CASES` of them, or
/// PLAIT_DIFFERENTIAL_CASES; seeded by PLAIT_DIFFERENTIAL_SEED), written
/// under `generated_dir`, which is kept after the run so a differing input
/// can be rendered again by hand.
fn generated_cases(generated_dir: &Path) -> Vec<Case> {
    let count = std::env::var("PLAIT_DIFFERENTIAL_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(GENERATED_CASES);
    let seed = std::env::var("PLAIT_DIFFERENTIAL_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(GENERATOR_SEED);
    let _ = std::fs::remove_dir_all(generated_dir);
    std::fs::create_dir_all(generated_dir).unwrap();
    generate::inputs(seed, count)
        .into_iter()
        .enumerate()
        .map(|(i, input)| {
            let dir = generated_dir.join(i.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            // JSON is YAML both sides read alike; YAML 1.1's `y`/`n`
            // booleans, which upstream's parser follows, cannot creep in.
            let write = |name: &str, value: &Value| {
                let path = dir.join(name);
                std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
                path
            };
            Case {
                name: format!("generated #{i} (seed {seed}, {})", dir.display()),
                xr: write("xr.yaml", &input.xr),
                composition: write("composition.yaml", &input.composition),
                functions: None,
                xrd: Some(write("xrd.yaml", &input.xrd)),
                required: Vec::new(),
                observed: None,
            }
        })
        .collect()
}

#[test]
fn plait_renders_what_upstream_crossplane_renders() {
    let upstream = upstream();
    let scratch = tempfile::tempdir().unwrap();
    let mut reports = Vec::new();
    let mut unexplained = 0;

    let corpus = corpus_cases(scratch.path());
    assert_eq!(corpus.len(), 37, "the corpus has 37 cases");
    let tally = run_cases(&upstream, &corpus, "corpus");
    unexplained += tally.unexplained.len();
    reports.push(tally.report("corpus"));

    let tally = run_cases(&upstream, &example_cases(), "examples");
    unexplained += tally.unexplained.len();
    reports.push(tally.report("examples"));

    let generated = generated_cases(&repo().join("target/differential-generated"));
    let tally = run_cases(&upstream, &generated, "generated");
    unexplained += tally.unexplained.len();
    reports.push(tally.report("generated"));

    assert_eq!(
        unexplained,
        0,
        "plait and upstream Crossplane differ where no deliberate difference explains it:\n{}",
        reports.join("\n")
    );
}

/// The component build-ported.sh makes of upstream `function` with this
/// build's `plait function componentize`.
fn build_ported(function: &str) -> PathBuf {
    let out = Command::new(repo().join("tests/differential/build-ported.sh"))
        .arg(function)
        .env("PLAIT", env!("CARGO_BIN_EXE_plait"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "build-ported.sh {function} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(PathBuf::from)
        .unwrap()
}

/// `case` with every patch-and-transform step run by the ported `module`:
/// its functions file with those Functions annotated (and written in full
/// where the case names the function only by its functionRef), so plait
/// runs the port and upstream serves its own build of the same release.
/// `None` for a Composition with no patch-and-transform step, or one in
/// Resources mode (which plait runs through its built-in engine).
fn with_ported_patch_and_transform(case: Case, module: &Path, dir: &Path) -> Option<Case> {
    let text = std::fs::read_to_string(&case.composition).unwrap();
    let composition = parse_stream(&text).unwrap().remove(0);
    if composition.pointer("/spec/mode").and_then(Value::as_str) != Some("Pipeline") {
        return None;
    }
    let given = case
        .functions
        .as_ref()
        .map(|f| parse_stream(&std::fs::read_to_string(f).unwrap()).unwrap())
        .unwrap_or_default();
    let mut functions = given.clone();
    let mut ported = false;
    for step in step_functions(&composition, case.functions.as_deref()) {
        let name = step["metadata"]["name"].as_str().unwrap().to_string();
        let package = step
            .pointer("/spec/package")
            .and_then(Value::as_str)
            .unwrap_or(&name);
        if UpstreamFunction::for_package(package) != Some(UpstreamFunction::PatchAndTransform) {
            continue;
        }
        ported = true;
        let annotate = |function: &mut Value| {
            function["metadata"]["annotations"]["render.plait.dev/module"] =
                json!(module.display().to_string());
        };
        match functions
            .iter_mut()
            .find(|f| f["metadata"]["name"].as_str() == Some(&name))
        {
            Some(function) => annotate(function),
            None => {
                let mut function = json!({
                    "apiVersion": "pkg.crossplane.io/v1",
                    "kind": "Function",
                    "metadata": {"name": name},
                    "spec": {"package": PORTED_PATCH_AND_TRANSFORM_PACKAGE},
                });
                annotate(&mut function);
                functions.push(function);
            }
        }
    }
    if !ported {
        return None;
    }
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("functions.yaml");
    let stream: Vec<String> = functions
        .iter()
        .map(|f| serde_json::to_string_pretty(f).unwrap())
        .collect();
    std::fs::write(&path, stream.join("\n---\n")).unwrap();
    Some(Case {
        name: format!("ported function-patch-and-transform: {}", case.name),
        functions: Some(path),
        ..case
    })
}

/// The release build-ported.sh ports and build-upstream.sh serves.
const PORTED_PATCH_AND_TRANSFORM_PACKAGE: &str =
    "xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.10.7";

/// Upstream function-patch-and-transform ported to plait by replacing its
/// main.go, run by plait on every corpus Composition that uses it and on
/// the generated inputs: hundreds of calls of a large Go component, each
/// from its snapshot, none trapping, and every render what the upstream
/// binary renders over gRPC.
#[test]
fn a_ported_patch_and_transform_renders_what_its_grpc_server_renders() {
    let component = build_ported("function-patch-and-transform");
    let upstream = upstream();
    let scratch = tempfile::tempdir().unwrap();
    let corpus = corpus_cases(scratch.path());
    let generated = generated_cases(&repo().join("target/differential-generated-ported"));
    let cases: Vec<Case> = corpus
        .into_iter()
        .chain(generated)
        .enumerate()
        .filter_map(|(i, case)| {
            with_ported_patch_and_transform(case, &component, &scratch.path().join(i.to_string()))
        })
        .collect();
    assert!(
        cases.len() > GENERATED_CASES,
        "the port runs on the corpus and every generated input, not {} cases",
        cases.len()
    );
    let tally = run_cases(&upstream, &cases, "ported function-patch-and-transform");
    assert!(
        tally.unexplained.is_empty(),
        "the ported function and its gRPC server render differently:\n{}",
        tally.report("ported function-patch-and-transform")
    );
}

/// Upstream function-auto-ready ported to plait by replacing its main.go
/// (build-ported.sh, which makes the component with this build's `plait
/// function componentize`): the component, run by plait, renders what the
/// upstream binary renders over gRPC, with nothing, some and everything
/// observed.
#[test]
fn a_ported_upstream_go_function_renders_what_its_grpc_server_renders() {
    let component = build_ported("function-auto-ready");

    let upstream = upstream();
    let scratch = tempfile::tempdir().unwrap();
    // Both sides read this file: plait runs the ported component (the
    // annotation), upstream serves function-auto-ready by its package.
    let functions = scratch.path().join("functions.yaml");
    std::fs::write(
        &functions,
        format!(
            "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: function-patch-and-transform\n\
             spec:\n  package: xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.10.7\n---\n\
             apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: function-auto-ready\n  \
             annotations:\n    render.plait.dev/module: {}\n\
             spec:\n  package: xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.7.0\n",
            component.display()
        ),
    )
    .unwrap();
    let dir = repo().join("tests/differential/ported/function-auto-ready");
    let cases: Vec<Case> = [
        None,
        Some("observed-partial.yaml"),
        Some("observed-healthy.yaml"),
    ]
    .into_iter()
    .map(|observed| Case {
        name: format!("ported function-auto-ready, observed: {observed:?}"),
        xr: dir.join("xr.yaml"),
        composition: dir.join("composition.yaml"),
        functions: Some(functions.clone()),
        xrd: Some(dir.join("xrd.yaml")),
        required: Vec::new(),
        observed: observed.map(|o| dir.join(o)),
    })
    .collect();

    // The port decides readiness: the XR is Ready only when everything is.
    let ready = |case: &Case| match render_plait(case) {
        Rendered::Output(docs) => docs
            .iter()
            .find(|d| d.get("kind").and_then(Value::as_str) == Some("WebApp"))
            .and_then(|xr| xr.pointer("/status/conditions"))
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
            })
            .and_then(|c| c.get("status").and_then(Value::as_str))
            .map(str::to_string),
        other => panic!("{}: plait render failed: {other:?}", case.name),
    };
    let readiness: Vec<Option<String>> = cases.iter().map(ready).collect();
    assert_eq!(
        readiness,
        [
            Some("False".into()),
            Some("False".into()),
            Some("True".into())
        ]
    );

    let tally = run_cases(&upstream, &cases, "ported function-auto-ready");
    assert_eq!(
        (tally.identical, tally.not_comparable.len()),
        (cases.len(), 0),
        "the ported function and its gRPC server render differently:\n{}",
        tally.report("ported function-auto-ready")
    );
}

#[test]
fn the_documented_deliberate_differences_are_the_ones_the_suite_accepts() {
    let docs = std::fs::read_to_string(repo().join("docs/patch-and-transform.md")).unwrap();
    let mut documented = deliberate::documented_ids(&docs);
    documented.sort();
    let mut accepted: Vec<String> = deliberate::DELIBERATE
        .iter()
        .map(|d| d.id.to_string())
        .collect();
    accepted.sort();
    assert_eq!(documented, accepted);
}
