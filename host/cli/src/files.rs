//! Reading manifests from files, directories and standard input.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Reads a file, or standard input for `-`.
pub fn read_text(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read standard input")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Every YAML document in a file, or in the `.yaml`/`.yml`/`.json` files of a
/// directory (sorted by name), with the file each came from.
pub fn read_documents(path: &Path) -> Result<Vec<(PathBuf, Value)>> {
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read directory {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_file()
                    && matches!(
                        p.extension().and_then(|e| e.to_str()),
                        Some("yaml" | "yml" | "json")
                    )
            })
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut documents = Vec::new();
    for file in files {
        let text = read_text(&file)?;
        let values = plait_model::parse_documents(&text, &file.display().to_string())?;
        documents.extend(values.into_iter().map(|v| (file.clone(), v)));
    }
    Ok(documents)
}

/// Every YAML document under a path: a file, standard input for `-`, or
/// the `.yaml`/`.yml`/`.json` files of a directory and its subdirectories
/// (sorted by path).
pub fn read_documents_recursive(path: &Path) -> Result<Vec<(PathBuf, Value)>> {
    if !path.is_dir() {
        return read_documents(path);
    }
    let mut files = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)
            .with_context(|| format!("cannot read directory {}", dir.display()))?
        {
            let entry_path = entry
                .with_context(|| format!("cannot read directory {}", dir.display()))?
                .path();
            if entry_path.is_dir() {
                pending.push(entry_path);
            } else if matches!(
                entry_path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            ) {
                files.push(entry_path);
            }
        }
    }
    files.sort();
    let mut documents = Vec::new();
    for file in files {
        documents.extend(read_documents(&file)?);
    }
    Ok(documents)
}

/// Exactly one document from a file.
pub fn read_one(path: &Path, what: &str) -> Result<Value> {
    let mut documents = read_documents(path)?;
    match documents.len() {
        1 => Ok(documents.remove(0).1),
        0 => bail!("{}: no {what} found", path.display()),
        n => bail!(
            "{}: expected one {what}, found {n} documents",
            path.display()
        ),
    }
}

/// Serialises values as a YAML stream, each document preceded by `---`.
pub fn to_yaml_stream(values: &[Value]) -> Result<String> {
    let mut out = String::new();
    for value in values {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(value).context("cannot write YAML")?);
    }
    Ok(out)
}
