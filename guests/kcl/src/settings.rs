//! `kcl run`'s settings files (`-Y settings.yaml`) and `-D` values: what
//! they add to a run's options, read as KCL reads them.

use std::path::{Path, PathBuf};

use crate::RunOptions;
use crate::error::{ErrorKind, KclError};
use crate::value::Value;

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
        let document = crate::value::yaml::decode(&text).map_err(|_| invalid(&name))?;
        let settings = match &document {
            Value::Dict(d) => d.clone(),
            Value::None => Default::default(),
            _ => return Err(invalid(&name)),
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if let Some(Value::Dict(configs)) = settings.get("kcl_cli_configs") {
            let files: Vec<PathBuf> = ["file", "files"]
                .iter()
                .filter_map(|k| configs.get(k).and_then(Value::as_list))
                .flatten()
                .filter_map(Value::as_str)
                .map(|f| dir.join(f))
                .collect();
            if !files.is_empty() {
                merged.inputs = files;
            }
            if let Some(b) = flag(configs, "disable_none") {
                merged.disable_none = b;
            }
            if let Some(b) = flag(configs, "sort_keys") {
                merged.sort_keys = b;
            }
            if let Some(b) = flag(configs, "show_hidden") {
                merged.show_hidden = b;
            }
            if let Some(b) = flag(configs, "strict_range_check") {
                merged.strict_range_check = b;
            }
            if let Some(selectors) = configs.get("path_selector").and_then(Value::as_list) {
                merged.path_selectors.extend(
                    selectors
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned),
                );
            }
        }
        match settings.get("kcl_options") {
            Some(Value::List(items)) => {
                for item in items.iter() {
                    let entry = item.as_dict().ok_or_else(|| invalid(&name))?;
                    let key = entry
                        .get("key")
                        .and_then(Value::as_str)
                        .ok_or_else(|| invalid(&name))?;
                    let value = entry.get("value").cloned().unwrap_or(Value::None);
                    values.push((key.to_string(), value));
                }
            }
            None | Some(Value::None) => {}
            Some(_) => return Err(invalid(&name)),
        }
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
    use super::option_value;

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
