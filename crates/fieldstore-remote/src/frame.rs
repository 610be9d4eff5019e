//! The frame: a 36-byte header, the payload, the end marker `EFDB`.
//!
//! The header is FDB5's `MessageHeader` written as a raw C++ struct, so in
//! the sender's byte order. Every FDB5 build we know runs on little-endian
//! hosts (x86_64, aarch64), and the captures under `tests/golden/` are
//! little-endian; this module reads and writes little-endian explicitly so
//! that a big-endian fieldstore host still interoperates with them.
//!
//! | bytes | field |
//! |-------|-------|
//! | 0..4   | marker `SFDB` |
//! | 4..6   | protocol version (12 in FDB5 5.25; any other is refused, as FDB5 does) |
//! | 6..8   | message type ([`Message`]) |
//! | 8..12  | client id << 1, low bit set on the control connection |
//! | 12..16 | request id |
//! | 16..20 | payload size |
//! | 20..36 | a hash, unused by FDB5 5.25 (zeros) |

use std::io::{self, Read, Write};

use crate::message::Message;

/// The frame version FDB5 5.25 speaks (`MessageHeader::currentVersion`).
pub const VERSION: u16 = 12;
/// The header's size in bytes.
pub const HEADER_LEN: usize = 36;
/// The start marker.
pub const START_MARKER: [u8; 4] = *b"SFDB";
/// The end marker, after the payload.
pub const END_MARKER: [u8; 4] = *b"EFDB";
/// Largest client id: the id is shifted left by one on the wire.
pub const MAX_CLIENT_ID: u32 = u32::MAX >> 1;

/// A decoded, checked header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The message type.
    pub message: Message,
    /// The logical client (0 for connection-wide messages).
    pub client_id: u32,
    /// Whether the frame was sent as a control-connection frame.
    pub control: bool,
    /// Pairs requests with their replies; 0 for the handshake.
    pub request_id: u32,
    /// Bytes of payload that follow.
    pub payload_size: u32,
}

/// Why a frame was refused. Each names what was wrong, so that the server
/// can log it before closing the connection.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Reading or writing the socket failed.
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    /// The peer closed the connection between frames (not an error for a
    /// server; reported so that it can stop).
    #[error("connection closed")]
    Closed,
    /// The connection ended inside a frame.
    #[error("connection closed inside a frame ({0})")]
    Truncated(&'static str),
    /// The first four bytes are not `SFDB`.
    #[error("bad start marker {0:02x?} (expected \"SFDB\"): not FDB5's remote protocol")]
    BadStartMarker([u8; 4]),
    /// Another protocol version.
    #[error("protocol version {0} (this server speaks {VERSION}, FDB5 5.25's)")]
    BadVersion(u16),
    /// A message number FDB5 5.25 does not have.
    #[error("unknown message type {0}")]
    UnknownMessage(u16),
    /// The payload is larger than this side accepts.
    #[error("payload of {size} bytes is over the limit of {limit} bytes")]
    TooLarge {
        /// Announced size.
        size: u32,
        /// The limit in force.
        limit: u32,
    },
    /// The four bytes after the payload are not `EFDB`.
    #[error("bad end marker {0:02x?} (expected \"EFDB\"): payload size and payload disagree")]
    BadEndMarker([u8; 4]),
    /// A client id too large to shift into the header.
    #[error("client id {0} does not fit the header (max {MAX_CLIENT_ID})")]
    ClientIdTooLarge(u32),
}

