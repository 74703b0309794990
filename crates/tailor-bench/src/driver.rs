//! The asynchronous part of a run: asking the cluster for its labels, the load phase, the
//! open-loop send loop, the connection tasks and the progress line.

use crate::record::{Completion, Outcome, Recorder};
use crate::schedule::{self, load_set, Planned, Schedule, ScheduleInput};
use crate::target::{Answer, Target};
use crate::{BenchConfig, BenchError, LoadStats, SecondStats};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tailor_core::results::RunResult;
use tailor_core::time::{from_ms, Nanos};
use tailor_core::Op;
use tokio::sync::mpsc;

/// What [`run`] hands back to [`crate::run`].
pub struct DriverOutput {
    /// The run's figures.
    pub result: RunResult,
    /// Per-second rows.
    pub timeseries: Vec<SecondStats>,
    /// The load phase.
    pub load: LoadStats,
    /// Example error messages.
    pub error_samples: Vec<String>,
    /// Every read, when the spec has faults (for the failover figures).
    pub reads: Vec<crate::record::ReadRecord>,
}

/// Time to set up connections before the first intended send.
const LEAD: Duration = Duration::from_millis(20);

fn nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The whole run against `target` (see the crate docs for the rules it follows).
pub async fn run<T: Target>(cfg: &BenchConfig, target: Arc<T>) -> Result<DriverOutput, BenchError> {
    let spec = &cfg.spec;
    let seed = cfg.seed.or_else(|| spec.seeds.first().copied()).unwrap_or(1);
    let input = ScheduleInput {
        spec,
        seed,
        nodes: cfg.nodes.len(),
        rate: cfg.rate,
        load: cfg.load,
        duration: cfg.duration.map(nanos),
        trace: cfg.trace.as_deref(),
    };
    let schedule = schedule::generate(&input)?;
    let warmup = cfg.warmup.map(nanos).unwrap_or_else(|| from_ms(spec.workload.warmup_ms));
    if warmup >= schedule.duration && schedule.duration > 0 {
        return Err(BenchError::Config(format!(
            "the warm-up ({:.1} s) must be shorter than the run ({:.1} s)",
            warmup as f64 / 1e9,
            schedule.duration as f64 / 1e9
        )));
    }
    let (selector, local) = labels(cfg, &*target).await;
    if cfg.progress {
        eprintln!(
            "bench {}: {} requests over {:.1} s at {:.0} req/s offered ({:.1} s warm-up) on {} nodes, {} connections; selector {selector}, local {local}",
            spec.name,
            schedule.requests.len(),
            schedule.duration as f64 / 1e9,
            schedule.offered_rps,
            warmup as f64 / 1e9,
            cfg.nodes.len(),
            cfg.connections
        );
    }
    let load = load_phase(cfg, &target, &load_set(&schedule, cfg.load_keys)).await;
    let mut rec = Recorder::new(warmup, schedule.duration, spec.cluster.service.clone());
    if !spec.cluster.faults.is_empty() {
        rec.keep_reads();
    }
    let recorder = Arc::new(Mutex::new(rec));
    let (nodes_before, began) = (target.node_cpu().await, Instant::now());
    let monitor = crate::host::Monitor::start();
    open_loop(cfg, &target, &schedule, &recorder).await;
    let host = monitor.stop();
    let starved = crate::node_cpu::worst(&nodes_before, &target.node_cpu().await, began.elapsed());
    let rec = recorder.lock().unwrap_or_else(|e| e.into_inner());
    let mut result = RunResult {
        selector,
        local,
        params: cfg.params.clone(),
        seed,
        window_ms: spec.report.window_ms,
        ..RunResult::default()
    };
    rec.fill(&mut result, schedule.offered_rps, spec.report.cdf_points);
    result.extra.insert("connections".into(), cfg.connections as f64);
    result.extra.insert("duration_s".into(), schedule.duration as f64 / 1e9);
    result.extra.insert("warmup_s".into(), warmup as f64 / 1e9);
    result.extra.insert("load_keys".into(), load.keys as f64);
    result.extra.insert("load_errors".into(), load.errors as f64);
    if let Some(h) = host.overall {
        // a tenth of a percent is all the counters' tick resolution supports, and short
        // decimals survive a JSON round trip exactly
        let tenth = |x: f64| (x * 10.0).round() / 10.0;
        result.extra.insert("host_steal_pct".into(), tenth(h.steal_pct));
        result.extra.insert("host_busy_pct".into(), tenth(h.busy_pct));
        result.extra.insert("host_steal_worst_second_pct".into(), tenth(host.worst_second_steal_pct));
    }
    if let Some(s) = starved {
        result.extra.insert("node_cpu_wait_pct".into(), (s.wait_pct * 10.0).round() / 10.0);
        result.extra.insert("node_cpu_delay_ms".into(), (s.delay_ms * 1000.0).round() / 1000.0);
        result.extra.insert("node_cpu_wait_ms_per_s".into(), (s.wait_ms_per_s * 10.0).round() / 10.0);
    }
    crate::validity::apply(&mut result);
    Ok(DriverOutput {
        result,
        timeseries: rec.timeseries(),
        load,
        error_samples: rec.error_samples().to_vec(),
        reads: rec.kept_reads().to_vec(),
    })
}

