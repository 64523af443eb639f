//! `plait function new`: a function project that builds and renders as written.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Language {
    Rust,
    Python,
    Js,
    C,
    Go,
}

#[derive(clap::Args)]
pub struct NewArgs {
    /// The function's name: lowercase letters, digits and dashes.
    pub name: String,
    /// The language to write it in.
    #[arg(long, alias = "language")]
    pub lang: Language,
    /// The directory to create; ./NAME when absent.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Rust only: the plait-sdk crate to depend on, as a path. Defaults to the
    /// SDK of the source tree plait was built from when it still exists,
    /// else to plait-sdk from crates.io.
    #[arg(long)]
    pub sdk: Option<PathBuf>,
}

const COMMON: &[(&str, &str)] = &[
    ("README.md", include_str!("../templates/common/README.md")),
    (
        "composition.yaml",
        include_str!("../templates/common/composition.yaml"),
    ),
    (
        "functions.yaml",
        include_str!("../templates/common/functions.yaml"),
    ),
    ("xr.yaml", include_str!("../templates/common/xr.yaml")),
    (
        "observed.yaml",
        include_str!("../templates/common/observed.yaml"),
    ),
    (".gitignore", include_str!("../templates/common/gitignore")),
];

const WIT: (&str, &str) = (
    "wit/function.wit",
    include_str!("../../../wit/function.wit"),
);

fn language_files(lang: Language) -> Vec<(&'static str, &'static str)> {
    match lang {
        Language::Rust => vec![
            ("Cargo.toml", include_str!("../templates/rust/Cargo.toml")),
            ("src/lib.rs", include_str!("../templates/rust/src/lib.rs")),
            ("Makefile", include_str!("../templates/rust/Makefile")),
        ],
        Language::Python => vec![
            ("app.py", include_str!("../templates/python/app.py")),
            ("Makefile", include_str!("../templates/python/Makefile")),
            (
                "plait_function/__init__.py",
                include_str!("../../../guests/sdk-python/plait_function/__init__.py"),
            ),
            WIT,
        ],
        Language::Js => vec![
            ("app.js", include_str!("../templates/js/app.js")),
            ("Makefile", include_str!("../templates/js/Makefile")),
            (
                "plait-function.js",
                include_str!("../../../guests/sdk-js/plait-function.js"),
            ),
            WIT,
        ],
        Language::C => vec![
            ("function.c", include_str!("../templates/c/function.c")),
            ("Makefile", include_str!("../templates/c/Makefile")),
            (
                "plait_function.h",
                include_str!("../../../guests/sdk-c/plait_function.h"),
            ),
            (
                "plait_function.c",
                include_str!("../../../guests/sdk-c/plait_function.c"),
            ),
            WIT,
        ],
        Language::Go => vec![
            ("fn.go", include_str!("../templates/go/fn.go")),
            ("main.go", include_str!("../templates/go/main.go")),
            ("go.mod", include_str!("../templates/go/go.mod")),
            ("Makefile", include_str!("../templates/go/Makefile")),
            (
                "sdk-go/go.mod",
                include_str!("../../../guests/sdk-go/go.mod"),
            ),
            (
                "sdk-go/go.sum",
                include_str!("../../../guests/sdk-go/go.sum"),
            ),
            (
                "sdk-go/component/abi.go",
                include_str!("../../../guests/sdk-go/component/abi.go"),
            ),
            (
                "sdk-go/component/files_native.go",
                include_str!("../../../guests/sdk-go/component/files_native.go"),
            ),
            (
                "sdk-go/component/files_wasip1.go",
                include_str!("../../../guests/sdk-go/component/files_wasip1.go"),
            ),
            (
                "sdk-go/component/gc_native.go",
                include_str!("../../../guests/sdk-go/component/gc_native.go"),
            ),
            (
                "sdk-go/component/gc_wasip1.go",
                include_str!("../../../guests/sdk-go/component/gc_wasip1.go"),
            ),
            (
                "sdk-go/component/log.go",
                include_str!("../../../guests/sdk-go/component/log.go"),
            ),
            (
                "sdk-go/component/log_native.go",
                include_str!("../../../guests/sdk-go/component/log_native.go"),
            ),
            (
                "sdk-go/component/serve.go",
                include_str!("../../../guests/sdk-go/component/serve.go"),
            ),
            (
                "sdk-go/component/types.go",
                include_str!("../../../guests/sdk-go/component/types.go"),
            ),
            (
                "sdk-go/plait/convert.go",
                include_str!("../../../guests/sdk-go/plait/convert.go"),
            ),
            (
                "sdk-go/plait/log.go",
                include_str!("../../../guests/sdk-go/plait/log.go"),
            ),
            (
                "sdk-go/plait/serve.go",
                include_str!("../../../guests/sdk-go/plait/serve.go"),
            ),
            (
                "sdk-go/plait/types.go",
                include_str!("../../../guests/sdk-go/plait/types.go"),
            ),
        ],
    }
}

