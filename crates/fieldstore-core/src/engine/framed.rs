//! Logs that are bytes appended to a file or object, a row of framed
//! records ([`Framing`]): POSIX's table of contents and RADOS's log
//! segments. A reader reads the bytes past where it stopped and walks the
//! records in them; this module holds that walk, which is the same on
//! both: unframe, apply each record by its type, and step over damage to
//! the next record that checks. A medium gives what differs as
//! [`FramedRecords`]: how it decodes a FLUSH record, its own record types
//! (RADOS's SEAL and WIPED), and what damage, and a record cut short at
//! the end, mean on it.

use super::Log;
use crate::error::{Error, Result};
use crate::record::maintenance::MaintenanceRecord;
use crate::record::{kind, Framed, Framing};

/// A whole record of a type the walk does not apply itself.
#[derive(Debug)]
pub struct Record<'a> {
    /// Its type ([`kind`]).
    pub kind: u16,
    /// Its payload.
    pub payload: &'a [u8],
    /// Its offset in the file or object read.
    pub at: u64,
    /// Its length, framed.
    pub len: usize,
    /// The bytes read after it.
    pub rest: &'a [u8],
}

/// What the walk does after a medium's own record.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Read on after it.
    Read,
    /// Stop: the medium moved its cursor on (to the next segment) or
    /// replaced the log (the dataset wiped); see [`Walked::left`].
    Leave,
}

/// What ends the bytes read, with no record that checks after it.
#[derive(Debug)]
pub enum Tail {
    /// The start of a record whose rest is not there.
    Cut,
    /// Bytes that do not check.
    Damaged(Error),
}

impl Tail {
    /// What is wrong, `what` naming where.
    pub fn problem(self, what: &dyn Fn() -> String) -> String {
        match self {
            Tail::Cut => format!("{}: record cut short", what()),
            Tail::Damaged(e) => e.to_string(),
        }
    }
}

/// How far [`walk`] went.
#[derive(Debug, PartialEq, Eq)]
pub struct Walked {
    /// The bytes consumed (what is after them is read again next time).
    pub used: usize,
    /// Whether it stopped at a record after which the medium left
    /// ([`Step::Leave`]), rather than at the end of the bytes read.
    pub left: bool,
}

/// What a medium whose log is framed bytes does with the records of its
/// log. `P` and `C` are its [`Log`]'s place and cursor.
///
/// # Contract
/// Every method but [`FramedRecords::what`] and [`FramedRecords::place`]
/// tells `log` what it met, each once, in log order; `at` is an offset in
/// the file or object read (the one the walk started in). A record whose
/// payload does not decode ([`FramedRecords::flush`] returns an error) is
/// a damaged region, and costs only itself.
pub trait FramedRecords<P: Clone, C> {
    /// The framing of the medium's records.
    fn framing(&self) -> &'static Framing;

    /// The name of offset `at`, for messages (`…/toc at offset 120`).
    fn what(&self, log: &Log<P, C>, at: u64) -> String;

    /// Offset `at`'s place in the whole log, for the index
    /// ([`super::DatasetIndex::damaged_region`]): `at` itself by default.
    fn place(&self, log: &Log<P, C>, at: u64) -> u64 {
        let _ = log;
        at
    }

    /// Decode a FLUSH record and add its blocks to `log.index`.
    ///
    /// # Errors
    /// `Corrupt` if the payload does not decode (nothing is added then).
    fn flush(&self, log: &mut Log<P, C>, payload: &[u8], at: u64) -> Result<()>;

    /// Apply a WIPE, RECLAIM or CONTROL record. By default its units are
    /// URIs and no block is reclaimed (blocks that live in the log).
    fn maintenance(&self, log: &mut Log<P, C>, record: MaintenanceRecord, at: u64) {
        let at = self.place(log, at);
        log.index
            .apply_maintenance(at, record, &str::to_string, &|_| false);
    }

    /// A record of another type: the medium's own, or one of a newer
    /// version (skipped, the default).
    ///
    /// # Errors
    /// The medium's; they end the walk.
    fn own(&self, log: &mut Log<P, C>, record: Record<'_>) -> Result<Step> {
        let _ = (log, record);
        Ok(Step::Read)
    }

