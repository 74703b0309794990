//! `dynamic-snitch`: Cassandra's dynamic snitch (the pre-4.0 `DynamicEndpointSnitch`), the
//! default replica selection of Cassandra (docs/strategies.md, Replica selectors).
//!
//! On every response (fresh or stale: the sample is this coordinator's own measurement) the
//! latency `now - sent_at`, in whole microseconds (at most 2^32 - 1, 71 minutes), goes into the
//! peer's exponentially decaying reservoir (forward-decay priority sampling: 100 samples, alpha
//! 0.75 per second, weighted median). Every `update_interval` the scores are recomputed:
//! `score = median / max median over peers with samples` (+ the optional severity, here the
//! peer's last reported queue length divided by the largest one reported); peers without
//! samples have no score and count as 0. Every `reset_interval` all samples are cleared (scores
//! stay until the next update, as in Cassandra). Both timers run lazily: `select` and
//! `on_response` first apply every tick that `now` has passed, on a fixed grid from time 0, so
//! a score reflects the samples seen up to its tick, not later ones.
//!
//! Ordering: with badness threshold `b`, the static order (the replica list, primary first, i.e.
//! token proximity) is kept unless, at some position `i`, the score of the replica at `i` exceeds
//! the `i`-th smallest score × (1 + b); then replicas are sorted by score, ties kept in static
//! order. `b = 0` is pure score order **(choice, as Hector's experiments)**. The selector sends to
//! the head of that order.
//!
//! `time_penalty = true` adds `min(now - last reply, update interval) / largest such penalty`
//! to every sampled peer's score at each update: the time penalty of Cassandra's pre-2.1 snitch,
//! which absim (C3's simulator) models; the `c3` presets turn it on. `resample_after_ms` forgets
//! the samples of a peer silent for that long, so it scores as unknown (0) and the next request
//! re-samples it (Cassandra 4.0 sends latency probes to such peers instead; a real request is
//! this model's probe). Measured in the `c3` setup at T = 500 ms, 3 seeds: p99 955 ms without
//! either (random: 443 ms), 445 ms with the penalty, 357 ms with `resample_after_ms = 200`.
//!
//! `sampling = "ewma"` replaces the reservoir's median by an EWMA of the latencies, as Hector's
//! reimplementation describes (its weight is not published: 0.1 on the newest sample here).

use super::snitch_reservoir::Reservoir;
use super::{Decision, Reach, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::{Ewma, Response};
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::{from_ms, Nanos, US};
use serde::{Deserialize, Serialize};
use super::registry::{Needs, Registration, tunable};

/// How a peer's latency samples are summarised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sampling {
    /// Median of Cassandra's exponentially decaying reservoir.
    #[default]
    Reservoir,
    /// Exponentially weighted moving average.
    Ewma,
}

/// Tunables of `dynamic-snitch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnitchConfig {
    /// Badness threshold `b` (Cassandra: 0.1 before 4.0, 1.0 since; default 0, pure score order).
    pub badness_threshold: f64,
    /// Time between score recomputations, in ms (Cassandra: 100).
    pub update_interval_ms: f64,
    /// Time between clearing all samples, in ms (Cassandra: 600 000).
    pub reset_interval_ms: f64,
    /// How samples are summarised: "reservoir" (Cassandra) or "ewma" (Hector's description).
    pub sampling: Sampling,
    /// Samples kept per peer by the reservoir (Cassandra: 100).
    pub reservoir_size: usize,
    /// Forward-decay rate of the reservoir, per second (Cassandra: 0.75).
    pub reservoir_alpha: f64,
    /// Weight of the newest sample when `sampling = "ewma"` (0.1).
    pub ewma_weight: f64,
    /// Add the severity term (the peer's piggybacked queue length, normalised by the largest); off
    /// by default, as Cassandra's severity is 0 without compaction/IO gossip.
    pub severity: bool,
    /// Add the time-since-last-reply penalty of Cassandra's pre-2.1 snitch and of absim's model
    /// of it: `min(now - last reply, update interval)`, normalised by the largest over peers.
    pub time_penalty: bool,
    /// Forget a peer's samples once its newest reply is this old (ms; 0: never), so a peer the
    /// coordinator stopped choosing scores as unknown (0) again and the next request re-samples
    /// it, instead of being judged for ever by latencies from its last slow period.
    pub resample_after_ms: f64,
}