/// The selector and local policy labels: the flags, else what the target says, else "unknown".
async fn labels<T: Target>(cfg: &BenchConfig, target: &T) -> (String, String) {
    let (mut sel, mut loc) = (cfg.selector_label.clone(), cfg.local_label.clone());
    if sel.is_none() || loc.is_none() {
        let (s, l) = target.labels().await;
        sel = sel.or(s);
        loc = loc.or(l);
    }
    (sel.unwrap_or_else(|| "unknown".into()), loc.unwrap_or_else(|| "unknown".into()))
}

/// Write `keys` with `connections` writers spread over the nodes; failures are counted, not fatal.
async fn load_phase<T: Target>(cfg: &BenchConfig, target: &Arc<T>, keys: &[(u64, u64)]) -> LoadStats {
    if keys.is_empty() {
        return LoadStats::default();
    }
    let started = Instant::now();
    let keys: Arc<Vec<(u64, u64)>> = Arc::new(keys.to_vec());
    let next = Arc::new(AtomicUsize::new(0));
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let writers = cfg.connections.min(keys.len());
    let mut tasks = Vec::with_capacity(writers);
    for w in 0..writers {
        let node = w % cfg.nodes.len();
        let (keys, next, ok, failed, timeout) = (keys.clone(), next.clone(), ok.clone(), failed.clone(), cfg.timeout);
        let target = target.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn: Option<T::Conn> = None;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(key, size)) = keys.get(i) else { break };
                let write = Planned { at: 0, key, op: Op::Write, size, node: node as u32, multiget: None };
                let done = tokio::time::timeout(timeout, async {
                    let c = match &mut conn {
                        Some(c) => c,
                        None => conn.insert(target.connect(node).await?),
                    };
                    target.exec(c, &write).await
                })
                .await;
                match done {
                    Ok(Ok(Answer::Ok)) => ok.fetch_add(1, Ordering::Relaxed),
                    Ok(Ok(_)) => failed.fetch_add(1, Ordering::Relaxed),
                    _ => {
                        conn = None;
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        }));
    }
    let ticker = cfg.progress.then(|| {
        let (ok, failed, total) = (ok.clone(), failed.clone(), keys.len());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            loop {
                tick.tick().await;
                let (o, f) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
                eprintln!("load: {}/{} keys written, {} errors", o, total, f);
            }
        })
    });
    for t in tasks {
        let _ = t.await;
    }
    if let Some(t) = ticker {
        t.abort();
    }
    let stats = LoadStats {
        keys: ok.load(Ordering::Relaxed),
        errors: failed.load(Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
    };
    if cfg.progress {
        eprintln!("load: {} keys written, {} errors, in {:.1} s", stats.keys, stats.errors, stats.seconds);
    }
    stats
}

/// A coordinator's queue of requests waiting for one of its connections, each with whether it
/// found every one of them busy when the sender thread handed it over.
type Queue = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<(Planned, bool)>>>;

