//! Archiving GRIB messages into a [`FieldStore`] under their MARS keys.

use std::collections::HashMap;
use std::io::{BufReader, Read};

use fieldstore::{Error, FieldStore, Key, Result, SplitKey};

use crate::error::{GribError, Problem};
use crate::identity::IdentityKeys;
use crate::skipped::SkippedBytes;
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
    /// Bytes that are not GRIB before, between and after the messages are
    /// skipped, as ecCodes skips them, and reported in
    /// [`GribSummary::skipped_bytes`] for the caller to warn about (see
    /// [`SkippedBytes`]); a `GRIB` that does not frame as a message is an
    /// error.
    ///
    /// # Errors
    /// `InvalidInput` with a [`GribError`] source: no message at all, a
    /// damaged or truncated message, a message ecCodes cannot decode (or
    /// fails one of its assertions on) or that has no MARS keys, a key that
    /// does not fit the schema. Storage errors while archiving (then some
    /// messages may be archived: [`FieldStore::discard`] drops them).
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

/// How [`ArchiveGrib::archive_grib_with`] treats bad messages, and the
/// keys it fills in.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Keywords and values a message's MARS key gets where ecCodes gives
    /// the keyword none (GRIB from other centres has no `class`,
    /// `expver`, `stream` or `type`), before the schema splits it; then the
    /// store's [`fieldstore::Config::archive_defaults`] for those still
    /// missing. A keyword ecCodes gives keeps its value.
    pub defaults: Key,
    /// Give every archived message's key and place in
    /// [`GribSummary::keys`] (to find duplicates across several inputs).
    pub record_keys: bool,
    /// Build each field's jump info at archive and keep it with its index
    /// entry (`docs/extract.md`). Off by default: archive then costs
    /// nothing more, and a field's first extraction builds its jump info
    /// and keeps it with the entry (`ExtractOptions::persist`). On, CCSDS
    /// fields cost a walk of their blocks at archive (~3 ms a million
    /// points) and ~1 KiB of index each, whether extracted or not. Fields
    /// whose packing has none are archived without.
    pub jump_info: bool,
}

impl Default for GribOptions {
    fn default() -> Self {
        GribOptions {
            skip_bad: false,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            defaults: Key::new(),
            record_keys: false,
            jump_info: false,
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

    /// Set [`GribOptions::jump_info`].
    #[must_use]
    pub fn jump_info(mut self, keep: bool) -> Self {
        self.jump_info = keep;
        self
    }

    /// Set [`GribOptions::skip_bad`].
    #[must_use]
    pub fn skip_bad(mut self, skip: bool) -> Self {
        self.skip_bad = skip;
        self
    }

    /// Set [`GribOptions::record_keys`].
    #[must_use]
    pub fn record_keys(mut self, record: bool) -> Self {
        self.record_keys = record;
        self
    }

    /// Set [`GribOptions::defaults`].
    #[must_use]
    pub fn defaults(mut self, defaults: Key) -> Self {
        self.defaults = defaults;
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
    /// Messages archived under the key of an earlier message of the same
    /// input, in input order: both are archived and the last wins (FDB5's
    /// rule), but a caller should say so.
    pub duplicates: Vec<Duplicate>,
    /// With [`GribOptions::record_keys`]: every archived message's key (as
    /// in [`Duplicate::key`]) and its index and byte offset, in input order.
    pub keys: Vec<(String, (usize, usize))>,
    /// Bytes of the input that are not GRIB, skipped (a record header,
    /// padding, junk between messages): one warning's worth, which callers
    /// print (`Display`) or pass on with its ranges. Empty when there were
    /// none, and when the input held no message at all (that is the error,
    /// or the one [`GribSummary::skipped`] message).
    pub skipped_bytes: SkippedBytes,
}

/// A message archived under the same key as an earlier one of the same
/// input, which it replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Duplicate {
    /// The key both have (all levels, as `fieldstore list` prints it).
    pub key: String,
    /// The earlier message: its index in the input (0-based) and byte
    /// offset.
    pub first: (usize, usize),
    /// The later message, which wins.
    pub last: (usize, usize),
}

impl std::fmt::Display for Duplicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GRIB message {} at byte offset {} has the key {} of GRIB message {} at byte offset {}: \
             both are archived, the last wins",
            self.last.0, self.last.1, self.key, self.first.0, self.first.1
        )
    }
}

