//! Local queue policies written in Python: a class with `push(now, job)` and `pop(now)`,
//! registered as a plugin; tailor-core keeps the engine's payloads and runs the job whose
//! ticket `pop` gives back (`tailor_core::plugin::local`).

use crate::{fault, tailor_err, views};
use pyo3::intern;
use pyo3::prelude::*;
use std::sync::Arc;
use tailor_core::model::JobMeta;
use tailor_core::plugin::local::{register, unregister, Factory, Order};
use tailor_core::time::Nanos;

pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(register_local, m)?)?;
    m.add_function(wrap_pyfunction!(unregister_local, m)?)?;
    Ok(())
}

/// Register the Python class `cls` (built as `cls(seed)`) as local policy `name`.
#[pyfunction]
pub(crate) fn register_local(name: &str, cls: Py<PyAny>) -> PyResult<()> {
    let policy = name.to_string();
    let factory: Factory = Arc::new(move |seed: u64| -> Box<dyn Order> {
        Python::attach(|py| {
            let obj = if fault::stopped() {
                None
            } else {
                cls.bind(py).call1((seed,)).map_err(|e| fault::record(py, &policy, "__init__", e)).ok()
            };
            Box::new(PyOrder { obj: obj.map(Bound::unbind), name: policy.clone() })
        })
    });
    register(name, factory).map_err(tailor_err)
}

/// Forget local policy `name`; whether it was registered.
#[pyfunction]
fn unregister_local(name: &str) -> bool {
    unregister(name)
}

/// One replica's Python policy. Once Python strategies stop (an error), `pop` answers nothing
/// and the queue runs its oldest job (`Keyed`), so the run can end.
struct PyOrder {
    obj: Option<Py<PyAny>>,
    name: String,
}

impl Order for PyOrder {
    fn push(&mut self, now: Nanos, ticket: u64, meta: &JobMeta) {
        let Some(obj) = self.obj.as_ref().filter(|_| !fault::stopped()) else { return };
        Python::attach(|py| {
            if let Err(e) = obj.bind(py).call_method1(intern!(py, "push"), (now, views::Job::new(ticket, meta))) {
                fault::record(py, &self.name, "push", e);
            }
        });
    }

    fn pop(&mut self, now: Nanos) -> Option<u64> {
        let obj = self.obj.as_ref().filter(|_| !fault::stopped())?;
        Python::attach(|py| match obj.bind(py).call_method1(intern!(py, "pop"), (now,)) {
            Ok(v) if v.is_none() => None,
            Ok(v) => match v.cast::<views::Job>() {
                Ok(job) => Some(job.get().ticket),
                Err(_) => {
                    let what = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
                    fault::record(
                        py,
                        &self.name,
                        "pop",
                        tailor_err(format!("pop returned {what}, not a job it was given")),
                    );
                    None
                }
            },
            Err(e) => {
                fault::record(py, &self.name, "pop", e);
                None
            }
        })
    }

    fn fault(&mut self, reason: &str) {
        if !fault::stopped() {
            Python::attach(|py| fault::record(py, &self.name, "pop", tailor_err(reason)));
        }
    }
}
