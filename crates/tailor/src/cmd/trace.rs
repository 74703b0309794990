//! `tailor trace FILE`: what a trace holds, read as the simulator and `tailor bench` read it
//! (format, operations kept and skipped, keys, rate, sizes), and the command that replays it.

use crate::trace_summary::{parse_format, TraceSummary};
use anyhow::Result;
use tailor_core::workload::trace::TraceFormat;

/// Arguments of `tailor trace`.
#[derive(clap::Args)]
pub struct TraceArgs {
    /// The trace file (Tailor's CSV, Twitter's cache-trace CSV or oracleGeneral; zstd-compressed or not).
    file: String,
    /// Its format: auto, tailor, twitter or oracle-general.
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    format: TraceFormat,
}

/// Read the trace and print its summary.
pub fn run(args: TraceArgs) -> Result<()> {
    let trace = tailor_spec::trace::read(&args.file, args.format).map_err(anyhow::Error::msg)?;
    print!("{}", TraceSummary::of(&args.file, &trace).text());
    let (set, flag) = match args.format {
        TraceFormat::Auto => (String::new(), String::new()),
        f => (format!(" --set workload.trace_format={}", f.name()), format!(" --format {}", f.name())),
    };
    println!("replay      tailor sim demo --set workload.arrival=trace --set workload.trace={}{set}", args.file);
    println!("compare     tailor compare --trace {}{flag} --servers 5 --replication 3", args.file);
    Ok(())
}
