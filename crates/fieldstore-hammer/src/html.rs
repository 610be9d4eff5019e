//! `--report DIR`: the run as a self-contained HTML page, in the manner of
//! Darshan's job summaries — the run's facts, a table of the phases,
//! plots (bandwidth over time, per-rank timeline, latency and access-size
//! histograms; `crate::plots`), the per-operation breakdown, the raw
//! ceilings beside the store's phases, and the physical limits.
//!
//! `DIR/index.html` embeds every plot as a `data:` URI, so the one file
//! can be mailed or archived; the PNGs are also left beside it. A small
//! inline script writes how many plots the browser decoded into the page
//! (`#rendered`), which the headless-browser test reads back.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use fieldstore::{Error, Result};

use crate::report::Report;
use crate::result::Op;
use crate::stats::{Summary, MIB};

/// HTML-escape text.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("–".into(), |x| format!("{x:.prec$}"))
}

fn summary(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{:.0} ({:.0}–{:.0})", s.median, s.min, s.max),
        Some(s) => format!("{:.0}", s.median),
        None => "–".into(),
    }
}

/// The plots: (file, title, what it shows).
const PLOTS: [(&str, &str, &str); 4] = [
    (
        "bandwidth.png",
        "Bandwidth over time",
        "Bytes all processes moved per time bin, per phase (MiB/s).",
    ),
    (
        "timeline.png",
        "Per-rank timeline",
        "When each rank ran each operation (consecutive calls merged).",
    ),
    (
        "latency.png",
        "Latency histograms",
        "Calls per operation by duration, one panel per phase.",
    ),
    (
        "sizes.png",
        "Access sizes",
        "Reads and writes by size, per phase (log scale).",
    ),
];

fn phase_table(report: &Report, s: &mut String) {
    let rpcs = report
        .repetitions
        .iter()
        .flat_map(|r| &r.rows)
        .any(|r| r.rpcs.is_some());
    let _ = write!(
        s,
        "<table><tr><th>phase</th><th>rep</th><th>procs</th><th>fields</th><th>MiB</th>\
         <th>window s</th><th>MiB/s</th><th>fields/s</th><th>start spread ms</th>\
         <th>others' CPU %</th>{}</tr>",
        if rpcs {
            "<th>DAOS RPCs per field</th>"
        } else {
            ""
        }
    );
    for rep in &report.repetitions {
        for r in &rep.rows {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.4}</td>\
                 <td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td>{}</tr>",
                esc(&r.phase),
                rep.index,
                r.procs,
                r.fields,
                r.bytes as f64 / MIB,
                r.window_s,
                opt(r.gtb_mib_s, 1),
                opt(r.fields_per_s, 0),
                r.start_spread_ms,
                opt(r.others_cpu_pct, 0),
                if rpcs {
                    format!(
                        "<td>{}</td>",
                        r.rpcs
                            .filter(|_| r.fields > 0)
                            .map_or("–".into(), |n| format!(
                                "{:.2}",
                                n as f64 / r.fields as f64
                            ))
                    )
                } else {
                    String::new()
                }
            );
        }
    }
    s.push_str("</table>");
}

fn breakdown(report: &Report, s: &mut String) {
    let mut order: Vec<&str> = Vec::new();
    let mut by: BTreeMap<&str, (f64, BTreeMap<&str, Op>)> = BTreeMap::new();
    for r in report.repetitions.iter().flat_map(|r| &r.rows) {
        if !order.contains(&r.phase.as_str()) {
            order.push(&r.phase);
        }
        let e = by.entry(&r.phase).or_default();
        e.0 += r.process_s;
        for (k, o) in &r.ops {
            let x = e.1.entry(k).or_default();
            x.secs += o.secs;
            x.calls += o.calls;
        }
    }
    s.push_str(
        "<table><tr><th>phase</th><th>operation</th><th>seconds</th><th>% of process time</th>\
         <th>calls</th><th>µs per call</th></tr>",
    );
    for ph in order {
        let Some((total, ops)) = by.get(ph) else {
            continue;
        };
        let mut ops: Vec<_> = ops.iter().collect();
        ops.sort_by(|a, b| b.1.secs.total_cmp(&a.1.secs));
        let accounted: f64 = ops.iter().map(|o| o.1.secs).sum();
        let pct = |x: f64| if *total > 0.0 { x / total * 100.0 } else { 0.0 };
        for (k, o) in &ops {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{:.4}</td><td>{:.1}</td><td>{}</td><td>{:.1}</td></tr>",
                esc(ph),
                esc(k),
                o.secs,
                pct(o.secs),
                o.calls,
                if o.calls > 0 { o.secs / o.calls as f64 * 1e6 } else { 0.0 }
            );
        }
        let other = (total - accounted).max(0.0);
        let _ = write!(
            s,
            "<tr class=other><td>{}</td><td>other</td><td>{other:.4}</td><td>{:.1}</td><td></td><td></td></tr>",
            esc(ph),
            pct(other)
        );
    }
    s.push_str("</table>");
}

/// Store phases beside the raw phases of the same backend.
fn ceilings(report: &Report, s: &mut String) {
    let med = |ph: &str| report.phase(ph).and_then(|p| p.gtb_mib_s).map(|g| g.median);
    let pairs = [
        ("write", "raw-easy-write"),
        ("read", "raw-easy-read"),
        ("fieldio-write", "raw-easy-write"),
        ("fieldio-read", "raw-easy-read"),
    ];
    let mut body = String::new();
    for (store, raw) in pairs {
        if let (Some(a), Some(b)) = (med(store), med(raw)) {
            let _ = write!(
                body,
                "<tr><td>{store}</td><td>{a:.0}</td><td>{raw}</td><td>{b:.0}</td><td>{:.0} %</td></tr>",
                a / b * 100.0
            );
        }
    }
    if body.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "<h2>The store against its backend's raw ceiling</h2><p>{}</p><table><tr><th>phase</th>\
         <th>MiB/s (median)</th><th>raw phase</th><th>MiB/s (median)</th><th>share</th></tr>{body}</table>",
        esc(&report.raw_target)
    );
}

