//! Archiving GRIB messages into a [`FieldStore`] under their MARS keys.

use std::io::{BufReader, Read};

use fieldstore::{Error, FieldStore, Result, SplitKey};

use crate::error::{GribError, Problem};
use crate::split::{split_messages, Message};
use crate::stream::{MessageReader, DEFAULT_MAX_MESSAGE_SIZE};

/// Archive GRIB data into a store: every message, byte for byte, under the
/// MARS key ecCodes gives it, canonicalised by the store's schema.
///
/// Implemented for [`FieldStore`]; bring the trait into scope to call
/// `fs.archive_grib(bytes)`.
///
/// ```
/// use fieldstore::{Config, FieldStore, ListOptions};
/// use fieldstore_grib::ArchiveGrib;
///
/// let file = std::fs::read(concat!(
///     env!("CARGO_MANIFEST_DIR"),
///     "/../../tests/fixtures/grib/levtypes.grib"
/// ))?;
/// let fs = FieldStore::open(Config::memory(fieldstore::Schema::ecmwf()))?;
/// let summary = fs.archive_grib(&file)?;
/// assert_eq!((summary.fields, summary.skipped.len()), (2, 0));
/// fs.flush()?;
/// let listed = fs.list(&"class=od,levtype=sfc".parse()?, ListOptions::default())?;
/// assert_eq!(
///     listed[0].braced(),
///     "{class=od,expver=0001,stream=oper,date=20251125,time=0000,domain=g}\
///      {type=fc,levtype=sfc}{step=0,param=167}"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ArchiveGrib {
    /// Archive every GRIB message of `bytes` (editions 1 and 2, any number,
    /// as in a GRIB file), each under its MARS key; all or nothing.
    ///
    /// Every message is split off and its key read and fitted to the schema
    /// before the first one is archived: if any message is bad, nothing is
    /// archived and the error names the message's index, its byte offset and
    /// the problem. Like [`FieldStore::archive`], this does not flush.
    ///
    /// # Errors
    /// `InvalidInput` with a [`GribError`] source: no message at all, a
    /// damaged or truncated message, garbage between messages, a message
    /// ecCodes cannot decode or that has no MARS keys, a key that does not
    /// fit the schema. Storage errors while archiving (then some messages
    /// may be archived: [`FieldStore::discard`] drops them).
    fn archive_grib(&self, bytes: &[u8]) -> Result<GribSummary> {
        self.archive_grib_with(bytes, GribOptions::default())
    }

    /// [`ArchiveGrib::archive_grib`] with options: with
    /// [`GribOptions::skip_bad`], bad messages are skipped and listed in
    /// [`GribSummary::skipped`] instead of failing the call.
    ///
    /// # Errors
    /// As [`ArchiveGrib::archive_grib`]; with `skip_bad`, only storage
    /// errors.
    fn archive_grib_with(&self, bytes: &[u8], options: GribOptions) -> Result<GribSummary>;

    /// Archive every GRIB message read from `reader` (a file, a pipe),
    /// each under its MARS key, holding one message at a time in memory
    /// ([`MessageReader`]): what any input makes this hold is bounded by
    /// [`GribOptions::max_message_size`], and input that is not GRIB is
    /// refused where it starts (endless input included).
    ///
    /// Unlike [`ArchiveGrib::archive_grib`], each message is archived as
    /// soon as its key fits (the input need not fit in memory): after an
    /// error, the messages before it are archived but not flushed; call
    /// [`FieldStore::discard`] to drop them (all or nothing, as
    /// `fieldstore archive` does).
    ///
    /// # Errors
    /// As [`ArchiveGrib::archive_grib`], plus a message above the limit
    /// ([`Problem::TooLarge`]), no message within the limit after a
    /// message or a damaged stretch ([`Problem::NoMessageAhead`], even with
    /// `skip_bad`), and read errors.
    fn archive_grib_read(&self, reader: &mut dyn Read, options: GribOptions)
        -> Result<GribSummary>;
}

