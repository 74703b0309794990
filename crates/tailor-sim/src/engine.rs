//! The event loop: requests arrive at clients (coordinators), selectors route reads, servers
//! queue and execute, responses carry facts back. Virtual time only; one run is a pure
//! function of its plan.

use crate::coordinator::SimCoordinator;
use crate::events::{EventQueue, LANES};
use crate::faults::{Active, Edge, Faults};
use crate::multiget::{Multigets, SubOver};
use crate::prefetch::{prefetch, prefetch_addr, prefetch_all, prefetch_head, prefetch_lines};
use crate::racks::Racks;
use crate::record::Recorder;
use crate::requests::{seq, Req, Requests};
use crate::server::{Job, Pause, Server, SimWorld};
use crate::workload::{mean_service_ns, Draw, Generator};
use crate::{RunOutput, SimError};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use std::cell::Cell;
use std::collections::VecDeque;
use tailor_core::coordinator::{
    Action, Answer, ClientRequest, CoordinatorConfig, CoordinatorCore, CoreStats, Fanout, SendKind, Ticket,
};
use tailor_core::facts::ProbeReply;
use tailor_core::oracle::bloom::BloomConfig;
use tailor_core::oracle::size::{self, Knowledge};
use tailor_core::replica::sharing::Sharing;
use tailor_core::replica::{Arrival, ReplicaCore, ServiceEstimate};
use tailor_core::results::HedgeCancel;
use tailor_core::ring::{ReplicaSet, Ring};
use tailor_core::selector::{self, Reach, ReplicaSelector, SelectorEnv};
use tailor_core::time::{from_ms, round_nonneg, Nanos};
use tailor_core::workload::TraceRecord;
use tailor_core::{local, Consistency, NodeId, Op, RequestId};
use tailor_spec::{ArrivalKind, RunPlan, ServiceModel, Spec};

/// A job in service on a server whose jobs share its capacity: when it started, and when its
/// server admitted it (for the queueing figures).
#[derive(Clone, Debug)]
struct InService {
    job: Job,
    started: Nanos,
    enqueued: Nanos,
}

/// The omniscient view of `servers` at `now`, or none when the spec runs blind like the store.
fn world<'s>(servers: &'s [Server], now: Nanos, spec: &Spec, base_service_ns: f64) -> SimWorld<'s> {
    let servers = if spec.cluster.omniscient { servers } else { &[] };
    SimWorld { servers, now, workers: spec.cluster.capacity(), base_service_ns }
}

/// The spec's nominal processing model `(alpha, beta_ms)` as the replica core's service-time
/// estimate: a request's nominal time (for stretch, and the service model's time before
/// slowdowns) is the estimate its replica gives it.
fn nominal_estimate((alpha, beta_ms): (f64, f64)) -> ServiceEstimate {
    ServiceEstimate { alpha_ns_per_byte: alpha, beta_ns: beta_ms * 1e6 }
}

/// The spec's nominal processing model as the size oracle's `p = alpha * size + beta`.
fn service_model(spec: &Spec) -> size::ServiceModel {
    let (alpha, beta_ms) = spec.cluster.nominal_linear();
    size::ServiceModel { alpha_ns_per_byte: alpha, beta_ns: from_ms(beta_ms) }
}

/// Kept small (48 bytes): every event is moved into and out of the queue, and half of them
/// through its FIFO.
enum Event {
    /// The next open-loop arrival, its request drawn ahead ([`Engine::after_next`]): its
    /// coordinator is known while the events before it run, and its state can be fetched
    /// meanwhile.
    Arrival { draw: Draw },
    /// The next trace arrival.
    TraceArrival,
    /// A closed-loop client issues its next request.
    ClientNext { client: u32 },
    /// A job reaches a server.
    ServerArrive { server: NodeId, job: Job },
    /// A server finishes a job that ran for `service` (so it started `service` ago).
    ServiceDone { server: NodeId, job: Job, service: Nanos },
    /// A server whose jobs share its capacity finishes its first job, unless the jobs in
    /// service changed since this was scheduled (a later `generation`).
    SharedDone { server: NodeId, generation: u32 },
    /// A server's answer (read, shadow or write ack) reaches the coordinator; its facts are the
    /// front of [`Engine::answers`] (a probe's reply: the front of [`Engine::probe_replies`]).
    Answer { server: NodeId, job: Job },
    /// A server's refusal (its queue cap, [`ReplicaCore::admits`]) reaches the coordinator: the
    /// copy failed.
    Refused { server: NodeId, job: Job },
    /// A coordinator's wake-up time.
    Wake { client: u32 },
    /// Every server redraws its fluctuation state.
    Fluctuate,
    /// A slowed server's stop ends: it starts what waited.
    Resume { server: NodeId },
    /// An injected fault reaches one of its edges (`cluster.faults`).
    Fault { fault: u32, edge: Edge },
    /// A copy sent to `server` reaches its client timeout (runs with faults only).
    Timeout { server: NodeId, ticket: Ticket },
    /// A coordinator's cancel of a hedged read's losing copy reaches `server`
    /// (`cluster.hedge_cancel`).
    Cancel { server: NodeId, ticket: Ticket },
    /// A slow coordinator takes request `id`, which waited since it arrived (a
    /// `slow-coordinator` fault).
    Intake { client: u32, id: RequestId },
}

const _: () = assert!(size_of::<Event>() <= 48, "events stay small");

/// How many hops ahead the prefetch looks ([`Engine::prefetch_hop`]).
const HOP_STAGES: usize = 6;

/// Ask for what a request touches of coordinator `c` (its hot lines).
#[inline(always)]
fn prefetch_coordinator(c: &SimCoordinator) {
    prefetch_head(c, SimCoordinator::HOT_BYTES);
}

/// The event queue's lane for network hops: all take the same delay, so their times never
/// decrease.
const HOPS: usize = 0;
/// The lane for the workload's next arrival (open loop, trace) or a closed-loop client's next
/// request (a fixed think time ahead): each is scheduled at or after the current time, and
/// before the next one pops no earlier one is scheduled.
const ARRIVALS: usize = 1;
/// The lane for hops between racks (`cluster.topology`): all take the network delay plus the
/// cross-rack delay, so their times never decrease either. Empty without racks.
const FAR_HOPS: usize = 2;
const _: () = assert!(
    HOPS < LANES
        && ARRIVALS < LANES
        && FAR_HOPS < LANES
        && HOPS != ARRIVALS
        && FAR_HOPS != HOPS
        && FAR_HOPS != ARRIVALS,
    "one lane each"
);

