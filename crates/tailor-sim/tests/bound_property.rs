//! Every schedule the simulator produces is feasible for the relaxation, so its max weighted
//! flow is never below the lower bound: checked on many random small instances, with both
//! weightings, every selector family and every local policy.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tailor_core::{local::LOCALS, selector::SELECTORS};
use tailor_spec::{expand, Spec};

#[test]
fn simulated_schedules_never_beat_the_bound() {
    let mut rng = SmallRng::seed_from_u64(2026);
    let mut checked = 0;
    for case in 0..120u64 {
        let servers = rng.random_range(1..=3usize);
        let replication = rng.random_range(1..=servers);
        let workers = rng.random_range(1..=2usize);
        let requests = rng.random_range(2..=6u64);
        let selector = SELECTORS[rng.random_range(0..SELECTORS.len())];
        let local = LOCALS[rng.random_range(0..LOCALS.len())];
        let weighting = if rng.random_bool(0.5) { "flow" } else { "stretch" };
        let spec = Spec::default()
            .with_overrides(&[
                format!("cluster.servers={servers}"),
                format!("cluster.replication={replication}"),
                format!("cluster.workers={workers}"),
                "cluster.service.model=size".into(),
                "workload.sizes={ kind = \"mixture\", values = [1000, 20000, 90000], weights = [0.5, 0.3, 0.2] }"
                    .into(),
                format!("workload.requests={requests}"),
                format!("workload.load={}", rng.random_range(0.5..3.0)),
                format!("compare.selectors={selector}"),
                format!("compare.locals={local}"),
                format!("seeds=[{case}]"),
                "bound.enabled=true".into(),
                format!("bound.requests={requests}"),
                format!("bound.weighting={weighting}"),
            ])
            .unwrap();
        let plans = expand(&spec).unwrap();
        for out in tailor_sim::run_all(&plans, None, &|_, _| {}).unwrap() {
            let b = out.result.bound.expect("bound computed");
            assert!(
                b.max_weighted_flow >= b.bound * (1.0 - 1e-9),
                "case {case} ({selector}/{local}, {weighting}, m={servers} k={replication} P={workers}): schedule {} below bound {}",
                b.max_weighted_flow,
                b.bound
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 120);
}
