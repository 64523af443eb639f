//! function-cidr, as a plait function.
//!
//! Computes one of Terraform's CIDR functions (`cidrhost`, `cidrnetmask`,
//! `cidrsubnet`, `cidrsubnets`) or upstream's loops over them
//! (`cidrsubnetloop`, `multiprefixloop`) from the input or from fields of
//! the XR, the desired state or the pipeline context, and writes the result
//! into the desired XR (by default at `status.atFunction.cidr`).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod input;
mod net;

use std::collections::BTreeMap;

use plait_go_compat::field::{Error as FieldError, Path};
use plait_go_compat::fieldpath::{self, FieldPathError};
use plait_go_compat::input::get_input;
use plait_go_compat::json::unmarshal_type_error;
use plait_go_compat::printf::format_v;
use plait_sdk::{Function, FunctionError, Request, Response};
use serde_json::{Map, Value};

use input::{MultiPrefix, Parameters, text};
pub use net::{CidrError, Network};

pub use plait_go_compat::response::DEFAULT_TTL;

/// Where the result goes when `outputField` is empty.
pub const DEFAULT_OUTPUT_FIELD: &str = "status.atFunction.cidr";

/// The `function-cidr` built-in.
pub struct Cidr;

/// Why the step failed; the message becomes a fatal result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("cannot get Function input: {0}")]
    Input(String),
    #[error("invalid Function input: {0}")]
    Invalid(FieldError),
    #[error("cannot get {what} from field {field} {preposition} {kind}: {reason}")]
    Field {
        what: &'static str,
        field: String,
        preposition: &'static str,
        kind: String,
        reason: String,
    },
    #[error("cannot calculate {what} for {kind}: {source}")]
    Calculate {
        what: &'static str,
        kind: String,
        source: CidrError,
    },
    #[error("cannot calculate {what} for {kind}: newBits is empty")]
    NoNewBits { what: &'static str, kind: String },
    #[error("cannot set field {field} to {value} for {kind}: {source}")]
    Set {
        field: String,
        value: String,
        kind: String,
        source: FieldPathError,
    },
}

impl Function for Cidr {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut response = Response::from_request(&request);
        response.ttl = Some(DEFAULT_TTL);
        match compute(&request) {
            Ok(composite) => {
                let desired = response.composite_mut();
                desired.resource = composite;
            }
            Err(e) => {
                response.fatal(e.to_string());
            }
        }
        Ok(response)
    }
}

fn parameters_error(detail: impl Into<String>) -> Error {
    Error::Invalid(FieldError::required(Path::new("parameters"), detail))
}

/// What the computation reads: the observed XR, the request, the input.
struct Sources<'a> {
    observed: &'a Value,
    request: &'a Request,
    kind: String,
}