/// Send every request at its intended time and wait until each has completed or timed out.
async fn open_loop<T: Target>(
    cfg: &BenchConfig,
    target: &Arc<T>,
    schedule: &Schedule,
    recorder: &Arc<Mutex<Recorder>>,
) {
    let n = cfg.nodes.len();
    // each coordinator's connections that wait for a request (not sending or awaiting one)
    let idle: Arc<[AtomicUsize]> = (0..n).map(|_| AtomicUsize::new(0)).collect();
    let (senders, queues): (Vec<_>, Vec<Queue>) = (0..n)
        .map(|_| {
            let (tx, rx) = mpsc::unbounded_channel::<(Planned, bool)>();
            (tx, Arc::new(tokio::sync::Mutex::new(rx)))
        })
        .unzip();
    // Connect first so that the first requests do not pay for the handshakes.
    let connects =
        (0..cfg.connections).map(|i| {
            let target = target.clone();
            async move {
                tokio::time::timeout(Duration::from_secs(1), target.connect(i % n)).await.ok().and_then(Result::ok)
            }
        });
    let mut conns = Vec::with_capacity(cfg.connections);
    for c in connects {
        conns.push(c.await);
    }
    let start = Instant::now() + LEAD;
    if let Some(epoch) = &cfg.epoch {
        // whoever injects faults times them from here; it may have gone away
        let _ = epoch.send(start);
    }
    let mut workers = Vec::with_capacity(cfg.connections);
    for (i, conn) in conns.into_iter().enumerate() {
        let w = Worker {
            target: target.clone(),
            nodes: n,
            node: i % n,
            served_by: i % n,
            queue: queues[i % n].clone(),
            idle: idle.clone(),
            start,
            timeout: cfg.timeout,
            recorder: recorder.clone(),
            conn,
        };
        workers.push(tokio::spawn(w.serve()));
    }
    let ticker = cfg.progress.then(|| tokio::spawn(progress(recorder.clone(), start, schedule.offered_rps)));
    // The send loop runs on its own OS thread: std's sleep is precise to tens of microseconds,
    // tokio's timer only to a millisecond.
    let requests = schedule.requests.clone();
    let sender = std::thread::spawn(move || {
        for p in requests {
            let at = start + Duration::from_nanos(p.at);
            let now = Instant::now();
            if at > now {
                std::thread::sleep(at - now);
            }
            // A closed queue means its workers are gone; nothing is left to account it, so the
            // workers never exit before the senders are dropped (they loop until then).
            let node = p.node as usize;
            let starved = idle[node].load(Ordering::Relaxed) == 0;
            let _ = senders[node].send((p, starved));
        }
    });
    let _ = tokio::task::spawn_blocking(move || sender.join()).await;
    for w in workers {
        let _ = w.await;
    }
    if let Some(t) = ticker {
        t.abort();
    }
}

/// One connection: takes its coordinator's next request, sends it, waits for the reply.
struct Worker<T: Target> {
    target: Arc<T>,
    /// Coordinators in the run.
    nodes: usize,
    /// This connection's coordinator.
    node: usize,
    /// The coordinator of the request just run: `node`, or another when `node` was down.
    served_by: usize,
    /// Idle connections per coordinator, this one counted while it waits for a request.
    idle: Arc<[AtomicUsize]>,
    queue: Queue,
    start: Instant,
    timeout: Duration,
    recorder: Arc<Mutex<Recorder>>,
    conn: Option<T::Conn>,
}

impl<T: Target> Worker<T> {
    async fn serve(mut self) {
        loop {
            self.idle[self.node].fetch_add(1, Ordering::Relaxed);
            let next = self.queue.lock().await.recv().await;
            self.idle[self.node].fetch_sub(1, Ordering::Relaxed);
            let Some((p, starved)) = next else { break };
            let intended = self.start + Duration::from_nanos(p.at);
            let deadline = intended + self.timeout;
            let sent = Instant::now();
            let outcome = if sent >= deadline {
                Outcome::Timeout
            } else {
                match tokio::time::timeout_at(deadline.into(), self.exec(&p)).await {
                    Ok(Ok(o)) => o,
                    Ok(Err(e)) => {
                        self.conn = None;
                        self.note(format!("{}: {e}", self.target.describe(self.served_by)));
                        Outcome::Error
                    }
                    Err(_) => {
                        // a late reply would be read as the next request's: start afresh
                        self.conn = None;
                        Outcome::Timeout
                    }
                }
            };
            let done = Instant::now();
            let since = |t: Instant| nanos(t.saturating_duration_since(self.start));
            let keys = p.multiget.as_ref().map_or(0, |m| m.len() as u32);
            let (op, size, node) = (p.op, p.size, self.served_by as u32);
            let (sent, done) = (since(sent), since(done));
            let c = Completion { intended: p.at, starved, sent, done, op, size, keys, outcome, node };
            self.recorder.lock().unwrap_or_else(|e| e.into_inner()).record(c);
        }
    }

