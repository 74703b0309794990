//! The same feasibility test as the LP, solved as the max-flow problem it is.
//!
//! The LP of [`crate::lp`] is a transportation problem: work flows from each request (supply
//! `p_i`) through request-interval nodes (capacity `L_t`, one machine at a time) to
//! machine-interval nodes (capacity `L_t`). Dinic's algorithm on that network gives the same
//! maximum scheduled work as HiGHS; on 1,000 requests it takes about a second where one LP
//! takes minutes (see the crate docs).

use crate::cut::{Check, Cut, FEASIBILITY_SLACK};
use crate::Instance;

const NONE: usize = usize::MAX;
const UNSEEN: u32 = u32::MAX;

/// A residual network stored as linked edge lists; edge `e ^ 1` is the reverse of edge `e`.
struct Network {
    first: Vec<usize>,
    next: Vec<usize>,
    to: Vec<usize>,
    cap: Vec<f64>,
}

impl Network {
    fn with_nodes(nodes: usize) -> Self {
        Network { first: vec![NONE; nodes], next: Vec::new(), to: Vec::new(), cap: Vec::new() }
    }

    fn add_node(&mut self) -> usize {
        self.first.push(NONE);
        self.first.len() - 1
    }

    fn add_edge(&mut self, from: usize, to: usize, cap: f64) {
        for (a, b, c) in [(from, to, cap), (to, from, 0.0)] {
            self.next.push(self.first[a]);
            self.first[a] = self.to.len();
            self.to.push(b);
            self.cap.push(c);
        }
    }

    /// BFS distances from `s` over edges with capacity above `eps`.
    fn levels(&self, s: usize, eps: f64, level: &mut [u32], queue: &mut Vec<usize>) {
        level.fill(UNSEEN);
        level[s] = 0;
        queue.clear();
        queue.push(s);
        let mut head = 0;
        while head < queue.len() {
            let v = queue[head];
            head += 1;
            let mut e = self.first[v];
            while e != NONE {
                let w = self.to[e];
                if self.cap[e] > eps && level[w] == UNSEEN {
                    level[w] = level[v] + 1;
                    queue.push(w);
                }
                e = self.next[e];
            }
        }
    }

    /// Dinic's maximum flow from `s` to `t`, with an explicit path stack (augmenting paths in
    /// a residual graph can be long, so no recursion).
    fn max_flow(&mut self, s: usize, t: usize, eps: f64) -> f64 {
        let nodes = self.first.len();
        let mut level = vec![UNSEEN; nodes];
        let mut queue = Vec::with_capacity(nodes);
        let mut iter = vec![NONE; nodes];
        let mut path: Vec<usize> = Vec::new();
        let mut total = 0.0;
        loop {
            self.levels(s, eps, &mut level, &mut queue);
            if level[t] == UNSEEN {
                return total;
            }
            iter.copy_from_slice(&self.first);
            path.clear();
            let mut v = s;
            loop {
                if v == t {
                    let pushed = path.iter().map(|&e| self.cap[e]).fold(f64::INFINITY, f64::min);
                    for &e in &path {
                        self.cap[e] -= pushed;
                        self.cap[e ^ 1] += pushed;
                    }
                    total += pushed;
                    // Resume from the tail of the first edge this augmentation saturated.
                    let keep = path.iter().position(|&e| self.cap[e] <= eps).unwrap_or(0);
                    path.truncate(keep);
                    v = path.last().map_or(s, |&e| self.to[e]);
                    continue;
                }
                let mut e = iter[v];
                while e != NONE {
                    let w = self.to[e];
                    if self.cap[e] > eps && level[w] == level[v] + 1 {
                        break;
                    }
                    e = self.next[e];
                }
                iter[v] = e;
                if e != NONE {
                    path.push(e);
                    v = self.to[e];
                } else if let Some(back) = path.pop() {
                    // Dead end: drop `v` from this phase and skip the edge that led here.
                    level[v] = UNSEEN;
                    let u = self.to[back ^ 1];
                    iter[u] = self.next[back];
                    v = u;
                } else {
                    break;
                }
            }
        }
    }
}

