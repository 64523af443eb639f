//! The speed and size bench's typical Composition program
//! (benches/composition.k, with benches/composition.params.json as
//! `option("params")`): the real KCL (kcl-lib 0.12.3, the oracle `make
//! kcl-oracle` installs) accepts it, and plait prints what it prints, both
//! through `kcl run`'s API and as the documents the embedded API hands a
//! composition function.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use plait_kcl::embed::{self, Embedded};
use plait_kcl::{RunOptions, run};
use serde_json::{Value, json};

const ORACLE_VENV: &str = ".cache/plait/kcl-lib-0.12.3";

fn benches() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches")
}

fn params_text() -> String {
    std::fs::read_to_string(benches().join("composition.params.json")).unwrap()
}

/// kcl-lib's YAML for the program, through the harness's oracle script.
fn oracle_yaml() -> String {
    let home = std::env::var_os("HOME").expect("HOME is set");
    let python = Path::new(&home).join(ORACLE_VENV).join("bin/python");
    assert!(
        python.exists(),
        "KCL's oracle (kcl-lib 0.12.3) is not installed at {}: run `make kcl-oracle`",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/kcl/oracle.py");
    let request = json!([{
        "file": benches().join("composition.k"),
        "args": [["params", params_text()]],
    }]);
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the KCL oracle");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let [result] = results.as_slice() else {
        panic!("one result: {results:?}");
    };
    assert_eq!(result["error"], Value::Null, "kcl-lib refuses the program");
    result["yaml"].as_str().unwrap().to_string()
}

#[test]
fn the_typical_composition_program_runs_as_kcl_runs_it() {
    let expected = oracle_yaml();
    let options = RunOptions {
        inputs: vec![benches().join("composition.k")],
        options: vec![("params".into(), params_text())],
        ..RunOptions::default()
    };
    let output = run(&options).unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(output.yaml, expected);

    let embedded = embed::run(&Embedded {
        name: "composition.k".into(),
        source: std::fs::read_to_string(benches().join("composition.k")).unwrap(),
        options: vec![(
            "params".into(),
            serde_json::from_str(&params_text()).unwrap(),
        )],
        step_limit: None,
        stack_budget: None,
    })
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let expected_documents: Value = serde_yaml_ng::from_str(&expected).unwrap();
    assert_eq!(embedded.documents, vec![expected_documents]);
}
