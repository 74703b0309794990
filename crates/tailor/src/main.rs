//! `tailor`: the command-line entry point.

use clap::{Parser, Subcommand};

/// Tail-latency scheduling for replicated key-value stores.
#[derive(Parser)]
#[command(name = "tailor", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one store node.
    Node(tailor_store::cli::NodeArgs),
    /// Start or stop a loopback cluster of store nodes.
    Cluster(tailor_store::cli::ClusterArgs),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Node(a) => tailor_store::cli::run_node(&a)?,
        Command::Cluster(a) => tailor_store::cli::run_cluster(&a)?,
    }
    Ok(())
}
