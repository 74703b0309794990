//! The coordinator core: a sans-IO state machine for everything between a client request and
//! the replicas — the selector, the size oracle, the freshness gate, the backlog of parked
//! reads, the tag rule, read-repair shadow reads, retries and write quorums.
//!
//! An engine feeds it events (a request arrives, a replica answered or failed, facts arrived on
//! a heartbeat, a node went up or down, the wake-up time came) and carries out the [`Action`]s
//! it returns (send to a replica, reply, fail). After every event the engine asks
//! [`CoordinatorCore::next_wake`] and arranges one wake-up at that time. The simulator and the
//! store do exactly this and nothing else, so a strategy meets the same surroundings in both.
//!
//! Rules (each written once, here):
//! - **Backlog.** A read the selector answers `Wait` for parks at the back of its replica group's
//!   FIFO (keyed by the primary). A new read of a group with parked reads parks behind them
//!   instead of overtaking. Parked heads are offered again after every event that fed the
//!   selector (a response, a failure, facts) and at the wake-up time, which is the earliest of
//!   the selector's `retry_at`, its own timer, and the oldest parked read's park timeout. A
//!   group whose backlog is full refuses new reads (`Busy`).
//! - **Tag rule.** A read carries the selector's priority and size class, the size class raised
//!   to 1 when the oracle says the value is large (RML's sub-queue, Héron's classes). Writes
//!   carry the oracle's size class, and so do an engine's side copies (repairs, hint replays:
//!   [`CoordinatorCore::side_tags`]).
//! - **Freshness.** Every feedback passes the gate (newest timestamp per replica; an engine that
//!   delivers facts in timestamp order, the simulator, asserts that order instead); a stale one
//!   still counts the response at the selector but its facts are not applied. Every feedback,
//!   fresh or stale, goes to the size oracle (Bloom bits are idempotent).
//! - **Facts without a response** (write acks, heartbeats) reach the selector through
//!   `on_facts` when fresh; only reads the selector chose reach `on_sent`/`on_response`.
//! - **Shadow reads.** With probability `read_repair`, a read's first attempt also goes to every
//!   other up replica. Shadows are visible to the selector (`on_sent`, `on_response`), as in
//!   absim, so outstanding counts and C3's rate limiter see the load they add.
//! - **Speculative retry** (optional, [`speculation`]): a read at ONE whose attempt has not
//!   answered by the threshold is offered to the selector once more among the other untried up
//!   replicas and sent there too (`Hedge`); the first answer replies, the other only feeds the
//!   selector. A selector that says wait gets no hedge.
//! - **Hedge cancellation** (optional, [`CoordinatorCore::with_hedge_cancel`]): when the first
//!   answer of a hedged read replies, the other attempt still out is settled at once (reported
//!   to the selector like a failure, no retry) and the engine is asked to drop it
//!   ([`Action::Cancel`]): Dean and Barroso's tied requests, which cancel the copy still queued.
//! - **Probes** (Prequal): after every `select`, the selector may ask for probes
//!   ([`ReplicaSelector::probes`]); each leaves as a `Send` of kind `Probe`, and its answer comes
//!   back through [`CoordinatorCore::probed`] to [`ReplicaSelector::on_probe`] only.
//! - **Retries.** A failed attempt is reported to the selector as a stale response with empty
//!   facts (its in-flight counts stay balanced), and the read is offered to the selector again
//!   among the up replicas not yet tried, through the backlog if it says wait — unless its hedge
//!   is still out, which then carries the read alone.
//! - **Engine limits** ([`limits`]). What an engine cannot do is declared with
//!   [`CoordinatorCore::with_limits`], and the core does instead what [`limits`] names, in one
//!   place: for Cassandra's driver, a read the selector says wait for is sent at once to the
//!   fallback (fewest attempts in flight) and counted `forced`, and polled facts ride on the
//!   node's next answer ([`CoordinatorCore::polled`], [`CoordinatorCore::answered_bare`]). The
//!   three engines: the simulator (no limit), the store (its wake-ups on 1 ms ticks), Cassandra's
//!   policy (`tailor-cql/src/policy`, driving this core with the driver's events).

pub mod action;
pub mod backlog;
pub mod limits;
pub mod pending;
pub mod speculation;

use crate::facts::{Feedback, Freshness, ProbeReply, Response};
use crate::model::{Consistency, CoordinatorId, NodeId, Op, RequestId, SizeHint, Tags};
use crate::node_map::NodeMap;
use crate::oracle::size::SizeOracle;
use crate::ring::ReplicaSet;
use crate::selector::{Decision, Reach, ReplicaSelector, Rng, World};
use crate::time::Nanos;
pub use action::{Action, Failure, Send, SendKind, PROBE_SLOT};
use backlog::{Backlog, Parked};
pub use limits::EngineLimits;
pub use pending::Ticket;
use pending::{Mode, Pending, Slab};
use speculation::{Speculation, SpeculationConfig};

/// A client request as it reaches the coordinator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientRequest {
    /// Unique id (the engine's; echoed in every action).
    pub id: RequestId,
    /// Key, hashed.
    pub key: u64,
    /// The key's replicas, primary first (up or not).
    pub replicas: ReplicaSet,
    /// A write's value size (`None` for a delete); a read's true value size when the engine
    /// knows it (the simulator), which only the exact oracle uses.
    pub size: Option<u64>,
    /// The multi-get it is a key of, which the engine gets from [`CoordinatorCore::fanout`]
    /// once for the whole multi-get; the default (no keys) for a single read and for a write.
    pub fanout: Fanout,
}