impl Sources<'_> {
    fn field_error(
        &self,
        what: &'static str,
        field: &str,
        preposition: &'static str,
    ) -> impl Fn(String) -> Error {
        let (field, kind) = (field.to_string(), self.kind.clone());
        move |reason| Error::Field {
            what,
            field: field.clone(),
            preposition,
            kind: kind.clone(),
            reason,
        }
    }

    fn string(&self, path: &str) -> Result<String, String> {
        fieldpath::get_string(self.observed, path)
            .map(str::to_string)
            .map_err(|e| e.to_string())
    }

    /// crossplane-runtime's `Paved.GetInteger`: a whole number.
    fn integer(&self, path: &str) -> Result<i64, String> {
        let value = fieldpath::get_value(self.observed, path).map_err(|e| e.to_string())?;
        whole_number(value).ok_or_else(|| format!("{path}: not a (int64) number"))
    }

    /// crossplane-runtime's `Paved.GetValueInto`, for a Go `[]int`.
    fn integers(&self, path: &str) -> Result<Vec<i64>, String> {
        let value = fieldpath::get_value(self.observed, path).map_err(|e| e.to_string())?;
        go_ints(value)
    }

    /// The prefix at `prefixField`: a field of the XR, of the desired XR
    /// (`desired.composite.resource.…`) or of a desired composed resource
    /// (`desired.resources.<name>.resource.…`), or a gjson path into the
    /// pipeline context (`context.…`).
    fn prefix_field(&self, field: &str) -> Result<String, String> {
        if field.starts_with("desired.") {
            if field.starts_with("desired.composite.") {
                let desired = self
                    .request
                    .desired
                    .composite
                    .as_ref()
                    .map_or(&Value::Null, |c| &c.resource);
                let kind = kind_of(desired);
                let path = field.replacen("desired.composite.resource.", "", 1);
                return get_string_or_empty(desired, &path)
                    .map_err(|e| format!("cannot get prefix from field {field} for {kind}: {e}"));
            }
            if let Some(rest) = field.strip_prefix("desired.resources.") {
                let keys = extract_keys(rest);
                let name = keys.first().cloned().unwrap_or_default();
                let Some(composed) = self.request.desired.resources.get(&name) else {
                    return Err(format!(
                        "No composed resource with name {name} found for field {field}"
                    ));
                };
                let path = field.replacen(&format!("desired.resources.{name}.resource."), "", 1);
                return get_string_or_empty(&composed.resource, &path).map_err(|e| {
                    format!(
                        "cannot get prefix for resource with name {name} from field {field}: {e}"
                    )
                });
            }
            return Ok(String::new());
        }
        if let Some(path) = field.strip_prefix("context.") {
            return match gjson_get(&self.request.context, path) {
                Some(value) => Ok(value.as_str().unwrap_or_default().to_string()),
                None => Err(format!(
                    "Failed to extract value for {path} from json context {}",
                    plait_sdk::json_text(&self.request.context)
                )),
            };
        }
        self.string(field).map_err(|e| {
            format!(
                "cannot get prefix from field {field} for {}: {e}",
                self.kind
            )
        })
    }
}

fn get_string_or_empty(object: &Value, path: &str) -> Result<String, FieldPathError> {
    let empty = Value::Object(Map::new());
    let object = if object.is_null() { &empty } else { object };
    fieldpath::get_string(object, path).map(str::to_string)
}

fn kind_of(object: &Value) -> String {
    object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A JSON number that is whole, as Kubernetes' JSON decoding makes it an int64.
fn whole_number(value: &Value) -> Option<i64> {
    let number = value.as_number()?;
    number.as_i64().or_else(|| {
        let f = number.as_f64()?;
        (f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64).then_some(f as i64)
    })
}

/// encoding/json decoding `value` into a Go `int`.
fn go_int(value: &Value) -> Result<i64, String> {
    match value {
        Value::Number(n) => whole_number(value)
            .ok_or_else(|| format!("json: cannot unmarshal number {n} into Go value of type int")),
        other => Err(unmarshal_type_error(other, "int")),
    }
}

/// encoding/json decoding `value` into a Go `[]int`; `null` is an empty slice.
fn go_ints(value: &Value) -> Result<Vec<i64>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items.iter().map(go_int).collect(),
        other => Err(unmarshal_type_error(other, "[]int")),
    }
}

/// encoding/json decoding `value` into a Go `[]string`.
fn go_strings(value: &Value) -> Result<Vec<String>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(unmarshal_type_error(other, "string")),
            })
            .collect(),
        other => Err(unmarshal_type_error(other, "[]string")),
    }
}

