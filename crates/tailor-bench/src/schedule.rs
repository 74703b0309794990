//! The run's requests, generated up front from the spec's workload with tailor-core's generators.
//!
//! Generating the whole schedule before the first send keeps the send loop trivial (sleep until
//! the next intended time, hand the request over) and lets the load phase write exactly the keys
//! the run will read. The schedule is a pure function of the spec, the seed, the node count and
//! the rate/duration options, so two bench runs of the same spec send the same requests.

use crate::multiget::{self, Draws};
use crate::BenchError;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tailor_core::time::{Nanos, SEC};
use tailor_core::workload::arrivals::{rate_for_load, Poisson};
use tailor_core::workload::clients::ClientSampler;
use tailor_core::workload::ops::OpMix;
use tailor_core::workload::popularity::KeySampler;
use tailor_core::workload::sizes::SizeModel;
use tailor_core::workload::trace::TraceRecord;
use tailor_core::Op;
use tailor_spec::{ArrivalKind, Spec};

/// Most requests one schedule may hold (about 2.4 GB of memory would be needed beyond it).
pub const MAX_REQUESTS: u64 = 50_000_000;

/// One request of the run: when it is meant to be sent, what it does and which node coordinates it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// Intended send time since the start of the run, ns (latency is measured from here).
    pub at: Nanos,
    /// Key, sent as its decimal string.
    pub key: u64,
    /// Read (`GET`) or write (`SET`).
    pub op: Op,
    /// Value size in bytes (the key's size; what a write sends).
    pub size: u64,
    /// Index of the coordinator node in the node list.
    pub node: u32,
    /// A multi-get read: all its keys with their sizes, `key` first (`MGET`); `None` for a
    /// single read or a write.
    pub multiget: Option<multiget::Keys>,
}

/// How requests are timed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrivals {
    /// Poisson arrivals at this many requests per second.
    Poisson(f64),
    /// Times taken from the trace.
    Trace,
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct ScheduleInput<'a> {
    /// The (single-point) spec whose `[workload]` is used.
    pub spec: &'a Spec,
    /// Seed of the random stream.
    pub seed: u64,
    /// Number of nodes (coordinators).
    pub nodes: usize,
    /// Offered rate override (requests/s over the whole cluster).
    pub rate: Option<f64>,
    /// Offered load override (fraction of the nominal capacity, see [`offered_rate`]).
    pub load: Option<f64>,
    /// Run length including warm-up, ns; `None` = `workload.requests / rate` (or the trace's span).
    pub duration: Option<Nanos>,
    /// The trace's requests, when the spec's arrival is `trace` and no rate or load is forced.
    pub trace: Option<&'a [TraceRecord]>,
}

/// The generated run.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Requests in intended-send order.
    pub requests: Vec<Planned>,
    /// Offered rate, requests per second.
    pub offered_rps: f64,
    /// Run length including warm-up, ns (no request is intended at or after it).
    pub duration: Nanos,
}

/// Mean nominal processing time of a request, in ns (see [`tailor_spec::ClusterSpec::mean_service_ns`]).
pub fn mean_service_ns(spec: &Spec, sizes: &SizeModel) -> f64 {
    spec.cluster.mean_service_ns(sizes.mean())
}

/// The Poisson rate to offer, or `None` for a trace replay.
///
/// Precedence: `rate`, then `load`, then the spec's `workload.rate` (when > 0), then its
/// `workload.load`. A load `L` is `rate_for_load(L, nodes, cluster.workers, mean service)`, i.e.
/// it counts the live nodes, not `cluster.servers`. A closed-loop spec needs `rate` or `load`:
/// the bench is open loop only.
pub fn offered_rate(
    spec: &Spec,
    nodes: usize,
    rate: Option<f64>,
    load: Option<f64>,
) -> Result<Option<f64>, BenchError> {
    let sizes = SizeModel::new(&spec.workload.sizes).map_err(|e| BenchError::Spec(format!("workload.sizes: {e}")))?;
    let from_load = |l: f64| rate_for_load(l, nodes, spec.cluster.capacity(), mean_service_ns(spec, &sizes));
    let r = match (rate, load) {
        (Some(r), _) => r,
        (None, Some(l)) => from_load(l),
        (None, None) => match spec.workload.arrival {
            ArrivalKind::Trace => return Ok(None),
            ArrivalKind::ClosedLoop => {
                return Err(BenchError::Spec(
                    "workload.arrival = \"closed-loop\": the bench is open loop; give --rate or --load".into(),
                ))
            }
            ArrivalKind::Poisson if spec.workload.rate > 0.0 => spec.workload.rate,
            ArrivalKind::Poisson => from_load(spec.workload.load),
        },
    };
    if !(r.is_finite() && r > 0.0) {
        return Err(BenchError::Spec(format!("offered rate {r} requests/s must be a finite number > 0")));
    }
    Ok(Some(r))
}

