//! Simulated requests per second on the full `c3` preset setup (50 servers, 150 clients,
//! 600 000 requests per run), per selector at T = 500 ms, the best of three runs, on one core.
//! Prints figures; asserts nothing. Run with `cargo bench -p tailor-sim`.

use std::time::Instant;
use tailor_spec::{expand, presets::preset};

fn main() {
    let spec = preset("c3")
        .expect("c3 preset")
        .with_overrides(&["seeds=[1]", "sweep.cluster.fluctuation.interval_ms=500"])
        .expect("overrides");
    let plans = expand(&spec).expect("plans");
    println!("{:<16} {:>10} {:>10} {:>14} {:>12}", "selector", "requests", "seconds", "requests/s", "events/req");
    let (mut total_reqs, mut total_secs) = (0u64, 0f64);
    for plan in &plans {
        // the best of three: the first run of a process also pays for growing its heap, and
        // a shared machine only ever slows a run down
        let (secs, out) = (0..3)
            .map(|_| {
                let started = Instant::now();
                let out = tailor_sim::run(plan, None).expect("run");
                (started.elapsed().as_secs_f64(), out)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("three runs");
        let reqs = plan.spec.workload.requests;
        total_reqs += reqs;
        total_secs += secs;
        println!(
            "{:<16} {:>10} {:>10.3} {:>14.0} {:>12.2}",
            plan.selector,
            reqs,
            secs,
            reqs as f64 / secs,
            out.events as f64 / reqs as f64
        );
    }
    println!(
        "{:<16} {:>10} {:>10.3} {:>14.0}   (one core)",
        "all",
        total_reqs,
        total_secs,
        total_reqs as f64 / total_secs
    );
}
