//! `tailor`: one binary for every engine and tool.

mod cmd;
mod compare;
mod live;
mod live_faults;
mod live_sends;
mod logging;
mod panic_log;
mod progress;
mod python;
mod reproduce;
mod table;
mod trace_summary;

use clap::{Parser, Subcommand};

/// mimalloc for every command (why: see Cargo.toml); simulator results do not depend on it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Make mimalloc give freed memory back to the OS at once instead of after 1 s of further
/// allocator activity (v3's default): an idle node otherwise keeps the memory of its last burst
/// (a node that served 32 pipelined 1 MiB GETs kept 120 MB more RSS), and the limits on what a
/// client may make a node hold are checked on RSS. Measured: no throughput cost under SET or GET
/// load. A `MIMALLOC_PURGE_DELAY` in the environment wins.
fn return_freed_memory_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // `mi_option_purge_delay` in mimalloc.h; libmimalloc-sys names no constant for it. Its
    // default is 1000 (ms) in mimalloc v3: checked, so a renumbered option is caught.
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: plain reads and writes of a global option, allowed at any time by mimalloc.
    unsafe {
        assert_eq!(libmimalloc_sys::mi_option_get(PURGE_DELAY), 1000, "mimalloc's purge_delay option moved");
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 0);
    }
}

/// Tail-latency scheduling for replicated key-value stores.
#[derive(Parser)]
#[command(name = "tailor", version, about)]
struct Cli {
    /// Log lines on stderr as text or as one JSON object per line (nodes started by `cluster
    /// up`, `experiment` or `demo` log the same way).
    #[arg(long, global = true, value_enum, default_value_t = logging::Format::Text)]
    log_format: logging::Format,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment in the discrete-event simulator.
    Sim(cmd::sim::SimArgs),
    /// Merge the shard files of `sim --shard I/N` into the results of the whole sweep.
    Merge(cmd::merge::MergeArgs),
    /// Lower bound (LP relaxation) on the max weighted flow of an instance or a preset's requests.
    Bound(cmd::bound::BoundArgs),
    /// The one-step tour: a small comparison in the simulator and on a live cluster, with a report.
    Demo(cmd::demo::DemoArgs),
    /// Run a spec in the simulator, on fresh live clusters, or both, side by side.
    Experiment(cmd::experiment::ExperimentArgs),
    /// List the built-in presets, or print one as TOML.
    Presets(cmd::presets::PresetsArgs),
    /// Run one store node.
    Node(tailor_store::cli::NodeArgs),
    /// Start or stop a loopback cluster of store nodes.
    Cluster(tailor_store::cli::ClusterArgs),
    /// A real Apache Cassandra on loopback: fetch, start and stop it, and compare every policy on it.
    Cassandra(cmd::cassandra::CassandraArgs),
    /// Drive live nodes with a workload, open loop, and write results.
    Bench(cmd::bench::BenchArgs),
    /// Turn results files into one self-contained HTML page with plots.
    Report(cmd::report::ReportArgs),
    /// Run the sources' headline claims in the simulator and judge each: theirs beside ours.
    Reproduce(cmd::reproduce::ReproduceArgs),
    /// Start a new selector or local policy from a template, registered, with the commands to try it.
    New(cmd::new::NewArgs),
    /// What a trace file holds (format, operations, keys, rate, sizes) and how to replay it.
    Trace(cmd::trace::TraceArgs),
    /// Which strategy for my workload: every selector × local policy on a trace, ranked by p99 with CIs.
    Compare(cmd::compare::CompareArgs),
}

fn main() {
    return_freed_memory_at_once();
    let cli = Cli::parse();
    logging::init(cli.log_format);
    panic_log::install();
    if let Err(e) = python::load() {
        eprintln!("error: {}", describe(&e));
        std::process::exit(2);
    }
    let outcome = match cli.command {
        Command::Sim(args) => cmd::sim::run(args),
        Command::Merge(args) => cmd::merge::run(args),
        Command::Bound(args) => cmd::bound::run(args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Experiment(args) => cmd::experiment::run(args),
        Command::Presets(args) => cmd::presets::run(args),
        Command::Node(args) => tailor_store::cli::run_node(&args).map_err(Into::into),
        Command::Cluster(args) => tailor_store::cli::run_cluster(&args).map_err(Into::into),
        Command::Cassandra(args) => cmd::cassandra::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Reproduce(args) => cmd::reproduce::run(args),
        Command::New(args) => cmd::new::run(args),
        Command::Trace(args) => cmd::trace::run(args),
        Command::Compare(args) => cmd::compare::run(args),
    };
    if let Err(e) = outcome {
        eprintln!("error: {}", describe(&e));
        let invalid = e.downcast_ref::<cmd::experiment::AllLiveRunsInvalid>().is_some();
        std::process::exit(if invalid { cmd::experiment::INVALID_EXIT_CODE } else { 2 });
    }
}

/// An error and its causes on one line, each cause once: many errors already name their cause
/// in their own message, and printing the chain again would say it twice.
fn describe(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}
