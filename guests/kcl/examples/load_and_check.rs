//! Loads (lexes and parses) the typical Composition program
//! (`benches/composition.k`) N times, then checks each loaded copy: the
//! stages before evaluation, apart, for an instruction profiler.
//!
//! `cargo build --release -p plait-kcl --example load_and_check`, then
//! `valgrind --tool=callgrind target/release/examples/load_and_check 10`
//! and `callgrind_annotate --inclusive=yes` (the `load` and `check`
//! functions are the two stages; divide by N).

use std::path::Path;
use std::process::ExitCode;

use plait_kcl::{RunOptions, loader, source};

const PROGRAM: &str = include_str!("../benches/composition.k");

#[inline(never)]
fn load(copies: usize) -> Vec<loader::Loaded> {
    (0..copies)
        .map(|_| {
            let options = RunOptions {
                sources: vec![("composition.k".into(), PROGRAM.into())],
                ..RunOptions::default()
            };
            let mut sources = source::SourceMap::default();
            loader::load_run_options(
                &options,
                &loader::MemoryFs::new(),
                Path::new(""),
                &mut sources,
            )
        })
        .collect()
}

#[inline(never)]
fn check(loaded: &[loader::Loaded]) -> usize {
    loaded
        .iter()
        .map(|l| plait_kcl::checker::check_packages_all(&l.program.packages).len())
        .sum()
}

fn main() -> ExitCode {
    let copies = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 100,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("the number of copies: {e}");
            return ExitCode::FAILURE;
        }
    };
    let loaded = load(copies);
    let syntax_errors: usize = loaded.iter().map(|l| l.errors.len()).sum();
    let check_errors = check(&loaded);
    println!(
        "{copies} copies loaded and checked: {syntax_errors} syntax and {check_errors} check errors"
    );
    if syntax_errors + check_errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
