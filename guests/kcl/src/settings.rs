//! `kcl run`'s settings files (`-Y settings.yaml`) and `-D` values: what
//! they add to a run's options, read as KCL reads them.

use std::path::{Path, PathBuf};

use crate::RunOptions;
use crate::error::{ErrorKind, KclError};
use crate::value::Value;

/// What a settings file says, as KCL reads it: `kcl_cli_configs`' flags
/// (`None` when the file does not set one) and lists, and `kcl_options`'
/// values in order.
#[derive(Debug, Clone, Default)]
pub struct SettingsFile {
    /// `file` and `files`, as written.
    pub files: Vec<String>,
    pub disable_none: Option<bool>,
    pub sort_keys: Option<bool>,
    pub show_hidden: Option<bool>,
    pub strict_range_check: Option<bool>,
    pub debug: Option<bool>,
    pub path_selectors: Vec<String>,
    pub overrides: Vec<String>,
    /// `package_maps`: package name to path.
    pub package_maps: Vec<(String, String)>,
    /// `kcl_options`: each `key` and its `value` (`None` when absent).
    pub options: Vec<(String, Value)>,
}

fn strings(configs: &crate::value::Dict, key: &str) -> Vec<String> {
    configs
        .get(key)
        .and_then(Value::as_list)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Reads a settings file's text; `name` is the file as given, for the
/// error KCL reports when the text is no settings file.
pub fn parse(name: &str, text: &str) -> Result<SettingsFile, KclError> {
    let document = crate::value::yaml::decode(text).map_err(|_| invalid(name))?;
    let settings = match &document {
        Value::Dict(d) => d.clone(),
        Value::None => Default::default(),
        _ => return Err(invalid(name)),
    };
    let mut file = SettingsFile::default();
    if let Some(Value::Dict(configs)) = settings.get("kcl_cli_configs") {
        file.files = strings(configs, "file");
        file.files.extend(strings(configs, "files"));
        file.disable_none = flag(configs, "disable_none");
        file.sort_keys = flag(configs, "sort_keys");
        file.show_hidden = flag(configs, "show_hidden");
        file.strict_range_check = flag(configs, "strict_range_check");
        file.debug = flag(configs, "debug");
        file.path_selectors = strings(configs, "path_selector");
        file.overrides = strings(configs, "overrides");
        if let Some(Value::Dict(maps)) = configs.get("package_maps") {
            file.package_maps = maps
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
        }
    }
    match settings.get("kcl_options") {
        Some(Value::List(items)) => {
            for item in items.iter() {
                let entry = item.as_dict().ok_or_else(|| invalid(name))?;
                let key = entry
                    .get("key")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(name))?;
                let value = entry.get("value").cloned().unwrap_or(Value::None);
                file.options.push((key.to_string(), value));
            }
        }
        None | Some(Value::None) => {}
        Some(_) => return Err(invalid(name)),
    }
    Ok(file)
}

/// A run's options once its settings files are applied, with every
/// option's value (settings files' `kcl_options` first, then `-D`).
pub(crate) struct Settings {
    pub options: RunOptions,
    pub values: Vec<(String, Value)>,
}

fn invalid(name: &str) -> KclError {
    KclError::new(
        ErrorKind::EvaluationError,
        format!("Failed to load '{name}', invalid setting file format"),
    )
}

