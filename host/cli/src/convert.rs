//! `plait convert`: a `mode: Resources` Composition as a function pipeline.

use std::path::Path;

use anyhow::{Context, Result};
use plait_model::{Composition, Manifest};

use crate::files;

pub fn run(path: &Path) -> Result<String> {
    let value = files::read_one(path, "Composition")?;
    let composition = Composition::from_value(value)
        .with_context(|| format!("{}: not a valid Composition", path.display()))?;
    let pipeline = composition
        .to_pipeline()
        .with_context(|| format!("cannot convert Composition {:?}", composition.name()))?;
    let value = serde_json::to_value(&pipeline).context("cannot encode the Composition")?;
    files::to_yaml_stream(&[value])
}
