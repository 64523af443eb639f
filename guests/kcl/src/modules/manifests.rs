//! `manifests.yaml_stream(values, opts)`: the program's output becomes
//! these values as a YAML stream.

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::Result;
use crate::value::Value;
use crate::value::json::EncodeOptions;
use crate::value::yaml::PlanOptions;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[("yaml_stream", yaml_stream)];

/// `yaml_stream(values: [any], opts: {str:} = …)`. Without `opts` nothing
/// is left out; with it, `ignore_private` defaults to true. The options
/// also replace the run's `--sort-keys`, `--disable-none` and
/// `--show-hidden`, as KCL's do.
fn yaml_stream(
    interp: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let mut encode = EncodeOptions::default();
    let mut sep = "---".to_owned();
    if let Some(opts) = args.get(1, "opts") {
        let Some(opts) = opts.as_dict() else {
            return Err(error(format!(
                "Invalid options arguments in yaml_stream(): expect config, got {}",
                opts.type_name()
            )));
        };
        let flag = |name: &str, default: bool| opts.get(name).map_or(default, Value::is_truthy);
        encode.sort_keys = flag("sort_keys", false);
        encode.ignore_private = flag("ignore_private", true);
        encode.ignore_none = flag("ignore_none", false);
        if let Some(s) = opts.get("sep") {
            s.as_str().unwrap_or("").clone_into(&mut sep);
        }
    }
    let Some(values) = args.get(0, "values") else {
        return Err(error(
            "yaml_stream() missing 1 required positional argument: 'values'",
        ));
    };
    let values = values
        .as_list()
        .ok_or_else(|| error("invalid list value"))?;
    let documents: Vec<String> = values
        .iter()
        .map(|v| crate::value::yaml::encode(v, &encode))
        .collect();
    let plan = PlanOptions {
        sort_keys: encode.sort_keys,
        disable_none: encode.ignore_none,
        show_hidden: !encode.ignore_private,
        sep: Some(sep.clone()),
    };
    interp.set_output_stream(documents.join(&format!("\n{sep}\n")), plan);
    Ok(Value::Undefined)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{TestInterp, s};
    use super::*;
    use crate::value::Dict;

    fn stream(args: &[Value], kwargs: &[(&str, Value)]) -> Result<(String, PlanOptions)> {
        let mut interp = TestInterp::default();
        let kwargs: Vec<(String, Value)> = kwargs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        yaml_stream(&mut interp, args, &kwargs)?;
        Ok(interp.output.expect("an output stream"))
    }

    fn dict(entries: &[(&str, Value)]) -> Value {
        Value::dict(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Dict>(),
        )
    }

    // Expectations from KCL 0.12.3's custom manifests output.
    #[test]
    fn streams_documents_with_kcls_options() {
        let values = Value::list(vec![
            dict(&[("_p", Value::Int(1)), ("a", Value::None)]),
            Value::Int(2),
        ]);
        let (text, plan) = stream(std::slice::from_ref(&values), &[]).unwrap();
        assert_eq!(text, "_p: 1\na: null\n\n---\n2\n");
        assert_eq!(
            plan,
            PlanOptions {
                show_hidden: true,
                sep: Some("---".into()),
                ..PlanOptions::default()
            }
        );
        let opts = dict(&[("ignore_none", Value::Bool(true)), ("sep", s("==="))]);
        let (text, plan) = stream(&[values], &[("opts", opts)]).unwrap();
        assert_eq!(text, "{}\n\n===\n2\n");
        assert_eq!(
            plan,
            PlanOptions {
                disable_none: true,
                show_hidden: false,
                sort_keys: false,
                sep: Some("===".into())
            }
        );
    }

    #[test]
    fn refuses_what_kcl_refuses() {
        let err = stream(&[Value::list(vec![]), Value::Int(1)], &[]).unwrap_err();
        assert_eq!(
            err.message,
            "Invalid options arguments in yaml_stream(): expect config, got int"
        );
        let err = stream(&[Value::Int(1)], &[]).unwrap_err();
        assert_eq!(err.message, "invalid list value");
    }
}
