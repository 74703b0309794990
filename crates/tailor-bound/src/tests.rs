//! Tests of the bound against hand-computed optima, closed forms, an independent max-flow
//! oracle, and non-preemptive heuristics (which it must never exceed).

use crate::maxflow;
use crate::*;
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn job(r: f64, p: f64, w: f64, m: &[u32]) -> Job {
    Job { release_ms: r, processing_ms: p, weight: w, machines: m.to_vec() }
}

/// Every backend this build has: HiGHS only with the `highs` feature.
#[cfg(feature = "highs")]
const BACKENDS: [Backend; 2] = [Backend::Highs, Backend::MaxFlow];
#[cfg(not(feature = "highs"))]
const BACKENDS: [Backend; 1] = [Backend::MaxFlow];

fn tight(backend: Backend) -> BoundOptions {
    BoundOptions { rel_tol: 1e-7, threads: None, backend }
}

/// Asserts that, with every backend, the bound is within `rel` of `expected` and never above
/// it; returns the first backend's result.
fn assert_bound(inst: &Instance, expected: f64, rel: f64) -> Bound {
    let results = BACKENDS.map(|backend| {
        let b = lower_bound(inst, &tight(backend)).unwrap();
        assert!(b.value <= expected * (1.0 + 1e-8), "{backend:?}: bound {b:?} above optimum {expected}");
        assert!(b.value >= expected * (1.0 - rel), "{backend:?}: bound {b:?} too far below optimum {expected}");
        assert!(b.upper >= b.value && b.upper - b.value <= 1e-7 * b.upper, "{backend:?}: {b:?}");
        b
    });
    // Both answer the same LP, so they build it the same size and take the same steps.
    assert!(results.iter().all(|r| r.variables == results[0].variables), "{results:?}");
    results[0]
}

#[test]
fn single_request_runs_alone() {
    let flow = Instance::with_weighting(3, [(4.0, 5.0, vec![1, 2])], Weighting::Flow);
    let b = lower_bound(&flow, &BoundOptions::default()).unwrap();
    assert_eq!(b.value, 5.0);
    // FCFS already meets `max w p`: no LP needed.
    assert_eq!(b.lp_solves, 0);
    let stretch = flow.reweighted(Weighting::Stretch);
    assert_eq!(lower_bound(&stretch, &BoundOptions::default()).unwrap().value, 1.0);
}

#[test]
fn migration_beats_every_non_preemptive_schedule() {
    // Three 2 ms requests on two machines: McNaughton's wrap-around reaches 3, while any
    // non-preemptive schedule puts two on one machine and ends at 4.
    let inst = Instance::with_weighting(2, (0..3).map(|_| (0.0, 2.0, vec![0, 1])), Weighting::Flow);
    let b = assert_bound(&inst, 3.0, 1e-6);
    assert!(b.lp_solves >= 2 && b.variables >= 6, "{b:?}");
}

#[test]
fn restricted_machines_concentrate_work() {
    // Two requests may only use machine 0, so one of them ends at 2 whatever the third does.
    let inst = Instance::new(2, vec![job(0.0, 1.0, 1.0, &[0]), job(0.0, 1.0, 1.0, &[0]), job(0.0, 1.0, 1.0, &[0, 1])]);
    assert_bound(&inst, 2.0, 1e-6);
}

#[test]
fn preemption_helps_stretch_with_releases() {
    // A 10 ms request at 0 and a 1 ms one at 1 on one machine: pausing the long one gives
    // stretches 1 and 11/10; without preemption the best is 1.2 (idle until 1).
    let inst = Instance::with_weighting(1, [(0.0, 10.0, vec![0]), (1.0, 1.0, vec![0])], Weighting::Stretch);
    assert_bound(&inst, 1.1, 1e-6);
    // For max flow FCFS is optimal on one machine, preemptive or not: 10 then 1 ends at 11.
    assert_bound(&inst.reweighted(Weighting::Flow), 10.0, 1e-6);
}

#[test]
fn one_machine_fcfs_is_optimal_for_max_flow() {
    // Completions 3, 4, 5 for releases 0, 1, 2: every flow is 3.
    let inst =
        Instance::with_weighting(1, [(0.0, 3.0, vec![0]), (1.0, 1.0, vec![0]), (2.0, 1.0, vec![0])], Weighting::Flow);
    assert_bound(&inst, 3.0, 1e-6);
}

