//! The differential test: one scripted trace (client requests, replicas' answers with facts,
//! write acks, heartbeats, and the wake-ups the core asks for) drives the simulator's
//! coordinator driver and the store's (`Coordinator` with a scripted transport, under tokio's
//! paused clock), for every selector; both must carry out the same decisions at the same
//! times. The one difference between the two drivers is named and tested on its own: the
//! store's wake-up timer fires on tokio's 1 ms ticks, the simulator's at the exact time the core
//! asks for; a selector that parks reads (C3's rate limiter) sees them offered again up to 1 ms
//! later in the store. With the simulator's driver given the same 1 ms timer, every decision of
//! every selector matches. Probes (Prequal's) are scripted too: the store's transport answers
//! each with the reply the script gives its (replica, send time), as the simulator's driver does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tailor_core::coordinator::{Send, SendKind};
use tailor_core::facts::{Feedback, ProbeReply};
use tailor_core::model::Tags;
use tailor_core::oracle::size::{Knowledge, OracleKind};
use tailor_core::selector::SELECTORS;
use tailor_core::time::{Nanos, MS};
use tailor_core::{NodeId, Op, RequestId};
use tailor_sim::script::{self, Copy, Decision, Driver, Log, Probe, Request, Script, SimDriver};
use tailor_store::coordinator::{Coordinator, CoordinatorParts};
use tailor_store::hlc::Hlc;
use tailor_store::metrics::Metrics;
use tailor_store::repair;
use tailor_store::replica::{Outcome, Work};
use tailor_store::storage::Versioned;
use tailor_store::transport::{CopyError, Exchange, Exchanged, Probing, Transport};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// A copy or probe the store's coordinator sent, as the scripted transport saw it (a probe:
/// kind `Probe`, and no request).
struct Sent {
    handle: u64,
    request: RequestId,
    replica: NodeId,
    kind: SendKind,
    tags: Tags,
    at: Nanos,
}

/// Replicas that answer when the test says so.
struct ScriptedReplicas {
    members: usize,
    origin: Instant,
    next: AtomicU64,
    sent: Mutex<Vec<Sent>>,
    /// Copies that went around the core's scheduling (read repairs' write-backs): key, tags.
    side: Mutex<Vec<(Vec<u8>, Tags)>>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Exchanged>>>,
    probes: Mutex<HashMap<u64, oneshot::Sender<ProbeReply>>>,
}

impl Transport for ScriptedReplicas {
    fn members(&self) -> usize {
        self.members
    }

    fn is_up(&self, _node: NodeId) -> bool {
        true
    }

    fn exchange(&self, node: NodeId, work: Work, s: Send) -> Exchange<'_> {
        if repair::is_side_send(&s) {
            // a read repair's write-back: the store's own, not a decision of the core
            let (Work::Read { key } | Work::Write { key, .. }) = work;
            self.side.lock().unwrap().push((key, s.tags));
            return Box::pin(async { Ok((Outcome::Written(true), Feedback::default())) });
        }
        let handle = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap().insert(handle, tx);
        let at = (Instant::now() - self.origin).as_nanos() as Nanos;
        let sent = Sent { handle, request: s.ticket.id, replica: node, kind: s.kind, tags: s.tags, at };
        self.sent.lock().unwrap().push(sent);
        Box::pin(
            async move { rx.await.unwrap_or_else(|_| Err(CopyError::unreachable("the scripted replica went away"))) },
        )
    }

    fn probe(&self, node: NodeId) -> Probing<'_> {
        let handle = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.probes.lock().unwrap().insert(handle, tx);
        let at = (Instant::now() - self.origin).as_nanos() as Nanos;
        let sent =
            Sent { handle, request: RequestId::MAX, replica: node, kind: SendKind::Probe, tags: Tags::default(), at };
        self.sent.lock().unwrap().push(sent);
        Box::pin(async move { rx.await.ok() })
    }
}

