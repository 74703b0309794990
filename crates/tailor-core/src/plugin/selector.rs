//! Replica selectors registered at run time ([`super`]).

use super::{check_name, PluginError, Table};
use crate::selector::{registry, Needs, ReplicaSelector, SelectorEnv};
use std::sync::Arc;

/// Builds a plugin selector for one coordinator.
pub type Factory = Arc<dyn Fn(&SelectorEnv) -> Box<dyn ReplicaSelector> + Send + Sync>;

/// A plugin selector: what it needs from an engine and how to build it.
#[derive(Clone)]
pub struct Plugin {
    /// What it needs, as a built-in declares in its `REGISTRATION`.
    pub needs: Needs,
    /// Build it for one coordinator.
    pub factory: Factory,
}

static PLUGINS: Table<Plugin> = Table::new();

/// Register selector `name` (replacing a plugin of that name).
pub fn register(name: &str, needs: Needs, factory: Factory) -> Result<(), PluginError> {
    check_name(name)?;
    if registry::find(name).is_some() {
        return Err(PluginError::BuiltIn(name.to_string(), "selector"));
    }
    PLUGINS.insert(name, Plugin { needs, factory });
    Ok(())
}

/// Forget plugin selector `name`; whether there was one.
pub fn unregister(name: &str) -> bool {
    PLUGINS.remove(name)
}

/// The plugin selector called `name`.
pub fn find(name: &str) -> Option<Plugin> {
    PLUGINS.get(name)
}

/// Every plugin selector's name, in the order they were registered.
pub fn names() -> Vec<String> {
    PLUGINS.names()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::{build, is_known, Decision, World};

    struct First;
    impl ReplicaSelector for First {
        fn select(&mut self, _: u64, _: &crate::model::RequestView, r: &[u32], _: &dyn World) -> Decision {
            Decision::to(r[0])
        }
    }

    #[test]
    fn a_plugin_builds_by_name_and_cannot_shadow_a_built_in() {
        let factory: Factory = Arc::new(|_env| Box::new(First));
        assert_eq!(
            register("lor", Needs::NOTHING, factory.clone()).err(),
            Some(PluginError::BuiltIn("lor".into(), "selector"))
        );
        register("test-first", Needs::NOTHING, factory).unwrap();
        assert!(is_known("test-first"));
        let env = crate::selector::testkit::env(3);
        assert!(build("test-first", &Default::default(), &env).is_ok());
        assert_eq!(registry::needs("test-first"), Some(Needs::NOTHING));
        assert!(unregister("test-first"));
        assert!(!is_known("test-first"));
        let err = build("test-first", &Default::default(), &env).err().unwrap();
        assert!(err.to_string().contains("unknown selector `test-first`"), "{err}");
    }
}