/// The simulator state for one run.
pub struct Engine<'a> {
    spec: &'a Spec,
    plan: &'a RunPlan,
    /// Injected failures, when the spec has any.
    faults: Option<Box<Faults>>,
    /// The racks when hops between them take longer (`cluster.topology`; none otherwise).
    racks: Option<Box<Racks>>,
    now: Nanos,
    events: EventQueue<Event>,
    gen: Generator,
    ring: Ring,
    servers: Vec<Server>,
    /// Each server's jobs in service when they share its capacity (`cluster.shared_capacity`;
    /// empty otherwise).
    shared: Vec<Sharing<InService>>,
    clients: Vec<SimCoordinator>,
    reqs: Requests,
    /// The multi-gets in flight and their figures (`workload.multiget`; none without).
    mget: Option<Multigets>,
    /// The facts of answers travelling to their coordinators, in the order they were sent, one
    /// queue within racks and one across: all answers of one queue take the same network delay
    /// through one FIFO lane, so they arrive in this order too. Kept out of [`Event::Answer`]
    /// so that events stay small.
    answers: [VecDeque<(RequestId, Answer)>; 2],
    /// The same for probe answers (Prequal), which carry a [`ProbeReply`] instead.
    probe_replies: [VecDeque<ProbeReply>; 2],
    /// Actions a core returned, reused between calls.
    actions: Vec<Action>,
    service_rng: SmallRng,
    /// Requests this run issues (fewer than asked when a trace is shorter).
    total: u64,
    rec: Recorder,
    net: Nanos,
    generated: u64,
    finished: u64,
    trace_pos: usize,
    base_service_ns: f64,
    /// The spec's `nominal_linear()` as the replica core's estimate, constant for the run and
    /// needed for every request.
    nominal: ServiceEstimate,
    /// The nominal time of every request when it does not depend on the size (`alpha` = 0:
    /// the exponential and cache models), computed once.
    fixed_nominal: Option<Nanos>,
    /// Whether to prefetch the next events' state ([`PREFETCH_FROM_SERVERS`]).
    prefetching: bool,
    /// The open-loop request after the one scheduled, and the gap before it, drawn one
    /// arrival early so that its coordinator can be prefetched an arrival ahead.
    after_next: Option<(Nanos, Draw)>,
    /// The heap's next event as the prefetch last saw it, and how far it got
    /// ([`Engine::prefetch_heap_top`]).
    heap_watch: Cell<(u128, u8)>,
    /// The same for the next arrival, known by the requests issued before it, with its
    /// replicas ([`Engine::prefetch_arrival`]).
    arrival_watch: Cell<(u64, u8, ReplicaSet)>,
    /// The front of the hops lane when the prefetch last went along it.
    hops_watch: Cell<Option<u128>>,
    /// Requests issued when the coordinator of the next request (open loop: the one after
    /// the next arrival) was last asked for.
    coordinator_watch: Cell<u64>,
    /// Whether the run's selector keeps per-server state to prefetch (until it says it keeps
    /// none: every coordinator runs the same selector).
    selector_state: Cell<bool>,
}

/// Clusters from this many servers prefetch the next events' state ([`Engine::prefetch_next`]).
/// Measured on the `c3` setup scaled up (clients 3× servers, one core): at 5,000 servers +20 %
/// requests/s for c3 (296k → 355k) and +10–20 % for random; at 500 no change; at 50, where
/// everything fits in the cache, 5–8 % slower (the peeks cost, nothing misses).
const PREFETCH_FROM_SERVERS: usize = 2_000;

impl<'a> Engine<'a> {
    /// Build the cluster, clients and workload of `plan`.
    pub fn new(plan: &'a RunPlan, trace: Option<&[TraceRecord]>) -> Result<Self, SimError> {
        let spec = &plan.spec;
        let c = &spec.cluster;
        let bad = |e: &dyn std::fmt::Display| SimError::Spec(e.to_string());
        let ring = Ring::new(c.servers, c.replication, c.vnodes).map_err(|e| bad(&e))?;
        let gen = Generator::new(spec, plan.seed, trace)?;
        let large = spec.workload.large_threshold;
        let mut servers = Vec::with_capacity(c.servers);
        for s in 0..c.servers {
            servers.push(Server::new(replica_core(plan, s as NodeId)?, c.cache.capacity));
        }
        for slow in &c.slow_servers {
            servers[slow.server].pause = Some(Box::new(Pause::new(slow.duty, slow.period_ms)));
        }
        let coordinators = c.coordinators();
        let selectors = spec.selector_config();
        let mut clients = Vec::with_capacity(coordinators);
        for id in 0..coordinators {
            let seed = plan.seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ id as u64;
            let env = SelectorEnv {
                coordinator: id as u32,
                coordinators,
                servers: c.servers,
                replication: c.replication,
                workers: c.workers,
                seed,
            };
            let selector = selector::build(&plan.selector, &selectors, &env).map_err(|e| bad(&e))?;
            let knowledge = Knowledge::Simulated { seed: plan.seed };
            let oracle =
                size::build(spec.workload.oracle, large, Some(service_model(spec)), &BloomConfig::default(), knowledge)
                    .map_err(|e| bad(&e))?;
            let cfg = CoordinatorConfig {
                id: id as u32,
                read_consistency: Consistency::One,
                write_consistency: c.write_consistency,
                read_repair: c.read_repair,
                park_capacity: usize::MAX,
                park_timeout: None,
                seed,
            };
            // without racks every answer crosses the network in the HOPS lane (one delay, first
            // in first out) with facts stamped when it left, and events run in time order: each
            // coordinator hears facts in timestamp order, so the freshness gate needs no
            // per-server table. Across racks a later fact from a near server can overtake.
            let mut core = CoordinatorCore::new(cfg, selector, oracle);
            if !c.topology.is_split() {
                core = core.with_facts_in_order();
            }
            if let Some(hedging) = c.speculation().map_err(|e| bad(&e))? {
                core = core.with_speculation(hedging);
            }
            if c.hedge_cancel {
                core = core.with_hedge_cancel();
            }
            clients.push(SimCoordinator::new(core));
        }
        let base_service_ns = mean_service_ns(spec, &gen.sizes);
        let nominal = nominal_estimate(c.nominal_linear());
        let rec = Recorder::new(spec, plan, c.servers);
        Ok(Engine {
            spec,
            plan,
            faults: Faults::new(spec),
            racks: Racks::new(spec),
            now: 0,
            events: EventQueue::new(),
            ring,
            servers,
            shared: (0..c.servers).filter(|_| c.shared_capacity > 0).map(|_| Sharing::new(c.shared_capacity)).collect(),
            clients,
            reqs: Requests::default(),
            mget: Multigets::new(spec),
            answers: Default::default(),
            probe_replies: Default::default(),
            actions: Vec::new(),
            service_rng: SmallRng::seed_from_u64(plan.seed ^ 0x0053_4552_5649_4345),
            total: match spec.workload.arrival {
                ArrivalKind::Trace => spec.workload.requests.min(gen.trace_len() as u64),
                _ => spec.workload.requests,
            },
            rec,
            net: from_ms(c.network_delay_ms),
            generated: 0,
            finished: 0,
            trace_pos: 0,
            base_service_ns,
            nominal,
            fixed_nominal: nominal.is_fixed().then(|| nominal.of(0)),
            prefetching: c.servers >= PREFETCH_FROM_SERVERS,
            after_next: None,
            heap_watch: Cell::new((0, 0)),
            arrival_watch: Cell::new((u64::MAX, 0, ReplicaSet::from_slice(&[]))),
            hops_watch: Cell::new(None),
            coordinator_watch: Cell::new(u64::MAX),
            selector_state: Cell::new(true),
            gen,
        })
    }

