//! Live runs the load generator could not drive cleanly (tailor-bench's validity verdict, stored
//! in each run): the page must not show their figures as plain results. A results file with
//! invalid runs gets one compact summary (a count, the runs and their reasons collapsed beneath),
//! its tables a `valid` column, and its figures a red mark that survives the PNG export.

use crate::data::point_label;
use tailor_core::results::RunResult;

/// The invalid live runs of one results file (or of the live side of an overlay).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Invalidity {
    /// Live runs (those carrying a verdict).
    pub live: usize,
    /// One line per invalid run, in file order (see [`banners`]).
    pub runs: Vec<String>,
}

impl Invalidity {
    /// The summary of `runs`; `None` when every run is valid (or simulated).
    pub fn of(runs: &[RunResult]) -> Option<Invalidity> {
        let lines = banners(runs);
        if lines.is_empty() {
            return None;
        }
        Some(Invalidity { live: runs.iter().filter(|r| r.valid.is_some()).count().max(lines.len()), runs: lines })
    }

    /// "3 of 8 live runs INVALID".
    pub fn headline(&self) -> String {
        let n = self.runs.len();
        format!("{n} of {} live run{} INVALID", self.live, if self.live == 1 { "" } else { "s" })
    }
}

/// The red label stamped on a figure drawn from `invalid` invalid runs among `live` live ones.
pub fn mark(invalid: usize, live: usize) -> String {
    format!("INVALID runs included ({invalid} of {live} live runs invalid)")
}

/// One line per invalid run, in file order: "live run invalid: <reasons> (<run>)".
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
        let runs = [ok, sim, bad];
        assert_eq!(
            banners(&runs),
            ["live run invalid: 408 timeouts after the warm-up; achieved 812 req/s of 1000 offered (c3 + fcfs, load=0.9, seed 2)"]
        );
        let summary = Invalidity::of(&runs).unwrap();
        assert_eq!(summary.headline(), "1 of 2 live runs INVALID");
        assert_eq!(summary.runs, banners(&runs));
        assert_eq!(Invalidity::of(&runs[..2]), None, "valid and simulated runs need no summary");
        assert_eq!(Invalidity::of(&runs[2..]).unwrap().headline(), "1 of 1 live run INVALID");
        assert_eq!(mark(1, 2), "INVALID runs included (1 of 2 live runs invalid)");
    }

    #[test]
    fn timeouts_are_split_from_errors() {
        let mut r = RunResult { errors: 10, ..Default::default() };
        r.extra.insert("timeouts".into(), 4.0);
        assert_eq!(errors_and_timeouts(&r), (6.0, 4.0));
        assert_eq!(errors_and_timeouts(&RunResult::default()), (0.0, 0.0));
    }
}
