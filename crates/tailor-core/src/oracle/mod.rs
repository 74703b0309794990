//! Oracles: what a coordinator may know about the workload (ALGORITHMS.md §4).
