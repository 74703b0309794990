//! `tailor presets [NAME]`: what is built in.

use anyhow::{bail, Result};
use tailor_spec::presets::{preset, preset_text, PRESETS};

/// Arguments of `tailor presets`.
#[derive(clap::Args)]
pub struct PresetsArgs {
    /// Print this preset's TOML (a starting point for your own spec).
    name: Option<String>,
}

/// List presets with their descriptions, or print one.
pub fn run(args: PresetsArgs) -> Result<()> {
    match args.name {
        Some(name) => match preset_text(&name) {
            Some(text) => print!("{text}"),
            None => {
                bail!("unknown preset `{name}` (known: {})", PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "))
            }
        },
        None => {
            for (name, _) in PRESETS {
                println!("{name:14} {}", preset(name)?.description);
            }
        }
    }
    Ok(())
}
