//! Log layout measurement: today's appended log segment against a row of
//! omap slots (one key per flush, committed by a conditional insert, as
//! DAOS and S3 commit: `fieldstore_core::engine::slots`), with several
//! writers of one dataset flushing each step at once. Needs a cluster:
//! `CEPH_CONF`, `CEPH_POOL`. Run:
//! `cargo test -p fieldstore-rados --release log_bench -- --ignored --nocapture`
//! (`LOG_WRITERS`, `LOG_STEPS`, `LOG_VALUE` to change the defaults).
//! Results: `docs/experiments/2026-11-rados-slots.md`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use fieldstore_core::engine::slots::{self, SlotLog};
use fieldstore_core::Result;

use crate::config::RadosConfig;
use crate::rados::{Pool, WriteOp, ECANCELED};

/// A dataset's slots as omap keys `f.<n, 16 hex digits>` of one object.
struct OmapSlots<'a> {
    pool: &'a Pool,
    object: &'a str,
    rpcs: &'a AtomicU64,
}

fn slot_key(n: u64) -> String {
    format!("f.{n:016x}")
}

fn slot_of(key: &[u8]) -> Option<u64> {
    let hex = std::str::from_utf8(key.strip_prefix(b"f.")?).ok()?;
    u64::from_str_radix(hex, 16).ok()
}

impl OmapSlots<'_> {
    fn after(&self, n: Option<u64>, max: u64) -> Result<Vec<u64>> {
        self.rpcs.fetch_add(1, Ordering::Relaxed);
        let start = n.map_or_else(|| "f.".to_string(), slot_key);
        let (keys, _) = self
            .pool
            .omap_keys(self.object, start.as_bytes(), max)
            .map_err(|e| e.error("listing slots"))?;
        Ok(keys.iter().filter_map(|k| slot_of(k)).collect())
    }
}

