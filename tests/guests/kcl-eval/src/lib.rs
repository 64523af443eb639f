//! Runs a KCL program in the sandbox, as plait's KCL function will: the
//! step input is `{source: <KCL text>}`; the program reads
//! `option("params")`, which holds the request as function-kcl gives it
//! (`oxr`, `ocds`, `dxr`, `dcds`, `ctx`); each item of its output's `items`
//! list (else each document it outputs) becomes a desired composed
//! resource, named by its `krm.kcl.dev/composition-resource-name`
//! annotation or else its `metadata.name`. A KCL error is a fatal result
//! with KCL's message: the guest never traps on one.

use plait_sdk::{Function, FunctionError, LogLevel, Request, Resource, Response, State};
use serde_json::{Map, Value, json};

pub struct KclEval;

/// The stack a KCL evaluation may use in the guest.
const STACK_BUDGET: usize = 256 << 10;

/// The annotation function-kcl names a composed resource by.
const RESOURCE_NAME_ANNOTATION: &str = "krm.kcl.dev/composition-resource-name";

impl Function for KclEval {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let source = request
            .input
            .as_ref()
            .and_then(|input| input.get("source"))
            .and_then(Value::as_str)
            .ok_or_else(|| FunctionError::InvalidInput("input.source: a KCL program".into()))?;
        let program = plait_kcl::embed::Embedded {
            name: "main.k".into(),
            source: source.to_string(),
            options: vec![("params".into(), params(&request))],
            step_limit: None,
            // wasmtime's own stack for the guest's calls (512 KiB) runs out
            // before the guest's 1 MiB: KCL's recursion error must come first.
            stack_budget: Some(STACK_BUDGET),
        };
        let mut response = Response::from_request(&request);
        let output = match plait_kcl::embed::run(&program) {
            Ok(output) => output,
            Err(error) => {
                response.fatal(error.render());
                return Ok(response);
            }
        };
        if !output.logs.is_empty() {
            plait_sdk::log(LogLevel::Info, output.logs.trim_end());
        }
        for item in items(output.documents) {
            match resource_name(&item) {
                Some(name) => {
                    response.set_resource(name, item);
                }
                None => {
                    response.fatal(format!(
                        "a resource the KCL program output has no metadata.name: {item}"
                    ));
                    return Ok(response);
                }
            }
        }
        Ok(response)
    }
}

/// `option("params")` as function-kcl builds it from the request.
fn params(request: &Request) -> Value {
    let composite = |state: &State| {
        state
            .composite
            .as_ref()
            .map_or_else(|| json!({}), |r| r.resource.clone())
    };
    let composed = |state: &State| {
        state
            .resources
            .iter()
            .map(|(name, r): (&String, &Resource)| (name.clone(), json!({"Resource": r.resource})))
            .collect::<Map<String, Value>>()
    };
    json!({
        "oxr": composite(&request.observed),
        "ocds": composed(&request.observed),
        "dxr": composite(&request.desired),
        "dcds": composed(&request.desired),
        "ctx": request.context,
    })
}

/// The resources a program composes: its `items` when its one document
/// has them, else its documents.
fn items(mut documents: Vec<Value>) -> Vec<Value> {
    if let [Value::Object(document)] = documents.as_mut_slice()
        && let Some(Value::Array(items)) = document.remove("items")
    {
        return items;
    }
    documents
}

fn resource_name(item: &Value) -> Option<String> {
    let metadata = item.get("metadata")?;
    metadata
        .get("annotations")
        .and_then(|a| a.get(RESOURCE_NAME_ANNOTATION))
        .or_else(|| metadata.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

plait_sdk::export_function!(KclEval);
