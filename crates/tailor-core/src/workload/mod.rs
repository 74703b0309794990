//! Workload generators shared by the simulator and the load generator.