/// encoding/json decoding `value` into a Go `[]v1beta1.MultiPrefix`: member
/// names match case-insensitively, unknown ones are ignored.
fn go_multi_prefixes(value: &Value) -> Result<Vec<MultiPrefix>, String> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => return Err(unmarshal_type_error(other, "[]v1beta1.MultiPrefix")),
    };
    items
        .iter()
        .map(|item| {
            let members = match item {
                Value::Null => return Ok(MultiPrefix::default()),
                Value::Object(members) => members,
                other => return Err(unmarshal_type_error(other, "v1beta1.MultiPrefix")),
            };
            let mut prefix = MultiPrefix::default();
            for (name, value) in members {
                match name.to_ascii_lowercase().as_str() {
                    "prefix" => match value {
                        Value::String(s) => prefix.prefix = Some(s.clone()),
                        Value::Null => {}
                        other => return Err(unmarshal_type_error(other, "string")),
                    },
                    "newbits" => prefix.new_bits = Some(go_ints(value)?),
                    "offset" if !value.is_null() => prefix.offset = Some(go_int(value)?),
                    _ => {}
                }
            }
            Ok(prefix)
        })
        .collect()
}

/// Splits a dotted path, a part in single quotes staying whole.
fn extract_keys(path: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut key = String::new();
    let mut quoted = false;
    for c in path.chars() {
        match c {
            '\'' => quoted = !quoted,
            '.' if !quoted => keys.push(std::mem::take(&mut key)),
            c => key.push(c),
        }
    }
    if !key.is_empty() {
        keys.push(key);
    }
    keys
}

/// A gjson path's plain form: keys separated by `.`, `\` escaping the next
/// character, a number indexing an array.
fn gjson_get<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => part.extend(chars.next()),
            '.' => parts.push(std::mem::take(&mut part)),
            c => part.push(c),
        }
    }
    parts.push(part);
    parts.iter().try_fold(value, |value, part| match value {
        Value::Object(members) => members.get(part),
        Value::Array(items) => items.get(part.parse::<usize>().ok()?),
        _ => None,
    })
}

