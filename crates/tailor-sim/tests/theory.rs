//! The simulator against queueing theory: one server, one replica, one client, no network delay,
//! no fluctuation, FCFS, Poisson arrivals, so a read's latency is its sojourn in an M/G/c queue.
//! Compared with the closed forms: M/M/1 (mean and p99), M/M/4 (Erlang C: mean, and the p99 of
//! the sojourn's exact CDF, solved numerically), M/D/1 (Pollaczek–Khinchine mean, p99 from
//! Erlang's waiting-time distribution) and M/G/1 with two service times (P–K mean; its p99 has
//! no closed form and is not checked). The queue outputs are checked too: utilisation ≈ ρ and
//! time-averaged number in system ≈ L = λW. A server whose jobs share its capacity
//! (`cluster.shared_capacity = 1`, processor sharing) is checked against M/M/1-PS (the mean
//! sojourn of M/M/1) and M/G/1-PS (each size's mean response `x / (1 − ρ)`, proportional to it).
//!
//! **Tolerance, from the seeds.** Each figure is measured on `SEEDS` seeds; the check is
//! `|mean over seeds − theory| ≤ Z × standard error over seeds + resolution`, where the
//! standard error is the seeds' own spread / √SEEDS (Student's t with 7 degrees of freedom
//! exceeds `Z = 5` with probability 0.2 %) and `resolution` is the latency histogram's 3
//! significant digits (0.1 %). So the tolerance is what the seeds measure, not a number chosen
//! to pass; and so that it cannot grow loose unseen, each check also requires the tolerance to
//! be under `MAX_TOLERANCE` of the theoretical value.

use tailor_core::results::RunResult;
use tailor_spec::{expand, Spec};

const SEEDS: u64 = 8;
const Z: f64 = 5.0;
const RESOLUTION: f64 = 1e-3;
const MAX_TOLERANCE: f64 = 0.06;
const LOAD: f64 = 0.7;

/// A one-server spec with the given `[cluster]` lines (workers, shared capacity), `[cluster.service]`
/// and size law.
fn spec(cluster: &str, service: &str, sizes: &str) -> Spec {
    let seeds: Vec<String> = (1..=SEEDS).map(|s| s.to_string()).collect();
    let text = format!(
        "seeds = [{}]\n\
         [cluster]\nservers = 1\nclients = 1\nreplication = 1\n{cluster}\n\
         [cluster.service]\n{service}\n\
         [cluster.fluctuation]\ninterval_ms = 0.0\n\
         [workload]\nrequests = 200000\nwarmup_ms = 1000.0\nreads = 1.0\nload = {LOAD}\nsizes = {sizes}\n\
         [compare]\nselectors = [\"random\"]\nlocals = [\"fcfs\"]\n\
         [report]\nper_request = true\n",
        seeds.join(", ")
    );
    Spec::from_toml(&text).unwrap()
}

fn runs(spec: &Spec) -> Vec<RunResult> {
    outputs(spec).into_iter().map(|o| o.result).collect()
}

fn outputs(spec: &Spec) -> Vec<tailor_sim::RunOutput> {
    let plans = expand(spec).unwrap();
    assert_eq!(plans.len(), SEEDS as usize, "one run per seed");
    tailor_sim::run_all(&plans, None, &|_, _| {}).unwrap()
}

/// `figure` over the seeds against `theory`, within the seeds' own tolerance.
fn check(model: &str, name: &str, runs: &[RunResult], figure: impl Fn(&RunResult) -> f64, theory: f64) {
    check_values(model, name, &runs.iter().map(figure).collect::<Vec<_>>(), theory);
}

/// One figure per seed, `xs`, against `theory`, within the seeds' own tolerance.
fn check_values(model: &str, name: &str, xs: &[f64], theory: f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let tolerance = Z * sd / n.sqrt() + RESOLUTION * theory;
    eprintln!("{model} {name}: measured {mean:.4} (sd {sd:.4}) theory {theory:.4} tolerance {tolerance:.4}");
    assert!(
        tolerance <= MAX_TOLERANCE * theory,
        "{model} {name}: the seeds spread too much to judge ({tolerance:.4} > {MAX_TOLERANCE} × {theory:.4})"
    );
    assert!(
        (mean - theory).abs() <= tolerance,
        "{model} {name}: measured {mean:.4} over {SEEDS} seeds, theory {theory:.4} (tolerance {tolerance:.4})"
    );
}