/// The key of every message archived so far in one call, to find
/// duplicates.
#[derive(Default)]
struct Seen {
    first: HashMap<String, (usize, usize)>,
    record: bool,
}

impl Seen {
    fn new(record: bool) -> Seen {
        Seen {
            first: HashMap::new(),
            record,
        }
    }

    fn note(&mut self, split: &SplitKey, at: (usize, usize), summary: &mut GribSummary) {
        let key = split.braced();
        if self.record {
            summary.keys.push((key.clone(), at));
        }
        if let Some(first) = self.first.insert(key.clone(), at) {
            summary.duplicates.push(Duplicate {
                key,
                first,
                last: at,
            });
        }
    }
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
        let mut ready: Vec<((usize, usize), SplitKey, &[u8])> = Vec::new();
        let mut any = false;
        let extra = IdentityKeys::of(self.schema());
        for message in messages.by_ref() {
            any = true;
            let field = message.and_then(|m| {
                Ok((
                    (m.index(), m.offset()),
                    split_key(self, &m, &options.defaults, &extra)?,
                    m.bytes(),
                ))
            });
            match field {
                Ok(f) => ready.push(f),
                Err(error) if options.skip_bad => summary.skip(error),
                Err(error) => return Err(error),
            }
        }
        summary.skipped_bytes = messages.skipped().clone();
        if !any {
            summary.no_message(options.skip_bad)?;
        }
        let mut seen = Seen::new(options.record_keys);
        for (at, split, message) in ready {
            self.archive_extended(&split, message, extension(&options, message))
                .map_err(|e| e.context(format!("archiving GRIB message {}", at.0)))?;
            seen.note(&split, at, &mut summary);
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
        let mut seen = Seen::new(options.record_keys);
        let extra = IdentityKeys::of(self.schema());
        for message in messages.by_ref() {
            any = true;
            let archived = message.and_then(|m| {
                let split = split_key(self, &m.as_message(), &options.defaults, &extra)?;
                self.archive_extended(&split, m.bytes(), extension(&options, m.bytes()))
                    .map_err(|e| e.context(format!("archiving GRIB message {}", m.index())))?;
                Ok((m.bytes().len() as u64, split, (m.index(), m.offset())))
            });
            match archived {
                Ok((bytes, split, at)) => {
                    seen.note(&split, at, &mut summary);
                    summary.fields += 1;
                    summary.bytes += bytes;
                }
                Err(error) if options.skip_bad && skippable(&error) => summary.skip(error),
                Err(error) => return Err(error),
            }
        }
        summary.skipped_bytes = messages.skipped().clone();
        if !any {
            summary.no_message(options.skip_bad)?;
        }
        Ok(summary)
    }
}

/// The key of `m`, with `defaults` and then the store's
/// `archive-defaults` where ecCodes gives a keyword none, split by the
/// store's schema; an error names the message.
fn split_key(
    fs: &FieldStore,
    m: &Message<'_>,
    defaults: &Key,
    extra: &IdentityKeys,
) -> Result<SplitKey> {
    let mut key = m.key_with(extra)?;
    if !extra.is_empty() {
        // A schema keyed by the GRIB's own identity: the MARS keys it does
        // not name are not part of it (NCEP's `levtype=unknown,param=0`).
        let schema = fs.schema();
        key = Key::from_pairs(key.iter().filter(|(k, _)| schema.knows(k)))
            .map_err(|e| Error::new(fieldstore::ErrorKind::InvalidInput, e.to_string()))?;
    }
    for (keyword, value) in defaults.iter().chain(fs.config().archive_defaults.iter()) {
        if !key.contains(keyword) {
            // Both were checked when made: a valid keyword and value.
            key.push(keyword, value).map_err(|e| {
                Error::new(
                    fieldstore::ErrorKind::InvalidInput,
                    format!("archive defaults: {e}"),
                )
            })?;
        }
    }
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
    /// messages, a skipped one. Its bytes, if any, were all skipped: that
    /// is this error, not a warning besides.
    fn no_message(&mut self, skip_bad: bool) -> Result<()> {
        let len = std::mem::take(&mut self.skipped_bytes).total();
        let error = Error::from(GribError {
            index: 0,
            offset: 0,
            problem: if len == 0 {
                Problem::Empty
            } else {
                Problem::NotGrib { len }
            },
        });
        if !skip_bad {
            return Err(error);
        }
        self.skip(error);
        Ok(())
    }
}

