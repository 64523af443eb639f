//! What a CompositionRevision records of the functions its steps ran: per
//! step, the Function and the digest it resolved to when the revision was
//! made, so that every XR of the revision composes with those digests
//! whatever the Function resolves to later.
//!
//! The record is an annotation holding JSON, so a revision keeps upstream's
//! schema (tools that read CompositionRevisions see nothing new in `spec`
//! or `status`), it is written in the same request that creates the
//! revision (no XR ever sees a revision without it), and it survives a
//! backup and restore, which a status would not.

use std::collections::BTreeMap;

use plait_pipeline::Step;
use plait_runtime::Builtin;
use serde_json::{Map, Value, json};

/// The annotation on a CompositionRevision that records its steps' functions.
pub const DIGESTS_ANNOTATION: &str = "functions.plait.dev/digests";

#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("annotation {DIGESTS_ANNOTATION} is not a JSON object of steps: {message}")]
    Malformed { message: String },
    #[error(
        "annotation {DIGESTS_ANNOTATION}: steps {first:?} and {second:?} both run function {function:?} but record different digests"
    )]
    Disagree {
        function: String,
        first: String,
        second: String,
    },
}

/// Where a recorded function's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinnedSource {
    /// An OCI package: the reference pinned to its manifest digest
    /// (`registry/repository@sha256:…`), which any host can pull again.
    Package { pinned: String },
    /// A function built into plait: it runs the component of this plait
    /// binary, so it moves with plait upgrades, not with Function objects.
    Builtin(Builtin),
}

/// What one step's function resolved to when the revision was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The step's `functionRef.name`.
    pub function: String,
    /// The package's manifest digest, or the built-in component's digest.
    pub digest: String,
    pub source: PinnedSource,
}

impl Pin {
    fn to_json(&self) -> Value {
        let mut entry = json!({"function": self.function, "digest": self.digest});
        match &self.source {
            PinnedSource::Package { pinned } => entry["package"] = json!(pinned),
            PinnedSource::Builtin(builtin) => entry["builtin"] = json!(builtin.name()),
        }
        entry
    }

    fn from_json(step: &str, entry: &Value) -> Result<Pin, PinError> {
        let field = |name: &str| entry.get(name).and_then(Value::as_str);
        let malformed = |what: &str| PinError::Malformed {
            message: format!("step {step:?}: {what}"),
        };
        let function = field("function").ok_or_else(|| malformed("no function"))?;
        let digest = field("digest").ok_or_else(|| malformed("no digest"))?;
        let source = match (field("package"), field("builtin")) {
            (Some(pinned), None) => PinnedSource::Package {
                pinned: pinned.to_string(),
            },
            (None, Some(name)) => PinnedSource::Builtin(
                Builtin::from_name(name)
                    .ok_or_else(|| malformed(&format!("{name:?} is not built into plait")))?,
            ),
            _ => return Err(malformed("exactly one of package and builtin is needed")),
        };
        Ok(Pin {
            function: function.to_string(),
            digest: digest.to_string(),
            source,
        })
    }
}

/// The functions a revision's steps ran, by step name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins(pub BTreeMap<String, Pin>);

impl Pins {
    /// What `revision` records; nothing when it has no annotation (a
    /// revision made before plait recorded digests).
    pub fn of_revision(revision: &Value) -> Result<Pins, PinError> {
        let pointer = plait_reconcile::pointer::annotation(DIGESTS_ANNOTATION);
        let Some(text) = revision.pointer(&pointer).and_then(Value::as_str) else {
            return Ok(Pins::default());
        };
        Pins::parse(text)
    }

    /// The annotation's value parsed.
    pub fn parse(text: &str) -> Result<Pins, PinError> {
        let value: Value = serde_json::from_str(text).map_err(|e| PinError::Malformed {
            message: e.to_string(),
        })?;
        let Value::Object(steps) = value else {
            return Err(PinError::Malformed {
                message: "not an object".into(),
            });
        };
        let mut pins = BTreeMap::new();
        for (step, entry) in &steps {
            pins.insert(step.clone(), Pin::from_json(step, entry)?);
        }
        Ok(Pins(pins))
    }