fn physical(report: &Report, s: &mut String) {
    let Some(p) = &report.physical else { return };
    let _ = write!(
        s,
        "<h2>Physical limits (same file system, same run)</h2><table><tr><th>test</th><th>MiB/s \
         median (min–max)</th></tr>\
         <tr><td>sequential write + fdatasync, 1 stream</td><td>{}</td></tr>\
         <tr><td>sequential write + fdatasync, {} streams</td><td>{}</td></tr>\
         <tr><td>O_DIRECT write</td><td>{}</td></tr><tr><td>O_DIRECT read</td><td>{}</td></tr>\
         <tr><td>cold buffered read, sequential</td><td>{}</td></tr>\
         <tr><td>cold buffered read, scattered</td><td>{}</td></tr></table>",
        summary(&p.write_fdatasync_mib_s),
        p.streams,
        summary(&p.write_streams_mib_s),
        summary(&p.write_odirect_mib_s),
        summary(&p.read_odirect_mib_s),
        summary(&p.read_buffered_mib_s),
        summary(&p.read_scattered_mib_s)
    );
}

/// Write `DIR/index.html` and the plots; returns the page's path.
///
/// # Errors
/// I/O errors creating the directory or writing the files; drawing errors.
pub fn write(report: &Report, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), e))?;
    crate::plots::bandwidth(report, &dir.join(PLOTS[0].0))?;
    crate::plots::timeline(report, &dir.join(PLOTS[1].0))?;
    crate::plots::latency(report, &dir.join(PLOTS[2].0))?;
    crate::plots::sizes(report, &dir.join(PLOTS[3].0))?;
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>\
         <title>fieldstore hammer: {scenario}</title><style>\
         body{{font-family:sans-serif;margin:2em;max-width:1200px;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0;font-size:14px}}\
         td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
         td:first-child,th:first-child,td:nth-child(2){{text-align:left}}\
         th{{background:#eef}} tr.other td{{color:#777}} img{{max-width:100%;border:1px solid #ddd}}\
         dt{{font-weight:bold;float:left;width:14em}} dd{{margin-left:15em}}\
         .problems{{color:#b00}}</style></head><body>\
         <h1>fieldstore hammer: {scenario}</h1><dl>\
         <dt>processes</dt><dd>{procs}</dd><dt>launcher</dt><dd>{launcher}</dd>\
         <dt>store</dt><dd>{store}</dd><dt>fields</dt><dd>{fields} of {bytes} B per process and phase</dd>\
         <dt>check / data / batch</dt><dd>{check} / {data} / {batch}</dd>\
         <dt>machine</dt><dd>{cpus} CPUs, load average before {lb}, after {la}</dd>\
         <dt>repetitions</dt><dd>{reps}</dd></dl>",
        scenario = esc(&report.scenario),
        procs = if report.readers > 0 {
            format!("{} writers + {} readers", report.processes, report.readers)
        } else {
            report.processes.to_string()
        },
        launcher = esc(&report.launcher),
        store = esc(&report.store),
        fields = report.fields_per_process,
        bytes = report.field_bytes,
        check = esc(&report.check),
        data = crate::report::data_kind(report.randomised),
        batch = esc(&report.batch),
        cpus = report.cpus,
        lb = esc(&report.load_before),
        la = esc(&report.load_after),
        reps = report.repetitions.len(),
    );
    if report.problems.is_empty() {
        s.push_str("<p id=verdict>All fields found.</p>");
    } else {
        s.push_str("<div class=problems id=verdict><h2>Problems</h2><ul>");
        for p in &report.problems {
            let _ = write!(s, "<li>{}</li>", esc(p));
        }
        s.push_str("</ul></div>");
    }
    s.push_str("<h2>Phases</h2><p>Global timing bandwidth: all bytes over (last I/O end − first I/O start) of the phase's processes.</p>");
    phase_table(report, &mut s);
    ceilings(report, &mut s);
    for (file, title, what) in PLOTS {
        let png = std::fs::read(dir.join(file)).map_err(|e| Error::io(file, e))?;
        let _ = write!(
            s,
            "<h2>{title}</h2><p>{what}</p><img class=plot alt=\"{title}\" src=\"data:image/png;base64,{}\">",
            base64::engine::general_purpose::STANDARD.encode(png)
        );
    }
    s.push_str("<h2>Time per operation</h2><p>Seconds summed over processes and repetitions, inside the window.</p>");
    breakdown(report, &mut s);
    physical(report, &mut s);
    if !report.warnings.is_empty() {
        s.push_str("<h2>Warnings</h2><ul>");
        for w in &report.warnings {
            let _ = write!(s, "<li>{}</li>", esc(w));
        }
        s.push_str("</ul>");
    }
    s.push_str(
        "<p id=rendered></p><script>\
         function count(){var i=document.querySelectorAll('img.plot'),n=0;\
         i.forEach(function(x){if(x.complete&&x.naturalWidth>0)n++});\
         document.getElementById('rendered').textContent='plots rendered: '+n+' of '+i.length;}\
         count();window.addEventListener('load',count);</script></body></html>\n",
    );
    let page = dir.join("index.html");
    std::fs::write(&page, s).map_err(|e| Error::io(page.display(), e))?;
    Ok(page)
}
