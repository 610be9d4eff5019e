//! Object classes and the OID header, as `daos_obj_generate_oid2` fills it
//! (daos.md §2.1):
//!
//! ```text
//! hi: | 63..56 type | 55..48 redundancy ord | 47..32 group count | 31..0 user |
//! ```

use crate::types::der;

/// `OID_FMT_TYPE_SHIFT`.
pub const TYPE_SHIFT: u32 = 56;
/// `OID_FMT_CLASS_SHIFT`.
pub const CLASS_SHIFT: u32 = 48;
/// `OID_FMT_META_SHIFT`.
pub const META_SHIFT: u32 = 32;
/// `MAX_NUM_GROUPS`: "as many groups as fit".
pub const MAX_NUM_GROUPS: u32 = 0xffff;

/// `OR_RP_1`: no redundancy (the `OC_S*` classes).
pub const OR_RP_1: u32 = 1;

/// Group size and tolerated failures of a redundancy ord, or `None` for an
/// ord the stand-in does not know (rejected, where libdaos might accept).
pub fn redundancy(ord: u32) -> Option<(u32, u32)> {
    Some(match ord {
        1 => (1, 0),  // OR_RP_1
        8 => (2, 1),  // OR_RP_2
        9 => (3, 2),  // OR_RP_3
        10 => (4, 3), // OR_RP_4
        32 => (3, 1), // OR_RS_2P1
        33 => (4, 2), // OR_RS_2P2
        34 => (5, 1), // OR_RS_4P1
        35 => (6, 2), // OR_RS_4P2
        36 => (9, 1), // OR_RS_8P1
        37 => (10, 2),
        38 => (17, 1),
        39 => (18, 2),
        40 => (7, 3), // OR_RS_4P3 (2.6+)
        41 => (11, 3),
        42 => (19, 3),
        _ => return None,
    })
}

/// The object type of an OID.
pub fn otype(hi: u64) -> u32 {
    (hi >> TYPE_SHIFT) as u32
}

/// The redundancy ord of an OID.
pub fn ord(hi: u64) -> u32 {
    ((hi >> CLASS_SHIFT) & 0xff) as u32
}

/// The group count of an OID (the number of shards of an `OC_S*` object).
pub fn groups(hi: u64) -> u32 {
    ((hi >> META_SHIFT) & 0xffff) as u32
}

/// Failures the class of a generated OID tolerates, or `-DER_INVAL` if the
/// OID was not generated (no or an unknown class).
pub fn tolerated(hi: u64) -> Result<u32, i32> {
    match redundancy(ord(hi)) {
        Some((_, rf)) if groups(hi) > 0 => Ok(rf),
        _ => Err(-der::INVAL),
    }
}

/// Fill the header of `hi` for `otype` and class `cid` in a pool of
/// `targets` targets and a container of redundancy factor `cont_rf`.
pub fn generate(hi: u64, otype: u32, cid: u32, targets: u32, cont_rf: u32) -> Result<u64, i32> {
    let is_flat = matches!(otype, 8..=13);
    let (ord, grp) = if cid == 0 {
        // OC_UNKNOWN: chosen from the container's redundancy factor.
        let ord = match cont_rf {
            0 => OR_RP_1,
            1 => 8,
            2 => 9,
            _ => 10,
        };
        (ord, if is_flat { MAX_NUM_GROUPS } else { 1 })
    } else {
        (cid >> 24, cid & 0xffff)
    };
    if cid & 0x00ff_0000 != 0 || cid & (1 << 30) != 0 {
        return Err(-der::INVAL);
    }
    let (size, rf) = redundancy(ord).ok_or(-der::INVAL)?;
    if size > targets || grp == 0 {
        return Err(-der::INVAL);
    }
    if rf < cont_rf {
        return Err(-der::INVAL);
    }
    let fit = (targets / size).max(1);
    let grp = grp.min(fit);
    Ok((hi & 0xffff_ffff)
        | (u64::from(otype) << TYPE_SHIFT)
        | (u64::from(ord) << CLASS_SHIFT)
        | (u64::from(grp.min(0xffff)) << META_SHIFT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_values_of_the_reference() {
        // daos.md §2.1: OC_S1 KV (0,0) and byte array.
        assert_eq!(
            generate(0, 8, 0x0100_0001, 8, 0).unwrap(),
            0x0801_0001_0000_0000
        );
        assert_eq!(
            generate(0, 13, 0x0100_0001, 8, 0).unwrap(),
            0x0d01_0001_0000_0000
        );
        // User bits survive, stale header bits do not.
        assert_eq!(
            generate(0xffff_ffff_1234_5678, 13, 0x0100_0001, 8, 0).unwrap(),
            0x0d01_0001_1234_5678
        );
    }

    #[test]
    fn sx_resolves_to_the_pool_and_classes_are_checked() {
        let hi = generate(0, 8, 0x0100_ffff, 8, 0).unwrap();
        assert_eq!(groups(hi), 8);
        let hi = generate(0, 13, 0x0800_ffff, 8, 0).unwrap(); // RP_2GX
        assert_eq!(groups(hi), 4);
        // RP_3 on 2 targets cannot fit.
        assert_eq!(generate(0, 13, 0x0900_0001, 2, 0), Err(-der::INVAL));
        // S1 in an RF1 container.
        assert_eq!(generate(0, 13, 0x0100_0001, 8, 1), Err(-der::INVAL));
        // Unknown ord.
        assert_eq!(generate(0, 13, 0x7700_0001, 8, 0), Err(-der::INVAL));
        // OC_UNKNOWN in an RF1 container picks a replicated class.
        assert_eq!(ord(generate(0, 13, 0, 8, 1).unwrap()), 8);
    }
}
