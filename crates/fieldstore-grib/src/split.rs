//! Finding GRIB messages in a byte buffer (framing only; no ecCodes).
//!
//! A GRIB message starts with section 0, the indicator section:
//!
//! | edition | bytes | content |
//! |---|---|---|
//! | 1 | 8 | `GRIB`, total length (3 bytes), edition `1` |
//! | 2 | 16 | `GRIB`, 2 reserved, discipline, edition `2`, total length (8 bytes) |
//!
//! and ends with `7777`. All numbers are big-endian.
//!
//! GRIB1's 24-bit length cannot describe messages of 8 MiB and more; ECMWF
//! writes those with the top bit of the length set and the rest counting
//! units of 120 bytes. Such a message is recognised by a section 4 (binary
//! data) whose own length is below 120 (impossible for a real section 4 of
//! that size); its true length is then `(length & 0x7fffff) * 120 - section
//! 4 length + 4`. When the section 4 length is 120 or more, the top bit is
//! an ordinary length bit.
//!
//! Inside a message, the sections must add up to its length (GRIB2: each
//! section's length and number chain from section 1 to `7777`; GRIB1:
//! sections 1 to 4 as announced by section 1's flags). ecCodes itself
//! tolerates some such damage and then returns a partial key; checking the
//! structure here costs a few reads per message.
//!
//! MARS pads GRIB1 messages to a multiple of 120 bytes with NULs, so NUL
//! bytes after a message (fewer than 120) are padding, not part of the
//! message: [`Message::bytes`] is exactly the message, as ecCodes and FDB5
//! see it. Any other bytes before, between or after messages that are not
//! GRIB are skipped up to the next `GRIB`, as ecCodes skips them, and
//! reported as byte ranges ([`Messages::skipped`], see [`crate::SkippedBytes`]).
//! A stretch that starts with `GRIB` but does not frame as a message is an
//! error: a damaged message is never silently skipped.

use std::iter::FusedIterator;

use fieldstore_core::{Key, Result};

use crate::error::{show_bytes, GribError, Problem};
use crate::identity::IdentityKeys;
use crate::skipped::SkippedBytes;

/// Padding after a message is shorter than this (MARS pads to multiples of
/// 120 bytes).
pub(crate) const MAX_PADDING: usize = 120;

/// One GRIB message found in an input buffer, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    index: usize,
    offset: usize,
    edition: u8,
    bytes: &'a [u8],
}

impl<'a> Message<'a> {
    /// A message of `bytes` (one whole, framed message) found at `offset`.
    pub(crate) fn new(index: usize, offset: usize, edition: u8, bytes: &'a [u8]) -> Self {
        Message {
            index,
            offset,
            edition,
            bytes,
        }
    }

    /// The message's index in the input, 0-based.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Where the message starts in the input, in bytes.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The GRIB edition, 1 or 2.
    pub fn edition(&self) -> u8 {
        self.edition
    }

    /// The message's bytes, from `GRIB` to `7777` inclusive (no padding).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The message's MARS key, as ecCodes' `mars` namespace gives it; see
    /// [`crate::mars_key`]. Errors name this message's index and offset.
    ///
    /// # Errors
    /// [`fieldstore_core::ErrorKind::InvalidInput`] (see [`crate::mars_key`]).
    pub fn mars_key(&self) -> Result<Key> {
        self.key_with(&IdentityKeys::default())
    }

    /// The message's MARS key and the keys of `extra` it has (keys beyond
    /// MARS a schema names; see [`IdentityKeys`]). Errors as
    /// [`Message::mars_key`]'s.
    ///
    /// # Errors
    /// [`fieldstore_core::ErrorKind::InvalidInput`] (see [`crate::mars_key`]).
    pub fn key_with(&self, extra: &IdentityKeys) -> Result<Key> {
        let headers = match self.edition {
            2 => grib2_headers(self.bytes),
            _ => None,
        };
        let key = match &headers {
            Some(headers) => crate::eccodes::key_with(headers, extra)
                .or_else(|_| crate::eccodes::key_with(self.bytes, extra)),
            None => crate::eccodes::key_with(self.bytes, extra),
        };
        key.map_err(|problem| self.error(problem).into())
    }

    fn error(&self, problem: Problem) -> GribError {
        GribError {
            index: self.index,
            offset: self.offset,
            problem,
        }
    }
}

