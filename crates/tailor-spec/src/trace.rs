//! Reading the trace a spec replays (`workload.trace`, `workload.trace_format`): the one place
//! every engine and command reads a trace file from.

use crate::WorkloadSpec;
use tailor_core::workload::trace::{self, Trace};

/// Read and decode `w.trace` in `w.trace_format`; the error names the file.
pub fn load(w: &WorkloadSpec) -> Result<Trace, String> {
    read(&w.trace, w.trace_format)
}

/// Read and decode the trace file at `path` in `format`; the error names the file.
pub fn read(path: &str, format: trace::TraceFormat) -> Result<Trace, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("reading trace {path}: {e}"))?;
    let name = std::path::Path::new(path).file_name().map_or(path.into(), |n| n.to_string_lossy());
    trace::decode(&bytes, format, &name).map_err(|e| format!("workload.trace {path}: {e}"))
}
