//! Tailor's one RESP implementation, shared by the store (which parses clients' commands and
//! encodes replies) and the bench (which encodes commands and parses replies).
//!
//! Pure: buffer in, frame out. Nothing here reads a socket; a caller keeps its received bytes
//! in a buffer, asks the parser for the next command or frame, and reads more when told the
//! input is incomplete. Every size a peer declares is checked against a limit before anything
//! is allocated for it.
//!
//! - [`parse`]: [`parse_command`] (what a server reads: arrays of bulk strings and inline
//!   commands, with the store's size limits) and [`parse_frame`] (what a client reads: any
//!   RESP2/RESP3 reply), over the same line, number and bulk-header readers.
//! - [`frame`]: [`Frame`], a value of the protocol independent of its version.
//! - [`encode`]: a frame's wire form in RESP2 or RESP3, and a command's.

pub mod encode;
pub mod frame;
pub mod parse;

pub use encode::{encode_command, Protocol};
pub use frame::Frame;
pub use parse::{
    parse_bulk_header, parse_command, parse_frame, FrameLimits, Limit, Limits, Parsed, ProtocolError, TooLarge,
};