impl SnitchConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), super::c3::InvalidConfig> {
        use super::c3::check;
        check("badness_threshold", self.badness_threshold, ">= 0", |v| v >= 0.0)?;
        check("update_interval_ms", self.update_interval_ms, "> 0", |v| v > 0.0)?;
        check("reset_interval_ms", self.reset_interval_ms, "> 0", |v| v > 0.0)?;
        check("reservoir_size", self.reservoir_size as f64, "in 1..=100000", |v| (1.0..=1e5).contains(&v))?;
        check("reservoir_alpha", self.reservoir_alpha, "in (0, 1]", |v| v > 0.0 && v <= 1.0)?;
        check("ewma_weight", self.ewma_weight, "in (0, 1]", |v| v > 0.0 && v <= 1.0)?;
        check("resample_after_ms", self.resample_after_ms, ">= 0", |v| v >= 0.0)
    }
}

impl Default for SnitchConfig {
    fn default() -> Self {
        SnitchConfig {
            badness_threshold: 0.0,
            update_interval_ms: 100.0,
            reset_interval_ms: 600_000.0,
            sampling: Sampling::Reservoir,
            reservoir_size: 100,
            reservoir_alpha: 0.75,
            ewma_weight: 0.1,
            severity: false,
            time_penalty: false,
            resample_after_ms: 0.0,
        }
    }
}

/// Latency knowledge about one peer (made by its first reply): what a reply touches, in one
/// cache line.
#[derive(Clone, Debug)]
#[repr(align(64))]
struct Peer {
    /// Its samples (`sampling = "reservoir"`; empty otherwise).
    reservoir: Reservoir,
    /// The EWMA of its latencies (`sampling = "ewma"`), NaN before the first.
    ewma: f64,
    /// When its newest reply arrived.
    last_reply: Nanos,
    /// Last fresh piggybacked queue length (severity), if [`HAS_QUEUE`].
    queue_len: u32,
    /// `queue_len` at the last update (the severity of its score), if [`HAS_QUEUE_THEN`].
    queue_then: u32,
    /// [`HAS_QUEUE`], [`HAS_QUEUE_THEN`], [`DIRTY`].
    flags: u8,
}

const _: () = assert!(size_of::<Peer>() == 64, "a peer is one cache line");

/// A fresh queue length came ([`Peer::queue_len`] holds the last).
const HAS_QUEUE: u8 = 1;
/// [`Peer::queue_then`] holds one.
const HAS_QUEUE_THEN: u8 = 2;
/// Samples changed since the last update (the peer is in [`DynamicSnitch::dirty`]).
const DIRTY: u8 = 4;

impl Peer {
    /// The queue length at the last update, if one had come.
    fn queue_then(&self) -> Option<u32> {
        (self.flags & HAS_QUEUE_THEN != 0).then_some(self.queue_then)
    }
}

/// What a peer's score is made of, as of the last update: what a request reads, 16 bytes per
/// peer side by side (a request looks up three peers, rarely in the cache as [`Peer`]s).
#[derive(Clone, Copy, Debug)]
struct Frozen {
    /// Median (or EWMA), NaN if it had no samples then; recomputed only for peers with new
    /// samples, since a forward-decayed median does not move without them.
    stat: f64,
    /// `last_reply` then (the time penalty).
    reply_then: Nanos,
}

/// A reply not yet folded into its peer ([`DynamicSnitch::apply_replies`]).
#[derive(Clone, Copy, Debug)]
struct Reply {
    /// Index of the peer.
    peer: u32,
    /// Its fresh piggybacked queue length.
    queue_len: Option<u32>,
    /// When it came.
    at: Nanos,
    /// Its latency, whole µs.
    latency: u32,
    /// The uniform draw made for it.
    u: f64,
}

/// What the last score update normalised by: a peer's score is a pure function of these and of
/// the peer's [`Frozen`] (and `queue_then`), so it is computed when a request asks for
/// it instead of for every peer at every update.
#[derive(Clone, Copy, Debug)]
struct Update {
    /// When it ran.
    at: Nanos,
    /// Largest `stat` (0 if none).
    max: f64,
    /// Largest queue length reported.
    max_queue: u32,
    /// Largest time penalty (`time_penalty` only).
    max_penalty: Option<f64>,
}

