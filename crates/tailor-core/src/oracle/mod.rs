//! Oracles: what a coordinator may know about the workload (ALGORITHMS.md §4).

pub mod bloom;
pub mod popularity;
pub mod size;