/// A copy of a GRIB2 message's sections 0 to 4 (up to the first field's data
/// representation), closed with `7777` and with its total length fixed, or
/// `None` if there is nothing to leave out.
///
/// MARS keys come from sections 0 to 4 only (indicator, identification,
/// local use, grid, product definition). Without sections 5 to 7 ecCodes
/// builds fewer accessors and evaluates its parameter concept over fewer
/// keys: about a third less CPU per field (see `docs/grib.md`); the data
/// section, whatever its size, is never touched. The unit tests check that
/// the key is the same as from the whole message.
pub(crate) fn grib2_headers(message: &[u8]) -> Option<Vec<u8>> {
    let mut at = 16;
    while at + 5 <= message.len() - 4 {
        let mut len = [0u8; 4];
        len.copy_from_slice(&message[at..at + 4]);
        if message[at + 4] == 5 {
            let mut headers = Vec::with_capacity(at + 4);
            headers.extend_from_slice(&message[..at]);
            headers.extend_from_slice(b"7777");
            let total = headers.len() as u64;
            headers[8..16].copy_from_slice(&total.to_be_bytes());
            return Some(headers);
        }
        at += (u32::from_be_bytes(len) as usize).max(5);
    }
    None
}

/// Split `bytes` (the contents of a GRIB file, or several concatenated) into
/// GRIB messages, editions 1 and 2, in order.
///
/// Every message is checked for a complete length and its `7777` end marker.
/// NUL padding after a message (under 120 bytes, as MARS writes GRIB1) is
/// skipped; other bytes before the first `GRIB`, between messages and after
/// the last are skipped as ecCodes skips them, and their ranges kept in
/// [`Messages::skipped`] for the caller to report. A `GRIB` that does not
/// frame as a message (truncated, a wrong length, no `7777`, sections that
/// do not add up) is an error naming the message index and byte offset,
/// after which the iterator ends (where the next message starts is
/// unknown; see [`Messages::resync`]). An input without `GRIB` holds no
/// messages.
///
/// This only reads section 0 (and, for GRIB1 messages of 8 MiB and more, the
/// section lengths): it does not call ecCodes.
///
/// ```
/// let file = std::fs::read(concat!(
///     env!("CARGO_MANIFEST_DIR"),
///     "/../../tests/fixtures/grib/timespan.grib"
/// ))?;
/// let messages = fieldstore_grib::split_messages(&file)
///     .collect::<Result<Vec<_>, _>>()?;
/// assert_eq!(messages.len(), 6);
/// assert_eq!(messages[1].offset(), 1800);
/// assert_eq!(messages[1].edition(), 2);
///
/// // A record header before the first message, junk after the last.
/// let mut wrapped = vec![b'x'; 12_000];
/// wrapped.extend_from_slice(&file);
/// wrapped.extend_from_slice(b"trailer");
/// let mut split = fieldstore_grib::split_messages(&wrapped);
/// assert_eq!(split.by_ref().count(), 6);
/// assert_eq!(split.skipped().ranges(), [0..12_000, 22_872..22_879]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn split_messages(bytes: &[u8]) -> Messages<'_> {
    Messages {
        input: bytes,
        pos: 0,
        index: 0,
        done: false,
        resync: false,
        skipped: SkippedBytes::new(),
    }
}

/// The iterator of [`split_messages`].
#[derive(Debug, Clone)]
pub struct Messages<'a> {
    input: &'a [u8],
    pos: usize,
    index: usize,
    done: bool,
    resync: bool,
    skipped: SkippedBytes,
}

impl<'a> Messages<'a> {
    /// The bytes that are not GRIB skipped so far (all of them once the
    /// iteration has ended): iterate with `by_ref()` to ask afterwards.
    pub fn skipped(&self) -> &SkippedBytes {
        &self.skipped
    }

    /// After a framing error, go on with the next well-formed message
    /// instead of ending (for callers that skip bad messages).
    ///
    /// The next message is the first `GRIB` after the error's offset at
    /// which a complete message with a valid length, section chain and end
    /// marker starts; everything before it is the damaged stretch, reported
    /// once, with one message index. Without a well-formed message after
    /// it, the iteration ends after the error.
    ///
    /// ```
    /// let file = std::fs::read(concat!(
    ///     env!("CARGO_MANIFEST_DIR"),
    ///     "/../../tests/fixtures/grib/levtypes.grib"
    /// ))?;
    /// let mut damaged = file.clone();
    /// damaged[10] ^= 0xff; // inside message 0's sections
    /// let items: Vec<_> = fieldstore_grib::split_messages(&damaged).resync().collect();
    /// assert_eq!(items.len(), 2);
    /// assert!(items[0].is_err());
    /// let second = items[1].as_ref().expect("message 1 is intact");
    /// let intact = fieldstore_grib::split_messages(&file).nth(1).expect("two")?;
    /// assert_eq!(second.index(), 1);
    /// assert!(second.bytes() == intact.bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn resync(mut self) -> Self {
        self.resync = true;
        self
    }

    fn fail(&mut self, offset: usize, problem: Problem) -> Option<Result<Message<'a>>> {
        let error = GribError {
            index: self.index,
            offset,
            problem,
        };
        match self.resync.then(|| next_message(self.input, offset + 1)) {
            Some(Some(next)) => {
                self.pos = next;
                self.index += 1;
            }
            _ => self.done = true,
        }
        Some(Err(error.into()))
    }
}