/// Arrival rate per ms of the runs (the same for every seed).
fn lambda(runs: &[RunResult]) -> f64 {
    runs[0].offered_rps / 1000.0
}

/// Checks shared by every model: mean response time, utilisation and number in system.
fn check_common(model: &str, runs: &[RunResult], mean_ms: f64, rho: f64) {
    check(model, "mean", runs, |r| r.read_latency_ms.mean, mean_ms);
    let server = |r: &RunResult| r.queueing.as_ref().unwrap().servers[0];
    check(model, "utilisation", runs, |r| server(r).utilisation, rho);
    check(model, "number in system", runs, |r| server(r).mean_in_system, lambda(runs) * mean_ms);
}

/// The smallest `t` with `survival(t) ≤ 0.01`, by bisection (`survival` decreasing).
fn p99_of(survival: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 1.0);
    while survival(hi) > 0.01 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if survival(mid) > 0.01 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Erlang C: the probability an arrival waits in M/M/c with offered load `a = λ/μ`.
fn erlang_c(c: usize, a: f64) -> f64 {
    let rho = a / c as f64;
    let mut term = 1.0; // a^k / k!
    let mut below = 0.0;
    for k in 0..c {
        below += term;
        term *= a / (k + 1) as f64;
    }
    let top = term / (1.0 - rho);
    top / (below + top)
}

/// P(W ≤ t) of M/D/1 with service `d` and rate `lambda` (Erlang's formula), `t ≥ 0`.
fn md1_wait_cdf(lambda: f64, d: f64, t: f64) -> f64 {
    let rho = lambda * d;
    let mut sum = 0.0;
    for k in 0..=(t / d).floor() as i32 {
        let x = lambda * (k as f64 * d - t);
        let mut term = (-x).exp();
        for j in 1..=k {
            term *= x / j as f64;
        }
        sum += term;
    }
    (1.0 - rho) * sum
}

#[test]
fn mm1_mean_and_p99() {
    let runs =
        runs(&spec("workers = 1", "model = \"exponential\"\nmean_ms = 4.0", "{ kind = \"fixed\", bytes = 1000 }"));
    let excess = 1.0 / 4.0 - lambda(&runs);
    check_common("M/M/1", &runs, 1.0 / excess, LOAD);
    check("M/M/1", "p99", &runs, |r| r.read_latency_ms.p99, 100f64.ln() / excess);
}

#[test]
fn mm4_mean_and_p99() {
    let (c, mu) = (4, 1.0 / 4.0);
    let runs = runs(&spec(
        &format!("workers = {c}"),
        "model = \"exponential\"\nmean_ms = 4.0",
        "{ kind = \"fixed\", bytes = 1000 }",
    ));
    let lambda = lambda(&runs);
    let waits = erlang_c(c, lambda / mu);
    let theta = c as f64 * mu - lambda;
    check_common("M/M/4", &runs, waits / theta + 1.0 / mu, LOAD);
    // sojourn = Exp(μ) service, plus with probability C an Exp(θ) wait: P(T > t) mixes the
    // service's survival with that of the sum of two exponentials
    let survival = |t: f64| {
        let sum = (theta * (-mu * t).exp() - mu * (-theta * t).exp()) / (theta - mu);
        (1.0 - waits) * (-mu * t).exp() + waits * sum
    };
    check("M/M/4", "p99", &runs, |r| r.read_latency_ms.p99, p99_of(survival));
}

/// `[cluster.service]` of the size model: 1 µs per byte plus 1 ms.
const SIZE_SERVICE: &str = "model = \"size\"\nbandwidth_mbps = 8.0\noverhead_ms = 1.0";

#[test]
fn md1_mean_and_p99() {
    let runs = runs(&spec("workers = 1", SIZE_SERVICE, "{ kind = \"fixed\", bytes = 3000 }"));
    let (lambda, d) = (lambda(&runs), 4.0);
    let mean = d + LOAD * d / (2.0 * (1.0 - LOAD));
    check_common("M/D/1", &runs, mean, LOAD);
    let wait_p99 = p99_of(|t| 1.0 - md1_wait_cdf(lambda, d, t));
    check("M/D/1", "p99", &runs, |r| r.read_latency_ms.p99, d + wait_p99);
}

