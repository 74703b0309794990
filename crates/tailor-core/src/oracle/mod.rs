//! Oracles: what a coordinator may know about the workload (ALGORITHMS.md §4).

pub mod popularity;
