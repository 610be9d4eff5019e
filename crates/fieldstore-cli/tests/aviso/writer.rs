//! Writer processes: this test binary run again as `writer_process`, which
//! archives fields through the library and flushes them one step at a
//! time, and notes when each flush returned.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fieldstore::{Config, FieldStore};

/// The variable that makes `writer_process` a writer:
/// `EXPVER,FIRST,END,INTERVAL_MS,PARAMS,TIMES_FILE`.
pub(crate) const SPEC: &str = "FIELDSTORE_AVISO_WRITER";

/// The key of a writer's field.
pub(crate) fn key(expver: &str, step: u32, param: u32) -> String {
    format!(
        "class=od,expver={expver},stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step={step},param={param}"
    )
}

/// The Aviso identifier of the step a writer flushes.
pub(crate) fn identifier(expver: &str, step: u32) -> String {
    format!("class=od,date=20231201,domain=g,expver={expver},step={step},stream=oper,time=1200")
}

/// Start a writer of steps `first..end` under `expver` into the store at
/// `root`: each step `params` fields, one flush, then `interval`.
pub(crate) fn spawn(
    root: &Path,
    expver: &str,
    steps: std::ops::Range<u32>,
    interval: Duration,
    params: u32,
    times: &Path,
) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "writer_process",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ])
        .env(
            SPEC,
            format!(
                "{expver},{},{},{},{params},{}",
                steps.start,
                steps.end,
                interval.as_millis(),
                times.display()
            ),
        )
        .env_remove("FIELDSTORE_CONFIG")
        .env("FIELDSTORE_ROOT", root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("start a writer")
}

/// The writer's body (`spec` from [`SPEC`]).
pub(crate) fn run(spec: &str) {
    let parts: Vec<&str> = spec.split(',').collect();
    let [expver, first, end, interval, params, times] = parts[..] else {
        panic!("bad writer spec {spec}");
    };
    let parse = |s: &str| s.parse::<u32>().expect("a number");
    let fs = FieldStore::open(Config::from_env().expect("config")).expect("open the store");
    let mut out = std::fs::File::create(times).expect("times file");
    for step in parse(first)..parse(end) {
        for param in 0..parse(params) {
            let k = key(expver, step, 167 + param);
            fs.archive(&k.parse().expect("key"), format!("{k} data").as_bytes())
                .expect("archive");
        }
        fs.flush().expect("flush");
        let ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_nanos();
        writeln!(out, "{} {ns}", identifier(expver, step)).expect("write times");
        std::thread::sleep(Duration::from_millis(u64::from(parse(interval))));
    }
}
