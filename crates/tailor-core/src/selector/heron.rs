//! `heron`: Héron (Jaiman et al., SRDS 2018), replica selection that keeps small requests from
//! queueing behind large ones (docs/strategies.md, Replica selectors).
//!
//! Scoring is C3's product `q_bar * (1/mu_bar)` without rate control: per-server EWMAs of the
//! piggybacked queue length and service time (a server with no feedback yet scores 0, so it is
//! tried first). `scoring = "c3"` ranks with C3's full cubic score instead: with many
//! coordinators the bare product herds them onto the same replica between feedbacks, and in the
//! simulator only the full score reproduces Héron's published edge over C3 (the `heron` preset
//! uses it). Each replica is *busy* or *available*:
//! - busy while this coordinator has an outstanding large request there (marked in `on_sent` when
//!   `hint.large`, cleared by the response to that request, recognised by `Response::large`);
//! - busy when the newest fresh piggybacked `Feedback::busy` from it says so.
//!
//! A large request goes to the best-scored available replica; if none is available it waits at
//! the coordinator (`Decision::Wait`), and the engine offers it again on the next response. A
//! small request goes to the first available replica in score order or, if every replica is
//! busy, to the best-scored one (the project's choice, docs/strategies.md). Ties are broken at random. Large
//! requests carry `size_class = 1`, small ones 0.
//!
//! **Choice (liveness guard):** a piggybacked busy status expires `busy_expiry_ms` after it was
//! received. Without it, a replica reported busy would keep that status at this coordinator until
//! it next hears from it, which may be never once the coordinator routes around it (and a large
//! request blocked only by such statuses would wait for a response that never comes). When a large
//! request waits and some replica is busy only by piggyback, `retry_at` is set to the earliest
//! such expiry. Setting `busy_expiry_ms = 0` keeps statuses until the next feedback (the paper's
//! literal rule).

use super::c3_score::{FeedbackWeight, ServerFeedback};
use super::{argmin_random_ties, Decision, Reach, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::{Feedback, Response};
use crate::model::{NodeId, RequestView, Tags};
use crate::node_map::NodeMap;
use crate::time::{from_ms, Nanos};
use serde::{Deserialize, Serialize};
use super::registry::{Fact, Needs, Registration, tunable};

/// Tunables of `heron`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HeronConfig {
    /// Weight of the newest sample in the queue-length and service-time EWMAs (0.9, as C3's absim).
    pub ewma_weight: f64,
    /// How long a piggybacked "busy" status holds after it was received, in ms (100; 0 = until
    /// the next feedback from that replica).
    pub busy_expiry_ms: f64,
    /// How replicas are ranked: "product" (`q_bar * service_bar`, docs/strategies.md) or "c3" (C3's
    /// full cubic score with concurrency compensation, `w` = number of coordinators; Héron's
    /// Cassandra implementation extends C3's scoring code).
    pub scoring: HeronScoring,
}

/// Replica ranking used by Héron.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HeronScoring {
    /// `q_bar * service_bar`.
    #[default]
    Product,
    /// `(R - 1/mu) + (1 + os*w + q_bar)^3 / mu`.
    C3,
}

impl HeronConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), super::c3::InvalidConfig> {
        use super::c3::check;
        check("ewma_weight", self.ewma_weight, "in (0, 1]", |v| v > 0.0 && v <= 1.0)?;
        check("busy_expiry_ms", self.busy_expiry_ms, ">= 0", |v| v >= 0.0)
    }
}

impl Default for HeronConfig {
    fn default() -> Self {
        HeronConfig { ewma_weight: 0.9, busy_expiry_ms: 100.0, scoring: HeronScoring::Product }
    }
}

/// What this coordinator knows about one server.
#[derive(Clone, Debug)]
struct ServerView {
    /// Large requests this coordinator has outstanding at the server.
    local_large: u32,
    /// When the newest fresh feedback saying "busy" arrived (None once a fresh one says available).
    remote_busy_since: Option<Nanos>,
    /// C3's per-server state: the "c3" scoring reads all of it, the "product" scoring its
    /// EWMAs of the piggybacked queue length and service time (the same fresh samples and
    /// weight Héron's own averages took, so they are kept once).
    c3: ServerFeedback,
}

const _: () = assert!(size_of::<ServerView>() <= 64, "one per server and coordinator: kept to a cache line");

