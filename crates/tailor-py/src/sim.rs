//! The simulator from Python: presets, specs with overrides, runs on every core with the GIL
//! released, and results as the command line writes them.

use crate::{fault, tailor_err};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tailor_core::flat::{self, Cell, Params};
use tailor_core::results::Results;
use tailor_spec::presets::{preset, PRESETS};
use tailor_spec::shard::{Shard, ShardResults};

pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(spec_toml, m)?)?;
    m.add_function(wrap_pyfunction!(lint, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(runs_columns, m)?)?;
    m.add_function(wrap_pyfunction!(results_csv, m)?)?;
    m.add_function(wrap_pyfunction!(results_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(strategies, m)?)?;
    Ok(())
}

/// Every preset as (name, description).
#[pyfunction]
fn presets() -> PyResult<Vec<(String, String)>> {
    PRESETS.iter().map(|(name, _)| Ok((name.to_string(), preset(name).map_err(tailor_err)?.description))).collect()
}

/// The effective spec of a preset or spec file with `path=value` overrides, as TOML.
#[pyfunction]
fn spec_toml(source: &str, sets: Vec<String>) -> PyResult<String> {
    Ok(tailor_spec::load(source, &sets).map_err(tailor_err)?.to_toml())
}

/// The spec's warnings, as `tailor sim` prints them.
#[pyfunction]
fn lint(source: &str, sets: Vec<String>) -> PyResult<Vec<String>> {
    let spec = tailor_spec::load(source, &sets).map_err(tailor_err)?;
    Ok(tailor_spec::lint::lint(&spec, &sets).iter().map(|w| w.to_string()).collect())
}

/// Built-in and registered strategies: (kind, name, source).
#[pyfunction]
fn strategies() -> Vec<(&'static str, String, String)> {
    let mut out: Vec<(&'static str, String, String)> = tailor_core::selector::REGISTRY
        .iter()
        .map(|r| ("selector", r.name.to_string(), r.source.to_string()))
        .collect();
    out.extend(tailor_core::plugin::selector::names().into_iter().map(|n| ("selector", n, "Python".into())));
    out.extend(tailor_core::local::REGISTRY.iter().map(|r| ("local", r.name.to_string(), r.source.to_string())));
    out.extend(tailor_core::plugin::local::names().into_iter().map(|n| ("local", n, "Python".into())));
    out
}

/// Run the experiment `source` with `sets` and return `results.json`'s text, byte for byte what
/// `tailor sim` writes. The simulation runs on its own thread (rayon on every core) while this
/// thread, without the GIL, wakes five times a second to call `progress(runs_done, runs,
/// requests_done, requests)` and to let Ctrl-C through.
///
/// With `shard` (`"I/N"`, 0-based) only the runs at positions p % N == I run, and the text is
/// the shard file `tailor sim --shard I/N` writes (for [`merge`]).
#[pyfunction]
#[pyo3(signature = (source, sets, progress=None, shard=None))]
fn simulate(
    py: Python<'_>,
    source: &str,
    sets: Vec<String>,
    progress: Option<Py<PyAny>>,
    shard: Option<&str>,
) -> PyResult<(String, Option<Py<PyDict>>)> {
    let spec = tailor_spec::load(source, &sets).map_err(tailor_err)?;
    let all = tailor_spec::expand(&spec).map_err(tailor_err)?;
    let shard: Option<Shard> = shard.map(str::parse).transpose().map_err(tailor_err)?;
    let total_runs = all.len();
    let plans = match shard {
        Some(s) => s.select(&all),
        None => all,
    };
    let runs = plans.len() as u64;
    let requests: u64 = plans.iter().map(|p| p.spec.workload.requests).sum();
    let done = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let (tx, rx) = mpsc::channel();
    // `detach` needs what it borrows to be shareable; only this thread receives
    let rx = std::sync::Mutex::new(rx);
    fault::reset();
    let seen = done.clone();
    std::thread::spawn(move || {
        let outputs = tailor_sim::simulate_outputs(&spec, &plans, &|r, q| {
            seen.0.store(r, Ordering::Relaxed);
            seen.1.store(q, Ordering::Relaxed);
        });
        let answer = outputs.map_err(|e| e.to_string()).and_then(|mut outputs| {
            let kept: Vec<_> = outputs.iter_mut().map(|o| std::mem::take(&mut o.requests)).collect();
            let results = tailor_sim::results(&spec, &outputs);
            let text = match shard {
                // a shard may hold only a sweep's shortest points: the merge checks the whole
                Some(s) => pretty(&ShardResults::new(s, total_runs, results))?,
                None => match tailor_sim::measured_nothing(&spec, &results) {
                    Some(why) => return Err(why),
                    None => pretty(&results)?,
                },
            };
            Ok((text, spec.report.per_request.then_some(kept)))
        });
        let _ = tx.send(answer);
    });
    let report = |py: Python<'_>| -> PyResult<()> {
        match &progress {
            Some(p) => p
                .bind(py)
                .call1((done.0.load(Ordering::Relaxed), runs, done.1.load(Ordering::Relaxed), requests))
                .map(drop),
            None => Ok(()),
        }
    };
    loop {
        match py.detach(|| rx.lock().unwrap_or_else(|e| e.into_inner()).recv_timeout(Duration::from_millis(200))) {
            Ok(answer) => {
                if let Some(err) = fault::take() {
                    return Err(err);
                }
                report(py)?;
                let (text, kept) = answer.map_err(tailor_err)?;
                let frame = kept.map(|k| request_columns(py, &k)).transpose()?;
                return Ok((text, frame));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals().and_then(|()| report(py)) {
                    // Python strategies stop at once; native runs finish in the background
                    fault::stop();
                    return Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(tailor_err("the simulation stopped without a result (a panic: see stderr)"));
            }
        }
    }
}

/// Per-request records as columns (`run` is the run's position in the results), for a frame.
fn request_columns(py: Python<'_>, runs: &[Vec<tailor_sim::RequestRecord>]) -> PyResult<Py<PyDict>> {
    let rows: Vec<(usize, &tailor_sim::RequestRecord)> =
        runs.iter().enumerate().flat_map(|(i, rs)| rs.iter().map(move |r| (i, r))).collect();
    let ms = |ns: u64| ns as f64 / 1e6;
    let out = PyDict::new(py);
    out.set_item("run", rows.iter().map(|(i, _)| *i).collect::<Vec<_>>())?;
    out.set_item("request", rows.iter().map(|(_, r)| r.id).collect::<Vec<_>>())?;
    out.set_item("client", rows.iter().map(|(_, r)| r.client).collect::<Vec<_>>())?;
    out.set_item("key", rows.iter().map(|(_, r)| r.key).collect::<Vec<_>>())?;
    out.set_item("size", rows.iter().map(|(_, r)| r.size).collect::<Vec<_>>())?;
    out.set_item("op", rows.iter().map(|(_, r)| if r.write { "write" } else { "read" }).collect::<Vec<_>>())?;
    out.set_item("release_ms", rows.iter().map(|(_, r)| ms(r.release)).collect::<Vec<_>>())?;
    out.set_item("latency_ms", rows.iter().map(|(_, r)| ms(r.done - r.release)).collect::<Vec<_>>())?;
    Ok(out.unbind())
}

/// A results file's bytes: pretty JSON and a final newline, as the command line writes them.
fn pretty(value: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(value).map(|j| j + "\n").map_err(|e| e.to_string())
}

/// Merge shard files (pairs of a name for errors and the file's text) into the whole sweep's
/// `results.json` text, as `tailor merge` does.
#[pyfunction]
fn merge(shards: Vec<(String, String)>) -> PyResult<String> {
    let parsed = shards
        .into_iter()
        .map(|(name, text)| {
            serde_json::from_str::<ShardResults>(&text)
                .map(|s| (name.clone(), s))
                .map_err(|e| tailor_err(format!("{name} is not a shard file: {e}")))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let results = tailor_spec::shard::merge(parsed).map_err(tailor_err)?;
    pretty(&results).map_err(tailor_err)
}

fn parse(results_json: &str) -> PyResult<Results> {
    serde_json::from_str(results_json).map_err(|e| tailor_err(format!("not a Tailor results file: {e}")))
}

/// One column per figure of `results.csv`, and one per swept parameter, for a DataFrame.
#[pyfunction]
fn runs_columns<'py>(py: Python<'py>, results_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let results = parse(results_json)?;
    let out = PyDict::new(py);
    for (name, cells) in flat::columns(&results.runs, Params::Split) {
        let list = PyList::empty(py);
        for cell in cells {
            match cell {
                Cell::Text(t) => list.append(t)?,
                Cell::Count(n) => list.append(n)?,
                Cell::Figure(f) => list.append(f)?,
                Cell::Flag(b) => list.append(b)?,
            }
        }
        out.set_item(name, list)?;
    }
    Ok(out)
}

/// `results.parquet` of a results file, as `tailor sim` writes it (docs/results.md).
#[pyfunction]
fn results_parquet<'py>(py: Python<'py>, results_json: &str) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let bytes = tailor_report::parquet::to_parquet(&parse(results_json)?.runs).map_err(tailor_err)?;
    Ok(pyo3::types::PyBytes::new(py, &bytes))
}

/// `results.csv` of a results file, as `tailor sim` writes it.
#[pyfunction]
fn results_csv(results_json: &str) -> PyResult<String> {
    Ok(flat::to_csv(&parse(results_json)?.runs))
}
