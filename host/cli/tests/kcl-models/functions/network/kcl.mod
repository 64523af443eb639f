[package]
name = "network"
version = "0.0.1"

[dependencies]
models = { path = "../../.up/kcl/models" }
