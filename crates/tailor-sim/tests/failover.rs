//! The failure presets (`fault-*`) run small: each measures its fault, and the measures say
//! what the faults mean — a selector that sees latency moves reads off a slow or hung node,
//! random never does; a down node's copies time out; without faults nothing is measured.

use tailor_core::results::{FaultOutcome, RunResult};
use tailor_spec::{expand, presets::preset};

/// The first fault's outcome of each selector's run of preset `name` (one seed).
fn outcomes(name: &str, selectors: &str) -> Vec<(String, FaultOutcome, RunResult)> {
    let sets = [format!("compare.selectors={selectors}"), "seeds=[1]".into()];
    let spec = preset(name).unwrap().with_overrides(&sets).unwrap();
    let outs = tailor_sim::run_all(&expand(&spec).unwrap(), None, &|_, _| {}).unwrap();
    outs.into_iter()
        .map(|o| {
            let f = o.result.failover.clone().expect("a run with faults measures failover");
            assert_eq!(f.faults.len(), 1, "{name}");
            assert!(!f.timeline.is_empty(), "the first seed keeps its timeline");
            (o.result.selector.clone(), f.faults[0].clone(), o.result)
        })
        .collect()
}

/// A sane outcome: its figures in range and consistent with each other.
fn check(name: &str, selector: &str, o: &FaultOutcome) {
    let during = o.end_ms - o.start_ms;
    assert!(o.p99_before_ms > 0.0 && o.p99_during_ms > 0.0, "{name} {selector}: {o:?}");
    assert!((0.0..=1.0).contains(&o.share_during), "{name} {selector}: {o:?}");
    if let Some(shed) = o.shed_ms {
        assert!((0.0..=during).contains(&shed), "{name} {selector}: shed {shed} outside the fault");
    }
}

fn find<'a>(runs: &'a [(String, FaultOutcome, RunResult)], selector: &str) -> &'a FaultOutcome {
    &runs.iter().find(|r| r.0 == selector).unwrap().1
}

#[test]
fn lor_and_c3_move_reads_off_a_slow_node_and_random_never_does() {
    for preset in ["fault-slow-node", "fault-herd"] {
        let runs = outcomes(preset, "random,lor,c3");
        runs.iter().for_each(|(s, o, _)| check(preset, s, o));
        let random = find(&runs, "random");
        assert_eq!(random.shed_ms, None, "{preset}: random keeps sending its share: {random:?}");
        assert!(random.share_during > 0.06, "{preset}: random's share {}", random.share_during);
        for s in ["lor", "c3"] {
            let o = find(&runs, s);
            let shed = o.shed_ms.unwrap_or_else(|| panic!("{preset}: {s} never shed the slow node: {o:?}"));
            assert!(shed < 1000.0, "{preset}: {s} took {shed} ms");
            assert!(o.share_during < random.share_during / 2.0, "{preset}: {s} {o:?}");
            assert!(o.p99_during_ms < random.p99_during_ms, "{preset}: {s} {o:?} vs random {random:?}");
        }
    }
}

#[test]
fn a_gray_node_hangs_reads_until_they_time_out_and_feedback_moves_them_off() {
    let runs = outcomes("fault-gray-node", "random,c3");
    runs.iter().for_each(|(s, o, _)| check("fault-gray-node", s, o));
    let (random, c3) = (find(&runs, "random"), find(&runs, "c3"));
    // every read sent to the hung node waits out the 1 s client timeout
    assert!(random.timeouts > 100 && random.p99_during_ms >= 1000.0, "{random:?}");
    assert!(c3.timeouts < random.timeouts / 2, "c3 learns from the timeouts: {c3:?} vs {random:?}");
}

#[test]
fn a_down_node_loses_its_copies_and_detection_takes_it_out() {
    let runs = outcomes("fault-cold-start", "random,lor");
    for (s, o, r) in &runs {
        check("fault-cold-start", s, o);
        assert!(o.timeouts > 0, "{s}: copies sent to the down node time out: {o:?}");
        // after detection (0.5 s) no coordinator sends it reads: shed by then at the latest
        assert!(o.shed_ms.is_some_and(|t| t <= 600.0), "{s}: {o:?}");
        assert_eq!(r.errors, 0, "{s}: every timed-out read is retried on another replica");
    }
}

#[test]
fn a_slow_coordinator_delays_the_reads_it_takes_whatever_the_selector() {
    let runs = outcomes("fault-slow-coordinator", "random,c3");
    for (s, o, r) in &runs {
        check("fault-slow-coordinator", s, o);
        // the clients keep sending coordinator 0 its twelfth: nothing in the run routes around it
        assert_eq!(o.shed_ms, None, "{s}: {o:?}");
        assert!((o.share_during - 1.0 / 12.0).abs() < 0.02, "{s}: {o:?}");
        // its reads (8 % of all) each wait 50 ms first: the p99 during the fault is past it
        assert!(o.p99_during_ms >= 50.0 && o.p99_before_ms < 50.0, "{s}: {o:?}");
        assert_eq!((o.timeouts, o.failed, r.errors), (0, 0, 0), "{s}: a slow coordinator loses nothing");
        // 45,000 reads, the first second's (about 7,200) warm-up
        assert!(r.requests > 35_000, "{s}: every delayed request is taken and answered: {}", r.requests);
    }
    let (random, c3) = (find(&runs, "random"), find(&runs, "c3"));
    // replica selection moves no read off the slow coordinator, so the selectors' tails during
    // the fault are the delay plus their usual tail
    assert!(c3.p99_during_ms < random.p99_during_ms * 1.5, "{c3:?} vs {random:?}");
}

#[test]
fn runs_without_faults_measure_no_failover() {
    let spec = tailor_spec::Spec::default().with_overrides(&["workload.requests=2000"]).unwrap();
    let outs = tailor_sim::run_all(&expand(&spec).unwrap(), None, &|_, _| {}).unwrap();
    assert!(outs.iter().all(|o| o.result.failover.is_none()));
    let json = serde_json::to_string(&outs[0].result).unwrap();
    assert!(!json.contains("failover"), "absent from results without faults");
}
