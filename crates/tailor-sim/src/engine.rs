//! The event loop: requests arrive at clients (coordinators), selectors route reads, servers
//! queue and execute, responses carry facts back. Virtual time only; one run is a pure
//! function of its plan.

use crate::events::EventQueue;
use crate::record::Recorder;
use crate::server::{Job, JobKind, Server, SimWorld};
use crate::workload::{mean_service_ns, Draw, Generator};
use crate::{RunOutput, SimError};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use std::collections::VecDeque;
use tailor_core::facts::{Feedback, Freshness, Response};
use tailor_core::model::{JobMeta, RequestView, SizeHint, Tags};
use tailor_core::ring::{ReplicaSet, Ring};
use tailor_core::selector::{self, Decision, ReplicaSelector, SelectorEnv};
use tailor_core::time::{from_ms, Nanos};
use tailor_core::{local, NodeId, Op};
use tailor_spec::{ArrivalKind, FluctuationMode, OracleKind, RunPlan, ServiceModel, Spec};

/// A request's life in the simulator.
struct Req {
    key: u64,
    size: u64,
    op: Op,
    client: u32,
    release: Nanos,
    replicas: ReplicaSet,
    hint: SizeHint,
    tags: Tags,
    sent_at: Nanos,
    /// Nominal processing time at a replica (stretch denominator, local policies' `p`).
    nominal: Nanos,
    acks: u8,
}

/// Facts travelling back with a response, without the allocation of a full [`Feedback`].
#[derive(Clone, Copy)]
struct Fb {
    queue_len: u32,
    service: Nanos,
    completed: u64,
    busy: bool,
    dq: i64,
    pending: Nanos,
    timestamp: Nanos,
}

enum Event {
    /// Next open-loop (or trace) arrival.
    Arrival,
    /// A closed-loop client issues its next request.
    ClientNext { client: u32 },
    /// A job reaches a server.
    ServerArrive { server: NodeId, job: Job },
    /// A server finishes a job.
    ServiceDone { server: NodeId, job: Job, service: Nanos, start: Nanos },
    /// A read's response reaches its client.
    Response { server: NodeId, req: u32, fb: Fb },
    /// A write acknowledgement reaches its client.
    WriteAck { req: u32 },
    /// Offer a client's parked requests again.
    Retry { client: u32 },
    /// A selector asked for a timer.
    SelectorTimer { client: u32 },
    /// Every server redraws its fluctuation state.
    Fluctuate,
}

/// One coordinator.
struct Client {
    selector: Box<dyn ReplicaSelector>,
    freshness: Freshness,
    /// Parked requests per replica group (keyed by the group's primary), FIFO.
    backlog: Vec<(NodeId, VecDeque<u32>)>,
    parked: usize,
    retry_at: Nanos,
    timer_at: Nanos,
}

/// The simulator state for one run.
pub struct Engine<'a> {
    spec: &'a Spec,
    plan: &'a RunPlan,
    now: Nanos,
    events: EventQueue<Event>,
    gen: Generator,
    ring: Ring,
    servers: Vec<Server>,
    clients: Vec<Client>,
    reqs: Vec<Req>,
    service_rng: SmallRng,
    route_rng: SmallRng,
    /// Requests this run issues (fewer than asked when a trace is shorter).
    total: u64,
    rec: Recorder,
    net: Nanos,
    generated: u64,
    finished: u64,
    trace_pos: usize,
    base_service_ns: f64,
    write_quorum: usize,
}

