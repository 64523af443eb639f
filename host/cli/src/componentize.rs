//! `plait function componentize`: a core WebAssembly module built for WASI
//! preview 1 becomes a plait component (`plait-componentize`).

use std::path::PathBuf;

use anyhow::{Context, Result};

#[derive(clap::Args)]
pub struct ComponentizeArgs {
    /// The core module: it exports `run-function`, `cabi_realloc` and
    /// `cabi_post_run-function` as the contract's canonical ABI lays them
    /// out, and imports WASI preview 1 and plait's log.
    pub core: PathBuf,
    /// Where to write the component.
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run(args: &ComponentizeArgs) -> Result<String> {
    let core = std::fs::read(&args.core)
        .with_context(|| format!("cannot read {}", args.core.display()))?;
    let component = plait_componentize::componentize(&core)
        .with_context(|| format!("{}", args.core.display()))?;
    std::fs::write(&args.output, &component)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    Ok(format!(
        "wrote {} ({} bytes)\n",
        args.output.display(),
        component.len()
    ))
}