fn toolchain_note(lang: Language) -> &'static str {
    match lang {
        Language::Rust => {
            "Needs Rust with the `wasm32-wasip2` target (`rustup target add wasm32-wasip2`)."
        }
        Language::Python => {
            "Needs `componentize-py` 0.25 on PATH (`pip install componentize-py==0.25.1`). \
             `plait_function/` holds the helpers; `wit/` the contract."
        }
        Language::Js => {
            "Needs `componentize-js` 0.23 on PATH (`npm install @bytecodealliance/componentize-js@0.23.0`). \
             `plait-function.js` holds the helpers; `wit/` the contract."
        }
        Language::C => {
            "Needs Debian's `clang-14`, `lld-14`, `wasi-libc` and `libclang-rt-14-dev-wasm32`, \
             `wit-bindgen` 0.63 and `wasm-tools` on PATH, and wasmtime's preview1 reactor adapter \
             (set `WASI_ADAPTER=PATH`). `plait_function.h` holds the helpers; `wit/` the contract. \
             In the plait repository, `make toolchains` installs all of \
             them under `~/.cache/plait/`."
        }
        Language::Go => {
            "Needs Go 1.24 or newer; the build fetches function-sdk-go through the Go module proxy \
             and `plait function componentize` makes the component. `fn.go` is written against \
             function-sdk-go as a gRPC function is; `main.go` hands it to plait's SDK in `sdk-go/`."
        }
    }
}

/// Where the SDK of the source tree this binary was built from lives.
fn source_tree_sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guests/sdk")
}

fn sdk_dependency(sdk: Option<&Path>) -> Result<String> {
    let path = match sdk {
        Some(path) => path.to_path_buf(),
        None => {
            let tree = source_tree_sdk();
            if !tree.join("Cargo.toml").exists() {
                return Ok(format!("\"{}\"", env!("CARGO_PKG_VERSION")));
            }
            tree
        }
    };
    let path = path
        .canonicalize()
        .with_context(|| format!("--sdk {}: no such directory", path.display()))?;
    if !path.join("Cargo.toml").exists() {
        bail!("--sdk {}: not a crate (no Cargo.toml)", path.display());
    }
    // TOML basic strings need backslashes and quotes escaped.
    let escaped = path
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    Ok(format!("{{ path = \"{escaped}\" }}"))
}

fn check_name(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-');
    if !valid {
        bail!(
            "function name {name:?} must be 1-63 lowercase letters, digits and dashes, starting with a letter and not ending with a dash"
        );
    }
    Ok(())
}

/// Writes the project and returns what to tell the user.
pub fn run(args: &NewArgs) -> Result<String> {
    check_name(&args.name)?;
    if args.sdk.is_some() && args.lang != Language::Rust {
        bail!("--sdk applies to --lang rust only");
    }
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if dir.exists() && std::fs::read_dir(&dir)?.next().is_some() {
        bail!("{} already exists and is not empty", dir.display());
    }
    let sdk = if args.lang == Language::Rust {
        sdk_dependency(args.sdk.as_deref())?
    } else {
        String::new()
    };
    let language = match args.lang {
        Language::Rust => "Rust",
        Language::Python => "Python",
        Language::Js => "JavaScript",
        Language::C => "C",
        Language::Go => "Go",
    };
    let fill = |text: &str| {
        text.replace("{{name}}", &args.name)
            .replace("{{crate}}", &args.name.replace('-', "_"))
            .replace("{{language}}", language)
            .replace("{{toolchain}}", toolchain_note(args.lang))
            .replace("{{sdk}}", &sdk)
    };
    for (path, text) in COMMON.iter().copied().chain(language_files(args.lang)) {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        // The bundled helpers and contract are copied verbatim.
        let text =
            if path.ends_with(".wit") || path.starts_with("plait") || path.starts_with("sdk-go/") {
                text.to_string()
            } else {
                fill(text)
            };
        std::fs::write(&target, text)
            .with_context(|| format!("cannot write {}", target.display()))?;
    }
    Ok(format!(
        "created {language} function {} in {}\n  cd {} && make && plait render xr.yaml composition.yaml functions.yaml\n",
        args.name,
        dir.display(),
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_go_project_carries_every_source_file_of_the_go_sdk() {
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guests/sdk-go");
        let carried: Vec<&str> = language_files(Language::Go)
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        for package in ["component", "plait"] {
            for entry in std::fs::read_dir(sdk.join(package)).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().to_string();
                if name.ends_with(".go") && !name.ends_with("_test.go") {
                    let path = format!("sdk-go/{package}/{name}");
                    assert!(
                        carried.contains(&path.as_str()),
                        "{path} is not in the Go project"
                    );
                }
            }
        }
    }

    #[test]
    fn names_must_be_dns_labels() {
        let cases = [
            ("my-function", true),
            ("f1", true),
            ("", false),
            ("My-Function", false),
            ("1st", false),
            ("trailing-", false),
            ("has_underscore", false),
        ];
        for (name, ok) in cases {
            assert_eq!(check_name(name).is_ok(), ok, "{name}");
        }
    }

    #[test]
    fn projects_have_no_unfilled_placeholders_and_refuse_non_empty_dirs() {
        for lang in [
            Language::Rust,
            Language::Python,
            Language::Js,
            Language::C,
            Language::Go,
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("fn");
            let args = NewArgs {
                name: "my-fn".into(),
                lang,
                dir: Some(dir.clone()),
                sdk: None,
            };
            run(&args).unwrap();
            for (path, _) in COMMON.iter().copied().chain(language_files(lang)) {
                let text = std::fs::read_to_string(dir.join(path)).unwrap();
                assert!(!text.contains("{{"), "{lang:?} {path}: {text}");
            }
            let err = run(&args).unwrap_err().to_string();
            assert!(err.contains("not empty"), "{err}");
        }
    }
}
