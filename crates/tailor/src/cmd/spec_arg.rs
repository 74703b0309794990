//! Resolving `<PRESET|SPEC.toml>` plus `--set` overrides into a spec.

use anyhow::{Context, Result};
use std::path::Path;
use tailor_spec::{presets, Spec};

/// Load a preset by name or a spec file by path, then apply the `--set` overrides.
pub fn load_spec(name_or_path: &str, sets: &[String]) -> Result<Spec> {
    let spec = if name_or_path.ends_with(".toml") || Path::new(name_or_path).is_file() {
        let text =
            std::fs::read_to_string(name_or_path).with_context(|| format!("reading spec file {name_or_path}"))?;
        let mut spec = Spec::from_toml(&text).with_context(|| format!("in spec file {name_or_path}"))?;
        if spec.name == "custom" {
            if let Some(stem) = Path::new(name_or_path).file_stem() {
                spec.name = stem.to_string_lossy().into_owned();
            }
        }
        spec
    } else {
        presets::preset(name_or_path)?
    };
    Ok(spec.with_overrides(sets)?)
}
