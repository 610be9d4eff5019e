//! Splitting GRIB messages off a stream (a file, a pipe, a device) one at a
//! time, holding at most one message in memory.
//!
//! [`split_messages`](crate::split_messages) frames a buffer that holds the
//! whole input; reading an endless input (`/dev/zero`, a pipe that never
//! closes) into a buffer first grows it without bound. [`MessageReader`]
//! reads only what framing needs: section 0 (8 or 16 bytes), the section
//! headers of a large GRIB1 message, then the declared length, which is
//! refused *before it is read* when it is above the limit
//! ([`Problem::TooLarge`]). It applies the same checks as `split_messages`,
//! skips the same bytes that are not GRIB ([`MessageReader::skipped`]) and
//! reports the same problems at the same byte offsets (the tests compare
//! the two).
//!
//! What a reader holds is bounded by the limit: one message, plus a window
//! of the input being searched for the next `GRIB` (junk being skipped) or,
//! after a framing error when resyncing, for the next well-formed message.
//! Searches that could go on for ever are bounded too: a stretch without a
//! message longer than the limit (`/dev/zero`, junk, a damaged stretch being
//! skipped) ends the reading with [`Problem::NoMessageAhead`], naming where
//! it starts, also when bad messages are skipped.

use std::io::{self, Read};

use fieldstore_core::{Error, Key, Result};

use crate::error::{GribError, Problem};
use crate::skipped::SkippedBytes;
use crate::split::{find_magic, frame, is_padding, Message};

/// The default largest message a [`MessageReader`] accepts: 1 GiB.
///
/// Why this size: GRIB1 cannot describe a message above 960 MiB
/// (`0x7fffff` units of 120 bytes); GRIB2 can, but the largest fields
/// produced operationally (global grids of a few km, a few tens of millions
/// of points at 16 to 32 bits) are tens to a few hundred MB. 1 GiB is well
/// above any real field, and still an amount of memory every node that runs
/// a store can hold for one message. Callers with larger fields raise it
/// ([`MessageReader::max_message_size`]; `fieldstore archive
/// --max-field-size`).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 1 << 30;

/// How much is read at a time while looking for a message (after padding,
/// or when resyncing).
const CHUNK: usize = 64 * 1024;

/// One GRIB message read from a stream, owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedMessage {
    index: usize,
    offset: usize,
    edition: u8,
    bytes: Vec<u8>,
}

impl OwnedMessage {
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
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The message as [`split_messages`](crate::split_messages) gives it,
    /// borrowing the bytes.
    pub fn as_message(&self) -> Message<'_> {
        Message::new(self.index, self.offset, self.edition, &self.bytes)
    }

    /// The message's MARS key; see [`Message::mars_key`].
    ///
    /// # Errors
    /// As [`Message::mars_key`].
    pub fn mars_key(&self) -> Result<Key> {
        self.as_message().mars_key()
    }
}

/// Why a step of the reader stopped.
#[derive(Debug)]
enum Stop {
    /// Reading failed.
    Io(io::Error),
    /// The input is bad at `offset`.
    Bad { offset: usize, problem: Problem },
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

/// GRIB messages read from a stream, one at a time; see the module doc.
///
/// An iterator of `Result<OwnedMessage>`: as [`crate::Messages`], a framing
/// error ends the iteration unless [`MessageReader::resync`] is set; an I/O
/// error and [`Problem::NoMessageAhead`] always end it. Wrap unbuffered
/// readers (a [`std::fs::File`]) in a [`std::io::BufReader`]: section
/// headers are read a few bytes at a time.
///
/// ```
/// let file = std::fs::File::open(concat!(
///     env!("CARGO_MANIFEST_DIR"),
///     "/../../tests/fixtures/grib/timespan.grib"
/// ))?;
/// let messages = fieldstore_grib::MessageReader::new(std::io::BufReader::new(file))
///     .collect::<Result<Vec<_>, _>>()?;
/// assert_eq!(messages.len(), 6);
/// assert_eq!(messages[1].offset(), 1800);
///
/// // Endless input that is not GRIB is refused after the limit, naming
/// // where it starts.
/// let e = fieldstore_grib::MessageReader::new(std::io::repeat(0))
///     .max_message_size(1 << 20)
///     .next()
///     .expect("an error")
///     .unwrap_err();
/// assert!(e.to_string().starts_with("GRIB message 0 at byte offset 0: no GRIB message in the "));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MessageReader<R> {
    reader: R,
    /// Bytes read and not yet consumed: `buf[head..]`, whose first byte is
    /// at offset `start` of the input.
    buf: Vec<u8>,
    head: usize,
    start: usize,
    eof: bool,
    index: usize,
    done: bool,
    resync: bool,
    max: usize,
    /// A failure of the search after an error, reported after that error.
    pending: Option<Stop>,
    /// Bytes that are not GRIB skipped so far.
    skipped: SkippedBytes,
}