/// The multi-get a read is a key of, as its coordinator saw it arrive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fanout {
    /// Its keys (saturating at 65,535): the hedge budget's bucket holds what they earn together
    /// (`speculation.rs`).
    pub keys: u16,
    /// Its bottleneck in µs, which every copy carries as its `bottleneck_us` tag (Rein's local
    /// queue orders by it).
    pub bottleneck_us: u16,
}

/// A replica's answer to a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The replica that answered.
    pub replica: NodeId,
    /// Its piggybacked facts.
    pub feedback: Feedback,
    /// The size of the value it returned, for a read that found one.
    pub value_size: Option<u64>,
}

/// How a coordinator behaves around its selector. In this order: what requests read first,
/// in 32 bytes (see [`CoordinatorCore::HOT_BYTES`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct CoordinatorConfig {
    /// Probability that a read's first attempt also goes to the other replicas (0..=1).
    pub read_repair: f64,
    /// Longest a read stays parked before it fails `Busy` (`None`: no limit); read at every
    /// event while reads are parked.
    pub park_timeout: Option<Nanos>,
    /// This coordinator.
    pub id: CoordinatorId,
    /// Replicas that answer a read before the client gets it (ONE asks the selector).
    pub read_consistency: Consistency,
    /// Replicas that acknowledge a write before the client gets its reply.
    pub write_consistency: Consistency,
    /// Most reads one replica group may park.
    pub park_capacity: usize,
    /// Seed of the read-repair draws.
    pub seed: u64,
}

/// Counters of what the core did, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// Reads parked (each time one entered a backlog).
    pub parked: u64,
    /// Reads refused because their group's backlog was full.
    pub park_rejected: u64,
    /// Parked reads that failed after the park timeout.
    pub park_expired: u64,
    /// Read attempts retried on another replica after a failure.
    pub retries: u64,
    /// Feedback that arrived older than the newest applied from its replica.
    pub stale_feedback: u64,
    /// Read-repair shadow copies sent.
    pub shadows: u64,
    /// Speculative copies sent (hedges).
    pub hedges: u64,
    /// Hedges the budget refused.
    pub hedges_refused: u64,
    /// Answers or failures for requests the core no longer knows (ignored).
    pub unknown: u64,
    /// Probes sent for the selector.
    pub probes: u64,
    /// Losing attempts of hedged reads the core asked its engine to cancel.
    pub cancels: u64,
    /// Reads the selector said wait for, sent to the fallback at once because the engine cannot
    /// park ([`EngineLimits::park`]).
    pub forced: u64,
}

/// One coordinator's core. In this order: what a request reads or writes at the coordinator
/// first, in [`CoordinatorCore::HOT_BYTES`], then the rest (counters, the configuration's park
/// capacity and seed). At thousands of coordinators a request finds its coordinator out
/// of the cache twice (arrival and answer), and an engine asks for the hot part only.
#[repr(C)]
pub struct CoordinatorCore {
    selector: Box<dyn ReplicaSelector>,
    oracle: Box<dyn SizeOracle>,
    pending: Slab,
    backlog: Backlog,
    freshness: Freshness,
    /// The nodes the failure detector reports down (few): every read asks whether any is, so
    /// that is an emptiness test, not a pass over the cluster.
    down: Vec<NodeId>,
    /// Probes the selector asked for, reused between reads.
    probe_to: Vec<NodeId>,
    /// Boxed: off on the simulator's hot path, where only the pointer is tested.
    speculation: Option<Box<Speculation>>,
    rng: Rng,
    /// Its first 32 bytes are hot (see [`CoordinatorConfig`]).
    cfg: CoordinatorConfig,
    stats: CoreStats,
    /// What the engine cannot do and the state the core keeps in its place ([`limits`]); `None`
    /// for an engine without limits, so the simulator pays one pointer in a cold line.
    limited: Option<Box<Limited>>,
}

/// The core's state for an engine with limits.
struct Limited {
    limits: EngineLimits,
    /// Each node's newest polled facts not yet shown on an answer (limit 4).
    polled: NodeMap<Option<Feedback>>,
}

/// What offering a read to the selector led to.
enum Routed {
    Sent,
    Wait,
    Failed,
}

impl CoordinatorCore {
    /// Bytes from the start of a core that a request touches (everything before the
    /// configuration's park capacity): the part an engine asks the CPU for ahead of a request.
    pub const HOT_BYTES: usize =
        std::mem::offset_of!(CoordinatorCore, cfg) + std::mem::offset_of!(CoordinatorConfig, park_capacity);

    /// A core around `selector` and `oracle`.
    pub fn new(cfg: CoordinatorConfig, selector: Box<dyn ReplicaSelector>, oracle: Box<dyn SizeOracle>) -> Self {
        assert!((0.0..=1.0).contains(&cfg.read_repair), "read_repair is a probability");
        CoordinatorCore {
            rng: Rng::new(cfg.seed, 0x5245_4144_5245_5041),
            cfg,
            selector,
            oracle,
            freshness: Freshness::default(),
            backlog: Backlog::default(),
            pending: Slab::default(),
            down: Vec::new(),
            stats: CoreStats::default(),
            speculation: None,
            probe_to: Vec::new(),
            limited: None,
        }
    }

    /// For an engine that cannot do all the core asks ([`limits`]): the core does instead what
    /// [`limits`] names.
    pub fn with_limits(mut self, limits: EngineLimits) -> Self {
        self.limited = (limits != EngineLimits::NONE).then(|| Box::new(Limited { limits, polled: NodeMap::new() }));
        self
    }