/// The store's coordinator under a script, on a single-threaded runtime with a paused clock.
struct StoreDriver {
    rt: Runtime,
    coordinator: Arc<Coordinator>,
    replicas: Arc<ScriptedReplicas>,
    ids: Arc<AtomicU64>,
    origin: Instant,
    script_index: HashMap<RequestId, usize>,
    completions: Arc<Mutex<Vec<Decision>>>,
    /// The non-vacuity check: hand the coordinator probe replies other than the script's.
    garble_probes: bool,
}

impl StoreDriver {
    fn new(script: &Script) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        let origin = rt.block_on(async { Instant::now() });
        let replicas = Arc::new(ScriptedReplicas {
            members: script.servers,
            origin,
            next: AtomicU64::new(0),
            sent: Mutex::new(Vec::new()),
            side: Mutex::new(Vec::new()),
            waiting: Mutex::new(HashMap::new()),
            probes: Mutex::new(HashMap::new()),
        });
        let ids = Arc::new(AtomicU64::new(1));
        let coordinator = rt.block_on(async {
            Coordinator::start(CoordinatorParts {
                clock: origin,
                ring: script.ring(),
                core: script.core(Knowledge::Live { servers: script.servers }),
                transport: replicas.clone(),
                ids: ids.clone(),
                timeout: Duration::from_secs(1),
                metrics: Arc::new(Metrics::new(script.servers)),
                hlc: Arc::new(Hlc::new(0, Duration::from_millis(500))),
                hints: None,
                emulation: None,
            })
        });
        let completions = Arc::new(Mutex::new(Vec::new()));
        let script_index = HashMap::new();
        StoreDriver { rt, coordinator, replicas, ids, origin, script_index, completions, garble_probes: false }
    }

    fn now(&self) -> Nanos {
        (self.rt.block_on(async { Instant::now() }) - self.origin).as_nanos() as Nanos
    }

    /// Let every task that can run, run (the clock stands still meanwhile).
    fn settle(&self) {
        self.rt.block_on(async {
            for _ in 0..64 {
                tokio::task::yield_now().await;
            }
        });
    }

    /// Move what the transport and the clients saw into the log.
    fn drain(&self, log: &mut Log) {
        for s in self.replicas.sent.lock().unwrap().drain(..) {
            if s.kind == SendKind::Probe {
                log.probe(s.at, s.handle, s.replica);
            } else {
                log.send(s.at, s.handle, self.script_index[&s.request], s.replica, s.kind, s.tags);
            }
        }
        log.decisions.append(&mut self.completions.lock().unwrap());
    }
}

impl Driver for StoreDriver {
    fn advance(&mut self, to: Nanos, log: &mut Log) {
        // stop at every 1 ms timer tick on the way, so a wake-up fires when it would
        let mut now = self.now();
        while now < to {
            let step = to.min((now / MS + 1) * MS);
            self.rt.block_on(tokio::time::advance(Duration::from_nanos(step - now)));
            self.settle();
            self.drain(log);
            if log.sent_new_copies() {
                return;
            }
            now = step;
        }
    }

    fn request(&mut self, n: usize, req: &Request, log: &mut Log) {
        let id = self.ids.load(Ordering::Relaxed);
        self.script_index.insert(id, n);
        let (c, done, origin) = (self.coordinator.clone(), self.completions.clone(), self.origin);
        let (key, op, size, fanout) = (req.key.clone(), req.op, req.size as usize, req.fanout);
        self.rt.spawn(async move {
            let result = match op {
                Op::Write => c.write(&key, Some(vec![0; size]), None).await.map(|_| None),
                Op::Read => c.read_in_multiget(&key, None, fanout).await.map(|v| Some(v.version as NodeId - 1)),
            };
            let at = (Instant::now() - origin).as_nanos() as Nanos;
            let decision = match result {
                Ok(replica) => Decision::Reply { at, request: n, replica },
                Err(_) => Decision::Fail { at, request: n },
            };
            done.lock().unwrap().push(decision);
        });
        self.settle();
        assert_eq!(self.ids.load(Ordering::Relaxed), id + 1, "one id per request");
        self.drain(log);
    }

