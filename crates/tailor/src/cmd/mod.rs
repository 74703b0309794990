//! One module per sub-command.

pub mod bound;
pub mod bench;
pub mod presets;
pub mod sim;
pub mod spec_arg;