    /// Run to completion and return the measurements; `finished(n)` hears of every
    /// [`crate::PROGRESS_EVERY`] requests done.
    pub fn run(mut self, finished: &mut dyn FnMut(u64)) -> RunOutput {
        let w = &self.spec.workload;
        match w.arrival {
            ArrivalKind::Poisson => {
                let draw = self.gen.draw();
                self.events.push_in_order(ARRIVALS, 0, Event::Arrival { draw });
                self.after_next = Some((self.gen.next_gap(), self.gen.draw()));
            }
            ArrivalKind::Trace => {
                if let Some(t) = self.gen.trace_time(0) {
                    self.events.push_in_order(ARRIVALS, t, Event::TraceArrival);
                }
            }
            ArrivalKind::ClosedLoop => {
                for client in 0..self.clients.len() as u32 {
                    for _ in 0..w.outstanding {
                        self.events.push_in_order(ARRIVALS, 0, Event::ClientNext { client });
                    }
                }
            }
        }
        if self.spec.cluster.fluctuation.interval_ms > 0.0 {
            self.events.push(0, Event::Fluctuate);
        }
        for (t, fault, edge) in self.faults.as_ref().map(|f| f.edges()).unwrap_or_default() {
            self.events.push(t, Event::Fault { fault, edge });
        }
        while let Some((time, event)) = self.events.pop() {
            debug_assert!(time >= self.now, "time never goes backwards");
            self.now = time;
            let before = self.finished;
            if self.prefetching {
                self.prefetch_next();
            }
            self.handle(event);
            // most events complete no request: test the count only when one did
            if self.finished != before {
                if self.finished / crate::PROGRESS_EVERY != before / crate::PROGRESS_EVERY {
                    finished(crate::PROGRESS_EVERY);
                }
                if self.finished == self.total {
                    break;
                }
            }
        }
        let offered = self.gen.offered_rps;
        let events = self.events.scheduled();
        let hedging = self.spec.cluster.speculative_retry != "none";
        let hedge_ratio = hedging.then(|| self.per_read(|s| s.hedges));
        let probe_ratio = self.probe_replies_seen().then(|| self.per_read(|s| s.probes));
        let cancels = self.spec.cluster.hedge_cancel.then(|| self.hedge_cancel());
        let mut out = self.rec.finish(self.now, offered, events);
        if let Some(ratio) = hedge_ratio {
            out.result.extra.insert("hedge_ratio".into(), ratio);
        }
        if let Some(ratio) = probe_ratio {
            out.result.extra.insert("probes_per_read".into(), ratio);
        }
        if self.spec.cluster.max_queue.is_some() {
            let refused: u64 = self.servers.iter().map(|s| s.core.refused()).sum();
            out.result.extra.insert("refused_copies".into(), refused as f64);
        }
        out.result.hedge_cancel = cancels;
        out.result.multiget = self.mget.as_ref().map(Multigets::finish);
        if let Some(faults) = self.faults.take() {
            out.result.failover = Some(faults.log.finish(self.spec, self.servers.len(), self.plan.first_seed));
        }
        out
    }

    /// Whether the coordinators sent probes (a probing selector).
    fn probe_replies_seen(&self) -> bool {
        self.clients.iter().any(|c| c.core.stats().probes > 0)
    }

    /// A core counter summed over coordinators, per read issued (hedges: the extra load
    /// speculative retry spent).
    fn per_read(&self, counter: fn(&CoreStats) -> u64) -> f64 {
        let total: u64 = self.clients.iter().map(|c| counter(&c.core.stats())).sum();
        total as f64 / self.reqs.reads().max(1) as f64
    }

