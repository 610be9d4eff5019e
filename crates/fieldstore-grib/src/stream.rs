//! Splitting GRIB messages off a stream (a file, a pipe, a device) one at a
//! time, holding at most one message in memory.
//!
//! [`split_messages`](crate::split_messages) frames a buffer that holds the
//! whole input; reading an endless input (`/dev/zero`, a pipe that never
//! closes) into a buffer first grows it without bound. [`MessageReader`]
//! reads only what framing needs: section 0 (8 or 16 bytes), the section
//! headers of a large GRIB1 message, then the declared length, which is
//! refused *before it is read* when it is above the limit
//! ([`Problem::TooLarge`]). It applies the same checks as `split_messages`
//! and reports the same problems at the same byte offsets (the tests compare
//! the two), so that non-GRIB input is refused at the offset where it
//! starts (`/dev/zero`: byte 0, `expected 'GRIB', found bytes 00 00 …`).
//!
//! What a reader holds is bounded by the limit: one message, plus, after a
//! framing error when resyncing, a window of the input being searched for the
//! next well-formed message. Searches that could go on for ever are bounded
//! too: NULs after a message, or a damaged stretch being skipped, longer
//! than the limit end the reading with [`Problem::NoMessageAhead`], also
//! when bad messages are skipped.

use std::io::{self, Read};

use fieldstore_core::{Error, Key, Result};

use crate::error::{GribError, Problem};
use crate::split::{frame, Message, MAX_PADDING};

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
/// // Endless input that is not GRIB is refused at its first byte.
/// let e = fieldstore_grib::MessageReader::new(std::io::repeat(0))
///     .next()
///     .expect("an error")
///     .unwrap_err();
/// assert!(e.to_string().starts_with("GRIB message 0 at byte offset 0: expected 'GRIB'"));
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
        }
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
                r => return Ok(r),
            }
        }
    }

    /// Consume NULs (padding after a message), counting them; stop after
    /// more than the limit.
    fn skip_nuls(&mut self) -> io::Result<usize> {
        let mut count = 0;
        while count <= self.max {
            if self.data().is_empty() {
                self.fill(CHUNK)?;
                if self.data().is_empty() {
                    break;
                }
            }
            let available = self.data().len();
            let nuls = self.data().iter().take_while(|b| **b == 0).count();
            self.consume(nuls);
            count += nuls;
            if nuls < available {
                break;
            }
        }
        Ok(count)
    }

    /// The next message, `None` at the end of the input.
    fn step(&mut self) -> std::result::Result<Option<OwnedMessage>, Stop> {
        if self.index > 0 {
            let offset = self.start;
            let padding = self.skip_nuls()?;
            if padding > self.max {
                return Err(Stop::Bad {
                    offset,
                    problem: Problem::NoMessageAhead {
                        scanned: padding as u64,
                    },
                });
            }
            if padding >= MAX_PADDING {
                return Err(Stop::Bad {
                    offset,
                    problem: Problem::LongPadding { len: padding },
                });
            }
        }
        self.fill(1)?;
        if self.data().is_empty() {
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
            match self.data().windows(4).position(|w| w == b"GRIB") {
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
    fn endless_zeros_are_refused_at_byte_0() {
        let mut reader = MessageReader::new(io::repeat(0));
        let e = reader.next().expect("an item").unwrap_err();
        assert_eq!(
            e.to_string(),
            "GRIB message 0 at byte offset 0: expected 'GRIB', found bytes 00 00 00 00 00 00 00 00 \
             (garbage between messages, or a damaged message before)"
        );
        assert!(reader.next().is_none());
    }

    #[test]
    fn endless_input_ends_when_resyncing_and_after_a_message() {
        // Skipping bad messages: the search gives up after the limit.
        let limit = 1 << 20;
        let items: Vec<_> = MessageReader::new(io::repeat(b'x'))
            .max_message_size(limit)
            .resync()
            .collect();
        assert_eq!(items.len(), 2, "{items:?}");
        let e = items[1].as_ref().unwrap_err().to_string();
        assert!(
            e.starts_with("GRIB message 1 at byte offset 1: no GRIB message in the ")
                && e.ends_with(
                    "bytes from here (more than the largest message allowed): giving up"
                ),
            "{e}"
        );
        // NULs after a good message.
        let good = fixture("rd-fc.grib");
        let items: Vec<_> = MessageReader::new(good.as_slice().chain(io::repeat(0)))
            .max_message_size(limit)
            .resync()
            .collect();
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
