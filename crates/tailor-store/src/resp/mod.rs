//! The Redis client protocol: reply frames, their RESP2/RESP3 encoding, and a bounded command
//! parser.

pub mod codec;
pub mod encode;
pub mod frame;

pub use codec::{parse_bulk_header, parse_command, Limit, Limits, Parsed, ProtocolError, TooLarge};
pub use encode::Protocol;
pub use frame::Reply;
