//! Finding and reading results files.

use crate::data::Strategy;
use crate::error::ReportError;
use std::path::{Path, PathBuf};
use tailor_core::results::{Results, RESULTS_FORMAT};

/// One results file as read.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its content.
    pub results: Results,
    /// The per-second series of its live runs (`timeseries.csv` beside it or in `live/*/`).
    pub timeseries: Vec<Series>,
}

/// One live run's `timeseries.csv`: which run, and its rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// The run's strategy, from the `results.json` beside the CSV.
    pub strategy: Strategy,
    /// Its seed.
    pub seed: u64,
    /// One row per second.
    pub rows: Vec<Second>,
}

/// One row of `timeseries.csv` (the columns the report plots).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Second {
    /// Second of the run.
    pub second: f64,
    /// Whether it lies in the warm-up.
    pub warmup: bool,
    /// Requests completed in it.
    pub completed: f64,
    /// Requests that failed or timed out in it.
    pub errors: f64,
    /// p99 latency of its completions, ms.
    pub p99_ms: f64,
}

/// Read every results file named by `paths`: a file is read as is; a directory contributes its
/// `results.json` and `results-*.json` (e.g. `results-sim.json`, `results-live.json`), in name order.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Source>, ReportError> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            for file in results_files(path)? {
                out.push(load_file(&file)?);
            }
        } else {
            out.push(load_file(path)?);
        }
    }
    Ok(out)
}

/// The results files of a directory, `results.json` first, then `results-*.json` by name.
pub fn results_files(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ReportError::Read { path: dir.to_path_buf(), source })?;
    let mut named: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| ReportError::Read { path: dir.to_path_buf(), source })?;
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with("results-") && name.ends_with(".json") {
            named.push(entry.path());
        }
    }
    named.sort();
    let main = dir.join("results.json");
    if main.is_file() {
        named.insert(0, main);
    }
    if named.is_empty() {
        return Err(ReportError::NoResults { dir: dir.to_path_buf() });
    }
    Ok(named)
}

/// Read and check one results file.
pub fn load_file(path: &Path) -> Result<Source, ReportError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| ReportError::Read { path: path.to_path_buf(), source })?;
    // read the version first so an old or future file gets a version error, not a missing-field one
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| ReportError::Parse { path: path.to_path_buf(), source })?;
    if let Some(found) = value.get("format").and_then(serde_json::Value::as_u64) {
        if found != RESULTS_FORMAT as u64 {
            return Err(ReportError::Format {
                path: path.to_path_buf(),
                found: found.min(u32::MAX as u64) as u32,
                expected: RESULTS_FORMAT,
            });
        }
    }
    let results: Results =
        serde_json::from_value(value).map_err(|source| ReportError::Parse { path: path.to_path_buf(), source })?;
    if results.engine.trim().is_empty() {
        return Err(ReportError::Invalid { path: path.to_path_buf(), reason: "the engine field is empty".into() });
    }
    let timeseries = if results.engine == "live" { timeseries_near(path) } else { Vec::new() };
    Ok(Source { path: path.to_path_buf(), results, timeseries })
}

/// The series of a live results file: `timeseries.csv` beside it (`tailor bench`) or in each
/// run directory under `live/` (`tailor experiment`). Unreadable files are skipped: the series is
/// an extra view, and the results file alone still makes a report.
fn timeseries_near(path: &Path) -> Vec<Series> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut dirs = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir.join("live")) {
        let mut runs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
        runs.sort();
        dirs.extend(runs);
    }
    dirs.iter().filter_map(|d| read_series(d)).collect()
}

/// The series in `dir`, labelled by the first run of the `results.json` (or this file) there.
fn read_series(dir: &Path) -> Option<Series> {
    let csv = std::fs::read_to_string(dir.join("timeseries.csv")).ok()?;
    let results = std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| {
        let name = p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        name.starts_with("results") && name.ends_with(".json")
    })?;
    let run = serde_json::from_str::<Results>(&std::fs::read_to_string(results).ok()?).ok()?.runs.into_iter().next()?;
    Some(Series { strategy: Strategy::of(&run), seed: run.seed, rows: parse_timeseries(&csv) })
}

/// Rows of a `timeseries.csv`, columns found by header name; malformed rows are skipped.
pub fn parse_timeseries(csv: &str) -> Vec<Second> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| header.iter().position(|h| h.trim() == name);
    let (Some(s), Some(w), Some(c), Some(e), Some(p)) =
        (col("second"), col("warmup"), col("completed"), col("errors"), col("p99_ms"))
    else {
        return Vec::new();
    };
    lines
        .filter_map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let num = |i: usize| f.get(i)?.trim().parse::<f64>().ok();
            Some(Second {
                second: num(s)?,
                warmup: f.get(w)?.trim() == "true",
                completed: num(c)?,
                errors: num(e)?,
                p99_ms: num(p)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeseries_columns_are_found_by_name() {
        let csv = "second,warmup,offered,completed,errors,p50_ms,p99_ms,max_ms\n\
                   0,true,10,9,1,1.0,2.5,3.0\n1,false,10,10,0,1.0,2.0,2.0\nbroken\n";
        let rows = parse_timeseries(csv);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0], Second { second: 0.0, warmup: true, completed: 9.0, errors: 1.0, p99_ms: 2.5 });
        assert!(parse_timeseries("a,b\n1,2\n").is_empty());
    }
    use crate::data::tests::results;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tailor-report-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn reads_a_dir_with_sim_and_live_files() {
        let dir = temp_dir("both");
        for engine in ["sim", "live"] {
            let json = serde_json::to_string(&results(engine)).unwrap();
            std::fs::write(dir.join(format!("results-{engine}.json")), json).unwrap();
        }
        std::fs::write(dir.join("results.csv"), "ignored").unwrap();
        let sources = load(std::slice::from_ref(&dir)).unwrap();
        let engines: Vec<&str> = sources.iter().map(|s| s.results.engine.as_str()).collect();
        assert_eq!(engines, ["live", "sim"]);
        std::fs::write(dir.join("results.json"), serde_json::to_string(&results("sim")).unwrap()).unwrap();
        assert_eq!(results_files(&dir).unwrap()[0], dir.join("results.json"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_inputs_name_the_file() {
        let dir = temp_dir("bad");
        let err = load(std::slice::from_ref(&dir)).unwrap_err().to_string();
        assert!(err.contains("holds no results.json"), "{err}");
        let file = dir.join("results.json");
        std::fs::write(&file, "{\"not\": \"results\"}").unwrap();
        let err = load(std::slice::from_ref(&dir)).unwrap_err().to_string();
        assert!(err.contains("results.json is not a Tailor results file"), "{err}");
        std::fs::write(&file, "garbage").unwrap();
        assert!(matches!(load_file(&file), Err(ReportError::Parse { .. })));
        let mut future = results("sim");
        future.format = 99;
        std::fs::write(&file, serde_json::to_string(&future).unwrap()).unwrap();
        let err = load_file(&file).unwrap_err().to_string();
        assert!(err.contains("results format 99"), "{err}");
        let mut blank = results("sim");
        blank.engine.clear();
        std::fs::write(&file, serde_json::to_string(&blank).unwrap()).unwrap();
        assert!(load_file(&file).unwrap_err().to_string().contains("engine"));
        let missing = dir.join("nope.json");
        assert!(load_file(&missing).unwrap_err().to_string().contains("nope.json"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
