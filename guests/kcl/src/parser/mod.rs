//! KCL source to a syntax tree.
