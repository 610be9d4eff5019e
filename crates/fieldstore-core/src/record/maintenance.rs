//! The payloads of the maintenance records every catalogue log carries —
//! WIPE, RECLAIM, CONTROL — in one codec for the POSIX, RADOS and DAOS
//! formats (each frames them with its own magic and record numbers;
//! `docs/format/`). Bytes in, bytes out.
//!
//! ```text
//! WIPE     u64 time (ns), u32 n, n × key (collocations hidden),
//!          u32 m, m × str (units left to remove)
//! RECLAIM  u64 time (ns), u32 n, n × str (units removed)
//!          [, u32 k, k × str (index files removed: POSIX only)]
//! CONTROL  u64 time (ns), u8 locks (`Locks::bits`)
//! ```

use super::{Dec, Enc};
use crate::error::Result;
use crate::key::CollocationKey;

/// What a WIPE record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wipe {
    /// The collocations hidden.
    pub collocations: Vec<CollocationKey>,
    /// Units (as the backend names them) that only they pointed into, left
    /// to remove.
    pub units: Vec<String>,
}

/// What a RECLAIM record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reclaim {
    /// Units (as the backend names them) the store removed.
    pub units: Vec<String>,
    /// Index files removed (POSIX; `None`: the record has no such list).
    pub index_files: Option<Vec<String>>,
}

/// A maintenance record of a catalogue's log, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaintenanceRecord {
    /// A WIPE record.
    Wipe(Wipe),
    /// A RECLAIM record.
    Reclaim(Reclaim),
    /// A CONTROL record: the locked operations' bits.
    Control(u8),
}

impl MaintenanceRecord {
    /// Decode a record of type `kind` (the core's numbering,
    /// [`super::kind`]) if it is a maintenance record; `None` if it is
    /// another.
    ///
    /// # Errors
    /// `Corrupt`, naming `what`, if its payload does not decode whole.
    pub fn decode(
        kind: u16,
        payload: &[u8],
        what: &dyn Fn() -> String,
    ) -> Result<Option<MaintenanceRecord>> {
        Ok(Some(match kind {
            super::kind::WIPE => MaintenanceRecord::Wipe(decode_wipe(payload, what)?),
            super::kind::RECLAIM => MaintenanceRecord::Reclaim(decode_reclaim(payload, what)?),
            super::kind::CONTROL => MaintenanceRecord::Control(decode_control(payload, what)?),
            _ => return Ok(None),
        }))
    }
}

/// The time written into records: nanoseconds since the Unix epoch.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A WIPE record's payload.
pub fn encode_wipe(collocations: &[CollocationKey], units: &[String], now: u64) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(now);
    e.list(collocations, |e, c| e.str(&c.to_string()));
    e.list(units, |e, s| e.str(s));
    e.0
}

/// Decode a WIPE record's payload.
///
/// # Errors
/// `Corrupt`, naming `what`, if it does not decode whole.
pub fn decode_wipe(payload: &[u8], what: &dyn Fn() -> String) -> Result<Wipe> {
    let mut d = Dec::new(payload, what);
    let _time = d.u64()?;
    let collocations = d.list(|d| Ok(CollocationKey(d.key()?)))?;
    let units = d.strings()?;
    d.end_of("WIPE record")?;
    Ok(Wipe {
        collocations,
        units,
    })
}

/// A RECLAIM record's payload; `index_files` only where the format has
/// them (POSIX).
pub fn encode_reclaim(units: &[String], index_files: Option<&[String]>, now: u64) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(now);
    e.list(units, |e, s| e.str(s));
    if let Some(files) = index_files {
        e.list(files, |e, s| e.str(s));
    }
    e.0
}

/// Decode a RECLAIM record's payload (with its index files if it has
/// them).
///
/// # Errors
/// `Corrupt`, naming `what`, if it does not decode whole.
pub fn decode_reclaim(payload: &[u8], what: &dyn Fn() -> String) -> Result<Reclaim> {
    let mut d = Dec::new(payload, what);
    let _time = d.u64()?;
    let units = d.strings()?;
    let index_files = (!d.done()).then(|| d.strings()).transpose()?;
    d.end_of("RECLAIM record")?;
    Ok(Reclaim { units, index_files })
}

/// A CONTROL record's payload: the locked operations' bits.
pub fn encode_control(bits: u8, now: u64) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(now);
    e.u8(bits);
    e.0
}

/// Decode a CONTROL record's payload: the locked operations' bits.
///
/// # Errors
/// `Corrupt`, naming `what`, if it does not decode whole.
pub fn decode_control(payload: &[u8], what: &dyn Fn() -> String) -> Result<u8> {
    let mut d = Dec::new(payload, what);
    let _time = d.u64()?;
    let bits = d.u8()?;
    d.end_of("CONTROL record")?;
    Ok(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes are the format's (`docs/format/*.md`): pinned.
    #[test]
    fn golden_bytes() {
        let c = CollocationKey("type=fc".parse().unwrap());
        assert_eq!(
            encode_wipe(std::slice::from_ref(&c), &["u".into()], 0x0102),
            [
                2, 1, 0, 0, 0, 0, 0, 0, // time
                1, 0, 0, 0, 7, 0, 0, 0, b't', b'y', b'p', b'e', b'=', b'f',
                b'c', // collocations
                1, 0, 0, 0, 1, 0, 0, 0, b'u', // units
            ]
        );
        assert_eq!(encode_control(9, 1), [1, 0, 0, 0, 0, 0, 0, 0, 9]);
        assert_eq!(
            encode_reclaim(&["u".into()], None, 1),
            [1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, b'u']
        );
        assert_eq!(
            encode_reclaim(&[], Some(&["i".into()]), 1),
            [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, b'i']
        );
    }

    #[test]
    fn round_trips_and_rejects_trailing_bytes() {
        let what = || "rec".to_string();
        let c = vec![CollocationKey("type=fc,levtype=pl".parse().unwrap())];
        let u = vec!["a".to_string(), "b".to_string()];
        let w = decode_wipe(&encode_wipe(&c, &u, 5), &what).unwrap();
        assert_eq!((w.collocations, w.units), (c, u.clone()));
        let r = decode_reclaim(&encode_reclaim(&u, None, 5), &what).unwrap();
        assert_eq!((r.units.clone(), r.index_files), (u.clone(), None));
        let r = decode_reclaim(&encode_reclaim(&u, Some(&u), 5), &what).unwrap();
        assert_eq!(r.index_files, Some(u));
        assert_eq!(decode_control(&encode_control(3, 5), &what).unwrap(), 3);
        let mut bad = encode_control(3, 5);
        bad.push(0);
        let e = decode_control(&bad, &what).unwrap_err();
        assert!(
            e.to_string().contains("trailing bytes in CONTROL record"),
            "{e}"
        );
    }
}
