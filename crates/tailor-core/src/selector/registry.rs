//! What a selector is to the rest of Tailor: its name, its source, and what it needs from an
//! engine, declared once in its own file as a [`Registration`] and listed by one line of
//! `register!` in `selector/mod.rs`. Engines, the Cassandra support check and the simulator's
//! choice of which optional facts to measure read these declarations; nothing else keeps a
//! list of names.

use super::{InvalidSetting, ReplicaSelector, SelectorConfig, SelectorEnv};

/// A fact a selector reads from its replicas' feedback ([`crate::facts::Feedback`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fact {
    /// Requests waiting or running at the replica (`queue_len`).
    QueueLen,
    /// The replica's service-time estimate (`service_time`).
    ServiceTime,
    /// Whether the replica is busy with a large request (`busy`, Héron).
    Busy,
    /// The change of the replica's queue length over its last window (`dq`, TAP). Optional to
    /// measure: an engine skips it when no selector of the run reads it.
    Dq,
    /// The replica's remaining work in time units (`pending_work`, EFT).
    PendingWork,
    /// The replica's Bloom filter bits of large keys (`bloom_bits`, Héron's oracle).
    BloomBits,
    /// The replica's busy worker-time share over its last 100 to 200 ms (`utilization`,
    /// gRPC's weighted round robin).
    Utilization,
}

impl Fact {
    /// What the fact is, for refusals that name it.
    pub fn describe(self) -> &'static str {
        match self {
            Fact::QueueLen => "each replica's queue length",
            Fact::ServiceTime => "each replica's service time",
            Fact::Busy => "whether each replica is busy with a large value",
            Fact::Dq => "the change of each replica's queue over 20 ms windows on every response",
            Fact::PendingWork => "each replica's pending work in time units",
            Fact::BloomBits => "each replica's Bloom filter of large keys",
            Fact::Utilization => "each replica's utilization (busy worker-time share)",
        }
    }
}

/// What a selector needs from the engine that runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// Facts it reads from feedback.
    pub facts: &'static [Fact],
    /// Whether it reads the size oracle's hint of each request (`RequestView::hint`).
    pub size_oracle: bool,
    /// Whether its rule is defined by the omniscient [`super::World`] (only the simulator has
    /// one): without it, it falls back on its own estimates (the store runs it so, with live
    /// presets' `cluster.omniscient = false` in the simulator too; the Cassandra check refuses
    /// it). A selector that merely prefers the world when present (EFT) says `false`.
    pub world: bool,
    /// Whether it sends probes its replicas must answer ([`ReplicaSelector::probes`]).
    pub probes: bool,
    /// Whether it asks for timers ([`ReplicaSelector::next_timer`]).
    pub timers: bool,
}

impl Needs {
    /// Nothing beyond its own responses (random, round robin, least outstanding).
    pub const NOTHING: Needs = Needs { facts: &[], size_oracle: false, world: false, probes: false, timers: false };

    /// Whether it reads `fact`.
    pub fn reads(&self, fact: Fact) -> bool {
        self.facts.contains(&fact)
    }
}

/// An engine that runs selectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The discrete-event simulator: feeds everything.
    Simulator,
    /// Tailor's store: everything, probes included (its replicas answer them at once from
    /// their replica core), but the omniscient world, which selectors that read it fall back
    /// from.
    Store,
    /// A real Cassandra through its Java driver's policy: per-attempt latency and requests in
    /// flight, and with `facts_polled` the ReadStage's queue and the local read latency.
    Cassandra {
        /// Whether the policy polls Cassandra's virtual tables for facts.
        facts_polled: bool,
    },
}

impl Engine {
    /// Why a selector with `needs` cannot run on this engine (`None`: it can).
    pub fn refusal(self, needs: &Needs) -> Option<String> {
        let cassandra = matches!(self, Engine::Cassandra { .. });
        if needs.probes && cassandra {
            return Some("it probes replicas for requests in flight and a latency estimate, and Cassandra's replicas answer no probe".into());
        }
        if needs.world && cassandra {
            return Some("it reads true queue lengths and service rates that only the simulator knows".into());
        }
        let Engine::Cassandra { facts_polled } = self else { return None };
        let polled = [Fact::QueueLen, Fact::ServiceTime];
        if let Some(f) = needs.facts.iter().find(|f| !polled.contains(f)) {
            return Some(format!("it reads {}, which Cassandra does not report", f.describe()));
        }
        match needs.facts.first() {
            Some(f) if !facts_polled => Some(format!(
                "it reads {}: enable fact polling (Cassandra's system_views.thread_pools and local_read_latency)",
                f.describe()
            )),
            _ => None,
        }
    }
}

/// One selector as the rest of Tailor sees it.
#[derive(Clone, Copy)]
pub struct Registration {
    /// Its name in specs, configs and reports.
    pub name: &'static str,
    /// Where its rule is published.
    pub source: &'static str,
    /// What it needs from an engine.
    pub needs: Needs,
    /// Build it for one coordinator.
    pub build: fn(&SelectorConfig, &SelectorEnv) -> Box<dyn ReplicaSelector>,
    /// Check its tunables in a [`SelectorConfig`] (what the types cannot).
    pub validate: fn(&SelectorConfig) -> Result<(), InvalidSetting>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("name", &self.name).field("needs", &self.needs).finish()
    }
}

/// A selector without tunables.
pub fn no_tunables(_: &SelectorConfig) -> Result<(), InvalidSetting> {
    Ok(())
}

/// A tunables check's error, named by its path in a spec (`selector.<strategy>.<field>`).
pub fn tunable(strategy: &str, e: super::c3::InvalidConfig) -> InvalidSetting {
    InvalidSetting {
        field: format!("selector.{strategy}.{}", e.field),
        reason: format!("{} is not {}", e.value, e.expected),
    }
}

/// The registration of selector `name`.
pub fn find(name: &str) -> Option<&'static Registration> {
    super::REGISTRY.iter().copied().find(|r| r.name == name)
}

/// What selector `name` needs, built in or plugin (`None`: no such selector).
pub fn needs(name: &str) -> Option<Needs> {
    find(name).map(|r| r.needs).or_else(|| crate::plugin::selector::find(name).map(|p| p.needs))
}
