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

use plait_kcl::embed::RunConfig;

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

/// The run's options from `config`, along `route`.
pub fn compile(config: &ConfigSpec, route: Route) -> Compile {
    let arguments = config.arguments.iter().filter_map(|a| argument(a));
    let arguments = match route {
        Route::Inline => Vec::new(),
        Route::InlineVendor => arguments.collect(),
        Route::Path => arguments
            .filter(|(name, _)| !UPSTREAM_OPTIONS.contains(&name.as_str()))
            .collect(),
    };
    Compile {
        run: RunConfig {
            arguments,
            path_selectors: config.path_selectors.clone(),
            disable_none: config.disable_none,
            show_hidden: config.show_hidden,
            strict_range_check: config.strict_range_check,
        },
        sort_keys: config.sort_keys,
        dropped_arguments: route == Route::Inline && !config.arguments.is_empty(),
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
        let names = |route| {
            compile(&config, route)
                .run
                .arguments
                .into_iter()
                .map(|(name, _)| name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(Route::Inline), Vec::<String>::new());
        assert_eq!(names(Route::InlineVendor), ["stage", "params"]);
        assert_eq!(names(Route::Path), ["stage"]);
        assert!(compile(&config, Route::Inline).dropped_arguments);
        assert!(!compile(&config, Route::InlineVendor).dropped_arguments);
    }
}
