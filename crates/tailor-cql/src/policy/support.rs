//! Which of Tailor's selectors can run in front of Cassandra, and why the others cannot.
//!
//! Cassandra tells a client three things about a replica: how long each attempt took (the
//! driver's per-attempt latency), how many attempts this client has in flight there, and, when
//! the policy polls its virtual tables, the ReadStage's pending/active/completed tasks and the
//! local read latency. A selector that needs anything else is refused with the reason rather
//! than run on facts that are always zero.

/// Why `selector` cannot run on Cassandra with or without polled facts (`None`: it can).
pub fn refusal(selector: &str, facts_polled: bool) -> Option<String> {
    let why = match selector {
        "random"
        | "round-robin"
        | "lor"
        | "p2c-peak-ewma"
        | "popularity-aware"
        | "dynamic-snitch"
        | "slow-replica-avoidance" => return None,
        "c3" if facts_polled => return None,
        "c3" => {
            "C3 scores replicas by their queue length and service time: enable fact polling \
                 (Cassandra's system_views.thread_pools and local_read_latency)"
        }
        "heron" => {
            "Héron needs each replica's busy-with-a-large-value status and Bloom filter of \
                    large keys, which Cassandra does not report"
        }
        "tap" => {
            "TAP needs the change of each replica's queue over 20 ms windows on every response; \
                  polled snapshots cannot give it"
        }
        "eft" | "eft-sharded" => {
            "EFT needs each replica's pending work in time units, which Cassandra \
                                  does not report"
        }
        "oracle" => "the oracle reads true queue lengths that only the simulator knows",
        "prequal" => {
            "Prequal probes replicas for requests in flight and a latency estimate, and \
                      Cassandra answers no such probe"
        }
        other => return Some(format!("unknown selector `{other}`")),
    };
    Some(format!("selector `{selector}` cannot run on Cassandra: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_selector_has_an_answer_and_c3_needs_polling() {
        for name in tailor_core::selector::SELECTORS {
            let r = refusal(name, true);
            assert!(r.as_deref().is_none_or(|m| !m.starts_with("unknown")), "{name}");
        }
        assert!(refusal("c3", true).is_none());
        assert!(refusal("c3", false).unwrap().contains("enable fact polling"));
        assert!(refusal("heron", true).unwrap().contains("Bloom"));
        assert!(refusal("nope", true).unwrap().contains("unknown selector"));
    }
}
