//! Which Composition, and which revision of it, an XR composes from, as
//! upstream selects them; each choice is persisted on the XR. Compositions
//! and revisions are read from the catalog's watch-fed stores, and the
//! revision's pipeline comes compiled from the catalog.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::{Patch, PatchParams};
use plait_model::{CompositeResourceDefinition, UpdatePolicy};
use plait_reconcile::{CompositeScope, Event, EventType, ObjectRef, PrepareError};
use serde_json::{Value, json};

use super::{XrContext, XrError};
use crate::controllers::composition;
use crate::controllers::kit::ObjectError;
use crate::stores::catalog::{CompileError, CompiledPipeline};
use crate::vocabulary::object::text;

/// Where a reconcile stopped short of running the pipeline.
pub enum Failure {
    /// The XR cannot be composed as it stands; reported on its `Synced` condition.
    Synced(String),
    /// The revision the XR needs is not (yet) in the catalog; reported on
    /// its `Synced` condition. A new revision of the XR's kind wakes the XR
    /// once the catalog holds it, so it waits for that rather than retrying.
    Awaiting(String),
    Error(XrError),
}

impl From<XrError> for Failure {
    fn from(e: XrError) -> Self {
        Failure::Error(e)
    }
}

/// The Composition an XR composes from, and whether the XR does not
/// record it yet.
pub struct Selected {
    pub name: String,
    pub unrecorded: bool,
}

/// Picks the XR's Composition as upstream does; [`revision`] persists the
/// choice, in the one write that records the revision.
pub async fn composition(
    ctx: &XrContext,
    xrd: &CompositeResourceDefinition,
    xr: &Value,
    reference: &ObjectRef,
    scope: CompositeScope,
) -> Result<Selected, Failure> {
    let machinery = scope.machinery_pointer();
    let current = text(xr, &format!("{machinery}/compositionRef/name")).map(str::to_string);
    let selector = xr
        .pointer(&format!("{machinery}/compositionSelector/matchLabels"))
        .and_then(Value::as_object)
        .cloned();
    let (chosen, message) = if let Some(enforced) = &xrd.spec.enforced_composition_ref {
        (
            enforced.name.clone(),
            "Enforced composition has been selected".to_string(),
        )
    } else if let Some(name) = &current {
        (name.clone(), String::new())
    } else if let (None, Some(default)) = (&selector, &xrd.spec.default_composition_ref) {
        (
            default.name.clone(),
            "Default composition has been selected".to_string(),
        )
    } else {
        let labels: BTreeMap<String, String> = selector
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
            .collect();
        ctx.shared
            .catalog
            .ready()
            .await
            .map_err(ObjectError::cluster(reference, "cannot read the catalog"))
            .map_err(XrError::from)?;
        let mut candidates: Vec<String> = ctx
            .shared
            .catalog
            .compositions(&labels)
            .into_iter()
            .filter(|c| {
                text(c, "/spec/compositeTypeRef/apiVersion") == Some(reference.api_version.as_str())
                    && text(c, "/spec/compositeTypeRef/kind") == Some(reference.kind.as_str())
            })
            .filter_map(|c| text(&c, "/metadata/name").map(str::to_string))
            .collect();
        // Upstream picks at random; the first by name is as valid and repeatable.
        candidates.sort();
        let Some(first) = candidates.into_iter().next() else {
            return Err(Failure::Synced(
                "cannot select Composition: no compatible Compositions found".into(),
            ));
        };
        let message = format!("Successfully selected composition: {first}");
        (first, message)
    };
    let unrecorded = current.as_deref() != Some(chosen.as_str());
    if unrecorded {
        ctx.shared.cluster.publish(Event {
            regarding: reference.clone(),
            event_type: EventType::Normal,
            reason: "SelectComposition".into(),
            message,
        });
    }
    Ok(Selected {
        name: chosen,
        unrecorded,
    })
}

