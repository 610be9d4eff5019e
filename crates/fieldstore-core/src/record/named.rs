//! FLUSH records that name their blocks by place, stored apart from the
//! log (POSIX: a range of an index file; RADOS: an omap key), so that a
//! reader loads only the blocks it needs ([`super::inline`]: blocks that
//! ride in the record). A FLUSH payload (`docs/format/posix.md`, `docs/format/rados.md`):
//! timestamp (ns since the epoch), the writer's id (RADOS only), the
//! number of blocks, then per block its place (the medium's encoding),
//! its number of entries, its collocation key and its axes.

use super::Dec;
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
    let n = d.u32()?;
    let mut blocks = Vec::with_capacity((n as usize).min(4096));
    for _ in 0..n {
        blocks.push(NamedBlock {
            place: place(&mut d)?,
            count: d.u32()?,
            collocation: CollocationKey(d.key()?),
            axes: d.axes()?,
        });
    }
    d.end_of("FLUSH record")?;
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axes::AxesExt;
    use crate::record::Enc;

    /// A payload decodes to its blocks, with a writer id or without; cut
    /// short, or with a byte more, it does not.
    #[test]
    fn blocks_decode_whole_or_not_at_all() {
        let mut axes = Axes::new();
        axes.add_key(&"step=6".parse().unwrap());
        let block = NamedBlock {
            place: "k".to_string(),
            count: 3,
            collocation: CollocationKey("type=fc".parse().unwrap()),
            axes: axes.clone(),
        };
        let (get, what) = (
            |d: &mut Dec<'_, '_>| Ok(d.str()?.to_string()),
            || "F".to_string(),
        );
        for writer in [false, true] {
            let mut e = Enc::default();
            e.u64(1);
            if writer {
                e.str("host.1");
            }
            e.u32(1);
            e.str("k");
            e.u32(3);
            e.str("type=fc");
            e.axes(&axes);
            let p = e.0;
            assert_eq!(
                decode_flush(&p, &what, writer, &get).unwrap(),
                vec![block.clone()]
            );
            let e = decode_flush(&p[..p.len() - 1], &what, writer, &get).unwrap_err();
            assert!(e.to_string().starts_with("F: "), "{e}");
            let longer = [&p[..], &[0]].concat();
            assert!(decode_flush(&longer, &what, writer, &get).is_err());
        }
    }
}