/// `heron` selector: C3-scored, size-aware, blocking large requests on busy replicas.
pub struct Heron {
    /// What this coordinator knows per server it has dealt with (others read as `blank`).
    servers: NodeMap<ServerView>,
    blank: ServerView,
    /// EWMA weight of the C3 feedback averages.
    ewma: FeedbackWeight,
    busy_expiry: Nanos,
    scoring: HeronScoring,
    coordinators: f64,
    rng: Rng,
}

impl Heron {
    /// Build for one coordinator.
    pub fn new(cfg: &HeronConfig, env: &SelectorEnv) -> Self {
        let w = if (0.0..=1.0).contains(&cfg.ewma_weight) { cfg.ewma_weight } else { 0.9 };
        let blank = ServerView { local_large: 0, remote_busy_since: None, c3: ServerFeedback::default() };
        Heron {
            servers: NodeMap::new(),
            blank,
            ewma: FeedbackWeight::new(w),
            busy_expiry: from_ms(cfg.busy_expiry_ms),
            scoring: cfg.scoring,
            coordinators: env.coordinators.max(1) as f64,
            rng: Rng::new(env.seed, 0x0048_4552_4f4e + env.coordinator as u64),
        }
    }

    fn view(&self, node: NodeId) -> &ServerView {
        self.servers.get(node).unwrap_or(&self.blank)
    }

    fn view_mut(&mut self, node: NodeId) -> &mut ServerView {
        let blank = &self.blank;
        self.servers.get_or_insert_with(node, || blank.clone())
    }

    /// The replica's score (ns; lower is better; 0 before any feedback): `q_bar * service_bar`
    /// with `scoring = "product"`, C3's full score with `scoring = "c3"`.
    pub fn score(&self, node: NodeId) -> f64 {
        let v = self.view(node);
        let score = match self.scoring {
            HeronScoring::Product => v.c3.queue().unwrap_or(0.0) * v.c3.service().unwrap_or(0.0),
            HeronScoring::C3 => v.c3.c3_score(self.coordinators, 3.0),
        };
        debug_assert!(score.is_finite() && score >= 0.0, "a score is a time: {score} for {node:?}");
        score
    }

    /// When a piggybacked busy status of `node` stops counting, if it is busy only by piggyback.
    fn remote_expiry(&self, node: NodeId) -> Option<Nanos> {
        let since = self.view(node).remote_busy_since?;
        (self.busy_expiry > 0).then(|| since.saturating_add(self.busy_expiry))
    }

    /// Whether `node` is busy (executing a large request) as far as this coordinator knows at `now`.
    pub fn is_busy(&self, now: Nanos, node: NodeId) -> bool {
        let v = self.view(node);
        v.local_large > 0 || (v.remote_busy_since.is_some() && self.remote_expiry(node).is_none_or(|t| now < t))
    }
}

impl ReplicaSelector for Heron {
    fn select(&mut self, now: Nanos, req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let large = req.hint.large;
        let tags = Tags { size_class: u8::from(large), ..Tags::default() };
        let any_available = replicas.iter().any(|&r| !self.is_busy(now, r));
        let this = &*self;
        let mut rng = self.rng.clone();
        let pick = if any_available {
            argmin_random_ties(
                replicas,
                &mut rng,
                |&r| if this.is_busy(now, r) { f64::INFINITY } else { this.score(r) },
            )
        } else if large {
            // Only replicas busy by piggyback alone will free without a response to us.
            let retry_at = replicas
                .iter()
                .filter(|&&r| self.view(r).local_large == 0)
                .filter_map(|&r| self.remote_expiry(r))
                .min();
            // every replica is busy, so a piggybacked busy status still counts: it expires later
            debug_assert!(retry_at.is_none_or(|t| t > now), "retry {retry_at:?} not after {now}");
            return Decision::Wait { retry_at };
        } else {
            argmin_random_ties(replicas, &mut rng, |&r| this.score(r))
        };
        self.rng = rng;
        debug_assert!(
            !any_available || pick.is_none_or(|i| !self.is_busy(now, replicas[i])),
            "a busy replica is never picked while one is available"
        );
        match pick {
            Some(i) => Decision::Send { replica: replicas[i], tags },
            // An empty replica set: nothing can serve it now; the engine retries on the next response.
            None => Decision::Wait { retry_at: None },
        }
    }