/// Generate the schedule.
pub fn generate(input: &ScheduleInput) -> Result<Schedule, BenchError> {
    let spec = input.spec;
    let w = &spec.workload;
    let bad = |field: &str, e: &dyn std::fmt::Display| BenchError::Spec(format!("workload.{field}: {e}"));
    if input.nodes == 0 {
        return Err(BenchError::Config("no nodes given".into()));
    }
    let sizes = SizeModel::new(&w.sizes).map_err(|e| bad("sizes", &e))?;
    let keys = KeySampler::new(&w.popularity, w.keys).map_err(|e| bad("popularity", &e))?;
    let ops = OpMix::new(w.reads).map_err(|e| bad("reads", &e))?;
    // Coordinators are the live nodes: the spec's demand skew applies across them.
    let coordinators = match w.skew {
        Some(skew) => Some(ClientSampler::new(input.nodes as u32, Some(skew)).map_err(|e| bad("skew", &e))?),
        None => None,
    };
    let mut rng = SmallRng::seed_from_u64(input.seed ^ 0x4245_4e43_485f_4c44);
    let mut multigets = Draws::new(spec, input.seed)?;
    let mut requests = Vec::new();
    let pick_node = |rng: &mut SmallRng, i: usize| match &coordinators {
        Some(c) => c.sample(rng),
        None => (i % input.nodes) as u32,
    };
    match offered_rate(spec, input.nodes, input.rate, input.load)? {
        Some(rate) => {
            let duration = match input.duration {
                Some(d) => d,
                None => (w.requests as f64 / rate * SEC as f64).ceil() as Nanos,
            };
            let expected = rate * duration as f64 / SEC as f64;
            if expected > MAX_REQUESTS as f64 {
                return Err(BenchError::Config(format!(
                    "{expected:.0} requests at {rate:.0}/s is more than the {MAX_REQUESTS} a run may hold; shorten --duration"
                )));
            }
            let poisson = Poisson::new(rate).map_err(|e| bad("rate", &e))?;
            requests.reserve(expected as usize + 16);
            let mut t: Nanos = 0;
            loop {
                t = t.saturating_add(poisson.next_gap(&mut rng));
                if t >= duration {
                    break;
                }
                let key = keys.sample(&mut rng);
                let op = ops.sample(&mut rng);
                let node = pick_node(&mut rng, requests.len());
                let multiget = match &mut multigets {
                    Some(m) if op == Op::Read => m.draw(key, &keys, &sizes),
                    _ => None,
                };
                let size = sizes.size_of_key(input.seed, key);
                requests.push(Planned { at: t, key, op, size, node, multiget });
            }
            Ok(Schedule { requests, offered_rps: rate, duration })
        }
        None => {
            let trace = input.trace.ok_or_else(|| BenchError::Config("workload.trace: no trace given".into()))?;
            let span = trace.last().map_or(0, |r| r.time + 1);
            let duration = input.duration.unwrap_or(span);
            for r in trace.iter().take_while(|r| r.time < duration) {
                let node = pick_node(&mut rng, requests.len());
                requests.push(Planned { at: r.time, key: r.key, op: r.op, size: r.size, node, multiget: None });
            }
            let offered = if duration > 0 { requests.len() as f64 * SEC as f64 / duration as f64 } else { 0.0 };
            Ok(Schedule { requests, offered_rps: offered, duration })
        }
    }
}

