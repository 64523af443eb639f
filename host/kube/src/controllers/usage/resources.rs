//! Reading and writing what a Usage names, as the phases share it: the used
//! and using resources, the in-use label, the Usage's own finalizer.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use plait_reconcile::ObjectRef;
use serde_json::{Value, json};

use super::UsageError;
use super::context::UsageContext;
use super::spec::{self, Target};
use crate::controllers::kit::ObjectError;
use crate::vocabulary::api::{LABEL_IN_USE, USAGE_FINALIZER};
use crate::vocabulary::object::{remove_finalizer, to_value};

/// The object `target` names, seen from the Usage (in its namespace, or
/// cluster-scoped for a ClusterUsage). A kind the API server does not
/// serve is an error, as upstream's (not a missing object).
pub(super) async fn get(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usage: &Value,
    target: &Target,
    what: &'static str,
) -> Result<Value, UsageError> {
    match ctx.serves(target).await {
        Ok(true) => {}
        Ok(false) => {
            return Err(UsageError::NoKind {
                usage: reference.to_string(),
                what,
                api_version: target.api_version.clone(),
                kind: target.kind.clone(),
            });
        }
        Err(source) => return Err(ObjectError::cluster(reference, what)(source).into()),
    }
    let name = target.name.clone().unwrap_or_default();
    let object = ObjectRef {
        api_version: target.api_version.clone(),
        kind: target.kind.clone(),
        namespace: spec::used_namespace(usage).map(str::to_string),
        name: name.clone(),
    };
    let found = match ctx.acting_for(usage) {
        Ok(cluster) => cluster.get_live(&object).await,
        Err(e) => Err(e),
    };
    match found {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(UsageError::Missing {
            usage: reference.to_string(),
            what,
            kind: target.kind.clone(),
            name,
        }),
        Err(source) => Err(ObjectError::cluster(reference, what)(source).into()),
    }
}

/// Sets (`in_use`) or removes the in-use label of `used` by a merge patch
/// of that one label, which leaves every other field to its owner.
pub(super) async fn label_in_use(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usage: &Value,
    used: &Value,
    in_use: bool,
) -> Result<(), UsageError> {
    let (what, event) = if in_use {
        (
            "cannot add in use label to the used resource",
            "AddInUseLabel",
        )
    } else {
        (
            "cannot remove in use label from the used resource",
            "RemoveInUseLabel",
        )
    };
    let Some(target) = ObjectRef::of(used) else {
        return Ok(());
    };
    let value = if in_use { json!("true") } else { Value::Null };
    let patch = json!({"metadata": {"labels": {LABEL_IN_USE: value}}});
    let patched = match ctx.api_of(usage, &target).await {
        Err(source) => Err(ObjectError::cluster(reference, what)(source).into()),
        Ok(api) => match api
            .patch(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            // Gone meanwhile: nothing left to label.
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(kube_error(reference, what)(source)),
        },
    };
    patched.inspect_err(|e| ctx.failed(reference, event, e))
}

pub(super) async fn remove_own_finalizer(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usages: &Api<DynamicObject>,
    usage: &Value,
) -> Result<(), UsageError> {
    remove_finalizer(usages, usage, USAGE_FINALIZER)
        .await
        .map(drop)
        .map_err(kube_error(reference, "cannot remove finalizer"))
        .inspect_err(|e| ctx.failed(reference, "RemoveFinalizer", e))
}

pub(super) fn stored_value(
    ctx: &UsageContext,
    reference: &ObjectRef,
    stored: &DynamicObject,
) -> Result<Value, UsageError> {
    to_value(stored, &ctx.policy.resource)
        .map_err(|source| ObjectError::encode(&reference)(source).into())
}

pub(super) fn kube_error(
    reference: &ObjectRef,
    what: &'static str,
) -> impl FnOnce(kube::Error) -> UsageError {
    let object = ObjectError::kube(reference, what);
    move |source| object(source).into()
}
