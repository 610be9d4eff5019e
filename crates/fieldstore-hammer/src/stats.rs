//! The aggregation math: global timing bandwidth, medians and spreads.
//!
//! All timestamps are seconds since the Unix epoch (`f64`), as fdb-hammer
//! prints them, so that processes on different hosts can be aggregated.

use serde::{Deserialize, Serialize};

/// One mebibyte (fdb-hammer's "MB" is a MiB too).
pub const MIB: f64 = 1024.0 * 1024.0;

/// The global window of a group of processes: from the earliest "before
/// first I/O" to the latest "after last I/O". `None` if there is no process
/// or a timestamp is missing (a process that did no I/O).
pub fn global_window(spans: &[(f64, f64)]) -> Option<f64> {
    let first = spans.iter().map(|s| s.0).reduce(f64::min)?;
    let last = spans.iter().map(|s| s.1).reduce(f64::max)?;
    (last >= first).then_some(last - first)
}

/// Global timing bandwidth in MiB/s: total bytes of all processes divided
/// by the global window (Manubens et al., PASC'24). `None` for an empty or
/// zero-length window.
pub fn global_timing_bandwidth(total_bytes: u64, spans: &[(f64, f64)]) -> Option<f64> {
    let w = global_window(spans)?;
    (w > 0.0).then(|| total_bytes as f64 / MIB / w)
}

/// A rate over the global window (fields/s, entries/s).
pub fn global_rate(count: u64, spans: &[(f64, f64)]) -> Option<f64> {
    let w = global_window(spans)?;
    (w > 0.0).then(|| count as f64 / w)
}

/// Spread of a set of timestamps: max − min (how far apart processes
/// started). 0 for fewer than two.
pub fn spread(values: &[f64]) -> f64 {
    match (
        values.iter().copied().reduce(f64::min),
        values.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0.0,
    }
}

/// Median, minimum, maximum and relative spread of repeated measurements.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// The median (mean of the two middle values for an even count).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// (max − min) / median, in percent: the brief asks for < 5 %.
    pub spread_pct: f64,
}

/// Summarise repeated measurements; `None` for no values. NaNs are ignored.
pub fn summarise(values: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let (min, max) = (v[0], v[n - 1]);
    let spread_pct = if median != 0.0 {
        (max - min) / median.abs() * 100.0
    } else {
        0.0
    };
    Some(Summary {
        n,
        median,
        min,
        max,
        spread_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_timing_uses_first_start_and_last_end() {
        // Two processes: 100 MiB each, overlapping windows 10..12 and 11..14.
        let spans = [(10.0, 12.0), (11.0, 14.0)];
        assert_eq!(global_window(&spans), Some(4.0));
        let gtb = global_timing_bandwidth(200 << 20, &spans).unwrap();
        assert!((gtb - 50.0).abs() < 1e-12, "{gtb}");
        assert_eq!(global_rate(400, &spans), Some(100.0));
    }

    #[test]
    fn global_timing_is_not_the_sum_of_per_process_rates() {
        // Sequential processes: the per-process rates would add up to 200,
        // but the global window sees 100 MiB/s.
        let spans = [(0.0, 1.0), (1.0, 2.0)];
        let gtb = global_timing_bandwidth(200 << 20, &spans).unwrap();
        assert!((gtb - 100.0).abs() < 1e-12);
    }

    #[test]
    fn empty_and_degenerate_windows() {
        assert_eq!(global_window(&[]), None);
        assert_eq!(global_timing_bandwidth(1, &[]), None);
        assert_eq!(global_timing_bandwidth(1, &[(5.0, 5.0)]), None);
        assert_eq!(global_window(&[(5.0, 4.0)]), None);
    }

    #[test]
    fn median_and_spread() {
        let s = summarise(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (3, 2.0, 1.0, 3.0));
        assert!((s.spread_pct - 100.0).abs() < 1e-12);
        let s = summarise(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.median, 2.5);
        let s = summarise(&[100.0, 102.0, 98.0]).unwrap();
        assert!((s.spread_pct - 4.0).abs() < 1e-12);
        assert!(summarise(&[]).is_none());
        assert!(summarise(&[f64::NAN]).is_none());
        assert_eq!(summarise(&[0.0, 0.0]).unwrap().spread_pct, 0.0);
    }

    #[test]
    fn start_spread() {
        assert_eq!(spread(&[]), 0.0);
        assert_eq!(spread(&[7.0]), 0.0);
        assert!((spread(&[1.000, 1.004, 1.002]) - 0.004).abs() < 1e-12);
    }
}