    /// Whether the engine can park reads.
    fn parks(&self) -> bool {
        self.limited.as_ref().is_none_or(|l| l.limits.park)
    }

    /// Order `replicas` as the core falls back on them when it may not park
    /// ([`limits::fallback_order`]): fewest attempts in flight from this core first.
    pub fn fallback_order(&self, replicas: &mut [NodeId]) {
        limits::fallback_order(replicas, |r| self.pending.attempts_at(r));
    }

    /// Hedge late reads at ONE by `cfg` (off unless called).
    pub fn with_speculation(mut self, cfg: SpeculationConfig) -> Self {
        self.speculation = Some(Box::new(Speculation::new(cfg)));
        self
    }

    /// Cancel the losing attempt of a hedged read once the first answer replies
    /// ([`Action::Cancel`]); without hedging ([`CoordinatorCore::with_speculation`]) nothing is
    /// ever cancelled.
    pub fn with_hedge_cancel(mut self) -> Self {
        if let Some(s) = &mut self.speculation {
            s.cancel = true;
        }
        self
    }

    /// For an engine that delivers every replica's facts in timestamp order (the simulator):
    /// the freshness gate keeps no per-replica table and asserts that order instead
    /// ([`Freshness::InOrder`]); every fact passes, as it would through the table.
    pub fn with_facts_in_order(mut self) -> Self {
        self.freshness = Freshness::in_order();
        self
    }

    /// The current speculative-retry threshold (`None`: off, or not enough answers yet).
    pub fn hedge_threshold(&self) -> Option<Nanos> {
        self.speculation.as_ref().and_then(|s| s.threshold())
    }

    /// What the core did so far.
    pub fn stats(&self) -> CoreStats {
        self.stats
    }

    /// Reads parked now.
    pub fn parked(&self) -> usize {
        self.backlog.len()
    }

    /// Requests in flight or parked.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Where the state an answer with ticket `t` reads first lies beyond the core itself (the
    /// request's record, the selector), without reading it: for an engine that asks the CPU for
    /// it ahead of the answer (the simulator at thousands of coordinators, where both are cache
    /// misses).
    #[inline]
    pub fn footprint(&self, t: Ticket) -> (Option<&impl Sized>, &dyn ReplicaSelector) {
        (self.pending.slot(t), self.selector.as_ref())
    }

    /// Where the state a read reads first lies beyond the core itself (the size oracle, the
    /// selector), without reading it: see [`CoordinatorCore::footprint`].
    #[inline]
    pub fn read_footprint(&self) -> (&dyn SizeOracle, &dyn ReplicaSelector) {
        (self.oracle.as_ref(), self.selector.as_ref())
    }

    /// Where a read's record will land, one step at a time (see [`Slab::landing`]), without
    /// reading it: like [`CoordinatorCore::read_footprint`], for an engine's prefetch.
    #[inline]
    pub fn landing_footprint(&self, reach: Reach) -> [*const u8; 2] {
        self.pending.landing(reach)
    }

    /// The size oracle's hint for `key`.
    pub fn hint(&self, key: u64) -> SizeHint {
        self.oracle.hint(key)
    }

    /// The fan-out of a multi-get of `keys` (hashed, each with its replicas and, where the
    /// engine knows it, its value size, as in [`ClientRequest::size`]) for its sub-reads'
    /// [`ClientRequest::fanout`]: its key count, and its bottleneck, the largest summed service
    /// time the size oracle estimates over the keys sharing a primary replica, in µs (Rein's
    /// rule: [`crate::local::rein_sbf::multiget_tags`]).
    pub fn fanout(&mut self, keys: impl IntoIterator<Item = (u64, ReplicaSet, Option<u64>)>) -> Fanout {
        let mut estimates = Vec::new();
        for (key, replicas, size) in keys {
            if let Some(bytes) = size {
                // the exact oracle knows the key told last: told, then asked
                self.oracle.observe(key, bytes);
            }
            estimates.push((replicas[0], self.oracle.hint(key).service));
        }
        let keys = estimates.len().min(u16::MAX as usize) as u16;
        Fanout { keys, bottleneck_us: crate::local::rein_sbf::multiget_tags(estimates).bottleneck_us }
    }

    /// The size oracle.
    pub fn oracle(&self) -> &dyn SizeOracle {
        self.oracle.as_ref()
    }

    /// The consistency levels (read, write).
    pub fn consistency(&self) -> (Consistency, Consistency) {
        (self.cfg.read_consistency, self.cfg.write_consistency)
    }

    /// Change the consistency levels for requests that arrive from now on.
    pub fn set_consistency(&mut self, read: Consistency, write: Consistency) {
        self.cfg.read_consistency = read;
        self.cfg.write_consistency = write;
    }

    /// The failure detector's verdict on `node`.
    pub fn set_up(&mut self, node: NodeId, up: bool) {
        let listed = self.down.iter().position(|&n| n == node);
        match (up, listed) {
            (true, Some(i)) => {
                self.down.swap_remove(i);
            }
            (false, None) => self.down.push(node),
            _ => {}
        }
        debug_assert_eq!(self.is_down(node), !up, "node {node}'s verdict is kept");
        debug_assert!(self.down.iter().filter(|&&n| n == node).count() <= 1, "node {node} listed down once");
    }

    fn is_down(&self, node: NodeId) -> bool {
        self.down.contains(&node)
    }

