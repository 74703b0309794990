//! Deterministic simulation of the store's own path under faults (FoundationDB's lesson).
//!
//! Every node is what a store node is: a coordinator core and a replica core from tailor-core,
//! the same ones `tailor-store` drives. Here they meet a hostile network instead of TCP:
//! messages are delayed at random and lost with some probability, one node crashes (stops
//! answering for good) at a random time and the survivors' failure detectors learn it a little
//! later, every copy a coordinator sends times out like a peer call, heartbeats carry facts.
//! A run is a pure function of `(seed, selector)`; [`run`] returns the first broken invariant,
//! naming the seed that replays it:
//! - every client request at a live coordinator ends exactly once (a reply or a failure);
//! - once quiet, no live core holds a request or a parked read;
//! - every copy sent is settled once (answered or failed), never twice;
//! - a selector's `on_sent` and `on_response` balance per replica;
//! - no copy is sent to a node its coordinator already knows is down.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::{Arc, Mutex};
use tailor_core::coordinator::{
    Action, Answer, ClientRequest, CoordinatorConfig, CoordinatorCore, Send, SendKind, Ticket,
};
use tailor_core::facts::{Feedback, Response};
use tailor_core::local;
use tailor_core::model::{Consistency, NodeId, RequestId, RequestView, Tags};
use tailor_core::oracle::size::SeenSizes;
use tailor_core::replica::{Arrival, ReplicaCore};
use tailor_core::ring::Ring;
use tailor_core::selector::{self, Blind, Decision, ReplicaSelector, SelectorEnv, World};
use tailor_core::time::{Nanos, MS};

/// The fault model and the size of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Faults {
    /// Nodes (each a coordinator and a replica).
    pub nodes: usize,
    /// Client requests issued.
    pub requests: u64,
    /// Gap between client requests, drawn uniformly below this (above a tenth of it).
    pub max_gap: Nanos,
    /// Probability that one message is lost.
    pub loss: f64,
    /// Largest one-way delay of a message (uniform from 50 µs).
    pub max_delay: Nanos,
    /// How long a copy may go unanswered before its coordinator counts it failed.
    pub timeout: Nanos,
    /// How long survivors take to learn a crash.
    pub detect: Nanos,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            nodes: 5,
            requests: 3_000,
            max_gap: 600_000,
            loss: 0.02,
            max_delay: 3 * MS,
            timeout: 40 * MS,
            detect: 30 * MS,
        }
    }
}

/// What one run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Requests that got a reply.
    pub replied: u64,
    /// Requests that failed.
    pub failed: u64,
    /// Requests lost with their crashed coordinator.
    pub lost_with_coordinator: u64,
    /// Copies that timed out.
    pub timeouts: u64,
    /// Reads parked by the live coordinators' cores.
    pub parked: u64,
    /// Read attempts the live cores retried elsewhere.
    pub retries: u64,
    /// The node that crashed and when.
    pub crash: (NodeId, Nanos),
}

/// A broken invariant, with the seed that replays it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("seed {seed}, selector {selector}: {what}")]
pub struct Violation {
    /// Replays the failure.
    pub seed: u64,
    /// The selector under test.
    pub selector: String,
    /// What broke.
    pub what: String,
}

/// Counts a selector's sends and responses per replica around the real one.
struct Counted {
    inner: Box<dyn ReplicaSelector>,
    balance: Arc<Mutex<BTreeMap<NodeId, i64>>>,
}

impl ReplicaSelector for Counted {
    fn select(&mut self, now: Nanos, req: &RequestView, replicas: &[NodeId], world: &dyn World) -> Decision {
        self.inner.select(now, req, replicas, world)
    }
    fn on_sent(&mut self, now: Nanos, req: &RequestView, replica: NodeId) {
        *self.balance.lock().expect("one thread").entry(replica).or_default() += 1;
        self.inner.on_sent(now, req, replica);
    }
    fn on_response(&mut self, now: Nanos, resp: &Response) {
        *self.balance.lock().expect("one thread").entry(resp.replica).or_default() -= 1;
        self.inner.on_response(now, resp);
    }
    fn on_facts(&mut self, now: Nanos, facts: &Feedback) {
        self.inner.on_facts(now, facts);
    }
    fn on_timer(&mut self, now: Nanos) {
        self.inner.on_timer(now);
    }
    fn next_timer(&self) -> Option<Nanos> {
        self.inner.next_timer()
    }
}

