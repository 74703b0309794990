//! Every registered selector × local policy, and the pairs that cannot run on this workload
//! with the reason, read from each selector's declared needs (no list of names kept here).

use serde::Serialize;
use tailor_core::oracle::size::OracleKind;
use tailor_core::selector::{registry, Engine};
use tailor_core::{local, plugin, selector};

/// A pair left out of the comparison, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    /// Replica selector.
    pub selector: String,
    /// Local policy.
    pub local: String,
    /// Why it did not run.
    pub reason: String,
}

/// What the workload offers a selector beyond the simulator's own facts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Offers {
    /// The spec's size oracle (`workload.oracle`).
    pub oracle: OracleKind,
    /// Whether any request has a non-zero size (a trace may carry none).
    pub sizes: bool,
}

/// Every registered selector (built-in first, in the registry's order, then plugins).
pub fn selectors() -> Vec<String> {
    selector::SELECTORS.iter().map(|s| s.to_string()).chain(plugin::selector::names()).collect()
}

/// Every registered local policy (built-in first, then plugins).
pub fn locals() -> Vec<String> {
    local::LOCALS.iter().map(|s| s.to_string()).chain(plugin::local::names()).collect()
}

/// Why selector `name` cannot run in the simulator on a workload that `offers` this, if so.
pub fn refusal(name: &str, offers: Offers) -> Option<String> {
    let Some(needs) = registry::needs(name) else {
        return Some("it is not registered".into());
    };
    if let Some(why) = Engine::Simulator.refusal(&needs) {
        return Some(why);
    }
    let size = "it reads each request's size from the size oracle";
    match (needs.size_oracle, offers.oracle, offers.sizes) {
        (true, OracleKind::None, _) => Some(format!("{size}, and workload.oracle is none")),
        (true, _, false) => Some(format!("{size}, and the trace gives no sizes (every size is 0)")),
        _ => None,
    }
}

/// Every pair that can run, in registry order (selector, then local), and every one that
/// cannot, each with its reason.
pub fn every(offers: Offers) -> (Vec<(String, String)>, Vec<Skipped>) {
    let locals = locals();
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for s in selectors() {
        let why = refusal(&s, offers);
        for l in &locals {
            match &why {
                Some(reason) => skipped.push(Skipped { selector: s.clone(), local: l.clone(), reason: reason.clone() }),
                None => run.push((s.clone(), l.clone())),
            }
        }
    }
    (run, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Offers = Offers { oracle: OracleKind::Exact, sizes: true };

    #[test]
    fn with_sizes_every_registered_pair_runs() {
        let (run, skipped) = every(ALL);
        assert!(skipped.is_empty(), "{skipped:?}");
        assert_eq!(run.len(), selectors().len() * locals().len());
        assert!(run.contains(&("c3".to_string(), "fcfs".to_string())));
    }

    #[test]
    fn a_trace_without_sizes_skips_what_reads_the_size_oracle_by_its_declared_needs() {
        let (run, skipped) = every(Offers { sizes: false, ..ALL });
        assert_eq!(run.len() + skipped.len(), selectors().len() * locals().len());
        for s in &skipped {
            assert!(registry::needs(&s.selector).unwrap().size_oracle, "{s:?}");
            assert!(s.reason.contains("no sizes"), "{s:?}");
        }
        assert!(skipped.iter().any(|s| s.selector == "heron"));
        let none = refusal("heron", Offers { oracle: OracleKind::None, ..ALL }).unwrap();
        assert!(none.contains("workload.oracle"), "{none}");
        assert_eq!(refusal("c3", Offers { oracle: OracleKind::None, sizes: false }), None);
    }
}
