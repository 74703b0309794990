//! Tailor's scheduling core.
//!
//! Everything a request-scheduling strategy needs, and nothing an engine owns: no I/O, no
//! clock, no threads. Every call receives `now` (nanoseconds; virtual in the simulator,
//! monotonic in the store) and the event that happened, so a strategy is a deterministic
//! function of its inputs and runs unchanged in both engines.

pub mod coordinator;
pub mod facts;
pub mod flat;
pub mod local;
pub mod model;
pub mod node_map;
pub mod oracle;
pub mod plugin;
pub mod replica;
pub mod results;
pub mod ring;
pub mod selector;
pub mod stats;
pub mod time;
pub mod topology;
pub mod workload;

pub use model::{Consistency, CoordinatorId, JobMeta, NodeId, Op, Request, RequestId, RequestView, SizeHint, Tags};
pub use time::Nanos;

/// Whether `t` holds its type's default: for `#[serde(skip_serializing_if = "...")]` on a spec
/// field or tunables table added after results files began to carry their spec, so that it is
/// written only when set and older specs serialise (and fingerprint) as before.
pub fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}
