//! Injected failures in virtual time (`cluster.faults`): which fault each server is under, the
//! copies awaiting answers with their client timeout, and the failover log. Built only when
//! the spec has faults, so a run without any takes none of these branches' costs or draws.

use std::collections::{HashMap, HashSet};
use tailor_core::coordinator::ClientRequest;
use tailor_core::model::Op;
use tailor_core::time::{from_ms, Nanos};
use tailor_core::{NodeId, RequestId};
use tailor_spec::failover::FailoverLog;
use tailor_spec::{FaultKind, Spec};

/// A fault's edge in time: the engine schedules one event for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// The fault starts.
    Start,
    /// The coordinators' failure detector marks a down server down.
    Detect,
    /// The fault ends.
    End,
}

/// The fault a server is under.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Active {
    /// Its service times are multiplied by this factor.
    Slow(f64),
    /// Its queries hang this long each (`None`: until the fault ends).
    Gray(Option<Nanos>),
    /// It is down.
    Down,
    /// Its coordinator takes each request this long after it arrives (the fault's node is a
    /// coordinator, not a server).
    SlowCoordinator(Nanos),
}

/// The run's faults and their state.
pub struct Faults {
    /// Each fault: kind, server, start, end and detection delay, in ns.
    list: Vec<(Active, NodeId, Nanos, Nanos, Option<Nanos>)>,
    /// The fault each server is under now.
    active: Vec<Option<Active>>,
    /// The intake delay of each coordinator under a `slow-coordinator` fault now.
    coordinator_delay: Vec<Option<Nanos>>,
    /// Requests waiting at a slow coordinator for it to take them, by id.
    delayed: HashMap<RequestId, (Op, ClientRequest)>,
    /// When each server last crashed: its jobs started before then are lost.
    crashed_at: Vec<Option<Nanos>>,
    /// Copies (request, replica) sent and neither answered nor timed out.
    waiting: HashSet<(RequestId, NodeId)>,
    /// The client timeout of a copy.
    pub timeout: Nanos,
    /// What the failover figures are computed from.
    pub log: FailoverLog,
}

impl Faults {
    /// The faults of `spec`, or `None` when it has none.
    pub fn new(spec: &Spec) -> Option<Box<Faults>> {
        let c = &spec.cluster;
        if c.faults.is_empty() {
            return None;
        }
        let list = c
            .faults
            .iter()
            .map(|f| {
                let active = match f.kind {
                    FaultKind::Slow => Active::Slow(f.slow_factor()),
                    FaultKind::Gray => Active::Gray(f.hang_ms.map(from_ms)),
                    FaultKind::Down => Active::Down,
                    FaultKind::SlowCoordinator => Active::SlowCoordinator(from_ms(f.coordinator_delay_ms())),
                };
                (active, f.server as NodeId, from_ms(f.start_ms), from_ms(f.end_ms), f.detect_ms.map(from_ms))
            })
            .collect();
        Some(Box::new(Faults {
            list,
            active: vec![None; c.servers],
            coordinator_delay: vec![None; c.coordinators()],
            delayed: HashMap::new(),
            crashed_at: vec![None; c.servers],
            waiting: HashSet::new(),
            timeout: from_ms(c.failover.timeout_ms),
            log: FailoverLog::new(spec),
        }))
    }

    /// Every fault's edges as (time, fault index, edge), for the engine to schedule.
    pub fn edges(&self) -> Vec<(Nanos, u32, Edge)> {
        let mut edges = Vec::new();
        for (i, &(_, _, start, end, detect)) in self.list.iter().enumerate() {
            edges.push((start, i as u32, Edge::Start));
            if let Some(d) = detect.filter(|d| start + d < end) {
                edges.push((start + d, i as u32, Edge::Detect));
            }
            edges.push((end, i as u32, Edge::End));
        }
        edges
    }

    /// Fault `i` reaches `edge` at `now`: returns its server (its coordinator, for a fault of a
    /// coordinator) and kind.
    pub fn reach(&mut self, i: u32, edge: Edge, now: Nanos) -> (NodeId, Active) {
        let (active, server, ..) = self.list[i as usize];
        if let Active::SlowCoordinator(delay) = active {
            self.coordinator_delay[server as usize] = (edge == Edge::Start).then_some(delay);
            return (server, active);
        }
        match edge {
            Edge::Start => {
                self.active[server as usize] = Some(active);
                if active == Active::Down {
                    self.crashed_at[server as usize] = Some(now);
                }
            }
            Edge::End => self.active[server as usize] = None,
            Edge::Detect => {}
        }
        (server, active)
    }

    /// Whether fault `i` is detected (it has a detection delay shorter than it lasts).
    pub fn detected(&self, i: u32) -> bool {
        let (_, _, start, end, detect) = self.list[i as usize];
        detect.is_some_and(|d| start + d < end)
    }

    /// The fault `server` is under now.
    #[inline]
    pub fn active(&self, server: NodeId) -> Option<Active> {
        self.active[server as usize]
    }

    /// Whether `server` is down.
    #[inline]
    pub fn down(&self, server: NodeId) -> bool {
        self.active(server) == Some(Active::Down)
    }

    /// Whether a job of `server` that started at `start` and ends at `now` was lost in a crash
    /// between the two.
    pub fn lost(&self, server: NodeId, start: Nanos, now: Nanos) -> bool {
        self.crashed_at[server as usize].is_some_and(|c| start < c && c <= now)
    }

    /// How long `coordinator` takes to take a request arriving now (`None`: at once).
    #[inline]
    pub fn coordinator_delay(&self, coordinator: u32) -> Option<Nanos> {
        self.coordinator_delay[coordinator as usize]
    }

    /// Request `req` waits at its slow coordinator until [`Faults::take`].
    pub fn delay(&mut self, op: Op, req: ClientRequest) {
        let first = self.delayed.insert(req.id, (op, req));
        debug_assert!(first.is_none(), "request {} delayed twice", req.id);
    }

    /// The delayed request `id`, now taken by its coordinator.
    pub fn take(&mut self, id: RequestId) -> (Op, ClientRequest) {
        self.delayed.remove(&id).expect("a delayed request is taken once")
    }

    /// A copy of `id` went to `replica`: it now waits for its answer or its timeout.
    pub fn sent(&mut self, id: RequestId, replica: NodeId) {
        self.waiting.insert((id, replica));
    }

    /// The copy's answer, refusal or timeout came: true for the first of them (a later answer
    /// is dropped, a later timeout does nothing).
    pub fn settle(&mut self, id: RequestId, replica: NodeId) -> bool {
        self.waiting.remove(&(id, replica))
    }
}
