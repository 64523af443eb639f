//! `spec.config`: KCL's compile options, handed to plait's KCL as
//! function-kcl v0.12.2 hands them to KCL.
//!
//! Upstream runs a program along one of two routes, and `arguments` depend
//! on the route: an inline source without `vendor` goes straight to KCL's
//! API with the five options upstream sets (`resource_list`, `items`,
//! `params`, `PATH`, `env`) and nothing else, so `arguments` are dropped;
//! an inline source with `vendor` goes through KCL's command-line package,
//! which adds `arguments` after the five (a name of theirs given there
//! replaces upstream's value); a path source goes through krm-kcl, which
//! puts `arguments` first (upstream's five replace a name of theirs).

use std::path::Path;

use plait_kcl::embed::RunConfig;
use plait_kcl::loader::FileSystem;
use plait_kcl::settings::{self, SettingsFile};
use plait_kcl::value::Value as KclValue;

use crate::input::ConfigSpec;

/// The options upstream sets itself, which an argument of the same name
/// cannot replace on krm-kcl's route.
const UPSTREAM_OPTIONS: [&str; 5] = ["resource_list", "items", "params", "PATH", "env"];

/// How upstream hands the program to KCL, which decides where
/// `spec.config.arguments` go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// An inline source, straight to KCL's API: arguments are dropped.
    Inline,
    /// An inline source with `vendor`, through KCL's command line:
    /// arguments after upstream's options.
    InlineVendor,
    /// A path source, through krm-kcl: arguments before upstream's options.
    Path,
}

/// What `spec.config` asks of a run.
#[derive(Debug, Clone, Default)]
pub struct Compile {
    pub run: RunConfig,
    /// Sort the output's keys (it also decides which value ends a resource,
    /// see `output`).
    pub sort_keys: bool,
    /// `spec.config.arguments` was given and upstream drops it.
    pub dropped_arguments: bool,
}

/// Why `spec.config` cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A settings file that cannot be read, in the words of the code that
    /// reads it upstream on the route taken.
    #[error("{0}")]
    Settings(String),
    /// A settings file asks for what the built-in does not do.
    #[error("{0}")]
    Unsupported(String),
}

/// The run's options from `config`, along `route`, with the settings files
/// read through `fs` (a relative path from `/`, the function's working
/// directory upstream).
pub fn compile(
    config: &ConfigSpec,
    route: Route,
    fs: &dyn FileSystem,
) -> Result<Compile, ConfigError> {
    let mut compile = Compile {
        run: RunConfig {
            disable_none: config.disable_none,
            show_hidden: config.show_hidden,
            strict_range_check: config.strict_range_check,
            ..RunConfig::default()
        },
        sort_keys: config.sort_keys,
        dropped_arguments: route == Route::Inline && !config.arguments.is_empty(),
    };
    // Each settings file's values, in upstream's order of arguments (the
    // last given wins): after upstream's options on the API route, before
    // them (and before `arguments`) through KCL's command line.
    let mut from_settings = Vec::new();
    for path in &config.settings {
        let file = read_settings(path, route, fs)?;
        let run = &mut compile.run;
        // kcl-go merges a file's flags into the run's: set stays set.
        run.disable_none |= file.disable_none.unwrap_or(false);
        run.show_hidden |= file.show_hidden.unwrap_or(false);
        run.strict_range_check |= file.strict_range_check.unwrap_or(false);
        compile.sort_keys |= file.sort_keys.unwrap_or(false);
        run.path_selectors
            .extend(file.path_selectors.iter().cloned());
        let sorted = file.sort_keys.unwrap_or(false);
        from_settings.extend(
            file.options
                .iter()
                .map(|(name, value)| (name.clone(), go_settings_text(value, sorted))),
        );
    }
    compile
        .run
        .path_selectors
        .extend(config.path_selectors.iter().cloned());
    let not_upstreams = |(name, _): &(String, String)| !UPSTREAM_OPTIONS.contains(&name.as_str());
    let arguments = config.arguments.iter().filter_map(|a| argument(a));
    compile.run.arguments = match route {
        Route::Inline => from_settings,
        Route::InlineVendor => from_settings
            .into_iter()
            .filter(not_upstreams)
            .chain(arguments)
            .collect(),
        Route::Path => from_settings
            .into_iter()
            .chain(arguments)
            .filter(not_upstreams)
            .collect(),
    };
    Ok(compile)
}

