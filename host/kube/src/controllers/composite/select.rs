//! Which Composition, and which revision of it, an XR composes from, as
//! upstream selects them; each choice is persisted on the XR by the
//! pipeline phase, with the XR's resource references. Compositions and
//! revisions are read from the catalog's watch-fed stores, and the
//! revision's pipeline comes compiled from the catalog.

use std::collections::BTreeMap;
use std::sync::Arc;

use plait_model::{CompositeResourceDefinition, UpdatePolicy};
use plait_reconcile::{CompositeScope, Event, EventType, ObjectRef, PrepareError};
use serde_json::{Value, json};

use super::{XrContext, XrError};
use crate::controllers::composition;
use crate::controllers::kit::ObjectError;
use crate::stores::catalog::{Catalog, CompileError, CompiledPipeline};
use crate::vocabulary::object::text;

/// Where a reconcile stopped short of running the pipeline.
pub enum Failure {
    /// The XR cannot be composed as it stands; reported on its `Synced` condition.
    Synced(String),
    /// The revision the XR needs, or the Composition it names, is not (yet)
    /// in the catalog; reported on its `Synced` condition once the XR is no
    /// longer new. A new revision of the XR's kind wakes the XR once the
    /// catalog holds it (a new Composition comes with its first revision),
    /// so it waits for that rather than retrying.
    Awaiting(String),
    Error(XrError),
}

impl From<XrError> for Failure {
    fn from(e: XrError) -> Self {
        Failure::Error(e)
    }
}

/// How an XR's Composition is chosen, decided before any Composition is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CompositionChoice {
    /// The Composition the XRD enforces, the XR names, or the XRD defaults
    /// to, with the event message that tells of it when it is new to the XR.
    Named { name: String, message: String },
    /// The first Composition, by name, of the XR's kind whose labels match.
    Selected(BTreeMap<String, String>),
}

/// Upstream's order: the XRD's enforced Composition, the XR's reference,
/// the XRD's default (unless the XR selects by labels), then selection.
pub(super) fn composition_choice(
    xrd: &CompositeResourceDefinition,
    xr: &Value,
    scope: CompositeScope,
) -> CompositionChoice {
    let machinery = scope.machinery_pointer();
    let current = text(xr, &format!("{machinery}/compositionRef/name"));
    let selector = xr
        .pointer(&format!("{machinery}/compositionSelector/matchLabels"))
        .and_then(Value::as_object);
    let named = |name: &str, message: &str| CompositionChoice::Named {
        name: name.to_string(),
        message: message.to_string(),
    };
    if let Some(enforced) = &xrd.spec.enforced_composition_ref {
        named(&enforced.name, "Enforced composition has been selected")
    } else if let Some(name) = current {
        named(name, "")
    } else if let (None, Some(default)) = (selector, &xrd.spec.default_composition_ref) {
        named(&default.name, "Default composition has been selected")
    } else {
        CompositionChoice::Selected(
            selector
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect(),
        )
    }
}

/// The name of the first of `compositions`, by name, that composes the
/// kind `reference` names. Upstream picks at random; the first by name is
/// as valid and repeatable.
pub(super) fn first_compatible(compositions: &[Value], reference: &ObjectRef) -> Option<String> {
    compositions
        .iter()
        .filter(|c| {
            text(c, "/spec/compositeTypeRef/apiVersion") == Some(reference.api_version.as_str())
                && text(c, "/spec/compositeTypeRef/kind") == Some(reference.kind.as_str())
        })
        .filter_map(|c| text(c, "/metadata/name"))
        .min()
        .map(str::to_string)
}

/// The Composition an XR composes from, and the event that tells of the
/// choice when the XR does not record it yet.
pub struct Selected {
    pub name: String,
    pub unrecorded: Option<Event>,
}