fn u16_at(b: &[u8; HEADER_LEN], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8; HEADER_LEN], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Header {
    /// A header for `message`.
    pub fn new(
        message: Message,
        control: bool,
        client_id: u32,
        request_id: u32,
        payload_size: u32,
    ) -> Header {
        Header {
            message,
            client_id,
            control,
            request_id,
            payload_size,
        }
    }

    /// Decode and check 36 header bytes; `limit` is the largest payload
    /// accepted.
    ///
    /// # Errors
    /// [`FrameError::BadStartMarker`], [`FrameError::BadVersion`],
    /// [`FrameError::UnknownMessage`], [`FrameError::TooLarge`].
    pub fn decode(b: &[u8; HEADER_LEN], limit: u32) -> Result<Header, FrameError> {
        let marker = [b[0], b[1], b[2], b[3]];
        if marker != START_MARKER {
            return Err(FrameError::BadStartMarker(marker));
        }
        let version = u16_at(b, 4);
        if version != VERSION {
            return Err(FrameError::BadVersion(version));
        }
        let code = u16_at(b, 6);
        let message = Message::from_u16(code).ok_or(FrameError::UnknownMessage(code))?;
        let raw_client = u32_at(b, 8);
        let payload_size = u32_at(b, 16);
        if payload_size > limit {
            return Err(FrameError::TooLarge {
                size: payload_size,
                limit,
            });
        }
        Ok(Header {
            message,
            client_id: raw_client >> 1,
            control: raw_client & 1 == 1,
            request_id: u32_at(b, 12),
            payload_size,
        })
    }

    /// The 36 header bytes.
    ///
    /// # Errors
    /// [`FrameError::ClientIdTooLarge`].
    pub fn encode(&self) -> Result<[u8; HEADER_LEN], FrameError> {
        if self.client_id > MAX_CLIENT_ID {
            return Err(FrameError::ClientIdTooLarge(self.client_id));
        }
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&START_MARKER);
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        b[6..8].copy_from_slice(&self.message.code().to_le_bytes());
        let raw_client = (self.client_id << 1) | u32::from(self.control);
        b[8..12].copy_from_slice(&raw_client.to_le_bytes());
        b[12..16].copy_from_slice(&self.request_id.to_le_bytes());
        b[16..20].copy_from_slice(&self.payload_size.to_le_bytes());
        Ok(b)
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8], what: &'static str) -> Result<usize, FrameError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => {
                return if got == 0 {
                    Ok(0)
                } else {
                    Err(FrameError::Truncated(what))
                }
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    Ok(got)
}

/// Read one frame: its header and payload, the end marker checked.
/// Memory is bounded by `limit`: the payload buffer is only allocated once
/// the header is checked.
///
/// # Errors
/// [`FrameError::Closed`] at a clean end of stream before a header; any
/// other [`FrameError`] for a bad frame.
pub fn read_frame(r: &mut impl Read, limit: u32) -> Result<(Header, Vec<u8>), FrameError> {
    let mut hb = [0u8; HEADER_LEN];
    if read_full(r, &mut hb, "header")? == 0 {
        return Err(FrameError::Closed);
    }
    let header = Header::decode(&hb, limit)?;
    let mut payload = vec![0u8; header.payload_size as usize];
    if !payload.is_empty() && read_full(r, &mut payload, "payload")? == 0 {
        return Err(FrameError::Truncated("payload"));
    }
    let mut tail = [0u8; 4];
    if read_full(r, &mut tail, "end marker")? == 0 {
        return Err(FrameError::Truncated("end marker"));
    }
    if tail != END_MARKER {
        return Err(FrameError::BadEndMarker(tail));
    }
    Ok((header, payload))
}

/// Decode a whole frame held in `bytes` (header, payload, end marker);
/// the rest of `bytes` after it.
///
/// # Errors
/// As [`read_frame`]; [`FrameError::Truncated`] if `bytes` ends early.
pub fn decode_frame(bytes: &[u8], limit: u32) -> Result<(Header, &[u8], &[u8]), FrameError> {
    let hb: &[u8; HEADER_LEN] = bytes
        .get(..HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or(FrameError::Truncated("header"))?;
    let header = Header::decode(hb, limit)?;
    let end = HEADER_LEN + header.payload_size as usize;
    let payload = bytes
        .get(HEADER_LEN..end)
        .ok_or(FrameError::Truncated("payload"))?;
    let tail = bytes
        .get(end..end + 4)
        .ok_or(FrameError::Truncated("end marker"))?;
    if tail != END_MARKER {
        return Err(FrameError::BadEndMarker([
            tail[0], tail[1], tail[2], tail[3],
        ]));
    }
    Ok((header, payload, &bytes[end + 4..]))
}

/// The bytes of one frame.
///
/// # Errors
/// [`FrameError::ClientIdTooLarge`]; [`FrameError::TooLarge`] for a payload
/// over 4 GiB.
pub fn encode_frame(
    message: Message,
    control: bool,
    client_id: u32,
    request_id: u32,
    payload: &[u8],
) -> Result<Vec<u8>, FrameError> {
    let size = u32::try_from(payload.len()).map_err(|_| FrameError::TooLarge {
        size: u32::MAX,
        limit: u32::MAX,
    })?;
    let header = Header::new(message, control, client_id, request_id, size).encode()?;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + 4);
    out.extend_from_slice(&header);
    out.extend_from_slice(payload);
    out.extend_from_slice(&END_MARKER);
    Ok(out)
}

/// Frames whose payload is at least this large are written in parts
/// (header, payload pieces, end marker) instead of being copied into one
/// buffer first: a field's megabytes are not copied twice on their way out.
pub const WRITE_IN_PARTS: usize = 64 << 10;