/// A copy in flight, keyed by its own sequence number.
#[derive(Clone, Copy, Debug)]
struct Copy {
    coordinator: NodeId,
    ticket: Ticket,
    replica: NodeId,
}

enum Event {
    Client {
        id: RequestId,
        coordinator: NodeId,
        key: u64,
        write: bool,
    },
    /// A copy reaches its replica.
    Arrive {
        copy: u64,
        tags: Tags,
        age: Nanos,
        size: u64,
    },
    /// A replica finishes a copy.
    Done {
        copy: u64,
        service: Nanos,
    },
    /// A replica's answer reaches the coordinator.
    Answer {
        copy: u64,
        feedback: Feedback,
    },
    /// A copy's timeout at its coordinator.
    Timeout {
        copy: u64,
    },
    Wake {
        node: NodeId,
    },
    Heartbeat,
    Facts {
        to: NodeId,
        from: NodeId,
        feedback: Feedback,
    },
    Crash,
    Detect,
}

struct Node {
    core: CoordinatorCore,
    replica: ReplicaCore<u64>,
    wake_at: Nanos,
    known_down: Vec<bool>,
}

struct Dst {
    f: Faults,
    seed: u64,
    selector: String,
    rng: SmallRng,
    now: Nanos,
    heap: BinaryHeap<Reverse<(Nanos, u64)>>,
    events: BTreeMap<u64, Event>,
    seq: u64,
    nodes: Vec<Node>,
    ring: Ring,
    crashed: Option<NodeId>,
    crash_at: Nanos,
    copies: BTreeMap<u64, Copy>,
    /// Requests by id: (coordinator, ended).
    requests: BTreeMap<RequestId, (NodeId, bool)>,
    balances: Vec<Arc<Mutex<BTreeMap<NodeId, i64>>>>,
    report: Report,
    issued: u64,
    actions: Vec<Action>,
}

/// Run `selector` (every replica queueing FCFS) through the fault model `f` with `seed`.
pub fn run(seed: u64, selector: &str, f: &Faults) -> Result<Report, Violation> {
    run_with_local(seed, selector, "fcfs", f)
}

/// Run `selector` with every replica queueing by the local policy `local` through the fault
/// model `f` with `seed`; a violation names both (`selector+local`).
pub fn run_with_local(seed: u64, selector: &str, local: &str, f: &Faults) -> Result<Report, Violation> {
    let mut d = Dst::new(seed, selector, local, f)?;
    d.schedule(0, Event::Heartbeat);
    let crash_at = d.rng.random_range(50 * MS..400 * MS);
    d.crash_at = crash_at;
    d.schedule(crash_at, Event::Crash);
    d.schedule(crash_at + f.detect, Event::Detect);
    d.next_client();
    // run until well after the last request could have settled
    let quiet = 600 * MS;
    let mut last_issue = 0;
    while let Some(Reverse((t, seq))) = d.heap.pop() {
        if d.issued == f.requests && last_issue == 0 {
            last_issue = d.now;
        }
        if last_issue > 0 && t > last_issue + quiet {
            break;
        }
        d.now = t;
        let e = d.events.remove(&seq).expect("a scheduled event is stored");
        d.handle(e)?;
    }
    d.check_quiet()?;
    let crashed = d.crashed;
    for (i, n) in d.nodes.iter().enumerate() {
        if crashed != Some(i as NodeId) {
            d.report.parked += n.core.stats().parked;
            d.report.retries += n.core.stats().retries;
        }
    }
    Ok(d.report)
}

