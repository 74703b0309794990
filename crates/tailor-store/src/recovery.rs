//! A node back from a crash is *recovering* until it has caught up, and is not read at ONE
//! meanwhile (issue 36, item 8; beyond Cassandra, which reads a restarted replica at ONE at
//! once and answers what it missed as absent until hints or repair reach it).
//!
//! A node of a cluster (`members > 1`) starts recovering. It leaves when every peer has
//! answered a heartbeat saying it holds no hint for this node (each `Pong` carries the
//! answering node's pending hints for the pinging one: `internode/message.rs`), or when
//! `recovery_max_s` passed since it started (0: a node never recovers), whichever comes first:
//! a peer that is down, or holds hints it cannot deliver, holds it back no longer than that.
//! A peer that said "none" once is not asked again: its hints that existed when this node
//! started are replayed, and what it hints later (a copy that failed since) is what any running
//! node may miss for a moment. Entering and leaving are logged (why, and after how long).
//!
//! Every `Pong` also carries the answering node's [`Recovery::level`]: 0 caught up, 1
//! recovering (only peers that are down have not said "none"), 2 recovering and maybe *behind*
//! (a peer said it holds hints for it, or a peer that is up has not said "none" yet: a node
//! just started assumes the worst). The level is computed when asked, from who is up now: a
//! peer not heard yet may hold hints, so hearing "none" from one peer must not lower the level
//! while another, up, is still unheard (seen in CI: 1 of 2,000 reads nil in that window). A
//! peer not heard from since this node started counts as 1. Each [`crate::peer::Peer`] keeps it, and coordinators hand a read at ONE only the
//! key's up replicas of the lowest level (`coordinator.rs`); the node's own coordinator treats
//! its local replica the same. The middle level matters when every node is recovering: a node
//! whose peer died before answering it stays recovering until that peer is back, and the peer,
//! restarted, must still be avoided (seen in the test: 41 of 2,000 reads nil without it). At QUORUM and ALL a recovering replica takes
//! part (the newest version wins, and it is read-repaired), and writes reach it as ever.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tailor_core::model::NodeId;

/// Why a node left recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caught {
    /// Every peer said it holds no hint for this node.
    Up,
    /// `recovery_max_s` passed first.
    Bound,
}

/// One node's recovery state.
pub struct Recovery {
    /// The fast path: read by every read at ONE this node coordinates and every `Pong` it sends.
    recovering: AtomicBool,
    state: Mutex<State>,
}

struct State {
    me: NodeId,
    started: Instant,
    bound: Duration,
    /// Per member: whether it said it holds no hint for this node (this node's own entry: true).
    clear: Vec<bool>,
    /// Per member: whether it said it holds hints for this node and has not said "none" since.
    waiting: Vec<bool>,
    /// When and why it left.
    left: Option<(Instant, Caught)>,
}

impl State {
    fn check(&self, recovering: bool) {
        debug_assert_eq!(recovering, self.left.is_none(), "the flag follows the state");
        debug_assert!(self.clear.get(self.me as usize).copied().unwrap_or(true), "a node holds no hint for itself");
        debug_assert!(self.left.is_some() || self.clear.iter().any(|c| !c), "recovering while every peer is clear");
    }
}

impl Recovery {
    /// Node `me` of `members`, started at `now`: recovering unless it has no peer or `bound` is
    /// zero (logged).
    pub fn start(me: NodeId, members: usize, bound: Duration, now: Instant) -> Recovery {
        let recovering = members > 1 && !bound.is_zero();
        let clear = (0..members).map(|n| n == me as usize).collect();
        let left = (!recovering).then_some((now, Caught::Up));
        if recovering {
            tracing::info!(
                peers = members - 1,
                recovery_max_s = bound.as_secs_f64(),
                "recovering: not read at ONE until every peer has replayed its hints for this node \
                 (or recovery_max_s passed)"
            );
        }
        let r = Recovery {
            recovering: AtomicBool::new(recovering),
            state: Mutex::new(State { me, started: now, bound, clear, waiting: vec![false; members], left }),
        };
        r.lock().check(recovering);
        r
    }

    /// Never recovering (a single node, tests).
    pub fn off() -> Recovery {
        Recovery::start(0, 1, Duration::ZERO, Instant::now())
    }

    /// Whether this node is recovering now.
    pub fn is_recovering(&self) -> bool {
        self.recovering.load(Ordering::Relaxed)
    }