/// `dynamic-snitch` selector.
pub struct DynamicSnitch {
    cfg: SnitchConfig,
    /// The peers this coordinator has heard from, in the order of `peers` (a peer's position
    /// here is its index there).
    index: NodeMap<()>,
    peers: Vec<Peer>,
    /// Per peer as `peers`.
    frozen: Vec<Frozen>,
    /// Peers whose samples changed since the last update: only their medians are recomputed.
    dirty: Vec<u32>,
    /// Replies since the last tick, not yet folded into their peers.
    replies: Vec<Reply>,
    /// The last score update.
    last: Update,
    /// EWMA weight.
    ewma_weight: f64,
    /// Servers in the cluster: while fewer peers are tracked, some peer was never heard from.
    servers: usize,
    update_interval: Nanos,
    reset_interval: Nanos,
    next_update: Nanos,
    next_reset: Nanos,
    /// The earlier of `next_update` and `next_reset`.
    next_tick: Nanos,
    rng: Rng,
    /// Room for a median's running sums.
    sums: Vec<f64>,
    /// Room for the scores of a read's replicas.
    scores: Vec<f64>,
    /// Room for them sorted.
    sorted: Vec<f64>,
}

/// The first grid point `next + k * interval` strictly after `now`.
fn advance(next: Nanos, interval: Nanos, now: Nanos) -> Nanos {
    debug_assert!(interval > 0, "an interval is never empty");
    let at = next.saturating_add((now.saturating_sub(next) / interval + 1).saturating_mul(interval));
    debug_assert!(at > now || at == Nanos::MAX, "the next time {at} is after now {now}");
    debug_assert!(at == Nanos::MAX || (at - next).is_multiple_of(interval), "{at} stays on the grid of {next}");
    at
}

