//! Log output: `tracing` events on stderr as text (coloured only on a terminal, so files and
//! pipes get no escape codes) or as JSON lines for a log collector. The format is handed to
//! node processes this one starts through [`tailor_store::cluster::LOG_FORMAT_ENV`].

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// How log lines are written (`--log-format`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One human-readable line per event.
    Text,
    /// One JSON object per event: `timestamp`, `level`, `target`, `fields` (the message and
    /// the event's structured fields).
    Json,
}

impl Format {
    /// Its `--log-format` value.
    fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
        }
    }
}

/// Install the global subscriber (level from `RUST_LOG`; by default `info`, and `warn` for the
/// CQL driver, whose per-connection info lines are noise in a bench, and for the storage
/// engine, whose `log` records (bridged, so its I/O errors reach the node's log) say `info` at
/// every open) and export the format for child nodes.
pub fn init(format: Format) {
    // set before any thread exists (only the main thread runs here), as set_var requires
    std::env::set_var(tailor_store::cluster::LOG_FORMAT_ENV, format.name());
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,scylla=warn,fjall=warn,lsm_tree=warn".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        Format::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        Format::Json => builder.json().with_ansi(false).init(),
    }
}