    /// The annotation's value: compact JSON with steps in name order, so
    /// the same pins always read the same.
    pub fn annotation(&self) -> String {
        let steps: Map<String, Value> = self
            .0
            .iter()
            .map(|(step, pin)| (step.clone(), pin.to_json()))
            .collect();
        Value::Object(steps).to_string()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The package digests by step: what distinguishes one revision from
    /// another made of the same Composition. Built-ins are left out: they
    /// change only with plait itself, and a Composition that runs only
    /// built-ins keeps upstream's revision hash.
    pub fn package_digests(&self) -> BTreeMap<&str, &str> {
        self.0
            .iter()
            .filter(|(_, pin)| matches!(pin.source, PinnedSource::Package { .. }))
            .map(|(step, pin)| (step.as_str(), pin.digest.as_str()))
            .collect()
    }

    /// The pin `function` runs with among `steps`: the one recorded for
    /// the steps that name it (a record naming another function, as after
    /// a hand edit, does not count). `None` when no step of it is recorded.
    pub fn for_function(&self, function: &str, steps: &[Step]) -> Result<Option<&Pin>, PinError> {
        let mut found: Option<(&str, &Pin)> = None;
        for step in steps.iter().filter(|s| s.function == function) {
            let Some(pin) = self.0.get(&step.name).filter(|p| p.function == function) else {
                continue;
            };
            match found {
                Some((first, earlier)) if earlier.digest != pin.digest => {
                    return Err(PinError::Disagree {
                        function: function.to_string(),
                        first: first.to_string(),
                        second: step.name.clone(),
                    });
                }
                Some(_) => {}
                None => found = Some((&step.name, pin)),
            }
        }
        Ok(found.map(|(_, pin)| pin))
    }
}

/// What `function` resolves to now, as a revision would record it, given
/// its Function object (`None` when there is none): a built-in, or the
/// digest its Function controller installed and reported Healthy. `None`
/// while that is not known (the Function is not installed or not
/// healthy, or names no built-in and does not exist).
pub fn current_pin(function: &str, object: Option<&Value>) -> Option<Pin> {
    let builtin = |builtin: Builtin| Pin {
        function: function.to_string(),
        digest: builtin.digest().to_string(),
        source: PinnedSource::Builtin(builtin),
    };
    let Some(object) = object else {
        return Builtin::from_name(function).map(builtin);
    };
    if let Some(found) = Builtin::from_package(package_of(object)) {
        return Some(builtin(found));
    }
    let healthy = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Healthy" && c["status"] == "True");
    let digest = object.pointer("/status/resolvedDigest")?.as_str()?;
    let pinned = object.pointer("/status/resolvedPackage")?.as_str()?;
    healthy.then(|| Pin {
        function: function.to_string(),
        digest: digest.to_string(),
        source: PinnedSource::Package {
            pinned: pinned.to_string(),
        },
    })
}

/// The package a Function object names.
pub fn package_of(function: &Value) -> &str {
    function
        .pointer("/spec/package")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn step(name: &str, function: &str) -> Step {
        Step {
            name: name.into(),
            function: function.into(),
            ..Step::default()
        }
    }

    fn package(function: &str, digest: &str) -> Pin {
        Pin {
            function: function.into(),
            digest: digest.into(),
            source: PinnedSource::Package {
                pinned: format!("r.io/{function}@{digest}"),
            },
        }
    }

    fn function(package: &str, status: Value) -> Value {
        json!({"metadata": {"name": "fn"}, "spec": {"package": package}, "status": status})
    }

    #[test]
    fn pins_round_trip_through_the_annotation() {
        let pins = Pins(BTreeMap::from([
            ("compose".to_string(), package("fn-a", "sha256:a")),
            (
                "ready".to_string(),
                current_pin("function-auto-ready", None).unwrap(),
            ),
        ]));
        let text = pins.annotation();
        assert_eq!(Pins::parse(&text).unwrap(), pins);
        let revision = json!({"metadata": {"annotations": {DIGESTS_ANNOTATION: text}}});
        assert_eq!(Pins::of_revision(&revision).unwrap(), pins);
        assert_eq!(
            Pins::of_revision(&json!({"metadata": {}})).unwrap(),
            Pins::default()
        );
        assert_eq!(
            pins.package_digests(),
            BTreeMap::from([("compose", "sha256:a")]),
            "built-ins do not distinguish revisions"
        );
    }

    #[test]
    fn a_malformed_annotation_is_refused_naming_what_is_wrong() {
        let cases = [
            ("[]", "not an object"),
            ("{", "EOF"),
            (
                r#"{"s": {"digest": "sha256:a", "package": "p"}}"#,
                "no function",
            ),
            (
                r#"{"s": {"function": "f", "digest": "sha256:a"}}"#,
                "exactly one of package and builtin",
            ),
            (
                r#"{"s": {"function": "f", "digest": "sha256:a", "builtin": "function-nope"}}"#,
                "\"function-nope\" is not built into plait",
            ),
        ];
        for (text, want) in cases {
            let error = Pins::parse(text).err().unwrap().to_string();
            assert!(error.contains(want), "{text}: {error}");
            assert!(error.contains(DIGESTS_ANNOTATION), "{error}");
        }
    }

    #[test]
    fn a_function_runs_the_pin_of_its_steps_and_steps_must_agree() {
        let steps = [step("a", "fn-x"), step("b", "fn-y"), step("c", "fn-x")];
        let pins = |entries: &[(&str, Pin)]| {
            Pins(
                entries
                    .iter()
                    .map(|(s, p)| (s.to_string(), p.clone()))
                    .collect(),
            )
        };
        let x1 = package("fn-x", "sha256:1");
        let x2 = package("fn-x", "sha256:2");
        let agreeing = pins(&[("a", x1.clone()), ("c", x1.clone())]);
        assert_eq!(agreeing.for_function("fn-x", &steps).unwrap(), Some(&x1));
        assert_eq!(agreeing.for_function("fn-y", &steps).unwrap(), None);
        let one = pins(&[("c", x1.clone())]);
        assert_eq!(one.for_function("fn-x", &steps).unwrap(), Some(&x1));
        // A record for a step that now names another function is not its.
        let stale = pins(&[("b", x2.clone())]);
        assert_eq!(stale.for_function("fn-y", &steps).unwrap(), None);
        let error = pins(&[("a", x1), ("c", x2)])
            .for_function("fn-x", &steps)
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("\"a\" and \"c\""), "{error}");
    }

