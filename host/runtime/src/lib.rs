//! plait runtime
