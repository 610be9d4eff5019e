//! The PNG plots of `--report` (drawn with plotters' bitmap backend; text
//! through ab_glyph with a bundled DejaVu Sans Mono, so no system font or
//! fontconfig is needed): bandwidth over time per phase, a per-rank
//! timeline of operations, latency histograms per operation, and the
//! access-size histogram.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use fieldstore::{Error, ErrorKind, Result};
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::report::{Report, Row};
use crate::stats::MIB;
use crate::trace::BUCKETS;

/// DejaVu Sans Mono 2.37 (Bitstream Vera licence: assets/DejaVuSansMono.LICENSE).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSansMono.ttf");
const FAMILY: &str = "sans-serif";

/// Tableau's ten colours: distinct, and readable on white.
const COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

fn font_ready() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    if *REGISTERED
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok())
    {
        Ok(())
    } else {
        Err(Error::internal("the bundled font does not load"))
    }
}

fn drawing(what: &str) -> impl Fn(String) -> Error + '_ {
    move |e| Error::new(ErrorKind::Io, format!("drawing the {what} plot: {e}"))
}

macro_rules! draw {
    ($what:expr, $e:expr) => {
        $e.map_err(|e| drawing($what)(e.to_string()))?
    };
}

/// Width of the legend column on the right of a plot, pixels.
const LEGEND_W: u32 = 190;

/// A legend in its own column (so it never hides data): a swatch and a
/// name per item.
fn side_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    items: &[(String, RGBColor)],
) -> std::result::Result<(), String> {
    for (i, (name, c)) in items.iter().enumerate() {
        let y = 50 + 22 * i as i32;
        area.draw(&Rectangle::new([(8, y), (26, y + 12)], c.filled()))
            .map_err(|e| e.to_string())?;
        area.draw(&Text::new(name.clone(), (34, y), (FAMILY, 13)))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Plot size, pixels.
pub const SIZE: (u32, u32) = (1100, 520);

/// Rows of all repetitions, in the order they ran.
fn rows(report: &Report) -> Vec<&Row> {
    report.repetitions.iter().flat_map(|r| &r.rows).collect()
}

/// The start of the run: the earliest first I/O of any process.
fn origin(report: &Report) -> f64 {
    rows(report)
        .iter()
        .flat_map(|r| r.per_process.iter().map(|p| p.t_first_io))
        .fold(f64::INFINITY, f64::min)
}

/// Phase names in order of first appearance (the colour of each).
fn phases(report: &Report) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows(report) {
        if !out.contains(&r.phase) {
            out.push(r.phase.clone());
        }
    }
    out
}

/// Aggregate bandwidth of a row over time: (seconds since `t0`, MiB/s)
/// per bin, from the processes' progress samples.
pub fn bandwidth_series(row: &Row, t0: f64, bins: usize) -> Vec<(f64, f64)> {
    let (a, b) = row
        .per_process
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), p| {
            (a.min(p.t_first_io), b.max(p.t_last_io))
        });
    if row.bytes == 0 || b <= a || bins == 0 {
        return Vec::new();
    }
    let width = (b - a) / bins as f64;
    let mut bytes = vec![0f64; bins];
    for p in &row.per_process {
        // The bytes between two samples moved during the time between them:
        // spread them over it, bin by bin.
        let (mut t_prev, mut prev) = (p.t_first_io, 0u64);
        for &(t, cum) in &p.progress {
            let n = cum.saturating_sub(prev) as f64;
            let span = (t - t_prev).max(0.0);
            if span <= 0.0 {
                let i = (((t - a) / width).max(0.0) as usize).min(bins - 1);
                bytes[i] += n;
            } else {
                let first = (((t_prev - a) / width).max(0.0) as usize).min(bins - 1);
                let last = (((t - a) / width).max(0.0) as usize).min(bins - 1);
                for (i, slot) in bytes.iter_mut().enumerate().take(last + 1).skip(first) {
                    let lo = (a + i as f64 * width).max(t_prev);
                    let hi = (a + (i + 1) as f64 * width).min(t);
                    if hi > lo {
                        *slot += n * (hi - lo) / span;
                    }
                }
            }
            (t_prev, prev) = (t, cum);
        }
    }
    bytes
        .iter()
        .enumerate()
        .map(|(i, n)| (a - t0 + (i as f64 + 0.5) * width, n / width / MIB))
        .collect()
}

