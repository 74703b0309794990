//! A debug build's watch over every local policy, built in or plugin (TigerBeetle's habit:
//! assert the invariants of a state machine where they are cheap to state). [`super::build`]
//! wraps each queue in [`Audited`] when debug assertions are on, so every engine's debug tests
//! check the policy under their own traffic; a release build runs the policy bare.
//!
//! Invariants, whatever the ordering rule: a queue holds exactly what was pushed and not yet
//! popped; it pops something whenever it holds something and nothing when it is empty; what it
//! pops was pushed, with the metadata it was pushed with; a job is released before it is
//! enqueued, enqueued no later than the push, and has some work.

use super::LocalQueue;
use crate::model::{JobMeta, RequestId};
use crate::time::Nanos;
use rustc_hash::FxHashMap;

/// A local policy and the jobs it was given and has not handed back.
pub struct Audited<T> {
    inner: Box<dyn LocalQueue<T>>,
    /// The metadata of the waiting jobs by request id (an id may wait more than once: a
    /// policy sees whatever its engine pushes).
    waiting: FxHashMap<RequestId, Vec<JobMeta>>,
    len: usize,
}

impl<T> Audited<T> {
    /// Watch `inner`, which must be empty.
    pub fn new(inner: Box<dyn LocalQueue<T>>) -> Self {
        assert!(inner.is_empty(), "a local policy starts empty");
        Audited { inner, waiting: FxHashMap::default(), len: 0 }
    }
}

impl<T: Send> LocalQueue<T> for Audited<T> {
    fn push(&mut self, now: Nanos, meta: JobMeta, payload: T) {
        debug_assert!(meta.release <= meta.enqueued, "a job is released before it is enqueued: {meta:?}");
        debug_assert!(meta.enqueued <= now, "a job is enqueued no later than it is pushed at {now}: {meta:?}");
        debug_assert!(meta.service > 0, "a job has some work: {meta:?}");
        self.waiting.entry(meta.id).or_default().push(meta);
        self.len += 1;
        self.inner.push(now, meta, payload);
        debug_assert_eq!(self.inner.len(), self.len, "the queue holds what was pushed and not popped");
    }

    fn pop(&mut self, now: Nanos) -> Option<(JobMeta, T)> {
        let popped = self.inner.pop(now);
        match &popped {
            None => debug_assert_eq!(self.len, 0, "the queue pops nothing while {} jobs wait", self.len),
            Some((meta, _)) => {
                let same =
                    self.waiting.get_mut(&meta.id).and_then(|w| Some(w.swap_remove(w.iter().position(|m| m == meta)?)));
                debug_assert!(same.is_some(), "the queue popped a job it was not given, or changed it: {meta:?}");
                if self.waiting.get(&meta.id).is_some_and(Vec::is_empty) {
                    self.waiting.remove(&meta.id);
                }
                self.len -= 1;
            }
        }
        debug_assert_eq!(self.inner.len(), self.len, "the queue holds what was pushed and not popped");
        popped
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn footprint(&self) -> [*const u8; 2] {
        self.inner.footprint()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::job;
    use super::*;

    #[test]
    fn every_built_in_policy_keeps_the_invariants() {
        for name in super::super::LOCALS {
            let mut q = Audited::new(super::super::build::<u64>(name, &Default::default(), 3).unwrap());
            let mut rng = crate::selector::Rng::new(9, 1);
            for t in 1..2_000u64 {
                if rng.below(3) != 0 {
                    let meta = job(t % 97, t.saturating_sub(rng.below(50) as u64), 1 + rng.below(1_000) as u64);
                    q.push(t, meta, t);
                } else {
                    q.pop(t);
                }
            }
            while q.pop(5_000).is_some() {}
            assert!(q.is_empty() && q.waiting.is_empty(), "{name}");
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the queue holds what was pushed and not popped")]
    fn a_policy_that_loses_a_job_is_caught() {
        /// A broken policy: it forgets every second job.
        struct Leaky(Vec<(JobMeta, ())>, bool);

        impl LocalQueue<()> for Leaky {
            fn push(&mut self, _now: Nanos, meta: JobMeta, payload: ()) {
                self.1 = !self.1;
                if self.1 {
                    self.0.push((meta, payload));
                }
            }
            fn pop(&mut self, _now: Nanos) -> Option<(JobMeta, ())> {
                self.0.pop()
            }
            fn len(&self) -> usize {
                self.0.len()
            }
        }

        let mut q = Audited::new(Box::new(Leaky(Vec::new(), false)));
        q.push(1, job(1, 0, 5), ());
        q.push(2, job(2, 0, 5), ());
    }
}