    #[test]
    fn the_current_pin_is_a_builtin_or_a_healthy_functions_digest() {
        let healthy = json!({"resolvedDigest": "sha256:d", "resolvedPackage": "r.io/fn:v1@sha256:d",
                              "conditions": [{"type": "Healthy", "status": "True"}]});
        let mut unhealthy = healthy.clone();
        unhealthy["conditions"][0]["status"] = json!("False");
        let builtin_package = "xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.5.0";
        let cases = [
            ("function-auto-ready", None, Some("builtin")),
            ("fn", None, None),
            (
                "fn",
                Some(function(builtin_package, json!({}))),
                Some("builtin"),
            ),
            (
                "fn",
                Some(function("r.io/fn:v1", healthy)),
                Some("r.io/fn:v1@sha256:d"),
            ),
            ("fn", Some(function("r.io/fn:v1", unhealthy)), None),
            ("fn", Some(function("r.io/fn:v1", json!({}))), None),
        ];
        for (name, object, want) in cases {
            let got = current_pin(name, object.as_ref());
            let described = got.as_ref().map(|pin| match &pin.source {
                PinnedSource::Package { pinned } => pinned.as_str(),
                PinnedSource::Builtin(_) => "builtin",
            });
            assert_eq!(described, want, "{name} {object:?}");
        }
        assert_eq!(
            current_pin("function-auto-ready", None).unwrap().digest,
            Builtin::AutoReady.digest()
        );
    }
}