fn compute(request: &Request) -> Result<Value, Error> {
    let input: Parameters =
        get_input(request.input.as_ref(), "v1beta1.Parameters").map_err(Error::Input)?;
    let empty = Value::Object(Map::new());
    let observed = request
        .observed
        .composite
        .as_ref()
        .map(|c| &c.resource)
        .filter(|r| !r.is_null())
        .unwrap_or(&empty);
    let sources = Sources {
        observed,
        request,
        kind: kind_of(observed),
    };
    validate(&input, &sources)?;

    let mut composite = match request.desired.composite.as_ref().map(|c| &c.resource) {
        Some(Value::Object(members)) => Value::Object(members.clone()),
        _ => Value::Object(Map::new()),
    };
    for key in ["apiVersion", "kind"] {
        let value = observed
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default();
        composite[key] = value.into();
    }

    let cidr_func = match text(&input.cidr_func_field) {
        "" => text(&input.cidr_func).to_string(),
        field => sources.string(field).map_err(sources.field_error(
            "cidrFunc",
            text(&input.cidr_func),
            "for",
        ))?,
    };
    let mut prefix = text(&input.prefix).to_string();
    let prefix_field = text(&input.prefix_field);
    if cidr_func != "multiprefixloop" && !prefix_field.is_empty() {
        prefix = sources
            .prefix_field(prefix_field)
            .map_err(sources.field_error("prefix", prefix_field, "for"))?;
    }
    let kind = sources.kind.clone();
    let calculate = |what: &'static str| {
        let kind = kind.clone();
        move |source: CidrError| Error::Calculate {
            what,
            kind: kind.clone(),
            source,
        }
    };
    let new_bits = || -> Result<Vec<i64>, Error> {
        match text(&input.new_bits_field) {
            "" => Ok(input.new_bits.clone().unwrap_or_default()),
            field => sources
                .integers(field)
                .map_err(sources.field_error("newbits", field, "of")),
        }
    };
    let first = |bits: &[i64], what: &'static str| {
        bits.first().copied().ok_or_else(|| Error::NoNewBits {
            what,
            kind: kind.clone(),
        })
    };

    let output = match cidr_func.as_str() {
        "cidrhost" => {
            let number = match text(&input.host_num_field) {
                "" => input.host_num.unwrap_or_default(),
                field => sources
                    .integer(field)
                    .map_err(sources.field_error("hostnum", field, "for"))?,
            };
            let network = Network::parse(&prefix).map_err(calculate("CIDR host number"))?;
            Value::String(
                network
                    .host(number)
                    .map_err(calculate("CIDR host number"))?,
            )
        }
        "cidrnetmask" => {
            let network = Network::parse(&prefix).map_err(calculate("CIDR netmask"))?;
            Value::String(network.netmask())
        }
        "cidrsubnet" => {
            let bits = new_bits()?;
            let number = match text(&input.net_num_field) {
                "" => input.net_num.unwrap_or_default(),
                field => sources
                    .integer(field)
                    .map_err(sources.field_error("netnum", field, "for"))?,
            };
            let bits = first(&bits, "subnet CIDR")?;
            let network = Network::parse(&prefix).map_err(calculate("subnet CIDR"))?;
            let subnet = network
                .subnet(bits, number)
                .map_err(calculate("subnet CIDR"))?;
            Value::String(subnet.to_string())
        }
        "cidrsubnets" => {
            let bits = new_bits()?;
            let network = Network::parse(&prefix).map_err(calculate("Subnet CIDRs"))?;
            // No bits: upstream writes a nil slice, which is null.
            if bits.is_empty() {
                Value::Null
            } else {
                strings(network.subnets(&bits).map_err(calculate("Subnet CIDRs"))?)
            }
        }
        "cidrsubnetloop" => {
            let bits = new_bits()?;
            let offset = match text(&input.offset_field) {
                "" => input.offset.unwrap_or_default(),
                field => sources
                    .integer(field)
                    .map_err(sources.field_error("offset", field, "for"))?,
            };
            let items = match text(&input.net_num_items_field) {
                "" => input.net_num_items.clone().unwrap_or_default(),
                field => fieldpath::get_value(observed, field)
                    .map_err(|e| e.to_string())
                    .and_then(go_strings)
                    .map_err(sources.field_error("netnumitems", field, "for"))?,
            };
            let mut count = input
                .net_num_count
                .unwrap_or_default()
                .max(i64::try_from(items.len()).unwrap_or(i64::MAX));
            let count_field = text(&input.net_num_count_field);
            if !count_field.is_empty() {
                count = sources.integer(count_field).map_err(sources.field_error(
                    "netnumcount",
                    count_field,
                    "for",
                ))?;
            }
            let mut subnets = Vec::new();
            for number in 0..count {
                let bits = first(&bits, "subnet CIDR")?;
                let network = Network::parse(&prefix).map_err(calculate("subnet CIDR"))?;
                let subnet = network
                    .subnet(bits, number.saturating_add(offset))
                    .map_err(calculate("subnet CIDR"))?;
                subnets.push(subnet);
            }
            // No iterations: upstream writes a nil slice, which is null.
            if subnets.is_empty() {
                Value::Null
            } else {
                strings(subnets)
            }
        }
        "multiprefixloop" => {
            let prefixes = multi_prefixes(&input, &sources)?;
            let mut by_prefix = BTreeMap::new();
            for multi in prefixes {
                let prefix = text(&multi.prefix);
                let mut bits = multi.new_bits.clone().unwrap_or_default();
                if prefix.is_empty() || bits.is_empty() {
                    continue;
                }
                let offset = multi.offset.unwrap_or_default();
                if offset > 0 {
                    bits.insert(0, offset);
                }
                let network = Network::parse(prefix).map_err(calculate("Subnet CIDRs"))?;
                let mut subnets = network.subnets(&bits).map_err(calculate("Subnet CIDRs"))?;
                if offset > 0 {
                    subnets.remove(0);
                }
                by_prefix.insert(prefix.to_string(), strings(subnets));
            }
            Value::Object(by_prefix.into_iter().collect())
        }
        // Validation refused every other name.
        _ => return Ok(composite),
    };

    let field = match text(&input.output_field) {
        "" => DEFAULT_OUTPUT_FIELD,
        field => field,
    };
    let shown = match &output {
        Value::String(s) => s.clone(),
        other => format_v(other),
    };
    fieldpath::set_value(&mut composite, field, output).map_err(|source| Error::Set {
        field: field.to_string(),
        value: shown,
        kind: sources.kind.clone(),
        source,
    })?;
    Ok(composite)
}