fn flag(configs: &crate::value::Dict, key: &str) -> Option<bool> {
    match configs.get(key) {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// Applies `options.settings` (each relative to `base`) to the options.
pub(crate) fn apply(options: &RunOptions, base: &Path) -> Result<Settings, KclError> {
    let mut merged = options.clone();
    let mut values = Vec::new();
    for file in &options.settings {
        let name = file.to_string_lossy().into_owned();
        let path = base.join(file);
        let text = std::fs::read_to_string(&path).map_err(|_| {
            KclError::new(
                ErrorKind::EvaluationError,
                format!("Failed to load '{name}', no such file or directory"),
            )
        })?;
        let file = parse(&name, &text)?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let files: Vec<PathBuf> = file.files.iter().map(|f| dir.join(f)).collect();
        if !files.is_empty() {
            merged.inputs = files;
        }
        let flags = [
            (file.disable_none, &mut merged.disable_none),
            (file.sort_keys, &mut merged.sort_keys),
            (file.show_hidden, &mut merged.show_hidden),
            (file.strict_range_check, &mut merged.strict_range_check),
        ];
        for (set, flag) in flags {
            if let Some(set) = set {
                *flag = set;
            }
        }
        merged.path_selectors.extend(file.path_selectors);
        values.extend(file.options);
    }
    values.extend(
        options
            .options
            .iter()
            .map(|(k, v)| (k.clone(), option_value(v))),
    );
    Ok(Settings {
        options: merged,
        values,
    })
}

/// Whether a number is written in scientific notation (`12e1`): KCL
/// keeps such a `-D` value as the string written.
fn scientific(text: &str) -> bool {
    let text = text.trim();
    match text.split_once(['e', 'E']) {
        Some((base, exponent)) => {
            !exponent.contains(['e', 'E'])
                && base.parse::<f64>().is_ok()
                && exponent.parse::<i64>().is_ok()
        }
        None => false,
    }
}

/// A `-D name=value` value as KCL reads it: JSON when it parses as JSON
/// (but a number in scientific notation stays text), `True`, `False` and
/// `None` as KCL's constants, else the text itself.
pub(crate) fn option_value(text: &str) -> Value {
    if let Ok(v) = crate::value::json::decode(text) {
        if matches!(v, Value::Int(_) | Value::Float(_)) && scientific(text) {
            return Value::str(text);
        }
        return v;
    }
    match text.trim() {
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        "None" | "Undefined" => Value::None,
        _ => Value::str(text),
    }
}

#[cfg(test)]
mod tests {
    use super::{option_value, parse};

    #[test]
    fn a_settings_file_is_read_field_by_field() {
        let text = "kcl_cli_configs:\n  files: [a.k]\n  file: [b.k]\n  sort_keys: true\n  \
                    strict_range_check: false\n  path_selector: [app]\n  overrides: [x=1]\n  \
                    package_maps: {k8s: /vendor/k8s}\nkcl_options:\n  - key: n\n    value: 1\n  \
                    - key: empty\n";
        let file = parse("kcl.yaml", text).unwrap();
        assert_eq!(file.files, ["b.k", "a.k"]);
        assert_eq!(
            (file.sort_keys, file.strict_range_check, file.disable_none),
            (Some(true), Some(false), None)
        );
        assert_eq!(file.path_selectors, ["app"]);
        assert_eq!(file.overrides, ["x=1"]);
        assert_eq!(
            file.package_maps,
            [("k8s".to_string(), "/vendor/k8s".to_string())]
        );
        let options: Vec<String> = file
            .options
            .iter()
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect();
        assert_eq!(options, ["n=Int(1)", "empty=None"]);

        for text in ["- a\n", "kcl_options: {a: 1}\n", "kcl_options: [1]\n"] {
            let error = parse("kcl.yaml", text).unwrap_err();
            assert_eq!(
                error.message, "Failed to load 'kcl.yaml', invalid setting file format",
                "{text}"
            );
        }
    }

    #[test]
    fn option_values_are_read_as_kcl_reads_them() {
        let cases = [
            ("0", "Int(0)"),
            ("False", "Bool(false)"),
            ("True", "Bool(true)"),
            ("1.5", "Float(1.5)"),
            ("12e1", "Str(\"12e1\")"),
            ("2E10", "Str(\"2E10\")"),
            ("alice", "Str(\"alice\")"),
            ("[1]", "List([Int(1)])"),
        ];
        for (text, want) in cases {
            assert_eq!(format!("{:?}", option_value(text)), want, "{text}");
        }
    }
}
