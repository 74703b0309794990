//! placeholder
use super::WorkloadError;
use crate::time::Nanos;
/// Record.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRecord {
    pub time: Nanos,
    pub key: u64,
    pub op: crate::model::Op,
    pub size: u64,
}
/// Parse.
pub fn parse_trace(_text: &str) -> Result<Vec<TraceRecord>, WorkloadError> {
    Ok(vec![])
}
