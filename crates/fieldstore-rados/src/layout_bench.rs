//! Store layout measurement: one object per field against per-writer
//! objects written at offsets. Needs a cluster: `CEPH_CONF`, `CEPH_POOL`.
//! Run: `cargo test -p fieldstore-rados --release layout_bench -- --ignored --nocapture`.

use std::sync::Arc;
use std::time::Instant;

use crate::config::RadosConfig;
use crate::rados::{Pending, Pool};

fn drain(q: &mut std::collections::VecDeque<Pending>, keep: usize) {
    while q.len() > keep {
        if let Some(p) = q.pop_front() {
            p.wait().map_err(|(e, w)| format!("{w}: {e}")).unwrap();
        }
    }
}

/// Returns seconds for `n` fields of `size` bytes, flushing every `every`.
fn per_field(pool: &Pool, tag: &str, n: usize, size: usize, every: usize, depth: usize) -> f64 {
    let data = vec![7u8; size];
    let t = Instant::now();
    let mut q = std::collections::VecDeque::new();
    for i in 0..n {
        q.push_back(
            pool.aio_write(&format!("{tag}.{i}"), data.clone(), None)
                .unwrap(),
        );
        drain(&mut q, depth - 1);
        if (i + 1) % every == 0 {
            drain(&mut q, 0);
        }
    }
    drain(&mut q, 0);
    t.elapsed().as_secs_f64()
}

fn packed(pool: &Pool, tag: &str, n: usize, size: usize, every: usize, depth: usize) -> f64 {
    const CHUNK: usize = 4 << 20;
    const OBJECT: u64 = 64 << 20;
    let data = vec![7u8; size];
    let t = Instant::now();
    let mut q = std::collections::VecDeque::new();
    let mut buf: Vec<u8> = Vec::new();
    let (mut obj, mut off, mut buf_off) = (0u32, 0u64, 0u64);
    let submit =
        |buf: &mut Vec<u8>, obj: u32, at: u64, q: &mut std::collections::VecDeque<Pending>| {
            if !buf.is_empty() {
                q.push_back(
                    pool.aio_write(&format!("{tag}.{obj}"), std::mem::take(buf), Some(at))
                        .unwrap(),
                );
                drain(q, depth - 1);
            }
        };
    for i in 0..n {
        if off + size as u64 > OBJECT {
            submit(&mut buf, obj, buf_off, &mut q);
            obj += 1;
            off = 0;
            buf_off = 0;
        }
        if buf.is_empty() {
            buf_off = off;
        }
        buf.extend_from_slice(&data);
        off += size as u64;
        if size >= 1 << 20 || buf.len() >= CHUNK {
            submit(&mut buf, obj, buf_off, &mut q);
        }
        if (i + 1) % every == 0 {
            submit(&mut buf, obj, buf_off, &mut q);
            drain(&mut q, 0);
        }
    }
    submit(&mut buf, obj, buf_off, &mut q);
    drain(&mut q, 0);
    t.elapsed().as_secs_f64()
}

#[test]
#[ignore = "benchmark; needs a cluster (CEPH_CONF, CEPH_POOL)"]
fn layout_bench() {
    let conf = std::env::var("CEPH_CONF").expect("CEPH_CONF");
    let mut c = RadosConfig::new(std::env::var("CEPH_POOL").unwrap_or("fieldstore".into()));
    c.conf = Some(conf);
    c.namespace = format!("layout-bench-{}", std::process::id());
    let pool = Arc::new(c.open_pool().unwrap());
    let scale: usize = std::env::var("LAYOUT_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    println!("| field size | writers | in flight | one object per field | per-writer objects |");
    println!("|---|---|---|---|---|");
    let sizes: Vec<usize> = std::env::var("LAYOUT_SIZES")
        .unwrap_or_else(|_| "4096,65536,1048576".into())
        .split(',')
        .map(|s| s.parse().expect("LAYOUT_SIZES: sizes in bytes"))
        .collect();
    for size in sizes {
        // About 16 MiB per flush for large fields, 100 fields for small.
        let every = if size >= 256 << 10 {
            (16 << 20) / size
        } else {
            100
        };
        let n = scale
            * if size >= 256 << 10 {
                (256 << 20) / size
            } else {
                (256 << 20) / size / 16
            }
            .max(1000);
        for &writers in &[1usize, 2] {
            for &depth in &[16usize] {
                let mut res = [0f64; 2];
                for (m, r) in res.iter_mut().enumerate() {
                    let t = Instant::now();
                    std::thread::scope(|s| {
                        for w in 0..writers {
                            let pool = pool.clone();
                            s.spawn(move || {
                                let tag = format!("m{m}.s{size}.w{w}.d{depth}");
                                if m == 0 {
                                    per_field(&pool, &tag, n, size, every, depth)
                                } else {
                                    packed(&pool, &tag, n, size, every, depth)
                                }
                            });
                        }
                    });
                    *r = t.elapsed().as_secs_f64();
                }
                let total = (n * writers) as f64;
                let mib = total * size as f64 / (1 << 20) as f64;
                let show = |t: f64| format!("{:.0} fields/s, {:.0} MiB/s", total / t, mib / t);
                println!(
                    "| {} KiB | {writers} | {depth} | {} | {} |",
                    size / 1024,
                    show(res[0]),
                    show(res[1])
                );
            }
        }
    }
}
