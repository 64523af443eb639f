//! plait model