fn strings(networks: Vec<Network>) -> Value {
    Value::Array(
        networks
            .into_iter()
            .map(|n| Value::String(n.to_string()))
            .collect(),
    )
}

fn multi_prefixes(input: &Parameters, sources: &Sources<'_>) -> Result<Vec<MultiPrefix>, Error> {
    let from_input = input.multi_prefix.clone().unwrap_or_default();
    match text(&input.multi_prefix_field) {
        field if !field.is_empty() && from_input.is_empty() => {
            fieldpath::get_value(sources.observed, field)
                .map_err(|e| e.to_string())
                .and_then(go_multi_prefixes)
                .map_err(|_| {
                    parameters_error(format!(
                        "cannot get multiPrefixes at multiPrefixField {field}"
                    ))
                })
        }
        _ => Ok(from_input),
    }
}

/// Upstream's `ValidateParameters`: every message is a Required error on
/// `parameters`.
fn validate(input: &Parameters, sources: &Sources<'_>) -> Result<(), Error> {
    let cidr_func = match text(&input.cidr_func_field) {
        "" => text(&input.cidr_func).to_string(),
        field => sources.string(field).map_err(|_| {
            parameters_error(format!("cannot get cidrFunc at cidrFuncField {field}"))
        })?,
    };
    if cidr_func != "multiprefixloop" {
        validate_prefix(input, sources)?;
    }
    let new_bits = input.new_bits.as_deref().unwrap_or_default();
    let new_bits_field = text(&input.new_bits_field);
    match cidr_func.as_str() {
        "" => Err(parameters_error("cidrFunc is required")),
        "cidrhost" => {
            let host_num = input.host_num.unwrap_or_default();
            let field = text(&input.host_num_field);
            if host_num > 0 && !field.is_empty() {
                return Err(parameters_error(
                    "specify only one of hostnum or hostnumfield to avoid ambiguous function input",
                ));
            }
            if host_num == 0 {
                if field.is_empty() {
                    return Err(parameters_error(
                        "either hostnum or hostnumfield function input is required",
                    ));
                }
                sources.integer(field).map_err(|_| {
                    parameters_error(format!("cannot get hostnum at hostnumfield {field}"))
                })?;
            }
            Ok(())
        }
        "cidrnetmask" => Ok(()),
        "cidrsubnet" => {
            if !new_bits.is_empty() && !new_bits_field.is_empty() {
                return Err(parameters_error(
                    "specify only one of newbits or newbitsfield to avoid ambiguous function input",
                ));
            }
            if new_bits.is_empty() && new_bits_field.is_empty() {
                return Err(parameters_error(
                    "either newbits or newbitsfield function input is required",
                ));
            }
            if new_bits_field.is_empty() && new_bits.len() != 1 {
                return Err(parameters_error(
                    "cidrFunc cidrsubnet requires exactly 1 parameter in the array",
                ));
            }
            if input.net_num.unwrap_or_default() > 0 && !text(&input.net_num_field).is_empty() {
                return Err(parameters_error(
                    "cidrFunc cidrsubnet requires either one of netnum or netnumfield",
                ));
            }
            Ok(())
        }
        "cidrsubnets" => {
            if !new_bits.is_empty() && !new_bits_field.is_empty() {
                return Err(parameters_error(
                    "cidrFunc cidrsubnets requires either one of newbits or newbitsfield",
                ));
            }
            if !new_bits_field.is_empty() {
                sources.integers(new_bits_field).map_err(|_| {
                    parameters_error(format!(
                        "cannot get newbits at newbitsfield {new_bits_field}"
                    ))
                })?;
            }
            Ok(())
        }
        "cidrsubnetloop" => validate_subnet_loop(input),
        "multiprefixloop" => {
            let from_input = input.multi_prefix.as_deref().unwrap_or_default();
            let field = text(&input.multi_prefix_field);
            if !from_input.is_empty() && !field.is_empty() {
                return Err(parameters_error(
                    "specify only one of multiPrefix or multiPrefixField to avoid ambiguous function input",
                ));
            }
            if from_input.is_empty() && field.is_empty() {
                return Err(parameters_error(
                    "either multiPrefix or multiPrefixField function input is required",
                ));
            }
            for multi in multi_prefixes(input, sources)? {
                let prefix = text(&multi.prefix);
                if Network::parse(prefix).is_err() {
                    return Err(parameters_error(format!(
                        "invalid CIDR prefix address {prefix}"
                    )));
                }
                if multi.new_bits.as_deref().unwrap_or_default().is_empty() {
                    return Err(parameters_error(
                        "newBits is required for each prefix in multiPrefixField",
                    ));
                }
            }
            Ok(())
        }
        other => Err(parameters_error(format!("unexpected cidrFunc {other}"))),
    }
}

