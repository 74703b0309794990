//! The lower bound and the HTML report from Python, through the command line's own crates.

use crate::tailor_err;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use tailor_bound::{lower_bound, BoundOptions, Weighting};
use tailor_core::results::Results;

pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(bound, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    Ok(())
}

fn weighting(name: Option<&str>) -> PyResult<Option<Weighting>> {
    match name {
        None => Ok(None),
        Some("flow") => Ok(Some(Weighting::Flow)),
        Some("stretch") => Ok(Some(Weighting::Stretch)),
        Some(other) => Err(tailor_err(format!("unknown weighting `{other}` (flow, stretch)"))),
    }
}

/// The LP lower bound of an instance file (`.json`) or of a spec's first requests, as
/// `tailor bound` computes it; a dict of its figures (and, for a spec, its first run's own max
/// weighted flow and their ratio). Solved without the GIL.
#[pyfunction]
#[pyo3(signature = (source, sets, requests=None, weighting_name=None, tolerance=1e-4))]
fn bound<'py>(
    py: Python<'py>,
    source: &str,
    sets: Vec<String>,
    requests: Option<usize>,
    weighting_name: Option<&str>,
    tolerance: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let weighting = weighting(weighting_name)?;
    let solved = py.detach(|| -> Result<_, String> {
        let (inst, achieved) =
            tailor_sim::bound::bound_input(source, &sets, requests, weighting).map_err(|e| e.to_string())?;
        let opts = BoundOptions { rel_tol: tolerance, ..BoundOptions::default() };
        let bound = lower_bound(&inst, &opts).map_err(|e| e.to_string())?;
        Ok((inst, achieved, bound))
    });
    let (inst, achieved, bound) = solved.map_err(tailor_err)?;
    let out = PyDict::new(py);
    out.set_item("requests", inst.requests.len())?;
    out.set_item("machines", inst.machines)?;
    out.set_item("lower_bound", bound.value)?;
    out.set_item("relaxation_upper", bound.upper)?;
    out.set_item("feasibility_tests", bound.lp_solves)?;
    out.set_item("largest_lp_variables", bound.variables)?;
    out.set_item("solve_seconds", bound.solve_seconds)?;
    if let Some((strategy, flow)) = achieved {
        out.set_item("strategy", strategy)?;
        out.set_item("max_weighted_flow", flow)?;
        out.set_item("ratio", flow / bound.value)?;
    }
    Ok(out)
}

/// Write the HTML report of `results` (pairs of a label and `results.json` text, from Python's
/// `Results` objects) and `paths` (results files or directories, as `tailor report` reads them)
/// to `out`; with `png`, every plot as PNG into `plots/` beside it. Returns the PNG files.
#[pyfunction]
#[pyo3(signature = (results, paths, out, title=None, png=false))]
fn report(
    py: Python<'_>,
    results: Vec<(String, String)>,
    paths: Vec<PathBuf>,
    out: PathBuf,
    title: Option<String>,
    png: bool,
) -> PyResult<Vec<PathBuf>> {
    py.detach(|| -> Result<Vec<PathBuf>, String> {
        let mut sources = Vec::new();
        for (label, json) in results {
            let results: Results = serde_json::from_str(&json).map_err(|e| format!("{label}: {e}"))?;
            sources.push(tailor_report::Source { path: PathBuf::from(label), results, timeseries: Vec::new() });
        }
        sources.extend(tailor_report::load(&paths).map_err(|e| e.to_string())?);
        if sources.is_empty() {
            return Err("nothing to report: give results or paths".into());
        }
        let page = tailor_report::render(&sources, title.as_deref());
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        std::fs::write(&out, &page.html).map_err(|e| format!("writing {}: {e}", out.display()))?;
        if !png {
            return Ok(Vec::new());
        }
        let dir = out.parent().map(|d| d.join("plots")).unwrap_or_else(|| PathBuf::from("plots"));
        let export = tailor_report::write_pngs(&page.plots, &dir).map_err(|e| e.to_string())?;
        Ok(export.written)
    })
    .map_err(tailor_err)
}