    /// When the engine must call [`CoordinatorCore::wake`] next, if ever.
    #[inline]
    pub fn next_wake(&self) -> Option<Nanos> {
        let timer = self.selector.next_timer();
        if self.backlog.is_empty() && self.speculation.is_none() {
            return timer;
        }
        self.next_wake_after(timer)
    }

    /// [`CoordinatorCore::next_wake`] with parked reads or hedge deadlines (off the common path).
    fn next_wake_after(&self, timer: Option<Nanos>) -> Option<Nanos> {
        let hedge = self.speculation.as_ref().and_then(|s| s.next_deadline());
        let expiry = self.cfg.park_timeout.and_then(|t| self.backlog.oldest().map(|o| o.saturating_add(t)));
        [timer, hedge, self.backlog.next_retry(), expiry].into_iter().flatten().min()
    }

    /// The wake-up time came: run the selector's timer if due, offer parked reads again.
    pub fn wake(&mut self, now: Nanos, world: &dyn World, out: &mut Vec<Action>) {
        if self.selector.next_timer().is_some_and(|t| t <= now) {
            self.selector.on_timer(now);
        }
        self.backlog.retry_due(now);
        self.hedge_due(now, world, out);
        self.drain(now, world, out);
        self.prune_hedges();
        debug_assert!(self.selector.next_timer().is_none_or(|t| t > now), "a due selector timer ran");
        self.check_invariants();
    }

    /// A client read arrived, at the configured read consistency.
    pub fn read(&mut self, now: Nanos, req: ClientRequest, world: &dyn World, out: &mut Vec<Action>) {
        self.read_at(now, req, self.cfg.read_consistency, world, out);
    }

    /// A client read arrived that asks for consistency `level` (a per-connection or repair
    /// override of the configured one).
    pub fn read_at(
        &mut self,
        now: Nanos,
        req: ClientRequest,
        level: Consistency,
        world: &dyn World,
        out: &mut Vec<Action>,
    ) {
        let ClientRequest { id, key, replicas, size, fanout } = req;
        if let Some(bytes) = size {
            self.oracle.observe(key, bytes);
        }
        let hint = self.oracle.hint(key);
        if level != Consistency::One {
            let need = level.required(replicas.len());
            let p = Pending::fanned(id, key, Op::Read, now, hint, replicas).in_multiget(fanout.bottleneck_us);
            return self.fan_out(p, need, SendKind::QuorumRead, out);
        }
        if let Some(s) = &mut self.speculation {
            s.widen(fanout.keys);
        }
        let p = Pending::selected(id, key, now, hint, replicas).in_multiget(fanout.bottleneck_us);
        let t = self.pending.insert(p);
        let group = replicas[0];
        if self.backlog.group_len(group) > 0 {
            // a new read never overtakes parked ones
            self.park(now, t, group, out);
        } else if let Routed::Wait = self.route(now, t, world, out) {
            self.park(now, t, group, out);
        }
        self.check_invariants();
    }

    /// The tags of a copy of `key` that no scheduling decision stands behind — a read repair's
    /// or anti-entropy's write-back or read, a hint replay — (`size`: the value's, if known):
    /// those a client write of the key gets (tag rule), so a replica queues it as it would
    /// queue the write it repairs, in every engine. Its age is 0: it is new work, released now.
    pub fn side_tags(&mut self, key: u64, size: Option<u64>) -> Tags {
        if let Some(bytes) = size {
            self.oracle.observe(key, bytes);
        }
        write_tags(self.oracle.hint(key).large, self.flow())
    }

    /// A client write arrived (`size` is the value's, `None` for a delete), at the configured
    /// write consistency.
    pub fn write(&mut self, now: Nanos, req: ClientRequest, out: &mut Vec<Action>) {
        self.write_at(now, req, self.cfg.write_consistency, out);
    }

    /// A client write arrived that asks for consistency `level`.
    pub fn write_at(&mut self, now: Nanos, req: ClientRequest, level: Consistency, out: &mut Vec<Action>) {
        let ClientRequest { id, key, replicas, size, fanout } = req;
        debug_assert_eq!(fanout, Fanout::default(), "write {id} is not part of a multi-get");
        if let Some(bytes) = size {
            self.oracle.observe(key, bytes);
        }
        let hint = self.oracle.hint(key);
        let need = level.required(replicas.len());
        self.fan_out(Pending::fanned(id, key, Op::Write, now, hint, replicas), need, SendKind::Write, out);
        self.check_invariants();
    }

    /// A replica answered the copy sent with ticket `t`. The answer is lent, not given: the core
    /// stamps its facts with the replica the copy went to (`from` on the wire is not trusted)
    /// and reads them in place.
    pub fn answered(&mut self, now: Nanos, t: Ticket, answer: &mut Answer, world: &dyn World, out: &mut Vec<Action>) {
        answer.feedback.from = answer.replica;
        self.oracle.learn(&answer.feedback);
        let fresh = self.freshness.accept(answer.replica, answer.feedback.timestamp);
        // counted only when stale: the counters are outside the hot bytes
        if !fresh {
            self.stats.stale_feedback += 1;
        }
        self.settle_answer(now, t, answer, fresh, world, out);
    }

