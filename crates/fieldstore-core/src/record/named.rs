//! FLUSH records that name their blocks by place, stored apart from the
//! log (POSIX: a range of an index file; RADOS: an omap key), so that a
//! reader loads only the blocks it needs ([`super::inline`]: blocks that
//! ride in the record). A FLUSH payload (`docs/format/posix.md`,
//! `docs/format/rados.md`): timestamp (ns since the epoch), the writer's id (RADOS only), the
//! number of blocks, then per block its place (the medium's encoding),
//! its number of entries, its collocation key and its axes.

use super::{Dec, Enc};
use crate::axes::Axes;
use crate::error::Result;
use crate::key::CollocationKey;

/// One block a FLUSH record names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedBlock<Q> {
    /// Where the medium keeps it.
    pub place: Q,
    /// How many entries it holds.
    pub count: u32,
    /// The collocation its entries belong to.
    pub collocation: CollocationKey,
    /// The values each element keyword takes in it.
    pub axes: Axes,
}

/// The payload of a FLUSH record naming `blocks`, written now: with the
/// writer's id if the medium records one; `place` writes a block's place
/// (called in order, once a block).
pub fn encode_flush<Q>(
    writer: Option<&str>,
    blocks: &[NamedBlock<Q>],
    place: &mut dyn FnMut(&mut Enc, &Q),
) -> Vec<u8> {
    let mut e = Enc::default();
    e.u64(super::maintenance::now_ns());
    if let Some(w) = writer {
        e.str(w);
    }
    e.list(blocks, |e, b| {
        place(e, &b.place);
        e.u32(b.count);
        e.str(&b.collocation.to_string());
        e.axes(&b.axes);
    });
    e.0
}

/// The blocks a FLUSH payload names, decoded whole (a record that does not
/// decode names nothing, never half a flush). `writer`: whether the medium
/// records the writer's id; `place` reads a block's place.
///
/// # Errors
/// `Corrupt`, naming `what`, if the payload does not decode whole.
pub fn decode_flush<'a, Q>(
    payload: &'a [u8],
    what: &dyn Fn() -> String,
    writer: bool,
    place: &dyn Fn(&mut Dec<'a, '_>) -> Result<Q>,
) -> Result<Vec<NamedBlock<Q>>> {
    let mut d = Dec::new(payload, what);
    let _timestamp = d.u64()?;
    if writer {
        d.str()?;
    }
    let blocks = d.list(|d| {
        Ok(NamedBlock {
            place: place(d)?,
            count: d.u32()?,
            collocation: CollocationKey(d.key()?),
            axes: d.axes()?,
        })
    })?;
    d.end_of("FLUSH record")?;
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axes::AxesExt;

    /// What is encoded decodes to the same blocks, with a writer id or
    /// without; cut short, or with a byte more, it does not decode.
    #[test]
    fn blocks_round_trip_whole_or_not_at_all() {
        let mut axes = Axes::new();
        axes.add_key(&"step=6".parse().unwrap());
        let collocation = CollocationKey("type=fc".parse().unwrap());
        let blocks = vec![NamedBlock {
            place: "k".to_string(),
            count: 3,
            collocation,
            axes,
        }];
        let (get, what) = (
            |d: &mut Dec<'_, '_>| Ok(d.str()?.to_string()),
            || "F".to_string(),
        );
        for writer in [None, Some("host.1")] {
            let p = encode_flush(writer, &blocks, &mut |e, k| e.str(k));
            assert_eq!(
                decode_flush(&p, &what, writer.is_some(), &get).unwrap(),
                blocks
            );
            let e = decode_flush(&p[..p.len() - 1], &what, writer.is_some(), &get).unwrap_err();
            assert!(e.to_string().starts_with("F: "), "{e}");
            let longer = [&p[..], &[0]].concat();
            assert!(decode_flush(&longer, &what, writer.is_some(), &get).is_err());
        }
    }
}
