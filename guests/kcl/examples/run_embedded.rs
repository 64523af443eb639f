//! Runs the typical Composition program (`benches/composition.k`, with
//! `benches/composition.params.json` as `option("params")`) N times as the
//! built-in function-kcl runs it (`embed::run`: loading, static checks,
//! evaluation, documents as JSON), for an instruction profiler.
//!
//! `cargo build --release -p plait-kcl --example run_embedded`, then
//! `valgrind --tool=callgrind target/release/examples/run_embedded 10`
//! and `callgrind_annotate --inclusive=yes` (the stages are
//! `loader::load_run_options`, `checker::check_packages_all`,
//! `eval::evaluate`, `embed::from_json` and `embed::to_json`; divide by N).

use std::process::ExitCode;

use plait_kcl::embed::{self, Embedded};

const PROGRAM: &str = include_str!("../benches/composition.k");
const PARAMS: &str = include_str!("../benches/composition.params.json");

fn main() -> ExitCode {
    let runs = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 100,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("the number of runs: {e}");
            return ExitCode::FAILURE;
        }
    };
    let params = match serde_json::from_str(PARAMS) {
        Ok(params) => params,
        Err(e) => {
            eprintln!("composition.params.json: {e}");
            return ExitCode::FAILURE;
        }
    };
    let program = Embedded {
        name: "composition.k".into(),
        source: PROGRAM.into(),
        options: vec![("params".into(), params)],
        step_limit: None,
        stack_budget: None,
    };
    let mut documents = 0;
    for _ in 0..runs {
        match embed::run(&program) {
            Ok(output) => documents += output.documents.len(),
            Err(e) => {
                eprintln!("{}", e.render());
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{runs} runs, {documents} documents");
    ExitCode::SUCCESS
}