#[test]
fn unit_sizes_at_zero_on_one_machine_match_single_simple() {
    // All released at 0 on one machine, preemption is useless and the optimum runs requests by
    // non-increasing weight (Euro-Par Theorem 1): max over k of w_(k) * k.
    for n in 1..=6 {
        let inst = Instance::with_weighting(1, (0..n).map(|_| (0.0, 1.0, vec![0])), Weighting::Flow);
        assert_bound(&inst, n as f64, 1e-6);
    }
    let weights = [3.0, 1.0, 2.0, 0.5];
    let inst = Instance::new(1, weights.iter().map(|&w| job(0.0, 1.0, w, &[0])).collect());
    // Sorted 3, 2, 1, 0.5 → max(3·1, 2·2, 1·3, 0.5·4) = 4.
    assert_bound(&inst, 4.0, 1e-6);
    // Stretch weights with sizes 2 and 3: the small one first gives max(2/2, 5/3) = 5/3.
    let inst = Instance::with_weighting(1, [(0.0, 3.0, vec![0]), (0.0, 2.0, vec![0])], Weighting::Stretch);
    assert_bound(&inst, 5.0 / 3.0, 1e-6);
}

#[test]
fn matches_max_flow_oracle_on_fixed_instances() {
    let inst = Instance::new(
        3,
        vec![
            job(0.0, 4.0, 1.0, &[0]),
            job(0.0, 2.0, 1.0, &[0, 1]),
            job(1.0, 2.0, 1.0, &[1]),
            job(1.5, 3.0, 1.0, &[1, 2]),
            job(2.0, 1.0, 1.0, &[2, 0]),
            job(2.0, 5.0, 1.0, &[0, 1, 2]),
        ],
    );
    for weighting in [Weighting::Flow, Weighting::Stretch] {
        let w = inst.reweighted(weighting);
        let exact = maxflow::optimum(&w);
        assert_bound(&w, exact, 1e-5);
        assert!(exact <= max_weighted_flow(&w, &instance::fcfs_completions(&w)) + 1e-9);
    }
}

#[test]
fn default_tolerance_is_honoured() {
    let inst =
        Instance::with_weighting(2, (0..5).map(|i| (i as f64 * 0.3, 1.0 + i as f64, vec![0, 1])), Weighting::Flow);
    let exact = maxflow::optimum(&inst);
    let b = lower_bound(&inst, &BoundOptions::default()).unwrap();
    assert!(b.value <= exact * (1.0 + 1e-8) && b.value >= exact * (1.0 - 2e-4), "{b:?} vs {exact}");
    assert!(b.upper - b.value <= 1e-4 * b.upper, "{b:?}");
    assert!(b.solve_seconds >= 0.0);
}

#[test]
fn invalid_input_is_rejected_before_solving() {
    let bad = Instance::new(2, vec![job(0.0, 1.0, 1.0, &[0]), job(0.0, 1.0, 1.0, &[5])]);
    assert_eq!(
        lower_bound(&bad, &BoundOptions::default()),
        Err(BoundError::MachineOutOfRange { index: 1, machine: 5, machines: 2 })
    );
    let none = Instance::new(2, vec![job(0.0, 1.0, 1.0, &[])]);
    assert_eq!(lower_bound(&none, &BoundOptions::default()), Err(BoundError::NoMachine { index: 0 }));
    let ok = Instance::new(1, vec![job(0.0, 1.0, 1.0, &[0])]);
    for rel_tol in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let err = lower_bound(&ok, &BoundOptions { rel_tol, ..BoundOptions::default() }).unwrap_err();
        assert!(matches!(err, BoundError::BadOption { field: "rel_tol", .. }), "{err}");
    }
    let err = lower_bound(&ok, &BoundOptions { threads: Some(0), ..BoundOptions::default() }).unwrap_err();
    assert!(matches!(err, BoundError::BadOption { field: "threads", .. }), "{err}");
    assert_eq!(lower_bound(&Instance::new(4, vec![]), &BoundOptions::default()).unwrap(), Bound::default());
}

#[test]
fn solver_error_names_stage_and_status() {
    let err = BoundError::Solver { stage: "solving", status: "SolveError".into() };
    assert_eq!(err.to_string(), "HiGHS failed while solving: status SolveError");
}

#[test]
fn bound_from_json_instance() {
    let text = r#"{"machines":2,"requests":[
        {"release_ms":0,"processing_ms":2,"weight":1,"machines":[0,1]},
        {"release_ms":0,"processing_ms":2,"weight":1,"machines":[0,1]},
        {"release_ms":0,"processing_ms":2,"weight":1,"machines":[1,0]}]}"#;
    let inst: Instance = serde_json::from_str(text).unwrap();
    assert_bound(&inst, 3.0, 1e-6);
}