impl<'a> Engine<'a> {
    /// Build the cluster, clients and workload of `plan`.
    pub fn new(plan: &'a RunPlan, trace_text: Option<&str>) -> Result<Self, SimError> {
        let spec = &plan.spec;
        let c = &spec.cluster;
        let ring = Ring::new(c.servers, c.replication, c.vnodes).map_err(|e| SimError::Spec(e.to_string()))?;
        let gen = Generator::new(spec, plan.seed, trace_text)?;
        let mut servers = Vec::with_capacity(c.servers);
        for s in 0..c.servers {
            let queue = local::build::<Job>(&plan.local, &spec.local, plan.seed ^ (s as u64).wrapping_mul(0x9E37))
                .map_err(|e| SimError::Spec(e.to_string()))?;
            servers.push(Server::new(queue, c.cache.capacity));
        }
        let coordinators = c.coordinators();
        let mut clients = Vec::with_capacity(coordinators);
        for id in 0..coordinators {
            let env = SelectorEnv {
                coordinator: id as u32,
                coordinators,
                servers: c.servers,
                replication: c.replication,
                workers: c.workers,
                seed: plan.seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ id as u64,
            };
            let selector =
                selector::build(&plan.selector, &spec.selector, &env).map_err(|e| SimError::Spec(e.to_string()))?;
            clients.push(Client {
                selector,
                freshness: Freshness::default(),
                backlog: Vec::new(),
                parked: 0,
                retry_at: Nanos::MAX,
                timer_at: Nanos::MAX,
            });
        }
        let base_service_ns = mean_service_ns(spec, &gen.sizes);
        let rec = Recorder::new(spec, plan, c.servers);
        Ok(Engine {
            spec,
            plan,
            now: 0,
            events: EventQueue::new(),
            ring,
            servers,
            clients,
            reqs: Vec::with_capacity(spec.workload.requests as usize),
            service_rng: SmallRng::seed_from_u64(plan.seed ^ 0x0053_4552_5649_4345),
            route_rng: SmallRng::seed_from_u64(plan.seed ^ 0x0052_4f55_5445),
            total: match spec.workload.arrival {
                ArrivalKind::Trace => spec.workload.requests.min(gen.trace_len() as u64),
                _ => spec.workload.requests,
            },
            rec,
            net: from_ms(c.network_delay_ms),
            generated: 0,
            finished: 0,
            trace_pos: 0,
            base_service_ns,
            write_quorum: c.write_consistency.required(c.replication),
            gen,
        })
    }

