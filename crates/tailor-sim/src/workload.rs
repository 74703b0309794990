//! Turns the spec's workload section into a stream of requests (keys, sizes, ops, clients, times).

use crate::SimError;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tailor_core::time::Nanos;
use tailor_core::workload::arrivals::{rate_for_load, Poisson};
use tailor_core::workload::clients::ClientSampler;
use tailor_core::workload::multiget::MultigetDraws;
use tailor_core::workload::ops::OpMix;
use tailor_core::workload::popularity::KeySampler;
use tailor_core::workload::sizes::SizeModel;
use tailor_core::workload::trace::TraceRecord;
use tailor_core::Op;
use tailor_spec::{ArrivalKind, Spec};

/// One generated request before routing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Draw {
    /// Key.
    pub key: u64,
    /// Value size in bytes.
    pub size: u64,
    /// Read or write.
    pub op: Op,
    /// Coordinator.
    pub client: u32,
}

/// The workload of one run. Its random stream depends only on the seed, so every strategy
/// compared on a seed sees exactly the same requests at the same times (common random numbers).
pub struct Generator {
    rng: SmallRng,
    keys: KeySampler,
    /// Value-size model (one size per key).
    pub sizes: SizeModel,
    ops: OpMix,
    clients: ClientSampler,
    poisson: Option<Poisson>,
    trace: Vec<TraceRecord>,
    seed: u64,
    /// Offered rate in requests per second (0 for closed loop).
    pub offered_rps: f64,
    /// Multi-gets' draws, on a random stream of their own (`workload.multiget`; none without):
    /// a run without multi-gets draws exactly what it drew before they existed.
    multiget: Option<MultigetDraws>,
}

impl Generator {
    /// The generator for `spec` and `seed`; `trace` holds the trace's requests when replaying one.
    pub fn new(spec: &Spec, seed: u64, trace: Option<&[TraceRecord]>) -> Result<Self, SimError> {
        let w = &spec.workload;
        let bad = |field: &str, e: &dyn std::fmt::Display| SimError::Spec(format!("invalid `workload.{field}`: {e}"));
        let sizes = SizeModel::new(&w.sizes).map_err(|e| bad("sizes", &e))?;
        let keys = KeySampler::new(&w.popularity, w.keys).map_err(|e| bad("popularity", &e))?;
        let ops = OpMix::new(w.reads).map_err(|e| bad("reads", &e))?;
        let clients = ClientSampler::new(spec.cluster.coordinators() as u32, w.skew).map_err(|e| bad("skew", &e))?;
        // a multi-get is `keys` reads of work: the load counts them all
        let mean_service = mean_service_ns(spec, &sizes) * spec.workload.multiget.keys_per_request(spec.workload.reads);
        let (poisson, offered_rps) = match w.arrival {
            ArrivalKind::Poisson => {
                let rate = if w.rate > 0.0 {
                    w.rate
                } else {
                    rate_for_load(w.load, spec.cluster.servers, spec.cluster.capacity(), mean_service)
                };
                (Some(Poisson::new(rate).map_err(|e| bad("rate", &e))?), rate)
            }
            _ => (None, 0.0),
        };
        let trace = match (w.arrival, trace) {
            (ArrivalKind::Trace, Some(records)) => records.to_vec(),
            (ArrivalKind::Trace, None) => return Err(SimError::Spec("workload.trace: no trace given".into())),
            _ => Vec::new(),
        };
        Ok(Generator {
            rng: SmallRng::seed_from_u64(seed ^ 0x5749_4f52_4b4c_4f41),
            keys,
            sizes,
            ops,
            clients,
            poisson,
            trace,
            seed,
            offered_rps,
            multiget: w.multiget.draws(seed),
        })
    }

    /// The next request of an open or closed loop.
    pub fn draw(&mut self) -> Draw {
        let key = self.keys.sample(&mut self.rng);
        Draw {
            key,
            size: self.sizes.size_of_key(self.seed, key),
            op: self.ops.sample(&mut self.rng),
            client: self.clients.sample(&mut self.rng),
        }
    }

    /// The keys of the multi-get `first` starts, `first` included, or none when `first` is a
    /// write or a single read (the rule: `tailor_core::workload::multiget`), each with its own
    /// size.
    pub fn multiget(&mut self, first: Draw) -> Option<Vec<Draw>> {
        let keys = self.multiget.as_mut().filter(|_| first.op == Op::Read)?.draw(first.key, &self.keys)?;
        let draw = |key| Draw { key, size: self.sizes.size_of_key(self.seed, key), ..first };
        Some(keys.into_iter().map(draw).collect())
    }

    /// The next request for a given client (closed loop).
    pub fn draw_for(&mut self, client: u32) -> Draw {
        Draw { client, ..self.draw() }
    }

    /// Gap to the next Poisson arrival.
    pub fn next_gap(&mut self) -> Nanos {
        self.poisson.as_mut().expect("open loop has a Poisson process").next_gap(&mut self.rng)
    }

    /// The `i`-th trace record as a request and its arrival time.
    pub fn trace_record(&mut self, i: usize) -> Option<(Nanos, Draw)> {
        let r = *self.trace.get(i)?;
        let client = self.clients.sample(&mut self.rng);
        Some((r.time, Draw { key: r.key, size: r.size, op: r.op, client }))
    }

    /// Arrival time of the `i`-th trace record.
    pub fn trace_time(&self, i: usize) -> Option<Nanos> {
        self.trace.get(i).map(|r| r.time)
    }

    /// Records in the trace.
    pub fn trace_len(&self) -> usize {
        self.trace.len()
    }
}

/// Mean nominal processing time of a request, in ns (see [`tailor_spec::ClusterSpec::mean_service_ns`]).
pub fn mean_service_ns(spec: &Spec, sizes: &SizeModel) -> f64 {
    spec.cluster.mean_service_ns(sizes.mean())
}