    /// Replica `replica` answered the copy sent with ticket `t`, and its answer carries no facts
    /// of its own (an engine whose facts come by polling, limit 4 of [`limits`]): the node's
    /// newest poll not yet shown rides on it, through the freshness gate; with none, the answer
    /// is a stale one with empty facts (counted at the selector, nothing applied).
    pub fn answered_bare(&mut self, now: Nanos, t: Ticket, replica: NodeId, world: &dyn World, out: &mut Vec<Action>) {
        let kept = self.limited.as_mut().and_then(|l| l.polled.get_mut(replica)).and_then(Option::take);
        match kept {
            Some(feedback) => self.answered(now, t, &mut Answer { replica, feedback, value_size: None }, world, out),
            None => {
                let feedback = Feedback { from: replica, ..Feedback::default() };
                self.settle_answer(now, t, &Answer { replica, feedback, value_size: None }, false, world, out);
            }
        }
    }

    /// An answer whose facts passed the freshness gate (`fresh`) or not.
    #[inline(always)]
    fn settle_answer(
        &mut self,
        now: Nanos,
        t: Ticket,
        answer: &Answer,
        fresh: bool,
        world: &dyn World,
        out: &mut Vec<Action>,
    ) {
        let Answer { replica, ref feedback, value_size } = *answer;
        let Some(p) = self.pending.get_mut(t) else {
            self.stats.unknown += 1;
            return;
        };
        let (key, mode) = (p.key, p.mode);
        if let Some(bytes) = value_size {
            self.oracle.observe(key, bytes);
        }
        match mode {
            Mode::Selected { .. } => self.selected_answer(now, t, replica, feedback, fresh, out),
            Mode::FanOut { .. } => {
                if fresh {
                    self.selector.on_facts(now, feedback);
                }
                self.fan_out_result(t, replica, true, out);
            }
        }
        self.drain(now, world, out);
        self.prune_hedges();
        self.check_invariants();
    }

    /// The copy sent to `replica` with ticket `t` got no answer (error, timeout, lost link).
    pub fn failed(&mut self, now: Nanos, t: Ticket, replica: NodeId, world: &dyn World, out: &mut Vec<Action>) {
        let Some(p) = self.pending.get_mut(t) else {
            self.stats.unknown += 1;
            return;
        };
        match p.mode {
            Mode::Selected { .. } => self.selected_failure(now, t, replica, world, out),
            Mode::FanOut { .. } => self.fan_out_result(t, replica, false, out),
        }
        self.drain(now, world, out);
        self.prune_hedges();
        self.check_invariants();
    }

    /// Facts from replica `from` that answer no request (a heartbeat reply).
    pub fn facts(&mut self, now: Nanos, from: NodeId, feedback: Feedback, world: &dyn World, out: &mut Vec<Action>) {
        self.gate_facts(now, from, feedback);
        self.drain(now, world, out);
        self.check_invariants();
    }

    /// Facts an engine polled from node `from` (limit 4 of [`limits`]): like heartbeat facts
    /// ([`CoordinatorCore::facts`]), and, when fresh, kept to ride on the node's next answer
    /// ([`CoordinatorCore::answered_bare`]), replacing an older poll not yet shown. Returns
    /// whether they were fresh (applied).
    pub fn polled(
        &mut self,
        now: Nanos,
        from: NodeId,
        feedback: Feedback,
        world: &dyn World,
        out: &mut Vec<Action>,
    ) -> bool {
        let kept = self.gate_facts(now, from, feedback);
        let fresh = kept.is_some();
        if let (Some(feedback), Some(l)) = (kept, self.limited.as_mut()) {
            *l.polled.get_or_insert_with(from, || None) = Some(feedback);
        }
        self.drain(now, world, out);
        self.check_invariants();
        fresh
    }

    /// Facts without a response through the freshness gate: to the selector when fresh, and
    /// then given back.
    fn gate_facts(&mut self, now: Nanos, from: NodeId, mut feedback: Feedback) -> Option<Feedback> {
        feedback.from = from;
        self.oracle.learn(&feedback);
        if self.freshness.accept(from, feedback.timestamp) {
            self.selector.on_facts(now, &feedback);
            Some(feedback)
        } else {
            self.stats.stale_feedback += 1;
            None
        }
    }

    /// A replica answered a probe: the answer goes to the selector only.
    pub fn probed(&mut self, now: Nanos, replica: NodeId, reply: ProbeReply, world: &dyn World, out: &mut Vec<Action>) {
        self.selector.on_probe(now, replica, &reply);
        self.drain(now, world, out);
        self.check_invariants();
    }

    /// Send the probes the selector asked for while routing request `id`.
    #[inline]
    fn send_probes(&mut self, id: RequestId, out: &mut Vec<Action>) {
        self.selector.probes(&mut self.probe_to);
        for replica in self.probe_to.drain(..) {
            let ticket = Ticket { slot: PROBE_SLOT, id };
            out.push(Action::Send(Send { ticket, replica, tags: Tags::default(), age: 0, kind: SendKind::Probe }));
            self.stats.probes += 1;
        }
    }

