//! `template`: the local policy `tailor new local NAME` copies (renamed) to start a new one. It
//! runs the waiting request released earliest (its release is when it reached its coordinator,
//! so a request that waited there goes first), ties in arrival order. Compiled and tested with
//! the crate (not registered), so the copy starts out compiling and passing its test.
//!
//! The API in brief (`local/mod.rs`, docs/write-a-strategy.md): the replica calls `push` for
//! every request it receives and `pop` whenever a worker frees; `now` is passed in, and the
//! payload `T` is the engine's (an event in the simulator, a reply channel in the store). A
//! scan keeps this readable; `sjf.rs` shows the binary heap a fast policy uses.

use super::LocalQueue;
use crate::model::JobMeta;
use crate::time::Nanos;

/// A `template` queue.
pub struct Template<T> {
    /// Waiting requests in arrival order.
    waiting: Vec<(JobMeta, T)>,
}

impl<T> Template<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Template { waiting: Vec::new() }
    }
}

impl<T> Default for Template<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send> LocalQueue<T> for Template<T> {
    fn push(&mut self, _now: Nanos, meta: JobMeta, payload: T) {
        self.waiting.push((meta, payload));
    }

    fn pop(&mut self, _now: Nanos) -> Option<(JobMeta, T)> {
        // the first of the earliest releases: `min_by_key` keeps the first of equal keys
        let next = (0..self.waiting.len()).min_by_key(|&i| self.waiting[i].0.release)?;
        Some(self.waiting.remove(next))
    }

    fn len(&self) -> usize {
        self.waiting.len()
    }
}

/// `template`: what it is and where it comes from.
pub const REGISTRATION: super::LocalRegistration =
    super::LocalRegistration { name: "template", source: "earliest release first (a template)" };

/// Build a `template` queue.
pub fn build<T: Send + 'static>(_cfg: &super::LocalConfig, _seed: u64) -> Box<dyn LocalQueue<T>> {
    Box::new(Template::new())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::job;
    use super::*;

    #[test]
    fn the_earliest_release_runs_first_ties_in_arrival_order() {
        let mut q = Template::new();
        q.push(10, job(1, 5, 1), "late");
        q.push(10, job(2, 2, 1), "early");
        q.push(10, job(3, 2, 1), "early too");
        let order: Vec<&str> = std::iter::from_fn(|| q.pop(10).map(|(_, p)| p)).collect();
        assert_eq!(order, ["early", "early too", "late"]);
        assert!(q.is_empty());
        let mut built = build::<u8>(&Default::default(), 1);
        built.push(0, job(1, 0, 1), 7);
        assert_eq!((REGISTRATION.name, built.pop(0).map(|(_, p)| p)), ("template", Some(7)));
    }
}
