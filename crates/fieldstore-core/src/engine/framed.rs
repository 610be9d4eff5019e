//! Logs of framed records ([`Framing`]) appended to a file or object:
//! POSIX's table of contents, RADOS's log segments. [`init`] reads the
//! record that starts such a log; [`walk`] reads the records of the bytes
//! read past a reader's cursor, the same on both, a medium giving what
//! differs ([`FramedRecords`]).

use std::sync::Arc;

use super::Log;
use crate::error::{Error, Result};
use crate::key::DatasetKey;
use crate::record::maintenance::MaintenanceRecord;
use crate::record::{kind, Dec, Framed, Framing};

/// What [`walk`] does after a medium's own record.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Read on.
    Read,
    /// Stop: the medium moved its cursor (to the next segment) or replaced
    /// the log (the dataset wiped).
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

/// What a medium does with the records [`walk`] meets; `at` is an offset
/// in the file or object read.
///
/// # Contract
/// Each method tells `log` what it met, once, in log order.
pub trait FramedRecords<P: Clone, C> {
    /// Offset `at`'s name, for messages (`…/toc at offset 120`).
    fn what(&self, log: &Log<P, C>, at: u64) -> String;

    /// Offset `at`'s place in the whole log (`at` by default).
    fn place(&self, log: &Log<P, C>, at: u64) -> u64 {
        let _ = log;
        at
    }

    /// A record whose frame checks, met at `at` before it is applied
    /// (decoded or not, of any type): a medium that counts its records
    /// counts it here. Nothing, by default.
    fn met(&self, log: &mut Log<P, C>, kind: u16, at: u64) {
        let _ = (log, kind, at);
    }

    /// Decode a FLUSH record and add its blocks to `log.index`.
    ///
    /// # Errors
    /// `Corrupt` if it does not decode (nothing added): a damaged region.
    fn flush(&self, log: &mut Log<P, C>, payload: &[u8], at: u64) -> Result<()>;

    /// A WIPE, RECLAIM or CONTROL record (by default: units are URIs, and
    /// blocks live in the log, never reclaimed).
    fn maintenance(&self, log: &mut Log<P, C>, record: MaintenanceRecord, at: u64) {
        let at = self.place(log, at);
        log.index
            .apply_maintenance(at, record, &str::to_string, &|_| false);
    }

    /// A record of another type, `rest` the bytes after it: the medium's
    /// own, or a newer version's (skipped, by default).
    ///
    /// # Errors
    /// The medium's; they end the walk.
    fn own(&self, log: &mut Log<P, C>, kind: u16, p: &[u8], at: u64, rest: &[u8]) -> Result<Step> {
        let _ = (log, kind, p, at, rest);
        Ok(Step::Read)
    }

    /// A damaged region that may have held any record.
    fn damaged(&self, log: &mut Log<P, C>, at: u64, problem: String) {
        let at = self.place(log, at);
        log.index.damaged_region(at, problem);
    }

    /// Bytes that are not a record that checks, with a whole record after
    /// them, or with nothing after them (by the default
    /// [`FramedRecords::tail`]): damaged, by default.
    fn skipped(&self, log: &mut Log<P, C>, region: &[u8], at: u64, problem: String) {
        let _ = region;
        self.damaged(log, at, problem);
    }

    /// What ends the bytes read (`bytes`); whether it is consumed (else the
    /// next walk starts there). By default it is skipped as damage
    /// ([`FramedRecords::skipped`]): where appends are atomic, a record cut
    /// short is no append in flight.
    fn tail(&self, log: &mut Log<P, C>, bytes: &[u8], at: u64, tail: Tail) -> bool {
        let (problem, n) = (tail.problem(&|| self.what(log, at)), bytes.len());
        let problem = format!("{problem}; nothing readable after it (the last {n} bytes)");
        self.skipped(log, bytes, at, problem);
        true
    }
}

/// Read the records of `buf` (framed by `framing`), read from offset
/// `start`, into `log`; returns the bytes consumed, up to a record the
/// medium leaves at ([`Step::Leave`]).
///
/// FLUSH records are [`FramedRecords::flush`]'s, WIPE, RECLAIM and CONTROL
/// records [`FramedRecords::maintenance`]'s, others
/// [`FramedRecords::own`]'s. A record whose payload does not decode is a
/// damaged region. Bytes that are not a record that checks are stepped
/// over to the next one that does ([`Framing::resync`]; records appended
/// after damage are whole, so damage costs only itself); with none after
/// them, they are [`FramedRecords::tail`]'s.
///
/// # Errors
/// [`FramedRecords::own`]'s.
pub fn walk<P: Clone, C>(
    log: &mut Log<P, C>,
    framing: &Framing,
    buf: &[u8],
    start: u64,
    records: &dyn FramedRecords<P, C>,
) -> Result<usize> {
    let mut used = 0;
    while used < buf.len() {
        let at = start + used as u64;
        let tail = match framing.unframe(&buf[used..], &|| records.what(log, at)) {
            Ok(Framed::Record(kind, payload, n)) => {
                records.met(log, kind, at);
                let applied = match kind {
                    kind::FLUSH => records.flush(log, payload, at),
                    kind::WIPE | kind::RECLAIM | kind::CONTROL => {
                        let r = MaintenanceRecord::decode(kind, payload, &|| records.what(log, at));
                        r.map(|r| r.map_or((), |r| records.maintenance(log, r, at)))
                    }
                    _ => match records.own(log, kind, payload, at, &buf[used + n..])? {
                        Step::Read => Ok(()),
                        Step::Leave => return Ok(used + n),
                    },
                };
                if let Err(e) = applied {
                    // Checksums hold but the payload does not decode: a
                    // writer's bug, not a torn write.
                    records.damaged(log, at, format!("{e}; record skipped"));
                }
                used += n;
                continue;
            }
            Ok(Framed::Incomplete) => Tail::Cut,
            Err(e) => Tail::Damaged(e),
        };
        let Some(skip) = framing.resync(&buf[used + 1..]).map(|s| s + 1) else {
            if records.tail(log, &buf[used..], at, tail) {
                used = buf.len();
            }
            break;
        };
        let problem = tail.problem(&|| records.what(log, at));
        let next = at + skip as u64;
        let problem = format!("{problem}; {skip} bytes skipped, reading on at offset {next}");
        records.skipped(log, &buf[used..used + skip], at, problem);
        used += skip;
    }
    Ok(used)
}