    /// Ask the selector where read `t` goes among its untried up replicas; send it if it says so.
    fn route(&mut self, now: Nanos, t: Ticket, world: &dyn World, out: &mut Vec<Action>) -> Routed {
        // borrowed, not copied: a `Pending` is over 100 bytes and this runs for every read
        let p = self.pending.held(t);
        let Mode::Selected { tried, .. } = p.mode else { unreachable!("only selected reads are routed") };
        let up = if tried == 0 && self.down.is_empty() { p.replicas } else { self.untried_up(p, tried, None) };
        if up.is_empty() {
            let failure = if tried == 0 { Failure::NoReplica } else { Failure::NotEnough { need: 1, got: 0 } };
            self.give_up(t, failure, out);
            return Routed::Failed;
        }
        let (view, large, bottleneck, release) = (p.view(self.cfg.id), p.large(), p.bottleneck_us(), p.release);
        let decision = self.selector.select(now, &view, &up, world);
        self.send_probes(view.id, out);
        let (replica, tags) = match decision {
            Decision::Send { replica, tags } => (replica, tags),
            Decision::Wait { retry_at } if self.parks() => {
                if let Some(at) = retry_at {
                    self.backlog.retry_at(at.max(now + 1));
                }
                return Routed::Wait;
            }
            Decision::Wait { .. } => self.forced(&up),
        };
        assert!(up.contains(&replica), "selector chose replica {replica} outside {:?}", &*up);
        self.selector.on_sent(now, &view, replica);
        let tags = tag_read(tags, large, bottleneck, self.flow());
        let age = now - release;
        out.push(Action::Send(Send { ticket: t, replica, tags, age, kind: SendKind::Read }));
        let shadow = tried == 0 && self.cfg.read_repair > 0.0 && self.rng.unit() < self.cfg.read_repair;
        let mut shadows = 0;
        if shadow {
            for &other in up.iter().filter(|&&r| r != replica) {
                self.selector.on_sent(now, &view, other);
                out.push(Action::Send(Send { ticket: t, replica: other, tags, age, kind: SendKind::Shadow }));
                shadows += 1;
            }
            self.stats.shadows += shadows as u64;
        }
        let Mode::Selected { chosen, sent_at, shadow_sent_at, shadows: s, hedged, .. } = &mut self.pending.at(t).mode
        else {
            unreachable!()
        };
        *chosen = Some(replica);
        *sent_at = now;
        if shadow {
            *shadow_sent_at = now;
            *s += shadows;
        }
        if let Some(spec) = &mut self.speculation {
            if *s == 0 && !*hedged {
                spec.arm(now, t);
            }
        }
        self.check(t);
        Routed::Sent
    }

    /// Where a read the selector told to wait goes when the engine cannot park (limit 1 of
    /// [`limits`]): the first of `up` in the fallback order, with no tags of the selector's.
    #[cold]
    fn forced(&mut self, up: &ReplicaSet) -> (NodeId, Tags) {
        self.stats.forced += 1;
        let mut order = [0; crate::ring::MAX_REPLICAS];
        let order = &mut order[..up.len()];
        order.copy_from_slice(up);
        self.fallback_order(order);
        (order[0], Tags::default())
    }

    /// The invariants of request `t`'s mode, if it is still held (debug builds).
    #[inline]
    fn check(&self, t: Ticket) {
        debug_assert!(
            self.pending.peek(t).is_none_or(Pending::consistent),
            "request {}: {:?}",
            t.id,
            self.pending.peek(t)
        );
    }

    /// The core's state across its parts (debug builds), checked after every event it handles:
    /// the slab's accounting ([`Slab::check_invariants`]); the backlog's order and count; every
    /// parked read is held, a read at ONE with no attempt out and no answer yet, parked once;
    /// a node is listed down once.
    fn check_invariants(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        self.pending.check_invariants();
        self.backlog.check_invariants();
        debug_assert!(self.backlog.len() <= self.pending.len(), "more parked reads than requests held");
        let mut parked = Vec::with_capacity(self.backlog.len());
        for g in 0..self.backlog.groups() {
            for p in self.backlog.parked_in(g) {
                let held = self.pending.peek(p.ticket).map(|r| r.mode);
                debug_assert!(
                    matches!(held, Some(Mode::Selected { chosen: None, hedge: None, done: false, .. })),
                    "parked read {} is held, waiting for its attempt: {held:?}",
                    p.ticket.id
                );
                parked.push(p.ticket.id);
            }
        }
        parked.sort_unstable();
        debug_assert!(parked.windows(2).all(|w| w[0] != w[1]), "a read is parked once");
        debug_assert!(
            self.down.iter().enumerate().all(|(i, n)| !self.down[..i].contains(n)),
            "a node is listed down once"
        );
    }

    /// Hedge every read whose deadline came and that still waits for its attempt.
    fn hedge_due(&mut self, now: Nanos, world: &dyn World, out: &mut Vec<Action>) {
        while let Some((t, sent)) = self.speculation.as_mut().and_then(|s| s.pop_due(now)) {
            if self.hedgeable(t, sent) {
                self.hedge(now, t, world, out);
            }
        }
    }

    /// Whether read `t`'s attempt sent at `sent` is still out, alone, unanswered.
    fn hedgeable(&self, t: Ticket, sent: Nanos) -> bool {
        let Some(p) = self.pending.peek(t) else { return false };
        matches!(p.mode, Mode::Selected { chosen: Some(_), sent_at, hedged: false, shadows: 0, done: false, .. }
            if sent_at == sent)
    }

    /// `p`'s replicas that are up, not in the `tried` mask, and not `except`.
    fn untried_up(&self, p: &Pending, tried: u8, except: Option<NodeId>) -> ReplicaSet {
        let tried = |n| p.position(n).is_some_and(|i| tried & (1 << i) != 0);
        p.replicas.retain_up(|n| Some(n) == except || self.is_down(n) || tried(n))
    }

