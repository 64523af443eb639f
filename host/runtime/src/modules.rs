//! Compiled modules in memory, keyed by component digest: one compilation
//! per digest however many loads ask for it at once, a bounded number of
//! compilations at a time, and the disk cache behind them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use crate::bindings::FunctionPre;
use crate::cache::{DiskCache, Lookup};
use crate::error::RuntimeError;
use crate::host_state::{self, CallState};
use crate::stats::Counters;
use crate::sync::{Semaphore, lock};

/// A compiled function, ready to instantiate.
pub struct Module {
    /// `sha256:<hex>` of the component bytes.
    pub digest: String,
    pub(crate) engine: Engine,
    pub(crate) pre: FunctionPre<CallState>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

/// One module slot per digest; holding its lock while compiling makes
/// concurrent loads of the same digest wait for one compilation.
type Slot = Arc<Mutex<Option<Arc<Module>>>>;

pub(crate) struct Modules {
    engine: Engine,
    linker: Linker<CallState>,
    disk: Option<DiskCache>,
    slots: Mutex<HashMap<String, Slot>>,
    compiles: Semaphore,
}

impl Modules {
    pub(crate) fn new(
        engine: &Engine,
        cache_dir: Option<PathBuf>,
        max_concurrent_compiles: usize,
    ) -> Result<Modules, RuntimeError> {
        let linker = host_state::linker(engine)?;
        let disk = cache_dir
            .map(|dir| {
                DiskCache::new(&dir, engine)
                    .map_err(|e| RuntimeError::Engine(format!("cannot use the compile cache: {e}")))
            })
            .transpose()?;
        Ok(Modules {
            engine: engine.clone(),
            linker,
            disk,
            slots: Mutex::new(HashMap::new()),
            compiles: Semaphore::new(max_concurrent_compiles),
        })
    }

    /// The module of `wasm`, whose sha256 the caller vouches is `digest`.
    pub(crate) fn load(
        &self,
        digest: String,
        wasm: &[u8],
        counters: &Counters,
    ) -> Result<Arc<Module>, RuntimeError> {
        let slot = lock(&self.slots).entry(digest.clone()).or_default().clone();
        let mut guard = lock(&slot);
        if let Some(module) = guard.as_ref() {
            counters.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(module.clone());
        }
        let loaded = self.load_uncached(digest.clone(), wasm, counters);
        match &loaded {
            Ok(module) => *guard = Some(module.clone()),
            Err(_) => {
                // Forget the empty slot so rejected inputs do not pile up;
                // loads already waiting on it retry with their own copy.
                drop(guard);
                let mut slots = lock(&self.slots);
                if slots.get(&digest).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                    slots.remove(&digest);
                }
            }
        }
        loaded
    }

    /// The module already in memory for `digest`, without loading it;
    /// `None` while it is still compiling.
    pub(crate) fn loaded(&self, digest: &str) -> Option<Arc<Module>> {
        let slot = lock(&self.slots).get(digest)?.clone();
        let guard = match slot.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        guard.clone()
    }

    /// Fetches a module from the disk cache or compiles it.
    fn load_uncached(
        &self,
        digest: String,
        wasm: &[u8],
        counters: &Counters,
    ) -> Result<Arc<Module>, RuntimeError> {
        let lookup = match self.disk.as_ref().map(|d| d.load(&self.engine, &digest)) {
            Some(Ok(lookup)) => lookup,
            Some(Err(error)) => {
                // The cache only saves time: a refused name compiles afresh.
                tracing::warn!(%digest, %error, "cannot read the compile cache; compiling");
                Lookup::Miss
            }
            None => Lookup::Miss,
        };
        let component = match lookup {
            Lookup::Hit(component) => {
                counters.disk_hits.fetch_add(1, Ordering::Relaxed);
                component
            }
            Lookup::Miss => {
                counters.cache_misses.fetch_add(1, Ordering::Relaxed);
                self.compile(&digest, wasm, counters)?
            }
        };
        let pre = self
            .linker
            .instantiate_pre(&component)
            .and_then(FunctionPre::new)
            .map_err(|e| RuntimeError::Link {
                digest: digest.clone(),
                message: format!("{e:#}"),
            })?;
        Ok(Arc::new(Module {
            digest,
            engine: self.engine.clone(),
            pre,
        }))
    }

    fn compile(
        &self,
        digest: &str,
        wasm: &[u8],
        counters: &Counters,
    ) -> Result<Component, RuntimeError> {
        let component = {
            let _permit = self.compiles.acquire();
            // A large component (a Go or Python one) takes seconds to
            // compile, once per digest: say so rather than go quiet.
            tracing::info!(
                digest,
                size = %Megabytes(wasm.len()),
                "compiling the component (once; then loaded from the cache)"
            );
            let started = std::time::Instant::now();
            let component =
                Component::new(&self.engine, wasm).map_err(|e| RuntimeError::Compile {
                    digest: digest.to_string(),
                    message: format!("{e:#}"),
                })?;
            tracing::info!(digest, elapsed = ?started.elapsed(), "compiled the component");
            component
        };
        counters.compiles.fetch_add(1, Ordering::Relaxed);
        if let Some(disk) = &self.disk {
            // The cache only saves time: failing to write it is not a load failure.
            let stored = component
                .serialize()
                .map_err(|e| e.to_string())
                .and_then(|bytes| disk.store(digest, &bytes).map_err(|e| e.to_string()));
            if let Err(error) = stored {
                tracing::warn!(digest, %error, "cannot write the compiled component to the cache");
            }
        }
        Ok(component)
    }
}

/// A size in megabytes, for people.
struct Megabytes(usize);

impl std::fmt::Display for Megabytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Sizes of components are far below 2^52 bytes.
        #[allow(clippy::cast_precision_loss)]
        let megabytes = self.0 as f64 / 1e6;
        write!(f, "{megabytes:.1} MB")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::{Builtin, Runtime, RuntimeConfig};

    #[test]
    fn a_module_is_found_loaded_only_once_a_load_compiled_it() {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        let digest = Builtin::AutoReady.digest();
        assert!(runtime.loaded(digest).is_none());
        let module = runtime.builtin(Builtin::AutoReady).unwrap();
        let found = runtime.loaded(digest).unwrap();
        assert!(std::sync::Arc::ptr_eq(&module, &found));
        assert!(
            runtime
                .loaded(Builtin::PatchAndTransform.digest())
                .is_none()
        );
        assert_eq!(runtime.stats().compiles, 1);
    }
}