// ---- non-preemptive heuristics used as upper bounds in the property test ----

/// Event-driven list scheduling: whenever machines are idle, released requests in `key` order
/// take the lowest-index idle allowed machine. Returns completion times.
fn list_schedule(inst: &Instance, key: impl Fn(&Job) -> f64) -> Vec<f64> {
    let n = inst.requests.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| key(&inst.requests[a]).total_cmp(&key(&inst.requests[b])).then(a.cmp(&b)));
    let mut free = vec![f64::NEG_INFINITY; inst.machines];
    let mut done = vec![None; n];
    let mut now = inst.requests.iter().map(|j| j.release_ms).fold(f64::INFINITY, f64::min);
    while done.iter().any(Option::is_none) {
        for &i in &order {
            let job = &inst.requests[i];
            if done[i].is_some() || job.release_ms > now {
                continue;
            }
            if let Some(m) = job.machines.iter().map(|&m| m as usize).filter(|&m| free[m] <= now).min() {
                free[m] = now + job.processing_ms;
                done[i] = Some(free[m]);
            }
        }
        let next_free = free.iter().copied().filter(|&f| f > now);
        let next_release = inst.requests.iter().map(|j| j.release_ms).filter(|&r| r > now);
        now = next_free.chain(next_release).fold(f64::INFINITY, f64::min);
        if now.is_infinite() {
            break;
        }
    }
    done.into_iter().map(|c| c.unwrap_or(f64::INFINITY)).collect()
}

/// Each request, in release order, goes to a random allowed machine and starts when it frees.
fn random_machine(inst: &Instance, seed: u64) -> Vec<f64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..inst.requests.len()).collect();
    order.sort_by(|&a, &b| inst.requests[a].release_ms.total_cmp(&inst.requests[b].release_ms));
    let mut free = vec![f64::NEG_INFINITY; inst.machines];
    let mut done = vec![0.0; inst.requests.len()];
    for i in order {
        let job = &inst.requests[i];
        let m = job.machines[rng.random_range(0..job.machines.len())] as usize;
        free[m] = free[m].max(job.release_ms) + job.processing_ms;
        done[i] = free[m];
    }
    done
}

#[test]
fn heuristics_schedule_sensibly() {
    let inst = Instance::new(2, vec![job(0.0, 3.0, 1.0, &[0]), job(0.0, 1.0, 1.0, &[0]), job(0.5, 1.0, 1.0, &[0, 1])]);
    assert_eq!(list_schedule(&inst, |j| j.release_ms), vec![3.0, 4.0, 1.5]);
    assert_eq!(list_schedule(&inst, |j| j.processing_ms), vec![4.0, 1.0, 1.5]);
    let c = random_machine(&inst, 7);
    assert_eq!((c[0], c[1]), (3.0, 4.0));
}

fn arb_instance() -> impl Strategy<Value = Instance> {
    (1usize..=3, prop::collection::vec((0u32..20, 1u32..=10, 1u32..8), 1..=6), any::<bool>()).prop_map(
        |(machines, raw, stretch)| {
            let weighting = if stretch { Weighting::Stretch } else { Weighting::Flow };
            let jobs = raw.into_iter().map(|(r, p, mask)| {
                let mask = mask % (1 << machines);
                let allowed: Vec<u32> = (0..machines as u32).filter(|&m| mask & (1 << m) != 0).collect();
                let allowed = if allowed.is_empty() { vec![r % machines as u32] } else { allowed };
                (f64::from(r) * 0.5, f64::from(p) * 0.5, allowed)
            });
            Instance::with_weighting(machines, jobs.collect::<Vec<_>>(), weighting)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, rng_seed: prop::test_runner::RngSeed::Fixed(0x7a11), ..ProptestConfig::default() })]

    #[test]
    fn bound_is_below_heuristics_and_matches_oracle(inst in arb_instance(), seed in 0u64..1000, flow in any::<bool>()) {
        let backend = if flow || !cfg!(feature = "highs") { Backend::MaxFlow } else { Backend::Highs };
        let b = lower_bound(&inst, &BoundOptions { backend, ..BoundOptions::default() }).unwrap();
        prop_assert!(b.value >= inst.trivial_lower_bound() * (1.0 - 1e-12));
        let schedules = [
            ("fcfs", list_schedule(&inst, |j| j.release_ms)),
            ("sjf", list_schedule(&inst, |j| j.processing_ms)),
            ("random", random_machine(&inst, seed)),
        ];
        for (name, completions) in &schedules {
            let objective = max_weighted_flow(&inst, completions);
            prop_assert!(b.value <= objective * (1.0 + 1e-9), "{name}: {objective} < bound {b:?}");
        }
        let exact = maxflow::optimum(&inst);
        prop_assert!(b.value <= exact * (1.0 + 1e-8), "bound {b:?} above oracle {exact}");
        prop_assert!(b.value >= exact * (1.0 - 2e-4), "bound {b:?} far below oracle {exact}");
    }
}

