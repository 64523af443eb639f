//! Embeds plait's own CRDs (every `crds/*.yaml`) so the controller installs
//! the API it serves.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let dir = Path::new("crds");
    println!("cargo::rerun-if-changed=crds");
    let mut files: Vec<_> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect(),
        Err(_) => Vec::new(),
    };
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