impl SlotLog for OmapSlots<'_> {
    fn get(&self, n: u64, buf: &mut Vec<u8>) -> Result<bool> {
        self.rpcs.fetch_add(1, Ordering::Relaxed);
        let k = slot_key(n);
        let got = self
            .pool
            .omap_get(self.object, &[k.as_bytes()])
            .map_err(|e| e.error("reading a slot"))?;
        match got.into_iter().next() {
            Some((_, v)) => {
                *buf = v;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn exists(&self, n: u64) -> Result<bool> {
        Ok(self.after(n.checked_sub(1), 1)?.first() == Some(&n))
    }

    fn next_after(&self, n: u64) -> Result<Option<u64>> {
        Ok(self.after(Some(n), 1)?.first().copied())
    }

    fn end_from(&self, from: u64) -> Result<Option<u64>> {
        let listed = self.after(from.checked_sub(1), 1000)?;
        Ok(Some(listed.last().map_or(from, |l| l + 1)))
    }

    fn insert(&self, n: u64, value: &[u8]) -> Result<bool> {
        self.rpcs.fetch_add(1, Ordering::Relaxed);
        let k = slot_key(n);
        let mut op = WriteOp::new()?;
        op.omap_cmp_eq(k.as_bytes(), b"");
        op.omap_set(&[(k.as_bytes(), value)]);
        match self.pool.operate(self.object, &op) {
            Ok(()) => Ok(true),
            Err(e) if e == ECANCELED => Ok(false),
            Err(e) => Err(e.error("inserting a slot")),
        }
    }

    fn name(&self, n: u64) -> String {
        format!("{}/{}", self.object, slot_key(n))
    }
}

/// A uniform random fraction in [0, 1): std's per-map random keys, hashed.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(Instant::now().elapsed().as_nanos() as u64);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// [`slots::publish`] with a backoff: after the k-th lost race in a row,
/// a pause of up to k times the last insert's duration, then the end
/// looked up again.
fn publish_backoff(log: &OmapSlots<'_>, hint: u64, value: &[u8]) -> u64 {
    let mut slot = hint;
    let mut lost = 0u32;
    loop {
        let t = Instant::now();
        if log.insert(slot, value).unwrap() {
            return slot;
        }
        lost += 1;
        let scale = match std::env::var("LOG_BACKOFF").as_deref() {
            Ok("exp") => f64::from(1u32 << lost.min(6)),
            _ => f64::from(lost.min(8)),
        };
        let pause = t.elapsed().mul_f64(scale * jitter());
        std::thread::sleep(pause);
        slot = log.end_from(slot + 1).unwrap().unwrap();
    }
}

/// Today's commit of one flush: its block in the segment's omap, the
/// record appended and witnessed (`!last`, or when `counted` the
/// `numops` class counting it in `!records`), under the seal and lock
/// comparisons.
fn append_flush(
    pool: &Pool,
    object: &str,
    block_key: &str,
    value: &[u8],
    record: &[u8],
    counted: bool,
) {
    let mut op = WriteOp::new().unwrap();
    op.assert_exists();
    op.omap_cmp_eq(b"!sealed", b"");
    op.omap_cmp_eq(b"!archive-locked", b"");
    if counted {
        op.omap_set(&[(block_key.as_bytes(), value)]);
        crate::segments::append_counted(&mut op, record);
    } else {
        op.omap_set(&[(block_key.as_bytes(), value), (b"!last", &record[..8])]);
        op.append(record);
    }
    pool.operate(object, &op).unwrap();
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Per step, the slowest writer's time (ms), median over steps; and the
/// requests per flush.
fn run(
    pool: &Pool,
    object: &str,
    writers: usize,
    steps: usize,
    value: usize,
    how: u8,
) -> (f64, f64) {
    let mut op = WriteOp::new().unwrap();
    op.create();
    op.append(b"INIT");
    pool.operate(object, &op).unwrap();
    let barrier = Barrier::new(writers);
    let rpcs = AtomicU64::new(0);
    let times: Vec<Vec<f64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let (barrier, rpcs) = (&barrier, &rpcs);
                s.spawn(move || {
                    let data = vec![w as u8; value];
                    let record = vec![w as u8; 200];
                    let log = OmapSlots { pool, object, rpcs };
                    let mut hint = 0;
                    let mut out = Vec::with_capacity(steps);
                    for step in 0..steps {
                        barrier.wait();
                        let t = Instant::now();
                        if how == 1 {
                            hint = slots::publish(&log, hint, &data, &mut || Ok(())).unwrap() + 1;
                        } else if how == 2 {
                            hint = publish_backoff(&log, hint, &data) + 1;
                        } else {
                            rpcs.fetch_add(1, Ordering::Relaxed);
                            let block = format!("w{w}.{step}");
                            append_flush(pool, object, &block, &data, &record, how == 3);
                        }
                        out.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut per_step: Vec<f64> = (0..steps)
        .map(|s| times.iter().map(|t| t[s]).fold(0.0, f64::max))
        .collect();
    per_step.sort_by(f64::total_cmp);
    let flushes = (writers * steps) as f64;
    (
        per_step[steps / 2],
        rpcs.load(Ordering::Relaxed) as f64 / flushes,
    )
}

#[test]
#[ignore = "benchmark; needs a cluster (CEPH_CONF, CEPH_POOL)"]
fn log_bench() {
    let conf = std::env::var("CEPH_CONF").expect("CEPH_CONF");
    let mut c = RadosConfig::new(std::env::var("CEPH_POOL").unwrap_or("fieldstore".into()));
    c.conf = Some(conf);
    c.namespace = format!("log-bench-{}", std::process::id());
    let pool = c.open_pool().unwrap();
    let steps = env("LOG_STEPS", 20);
    let value = env("LOG_VALUE", 50_000);
    let writers: Vec<usize> = std::env::var("LOG_WRITERS")
        .unwrap_or_else(|_| "1,2,4,8,16".into())
        .split(',')
        .map(|s| s.parse().expect("LOG_WRITERS: numbers"))
        .collect();
    println!("| writers | append: ms per step | append, counted: ms per step | slots: ms per step | requests per flush | slots, backoff: ms per step | requests per flush |");
    println!("|---|---|---|---|---|---|---|");
    for (i, &w) in writers.iter().enumerate() {
        let a = run(&pool, &format!("a{i}"), w, steps, value, 0);
        let d = run(&pool, &format!("d{i}"), w, steps, value, 3);
        let b = run(&pool, &format!("b{i}"), w, steps, value, 1);
        let c = run(&pool, &format!("c{i}"), w, steps, value, 2);
        println!(
            "| {w} | {:.1} | {:.1} | {:.1} | {:.2} | {:.1} | {:.2} |",
            a.0, d.0, b.0, b.1, c.0, c.1
        );
    }
    // A cold reader of the last run's slots: a page of values at a time.
    let object = format!("b{}", writers.len() - 1);
    let t = Instant::now();
    let (mut after, mut n) = ("f.".to_string(), 0usize);
    loop {
        let (page, more) = pool.omap_page(&object, after.as_bytes(), "f.", 64).unwrap();
        n += page.len();
        match page.last() {
            Some((k, _)) if more => after = String::from_utf8(k.clone()).unwrap(),
            _ => break,
        }
    }
    println!(
        "cold read of {n} slots ({value} bytes each), 64 a page: {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
}
