//! One row per run: the columns of `results.csv` and of the Python package's runs frame, defined
//! once so the two cannot drift.

use crate::results::RunResult;

/// One value of a flat table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Text (names, reasons).
    Text(String),
    /// A count.
    Count(u64),
    /// A figure; `None` where the run has none (no bound solved).
    Figure(Option<f64>),
    /// A yes/no verdict.
    Flag(bool),
}

/// How a figure column reads a run.
type Figure = fn(&RunResult) -> f64;

/// How swept parameters appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Params {
    /// One `params` text column, `path=value` joined by `;` (results.csv).
    Joined,
    /// One column per swept parameter, named by its dotted path, values as text (frames).
    Split,
}

/// The columns of `runs`, in order, each with one cell per run.
pub fn columns(runs: &[RunResult], params: Params) -> Vec<(String, Vec<Cell>)> {
    let text = |f: &dyn Fn(&RunResult) -> String| runs.iter().map(|r| Cell::Text(f(r))).collect::<Vec<_>>();
    let count = |f: &dyn Fn(&RunResult) -> u64| runs.iter().map(|r| Cell::Count(f(r))).collect::<Vec<_>>();
    let figure = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(|r| Cell::Figure(Some(f(r)))).collect::<Vec<_>>();
    let mut out: Vec<(String, Vec<Cell>)> = vec![("selector".into(), text(&|r| r.selector.clone()))];
    out.push(("local".into(), text(&|r| r.local.clone())));
    match params {
        Params::Joined => out.push((
            "params".into(),
            text(&|r| r.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";")),
        )),
        Params::Split => {
            let names = runs.first().map(|r| r.params.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
            for name in names {
                let cells = text(&|r| r.params.get(&name).cloned().unwrap_or_default());
                out.push((name, cells));
            }
        }
    }
    out.push(("seed".into(), count(&|r| r.seed)));
    out.push(("requests".into(), count(&|r| r.requests)));
    let latency: [(&str, Figure); 6] = [
        ("p50_ms", |r| r.read_latency_ms.p50),
        ("p95_ms", |r| r.read_latency_ms.p95),
        ("p99_ms", |r| r.read_latency_ms.p99),
        ("p999_ms", |r| r.read_latency_ms.p999),
        ("max_ms", |r| r.read_latency_ms.max),
        ("mean_ms", |r| r.read_latency_ms.mean),
    ];
    for (name, f) in latency {
        out.push((name.into(), figure(&f)));
    }
    out.push(("throughput_rps".into(), figure(&|r| r.throughput_rps)));
    out.push(("offered_rps".into(), figure(&|r| r.offered_rps)));
    out.push(("stretch_p99".into(), figure(&|r| r.stretch.p99)));
    out.push(("small_behind_large".into(), count(&|r| r.small_behind_large)));
    out.push(("bound_ratio".into(), runs.iter().map(|r| Cell::Figure(r.bound.map(|b| b.ratio))).collect()));
    // queue figures (simulator only; empty for live runs)
    let queueing: [(&str, QueueFigure); 3] = [
        ("util_max", |q| q.max_utilisation()),
        ("in_system", |q| q.servers.iter().map(|s| s.mean_in_system).sum()),
        ("waiting", |q| q.servers.iter().map(|s| s.mean_waiting).sum()),
    ];
    for (name, f) in queueing {
        out.push((name.into(), runs.iter().map(|r| Cell::Figure(r.queueing.as_ref().map(f))).collect()));
    }
    out.push(("errors".into(), count(&|r| r.errors_besides_timeouts())));
    out.push(("timeouts".into(), count(&|r| r.timeouts())));
    out.push(("valid".into(), runs.iter().map(|r| Cell::Flag(r.is_valid())).collect()));
    out.push(("invalid_reasons".into(), text(&|r| r.invalid_reasons.join("; "))));
    out
}

/// A figure of a run's queue measures.
type QueueFigure = fn(&crate::results::Queueing) -> f64;

/// `results.csv`: a header, then one line per run (figures as Rust prints them, which reads
/// back to the same bits; text quoted where it may hold commas).
pub fn to_csv(runs: &[RunResult]) -> String {
    let cols = columns(runs, Params::Joined);
    let mut csv = cols.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(",");
    csv.push('\n');
    for i in 0..runs.len() {
        let cells: Vec<String> = cols.iter().map(|(name, cells)| csv_cell(name, &cells[i])).collect();
        csv.push_str(&cells.join(","));
        csv.push('\n');
    }
    csv
}

fn csv_cell(column: &str, cell: &Cell) -> String {
    match cell {
        Cell::Text(t) if matches!(column, "params" | "invalid_reasons") => format!("\"{}\"", t.replace('"', "\"\"")),
        Cell::Text(t) => t.clone(),
        Cell::Count(n) => n.to_string(),
        Cell::Figure(f) => f.map(|v| v.to_string()).unwrap_or_default(),
        Cell::Flag(b) => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_params_and_reasons_and_leaves_missing_bounds_empty() {
        let mut r =
            RunResult { selector: "c3".into(), local: "fcfs".into(), seed: 2, requests: 10, ..Default::default() };
        r.params.insert("workload.load".into(), "0.5".into());
        r.read_latency_ms.p99 = 1.25;
        r.valid = Some(false);
        r.invalid_reasons = vec!["a \"b\"".into(), "c".into()];
        r.errors = 5;
        r.extra.insert("timeouts".into(), 2.0);
        let csv = to_csv(&[r.clone()]);
        let mut lines = csv.lines();
        assert!(lines.next().unwrap().starts_with("selector,local,params,seed,requests,p50_ms,"));
        let row = lines.next().unwrap();
        assert!(row.starts_with("c3,fcfs,\"workload.load=0.5\",2,10,0,0,1.25,"), "{row}");
        assert!(row.ends_with(",,3,2,false,\"a \"\"b\"\"; c\""), "{row}");
        let split = columns(&[r], Params::Split);
        assert_eq!(split[2], ("workload.load".to_string(), vec![Cell::Text("0.5".into())]));
    }
}
