//! Tailor on Apache Cassandra.
//!
//! - [`launch`]: `tailor cassandra up/down`, a real Cassandra cluster on loopback from the
//!   server's jars (fetched once through Maven).
//! - [`policy`]: [`policy::TailorPolicy`], the CQL driver's load-balancing policy driving one of
//!   tailor-core's selectors unchanged, fed with per-attempt latency, in-flight counts and,
//!   optionally, server facts polled by [`facts`].
//! - [`bench`]: `tailor bench --engine cassandra`, the open-loop bench through a policy.
//! - [`experiment`]: every policy in turn on one cluster with a slowed node, or with the spec's
//!   faults injected ([`faults`]; failover figures from every read attempt, [`attempts`] and
//!   [`failover`]).
//! - [`twin`]: the experiment as a simulator spec, calibrated from the cluster's own figures.
//! - [`cli`]: the `tailor cassandra` command line.

pub mod attempts;
pub mod bench;
pub mod cli;
pub mod experiment;
pub mod facts;
pub mod failover;
pub mod faults;
pub mod launch;
pub mod load_sampler;
pub mod policy;
pub mod service_meter;
pub mod twin;
