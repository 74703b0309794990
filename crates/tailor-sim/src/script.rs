//! Scripted runs for the differential test: one event trace — client requests, replicas'
//! answers with their facts, heartbeats, and the coordinator's own wake-ups — fed to a
//! coordinator driver, recording every decision it carries out.
//!
//! The trace and the scripted replicas are functions of a seed, so the same script can drive
//! the simulator's driver ([`SimDriver`], the code the event loop uses) and the store's driver
//! (its `Coordinator` with a scripted transport under a paused tokio clock, in the `tailor`
//! crate's tests). A replica's answer to a copy depends only on (request, replica, send time),
//! so two drivers that decide alike see the same answers at the same times, and the first
//! decision that differs is where they part. A probe (Prequal's) is answered the same way: its
//! reply and its delay depend only on (replica, send time).

use crate::coordinator::SimCoordinator;
use crate::events::EventQueue;
use tailor_core::coordinator::{
    Action, Answer, ClientRequest, CoordinatorConfig, CoordinatorCore, Fanout, SendKind, Ticket,
};
use tailor_core::facts::{Feedback, ProbeReply};
use tailor_core::model::Tags;
use tailor_core::oracle::bloom::BloomConfig;
use tailor_core::oracle::size::{self, Knowledge, OracleKind, ServiceModel};
use tailor_core::ring::{hash_key, Ring};
use tailor_core::selector::{self, Blind, Rng, SelectorConfig, SelectorEnv};
use tailor_core::time::{Nanos, MS, US};
use tailor_core::{Consistency, NodeId, Op};

/// A client request of the script.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The key as a client sends it.
    pub key: Vec<u8>,
    /// Its hash, as the store computes it.
    pub hash: u64,
    /// Read or write.
    pub op: Op,
    /// The value's size in bytes (a read's is the size last written).
    pub size: u64,
    /// A multi-get's sub-read: the multi-get's fan-out (the default: a single request).
    pub fanout: Fanout,
}

/// One input of the trace.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// The `n`-th client request arrives.
    Request(usize),
    /// A heartbeat reply with a replica's facts arrives.
    Heartbeat(NodeId),
}

/// A decision a driver carried out, with the time it did.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// A copy of request `request` went to `replica`.
    Send {
        /// When.
        at: Nanos,
        /// The request's index in the script.
        request: usize,
        /// Where.
        replica: NodeId,
        /// Why.
        kind: SendKind,
        /// With what tags.
        tags: Tags,
    },
    /// The client got its answer (`replica`: whose value a read at ONE returned).
    Reply {
        /// When.
        at: Nanos,
        /// The request's index in the script.
        request: usize,
        /// The replica whose value a read returned (`None` for a write).
        replica: Option<NodeId>,
    },
    /// The client got a failure.
    Fail {
        /// When.
        at: Nanos,
        /// The request's index in the script.
        request: usize,
    },
    /// A probe the selector asked for went to `replica` (the store's transport sees no request
    /// with it, so none is compared).
    Probe {
        /// When.
        at: Nanos,
        /// Where.
        replica: NodeId,
    },
}

/// A copy a driver sent, to be answered by the scripted replicas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Copy {
    /// The driver's handle for it.
    pub handle: u64,
    /// The request's index in the script.
    pub request: usize,
    /// The replica it went to.
    pub replica: NodeId,
    /// When it was sent.
    pub sent_at: Nanos,
}

/// A probe a driver sent, to be answered by the scripted replicas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    /// The driver's handle for it.
    pub handle: u64,
    /// The replica it went to.
    pub replica: NodeId,
    /// When it was sent.
    pub sent_at: Nanos,
}

/// What a driver carried out during one call.
#[derive(Default)]
pub struct Log {
    /// Every decision so far, in the order carried out.
    pub decisions: Vec<Decision>,
    copies: Vec<Copy>,
    probes: Vec<Probe>,
}

impl Log {
    /// Whether copies or probes were sent whose answers are not scheduled yet.
    pub fn sent_new_copies(&self) -> bool {
        !self.copies.is_empty() || !self.probes.is_empty()
    }

    /// Record a probe sent at `at` (the runner schedules its scripted reply).
    pub fn probe(&mut self, at: Nanos, handle: u64, replica: NodeId) {
        self.decisions.push(Decision::Probe { at, replica });
        self.probes.push(Probe { handle, replica, sent_at: at });
    }

    /// Record a copy sent at `at` (the runner schedules its scripted answer).
    pub fn send(&mut self, at: Nanos, handle: u64, request: usize, replica: NodeId, kind: SendKind, tags: Tags) {
        self.decisions.push(Decision::Send { at, request, replica, kind, tags });
        self.copies.push(Copy { handle, request, replica, sent_at: at });
    }
}