/// A settings file as upstream reads it: kcl-go's `WithSettings` on the
/// API route, KCL's command line (which checks the file first) on the
/// others.
fn read_settings(
    path: &str,
    route: Route,
    fs: &dyn FileSystem,
) -> Result<SettingsFile, ConfigError> {
    let absolute = Path::new("/").join(path);
    let text = fs.read_to_string(&absolute).map_err(|_| {
        ConfigError::Settings(match route {
            Route::Inline => format!(
                "kcl.WithSettings({path:?}): open {}: no such file or directory",
                absolute.display()
            ),
            Route::InlineVendor | Route::Path => {
                format!("failed to load '{path}', no such file or directory")
            }
        })
    })?;
    let file = settings::parse(path, &text).map_err(|e| ConfigError::Settings(e.message))?;
    let refused = [
        ("kcl_cli_configs.files", !file.files.is_empty()),
        ("kcl_cli_configs.overrides", !file.overrides.is_empty()),
        (
            "kcl_cli_configs.package_maps",
            !file.package_maps.is_empty(),
        ),
    ];
    if let Some((what, _)) = refused.iter().find(|(_, set)| *set) {
        return Err(ConfigError::Unsupported(format!(
            "{path} sets {what}, which plait's built-in function-kcl does not support; give the program in spec.source and remove it"
        )));
    }
    Ok(file)
}

/// A `kcl_options` value as kcl-go hands it to KCL: a string as it is
/// (KCL then reads JSON in it, so `"123"` is an int), other scalars as Go
/// prints them (`<nil>` for null; a whole float below 1e6 without a
/// fraction, so an int), a dict as JSON in the file's key order (sorted
/// when the file sets `sort_keys`), a list as Go's JSON (keys sorted).
fn go_settings_text(value: &KclValue, sort_keys: bool) -> String {
    match value {
        KclValue::Str(s) => s.to_string(),
        KclValue::Bool(b) => b.to_string(),
        KclValue::Int(i) => i.to_string(),
        KclValue::Float(f) if !f.is_finite() => (if f.is_nan() {
            "NaN"
        } else if *f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        })
        .to_string(),
        KclValue::Float(f) if f.fract() == 0.0 && f.abs() < 1e6 => format!("{}", *f as i64),
        KclValue::Float(f) => format!("{f:e}"),
        KclValue::Dict(_) => go_json(value, sort_keys),
        KclValue::List(_) => go_json(value, true),
        _ => "<nil>".to_string(),
    }
}

/// JSON as Go writes a decoded YAML value: whole floats below 1e21 without
/// a fraction, dict keys in order or sorted.
fn go_json(value: &KclValue, sort_keys: bool) -> String {
    match value {
        KclValue::Str(s) => serde_json::Value::String(s.to_string()).to_string(),
        KclValue::Bool(b) => b.to_string(),
        KclValue::Int(i) => i.to_string(),
        KclValue::Float(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{}", *f as i128),
        KclValue::Float(f) => {
            serde_json::Number::from_f64(*f).map_or_else(|| "null".to_string(), |n| n.to_string())
        }
        KclValue::List(items) => {
            let items: Vec<String> = items.iter().map(|v| go_json(v, sort_keys)).collect();
            format!("[{}]", items.join(","))
        }
        KclValue::Dict(dict) => {
            let mut entries: Vec<(&String, &KclValue)> = dict.iter().collect();
            if sort_keys {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            let entries: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        serde_json::Value::String(k.clone()),
                        go_json(v, sort_keys)
                    )
                })
                .collect();
            format!("{{{}}}", entries.join(","))
        }
        _ => "null".to_string(),
    }
}

/// `name=value` as kcl-go's `WithOptions` splits it: at the first `=`,
/// with a name before it; anything else is left out without a word, as
/// upstream leaves it out.
fn argument(text: &str) -> Option<(String, String)> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Some((name.to_string(), value.to_string())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_split_as_kcl_go_splits_them() {
        let cases = [
            ("env=prod", Some(("env", "prod"))),
            ("list=[1, 2]", Some(("list", "[1, 2]"))),
            ("a=b=c", Some(("a", "b=c"))),
            ("empty=", Some(("empty", ""))),
            ("=1", None),
            ("no-equals", None),
        ];
        for (text, want) in cases {
            let want = want.map(|(n, v)| (n.to_string(), v.to_string()));
            assert_eq!(argument(text), want, "{text}");
        }
    }

    #[test]
    fn arguments_follow_the_route_upstream_takes() {
        let config = ConfigSpec {
            arguments: vec!["stage=prod".into(), "params={}".into()],
            ..ConfigSpec::default()
        };
        let fs = plait_kcl::loader::MemoryFs::new();
        let names = |route| {
            compile(&config, route, &fs)
                .unwrap()
                .run
                .arguments
                .into_iter()
                .map(|(name, _)| name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(Route::Inline), Vec::<String>::new());
        assert_eq!(names(Route::InlineVendor), ["stage", "params"]);
        assert_eq!(names(Route::Path), ["stage"]);
        assert!(
            compile(&config, Route::Inline, &fs)
                .unwrap()
                .dropped_arguments
        );
        assert!(
            !compile(&config, Route::InlineVendor, &fs)
                .unwrap()
                .dropped_arguments
        );
    }
}
