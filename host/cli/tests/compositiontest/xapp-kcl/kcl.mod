[package]
name = "test-xapp"
version = "0.0.1"

[dependencies]
models = { path = "./model" }