/// A coordinator driver under test.
pub trait Driver {
    /// Move the clock towards `to`, carrying out the wake-ups the core asked for until then;
    /// stop right after a wake-up that sent copies (their answers may come before `to`).
    fn advance(&mut self, to: Nanos, log: &mut Log);
    /// Client request `n` arrives now.
    fn request(&mut self, n: usize, req: &Request, log: &mut Log);
    /// The answer to copy `copy` of request `req` arrives now with `feedback`.
    fn answer(&mut self, copy: &Copy, req: &Request, feedback: Feedback, log: &mut Log);
    /// A heartbeat reply from `from` arrives now.
    fn heartbeat(&mut self, from: NodeId, feedback: Feedback, log: &mut Log);
    /// The reply to probe `probe` arrives now.
    fn probe_reply(&mut self, probe: &Probe, reply: ProbeReply, log: &mut Log);
}

/// A scripted trace and the scripted replicas that answer it.
#[derive(Clone, Debug)]
pub struct Script {
    /// The selector under test.
    pub selector: String,
    /// The size oracle.
    pub oracle: OracleKind,
    /// Servers (replicas are `0..servers`).
    pub servers: usize,
    /// Replication factor.
    pub replication: usize,
    /// Seed of the trace, the replicas and the core.
    pub seed: u64,
    /// The requests.
    pub requests: Vec<Request>,
    /// Inputs in time order.
    pub inputs: Vec<(Nanos, Input)>,
}

/// Values above this are large.
const LARGE: u64 = 32 * 1024;
/// Heartbeat period of every replica.
const HEARTBEAT: Nanos = 20 * MS;

impl Script {
    /// A trace of `n` client requests (every key written before it is read, then 85 % reads of
    /// a skewed key choice, arrivals 400 µs apart on average) with heartbeats, for `selector`.
    pub fn generate(selector: &str, oracle: OracleKind, seed: u64, n: usize, hash: fn(&[u8]) -> u64) -> Script {
        let mut rng = Rng::new(seed, 0x5C12_1A7E);
        let keys: Vec<(Vec<u8>, u64)> = (0..30)
            .map(|k| {
                let key = format!("key-{k}").into_bytes();
                let size = if rng.unit() < 0.2 { 64 * 1024 } else { 1024 };
                (key, size)
            })
            .collect();
        let mut requests = Vec::with_capacity(n + keys.len());
        let mut inputs = Vec::new();
        let mut at = MS;
        for (key, size) in &keys {
            requests.push(Request {
                hash: hash(key),
                key: key.clone(),
                op: Op::Write,
                size: *size,
                fanout: Fanout::default(),
            });
            inputs.push((at, Input::Request(requests.len() - 1)));
            at += 300 * US;
        }
        for _ in 0..n {
            at += (-(1.0 - rng.unit()).ln() * 400_000.0) as Nanos + 1;
            let (key, size) = &keys[(rng.unit() * rng.unit() * keys.len() as f64) as usize];
            let op = if rng.unit() < 0.85 { Op::Read } else { Op::Write };
            // every fifth request, a read, is a key of a multi-get: its tag must reach the replica
            let i = requests.len();
            let fanout = match op == Op::Read && i % 5 == 0 {
                true => Fanout { keys: 4, bottleneck_us: 100 + (i * 37 % 4000) as u16 },
                false => Fanout::default(),
            };
            requests.push(Request { hash: hash(key), key: key.clone(), op, size: *size, fanout });
            inputs.push((at, Input::Request(requests.len() - 1)));
        }
        for beat in 1..=at / HEARTBEAT {
            for from in 0..5 {
                // the replicas' heartbeats are spread over the period
                inputs.push((beat * HEARTBEAT + from as Nanos * 3 * MS + 17 * US, Input::Heartbeat(from)));
            }
        }
        inputs.sort_by_key(|(t, _)| *t);
        Script { selector: selector.into(), oracle, servers: 5, replication: 3, seed, requests, inputs }
    }

    /// The coordinator core both drivers wrap; only what an engine can know of sizes differs.
    pub fn core(&self, knowledge: Knowledge) -> CoordinatorCore {
        let env = SelectorEnv {
            coordinator: 0,
            coordinators: 3,
            servers: self.servers,
            replication: self.replication,
            workers: 2,
            seed: self.seed,
        };
        let selector = selector::build(&self.selector, &SelectorConfig::default(), &env).expect("a known selector");
        let service = ServiceModel { alpha_ns_per_byte: 30.0, beta_ns: 300 * US };
        let oracle =
            size::build(self.oracle, LARGE, Some(service), &BloomConfig::default(), knowledge).expect("a valid oracle");
        let cfg = CoordinatorConfig {
            id: 0,
            read_consistency: Consistency::One,
            write_consistency: Consistency::Quorum,
            read_repair: 0.1,
            park_capacity: 64,
            park_timeout: Some(200 * MS),
            seed: self.seed,
        };
        CoordinatorCore::new(cfg, selector, oracle)
    }

