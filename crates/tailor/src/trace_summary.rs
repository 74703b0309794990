//! What a trace holds, as a run replays it: operations kept and skipped, span and rate, key
//! popularity and sizes. `tailor trace` prints it; `tailor compare` prints it and puts it on its
//! page and in its JSON, so both say the same of one file.

use serde::Serialize;
use std::collections::HashMap;
use tailor_core::workload::trace::{op_counts, Trace, TraceFormat};

/// The summary of one decoded trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceSummary {
    /// The file as named on the command line.
    pub file: String,
    /// The format it was read in (`twitter`, `tailor`, `oracle-general`).
    pub format: String,
    /// Whether it was zstd-compressed.
    pub compressed: bool,
    /// Requests a run replays (reads and writes).
    pub requests: u64,
    /// Reads among them.
    pub reads: u64,
    /// Writes among them.
    pub writes: u64,
    /// Lines neither read nor write, by operation, with their counts (not replayed).
    pub skipped: Vec<(String, u64)>,
    /// Time from the first request to the last, in seconds.
    pub span_s: f64,
    /// Requests in the busiest whole second.
    pub peak_per_second: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Percent of requests to the hottest key.
    pub hottest_key_pct: f64,
    /// Percent of requests to the hottest 1 % of keys.
    pub hottest_1pct_keys_pct: f64,
    /// Median value size, bytes.
    pub size_median: u64,
    /// 99th percentile of value sizes, bytes.
    pub size_p99: u64,
    /// Largest value size, bytes.
    pub size_max: u64,
}

impl TraceSummary {
    /// Summarise `trace`, read from `file`.
    pub fn of(file: &str, trace: &Trace) -> TraceSummary {
        let r = &trace.records;
        let (reads, writes) = op_counts(r);
        let span_s = match (r.first(), r.last()) {
            (Some(first), Some(last)) => (last.time - first.time) as f64 / 1e9,
            _ => 0.0,
        };
        let mut per_second: HashMap<u64, u64> = HashMap::new();
        let mut per_key: HashMap<u64, u64> = HashMap::new();
        for x in r {
            *per_second.entry(x.time / 1_000_000_000).or_default() += 1;
            *per_key.entry(x.key).or_default() += 1;
        }
        let mut counts: Vec<u64> = per_key.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let pct = |n: u64| if r.is_empty() { 0.0 } else { 100.0 * n as f64 / r.len() as f64 };
        let top = |n: usize| pct(counts.iter().take(n).sum());
        let mut sizes: Vec<u64> = r.iter().map(|x| x.size).collect();
        sizes.sort_unstable();
        let q = |p: f64| if sizes.is_empty() { 0 } else { sizes[((sizes.len() - 1) as f64 * p).round() as usize] };
        TraceSummary {
            file: file.to_string(),
            format: trace.format.name().to_string(),
            compressed: trace.compressed,
            requests: r.len() as u64,
            reads,
            writes,
            skipped: trace.skipped.clone(),
            span_s,
            peak_per_second: per_second.values().max().copied().unwrap_or_default(),
            keys: counts.len() as u64,
            hottest_key_pct: top(1),
            hottest_1pct_keys_pct: top(counts.len().div_ceil(100)),
            size_median: q(0.5),
            size_p99: q(0.99),
            size_max: q(1.0),
        }
    }

    /// The summary as labelled lines, `tailor trace`'s output without its `replay` line.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let pct = |n: u64| if self.requests == 0 { 0.0 } else { 100.0 * n as f64 / self.requests as f64 };
        let mut out = vec![
            ("file", self.file.clone()),
            ("format", format!("{}{}", self.format, if self.compressed { ", zstd-compressed" } else { "" })),
            (
                "requests",
                format!(
                    "{} ({} reads, {:.1} %; {} writes, {:.1} %)",
                    self.requests,
                    self.reads,
                    pct(self.reads),
                    self.writes,
                    pct(self.writes)
                ),
            ),
        ];
        let skipped: u64 = self.skipped.iter().map(|(_, n)| n).sum();
        if skipped > 0 {
            let each: Vec<String> = self.skipped.iter().map(|(op, n)| format!("{op} {n}")).collect();
            out.push(("skipped", format!("{skipped} lines, neither read nor write ({})", each.join(", "))));
        }
        if self.requests == 0 {
            return out;
        }
        let rate = if self.span_s > 0.0 {
            format!("{:.0} requests/s on average", self.requests as f64 / self.span_s)
        } else {
            "all at once".into()
        };
        out.push(("span", format!("{:.3} s, {rate}, {} in the busiest second", self.span_s, self.peak_per_second)));
        out.push((
            "keys",
            format!(
                "{} distinct; the hottest has {:.1} % of requests, the hottest 1 % of keys {:.1} %",
                self.keys, self.hottest_key_pct, self.hottest_1pct_keys_pct
            ),
        ));
        out.push((
            "sizes",
            format!("median {} B, p99 {} B, largest {} B", self.size_median, self.size_p99, self.size_max),
        ));
        out
    }

    /// The lines as `tailor trace` prints them (label padded to 12 columns).
    pub fn text(&self) -> String {
        self.lines().iter().map(|(label, text)| format!("{label:<12}{text}\n")).collect()
    }
}

/// The format's name as the `--format` flags of `tailor trace` and `tailor compare` take it.
pub fn parse_format(s: &str) -> Result<TraceFormat, String> {
    [TraceFormat::Auto, TraceFormat::Tailor, TraceFormat::Twitter, TraceFormat::OracleGeneral]
        .into_iter()
        .find(|f| f.name() == s)
        .ok_or_else(|| format!("`{s}` is not one of auto, tailor, twitter, oracle-general"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::model::Op;
    use tailor_core::workload::trace::TraceRecord;

    fn record(time_ms: u64, key: u64, op: Op, size: u64) -> TraceRecord {
        TraceRecord { time: time_ms * 1_000_000, key, op, size }
    }

    #[test]
    fn counts_span_keys_and_sizes() {
        let trace = Trace {
            records: vec![
                record(0, 1, Op::Read, 100),
                record(500, 1, Op::Read, 100),
                record(1500, 2, Op::Write, 300),
                record(2000, 3, Op::Read, 200),
            ],
            format: TraceFormat::Tailor,
            skipped: vec![("delete".into(), 2)],
            compressed: false,
        };
        let s = TraceSummary::of("t.csv", &trace);
        assert_eq!((s.requests, s.reads, s.writes, s.keys), (4, 3, 1, 3));
        assert_eq!((s.span_s, s.peak_per_second), (2.0, 2));
        assert_eq!((s.hottest_key_pct, s.size_median, s.size_max), (50.0, 200, 300));
        let text = s.text();
        assert!(text.contains("requests    4 (3 reads, 75.0 %; 1 writes, 25.0 %)"), "{text}");
        assert!(text.contains("skipped     2 lines, neither read nor write (delete 2)"), "{text}");
        assert!(text.contains("span        2.000 s, 2 requests/s on average, 2 in the busiest second"), "{text}");
    }

    #[test]
    fn an_empty_trace_has_no_rate_keys_or_sizes() {
        let s = TraceSummary::of("e.csv", &Trace::default());
        assert_eq!(s.lines().len(), 3);
        assert_eq!(parse_format("twitter"), Ok(TraceFormat::Twitter));
        assert!(parse_format("csv").unwrap_err().contains("auto, tailor"));
    }
}