/// What [`MessageReader::skip_to_magic`] passed over.
struct Scan {
    /// How many bytes.
    len: usize,
    /// Whether they were all NULs.
    all_nul: bool,
    /// Whether a `GRIB` follows (else the input ended).
    found: bool,
}

impl<R: Read> MessageReader<R> {
    /// A reader of the GRIB messages of `reader`, accepting messages of up
    /// to [`DEFAULT_MAX_MESSAGE_SIZE`] bytes.
    pub fn new(reader: R) -> Self {
        MessageReader {
            reader,
            buf: Vec::new(),
            head: 0,
            start: 0,
            eof: false,
            index: 0,
            done: false,
            resync: false,
            max: DEFAULT_MAX_MESSAGE_SIZE,
            pending: None,
            skipped: SkippedBytes::new(),
        }
    }

    /// The bytes that are not GRIB skipped so far (all of them once the
    /// iteration has ended): iterate with `by_ref()` to ask afterwards.
    pub fn skipped(&self) -> &SkippedBytes {
        &self.skipped
    }

    /// Accept messages of up to `max` bytes (at least 1); a message
    /// declaring more is [`Problem::TooLarge`], and this also bounds the
    /// searches of the module doc.
    #[must_use]
    pub fn max_message_size(mut self, max: usize) -> Self {
        self.max = max.max(1);
        self
    }

    /// After a framing error, go on with the next well-formed message
    /// instead of ending (see [`crate::Messages::resync`]); a search longer
    /// than the largest message allowed ends with
    /// [`Problem::NoMessageAhead`].
    #[must_use]
    pub fn resync(mut self) -> Self {
        self.resync = true;
        self
    }

    fn data(&self) -> &[u8] {
        &self.buf[self.head..]
    }

    /// Read until `n` bytes are buffered, or the input ends.
    fn fill(&mut self, n: usize) -> io::Result<()> {
        while self.data().len() < n && !self.eof {
            let want = n - self.data().len();
            self.buf.reserve_exact(want);
            let got = (&mut self.reader)
                .take(want as u64)
                .read_to_end(&mut self.buf)?;
            if got < want {
                self.eof = true;
            }
        }
        Ok(())
    }

