//! `dynamic-snitch`: Cassandra's dynamic snitch (the pre-4.0 `DynamicEndpointSnitch`), the
//! default replica selection of Cassandra (docs/strategies.md, Replica selectors).
//!
//! On every response (fresh or stale: the sample is this coordinator's own measurement) the
//! latency `now - sent_at`, in whole microseconds, goes into the peer's exponentially decaying
//! reservoir (forward-decay priority sampling: 100 samples, alpha 0.75 per second, weighted
//! median). Every `update_interval` the scores are recomputed: `score = median / max median over
//! peers with samples` (+ the optional severity, here the peer's last reported queue length
//! divided by the largest one reported); peers without samples have no score and count as 0.
//! Every `reset_interval` all samples are cleared (scores stay until the next update, as in
//! Cassandra). Both timers run lazily: `select` and `on_response` first apply every tick that
//! `now` has passed, on a fixed grid from time 0, so a score reflects the samples seen up to its
//! tick, not later ones.
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
#[derive(Clone, Debug, Default)]
struct Reservoir {
    /// (priority, latency µs, weight).
    samples: Vec<(f64, f64, f64)>,
    /// Positions in `samples` by latency, ties by position: the order a stable sort by latency
    /// gives, kept on every add so that the median (every 100 ms for every peer with new samples,
    /// the largest cost of this strategy) scans instead of sorting.
    by_value: Vec<u32>,
    /// Time the weights are relative to.
    landmark: Nanos,
}

impl Reservoir {
    /// Add a sample at `now`; `u` is uniform in `[0, 1)`.
    fn add(&mut self, now: Nanos, value: f64, alpha: f64, size: usize, u: f64) {
        if self.samples.is_empty() {
            self.landmark = now;
        }
        let mut age = now.saturating_sub(self.landmark) as f64 / SEC as f64;
        if alpha * age > MAX_DECAY_EXPONENT {
            // Moving the landmark scales every weight and priority alike: the sample is unchanged.
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
            self.index(self.samples.len() - 1);
        } else if let Some(lowest) =
            (0..self.samples.len()).min_by(|&a, &b| self.samples[a].0.total_cmp(&self.samples[b].0))
        {
            if self.samples[lowest].0 < priority {
                self.unindex(lowest);
                self.samples[lowest] = (priority, value, weight);
                self.index(lowest);
            }
        }
    }

    /// Where sample `i` belongs in `by_value` (or is, when indexed).
    fn rank(&self, i: usize) -> usize {
        let value = self.samples[i].1;
        self.by_value.partition_point(|&j| match self.samples[j as usize].1.total_cmp(&value) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => (j as usize) < i,
            std::cmp::Ordering::Greater => false,
        })
    }

    fn index(&mut self, i: usize) {
        let at = self.rank(i);
        self.by_value.insert(at, i as u32);
    }

    fn unindex(&mut self, i: usize) {
        let at = self.rank(i);
        assert_eq!(self.by_value.get(at), Some(&(i as u32)), "every sample is indexed by its latency");
        self.by_value.remove(at);
    }

    /// Weighted median: the largest value whose preceding cumulative weight share is at most 1/2.
    fn median(&self) -> Option<f64> {
        let sorted = || self.by_value.iter().map(|&j| (self.samples[j as usize].1, self.samples[j as usize].2));
        let total: f64 = sorted().map(|s| s.1).sum();
        let mut before = 0.0;
        let mut median = sorted().next()?.0;
        for (value, weight) in sorted() {
            if before / total > 0.5 {
                break;
            }
            median = value;
            before += weight;
        }
        Some(median)
    }
}

/// Latency knowledge about one peer.
#[derive(Clone, Debug)]
struct Peer {
    reservoir: Reservoir,
    ewma: Ewma,
    /// Last fresh piggybacked queue length (severity).
    queue_len: Option<u32>,
    /// Score from the last update (None: no samples then).
    score: Option<f64>,
    /// Median (or EWMA) at the last update; recomputed only for peers with new samples, since a
    /// forward-decayed median does not move without them.
    stat: Option<f64>,
    /// Samples changed since `stat` was computed.
    dirty: bool,
    /// When its newest reply arrived.
    last_reply: Option<Nanos>,
}

/// `dynamic-snitch` selector.
pub struct DynamicSnitch {
    cfg: SnitchConfig,
    /// Per peer this coordinator has heard from; the others are `blank`.
    peers: NodeMap<Peer>,
    blank: Peer,
    /// Servers in the cluster: while fewer peers are tracked, some peer was never heard from.
    servers: usize,
    update_interval: Nanos,
    reset_interval: Nanos,
    next_update: Nanos,
    next_reset: Nanos,
    rng: Rng,
    sorted: Vec<f64>,
}

