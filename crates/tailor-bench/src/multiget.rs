//! Multi-get reads in a live run (`workload.multiget`): which reads become an `MGET`, of which
//! keys, and how its reply is judged.
//!
//! The keys are drawn by the simulator's rule (`tailor_core::workload::multiget`: a share of
//! reads, a fixed or drawn count of distinct keys, the read's own key first), each key with its
//! own size. One MGET is one request of the schedule: one coordinator, one connection, its
//! latency from its intended time to the whole reply.

use crate::resp::Reply;
use crate::target::Answer;
use crate::BenchError;
use std::sync::Arc;
use tailor_core::workload::multiget::MultigetDraws;
use tailor_core::workload::popularity::KeySampler;
use tailor_core::workload::sizes::SizeModel;
use tailor_spec::Spec;

/// Most keys the store's `MGET` reads at once (its `MAX_MGET_KEYS`): a multi-get of more keys
/// would only be refused.
pub const MAX_KEYS: u32 = 1024;

/// The `(key, size)` pairs of one multi-get, its first key first.
pub type Keys = Arc<[(u64, u64)]>;

/// Draws the multi-gets of a run.
pub struct Draws {
    draws: MultigetDraws,
    seed: u64,
}

impl Draws {
    /// The multi-gets of `spec` for workload seed `seed`, or none when it has none; an error
    /// names the field when the store cannot serve them.
    pub fn new(spec: &Spec, seed: u64) -> Result<Option<Draws>, BenchError> {
        let m = &spec.workload.multiget;
        if !m.enabled() {
            return Ok(None);
        }
        for (field, n) in [("keys", m.keys), ("keys_max", m.keys_max)] {
            if n > MAX_KEYS {
                return Err(BenchError::Spec(format!(
                    "workload.multiget.{field} = {n} is above the store's MGET limit of {MAX_KEYS} keys"
                )));
            }
        }
        Ok(m.draws(seed).map(|draws| Draws { draws, seed }))
    }

    /// The keys of the multi-get that the read of `first` starts, or `None` when it stays a
    /// single read.
    pub fn draw(&mut self, first: u64, keys: &KeySampler, sizes: &SizeModel) -> Option<Keys> {
        let drawn = self.draws.draw(first, keys)?;
        Some(drawn.into_iter().map(|k| (k, sizes.size_of_key(self.seed, k))).collect())
    }
}

/// How an `MGET` of `n` keys went: every value there, a miss when a key was never loaded, a
/// failure for an error reply or a reply of the wrong shape.
pub fn answer(n: usize, reply: Reply) -> Answer {
    match reply {
        Reply::Array(items) if items.len() == n => {
            if items.iter().all(|v| matches!(v, Reply::Bulk(_))) {
                Answer::Ok
            } else if items.iter().all(|v| matches!(v, Reply::Bulk(_) | Reply::Null)) {
                Answer::Miss
            } else {
                Answer::Failed("MGET reply holds an element that is neither a value nor nil".into())
            }
        }
        Reply::Error(e) => Answer::Failed(e),
        other => Answer::Failed(format!("unexpected MGET reply {other:?} for {n} keys")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use tailor_core::workload::popularity::PopularityConfig;
    use tailor_core::workload::sizes::SizeConfig;

    fn spec(keys: u32, fraction: f64) -> Spec {
        let mut s = Spec::default();
        s.workload.keys = 50;
        s.workload.multiget.keys = keys;
        s.workload.multiget.fraction = fraction;
        s
    }

    #[test]
    fn multigets_read_distinct_keys_first_key_first_for_their_share_of_reads() {
        let s = spec(8, 0.25);
        let sampler = KeySampler::new(&PopularityConfig::Zipf { s: 1.2 }, 50).unwrap();
        let sizes = SizeModel::new(&SizeConfig::Mixture { values: vec![100, 5000], weights: vec![1.0, 1.0] }).unwrap();
        let mut d = Draws::new(&s, 3).unwrap().unwrap();
        let drawn: Vec<Option<Keys>> = (0..4000).map(|i| d.draw(i % 50, &sampler, &sizes)).collect();
        let multi: Vec<&Keys> = drawn.iter().flatten().collect();
        let share = multi.len() as f64 / drawn.len() as f64;
        assert!((share - 0.25).abs() < 0.03, "{share}");
        for (i, m) in drawn.iter().enumerate().filter_map(|(i, m)| Some((i, m.as_ref()?))) {
            assert_eq!(m.len(), 8);
            assert_eq!(m[0].0, i as u64 % 50);
            assert_eq!(m.iter().map(|k| k.0).collect::<HashSet<_>>().len(), 8, "distinct: {m:?}");
            assert!(m.iter().all(|&(k, size)| size == sizes.size_of_key(3, k)));
        }
        let mut again = Draws::new(&s, 3).unwrap().unwrap();
        let same: Vec<Option<Keys>> = (0..4000).map(|i| again.draw(i % 50, &sampler, &sizes)).collect();
        assert_eq!(same, drawn, "a pure function of the seed");
    }

    #[test]
    fn no_multigets_without_keys_and_none_above_the_store_limit() {
        assert!(Draws::new(&spec(0, 1.0), 1).unwrap().is_none());
        let e = Draws::new(&spec(MAX_KEYS + 1, 1.0), 1).err().unwrap().to_string();
        assert!(e.contains("workload.multiget.keys") && e.contains("1024"), "{e}");
    }

    #[test]
    fn replies_are_judged_whole() {
        let v = || Reply::Bulk(b"x".to_vec());
        assert_eq!(answer(2, Reply::Array(vec![v(), v()])), Answer::Ok);
        assert_eq!(answer(2, Reply::Array(vec![v(), Reply::Null])), Answer::Miss);
        assert!(matches!(answer(3, Reply::Array(vec![v(), v()])), Answer::Failed(_)));
        assert!(matches!(answer(1, Reply::Array(vec![Reply::Integer(1)])), Answer::Failed(_)));
        assert_eq!(answer(1, Reply::Error("ERR busy".into())), Answer::Failed("ERR busy".into()));
    }
}
