//! The extraction benchmark's fieldstore side (`bench/extract/run.sh` runs
//! it beside FDB5 + GribJump; `docs/benchmarks.md`, "Extraction"): the
//! fields of `FIELDSTORE_EXTRACT_GRIB` archived into a POSIX store under
//! `FIELDSTORE_EXTRACT_ROOT` by default (no jump info at archive) and
//! with jump info built at archive (archive cost and index size); the
//! first extraction of every field (jump info built and kept with the
//! entries: its cost, and the index after it); then, warm: a one-point time series over every field, a
//! 100-point region, a 10,000-index range, one point of one field (latency
//! percentiles), and the same one-point series by decoding whole fields
//! with ecCodes (what the array view does). One JSON object per result on
//! standard output.

use std::path::{Path, PathBuf};
use std::time::Instant;

use fieldstore::{Config, FieldStore, Request};
use fieldstore_grib::{decode_values, ArchiveGrib, ExtractGrib, GribOptions, Selection};

fn open(root: &Path) -> FieldStore {
    std::fs::create_dir_all(root).unwrap();
    let schema = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/schema/ecmwf.schema"
    );
    let yaml = format!(
        "type: local\nengine: toc\nstore: file\nschema: {schema}\nspaces:\n  - handler: Default\n    roots:\n      - path: {}\n",
        root.display()
    );
    FieldStore::open(Config::from_yaml(&yaml, root, "bench").unwrap()).unwrap()
}

fn dir_bytes(dir: &Path, keep: &dyn Fn(&str) -> bool) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            n += dir_bytes(&p, keep);
        } else if keep(&e.file_name().to_string_lossy()) {
            n += e.metadata().unwrap().len();
        }
    }
    n
}

