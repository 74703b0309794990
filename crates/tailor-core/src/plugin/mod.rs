//! Strategies registered while the process runs, by a front end that defines them in another
//! language (the Python package, `crates/tailor-py`). A built-in strategy registers itself at
//! compile time in its own file (`selector::register!`, `local::register!`); a plugin registers
//! here under a name no built-in uses, with a factory the engines call exactly as they call a
//! built-in's `build`. Engines never see the difference: `selector::build` and `local::build`
//! look here after the built-ins.

pub mod local;
pub mod selector;

/// Why a plugin could not be registered.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PluginError {
    /// The name is empty, too long, or has characters a spec or a report cannot carry.
    #[error("invalid strategy name `{0}`: use 1 to 64 letters, digits, `-`, `_` or `.`")]
    BadName(String),
    /// A built-in strategy has this name.
    #[error("`{0}` is a built-in {1}; give the new one another name")]
    BuiltIn(String, &'static str),
}

/// Check a plugin's name: what specs, CSV files and reports can carry.
fn check_name(name: &str) -> Result<(), PluginError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(PluginError::BadName(name.to_string()))
    }
}

/// A process-wide table of plugins of one kind, by name. Registering a name again replaces the
/// entry (a notebook cell run twice redefines its strategy).
struct Table<F> {
    entries: std::sync::RwLock<Vec<(String, F)>>,
}

impl<F: Clone> Table<F> {
    const fn new() -> Self {
        Table { entries: std::sync::RwLock::new(Vec::new()) }
    }

    fn insert(&self, name: &str, entry: F) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        entries.retain(|(n, _)| n != name);
        entries.push((name.to_string(), entry));
    }

    fn get(&self, name: &str) -> Option<F> {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        entries.iter().find(|(n, _)| n == name).map(|(_, f)| f.clone())
    }

    fn remove(&self, name: &str) -> bool {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        let before = entries.len();
        entries.retain(|(n, _)| n != name);
        entries.len() != before
    }

    fn names(&self) -> Vec<String> {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        entries.iter().map(|(n, _)| n.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_spec_can_carry() {
        assert!(check_name("py-lor").is_ok());
        assert!(check_name("my_sel.v2").is_ok());
        for bad in ["", "a b", "x,y", "é", &"x".repeat(65)] {
            assert_eq!(check_name(bad), Err(PluginError::BadName(bad.to_string())));
        }
    }
}
