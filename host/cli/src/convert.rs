//! `plait convert`: a `mode: Resources` Composition as a function pipeline,
//! or ResourceClaimDefinitions and ResourceBindingDefinitions as the XRDs
//! and Compositions they mean.

mod claims;

use std::path::Path;

use anyhow::{Context, Result, bail};
use plait_model::{Composition, Manifest};

use crate::files;

pub fn run(path: &Path) -> Result<String> {
    let documents = files::read_documents(path)?;
    if documents.iter().any(|(_, d)| claims::is_definition(d)) {
        let documents: Vec<(String, serde_json::Value)> = documents
            .into_iter()
            .enumerate()
            .map(|(i, (file, document))| {
                (format!("{} (document {})", file.display(), i + 1), document)
            })
            .collect();
        let converted = claims::convert(&documents)?;
        return files::to_yaml_stream(&converted);
    }
    let value = match <[_; 1]>::try_from(documents) {
        Ok([(_, value)]) => value,
        Err(documents) if documents.is_empty() => bail!("{}: no Composition found", path.display()),
        Err(documents) => bail!(
            "{}: expected one Composition, found {} documents (or {}s and {}s with their classes)",
            path.display(),
            documents.len(),
            claims::CLAIM_DEFINITION,
            claims::BINDING_DEFINITION
        ),
    };
    let composition = Composition::from_value(value)
        .with_context(|| format!("{}: not a valid Composition", path.display()))?;
    let pipeline = composition
        .to_pipeline()
        .with_context(|| format!("cannot convert Composition {:?}", composition.name()))?;
    let value = serde_json::to_value(&pipeline).context("cannot encode the Composition")?;
    files::to_yaml_stream(&[value])
}