fn archive(root: &Path, bytes: &[u8], jump: bool) -> f64 {
    let _ = std::fs::remove_dir_all(root);
    let fs = open(root);
    let t = Instant::now();
    fs.archive_grib_with(bytes, GribOptions::default().jump_info(jump))
        .unwrap();
    fs.flush().unwrap();
    t.elapsed().as_secs_f64()
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` / `cargo bench -- --list`
    }
    let (Some(file), Some(root)) = (
        std::env::var_os("FIELDSTORE_EXTRACT_GRIB"),
        std::env::var_os("FIELDSTORE_EXTRACT_ROOT"),
    ) else {
        eprintln!(
            "set FIELDSTORE_EXTRACT_GRIB and FIELDSTORE_EXTRACT_ROOT (bench/extract/run.sh does)"
        );
        return;
    };
    let root = PathBuf::from(root);
    if let Some(n) = std::env::var_os("FIELDSTORE_EXTRACT_PROFILE") {
        let n = n.to_string_lossy().parse().unwrap_or(1000);
        return profile(&open(&root.join("lazy")), n);
    }
    let bytes = std::fs::read(&file).unwrap();
    let n = fieldstore_grib::split_messages(&bytes).count();
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);

    // Archive cost and index size: the default (no jump info at archive:
    // built on first extraction) and jump info built at archive
    // (`jump_info(true)`), best of `ARCHIVE_REPS`, alternating.
    let (mut eager, mut lazy) = (f64::INFINITY, f64::INFINITY);
    let archive_reps: usize = std::env::var("ARCHIVE_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2);
    for _ in 0..archive_reps {
        lazy = lazy.min(archive(&root.join("lazy"), &bytes, false));
        eager = eager.min(archive(&root.join("eager"), &bytes, true));
    }
    let index = |d: &Path| dir_bytes(d, &|name: &str| !name.ends_with(".data"));
    let (ix_eager, ix_lazy) = (index(&root.join("eager")), index(&root.join("lazy")));
    println!(
        "{{\"what\":\"archive\",\"fields\":{n},\"seconds_with_jump_info\":{eager:.4},\"seconds_without\":{lazy:.4},\"index_bytes_with\":{ix_eager},\"index_bytes_without\":{ix_lazy}}}"
    );
    let fs = open(&root.join("lazy"));
    let steps: Vec<String> = (0..n).map(|s| s.to_string()).collect();
    let series: Request = format!(
        "class=od,expver=0001,stream=oper,date=20240101,time=0000,type=fc,levtype=sfc,param=167,step={}",
        steps.join("/")
    )
    .parse()
    .unwrap();
    let one: Request = "class=od,expver=0001,stream=oper,date=20240101,time=0000,type=fc,levtype=sfc,param=167,step=0"
        .parse()
        .unwrap();
    let ni = 1440u64;
    let point = 300 * ni + 700;
    let region: Vec<u64> = (0..10)
        .flat_map(|r| (0..10).map(move |c| (300 + r) * ni + 700 + c))
        .collect();
    // The first extraction of every field: builds the jump info (CCSDS:
    // each data section read whole and walked) and keeps it with the
    // entries; the index then holds it.
    let t = Instant::now();
    let e = fs
        .extract(&series, &Selection::Indices(vec![point]))
        .unwrap();
    let first = t.elapsed().as_secs_f64();
    assert_eq!((e.computed, e.persisted), (n, n), "{:?}", e.not_persisted);
    let t = Instant::now();
    let second = fs
        .extract(&series, &Selection::Indices(vec![point]))
        .unwrap();
    let second_s = t.elapsed().as_secs_f64();
    assert_eq!(second.computed, 0);
    println!(
        "{{\"what\":\"first_extraction\",\"fields\":{n},\"seconds\":{first:.4},\"bytes_read\":{},\"field_bytes\":{},\"second_seconds\":{second_s:.4},\"index_bytes_after\":{}}}",
        e.read.bytes,
        e.field_bytes,
        index(&root.join("lazy"))
    );
    let cases = [
        ("series_1_point", Selection::Indices(vec![point])),
        ("series_100_point_region", Selection::Indices(region)),
        (
            "series_10000_range",
            Selection::Ranges(vec![(500_000, 510_000)]),
        ),
    ];
    for (what, sel) in &cases {
        let _ = fs.extract(&series, sel).unwrap(); // warm
        let mut best = f64::INFINITY;
        let mut got = None;
        for _ in 0..reps {
            let t = Instant::now();
            let e = fs.extract(&series, sel).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
            got = Some(e);
        }
        let e = got.unwrap();
        assert_eq!(e.fields.len(), n);
        println!(
            "{{\"what\":\"{what}\",\"fields\":{n},\"seconds\":{best:.5},\"fields_per_s\":{:.1},\"bytes_read\":{},\"reads\":{},\"field_bytes\":{},\"decoded\":{},\"computed\":{},\"value0\":{}}}",
            n as f64 / best,
            e.read.bytes,
            e.read.reads,
            e.field_bytes,
            e.decoded,
            e.computed,
            e.fields[0].values[0]
        );
    }
    // One point of one field: latency; then the same, and the one-point
    // series, on the store with jump info built at archive (no
    // annotations), interleaved: what keeping it as annotations costs.
    let sel = Selection::Indices(vec![point]);
    let eager = open(&root.join("eager"));
    let (mut lat, mut lat_eager) = (Vec::new(), Vec::new());
    for _ in 0..1000 {
        for (fs, lat) in [(&fs, &mut lat), (&eager, &mut lat_eager)] {
            let t = Instant::now();
            let e = fs.extract(&one, &sel).unwrap();
            lat.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!((e.fields.len(), e.computed), (1, 0));
        }
    }
    let (mut best, mut best_eager) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reps.max(3) {
        for (fs, best) in [(&fs, &mut best), (&eager, &mut best_eager)] {
            let t = Instant::now();
            assert_eq!(fs.extract(&series, &sel).unwrap().computed, 0);
            *best = best.min(t.elapsed().as_secs_f64());
        }
    }
    println!(
        "{{\"what\":\"one_point_one_field\",\"p50_ms\":{:.4},\"p90_ms\":{:.4},\"p99_ms\":{:.4},\"eager_p50_ms\":{:.4},\"eager_p90_ms\":{:.4},\"series_fields_per_s\":{:.1},\"eager_series_fields_per_s\":{:.1}}}",
        pct(&mut lat, 0.5),
        pct(&mut lat, 0.9),
        pct(&mut lat, 0.99),
        pct(&mut lat_eager, 0.5),
        pct(&mut lat_eager, 0.9),
        n as f64 / best,
        n as f64 / best_eager,
    );
    drop(eager);
    let _ = std::fs::remove_dir_all(root.join("eager"));
    // Whole fields decoded with ecCodes, as the array view does: retrieve
    // then decode_values, the same one point from each.
    let t = Instant::now();
    let mut reader = fs.retrieve(&series).unwrap();
    let mut buf = Vec::new();
    let mut values = vec![0f64; 1440 * 721];
    let mut first = None;
    while reader.next_field(&mut buf).unwrap().is_some() {
        decode_values(&buf, &mut values).unwrap();
        first.get_or_insert(values[point as usize]);
    }
    let whole = t.elapsed().as_secs_f64();
    if let Some(big) = std::env::var_os("FIELDSTORE_EXTRACT_BIG_GRIB") {
        starvation(&fs, n.min(5), &root, &std::fs::read(big).unwrap(), point);
    }
    println!(
        "{{\"what\":\"series_1_point_whole_field_decode\",\"fields\":{n},\"seconds\":{whole:.4},\"fields_per_s\":{:.1},\"value0\":{}}}",
        n as f64 / whole,
        first.unwrap()
    );
}

/// A 5-field extraction's latency alone, then while a one-point
/// extraction over every field of `big` (10,000 fields) runs beside it.
fn starvation(fs: &FieldStore, small_n: usize, root: &Path, big: &[u8], point: u64) {
    let _ = std::fs::remove_dir_all(root.join("big"));
    let bigfs = open(&root.join("big"));
    bigfs
        .archive_grib_with(big, GribOptions::default().jump_info(true))
        .unwrap();
    bigfs.flush().unwrap();
    let n = fieldstore_grib::split_messages(big).count();
    let steps: Vec<String> = (0..n).map(|s| s.to_string()).collect();
    let large: Request = format!(
        "class=od,expver=0001,stream=oper,date=20240101,time=0000,type=fc,levtype=sfc,param=167,step={}",
        steps.join("/")
    )
    .parse()
    .unwrap();
    let small_steps: Vec<String> = (0..small_n).map(|s| s.to_string()).collect();
    let small: Request = format!(
        "class=od,expver=0001,stream=oper,date=20240101,time=0000,type=fc,levtype=sfc,param=167,step={}",
        small_steps.join("/")
    )
    .parse()
    .unwrap();
    let sel = Selection::Indices(vec![point]);
    let big_sel = Selection::Indices(vec![1000]);
    let _ = bigfs.extract(&large, &big_sel).unwrap(); // warm
    let mut alone = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        assert_eq!(fs.extract(&small, &sel).unwrap().fields.len(), small_n);
        alone.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    let (mut beside, big_s) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            let t = Instant::now();
            let e = bigfs.extract(&large, &big_sel).unwrap();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            (e.fields.len(), t.elapsed().as_secs_f64())
        });
        let mut lat = Vec::new();
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            let t = Instant::now();
            assert_eq!(fs.extract(&small, &sel).unwrap().fields.len(), small_n);
            lat.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let (fields, secs) = h.join().unwrap();
        assert_eq!(fields, n);
        (lat, secs)
    });
    println!(
        "{{\"what\":\"small_beside_large\",\"large_fields\":{n},\"large_seconds\":{big_s:.3},\"small_alone_p50_ms\":{:.3},\"small_beside_p50_ms\":{:.3},\"small_beside_p90_ms\":{:.3},\"small_beside_max_ms\":{:.3},\"small_runs_beside\":{}}}",
        pct(&mut alone, 0.5),
        pct(&mut beside, 0.5),
        pct(&mut beside, 0.9),
        pct(&mut beside, 1.0),
        beside.len()
    );
}

/// Where a one-point series' time goes (`FIELDSTORE_EXTRACT_PROFILE=N`
/// on a store an earlier run left).
fn profile(fs: &FieldStore, n: usize) {
    let steps: Vec<String> = (0..n).map(|s| s.to_string()).collect();
    let series: Request = format!(
        "class=od,expver=0001,stream=oper,date=20240101,time=0000,type=fc,levtype=sfc,param=167,step={}",
        steps.join("/")
    )
    .parse()
    .unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let listed = fs.list(&series, Default::default()).unwrap();
        let list_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let located = fs.locate(&series).unwrap();
        let locate_s = t.elapsed().as_secs_f64();
        let fields: Vec<_> = listed
            .into_iter()
            .map(|e| (e.full_key(), e.location.unwrap()))
            .collect();
        for par in [1, 2, 4] {
            let t = Instant::now();
            fieldstore_grib::extract_fields(
                fs.store().as_ref(),
                &fields,
                &Selection::Indices(vec![300 * 1440 + 700]),
                fieldstore_grib::ExtractOptions::default().parallelism(par),
            )
            .unwrap();
            eprintln!(
                "list {list_s:.4} s, locate {locate_s:.4} s ({} fields), extract (parallelism {par}) {:.4} s",
                located.len(),
                t.elapsed().as_secs_f64()
            );
        }
    }
}
