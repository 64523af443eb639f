//! End-to-end tests live in the test targets.
