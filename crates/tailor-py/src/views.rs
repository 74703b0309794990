//! What a Python strategy sees: read-only copies of the core's views (a request, a response
//! and its facts, a queued job, a coordinator's surroundings), its answers (`Send`, `Wait`),
//! and the core's random stream, so a Python port of a built-in draws the same numbers.

use pyo3::prelude::*;
use tailor_core::facts::{Feedback, Response as CoreResponse};
use tailor_core::model::{JobMeta, Op, RequestView};
use tailor_core::selector::{Rng as CoreRng, SelectorEnv};

pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Request>()?;
    m.add_class::<Facts>()?;
    m.add_class::<Response>()?;
    m.add_class::<Env>()?;
    m.add_class::<Job>()?;
    m.add_class::<Send>()?;
    m.add_class::<Wait>()?;
    m.add_class::<Rng>()?;
    Ok(())
}

/// A read or write as a selector may see it: no true size, only the size oracle's hint.
#[pyclass(frozen, get_all, module = "tailor")]
pub struct Request {
    /// Unique id.
    pub id: u64,
    /// Key.
    pub key: u64,
    /// "read" or "write".
    pub op: &'static str,
    /// Release time at the coordinator, ns.
    pub release: u64,
    /// The coordinator handling it.
    pub coordinator: u32,
    /// The oracle's estimate of the value's size in bytes (None: no oracle).
    pub hint_bytes: Option<u64>,
    /// The engine's estimate of its processing time at a replica, ns (None: none).
    pub hint_service: Option<u64>,
    /// Whether the oracle classes the value as large.
    pub large: bool,
}

impl From<&RequestView> for Request {
    fn from(r: &RequestView) -> Self {
        Request {
            id: r.id,
            key: r.key,
            op: if r.op == Op::Read { "read" } else { "write" },
            release: r.release,
            coordinator: r.coordinator,
            hint_bytes: r.hint.bytes,
            hint_service: r.hint.service,
            large: r.hint.large,
        }
    }
}

#[pymethods]
impl Request {
    fn __repr__(&self) -> String {
        format!("Request(id={}, key={}, op={:?}, release={})", self.id, self.key, self.op, self.release)
    }
}

/// The facts a replica piggybacked on a message (docs/strategies.md, Facts).
#[pyclass(frozen, get_all, module = "tailor")]
pub struct Facts {
    /// The replica that measured them.
    pub replica: u32,
    /// The replica's clock when measured, ns.
    pub timestamp: u64,
    /// Requests waiting (not running) at the replica.
    pub queue_len: u32,
    /// Service time of the request this answers, ns (0 for a broadcast).
    pub service_time: u64,
    /// Requests the replica has completed so far.
    pub completed: u64,
    /// Whether it is executing a request for a large value (Héron).
    pub busy: bool,
    /// Change of its queue length over the last 20 ms window (TAP).
    pub dq: i64,
    /// Its estimated queued and running work, ns (EFT).
    pub pending_work: u64,
}

impl From<&Feedback> for Facts {
    fn from(f: &Feedback) -> Self {
        Facts {
            replica: f.from,
            timestamp: f.timestamp,
            queue_len: f.queue_len,
            service_time: f.service_time,
            completed: f.completed,
            busy: f.busy,
            dq: f.dq,
            pending_work: f.pending_work,
        }
    }
}

/// A response as a selector sees it.
#[pyclass(frozen, get_all, module = "tailor")]
pub struct Response {
    /// The request answered.
    pub request: u64,
    /// The replica that served it.
    pub replica: u32,
    /// When the coordinator sent it, ns.
    pub sent_at: u64,
    /// Whether the oracle classed it as large when sent.
    pub large: bool,
    /// False when its facts are older than ones already applied from this replica: count the
    /// response, do not apply its facts.
    pub fresh: bool,
    /// The piggybacked facts.
    pub facts: Py<Facts>,
}

impl Response {
    pub fn new(py: Python<'_>, r: &CoreResponse) -> PyResult<Self> {
        Ok(Response {
            request: r.request,
            replica: r.replica,
            sent_at: r.sent_at,
            large: r.large,
            fresh: r.fresh,
            facts: Py::new(py, Facts::from(r.feedback))?,
        })
    }
}

