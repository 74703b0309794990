//! `tailor`: one binary for every engine and tool.

mod cmd;
mod table;

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
    /// Run an experiment in the discrete-event simulator.
    Sim(cmd::sim::SimArgs),
    /// List the built-in presets, or print one as TOML.
    Presets(cmd::presets::PresetsArgs),
}

fn main() {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Sim(args) => cmd::sim::run(args),
        Command::Presets(args) => cmd::presets::run(args),
    };
    if let Err(e) = outcome {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}