/// The feasibility test of `lp::check` (HiGHS) by max flow: same cut, same slack, same count
/// of `(request, machine, interval)` variables (here arcs).
pub(crate) fn check(inst: &Instance, objective: f64) -> Check {
    let cut = Cut::new(inst, objective);
    let intervals = cut.intervals();
    let (source, sink) = (0, 1);
    let mut net = Network::with_nodes(2 + inst.requests.len());
    let mut machine_nodes = vec![NONE; inst.machines * intervals];
    let mut variables = 0usize;
    let mut allowed: Vec<u32> = Vec::new();
    for (i, (job, &(first, end))) in inst.requests.iter().zip(&cut.spans).enumerate() {
        let job_node = 2 + i;
        net.add_edge(source, job_node, job.processing_ms);
        allowed.clear();
        allowed.extend_from_slice(&job.machines);
        allowed.sort_unstable();
        allowed.dedup();
        for t in first..end {
            let length = cut.length(t);
            // With one allowed machine the machine node's own capacity already caps the request.
            let (from, cap) = if allowed.len() > 1 {
                let slot = net.add_node();
                net.add_edge(job_node, slot, length);
                (slot, f64::INFINITY)
            } else {
                (job_node, length)
            };
            for &m in &allowed {
                let key = m as usize * intervals + t;
                if machine_nodes[key] == NONE {
                    let node = net.add_node();
                    net.add_edge(node, sink, length);
                    machine_nodes[key] = node;
                }
                net.add_edge(from, machine_nodes[key], cap);
                variables += 1;
            }
        }
    }
    let total: f64 = inst.requests.iter().map(|j| j.processing_ms).sum();
    // Residuals below this are rounding noise of subtracting equal floats, not capacity.
    let eps = 1e-13 * total.max(f64::MIN_POSITIVE);
    let scheduled_ms = net.max_flow(source, sink, eps);
    Check { feasible: scheduled_ms >= total * (1.0 - FEASIBILITY_SLACK), scheduled_ms, variables }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Job;

    fn job(r: f64, p: f64, w: f64, m: &[u32]) -> Job {
        Job { release_ms: r, processing_ms: p, weight: w, machines: m.to_vec() }
    }

    #[test]
    fn dinic_on_a_small_network() {
        // s -> a (3), s -> b (2), a -> b (1), a -> t (2), b -> t (3): max flow 5.
        let mut net = Network::with_nodes(4);
        net.add_edge(0, 2, 3.0);
        net.add_edge(0, 3, 2.0);
        net.add_edge(2, 3, 1.0);
        net.add_edge(2, 1, 2.0);
        net.add_edge(3, 1, 3.0);
        assert_eq!(net.max_flow(0, 1, 1e-12), 5.0);
    }

    #[test]
    fn dinic_needs_a_back_edge() {
        // The classic case where a greedy first path s-a-b-t must be undone through b->a.
        let mut net = Network::with_nodes(4);
        let (s, t, a, b) = (0, 1, 2, 3);
        net.add_edge(s, a, 1.0);
        net.add_edge(s, b, 1.0);
        net.add_edge(a, b, 1.0);
        net.add_edge(a, t, 1.0);
        net.add_edge(b, t, 1.0);
        assert_eq!(net.max_flow(s, t, 1e-12), 2.0);
    }

    #[test]
    fn same_answers_as_the_lp_on_small_cases() {
        let two_units = Instance::new(1, vec![job(0.0, 1.0, 1.0, &[0]), job(0.0, 1.0, 1.0, &[0])]);
        let short = check(&two_units, 1.5);
        assert!(!short.feasible && (short.scheduled_ms - 1.5).abs() < 1e-12, "{short:?}");
        assert!(check(&two_units, 2.0).feasible);
        let alone = Instance::new(2, vec![job(0.0, 2.0, 1.0, &[0, 1])]);
        let half = check(&alone, 1.0);
        assert!(!half.feasible && (half.scheduled_ms - 1.0).abs() < 1e-12, "{half:?}");
        assert_eq!(half.variables, 2);
    }
}