/// `Some(x)` unless `x` is NaN (which stands for none in [`Peer`]).
fn known(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

impl DynamicSnitch {
    /// Build for one coordinator.
    pub fn new(cfg: &SnitchConfig, env: &SelectorEnv) -> Self {
        let ewma_weight = if (0.0..=1.0).contains(&cfg.ewma_weight) { cfg.ewma_weight } else { 0.1 };
        let update_interval = from_ms(cfg.update_interval_ms).max(1);
        let reset_interval = from_ms(cfg.reset_interval_ms).max(1);
        let mut rng = Rng::new(env.seed, 0x534e_4954 + env.coordinator as u64);
        // Independent coordinators do not share a clock grid (Cassandra nodes start at different
        // times): with several, each updates its scores at its own random phase, otherwise every
        // coordinator would re-rank at the same instant and herd in lockstep.
        let phase = if env.coordinators > 1 { rng.below(update_interval as usize) as Nanos } else { 0 };
        DynamicSnitch {
            cfg: cfg.clone(),
            index: NodeMap::new(),
            peers: Vec::new(),
            frozen: Vec::new(),
            dirty: Vec::new(),
            replies: Vec::new(),
            last: Update { at: 0, max: 0.0, max_queue: 0, max_penalty: None },
            ewma_weight,
            servers: env.servers,
            update_interval,
            reset_interval,
            next_update: update_interval + phase,
            next_reset: reset_interval + phase,
            next_tick: (update_interval + phase).min(reset_interval + phase),
            rng,
            sums: Vec::new(),
            scores: Vec::new(),
            sorted: Vec::new(),
        }
    }

    /// The peer's score from the last update, if it had samples then.
    pub fn score(&self, node: NodeId) -> Option<f64> {
        self.index.position(node).and_then(|i| self.score_of(i))
    }

    /// `p`'s score from the last update: `stat / max` (+ severity) (+ time penalty), as the
    /// update would have stored it.
    #[inline(always)]
    fn score_of(&self, i: usize) -> Option<f64> {
        let f = self.frozen[i];
        let v = known(f.stat)?;
        let last = &self.last;
        debug_assert!(v >= 0.0, "a latency statistic {v} is not negative");
        let mut score = if last.max > 0.0 { v / last.max } else { 0.0 };
        if self.cfg.severity && last.max_queue > 0 {
            score += f64::from(self.peers[i].queue_then().unwrap_or(0)) / f64::from(last.max_queue);
        }
        if let Some(max_penalty) = last.max_penalty {
            debug_assert!(max_penalty > 0.0, "a time penalty is scaled by a positive maximum");
            score += self.penalty(f.reply_then, last.at) / max_penalty;
        }
        debug_assert!(score.is_finite() && score >= 0.0, "a snitch score {score} (never NaN, never negative)");
        Some(score)
    }

    /// Mark peer `i`'s samples changed.
    fn mark_changed(&mut self, i: usize) {
        if self.peers[i].flags & DIRTY == 0 {
            self.peers[i].flags |= DIRTY;
            self.dirty.push(i as u32);
        }
        debug_assert!(self.dirty.len() <= self.peers.len(), "each peer listed dirty at most once");
    }

    /// Empty peer `i`'s samples.
    fn clear(&mut self, i: usize) {
        let p = &mut self.peers[i];
        p.reservoir.clear();
        p.ewma = f64::NAN;
        self.mark_changed(i);
    }

    /// Apply the reset and score-update ticks `now` has passed.
    #[inline]
    fn tick(&mut self, now: Nanos) {
        if now >= self.next_tick {
            self.tick_slow(now);
        }
    }

    #[inline(never)]
    fn tick_slow(&mut self, now: Nanos) {
        self.apply_replies();
        if now >= self.next_reset {
            (0..self.peers.len()).for_each(|i| self.clear(i));
            self.next_reset = advance(self.next_reset, self.reset_interval, now);
        }
        if now >= self.next_update {
            self.forget_silent_peers(now);
            self.update_scores(now);
            self.next_update = advance(self.next_update, self.update_interval, now);
        }
        self.next_tick = self.next_update.min(self.next_reset);
        debug_assert!(self.next_tick > now, "the next tick {} is in the future of {now}", self.next_tick);
        debug_assert!(self.replies.is_empty(), "every reply was applied");
    }

    /// Fold the replies since the last tick into their peers, in the order they came: the same
    /// state as folding each when it came, since nothing reads a peer's samples, last reply or
    /// queue length between ticks (a score is made of what the last update froze).
    ///
    /// Why later: a coordinator's peers and their reservoirs are seldom in the cache (150
    /// coordinators × 50 peers × up to 3 KB), and a reply folded on arrival waited for its peer's
    /// line, then for its reservoir's. Here all of this batch's peers are asked for first (loads
    /// that do not wait on each other, so they are fetched together), a peer with several
    /// replies is fetched once, and its median, computed just after, finds the reservoir in
    /// the cache.
    fn apply_replies(&mut self) {
        let replies = std::mem::take(&mut self.replies);
        // each peer once: marked changed, and its reservoir's lines asked for
        let mut seen = 0u64;
        debug_assert_eq!(self.peers.len(), self.frozen.len(), "a frozen score per peer");
        for r in &replies {
            let i = r.peer as usize;
            if self.peers[i].flags & DIRTY == 0 {
                self.mark_changed(i);
                seen ^= self.peers[i].reservoir.fetch_lines(self.cfg.reservoir_size);
            }
        }
        std::hint::black_box(seen);
        let (alpha, size, weight) = (self.cfg.reservoir_alpha, self.cfg.reservoir_size, self.ewma_weight);
        for r in &replies {
            let i = r.peer as usize;
            let p = &mut self.peers[i];
            // Only the configured summary is kept (the uniform draw was made either way).
            match self.cfg.sampling {
                Sampling::Reservoir => p.reservoir.add(r.at, r.latency, alpha, size, r.u),
                Sampling::Ewma => {
                    let mut ewma = known(p.ewma).map_or(Ewma::new(weight), |v| Ewma::with_initial(weight, v));
                    p.ewma = ewma.update(f64::from(r.latency));
                }
            }
            p.last_reply = r.at;
            if let Some(q) = r.queue_len {
                p.queue_len = q;
                p.flags |= HAS_QUEUE;
            }
        }
        let mut replies = replies;
        replies.clear();
        self.replies = replies;
    }

    /// With `resample_after_ms`, clear the samples of peers that have not replied for that long.
    fn forget_silent_peers(&mut self, now: Nanos) {
        if self.cfg.resample_after_ms <= 0.0 {
            return;
        }
        let after = from_ms(self.cfg.resample_after_ms);
        for i in 0..self.peers.len() {
            if !self.frozen[i].stat.is_nan() && now.saturating_sub(self.peers[i].last_reply) >= after {
                self.clear(i);
            }
        }
    }

    /// `min(now - t, update interval)` for a peer that last replied at `t`, in ns.
    fn penalty(&self, t: Nanos, now: Nanos) -> f64 {
        now.saturating_sub(t).min(self.update_interval) as f64
    }

    /// The largest penalty over all peers, those never heard from included (their penalty is
    /// the cap), and at least 1 ms, as absim, so that peers all heard from within the last
    /// millisecond score alike.
    fn max_penalty(&self, now: Nanos) -> f64 {
        let largest = if self.peers.len() < self.servers {
            self.update_interval as f64
        } else {
            // the penalty falls as the reply time grows: the largest is the oldest reply's
            let oldest = self.peers.iter().map(|p| p.last_reply).min();
            oldest.map_or(0.0, |t| self.penalty(t, now))
        };
        largest.max(crate::time::MS as f64)
    }

    /// Recompute the statistics of the peers with new samples and what scores are normalised by.
    fn update_scores(&mut self, now: Nanos) {
        let old_max = self.last.max;
        let (mut max, mut rescan) = (old_max, false);
        let mut dirty = std::mem::take(&mut self.dirty);
        for &i in &dirty {
            let (p, f) = (&mut self.peers[i as usize], &mut self.frozen[i as usize]);
            let stat = match self.cfg.sampling {
                Sampling::Reservoir => p.reservoir.median_with(&mut self.sums),
                Sampling::Ewma => known(p.ewma),
            };
            // the largest only falls if the peer that held it falls
            if f.stat == old_max && stat.is_none_or(|s| s < old_max) {
                rescan = true;
            }
            if let Some(s) = stat {
                max = max.max(s);
            }
            *f = Frozen { stat: stat.unwrap_or(f64::NAN), reply_then: p.last_reply };
            p.queue_then = p.queue_len;
            // the queue length then is the last one if any had come; no longer dirty
            p.flags = (p.flags & HAS_QUEUE) | if p.flags & HAS_QUEUE != 0 { HAS_QUEUE_THEN } else { 0 };
        }
        debug_assert!(dirty.iter().all(|&i| self.peers[i as usize].flags & DIRTY == 0), "updated peers are clean");
        dirty.clear();
        self.dirty = dirty;
        if rescan {
            max = self.frozen.iter().filter_map(|f| known(f.stat)).fold(0.0f64, f64::max);
        }
        debug_assert!(
            self.frozen.iter().filter_map(|f| known(f.stat)).all(|s| s <= max),
            "the largest statistic {max} bounds every peer's"
        );
        let max_queue =
            if self.cfg.severity { self.peers.iter().filter_map(Peer::queue_then).max().unwrap_or(0) } else { 0 };
        let max_penalty = self.cfg.time_penalty.then(|| self.max_penalty(now));
        self.last = Update { at: now, max, max_queue, max_penalty };
    }

    /// The position among `scores` (one per replica, primary first, at least one) of the
    /// replica to read from: the first with the lowest score if the scores are out of order by
    /// more than the badness threshold (some score above `(1 + b)` times the one of its rank),
    /// the primary otherwise.
    fn choose(&mut self, scores: &[f64]) -> usize {
        debug_assert!(scores.iter().all(|s| *s >= 0.0), "scores are never negative or NaN: {scores:?}");
        let (mut best, mut lowest) = (0, scores[0]);
        for (i, &s) in scores.iter().enumerate().skip(1) {
            if s < lowest {
                (best, lowest) = (i, s);
            }
        }
        let factor = 1.0 + self.cfg.badness_threshold.max(0.0);
        // When the first replica has the lowest score, it is first either way. With
        // `factor == 1` (b = 0), a score (>= 0, never NaN) exceeds its rank's exactly when the
        // scores are out of order, which the first not being the lowest already shows.
        if best == 0 || factor == 1.0 {
            return best;
        }
        let mut sorted = std::mem::take(&mut self.sorted);
        sorted.clear();
        sorted.extend_from_slice(scores);
        sorted.sort_by(f64::total_cmp);
        let bad = scores.iter().zip(&sorted).any(|(&s, &t)| s > t * factor);
        self.sorted = sorted;
        if bad {
            best
        } else {
            0
        }
    }

    /// The score used for ordering: peers without one count as 0, as in Cassandra.
    #[inline(always)]
    fn order_score(&self, node: NodeId) -> f64 {
        self.index.position(node).and_then(|i| self.score_of(i)).unwrap_or(0.0)
    }
}

impl ReplicaSelector for DynamicSnitch {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        self.tick(now);
        if replicas.is_empty() {
            return Decision::Wait { retry_at: None };
        }
        // each replica's score once (two divisions each): the badness rule reads them up to thrice
        let mut scores = std::mem::take(&mut self.scores);
        scores.clear();
        scores.extend(replicas.iter().map(|&r| self.order_score(r)));
        let chosen = self.choose(&scores);
        debug_assert!(chosen < replicas.len(), "the choice {chosen} is one of {} replicas", replicas.len());
        self.scores = scores;
        Decision::to(replicas[chosen])
    }

    /// What `select` reads of `servers`: the index's slots, then each peer's frozen score (and
    /// its queue length, with the severity term). 150 coordinators' peers do not stay in the
    /// cache between a coordinator's requests, and those loads were most of `select`'s time.
    fn footprint(&self, servers: &[NodeId], reach: Reach, out: &mut dyn FnMut(*const u8)) -> bool {
        match reach {
            Reach::Index => self.index.footprint(servers, Reach::Index, out),
            Reach::Entry => {
                for i in servers.iter().filter_map(|&node| self.index.position(node)) {
                    out((&self.frozen[i] as *const Frozen).cast());
                    if self.cfg.severity {
                        out((&self.peers[i] as *const Peer).cast());
                    }
                }
            }
        }
        true
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        self.tick(now);
        // whole µs in 32 bits: a reply over 71 minutes late counts as 71 minutes
        let latency = u32::try_from(now.saturating_sub(resp.sent_at) / US).unwrap_or(u32::MAX);
        let u = self.rng.unit();
        let i = match self.index.position(resp.replica) {
            Some(i) => i,
            None => {
                let i = self.peers.len();
                self.index.get_or_insert_with(resp.replica, || ());
                debug_assert_eq!(self.index.position(resp.replica), Some(i), "a peer's position is its index");
                self.peers.push(Peer {
                    reservoir: Reservoir::default(),
                    ewma: f64::NAN,
                    last_reply: now,
                    queue_len: 0,
                    queue_then: 0,
                    flags: 0,
                });
                self.frozen.push(Frozen { stat: f64::NAN, reply_then: now });
                i
            }
        };
        let queue_len = resp.fresh.then_some(resp.feedback.queue_len);
        self.replies.push(Reply { peer: i as u32, queue_len, at: now, latency, u });
    }
}