    /// Drop `n` buffered bytes (at most what is buffered).
    fn consume(&mut self, n: usize) {
        let n = n.min(self.data().len());
        self.head += n;
        self.start += n;
        if self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        } else if self.head >= CHUNK && self.head * 2 >= self.buf.len() {
            // Amortised: what moves is at most what was consumed.
            self.buf.drain(..self.head);
            self.head = 0;
        }
    }

    /// Frame the message at the start of the buffer, reading what framing
    /// needs. Problems' offsets are relative to the message.
    fn frame_here(&mut self) -> io::Result<std::result::Result<(usize, u8), Problem>> {
        // Section 0's first 8 bytes: also what a garbage error shows.
        self.fill(8)?;
        loop {
            match frame(self.data()) {
                Err(Problem::Truncated { declared, .. })
                    if !self.eof && declared > self.data().len() as u64 =>
                {
                    match usize::try_from(declared) {
                        Ok(n) if n <= self.max => self.fill(n)?,
                        _ => {
                            return Ok(Err(Problem::TooLarge {
                                declared,
                                limit: self.max,
                            }))
                        }
                    }
                }
                // Framed from what a search read ahead: still refused.
                Ok((len, _)) if len > self.max => {
                    return Ok(Err(Problem::TooLarge {
                        declared: len as u64,
                        limit: self.max,
                    }))
                }
                r => return Ok(r),
            }
        }
    }

    /// Consume the bytes up to the next `GRIB` or the end of the input,
    /// giving up after more than the limit ([`Problem::NoMessageAhead`],
    /// naming where the stretch starts).
    fn skip_to_magic(&mut self) -> std::result::Result<Scan, Stop> {
        let from = self.start;
        let mut all_nul = true;
        loop {
            let scanned = self.start - from;
            if scanned > self.max {
                return Err(Stop::Bad {
                    offset: from,
                    problem: Problem::NoMessageAhead {
                        scanned: scanned as u64,
                    },
                });
            }
            if self.data().len() < 4 {
                self.fill(CHUNK)?;
            }
            let data = self.data();
            let (n, found) = match find_magic(data) {
                Some(k) => (k, true),
                None if self.eof => (data.len(), false),
                // Keep what may be the start of a `GRIB` cut by the read.
                None => (data.len() - 3, false),
            };
            all_nul &= data[..n].iter().all(|b| *b == 0);
            self.consume(n);
            if found || self.eof && self.data().is_empty() {
                return Ok(Scan {
                    len: self.start - from,
                    all_nul,
                    found,
                });
            }
        }
    }

    /// The next message, `None` at the end of the input.
    fn step(&mut self) -> std::result::Result<Option<OwnedMessage>, Stop> {
        // Up to the next `GRIB`: padding, or junk to report.
        let from = self.start;
        let scan = self.skip_to_magic()?;
        if !is_padding(scan.len, scan.all_nul, self.index > 0) {
            self.skipped.push(from as u64..self.start as u64);
        }
        if !scan.found {
            return Ok(None);
        }
        let offset = self.start;
        match self.frame_here()? {
            Ok((len, edition)) => {
                // The message's bytes leave the buffer; what was read past
                // them (at most a chunk) stays.
                let rest = self.buf.split_off(self.head + len);
                let mut bytes = std::mem::replace(&mut self.buf, rest);
                bytes.drain(..self.head);
                self.head = 0;
                self.start += len;
                let message = OwnedMessage {
                    index: self.index,
                    offset,
                    edition,
                    bytes,
                };
                self.index += 1;
                Ok(Some(message))
            }
            Err(problem) => {
                let problem = match problem {
                    Problem::MissingEndMarker { at, found } => Problem::MissingEndMarker {
                        at: offset + at,
                        found,
                    },
                    Problem::BadSections { at, detail } => Problem::BadSections {
                        at: offset + at,
                        detail,
                    },
                    p => p,
                };
                Err(Stop::Bad { offset, problem })
            }
        }
    }

    /// After a framing error at `offset`: move to the first well-formed
    /// message after it. `Ok(false)`: the input ends without one.
    fn find_next(&mut self, offset: usize) -> std::result::Result<bool, Stop> {
        let skip = (offset + 1).saturating_sub(self.start);
        self.consume(skip);
        let from = self.start;
        loop {
            if self.start - from > self.max {
                return Err(Stop::Bad {
                    offset: from,
                    problem: Problem::NoMessageAhead {
                        scanned: (self.start - from) as u64,
                    },
                });
            }
            if self.data().len() < 4 {
                self.fill(CHUNK)?;
                if self.data().len() < 4 {
                    return Ok(false);
                }
            }
            match find_magic(self.data()) {
                None => {
                    let keep = 3;
                    let n = self.data().len() - keep;
                    self.consume(n);
                }
                Some(at) => {
                    self.consume(at);
                    if self.frame_here()?.is_ok() {
                        return Ok(true);
                    }
                    self.consume(1);
                }
            }
        }
    }

    fn fail(&mut self, stop: Stop) -> Option<Result<OwnedMessage>> {
        let (offset, problem) = match stop {
            Stop::Io(e) => {
                self.done = true;
                return Some(Err(Error::io(
                    format_args!("reading GRIB input at byte offset {}", self.start),
                    e,
                )));
            }
            Stop::Bad { offset, problem } => (offset, problem),
        };
        let fatal = matches!(problem, Problem::NoMessageAhead { .. });
        let error = GribError {
            index: self.index,
            offset,
            problem,
        };
        if self.resync && !fatal {
            match self.find_next(offset) {
                Ok(true) => self.index += 1,
                Ok(false) => self.done = true,
                // The error being reported comes first; the next call
                // reports this one.
                Err(stop) => {
                    self.index += 1;
                    self.pending = Some(stop);
                }
            }
        } else {
            self.done = true;
        }
        Some(Err(error.into()))
    }
}