#[test]
fn mg1_mean() {
    // services of 2 ms (90 %) and 20 ms (10 %): mean 3.8 ms, E[S²] 43.6 ms²
    let runs = runs(&spec(
        "workers = 1",
        SIZE_SERVICE,
        "{ kind = \"mixture\", values = [1000, 19000], weights = [0.9, 0.1] }",
    ));
    let (lambda, es, es2) = (lambda(&runs), 3.8, 43.6);
    let rho = lambda * es;
    assert!((rho - LOAD).abs() < 1e-9, "the load sets λ from the mean service: ρ = {rho}");
    check_common("M/G/1", &runs, es + lambda * es2 / (2.0 * (1.0 - rho)), rho);
}

/// Processor sharing: one unit of capacity shared by every job in service (64 workers, so at
/// ρ = 0.7 a job waits for a thread with probability 0.7^64).
const PS: &str = "workers = 64\nshared_capacity = 1";

#[test]
fn mm1_ps_mean_equals_mm1() {
    // M/M/1-PS: the number in system is M/M/1's, so the mean sojourn 1/(μ − λ) is too
    let runs = runs(&spec(PS, "model = \"exponential\"\nmean_ms = 4.0", "{ kind = \"fixed\", bytes = 1000 }"));
    check_common("M/M/1-PS", &runs, 1.0 / (1.0 / 4.0 - lambda(&runs)), LOAD);
}

#[test]
fn mg1_ps_response_time_is_proportional_to_size() {
    // M/G/1-PS: a job needing x is served at 1 − ρ on average, E[T | x] = x / (1 − ρ), for any
    // service law: the 2 ms reads take 6.7 ms and the 20 ms ones 66.7 ms (FCFS: both 17.2 ms)
    let outs = outputs(&spec(PS, SIZE_SERVICE, "{ kind = \"mixture\", values = [1000, 19000], weights = [0.9, 0.1] }"));
    let runs: Vec<RunResult> = outs.iter().map(|o| o.result.clone()).collect();
    check_common("M/G/1-PS", &runs, 3.8 / (1.0 - LOAD), LOAD);
    for (bytes, service_ms) in [(1000, 2.0), (19000, 20.0)] {
        let per_seed: Vec<f64> = outs.iter().map(|o| mean_latency_of_size(&o.requests, bytes)).collect();
        check_values("M/G/1-PS", &format!("mean for {bytes} B"), &per_seed, service_ms / (1.0 - LOAD));
    }
}

/// Mean latency in ms of the reads of `bytes` among `requests`.
fn mean_latency_of_size(requests: &[tailor_sim::RequestRecord], bytes: u64) -> f64 {
    let of_size: Vec<f64> = requests.iter().filter(|r| r.size == bytes).map(|r| (r.done - r.release) as f64).collect();
    of_size.iter().sum::<f64>() / of_size.len() as f64 / 1e6
}

#[test]
fn closed_forms_match_known_values() {
    // M/M/2 at a = 1: C = 1/3; M/M/1: C = ρ
    assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
    assert!((erlang_c(1, 0.7) - 0.7).abs() < 1e-12);
    // M/D/1: P(W = 0) = 1 − ρ, and the CDF's tail integrates to the P–K mean wait ρd / 2(1 − ρ)
    // (up to 80 ms, where the tail left out is ~1e-6 and the alternating sum still exact)
    assert!((md1_wait_cdf(0.175, 4.0, 0.0) - 0.3).abs() < 1e-12);
    let step = 1e-3;
    let wait: f64 = (0..80_000).map(|i| (1.0 - md1_wait_cdf(0.175, 4.0, (i as f64 + 0.5) * step)) * step).sum();
    assert!((wait - 0.7 * 4.0 / 0.6).abs() < 1e-3, "M/D/1 mean wait from the CDF: {wait}");
    // exponential survival: p99 = ln 100 / rate
    assert!((p99_of(|t: f64| (-0.5 * t).exp()) - 100f64.ln() / 0.5).abs() < 1e-9);
}