/// Where the next `GRIB` in `bytes` starts.
pub(crate) fn find_magic(bytes: &[u8]) -> Option<usize> {
    memchr::memmem::find(bytes, b"GRIB")
}

/// Whether `stretch`, found right after a message (`after_message`), is
/// the NUL padding MARS writes (fewer than 120 NULs), not junk to report.
pub(crate) fn is_padding(stretch_len: usize, all_nul: bool, after_message: bool) -> bool {
    after_message && all_nul && stretch_len < MAX_PADDING
}

/// Where the first well-formed message at or after `from` starts.
fn next_message(input: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while at < input.len() {
        let found = find_magic(&input[at..])?;
        at += found;
        if frame(&input[at..]).is_ok() {
            return Some(at);
        }
        at += 1;
    }
    None
}

impl<'a> Iterator for Messages<'a> {
    type Item = Result<Message<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // Up to the next `GRIB`: padding, or junk to report.
        let from = self.pos;
        let next = find_magic(&self.input[from..]).map(|k| from + k);
        let end = next.unwrap_or(self.input.len());
        let stretch = &self.input[from..end];
        if !is_padding(
            stretch.len(),
            stretch.iter().all(|b| *b == 0),
            self.index > 0,
        ) {
            self.skipped.push(from as u64..end as u64);
        }
        self.pos = end;
        if next.is_none() {
            self.done = true;
            return None;
        }
        let rest = &self.input[self.pos..];
        match frame(rest) {
            Ok((len, edition)) => {
                let message = Message {
                    index: self.index,
                    offset: self.pos,
                    edition,
                    bytes: &rest[..len],
                };
                self.pos += len;
                self.index += 1;
                Some(Ok(message))
            }
            Err(problem) => {
                let problem = match problem {
                    Problem::MissingEndMarker { at, found } => Problem::MissingEndMarker {
                        at: self.pos + at,
                        found,
                    },
                    Problem::BadSections { at, detail } => Problem::BadSections {
                        at: self.pos + at,
                        detail,
                    },
                    p => p,
                };
                self.fail(self.pos, problem)
            }
        }
    }
}

impl FusedIterator for Messages<'_> {}

/// The length and edition of the message at the start of `rest`. Offsets in
/// the returned problem are relative to `rest`.
pub(crate) fn frame(rest: &[u8]) -> std::result::Result<(usize, u8), Problem> {
    let available = rest.len();
    let truncated = |declared: u64| Problem::Truncated {
        declared,
        available,
    };
    if !b"GRIB".starts_with(&rest[..available.min(4)]) {
        return Err(Problem::Garbage {
            found: show_bytes(rest),
        });
    }
    if available < 8 {
        return Err(truncated(8));
    }
    let edition = rest[7];
    let declared: u64 = match edition {
        1 => grib1_length(rest)?.0,
        2 => {
            if available < 16 {
                return Err(truncated(16));
            }
            let mut len = [0u8; 8];
            len.copy_from_slice(&rest[8..16]);
            let len = u64::from_be_bytes(len);
            if len < 16 + 4 {
                return Err(Problem::BadLength { declared: len });
            }
            len
        }
        _ => return Err(Problem::UnsupportedEdition { edition }),
    };
    let len = match usize::try_from(declared) {
        Ok(len) if len <= available => len,
        _ => return Err(truncated(declared)),
    };
    let end = &rest[len - 4..len];
    if end != b"7777" {
        return Err(Problem::MissingEndMarker {
            at: len - 4,
            found: show_bytes(end),
        });
    }
    let message = &rest[..len];
    match edition {
        1 => grib1_sections(message)?,
        _ => grib2_sections(message)?,
    }
    Ok((len, edition))
}