impl<R: Read> Iterator for MessageReader<R> {
    type Item = Result<OwnedMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(stop) = self.pending.take() {
            return self.fail(stop);
        }
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(message)) => Some(Ok(message)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(stop) => self.fail(stop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split::split_messages;

    /// A reader that returns at most `n` bytes per read, to exercise every
    /// refill.
    struct Trickle<'a> {
        data: &'a [u8],
        n: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let k = out.len().min(self.n).min(self.data.len());
            out[..k].copy_from_slice(&self.data[..k]);
            self.data = &self.data[k..];
            Ok(k)
        }
    }

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/../../tests/fixtures/grib/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    type Outcome = Vec<std::result::Result<(usize, usize, Vec<u8>), String>>;

    fn from_buffer(input: &[u8], resync: bool) -> Outcome {
        let messages = split_messages(input);
        let messages = if resync { messages.resync() } else { messages };
        messages
            .map(|m| {
                m.map(|m| (m.index(), m.offset(), m.bytes().to_vec()))
                    .map_err(|e| e.to_string())
            })
            .collect()
    }

    fn from_stream(input: &[u8], resync: bool, trickle: usize) -> Outcome {
        let reader = MessageReader::new(Trickle {
            data: input,
            n: trickle,
        });
        let reader = if resync { reader.resync() } else { reader };
        reader
            .map(|m| {
                m.map(|m| (m.index(), m.offset(), m.bytes))
                    .map_err(|e| e.to_string())
            })
            .collect()
    }

    #[test]
    fn the_stream_frames_as_the_buffer_does_damaged_inputs_included() {
        let mut inputs = Vec::new();
        let mut all = Vec::new();
        for name in [
            "levtypes.grib",
            "timespan.grib",
            "rd-fc.grib",
            "template.grib",
        ] {
            let file = fixture(name);
            all.extend_from_slice(&file);
            inputs.push(file);
        }
        // GRIB1 padding between messages, and garbage between messages.
        let mut padded = fixture("rd-fc.grib");
        padded.extend_from_slice(&[0; 50]);
        padded.extend(fixture("levtypes.grib"));
        padded.extend_from_slice(b"junk between");
        padded.extend(fixture("timespan.grib"));
        padded.extend_from_slice(&[0; 300]);
        inputs.push(padded);
        // Damage: bytes flipped and truncations all over the concatenation.
        let len = all.len();
        for at in (0..len).step_by(len / 40 + 1) {
            let mut damaged = all.clone();
            damaged[at] ^= 0x5a;
            inputs.push(damaged);
            inputs.push(all[..at].to_vec());
        }
        inputs.push(all);
        inputs.push(Vec::new());
        inputs.push(b"GRI".to_vec());
        for input in &inputs {
            for resync in [false, true] {
                let want = from_buffer(input, resync);
                for trickle in [1, 7, 4096, usize::MAX] {
                    assert_eq!(
                        from_stream(input, resync, trickle),
                        want,
                        "{} bytes, resync {resync}, reads of {trickle}",
                        input.len()
                    );
                }
            }
        }
    }

    #[test]
    fn endless_input_that_is_not_grib_ends_after_the_limit_naming_its_start() {
        let limit = 1 << 20;
        for resync in [false, true] {
            // From byte 0 (`/dev/zero`, junk), whether skipping bad
            // messages or not.
            for byte in [0, b'x'] {
                let reader = MessageReader::new(io::repeat(byte)).max_message_size(limit);
                let reader = if resync { reader.resync() } else { reader };
                let items: Vec<_> = reader.collect();
                assert_eq!(items.len(), 1, "{items:?}");
                let e = items[0].as_ref().unwrap_err().to_string();
                assert!(
                    e.starts_with("GRIB message 0 at byte offset 0: no GRIB message in the ")
                        && e.ends_with(
                            "bytes from here (more than the largest message allowed): giving up"
                        ),
                    "{e}"
                );
            }
            // NULs after a good message.
            let good = fixture("rd-fc.grib");
            let reader =
                MessageReader::new(good.as_slice().chain(io::repeat(0))).max_message_size(limit);
            let reader = if resync { reader.resync() } else { reader };
            let items: Vec<_> = reader.collect();
            assert_eq!(items.len(), 2, "{items:?}");
            assert!(items[0].is_ok());
            let e = items[1].as_ref().unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "GRIB message 1 at byte offset {}: no GRIB message in the ",
                    good.len()
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn junk_is_skipped_and_reported_as_from_a_buffer() {
        let mut input = vec![b'h'; 12_000];
        input.extend(fixture("levtypes.grib"));
        input.extend_from_slice(b"between");
        input.extend(fixture("rd-fc.grib"));
        input.extend_from_slice(&[0; 4096]);
        let mut buffer = split_messages(&input);
        let want: Vec<_> = buffer.by_ref().map(|m| m.expect("ok").offset()).collect();
        assert_eq!(want, [12_000, 13_560, 15_127]);
        for trickle in [1, 7, 4096, usize::MAX] {
            let mut reader = MessageReader::new(Trickle {
                data: &input,
                n: trickle,
            });
            let got: Vec<_> = reader.by_ref().map(|m| m.expect("ok").offset()).collect();
            assert_eq!(got, want);
            assert_eq!(reader.skipped(), buffer.skipped(), "reads of {trickle}");
        }
        assert_eq!(
            buffer.skipped().ranges(),
            [0..12_000, 15_036..15_127, 16_603..20_699]
        );
    }

    #[test]
    fn a_message_above_the_limit_is_refused_before_it_is_read() {
        // A GRIB2 header declaring 1 TB, then endless junk.
        let mut header = b"GRIB\0\0\0\x02".to_vec();
        header.extend_from_slice(&(1u64 << 40).to_be_bytes());
        let e = MessageReader::new(header.as_slice().chain(io::repeat(b'x')))
            .next()
            .expect("an item")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "GRIB message 0 at byte offset 0: the message is 1099511627776 bytes long, more \
                 than the largest message allowed ({DEFAULT_MAX_MESSAGE_SIZE} bytes)"
            )
        );
        let file = fixture("rd-fc.grib");
        let e = MessageReader::new(file.as_slice())
            .max_message_size(file.len() - 1)
            .next()
            .expect("an item")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "GRIB message 0 at byte offset 0: the message is {} bytes long, more than the \
                 largest message allowed ({} bytes)",
                file.len(),
                file.len() - 1
            )
        );
        let m = MessageReader::new(file.as_slice())
            .max_message_size(file.len())
            .next()
            .expect("an item")
            .expect("at the limit");
        assert_eq!(m.bytes(), file.as_slice());
    }
}
