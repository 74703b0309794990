//! Replica selectors written in Python: a class with `select` and the optional hooks of
//! tailor-core's `ReplicaSelector`, registered as a plugin under its name and driven by the
//! coordinator core like any built-in.

use crate::{fault, tailor_err, views};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::sync::Arc;
use tailor_core::facts::{Feedback, Response};
use tailor_core::model::{NodeId, RequestView, Tags};
use tailor_core::plugin::selector::{register, unregister, Factory};
use tailor_core::selector::{Decision, Fact, Needs, ReplicaSelector, SelectorEnv, World};
use tailor_core::time::Nanos;

pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(register_selector, m)?)?;
    m.add_function(wrap_pyfunction!(unregister_selector, m)?)?;
    Ok(())
}

/// Which optional hooks the class defines (the others are not called at all: a call into
/// Python costs far more than the hook's work in most selectors).
#[derive(Clone, Copy, Default)]
struct Hooks {
    on_sent: bool,
    on_response: bool,
    on_facts: bool,
    on_timer: bool,
}

impl Hooks {
    fn of(names: &[String]) -> PyResult<Self> {
        let mut h = Hooks::default();
        for n in names {
            match n.as_str() {
                "on_sent" => h.on_sent = true,
                "on_response" => h.on_response = true,
                "on_facts" => h.on_facts = true,
                "on_timer" => h.on_timer = true,
                other => return Err(tailor_err(format!("unknown selector hook `{other}`"))),
            }
        }
        Ok(h)
    }
}

fn fact(name: &str) -> PyResult<Fact> {
    Ok(match name {
        "queue_len" => Fact::QueueLen,
        "service_time" => Fact::ServiceTime,
        "busy" => Fact::Busy,
        "dq" => Fact::Dq,
        "pending_work" => Fact::PendingWork,
        other => {
            return Err(tailor_err(format!(
                "unknown fact `{other}` (known: queue_len, service_time, busy, dq, pending_work)"
            )))
        }
    })
}

/// Register the Python class `cls` as selector `name`. `facts` are the facts it reads (an engine
/// measures optional ones, such as `dq`, only for selectors that declare them), `hooks` the
/// optional methods it defines; it asks for timers when it defines `on_timer`.
#[pyfunction]
#[pyo3(signature = (name, cls, facts, size_oracle, hooks))]
pub(crate) fn register_selector(
    name: &str,
    cls: Py<PyAny>,
    facts: Vec<String>,
    size_oracle: bool,
    hooks: Vec<String>,
) -> PyResult<()> {
    let hooks = Hooks::of(&hooks)?;
    let facts: Vec<Fact> = facts.iter().map(|f| fact(f)).collect::<PyResult<_>>()?;
    // a registration lives as long as the process (a built-in's is `'static` too); a notebook
    // that registers a name again leaks one small list
    let facts: &'static [Fact] = Box::leak(facts.into_boxed_slice());
    let needs = Needs { facts, size_oracle, world: false, probes: false, timers: hooks.on_timer };
    let strategy = name.to_string();
    let factory: Factory = Arc::new(move |env: &SelectorEnv| -> Box<dyn ReplicaSelector> {
        if fault::stopped() {
            return Box::new(First);
        }
        Python::attach(|py| match cls.bind(py).call1((views::Env::from(env),)) {
            Ok(obj) => {
                let mut selector = PySelector { obj: obj.unbind(), hooks, name: strategy.clone(), timer: None };
                selector.refresh_timer(py);
                Box::new(selector) as Box<dyn ReplicaSelector>
            }
            Err(e) => {
                fault::record(py, &strategy, "__init__", e);
                Box::new(First)
            }
        })
    });
    register(name, needs, factory).map_err(tailor_err)
}

/// Forget selector `name`; whether it was registered.
#[pyfunction]
fn unregister_selector(name: &str) -> bool {
    unregister(name)
}

/// What stands in for a selector that failed: the primary replica, so the run can end.
struct First;