    /// 0: caught up; 1: recovering; 2: recovering and maybe behind: some peer said it holds
    /// hints for this node, or some peer `up` says is up has not said "none" yet, or none has.
    pub fn level(&self, up: impl Fn(NodeId) -> bool) -> u8 {
        if !self.is_recovering() {
            return 0;
        }
        let s = self.lock();
        if s.left.is_some() {
            return 0;
        }
        let me = s.me as usize;
        let none_clear = !s.clear.iter().enumerate().any(|(n, &c)| c && n != me);
        let unheard_up = s.clear.iter().enumerate().any(|(n, &c)| !c && !s.waiting[n] && up(n as NodeId));
        let behind = s.waiting.iter().any(|&w| w) || unheard_up || none_clear;
        1 + behind as u8
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Peer `from` answered a heartbeat at `now` holding `hints` for this node; `Some` if this
    /// node left recovery with it.
    pub fn heard(&self, from: NodeId, hints: u64, now: Instant) -> Option<Caught> {
        if !self.is_recovering() {
            return None;
        }
        let mut s = self.lock();
        if s.left.is_some() || from as usize >= s.clear.len() || s.clear[from as usize] {
            return None;
        }
        s.clear[from as usize] = hints == 0;
        s.waiting[from as usize] = hints > 0;
        if !s.clear.iter().all(|&c| c) {
            return None;
        }
        Some(self.leave(&mut s, now, Caught::Up))
    }

    /// The time is `now`: `Some` if this node left recovery because its bound passed.
    pub fn tick(&self, now: Instant) -> Option<Caught> {
        if !self.is_recovering() {
            return None;
        }
        let mut s = self.lock();
        if s.left.is_some() || now.duration_since(s.started) < s.bound {
            return None;
        }
        Some(self.leave(&mut s, now, Caught::Bound))
    }

    fn leave(&self, s: &mut State, now: Instant, why: Caught) -> Caught {
        debug_assert!(s.left.is_none(), "left once");
        s.left = Some((now, why));
        self.recovering.store(false, Ordering::Relaxed);
        s.check(false);
        let took_ms = now.duration_since(s.started).as_millis() as u64;
        match why {
            Caught::Up => tracing::info!(took_ms, "recovered: every peer's hints for this node were replayed"),
            Caught::Bound => {
                let waiting: Vec<usize> = s.clear.iter().enumerate().filter(|(_, &c)| !c).map(|(n, _)| n).collect();
                tracing::warn!(
                    took_ms,
                    peers = ?waiting,
                    "recovered: recovery_max_s passed before these peers said they hold no hint for this node \
                     (down, or hints not yet replayed)"
                );
            }
        }
        why
    }

    /// When and why this node left recovery (`None`: still recovering).
    pub fn left(&self) -> Option<(Duration, Caught)> {
        let s = self.lock();
        s.left.map(|(at, why)| (at.duration_since(s.started), why))
    }

    /// Leave recovery once its bound passes, if still recovering then.
    pub async fn bounded(self: Arc<Self>) {
        let at = {
            let s = self.lock();
            s.started + s.bound
        };
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
        self.tick(Instant::now().max(at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_node_of_a_cluster_recovers_until_every_peer_is_clear() {
        let t0 = Instant::now();
        let r = Recovery::start(1, 3, 60 * S, t0);
        assert!(r.is_recovering());
        let all_up = |_| true;
        let two_down = |n| n != 2;
        assert_eq!(r.level(all_up), 2, "no peer said none yet");
        assert_eq!(r.level(two_down), 2, "no peer said none yet, even with one down");
        assert_eq!(r.heard(0, 5, t0 + S), None, "hints waiting");
        assert!(r.is_recovering());
        assert_eq!(r.level(two_down), 2, "behind");
        assert_eq!(r.heard(0, 0, t0 + 2 * S), None, "node 2 not heard yet");
        assert_eq!(r.level(all_up), 2, "node 2 is up and may hold hints for it");
        assert_eq!(r.level(two_down), 1, "only a peer that is down is unheard");
        assert_eq!(r.heard(1, 0, t0 + 2 * S), None, "its own id changes nothing");
        assert_eq!(r.heard(0, 3, t0 + 3 * S), None, "clear once is enough");
        assert!(r.is_recovering());
        assert_eq!(r.heard(2, 0, t0 + 4 * S), Some(Caught::Up));
        assert!(!r.is_recovering());
        assert_eq!(r.level(all_up), 0);
        assert_eq!(r.left(), Some((4 * S, Caught::Up)));
        assert_eq!(r.heard(2, 0, t0 + 5 * S), None, "left once");
        assert_eq!(r.tick(t0 + 100 * S), None, "the bound is moot once left");
        assert_eq!(r.left(), Some((4 * S, Caught::Up)));
    }

    #[test]
    fn the_bound_ends_recovery_when_a_peer_never_says_clear() {
        let t0 = Instant::now();
        let r = Recovery::start(0, 3, 10 * S, t0);
        assert_eq!(r.heard(1, 0, t0 + S), None);
        assert_eq!(r.tick(t0 + 9 * S), None, "before the bound");
        assert!(r.is_recovering());
        assert_eq!(r.tick(t0 + 10 * S), Some(Caught::Bound));
        assert!(!r.is_recovering());
        assert_eq!(r.heard(2, 0, t0 + 11 * S), None, "too late to count");
        assert_eq!(r.left(), Some((10 * S, Caught::Bound)));
    }

    #[test]
    fn a_single_node_or_a_zero_bound_never_recovers() {
        let t0 = Instant::now();
        for r in [Recovery::start(0, 1, 60 * S, t0), Recovery::start(0, 3, Duration::ZERO, t0), Recovery::off()] {
            assert!(!r.is_recovering());
            assert_eq!((r.heard(1, 0, t0), r.tick(t0 + 100 * S)), (None, None));
            assert!(matches!(r.left(), Some((_, Caught::Up))));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_bound_is_kept_by_its_task() {
        let r = Arc::new(Recovery::start(2, 3, 5 * S, Instant::now()));
        let t = tokio::spawn(r.clone().bounded());
        tokio::time::sleep(4 * S).await;
        assert!(r.is_recovering());
        t.await.unwrap();
        assert!(!r.is_recovering());
        assert_eq!(r.left().map(|(_, why)| why), Some(Caught::Bound));
    }
}