    /// A damaged region at `at`: by default, one that may have held any
    /// record ([`super::DatasetIndex::damaged_region`]).
    fn damaged(&self, log: &mut Log<P, C>, at: u64, problem: String) {
        let at = self.place(log, at);
        log.index.damaged_region(at, problem);
    }

    /// Bytes at `at` that are not a whole record, with a whole record
    /// after them, stepped over: [`FramedRecords::damaged`] by default.
    fn skipped(&self, log: &mut Log<P, C>, region: &[u8], at: u64, problem: String) {
        let _ = region;
        self.damaged(log, at, problem);
    }

    /// What ends the bytes read at `at` (`bytes`, with nothing readable
    /// after them); whether it is consumed (else the next walk starts
    /// there). By default it is damage, consumed: on a medium whose appends
    /// are atomic, a record cut short is never an append in flight.
    fn tail(&self, log: &mut Log<P, C>, bytes: &[u8], at: u64, tail: Tail) -> bool {
        let problem = format!(
            "{}; nothing readable after it (the last {} bytes)",
            tail.problem(&|| self.what(log, at)),
            bytes.len()
        );
        self.damaged(log, at, problem);
        true
    }
}

/// Walk the records in `buf`, read from offset `start`, telling `log` what
/// they say through `records`.
///
/// A FLUSH record is [`FramedRecords::flush`]'s; WIPE, RECLAIM and CONTROL
/// records are decoded here and applied by
/// [`FramedRecords::maintenance`]; any other type is
/// [`FramedRecords::own`]'s. Bytes that are not a whole record that
/// checks (damage, or a record cut short) with a record that checks after
/// them are stepped over to it ([`Framing::resync`]): records appended
/// after damage are whole, so damage costs only itself
/// ([`FramedRecords::skipped`]). With none after them, they are
/// [`FramedRecords::tail`]'s.
///
/// # Errors
/// [`FramedRecords::own`]'s.
pub fn walk<P: Clone, C>(
    log: &mut Log<P, C>,
    buf: &[u8],
    start: u64,
    records: &dyn FramedRecords<P, C>,
) -> Result<Walked> {
    let framing = records.framing();
    let mut used = 0;
    while used < buf.len() {
        let at = start + used as u64;
        let unframed = framing.unframe(&buf[used..], &|| records.what(log, at));
        let tail = match unframed {
            Ok(Framed::Record(kind, payload, n)) => {
                let applied = match kind {
                    kind::FLUSH => records.flush(log, payload, at),
                    kind::WIPE | kind::RECLAIM | kind::CONTROL => {
                        let decoded =
                            MaintenanceRecord::decode(kind, payload, &|| records.what(log, at));
                        decoded.map(|r| {
                            if let Some(r) = r {
                                records.maintenance(log, r, at);
                            }
                        })
                    }
                    _ => {
                        let rest = &buf[used + n..];
                        let record = Record {
                            kind,
                            payload,
                            at,
                            len: n,
                            rest,
                        };
                        if records.own(log, record)? == Step::Leave {
                            let used = used + n;
                            return Ok(Walked { used, left: true });
                        }
                        Ok(())
                    }
                };
                if let Err(e) = applied {
                    // Checksums hold but the payload does not decode: a
                    // writer's bug, not a torn write. Skip the record.
                    records.damaged(log, at, format!("{e}; record skipped"));
                }
                used += n;
                continue;
            }
            Ok(Framed::Incomplete) => Tail::Cut,
            Err(e) => Tail::Damaged(e),
        };
        let Some(skip) = framing.resync(&buf[used + 1..]) else {
            if records.tail(log, &buf[used..], at, tail) {
                used = buf.len();
            }
            break;
        };
        let skip = skip + 1;
        let problem = format!(
            "{}; {skip} bytes skipped, reading on at offset {}",
            tail.problem(&|| records.what(log, at)),
            at + skip as u64
        );
        records.skipped(log, &buf[used..used + skip], at, problem);
        used += skip;
    }
    Ok(Walked { used, left: false })
}
