//! Python strategies inside a program that embeds Python: the `tailor` binary built with
//! `--features python` (its simulator, and its store nodes). The `tailor` package's extension
//! module keeps its own copy of tailor-core's plugin tables, so what Python registered there is
//! registered again here, from the package's record of every `tailor.register` call.

use crate::{fault, local, selector};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Load `modules`, each a module whose top level calls `tailor.register` or a `name=module:Class`
/// entry (the class is registered under `name`; the Python package passes its strategies so),
/// and register every strategy the `tailor` package has recorded into this program's tables;
/// returns their names. Errors say which entry or strategy failed, with Python's message.
pub fn load_strategies(modules: &[String]) -> Result<Vec<String>, String> {
    fault::report_to_stderr();
    Python::attach(|py| {
        for entry in modules {
            import(py, entry)?;
        }
        let record = py
            .import("tailor._strategies")
            .and_then(|m| m.getattr("REGISTERED"))
            .map_err(|e| format!("the `tailor` Python package is not importable here: {e}"))?;
        let record = record.cast::<PyDict>().map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        for (name, entry) in record.iter() {
            let name: String = name.extract().map_err(|e: PyErr| e.to_string())?;
            register(&name, &entry).map_err(|e| format!("registering Python strategy `{name}`: {e}"))?;
            names.push(name);
        }
        Ok(names)
    })
}

/// Import one entry of `TAILOR_PYTHON`.
fn import(py: Python<'_>, entry: &str) -> Result<(), String> {
    let failed = |e: PyErr| format!("loading Python strategy `{entry}`: {e}");
    let Some((name, place)) = entry.split_once('=') else {
        return py.import(entry).map(drop).map_err(failed);
    };
    let (module, class) = place.split_once(':').ok_or_else(|| format!("`{entry}`: expected name=module:Class"))?;
    let mut cls = py.import(module).map_err(failed)?.into_any();
    for part in class.split('.') {
        cls = cls.getattr(part).map_err(failed)?;
    }
    let register = py.import("tailor").and_then(|t| t.getattr("register")).map_err(failed)?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("name", name).map_err(failed)?;
    register.call((cls,), Some(&kwargs)).map(drop).map_err(failed)
}

/// Register one recorded strategy: `("selector", cls, facts, size_oracle, hooks)` or
/// `("local", cls)`.
fn register(name: &str, entry: &Bound<'_, PyAny>) -> PyResult<()> {
    let kind: String = entry.get_item(0)?.extract()?;
    let cls = entry.get_item(1)?.unbind();
    if kind == "selector" {
        let facts: Vec<String> = entry.get_item(2)?.extract()?;
        let size_oracle: bool = entry.get_item(3)?.extract()?;
        let hooks: Vec<String> = entry.get_item(4)?.extract()?;
        selector::register_selector(name, cls, facts, size_oracle, hooks)
    } else {
        local::register_local(name, cls)
    }
}