impl Dst {
    fn new(seed: u64, selector: &str, local: &str, f: &Faults) -> Result<Dst, Violation> {
        let label = if local == "fcfs" { selector.to_string() } else { format!("{selector}+{local}") };
        let ring = Ring::new(f.nodes, 3, 16).expect("a valid ring");
        let mut nodes = Vec::new();
        let mut balances = Vec::new();
        for id in 0..f.nodes as NodeId {
            let env = SelectorEnv {
                coordinator: id,
                coordinators: f.nodes,
                servers: f.nodes,
                replication: 3,
                workers: 2,
                seed: seed ^ id as u64,
            };
            let refused = |e: String| Violation { seed, selector: label.clone(), what: e };
            let inner = selector::build(selector, &Default::default(), &env).map_err(|e| refused(e.to_string()))?;
            let balance = Arc::new(Mutex::new(BTreeMap::new()));
            balances.push(balance.clone());
            let cfg = CoordinatorConfig {
                id,
                read_consistency: Consistency::One,
                write_consistency: Consistency::Quorum,
                read_repair: 0.1,
                park_capacity: 64,
                park_timeout: Some(200 * MS),
                seed: seed ^ (id as u64) << 8,
            };
            let oracle = Box::new(SeenSizes::new(1 << 12, 1_000, None));
            let queue = local::build(local, &Default::default(), seed).map_err(|e| refused(e.to_string()))?;
            nodes.push(Node {
                core: CoordinatorCore::new(cfg, Box::new(Counted { inner, balance }), oracle),
                replica: ReplicaCore::new(id, queue, 2, 1_000),
                wake_at: Nanos::MAX,
                known_down: vec![false; f.nodes],
            });
        }
        Ok(Dst {
            f: f.clone(),
            seed,
            selector: label,
            rng: SmallRng::seed_from_u64(seed),
            now: 0,
            heap: BinaryHeap::new(),
            events: BTreeMap::new(),
            seq: 0,
            nodes,
            ring,
            crashed: None,
            crash_at: 0,
            copies: BTreeMap::new(),
            requests: BTreeMap::new(),
            balances,
            report: Report::default(),
            issued: 0,
            actions: Vec::new(),
        })
    }

    fn violation(&self, what: String) -> Violation {
        Violation { seed: self.seed, selector: self.selector.clone(), what }
    }

