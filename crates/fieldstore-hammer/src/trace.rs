//! What a process records inside its window, for the report: time and
//! calls per operation, and — for `--report`'s plots — when each operation
//! ran (spans), how long each call took (log₂ latency histograms), how
//! the bytes progressed over time, and the sizes of the accesses.
//!
//! Bounded whatever the run's length: consecutive calls of one operation
//! merge into one span, at most [`MAX_SPANS`] spans are kept per process
//! (then the report says the timeline is cut), and the progress samples
//! are thinned to at most [`MAX_SAMPLES`].

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::result::{now, Op, ProcResult};

/// Spans kept per process.
pub const MAX_SPANS: usize = 4096;
/// Progress samples kept per process.
pub const MAX_SAMPLES: usize = 512;
/// Latency buckets: bucket `i` counts calls of `[2^i, 2^(i+1))` µs (bucket
/// 0 also those under 1 µs; the last everything from 2^31 µs on).
pub const BUCKETS: usize = 32;
/// Two calls of one operation closer than this make one span.
const MERGE_GAP: Duration = Duration::from_micros(20);

/// Time and calls per operation inside the window, and the trace.
pub(crate) struct Ops {
    totals: BTreeMap<&'static str, (Duration, u64)>,
    hist: BTreeMap<&'static str, [u64; BUCKETS]>,
    /// (operation, start, end) as instants.
    spans: Vec<(&'static str, Instant, Instant)>,
    spans_cut: bool,
    /// (when, bytes so far).
    progress: Vec<(Instant, u64)>,
    bytes: u64,
    /// Access sizes: floor(log₂(size)) → count.
    sizes: BTreeMap<u32, u64>,
    /// The instant `epoch` was read at, to turn instants into epoch seconds.
    anchor: (Instant, f64),
}

impl Default for Ops {
    fn default() -> Self {
        Ops {
            totals: BTreeMap::new(),
            hist: BTreeMap::new(),
            spans: Vec::new(),
            spans_cut: false,
            progress: Vec::new(),
            bytes: 0,
            sizes: BTreeMap::new(),
            anchor: (Instant::now(), now()),
        }
    }
}

/// The latency bucket of a call.
pub fn bucket(d: Duration) -> usize {
    let us = d.as_micros().max(1);
    (127 - us.leading_zeros() as usize).min(BUCKETS - 1)
}

impl Ops {
    /// Count a call of `name` that started at `since`; returns now.
    pub(crate) fn add(&mut self, name: &'static str, since: Instant) -> Instant {
        let t = Instant::now();
        let d = t - since;
        let e = self.totals.entry(name).or_default();
        e.0 += d;
        e.1 += 1;
        self.hist.entry(name).or_insert([0; BUCKETS])[bucket(d)] += 1;
        let full = self.spans.len() >= MAX_SPANS;
        match self.spans.last_mut() {
            Some(last) if last.0 == name && since.saturating_duration_since(last.2) < MERGE_GAP => {
                last.2 = t;
            }
            _ if !full => self.spans.push((name, since, t)),
            _ => self.spans_cut = true,
        }
        t
    }

    /// Count an access of `n` bytes that just completed.
    pub(crate) fn io(&mut self, n: u64) {
        self.bytes += n;
        if n > 0 {
            *self.sizes.entry(63 - n.leading_zeros()).or_default() += 1;
        }
        self.progress.push((Instant::now(), self.bytes));
        if self.progress.len() >= 2 * MAX_SAMPLES {
            // Keep every other sample (and always the latest).
            let last = self.progress.last().copied();
            let mut i = 0;
            self.progress.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            if let (Some(l), Some(p)) = (last, self.progress.last()) {
                if p.0 != l.0 {
                    self.progress.push(l);
                }
            }
        }
    }

    fn epoch(&self, t: Instant) -> f64 {
        let (i0, e0) = self.anchor;
        if t >= i0 {
            e0 + (t - i0).as_secs_f64()
        } else {
            e0 - (i0 - t).as_secs_f64()
        }
    }

    /// Move everything into the process's result.
    pub(crate) fn into_result(self, r: &mut ProcResult) {
        r.spans = self
            .spans
            .iter()
            .map(|(n, a, b)| (n.to_string(), self.epoch(*a), self.epoch(*b)))
            .collect();
        r.spans_cut = self.spans_cut;
        r.progress = self
            .progress
            .iter()
            .map(|(t, b)| (self.epoch(*t), *b))
            .collect();
        r.sizes_log2 = self.sizes;
        r.latency_log2_us = self
            .hist
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect();
        r.ops = self
            .totals
            .into_iter()
            .map(|(k, (d, calls))| {
                (
                    k.to_string(),
                    Op {
                        secs: d.as_secs_f64(),
                        calls,
                    },
                )
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two_of_microseconds() {
        assert_eq!(bucket(Duration::from_nanos(10)), 0);
        assert_eq!(bucket(Duration::from_micros(1)), 0);
        assert_eq!(bucket(Duration::from_micros(2)), 1);
        assert_eq!(bucket(Duration::from_micros(3)), 1);
        assert_eq!(bucket(Duration::from_micros(1024)), 10);
        assert_eq!(bucket(Duration::from_secs(100_000)), BUCKETS - 1);
    }

    #[test]
    fn calls_merge_into_spans_and_samples_stay_bounded() {
        let mut ops = Ops::default();
        let t = Instant::now();
        let t = ops.add("archive", t);
        let t = ops.add("archive", t);
        let t = ops.add("flush", t);
        ops.add("archive", t);
        for _ in 0..10 * MAX_SAMPLES {
            ops.io(4096);
        }
        let mut r = ProcResult::default();
        ops.into_result(&mut r);
        let names: Vec<_> = r.spans.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(names, ["archive", "flush", "archive"]);
        assert_eq!(r.ops["archive"].calls, 3);
        assert_eq!(r.latency_log2_us["archive"].iter().sum::<u64>(), 3);
        assert!(r.progress.len() <= 2 * MAX_SAMPLES, "{}", r.progress.len());
        assert_eq!(r.progress.last().unwrap().1, 10 * MAX_SAMPLES as u64 * 4096);
        assert!(r
            .progress
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(r.sizes_log2[&12], 10 * MAX_SAMPLES as u64);
    }
}
