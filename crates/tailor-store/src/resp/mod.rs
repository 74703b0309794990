//! RESP2, the Redis client protocol: reply frames and a bounded command parser.

pub mod codec;
pub mod frame;

pub use codec::{parse_bulk_header, parse_command, Limit, Limits, Parsed, ProtocolError, TooLarge};
pub use frame::Reply;
