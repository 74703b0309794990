//! The Redis client protocol as the store speaks it: [`tailor_resp`]'s bounded command parser
//! and RESP2/RESP3 encoder, its frames named [`Reply`] here (what a command answers).

pub use tailor_resp::Frame as Reply;
pub use tailor_resp::{parse_bulk_header, parse_command, Limit, Limits, Parsed, Protocol, ProtocolError, TooLarge};
