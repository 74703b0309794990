//! `las`: least-attained-service across flows, as a local policy.
//!
//! Least attained service (LAS), also called foreground–background (FB), serves first whatever
//! has received the least service so far (Rai, Urvoy-Keller, Biersack, "Analysis of LAS
//! scheduling for job size distributions with high variance", SIGMETRICS 2003; Nuyens and
//! Wierman, "The Foreground–Background queue: a survey", Performance Evaluation 2008). Under
//! sizes of high variance it favours the many small consumers and barely delays the few large
//! ones, without knowing any size in advance.
//!
//! Rule: the replica runs the head of the flow (`meta.tags.flow`, the id of the coordinator
//! that sent the request, modulo 2^16) with the least attained service, decayed to now; that flow is then
//! charged the job's service estimate (`meta.service`). Within a flow, first come, first
//! served; ties go to the lower flow id.
//!
//! **Choices:**
//! - The unit is a flow, not a job: a replica runs each request to completion (no preemption),
//!   so job-level LAS would be plain first come, first served; across flows it is the FB rule
//!   the papers analyse, with a request as the quantum.
//! - Attained service decays exponentially with half-life `half_life_ms` (100 ms by default):
//!   undecayed, a flow that ran for minutes would wait behind every newer flow until they had
//!   all caught up with its total, and the replica's ranking would come from a past load that
//!   no longer exists. Decay makes attained service a recent rate, so a new flow's priority
//!   lasts about a half-life and a heavy flow regains its place once it has been quiet.
//!   Exponential rather than a sliding window: one number per flow, updated in O(1) when the
//!   flow is served, and no cliff when an old job leaves the window. 100 ms spans tens of the
//!   published setups' service times (C3's mean is 4 ms) and is short beside a run of seconds.
//! - Service is charged when a job starts, from the replica's estimate: the queue learns no
//!   completion time (as in `fair-share`).
//! - A flow with nothing waiting is forgotten once its decayed service is below 1 ns, so the
//!   memory follows the flows seen in the last few tens of half-lives.

use super::{fifo, LocalQueue};
use crate::model::JobMeta;
use crate::time::{from_ms, Nanos};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Tunables of `las`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LasConfig {
    /// Half-life of a flow's attained service, in ms.
    pub half_life_ms: f64,
}

impl Default for LasConfig {
    fn default() -> Self {
        LasConfig { half_life_ms: 100.0 }
    }
}

impl LasConfig {
    /// Check the configuration; [`Las::new`] repairs what this reports.
    pub fn validate(&self) -> Result<(), String> {
        if self.half_life_ms.is_finite() && self.half_life_ms > 0.0 {
            Ok(())
        } else {
            Err(format!("must be a finite number > 0, got {}", self.half_life_ms))
        }
    }
}

/// One flow: its waiting jobs and its attained service (ns) as of `at`.
struct Flow<T> {
    jobs: VecDeque<(JobMeta, T)>,
    attained: f64,
    at: Nanos,
}

impl<T> Flow<T> {
    /// Attained service decayed to `now`, half-life `half_life` ns.
    fn attained_at(&self, now: Nanos, half_life: f64) -> f64 {
        debug_assert!(half_life >= 1.0, "a half-life of at least 1 ns, not {half_life}");
        let decayed = self.attained * (-(now.saturating_sub(self.at) as f64) / half_life).exp2();
        debug_assert!((0.0..=self.attained).contains(&decayed), "decay only shrinks: {} -> {decayed}", self.attained);
        decayed
    }
}

/// A least-attained-service queue across flows.
pub struct Las<T> {
    flows: BTreeMap<u16, Flow<T>>,
    /// Half-life of attained service, in ns.
    half_life: f64,
    len: usize,
}

impl<T> Las<T> {
    /// An empty queue (a half-life that is not above 0 is repaired to the default: engines
    /// validate configurations first).
    pub fn new(cfg: &LasConfig) -> Self {
        let ms = if cfg.validate().is_ok() { cfg.half_life_ms } else { LasConfig::default().half_life_ms };
        Las { flows: BTreeMap::new(), half_life: from_ms(ms).max(1) as f64, len: 0 }
    }

    /// The waiting flow with the least attained service at `now` (the lower id on ties).
    fn least(&self, now: Nanos) -> Option<u16> {
        let waiting = self.flows.iter().filter(|(_, f)| !f.jobs.is_empty());
        let mut best: Option<(u16, f64)> = None;
        for (&id, f) in waiting {
            let a = f.attained_at(now, self.half_life);
            if best.is_none_or(|(_, b)| a < b) {
                best = Some((id, a));
            }
        }
        debug_assert_eq!(best.is_some(), self.len > 0, "a flow waits exactly when a job does");
        best.map(|(id, _)| id)
    }

    /// Drop idle flows whose service has decayed below 1 ns.
    fn forget_idle(&mut self, now: Nanos) {
        let half_life = self.half_life;
        self.flows.retain(|_, f| !f.jobs.is_empty() || f.attained_at(now, half_life) >= 1.0);
    }
}