    fn answer(&mut self, copy: &Copy, req: &Request, feedback: Feedback, log: &mut Log) {
        let tx = self.replicas.waiting.lock().unwrap().remove(&copy.handle).expect("a copy in flight");
        let outcome = match req.op {
            Op::Write => Outcome::Written(true),
            // the version names the replica, so the client's value says whose it was
            Op::Read => {
                Outcome::Read(Versioned { version: copy.replica as u64 + 1, value: Some(vec![0; req.size as usize]) })
            }
        };
        // inside the runtime, so the woken exchange runs in this settle
        self.rt.block_on(async { tx.send(Ok((outcome, feedback))) }).ok();
        self.settle();
        self.drain(log);
    }

    fn heartbeat(&mut self, from: NodeId, feedback: Feedback, log: &mut Log) {
        // inside the runtime, so the coordinator reads the paused clock
        self.rt.block_on(async { self.coordinator.facts(from, feedback) });
        self.settle();
        self.drain(log);
    }

    fn probe_reply(&mut self, probe: &Probe, reply: ProbeReply, log: &mut Log) {
        let tx = self.replicas.probes.lock().unwrap().remove(&probe.handle).expect("a probe in flight");
        let reply = match self.garble_probes {
            true => ProbeReply { rif: (reply.rif * 7 + probe.replica) % 5, latency: reply.latency / 3 },
            false => reply,
        };
        self.rt.block_on(async { tx.send(reply) }).ok();
        self.settle();
        self.drain(log);
    }
}

/// Sends and probes in the order carried out; replies and failures in time order (the store's
/// client tasks record theirs after the core's action, at the same instant).
fn split(decisions: Vec<Decision>) -> (Vec<Decision>, Vec<Decision>) {
    let (sends, mut done): (Vec<_>, Vec<_>) =
        decisions.into_iter().partition(|d| matches!(d, Decision::Send { .. } | Decision::Probe { .. }));
    done.sort_by_key(|d| match d {
        Decision::Reply { at, request, .. } | Decision::Fail { at, request } => (*at, *request),
        Decision::Send { .. } | Decision::Probe { .. } => unreachable!(),
    });
    (sends, done)
}

fn assert_same(what: &str, sim: &[Decision], store: &[Decision]) {
    if let Some(i) = (0..sim.len().max(store.len())).find(|&i| sim.get(i) != store.get(i)) {
        let around = |d: &[Decision]| d[i.saturating_sub(2)..(i + 3).min(d.len())].to_vec();
        panic!(
            "{what}: first difference at decision {i} of {}/{}\n simulator: {:#?}\n store:     {:#?}",
            sim.len(),
            store.len(),
            around(sim),
            around(store)
        );
    }
}

fn differential(selector: &str, oracle: OracleKind, seed: u64) {
    let script = Script::generate(selector, oracle, seed, 400, tailor_store::key_hash);
    let sim = script::run(&script, &mut SimDriver::new(&script, MS));
    let store = script::run(&script, &mut StoreDriver::new(&script));
    let (sim_sends, sim_done) = split(sim);
    let (store_sends, store_done) = split(store);
    assert!(sim_sends.len() > 400 && sim_done.len() == script.requests.len(), "{selector}: every request resolved");
    let probes = sim_sends.iter().filter(|d| matches!(d, Decision::Probe { .. })).count();
    assert_eq!(probes > 0, tailor_core::selector::probing(selector), "{selector}: {probes} probes");
    let what = format!("{selector} with the {oracle:?} oracle, seed {seed}");
    assert_same(&format!("{what}: sends"), &sim_sends, &store_sends);
    assert_same(&format!("{what}: replies"), &sim_done, &store_done);
}

#[test]
fn both_drivers_decide_alike_for_every_selector() {
    for selector in SELECTORS {
        for oracle in [OracleKind::Exact, OracleKind::None] {
            for seed in [7, 1, 2] {
                differential(selector, oracle, seed);
            }
        }
    }
}