/// How [`ArchiveGrib::archive_grib_with`] treats bad messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GribOptions {
    /// Skip bad messages (report them in [`GribSummary::skipped`]) and
    /// archive the others. After a damaged stretch, splitting resumes at the
    /// next well-formed message ([`crate::Messages::resync`]).
    pub skip_bad: bool,
    /// The largest message [`ArchiveGrib::archive_grib_read`] reads
    /// ([`DEFAULT_MAX_MESSAGE_SIZE`] unless set). A buffer given to
    /// `archive_grib` is already in memory and is not limited.
    pub max_message_size: usize,
}

impl Default for GribOptions {
    fn default() -> Self {
        GribOptions {
            skip_bad: false,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
        }
    }
}

impl GribOptions {
    /// Set [`GribOptions::max_message_size`].
    #[must_use]
    pub fn max_message_size(mut self, max: usize) -> Self {
        self.max_message_size = max;
        self
    }

    /// Set [`GribOptions::skip_bad`].
    #[must_use]
    pub fn skip_bad(mut self, skip: bool) -> Self {
        self.skip_bad = skip;
        self
    }
}

/// What [`ArchiveGrib::archive_grib`] did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct GribSummary {
    /// Messages archived.
    pub fields: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Bad messages skipped (only with [`GribOptions::skip_bad`]), in input
    /// order.
    pub skipped: Vec<Skipped>,
}

/// A bad message that was skipped.
#[derive(Debug)]
#[non_exhaustive]
pub struct Skipped {
    /// Its index in the input, 0-based (a damaged stretch counts as one
    /// message).
    pub index: usize,
    /// Where it starts in the input.
    pub offset: usize,
    /// What is wrong with it: an `InvalidInput` error with a [`GribError`]
    /// source, whose text starts with `GRIB message N at byte offset M: `.
    pub error: Error,
}

impl ArchiveGrib for FieldStore {
    fn archive_grib_with(&self, bytes: &[u8], options: GribOptions) -> Result<GribSummary> {
        let mut summary = GribSummary::default();
        let mut messages = split_messages(bytes);
        if options.skip_bad {
            messages = messages.resync();
        }
        // Decode and split every key first, so that bad input archives
        // nothing.
        let mut ready: Vec<(usize, SplitKey, &[u8])> = Vec::new();
        let mut any = false;
        for message in messages {
            any = true;
            let field = message.and_then(|m| Ok((m.index(), split_key(self, &m)?, m.bytes())));
            match field {
                Ok(f) => ready.push(f),
                Err(error) if options.skip_bad => summary.skip(error),
                Err(error) => return Err(error),
            }
        }
        if !any {
            summary.no_message(options.skip_bad)?;
        }
        for (index, split, message) in ready {
            self.archive_split(&split, message)
                .map_err(|e| e.context(format!("archiving GRIB message {index}")))?;
            summary.fields += 1;
            summary.bytes += message.len() as u64;
        }
        Ok(summary)
    }

    fn archive_grib_read(
        &self,
        reader: &mut dyn Read,
        options: GribOptions,
    ) -> Result<GribSummary> {
        let mut summary = GribSummary::default();
        let mut messages = MessageReader::new(BufReader::with_capacity(1 << 16, reader))
            .max_message_size(options.max_message_size);
        if options.skip_bad {
            messages = messages.resync();
        }
        let mut any = false;
        for message in messages {
            any = true;
            let archived = message.and_then(|m| {
                let split = split_key(self, &m.as_message())?;
                self.archive_split(&split, m.bytes())
                    .map_err(|e| e.context(format!("archiving GRIB message {}", m.index())))?;
                Ok(m.bytes().len() as u64)
            });
            match archived {
                Ok(bytes) => {
                    summary.fields += 1;
                    summary.bytes += bytes;
                }
                Err(error) if options.skip_bad && skippable(&error) => summary.skip(error),
                Err(error) => return Err(error),
            }
        }
        if !any {
            summary.no_message(options.skip_bad)?;
        }
        Ok(summary)
    }
}

