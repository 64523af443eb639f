//! Loads (lexes and parses) the typical Composition program
//! (`benches/composition.k`) N times, then checks each loaded copy: the
//! stages before evaluation, apart, for an instruction profiler. It also
//! copies each loaded tree (`copy`): every node allocated and filled
//! again, the least that rebuilding a parsed program from a serialized
//! form would cost, beside what parsing it costs.
//!
//! `cargo build --release -p plait-kcl --example load_and_check`, then
//! `valgrind --tool=callgrind target/release/examples/load_and_check 10`
//! and `callgrind_annotate --inclusive=yes` (the `load`, `check` and
//! `copy` functions are the stages; divide by N).

use std::path::Path;
use std::process::ExitCode;

use plait_kcl::{RunOptions, ast, loader, source};

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

#[inline(never)]
fn copy(loaded: &[loader::Loaded]) -> Vec<Vec<ast::Module>> {
    loaded
        .iter()
        .map(|l| {
            l.program
                .packages
                .values()
                .flat_map(|modules| modules.iter().map(|m| ast::Module::clone(m)))
                .collect()
        })
        .collect()
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
    let modules: usize = copy(&loaded).iter().map(Vec::len).sum();
    println!(
        "{copies} copies loaded, checked and copied ({modules} modules): {syntax_errors} syntax and {check_errors} check errors"
    );
    if syntax_errors + check_errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