impl<T: Send> LocalQueue<T> for Las<T> {
    fn push(&mut self, now: Nanos, meta: JobMeta, payload: T) {
        let flow = self.flows.entry(meta.tags.flow).or_insert_with(|| Flow { jobs: VecDeque::new(), attained: 0.0, at: now });
        fifo::push_back(&mut flow.jobs, (meta, payload));
        self.len += 1;
        debug_assert_eq!(self.len, self.flows.values().map(|f| f.jobs.len()).sum::<usize>(), "the count is the flows'");
    }

    fn pop(&mut self, now: Nanos) -> Option<(JobMeta, T)> {
        let id = self.least(now)?;
        let half_life = self.half_life;
        let flow = self.flows.get_mut(&id).expect("the least flow exists");
        let job = flow.jobs.pop_front().expect("a waiting flow has a job");
        flow.attained = flow.attained_at(now, half_life) + job.0.service as f64;
        flow.at = flow.at.max(now);
        debug_assert!(flow.attained.is_finite() && flow.attained >= 0.0, "flow {id}: {}", flow.attained);
        self.len -= 1;
        self.forget_idle(now);
        debug_assert_eq!(self.len, self.flows.values().map(|f| f.jobs.len()).sum::<usize>(), "the count is the flows'");
        Some(job)
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// `las`: least attained service first, across flows (foreground–background).
pub const REGISTRATION: super::LocalRegistration = super::LocalRegistration {
    name: "las",
    source: "least attained service across flows, decayed (Rai et al. SIGMETRICS 2003; Nuyens & Wierman FB survey)",
};

/// Build a `las` queue.
pub fn build<T: Send + 'static>(cfg: &super::LocalConfig, _seed: u64) -> Box<dyn LocalQueue<T>> {
    Box::new(Las::new(&cfg.las))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tags;
    use crate::time::MS;

    fn job(id: u64, flow: u16, service: Nanos) -> JobMeta {
        JobMeta { id, release: 0, enqueued: 0, service, size: service, tags: Tags { flow, ..Tags::default() } }
    }

    fn drain(q: &mut Las<()>, now: Nanos) -> Vec<u64> {
        std::iter::from_fn(|| q.pop(now).map(|j| j.0.id)).collect()
    }

    #[test]
    fn the_flow_with_the_least_attained_service_goes_first_fifo_within_a_flow() {
        let mut q = Las::new(&LasConfig::default());
        // flow 1 has had 3 ms of service; flow 2, arriving after its next jobs, has had none
        q.push(0, job(1, 1, 3 * MS), ());
        q.pop(0);
        q.push(0, job(2, 1, MS), ());
        q.push(0, job(3, 1, MS), ());
        q.push(0, job(4, 2, MS), ());
        q.push(0, job(5, 2, MS), ());
        q.push(0, job(6, 2, MS), ());
        // flow 2 runs until it passes flow 1's 3 ms (ties to the lower flow), then they alternate
        assert_eq!(drain(&mut q, 0), vec![4, 5, 6, 2, 3]);
        assert!(q.is_empty());
    }

    #[test]
    fn busy_flows_get_equal_service_whatever_their_job_sizes() {
        let mut q = Las::new(&LasConfig::default());
        q.push(0, job(0, 0, MS / 10), ());
        q.push(0, job(1, 1, MS), ());
        let mut work = [0; 2];
        for id in 2..11_000 {
            let (meta, ()) = q.pop(0).unwrap();
            let flow = meta.tags.flow;
            work[flow as usize] += meta.service;
            q.push(0, job(id, flow, meta.service), ());
        }
        assert!((work[0] as f64 / work[1] as f64 - 1.0).abs() < 0.01, "{work:?}");
    }

    #[test]
    fn attained_service_halves_every_half_life() {
        let mut q = Las::new(&LasConfig { half_life_ms: 10.0 });
        // flow 1 attains 100 ms at 0, flow 2 60 ms at 10 ms: at 10 ms flow 1 counts 50
        q.push(0, job(1, 1, 100 * MS), ());
        q.pop(0);
        q.push(10 * MS, job(2, 2, 60 * MS), ());
        q.pop(10 * MS);
        q.push(10 * MS, job(3, 2, MS), ());
        q.push(10 * MS, job(4, 1, MS), ());
        assert_eq!(drain(&mut q, 10 * MS), vec![4, 3]);
        // long after, flow 1's service has decayed below 1 ns: it is forgotten at the next pop
        q.push(10_000 * MS, job(5, 2, MS), ());
        q.pop(10_000 * MS);
        assert_eq!(q.flows.keys().collect::<Vec<_>>(), vec![&2], "flow 2 was just served");
    }

    #[test]
    fn bad_configs_are_named_and_repaired() {
        assert!(LasConfig::default().validate().is_ok());
        assert!(LasConfig { half_life_ms: 0.0 }.validate().unwrap_err().contains("> 0"));
        assert!(LasConfig { half_life_ms: f64::NAN }.validate().is_err());
        let mut q = Las::new(&LasConfig { half_life_ms: -1.0 });
        assert_eq!(q.half_life, 100.0 * MS as f64);
        q.push(0, job(1, 9, 5), ());
        assert_eq!(q.pop(0).map(|j| j.0.id), Some(1));
        let mut built = build::<u8>(&Default::default(), 1);
        built.push(0, job(1, 3, 1), 7);
        assert_eq!((REGISTRATION.name, built.pop(0).map(|(_, p)| p)), ("las", Some(7)));
    }
}
