//! Names and object ids of the DAOS layout (`docs/format/daos.md`).

use fieldstore_core::DatasetKey;

use crate::config::label_is_valid;

/// User bits `lo` of the root KV (in the root container).
pub(crate) const ROOT_KV_LO: u64 = 0;
/// User bits `lo` of a dataset KV (in its dataset container). Distinct from
/// the root KV's so that the two can never be the same object, whatever
/// the labels.
pub(crate) const DATASET_KV_LO: u64 = 1;

/// The dataset KV's key holding the dataset's META record.
pub(crate) const META_KEY: &str = "meta";
/// The dataset KV's key holding the dataset's lock state (a CONTROL
/// record; absent: nothing locked).
pub(crate) const CONTROL_KEY: &str = "control";
/// The dataset KV's key where stores written before 2026-11-29 keep their
/// tail hint (a slot number, rewritten after every publish, so racing
/// writers could lower it): read when the hint array is empty.
pub(crate) const OLD_TAIL_KEY: &str = "tail";

/// User bits `hi` of a dataset's tail hint array (`lo` 0): a byte array
/// where a writer writes one byte at offset `n` after publishing slot
/// `n`, so that its size less one is the greatest slot published. Field
/// and spill arrays have `hi` 0, so none can be this object.
pub(crate) const HINT_ARRAY_HI: u32 = 1;

/// The chunk size of the tail hint array: a million slots a chunk.
pub(crate) const HINT_CHUNK: u64 = 1 << 20;

/// The dataset KV's key of log slot `n`.
pub(crate) fn slot_key(n: u64) -> String {
    format!("f.{n}")
}

/// The container label of a dataset: its key's values joined by `:`
/// (FDB5's naming, e.g. `od:0001:oper:20231201:1200`). Characters a DAOS
/// label cannot hold, and `:` and `_` inside values, are written `_XX`
/// (hex); an all-empty name is `_`; a name longer than 127 characters is
/// cut at 118 and ends in `-` and the CRC-32C (8 hex digits) of the key's
/// canonical string; a UUID-shaped name gets a trailing `:`.
pub fn dataset_label(key: &DatasetKey) -> String {
    let mut name = String::new();
    for (i, v) in key.values().enumerate() {
        if i > 0 {
            name.push(':');
        }
        for b in v.bytes() {
            if b.is_ascii_alphanumeric() || b == b'.' || b == b'-' {
                name.push(b as char);
            } else {
                name.push_str(&format!("_{b:02X}"));
            }
        }
    }
    if name.is_empty() {
        name.push('_');
    }
    if name.len() > 127 {
        let hash = crc32c::crc32c(key.to_string().as_bytes());
        name.truncate(118);
        name.push_str(&format!("-{hash:08x}"));
    }
    if !label_is_valid(&name) {
        // Only a UUID-shaped name gets here.
        name.push(':');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(k: &str) -> String {
        dataset_label(&k.parse().unwrap())
    }

    #[test]
    fn labels_are_fdb_names_and_valid() {
        assert_eq!(
            label("class=od,expver=0001,stream=oper,date=20231201,time=1200"),
            "od:0001:oper:20231201:1200"
        );
        assert_eq!(label("a=x/y,b=,c=p_q:r"), "x_2Fy::p_5Fq_3Ar");
        assert_eq!(label("a="), "_");
        let long = format!("a={}", "v".repeat(300));
        let l = label(&long);
        assert_eq!(l.len(), 127);
        assert!(label_is_valid(&l));
        assert_ne!(l, label(&format!("a={}w", "v".repeat(300))));
        let u = label("a=12345678-1234-1234-1234-123456789abc");
        assert!(label_is_valid(&u), "{u}");
    }
}
