//! Oracles: what a coordinator may know about the workload (docs/strategies.md, Facts).

pub mod bloom;
pub mod popularity;
pub mod size;
