//! The words every layer speaks: plait's API names and resources, JSON
//! object helpers, the one metrics registry every layer counts into, and
//! the broadcast channel. Imports nothing else of the crate.

pub mod api;
pub mod broadcast;
pub mod jitter;
pub mod metrics;
pub mod object;
