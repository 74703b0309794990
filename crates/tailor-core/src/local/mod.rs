//! Local queue policies at the replica (docs/strategies.md, Local queue policies).
//!
//! A replica pushes every request it receives into its local queue and, whenever one of its
//! `P` workers frees, pops the next one to run. The payload `T` is whatever the engine needs
//! to carry along (an event handle in the simulator, a reply channel in the store).

use crate::model::JobMeta;
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

pub mod audit;
mod fifo;
#[cfg(test)]
mod template;

/// Declare each local policy's module and list it (`pub const REGISTRATION` and `pub fn build`
/// in its file): adding a policy is its file plus its module's name here.
macro_rules! register {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every local policy, in the order reports list them.
        pub const REGISTRY: &[&LocalRegistration] = &[$(&$module::REGISTRATION),*];
        /// Every local policy name, in the order reports list them.
        pub const LOCALS: &[&str] = &[$($module::REGISTRATION.name),*];

        /// Build the local policy called `name` (a built-in, or a plugin registered at run time,
        /// [`crate::plugin::local`]); `seed` feeds policies that draw at random.
        pub fn build<T: Send + 'static>(
            name: &str,
            cfg: &LocalConfig,
            seed: u64,
        ) -> Result<Box<dyn LocalQueue<T>>, crate::selector::UnknownStrategy> {
            let queue = None$(.or_else(|| (name == $module::REGISTRATION.name).then(|| $module::build(cfg, seed))))*
                .or_else(|| crate::plugin::local::build(name, seed))
                .ok_or_else(|| crate::selector::UnknownStrategy {
                    kind: "local policy",
                    name: name.to_string(),
                    known: known_names(),
                })?;
            // a debug build watches every policy's invariants (`audit`); a release build runs it bare
            Ok(if cfg!(debug_assertions) { Box::new(audit::Audited::new(queue)) } else { queue })
        }
    };
}

register!(fcfs, max_stretch, rml, sjf, max_wait_over_size, fair_share, rein_sbf, las);

/// Whether a local policy called `name` exists, built in or registered as a plugin.
pub fn is_known(name: &str) -> bool {
    LOCALS.contains(&name) || crate::plugin::local::is_registered(name)
}

/// Every local policy's name, built-ins first then plugins, comma-separated (for errors).
pub fn known_names() -> String {
    let mut names: Vec<String> = LOCALS.iter().map(|s| s.to_string()).collect();
    names.extend(crate::plugin::local::names());
    names.join(", ")
}

/// One local policy as the rest of Tailor sees it. A local policy needs nothing from an engine
/// but its requests' release times, sizes and service estimates ([`JobMeta`]), which every
/// engine gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalRegistration {
    /// Its name in specs, configs and reports.
    pub name: &'static str,
    /// Where its rule is published.
    pub source: &'static str,
}

/// A replica's queue-ordering policy.
pub trait LocalQueue<T>: Send {
    /// A request arrived at `now`.
    fn push(&mut self, now: Nanos, meta: JobMeta, payload: T);
    /// A worker freed at `now`: the request it should run next, if any.
    fn pop(&mut self, now: Nanos) -> Option<(JobMeta, T)>;
    /// Requests waiting (not running).
    fn len(&self) -> usize;
    /// True when nothing waits.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Where the next pop and the next push touch the queue's memory, as addresses never read
    /// through (null where a policy does not say): for an engine that asks the CPU for them
    /// ahead, as the simulator does at thousands of servers, where they are cache misses.
    fn footprint(&self) -> [*const u8; 2] {
        [std::ptr::null(); 2]
    }
}

/// Tunables of every local policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalConfig {
    /// Random Multi-Level.
    pub rml: rml::RmlConfig,
    /// Share-based fair queueing (written into a spec only when set, so older specs serialise
    /// as before).
    #[serde(skip_serializing_if = "crate::is_default")]
    pub fair_share: fair_share::FairShareConfig,
    /// Least attained service (written only when set, as `fair_share`).
    #[serde(skip_serializing_if = "crate::is_default")]
    pub las: las::LasConfig,
}

impl LocalConfig {
    /// Check every local policy's tunables; names the first bad field.
    pub fn validate(&self) -> Result<(), crate::selector::InvalidSetting> {
        self.rml
            .validate()
            .map_err(|e| crate::selector::InvalidSetting { field: "local.rml".into(), reason: e.to_string() })?;
        self.fair_share
            .validate()
            .map_err(|reason| crate::selector::InvalidSetting { field: "local.fair_share.shares".into(), reason })?;
        self.las
            .validate()
            .map_err(|reason| crate::selector::InvalidSetting { field: "local.las.half_life_ms".into(), reason })
    }
}

#[cfg(test)]
pub(crate) mod testkit {
    //! Helpers for local-queue tests.
    use crate::model::{JobMeta, Tags};
    use crate::time::Nanos;

    /// A job with the given id, release time and processing time.
    pub fn job(id: u64, release: Nanos, service: Nanos) -> JobMeta {
        JobMeta { id, release, enqueued: release, service, size: service, tags: Tags::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_and_unknown_is_an_error() {
        for name in LOCALS {
            assert!(build::<()>(name, &LocalConfig::default(), 1).is_ok(), "{name}");
        }
        let err = build::<()>("lifo", &LocalConfig::default(), 1).err().unwrap();
        assert!(err.to_string().contains("unknown local policy `lifo`"), "{err}");
    }
}
