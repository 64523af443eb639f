//! `plait kcl run`: runs KCL programs offline as `kcl run` does, with
//! plait's own KCL (the `plait-kcl` crate), so authors try the KCL a
//! Composition carries before a cluster runs it.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum KclCommand {
    /// Run KCL files or directories and print their values as YAML, as
    /// `kcl run` does (what `print()` wrote first; a top-level list of
    /// configs as a YAML stream). A KCL error is printed as KCL prints it,
    /// and the command exits 1.
    Run(RunArgs),
}

/// `kcl run`'s flags; KCL's own spellings (`--sort_keys`, `-k`, …) are
/// accepted too, so a command line written for `kcl` works as it is.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The files and directories of the main package (every `.k` file of a
    /// directory); the current directory when none (and no `-Y`).
    pub inputs: Vec<PathBuf>,
    /// A top-level argument, read by `option("name")`; the value is parsed
    /// as KCL parses it (`-D replicas=3`, `-D 'labels={"app":"a"}'`).
    #[arg(short = 'D', long = "argument", value_name = "NAME=VALUE")]
    pub arguments: Vec<String>,
    /// Settings files (`kcl_options`, `kcl_cli_configs`), as `kcl run -Y`.
    #[arg(short = 'Y', long = "setting", value_name = "FILE", num_args = 1..)]
    pub settings: Vec<PathBuf>,
    /// Print only the value at this path (`-S app.spec`, `-S :list.[0]`).
    #[arg(
        short = 'S',
        long = "path-selector",
        alias = "path_selector",
        value_name = "PATH"
    )]
    pub path_selectors: Vec<String>,
    /// Sort the keys of every dict in the output.
    #[arg(short = 'k', long = "sort-keys", alias = "sort_keys")]
    pub sort_keys: bool,
    /// Leave out attributes whose value is None.
    #[arg(short = 'n', long = "disable-none", alias = "disable_none")]
    pub disable_none: bool,
    /// Also print hidden (`_name`) attributes.
    #[arg(short = 'H', long = "show-hidden", alias = "show_hidden")]
    pub show_hidden: bool,
    /// Accepted as `kcl run -d` is; plait prints no backtrace under an error.
    #[arg(short = 'd', long = "debug", hide = true)]
    pub debug: bool,
}

pub fn main(command: &KclCommand) -> ExitCode {
    match command {
        KclCommand::Run(args) => run(args),
    }
}

fn run(args: &RunArgs) -> ExitCode {
    let options = match options(args) {
        Ok(options) => options,
        Err(error) => return report(&error),
    };
    match plait_kcl::run(&options) {
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            let printed = stdout
                .write_all(output.logs.as_bytes())
                .and_then(|()| stdout.write_all(output.yaml.as_bytes()))
                .and_then(|()| stdout.flush());
            match printed {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("plait: cannot write the output: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(error) => report(&error),
    }
}

/// The run's options from the command line; an argument KCL refuses is a
/// KCL error, reported as `kcl run` reports it.
fn options(args: &RunArgs) -> Result<plait_kcl::RunOptions, Box<plait_kcl::RunError>> {
    let arguments = args
        .arguments
        .iter()
        .map(|spec| plait_kcl::cli::top_level_argument(spec))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| {
            Box::new(plait_kcl::RunError::new(
                error,
                Default::default(),
                String::new(),
            ))
        })?;
    let work_dir = std::env::current_dir().ok();
    // As `kcl run`: no files and no settings file naming them is the
    // current directory.
    let inputs = if args.inputs.is_empty() && args.settings.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.inputs.clone()
    };
    Ok(plait_kcl::RunOptions {
        inputs,
        options: arguments,
        settings: args.settings.clone(),
        path_selectors: args.path_selectors.clone(),
        sort_keys: args.sort_keys,
        disable_none: args.disable_none,
        show_hidden: args.show_hidden,
        // The `file` module reads below the directory plait runs in, as a
        // function's files are granted to it: nothing outside.
        file_root: work_dir.clone(),
        work_dir,
        ..Default::default()
    })
}

/// Prints what the program printed before it failed, then the error as
/// KCL renders it.
fn report(error: &plait_kcl::RunError) -> ExitCode {
    print!("{}", error.logs);
    let _ = std::io::stdout().flush();
    eprint!("{}", error.render());
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        command: KclCommand,
    }

    fn parse(args: &[&str]) -> RunArgs {
        let cli = Cli::try_parse_from(["kcl"].iter().chain(args)).expect("parses");
        match cli.command {
            KclCommand::Run(args) => args,
        }
    }

    #[test]
    fn kcl_spellings_of_the_flags_are_accepted() {
        for flags in [
            ["--sort-keys", "--disable-none", "--show-hidden"],
            ["--sort_keys", "--disable_none", "--show_hidden"],
            ["-k", "-n", "-H"],
        ] {
            let args = parse(&["run", "main.k", flags[0], flags[1], flags[2]]);
            assert!(
                args.sort_keys && args.disable_none && args.show_hidden,
                "{flags:?}"
            );
        }
    }

    #[test]
    fn repeated_and_multi_valued_flags_collect_in_order() {
        let args = parse(&[
            "run", "main.k", "-D", "a=1", "-D", "b=[1,2]", "-S", "x.y", "-d", "-Y", "one.yaml",
            "two.yaml",
        ]);
        assert_eq!(args.inputs, [PathBuf::from("main.k")]);
        assert_eq!(args.arguments, ["a=1", "b=[1,2]"]);
        assert_eq!(args.path_selectors, ["x.y"]);
        assert_eq!(
            args.settings,
            [PathBuf::from("one.yaml"), PathBuf::from("two.yaml")]
        );
        let options = options(&args).expect("valid arguments");
        assert_eq!(
            options.options,
            [
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "[1,2]".to_string())
            ]
        );
    }

    #[test]
    fn an_argument_kcl_refuses_is_its_evaluation_error() {
        for spec in ["key=", "=123", "key=value="] {
            let args = parse(&["run", "main.k", "-D", spec]);
            let error = options(&args).expect_err(spec);
            assert_eq!(
                error.render(),
                "error[E3M38]: EvaluationError\nInvalid value for top level arguments\n\n"
            );
        }
    }
}
