//! Test oracle: the relaxation's optimum by an independent route, a max-flow feasibility test
//! per candidate objective (Dinic's algorithm on `f64` capacities), bisected far past the
//! library's tolerance. It shares no code with the LP path.

use crate::Instance;

const EPS: f64 = 1e-12;

struct Edge {
    to: usize,
    cap: f64,
}

/// A flow network with paired forward/backward edges (edge `e ^ 1` is the reverse of `e`).
struct Network {
    adj: Vec<Vec<usize>>,
    edges: Vec<Edge>,
}

impl Network {
    fn new(nodes: usize) -> Self {
        Network { adj: vec![Vec::new(); nodes], edges: Vec::new() }
    }

    fn add(&mut self, from: usize, to: usize, cap: f64) {
        self.adj[from].push(self.edges.len());
        self.edges.push(Edge { to, cap });
        self.adj[to].push(self.edges.len());
        self.edges.push(Edge { to: from, cap: 0.0 });
    }

    fn levels(&self, s: usize) -> Vec<Option<usize>> {
        let mut level = vec![None; self.adj.len()];
        level[s] = Some(0);
        let mut queue = std::collections::VecDeque::from([s]);
        while let Some(u) = queue.pop_front() {
            for &e in &self.adj[u] {
                let Edge { to, cap } = self.edges[e];
                if cap > EPS && level[to].is_none() {
                    level[to] = level[u].map(|l| l + 1);
                    queue.push_back(to);
                }
            }
        }
        level
    }

    fn push(&mut self, u: usize, t: usize, amount: f64, level: &[Option<usize>], next: &mut [usize]) -> f64 {
        if u == t {
            return amount;
        }
        while next[u] < self.adj[u].len() {
            let e = self.adj[u][next[u]];
            let Edge { to, cap } = self.edges[e];
            if cap > EPS && level[to] == level[u].map(|l| l + 1) {
                let pushed = self.push(to, t, amount.min(cap), level, next);
                if pushed > EPS {
                    self.edges[e].cap -= pushed;
                    self.edges[e ^ 1].cap += pushed;
                    return pushed;
                }
            }
            next[u] += 1;
        }
        0.0
    }

    fn max_flow(&mut self, s: usize, t: usize) -> f64 {
        let mut total = 0.0;
        loop {
            let level = self.levels(s);
            if level[t].is_none() {
                return total;
            }
            let mut next = vec![0; self.adj.len()];
            loop {
                let pushed = self.push(s, t, f64::INFINITY, &level, &mut next);
                if pushed <= EPS {
                    break;
                }
                total += pushed;
            }
        }
    }
}

/// Whether every request fits before `r_i + objective / w_i` in the preemptive migratory model.
pub(crate) fn feasible(inst: &Instance, objective: f64) -> bool {
    let n = inst.requests.len();
    let deadline: Vec<f64> = inst.requests.iter().map(|j| j.release_ms + objective / j.weight).collect();
    let mut times: Vec<f64> = inst.requests.iter().map(|j| j.release_ms).chain(deadline.iter().copied()).collect();
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    times.dedup();
    let intervals = times.len() - 1;
    // Nodes: source, sink, jobs, (job, interval), (machine, interval).
    let (s, t) = (0, 1);
    let job_node = |i: usize| 2 + i;
    let job_slot = |i: usize, k: usize| 2 + n + i * intervals + k;
    let machine_slot = |m: usize, k: usize| 2 + n + n * intervals + m * intervals + k;
    let mut net = Network::new(2 + n + n * intervals + inst.machines * intervals);
    for k in 0..intervals {
        for m in 0..inst.machines {
            net.add(machine_slot(m, k), t, times[k + 1] - times[k]);
        }
    }
    for (i, job) in inst.requests.iter().enumerate() {
        net.add(s, job_node(i), job.processing_ms);
        for k in 0..intervals {
            if times[k] >= job.release_ms && times[k + 1] <= deadline[i] {
                net.add(job_node(i), job_slot(i, k), times[k + 1] - times[k]);
                for &m in &job.machines {
                    net.add(job_slot(i, k), machine_slot(m as usize, k), f64::INFINITY);
                }
            }
        }
    }
    let total: f64 = inst.requests.iter().map(|j| j.processing_ms).sum();
    net.max_flow(s, t) >= total - 1e-11 * total.max(1.0)
}

/// The relaxation's optimum to relative precision 1e-10, by bisection on [`feasible`].
pub(crate) fn optimum(inst: &Instance) -> f64 {
    let mut lo = 0.0;
    let mut hi = 1.0;
    while !feasible(inst, hi) {
        lo = hi;
        hi *= 2.0;
    }
    while hi - lo > 1e-10 * hi {
        let mid = 0.5 * (lo + hi);
        if feasible(inst, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}
