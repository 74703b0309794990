//! Which of Tailor's selectors can run in front of Cassandra, and why the others cannot.
//!
//! Cassandra tells a client three things about a replica: how long each attempt took (the
//! driver's per-attempt latency), how many attempts this client has in flight there, and, when
//! the policy polls its virtual tables, the ReadStage's pending/active/completed tasks and the
//! local read latency. A selector that needs anything else is refused with the reason rather
//! than run on facts that are always zero.

use tailor_core::selector::Engine;

/// Why `selector` cannot run on Cassandra with or without polled facts (`None`: it can),
/// from what the selector declares it needs ([`tailor_core::selector::Needs`]).
pub fn refusal(selector: &str, facts_polled: bool) -> Option<String> {
    let Some(needs) = tailor_core::selector::registry::needs(selector) else {
        return Some(format!("unknown selector `{selector}`"));
    };
    let why = Engine::Cassandra { facts_polled }.refusal(&needs)?;
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
        assert!(refusal("heron", true).unwrap().contains("busy with a large value"));
        assert!(refusal("tap", true).unwrap().contains("20 ms windows"));
        assert!(refusal("eft", true).unwrap().contains("pending work"));
        assert!(refusal("oracle", true).unwrap().contains("only the simulator"));
        assert!(refusal("prequal", true).unwrap().contains("probe"));
        for fine in ["random", "round-robin", "lor", "p2c-peak-ewma", "popularity-aware", "dynamic-snitch"] {
            assert_eq!(refusal(fine, false), None, "{fine}");
        }
        assert!(refusal("nope", true).unwrap().contains("unknown selector"));
    }
}
