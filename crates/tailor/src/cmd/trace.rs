//! `tailor trace FILE`: what a trace holds, read as the simulator and `tailor bench` read it
//! (format, operations kept and skipped, keys, rate, sizes), and the command that replays it.

use anyhow::Result;
use std::collections::HashMap;
use tailor_core::workload::trace::{op_counts, TraceFormat};

/// Arguments of `tailor trace`.
#[derive(clap::Args)]
pub struct TraceArgs {
    /// The trace file (Tailor's CSV, Twitter's cache-trace CSV or oracleGeneral; zstd-compressed or not).
    file: String,
    /// Its format: auto, tailor, twitter or oracle-general.
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    format: TraceFormat,
}

fn parse_format(s: &str) -> Result<TraceFormat, String> {
    [TraceFormat::Auto, TraceFormat::Tailor, TraceFormat::Twitter, TraceFormat::OracleGeneral]
        .into_iter()
        .find(|f| f.name() == s)
        .ok_or_else(|| format!("`{s}` is not one of auto, tailor, twitter, oracle-general"))
}

/// Read the trace and print its summary.
pub fn run(args: TraceArgs) -> Result<()> {
    let trace = tailor_spec::trace::read(&args.file, args.format).map_err(anyhow::Error::msg)?;
    let r = &trace.records;
    let (reads, writes) = op_counts(r);
    let pct = |n: u64| if r.is_empty() { 0.0 } else { 100.0 * n as f64 / r.len() as f64 };
    println!("file        {}", args.file);
    println!("format      {}{}", trace.format.name(), if trace.compressed { ", zstd-compressed" } else { "" });
    println!("requests    {} ({reads} reads, {:.1} %; {writes} writes, {:.1} %)", r.len(), pct(reads), pct(writes));
    let skipped: u64 = trace.skipped.iter().map(|(_, n)| n).sum();
    if skipped > 0 {
        let each: Vec<String> = trace.skipped.iter().map(|(op, n)| format!("{op} {n}")).collect();
        println!("skipped     {skipped} lines, neither read nor write ({})", each.join(", "));
    }
    if let (Some(first), Some(last)) = (r.first(), r.last()) {
        let span = (last.time - first.time) as f64 / 1e9;
        let mut per_second: HashMap<u64, u64> = HashMap::new();
        for x in r {
            *per_second.entry(x.time / 1_000_000_000).or_default() += 1;
        }
        let peak = per_second.values().max().copied().unwrap_or_default();
        let rate = if span > 0.0 {
            format!("{:.0} requests/s on average", r.len() as f64 / span)
        } else {
            "all at once".into()
        };
        println!("span        {span:.3} s, {rate}, {peak} in the busiest second");
        let mut per_key: HashMap<u64, u64> = HashMap::new();
        for x in r {
            *per_key.entry(x.key).or_default() += 1;
        }
        let mut counts: Vec<u64> = per_key.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top = |n: usize| pct(counts.iter().take(n).sum());
        println!(
            "keys        {} distinct; the hottest has {:.1} % of requests, the hottest 1 % of keys {:.1} %",
            counts.len(),
            top(1),
            top(counts.len().div_ceil(100))
        );
        let mut sizes: Vec<u64> = r.iter().map(|x| x.size).collect();
        sizes.sort_unstable();
        let q = |p: f64| sizes[((sizes.len() - 1) as f64 * p).round() as usize];
        println!("sizes       median {} B, p99 {} B, largest {} B", q(0.5), q(0.99), q(1.0));
    }
    let format = match args.format {
        TraceFormat::Auto => String::new(),
        f => format!(" --set workload.trace_format={}", f.name()),
    };
    println!("replay      tailor sim demo --set workload.arrival=trace --set workload.trace={}{format}", args.file);
    Ok(())
}