    fn schedule(&mut self, t: Nanos, e: Event) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq)));
        self.events.insert(self.seq, e);
    }

    /// Deliver a message after a random delay, unless the network loses it.
    fn message(&mut self, e: Event) {
        if self.rng.random::<f64>() < self.f.loss {
            return;
        }
        let delay = self.rng.random_range(50_000..=self.f.max_delay);
        self.schedule(self.now + delay, e);
    }

    fn alive(&self, node: NodeId) -> bool {
        self.crashed != Some(node)
    }

    fn next_client(&mut self) {
        if self.issued >= self.f.requests {
            return;
        }
        self.issued += 1;
        let gap = self.rng.random_range(self.f.max_gap / 10..self.f.max_gap);
        let coordinator = self.rng.random_range(0..self.f.nodes) as NodeId;
        let key = self.rng.random_range(0..200u64);
        let write = self.rng.random::<f64>() < 0.2;
        let id = self.issued;
        self.schedule(self.now + gap, Event::Client { id, coordinator, key, write });
    }

    fn handle(&mut self, e: Event) -> Result<(), Violation> {
        match e {
            Event::Client { id, coordinator, key, write } => self.on_client(id, coordinator, key, write)?,
            Event::Arrive { copy, tags, age, size } => self.on_arrive(copy, tags, age, size),
            Event::Done { copy, service } => self.on_done(copy, service),
            Event::Answer { copy, feedback } => self.settle(copy, Some(feedback))?,
            Event::Timeout { copy } => {
                if self.copies.contains_key(&copy) {
                    self.report.timeouts += 1;
                    self.settle(copy, None)?;
                }
            }
            Event::Wake { node } => {
                if self.alive(node) && self.nodes[node as usize].wake_at == self.now {
                    self.nodes[node as usize].wake_at = Nanos::MAX;
                    let now = self.now;
                    self.nodes[node as usize].core.wake(now, &Blind, &mut self.actions);
                    self.carry_out(node)?;
                }
            }
            Event::Heartbeat => self.on_heartbeat(),
            Event::Facts { to, from, feedback } => {
                if self.alive(to) {
                    let now = self.now;
                    self.nodes[to as usize].core.facts(now, from, feedback, &Blind, &mut self.actions);
                    self.carry_out(to)?;
                }
            }
            Event::Crash => self.on_crash(),
            Event::Detect => self.on_detect()?,
        }
        Ok(())
    }

    fn on_client(&mut self, id: RequestId, coordinator: NodeId, key: u64, write: bool) -> Result<(), Violation> {
        self.next_client();
        if !self.alive(coordinator) {
            self.report.lost_with_coordinator += 1;
            return Ok(());
        }
        self.requests.insert(id, (coordinator, false));
        let replicas = self.ring.replicas(key);
        let size = 100 + key * 10;
        let req = ClientRequest { id, key, replicas, size: write.then_some(size), fanout: Default::default() };
        let (now, core) = (self.now, &mut self.nodes[coordinator as usize].core);
        if write {
            core.write(now, req, &mut self.actions);
        } else {
            core.read(now, req, &Blind, &mut self.actions);
        }
        self.carry_out(coordinator)
    }

    fn on_arrive(&mut self, copy: u64, tags: Tags, age: Nanos, size: u64) {
        let Some(c) = self.copies.get(&copy).copied() else { return };
        if !self.alive(c.replica) {
            return;
        }
        let service = self.rng.random_range(200_000..2 * MS);
        let arrival = Arrival { id: copy, age, service, size, tags };
        let now = self.now;
        self.nodes[c.replica as usize].replica.admit(now, arrival, copy);
        self.start_jobs(c.replica);
    }

    fn start_jobs(&mut self, node: NodeId) {
        while let Some((meta, copy)) = self.nodes[node as usize].replica.start(self.now) {
            self.schedule(self.now + meta.service, Event::Done { copy, service: meta.service });
        }
    }

    fn on_done(&mut self, copy: u64, service: Nanos) {
        let Some(c) = self.copies.get(&copy).copied() else {
            // the copy timed out meanwhile: the replica still did the work
            return self.finish_orphan(copy, service);
        };
        if !self.alive(c.replica) {
            return;
        }
        let now = self.now;
        let feedback = self.nodes[c.replica as usize].replica.finish(now, copy, service);
        self.start_jobs(c.replica);
        self.message(Event::Answer { copy, feedback });
    }

    /// A job whose copy already timed out: find which replica runs it by its id.
    fn finish_orphan(&mut self, copy: u64, service: Nanos) {
        let node = (copy >> 40) as NodeId;
        if self.alive(node) {
            let now = self.now;
            self.nodes[node as usize].replica.finish(now, copy, service);
            self.start_jobs(node);
        }
    }

    /// A copy's answer (or its timeout) reaches its coordinator: settle it exactly once.
    fn settle(&mut self, copy: u64, feedback: Option<Feedback>) -> Result<(), Violation> {
        let Some(c) = self.copies.remove(&copy) else {
            return Ok(()); // a late answer after the timeout: the peer call already failed
        };
        if !self.alive(c.coordinator) {
            return Ok(());
        }
        let now = self.now;
        let core = &mut self.nodes[c.coordinator as usize].core;
        match feedback {
            Some(feedback) => {
                let mut answer = Answer { replica: c.replica, feedback, value_size: None };
                core.answered(now, c.ticket, &mut answer, &Blind, &mut self.actions);
            }
            None => core.failed(now, c.ticket, c.replica, &Blind, &mut self.actions),
        }
        self.carry_out(c.coordinator)
    }

    fn carry_out(&mut self, node: NodeId) -> Result<(), Violation> {
        let actions = std::mem::take(&mut self.actions);
        for a in &actions {
            match *a {
                Action::Send(s) => self.send(node, s)?,
                Action::Reply { request, .. } => self.end(request, true)?,
                Action::Fail { request, .. } => self.end(request, false)?,
                Action::Cancel { .. } => unreachable!("the DST's cores do not cancel hedges"),
            }
        }
        self.actions = actions;
        self.actions.clear();
        let n = &mut self.nodes[node as usize];
        if let Some(t) = n.core.next_wake() {
            let t = t.max(self.now + 1);
            if t < n.wake_at {
                n.wake_at = t;
                self.schedule(t, Event::Wake { node });
            }
        }
        Ok(())
    }

    fn send(&mut self, from: NodeId, s: Send) -> Result<(), Violation> {
        if s.kind == SendKind::Probe {
            // lost on the way (legal for a probe: the selector falls back); the invariants here
            // are about requests
            return Ok(());
        }
        if self.nodes[from as usize].known_down[s.replica as usize] {
            return Err(self.violation(format!("node {from} sent to {} after learning it is down", s.replica)));
        }
        // the copy id carries its replica in the high bits, so an orphaned job finds its node
        self.seq += 1;
        let copy = (s.replica as u64) << 40 | self.seq;
        self.copies.insert(copy, Copy { coordinator: from, ticket: s.ticket, replica: s.replica });
        let size = 100 + (s.ticket.id % 200) * 10;
        self.message(Event::Arrive { copy, tags: s.tags, age: s.age, size });
        self.schedule(self.now + self.f.timeout, Event::Timeout { copy });
        Ok(())
    }

    fn end(&mut self, request: RequestId, replied: bool) -> Result<(), Violation> {
        match self.requests.get_mut(&request) {
            Some((_, ended)) if !*ended => *ended = true,
            Some(_) => return Err(self.violation(format!("request {request} ended twice"))),
            None => return Err(self.violation(format!("request {request} ended but was never issued"))),
        }
        if replied {
            self.report.replied += 1;
        } else {
            self.report.failed += 1;
        }
        Ok(())
    }

    fn on_heartbeat(&mut self) {
        for from in 0..self.f.nodes as NodeId {
            if !self.alive(from) {
                continue;
            }
            let feedback = self.nodes[from as usize].replica.facts(self.now);
            for to in (0..self.f.nodes as NodeId).filter(|&t| t != from) {
                self.message(Event::Facts { to, from, feedback: feedback.clone() });
            }
        }
        if self.issued < self.f.requests || !self.copies.is_empty() {
            self.schedule(self.now + 10 * MS, Event::Heartbeat);
        }
    }

    fn on_crash(&mut self) {
        let victim = self.rng.random_range(0..self.f.nodes) as NodeId;
        self.crashed = Some(victim);
        self.report.crash = (victim, self.now);
        // requests it coordinated die with it, as they would with a store process
        for (_, (coordinator, ended)) in self.requests.iter_mut() {
            if *coordinator == victim && !*ended {
                *ended = true;
                self.report.lost_with_coordinator += 1;
            }
        }
    }

    fn on_detect(&mut self) -> Result<(), Violation> {
        let Some(victim) = self.crashed else { return Ok(()) };
        for node in 0..self.f.nodes as NodeId {
            if self.alive(node) {
                self.nodes[node as usize].known_down[victim as usize] = true;
                self.nodes[node as usize].core.set_up(victim, false);
                let now = self.now;
                self.nodes[node as usize].core.wake(now, &Blind, &mut self.actions);
                self.carry_out(node)?;
            }
        }
        Ok(())
    }

    fn check_quiet(&self) -> Result<(), Violation> {
        if let Some((id, _)) = self.requests.iter().find(|(_, (_, ended))| !ended) {
            return Err(self.violation(format!("request {id} never ended")));
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if !self.alive(i as NodeId) {
                continue;
            }
            if n.core.in_flight() != 0 || n.core.parked() != 0 {
                let (held, parked) = (n.core.in_flight(), n.core.parked());
                return Err(self.violation(format!("node {i} still holds {held} requests, {parked} parked")));
            }
            let balance = self.balances[i].lock().expect("one thread");
            if let Some((r, b)) = balance.iter().find(|(_, &b)| b != 0) {
                return Err(self.violation(format!("node {i}'s selector: on_sent - on_response = {b} for replica {r}")));
            }
        }
        Ok(())
    }
}