    /// Ask the CPU for the memory the next events will touch while this one runs: at scale the
    /// records of a request, its server and its coordinator are cache misses, and handling an
    /// event is long enough to hide them. Pipelines, each stage reading only what the one
    /// before asked for: along the hops ([`Engine::prefetch_hop`]), the next arrival and the
    /// heap's next event ([`Engine::prefetch_arrival`], [`Engine::prefetch_heap_top`]); the
    /// request after the next arrival, drawn an arrival early, gets its coordinator. No effect
    /// on results.
    #[inline]
    fn prefetch_next(&self) {
        self.prefetch_heap_top();
        // the hops' stages move only when the lane does: after any other event they would ask
        // again for what they asked for already
        let front = self.events.lane_front_order(HOPS);
        if front != self.hops_watch.replace(front) {
            for ahead in 0..HOP_STAGES {
                if let Some(e) = self.events.lane_ahead(HOPS, ahead) {
                    self.prefetch_hop(e, ahead);
                }
            }
        }
        // a coordinator ahead is asked for once per request issued, not at every event: asked
        // again, its lines (six or seven) were 31 of the 71 prefetches per request at 5,000
        // servers, all for lines already on their way
        let issued = self.generated;
        let new_coordinator = issued != self.coordinator_watch.replace(issued);
        if let (true, Some((_, draw))) = (new_coordinator, &self.after_next) {
            self.clients.get(draw.client as usize).map(prefetch_coordinator);
        }
        match self.events.lane_ahead(ARRIVALS, 0) {
            Some(Event::Arrival { draw }) => self.prefetch_arrival(draw),
            Some(Event::ClientNext { client }) if new_coordinator => {
                self.clients.get(*client as usize).map(prefetch_coordinator);
            }
            _ => {}
        }
    }

    /// The next open-loop arrival, one stage further at each event before it: its
    /// coordinator's size oracle, selector and the top of its free slots (the coordinator
    /// itself was asked for an arrival earlier); then the slot the request's record will take
    /// and where the selector's state for the request's replicas starts; then that state.
    #[inline]
    fn prefetch_arrival(&self, draw: &Draw) {
        let Some(client) = self.clients.get(draw.client as usize) else { return };
        let (seen, stage, replicas) = self.arrival_watch.get();
        let (oracle, selector) = client.core.read_footprint();
        if seen != self.generated {
            prefetch(oracle);
            prefetch(selector);
            prefetch_lines(&client.core.landing_footprint(Reach::Index));
            let replicas = if self.selector_state.get() { self.ring.replicas(draw.key) } else { replicas };
            return self.arrival_watch.set((self.generated, 1, replicas));
        }
        self.arrival_watch.set((seen, stage.saturating_add(1), replicas));
        match stage {
            1 => {
                prefetch_lines(&client.core.landing_footprint(Reach::Entry));
                self.prefetch_selector_state(selector, &replicas, Reach::Index);
            }
            2 => self.prefetch_selector_state(selector, &replicas, Reach::Entry),
            _ => {}
        }
    }

    /// The state `selector` keeps for `servers`, one step (nothing once a selector said it
    /// keeps none).
    #[inline]
    fn prefetch_selector_state(&self, selector: &dyn ReplicaSelector, servers: &[NodeId], reach: Reach) {
        if self.selector_state.get() && !selector.footprint(servers, reach, &mut prefetch_addr) {
            self.selector_state.set(false);
        }
    }

    /// The heap's next event, one stage further at each event during which it stays next: its
    /// place in the slab; then, for the end of a job, read from there, its server; then what
    /// the server's core will touch (the queue, the accountant's lists); then the queue's ends.
    /// Each stage reads only what the one before asked for an event earlier (reading the slab
    /// at once to go further waited for that line every time, and cost more than it saved).
    #[inline]
    fn prefetch_heap_top(&self) {
        let Some((key, slot)) = self.events.heap_top() else { return };
        let (seen, stage) = self.heap_watch.get();
        let stage = if seen == key { stage } else { 0 };
        self.heap_watch.set((key, stage.saturating_add(1)));
        if stage == 0 {
            return prefetch_all(slot);
        }
        let Some(Event::ServiceDone { server, .. }) = slot else { return };
        let Some(s) = self.servers.get(*server as usize) else { return };
        match stage {
            1 => prefetch_all(s),
            2 => prefetch_lines(&s.core.footprint()),
            3 => prefetch_lines(&s.core.queue_footprint()),
            _ => {}
        }
    }

    /// What the hop `ahead` places from the front of the hops lane will touch (the lane holds
    /// only arrivals at servers and answers), one stage per place. An arrival at a server: its
    /// request and the server three hops ahead, then what the server's core touches beyond
    /// itself (the queue, the accountant's lists), then the queue's ends. An answer: its
    /// request five hops ahead, then (two hops later) its coordinator, every line (a core spans
    /// seven), then the coordinator's record of the request and its selector, then where the
    /// selector's state for the server starts, then that state.
    #[inline]
    fn prefetch_hop(&self, e: &Event, ahead: usize) {
        match *e {
            Event::ServerArrive { server, job } => {
                let Some(s) = self.servers.get(server as usize) else { return };
                match ahead {
                    3 => {
                        self.reqs.slot_of(job.ticket.id).map(prefetch);
                        prefetch_all(s);
                    }
                    1 => prefetch_lines(&s.core.footprint()),
                    0 => prefetch_lines(&s.core.queue_footprint()),
                    _ => {}
                }
            }
            Event::Answer { server, job } => {
                let Some(r) = self.reqs.slot_of(job.ticket.id) else { return };
                if ahead == 5 {
                    return prefetch(r);
                }
                let Some(client) = self.clients.get(r.client as usize) else { return };
                match ahead {
                    3 => prefetch_coordinator(client),
                    2 => {
                        let (record, selector) = client.core.footprint(job.ticket);
                        record.map(prefetch_all);
                        prefetch(selector);
                    }
                    1 | 0 => {
                        let reach = if ahead == 1 { Reach::Index } else { Reach::Entry };
                        self.prefetch_selector_state(client.core.read_footprint().1, &[server], reach)
                    }
                    _ => {}
                }
            }
            Event::Refused { .. } | Event::Cancel { .. } => {}
            _ => unreachable!("only arrivals at servers, answers, refusals and cancels travel the hops lane"),
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Arrival { draw } => self.on_arrival(draw),
            Event::TraceArrival => self.on_trace_arrival(),
            Event::ClientNext { client } => {
                if self.generated < self.total {
                    let draw = self.gen.draw_for(client);
                    self.issue(draw);
                }
            }
            Event::ServerArrive { server, job } => self.on_server_arrive(server, job),
            Event::ServiceDone { server, job, service } => self.on_service_done(server, job, service),
            Event::SharedDone { server, generation } => self.on_shared_done(server, generation),
            Event::Answer { server, job } => self.on_answer(server, job),
            Event::Refused { server, job } => self.on_refused(server, job),
            Event::Wake { client } => {
                let world = world(&self.servers, self.now, self.spec, self.base_service_ns);
                if self.clients[client as usize].wake(self.now, &world, &mut self.actions) {
                    self.carry_out(client);
                }
            }
            Event::Fluctuate => self.on_fluctuate(),
            Event::Resume { server } => {
                self.servers[server as usize].resume_armed = false;
                self.start_jobs(server);
            }
            Event::Fault { fault, edge } => self.on_fault(fault, edge),
            Event::Timeout { server, ticket } => self.on_timeout(server, ticket),
            Event::Cancel { server, ticket } => self.on_cancel(server, ticket),
            Event::Intake { client, id } => self.on_intake(client, id),
        }
    }