    /// Offer read `t` to the selector among its other untried up replicas; send a hedge there if
    /// it chooses one and the budget allows.
    fn hedge(&mut self, now: Nanos, t: Ticket, world: &dyn World, out: &mut Vec<Action>) {
        let p = self.pending.held(t);
        let Mode::Selected { chosen: Some(first), tried, .. } = p.mode else { unreachable!("checked hedgeable") };
        let others = self.untried_up(p, tried, Some(first));
        if others.is_empty() {
            return;
        }
        let (view, large, release, sent) = (p.view(self.cfg.id), p.large(), p.release, p.sent_at());
        let bottleneck = p.bottleneck_us();
        let decision = self.selector.select(now, &view, &others, world);
        self.send_probes(view.id, out);
        let (replica, tags) = match decision {
            Decision::Send { replica, tags } => (replica, tags),
            Decision::Wait { retry_at } => {
                let s = self.speculation.as_mut().expect("hedging is on");
                let later = retry_at.or(s.threshold().map(|t| now + t)).unwrap_or(now + 1).max(now + 1);
                return s.rearm(later, t, sent);
            }
        };
        assert!(others.contains(&replica), "selector chose replica {replica} outside {:?}", &*others);
        if !self.speculation.as_mut().is_some_and(|s| s.take_token()) {
            self.stats.hedges_refused += 1;
            return;
        }
        self.selector.on_sent(now, &view, replica);
        self.stats.hedges += 1;
        let tags = tag_read(tags, large, bottleneck, self.flow());
        out.push(Action::Send(Send { ticket: t, replica, tags, age: now - release, kind: SendKind::Hedge }));
        if let Mode::Selected { hedge, hedge_sent_at, hedged, .. } = &mut self.pending.at(t).mode {
            (*hedge, *hedge_sent_at, *hedged) = (Some(replica), now, true);
        }
        self.check(t);
    }

    /// Forget the leading hedge deadlines of reads that can no longer be hedged.
    #[inline]
    fn prune_hedges(&mut self) {
        let Some(mut s) = self.speculation.take() else { return };
        s.prune(|t, sent| self.hedgeable(t, sent));
        self.speculation = Some(s);
    }

    /// Park read `t` in `group`'s backlog, or fail it if the backlog is full.
    fn park(&mut self, now: Nanos, t: Ticket, group: NodeId, out: &mut Vec<Action>) {
        debug_assert!(
            matches!(self.pending.held(t).mode, Mode::Selected { chosen: None, hedge: None, done: false, .. }),
            "request {}: only a read with no attempt out parks",
            t.id
        );
        if self.backlog.group_len(group) >= self.cfg.park_capacity {
            self.stats.park_rejected += 1;
            return self.give_up(t, Failure::Busy, out);
        }
        self.stats.parked += 1;
        self.backlog.push(group, Parked { ticket: t, since: now });
        debug_assert!(self.backlog.group_len(group) <= self.cfg.park_capacity, "group {group} parks past its capacity");
    }

    /// Offer every group's parked heads again, in FIFO order, failing those past the timeout.
    /// Inlined: it runs after every answer, and the backlog is almost always empty.
    #[inline]
    fn drain(&mut self, now: Nanos, world: &dyn World, out: &mut Vec<Action>) {
        if !self.backlog.is_empty() {
            self.drain_parked(now, world, out);
        }
    }

    /// [`CoordinatorCore::drain`] with reads parked (off the common path).
    fn drain_parked(&mut self, now: Nanos, world: &dyn World, out: &mut Vec<Action>) {
        for g in 0..self.backlog.groups() {
            while let Some(head) = self.backlog.head(g) {
                if self.cfg.park_timeout.is_some_and(|limit| head.since.saturating_add(limit) <= now) {
                    self.backlog.pop(g);
                    self.stats.park_expired += 1;
                    self.give_up(head.ticket, Failure::Busy, out);
                    continue;
                }
                match self.route(now, head.ticket, world, out) {
                    Routed::Wait => break,
                    Routed::Sent | Routed::Failed => self.backlog.pop(g),
                }
            }
        }
        self.backlog.compact();
    }

    fn selected_answer(
        &mut self,
        now: Nanos,
        t: Ticket,
        replica: NodeId,
        feedback: &Feedback,
        fresh: bool,
        out: &mut Vec<Action>,
    ) {
        let p = self.pending.at(t);
        let large = p.large();
        let (attempt, at) = p.settle_copy(replica);
        let Mode::Selected { done, chosen, hedge, shadows, sent_at, hedge_sent_at, .. } = &mut p.mode else {
            unreachable!()
        };
        let first = attempt && !*done;
        if first {
            *done = true;
            out.push(Action::Reply { request: t.id, replica });
        }
        let cancel = first && self.speculation.as_ref().is_some_and(|s| s.cancel);
        // the answered copy is settled already: what is still out is the losing attempt
        let loser = match (cancel, chosen.take()) {
            (false, c) => {
                *chosen = c;
                None
            }
            (true, Some(c)) => Some((c, *sent_at)),
            (true, None) => hedge.take().map(|h| (h, *hedge_sent_at)),
        };
        if chosen.is_none() && hedge.is_none() && *shadows == 0 && *done {
            self.pending.remove(t);
        }
        self.check(t);
        if let (true, Some(s)) = (first, &mut self.speculation) {
            s.record(now - at);
        }
        self.selector.on_response(now, &Response { request: t.id, replica, sent_at: at, large, feedback, fresh });
        if let Some((loser, sent_at)) = loser {
            self.cancel_copy(now, t, loser, sent_at, large, out);
        }
    }

