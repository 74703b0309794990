//! Experiment specs: what to run, on which cluster and workload, comparing which strategies.
//!
//! A spec is TOML (every field documented and defaulted, unknown fields rejected). Presets are
//! specs built into the binary. Any field can be overridden by its dotted path
//! (`workload.requests=100000`), and `[sweep]` lists values for any dotted path; a spec expands
//! into one [`RunPlan`] per swept point × selector × local policy × seed.

pub mod failover;
mod faults;
pub mod lint;
mod overrides;
mod plan;
pub mod presets;
mod schema;
pub mod shard;
mod topology;
pub mod trace;
mod validate;

pub use faults::{timetable, FailoverSpec, Fault, FaultKind, DEFAULT_SLOW_FACTOR};
pub use overrides::apply_override;
pub use plan::{expand, RunPlan};
pub use schema::*;
use serde::Deserialize;
pub use topology::TopologySpec;

/// A spec that cannot be used, with a message naming the field at fault.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    /// TOML that does not parse or does not fit the schema (unknown field, wrong type).
    #[error("{0}")]
    Parse(String),
    /// A field whose value is out of range or inconsistent with another.
    #[error("invalid `{field}`: {reason}")]
    Invalid { field: String, reason: String },
    /// A `--set` argument that is not `path=value`.
    #[error("bad override `{0}`: expected dotted.path=value")]
    BadOverride(String),
    /// A preset name that does not exist.
    #[error("unknown preset `{name}` (known: {known})")]
    UnknownPreset { name: String, known: String },
    /// A spec file that cannot be read or does not parse.
    #[error("spec file {path}: {reason}")]
    File { path: String, reason: String },
}

/// Load a preset by name or a spec file by path (`.toml`, or any existing file), then apply
/// `path=value` overrides: what `tailor sim <PRESET|SPEC.toml> --set ...` and the Python
/// package's `tailor.spec(...)` both run.
pub fn load<S: AsRef<str>>(name_or_path: &str, sets: &[S]) -> Result<Spec, SpecError> {
    let path = std::path::Path::new(name_or_path);
    let spec = if name_or_path.ends_with(".toml") || path.is_file() {
        let file_error = |reason: String| SpecError::File { path: name_or_path.to_string(), reason };
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        let mut spec = Spec::from_toml(&text).map_err(|e| file_error(e.to_string()))?;
        if spec.name == "custom" {
            if let Some(stem) = path.file_stem() {
                spec.name = stem.to_string_lossy().into_owned();
            }
        }
        spec
    } else {
        presets::preset(name_or_path)?
    };
    spec.with_overrides(sets)
}

impl Spec {
    /// Parse and validate a spec from TOML text.
    pub fn from_toml(text: &str) -> Result<Spec, SpecError> {
        let spec: Spec =
            toml::from_str(text).map_err(|e| SpecError::Parse(e.message().to_string() + &location(text, e.span())))?;
        spec.validate()?;
        Ok(spec)
    }

    /// The spec as TOML text (what results files echo).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a spec always serialises")
    }

    /// A copy with `path=value` overrides applied, validated.
    pub fn with_overrides<S: AsRef<str>>(&self, sets: &[S]) -> Result<Spec, SpecError> {
        let mut table = toml::Table::try_from(self).expect("a spec always serialises");
        for set in sets {
            let set = set.as_ref();
            let (path, value) = set.split_once('=').ok_or_else(|| SpecError::BadOverride(set.to_string()))?;
            apply_override(&mut table, path.trim(), value.trim())?;
            // check after each override so the error names the one at fault
            Spec::deserialize(toml::Value::Table(table.clone()))
                .map_err(|e: toml::de::Error| SpecError::Parse(format!("--set {set}: {}", e.message())))?;
        }
        let spec: Spec = table.try_into().map_err(|e: toml::de::Error| SpecError::Parse(e.message().to_string()))?;
        spec.validate()?;
        Ok(spec)
    }
}

fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}
