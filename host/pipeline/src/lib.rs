//! plait pipeline
