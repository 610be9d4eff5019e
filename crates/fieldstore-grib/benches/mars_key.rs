//! Per-field cost of reading a GRIB message's MARS key through ecCodes, and
//! of splitting a file into messages.
//!
//! Fields measured:
//! - `template.grib`: the GRIB1 fixture (10 KiB, ECMWF ensemble analysis).
//! - `x138-300.grib`: a 3.1 MiB GRIB1 spectral field.
//! - `grib2-1mib`: a GRIB2 fixture message (`timespan.grib`, ECMWF local
//!   section, CCSDS packing) rewritten here with 16-bit simple packing of
//!   its 654 400 grid points: a 1.25 MiB field.
//! - `$FIELDSTORE_GRIB_BENCH_FILE`, if set: any GRIB file's first message;
//!   `scripts/make_bench_template.py` writes the 1 MiB GRIB2 template FDB5
//!   was measured with (`shared/docs/reference/fdb5-measured.md`).
//!
//! Times are CPU time of the benchmarking thread (`CLOCK_THREAD_CPUTIME_ID`),
//! not wall time: the development machine is shared, and FDB5's cost it is
//! compared with was measured as CPU time. The two-thread case is wall time.
//!
//! `cargo bench -p fieldstore-grib`; results in `docs/grib.md` and
//! `docs/benchmarks.md` ("GRIB key extraction").
#![allow(missing_docs)] // criterion's macros generate undocumented items

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fieldstore::{Config, FieldStore, Schema};
use fieldstore_grib::{mars_key, split_messages, ArchiveGrib};

/// CPU time consumed by the calling thread.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant
    // Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Run `f` `iters` times and return the CPU time it took.
fn cpu_time(iters: u64, mut f: impl FnMut()) -> Duration {
    let start = thread_cpu_time();
    for _ in 0..iters {
        f();
    }
    thread_cpu_time() - start
}

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/grib")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn first_message(file: &[u8]) -> Vec<u8> {
    split_messages(file)
        .next()
        .expect("a message")
        .expect("a valid message")
        .bytes()
        .to_vec()
}

/// Rewrite a GRIB2 message's data to 16-bit simple packing of all its grid
/// points (sections 0 to 4 kept, sections 5 to 7 replaced).
fn grib2_simple_packing(message: &[u8]) -> Vec<u8> {
    let be32 = |at: usize| u32::from_be_bytes(message[at..at + 4].try_into().expect("4 bytes"));
    let mut at = 16;
    let mut points = 0u32;
    while message[at + 4] != 5 {
        if message[at + 4] == 3 {
            points = be32(at + 6);
        }
        at += be32(at) as usize;
    }
    assert!(points > 0, "no section 3");
    let mut out = message[..at].to_vec();
    // Section 5, template 5.0: reference 0.0, scales 0, 16 bits, floats.
    out.extend_from_slice(&21u32.to_be_bytes());
    out.push(5);
    out.extend_from_slice(&points.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&0f32.to_bits().to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0, 16, 0]);
    // Section 6: no bitmap.
    out.extend_from_slice(&6u32.to_be_bytes());
    out.extend_from_slice(&[6, 255]);
    // Section 7: the values.
    let data_len = 2 * points as usize;
    out.extend_from_slice(&(5 + data_len as u32).to_be_bytes());
    out.push(7);
    out.extend((0..data_len).map(|i| (i * 7 % 251) as u8));
    out.extend_from_slice(b"7777");
    let total = out.len() as u64;
    out[8..16].copy_from_slice(&total.to_be_bytes());
    out
}

fn fields() -> Vec<(String, Vec<u8>)> {
    let mut fields = vec![
        (
            "template.grib".to_string(),
            first_message(&fixture("template.grib")),
        ),
        (
            "x138-300.grib".to_string(),
            first_message(&fixture("x138-300.grib")),
        ),
        (
            "grib2-1mib".to_string(),
            grib2_simple_packing(&first_message(&fixture("timespan.grib"))),
        ),
    ];
    if let Some(path) = std::env::var_os("FIELDSTORE_GRIB_BENCH_FILE") {
        let bytes = std::fs::read(&path).expect("FIELDSTORE_GRIB_BENCH_FILE");
        fields.push(("bench-file".to_string(), first_message(&bytes)));
    }
    fields
}

fn bench(c: &mut Criterion) {
    let fields = fields();
    let mut group = c.benchmark_group("mars_key");
    for (name, bytes) in &fields {
        mars_key(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("{name} ({} B)", bytes.len()), |b| {
            b.iter_custom(|iters| {
                cpu_time(iters, || {
                    mars_key(black_box(bytes)).expect("key");
                })
            })
        });
    }
    // Two threads extracting at once (wall time): the process-wide lock
    // serialises them, so the time per field stays that of one thread.
    let (name, bytes) = &fields[2];
    group.bench_function(format!("{name}, 2 threads (time per field)"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(|| {
                        for _ in 0..iters.div_ceil(2) {
                            mars_key(black_box(bytes)).expect("key");
                        }
                    });
                }
            });
            start.elapsed()
        })
    });
    group.finish();

    // The whole GRIB path against archiving with the key given, into a
    // memory store (FDB5's equivalent: scripts/fdb5_key_cost.py). The
    // difference is what reading and fitting the key costs per field.
    let fs = FieldStore::open(Config::memory(Schema::ecmwf())).expect("memory store");
    let mut group = c.benchmark_group("archive");
    for (name, bytes) in &fields {
        let key = mars_key(bytes).expect("key");
        let split = fs.schema().split(&key).expect("fits the ECMWF schema");
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("{name}: archive_grib"), |b| {
            b.iter_custom(|iters| {
                cpu_time(iters, || {
                    fs.archive_grib(black_box(bytes)).expect("archive");
                    fs.discard().expect("discard");
                })
            })
        });
        group.bench_function(format!("{name}: schema split of its MARS key"), |b| {
            b.iter_custom(|iters| {
                cpu_time(iters, || {
                    black_box(fs.schema().split(black_box(&key)).expect("split"));
                })
            })
        });
        group.bench_function(format!("{name}: archive with the key given"), |b| {
            b.iter_custom(|iters| {
                cpu_time(iters, || {
                    fs.archive_split(black_box(&split), black_box(bytes))
                        .expect("archive");
                    fs.discard().expect("discard");
                })
            })
        });
    }
    group.finish();

    // What the lock costs when nobody else holds it.
    let lock = Mutex::new(());
    c.bench_function("uncontended std Mutex lock+unlock", |b| {
        b.iter_custom(|iters| cpu_time(iters, || drop(black_box(&lock).lock())))
    });

    let mut group = c.benchmark_group("split_messages");
    for name in ["timespan.grib", "climatology.grib"] {
        let file = fixture(name);
        group.throughput(Throughput::Bytes(file.len() as u64));
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                cpu_time(iters, || {
                    black_box(split_messages(black_box(&file)).count());
                })
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