    fn note(&self, message: String) {
        self.recorder.lock().unwrap_or_else(|e| e.into_inner()).note_error(message);
    }

    async fn exec(&mut self, p: &Planned) -> std::io::Result<Outcome> {
        self.served_by = self.node;
        if let Some(conn) = self.conn.as_mut() {
            if let Ok(answer) = send(&*self.target, conn, p).await {
                return Ok(self.outcome(answer));
            }
            // a kept connection found broken (its coordinator died or restarted since its last
            // request): sent once more on a fresh one, as drivers retry idempotent requests
            // (the bench's reads, MGETs and SETs of a fixed value all are)
            self.conn = None;
            self.recorder.lock().unwrap_or_else(|e| e.into_inner()).resent();
        }
        match self.target.connect(self.node).await {
            Ok(c) => self.conn = Some(c),
            Err(refused) => return self.exec_elsewhere(p, refused).await,
        }
        let conn = self.conn.as_mut().expect("connected above");
        let answer = send(&*self.target, conn, p).await?;
        Ok(self.outcome(answer))
    }

    /// This connection's coordinator refuses connections (down, or restarting): send `p`
    /// through the next node that takes one, on a connection of its own, as a client driver
    /// moves to another coordinator. A fault injected into one node then measures how replicas
    /// are chosen around it, not requests sent to a dead coordinator (counted apart:
    /// `coordinator_failovers`). A request in flight when its coordinator dies comes here too,
    /// once resent (`exec`); it fails only if a fresh connection to that node still opens and
    /// then breaks (the node's socket not yet gone).
    async fn exec_elsewhere(&mut self, p: &Planned, refused: std::io::Error) -> std::io::Result<Outcome> {
        for other in (1..self.nodes).map(|j| (self.node + j) % self.nodes) {
            let Ok(mut conn) = self.target.connect(other).await else { continue };
            self.served_by = other;
            self.recorder.lock().unwrap_or_else(|e| e.into_inner()).coordinator_failover();
            let answer = send(&*self.target, &mut conn, p).await?;
            return Ok(self.outcome(answer));
        }
        Err(refused)
    }

    fn outcome(&self, answer: Answer) -> Outcome {
        match answer {
            Answer::Ok => Outcome::Ok,
            Answer::Miss => Outcome::Miss,
            Answer::Failed(e) => {
                self.note(format!("{}: {e}", self.target.describe(self.served_by)));
                Outcome::Error
            }
        }
    }
}

/// Send `p` on `conn` and read its answer: an `MGET` for a multi-get, else its read or write.
async fn send<T: Target>(target: &T, conn: &mut T::Conn, p: &Planned) -> std::io::Result<Answer> {
    match &p.multiget {
        Some(keys) => target.multiget(conn, keys).await,
        None => target.exec(conn, p).await,
    }
}

/// Print a line each second: achieved rate over the last second, p99 so far, errors.
async fn progress(recorder: Arc<Mutex<Recorder>>, start: Instant, offered: f64) {
    let mut tick = tokio::time::interval_at((start + Duration::from_secs(1)).into(), Duration::from_secs(1));
    let mut last = 0;
    loop {
        tick.tick().await;
        let p = recorder.lock().unwrap_or_else(|e| e.into_inner()).progress();
        eprintln!(
            "{:>4.0} s  achieved {:>8} req/s (offered {:.0})  p99 so far {:.2} ms  errors {}",
            start.elapsed().as_secs_f64(),
            p.completed - last,
            offered,
            p.p99_ms,
            p.errors
        );
        last = p.completed;
    }
}
