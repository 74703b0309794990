//! The published setups of docs/presets.md, as built-in specs.

use crate::{Spec, SpecError};

/// Every preset: name and TOML text.
pub const PRESETS: &[(&str, &str)] = &[
    ("c3", include_str!("../presets/c3.toml")),
    ("c3-text", include_str!("../presets/c3-text.toml")),
    ("europar", include_str!("../presets/europar.toml")),
    ("heron", include_str!("../presets/heron.toml")),
    ("hector-cache", include_str!("../presets/hector-cache.toml")),
    ("hector-rml", include_str!("../presets/hector-rml.toml")),
    ("demo", include_str!("../presets/demo.toml")),
    ("live-c3", include_str!("../presets/live-c3.toml")),
    ("live-heron", include_str!("../presets/live-heron.toml")),
    ("live-europar", include_str!("../presets/live-europar.toml")),
    ("fault-slow-node", include_str!("../presets/fault-slow-node.toml")),
    ("fault-slow-coordinator", include_str!("../presets/fault-slow-coordinator.toml")),
    ("fault-gray-node", include_str!("../presets/fault-gray-node.toml")),
    ("fault-cold-start", include_str!("../presets/fault-cold-start.toml")),
    ("fault-herd", include_str!("../presets/fault-herd.toml")),
    ("fault-two-racks", include_str!("../presets/fault-two-racks.toml")),
    ("tail-at-scale", include_str!("../presets/tail-at-scale.toml")),
];

/// The preset called `name`.
pub fn preset(name: &str) -> Result<Spec, SpecError> {
    let (_, text) = PRESETS.iter().find(|(n, _)| *n == name).ok_or_else(|| SpecError::UnknownPreset {
        name: name.to_string(),
        known: PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
    })?;
    Spec::from_toml(text).map_err(|e| SpecError::Parse(format!("preset `{name}`: {e}")))
}

/// The TOML text of the preset called `name`, if it exists.
pub fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|p| p.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_expands() {
        for (name, _) in PRESETS {
            let spec = preset(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spec.name, *name);
            assert!(!crate::expand(&spec).unwrap().is_empty());
        }
    }

    #[test]
    fn published_parameters() {
        let c3 = preset("c3").unwrap();
        assert_eq!((c3.cluster.servers, c3.cluster.clients, c3.workload.requests), (50, 150, 600_000));
        let europar = preset("europar").unwrap();
        assert_eq!((europar.cluster.servers, europar.seeds.len()), (12, 15));
        assert!(matches!(preset("nope"), Err(SpecError::UnknownPreset { .. })));
    }
}