/// The keys the load phase writes, with their sizes: every key the schedule reads (a
/// multi-get's included), ascending (key 0 is the hottest under Zipf and hotspot popularity),
/// the first `cap` of them if given.
pub fn load_set(schedule: &Schedule, cap: Option<u64>) -> Vec<(u64, u64)> {
    let reads = schedule.requests.iter().filter(|r| r.op == Op::Read);
    let mut keys: Vec<(u64, u64)> = reads
        .flat_map(|r| match &r.multiget {
            Some(m) => m.to_vec(),
            None => vec![(r.key, r.size)],
        })
        .collect();
    keys.sort_unstable();
    keys.dedup_by_key(|k| k.0);
    if let Some(cap) = cap {
        keys.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    }
    keys
}

/// The deterministic value written for `key`: `size` bytes that depend on the key, so a read
/// can be checked by eye and values compress poorly.
pub fn value_bytes(key: u64, size: u64) -> Vec<u8> {
    let mut x = key.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..size)
        .map(|_| {
            // xorshift: cheap, and different keys give different byte streams
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'a' + (x % 26) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::workload::popularity::PopularityConfig;
    use tailor_core::workload::sizes::SizeConfig;

    fn spec() -> Spec {
        let mut s = Spec::default();
        s.workload.keys = 1000;
        s.workload.reads = 0.9;
        s.workload.sizes = SizeConfig::Mixture { values: vec![100, 5000], weights: vec![3.0, 1.0] };
        s.workload.popularity = PopularityConfig::Zipf { s: 0.99 };
        s
    }

    fn input(spec: &Spec) -> ScheduleInput<'_> {
        ScheduleInput { spec, seed: 7, nodes: 3, rate: Some(2000.0), load: None, duration: Some(10 * SEC), trace: None }
    }

    #[test]
    fn poisson_schedule_has_the_rate_and_round_robin_coordinators() {
        let s = spec();
        let sch = generate(&input(&s)).unwrap();
        let n = sch.requests.len() as f64;
        assert!((n / 20_000.0 - 1.0).abs() < 0.03, "{n} requests in 10 s at 2000/s");
        assert!(sch.requests.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(sch.requests.iter().all(|r| r.at < 10 * SEC && r.key < 1000));
        assert!(sch.requests.iter().enumerate().all(|(i, r)| r.node == (i % 3) as u32));
        let reads = sch.requests.iter().filter(|r| r.op == Op::Read).count() as f64 / n;
        assert!((reads - 0.9).abs() < 0.01, "{reads}");
        // sizes are per key: the same key always has the same size
        let sizes = SizeModel::new(&s.workload.sizes).unwrap();
        assert!(sch.requests.iter().all(|r| r.size == sizes.size_of_key(7, r.key)));
        assert_eq!(sch.offered_rps, 2000.0);
        // same inputs, same schedule
        assert_eq!(generate(&input(&s)).unwrap().requests, sch.requests);
    }

    #[test]
    fn rate_precedence_and_load_counts_live_nodes() {
        let mut s = spec();
        s.cluster.workers = 4;
        s.cluster.service.mean_ms = 4.0;
        s.workload.load = 0.5;
        // 3 nodes x 4 workers x 0.5 / 4 ms = 1500/s
        assert_eq!(offered_rate(&s, 3, None, None).unwrap(), Some(1500.0));
        assert_eq!(offered_rate(&s, 3, None, Some(1.0)).unwrap(), Some(3000.0));
        assert_eq!(offered_rate(&s, 3, Some(10.0), Some(1.0)).unwrap(), Some(10.0));
        // 4 workers sharing one unit: load is measured against the unit, as in the simulator
        s.cluster.shared_capacity = 1;
        assert_eq!(offered_rate(&s, 3, None, None).unwrap(), Some(375.0));
        s.cluster.shared_capacity = 0;
        s.workload.rate = 42.0;
        assert_eq!(offered_rate(&s, 3, None, None).unwrap(), Some(42.0));
        s.workload.arrival = ArrivalKind::ClosedLoop;
        assert!(offered_rate(&s, 3, None, None).unwrap_err().to_string().contains("closed-loop"));
        assert!(offered_rate(&s, 3, Some(-1.0), None).is_err());
        s.workload.arrival = ArrivalKind::Trace;
        assert_eq!(offered_rate(&s, 3, None, None).unwrap(), None);
    }

    #[test]
    fn duration_defaults_to_the_spec_request_count() {
        let mut s = spec();
        s.workload.requests = 500;
        let sch = generate(&ScheduleInput { duration: None, ..input(&s) }).unwrap();
        assert_eq!(sch.duration, SEC / 4);
        assert!((400..600).contains(&sch.requests.len()), "{}", sch.requests.len());
    }

    #[test]
    fn trace_replay_keeps_times_keys_and_sizes() {
        let mut s = spec();
        s.workload.arrival = ArrivalKind::Trace;
        let text = "time,key,op,size\n0,5,read,10\n1.5,6,write,20\n3,5,get,10\n";
        let records = tailor_core::workload::parse_trace(text).unwrap();
        let inp = ScheduleInput { rate: None, duration: None, trace: Some(&records), ..input(&s) };
        let sch = generate(&inp).unwrap();
        let got: Vec<(Nanos, u64, Op, u64)> = sch.requests.iter().map(|r| (r.at, r.key, r.op, r.size)).collect();
        assert_eq!(got, vec![(0, 5, Op::Read, 10), (1_500_000, 6, Op::Write, 20), (3_000_000, 5, Op::Read, 10)]);
        assert_eq!(sch.duration, 3_000_001);
        let cut = generate(&ScheduleInput { duration: Some(2_000_000), ..inp.clone() }).unwrap();
        assert_eq!(cut.requests.len(), 2);
        assert!(generate(&ScheduleInput { trace: None, ..inp }).is_err());
    }

    #[test]
    fn skew_sends_most_requests_to_the_heavy_coordinators() {
        let mut s = spec();
        s.workload.skew =
            Some(tailor_core::workload::clients::DemandSkew { clients_fraction: 0.2, demand_fraction: 0.8 });
        let sch = generate(&ScheduleInput { nodes: 5, ..input(&s) }).unwrap();
        let to0 = sch.requests.iter().filter(|r| r.node == 0).count() as f64 / sch.requests.len() as f64;
        assert!((to0 - 0.8).abs() < 0.02, "{to0}");
    }

    #[test]
    fn multigets_are_a_share_of_reads_and_leave_the_rest_of_the_schedule_as_it_was() {
        let plain = spec();
        let mut s = spec();
        s.workload.multiget.keys = 5;
        s.workload.multiget.fraction = 0.3;
        let (before, after) = (generate(&input(&plain)).unwrap(), generate(&input(&s)).unwrap());
        let strip = |r: &Planned| (r.at, r.key, r.op, r.size, r.node);
        assert!(before.requests.iter().map(strip).eq(after.requests.iter().map(strip)));
        assert!(after.requests.iter().all(|r| r.op == Op::Read || r.multiget.is_none()));
        let reads = after.requests.iter().filter(|r| r.op == Op::Read).count() as f64;
        let multi = after.requests.iter().filter(|r| r.multiget.is_some()).count() as f64;
        assert!((multi / reads - 0.3).abs() < 0.02, "{multi} of {reads}");
        assert!(after.requests.iter().flat_map(|r| &r.multiget).all(|m| m.len() == 5));
    }

    #[test]
    fn load_set_is_the_distinct_read_keys_capped() {
        let p = |key, op| Planned { at: 0, key, op, size: key * 10, node: 0, multiget: None };
        let sch = Schedule {
            requests: vec![p(9, Op::Read), p(3, Op::Read), p(9, Op::Read), p(4, Op::Write), p(1, Op::Read)],
            offered_rps: 1.0,
            duration: 1,
        };
        assert_eq!(load_set(&sch, None), vec![(1, 10), (3, 30), (9, 90)]);
        assert_eq!(load_set(&sch, Some(2)), vec![(1, 10), (3, 30)]);
        let mut sch = sch;
        sch.requests[1].multiget = Some(vec![(3, 30), (7, 70)].into());
        assert_eq!(load_set(&sch, None), vec![(1, 10), (3, 30), (7, 70), (9, 90)]);
        assert!(load_set(&sch, Some(0)).is_empty());
    }

    #[test]
    fn values_are_deterministic_per_key() {
        assert_eq!(value_bytes(3, 50), value_bytes(3, 50));
        assert_ne!(value_bytes(3, 50), value_bytes(4, 50));
        assert_eq!(value_bytes(3, 0).len(), 0);
        assert_eq!(value_bytes(3, 4096).len(), 4096);
    }
}
