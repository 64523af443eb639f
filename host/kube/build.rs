//! Embeds plait's own CRDs (every `deploy/base/crds/*.yaml`, the same files
//! `kubectl apply -k deploy/` installs) so the controller installs the API it
//! serves.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let dir = Path::new("../../deploy/base/crds");
    println!("cargo::rerun-if-changed=../../deploy/base/crds");
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut all = String::new();
    for file in files {
        println!("cargo::rerun-if-changed={}", file.display());
        all.push_str("---\n");
        all.push_str(&std::fs::read_to_string(&file)?);
        all.push('\n');
    }
    let out = std::env::var("OUT_DIR").map_err(std::io::Error::other)?;
    std::fs::write(Path::new(&out).join("crds.yaml"), all)
}