/// The first grid point `next + k * interval` strictly after `now`.
fn advance(next: Nanos, interval: Nanos, now: Nanos) -> Nanos {
    next.saturating_add((now.saturating_sub(next) / interval + 1).saturating_mul(interval))
}

impl DynamicSnitch {
    /// Build for one coordinator.
    pub fn new(cfg: &SnitchConfig, env: &SelectorEnv) -> Self {
        let w = if (0.0..=1.0).contains(&cfg.ewma_weight) { cfg.ewma_weight } else { 0.1 };
        let blank = Peer {
            reservoir: Reservoir::default(),
            ewma: Ewma::new(w),
            queue_len: None,
            score: None,
            stat: None,
            dirty: false,
            last_reply: None,
        };
        let update_interval = from_ms(cfg.update_interval_ms).max(1);
        let reset_interval = from_ms(cfg.reset_interval_ms).max(1);
        let mut rng = Rng::new(env.seed, 0x534e_4954 + env.coordinator as u64);
        // Independent coordinators do not share a clock grid (Cassandra nodes start at different
        // times): with several, each updates its scores at its own random phase, otherwise every
        // coordinator would re-rank at the same instant and herd in lockstep.
        let phase = if env.coordinators > 1 { rng.below(update_interval as usize) as Nanos } else { 0 };
        DynamicSnitch {
            cfg: cfg.clone(),
            peers: NodeMap::new(),
            blank,
            servers: env.servers,
            update_interval,
            reset_interval,
            next_update: update_interval + phase,
            next_reset: reset_interval + phase,
            rng,
            sorted: Vec::new(),
        }
    }

    /// The peer's score from the last update, if it had samples then.
    pub fn score(&self, node: NodeId) -> Option<f64> {
        self.peers.get(node).and_then(|p| p.score)
    }

    fn peer_mut(&mut self, node: NodeId) -> &mut Peer {
        let blank = &self.blank;
        self.peers.get_or_insert_with(node, || blank.clone())
    }

    /// Apply the reset and score-update ticks `now` has passed.
    fn tick(&mut self, now: Nanos) {
        if now >= self.next_reset {
            let blank = self.blank.clone();
            for (_, p) in self.peers.iter_mut() {
                p.reservoir = blank.reservoir.clone();
                p.ewma = blank.ewma;
                p.dirty = true;
            }
            self.next_reset = advance(self.next_reset, self.reset_interval, now);
        }
        if now >= self.next_update {
            self.forget_silent_peers(now);
            self.update_scores(now);
            self.next_update = advance(self.next_update, self.update_interval, now);
        }
    }

    /// With `resample_after_ms`, clear the samples of peers that have not replied for that long.
    fn forget_silent_peers(&mut self, now: Nanos) {
        if self.cfg.resample_after_ms <= 0.0 {
            return;
        }
        let after = from_ms(self.cfg.resample_after_ms);
        let blank = (self.blank.reservoir.clone(), self.blank.ewma);
        for (_, p) in self.peers.iter_mut() {
            if p.stat.is_some() && p.last_reply.is_some_and(|t| now.saturating_sub(t) >= after) {
                (p.reservoir, p.ewma) = blank.clone();
                p.dirty = true;
            }
        }
    }

    /// `min(now - last reply, update interval)` for `p`, in ns.
    fn penalty(&self, p: &Peer, now: Nanos) -> f64 {
        let cap = self.update_interval;
        p.last_reply.map_or(cap, |t| now.saturating_sub(t).min(cap)) as f64
    }

    /// The largest penalty over all peers, those never heard from included (their penalty is
    /// the cap), and at least 1 ms, as absim, so that peers all heard from within the last
    /// millisecond score alike.
    fn max_penalty(&self, now: Nanos) -> f64 {
        let unheard = (self.peers.len() < self.servers).then_some(self.update_interval as f64);
        let heard = self.peers.values().map(|p| self.penalty(p, now));
        heard.chain(unheard).fold(crate::time::MS as f64, f64::max)
    }