/// What a selector knows about its surroundings when it is built.
#[pyclass(frozen, get_all, module = "tailor")]
pub struct Env {
    /// This coordinator's id.
    pub coordinator: u32,
    /// Number of coordinators.
    pub coordinators: usize,
    /// Number of servers.
    pub servers: usize,
    /// Replication factor.
    pub replication: usize,
    /// Worker threads per server.
    pub workers: usize,
    /// Seed of this strategy's private random stream (see `rng`).
    pub seed: u64,
}

impl From<&SelectorEnv> for Env {
    fn from(e: &SelectorEnv) -> Self {
        Env {
            coordinator: e.coordinator,
            coordinators: e.coordinators,
            servers: e.servers,
            replication: e.replication,
            workers: e.workers,
            seed: e.seed,
        }
    }
}

#[pymethods]
impl Env {
    /// This strategy's random stream, salted (what built-ins do with `Rng::new(seed, salt)`).
    fn rng(&self, salt: u64) -> Rng {
        Rng(CoreRng::new(self.seed, salt))
    }
}

/// A queued job as a local policy sees it.
#[pyclass(frozen, get_all, module = "tailor")]
pub struct Job {
    /// Request id.
    pub id: u64,
    /// Release time at the coordinator, ns.
    pub release: u64,
    /// When it entered this queue, ns.
    pub enqueued: u64,
    /// Processing time estimated from its exact size, ns (at least 1).
    pub service: u64,
    /// Exact value size, bytes.
    pub size: u64,
    /// Priority tag from the coordinator (0 = highest).
    pub priority: u8,
    /// Size class tag from the coordinator's oracle.
    pub size_class: u8,
    /// The queue's handle of this job (what `pop` gives back).
    pub ticket: u64,
}

impl Job {
    pub fn new(ticket: u64, m: &JobMeta) -> Self {
        Job {
            id: m.id,
            release: m.release,
            enqueued: m.enqueued,
            service: m.service,
            size: m.size,
            priority: m.tags.priority,
            size_class: m.tags.size_class,
            ticket,
        }
    }
}

#[pymethods]
impl Job {
    fn __repr__(&self) -> String {
        format!("Job(id={}, release={}, service={}, size={})", self.id, self.release, self.service, self.size)
    }
}

/// A selector's answer: send the request to `replica` with these tags.
#[pyclass(frozen, get_all, module = "tailor")]
pub struct Send {
    /// The replica.
    pub replica: u32,
    /// Priority tag (0 = highest), for local policies that read it.
    pub priority: u8,
    /// Size class tag (0 = small), for local policies that read it (RML's sub-queue).
    pub size_class: u8,
}

#[pymethods]
impl Send {
    #[new]
    #[pyo3(signature = (replica, priority=0, size_class=0))]
    fn new(replica: u32, priority: u8, size_class: u8) -> Self {
        Send { replica, priority, size_class }
    }
}

/// A selector's answer: keep the request at the coordinator and offer it again after the next
/// response from its replicas, or at `retry_at` (ns) if given.
#[pyclass(frozen, get_all, module = "tailor")]
pub struct Wait {
    /// When to offer it again, ns (None: on the next response).
    pub retry_at: Option<u64>,
}

#[pymethods]
impl Wait {
    #[new]
    #[pyo3(signature = (retry_at=None))]
    fn new(retry_at: Option<u64>) -> Self {
        Wait { retry_at }
    }
}

/// The core's deterministic random stream (SplitMix64), as built-in strategies draw it.
#[pyclass(module = "tailor")]
pub struct Rng(CoreRng);

#[pymethods]
impl Rng {
    #[new]
    fn new(seed: u64, salt: u64) -> Self {
        Rng(CoreRng::new(seed, salt))
    }
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// A uniform integer in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> PyResult<usize> {
        if n == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("below(n) needs n > 0"));
        }
        Ok(self.0.below(n))
    }
    /// A uniform float in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0.unit()
    }
}
