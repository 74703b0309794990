//! `fair-share`: share-based fair queueing across request classes, the scheduling ScyllaDB runs
//! between its scheduling groups and service levels (Seastar's fair queue), as a local policy.
//!
//! Each class has `shares`; a job's cost is its service estimate (`meta.service`). The replica
//! runs, among the classes with waiting jobs, the head of the class with the least virtual time,
//! and that class's virtual time then grows by `cost / shares`: over a busy period each class
//! gets work in proportion to its shares, whatever the size of its jobs. A class that was idle
//! starts again no lower than the virtual time of the job served last, so idleness banks no
//! credit (start-time fair queueing). Within a class, first come,
//! first served; ties between classes go to the lower class.
//!
//! **Choice:** a request's class is the size class the coordinator tags it with
//! (`meta.tags.size_class`, clamped to the configured classes), so by default small and large
//! values share the replica equally by work: a burst of large reads cannot hold the small ones
//! behind it for more than its share. ScyllaDB's classes are user-defined workloads; Tailor's
//! requests carry no workload tag yet.

use super::{fifo, LocalQueue};
use crate::model::JobMeta;
use crate::time::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Most classes a tag can address (`size_class` is a `u8`).
pub const MAX_CLASSES: usize = 256;

/// Tunables of `fair-share`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FairShareConfig {
    /// Shares of each class, by size class (ScyllaDB's default for a service level: 1000).
    pub shares: Vec<u32>,
}

impl Default for FairShareConfig {
    fn default() -> Self {
        FairShareConfig { shares: vec![1000, 1000] }
    }
}

impl FairShareConfig {
    /// Check the configuration; [`FairShare::new`] repairs what this reports.
    pub fn validate(&self) -> Result<(), String> {
        if self.shares.is_empty() || self.shares.len() > MAX_CLASSES {
            return Err(format!("fair_share.shares must list 1 to {MAX_CLASSES} classes, got {}", self.shares.len()));
        }
        match self.shares.iter().position(|&s| s == 0) {
            Some(i) => Err(format!("fair_share.shares[{i}] must be > 0")),
            None => Ok(()),
        }
    }
}

/// One class: its waiting jobs and its virtual time.
struct Class<T> {
    jobs: VecDeque<(JobMeta, T)>,
    shares: f64,
    virtual_time: f64,
}

/// A share-based fair queue.
pub struct FairShare<T> {
    classes: Vec<Class<T>>,
    /// Virtual time of the job served last: where an idle class starts again.
    served: f64,
    len: usize,
}

impl<T> FairShare<T> {
    /// An empty queue with `cfg`'s classes (no class, or a class of 0 shares, is repaired to
    /// 1000 shares: engines validate configurations first).
    pub fn new(cfg: &FairShareConfig) -> Self {
        let shares = if cfg.shares.is_empty() { &[1000][..] } else { &cfg.shares[..cfg.shares.len().min(MAX_CLASSES)] };
        let classes =
            shares.iter().map(|&s| Class { jobs: VecDeque::new(), shares: f64::from(s.max(1)), virtual_time: 0.0 }).collect();
        FairShare { classes, served: 0.0, len: 0 }
    }

}

impl<T: Send> LocalQueue<T> for FairShare<T> {
    fn push(&mut self, _now: Nanos, meta: JobMeta, payload: T) {
        let at = (meta.tags.size_class as usize).min(self.classes.len() - 1);
        let class = &mut self.classes[at];
        if class.jobs.is_empty() {
            class.virtual_time = class.virtual_time.max(self.served);
        }
        fifo::push_back(&mut self.classes[at].jobs, (meta, payload));
        self.len += 1;
        // an idle class restarts no earlier than the last job served
        debug_assert!(self.classes[at].virtual_time >= self.served || self.classes[at].jobs.len() > 1, "class {at} restarts behind");
        debug_assert_eq!(self.len, self.classes.iter().map(|c| c.jobs.len()).sum::<usize>(), "the count is the classes'");
    }