    /// An open-loop request arrives; the next one is scheduled and the one after it drawn (the
    /// workload's draws in the same order as drawing each on arrival: a request, the gap to the
    /// next, the next request, ...).
    fn on_arrival(&mut self, draw: Draw) {
        self.issue(draw);
        if self.generated < self.total {
            let (gap, draw) = self.after_next.take().expect("the next request was drawn");
            self.events.push_in_order(ARRIVALS, self.now + gap, Event::Arrival { draw });
            self.after_next = Some((self.gen.next_gap(), self.gen.draw()));
        }
    }

    fn on_trace_arrival(&mut self) {
        let Some((_, draw)) = self.gen.trace_record(self.trace_pos) else { return };
        self.trace_pos += 1;
        self.issue(draw);
        if self.generated < self.total {
            if let Some(t) = self.gen.trace_time(self.trace_pos) {
                self.events.push_in_order(ARRIVALS, t.max(self.now), Event::TraceArrival);
            }
        }
    }

    /// A request arrives at its coordinator.
    fn issue(&mut self, d: Draw) {
        self.generated += 1;
        if self.generated == self.total {
            self.rec.arrivals_ended(self.now);
        }
        match self.gen.multiget(d) {
            Some(draws) => self.issue_multiget(draws),
            None => self.hand_over(d, None),
        }
    }

    /// A multi-get arrives at its coordinator: each key is a read of its own, carrying the
    /// multi-get's fan-out (its key count and its bottleneck as the coordinator's core estimates
    /// it: the hedge budget's and Rein's).
    fn issue_multiget(&mut self, draws: Vec<Draw>) {
        let client = draws[0].client;
        let keys = draws.iter().map(|d| (d.key, self.ring.replicas(d.key), Some(d.size)));
        let fanout = self.clients[client as usize].core.fanout(keys);
        let slot = self.mget.as_mut().expect("multi-gets are tracked").open(self.now, client, draws.len());
        for d in draws {
            self.hand_over(d, Some((slot, fanout)));
        }
    }

    /// Hand request `d` to its coordinator (a sub-read of the multi-get in `multiget`, if any:
    /// its slot and fan-out).
    fn hand_over(&mut self, d: Draw, multiget: Option<(u32, Fanout)>) {
        let replicas = self.ring.replicas(d.key);
        let nominal = self.nominal(d.size);
        let (now, op, client) = (self.now, d.op, d.client);
        let req = Req::new(d.key, d.size, op, client, now, nominal);
        let id = self.reqs.insert(req);
        if let (Some((slot, _)), Some(m)) = (multiget, self.mget.as_mut()) {
            m.add(slot, id);
        }
        let fanout = multiget.map_or(Fanout::default(), |(_, f)| f);
        let req = ClientRequest { id, key: d.key, replicas, size: Some(d.size), fanout };
        if let Some(f) = self.faults.as_mut() {
            if op == Op::Read {
                f.log.coordinated(now, client);
            }
            if let Some(delay) = f.coordinator_delay(client) {
                f.delay(op, req);
                self.events.push(now + delay, Event::Intake { client, id });
                return;
            }
        }
        self.coordinate(client, op, req);
    }

    /// `client`'s coordinator takes request `req`.
    fn coordinate(&mut self, client: u32, op: Op, req: ClientRequest) {
        let world = world(&self.servers, self.now, self.spec, self.base_service_ns);
        self.clients[client as usize].request(self.now, op, req, &world, &mut self.actions);
        self.carry_out(client);
    }

    /// A slow coordinator takes request `id` after its delay.
    #[cold]
    fn on_intake(&mut self, client: u32, id: RequestId) {
        let (op, req) = self.faults.as_mut().expect("requests wait only under faults").take(id);
        self.coordinate(client, op, req);
    }

    #[inline]
    fn nominal(&self, size: u64) -> Nanos {
        self.fixed_nominal.unwrap_or_else(|| self.nominal.of(size))
    }

    /// Carry out what `client`'s core asked for, then arm its next wake-up.
    fn carry_out(&mut self, client: u32) {
        // by index, in place: actions are `Copy` and carrying one out never adds another, so the
        // buffer need not be taken out of `self` and put back for every event
        for i in 0..self.actions.len() {
            match self.actions[i] {
                Action::Send(s) => {
                    self.reqs.sent(s.ticket.id);
                    if self.faults.is_some() {
                        self.watch_copy(s.ticket, s.replica, s.kind);
                    }
                    let job = Job { ticket: s.ticket, kind: s.kind, tags: s.tags, age: s.age };
                    self.hop(self.far(client, s.replica), Event::ServerArrive { server: s.replica, job });
                }
                Action::Reply { request, .. } => self.completed(request),
                Action::Cancel { replica, ticket, .. } => {
                    // a message like any other: it crosses the network in the hops lane
                    self.hop(self.far(client, replica), Event::Cancel { server: replica, ticket });
                }
                Action::Fail { request, failure } => {
                    assert!(
                        self.spec.cluster.max_queue.is_some() || self.faults.is_some(),
                        "request {request} failed ({failure}): the simulator injects no failures but refusals and faults"
                    );
                    self.gave_up(request);
                }
            }
        }
        self.actions.clear();
        if let Some(t) = self.clients[client as usize].arm(self.now) {
            self.events.push(t, Event::Wake { client });
        }
    }