/// The probes' comparison is not vacuous: the store's coordinator handed probe replies other than
/// the script's (what a transport that mixed up its probes would do) decides otherwise.
#[test]
fn a_probe_reply_that_differs_is_caught() {
    let script = Script::generate("prequal", OracleKind::Exact, 7, 400, tailor_store::key_hash);
    let sim = split(script::run(&script, &mut SimDriver::new(&script, MS))).0;
    let mut garbled = StoreDriver::new(&script);
    garbled.garble_probes = true;
    let store = split(script::run(&script, &mut garbled)).0;
    assert_ne!(sim, store, "prequal's decisions follow its probe replies");
}

/// The named difference: with the simulator's exact timer, C3's parked reads leave earlier
/// than in the store, and only sends that follow a wake-up differ at first.
#[test]
fn parked_reads_wake_on_the_stores_timer_ticks() {
    let script = Script::generate("c3", OracleKind::Exact, 7, 400, tailor_store::key_hash);
    let exact = split(script::run(&script, &mut SimDriver::new(&script, 1))).0;
    let ticked = split(script::run(&script, &mut SimDriver::new(&script, MS))).0;
    let i = (0..exact.len()).find(|&i| exact.get(i) != ticked.get(i)).expect("c3 parks reads in this script");
    let (Decision::Send { at: early, request: a, .. }, Decision::Send { at: late, request: b, .. }) =
        (&exact[i], &ticked[i])
    else {
        unreachable!()
    };
    assert!(early < late && *late <= early.div_ceil(MS) * MS, "the store's send is the tick after: {early} → {late}");
    assert_eq!(a, b, "the same parked read, sent later");
}

/// A read repair's write-back goes around the core's scheduling but not around its tag rule:
/// it carries the tags the core gave the client writes of its key (the size class of a 64 KiB
/// value included), so a replica queues it as it would queue the write it repairs. Before,
/// write-backs carried default tags: every large key's repair went to the small class.
#[test]
fn read_repair_write_backs_carry_their_keys_write_tags() {
    let script = Script::generate("lor", OracleKind::Exact, 7, 400, tailor_store::key_hash);
    let mut driver = StoreDriver::new(&script);
    let decisions = script::run(&script, &mut driver);
    let mut write_tags: HashMap<&[u8], Tags> = HashMap::new();
    for d in &decisions {
        if let Decision::Send { request, kind: SendKind::Write, tags, .. } = d {
            write_tags.insert(&script.requests[*request].key, *tags);
        }
    }
    let side = driver.replicas.side.lock().unwrap();
    let large = side.iter().filter(|(_, t)| t.size_class > 0).count();
    assert!(large > 0 && large < side.len(), "repairs of large and small keys: {large} of {}", side.len());
    for (key, tags) in side.iter() {
        assert_eq!(Some(tags), write_tags.get(key.as_slice()), "{}", String::from_utf8_lossy(key));
    }
}

/// A multi-get's keys carry its bottleneck (Rein's tag) on every copy, the first send and any
/// retry or hedge alike, in both engines: the script marks every fifth request a multi-get's
/// key, the decisions above compare every send's tags, and this checks that the tag was there
/// to compare (the store's coordinator once dropped it: only the simulator set it, at send time).
#[test]
fn a_multigets_keys_carry_its_bottleneck_to_the_replicas() {
    let script = Script::generate("lor", OracleKind::Exact, 7, 400, tailor_store::key_hash);
    let store = split(script::run(&script, &mut StoreDriver::new(&script))).0;
    let mut tagged = 0;
    for d in &store {
        let Decision::Send { request, kind, tags, .. } = d else { unreachable!() };
        assert_eq!(tags.bottleneck_us, script.requests[*request].fanout.bottleneck_us, "{kind:?} of request {request}");
        tagged += (tags.bottleneck_us > 0) as usize;
    }
    assert!(tagged > 20, "{tagged} sends of multi-get keys");
}
