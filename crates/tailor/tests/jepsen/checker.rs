//! The checker: a history (see `history.rs`) and the value each key ends with, once the faults
//! are healed and the replicas agree, against three properties.
//!
//! Writes are unique values, so a value read names exactly one write. Conflicts are
//! last-writer-wins by version, and a write's version is issued between its invocation and the
//! answer the client got (an error answer too); with no answer (unknown) it may be issued at any
//! time. So write X is *before* write W in real time when X has a known end (acknowledged or
//! failed with an error) and `X.complete < W.invoke`: W's version is then the newer one, and X
//! can never win over W.
//!
//! 1. **No acknowledged write lost**: the final value of a key is a write that exists (acknowledged,
//!    failed or unknown: the last two are indeterminate and may show up or not), and no
//!    acknowledged write (at any level) comes after it. A key that ends absent loses every
//!    acknowledged write to it.
//! 2. **No stale QUORUM read**: a read at QUORUM that was invoked after a write at QUORUM to its
//!    key was acknowledged returns that write or one not before it (not absent either).
//! 3. **Nothing from nowhere**: every value read or left is one a client wrote, and no read
//!    returns a write invoked after the read completed (phantoms; an unsigned peer frame that
//!    got through would show here).
//!
//! Convergence (every replica equal once healed) is measured by the test itself.

use super::history::{Kind, Level, Op, Outcome};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// What the checker found. Each anomaly is one line naming the key, the operations and their
/// times (seconds since the first invocation).
#[derive(Debug, Default)]
pub struct Verdict {
    pub acked: usize,
    pub failed: usize,
    pub unknown: usize,
    pub reads: usize,
    pub quorum_reads_checked: usize,
    pub lost: Vec<String>,
    pub stale: Vec<String>,
    pub phantom: Vec<String>,
    /// Lost writes and stale reads whose two writes are closer in real time than the clock skew
    /// the test injected: last-writer-wins by versions from clocks that far apart may order them
    /// either way (the store promises real-time order only beyond the clocks' offset), so these
    /// are reported, not failed.
    pub within_skew: Vec<String>,
}

impl Verdict {
    pub fn ok(&self) -> bool {
        self.lost.is_empty() && self.stale.is_empty() && self.phantom.is_empty()
    }

    pub fn counts(&self) -> String {
        format!(
            "writes {} acknowledged, {} failed, {} indeterminate (no answer); reads {} answered, {} at QUORUM \
             checked; lost {}, stale {}, phantom {}; within the injected clock skew {}",
            self.acked,
            self.failed,
            self.unknown,
            self.reads,
            self.quorum_reads_checked,
            self.lost.len(),
            self.stale.len(),
            self.phantom.len(),
            self.within_skew.len()
        )
    }

    /// The first anomalies of each kind, for an assertion message.
    pub fn anomalies(&self) -> String {
        let first = |v: &[String]| v.iter().take(5).cloned().collect::<Vec<_>>().join("; ");
        format!(
            "lost: [{}] stale: [{}] phantom: [{}] within the skew: [{}]",
            first(&self.lost),
            first(&self.stale),
            first(&self.phantom),
            first(&self.within_skew)
        )
    }
}

/// When a write's version was issued at the latest: its answer, or never known.
fn known_end(w: &Op) -> Option<Instant> {
    (w.outcome != Outcome::Unknown).then_some(w.complete)
}

/// The acknowledged writes of one key at QUORUM, by completion, each with the one invoked last
/// among those completed so far: a read invoked at `t` must not return a write before
/// `latest_before(t)`.
struct QuorumWrites<'a> {
    by_complete: Vec<(Instant, &'a Op)>,
}

impl<'a> QuorumWrites<'a> {
    fn new(mut writes: Vec<&'a Op>) -> QuorumWrites<'a> {
        writes.sort_by_key(|w| w.complete);
        let mut latest: Option<&Op> = None;
        let by_complete = writes
            .iter()
            .map(|w| {
                let l = latest.filter(|l| l.invoke >= w.invoke).unwrap_or(w);
                latest = Some(l);
                (w.complete, l)
            })
            .collect();
        QuorumWrites { by_complete }
    }

    fn latest_before(&self, t: Instant) -> Option<&'a Op> {
        let n = self.by_complete.partition_point(|(c, _)| *c < t);
        n.checked_sub(1).map(|i| self.by_complete[i].1)
    }
}

