//! One module per sub-command.

pub mod presets;
pub mod report;
pub mod sim;
pub mod spec_arg;
