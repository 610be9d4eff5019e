//! The benchmark of docs/benchmarks.md, "Aviso: flush to listener"
//! (`bench/aviso/run.sh` runs it, `--ignored`, in a release build): four
//! writer processes flush one field at a time, `fieldstore notify` follows
//! them and posts to aviso-server, and a pyaviso listener's callback notes
//! when each notification reached it. Beside it the floor: the same
//! listener's latency for notifications a producer posts straight to the
//! server at the same rate.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{repo, Env};
use crate::server::Server;
use crate::{aviso, wait_until, writer, Publisher};

fn var(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `expver/step time_ns` lines of `path` (missing: none).
fn times(path: &Path) -> HashMap<String, u128> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (id, t) = l.split_once(' ')?;
            Some((id.to_string(), t.parse().ok()?))
        })
        .collect()
}

/// A writer's identifier line (`class=…,expver=E,step=S,…`) as `E/D/S`.
fn short(identifier: &str) -> String {
    let get = |k: &str| {
        identifier
            .split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .unwrap_or("")
            .to_string()
    };
    format!("{}/{}/{}", get("expver"), get("date"), get("step"))
}

/// p50, p99, max in milliseconds of `sent` → `got`, and how many of `sent`
/// never came.
fn latency(sent: &HashMap<String, u128>, got: &HashMap<String, u128>) -> (f64, f64, f64, usize) {
    let mut ms: Vec<f64> = sent
        .iter()
        .filter_map(|(id, t0)| got.get(id).map(|t1| (*t1 as f64 - *t0 as f64) / 1e6))
        .collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99), at(1.0), sent.len() - ms.len())
}

/// User + system CPU seconds of process `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    let after = stat.rsplit_once(')').expect("stat").1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().expect("utime") + f[12].parse::<f64>().expect("stime");
    // SAFETY: sysconf reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

#[test]
#[ignore = "a benchmark: bench/aviso/run.sh"]
fn bench_flush_to_listener() {
    let (server_bin, client) = aviso().expect("FIELDSTORE_AVISO_SERVER and _CLIENT");
    let python = std::env::var("FIELDSTORE_AVISO_PYTHON").expect("FIELDSTORE_AVISO_PYTHON");
    let per_writer = var("FIELDSTORE_AVISO_BENCH_FLUSHES", 2500) as u32;
    let interval = Duration::from_millis(var("FIELDSTORE_AVISO_BENCH_INTERVAL_MS", 10));
    // Steps per day (each day a dataset); 0: all in one dataset.
    let per_date =
        Some(var("FIELDSTORE_AVISO_BENCH_STEPS_PER_DATE", 100) as u32).filter(|n| *n > 0);
    let writers = 4;
    let env = Env::new();
    std::fs::create_dir_all(env.root()).expect("root");
    let server = Server::start(&server_bin, env.dir.path());
    let url = server.url();
    let script = repo().join("bench/aviso/listener.py");
    let listened = env.path("listened");
    let mut listener = Command::new(&python)
        .arg(&script)
        .args(["listen", &url])
        .arg(&listened)
        .stdin(Stdio::null())
        .spawn()
        .expect("start the listener");
    // Until the listener hears: post a warm-up notification every 0.5 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !times(&listened).contains_key("9999/20231201/0") {
        assert!(Instant::now() < deadline, "the listener hears nothing");
        let ok = Command::new(&client)
            .args(["--base-url", &url, "notify"])
            .arg("event=mars,class=od,expver=9999,domain=g,date=20231201,time=1200,stream=oper,step=0")
            .stdout(Stdio::null())
            .status()
            .expect("aviso notify");
        assert!(ok.success());
        std::thread::sleep(Duration::from_millis(500));
    }
    let publisher = Publisher::start(&env, &url, &env.path("state"), &["--since", "now"]);
    wait_until(
        30,
        || publisher.stderr(),
        || publisher.stderr().contains("following"),
    );
    let cpu0 = cpu_seconds(publisher.child.id());
    let started = Instant::now();
    let mut children: Vec<_> = (1..=writers)
        .map(|w| {
            writer::spawn(
                &env.root(),
                &format!("{w:04}"),
                0..per_writer,
                interval,
                1,
                &env.path(&format!("flushed-{w}")),
                per_date,
            )
        })
        .collect();
    for c in &mut children {
        assert!(c.wait().expect("writer").success());
    }
    let wrote = started.elapsed();
    let mut flushed = HashMap::new();
    for w in 1..=writers {
        for (id, t) in times(&env.path(&format!("flushed-{w}"))) {
            flushed.insert(short(&id), t);
        }
    }
    wait_until(
        120,
        || format!("{} of {} heard", times(&listened).len(), flushed.len()),
        || flushed.keys().all(|k| times(&listened).contains_key(k)),
    );
    let cpu = cpu_seconds(publisher.child.id()) - cpu0;
    drop(publisher);
    // The floor: the same number of notifications, at the same rate,
    // posted straight to the server.
    let posted = env.path("posted");
    let total = per_writer * writers;
    let status = Command::new(&python)
        .arg(&script)
        .args(["post", &url])
        .arg(&posted)
        .args(["0005", &total.to_string()])
        .arg(format!(
            "{}",
            interval.as_secs_f64() * 1000.0 / f64::from(writers)
        ))
        .status()
        .expect("the direct poster");
    assert!(status.success());
    let direct = times(&posted);
    wait_until(
        120,
        || "the direct posts are not all heard".into(),
        || direct.keys().all(|k| times(&listened).contains_key(k)),
    );
    let _ = listener.kill();
    let _ = listener.wait();
    let heard = times(&listened);
    let (p50, p99, max, lost) = latency(&flushed, &heard);
    let (f50, f99, fmax, flost) = latency(&direct, &heard);
    let report = format!(
        "{{\"flushes\": {}, \"writers\": {writers}, \"interval_ms\": {}, \"seconds\": {:.1}, \
         \"flush_to_listener_ms\": {{\"p50\": {p50:.2}, \"p99\": {p99:.2}, \"max\": {max:.1}, \"lost\": {lost}}}, \
         \"direct_post_to_listener_ms\": {{\"p50\": {f50:.2}, \"p99\": {f99:.2}, \"max\": {fmax:.1}, \"lost\": {flost}}}, \
         \"steps_per_dataset\": {}, \"publisher_cpu_s\": {cpu:.2}, \"publisher_cpu_us_per_flush\": {:.0}}}",
        flushed.len(),
        interval.as_millis(),
        wrote.as_secs_f64(),
        per_date.unwrap_or(per_writer),
        cpu * 1e6 / flushed.len() as f64
    );
    println!("{report}");
    if let Ok(out) = std::env::var("FIELDSTORE_AVISO_BENCH_OUT") {
        std::fs::write(out, format!("{report}\n")).expect("write the report");
    }
    assert_eq!(lost, 0, "flushes never heard");
}
