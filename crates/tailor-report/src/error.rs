//! What can go wrong while reading results and writing the report.

use std::path::PathBuf;

/// A report error; every variant names the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A results file or directory could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not JSON of the results shape.
    #[error("{} is not a Tailor results file: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What serde found wrong.
        source: serde_json::Error,
    },
    /// A results file of another format version.
    #[error("{}: results format {found}, but this tailor reads format {expected}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// Its `format` field.
        found: u32,
        /// The supported version.
        expected: u32,
    },
    /// A results file that parses but cannot be reported on.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A directory without results files.
    #[error("{} holds no results.json (nor results-sim.json / results-live.json)", dir.display())]
    NoResults {
        /// The directory.
        dir: PathBuf,
    },
    /// An output file could not be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An SVG could not be rasterised.
    #[error("rendering {name} to PNG: {reason}")]
    Png {
        /// The plot name.
        name: String,
        /// Why.
        reason: String,
    },
}
