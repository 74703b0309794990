//! The comparison table printed after a run: one row per swept point × selector × local policy,
//! figures averaged over seeds.

use std::collections::BTreeMap;
use std::fmt::Write;
use tailor_core::results::RunResult;

/// Rows of a comparison, in first-seen order.
pub fn render(runs: &[RunResult]) -> String {
    let mut groups: Vec<(String, Vec<&RunResult>)> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for r in runs {
        let key = format!("{:?}|{}|{}", r.params, r.selector, r.local);
        match index.get(&key) {
            Some(&i) => groups[i].1.push(r),
            None => {
                index.insert(key.clone(), groups.len());
                groups.push((key, vec![r]));
            }
        }
    }
    let param_names: Vec<String> = runs.first().map(|r| r.params.keys().cloned().collect()).unwrap_or_default();
    let mut header: Vec<String> = param_names.iter().map(|p| p.rsplit('.').next().unwrap_or(p).to_string()).collect();
    let with_bound = runs.iter().any(|r| r.bound.is_some());
    header.extend(
        ["selector", "local", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms", "max ms", "tput/s", "stretch p99"]
            .map(String::from),
    );
    if with_bound {
        header.push("max/bound".into());
    }
    header.push("seeds".into());
    let mut rows: Vec<Vec<String>> = vec![header];
    for (_, group) in &groups {
        let n = group.len() as f64;
        let avg = |f: &dyn Fn(&RunResult) -> f64| group.iter().map(|r| f(r)).sum::<f64>() / n;
        let first = group[0];
        let mut row: Vec<String> = param_names.iter().map(|p| first.params[p].clone()).collect();
        row.push(first.selector.clone());
        row.push(first.local.clone());
        for v in [
            avg(&|r| r.read_latency_ms.p50),
            avg(&|r| r.read_latency_ms.p95),
            avg(&|r| r.read_latency_ms.p99),
            avg(&|r| r.read_latency_ms.p999),
            avg(&|r| r.read_latency_ms.max),
        ] {
            row.push(format!("{v:.2}"));
        }
        row.push(format!("{:.0}", avg(&|r| r.throughput_rps)));
        row.push(format!("{:.2}", avg(&|r| r.stretch.p99)));
        if with_bound {
            row.push(format!("{:.3}", avg(&|r| r.bound.map_or(f64::NAN, |b| b.ratio))));
        }
        row.push(group.len().to_string());
        rows.push(row);
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            // text left, numbers right
            if c < param_names.len() + 2 {
                let _ = write!(out, "{cell}{}  ", " ".repeat(pad));
            } else {
                let _ = write!(out, "{}{cell}  ", " ".repeat(pad));
            }
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_seeds_into_one_row() {
        let mut a = RunResult { selector: "c3".into(), local: "fcfs".into(), ..Default::default() };
        a.params.insert("workload.load".into(), "0.9".into());
        a.read_latency_ms.p99 = 10.0;
        let mut b = a.clone();
        b.seed = 2;
        b.read_latency_ms.p99 = 20.0;
        let text = render(&[a, b]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("load") && lines[0].contains("p99 ms"));
        assert!(lines[2].contains("15.00") && lines[2].trim_end().ends_with('2'), "{text}");
    }
}
