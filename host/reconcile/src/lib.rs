//! plait reconcile