/// The key of `m`, split by the store's schema; an error names the message.
fn split_key(fs: &FieldStore, m: &Message<'_>) -> Result<SplitKey> {
    let key = m.mars_key()?;
    fs.schema().split(&key).map_err(|source| {
        Error::from(GribError {
            index: m.index(),
            offset: m.offset(),
            problem: Problem::Schema {
                key: key.to_string(),
                source: Box::new(source),
            },
        })
    })
}

/// Whether `skip_bad` may skip `error`: a bad message, not a failure to
/// read or store, nor input with no message in sight.
fn skippable(error: &Error) -> bool {
    std::error::Error::source(error)
        .and_then(|s| s.downcast_ref::<GribError>())
        .is_some_and(|g| !matches!(g.problem, Problem::NoMessageAhead { .. }))
}

/// The message index and offset an error of this crate names.
fn located(error: &Error) -> (usize, usize) {
    std::error::Error::source(error)
        .and_then(|s| s.downcast_ref::<GribError>())
        .map_or((0, 0), |g| (g.index, g.offset))
}

impl GribSummary {
    /// Record a bad message as skipped, where its error locates it.
    fn skip(&mut self, error: Error) {
        let (index, offset) = located(&error);
        self.skipped.push(Skipped {
            index,
            offset,
            error,
        });
    }

    /// The input held no message at all: an error, or, when skipping bad
    /// messages, a skipped one.
    fn no_message(&mut self, skip_bad: bool) -> Result<()> {
        let error = Error::from(GribError {
            index: 0,
            offset: 0,
            problem: Problem::Empty,
        });
        if !skip_bad {
            return Err(error);
        }
        self.skip(error);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, ErrorKind, ListOptions, Request, Schema};

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/../../tests/fixtures/grib/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn store() -> FieldStore {
        FieldStore::open(Config::memory(Schema::ecmwf())).expect("open")
    }

    fn listed(fs: &FieldStore) -> Vec<String> {
        fs.list(&Request::new(), ListOptions::default())
            .expect("list")
            .iter()
            .map(|e| e.braced())
            .collect()
    }

    #[test]
    fn messages_are_archived_unchanged_and_retrieved_in_request_order() {
        let fs = store();
        let file = fixture("timespan.grib");
        let summary = fs.archive_grib(&file).expect("archive");
        assert_eq!(summary.fields, 6);
        assert_eq!(summary.bytes, file.len() as u64);
        assert!(summary.skipped.is_empty());
        fs.flush().expect("flush");
        let messages: Vec<&[u8]> = split_messages(&file)
            .map(|m| m.expect("message").bytes())
            .collect();
        // timespan.grib: steps 6/12/18 of 2t, then of cp (228143), which
        // ecCodes 2.50 gives `timespan=1h` (earlier versions no timespan).
        let version: Vec<u32> = crate::eccodes_version()
            .split('.')
            .map(|p| p.parse().expect("number"))
            .collect();
        let timespan = if version[..2] >= [2, 50][..] {
            ",timespan=1h"
        } else {
            ""
        };
        let request: Request = format!(
            "class=e6,expver=5659,stream=oper,date=20161230,time=1800,type=fc,levtype=sfc,\
             step=18/6,param=228143{timespan}"
        )
        .parse()
        .expect("request");
        let got = fs
            .retrieve(&request)
            .expect("retrieve")
            .read_all()
            .expect("read");
        assert!(
            got == [messages[5], messages[3]].concat(),
            "{} bytes",
            got.len()
        );
    }

