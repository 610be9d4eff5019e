//! A dataset's log as RADOS objects: its segments, their seals and
//! record counts, and the one way records are appended. Segment 0 is the
//! dataset object (its INIT record, then records); segment `k` > 0 is
//! `<object>.<k>`, created before the SEAL record of segment `k - 1` names
//! it. Every append is one operation that requires its segment unsealed
//! (`!sealed` empty) and adds 1 to its `!records` count, so that records
//! cut off or removed behind fieldstore's back are told from the log's
//! end. Layout: `docs/format/rados.md`.

use std::sync::Arc;

use fieldstore_core::engine::framed;
use fieldstore_core::maintenance::wiped_while_writing;
use fieldstore_core::record::maintenance as records;
use fieldstore_core::{DatasetKey, Error, ErrorKind, Result};

use crate::format::{self, Enc, Framed};
use crate::rados::{Errno, OrMissing, Pool, WriteOp, ECANCELED, ENOENT, EOPNOTSUPP, EPERM};

/// Keys listed per omap read (the root's, a segment's).
pub(crate) const PAGE: u64 = 1000;

/// The omap key of a sealed log segment: the number of the next segment.
/// (Block keys begin with a writer id, never with `!`.)
pub(crate) const SEALED: &[u8] = b"!sealed";

/// The omap key of a log segment counting the records appended to it
/// after INIT, in ASCII digits: the operation that appends a record adds 1
/// to it ([`append_counted`]), so that records cut off or removed behind
/// fieldstore's back are told from the log's end.
pub(crate) const RECORDS: &[u8] = b"!records";

/// The `!sealed` value of the last segment of a wiped dataset.
pub(crate) const WIPED_SEAL: &[u8] = b"wiped";

/// The omap key, on the last log segment, present while the dataset is
/// locked against archive: every flush compares it with the empty value.
pub(crate) const ARCHIVE_LOCKED: &[u8] = b"!archive-locked";

/// What a segment's `!sealed` key says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seal {
    /// Not sealed: the last segment.
    Open,
    /// Sealed; the log goes on in this segment.
    Next(u32),
    /// The dataset is wiped: nothing may be appended.
    Wiped,
}

/// The seal of segment `object`.
pub(crate) fn seal_of(pool: &Pool, object: &str) -> Result<Seal> {
    segment_end(pool, object)?
        .map(|(seal, _)| seal)
        .ok_or_else(|| ENOENT.error(format!("reading the seal of {}", pool.what(object))))
}

/// The seal of segment `object` and its `!records` count (`None` if no
/// record was appended since INIT, or only by a version before it), in
/// one omap read; `None` if the segment is gone (a wipe).
pub(crate) fn segment_end(pool: &Pool, object: &str) -> Result<Option<(Seal, Option<u64>)>> {
    let what = || format!("reading the seal of {}", pool.what(object));
    let Some(v) = pool.omap_get(object, &[SEALED, RECORDS]).or_missing(what)? else {
        return Ok(None);
    };
    let (mut seal, mut records) = (Seal::Open, None);
    for (k, v) in v {
        if k == RECORDS {
            records = counter(&v).map(|n| n as u64);
        } else if v == WIPED_SEAL {
            seal = Seal::Wiped;
        } else if !v.is_empty() {
            seal = std::str::from_utf8(&v)
                .ok()
                .and_then(|t| t.parse().ok())
                .map(Seal::Next)
                .ok_or_else(|| Error::corrupt(format!("{}: bad seal {v:?}", pool.what(object))))?;
        }
    }
    Ok(Some((seal, records)))
}

/// Add to `op` the addition of `delta` (`1` or `-1`) to the counter at
/// omap key `key`, applied with the rest of `op`: the OSD's `numops`
/// object class (in Ceph's default class list; its methods are `add` and
/// `mul`).
pub(crate) fn count(op: &mut WriteOp, key: &[u8], delta: &str) {
    // Its input: the key and the number, each a Ceph-encoded string (a
    // little-endian u32 length, then the bytes).
    let mut input = Vec::with_capacity(key.len() + 10);
    for s in [key, delta.as_bytes()] {
        input.extend_from_slice(&(s.len() as u32).to_le_bytes());
        input.extend_from_slice(s);
    }
    op.exec(c"numops", c"add", &input);
}

/// The value of a counter [`count`] keeps: the `numops` class writes a
/// double, 10 significant digits.
pub(crate) fn counter(value: &[u8]) -> Option<f64> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// Add to `op` the append of record `rec` to a log segment and the count
/// of its records (`!records`), applied together.
pub(crate) fn append_counted(op: &mut WriteOp, rec: &[u8]) {
    count(op, RECORDS, "1");
    op.append(rec);
}