/// `dynamic-snitch`: Cassandra's dynamic snitch (reads queue_len as its severity where the engine reports it).
pub const REGISTRATION: Registration = Registration {
    name: "dynamic-snitch",
    source: "Cassandra's dynamic snitch (reads queue_len as its severity where the engine reports it)",
    needs: Needs::NOTHING,
    build: |cfg, env| Box::new(DynamicSnitch::new(&cfg.dynamic_snitch, env)),
    validate: |cfg| cfg.dynamic_snitch.validate().map_err(|e| tunable("dynamic_snitch", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;
    use crate::time::{MS, SEC};

    /// A response from `replica` received at `now` after `latency_ms`.
    fn sample(s: &mut DynamicSnitch, now: Nanos, replica: NodeId, latency_ms: u64) {
        s.on_response(now, &response(0, replica, now - latency_ms * MS, false, Feedback::default()));
    }

    fn head(s: &mut DynamicSnitch, now: Nanos) -> NodeId {
        replica_of(s.select(now, &read(1, now, SizeHint::default()), &[0, 1, 2], &Blind))
    }

    #[test]
    fn slower_replica_moves_back_after_the_update() {
        let mut s = DynamicSnitch::new(&SnitchConfig::default(), &env(3));
        assert_eq!(head(&mut s, 0), 0, "no scores: static order");
        for t in 1..=5 {
            sample(&mut s, t * 10 * MS, 0, 10);
            sample(&mut s, t * 10 * MS, 1, 2);
            sample(&mut s, t * 10 * MS, 2, 4);
        }
        assert_eq!(head(&mut s, 60 * MS), 0, "scores are only recomputed every 100 ms");
        assert_eq!(head(&mut s, 100 * MS), 1);
        assert_eq!(s.score(0), Some(1.0));
        assert_eq!(s.score(1), Some(0.2));
        // Replica 1 slows down: after the next update, 2 leads.
        for t in 11..=19 {
            sample(&mut s, t * 10 * MS, 1, 50);
        }
        assert_eq!(head(&mut s, 199 * MS), 1);
        assert_eq!(head(&mut s, 200 * MS), 2);
        // After the 600 s reset and the next update, no peer has samples: static order again.
        assert_eq!(head(&mut s, 600 * SEC), 0);
        assert_eq!(s.score(2), None);
    }

    #[test]
    fn the_time_penalty_ranks_a_peer_heard_from_long_ago_behind_an_equal_recent_one() {
        let cfg = SnitchConfig { time_penalty: true, ..SnitchConfig::default() };
        let mut s = DynamicSnitch::new(&cfg, &env(3));
        // equal medians; peer 0 last replied at 10 ms, peers 1 and 2 at 95 ms
        sample(&mut s, 10 * MS, 0, 5);
        sample(&mut s, 95 * MS, 1, 5);
        sample(&mut s, 95 * MS, 2, 5);
        assert_eq!(head(&mut s, 100 * MS), 1);
        // penalties 90, 5, 5 ms (capped at the 100 ms interval), normalised by the largest
        assert_eq!(s.score(0), Some(2.0));
        assert_eq!(s.score(1), Some(1.0 + 5.0 / 90.0));
        // without the penalty the three tie and the static order (0 first) wins
        let mut plain = DynamicSnitch::new(&SnitchConfig::default(), &env(3));
        for (t, r) in [(10, 0), (95, 1), (95, 2)] {
            sample(&mut plain, t * MS, r, 5);
        }
        assert_eq!(head(&mut plain, 100 * MS), 0);
    }

    #[test]
    fn a_peer_silent_for_resample_after_is_tried_again() {
        let cfg = SnitchConfig { resample_after_ms: 200.0, ..SnitchConfig::default() };
        let fast_peers = |s: &mut DynamicSnitch, from: u64, to: u64| {
            for t in from..=to {
                sample(s, t * 10 * MS, 1, 2);
                sample(s, t * 10 * MS, 2, 3);
            }
        };
        let mut s = DynamicSnitch::new(&cfg, &env(3));
        sample(&mut s, 60 * MS, 0, 50);
        fast_peers(&mut s, 1, 9);
        assert_eq!(head(&mut s, 100 * MS), 1, "peer 0 scores worst while its samples are recent");
        fast_peers(&mut s, 10, 19);
        assert_eq!(head(&mut s, 200 * MS), 1);
        // 240 ms after its last reply, peer 0's samples are forgotten: unknown scores 0, tried first
        fast_peers(&mut s, 20, 29);
        assert_eq!(head(&mut s, 300 * MS), 0);
        assert_eq!(s.score(0), None);
        // its new sample is all that counts
        sample(&mut s, 305 * MS, 0, 1);
        fast_peers(&mut s, 31, 39);
        assert_eq!(head(&mut s, 400 * MS), 0);
        let mut never = DynamicSnitch::new(&SnitchConfig::default(), &env(3));
        sample(&mut never, 60 * MS, 0, 50);
        fast_peers(&mut never, 1, 39);
        assert_eq!(head(&mut never, 400 * MS), 1, "without it, peer 0 is judged by its old samples");
    }

    #[test]
    fn badness_threshold_keeps_static_order_for_small_differences() {
        let cfg = SnitchConfig { badness_threshold: 0.5, ..SnitchConfig::default() };
        let mut s = DynamicSnitch::new(&cfg, &env(3));
        for t in 1..=5 {
            sample(&mut s, (20 + t) * MS, 0, 10);
            sample(&mut s, (20 + t) * MS, 1, 8);
            sample(&mut s, (20 + t) * MS, 2, 9);
        }
        // Scores 1.0, 0.8, 0.9: no position exceeds the sorted score × 1.5.
        assert_eq!(head(&mut s, 100 * MS), 0);
        let mut pure = DynamicSnitch::new(&SnitchConfig::default(), &env(3));
        let mut tight = DynamicSnitch::new(&SnitchConfig { badness_threshold: 0.1, ..cfg.clone() }, &env(3));
        for t in 1..=5 {
            for (r, ms) in [(0, 10), (1, 8), (2, 9)] {
                sample(&mut pure, (20 + t) * MS, r, ms);
                sample(&mut tight, (20 + t) * MS, r, ms);
            }
        }
        assert_eq!(head(&mut pure, 100 * MS), 1);
        assert_eq!(head(&mut tight, 100 * MS), 1, "1.0 > 0.8 × 1.1");
        // A large difference overrides the threshold.
        for t in 101..=120 {
            sample(&mut s, t * MS, 0, 40);
        }
        assert_eq!(head(&mut s, 200 * MS), 1);
    }

    #[test]
    fn reservoir_median_favours_recent_samples() {
        let mut s = DynamicSnitch::new(&SnitchConfig::default(), &env(3));
        for i in 0..100 {
            sample(&mut s, SEC + i * MS, 0, 10);
        }
        // Ten seconds later the new samples weigh e^7.5 times more: 30 of them carry the median.
        for i in 0..30 {
            sample(&mut s, 11 * SEC + i * MS, 0, 2);
        }
        sample(&mut s, 11 * SEC + 50 * MS, 1, 4);
        // replies are folded in at the next tick: fold them now to look at the reservoir
        s.apply_replies();
        assert_eq!(s.peers[s.index.position(0).unwrap()].reservoir.len(), 100);
        assert_eq!(s.peers[s.index.position(0).unwrap()].reservoir.median(), Some(2_000.0));
        head(&mut s, 11 * SEC + 100 * MS);
        assert_eq!(s.score(0), Some(0.5));
        assert_eq!(s.score(1), Some(1.0));
    }

    /// The footprint points at what `select` reads: a peer's frozen score (and with the severity
    /// term, the peer), nothing for a server never heard from.
    #[test]
    fn footprint_points_at_the_scores_select_reads() {
        for severity in [false, true] {
            let mut s = DynamicSnitch::new(&SnitchConfig { severity, ..SnitchConfig::default() }, &env(3));
            // received at 10 ms after 5 ms (sent at 5 ms: a send before time 0 overflows)
            sample(&mut s, 10 * MS, 2, 5);
            sample(&mut s, 10 * MS, 0, 5);
            let mut lines = Vec::new();
            assert!(s.footprint(&[0, 1, 2], Reach::Entry, &mut |a| lines.push(a as usize)));
            let at = |i: usize| {
                let peer = severity.then(|| &s.peers[i] as *const Peer as usize);
                [Some(&s.frozen[i] as *const Frozen as usize), peer]
            };
            let expected: Vec<usize> = [at(1), at(0)].into_iter().flatten().flatten().collect();
            assert_eq!(lines, expected, "server 2 is peer 0, server 0 peer 1; severity {severity}");
        }
    }

    #[test]
    fn ewma_sampling_and_severity() {
        let cfg = SnitchConfig { sampling: Sampling::Ewma, severity: true, ..SnitchConfig::default() };
        let mut s = DynamicSnitch::new(&cfg, &env(3));
        let fb = |q| Feedback { queue_len: q, ..Feedback::default() };
        // Equal latencies; queue lengths 8, 2, 4 make the severity decide.
        for (r, q) in [(0, 8), (1, 2), (2, 4)] {
            s.on_response(10 * MS, &response(0, r, 5 * MS, false, fb(q)));
        }
        assert_eq!(head(&mut s, 100 * MS), 1);
        assert_eq!(s.score(0), Some(2.0));
        assert_eq!(s.score(1), Some(1.25));
    }

    #[test]
    fn config_defaults() {
        let c: SnitchConfig = serde_json::from_str(r#"{"sampling": "ewma"}"#).expect("config");
        assert_eq!(c, SnitchConfig { sampling: Sampling::Ewma, ..SnitchConfig::default() });
        assert_eq!(c.update_interval_ms, 100.0);
        assert!(serde_json::from_str::<SnitchConfig>(r#"{"badness": 1}"#).is_err());
    }
}
