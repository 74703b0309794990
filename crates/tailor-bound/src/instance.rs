//! A finite scheduling instance: requests with release times, processing times, weights and the
//! machines allowed to run them, plus the objective every schedule of it is measured by.

use crate::BoundError;
use serde::{Deserialize, Serialize};
use tailor_core::results::Weighting;

/// One request of a bounded instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// Release time `r_i` in milliseconds (instances the simulator exports: arrival at the
    /// server, i.e. release at the coordinator plus the network delay).
    pub release_ms: f64,
    /// Processing time `p_i` in milliseconds on any allowed machine.
    pub processing_ms: f64,
    /// Weight `w_i` of its flow time in the objective `max w_i F_i`.
    pub weight: f64,
    /// Indices of the machines holding a replica (`M_i`), each `< Instance::machines`.
    pub machines: Vec<u32>,
}

impl Job {
    /// A job whose weight follows `weighting`: 1 for flow, `1 / p` for stretch.
    pub fn weighted(release_ms: f64, processing_ms: f64, machines: Vec<u32>, weighting: Weighting) -> Self {
        Job { release_ms, processing_ms, weight: weight_for(processing_ms, weighting), machines }
    }

    /// This job's weighted flow time if it completes at `completion_ms`.
    pub fn weighted_flow(&self, completion_ms: f64) -> f64 {
        self.weight * (completion_ms - self.release_ms)
    }
}

/// The weight a weighting gives a request of processing time `processing_ms`.
pub fn weight_for(processing_ms: f64, weighting: Weighting) -> f64 {
    match weighting {
        Weighting::Flow => 1.0,
        Weighting::Stretch => 1.0 / processing_ms,
    }
}

/// A finite offline instance of `R | r_i, M_i | max w_i F_i` (identical machines with
/// processing-set restrictions), as exported by the simulator for `tailor bound`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Number of machines (servers); machine indices run from 0 to `machines - 1`.
    pub machines: usize,
    /// The requests, in any order; errors name a request by its index in this vector.
    pub requests: Vec<Job>,
}

impl Instance {
    /// An instance from already weighted jobs.
    pub fn new(machines: usize, requests: Vec<Job>) -> Self {
        Instance { machines, requests }
    }

    /// An instance from `(release_ms, processing_ms, allowed machines)` triples, weighted by `weighting`.
    pub fn with_weighting<I>(machines: usize, requests: I, weighting: Weighting) -> Self
    where
        I: IntoIterator<Item = (f64, f64, Vec<u32>)>,
    {
        let requests = requests.into_iter().map(|(r, p, m)| Job::weighted(r, p, m, weighting)).collect();
        Instance { machines, requests }
    }

    /// The same requests with every weight recomputed for `weighting`, so one export serves both bounds.
    pub fn reweighted(&self, weighting: Weighting) -> Self {
        let requests =
            self.requests.iter().map(|j| Job { weight: weight_for(j.processing_ms, weighting), ..j.clone() }).collect();
        Instance { machines: self.machines, requests }
    }

    /// Checks every request, returning the first problem found (naming the request index).
    ///
    /// Negative release times are accepted (only differences matter); infinite ones are
    /// rejected with NaN ones because no deadline can be derived from them. Repeated machine
    /// indices in one request are accepted and count once.
    pub fn validate(&self) -> Result<(), BoundError> {
        for (index, job) in self.requests.iter().enumerate() {
            if !job.release_ms.is_finite() {
                return Err(BoundError::BadRelease { index, value: job.release_ms });
            }
            if !(job.processing_ms.is_finite() && job.processing_ms > 0.0) {
                return Err(BoundError::BadProcessing { index, value: job.processing_ms });
            }
            if !(job.weight.is_finite() && job.weight > 0.0) {
                return Err(BoundError::BadWeight { index, value: job.weight });
            }
            if job.machines.is_empty() {
                return Err(BoundError::NoMachine { index });
            }
            if let Some(&machine) = job.machines.iter().find(|&&m| m as usize >= self.machines) {
                return Err(BoundError::MachineOutOfRange { index, machine, machines: self.machines });
            }
        }
        Ok(())
    }

    /// `max_i w_i p_i`: no schedule, even preemptive and migratory, does better, because a
    /// request never runs on two machines at once and so completes no earlier than `r_i + p_i`.
    pub fn trivial_lower_bound(&self) -> f64 {
        self.requests.iter().map(|j| j.weight * j.processing_ms).fold(0.0, f64::max)
    }
}

/// The objective `max_i w_i (C_i - r_i)` of a schedule given by its completion times.
///
/// `completions_ms[i]` is the completion of `inst.requests[i]`; if the lengths differ only the
/// common prefix counts (the caller owns that invariant). An empty instance scores 0.
pub fn max_weighted_flow(inst: &Instance, completions_ms: &[f64]) -> f64 {
    inst.requests.iter().zip(completions_ms).map(|(j, &c)| j.weighted_flow(c)).fold(0.0, f64::max)
}