/// The INIT record at the start of a log (`head`: its first bytes): the
/// dataset's key, where the next record starts, and the text of the schema
/// the dataset was created under.
///
/// # Errors
/// `Corrupt`, naming `what`, unless `head` starts with a whole INIT record.
pub fn init(
    framing: &Framing,
    head: &[u8],
    what: &dyn Fn() -> String,
) -> Result<(DatasetKey, u64, Arc<str>)> {
    let problem = match framing.unframe(head, what)? {
        Framed::Record(kind::INIT, payload, used) => {
            let mut d = Dec::new(payload, what);
            return Ok((DatasetKey(d.key()?), used as u64, Arc::from(d.str()?)));
        }
        Framed::Record(kind, ..) => format!("first record is type {kind}, not INIT"),
        Framed::Incomplete => "the INIT record is incomplete".to_string(),
    };
    Err(Error::corrupt(format!("{}: {problem}", what())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::CollocationKey;

    const FRAMING: Framing = Framing::new(*b"TEST");

    /// A FLUSH record names one block: its payload is its collocation key.
    /// Type 6 leaves.
    struct Medium;

    impl FramedRecords<u64, ()> for Medium {
        fn what(&self, _: &Log<u64, ()>, at: u64) -> String {
            format!("log at offset {at}")
        }
        fn flush(&self, log: &mut Log<u64, ()>, payload: &[u8], at: u64) -> Result<()> {
            let key = Dec::new(payload, &|| self.what(log, at)).key()?;
            log.index
                .add_block(CollocationKey(key), at, Default::default());
            Ok(())
        }
        fn own(&self, _: &mut Log<u64, ()>, kind: u16, _: &[u8], _: u64, _: &[u8]) -> Result<Step> {
            Ok(if kind == 6 { Step::Leave } else { Step::Read })
        }
    }

    fn flush(c: &str) -> Vec<u8> {
        let mut e = crate::record::Enc::default();
        e.str(c);
        FRAMING.framed(kind::FLUSH, &e.0)
    }

    /// Damage costs only itself: a record whose payload does not decode,
    /// bytes that do not check, a record cut short at the end; records of
    /// unknown types are skipped; a medium's own record can end the walk.
    #[test]
    fn damage_costs_only_itself_and_a_medium_may_leave() {
        let cut = flush("type=xx");
        let parts = [
            flush("type=fc"),
            FRAMING.framed(kind::FLUSH, b"\x01"),
            b"junk".to_vec(),
            FRAMING.framed(99, b"newer"),
            flush("type=an"),
            cut[..10].to_vec(),
        ];
        let buf = parts.concat();
        let mut log = Log::new(Arc::from(""), ());
        assert_eq!(
            walk(&mut log, &FRAMING, &buf, 100, &Medium).unwrap(),
            buf.len()
        );
        let names: Vec<_> = log.index.order().iter().map(|c| c.to_string()).collect();
        assert_eq!(names, ["type=fc", "type=an"]);
        let (a, b) = (100 + parts[0].len(), 100 + parts[0].len() + parts[1].len());
        let damage = log.index.damage(None);
        assert!(
            damage[0].starts_with(&format!("log at offset {a}: ")),
            "{damage:?}"
        );
        assert!(damage[0].ends_with("; record skipped"), "{damage:?}");
        assert!(damage[1].ends_with(&format!("4 bytes skipped, reading on at offset {}", b + 4)));
        let end = 100 + buf.len() - 10;
        let expected = format!(
            "log at offset {end}: record cut short; nothing readable after it (the last 10 bytes)"
        );
        assert_eq!(damage[2], expected);
        assert_eq!(damage.len(), 3);

        let buf = [flush("type=fc"), FRAMING.framed(6, b""), flush("type=an")].concat();
        let mut log = Log::new(Arc::from(""), ());
        let used = walk(&mut log, &FRAMING, &buf, 0, &Medium).unwrap();
        assert_eq!(used, buf.len() - flush("type=an").len());
        assert_eq!(log.index.order().len(), 1);
    }
}