/// Picks the XR's Composition as upstream does; [`revision`] adds the
/// choice to what the XR is to record.
pub async fn composition(
    ctx: &XrContext,
    xrd: &CompositeResourceDefinition,
    xr: &Value,
    reference: &ObjectRef,
    scope: CompositeScope,
) -> Result<Selected, Failure> {
    let machinery = scope.machinery_pointer();
    let current = text(xr, &format!("{machinery}/compositionRef/name")).map(str::to_string);
    let (chosen, message) = match composition_choice(xrd, xr, scope) {
        CompositionChoice::Named { name, message } => (name, message),
        CompositionChoice::Selected(labels) => {
            ctx.shared
                .catalog
                .ready()
                .await
                .map_err(ObjectError::cluster(reference, "cannot read the catalog"))
                .map_err(XrError::from)?;
            let compositions = ctx.shared.catalog.compositions(&labels);
            // A Composition just created may not be in the catalog yet;
            // its first revision wakes the XR once it is.
            let Some(first) = first_compatible(&compositions, reference) else {
                return Err(Failure::Awaiting(
                    "cannot select Composition: no compatible Compositions found".into(),
                ));
            };
            let message = format!("Successfully selected composition: {first}");
            (first, message)
        }
    };
    let unrecorded = (current.as_deref() != Some(chosen.as_str())).then(|| Event {
        regarding: reference.clone(),
        event_type: EventType::Normal,
        reason: "SelectComposition".into(),
        message,
    });
    Ok(Selected {
        name: chosen,
        unrecorded,
    })
}

/// Which revision an XR asks for, read from the XR and its XRD before any
/// revision is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RevisionQuery {
    /// The XR's `compositionUpdatePolicy`, else its XRD's default.
    pub policy: UpdatePolicy,
    /// The revision the XR references now.
    pub current: Option<String>,
    /// The labels the revision must match under `Automatic`.
    pub selector: Option<BTreeMap<String, String>>,
    /// The XRD's `defaultCompositionRevisionSelector`, which an XR with
    /// neither a revision selector nor a revision reference takes on.
    pub defaulted: Option<Value>,
}

pub(super) fn revision_query(
    xrd: &CompositeResourceDefinition,
    xr: &Value,
    scope: CompositeScope,
) -> RevisionQuery {
    let machinery = scope.machinery_pointer();
    let policy = match text(xr, &format!("{machinery}/compositionUpdatePolicy")) {
        Some("Manual") => UpdatePolicy::Manual,
        Some(_) => UpdatePolicy::Automatic,
        None => xrd.default_composition_update_policy(),
    };
    let current = text(xr, &format!("{machinery}/compositionRevisionRef/name")).map(str::to_string);
    let mut selector =
        composition::match_labels(xr.pointer(&format!("{machinery}/compositionRevisionSelector")));
    let mut defaulted = None;
    if selector.is_none()
        && current.is_none()
        && let Some(default) = xrd.spec.extra.get("defaultCompositionRevisionSelector")
    {
        selector = composition::match_labels(Some(default));
        defaulted = Some(default.clone());
    }
    RevisionQuery {
        policy,
        current,
        selector,
        defaulted,
    }
}

/// The Compositions and revisions a revision is picked from: the catalog's
/// stores, or any other holder of them.
pub(super) trait KnownRevisions {
    fn composition(&self, name: &str) -> Option<Value>;
    fn revisions(&self, labels: &BTreeMap<String, String>) -> Vec<Value>;
    fn revision(&self, name: &str) -> Option<Value>;
}

impl KnownRevisions for Catalog {
    fn composition(&self, name: &str) -> Option<Value> {
        Catalog::composition(self, name)
    }

    fn revisions(&self, labels: &BTreeMap<String, String>) -> Vec<Value> {
        Catalog::revisions(self, labels)
    }

    fn revision(&self, name: &str) -> Option<Value> {
        Catalog::revision(self, name)
    }
}