fn validate_prefix(input: &Parameters, sources: &Sources<'_>) -> Result<(), Error> {
    let mut prefix = text(&input.prefix).to_string();
    let field = text(&input.prefix_field);
    if !prefix.is_empty() && !field.is_empty() {
        return Err(parameters_error(
            "specify only one of prefix or prefixField to avoid ambiguous function input",
        ));
    }
    if prefix.is_empty() {
        if field.is_empty() {
            return Err(parameters_error(
                "either prefix or prefixField function input is required",
            ));
        }
        prefix = sources.prefix_field(field).map_err(|e| {
            parameters_error(format!("cannot get prefix at prefixField {field}: {e}"))
        })?;
    }
    Network::parse(&prefix)
        .map(|_| ())
        .map_err(|_| parameters_error(format!("invalid CIDR prefix address {prefix}")))
}

fn validate_subnet_loop(input: &Parameters) -> Result<(), Error> {
    let count = input.net_num_count.unwrap_or_default();
    let count_field = text(&input.net_num_count_field);
    let items = input.net_num_items.as_deref().unwrap_or_default();
    let items_field = text(&input.net_num_items_field);
    if count > 0 && !count_field.is_empty() {
        return Err(parameters_error(
            "cidrFunc cidrsubnetloop requires either one of netnumcount or netnumcountfield, \
             but only if nonetnumitems or netnumitemsfield have been specified",
        ));
    }
    if !items.is_empty() && !items_field.is_empty() {
        return Err(parameters_error(
            "cidrFunc cidrsubnetloop requires either one of netnumitems or netnumitemsfield, \
             but only if nonetnumcount or netnumcountfield have been specified",
        ));
    }
    let count_given = count > 0 || !count_field.is_empty();
    let items_given = !items.is_empty() || !items_field.is_empty();
    if count_given && items_given {
        return Err(parameters_error(
            "cidrFunc cidrsubnetloop requires either one of netnumitems or netnumitemsfield, \
             or mutually exclusive one of netnumcount or netnumcountfield, but not both counts and items",
        ));
    }
    if !input.new_bits.as_deref().unwrap_or_default().is_empty()
        && !text(&input.new_bits_field).is_empty()
    {
        return Err(parameters_error(
            "cidrFunc cidrsubnetloop requires either one of newbits or newbitsfield",
        ));
    }
    if input.offset.unwrap_or_default() > 0 && !text(&input.offset_field).is_empty() {
        return Err(parameters_error(
            "cidrFunc cidrsubnetloop requires either one of offset or offsetfield",
        ));
    }
    Ok(())
}

plait_sdk::export_function!(Cidr);

#[cfg(test)]
mod tests;