    fn pop(&mut self, _now: Nanos) -> Option<(JobMeta, T)> {
        let (at, _) = self
            .classes
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.jobs.is_empty())
            .min_by(|a, b| a.1.virtual_time.total_cmp(&b.1.virtual_time))?;
        let class = &mut self.classes[at];
        let job = class.jobs.pop_front().expect("a waiting class has a job");
        debug_assert!(class.virtual_time.is_finite() && class.shares > 0.0, "class {at}: {} / {}", class.virtual_time, class.shares);
        // every waiting class is at or past the last job served: the service clock never goes back
        debug_assert!(class.virtual_time >= self.served, "class {at} at {} behind the clock {}", class.virtual_time, self.served);
        self.served = class.virtual_time;
        class.virtual_time += job.0.service as f64 / class.shares;
        debug_assert!(class.virtual_time >= self.served, "virtual time only advances");
        self.len -= 1;
        debug_assert_eq!(self.len, self.classes.iter().map(|c| c.jobs.len()).sum::<usize>(), "the count is the classes'");
        Some(job)
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// `fair-share`: share-based fair queueing across request classes (ScyllaDB's scheduling groups).
pub const REGISTRATION: super::LocalRegistration = super::LocalRegistration {
    name: "fair-share",
    source: "share-based fair queueing across request classes (ScyllaDB scheduling groups)",
};

/// Build a `fair-share` queue.
pub fn build<T: Send + 'static>(cfg: &super::LocalConfig, _seed: u64) -> Box<dyn LocalQueue<T>> {
    Box::new(FairShare::new(&cfg.fair_share))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tags;

    fn job(id: u64, size_class: u8, service: Nanos) -> JobMeta {
        JobMeta { id, release: 0, enqueued: 0, service, size: service, tags: Tags { size_class, ..Tags::default() } }
    }

    /// Work served per class over `pops` pops with both classes kept waiting.
    fn work_shares(cfg: &FairShareConfig, pops: usize) -> [u64; 2] {
        let mut q = FairShare::new(cfg);
        let mut id = 0;
        let mut refill = |q: &mut FairShare<()>, class: u8| {
            id += 1;
            q.push(0, job(id, class, if class == 0 { 1 } else { 10 }), ());
        };
        refill(&mut q, 0);
        refill(&mut q, 1);
        let mut work = [0; 2];
        for _ in 0..pops {
            let (meta, ()) = q.pop(0).unwrap();
            work[meta.tags.size_class as usize] += meta.service;
            refill(&mut q, meta.tags.size_class);
        }
        work
    }

    #[test]
    fn busy_classes_share_work_by_their_shares_whatever_their_job_sizes() {
        let [small, large] = work_shares(&FairShareConfig::default(), 11_000);
        assert!((small as f64 / large as f64 - 1.0).abs() < 0.01, "{small} vs {large}");
        let [small, large] = work_shares(&FairShareConfig { shares: vec![3000, 1000] }, 11_000);
        assert!((small as f64 / large as f64 - 3.0).abs() < 0.03, "{small} vs {large}");
    }

    #[test]
    fn an_idle_class_banks_no_credit_and_fifo_holds_within_a_class() {
        let mut q = FairShare::new(&FairShareConfig::default());
        // class 1 alone for a while: its virtual time runs far ahead
        for i in 0..10 {
            q.push(0, job(i, 1, 10), ());
            q.pop(0);
        }
        // class 0 arrives: it starts from the last served time, not from 0, so it does not get
        // its three jobs in a row (it would, with the credit of its idle time: 100, 101, 103, 102)
        q.push(0, job(100, 0, 10), ());
        q.push(0, job(101, 0, 10), ());
        q.push(0, job(102, 1, 10), ());
        q.push(0, job(103, 0, 10), ());
        let order: Vec<u64> = std::iter::from_fn(|| q.pop(0).map(|j| j.0.id)).collect();
        assert_eq!(order, vec![100, 101, 102, 103]);
    }

    #[test]
    fn bad_configs_are_named_and_repaired() {
        assert!(FairShareConfig::default().validate().is_ok());
        assert!(FairShareConfig { shares: vec![] }.validate().unwrap_err().contains("1 to 256"));
        assert!(FairShareConfig { shares: vec![5, 0] }.validate().unwrap_err().contains("shares[1]"));
        let mut q = FairShare::new(&FairShareConfig { shares: vec![] });
        q.push(0, job(1, 9, 5), ());
        assert_eq!(q.pop(0).map(|j| j.0.id), Some(1));
    }
}