/// Completion times of a non-preemptive list schedule: requests in release order (ties by
/// index), each started as early as possible on its allowed machine that frees first.
///
/// Any non-preemptive schedule is also a schedule of the preemptive migratory relaxation, so
/// its objective is an upper bound on the relaxation's optimum; the bound's search starts there.
pub(crate) fn fcfs_completions(inst: &Instance) -> Vec<f64> {
    let mut order: Vec<usize> = (0..inst.requests.len()).collect();
    order.sort_by(|&a, &b| inst.requests[a].release_ms.total_cmp(&inst.requests[b].release_ms).then(a.cmp(&b)));
    let mut free = vec![f64::NEG_INFINITY; inst.machines];
    let mut completions = vec![0.0; inst.requests.len()];
    for i in order {
        let job = &inst.requests[i];
        // Validation guarantees a non-empty, in-range machine list; fall back gracefully anyway.
        let best = job
            .machines
            .iter()
            .map(|&m| m as usize)
            .filter(|&m| m < free.len())
            .min_by(|&a, &b| free[a].total_cmp(&free[b]).then(a.cmp(&b)));
        let Some(m) = best else { continue };
        let end = free[m].max(job.release_ms) + job.processing_ms;
        free[m] = end;
        completions[i] = end;
    }
    completions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(r: f64, p: f64, w: f64, m: &[u32]) -> Job {
        Job { release_ms: r, processing_ms: p, weight: w, machines: m.to_vec() }
    }

    #[test]
    fn weightings_set_weights() {
        let inst = Instance::with_weighting(2, vec![(0.0, 4.0, vec![0]), (1.0, 0.5, vec![1])], Weighting::Stretch);
        assert_eq!(inst.requests[0].weight, 0.25);
        assert_eq!(inst.requests[1].weight, 2.0);
        let flow = inst.reweighted(Weighting::Flow);
        assert!(flow.requests.iter().all(|j| j.weight == 1.0));
        assert_eq!(flow.requests[1].processing_ms, 0.5);
    }

    #[test]
    fn validation_names_the_request() {
        let ok = job(0.0, 1.0, 1.0, &[0, 1]);
        let cases = [
            (job(0.0, 1.0, 1.0, &[]), BoundError::NoMachine { index: 1 }),
            (job(0.0, 1.0, 1.0, &[0, 2]), BoundError::MachineOutOfRange { index: 1, machine: 2, machines: 2 }),
            (job(0.0, 0.0, 1.0, &[0]), BoundError::BadProcessing { index: 1, value: 0.0 }),
            (job(0.0, -1.0, 1.0, &[0]), BoundError::BadProcessing { index: 1, value: -1.0 }),
            (job(0.0, f64::INFINITY, 1.0, &[0]), BoundError::BadProcessing { index: 1, value: f64::INFINITY }),
            (job(0.0, 1.0, 0.0, &[0]), BoundError::BadWeight { index: 1, value: 0.0 }),
            (job(0.0, 1.0, -2.0, &[0]), BoundError::BadWeight { index: 1, value: -2.0 }),
            (job(f64::INFINITY, 1.0, 1.0, &[0]), BoundError::BadRelease { index: 1, value: f64::INFINITY }),
        ];
        for (bad, expected) in cases {
            let inst = Instance::new(2, vec![ok.clone(), bad]);
            assert_eq!(inst.validate(), Err(expected));
        }
        let nan = Instance::new(2, vec![ok.clone(), job(f64::NAN, 1.0, 1.0, &[0])]);
        assert!(matches!(nan.validate(), Err(BoundError::BadRelease { index: 1, value }) if value.is_nan()));
        let nan_p = Instance::new(2, vec![job(0.0, f64::NAN, 1.0, &[0])]);
        assert!(matches!(nan_p.validate(), Err(BoundError::BadProcessing { index: 0, .. })));
        assert_eq!(Instance::new(2, vec![ok.clone(), job(-5.0, 1.0, 1.0, &[1, 1])]).validate(), Ok(()));
        let msg = Instance::new(1, vec![job(0.0, 1.0, 1.0, &[3])]).validate().unwrap_err().to_string();
        assert!(msg.contains("request 0") && msg.contains("machine 3"), "{msg}");
    }

    #[test]
    fn json_round_trip_and_unknown_fields() {
        let inst = Instance::new(3, vec![job(1.5, 2.0, 0.5, &[0, 2])]);
        let text = serde_json::to_string(&inst).unwrap();
        assert_eq!(
            text,
            r#"{"machines":3,"requests":[{"release_ms":1.5,"processing_ms":2.0,"weight":0.5,"machines":[0,2]}]}"#
        );
        assert_eq!(serde_json::from_str::<Instance>(&text).unwrap(), inst);
        assert!(serde_json::from_str::<Instance>(r#"{"machines":1,"requests":[],"extra":1}"#).is_err());
    }

    #[test]
    fn objective_and_fcfs_schedule() {
        // Machine 0 only for the first two; the third may use 0 or 1 and takes the free one.
        let inst =
            Instance::new(2, vec![job(0.0, 3.0, 1.0, &[0]), job(1.0, 1.0, 2.0, &[0]), job(1.0, 2.0, 1.0, &[0, 1])]);
        let c = fcfs_completions(&inst);
        assert_eq!(c, vec![3.0, 4.0, 3.0]);
        // Weighted flows: 3, 2 * 3 = 6, 2.
        assert_eq!(max_weighted_flow(&inst, &c), 6.0);
        assert_eq!(max_weighted_flow(&Instance::default(), &[]), 0.0);
        assert_eq!(inst.trivial_lower_bound(), 3.0);
    }
}