    /// The token ring of the script's cluster.
    pub fn ring(&self) -> Ring {
        Ring::new(self.servers, self.replication, 8).expect("a valid ring")
    }

    /// A replica's slowness in the 50 ms phase containing `at` (1, or 4 for a slow phase).
    fn slowness(&self, replica: NodeId, at: Nanos) -> Nanos {
        let h = hash_key(self.seed ^ hash_key(replica as u64 ^ (at / (50 * MS)) << 8));
        if h % 10 < 3 {
            4
        } else {
            1
        }
    }

    /// How long `replica` takes to answer copy `copy`, and the facts it piggybacks.
    pub fn answer(&self, copy: &Copy) -> (Nanos, Feedback) {
        let h = hash_key(self.seed ^ hash_key((copy.request as u64) << 8 | copy.replica as u64));
        let size = self.requests[copy.request].size;
        let service = (200 * US + size * 10 + h % 500 * US) * self.slowness(copy.replica, copy.sent_at);
        let delay = service + 100 * US + (h >> 20) % 300 * US;
        (delay, self.facts(copy.replica, copy.sent_at + delay / 2, service, h))
    }

    /// The facts `replica` reports at `at`.
    fn facts(&self, replica: NodeId, at: Nanos, service: Nanos, h: u64) -> Feedback {
        let queue_len = (self.slowness(replica, at) * (h % 5)) as u32;
        Feedback {
            from: replica,
            timestamp: at,
            queue_len,
            service_time: service,
            completed: at / (100 * US),
            busy: (h >> 8).is_multiple_of(4),
            dq: ((h >> 12) % 7) as i64 - 3,
            pending_work: queue_len as Nanos * 500 * US,
            ..Feedback::default()
        }
    }

    /// How long `probe.replica` takes to reply to `probe`, and what it says: requests in flight
    /// and a latency estimate that follow its slow phases (a probe is answered at once, ahead
    /// of any queue).
    pub fn probe_reply(&self, probe: &Probe) -> (Nanos, ProbeReply) {
        let h = hash_key(self.seed ^ hash_key(probe.sent_at ^ (probe.replica as u64) << 40 ^ 0x9E0B));
        let slow = self.slowness(probe.replica, probe.sent_at);
        let rif = (slow * (h % 6)) as u32;
        let latency = if h.is_multiple_of(9) { 0 } else { slow * (300 * US + (h >> 8) % 700 * US) };
        (50 * US + (h >> 24) % 400 * US + probe.replica as Nanos, ProbeReply { rif, latency })
    }

    /// The facts of `from`'s heartbeat reply at `at`.
    pub fn heartbeat(&self, from: NodeId, at: Nanos) -> Feedback {
        self.facts(from, at, 0, hash_key(self.seed ^ at ^ from as u64))
    }
}

/// Events of a scripted run.
enum Event {
    Input(usize),
    Answer(Copy),
    ProbeReply(Probe),
}

/// Run `script` through `driver`: every decision it carried out, in order.
pub fn run(script: &Script, driver: &mut dyn Driver) -> Vec<Decision> {
    let mut queue = EventQueue::new();
    for (i, (at, _)) in script.inputs.iter().enumerate() {
        queue.push(*at, Event::Input(i));
    }
    let mut log = Log::default();
    let mut now = 0;
    loop {
        if let Some(next) = queue.next_time() {
            driver.advance(next, &mut log);
            if log.sent_new_copies() {
                schedule(script, &mut queue, &mut log);
                continue;
            }
        }
        let Some((at, event)) = queue.pop() else {
            // no input left: let the clock run in 1 ms steps until parked reads were sent
            // (and answered) or expired; anything sent gets its answers scheduled
            let quiet_until = now + 2 * 200 * MS;
            while queue.is_empty() && now < quiet_until {
                now += MS;
                driver.advance(now, &mut log);
                schedule(script, &mut queue, &mut log);
            }
            if queue.is_empty() {
                return log.decisions;
            }
            continue;
        };
        match event {
            Event::Input(i) => match script.inputs[i].1 {
                Input::Request(n) => driver.request(n, &script.requests[n], &mut log),
                Input::Heartbeat(from) => driver.heartbeat(from, script.heartbeat(from, at), &mut log),
            },
            Event::Answer(copy) => {
                let (_, feedback) = script.answer(&copy);
                driver.answer(&copy, &script.requests[copy.request], feedback, &mut log);
            }
            Event::ProbeReply(probe) => driver.probe_reply(&probe, script.probe_reply(&probe).1, &mut log),
        }
        schedule(script, &mut queue, &mut log);
        now = at;
    }
}

