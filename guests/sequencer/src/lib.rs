//! function-sequencer, as a plait function.
//!
//! Each rule's `sequence` lists composed resource names (regular
//! expressions, anchored unless they already start with `^` or end with
//! `$`). A resource not yet observed is left out of the desired state
//! until every desired resource matching each name before it in the
//! sequence is ready, so Crossplane creates them in order. With
//! `enableDeletionSequencing`, observed neighbours in a sequence get a
//! Usage each, so Crossplane deletes them in reverse order.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod condition;
mod input;
mod usage;

use std::collections::BTreeMap;

use plait_go_compat::duration::parse_go_duration;
use plait_go_compat::input::get_input;
use plait_go_compat::regexp::compile_regexp;
use plait_go_compat::strconv::quote;
use plait_sdk::{Function, FunctionError, Ready, Request, Resource, Response};
use regex::Regex;

pub use condition::ConditionError;
use input::{Input, UsageVersion};

pub use plait_go_compat::response::DEFAULT_TTL;

/// The `function-sequencer` built-in.
pub struct Sequencer;

/// Why the step failed; the message becomes a fatal result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("cannot get Function input from *v1.RunFunctionRequest: {0}")]
    Input(String),
    #[error("cannot set cacheTTL: {0}")]
    CacheTtl(String),
    #[error("cannot evaluate condition {} for sequence {}: {source}", quote(.condition), go_list(.sequence))]
    Condition {
        condition: String,
        sequence: Vec<String>,
        source: ConditionError,
    },
    #[error("cannot generate usages for sequence: cannot compile regex {pattern}: {reason}")]
    UsageRegex { pattern: String, reason: String },
    #[error("cannot compile regex {pattern}: {reason}")]
    Regex { pattern: String, reason: String },
}

/// A list as Go's `%v` prints a slice of strings: `[first second]`.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

impl Function for Sequencer {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut response = Response::from_request(&request);
        response.ttl = Some(DEFAULT_TTL);
        if let Err(e) = sequence(&request, &mut response) {
            // Upstream answers a failure with the request's desired state untouched.
            response.desired = request.desired.clone();
            response.fatal(e.to_string());
        }
        Ok(response)
    }
}

fn sequence(request: &Request, response: &mut Response) -> Result<(), Error> {
    let input: Input = get_input(request.input.as_ref(), "v1beta1.Input").map_err(Error::Input)?;
    if let Some(ttl) = input.cache_ttl.as_deref().filter(|ttl| !ttl.is_empty()) {
        response.ttl = Some(parse_go_duration(ttl).map_err(|e| Error::CacheTtl(e.to_string()))?);
    }
    let usage_version = input.usage_version();
    let replay_deletion = input.replay_deletion.unwrap_or(false);
    let observed = &request.observed.resources;
    let mut desired = std::mem::take(&mut response.desired.resources);
    let mut usages = BTreeMap::new();

    for rule in input.rules.iter().flatten() {
        let sequence = rule.sequence.as_deref().unwrap_or_default();
        let condition = rule.condition.as_deref().unwrap_or_default();
        let mut skip = false;
        if !condition.is_empty() {
            let holds =
                condition::holds(request, condition).map_err(|source| Error::Condition {
                    condition: condition.to_string(),
                    sequence: sequence.to_vec(),
                    source,
                })?;
            if !holds {
                response.normal(format!(
                    "Skipping sequence {}: condition {} evaluated to false",
                    go_list(sequence),
                    quote(condition)
                ));
                skip = true;
            }
        }
        // Deletion order holds whether or not the condition does.
        if input.enable_deletion_sequencing == Some(true) {
            add_usages(
                sequence,
                request,
                &desired,
                &mut usages,
                replay_deletion,
                usage_version,
            )?;
        }
        if skip || rule.delete_only == Some(true) {
            continue;
        }
        for (position, name) in sequence.iter().enumerate().skip(1) {
            if observed.contains_key(name) {
                continue;
            }
            for before in &sequence[..position] {
                let before_pattern = anchored(before)?;
                let matching: Vec<&Resource> = desired
                    .iter()
                    .filter(|(key, _)| before_pattern.is_match(key))
                    .map(|(_, resource)| resource)
                    .collect();
                let ready = matching.iter().filter(|r| r.ready == Ready::True).count();
                let current_pattern = anchored(name)?;
                if !matching.is_empty() && ready == matching.len() {
                    continue;
                }
                response.normal(if matching.is_empty() {
                    format!(
                        "Delaying creation of resource(s) matching {} because {} does not exist yet",
                        quote(name),
                        quote(before)
                    )
                } else {
                    format!(
                        "Delaying creation of resource(s) matching {} because {} is not fully ready ({ready} of {})",
                        quote(name),
                        quote(before),
                        matching.len()
                    )
                });
                let held_back: Vec<String> = desired
                    .keys()
                    .filter(|key| current_pattern.is_match(key) && !observed.contains_key(*key))
                    .cloned()
                    .collect();
                for key in held_back {
                    desired.remove(&key);
                    if input.reset_composite_readiness == Some(true) {
                        response.set_composite_ready(Ready::False);
                    }
                }
                break;
            }
        }
    }
    desired.extend(usages);
    response.desired.resources = desired;
    Ok(())
}

/// A sequence entry as a regular expression matching whole names, unless
/// it is already anchored at either end.
fn anchored(pattern: &str) -> Result<Regex, Error> {
    let anchored = if pattern.starts_with('^') || pattern.ends_with('$') {
        pattern.to_string()
    } else {
        format!("^{pattern}$")
    };
    compile_regexp(&anchored).map_err(|reason| Error::Regex {
        pattern: anchored,
        reason,
    })
}

/// A Usage for every observed resource matching a sequence entry, of each
/// observed resource matching the entry before it that is still desired.
fn add_usages(
    sequence: &[String],
    request: &Request,
    desired: &BTreeMap<String, Resource>,
    usages: &mut BTreeMap<String, Resource>,
    replay_deletion: bool,
    version: UsageVersion,
) -> Result<(), Error> {
    let observed = &request.observed.resources;
    for pair in sequence.windows(2) {
        let compile = |pattern: &str| {
            anchored(pattern).map_err(|e| match e {
                Error::Regex { pattern, reason } => Error::UsageRegex { pattern, reason },
                other => other,
            })
        };
        let by_pattern = compile(&pair[1])?;
        let of_pattern = compile(&pair[0])?;
        for (by_name, by) in observed {
            if !by_pattern.is_match(by_name) || usage::is_usage(&by.resource, version) {
                continue;
            }
            for of_name in desired.keys().filter(|key| of_pattern.is_match(key)) {
                if let Some(of) = observed.get(of_name) {
                    let object = usage::usage(&of.resource, &by.resource, replay_deletion, version);
                    usages.insert(
                        format!("{by_name}-{of_name}-usage"),
                        Resource {
                            resource: object,
                            ready: Ready::True,
                            ..Resource::default()
                        },
                    );
                }
            }
        }
    }
    Ok(())
}

plait_sdk::export_function!(Sequencer);

#[cfg(test)]
mod tests;