    /// Request `req` got its reply at the client.
    fn completed(&mut self, req: RequestId) {
        let r = self.reqs.get(req);
        let client = r.client;
        match r.op {
            Op::Read => self.rec.read_done(r.release, self.now, r.nominal),
            Op::Write => self.rec.write_done(r.release, self.now),
        }
        if let (Some(f), Op::Read) = (self.faults.as_mut(), r.op) {
            f.log.read_done(r.release, self.now);
        }
        self.rec.keep(crate::RequestRecord {
            id: req,
            client,
            key: r.key,
            size: r.size,
            write: r.op == Op::Write,
            release: r.release,
            done: self.now,
        });
        self.reqs.replied(req);
        self.request_over(req, client, true);
    }

    /// Read or write `req` of `client` is over (`ok`: answered): so is its client request,
    /// unless it is a sub-read whose multi-get still waits for other keys.
    fn request_over(&mut self, req: RequestId, client: u32, ok: bool) {
        let over = self.mget.as_mut().map_or(SubOver::Single, |m| m.sub_over(req, self.now, ok));
        if over != SubOver::Pending {
            self.finished += 1;
            self.closed_loop_next(client);
        }
    }

    /// The client got request `req`'s failure (every replica it could try refused it).
    #[cold]
    fn gave_up(&mut self, req: RequestId) {
        let r = self.reqs.get(req);
        let client = r.client;
        if let (Some(f), Op::Read) = (self.faults.as_mut(), r.op) {
            f.log.read_failed(r.release, self.now);
        }
        self.rec.failed();
        self.reqs.replied(req);
        self.request_over(req, client, false);
    }

    fn on_server_arrive(&mut self, server: NodeId, job: Job) {
        if self.faults.as_ref().is_some_and(|f| f.down(server)) {
            return self.lost_on_arrival(job);
        }
        if job.kind == SendKind::Probe {
            return self.on_probe_arrive(server, job);
        }
        if !self.servers[server as usize].core.admits() {
            // refused at once, like the store's busy replica: the failure goes back
            return self.hop(self.far_of(job.ticket.id, server), Event::Refused { server, job });
        }
        let r = self.reqs.get(job.ticket.id);
        let arrival = Arrival { id: job.ticket.id, age: job.age, service: r.nominal, size: r.size, tags: job.tags };
        let s = &mut self.servers[server as usize];
        let behind_large = s.core.admit(self.now, arrival, job);
        self.rec.queue.arrived(server as usize, self.now);
        if behind_large && job.kind == SendKind::Read && !s.core.is_large(r.size) {
            self.rec.small_behind_large(r.release);
        }
        self.start_jobs(server);
    }

    /// Fill idle workers of `server` from its local queue; a stopped server starts nothing and
    /// wakes when its stop ends. A job's `service` is the time from its start to its end, stops
    /// included (what the server's own clock would measure).
    fn start_jobs(&mut self, server: NodeId) {
        self.fill_workers(server);
        self.track_occupancy(server);
    }

    /// Tell the recorder what `server` holds from now on (after any change to it).
    fn track_occupancy(&mut self, server: NodeId) {
        let core = &self.servers[server as usize].core;
        self.rec.queue.occupancy(server as usize, self.now, core.waiting(), core.running());
    }

    /// [`Self::start_jobs`] without the bookkeeping.
    fn fill_workers(&mut self, server: NodeId) {
        let pause = self.servers[server as usize].pause.as_deref().copied();
        if let Some(resume) = pause.and_then(|p| p.stopped_until(self.now)) {
            return self.arm_resume(server, resume);
        }
        let fault = self.faults.as_ref().and_then(|f| f.active(server));
        if matches!(fault, Some(Active::Gray(None) | Active::Down)) {
            // hung until the fault's end, which starts what waited
            return;
        }
        while let Some((meta, job)) = self.servers[server as usize].core.start(self.now) {
            let work = self.service_time(server, job.ticket.id, meta.service);
            let work = fault.map_or(work, |f| faulty_work(f, work));
            if let Some(shared) = self.shared.get_mut(server as usize) {
                shared.start(self.now, InService { job, started: self.now, enqueued: meta.enqueued }, work);
                continue;
            }
            let done = pause.map_or(self.now + work, |p| p.finish(self.now, work));
            self.rec.queue.started(server as usize, meta.enqueued, done);
            self.events.push(done, Event::ServiceDone { server, job, service: done - self.now });
        }
        self.schedule_shared(server);
    }

    /// Schedule the next completion of shared `server` if its jobs in service changed.
    fn schedule_shared(&mut self, server: NodeId) {
        if let Some((at, generation)) = self.shared.get_mut(server as usize).and_then(Sharing::reschedule) {
            self.events.push(at, Event::SharedDone { server, generation });
        }
    }

    /// Shared `server`'s first job in service is done, unless its jobs changed since.
    fn on_shared_done(&mut self, server: NodeId, generation: u32) {
        let shared = &mut self.shared[server as usize];
        if shared.generation() != generation {
            return;
        }
        let done = shared.finish_first(self.now).expect("a completion is scheduled only with jobs in service");
        self.rec.queue.started(server as usize, done.enqueued, self.now);
        self.on_service_done(server, done.job, self.now - done.started);
        self.schedule_shared(server);
    }

    /// Wake stopped `server` at `resume` unless a wake-up is already due.
    fn arm_resume(&mut self, server: NodeId, resume: Nanos) {
        let s = &mut self.servers[server as usize];
        if !s.resume_armed {
            s.resume_armed = true;
            self.events.push(resume, Event::Resume { server });
        }
    }

    /// The real processing time of request `id`'s job at `server` now (its key is looked up
    /// only for a cache: the request's record is a likely cache miss).
    fn service_time(&mut self, server: NodeId, id: RequestId, nominal: Nanos) -> Nanos {
        let c = &self.spec.cluster;
        let s = &mut self.servers[server as usize];
        let slowdown = s.slowdown;
        let exp = |rng: &mut SmallRng, mean_ns: f64| -> Nanos {
            let x: f64 = Exp1.sample(rng);
            round_nonneg(x * mean_ns).max(1.0) as Nanos
        };
        if let Some(cache) = s.cache.as_mut() {
            let hit = cache.access(self.reqs.get(id).key);
            self.rec.cache_access(hit);
            let mean = if hit { c.cache.hit_ms } else { c.cache.miss_ms } * 1e6 * slowdown;
            return exp(&mut self.service_rng, mean);
        }
        match c.service.model {
            ServiceModel::Exponential => exp(&mut self.service_rng, c.service.mean_ms * 1e6 * slowdown),
            ServiceModel::Size => round_nonneg((nominal as f64) * slowdown).max(1.0) as Nanos,
        }
    }