/// Schedule the scripted answers of the copies sent since the last call.
fn schedule(script: &Script, queue: &mut EventQueue<Event>, log: &mut Log) {
    for copy in log.copies.drain(..) {
        let (delay, _) = script.answer(&copy);
        queue.push(copy.sent_at + delay, Event::Answer(copy));
    }
    for probe in log.probes.drain(..) {
        let (delay, _) = script.probe_reply(&probe);
        queue.push(probe.sent_at + delay, Event::ProbeReply(probe));
    }
}

/// The simulator's driver under a script: the same [`SimCoordinator`] the event loop uses.
pub struct SimDriver<'s> {
    script: &'s Script,
    coordinator: SimCoordinator,
    ring: Ring,
    now: Nanos,
    armed: Option<Nanos>,
    tickets: Vec<(Ticket, usize)>,
    requests_of: Vec<usize>,
    actions: Vec<Action>,
    /// Probes sent so far (their handles).
    probes: u64,
}

impl<'s> SimDriver<'s> {
    /// The simulator's coordinator for `script`, its wake-up timer firing on multiples of
    /// `tick` (1: the simulator's exact timer).
    pub fn new(script: &'s Script, tick: Nanos) -> Self {
        let core = script.core(Knowledge::Simulated { seed: script.seed });
        SimDriver {
            script,
            coordinator: SimCoordinator::with_timer_tick(core, tick),
            ring: script.ring(),
            now: 0,
            armed: None,
            tickets: Vec::new(),
            requests_of: Vec::new(),
            actions: Vec::new(),
            probes: 0,
        }
    }

    /// Carry out the actions of the last call, as the event loop does, and arm the wake-up.
    fn carry_out(&mut self, log: &mut Log) {
        for action in self.actions.drain(..) {
            match action {
                Action::Send(s) if s.kind == SendKind::Probe => {
                    self.probes += 1;
                    log.probe(self.now, self.probes, s.replica);
                }
                Action::Send(s) => {
                    let request = self.requests_of[s.ticket.id as usize];
                    self.tickets.push((s.ticket, request));
                    log.send(self.now, self.tickets.len() as u64 - 1, request, s.replica, s.kind, s.tags);
                }
                Action::Reply { request, replica } => {
                    let n = self.requests_of[request as usize];
                    let replica = (self.script.requests[n].op == Op::Read).then_some(replica);
                    log.decisions.push(Decision::Reply { at: self.now, request: n, replica });
                }
                Action::Fail { request, .. } => {
                    let n = self.requests_of[request as usize];
                    log.decisions.push(Decision::Fail { at: self.now, request: n });
                }
                Action::Cancel { .. } => unreachable!("scripted cores do not cancel hedges"),
            }
        }
        if let Some(t) = self.coordinator.arm(self.now) {
            self.armed = Some(t);
        }
    }
}

impl Driver for SimDriver<'_> {
    fn advance(&mut self, to: Nanos, log: &mut Log) {
        while let Some(t) = self.armed.filter(|&t| t <= to) {
            self.armed = None;
            self.now = t;
            if self.coordinator.wake(t, &Blind, &mut self.actions) {
                self.carry_out(log);
                if log.sent_new_copies() {
                    return;
                }
            }
        }
        self.now = to;
    }

    fn request(&mut self, n: usize, req: &Request, log: &mut Log) {
        let id = self.requests_of.len() as u64;
        self.requests_of.push(n);
        let replicas = self.ring.replicas(req.hash);
        let cr = ClientRequest { id, key: req.hash, replicas, size: Some(req.size), fanout: req.fanout };
        self.coordinator.request(self.now, req.op, cr, &Blind, &mut self.actions);
        self.carry_out(log);
    }

    fn answer(&mut self, copy: &Copy, _req: &Request, feedback: Feedback, log: &mut Log) {
        let (ticket, _) = self.tickets[copy.handle as usize];
        let mut answer = Answer { replica: copy.replica, feedback, value_size: None };
        self.coordinator.answered(self.now, ticket, &mut answer, &Blind, &mut self.actions);
        self.carry_out(log);
    }

    fn heartbeat(&mut self, from: NodeId, feedback: Feedback, log: &mut Log) {
        self.coordinator.facts(self.now, from, feedback, &Blind, &mut self.actions);
        self.carry_out(log);
    }

    fn probe_reply(&mut self, probe: &Probe, reply: ProbeReply, log: &mut Log) {
        self.coordinator.core.probed(self.now, probe.replica, reply, &Blind, &mut self.actions);
        self.carry_out(log);
    }
}
