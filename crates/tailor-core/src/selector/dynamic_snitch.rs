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

use super::{Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::{Ewma, Response};
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::{from_ms, Nanos, SEC, US};
use serde::{Deserialize, Serialize};

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

/// Largest `alpha * age` before the reservoir moves its landmark: keeps weights far from overflow.
const MAX_DECAY_EXPONENT: f64 = 40.0;

/// Cassandra's (Codahale's) exponentially decaying reservoir: priority sampling with forward decay.
///
/// Each sample has a slot (where it was added, which the lowest-priority replacement reuses) and
/// the samples are kept sorted by latency, ties by slot: the order a stable sort of the slots by
/// latency gives, so the weighted median (every 100 ms for every peer with new samples, the
/// largest cost of this strategy) is one pass over contiguous weights. A sample's latency (whole
/// µs) and slot are one key, `latency << 32 | slot`, whose integer order is that order. The three
/// fields of the samples are parallel arrays of 64-bit words in one allocation, `[keys | weights
/// | priorities]` (weights and priorities as `f64` bits), each `cap` long: a peer heard from
/// once (most peers of a coordinator of a large cluster) costs one small block, a full
/// reservoir its size and no more, and the lowest-priority search on every add reads the
/// priorities alone. 24 bytes a sample: with thousands of reservoirs, far more than the cache
/// holds, every add reads two arrays and moves three.
#[derive(Clone, Debug, Default)]
struct Reservoir {
    data: Box<[u64]>,
    /// Samples held.
    len: u32,
    /// Time the weights are relative to.
    landmark: Nanos,
}

/// The arrays of a [`Reservoir`].
const KEY: usize = 0;
const WEIGHT: usize = 1;
const PRIORITY: usize = 2;
const ARRAYS: usize = 3;

/// A sample's key: its latency then its slot.
fn key(latency_us: u32, slot: u32) -> u64 {
    (u64::from(latency_us) << 32) | u64::from(slot)
}

/// The slot of a key.
fn slot_of(key: u64) -> u32 {
    key as u32
}

/// The latency of a key, in µs.
fn latency_of(key: u64) -> f64 {
    (key >> 32) as f64
}

impl Reservoir {
    fn cap(&self) -> usize {
        self.data.len() / ARRAYS
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    /// Array `k` (one of [`KEY`], [`WEIGHT`], [`PRIORITY`]), the samples held.
    fn array(&self, k: usize) -> &[u64] {
        let cap = self.cap();
        &self.data[k * cap..k * cap + self.len()]
    }

    /// The `f64` of array `k` at `i` (weights, priorities).
    fn real(&self, k: usize, i: usize) -> f64 {
        f64::from_bits(self.array(k)[i])
    }

    /// A word of each cache line of the samples held: reading them asks for all those lines
    /// at once.
    fn fetch_lines(&self) -> u64 {
        (0..ARRAYS).fold(0, |x, k| self.array(k).iter().step_by(8).fold(x, |x, w| x ^ w))
    }

    /// Forget every sample, keeping the memory (a reset refills it).
    fn clear(&mut self) {
        self.len = 0;
    }

    /// Room for one more sample, at most `size` in all: the capacity doubles from 2.
    fn grow(&mut self, size: usize) {
        let (cap, len) = (self.cap(), self.len());
        let new_cap = (2 * cap).max(2).min(size.max(1));
        let mut data = vec![0; ARRAYS * new_cap].into_boxed_slice();
        for k in 0..ARRAYS {
            data[k * new_cap..k * new_cap + len].copy_from_slice(&self.data[k * cap..k * cap + len]);
        }
        self.data = data;
    }

    /// Add a sample of `latency_us` at `now`; `u` is uniform in `[0, 1)`.
    fn add(&mut self, now: Nanos, latency_us: u32, alpha: f64, size: usize, u: f64) {
        if self.len == 0 {
            self.landmark = now;
        }
        let mut age = now.saturating_sub(self.landmark) as f64 / SEC as f64;
        let cap = self.cap();
        if alpha * age > MAX_DECAY_EXPONENT {
            // Moving the landmark scales every weight and priority alike: the sample is unchanged.
            let scale = (-alpha * age).exp();
            let len = self.len();
            for k in [WEIGHT, PRIORITY] {
                let scaled = |x: &mut u64| *x = (f64::from_bits(*x) * scale).to_bits();
                self.data[k * cap..k * cap + len].iter_mut().for_each(scaled);
            }
            self.landmark = now;
            age = 0.0;
        }
        let weight = (alpha * age).exp();
        // weight <= e^40 and 1 - u in (0, 1]: finite and positive (or 0 once scaled far down),
        // so `<` and `==` order priorities as `total_cmp` does
        let priority = weight / (1.0 - u);
        debug_assert!(priority.is_finite() && priority >= 0.0, "priority {priority}");
        let len = self.len();
        if len < size.max(1) {
            if len == cap {
                self.grow(size);
            }
            self.len += 1;
            let new = key(latency_us, len as u32);
            let at = self.rank(new, len);
            self.place(len, at, [new, weight.to_bits(), priority.to_bits()]);
        } else {
            let lowest = self.lowest();
            if self.real(PRIORITY, lowest) < priority {
                let new = key(latency_us, slot_of(self.array(KEY)[lowest]));
                let rank = self.rank(new, len);
                // where it goes once the replaced sample is out
                let at = if lowest < rank { rank - 1 } else { rank };
                self.place(lowest, at, [new, weight.to_bits(), priority.to_bits()]);
            }
        }
    }

    /// Among the first `n` samples, how many sort before `key` (no sample there has its slot,
    /// or the one that has is the sample it replaces, whose key is not below it).
    ///
    /// Counted rather than bisected: the reservoir is seldom in the cache when a reply comes
    /// (thousands of them, one touched per reply), and a bisection waits for each line it
    /// probes in turn, where a count asks for them all at once and the shift after it reads
    /// them again anyway.
    fn rank(&self, key: u64, n: usize) -> usize {
        self.data[..n].iter().map(|&k| usize::from(k < key)).sum()
    }

    /// Take the sample at `from` out (`from == len - 1` after a push: the free place) and put
    /// `sample` at `at`, shifting those between.
    fn place(&mut self, from: usize, at: usize, sample: [u64; ARRAYS]) {
        let cap = self.cap();
        for (k, x) in sample.into_iter().enumerate() {
            let a = &mut self.data[k * cap..(k + 1) * cap];
            if from < at {
                a.copy_within(from + 1..at + 1, from);
            } else if at < from {
                a.copy_within(at..from, at + 1);
            }
            a[at] = x;
        }
    }

    /// Position of the lowest priority, the lowest slot among equal ones (as a scan in slot
    /// order finds it); the reservoir is not empty.
    fn lowest(&self) -> usize {
        let priorities = self.array(PRIORITY);
        // four running minima: independent chains of comparisons
        let mut m = [f64::INFINITY; 4];
        let mut chunks = priorities.chunks_exact(4);
        for c in &mut chunks {
            for j in 0..4 {
                let p = f64::from_bits(c[j]);
                m[j] = if p < m[j] { p } else { m[j] };
            }
        }
        let tail = chunks.remainder().iter().map(|&p| f64::from_bits(p));
        let mut min = tail.fold(f64::INFINITY, |m, p| if p < m { p } else { m });
        for x in m {
            min = if x < min { x } else { min };
        }
        let is_min = |i: usize| f64::from_bits(priorities[i]) == min;
        let mut at = (0..priorities.len()).find(|&i| is_min(i)).expect("a sample");
        let keys = self.array(KEY);
        for i in at + 1..priorities.len() {
            if is_min(i) && slot_of(keys[i]) < slot_of(keys[at]) {
                at = i;
            }
        }
        at
    }

    /// Weighted median: the largest value whose preceding cumulative weight share is at most 1/2.
    #[cfg(test)]
    fn median(&self) -> Option<f64> {
        self.median_with(&mut Vec::new())
    }

    /// [`Reservoir::median`] with room for the running sums.
    ///
    /// Cassandra's loop adds the weights in latency order for the total, then again until the
    /// share before a sample exceeds 1/2. The sums here are the same additions in the same order
    /// (bit for bit), kept from one pass: the share before a sample only grows along it (the
    /// weights are >= 0 and rounding is monotonic), so where it first exceeds 1/2 is found by
    /// bisection instead of a second pass.
    fn median_with(&self, sums: &mut Vec<f64>) -> Option<f64> {
        let (keys, weights) = (self.array(KEY), self.array(WEIGHT));
        let first = latency_of(*keys.first()?);
        // sums[k]: the weight before sample k (the first k samples), as the loop sums it
        sums.resize(weights.len(), 0.0);
        let sums = &mut sums[..weights.len()];
        // from 0 as the loop's `before` (the first addition gives the first weight exactly, so
        // the total is also `Sum`'s, whichever zero that starts from)
        let mut before = 0.0;
        for (sum, &w) in sums.iter_mut().zip(weights) {
            *sum = before;
            before += f64::from_bits(w);
        }
        let total = before;
        // the loop stops at the first k with sums[k] / total > 0.5 (never at k = 0: the share
        // is 0 there, or NaN if every weight decayed to 0), and the median is sample k - 1's.
        // Bisected without dividing: a share above 1/2 needs a sum above half the total (exact
        // while that half is a normal number), so the first k past half the total is where to
        // start, and the division, which rounds such shares above 1/2, only confirms it there.
        let passes = |k: usize| sums[k] / total > 0.5;
        let half = 0.5 * total;
        let mut k = if half >= f64::MIN_POSITIVE { sums.partition_point(|&b| b <= half) } else { 0 };
        while k < sums.len() && !passes(k) {
            k += 1;
        }
        Some(if k == 0 { first } else { latency_of(keys[k - 1]) })
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

const _: () = assert!(std::mem::size_of::<Peer>() == 64, "a peer is one cache line");

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
    /// Index in `peers` of each peer this coordinator has heard from.
    index: NodeMap<u32>,
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
    /// Room for sorted scores.
    sorted: Vec<f64>,
}

/// The first grid point `next + k * interval` strictly after `now`.
fn advance(next: Nanos, interval: Nanos, now: Nanos) -> Nanos {
    next.saturating_add((now.saturating_sub(next) / interval + 1).saturating_mul(interval))
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
            sorted: Vec::new(),
        }
    }

    /// The peer's score from the last update, if it had samples then.
    pub fn score(&self, node: NodeId) -> Option<f64> {
        self.index.get(node).and_then(|&i| self.score_of(i as usize))
    }

    /// `p`'s score from the last update: `stat / max` (+ severity) (+ time penalty), as the
    /// update would have stored it.
    #[inline(always)]
    fn score_of(&self, i: usize) -> Option<f64> {
        let f = self.frozen[i];
        let v = known(f.stat)?;
        let last = &self.last;
        let mut score = if last.max > 0.0 { v / last.max } else { 0.0 };
        if self.cfg.severity && last.max_queue > 0 {
            score += f64::from(self.peers[i].queue_then().unwrap_or(0)) / f64::from(last.max_queue);
        }
        if let Some(max_penalty) = last.max_penalty {
            score += self.penalty(f.reply_then, last.at) / max_penalty;
        }
        Some(score)
    }

    /// Mark peer `i`'s samples changed.
    fn mark_changed(&mut self, i: usize) {
        if self.peers[i].flags & DIRTY == 0 {
            self.peers[i].flags |= DIRTY;
            self.dirty.push(i as u32);
        }
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
        for r in &replies {
            let i = r.peer as usize;
            if self.peers[i].flags & DIRTY == 0 {
                self.mark_changed(i);
                seen ^= self.peers[i].reservoir.fetch_lines();
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
        dirty.clear();
        self.dirty = dirty;
        if rescan {
            max = self.frozen.iter().filter_map(|f| known(f.stat)).fold(0.0f64, f64::max);
        }
        let max_queue =
            if self.cfg.severity { self.peers.iter().filter_map(Peer::queue_then).max().unwrap_or(0) } else { 0 };
        let max_penalty = self.cfg.time_penalty.then(|| self.max_penalty(now));
        self.last = Update { at: now, max, max_queue, max_penalty };
    }

    /// The score used for ordering: peers without one count as 0, as in Cassandra.
    #[inline(always)]
    fn order_score(&self, node: NodeId) -> f64 {
        self.index.get(node).and_then(|&i| self.score_of(i as usize)).unwrap_or(0.0)
    }
}

impl ReplicaSelector for DynamicSnitch {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        self.tick(now);
        let Some(&head) = replicas.first() else {
            return Decision::Wait { retry_at: None };
        };
        // the first replica with the lowest score
        let (mut best, mut lowest) = (0, self.order_score(head));
        for (i, &r) in replicas.iter().enumerate().skip(1) {
            let s = self.order_score(r);
            if s < lowest {
                (best, lowest) = (i, s);
            }
        }
        let factor = 1.0 + self.cfg.badness_threshold.max(0.0);
        // When the first replica has the lowest score, it is first either way. With
        // `factor == 1` (b = 0), a score (>= 0, never NaN) exceeds its rank's exactly when the
        // scores are out of order, which the first not being the lowest already shows.
        if best == 0 || factor == 1.0 {
            return Decision::to(replicas[best]);
        }
        let mut sorted = std::mem::take(&mut self.sorted);
        sorted.clear();
        sorted.extend(replicas.iter().map(|&r| self.order_score(r)));
        sorted.sort_by(f64::total_cmp);
        let bad = replicas.iter().zip(&sorted).any(|(&r, &s)| self.order_score(r) > s * factor);
        self.sorted = sorted;
        Decision::to(if bad { replicas[best] } else { head })
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        self.tick(now);
        // whole µs in 32 bits: a reply over 71 minutes late counts as 71 minutes
        let latency = u32::try_from(now.saturating_sub(resp.sent_at) / US).unwrap_or(u32::MAX);
        let u = self.rng.unit();
        let i = match self.index.get(resp.replica) {
            Some(&i) => i as usize,
            None => {
                let i = self.peers.len();
                self.index.get_or_insert_with(resp.replica, || i as u32);
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

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;
    use crate::time::MS;

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
        assert_eq!(s.peers[*s.index.get(0).unwrap() as usize].reservoir.len(), 100);
        assert_eq!(s.peers[*s.index.get(0).unwrap() as usize].reservoir.median(), Some(2_000.0));
        head(&mut s, 11 * SEC + 100 * MS);
        assert_eq!(s.score(0), Some(0.5));
        assert_eq!(s.score(1), Some(1.0));
    }

    #[test]
    fn reservoir_survives_long_runs_without_overflow() {
        let mut r = Reservoir::default();
        let mut rng = Rng::new(1, 2);
        for i in 0..10_000u64 {
            r.add(i * 50 * MS, (i % 7) as u32, 0.75, 100, rng.unit());
        }
        assert!(r.array(PRIORITY).iter().chain(r.array(WEIGHT)).all(|&x| f64::from_bits(x).is_finite()));
        let m = r.median().expect("samples");
        assert!((0.0..7.0).contains(&m));
    }

    /// The reservoir as Cassandra's code has it: samples in slot order, the lowest priority found
    /// by a scan, the median over a stable sort by latency.
    #[derive(Default)]
    struct Model {
        /// (priority, latency, weight) by slot.
        samples: Vec<(f64, f64, f64)>,
        landmark: Nanos,
    }

    impl Model {
        fn add(&mut self, now: Nanos, value: f64, alpha: f64, size: usize, u: f64) {
            if self.samples.is_empty() {
                self.landmark = now;
            }
            let mut age = now.saturating_sub(self.landmark) as f64 / SEC as f64;
            if alpha * age > MAX_DECAY_EXPONENT {
                let scale = (-alpha * age).exp();
                for s in &mut self.samples {
                    s.0 *= scale;
                    s.2 *= scale;
                }
                self.landmark = now;
                age = 0.0;
            }
            let weight = (alpha * age).exp();
            let priority = weight / (1.0 - u);
            if self.samples.len() < size.max(1) {
                self.samples.push((priority, value, weight));
            } else if let Some(lowest) =
                (0..self.samples.len()).min_by(|&a, &b| self.samples[a].0.total_cmp(&self.samples[b].0))
            {
                if self.samples[lowest].0 < priority {
                    self.samples[lowest] = (priority, value, weight);
                }
            }
        }

        fn median(&self) -> Option<f64> {
            let mut v: Vec<(f64, f64)> = self.samples.iter().map(|s| (s.1, s.2)).collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let total: f64 = v.iter().map(|s| s.1).sum();
            let (mut before, mut median) = (0.0, v.first()?.0);
            for &(value, weight) in &v {
                if before / total > 0.5 {
                    break;
                }
                median = value;
                before += weight;
            }
            Some(median)
        }
    }

    /// The reservoir kept sorted holds the samples the model holds, slot for slot, and its median
    /// is the model's bit for bit: many equal latencies (whole microseconds), equal priorities
    /// (a coarse `u`), replacements, landmark moves, clears, and sizes from 1.
    #[test]
    fn sorted_reservoir_is_the_slot_order_reservoir() {
        let mut rng = Rng::new(5, 6);
        for (size, step, values, coarse) in [
            (60, 7 * MS, 40, false),
            (100, 3 * MS, 3000, false),
            (1, MS, 5, false),
            (7, 900 * MS, 4, true),
            (100, 20 * MS, 10, true),
            (9, 0, 6, true),
        ] {
            let (mut r, mut model) = (Reservoir::default(), Model::default());
            assert_eq!(r.median(), None);
            for i in 0..20_000u64 {
                if i % 7_000 == 6_999 {
                    r.clear();
                    model = Model::default();
                }
                let value = rng.below(values) as u32;
                let u = if coarse { rng.below(4) as f64 / 4.0 } else { rng.unit() };
                r.add(i * step, value, 0.75, size, u);
                model.add(i * step, f64::from(value), 0.75, size, u);
                assert_eq!(r.median().map(f64::to_bits), model.median().map(f64::to_bits), "size {size}, after {i}");
                let mut held: Vec<_> = (0..r.len())
                    .map(|j| {
                        let k = r.array(KEY)[j];
                        let a = |array| r.array(array)[j];
                        (slot_of(k) as usize, [a(PRIORITY), latency_of(k).to_bits(), a(WEIGHT)])
                    })
                    .collect();
                held.sort_by_key(|h| h.0);
                let expected: Vec<_> = model
                    .samples
                    .iter()
                    .enumerate()
                    .map(|(j, s)| (j, [s.0.to_bits(), s.1.to_bits(), s.2.to_bits()]))
                    .collect();
                assert_eq!(held, expected, "size {size}, after {i}");
                // sorted by latency, ties by slot
                assert!(r.array(KEY).windows(2).all(|w| w[0] < w[1]));
                assert!(r.cap() <= size.max(2));
            }
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