/// `skew`: the clock skew the test injected (zero without one), see [`Verdict::within_skew`].
pub fn check(history: &[Op], finals: &BTreeMap<String, Option<String>>, skew: Duration) -> Verdict {
    let Some(t0) = history.iter().map(|o| o.invoke).min() else { return Verdict::default() };
    let at = |t: Instant| (t - t0).as_secs_f64();
    let mut v = Verdict::default();
    let writes: Vec<&Op> = history.iter().filter(|o| o.kind == Kind::Write).collect();
    for w in &writes {
        match w.outcome {
            Outcome::Ok => v.acked += 1,
            Outcome::Fail => v.failed += 1,
            Outcome::Unknown => v.unknown += 1,
        }
    }
    let by_value: HashMap<&str, &Op> = writes.iter().filter_map(|w| w.value.as_deref().map(|val| (val, *w))).collect();
    let mut quorum: HashMap<&str, Vec<&Op>> = HashMap::new();
    let mut acked: HashMap<&str, Vec<&Op>> = HashMap::new();
    for w in writes.iter().filter(|w| w.outcome == Outcome::Ok) {
        acked.entry(&w.key).or_default().push(w);
        if w.level == Level::Quorum {
            quorum.entry(&w.key).or_default().push(w);
        }
    }
    let quorum: HashMap<&str, QuorumWrites> = quorum.into_iter().map(|(k, ws)| (k, QuorumWrites::new(ws))).collect();

    for r in history.iter().filter(|o| o.kind == Kind::Read && o.outcome == Outcome::Ok) {
        v.reads += 1;
        let x = match &r.value {
            Some(val) => match by_value.get(val.as_str()) {
                Some(x) if x.key == r.key && x.invoke <= r.complete => Some(*x),
                _ => {
                    v.phantom.push(format!(
                        "{}: read {val:?} at {:.3} s, which no client wrote before",
                        r.key,
                        at(r.invoke)
                    ));
                    continue;
                }
            },
            None => None,
        };
        if r.level != Level::Quorum {
            continue;
        }
        v.quorum_reads_checked += 1;
        let Some(newest) = quorum.get(r.key.as_str()).and_then(|q| q.latest_before(r.invoke)) else { continue };
        let end = match x {
            None => Some(t0),
            Some(x) => known_end(x).filter(|end| *end < newest.invoke),
        };
        let Some(end) = end else { continue };
        let what = match x {
            None => "nothing".to_string(),
            Some(x) => format!(
                "{:?} (written through node {} at {:.3}-{:.3} s)",
                x.value.as_deref().unwrap_or_default(),
                x.node,
                at(x.invoke),
                at(x.complete)
            ),
        };
        let line = format!(
            "{}: QUORUM read at {:.3}-{:.3} s (client {} through node {}) returned {what}, older than {:?}, written \
             at QUORUM through node {} at {:.3}-{:.3} s",
            r.key,
            at(r.invoke),
            at(r.complete),
            r.client,
            r.node,
            newest.value.as_deref().unwrap_or_default(),
            newest.node,
            at(newest.invoke),
            at(newest.complete)
        );
        if x.is_some() && end + skew >= newest.invoke {
            v.within_skew.push(line);
        } else {
            v.stale.push(line);
        }
    }

    for (key, last) in finals {
        let end = match last {
            None => Some(t0),
            Some(val) => match by_value.get(val.as_str()) {
                Some(x) if &x.key == key => known_end(x),
                _ => {
                    v.phantom.push(format!("{key}: ends with {val:?}, which no client wrote"));
                    continue;
                }
            },
        };
        let Some(end) = end else { continue };
        for w in acked.get(key.as_str()).into_iter().flatten().filter(|w| w.invoke > end || last.is_none()) {
            let within = last.is_some() && w.invoke <= end + skew;
            (if within { &mut v.within_skew } else { &mut v.lost }).push(format!(
                "{key}: {:?} acknowledged at {:.3} s (invoked {:.3} s, through node {}) is lost: the key ends with \
                 {last:?}",
                w.value.as_deref().unwrap_or_default(),
                at(w.complete),
                at(w.invoke),
                w.node
            ));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    struct H {
        t0: Instant,
        ops: Vec<Op>,
    }

    impl H {
        fn new() -> H {
            H { t0: Instant::now(), ops: Vec::new() }
        }
        fn op(&mut self, kind: Kind, level: Level, key: &str, value: Option<&str>, ms: (u64, u64), outcome: Outcome) {
            let t = |ms| self.t0 + Duration::from_millis(ms);
            self.ops.push(Op {
                client: 0,
                node: 0,
                kind,
                level,
                key: key.into(),
                value: value.map(Into::into),
                invoke: t(ms.0),
                complete: t(ms.1),
                outcome,
            });
        }
        fn write(&mut self, key: &str, value: &str, ms: (u64, u64), outcome: Outcome) {
            self.op(Kind::Write, Level::Quorum, key, Some(value), ms, outcome);
        }
        fn read(&mut self, key: &str, value: Option<&str>, ms: (u64, u64)) {
            self.op(Kind::Read, Level::Quorum, key, value, ms, Outcome::Ok);
        }
        fn check(&self, finals: &[(&str, Option<&str>)]) -> Verdict {
            self.check_skewed(finals, Duration::ZERO)
        }
        fn check_skewed(&self, finals: &[(&str, Option<&str>)], skew: Duration) -> Verdict {
            let finals = finals.iter().map(|(k, v)| (k.to_string(), v.map(String::from))).collect();
            check(&self.ops, &finals, skew)
        }
    }

    #[test]
    fn a_clean_history_passes() {
        let mut h = H::new();
        h.write("a", "w1", (0, 10), Outcome::Ok);
        h.read("a", Some("w1"), (11, 12));
        h.write("a", "w2", (20, 30), Outcome::Ok);
        h.read("a", Some("w1"), (25, 26)); // concurrent with w2: either
        h.read("a", Some("w2"), (31, 32));
        h.read("b", None, (1, 2));
        let v = h.check(&[("a", Some("w2")), ("b", None)]);
        assert!(v.ok(), "{}", v.anomalies());
        assert_eq!((v.acked, v.reads, v.quorum_reads_checked), (2, 4, 4));
    }

    #[test]
    fn a_lost_write_is_detected() {
        let mut h = H::new();
        h.write("a", "w1", (0, 10), Outcome::Ok);
        h.write("a", "w2", (20, 30), Outcome::Ok);
        let v = h.check(&[("a", Some("w1"))]);
        assert_eq!(v.lost.len(), 1, "{v:?}");
        assert!(v.lost[0].contains("w2"), "{}", v.lost[0]);
        // absent at the end: both lost
        assert_eq!(h.check(&[("a", None)]).lost.len(), 2);
        // a ONE write is acknowledged too
        h.op(Kind::Write, Level::One, "a", Some("w3"), (40, 41), Outcome::Ok);
        assert_eq!(h.check(&[("a", Some("w2"))]).lost.len(), 1);
    }

    #[test]
    fn a_stale_quorum_read_is_detected() {
        let mut h = H::new();
        h.write("a", "w1", (0, 10), Outcome::Ok);
        h.write("a", "w2", (20, 30), Outcome::Ok);
        h.read("a", Some("w1"), (40, 41));
        h.read("a", None, (42, 43));
        let v = h.check(&[("a", Some("w2"))]);
        assert_eq!(v.stale.len(), 2, "{v:?}");
        // at ONE the same reads are allowed
        let mut one = H::new();
        one.write("a", "w1", (0, 10), Outcome::Ok);
        one.write("a", "w2", (20, 30), Outcome::Ok);
        one.op(Kind::Read, Level::One, "a", Some("w1"), (40, 41), Outcome::Ok);
        assert!(one.check(&[("a", Some("w2"))]).ok());
    }

    #[test]
    fn an_indeterminate_write_may_or_may_not_appear() {
        let mut h = H::new();
        h.write("a", "w1", (0, 10), Outcome::Ok);
        h.write("a", "u", (12, 3_000), Outcome::Unknown);
        h.write("a", "w2", (20, 30), Outcome::Ok);
        // the unknown write may have been applied after w2 (a frozen coordinator, say)
        h.read("a", Some("u"), (40, 41));
        assert!(h.check(&[("a", Some("u"))]).ok());
        assert!(h.check(&[("a", Some("w2"))]).ok());
        // a failed write (an error answer) has its version before the answer
        let mut f = H::new();
        f.write("a", "f", (0, 5), Outcome::Fail);
        assert!(f.check(&[("a", Some("f"))]).ok());
        assert!(f.check(&[("a", None)]).ok());
        f.write("a", "w2", (10, 20), Outcome::Ok);
        let v = f.check(&[("a", Some("f"))]);
        assert_eq!(v.lost.len(), 1, "a write failed before w2 began cannot win over it");
        f.read("a", Some("f"), (30, 31));
        assert_eq!(f.check(&[("a", Some("w2"))]).stale.len(), 1);
        // ... but one failed concurrently with w2 can
        let mut c = H::new();
        c.write("a", "f", (0, 15), Outcome::Fail);
        c.write("a", "w2", (10, 20), Outcome::Ok);
        c.read("a", Some("f"), (30, 31));
        assert!(c.check(&[("a", Some("f"))]).ok());
    }

    #[test]
    fn values_from_nowhere_are_detected() {
        let mut h = H::new();
        h.write("a", "w1", (0, 10), Outcome::Ok);
        h.read("a", Some("forged"), (20, 21));
        h.read("b", Some("w1"), (22, 23)); // another key's value
        h.write("a", "late", (50, 60), Outcome::Ok);
        h.read("a", Some("late"), (30, 31)); // written after the read completed
        let v = h.check(&[("a", Some("forged"))]);
        assert_eq!(v.phantom.len(), 4, "{v:?}");
    }

    #[test]
    fn anomalies_within_the_injected_skew_are_reported_apart() {
        let mut h = H::new();
        h.write("a", "w1", (0, 10), Outcome::Ok);
        h.write("a", "w2", (20, 30), Outcome::Ok); // 10 ms after w1: a clock 200 ms off may order them either way
        h.read("a", Some("w1"), (40, 41));
        let v = h.check_skewed(&[("a", Some("w1"))], Duration::from_millis(200));
        assert!(v.ok(), "{}", v.anomalies());
        assert_eq!(v.within_skew.len(), 2, "{v:?}");
        let v = h.check_skewed(&[("a", Some("w1"))], Duration::from_millis(5));
        assert_eq!((v.lost.len(), v.stale.len(), v.within_skew.len()), (1, 1, 0));
        // absent is older than every write, whatever the skew
        h.read("a", None, (50, 51));
        assert_eq!(h.check_skewed(&[("a", Some("w2"))], Duration::from_secs(1)).stale.len(), 1);
    }
}