/// Bandwidth over time, one line per phase.
pub fn bandwidth(report: &Report, path: &Path) -> Result<()> {
    font_ready()?;
    let t0 = origin(report);
    let names = phases(report);
    let series: Vec<(&Row, Vec<(f64, f64)>)> = rows(report)
        .into_iter()
        .map(|r| {
            // About two samples per bin and process, 5 to 40 bins.
            let samples = r
                .per_process
                .iter()
                .map(|p| p.progress.len())
                .sum::<usize>();
            let bins = (samples / (2 * r.per_process.len().max(1))).clamp(5, 40);
            (r, bandwidth_series(r, t0, bins))
        })
        .filter(|(_, s)| !s.is_empty())
        .collect();
    let t_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        * 1.02
        + 1e-3;
    let y_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        * 1.1
        + 1e-3;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    draw!("bandwidth", root.fill(&WHITE));
    let (plot, legend) = root.split_horizontally(SIZE.0 - LEGEND_W);
    let mut chart = draw!(
        "bandwidth",
        ChartBuilder::on(&plot)
            .caption("Bandwidth over time, all processes (MiB/s)", (FAMILY, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)
    );
    draw!(
        "bandwidth",
        chart
            .configure_mesh()
            .x_desc("seconds since the first I/O")
            .y_desc("MiB/s")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style((FAMILY, 13))
            .draw()
    );
    let mut labelled: Vec<(String, RGBColor)> = Vec::new();
    for (row, s) in &series {
        let i = names.iter().position(|n| n == &row.phase).unwrap_or(0);
        let c = colour(i);
        draw!(
            "bandwidth",
            chart.draw_series(LineSeries::new(s.iter().copied(), c.stroke_width(2)))
        );
        if !labelled.iter().any(|l| l.0 == row.phase) {
            labelled.push((row.phase.clone(), c));
        }
    }
    draw!("bandwidth", side_legend(&legend, &labelled));
    draw!("bandwidth", root.present());
    Ok(())
}

/// Per-rank timeline: each process's operations as coloured spans, one
/// lane per rank, all phases on one time axis.
pub fn timeline(report: &Report, path: &Path) -> Result<()> {
    font_ready()?;
    let t0 = origin(report);
    let all = rows(report);
    let lanes = all
        .iter()
        .flat_map(|r| r.per_process.iter().map(|p| p.rank + 1))
        .max()
        .unwrap_or(1);
    let mut ops: Vec<String> = Vec::new();
    let mut spans: BTreeMap<String, Vec<(f64, f64, u32)>> = BTreeMap::new();
    let mut t_max = 0.0f64;
    for r in &all {
        for p in &r.per_process {
            t_max = t_max.max(p.t_last_io - t0);
            for (op, a, b) in &p.spans {
                if !ops.contains(op) {
                    ops.push(op.clone());
                }
                spans
                    .entry(op.clone())
                    .or_default()
                    .push((a - t0, b - t0, p.rank));
            }
        }
    }
    let t_max = t_max * 1.02 + 1e-3;
    let height = (180 + 28 * lanes).min(1400);
    let height = height.max(80 + 22 * ops.len() as u32);
    let root = BitMapBackend::new(path, (SIZE.0, height)).into_drawing_area();
    draw!("timeline", root.fill(&WHITE));
    let (plot, legend) = root.split_horizontally(SIZE.0 - LEGEND_W);
    let mut chart = draw!(
        "timeline",
        ChartBuilder::on(&plot)
            .caption("Per-rank timeline of operations", (FAMILY, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max, 0.0..f64::from(lanes))
    );
    // Lane i spans [i, i+1): its name at the middle, nothing at the edges.
    let lane_label = |y: &f64| {
        if (y.fract() - 0.5).abs() < 0.01 {
            format!("rank {}", y.floor() as u32)
        } else {
            String::new()
        }
    };
    draw!(
        "timeline",
        chart
            .configure_mesh()
            .x_desc("seconds since the first I/O")
            .y_labels(2 * lanes as usize + 1)
            .y_label_formatter(&lane_label)
            .disable_y_mesh()
            .label_style((FAMILY, 13))
            .draw()
    );
    let min_w = t_max / f64::from(SIZE.0);
    let mut items = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let c = colour(i);
        let list = spans.get(op).cloned().unwrap_or_default();
        // A span shorter than a pixel still shows.
        draw!(
            "timeline",
            chart.draw_series(list.into_iter().map(move |(a, b, lane)| {
                let y = f64::from(lane);
                Rectangle::new([(a, y + 0.15), (b.max(a + min_w), y + 0.85)], c.filled())
            }))
        );
        items.push((op.clone(), c));
    }
    draw!("timeline", side_legend(&legend, &items));
    draw!("timeline", root.present());
    Ok(())
}

/// A latency bucket's lower bound, for axis labels.
fn bucket_label(i: usize) -> String {
    let us = 1u64 << i.min(63);
    if us >= 1_000_000 {
        format!("{}s", us / 1_000_000)
    } else if us >= 1000 {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

/// Latency histograms: one panel per phase, one line per operation.
pub fn latency(report: &Report, path: &Path) -> Result<()> {
    font_ready()?;
    let names = phases(report);
    let mut per_phase: Vec<(String, BTreeMap<String, Vec<u64>>)> = Vec::new();
    for ph in &names {
        let mut ops: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for r in rows(report).into_iter().filter(|r| &r.phase == ph) {
            for p in &r.per_process {
                for (op, h) in &p.latency_log2_us {
                    let e = ops.entry(op.clone()).or_insert_with(|| vec![0; BUCKETS]);
                    for (a, b) in e.iter_mut().zip(h) {
                        *a += b;
                    }
                }
            }
        }
        if !ops.is_empty() {
            per_phase.push((ph.clone(), ops));
        }
    }
    let cols = 2usize;
    let n = per_phase.len().max(1);
    let rows_n = n.div_ceil(cols);
    let height = (300 * rows_n as u32).max(320);
    let root = BitMapBackend::new(path, (SIZE.0, height)).into_drawing_area();
    draw!("latency", root.fill(&WHITE));
    let root = draw!(
        "latency",
        root.titled(
            "Latency per operation (calls per power-of-two bucket)",
            (FAMILY, 20)
        )
    );
    let mut op_names: Vec<String> = per_phase
        .iter()
        .flat_map(|(_, o)| o.keys().cloned())
        .collect();
    op_names.sort();
    op_names.dedup();
    for (area, (phase, ops)) in root.split_evenly((rows_n, cols)).iter().zip(&per_phase) {
        let used: Vec<usize> = (0..BUCKETS)
            .filter(|&i| ops.values().any(|h| h[i] > 0))
            .collect();
        let lo = used.first().copied().unwrap_or(0).saturating_sub(1);
        let hi = (used.last().copied().unwrap_or(1) + 2).min(BUCKETS);
        let y_max = ops
            .values()
            .flat_map(|h| h.iter())
            .copied()
            .max()
            .unwrap_or(1) as f64
            * 1.15;
        let mut chart = draw!(
            "latency",
            ChartBuilder::on(area)
                .caption(phase.as_str(), (FAMILY, 15))
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(60)
                .build_cartesian_2d(lo as f64..hi as f64, 0.0..y_max)
        );
        let fmt = |x: &f64| bucket_label(x.round().max(0.0) as usize);
        draw!(
            "latency",
            chart
                .configure_mesh()
                .x_labels(hi - lo + 1)
                .x_label_formatter(&fmt)
                .y_desc("calls")
                .y_label_formatter(&|y| format!("{y:.0}"))
                .label_style((FAMILY, 11))
                .draw()
        );
        for (op, h) in ops {
            let c = colour(op_names.iter().position(|o| o == op).unwrap_or(0));
            let pts: Vec<(f64, f64)> = (lo..hi).map(|i| (i as f64, h[i] as f64)).collect();
            draw!(
                "latency",
                chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            )
            .label(op.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(3)));
            draw!(
                "latency",
                chart.draw_series(
                    pts.into_iter()
                        .filter(|p| p.1 > 0.0)
                        .map(move |p| Circle::new(p, 3, c.filled()))
                )
            );
        }
        draw!(
            "latency",
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font((FAMILY, 11))
                .draw()
        );
    }
    draw!("latency", root.present());
    Ok(())
}

/// A size bucket's lower bound, for axis labels.
fn size_label(k: u32) -> String {
    let b = 1u64 << k.min(63);
    if b >= 1 << 30 {
        format!("{}GiB", b >> 30)
    } else if b >= 1 << 20 {
        format!("{}MiB", b >> 20)
    } else if b >= 1 << 10 {
        format!("{}KiB", b >> 10)
    } else {
        format!("{b}B")
    }
}

/// Access sizes: accesses per power-of-two size bucket, a bar per phase.
pub fn sizes(report: &Report, path: &Path) -> Result<()> {
    font_ready()?;
    let names = phases(report);
    let mut counts: BTreeMap<(String, u32), u64> = BTreeMap::new();
    for r in rows(report) {
        for p in &r.per_process {
            for (k, n) in &p.sizes_log2 {
                *counts.entry((r.phase.clone(), *k)).or_default() += n;
            }
        }
    }
    let mut ks: Vec<u32> = counts.keys().map(|(_, k)| *k).collect();
    ks.sort_unstable();
    ks.dedup();
    let with: Vec<&String> = names
        .iter()
        .filter(|n| counts.keys().any(|(p, _)| p == *n))
        .collect();
    let y_max = counts.values().copied().max().unwrap_or(1) as f64 * 2.0;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    draw!("sizes", root.fill(&WHITE));
    let (plot, legend) = root.split_horizontally(SIZE.0 - LEGEND_W);
    let mut chart = draw!(
        "sizes",
        ChartBuilder::on(&plot)
            .caption(
                "Access sizes (accesses per power-of-two size)",
                (FAMILY, 20)
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..ks.len().max(1) as f64 - 0.5, (0.8..y_max).log_scale())
    );
    let ks_fmt = ks.clone();
    let fmt = move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 0.01 && i >= 0.0 {
            ks_fmt
                .get(i as usize)
                .map(|k| size_label(*k))
                .unwrap_or_default()
        } else {
            String::new()
        }
    };
    draw!(
        "sizes",
        chart
            .configure_mesh()
            .x_labels(ks.len().max(1) * 2 + 1)
            .x_label_formatter(&fmt)
            .x_desc("access size (at least)")
            .y_desc("accesses")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .disable_x_mesh()
            .label_style((FAMILY, 13))
            .draw()
    );
    let width = 0.8 / with.len().max(1) as f64;
    let mut items = Vec::new();
    for (j, ph) in with.iter().enumerate() {
        let c = colour(names.iter().position(|n| n == *ph).unwrap_or(0));
        let bars: Vec<(f64, f64)> = ks
            .iter()
            .enumerate()
            .filter_map(|(i, k)| {
                counts
                    .get(&((*ph).clone(), *k))
                    .map(|n| (i as f64 - 0.4 + j as f64 * width, *n as f64))
            })
            .collect();
        draw!(
            "sizes",
            chart.draw_series(
                bars.into_iter().map(move |(x, n)| Rectangle::new(
                    [(x, 0.8), (x + width * 0.9, n)],
                    c.filled()
                ))
            )
        );
        items.push(((*ph).clone(), c));
    }
    draw!("sizes", side_legend(&legend, &items));
    draw!("sizes", root.present());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::ProcResult;

    /// Two processes moving 1 MiB each, evenly over one second: the series
    /// is flat at 2 MiB/s and its integral is the row's bytes.
    #[test]
    fn bandwidth_series_spreads_bytes_over_the_time_they_took() {
        let proc = |rank| ProcResult {
            rank,
            t_first_io: 100.0,
            t_last_io: 101.0,
            progress: (1..=4)
                .map(|i| (100.0 + 0.25 * f64::from(i), i as u64 * (1 << 18)))
                .collect(),
            bytes: 1 << 20,
            ..ProcResult::default()
        };
        let row = Row::new("write", vec![proc(0), proc(1)]);
        let s = bandwidth_series(&row, 100.0, 10);
        assert_eq!(s.len(), 10);
        for (t, mib_s) in &s {
            assert!((mib_s - 2.0).abs() < 1e-9, "{t}: {mib_s}");
        }
        let total: f64 = s.iter().map(|p| p.1 * 0.1).sum();
        assert!((total - 2.0).abs() < 1e-9);
        assert!((s[0].0 - 0.05).abs() < 1e-9);
    }
}
