//! The composed resources of every watched kind, which reconciles observe
//! their composed resources from. The composed-resource watches (started
//! as XRs compose a kind) fill it; a kind's objects are read only while
//! its watch lives.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{ObjectRef, Store};
use serde_json::Value;

/// A composed kind: apiVersion and kind.
pub type Kind = (String, String);

/// The composed resources of every watched kind (those labelled with their
/// composite), as the watches last saw them, without `managedFields`: a
/// reconcile reads what its XR composed from here rather than from the API
/// server. A kind is here only once its watch has listed it.
#[derive(Default)]
pub struct ComposedCache {
    stores: RwLock<HashMap<Kind, CachedKind>>,
}

pub struct CachedKind {
    pub store: Store<DynamicObject>,
    pub resource: ApiResource,
    /// Cleared when the watch filling the store stops: a store nobody
    /// updates any more is never read, even if it was listed as it stopped.
    pub live: Arc<AtomicBool>,
}

impl ComposedCache {
    pub fn insert(&self, kind: Kind, cached: CachedKind) {
        self.stores
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(kind, cached);
    }

    pub fn remove(&self, kind: &Kind) {
        self.stores
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(kind);
    }

    /// The object as its kind's watch last saw it; `None` when the kind is
    /// not cached or the watch has not seen the object (yet): ask the API server.
    pub fn get(&self, reference: &plait_reconcile::ObjectRef) -> Option<Value> {
        let stores = self.stores.read().unwrap_or_else(PoisonError::into_inner);
        let cached = stores.get(&(reference.api_version.clone(), reference.kind.clone()))?;
        if !cached.live.load(Ordering::Acquire) {
            return None;
        }
        let mut key = ObjectRef::new_with(&reference.name, cached.resource.clone());
        if let Some(namespace) = &reference.namespace {
            key = key.within(namespace);
        }
        let object = cached.store.get(&key)?;
        let mut value = serde_json::to_value(object.as_ref()).ok()?;
        value["apiVersion"] = Value::String(reference.api_version.clone());
        value["kind"] = Value::String(reference.kind.clone());
        Some(value)
    }

    /// How many objects are cached, over every kind.
    pub fn len(&self) -> usize {
        self.stores
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|cached| cached.store.len())
            .sum()
    }
}