    /// Run to completion and return the measurements.
    pub fn run(mut self) -> RunOutput {
        let w = &self.spec.workload;
        match w.arrival {
            ArrivalKind::Poisson => self.events.push(0, Event::Arrival),
            ArrivalKind::Trace => {
                if let Some(t) = self.gen.trace_time(0) {
                    self.events.push(t, Event::Arrival);
                }
            }
            ArrivalKind::ClosedLoop => {
                for client in 0..self.clients.len() as u32 {
                    for _ in 0..w.outstanding {
                        self.events.push(0, Event::ClientNext { client });
                    }
                }
            }
        }
        if self.spec.cluster.fluctuation.interval_ms > 0.0 {
            self.events.push(0, Event::Fluctuate);
        }
        while let Some((time, event)) = self.events.pop() {
            debug_assert!(time >= self.now, "time never goes backwards");
            self.now = time;
            self.handle(event);
            if self.finished == self.total {
                break;
            }
        }
        let offered = self.gen.offered_rps;
        let events = self.events.scheduled();
        self.rec.finish(self.now, offered, events)
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Arrival => self.on_arrival(),
            Event::ClientNext { client } => {
                if self.generated < self.total {
                    let draw = self.gen.draw_for(client);
                    self.issue(draw);
                }
            }
            Event::ServerArrive { server, job } => self.on_server_arrive(server, job),
            Event::ServiceDone { server, job, service, start } => self.on_service_done(server, job, service, start),
            Event::Response { server, req, fb } => self.on_response(server, req, fb),
            Event::WriteAck { req } => self.on_write_ack(req),
            // a retry or timer superseded by an earlier one is stale: only the armed one acts
            Event::Retry { client } if self.clients[client as usize].retry_at == self.now => {
                self.clients[client as usize].retry_at = Nanos::MAX;
                self.drain_backlog(client);
            }
            Event::Retry { .. } => {}
            Event::SelectorTimer { client } if self.clients[client as usize].timer_at == self.now => {
                let c = &mut self.clients[client as usize];
                c.timer_at = Nanos::MAX;
                c.selector.on_timer(self.now);
                self.arm_timer(client);
                self.drain_backlog(client);
            }
            Event::SelectorTimer { .. } => {}
            Event::Fluctuate => self.on_fluctuate(),
        }
    }

    fn on_arrival(&mut self) {
        match self.spec.workload.arrival {
            ArrivalKind::Trace => {
                let Some((_, draw)) = self.gen.trace_record(self.trace_pos) else { return };
                self.trace_pos += 1;
                self.issue(draw);
                if self.generated < self.total {
                    if let Some(t) = self.gen.trace_time(self.trace_pos) {
                        self.events.push(t.max(self.now), Event::Arrival);
                    }
                }
            }
            _ => {
                let draw = self.gen.draw();
                self.issue(draw);
                if self.generated < self.total {
                    let gap = self.gen.next_gap();
                    self.events.push(self.now + gap, Event::Arrival);
                }
            }
        }
    }

    /// A request arrives at its coordinator.
    fn issue(&mut self, d: Draw) {
        let id = self.reqs.len() as u32;
        self.generated += 1;
        let replicas = self.ring.replicas(d.key);
        let nominal = self.nominal(d.size);
        let hint = self.hint(d.key, d.size, nominal);
        self.reqs.push(Req {
            key: d.key,
            size: d.size,
            op: d.op,
            client: d.client,
            release: self.now,
            replicas,
            hint,
            tags: Tags { priority: 0, size_class: hint.large as u8 },
            sent_at: 0,
            nominal,
            acks: 0,
        });
        match d.op {
            Op::Read => {
                if !self.try_route(id) {
                    self.park(id);
                }
            }
            Op::Write => {
                let r = &mut self.reqs[id as usize];
                r.sent_at = self.now;
                for &s in replicas.iter() {
                    self.events.push(
                        self.now + self.net,
                        Event::ServerArrive { server: s, job: Job { req: id, kind: JobKind::Write } },
                    );
                }
            }
        }
    }

    fn nominal(&self, size: u64) -> Nanos {
        let s = &self.spec.cluster.service;
        (if self.spec.cluster.cache.capacity > 0 { self.spec.cluster.cache.miss_ms * 1e6 } else { s.nominal_ns(size) })
            .round()
            .max(1.0) as Nanos
    }

    /// What the coordinator's size oracle says about `key`.
    fn hint(&mut self, key: u64, size: u64, nominal: Nanos) -> SizeHint {
        let threshold = self.spec.workload.large_threshold;
        match self.spec.workload.oracle {
            OracleKind::Exact => SizeHint { bytes: Some(size), service: Some(nominal), large: size > threshold },
            OracleKind::None => SizeHint { bytes: None, service: Some(self.base_service_ns as Nanos), large: false },
            OracleKind::Bloom => {
                // The data set is preloaded: coordinators start with the filter the load phase
                // built; a Bloom filter may say "large" for a small key, never the reverse.
                let large = size > threshold || crate::oracle::bloom_false_positive(self.plan.seed, key);
                SizeHint { bytes: None, service: None, large }
            }
        }
    }

    /// Ask the client's selector where read `id` goes; send it if it says so.
    fn try_route(&mut self, id: u32) -> bool {
        let now = self.now;
        let r = &self.reqs[id as usize];
        let client = r.client;
        let view =
            RequestView { id: id as u64, key: r.key, op: r.op, release: r.release, coordinator: client, hint: r.hint };
        let replicas = r.replicas;
        let world = SimWorld {
            servers: &self.servers,
            now,
            workers: self.spec.cluster.workers,
            base_service_ns: self.base_service_ns,
        };
        let c = &mut self.clients[client as usize];
        match c.selector.select(now, &view, &replicas, &world) {
            Decision::Send { replica, tags } => {
                c.selector.on_sent(now, &view, replica);
                let r = &mut self.reqs[id as usize];
                r.sent_at = now;
                r.tags = Tags { priority: tags.priority, size_class: tags.size_class.max(r.tags.size_class) };
                self.events.push(
                    now + self.net,
                    Event::ServerArrive { server: replica, job: Job { req: id, kind: JobKind::Read } },
                );
                if self.spec.cluster.read_repair > 0.0 && self.route_rng.random::<f64>() < self.spec.cluster.read_repair
                {
                    for &other in replicas.iter().filter(|&&s| s != replica) {
                        self.events.push(
                            now + self.net,
                            Event::ServerArrive { server: other, job: Job { req: id, kind: JobKind::Shadow } },
                        );
                    }
                }
                self.arm_timer(client);
                true
            }
            Decision::Wait { retry_at } => {
                if let Some(t) = retry_at {
                    let t = t.max(now + 1);
                    if t < c.retry_at {
                        c.retry_at = t;
                        self.events.push(t, Event::Retry { client });
                    }
                }
                self.arm_timer(client);
                false
            }
        }
    }

    fn park(&mut self, id: u32) {
        let r = &self.reqs[id as usize];
        let group = r.replicas[0];
        let c = &mut self.clients[r.client as usize];
        c.parked += 1;
        match c.backlog.iter_mut().find(|(g, _)| *g == group) {
            Some((_, q)) => q.push_back(id),
            None => c.backlog.push((group, VecDeque::from([id]))),
        }
    }

    /// Offer every parked request of `client` again, in FIFO order per replica group.
    fn drain_backlog(&mut self, client: u32) {
        if self.clients[client as usize].parked == 0 {
            return;
        }
        let groups = self.clients[client as usize].backlog.len();
        for g in 0..groups {
            while let Some(&id) = self.clients[client as usize].backlog[g].1.front() {
                if !self.try_route(id) {
                    break;
                }
                let c = &mut self.clients[client as usize];
                c.backlog[g].1.pop_front();
                c.parked -= 1;
            }
        }
        self.clients[client as usize].backlog.retain(|(_, q)| !q.is_empty());
    }

    fn arm_timer(&mut self, client: u32) {
        let c = &mut self.clients[client as usize];
        if let Some(t) = c.selector.next_timer() {
            let t = t.max(self.now + 1);
            if t < c.timer_at {
                c.timer_at = t;
                self.events.push(t, Event::SelectorTimer { client });
            }
        }
    }

    fn on_server_arrive(&mut self, server: NodeId, job: Job) {
        let r = &self.reqs[job.req as usize];
        let large = r.size > self.spec.workload.large_threshold;
        let meta = JobMeta {
            id: job.req as u64,
            release: r.release,
            enqueued: self.now,
            service: r.nominal,
            size: r.size,
            tags: r.tags,
        };
        let s = &mut self.servers[server as usize];
        let must_wait = s.running >= self.spec.cluster.workers;
        if must_wait && job.kind == JobKind::Read && !large && (s.running_large > 0 || s.queued_large > 0) {
            self.rec.small_behind_large(r.release);
        }
        s.queued_work += meta.service;
        s.queued_large += large as u32;
        s.queue.push(self.now, meta, job);
        self.start_jobs(server);
    }

    /// Fill idle workers of `server` from its local queue.
    fn start_jobs(&mut self, server: NodeId) {
        let workers = self.spec.cluster.workers;
        loop {
            let s = &mut self.servers[server as usize];
            if s.running >= workers {
                return;
            }
            let Some((meta, job)) = s.queue.pop(self.now) else { return };
            let large = meta.size > self.spec.workload.large_threshold;
            s.queued_work -= meta.service;
            s.queued_large -= large as u32;
            s.running += 1;
            s.running_large += large as u32;
            let key = self.reqs[job.req as usize].key;
            let service = self.service_time(server, key, meta.service);
            let s = &mut self.servers[server as usize];
            s.running_end_sum += self.now + meta.service;
            self.events.push(self.now + service, Event::ServiceDone { server, job, service, start: self.now });
        }
    }

    /// The real processing time of a job at `server` now.
    fn service_time(&mut self, server: NodeId, key: u64, nominal: Nanos) -> Nanos {
        let c = &self.spec.cluster;
        let s = &mut self.servers[server as usize];
        let slowdown = s.slowdown;
        let exp = |rng: &mut SmallRng, mean_ns: f64| -> Nanos {
            let x: f64 = Exp1.sample(rng);
            (x * mean_ns).round().max(1.0) as Nanos
        };
        if let Some(cache) = s.cache.as_mut() {
            let hit = cache.access(key);
            self.rec.cache_access(hit);
            let mean = if hit { c.cache.hit_ms } else { c.cache.miss_ms } * 1e6 * slowdown;
            return exp(&mut self.service_rng, mean);
        }
        match c.service.model {
            ServiceModel::Exponential => exp(&mut self.service_rng, c.service.mean_ms * 1e6 * slowdown),
            ServiceModel::Size => ((nominal as f64) * slowdown).round().max(1.0) as Nanos,
        }
    }

    fn on_service_done(&mut self, server: NodeId, job: Job, service: Nanos, start: Nanos) {
        let (nominal, size) = {
            let r = &self.reqs[job.req as usize];
            (r.nominal, r.size)
        };
        let large = size > self.spec.workload.large_threshold;
        let s = &mut self.servers[server as usize];
        s.running -= 1;
        s.running_large -= large as u32;
        s.running_end_sum -= start + nominal;
        s.completed += 1;
        let fb = s.feedback(server, self.now, service);
        if job.kind == JobKind::Read {
            self.rec.served(server, self.now);
            self.rec.bound_job(
                job.req,
                self.reqs[job.req as usize].release + self.net,
                start,
                service,
                self.now,
                &self.reqs[job.req as usize].replicas,
            );
        }
        let fb = Fb {
            queue_len: fb.queue_len,
            service: fb.service_time,
            completed: fb.completed,
            busy: fb.busy,
            dq: fb.dq,
            pending: fb.pending_work,
            timestamp: fb.timestamp,
        };
        match job.kind {
            JobKind::Read => self.events.push(self.now + self.net, Event::Response { server, req: job.req, fb }),
            JobKind::Write => self.events.push(self.now + self.net, Event::WriteAck { req: job.req }),
            JobKind::Shadow => {}
        }
        self.start_jobs(server);
    }

    fn on_response(&mut self, server: NodeId, req: u32, fb: Fb) {
        let now = self.now;
        let r = &self.reqs[req as usize];
        let client = r.client;
        self.rec.read_done(r.release, now, r.nominal);
        self.finished += 1;
        let c = &mut self.clients[client as usize];
        let fresh = c.freshness.accept(server, fb.timestamp);
        let resp = Response {
            request: req as u64,
            replica: server,
            sent_at: r.sent_at,
            large: r.hint.large,
            feedback: Feedback {
                from: server,
                timestamp: fb.timestamp,
                queue_len: fb.queue_len,
                service_time: fb.service,
                completed: fb.completed,
                busy: fb.busy,
                dq: fb.dq,
                pending_work: fb.pending,
                bloom_bits: Vec::new(),
                bloom_generation: 0,
            },
            fresh,
        };
        c.selector.on_response(now, &resp);
        self.arm_timer(client);
        self.drain_backlog(client);
        self.closed_loop_next(client);
    }

    fn on_write_ack(&mut self, req: u32) {
        let r = &mut self.reqs[req as usize];
        r.acks += 1;
        if r.acks as usize == self.write_quorum {
            let (release, client) = (r.release, r.client);
            self.rec.write_done(release, self.now);
            self.finished += 1;
            self.closed_loop_next(client);
        }
    }

    fn closed_loop_next(&mut self, client: u32) {
        if self.spec.workload.arrival == ArrivalKind::ClosedLoop && self.generated < self.total {
            let think = from_ms(self.spec.workload.think_ms);
            self.events.push(self.now + think, Event::ClientNext { client });
        }
    }

    fn on_fluctuate(&mut self) {
        let f = &self.spec.cluster.fluctuation;
        let other = match f.mode {
            FluctuationMode::Faster => 1.0 / f.factor,
            FluctuationMode::Slower => f.factor,
        };
        for s in &mut self.servers {
            s.slowdown = if self.service_rng.random::<f64>() < f.probability { other } else { 1.0 };
        }
        if self.generated < self.total || self.finished < self.generated {
            self.events.push(self.now + from_ms(f.interval_ms), Event::Fluctuate);
        }
    }
}