impl ReplicaSelector for First {
    fn select(&mut self, _: Nanos, _: &RequestView, replicas: &[NodeId], _: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}

/// One coordinator's Python selector.
struct PySelector {
    obj: Py<PyAny>,
    hooks: Hooks,
    name: String,
    /// The timer the selector last asked for (read after each call into it).
    timer: Option<Nanos>,
}

impl PySelector {
    /// Call `method` unless Python strategies are stopped; record its error.
    fn call<'py, A>(
        &self,
        py: Python<'py>,
        method: &Bound<'py, pyo3::types::PyString>,
        args: A,
    ) -> Option<Bound<'py, PyAny>>
    where
        A: pyo3::call::PyCallArgs<'py>,
    {
        if fault::stopped() {
            return None;
        }
        match self.obj.bind(py).call_method1(method, args) {
            Ok(v) => Some(v),
            Err(e) => {
                fault::record(py, &self.name, &method.to_string(), e);
                None
            }
        }
    }

    /// Ask for the next timer after a call that may have changed it.
    fn refresh_timer(&mut self, py: Python<'_>) {
        if !self.hooks.on_timer {
            return;
        }
        self.timer = self
            .call(py, intern!(py, "next_timer"), ())
            .and_then(|v| v.extract::<Option<u64>>().map_err(|e| fault::record(py, &self.name, "next_timer", e)).ok())
            .flatten();
    }
}

/// The decision a Python `select` returned: a replica, `Send`, `Wait` or `None` (wait).
fn decision(value: &Bound<'_, PyAny>, replicas: &[NodeId]) -> PyResult<Decision> {
    let chosen = |replica: NodeId, tags: Tags| {
        if replicas.contains(&replica) {
            Ok(Decision::Send { replica, tags })
        } else {
            Err(tailor_err(format!("select returned replica {replica}, which is not one of {replicas:?}")))
        }
    };
    if value.is_none() {
        return Ok(Decision::Wait { retry_at: None });
    }
    if let Ok(send) = value.cast::<views::Send>() {
        let s = send.get();
        return chosen(s.replica, Tags { priority: s.priority, size_class: s.size_class, ..Tags::default() });
    }
    if let Ok(wait) = value.cast::<views::Wait>() {
        return Ok(Decision::Wait { retry_at: wait.get().retry_at });
    }
    match value.extract::<NodeId>() {
        Ok(replica) => chosen(replica, Tags::default()),
        Err(_) => Err(tailor_err(format!(
            "select returned {}, not a replica id, tailor.Send, tailor.Wait or None",
            value.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into())
        ))),
    }
}

impl ReplicaSelector for PySelector {
    fn select(&mut self, now: Nanos, req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Python::attach(|py| {
            let Ok(list) = PyList::new(py, replicas) else { return Decision::to(replicas[0]) };
            let answer = self.call(py, intern!(py, "select"), (now, views::Request::from(req), list));
            let d = match answer.map(|v| decision(&v, replicas)) {
                Some(Ok(d)) => d,
                Some(Err(e)) => {
                    fault::record(py, &self.name, "select", e);
                    Decision::to(replicas[0])
                }
                None => Decision::to(replicas[0]),
            };
            self.refresh_timer(py);
            d
        })
    }

    fn on_sent(&mut self, now: Nanos, req: &RequestView, replica: NodeId) {
        if self.hooks.on_sent {
            Python::attach(|py| {
                self.call(py, intern!(py, "on_sent"), (now, views::Request::from(req), replica));
                self.refresh_timer(py);
            });
        }
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        if self.hooks.on_response {
            Python::attach(|py| {
                match views::Response::new(py, resp) {
                    Ok(r) => {
                        self.call(py, intern!(py, "on_response"), (now, r));
                    }
                    Err(e) => fault::record(py, &self.name, "on_response", e),
                }
                self.refresh_timer(py);
            });
        }
    }

    fn on_facts(&mut self, now: Nanos, facts: &Feedback) {
        if self.hooks.on_facts {
            Python::attach(|py| {
                self.call(py, intern!(py, "on_facts"), (now, views::Facts::from(facts)));
                self.refresh_timer(py);
            });
        }
    }

    fn on_timer(&mut self, now: Nanos) {
        if self.hooks.on_timer {
            Python::attach(|py| {
                self.call(py, intern!(py, "on_timer"), (now,));
                self.refresh_timer(py);
            });
        }
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.timer
    }
}