    fn on_service_done(&mut self, server: NodeId, job: Job, service: Nanos) {
        let start = self.now - service;
        if self.faults.as_ref().is_some_and(|f| f.lost(server, start, self.now)) {
            return;
        }
        let id = job.ticket.id;
        let feedback = self.servers[server as usize].core.finish(self.now, id, service);
        self.rec.queue.completed(server as usize, self.now);
        if job.kind == SendKind::Hedge {
            self.rec.served(server, self.now);
        }
        if job.kind == SendKind::Read {
            self.rec.served(server, self.now);
            if self.rec.wants_bound(seq(id)) {
                let r = self.reqs.get(id);
                let replicas = self.ring.replicas(r.key);
                self.rec.bound_job(seq(id), r.release + self.net, start, service, self.now, &replicas);
            }
        }
        let far = self.far_of(id, server);
        self.answers[far as usize].push_back((id, Answer { replica: server, feedback, value_size: None }));
        self.hop(far, Event::Answer { server, job });
        self.start_jobs(server);
    }

    /// A probe reaches `server`: answered at once, unqueued, with the network delay back.
    fn on_probe_arrive(&mut self, server: NodeId, job: Job) {
        let far = self.far_of(job.ticket.id, server);
        self.probe_replies[far as usize].push_back(self.servers[server as usize].core.probe(self.now));
        self.hop(far, Event::Answer { server, job });
    }

    /// Whether a message between coordinator `client` and `server` crosses racks.
    #[inline]
    fn far(&self, client: u32, server: NodeId) -> bool {
        self.racks.as_ref().is_some_and(|r| r.far(client, server))
    }

    /// Whether a message about request `id` between its coordinator and `server` crosses racks
    /// (the request is looked up only when there are racks).
    #[inline]
    fn far_of(&self, id: RequestId, server: NodeId) -> bool {
        self.racks.as_ref().is_some_and(|r| r.far(self.reqs.get(id).client, server))
    }

    /// Send `event` over the network: within a rack in the hops lane, across racks (`far`) in
    /// the far lane with the cross-rack delay added.
    #[inline]
    fn hop(&mut self, far: bool, event: Event) {
        match self.racks.as_ref().filter(|_| far) {
            Some(r) => self.events.push_in_order(FAR_HOPS, self.now + self.net + r.cross(), event),
            None => self.events.push_in_order(HOPS, self.now + self.net, event),
        }
    }

    fn on_answer(&mut self, server: NodeId, job: Job) {
        if job.kind == SendKind::Probe {
            let far = self.events.popped_from(FAR_HOPS) as usize;
            let reply = self.probe_replies[far].pop_front().expect("a probe answer event has its reply");
            let client = self.reqs.get(job.ticket.id).client;
            let world = world(&self.servers, self.now, self.spec, self.base_service_ns);
            self.clients[client as usize].core.probed(self.now, server, reply, &world, &mut self.actions);
            self.carry_out(client);
            return self.reqs.answered(job.ticket.id);
        }
        // from the lane it came by: a timed-out copy's request may be gone (its slot reused)
        let far = self.events.popped_from(FAR_HOPS) as usize;
        if !self.settle(job.ticket, server) {
            // timed out already: the coordinator has moved on
            self.answers[far].pop_front();
            return;
        }
        // lent to the core in place, then dropped: the facts are not copied on the way
        let (req, answer) = self.answers[far].front_mut().expect("an answer event has its facts");
        assert!(*req == job.ticket.id && answer.replica == server, "answers arrive in the order they were sent");
        let client = self.reqs.get(*req).client;
        let world = world(&self.servers, self.now, self.spec, self.base_service_ns);
        self.clients[client as usize].answered(self.now, job.ticket, answer, &world, &mut self.actions);
        self.answers[far].pop_front();
        self.carry_out(client);
        self.reqs.answered(job.ticket.id);
    }

    /// A server's refusal reached the coordinator: the copy failed there (the core retries it
    /// among the untried replicas, or fails the request).
    #[cold]
    fn on_refused(&mut self, server: NodeId, job: Job) {
        if self.settle(job.ticket, server) {
            self.on_refused_settled(server, job.ticket);
        }
    }

    /// The copy of `ticket` sent to `server` failed (refused or timed out).
    #[cold]
    fn on_refused_settled(&mut self, server: NodeId, ticket: Ticket) {
        let client = self.reqs.get(ticket.id).client;
        let world = world(&self.servers, self.now, self.spec, self.base_service_ns);
        self.clients[client as usize].core.failed(self.now, ticket, server, &world, &mut self.actions);
        self.carry_out(client);
        self.reqs.answered(ticket.id);
    }

    fn closed_loop_next(&mut self, client: u32) {
        if self.spec.workload.arrival == ArrivalKind::ClosedLoop && self.generated < self.total {
            let think = from_ms(self.spec.workload.think_ms);
            self.events.push_in_order(ARRIVALS, self.now + think, Event::ClientNext { client });
        }
    }

    fn on_fluctuate(&mut self) {
        let f = &self.spec.cluster.fluctuation;
        let other = f.other_slowdown();
        for s in &mut self.servers {
            s.slowdown = if self.service_rng.random::<f64>() < f.probability { other } else { 1.0 };
        }
        if self.generated < self.total || self.finished < self.generated {
            self.events.push(self.now + from_ms(f.interval_ms), Event::Fluctuate);
        }
    }
}

/// Hedge cancellation (`cluster.hedge_cancel`).
impl Engine<'_> {
    /// A cancel reaches `server`: the copy is dropped if it still waits there, and then no
    /// answer comes for it. One already running finishes and answers (its work is spent; the
    /// coordinator ignores the answer), as with Dean and Barroso's tied requests.
    #[cold]
    fn on_cancel(&mut self, server: NodeId, ticket: Ticket) {
        if !self.servers[server as usize].core.cancel(ticket.id) {
            return;
        }
        if let Some(f) = self.faults.as_mut() {
            // the copy will not answer: its timeout must not fail it
            f.settle(ticket.id, server);
        }
        self.track_occupancy(server);
        self.reqs.answered(ticket.id);
    }

    /// The run's cancellation figures.
    fn hedge_cancel(&self) -> HedgeCancel {
        let requested = self.clients.iter().map(|c| c.core.stats().cancels).sum();
        let (cancelled, saved) =
            self.servers.iter().map(|s| s.core.cancelled()).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        HedgeCancel { requested, cancelled, work_saved_ms: saved as f64 / 1e6 }
    }
}

