//! The recommendation in one sentence, and the caveats that bound it.

use super::rank::Row;
use tailor_spec::{ServiceModel, Spec};

/// Names listed after "tied with" before "and N more".
const LISTED_TIES: usize = 3;

/// `c3 with fcfs: p99 12.10 ms [11.80, 12.40], tied with lor/fcfs and 2 more.`
pub fn sentence(rows: &[Row]) -> String {
    let Some(best) = rows.first() else {
        return "No pair ran.".into();
    };
    let head = format!("{} with {}: p99 {}", best.selector, best.local, best.p99_ms.text_in(2, " ms"));
    let ties: Vec<String> = rows[1..].iter().filter(|r| r.tied_with_best).map(Row::name).collect();
    let tail = match ties.len() {
        0 if best.p99_ms.ci95.is_none() => ", the lowest of one seed each".to_string(),
        0 => ", ahead of every other pair (no other interval meets its own)".to_string(),
        n if n <= LISTED_TIES => format!(", tied with {}", join(&ties)),
        n => format!(", tied with {} and {} more", ties[..LISTED_TIES].join(", "), n - LISTED_TIES),
    };
    format!("{head}{tail}.")
}

fn join(names: &[String]) -> String {
    match names {
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        [] => String::new(),
    }
}

/// What limits the recommendation: the model, the seeds, the sample, ties, errors.
pub fn caveats(rows: &[Row], spec: &Spec, base: &str, speedup: f64) -> Vec<String> {
    let mut out = vec![format!(
        "Simulated, not measured: service times follow the `{base}` spec's model ({}), on {} servers with \
         replication {}; the ranking holds as far as that model fits your servers (change it with --spec or --set).",
        service(spec),
        spec.cluster.servers,
        spec.cluster.replication
    )];
    if speedup != 1.0 {
        out.push(format!("Arrivals replayed {speedup}× faster than the trace (--speedup)."));
    }
    let Some(best) = rows.first() else { return out };
    if best.p99_ms.n < 2 {
        out.push(
            "One seed: no confidence interval, so no difference can be told from noise; rerun with --seeds 1,2,3."
                .into(),
        );
    }
    let per_run = best.reads / best.p99_ms.n.max(1) as u64;
    if per_run < 10_000 {
        out.push(format!(
            "Each run measured {per_run} reads, so its p99 rests on its slowest {} or so.",
            (per_run / 100).max(1)
        ));
    }
    let tied = rows.iter().filter(|r| r.tied_with_best).count();
    if tied > 1 {
        out.push(format!(
            "{tied} of {} pairs are tied with the best: on this workload the choice among them matters less than \
             the seeds do; prefer the simplest to run.",
            rows.len()
        ));
    }
    if best.errors > 0 {
        out.push(format!("The best pair failed {} requests over its seeds.", best.errors));
    }
    out
}

fn service(spec: &Spec) -> String {
    let s = &spec.cluster.service;
    let model = match s.model {
        ServiceModel::Exponential => format!("exponential, mean {} ms", s.mean_ms),
        ServiceModel::Size => format!("size / {} Mbit/s + {} ms per request", s.bandwidth_mbps, s.overhead_ms),
    };
    let shared = match spec.cluster.shared_capacity {
        0 => String::new(),
        u => format!(" sharing {u} unit(s) of capacity"),
    };
    format!("{model}, {} worker(s) per server{shared}", spec.cluster.workers)
}

#[cfg(test)]
mod tests {
    use super::super::rank::rank;
    use super::*;
    use tailor_core::results::RunResult;

    fn runs(specs: &[(&str, &[f64])]) -> Vec<RunResult> {
        let mut out = Vec::new();
        for (sel, p99s) in specs {
            for (i, p) in p99s.iter().enumerate() {
                let mut r =
                    RunResult { selector: sel.to_string(), local: "fcfs".into(), seed: i as u64, ..Default::default() };
                r.read_latency_ms.p99 = *p;
                r.read_latency_ms.count = 500;
                out.push(r);
            }
        }
        out
    }

    #[test]
    fn the_sentence_names_the_best_and_its_ties() {
        let rows = rank(&runs(&[("c3", &[10.0, 12.0]), ("lor", &[11.0, 13.0]), ("random", &[40.0, 41.0])]));
        assert_eq!(sentence(&rows), "c3 with fcfs: p99 11.00 ms [-1.71, 23.71], tied with lor/fcfs.");
        let rows = rank(&runs(&[("c3", &[10.0, 10.1]), ("lor", &[20.0, 20.1])]));
        assert!(sentence(&rows).ends_with("ahead of every other pair (no other interval meets its own)."));
        let many = rank(&runs(&[
            ("a", &[1.0, 3.0]),
            ("b", &[1.0, 3.0]),
            ("c", &[1.0, 3.0]),
            ("d", &[1.0, 3.0]),
            ("e", &[1.0, 3.0]),
        ]));
        assert!(sentence(&many).ends_with("tied with b/fcfs, c/fcfs, d/fcfs and 1 more."), "{}", sentence(&many));
    }

    #[test]
    fn caveats_say_one_seed_and_few_reads() {
        let rows = rank(&runs(&[("c3", &[10.0]), ("lor", &[11.0])]));
        let text = caveats(&rows, &Spec::default(), "demo", 2.0).join(" ");
        assert!(text.contains("One seed") && text.contains("500 reads") && text.contains("2× faster"), "{text}");
        assert!(sentence(&rows).ends_with("the lowest of one seed each."));
    }
}