/// Check that the sections of a GRIB2 message (with a valid length and end
/// marker) chain from section 0 to exactly the end marker, in the order the
/// standard allows: 1, then one or more fields of (2), 3, 4, 5, 6, 7 where a
/// later field may start at 2, 3 or 4 (sections it does not repeat are those
/// of the previous field).
fn grib2_sections(message: &[u8]) -> std::result::Result<(), Problem> {
    let end = message.len() - 4;
    let mut at = 16;
    let mut previous = 0u8;
    while at < end {
        let bad = |detail: String| Problem::BadSections { at, detail };
        if end - at < 5 {
            return Err(bad(format!(
                "{} bytes before the end marker cannot hold a section header",
                end - at
            )));
        }
        let mut len = [0u8; 4];
        len.copy_from_slice(&message[at..at + 4]);
        let len = u32::from_be_bytes(len) as usize;
        let number = message[at + 4];
        let allowed: &[u8] = match previous {
            0 => &[1],
            1 => &[2, 3],
            2 => &[3],
            3 => &[4],
            4 => &[5],
            5 => &[6],
            6 => &[7],
            _ => &[2, 3, 4],
        };
        if !allowed.contains(&number) {
            let expected: Vec<String> = allowed.iter().map(u8::to_string).collect();
            return Err(bad(format!(
                "section {number} after section {previous} (expected {})",
                expected.join(" or ")
            )));
        }
        if len < 5 || len > end - at {
            return Err(bad(format!(
                "section {number} claims {len} bytes, {} are left before the end marker",
                end - at
            )));
        }
        previous = number;
        at += len;
    }
    if previous != 7 {
        return Err(Problem::BadSections {
            at,
            detail: format!("the end marker follows section {previous}, not section 7"),
        });
    }
    Ok(())
}

/// Check that the sections of a GRIB1 message (with a valid length and end
/// marker) add up to its length.
fn grib1_sections(message: &[u8]) -> std::result::Result<(), Problem> {
    let end = message.len() as u64 - 4;
    let (_, large) = grib1_length(message)?;
    let mut at: u64 = 8;
    let s1 = u24(message, 8).unwrap_or(0);
    if s1 < 28 {
        return Err(Problem::BadSections {
            at: 8,
            detail: format!("section 1 claims {s1} bytes (at least 28)"),
        });
    }
    let flags = message[8 + 7];
    let mut sections = vec![(1, s1)];
    at += s1;
    for (number, bit) in [(2, 0x80), (3, 0x40)] {
        if flags & bit != 0 {
            let len = usize::try_from(at)
                .ok()
                .and_then(|a| u24(message, a))
                .unwrap_or(0);
            sections.push((number, len));
            at += len;
        }
    }
    let s4_at = at;
    let s4 = usize::try_from(at)
        .ok()
        .and_then(|a| u24(message, a))
        .unwrap_or(0);
    let fits = if large {
        s4_at < end
    } else {
        s4_at + s4 == end && s4 >= 11
    };
    if !fits || sections.iter().any(|(_, len)| *len < 3) {
        let list: Vec<String> = sections
            .iter()
            .map(|(n, len)| format!("section {n}: {len}"))
            .collect();
        return Err(Problem::BadSections {
            at: 8,
            detail: format!(
                "{}, section 4: {s4} bytes do not add up to the message length {}",
                list.join(", "),
                message.len()
            ),
        });
    }
    Ok(())
}

/// A 3-byte big-endian number at `at`, or `None` past the end.
fn u24(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(3)?)?;
    Some(u64::from(b[0]) << 16 | u64::from(b[1]) << 8 | u64::from(b[2]))
}