/// The revision of `composition` that `query` picks, as upstream does:
/// exactly the referenced one under `Manual`, else the highest-numbered
/// the Composition controls (matching the selector under `Automatic`); and
/// the revision reference to record on the XR when it changed.
pub(super) fn pick_revision(
    query: &RevisionQuery,
    composition: &str,
    known: &impl KnownRevisions,
) -> Result<(Value, Option<String>), Failure> {
    // The catalog's revision store wakes the XR once it holds a new revision.
    let awaiting =
        |message: String| Failure::Awaiting(format!("cannot fetch Composition: {message}"));
    if let (Some(name), UpdatePolicy::Manual) = (&query.current, query.policy) {
        let revision = known.revision(name).ok_or_else(|| {
            awaiting(format!(
                "cannot get CompositionRevision {name:?}: not found"
            ))
        })?;
        return Ok((revision, None));
    }
    let found = known
        .composition(composition)
        .ok_or_else(|| awaiting(format!("cannot get Composition {composition:?}: not found")))?;
    let mut labels = match query.policy {
        UpdatePolicy::Automatic => query.selector.clone().unwrap_or_default(),
        UpdatePolicy::Manual => BTreeMap::new(),
    };
    labels.insert(
        composition::LABEL_COMPOSITION_NAME.into(),
        composition.into(),
    );
    let candidates = known.revisions(&labels);
    let latest = composition::latest(&found, &candidates)
        .cloned()
        .ok_or_else(|| awaiting("no compatible CompositionRevisions found".into()))?;
    let name = text(&latest, "/metadata/name").unwrap_or_default();
    let changed = (query.current.as_deref() != Some(name)).then(|| name.to_string());
    Ok((latest, changed))
}

/// What selection decided: the revision's pipeline, the machinery fields
/// the XR is to record (its Composition, revision and defaulted revision
/// selector, where they changed) and the events that tell of them once it does.
pub struct Selection {
    pub pipeline: Arc<CompiledPipeline>,
    pub machinery: serde_json::Map<String, Value>,
    pub events: Vec<Event>,
}