/// Write one frame whose payload is the concatenation of `parts`: small
/// frames in a single `write_all` (copied into one buffer), large ones
/// ([`WRITE_IN_PARTS`]) part by part. The caller holds the socket's lock
/// for the whole call, so that frames of several threads never
/// interleave.
///
/// # Errors
/// As [`encode_frame`], and I/O errors.
pub fn write_frame_parts(
    w: &mut impl Write,
    message: Message,
    control: bool,
    client_id: u32,
    request_id: u32,
    parts: &[&[u8]],
) -> Result<(), FrameError> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let size = u32::try_from(total).map_err(|_| FrameError::TooLarge {
        size: u32::MAX,
        limit: u32::MAX,
    })?;
    let header = Header::new(message, control, client_id, request_id, size).encode()?;
    if total < WRITE_IN_PARTS {
        let mut out = Vec::with_capacity(HEADER_LEN + total + 4);
        out.extend_from_slice(&header);
        for p in parts {
            out.extend_from_slice(p);
        }
        out.extend_from_slice(&END_MARKER);
        w.write_all(&out)?;
    } else {
        w.write_all(&header)?;
        for p in parts {
            w.write_all(p)?;
        }
        w.write_all(&END_MARKER)?;
    }
    Ok(())
}

/// Write one frame in a single `write_all` (so that frames from several
/// threads sharing a socket behind a lock never interleave).
///
/// # Errors
/// As [`encode_frame`], and I/O errors.
pub fn write_frame(
    w: &mut impl Write,
    message: Message,
    control: bool,
    client_id: u32,
    request_id: u32,
    payload: &[u8],
) -> Result<(), FrameError> {
    let bytes = encode_frame(message, control, client_id, request_id, payload)?;
    w.write_all(&bytes)?;
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_message() -> impl Strategy<Value = Message> {
        prop::sample::select(Message::all().to_vec())
    }

    proptest! {
        #[test]
        fn frames_round_trip(m in any_message(), control: bool, client in 0..=MAX_CLIENT_ID,
                             request: u32, payload in prop::collection::vec(any::<u8>(), 0..300)) {
            let bytes = encode_frame(m, control, client, request, &payload).unwrap();
            let (h, p, rest) = decode_frame(&bytes, 1 << 20).unwrap();
            prop_assert_eq!(h, Header::new(m, control, client, request, payload.len() as u32));
            prop_assert_eq!(p, &payload[..]);
            prop_assert!(rest.is_empty());
            let (h2, p2) = read_frame(&mut &bytes[..], 1 << 20).unwrap();
            prop_assert_eq!(h2, h);
            prop_assert_eq!(p2, payload);
        }

        #[test]
        fn any_bytes_decode_or_fail_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..100)) {
            let _ = decode_frame(&bytes, 64);
            let _ = read_frame(&mut &bytes[..], 64);
        }
    }

    fn good() -> Vec<u8> {
        encode_frame(Message::List, true, 3, 4, b"abc").unwrap()
    }

    #[test]
    fn every_field_is_checked() {
        let mut b = good();
        b[0] = b'X';
        assert!(matches!(
            decode_frame(&b, 100),
            Err(FrameError::BadStartMarker(_))
        ));
        let mut b = good();
        b[4] = 11;
        assert!(matches!(
            decode_frame(&b, 100),
            Err(FrameError::BadVersion(11))
        ));
        let mut b = good();
        b[6..8].copy_from_slice(&7u16.to_le_bytes());
        assert!(matches!(
            decode_frame(&b, 100),
            Err(FrameError::UnknownMessage(7))
        ));
        assert!(matches!(
            decode_frame(&good(), 2),
            Err(FrameError::TooLarge { size: 3, limit: 2 })
        ));
        let mut b = good();
        let n = b.len();
        b[n - 1] = b'X';
        assert!(matches!(
            decode_frame(&b, 100),
            Err(FrameError::BadEndMarker(_))
        ));
        assert!(matches!(
            decode_frame(&good()[..20], 100),
            Err(FrameError::Truncated("header"))
        ));
        assert!(matches!(
            read_frame(&mut &b""[..], 100),
            Err(FrameError::Closed)
        ));
        assert!(matches!(
            read_frame(&mut &good()[..38], 100),
            Err(FrameError::Truncated("payload"))
        ));
        assert!(matches!(
            Header::new(Message::List, true, u32::MAX, 0, 0).encode(),
            Err(FrameError::ClientIdTooLarge(_))
        ));
    }

    #[test]
    fn the_control_bit_is_the_low_bit_of_the_client_field() {
        let b = encode_frame(Message::Stop, true, 5, 0, b"").unwrap();
        assert_eq!(&b[8..12], &11u32.to_le_bytes());
        assert_eq!(&b[0..8], b"SFDB\x0c\x00\x06\x00");
    }
}
