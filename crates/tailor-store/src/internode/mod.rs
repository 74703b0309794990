//! The internode protocol: length-prefixed binary frames with a version byte, signed with the
//! cluster secret when there is one (`seal.rs`).

pub mod codec;
pub mod delay;
pub mod message;
pub mod seal;
pub mod writer;

pub use codec::{decode, encode, finish_frame, read_frame, wait_frame, DecodeError, VERSION};
pub use message::{Failure, Message};
pub use seal::Seal;
