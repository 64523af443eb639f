//! The two tools the C function builds need, in one binary that the
//! workspace build makes (instead of `cargo install`ing wit-bindgen-cli and
//! wasm-tools, which each rebuild their own dependency tree):
//!
//! ```text
//! wit-bindgen c WIT --world WORLD --out-dir DIR
//! wasm-tools component new CORE.wasm --adapt [NAME=]ADAPTER.wasm -o OUT.wasm
//! ```
//!
//! The binary acts as the tool it is invoked as (`make toolchains` links
//! both names to it), or as the tool named by its first argument.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use wit_bindgen_core::wit_parser::Resolve;
use wit_bindgen_core::{Files, WorldGenerator};

const USAGE: &str = "usage:\n  wit-bindgen c WIT --world WORLD --out-dir DIR\n  \
                     wasm-tools component new CORE.wasm [--adapt [NAME=]ADAPTER.wasm] -o OUT.wasm";

fn main() {
    if let Err(e) = run(std::env::args_os().collect()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(argv: Vec<OsString>) -> Result<()> {
    let mut args: Vec<String> = argv
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| anyhow::anyhow!("argument {a:?} is not UTF-8"))
        })
        .collect::<Result<_>>()?;
    let invoked = args
        .first()
        .map(|a| {
            Path::new(a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default()
        .unwrap_or_default();
    args.remove(0);
    let tool = if invoked == "wit-bindgen" || invoked == "wasm-tools" {
        invoked
    } else if args.is_empty() {
        bail!("{USAGE}")
    } else {
        args.remove(0)
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match (tool.as_str(), args.as_slice()) {
        ("wit-bindgen", ["c", rest @ ..]) => {
            bindgen_c(&Options::parse(rest, &["--world", "--out-dir"])?)
        }
        ("wasm-tools", ["component", "new", rest @ ..]) => {
            component_new(&Options::parse(rest, &["--adapt", "-o"])?)
        }
        _ => bail!("unsupported command `{tool} {}`\n{USAGE}", args.join(" ")),
    }
}

/// One positional argument and `--flag VALUE` options from a fixed set.
#[derive(Debug, PartialEq)]
struct Options {
    positional: String,
    values: Vec<(String, String)>,
}

impl Options {
    fn parse(args: &[&str], flags: &[&str]) -> Result<Options> {
        let mut positional = None;
        let mut values = Vec::new();
        let mut args = args.iter();
        while let Some(&arg) = args.next() {
            if let Some(flag) = flags.iter().find(|f| **f == arg) {
                let value = args
                    .next()
                    .with_context(|| format!("{flag} needs a value"))?;
                values.push((flag.to_string(), value.to_string()));
            } else if arg.starts_with('-') {
                bail!("unsupported option {arg}\n{USAGE}");
            } else if positional.replace(arg.to_string()).is_some() {
                bail!("unexpected argument {arg}\n{USAGE}");
            }
        }
        let positional = positional.with_context(|| format!("an input path is needed\n{USAGE}"))?;
        Ok(Options { positional, values })
    }

    fn get(&self, flag: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(f, _)| f == flag)
            .map(|(_, v)| v.as_str())
    }

    fn require(&self, flag: &str) -> Result<&str> {
        self.get(flag)
            .with_context(|| format!("{flag} is required\n{USAGE}"))
    }
}

/// Writes the C bindings (function.h, function.c and the component type
/// object) of a world.
fn bindgen_c(options: &Options) -> Result<()> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(&options.positional)
        .with_context(|| format!("cannot read WIT from {}", options.positional))?;
    let world = resolve.select_world(&[package], options.get("--world"))?;
    let mut files = Files::default();
    let mut generator: Box<dyn WorldGenerator> = wit_bindgen_c::Opts::default().build();
    generator.generate(&mut resolve, world, &mut files)?;
    let out_dir = PathBuf::from(options.require("--out-dir")?);
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    for (name, contents) in files.iter() {
        let path = out_dir.join(name);
        std::fs::write(&path, contents)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Wraps a core module (with its component type custom section) into a
/// component, adapting WASI preview 1 imports when an adapter is given.
fn component_new(options: &Options) -> Result<()> {
    let core = std::fs::read(&options.positional)
        .with_context(|| format!("cannot read {}", options.positional))?;
    let mut encoder = wit_component::ComponentEncoder::default();
    encoder.validate(true).module(&core).with_context(|| {
        format!(
            "{} is not a core module with a component type",
            options.positional
        )
    })?;
    if let Some(adapt) = options.get("--adapt") {
        let (name, path) = adapter(adapt);
        let bytes = std::fs::read(path).with_context(|| format!("cannot read adapter {path}"))?;
        encoder
            .adapter(name, &bytes)
            .with_context(|| format!("cannot use adapter {path}"))?;
    }
    let component = encoder.encode().context("cannot encode the component")?;
    let out = options.require("-o")?;
    std::fs::write(out, component).with_context(|| format!("cannot write {out}"))
}

/// `NAME=PATH`, or `PATH` named after its file up to the first dot, as
/// wasm-tools names adapters.
fn adapter(spec: &str) -> (&str, &str) {
    if let Some((name, path)) = spec.split_once('=') {
        return (name, path);
    }
    let file = Path::new(spec)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(spec);
    (file.split('.').next().unwrap_or(file), spec)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn adapters_are_named_like_wasm_tools_names_them() {
        let cases = [
            (
                "wasi_snapshot_preview1.reactor.wasm",
                (
                    "wasi_snapshot_preview1",
                    "wasi_snapshot_preview1.reactor.wasm",
                ),
            ),
            (
                "/a/b/wasi_snapshot_preview1.wasm",
                ("wasi_snapshot_preview1", "/a/b/wasi_snapshot_preview1.wasm"),
            ),
            ("custom=/x/y.wasm", ("custom", "/x/y.wasm")),
        ];
        for (spec, want) in cases {
            assert_eq!(adapter(spec), want, "{spec}");
        }
    }

    #[test]
    fn options_take_one_input_and_known_flags() {
        let ok = Options::parse(
            &["wit", "--world", "function", "--out-dir", "gen"],
            &["--world", "--out-dir"],
        )
        .unwrap();
        assert_eq!(ok.positional, "wit");
        assert_eq!(ok.get("--world"), Some("function"));
        assert_eq!(ok.require("--out-dir").unwrap(), "gen");
        let errors = [
            (vec!["wit", "--world"], "--world needs a value"),
            (vec!["wit", "--check"], "unsupported option --check"),
            (vec!["a", "b"], "unexpected argument b"),
            (vec!["--world", "w"], "an input path is needed"),
        ];
        for (args, want) in errors {
            let err = Options::parse(&args, &["--world", "--out-dir"])
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{args:?}: {err}");
        }
    }

    #[test]
    fn unsupported_commands_are_named() {
        let cases = [
            (vec!["plait-guest-tools"], "usage"),
            (
                vec!["plait-guest-tools", "wit-bindgen", "rust", "wit"],
                "unsupported command `wit-bindgen rust wit`",
            ),
            (
                vec!["/bin/wasm-tools", "strip", "x.wasm"],
                "unsupported command `wasm-tools strip x.wasm`",
            ),
        ];
        for (argv, want) in cases {
            let err = run(argv.iter().map(OsString::from).collect())
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{argv:?}: {err}");
        }
    }

    /// The C bindings of plait's world: the header the C helpers build on,
    /// the glue and the object carrying the component type.
    #[test]
    fn c_bindings_of_plait_world_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        let gen_dir = dir.path().join("gen");
        let argv = [
            "wit-bindgen",
            "c",
            wit.to_str().unwrap(),
            "--world",
            "function",
            "--out-dir",
            gen_dir.to_str().unwrap(),
        ];
        run(argv.iter().map(OsString::from).collect()).unwrap();
        let mut listed: Vec<_> = std::fs::read_dir(&gen_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        listed.sort();
        assert_eq!(
            listed,
            ["function.c", "function.h", "function_component_type.o"]
        );
        let header = std::fs::read_to_string(gen_dir.join("function.h")).unwrap();
        assert!(
            header.contains("bool exports_function_run_function("),
            "{header}"
        );
    }
}
