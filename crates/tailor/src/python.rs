//! Strategies written in Python, in every engine of this binary: with `--features python` it
//! embeds CPython and, when `TAILOR_PYTHON` names modules (comma-separated), imports them at
//! start (or `name=module:Class` entries, registered under `name`: what the Python package
//! passes) so their strategies are ones the simulator and the store build
//! by name. Nodes that `cluster up`, `experiment` or `demo` start inherit the variable, so they
//! load the same strategies (docs/python.md).

use anyhow::Result;

/// The environment variable that names the modules.
const MODULES: &str = "TAILOR_PYTHON";

/// Import the modules `TAILOR_PYTHON` names and register their strategies.
pub fn load() -> Result<()> {
    let modules: Vec<String> = std::env::var(MODULES)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(String::from)
        .collect();
    if modules.is_empty() {
        return Ok(());
    }
    register(&modules)
}

#[cfg(feature = "python")]
fn register(modules: &[String]) -> Result<()> {
    let names = tailor_py::embed::load_strategies(modules).map_err(anyhow::Error::msg)?;
    tracing::debug!(?names, "Python strategies registered");
    Ok(())
}

#[cfg(not(feature = "python"))]
fn register(modules: &[String]) -> Result<()> {
    anyhow::bail!(
        "{MODULES}={} names Python strategies, but this tailor was built without Python: \
         cargo build --release -p tailor --features python",
        modules.join(",")
    )
}
