//! The envelope of every internode frame: after the message, the sender's hybrid logical clock
//! (µs; 0 from a sender without one), which the receiver's clock moves past once the frame is
//! verified (issue 36: every internode message, not only heartbeats and write versions, carries
//! it, so a node that hears from its peers by any message keeps its versions past theirs); then,
//! with a cluster secret, the first 16 bytes of HMAC-SHA256(secret, message and clock), and a
//! frame whose tag does not verify is refused as forged (counted, and its connection dropped)
//! before it is decoded. A forger therefore cannot move a clock either.
//!
//! Replay (choice): a captured frame replayed verbatim repeats an idempotent operation — a write
//! carries its version (a second apply changes nothing), reads, pings and hellos change no data
//! — so tags are not bound to a connection or a sequence number. Confidentiality is not
//! provided: run the peer port on a trusted network or under a tunnel.

use super::codec::{decode, encode, DecodeError};
use super::message::Message;
use crate::hlc::Hlc;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::sync::Arc;

/// Bytes of the tag appended to each frame.
pub const TAG_BYTES: usize = 16;

/// Bytes of the sender's clock after each message.
pub const CLOCK_BYTES: usize = 8;

/// Encodes and decodes frames, stamped with this node's clock and signed when the cluster has
/// a secret.
#[derive(Clone)]
pub struct Seal {
    mac: Option<Hmac<Sha256>>,
    clock: Option<Arc<Hlc>>,
}

impl Seal {
    /// Frames signed with `secret`, or plain frames without one.
    pub fn new(secret: Option<&str>) -> Seal {
        let mac = secret.map(|s| Hmac::<Sha256>::new_from_slice(s.as_bytes()).expect("HMAC takes any key length"));
        Seal { mac, clock: None }
    }

    /// Stamp frames with `clock` and move it past the clocks of frames received.
    pub fn stamped(self, clock: Arc<Hlc>) -> Seal {
        Seal { clock: Some(clock), ..self }
    }

    /// Whether frames are signed.
    pub fn signs(&self) -> bool {
        self.mac.is_some()
    }

    /// `msg` as a whole frame (length prefix included), with the clock, and the tag when signing.
    pub fn encode(&self, msg: &Message) -> Vec<u8> {
        let mut frame = encode(msg);
        let clock = self.clock.as_ref().map_or(0, |c| c.peek_us());
        frame.extend_from_slice(&clock.to_be_bytes());
        if let Some(mac) = &self.mac {
            let tag = mac.clone().chain_update(&frame[4..]).finalize().into_bytes();
            frame.extend_from_slice(&tag[..TAG_BYTES]);
        }
        let len = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&len.to_be_bytes());
        frame
    }

    /// Verify a frame body's tag (when signing), move this node's clock past the sender's,
    /// then decode the message.
    pub fn decode(&self, body: &[u8]) -> Result<Message, DecodeError> {
        let payload = match &self.mac {
            None => body,
            Some(mac) => {
                let split = body.len().checked_sub(TAG_BYTES).ok_or(DecodeError::Forged)?;
                let (payload, tag) = body.split_at(split);
                mac.clone().chain_update(payload).verify_truncated_left(tag).map_err(|_| DecodeError::Forged)?;
                payload
            }
        };
        let split = payload.len().checked_sub(CLOCK_BYTES).ok_or(DecodeError::Truncated(payload.len()))?;
        let (message, clock) = payload.split_at(split);
        let sent = u64::from_be_bytes(clock.try_into().expect("CLOCK_BYTES long"));
        if let (Some(hlc), 1..) = (&self.clock, sent) {
            hlc.observe_micros(sent);
        }
        decode(message)
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

    /// Every frame, whatever its message, moves the receiver's clock past the sender's (within
    /// the offset bound); a frame from a seal without a clock, or a forged one, moves nothing.
    #[test]
    fn every_frame_carries_the_senders_clock() {
        let bound = std::time::Duration::from_millis(500);
        let (ahead, behind) = (Arc::new(Hlc::new(1, bound)), Arc::new(Hlc::new(2, bound)));
        let lead_us = 200_000; // 0.2 s ahead: within the bound, so admissible
        ahead.observe_micros(ahead.wall_us() + lead_us);
        let secret = Some("a cluster secret of some length");
        let (sender, receiver) = (Seal::new(secret).stamped(ahead.clone()), Seal::new(secret).stamped(behind.clone()));
        let read = Message::Read { id: 3, key: b"k".to_vec(), tags: Default::default(), age: 0 };
        assert!(behind.peek_us() < ahead.peek_us());
        assert_eq!(receiver.decode(&sender.encode(&read)[4..]).unwrap(), read);
        assert!(behind.peek_us() >= ahead.peek_us() - 1_000, "a read moved the receiver's clock");
        let fresh = Arc::new(Hlc::new(3, bound));
        let before = fresh.peek_us();
        let plain = Seal::new(secret).encode(&read);
        assert_eq!(Seal::new(secret).stamped(fresh.clone()).decode(&plain[4..]).unwrap(), read);
        assert!(fresh.peek_us() < before + lead_us / 2, "a frame without a clock moved it");
        let mut forged = sender.encode(&read);
        let at = forged.len() - TAG_BYTES - 1;
        forged[at] ^= 1;
        let other = Seal::new(secret).stamped(fresh.clone());
        assert_eq!(other.decode(&forged[4..]), Err(DecodeError::Forged));
        assert!(fresh.peek_us() < before + lead_us / 2, "a forged frame moved it");
    }
}
