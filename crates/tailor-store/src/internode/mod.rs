//! The internode protocol: length-prefixed binary frames with a version byte.

pub mod codec;
pub mod message;

pub use codec::{decode, encode, finish_frame, read_frame, wait_frame, DecodeError, VERSION};
pub use message::Message;
