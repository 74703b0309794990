//! Banners for live runs the load generator could not drive cleanly (tailor-bench's validity
//! verdict, stored in each run): the page must not show their figures as plain results.

use crate::data::point_label;
use tailor_core::results::RunResult;

/// One banner text per invalid run, in file order: "live run invalid: <reasons> (<run>)".
pub fn banners(runs: &[RunResult]) -> Vec<String> {
    runs.iter()
        .filter(|r| !r.is_valid())
        .map(|r| {
            let reasons =
                if r.invalid_reasons.is_empty() { "no reason recorded".into() } else { r.invalid_reasons.join("; ") };
            format!(
                "live run invalid: {reasons} ({} + {}, {}, seed {})",
                r.selector,
                r.local,
                point_label(&r.params),
                r.seed
            )
        })
        .collect()
}

/// Mean errors other than timeouts, and mean timeouts, of a run (`errors` counts both).
pub fn errors_and_timeouts(r: &RunResult) -> (f64, f64) {
    let timeouts = r.extra.get("timeouts").copied().unwrap_or(0.0);
    ((r.errors as f64 - timeouts).max(0.0), timeouts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_banner_per_invalid_run_with_its_reasons() {
        let ok = RunResult { selector: "c3".into(), local: "fcfs".into(), valid: Some(true), ..Default::default() };
        let sim = RunResult { valid: None, ..ok.clone() };
        let mut bad = RunResult { valid: Some(false), seed: 2, ..ok.clone() };
        bad.invalid_reasons =
            vec!["408 timeouts after the warm-up".into(), "achieved 812 req/s of 1000 offered".into()];
        bad.params.insert("workload.load".into(), "0.9".into());
        assert_eq!(
            banners(&[ok, sim, bad]),
            ["live run invalid: 408 timeouts after the warm-up; achieved 812 req/s of 1000 offered (c3 + fcfs, load=0.9, seed 2)"]
        );
    }

    #[test]
    fn timeouts_are_split_from_errors() {
        let mut r = RunResult { errors: 10, ..Default::default() };
        r.extra.insert("timeouts".into(), 4.0);
        assert_eq!(errors_and_timeouts(&r), (6.0, 4.0));
        assert_eq!(errors_and_timeouts(&RunResult::default()), (0.0, 0.0));
    }
}
