//! Internode frame authentication with a cluster secret: every frame carries the first 16 bytes
//! of HMAC-SHA256(secret, frame body) after its body, and a frame whose tag does not verify is
//! refused as forged (counted, and its connection dropped) before it is decoded.
//!
//! Replay (choice): a captured frame replayed verbatim repeats an idempotent operation — a write
//! carries its version (a second apply changes nothing), reads, pings and hellos change no data
//! — so tags are not bound to a connection or a sequence number. Confidentiality is not
//! provided: run the peer port on a trusted network or under a tunnel.

use super::codec::{decode, encode, DecodeError};
use super::message::Message;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Bytes of the tag appended to each frame.
pub const TAG_BYTES: usize = 16;

/// Encodes and decodes frames, signed when the cluster has a secret.
#[derive(Clone)]
pub struct Seal {
    mac: Option<Hmac<Sha256>>,
}

impl Seal {
    /// Frames signed with `secret`, or plain frames without one.
    pub fn new(secret: Option<&str>) -> Seal {
        let mac = secret.map(|s| Hmac::<Sha256>::new_from_slice(s.as_bytes()).expect("HMAC takes any key length"));
        Seal { mac }
    }

    /// Whether frames are signed.
    pub fn signs(&self) -> bool {
        self.mac.is_some()
    }

    /// `msg` as a whole frame (length prefix included), with its tag when signing.
    pub fn encode(&self, msg: &Message) -> Vec<u8> {
        let mut frame = encode(msg);
        if let Some(mac) = &self.mac {
            let tag = mac.clone().chain_update(&frame[4..]).finalize().into_bytes();
            frame.extend_from_slice(&tag[..TAG_BYTES]);
            let len = (frame.len() - 4) as u32;
            frame[..4].copy_from_slice(&len.to_be_bytes());
        }
        frame
    }

    /// Verify a frame body's tag (when signing), then decode it.
    pub fn decode(&self, body: &[u8]) -> Result<Message, DecodeError> {
        let Some(mac) = &self.mac else { return decode(body) };
        let split = body.len().checked_sub(TAG_BYTES).ok_or(DecodeError::Forged)?;
        let (payload, tag) = body.split_at(split);
        mac.clone().chain_update(payload).verify_truncated_left(tag).map_err(|_| DecodeError::Forged)?;
        decode(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_frames_round_trip_and_forgeries_are_refused() {
        let seal = Seal::new(Some("a cluster secret of some length"));
        let msg = Message::Write {
            id: 7,
            key: b"k".to_vec(),
            version: 42,
            value: Some(b"v".to_vec()),
            tags: Default::default(),
            age: 0,
        };
        let frame = seal.encode(&msg);
        assert_eq!(seal.decode(&frame[4..]).unwrap(), msg);
        // unsigned, tampered, signed with another secret, or too short: forged
        assert_eq!(seal.decode(&encode(&msg)[4..]), Err(DecodeError::Forged));
        let mut tampered = frame.clone();
        tampered[20] ^= 1;
        assert_eq!(seal.decode(&tampered[4..]), Err(DecodeError::Forged));
        let other = Seal::new(Some("another secret of some length")).encode(&msg);
        assert_eq!(seal.decode(&other[4..]), Err(DecodeError::Forged));
        assert_eq!(seal.decode(&[1, 2, 3]), Err(DecodeError::Forged));
        // without a secret, frames are plain
        let plain = Seal::new(None);
        assert!(!plain.signs());
        assert_eq!(plain.decode(&plain.encode(&msg)[4..]).unwrap(), msg);
    }
}
