//! function-sdk-go's response defaults.

use std::time::Duration;

/// `response.DefaultTTL`: how long Crossplane may cache a response that
/// does not say otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);