/// Picks the revision of `composition` the XR composes from, as upstream
/// does, persisting in one write the choice, any defaulted revision
/// selector, and the Composition when the XR does not record it yet (even
/// when no revision can be picked); returns the revision's pipeline,
/// compiled once for every XR of this kind.
pub async fn revision(
    ctx: &XrContext,
    xrd: &CompositeResourceDefinition,
    xr: &mut Value,
    reference: &ObjectRef,
    scope: CompositeScope,
    selected: &Selected,
) -> Result<Arc<CompiledPipeline>, Failure> {
    let composition = selected.name.as_str();
    let machinery = scope.machinery_pointer();
    let policy = match text(xr, &format!("{machinery}/compositionUpdatePolicy")) {
        Some("Manual") => UpdatePolicy::Manual,
        Some(_) => UpdatePolicy::Automatic,
        None => xrd.default_composition_update_policy(),
    };
    let current = text(xr, &format!("{machinery}/compositionRevisionRef/name")).map(str::to_string);
    let mut selector =
        composition::match_labels(xr.pointer(&format!("{machinery}/compositionRevisionSelector")));
    let mut persist = serde_json::Map::new();
    if selected.unrecorded {
        persist.insert("compositionRef".into(), json!({"name": composition}));
    }
    if selector.is_none()
        && current.is_none()
        && let Some(default) = xrd.spec.extra.get("defaultCompositionRevisionSelector")
    {
        selector = composition::match_labels(Some(default));
        persist.insert("compositionRevisionSelector".into(), default.clone());
        ctx.shared.cluster.publish(Event {
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
    let fetch = |message: String| Failure::Synced(format!("cannot fetch Composition: {message}"));
    // The catalog's revision store wakes the XR once it holds a new revision.
    let awaiting =
        |message: String| Failure::Awaiting(format!("cannot fetch Composition: {message}"));
    let revision = match (&current, policy) {
        (Some(name), UpdatePolicy::Manual) => ctx.shared.catalog.revision(name).ok_or_else(|| {
            awaiting(format!(
                "cannot get CompositionRevision {name:?}: not found"
            ))
        }),
        _ => (|| -> Result<Value, Failure> {
            let found = ctx.shared.catalog.composition(composition).ok_or_else(|| {
                fetch(format!("cannot get Composition {composition:?}: not found"))
            })?;
            let mut labels = match policy {
                UpdatePolicy::Automatic => selector.unwrap_or_default(),
                UpdatePolicy::Manual => BTreeMap::new(),
            };
            labels.insert(
                composition::LABEL_COMPOSITION_NAME.into(),
                composition.into(),
            );
            let candidates = ctx.shared.catalog.revisions(&labels);
            let latest = composition::latest(&found, &candidates)
                .cloned()
                .ok_or_else(|| awaiting("no compatible CompositionRevisions found".into()))?;
            let name = text(&latest, "/metadata/name").unwrap_or_default();
            if current.as_deref() != Some(name) {
                persist.insert("compositionRevisionRef".into(), json!({"name": name}));
            }
            Ok(latest)
        })(),
    };
    // Recorded even when no revision could be picked: the Composition was.
    if !persist.is_empty() {
        let patch = scope.wrap_machinery(Value::Object(persist));
        *xr = merge_patch(ctx, reference, &patch).await?;
    }
    let revision = revision?;
    let compiled = ctx
        .shared
        .catalog
        .pipeline(&revision, reference, &ctx.shared.functions.resolver)
        .await;
    match compiled {
        Ok(pipeline) => Ok(pipeline),
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

/// Merge-patches the XR, returning it as stored.
async fn merge_patch(
    ctx: &XrContext,
    reference: &ObjectRef,
    patch: &Value,
) -> Result<Value, XrError> {
    let patched = ctx
        .api(reference)
        .patch(
            &reference.name,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .map_err(ObjectError::kube(
            reference,
            "cannot record its Composition",
        ))?;
    ctx.stored(&patched, reference)
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
}