/// The error of an operation that appends to a log segment (one with
/// [`append_counted`]): refused (EPERM) or not understood (EOPNOTSUPP),
/// it is said to be the `numops` class call, the likeliest cause.
pub(crate) fn append_error(e: Errno, what: impl std::fmt::Display) -> Error {
    if e != EPERM && e != EOPNOTSUPP {
        return e.error(what);
    }
    let os = std::io::Error::from_raw_os_error(e.0);
    Error::new(
        ErrorKind::Unsupported,
        format!(
            "{what}: {os}: the OSDs refused a call of the `numops` object class, which \
             fieldstore's log needs: the class is not loaded or not allowed (Ceph's \
             `osd_class_load_list`, `osd_class_default_list`), or this client's key lacks the \
             OSD capability to call classes (`x`) or to write (`w`)"
        ),
    )
    .with_source(os)
}

/// The last segment of the log whose segment 0 is `base` and its seal
/// (`Open`, or `Wiped`); `None` if no segment exists. With segment 0 gone
/// (a wipe's last step, or damage: [`crate::registry::head_lost`]), the last of the
/// segments after it: what a wipe still has to remove.
pub(crate) fn last_segment(pool: &Pool, base: &str) -> Result<Option<(u32, Seal)>> {
    let (mut k, mut first) = (0, 0);
    loop {
        let obj = segment_object(base, k);
        match pool.stat(&obj) {
            Ok(_) => {}
            Err(e) if e == ENOENT && k == 0 => {
                (k, first) = (1, 1);
                continue;
            }
            Err(e) if e == ENOENT => return Ok((k != first).then_some((k, Seal::Open))),
            Err(e) => return Err(e.error(format!("reading {}", pool.what(&obj)))),
        }
        match seal_of(pool, &obj)? {
            Seal::Next(n) => k = n,
            Seal::Open => {
                // The next segment exists, though this one is not marked
                // sealed: its sealer died between creating the next one
                // and sealing this one, or its `!sealed` key was lost
                // (damage; its SEAL record is there). Seal it (again), so
                // that nothing is appended after a SEAL, and go on.
                let next = segment_object(base, k + 1);
                let what = || format!("reading {}", pool.what(&next));
                if pool.stat(&next).or_missing(what)?.is_none() {
                    return Ok(Some((k, Seal::Open)));
                }
                match seal_segment(pool, base, k)? {
                    Some(n) => k = n,
                    None => return Ok(Some((k, Seal::Wiped))),
                }
            }
            Seal::Wiped => return Ok(Some((k, Seal::Wiped))),
        }
    }
}

/// Seal log segment `segment` of the log whose segment 0 is `base` (unless
/// another writer did) and return the segment the log goes on in (`None`:
/// the dataset is wiped): create the next segment, then, atomically on
/// this one, mark it sealed and append a SEAL record naming the next.
/// Once sealed, no flush can be appended to a segment, so every record of
/// segment k precedes every record of segment k + 1.
pub(crate) fn seal_segment(pool: &Pool, base: &str, segment: u32) -> Result<Option<u32>> {
    let obj = segment_object(base, segment);
    let next = segment + 1;
    let next_obj = segment_object(base, next);
    let mut p = Enc::default();
    p.u32(next);
    let rec = format::FRAMING.framed(format::SEAL, &p.0);
    for _ in 0..1000 {
        // The next segment inherits the archive lock; the seal applies
        // only if the lock did not change meanwhile.
        let lock: Vec<u8> = pool
            .omap_get(&obj, &[ARCHIVE_LOCKED])
            .map_err(|e| e.error(format!("reading the locks of {}", pool.what(&obj))))?
            .into_iter()
            .next()
            .map(|(_, v)| v)
            .unwrap_or_default();
        let mut create = WriteOp::new()?;
        create.create();
        if lock.is_empty() {
            create.omap_rm_keys(&[ARCHIVE_LOCKED]);
        } else {
            create.omap_set(&[(ARCHIVE_LOCKED, &lock)]);
        }
        pool.operate(&next_obj, &create)
            .map_err(|e| e.error(format!("creating {}", pool.what(&next_obj))))?;
        let mut op = WriteOp::new()?;
        op.assert_exists();
        op.omap_cmp_eq(SEALED, b"");
        op.omap_cmp_eq(ARCHIVE_LOCKED, &lock);
        op.omap_set(&[(SEALED, next.to_string().as_bytes())]);
        append_counted(&mut op, &rec);
        match pool.operate(&obj, &op) {
            Ok(()) => return Ok(Some(next)),
            Err(e) if e == ECANCELED => match seal_of(pool, &obj)? {
                Seal::Next(n) => return Ok(Some(n)),
                Seal::Wiped => return Ok(None),
                // The lock changed: copy it again.
                Seal::Open => {}
            },
            Err(e) if e == ENOENT => return Ok(None),
            Err(e) => return Err(append_error(e, format!("sealing {}", pool.what(&obj)))),
        }
    }
    Err(Error::internal(format!(
        "{}: the seal kept failing",
        pool.what(&obj)
    )))
}

