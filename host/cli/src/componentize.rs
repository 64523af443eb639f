//! `plait function componentize`: a core WebAssembly module built for WASI
//! preview 1 becomes a plait component (`plait-componentize`), a reactor's
//! initialisation snapshotted unless asked not to.

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
    /// Run the module's initialisation (Go's runtime start and package
    /// inits) at the start of every call instead of once, here. Only for a
    /// function whose initialisation must see the call's directories or
    /// must differ from call to call.
    #[arg(long)]
    pub no_snapshot: bool,
}

pub fn run(args: &ComponentizeArgs) -> Result<String> {
    let core = std::fs::read(&args.core)
        .with_context(|| format!("cannot read {}", args.core.display()))?;
    let initialise = if args.no_snapshot {
        plait_componentize::Initialise::EveryCall
    } else {
        plait_componentize::Initialise::Snapshot
    };
    let component = plait_componentize::componentize_with(&core, initialise)
        .with_context(|| format!("{}", args.core.display()))?;
    std::fs::write(&args.output, &component)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    Ok(format!(
        "wrote {} ({} bytes)\n",
        args.output.display(),
        component.len()
    ))
}
