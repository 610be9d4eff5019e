//! Writer processes: this test binary run again as `writer_process`, which
//! archives fields through the library and flushes them one step at a
//! time, and notes when each flush returned.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fieldstore::{Config, FieldStore};

/// The variable that makes `writer_process` a writer:
/// `EXPVER,FIRST,END,INTERVAL_MS,PARAMS,TIMES_FILE[,PER_DATE]`: flushes
/// `FIRST..END`, flush `i` being step `i` of 2023-12-01, or with
/// `PER_DATE` step `i % PER_DATE` of the `i / PER_DATE`-th day from then
/// (a forecast of `PER_DATE` steps a day, each day a dataset).
pub(crate) const SPEC: &str = "FIELDSTORE_AVISO_WRITER";

/// The key of a writer's field.
pub(crate) fn key(expver: &str, step: u32, param: u32) -> String {
    dated_key(expver, 20231201, step, param)
}

fn dated_key(expver: &str, date: u32, step: u32, param: u32) -> String {
    format!(
        "class=od,expver={expver},stream=oper,date={date},time=1200,domain=g,type=fc,levtype=sfc,step={step},param={param}"
    )
}

/// The Aviso identifier of the step a writer flushes.
pub(crate) fn identifier(expver: &str, step: u32) -> String {
    dated_identifier(expver, 20231201, step)
}

fn dated_identifier(expver: &str, date: u32, step: u32) -> String {
    format!("class=od,date={date},domain=g,expver={expver},step={step},stream=oper,time=1200")
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
    per_date: Option<u32>,
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
                "{expver},{},{},{},{params},{}{}",
                steps.start,
                steps.end,
                interval.as_millis(),
                times.display(),
                per_date.map_or_else(String::new, |n| format!(",{n}"))
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
    let (&[expver, first, end, interval, params, times], per_date) = match parts.len() {
        6 => (<&[&str; 6]>::try_from(&parts[..6]).expect("6"), None),
        7 => (
            <&[&str; 6]>::try_from(&parts[..6]).expect("6"),
            Some(parts[6].parse::<u32>().expect("a number")),
        ),
        _ => panic!("bad writer spec {spec}"),
    };
    let parse = |s: &str| s.parse::<u32>().expect("a number");
    let fs = FieldStore::open(Config::from_env().expect("config")).expect("open the store");
    let mut out = std::fs::File::create(times).expect("times file");
    for i in parse(first)..parse(end) {
        let (date, step) = match per_date {
            Some(n) => {
                assert!(i / n < 31, "{spec}: more days than December has");
                (20231201 + i / n, i % n)
            }
            None => (20231201, i),
        };
        for param in 0..parse(params) {
            let k = dated_key(expver, date, step, 167 + param);
            fs.archive(&k.parse().expect("key"), format!("{k} data").as_bytes())
                .expect("archive");
        }
        fs.flush().expect("flush");
        let ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_nanos();
        writeln!(out, "{} {ns}", dated_identifier(expver, date, step)).expect("write times");
        std::thread::sleep(Duration::from_millis(u64::from(parse(interval))));
    }
}
