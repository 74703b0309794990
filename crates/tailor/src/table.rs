//! The comparison table printed after a run: one row per swept point × selector × local policy,
//! each figure the median over seeds (one unlucky seed must not make a row: a mean p99 over seeds
//! was dominated by the worst one), with the p99's range over seeds beside it. Simulated runs add
//! `util max`, the busiest server's utilisation. Runs with multi-gets add their keys per
//! multi-get and their own p99 and p99.9 (`mget`: a multi-get's latency is its last key's; the
//! other latency columns are single reads'). Live runs add `errors`, `timeouts` (summed over seeds) and
//! `valid` (tailor-bench's validity verdict), so an invalid run cannot pass for a result.

use std::collections::BTreeMap;
use std::fmt::Write;
use tailor_bench::validity::Figures;
use tailor_core::results::RunResult;
use tailor_report::data::Spread;

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
    let live = runs.iter().any(|r| r.valid.is_some());
    let queued = runs.iter().any(|r| r.queueing.is_some());
    let mget = runs.iter().any(|r| r.multiget.is_some());
    header.extend(
        ["selector", "local", "p50 ms", "p95 ms", "p99 ms", "p99 range", "p99.9 ms", "max ms", "tput/s", "stretch p99"]
            .map(String::from),
    );
    if mget {
        header.extend(["mget keys", "mget p99 ms", "mget p99.9 ms"].map(String::from));
    }
    if with_bound {
        header.push("max/bound".into());
    }
    if queued {
        header.push("util max".into());
    }
    header.push("seeds".into());
    if live {
        header.extend(["errors", "timeouts", "valid"].map(String::from));
    }
    let mut rows: Vec<Vec<String>> = vec![header];
    for (_, group) in &groups {
        let avg = |f: &dyn Fn(&RunResult) -> f64| Spread::of(group.iter().map(|r| f(r))).median;
        let first = group[0];
        let mut row: Vec<String> = param_names.iter().map(|p| first.params[p].clone()).collect();
        row.push(first.selector.clone());
        row.push(first.local.clone());
        for v in [avg(&|r| r.read_latency_ms.p50), avg(&|r| r.read_latency_ms.p95), avg(&|r| r.read_latency_ms.p99)] {
            row.push(format!("{v:.2}"));
        }
        row.push(range(Spread::of(group.iter().map(|r| r.read_latency_ms.p99))));
        for v in [avg(&|r| r.read_latency_ms.p999), avg(&|r| r.read_latency_ms.max)] {
            row.push(format!("{v:.2}"));
        }
        row.push(format!("{:.0}", avg(&|r| r.throughput_rps)));
        row.push(format!("{:.2}", avg(&|r| r.stretch.p99)));
        if mget {
            row.push(first.multiget.as_ref().map_or("-".into(), |m| match m.keys_max {
                0 => m.keys.to_string(),
                most => format!("{}-{most}", m.keys),
            }));
            let mget = |f: fn(&tailor_core::stats::Summary) -> f64| {
                avg(&|r: &RunResult| r.multiget.as_ref().map_or(f64::NAN, |m| f(&m.latency_ms)))
            };
            row.push(format!("{:.2}", mget(|s| s.p99)));
            row.push(format!("{:.2}", mget(|s| s.p999)));
        }
        if with_bound {
            row.push(format!("{:.3}", avg(&|r| r.bound.map_or(f64::NAN, |b| b.ratio))));
        }
        if queued {
            row.push(format!("{:.2}", avg(&|r| r.queueing.as_ref().map_or(f64::NAN, |q| q.max_utilisation()))));
        }
        row.push(group.len().to_string());
        if live {
            row.extend(validity_cells(group));
        }
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

/// `min-max` of a spread over seeds, or `-` for a single seed.
fn range(s: Spread) -> String {
    if s.n < 2 {
        "-".into()
    } else {
        format!("{:.1}-{:.1}", s.min, s.max)
    }
}

/// `errors` (other than timeouts) and `timeouts` summed over the group, and "ok", "INVALID" or,
/// when only some seeds are invalid, "INVALID k/n".
fn validity_cells(group: &[&RunResult]) -> [String; 3] {
    let figures: Vec<Figures> = group.iter().map(|r| Figures::of(r)).collect();
    let invalid = group.iter().filter(|r| !r.is_valid()).count();
    let valid = match invalid {
        0 => "ok".to_string(),
        n if n == group.len() => "INVALID".to_string(),
        n => format!("INVALID {n}/{}", group.len()),
    };
    [
        figures.iter().map(|f| f.errors).sum::<u64>().to_string(),
        figures.iter().map(|f| f.timeouts).sum::<u64>().to_string(),
        valid,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multigets_add_their_keys_and_tail() {
        let mut a = RunResult { selector: "c3".into(), local: "rein-sbf".into(), ..Default::default() };
        let mut m = tailor_core::results::MultigetResult { keys: 2, keys_max: 40, ..Default::default() };
        m.latency_ms.p99 = 31.5;
        m.latency_ms.p999 = 80.25;
        a.multiget = Some(m);
        let text = render(&[a]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("mget keys") && lines[0].contains("mget p99 ms"), "{text}");
        assert!(lines[2].contains("2-40") && lines[2].contains("31.50") && lines[2].contains("80.25"), "{text}");
        let plain = render(&[RunResult { selector: "c3".into(), ..Default::default() }]);
        assert!(!plain.contains("mget"), "no multi-gets, no columns: {plain}");
    }

    #[test]
    fn seeds_make_one_row_of_medians_with_the_p99_range() {
        let mut a = RunResult { selector: "c3".into(), local: "fcfs".into(), ..Default::default() };
        a.params.insert("workload.load".into(), "0.9".into());
        a.read_latency_ms.p99 = 10.0;
        let mut b = a.clone();
        b.seed = 2;
        b.read_latency_ms.p99 = 20.0;
        let text = render(&[a.clone(), b.clone()]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("load") && lines[0].contains("p99 ms"));
        assert!(lines[2].contains("15.00") && lines[2].trim_end().ends_with('2'), "{text}");
        assert!(lines[2].contains("10.0-20.0"), "{text}");
        assert!(!lines[0].contains("valid"), "simulator runs have no validity columns: {text}");
        // one seed far off does not move the median
        let mut c = b.clone();
        c.seed = 3;
        c.read_latency_ms.p99 = 900.0;
        let text = render(&[a, b, c]);
        let row = text.lines().nth(2).unwrap();
        assert!(row.contains(" 20.00 ") && row.contains("10.0-900.0"), "{text}");
    }

    #[test]
    fn live_runs_show_errors_timeouts_and_validity() {
        let mut ok = RunResult { selector: "c3".into(), local: "fcfs".into(), valid: Some(true), ..Default::default() };
        ok.errors = 0;
        let mut bad = RunResult { selector: "lor".into(), valid: Some(false), errors: 7, ..ok.clone() };
        bad.extra.insert("timeouts".into(), 5.0);
        let mut half = RunResult { selector: "eft".into(), ..bad.clone() };
        half.seed = 2;
        let half_ok = RunResult { selector: "eft".into(), ..ok.clone() };
        let text = render(&[ok, bad, half, half_ok]);
        let tail = |i: usize, n: usize| {
            let words: Vec<&str> = text.lines().nth(i).unwrap_or("").split_whitespace().collect();
            words[words.len().saturating_sub(n)..].join(" ")
        };
        assert_eq!(tail(0, 4), "seeds errors timeouts valid", "{text}");
        assert_eq!(tail(2, 4), "1 0 0 ok", "{text}");
        assert_eq!(tail(3, 4), "1 2 5 INVALID", "{text}");
        // eft: one seed invalid (2 errors, 5 timeouts), one valid
        assert_eq!(tail(4, 5), "2 2 5 INVALID 1/2", "{text}");
    }
}