    /// Cancel read `t`'s losing attempt at `replica`, already settled in its record: the engine
    /// drops it, and the selector hears of it as of a failed copy (its in-flight counts stay
    /// balanced).
    #[cold]
    fn cancel_copy(
        &mut self,
        now: Nanos,
        t: Ticket,
        replica: NodeId,
        sent_at: Nanos,
        large: bool,
        out: &mut Vec<Action>,
    ) {
        self.stats.cancels += 1;
        out.push(Action::Cancel { request: t.id, replica, ticket: t });
        let feedback = Feedback { from: replica, ..Feedback::default() };
        let response = Response { request: t.id, replica, sent_at, large, feedback: &feedback, fresh: false };
        self.selector.on_response(now, &response);
    }

    fn selected_failure(&mut self, now: Nanos, t: Ticket, replica: NodeId, world: &dyn World, out: &mut Vec<Action>) {
        let p = self.pending.at(t);
        let (large, position, group) = (p.large(), p.position(replica), p.replicas[0]);
        let (attempt, at) = p.settle_copy(replica);
        let Mode::Selected { chosen, hedge, tried, done, .. } = &mut p.mode else { unreachable!() };
        if attempt {
            *tried |= 1 << position.expect("an attempt's replica is in the set");
        }
        // a shadow's failure, or an attempt's while the other attempt still carries the read
        let carry_on = !attempt || *done || chosen.is_some() || hedge.is_some();
        self.check(t);
        let feedback = Feedback { from: replica, ..Feedback::default() };
        let response = Response { request: t.id, replica, sent_at: at, large, feedback: &feedback, fresh: false };
        self.selector.on_response(now, &response);
        if carry_on {
            return self.forget_if_settled(t);
        }
        self.stats.retries += 1;
        if let Routed::Wait = self.route(now, t, world, out) {
            self.park(now, t, group, out);
        }
    }

    /// Fail `t` to the client; forget it once no copy is out.
    fn give_up(&mut self, t: Ticket, failure: Failure, out: &mut Vec<Action>) {
        out.push(Action::Fail { request: t.id, failure });
        let (Mode::Selected { done, .. } | Mode::FanOut { done, .. }) = &mut self.pending.at(t).mode;
        debug_assert!(!*done, "request {} answered its client twice", t.id);
        *done = true;
        self.forget_if_settled(t);
    }

    fn forget_if_settled(&mut self, t: Ticket) {
        let settled = match self.pending.at(t).mode {
            Mode::Selected { chosen, hedge, shadows, done, .. } => {
                done && chosen.is_none() && hedge.is_none() && shadows == 0
            }
            Mode::FanOut { outstanding, done, .. } => done && outstanding == 0,
        };
        if settled {
            self.pending.remove(t);
        }
        debug_assert_eq!(self.pending.peek(t).is_none(), settled, "request {} is held until settled", t.id);
    }

    /// Send `p` to every up replica; it completes when `need` answered.
    fn fan_out(&mut self, mut p: Pending, need: usize, kind: SendKind, out: &mut Vec<Action>) {
        let up = p.replicas.retain_up(|n| self.is_down(n));
        if up.len() < need {
            let failure = if up.is_empty() { Failure::NoReplica } else { Failure::NotEnough { need, got: 0 } };
            return out.push(Action::Fail { request: p.id, failure });
        }
        let tags = Tags { bottleneck_us: p.bottleneck_us(), ..write_tags(p.large(), self.flow()) };
        debug_assert!(need <= up.len() && up.len() <= p.replicas.len(), "need {need} of {} up", up.len());
        p.mode = Mode::FanOut { need: need as u8, answered: 0, outstanding: up.len() as u8, done: false };
        let t = self.pending.insert(p);
        self.check(t);
        for &replica in up.iter() {
            out.push(Action::Send(Send { ticket: t, replica, tags, age: 0, kind }));
        }
    }

    /// One copy of fanned-out request `t` answered (`ok`) or failed.
    fn fan_out_result(&mut self, t: Ticket, replica: NodeId, ok: bool, out: &mut Vec<Action>) {
        let Mode::FanOut { need, answered, outstanding, done } = &mut self.pending.at(t).mode else { unreachable!() };
        assert!(*outstanding > 0, "more results than copies for request {}", t.id);
        let copies = *answered as usize + *outstanding as usize;
        *outstanding -= 1;
        *answered += ok as u8;
        debug_assert_eq!(
            *answered as usize + *outstanding as usize + 1,
            copies + ok as usize,
            "a result settles one copy"
        );
        if !*done && *answered == *need {
            *done = true;
            out.push(Action::Reply { request: t.id, replica });
        } else if !*done && *answered + *outstanding < *need {
            *done = true;
            let failure = Failure::NotEnough { need: *need as usize, got: *answered as usize };
            out.push(Action::Fail { request: t.id, failure });
        }
        self.check(t);
        self.forget_if_settled(t);
    }
}

impl CoordinatorCore {
    /// The flow of every copy this coordinator sends: its id, modulo 2^16 ([`Tags::flow`]).
    fn flow(&self) -> u16 {
        self.cfg.id as u16
    }
}

/// A write copy's tags (tag rule): the oracle's size class, priority 0, this coordinator's flow.
fn write_tags(large: bool, flow: u16) -> Tags {
    Tags { priority: 0, size_class: large as u8, flow, ..Tags::default() }
}

/// A read's tags: the selector's, the size class raised to 1 when the oracle says large, its
/// multi-get's bottleneck (0 for a single read), and this coordinator's flow (whatever the
/// selector set).
fn tag_read(tags: Tags, large: bool, bottleneck_us: u16, flow: u16) -> Tags {
    Tags { priority: tags.priority, size_class: tags.size_class.max(large as u8), flow, bottleneck_us }
}

#[cfg(test)]
mod tests;
