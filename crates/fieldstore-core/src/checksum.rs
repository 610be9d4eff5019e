//! The checksum every store keeps of a field's bytes: CRC-32C (the
//! Castagnoli polynomial, as iSCSI, ext4 and SSE 4.2's `crc32` use), stored
//! in its [`crate::location::FieldLocation`] when archived and compared
//! before a read hands the bytes out.
//!
//! Computed by carry-less multiplication (`crc-fast`: VPCLMULQDQ or
//! PCLMULQDQ on x86-64, PMULL on AArch64) rather than the `crc32`
//! instruction `crc32c` loops on: the same values, several times faster on
//! whole fields, where the checksum was a fifth of a 64 KiB writer's user
//! time (docs/benchmarks.md). Framed records, a few hundred bytes each,
//! keep `crc32c`.

use crate::error::{Error, Result};
use crate::location::FieldLocation;

/// The CRC-32C of `data`.
pub fn of_field(data: &[u8]) -> u32 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, data) as u32
}

/// Check `bytes`, read for `location`, against the checksum stored with
/// it (a location stored without one: nothing to check). Every store's
/// read, and the remote client's, end with it.
///
/// # Errors
/// `Corrupt`, naming the location, both checksums and then `cause`, the
/// medium's likeliest reason (`": the data file is damaged"`).
pub fn verify(location: &FieldLocation, bytes: &[u8], cause: &str) -> Result<()> {
    let Some(want) = location.checksum else {
        return Ok(());
    };
    let got = of_field(bytes);
    if got == want {
        return Ok(());
    }
    Err(Error::corrupt(format!(
        "{location}: checksum mismatch (stored {want:08x}, read {got:08x}){cause}"
    )))
}

#[cfg(test)]
mod tests {
    /// The same value as `crc32c` (and as every field stored before),
    /// across lengths that cross each implementation's block sizes.
    #[test]
    fn a_field_checksum_is_crc32c() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 131 % 251) as u8).collect();
        for len in [
            0, 1, 7, 15, 16, 63, 64, 255, 256, 1023, 4096, 65_536, 65_543, 300_000,
        ] {
            assert_eq!(
                super::of_field(&data[..len]),
                crc32c::crc32c(&data[..len]),
                "{len} bytes"
            );
        }
        assert_eq!(super::of_field(b"123456789"), 0xE306_9283);
    }
}