    #[test]
    fn a_bad_message_archives_nothing_and_is_located() {
        let fs = store();
        let mut bytes = fixture("levtypes.grib");
        let (second, end) = split_messages(&bytes)
            .nth(1)
            .expect("two messages")
            .map(|m| (m.offset(), m.offset() + m.bytes().len()))
            .expect("valid");
        bytes.truncate(end - 10);
        let e = fs.archive_grib(&bytes).expect_err("truncated");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(
            e.to_string().starts_with(&format!(
                "GRIB message 1 at byte offset {second}: truncated: the message is "
            )),
            "{e}"
        );
        assert!(!fs.dirty(), "nothing archived");
        fs.flush().expect("flush");
        assert!(listed(&fs).is_empty());
    }

    #[test]
    fn keys_that_fit_no_rule_name_the_key_and_the_rule() {
        let schema: Schema = "[ class=od, expver, stream, date, time, domain? [ type, levtype \
                              [ step, levelist?, param ]]]"
            .parse()
            .expect("schema");
        let fs = FieldStore::open(Config::memory(schema)).expect("open");
        let mut bytes = fixture("levtypes.grib");
        bytes.extend(fixture("rd-fc.grib"));
        let offset = bytes.len() - fixture("rd-fc.grib").len();
        let e = fs.archive_grib(&bytes).expect_err("class=rd");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            e.to_string(),
            format!(
                "GRIB message 2 at byte offset {offset}: MARS key domain=g,levtype=sfc,\
                 date=20201102,time=0000,step=12,param=166.128,class=rd,type=fc,stream=oper,\
                 expver=xxxx does not fit the schema: value 'rd' of keyword 'class' is not \
                 allowed by rule [ class=od, expver, stream, date, time, domain? [ type, levtype \
                 [ step, levelist?, param ]]] (line 1)"
            )
        );
        assert!(!fs.dirty());

        let summary = fs
            .archive_grib_with(&bytes, GribOptions::default().skip_bad(true))
            .expect("skip");
        assert_eq!(summary.fields, 2);
        assert_eq!(summary.skipped.len(), 1);
        assert_eq!(
            (summary.skipped[0].index, summary.skipped[0].offset),
            (2, offset)
        );
        fs.flush().expect("flush");
        assert_eq!(listed(&fs).len(), 2);
    }

    #[test]
    fn skip_bad_resumes_after_a_damaged_message() {
        let fs = store();
        let good = fixture("levtypes.grib");
        let mut bytes = good.clone();
        // Damage message 0's end marker: the split cannot trust its length.
        let first = split_messages(&good)
            .next()
            .expect("message")
            .expect("valid")
            .bytes()
            .len();
        bytes[first - 1] = b'X';
        bytes.extend(fixture("rd-fc.grib"));
        assert!(fs.archive_grib(&bytes).is_err());
        let summary = fs
            .archive_grib_with(&bytes, GribOptions::default().skip_bad(true))
            .expect("skip");
        assert_eq!(summary.fields, 2, "{summary:?}");
        assert_eq!(summary.skipped.len(), 1);
        assert_eq!(
            (summary.skipped[0].index, summary.skipped[0].offset),
            (0, 0)
        );
        assert!(
            summary.skipped[0]
                .error
                .to_string()
                .contains("no '7777' end marker"),
            "{}",
            summary.skipped[0].error
        );
        fs.flush().expect("flush");
        let listed = listed(&fs);
        assert_eq!(listed.len(), 2);
        assert!(listed
            .iter()
            .any(|l| l.contains("levtype=sfc}{step=0,param=167}")));
        assert!(listed.iter().any(|l| l.contains("{class=rd,")));
    }

    #[test]
    fn empty_input_is_an_error_unless_skipped() {
        let fs = store();
        let e = fs.archive_grib(b"").expect_err("empty");
        assert_eq!(
            e.to_string(),
            "GRIB message 0 at byte offset 0: no GRIB message: the input is empty"
        );
        let summary = fs
            .archive_grib_with(b"", GribOptions::default().skip_bad(true))
            .expect("skip");
        assert_eq!((summary.fields, summary.skipped.len()), (0, 1));
    }
}
