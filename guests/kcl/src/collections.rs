//! The hash maps and sets the checker and evaluator use. Their keys are
//! names and config keys, hashed thousands of times per program: the Fx
//! hash does a few instructions per word where the standard library's
//! SipHash does dozens, and it needs no random seed. A program cannot
//! exploit its weaker collision resistance to do more than slow its own
//! call, which the call's deadline bounds anyway.

use rustc_hash::FxBuildHasher;

pub type IndexMap<K, V> = indexmap::IndexMap<K, V, FxBuildHasher>;
pub type HashMap<K, V> = std::collections::HashMap<K, V, FxBuildHasher>;
pub type HashSet<T> = std::collections::HashSet<T, FxBuildHasher>;
