//! Bytes around and between GRIB messages that are not GRIB: skipped, as
//! ecCodes skips them, and reported once per input.
//!
//! ecCodes (`codes_grib_new_from_file`, `grib_count`, `grib_ls`), cfgrib
//! and FDB5's reader look for the next `GRIB` and ignore whatever comes
//! before it: a record header before the first message (Météo-France's
//! ecoclimap files have 12,000 bytes of one), Fortran record markers,
//! padding to a block size after `7777`, a stray line between two files
//! concatenated. fieldstore does the same, and says so: every stretch
//! skipped is a range in one [`SkippedBytes`] per input, which callers
//! print as one warning (the CLI), raise as one Python warning, or give a
//! C caller — never silently, and never as a "bad message": junk holds no
//! message to lose.
//!
//! What is *not* junk: the NUL padding MARS writes after a GRIB1 message
//! (under 120 bytes, up to the next multiple of 120), which is skipped
//! without a word. What is not skipped: bytes that start with `GRIB` but
//! do not frame as a message (wrong length, no `7777`, sections that do not
//! add up): a damaged message is an error, as in ecCodes ("unreadable
//! message"), unless bad messages are skipped (`--skip-bad`).

use std::fmt;
use std::ops::Range;

/// The stretches of an input that are not GRIB and were skipped, in input
/// order, as byte ranges `start..end` (end exclusive) of the input.
///
/// Adjacent ranges are merged. `Display` gives the one-line warning the
/// callers print: how many bytes, and where (the first
/// [`SkippedBytes::SHOWN`] ranges, then how many more).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkippedBytes {
    ranges: Vec<Range<u64>>,
}

impl SkippedBytes {
    /// How many ranges `Display` lists before saying how many more there
    /// are (a warning stays one readable line however damaged the input).
    pub const SHOWN: usize = 8;

    /// Nothing skipped.
    pub fn new() -> Self {
        SkippedBytes::default()
    }

    /// Record that `range` was skipped (empty ranges are ignored; a range
    /// that starts where the last one ends extends it).
    pub fn push(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        match self.ranges.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => self.ranges.push(range),
        }
    }

    /// The ranges skipped, in input order.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Whether nothing was skipped.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// How many bytes were skipped in all.
    pub fn total(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }
}

impl fmt::Display for SkippedBytes {
    /// `skipped 12017 bytes that are not GRIB (as ecCodes does): bytes
    /// 0..12000, 13560..13577` (ends exclusive).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total();
        write!(
            f,
            "skipped {total} {} that {} not GRIB (as ecCodes does): bytes ",
            if total == 1 { "byte" } else { "bytes" },
            if total == 1 { "is" } else { "are" },
        )?;
        for (i, r) in self.ranges.iter().take(Self::SHOWN).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}..{}", r.start, r.end)?;
        }
        if self.ranges.len() > Self::SHOWN {
            write!(f, " and {} more ranges", self.ranges.len() - Self::SHOWN)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_ranges_merge_and_the_warning_names_them() {
        let mut s = SkippedBytes::new();
        assert!(s.is_empty());
        s.push(0..10);
        s.push(10..12);
        s.push(20..20);
        s.push(30..31);
        assert_eq!(s.ranges(), [0..12, 30..31]);
        assert_eq!(s.total(), 13);
        assert_eq!(
            s.to_string(),
            "skipped 13 bytes that are not GRIB (as ecCodes does): bytes 0..12, 30..31"
        );
        for i in 0..20 {
            s.push(100 + 2 * i..101 + 2 * i);
        }
        assert!(
            s.to_string().ends_with(", 110..111 and 14 more ranges"),
            "{s}"
        );
    }
}
