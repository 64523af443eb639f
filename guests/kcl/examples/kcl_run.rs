//! `kcl run` without building plait: the same flags as `plait kcl run`, for
//! working on the language and running KCL's grammar suite against it
//! (`tests/kcl/run-grammar.py --kcl "cargo run -q -p plait-kcl --example kcl_run --"`).
//!
//! ```sh
//! cargo run -p plait-kcl --example kcl_run -- main.k -D name=value --sort-keys
//! ```

use plait_kcl::cli::top_level_argument;
use plait_kcl::{KclError, RunError, RunOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: kcl_run [FILE|DIR]... [-D name=value]... [-Y settings.yaml]... \
[-S path]... [-k|--sort-keys] [-n|--disable-none] [-H|--show-hidden] [-d|--debug]";

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Ok(options)) => options,
        Ok(Err(error)) => {
            let error = RunError::new(error, Default::default(), String::new());
            eprint!("{}", error.render());
            return ExitCode::FAILURE;
        }
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match plait_kcl::run(&options) {
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            // kcl prints what print() wrote before the values.
            let written = stdout
                .write_all(output.logs.as_bytes())
                .and_then(|()| stdout.write_all(output.yaml.as_bytes()))
                .and_then(|()| stdout.flush());
            if written.is_err() {
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            print!("{}", error.logs);
            eprint!("{}", error.render());
            ExitCode::FAILURE
        }
    }
}

/// `kcl run`'s flags, spelled as plait's (`--sort-keys`) and as KCL's
/// (`--sort_keys`, `-k`), so `settings.yaml` `kcl_options` apply as they are.
/// A usage error is `Err`; an argument KCL refuses as it runs (`-D key=`) is
/// `Ok(Err)`, reported as KCL reports it.
fn parse_args(args: impl Iterator<Item = String>) -> Result<Result<RunOptions, KclError>, String> {
    // As `plait kcl run`: the `file` module reads below the current
    // directory.
    let work_dir = std::env::current_dir().ok();
    let mut options = RunOptions {
        file_root: work_dir.clone(),
        work_dir,
        ..RunOptions::default()
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-D" | "--argument" => {
                let spec = args.next().ok_or("-D needs name=value")?;
                match top_level_argument(&spec) {
                    Ok(argument) => options.options.push(argument),
                    Err(error) => return Ok(Err(error)),
                }
            }
            "-Y" | "--setting" => {
                // KCL's -Y takes every following argument up to the next flag.
                let mut any = false;
                while let Some(path) = args.next_if(|next| !next.starts_with('-')) {
                    options.settings.push(PathBuf::from(path));
                    any = true;
                }
                if !any {
                    return Err("-Y needs a settings file".into());
                }
            }
            "-S" | "--path-selector" | "--path_selector" => {
                let path = args.next().ok_or("-S needs a path")?;
                options.path_selectors.push(path);
            }
            "-k" | "--sort-keys" | "--sort_keys" => options.sort_keys = true,
            "-n" | "--disable-none" | "--disable_none" => options.disable_none = true,
            "-H" | "--show-hidden" | "--show_hidden" => options.show_hidden = true,
            // KCL's debug mode adds a backtrace note to runtime errors;
            // plait has none to print.
            "-d" | "--debug" => {}
            "-h" | "--help" => return Err("kcl_run: run KCL programs as `kcl run` does".into()),
            flag if flag.starts_with('-') && flag.len() > 1 => {
                return Err(format!("unknown flag {flag}"));
            }
            input => options.inputs.push(PathBuf::from(input)),
        }
    }
    Ok(Ok(options))
}
