//! plait guest-build