/// A Euro-Par-like instance: Poisson arrivals at load `load`, Weibull sizes (scale 32 000 B,
/// shape 0.5), `p = 8 z / 100 Mbit/s + 1 ms`, replica sets of `k` consecutive machines.
fn europar_instance(n: usize, machines: usize, k: usize, load: f64, seed: u64) -> Instance {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mean_p = 2.0 * 32_000.0 * 8.0 / 100e6 * 1e3 + 1.0;
    let rate = machines as f64 * load / mean_p;
    let mut now = 0.0;
    let jobs: Vec<_> = (0..n)
        .map(|_| {
            now += -(1.0 - rng.random::<f64>()).ln() / rate;
            let z = 32_000.0 * (-(1.0 - rng.random::<f64>()).ln()).powf(2.0);
            let p = z * 8.0 / 100e6 * 1e3 + 1.0;
            let first = rng.random_range(0..machines);
            let allowed = (0..k).map(|d| ((first + d) % machines) as u32).collect();
            (now, p, allowed)
        })
        .collect();
    Instance::with_weighting(machines, jobs, Weighting::Flow)
}

#[test]
#[cfg(feature = "highs")]
fn backends_agree_on_a_medium_instance() {
    for weighting in [Weighting::Flow, Weighting::Stretch] {
        // Sizes uniform in [1, 5] ms arriving faster than 6 machines drain them, so queues
        // build and the search needs real LPs.
        let mut rng = SmallRng::seed_from_u64(3);
        let jobs: Vec<_> = (0..60)
            .map(|i| {
                let first = rng.random_range(0..6u32);
                (f64::from(i) * 0.4, rng.random_range(1.0..5.0), (0..3).map(|d| (first + d) % 6).collect())
            })
            .collect();
        let inst = Instance::with_weighting(6, jobs, weighting);
        let [highs, flow] = BACKENDS.map(|backend| lower_bound(&inst, &tight(backend)).unwrap());
        assert!(highs.lp_solves > 2, "{highs:?}");
        assert!((highs.value - flow.value).abs() <= 1e-6 * highs.value, "{highs:?} vs {flow:?}");
        let exact = maxflow::optimum(&inst);
        assert!(flow.value <= exact * (1.0 + 1e-8) && flow.value >= exact * (1.0 - 1e-6), "{flow:?} vs {exact}");
    }
}

/// Prints the bound and solve time of a 1,000-request, 12-machine, k = 3 instance at load 0.9.
fn time_europar_1000(backend: Backend) {
    for weighting in [Weighting::Flow, Weighting::Stretch] {
        let inst = europar_instance(1000, 12, 3, 0.9, 1).reweighted(weighting);
        let fcfs = max_weighted_flow(&inst, &instance::fcfs_completions(&inst));
        let b = lower_bound(&inst, &BoundOptions { backend, ..BoundOptions::default() }).unwrap();
        println!(
            "{backend:?} {weighting:?}: bound {:.5} (upper {:.5}, fcfs {:.4}), {} solves, largest {} variables, {:.2} s",
            b.value, b.upper, fcfs, b.lp_solves, b.variables, b.solve_seconds
        );
    }
}

/// Run with `cargo test -p tailor-bound --lib -- --ignored --nocapture time_` (HiGHS itself is
/// always built in release mode, so the dev profile times the solver fairly).
#[test]
#[ignore]
#[cfg(feature = "highs")]
fn time_europar_1000_highs() {
    time_europar_1000(Backend::Highs);
}

/// The max-flow backend on the same instance as [`time_europar_1000_highs`].
#[test]
#[ignore]
fn time_europar_1000_maxflow() {
    time_europar_1000(Backend::MaxFlow);
}
