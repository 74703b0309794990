//! One module per sub-command.

pub mod bench;
pub mod bound;
pub mod cassandra;
pub mod compare;
pub mod demo;
pub mod experiment;
pub mod merge;
pub mod new;
pub mod presets;
pub mod report;
pub mod reproduce;
pub mod sim;
pub mod trace;