/// The total length of the GRIB1 message at the start of `rest` (which has at
/// least 8 bytes), including ECMWF's encoding of messages of 8 MiB and more.
fn grib1_length(rest: &[u8]) -> std::result::Result<(u64, bool), Problem> {
    let coded = u24(rest, 4).unwrap_or(0);
    // Section 0 (8) + section 1 (at least 28) + section 4 (at least 11) + 7777.
    const MIN: u64 = 8 + 28 + 11 + 4;
    if coded & 0x80_0000 == 0 {
        return if coded < MIN {
            Err(Problem::BadLength { declared: coded })
        } else {
            Ok((coded, false))
        };
    }
    // Maybe a large message: find section 4 and look at its length.
    let need = |at: usize| Problem::Truncated {
        declared: at as u64 + 3,
        available: rest.len(),
    };
    let section1 = 8;
    let s1_len = u24(rest, section1).ok_or_else(|| need(section1))?;
    let flags = *rest.get(section1 + 7).ok_or_else(|| need(section1 + 5))?;
    let mut at = section1 as u64 + s1_len;
    for present in [flags & 0x80 != 0, flags & 0x40 != 0] {
        if present {
            let pos = usize::try_from(at).map_err(|_| need(usize::MAX - 3))?;
            at += u24(rest, pos).ok_or_else(|| need(pos))?;
        }
    }
    let pos = usize::try_from(at).map_err(|_| need(usize::MAX - 3))?;
    let s4_len = u24(rest, pos).ok_or_else(|| need(pos))?;
    if s4_len >= 120 {
        return Ok((coded, false));
    }
    ((coded & 0x7f_ffff) * 120 + 4)
        .checked_sub(s4_len)
        .filter(|len| *len >= MIN)
        .map(|len| (len, true))
        .ok_or(Problem::BadLength { declared: coded })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A framing-only GRIB1 message: section 0, a 28-byte section 1 with
    /// `flags`, the optional sections 2/3 of 32 bytes each, section 4 with
    /// length field `s4_field` (0: whatever fills the message), filled to
    /// `total` bytes, then `7777`.
    fn grib1(coded_len: u32, flags: u8, s4_field: u32, total: usize) -> Vec<u8> {
        let mut m = Vec::with_capacity(total);
        m.extend_from_slice(b"GRIB");
        m.extend_from_slice(&coded_len.to_be_bytes()[1..]);
        m.push(1);
        let mut s1 = vec![0u8; 28];
        s1[2] = 28;
        s1[7] = flags;
        m.extend_from_slice(&s1);
        for bit in [0x80, 0x40] {
            if flags & bit != 0 {
                let mut s = vec![0u8; 32];
                s[2] = 32;
                m.extend_from_slice(&s);
            }
        }
        let s4_field = if s4_field == 0 {
            (total - 4 - m.len()) as u32
        } else {
            s4_field
        };
        m.extend_from_slice(&s4_field.to_be_bytes()[1..]);
        m.resize(total - 4, 0xaa);
        m.extend_from_slice(b"7777");
        m
    }

    #[test]
    fn grib2_headers_give_the_same_key_as_the_whole_message() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/grib/");
        let mut checked = 0;
        for name in ["timespan.grib", "levtypes.grib", "template.grib"] {
            let file = std::fs::read(format!("{dir}{name}")).expect("fixture");
            for m in split_messages(&file) {
                let m = m.expect("valid");
                let Some(headers) = grib2_headers(m.bytes()) else {
                    assert_eq!(m.edition(), 1, "{name}: GRIB2 has a section 5");
                    continue;
                };
                assert!(headers.len() < m.bytes().len());
                let whole = crate::eccodes::mars_key(m.bytes()).expect("whole");
                let part = crate::eccodes::mars_key(&headers).expect("headers");
                assert_eq!(whole.to_string(), part.to_string(), "{name}:{}", m.index());
                assert_eq!(whole, m.mars_key().expect("key"));
                checked += 1;
            }
        }
        assert_eq!(checked, 6);
    }

    #[test]
    fn large_grib1_uses_the_120_byte_units() {
        // 9 MiB-ish: coded = 0x800000 | units, section 4 length field < 120.
        let total: usize = 9 * 1024 * 1024 + 16;
        for flags in [0x00, 0x80, 0xc0] {
            let s4_field: u32 = 100;
            // total = units * 120 - s4_field + 4  =>  units = (total + s4 - 4) / 120
            let rem = (total + s4_field as usize - 4) % 120;
            let total = total - rem;
            let units = ((total + s4_field as usize - 4) / 120) as u32;
            let m = grib1(0x80_0000 | units, flags, s4_field, total);
            let got: Vec<_> = split_messages(&m).collect::<Result<_>>().expect("splits");
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].bytes().len(), total, "flags {flags:#x}");
        }
    }

    #[test]
    fn top_length_bit_is_ordinary_when_section4_is_long() {
        let total = 0x80_0000 + 1000;
        let m = grib1(total as u32, 0x80, 0, total);
        let got: Vec<_> = split_messages(&m).collect::<Result<_>>().expect("splits");
        assert_eq!(got[0].bytes().len(), total);
    }

    #[test]
    fn large_grib1_truncated_inside_the_headers() {
        let m = grib1(0x80_0100, 0x80, 100, 200);
        let err = split_messages(&m[..40])
            .next()
            .expect("an item")
            .expect_err("truncated");
        assert!(err.to_string().contains("truncated"), "{err}");
    }
}