/// Append a record to the end of the log, with `more` added to the same
/// atomic operation on the last segment.
pub(crate) fn append_log(
    pool: &Pool,
    base: &str,
    key: &DatasetKey,
    rec: &[u8],
    more: &dyn Fn(&mut WriteOp),
) -> Result<()> {
    let mut segment = match last_segment(pool, base)? {
        None => return Err(no_dataset(pool, base, key)),
        Some((_, Seal::Wiped)) | Some((_, Seal::Next(_))) => return Err(wiped_while_writing(key)),
        Some((k, Seal::Open)) => k,
    };
    for _ in 0..10_000 {
        let obj = segment_object(base, segment);
        let mut op = WriteOp::new()?;
        op.assert_exists();
        op.omap_cmp_eq(SEALED, b"");
        more(&mut op);
        append_counted(&mut op, rec);
        match pool.operate(&obj, &op) {
            Ok(()) => return Ok(()),
            Err(e) if e == ECANCELED => match seal_of(pool, &obj)? {
                Seal::Next(n) => segment = n,
                Seal::Wiped => return Err(wiped_while_writing(key)),
                Seal::Open => {}
            },
            Err(e) if e == ENOENT => return Err(wiped_while_writing(key)),
            Err(e) => return Err(append_error(e, format!("appending to {}", pool.what(&obj)))),
        }
    }
    Err(Error::internal(format!(
        "{}: no unsealed log segment found",
        pool.what(base)
    )))
}

/// `NotFound`: the log whose segment 0 is `base` does not exist.
pub(crate) fn no_dataset(pool: &Pool, base: &str, key: &DatasetKey) -> Error {
    let what = pool.what(base);
    Error::new(
        ErrorKind::NotFound,
        format!("no dataset {} in {what}", key.braced()),
    )
}

/// A framed record of `kind` with a timestamp and then `body`.
pub(crate) fn record(kind: u16, body: &dyn Fn(&mut Enc)) -> Vec<u8> {
    let mut p = Enc::default();
    p.u64(records::now_ns());
    body(&mut p);
    format::FRAMING.framed(kind, &p.0)
}

/// The object of log segment `k` of the dataset whose object is `base`.
pub(crate) fn segment_object(base: &str, k: u32) -> String {
    if k == 0 {
        base.to_string()
    } else {
        format!("{base}.{k}")
    }
}

/// Read the log segment `object` from `pos` to its end (as far as it is
/// whole); `None` if the segment is gone.
pub(crate) fn read_from(pool: &Pool, object: &str, pos: u64) -> Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut step = 256 << 10;
    loop {
        let start = out.len();
        out.resize(start + step, 0);
        let what = || format!("reading the log of {}", pool.what(object));
        let Some(n) = pool
            .read(object, pos + start as u64, &mut out[start..])
            .or_missing(what)?
        else {
            return Ok(None);
        };
        out.truncate(start + n);
        if n < step {
            return Ok(Some(out));
        }
        step = (step * 2).min(16 << 20);
    }
}

/// The INIT record of a dataset object: its key, where FLUSH records
/// begin and the text of the schema it was created under; `None` if the
/// object does not exist. Reads only the record.
pub(crate) fn read_init(pool: &Pool, object: &str) -> Result<Option<(DatasetKey, u64, Arc<str>)>> {
    let what = || format!("{} at offset 0", pool.what(object));
    let read = |len: usize| -> Result<Option<Vec<u8>>> {
        let mut buf = vec![0u8; len];
        let n = pool
            .read(object, 0, &mut buf)
            .or_missing(|| format!("reading {}", pool.what(object)))?;
        Ok(n.map(|n| {
            buf.truncate(n);
            buf
        }))
    };
    let Some(mut buf) = read(64 << 10)? else {
        return Ok(None);
    };
    if let (Framed::Incomplete, true) = (
        format::FRAMING.unframe(&buf, &what)?,
        buf.len() >= format::HEADER,
    ) {
        // A long schema: read the whole record.
        let len = u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
        buf = read(format::HEADER + len)?.unwrap_or_default();
    }
    framed::init(&format::FRAMING, &buf, &what).map(Some)
}
