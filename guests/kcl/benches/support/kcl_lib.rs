//! The real KCL's time on the typical Composition program, for the KCL
//! benches (this crate's and plait-runtime's): kcl-lib 0.12.3 from the venv
//! `make kcl-oracle` installs, timed inside its own process by
//! `kcl_lib_timer.py` (Python's and KCL's start are not counted).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The venv, as the Makefile's `kcl-oracle` makes it.
const KCL_LIB_VENV: &str = ".cache/plait/kcl-lib-0.12.3";

/// kcl-lib's median per run of the program over `runs` runs, or a notice
/// saying why it was not measured. `dir` is guests/kcl/benches, where the
/// program, its params and the timer are.
pub fn median(dir: &Path, runs: usize) -> Result<Duration, String> {
    let home = std::env::var_os("HOME").unwrap_or_default();
    let python = Path::new(&home).join(KCL_LIB_VENV).join("bin/python");
    if !python.exists() {
        return Err(format!(
            "kcl-lib not measured: no venv at {} (make kcl-oracle)",
            python.display()
        ));
    }
    let output = Command::new(python)
        .arg(dir.join("kcl_lib_timer.py"))
        .arg(dir.join("composition.k"))
        .arg(dir.join("composition.params.json"))
        .arg(runs.to_string())
        .output()
        .map_err(|e| format!("kcl-lib not measured: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "kcl-lib failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let seconds: f64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("kcl-lib's timer printed no figure: {e}"))?;
    Ok(Duration::from_secs_f64(seconds))
}
