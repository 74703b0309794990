//! One module per sub-command.

pub mod bound;
pub mod presets;
pub mod sim;
pub mod spec_arg;