    fn footprint(&self, servers: &[NodeId], reach: Reach, out: &mut dyn FnMut(*const u8)) -> bool {
        self.servers.footprint(servers, reach, out);
        true
    }

    fn on_sent(&mut self, _now: Nanos, req: &RequestView, replica: NodeId) {
        let v = self.view_mut(replica);
        v.c3.sent();
        if req.hint.large {
            v.local_large += 1;
        }
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        let ewma = self.ewma;
        let v = self.view_mut(resp.replica);
        v.c3.respond(now, resp, ewma);
        if resp.large {
            v.local_large = v.local_large.saturating_sub(1);
        }
        if resp.fresh {
            v.remote_busy_since = resp.feedback.busy.then_some(now);
        }
    }

    /// Héron's replicas piggyback their status on every message: a write ack or heartbeat
    /// reply updates the busy status (the score's EWMAs learn from responses only).
    fn on_facts(&mut self, now: Nanos, facts: &Feedback) {
        if facts.busy {
            self.view_mut(facts.from).remote_busy_since = Some(now);
        } else if let Some(v) = self.servers.get_mut(facts.from) {
            // a server without state already reads as available: none is made for it
            v.remote_busy_since = None;
        }
    }
}


/// `heron`: Héron (ICDCS 2018).
pub const REGISTRATION: Registration = Registration {
    name: "heron",
    source: "Héron (ICDCS 2018)",
    needs: Needs { facts: &[Fact::Busy, Fact::QueueLen, Fact::ServiceTime], size_oracle: true, ..Needs::NOTHING },
    build: |cfg, env| Box::new(Heron::new(&cfg.heron, env)),
    validate: |cfg| cfg.heron.validate().map_err(|e| tunable("heron", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;
    use crate::time::MS;

    const SMALL: SizeHint = SizeHint { bytes: Some(1024), service: None, large: false };
    const LARGE: SizeHint = SizeHint { bytes: Some(512 << 10), service: None, large: true };

    fn fb(queue_len: u32, busy: bool) -> Feedback {
        Feedback { queue_len, service_time: MS, busy, ..Feedback::default() }
    }

    /// A Héron selector where replica 0 scores best, then 1, then 2.
    fn scored() -> Heron {
        let mut s = Heron::new(&HeronConfig::default(), &env(5));
        s.on_response(1, &response(90, 0, 0, false, fb(1, false)));
        s.on_response(1, &response(91, 1, 0, false, fb(2, false)));
        s.on_response(1, &response(92, 2, 0, false, fb(5, false)));
        s
    }

    fn send(s: &mut Heron, now: Nanos, req: &RequestView, replicas: &[NodeId]) -> Decision {
        let d = s.select(now, req, replicas, &Blind);
        if let Decision::Send { replica, .. } = d {
            s.on_sent(now, req, replica);
        }
        d
    }

    #[test]
    fn unknown_servers_score_zero_and_ewma_weights_new_samples() {
        let mut s = Heron::new(&HeronConfig::default(), &env(5));
        assert_eq!(s.score(3), 0.0);
        s.on_response(1, &response(1, 3, 0, false, Feedback { queue_len: 10, service_time: 100, ..fb(0, false) }));
        s.on_response(2, &response(2, 3, 0, false, Feedback { queue_len: 20, service_time: 200, ..fb(0, false) }));
        assert!((s.score(3) - 19.0 * 190.0).abs() < 1e-6);
    }

    #[test]
    fn small_request_goes_past_a_busy_replica() {
        let mut s = scored();
        let d = send(&mut s, 2, &read(1, 2, LARGE), &[0, 1, 2]);
        assert_eq!(d, Decision::Send { replica: 0, tags: Tags { size_class: 1, ..Tags::default() } });
        assert!(s.is_busy(2, 0));
        // 0 still has the best score, but it is busy with our large request: the small one goes to 1.
        let d = send(&mut s, 3, &read(2, 3, SMALL), &[0, 1, 2]);
        assert_eq!(d, Decision::Send { replica: 1, tags: Tags::default() });
        assert!(!s.is_busy(3, 1), "small requests do not mark replicas busy");
        // The large response frees 0.
        s.on_response(4, &response(1, 0, 2, true, fb(1, false)));
        assert_eq!(replica_of(s.select(5, &read(3, 5, SMALL), &[0, 1, 2], &Blind)), 0);
    }

    #[test]
    fn large_request_waits_until_a_response_frees_a_replica() {
        let mut s = scored();
        assert_eq!(replica_of(send(&mut s, 2, &read(1, 2, LARGE), &[0, 1, 2])), 0);
        assert_eq!(replica_of(send(&mut s, 2, &read(2, 2, LARGE), &[0, 1, 2])), 1);
        assert_eq!(replica_of(send(&mut s, 2, &read(3, 2, LARGE), &[0, 1, 2])), 2);
        let blocked = read(4, 3, LARGE);
        assert_eq!(s.select(3, &blocked, &[0, 1, 2], &Blind), Decision::Wait { retry_at: None });
        // A small request is not blocked: it goes to the best-scored replica.
        assert_eq!(replica_of(s.select(3, &read(5, 3, SMALL), &[0, 1, 2], &Blind)), 0);
        // A small response from 1 frees nothing.
        s.on_response(4, &response(9, 1, 3, false, fb(2, false)));
        assert_eq!(s.select(4, &blocked, &[0, 1, 2], &Blind), Decision::Wait { retry_at: None });
        // The large response from 1 frees it: the blocked request is sent there.
        s.on_response(5, &response(2, 1, 2, true, fb(2, false)));
        let d = send(&mut s, 5, &blocked, &[0, 1, 2]);
        assert_eq!(d, Decision::Send { replica: 1, tags: Tags { size_class: 1, ..Tags::default() } });
        assert_eq!(s.select(6, &read(6, 6, LARGE), &[0, 1, 2], &Blind), Decision::Wait { retry_at: None });
    }

    #[test]
    fn busy_status_from_piggyback() {
        let mut s = scored();
        // Another coordinator's large request runs on 0: its feedback says busy.
        s.on_response(10, &response(7, 0, 5, false, fb(1, true)));
        assert_eq!(replica_of(s.select(11, &read(1, 11, SMALL), &[0, 1, 2], &Blind)), 1);
        // Stale feedback saying "available" is ignored.
        let mut stale = response(8, 0, 5, false, fb(1, false));
        stale.fresh = false;
        s.on_response(12, &stale);
        assert_eq!(replica_of(s.select(12, &read(2, 12, LARGE), &[0, 1, 2], &Blind)), 1);
        // Fresh feedback saying "available" clears it.
        s.on_response(13, &response(9, 0, 5, false, fb(1, false)));
        assert_eq!(replica_of(s.select(13, &read(3, 13, SMALL), &[0, 1, 2], &Blind)), 0);
    }

    #[test]
    fn piggybacked_busy_expires_and_sets_the_retry_time() {
        let mut s = scored();
        for (id, r) in [(1, 0), (2, 1)] {
            s.on_response(10 * MS, &response(id, r, 0, false, fb(1, true)));
        }
        assert_eq!(replica_of(send(&mut s, 10 * MS, &read(3, 10 * MS, LARGE), &[0, 1, 2])), 2);
        // 0 and 1 are busy by piggyback (expire at 110 ms), 2 by our own large request.
        let d = s.select(20 * MS, &read(4, 20 * MS, LARGE), &[0, 1, 2], &Blind);
        assert_eq!(d, Decision::Wait { retry_at: Some(110 * MS) });
        assert_eq!(replica_of(s.select(110 * MS, &read(4, 110 * MS, LARGE), &[0, 1, 2], &Blind)), 0);
        // With expiry disabled, the status holds until the next feedback.
        let mut s = Heron::new(&HeronConfig { busy_expiry_ms: 0.0, ..HeronConfig::default() }, &env(3));
        s.on_response(0, &response(1, 0, 0, false, fb(1, true)));
        assert!(s.is_busy(1_000 * MS, 0));
        assert_eq!(s.select(1, &read(2, 1, LARGE), &[0], &Blind), Decision::Wait { retry_at: None });
    }

    #[test]
    fn config_defaults_and_unknown_fields() {
        let cfg: HeronConfig = serde_json::from_str("{}").expect("empty config");
        assert_eq!(cfg, HeronConfig { ewma_weight: 0.9, busy_expiry_ms: 100.0, scoring: HeronScoring::Product });
        assert!(serde_json::from_str::<HeronConfig>(r#"{"nope": 1}"#).is_err());
    }
}