    fn update_scores(&mut self, now: Nanos) {
        for (_, p) in self.peers.iter_mut().filter(|(_, p)| p.dirty) {
            p.stat = match self.cfg.sampling {
                Sampling::Reservoir => p.reservoir.median(),
                Sampling::Ewma => p.ewma.get(),
            };
            p.dirty = false;
        }
        let max = self.peers.values().filter_map(|p| p.stat).fold(0.0f64, f64::max);
        let max_queue = self.peers.values().filter_map(|p| p.queue_len).max().unwrap_or(0);
        let max_penalty = self.cfg.time_penalty.then(|| self.max_penalty(now));
        let scores: Vec<Option<f64>> = self
            .peers
            .values()
            .map(|p| {
                p.stat.map(|v| {
                    let mut score = if max > 0.0 { v / max } else { 0.0 };
                    if self.cfg.severity && max_queue > 0 {
                        score += f64::from(p.queue_len.unwrap_or(0)) / f64::from(max_queue);
                    }
                    if let Some(max_penalty) = max_penalty {
                        score += self.penalty(p, now) / max_penalty;
                    }
                    score
                })
            })
            .collect();
        for ((_, p), score) in self.peers.iter_mut().zip(scores) {
            p.score = score;
        }
    }

    /// The score used for ordering: peers without one count as 0, as in Cassandra.
    fn order_score(&self, node: NodeId) -> f64 {
        self.score(node).unwrap_or(0.0)
    }
}

impl ReplicaSelector for DynamicSnitch {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        self.tick(now);
        let Some(&head) = replicas.first() else {
            return Decision::Wait { retry_at: None };
        };
        let mut sorted = std::mem::take(&mut self.sorted);
        sorted.clear();
        sorted.extend(replicas.iter().map(|&r| self.order_score(r)));
        sorted.sort_by(f64::total_cmp);
        let factor = 1.0 + self.cfg.badness_threshold.max(0.0);
        let bad = replicas.iter().zip(&sorted).any(|(&r, &s)| self.order_score(r) > s * factor);
        self.sorted = sorted;
        if !bad {
            return Decision::to(head);
        }
        // Stable sort by score: the first replica with the lowest score.
        let mut best = head;
        for &r in replicas {
            if self.order_score(r) < self.order_score(best) {
                best = r;
            }
        }
        Decision::to(best)
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        self.tick(now);
        let latency = (now.saturating_sub(resp.sent_at) / US) as f64;
        let (alpha, size) = (self.cfg.reservoir_alpha, self.cfg.reservoir_size);
        let u = self.rng.unit();
        let fresh_queue = resp.fresh.then_some(resp.feedback.queue_len);
        let p = self.peer_mut(resp.replica);
        // Both summaries are cheap to keep; only the configured one is read.
        p.ewma.update(latency);
        p.reservoir.add(now, latency, alpha, size, u);
        p.dirty = true;
        p.last_reply = Some(now);
        if let Some(q) = fresh_queue {
            p.queue_len = Some(q);
        }
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
        assert_eq!(s.peers.get(0).unwrap().reservoir.samples.len(), 100);
        assert_eq!(s.peers.get(0).unwrap().reservoir.median(), Some(2_000.0));
        head(&mut s, 11 * SEC + 100 * MS);
        assert_eq!(s.score(0), Some(0.5));
        assert_eq!(s.score(1), Some(1.0));
    }

    #[test]
    fn reservoir_survives_long_runs_without_overflow() {
        let mut r = Reservoir::default();
        let mut rng = Rng::new(1, 2);
        for i in 0..10_000u64 {
            r.add(i * 50 * MS, (i % 7) as f64, 0.75, 100, rng.unit());
        }
        assert!(r.samples.iter().all(|s| s.0.is_finite() && s.2.is_finite()));
        let m = r.median().expect("samples");
        assert!((0.0..7.0).contains(&m));
    }

    /// The median over the kept order is the one a stable sort by latency gives, bit for bit,
    /// with many equal latencies (whole microseconds) and replacements.
    #[test]
    fn kept_order_median_is_the_sorted_median() {
        let sorted_median = |r: &Reservoir| {
            let mut v: Vec<(f64, f64)> = r.samples.iter().map(|s| (s.1, s.2)).collect();
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
        };
        let mut r = Reservoir::default();
        let mut rng = Rng::new(5, 6);
        assert_eq!(r.median(), None);
        for i in 0..20_000u64 {
            r.add(i * 7 * MS, rng.below(40) as f64, 0.75, 60, rng.unit());
            assert_eq!(r.median().map(f64::to_bits), sorted_median(&r).map(f64::to_bits), "after {i}");
            let values: Vec<_> = r.by_value.iter().map(|&j| (r.samples[j as usize].1, j)).collect();
            assert!(values.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)));
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