/// Injected failures (`cluster.faults`, [`crate::faults`]).
impl Engine<'_> {
    /// A copy is sent under faults: it waits for its answer or its timeout, and a read's
    /// destination is logged for the failover figures.
    #[cold]
    fn watch_copy(&mut self, ticket: Ticket, replica: NodeId, kind: SendKind) {
        let f = self.faults.as_mut().expect("copies are watched only under faults");
        if kind == SendKind::Read {
            f.log.sent(self.now, replica);
        }
        if kind != SendKind::Probe {
            f.sent(ticket.id, replica);
            let at = self.now + f.timeout;
            self.events.push(at, Event::Timeout { server: replica, ticket });
        }
    }

    /// Whether the copy's answer (or refusal) from `server` is the first news of it: always
    /// without faults; under faults, false once it timed out.
    #[inline]
    fn settle(&mut self, ticket: Ticket, server: NodeId) -> bool {
        self.faults.as_mut().is_none_or(|f| f.settle(ticket.id, server))
    }

    /// A copy reached a down server: nothing answers it (a probe is simply lost; any other
    /// copy times out at its coordinator).
    #[cold]
    fn lost_on_arrival(&mut self, job: Job) {
        if job.kind == SendKind::Probe {
            self.reqs.answered(job.ticket.id);
        }
    }

    /// A copy's timeout came: if it is still unanswered, it failed at its coordinator, which
    /// retries another replica or fails the request.
    #[cold]
    fn on_timeout(&mut self, server: NodeId, ticket: Ticket) {
        let f = self.faults.as_mut().expect("timeouts are scheduled only under faults");
        if !f.settle(ticket.id, server) {
            return;
        }
        f.log.timed_out(self.now - f.timeout, server);
        self.on_refused_settled(server, ticket);
    }

    /// A fault reaches `edge`: a crash loses the server's queue, running jobs and cache (it
    /// comes back cold); detection tells every coordinator; the end of a hang or a crash
    /// starts what waited.
    #[cold]
    fn on_fault(&mut self, fault: u32, edge: Edge) {
        let f = self.faults.as_mut().expect("fault edges are scheduled only under faults");
        let detected = f.detected(fault);
        let (server, kind) = f.reach(fault, edge, self.now);
        match (edge, kind) {
            // a coordinator's fault: what it delayed is taken at its own time
            (_, Active::SlowCoordinator(_)) => {}
            (Edge::Start, Active::Down) => {
                let core = replica_core(self.plan, server).expect("built once already");
                let s = &mut self.servers[server as usize];
                s.core = core;
                if let Some(cache) = s.cache.as_mut() {
                    **cache = crate::lru::Lru::new(self.spec.cluster.cache.capacity);
                }
                if let Some(shared) = self.shared.get_mut(server as usize) {
                    shared.clear(self.now);
                }
                self.track_occupancy(server);
            }
            (Edge::Detect, _) => self.clients.iter_mut().for_each(|c| c.core.set_up(server, false)),
            (Edge::End, _) => {
                if detected {
                    self.clients.iter_mut().for_each(|c| c.core.set_up(server, true));
                }
                self.start_jobs(server);
            }
            _ => {}
        }
    }
}

/// The running time of a job of `work` started under `fault`: a slow server's is stretched, a
/// gray server's is its hang.
fn faulty_work(fault: Active, work: Nanos) -> Nanos {
    match fault {
        Active::Slow(factor) => round_nonneg(work as f64 * factor).max(1.0) as Nanos,
        Active::Gray(Some(hang)) => hang.max(1),
        Active::Gray(None) | Active::Down => work,
        Active::SlowCoordinator(_) => unreachable!("a coordinator's fault is no server's"),
    }
}

/// Server `s`'s replica core for `plan`: its local queue, workers and queue cap, and the
/// estimates its selector reads.
fn replica_core(plan: &RunPlan, s: NodeId) -> Result<ReplicaCore<Job>, SimError> {
    let (spec, c) = (&plan.spec, &plan.spec.cluster);
    let seed = plan.seed ^ (s as u64).wrapping_mul(0x9E37);
    let queue = local::build::<Job>(&plan.local, &spec.local, seed).map_err(|e| SimError::Spec(e.to_string()))?;
    let mut core = ReplicaCore::new(s, queue, c.workers, spec.workload.large_threshold);
    core.set_max_queue(c.max_queue);
    if c.hedge_cancel {
        core = core.with_cancellation();
    }
    if selector::probing(&plan.selector) {
        core = core.with_probe_estimates();
    }
    if !selector::reads_dq(&plan.selector) {
        core = core.without_dq();
    }
    if !selector::reads(&plan.selector, selector::Fact::Utilization) {
        core = core.without_utilization();
    }
    Ok(core)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_spec::{expand, presets::preset};

    /// Prefetching is a hint to the CPU: a run gives the same bits with it and without.
    #[test]
    fn prefetching_changes_no_result() {
        let spec = preset("c3")
            .unwrap()
            .with_overrides(&[
                "workload.requests=20000",
                "workload.warmup_ms=0",
                "seeds=[3]",
                "compare.selectors=c3,random,dynamic-snitch,prequal,tap,heron,p2c-peak-ewma",
                "cluster.speculative_retry=99p",
                // past the ids a selector's per-server map indexes directly: its hashed lookups
                // are prefetched too
                "cluster.servers=150",
                "cluster.clients=450",
            ])
            .unwrap();
        for plan in expand(&spec).unwrap() {
            let run = |prefetching: bool| {
                let mut engine = Engine::new(&plan, None).unwrap();
                engine.prefetching = prefetching;
                engine.run(&mut |_| {})
            };
            assert_eq!(run(false), run(true), "{}", plan.selector);
        }
    }
}