/// Picks the revision of `composition` the XR composes from, as upstream
/// does, with what the XR is to record of the choice: the revision, any
/// defaulted revision selector, and the Composition when the XR does not
/// record it yet; returns them with the revision's pipeline, compiled once
/// for every XR of this kind. Nothing is recorded when no revision can be
/// picked: the next reconcile picks the same Composition.
pub async fn revision(
    ctx: &XrContext,
    xrd: &CompositeResourceDefinition,
    xr: &Value,
    reference: &ObjectRef,
    scope: CompositeScope,
    selected: Selected,
) -> Result<Selection, Failure> {
    let composition = selected.name.as_str();
    let query = revision_query(xrd, xr, scope);
    let mut persist = serde_json::Map::new();
    let mut events = Vec::new();
    if let Some(event) = selected.unrecorded {
        persist.insert("compositionRef".into(), json!({"name": composition}));
        events.push(event);
    }
    if let Some(default) = &query.defaulted {
        persist.insert("compositionRevisionSelector".into(), default.clone());
        events.push(Event {
            regarding: reference.clone(),
            event_type: EventType::Normal,
            reason: "SelectComposition".into(),
            message: "Default revision selector has been selected".into(),
        });
    }
    ctx.shared
        .catalog
        .ready()
        .await
        .map_err(ObjectError::cluster(reference, "cannot read the catalog"))
        .map_err(XrError::from)?;
    let (revision, changed) = pick_revision(&query, composition, ctx.shared.catalog.as_ref())?;
    if let Some(name) = changed {
        persist.insert("compositionRevisionRef".into(), json!({"name": name}));
    }
    let compiled = ctx
        .shared
        .catalog
        .pipeline(
            &revision,
            reference,
            &ctx.shared.functions.resolver,
            ctx.shared
                .functions
                .step_directories(ctx.shared.cluster.client()),
        )
        .await;
    match compiled {
        Ok(pipeline) => Ok(Selection {
            pipeline,
            machinery: persist,
            events,
        }),
        Err(CompileError::Prepare {
            revision,
            source: e @ PrepareError::Invalid(_),
        }) => Err(Failure::Synced(format!(
            "CompositionRevision {revision:?} is invalid: {e}"
        ))),
        Err(CompileError::Prepare {
            source: PrepareError::Incompatible { .. },
            ..
        }) => Err(Failure::Synced(
            "referenced composition is not compatible with this composite resource".into(),
        )),
        Err(CompileError::Prepare { source, .. }) => Err(Failure::Synced(source.to_string())),
        Err(e) => Err(Failure::Synced(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composition_ref_goes_where_the_scope_keeps_machinery() {
        let fields = json!({"compositionRef": {"name": "c"}});
        let cases = [
            (
                CompositeScope::Namespaced,
                json!({"spec": {"crossplane": {"compositionRef": {"name": "c"}}}}),
            ),
            (
                CompositeScope::Cluster,
                json!({"spec": {"crossplane": {"compositionRef": {"name": "c"}}}}),
            ),
            (
                CompositeScope::LegacyCluster,
                json!({"spec": {"compositionRef": {"name": "c"}}}),
            ),
        ];
        for (scope, want) in cases {
            assert_eq!(scope.wrap_machinery(fields.clone()), want, "{scope:?}");
        }
    }

    use plait_model::Manifest;
    use plait_reconcile::{Cluster, MemoryCluster};

    use crate::vocabulary::api::{COMPOSITION_API_VERSION, COMPOSITION_KIND, REVISION_KIND};

    /// The XRD of `XApp`, with `spec` fields added.
    fn xrd(spec: Value) -> CompositeResourceDefinition {
        let mut xrd = json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "CompositeResourceDefinition",
            "metadata": {"name": "xapps.example.org"},
            "spec": {
                "group": "example.org",
                "names": {"kind": "XApp", "plural": "xapps"},
                "versions": [{"name": "v1", "served": true, "referenceable": true}],
            },
        });
        for (key, value) in spec.as_object().cloned().unwrap_or_default() {
            xrd["spec"][key] = value;
        }
        CompositeResourceDefinition::from_value(xrd).unwrap()
    }

    /// A v2 XR whose `spec.crossplane` is `machinery`.
    fn xr(machinery: Value) -> Value {
        json!({
            "apiVersion": "example.org/v1", "kind": "XApp",
            "metadata": {"name": "app", "namespace": "team-a"},
            "spec": {"crossplane": machinery},
        })
    }

    fn named(name: &str, message: &str) -> CompositionChoice {
        CompositionChoice::Named {
            name: name.into(),
            message: message.into(),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_composition_is_the_enforced_one_then_the_referenced_then_the_default_then_selected() {
        let enforced = json!({"enforcedCompositionRef": {"name": "enforced"}});
        let default = json!({"defaultCompositionRef": {"name": "default"}});
        let cases = [
            (
                "the XRD's enforced Composition wins over the XR's reference",
                xrd(enforced.clone()),
                xr(json!({"compositionRef": {"name": "mine"}})),
                named("enforced", "Enforced composition has been selected"),
            ),
            (
                "the XR's reference is kept over the XRD's default",
                xrd(default.clone()),
                xr(json!({"compositionRef": {"name": "mine"}})),
                named("mine", ""),
            ),
            (
                "the XRD's default serves an XR that neither names nor selects one",
                xrd(default.clone()),
                xr(json!({})),
                named("default", "Default composition has been selected"),
            ),
            (
                "an XR's selector wins over the XRD's default",
                xrd(default),
                xr(json!({"compositionSelector": {"matchLabels": {"tier": "gold"}}})),
                CompositionChoice::Selected(labels(&[("tier", "gold")])),
            ),
            (
                "without a reference, default or selector every Composition of the kind is a candidate",
                xrd(json!({})),
                xr(json!({})),
                CompositionChoice::Selected(BTreeMap::new()),
            ),
        ];
        for (what, xrd, xr, want) in cases {
            let got = composition_choice(&xrd, &xr, CompositeScope::Namespaced);
            assert_eq!(got, want, "{what}");
        }
        let legacy = json!({"apiVersion": "example.org/v1", "kind": "XApp", "metadata": {"name": "app"},
                            "spec": {"compositionRef": {"name": "mine"}}});
        assert_eq!(
            composition_choice(&xrd(json!({})), &legacy, CompositeScope::LegacyCluster),
            named("mine", ""),
            "a v1 XR keeps its machinery at the top of its spec"
        );
    }

    #[test]
    fn selection_picks_the_first_composition_by_name_of_the_xrs_kind() {
        let composition = |name: &str, kind: &str| {
            json!({"metadata": {"name": name},
                   "spec": {"compositeTypeRef": {"apiVersion": "example.org/v1", "kind": kind}}})
        };
        let reference = ObjectRef::of(&xr(json!({}))).unwrap();
        let cases = [
            (
                "the first by name",
                vec![composition("b", "XApp"), composition("a", "XApp")],
                Some("a"),
            ),
            (
                "only of the XR's kind",
                vec![composition("a", "XOther"), composition("b", "XApp")],
                Some("b"),
            ),
            ("none of the kind", vec![composition("a", "XOther")], None),
        ];
        for (what, compositions, want) in cases {
            assert_eq!(
                first_compatible(&compositions, &reference).as_deref(),
                want,
                "{what}"
            );
        }
    }

    /// The in-memory cluster holds Compositions and revisions as the catalog's stores do.
    impl KnownRevisions for MemoryCluster {
        fn composition(&self, name: &str) -> Option<Value> {
            let reference = ObjectRef {
                api_version: COMPOSITION_API_VERSION.into(),
                kind: COMPOSITION_KIND.into(),
                namespace: None,
                name: name.into(),
            };
            self.get(&reference).unwrap()
        }

        fn revisions(&self, labels: &BTreeMap<String, String>) -> Vec<Value> {
            self.list(COMPOSITION_API_VERSION, REVISION_KIND, None, labels)
                .unwrap()
        }

        fn revision(&self, name: &str) -> Option<Value> {
            let reference = ObjectRef {
                api_version: COMPOSITION_API_VERSION.into(),
                kind: REVISION_KIND.into(),
                namespace: None,
                name: name.into(),
            };
            self.get(&reference).unwrap()
        }
    }

    /// Composition `c` and its revisions `c-1` (channel stable) and `c-2`
    /// (channel dev), and `c-old`, a revision of an earlier `c`.
    fn known() -> MemoryCluster {
        let revision = |name: &str, number: i64, channel: &str, owner: &str| {
            json!({
                "apiVersion": COMPOSITION_API_VERSION, "kind": REVISION_KIND,
                "metadata": {"name": name,
                             "labels": {composition::LABEL_COMPOSITION_NAME: "c", "channel": channel},
                             "ownerReferences": [{"uid": owner, "controller": true}]},
                "spec": {"revision": number},
            })
        };
        let cluster = MemoryCluster::new();
        cluster
            .seed([
                json!({"apiVersion": COMPOSITION_API_VERSION, "kind": COMPOSITION_KIND,
                       "metadata": {"name": "c", "uid": "cuid"}, "spec": {}}),
                revision("c-1", 1, "stable", "cuid"),
                revision("c-2", 2, "dev", "cuid"),
                revision("c-old", 9, "stable", "earlier-uid"),
            ])
            .unwrap();
        cluster
    }

    /// What a pick came to: the revision and the reference to record, or the failure's message.
    fn picked(
        xrd: &CompositeResourceDefinition,
        xr: &Value,
        composition: &str,
    ) -> (String, String) {
        let query = revision_query(xrd, xr, CompositeScope::Namespaced);
        match pick_revision(&query, composition, &known()) {
            Ok((revision, changed)) => (
                text(&revision, "/metadata/name").unwrap_or_default().into(),
                changed.unwrap_or_default(),
            ),
            Err(Failure::Synced(message)) => (String::new(), format!("Synced: {message}")),
            Err(Failure::Awaiting(message)) => (String::new(), format!("Awaiting: {message}")),
            Err(Failure::Error(e)) => (String::new(), format!("Error: {e}")),
        }
    }

    #[test]
    fn an_automatic_xr_takes_the_latest_revision_its_selector_matches() {
        let stable =
            json!({"defaultCompositionRevisionSelector": {"matchLabels": {"channel": "stable"}}});
        // (what, XRD spec, XR machinery, want revision, want reference recorded or failure)
        let cases = [
            (
                "an Automatic XR takes the latest revision and records it",
                json!({}),
                json!({}),
                "c-2",
                "c-2",
            ),
            (
                "an Automatic XR moves off an older revision it references",
                json!({}),
                json!({"compositionRevisionRef": {"name": "c-1"}}),
                "c-2",
                "c-2",
            ),
            (
                "an Automatic XR on the latest revision records nothing",
                json!({}),
                json!({"compositionRevisionRef": {"name": "c-2"}}),
                "c-2",
                "",
            ),
            (
                "an Automatic XR takes the latest revision its selector matches, of its Composition only",
                json!({}),
                json!({"compositionRevisionSelector": {"matchLabels": {"channel": "stable"}}}),
                "c-1",
                "c-1",
            ),
            (
                "the XRD's default revision selector serves an XR with neither selector nor reference",
                stable.clone(),
                json!({}),
                "c-1",
                "c-1",
            ),
            (
                "the XRD's default revision selector does not move an XR that references a revision",
                stable,
                json!({"compositionRevisionRef": {"name": "c-2"}}),
                "c-2",
                "",
            ),
        ];
        for (what, xrd_spec, machinery, want_revision, want_recorded) in cases {
            let got = picked(&xrd(xrd_spec), &xr(machinery), "c");
            assert_eq!(got, (want_revision.into(), want_recorded.into()), "{what}");
        }
    }

    #[test]
    fn a_manual_xr_keeps_its_revision_and_what_is_missing_is_awaited_or_reported() {
        let manual = json!({"defaultCompositionUpdatePolicy": "Manual"});
        let cases = [
            (
                "a Manual XR keeps the revision it references",
                json!({}),
                json!({"compositionUpdatePolicy": "Manual", "compositionRevisionRef": {"name": "c-1"}}),
                "c-1",
                "",
            ),
            (
                "a Manual XR without a reference takes the latest, whatever its selector",
                json!({}),
                json!({"compositionUpdatePolicy": "Manual",
                       "compositionRevisionSelector": {"matchLabels": {"channel": "stable"}}}),
                "c-2",
                "c-2",
            ),
            (
                "the XRD's Manual default keeps the referenced revision",
                manual.clone(),
                json!({"compositionRevisionRef": {"name": "c-1"}}),
                "c-1",
                "",
            ),
            (
                "the XR's Automatic wins over the XRD's Manual default",
                manual,
                json!({"compositionUpdatePolicy": "Automatic", "compositionRevisionRef": {"name": "c-1"}}),
                "c-2",
                "c-2",
            ),
            (
                "a Manual XR whose revision is not known yet waits for it",
                json!({}),
                json!({"compositionUpdatePolicy": "Manual", "compositionRevisionRef": {"name": "c-9"}}),
                "",
                "Awaiting: cannot fetch Composition: cannot get CompositionRevision \"c-9\": not found",
            ),
            (
                "a selector no revision matches waits for one",
                json!({}),
                json!({"compositionRevisionSelector": {"matchLabels": {"channel": "beta"}}}),
                "",
                "Awaiting: cannot fetch Composition: no compatible CompositionRevisions found",
            ),
        ];
        for (what, xrd_spec, machinery, want_revision, want_recorded) in cases {
            let got = picked(&xrd(xrd_spec), &xr(machinery), "c");
            assert_eq!(got, (want_revision.into(), want_recorded.into()), "{what}");
        }
        assert_eq!(
            picked(&xrd(json!({})), &xr(json!({})), "missing"),
            (
                String::new(),
                "Awaiting: cannot fetch Composition: cannot get Composition \"missing\": not found"
                    .into()
            ),
            "a Composition not in the catalog is waited for, as it may have just been created"
        );
    }

    #[test]
    fn only_an_xr_with_neither_revision_selector_nor_reference_takes_the_xrds_default_selector() {
        let default = json!({"matchLabels": {"channel": "stable"}});
        let xrd = xrd(json!({"defaultCompositionRevisionSelector": default}));
        let cases = [
            ("neither", json!({}), Some(default.clone())),
            (
                "a reference",
                json!({"compositionRevisionRef": {"name": "c-2"}}),
                None,
            ),
            (
                "a selector",
                json!({"compositionRevisionSelector": {"matchLabels": {"channel": "dev"}}}),
                None,
            ),
        ];
        for (what, machinery, want) in cases {
            let query = revision_query(&xrd, &xr(machinery), CompositeScope::Namespaced);
            assert_eq!(query.defaulted, want, "{what}");
        }
    }
}
