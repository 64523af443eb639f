//! The API vocabulary every controller shares: field managers, groups,
//! kinds, annotations, and the `ApiResource`s of plait's own kinds.

use kube::api::ApiResource;
use plait_functions::{FUNCTION_API_VERSION, FUNCTION_KIND};
use plait_model::Gvk;

/// The field manager of what plait's controllers apply to their own kinds.
pub const FIELD_MANAGER: &str = "plait";
/// The field manager of the finalizers plait adds, apart from the fields its
/// other applies own so that those applies, which do not name finalizers,
/// never remove one.
pub const FINALIZER_MANAGER: &str = "plait-finalizer";
pub const APIEXTENSIONS_GROUP: &str = "apiextensions.crossplane.io";
/// The version the controller reads XRDs at. Both versions share storage;
/// the scope each was written with is defaulted into the stored object.
pub const XRD_VERSION: &str = "v1";
pub const XRD_API_VERSION: &str = "apiextensions.crossplane.io/v1";
pub const XRD_KIND: &str = "CompositeResourceDefinition";
pub const COMPOSITION_API_VERSION: &str = "apiextensions.crossplane.io/v1";
pub const COMPOSITION_KIND: &str = "Composition";
pub const REVISION_KIND: &str = "CompositionRevision";
pub const ANNOTATION_PAUSED: &str = "crossplane.io/paused";
pub const ANNOTATION_EXTERNAL_NAME: &str = "crossplane.io/external-name";
/// An XR's own poll interval, a Go duration (`30s`, `5m`, `1h30m`), as
/// Crossplane v2.3 reads it; below `--min-poll-interval` it is raised to it.
pub const ANNOTATION_POLL_INTERVAL: &str = "crossplane.io/poll-interval";
/// The type of the connection Secrets XRs and claims write, as upstream.
pub const CONNECTION_SECRET_TYPE: &str = "connection.crossplane.io/v1alpha1";
/// What a paused XR or claim says on its `Synced` condition.
pub const RECONCILE_PAUSED: &str =
    "Reconciliation (including deletion) is paused via the pause annotation";

pub fn xrd_resource() -> ApiResource {
    ApiResource {
        group: APIEXTENSIONS_GROUP.into(),
        version: XRD_VERSION.into(),
        api_version: XRD_API_VERSION.into(),
        kind: XRD_KIND.into(),
        plural: "compositeresourcedefinitions".into(),
    }
}

pub fn composition_resource() -> ApiResource {
    ApiResource {
        group: APIEXTENSIONS_GROUP.into(),
        version: "v1".into(),
        api_version: COMPOSITION_API_VERSION.into(),
        kind: COMPOSITION_KIND.into(),
        plural: "compositions".into(),
    }
}

pub fn revision_resource() -> ApiResource {
    ApiResource {
        group: APIEXTENSIONS_GROUP.into(),
        version: "v1".into(),
        api_version: COMPOSITION_API_VERSION.into(),
        kind: REVISION_KIND.into(),
        plural: "compositionrevisions".into(),
    }
}

pub fn function_resource() -> ApiResource {
    ApiResource {
        group: "pkg.crossplane.io".into(),
        version: "v1".into(),
        api_version: FUNCTION_API_VERSION.into(),
        kind: FUNCTION_KIND.into(),
        plural: "functions".into(),
    }
}

/// The resource of a kind an XRD defines (its XRs or claims).
pub fn defined_resource(gvk: &Gvk, plural: &str) -> ApiResource {
    ApiResource {
        group: gvk.group.clone(),
        version: gvk.version.clone(),
        api_version: gvk.api_version(),
        kind: gvk.kind.clone(),
        plural: plural.into(),
    }
}

/// The group of an apiVersion (`""` for the core group).
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

/// Usages: Crossplane's deletion protection, with upstream's names.
pub const PROTECTION_GROUP: &str = "protection.crossplane.io";
pub const USAGE_API_VERSION: &str = "protection.crossplane.io/v1beta1";
pub const USAGE_KIND: &str = "Usage";
pub const CLUSTER_USAGE_KIND: &str = "ClusterUsage";
/// The finalizer a Usage holds until what it protects is released.
pub const USAGE_FINALIZER: &str = "usage.apiextensions.crossplane.io";
/// On a used resource: the webhook's object selector sends its deletions to
/// be checked against the Usages of it.
pub const LABEL_IN_USE: &str = "crossplane.io/in-use";
/// On a Usage: what it protects and why, in words (a printer column).
pub const ANNOTATION_USAGE_DETAILS: &str = "crossplane.io/usage-details";
/// On a used resource: a deletion of it was refused, with this propagation
/// policy; a Usage with `replayDeletion` deletes it again when it goes.
pub const ANNOTATION_DELETION_ATTEMPT: &str = "usage.crossplane.io/deletion-attempt-with-policy";

pub fn usage_resource() -> ApiResource {
    ApiResource {
        group: PROTECTION_GROUP.into(),
        version: "v1beta1".into(),
        api_version: USAGE_API_VERSION.into(),
        kind: USAGE_KIND.into(),
        plural: "usages".into(),
    }
}

/// Crossplane v1's Usage (`apiextensions.crossplane.io`, deprecated),
/// cluster-scoped: it protects cluster-scoped resources, as a ClusterUsage.
pub const LEGACY_USAGE_API_VERSION: &str = "apiextensions.crossplane.io/v1beta1";

pub fn legacy_usage_resource() -> ApiResource {
    ApiResource {
        group: APIEXTENSIONS_GROUP.into(),
        version: "v1beta1".into(),
        api_version: LEGACY_USAGE_API_VERSION.into(),
        kind: USAGE_KIND.into(),
        plural: "usages".into(),
    }
}

/// The webhook, in a ValidatingWebhookConfiguration, that refuses the
/// deletion of a resource in use (upstream's name).
pub const NO_USAGES_WEBHOOK: &str = "nousages.protection.crossplane.io";

pub fn webhook_configuration_resource() -> ApiResource {
    ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: "ValidatingWebhookConfiguration".into(),
        plural: "validatingwebhookconfigurations".into(),
    }
}

pub fn cluster_usage_resource() -> ApiResource {
    ApiResource {
        group: PROTECTION_GROUP.into(),
        version: "v1beta1".into(),
        api_version: USAGE_API_VERSION.into(),
        kind: CLUSTER_USAGE_KIND.into(),
        plural: "clusterusages".into(),
    }
}