/// The jump info extension of `message`, if asked for and it has one.
fn extension(options: &GribOptions, message: &[u8]) -> Option<std::sync::Arc<[u8]>> {
    if !options.jump_info {
        return None;
    }
    crate::jump::JumpInfo::of_message(message).map(|j| j.encode().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, ErrorKind, Key, ListOptions, Request, Schema};

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

    fn foreign_file(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/../../tests/fixtures/grib-foreign/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn foreign() -> Vec<u8> {
        foreign_file("kwbc-t.grib")
    }

    fn foreign_schema() -> Schema {
        let path = format!(
            "{}/../../docs/schemas/foreign.schema",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .parse()
            .expect("docs/schemas/foreign.schema")
    }

    #[test]
    fn defaults_fill_the_keys_ecmwfs_schema_needs_and_eccodes_gives_none() {
        // NCEP's GRIB2: ecCodes gives no class, expver, stream, type.
        let fs = FieldStore::open(Config::memory(Schema::ecmwf())).expect("open");
        let e = fs.archive_grib(&foreign()).expect_err("no class");
        assert!(e.to_string().contains("missing keyword 'class'"), "{e}");
        let defaults: Key = "class=od,expver=1,stream=oper,type=fc,step=99"
            .parse()
            .expect("key");
        let summary = fs
            .archive_grib_with(&foreign(), GribOptions::default().defaults(defaults))
            .expect("archive");
        assert_eq!((summary.fields, summary.duplicates.len()), (2, 0));
        fs.flush().expect("flush");
        let listed = listed(&fs);
        // Canonicalised by the schema (expver=1 is 0001); ecCodes'
        // step wins over the default.
        assert_eq!(listed.len(), 2, "{listed:?}");
        assert!(
            listed.iter().all(|l| l
                .starts_with("{class=od,expver=0001,stream=oper,date=20240115,time=0000")
                && (l.contains("step=0,") || l.contains("step=6,"))),
            "{listed:?}"
        );
    }

    #[test]
    fn the_foreign_schema_keys_other_centres_fields_by_their_grib_identity() {
        // Four fields of NCEP's GFS whose MARS keys collide two by two:
        // soil temperature in two layers (`levelist` absent), two
        // parameters ecCodes knows no MARS param for (`param=0`).
        let file = foreign_file("gfs-mars-collisions.grib2");
        let messages: Vec<&[u8]> = split_messages(&file)
            .map(|m| m.expect("message").bytes())
            .collect();
        assert_eq!(messages.len(), 4);
        let defaults: Key = "class=od,expver=1,stream=oper,type=fc"
            .parse()
            .expect("key");
        let mars = store();
        let summary = mars
            .archive_grib_with(&file, GribOptions::default().defaults(defaults))
            .expect("archive");
        assert_eq!(summary.duplicates.len(), 2, "MARS keys collapse them");

        // The foreign schema needs no defaults and keeps all four apart,
        // each retrievable by its own keys.
        let fs = FieldStore::open(Config::memory(foreign_schema())).expect("open");
        let summary = fs.archive_grib(&file).expect("archive");
        assert_eq!((summary.fields, summary.duplicates.len()), (4, 0));
        fs.flush().expect("flush");
        let listed = fs
            .list(&Request::new(), ListOptions::default())
            .expect("list");
        assert_eq!(listed.len(), 4);
        for e in &listed {
            let key = e.full_key();
            let request: Request = key.without_empty().to_string().parse().expect("request");
            let got = fs
                .retrieve(&request)
                .expect("retrieve")
                .read_all()
                .expect("read");
            assert!(messages.contains(&got.as_slice()), "{key}");
        }
        let layers: Request = "centre=kwbc,typeOfLevel=depthBelowLandLayer,topLevel=0.1"
            .parse()
            .expect("request");
        let got = fs.list(&layers, ListOptions::default()).expect("list");
        assert_eq!(got.len(), 1, "one layer starts at 0.1 m");
        assert!(
            got[0].braced().contains("topLevel=0.1,bottomLevel=0.4"),
            "{}",
            got[0].braced()
        );
    }

    #[test]
    fn the_configs_archive_defaults_come_after_the_calls() {
        let yaml = "engine: memory\narchive-defaults:\n  class: rd\n  expver: xxxx\n  stream: oper\n  type: an\n";
        let config = Config::from_yaml(yaml, std::path::Path::new("."), "test").expect("config");
        assert_eq!(
            config.archive_defaults.as_str(),
            "class=rd,expver=xxxx,stream=oper,type=an"
        );
        let fs = FieldStore::open(config).expect("open");
        fs.archive_grib(&foreign())
            .expect("archive with the config's defaults");
        let call: Key = "type=fc".parse().expect("key");
        fs.archive_grib_with(&foreign(), GribOptions::default().defaults(call))
            .expect("archive");
        fs.flush().expect("flush");
        let listed = listed(&fs);
        assert_eq!(listed.len(), 4, "{listed:?}");
        assert_eq!(
            listed.iter().filter(|l| l.contains("{type=fc,")).count(),
            2,
            "{listed:?}"
        );
        assert!(
            listed
                .iter()
                .all(|l| l.starts_with("{class=rd,expver=xxxx,stream=oper,")),
            "{listed:?}"
        );
        for (yaml, want) in [
            (
                "engine: memory\narchive-defaults: od\n",
                "archive-defaults: expected a mapping",
            ),
            (
                "engine: memory\narchive-defaults: {class: [od, rd]}\n",
                "archive-defaults.class: expected one value",
            ),
            (
                "engine: memory\narchive-defaults: {class: 'o d'}\n",
                "archive-defaults.class: ",
            ),
        ] {
            let e = Config::from_yaml(yaml, std::path::Path::new("."), "test").expect_err(yaml);
            assert!(e.to_string().contains(want), "{yaml}: {e}");
        }
    }

    #[test]
    fn two_messages_with_one_key_are_both_archived_and_reported() {
        let fs = store();
        let one = fixture("levtypes.grib");
        let mut bytes = one.clone();
        bytes.extend(fixture("rd-fc.grib"));
        bytes.extend(&one);
        let rd = fixture("rd-fc.grib").len();
        let second = split_messages(&one)
            .nth(1)
            .expect("two")
            .expect("valid")
            .offset();
        for summary in [
            fs.archive_grib(&bytes).expect("archive"),
            fs.archive_grib_read(&mut bytes.as_slice(), GribOptions::default())
                .expect("archive"),
        ] {
            assert_eq!(summary.fields, 5);
            let at: Vec<_> = summary
                .duplicates
                .iter()
                .map(|d| (d.first, d.last))
                .collect();
            assert_eq!(
                at,
                [
                    ((0, 0), (3, one.len() + rd)),
                    ((1, second), (4, one.len() + rd + second))
                ]
            );
            assert_eq!(
                summary.duplicates[1].to_string(),
                format!(
                    "GRIB message 4 at byte offset {} has the key \
                     {{class=od,expver=0001,stream=oper,date=20251125,time=0000,domain=g}}\
                     {{type=fc,levtype=sfc}}{{step=0,param=167}} of GRIB message 1 at byte offset \
                     {second}: both are archived, the last wins",
                    one.len() + rd + second
                )
            );
        }
        fs.flush().expect("flush");
        assert_eq!(listed(&fs).len(), 3, "the last wins: one field per key");
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
