//! List speed of the S3 catalogue against the POSIX catalogue, same
//! fields, same process, runs interleaved (`bench/s3/run.sh` runs it on
//! the SeaweedFS it starts).
//!
//! ```text
//! S3_ENDPOINT=http://127.0.0.1:8333 S3_ACCESS=… S3_SECRET=… \
//!   cargo run --release -p fieldstore-s3 --example s3_list_speed -- [FLUSHES] [FIELDS_PER_FLUSH] [REPS]
//! ```
//!
//! Each catalogue indexes fields of its own store (S3: `store: s3`;
//! POSIX: files). "cold" is a new handle (S3: a GET of `meta` and one of
//! every log object; POSIX: the `toc` and index files); "warm" is the
//! same handle listing again (one refresh: two requests on S3 when
//! nothing is new). Prints the median over `REPS` of each, and the ratio.

use std::time::Instant;

use fieldstore::{Config, FieldStore, ListOptions, Request, Root};
use fieldstore_testkit::support::{schema, Spec};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let flushes = args.first().copied().unwrap_or(100);
    let per = args.get(1).copied().unwrap_or(100);
    let reps = args.get(2).copied().unwrap_or(5).max(1);
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let yaml = format!(
        "engine: s3\nstore: s3\ns3:\n  endpoint: {}\n  bucket: list-speed-{}\n  credentials: \
         {{access_key_id: {}, secret_access_key: {}}}\n",
        env("S3_ENDPOINT"),
        std::process::id(),
        env("S3_ACCESS"),
        env("S3_SECRET")
    );
    let mut s3 = Config::from_yaml(&yaml, dir.path(), "s3 config").expect("the S3 config");
    s3.schema = schema();
    let mut posix = Config::embedded(dir.path());
    posix.schema = schema();
    posix.roots = vec![Root::new(dir.path())];

    let t = Instant::now();
    for config in [&s3, &posix] {
        let fs = FieldStore::open(config.clone()).expect("open");
        for f in 0..flushes {
            for i in 0..per {
                let spec = Spec {
                    date: 20240101,
                    time: 0,
                    ty: "pf",
                    levtype: "pl",
                    step: f as u32,
                    number: Some((i / 10) as u32),
                    levelist: Some(100 * (i % 10) as u32),
                    param: 130,
                };
                fs.archive(&spec.key("lst1"), b"GRIB-0123456789-7777")
                    .expect("archive");
            }
            fs.flush().expect("flush");
        }
    }
    let n = flushes * per;
    println!(
        "{n} fields in {flushes} flushes written to both in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let req: Request = "class=od,expver=lst1".parse().expect("a request");
    let list = |fs: &FieldStore| {
        let t = Instant::now();
        let got = fs.list(&req, ListOptions::default()).expect("list").len() as u64;
        assert_eq!(got, n, "every field listed");
        t.elapsed().as_secs_f64()
    };
    // (cold, warm) seconds per repetition, S3 then POSIX, interleaved.
    let mut times = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
    for _ in 0..reps {
        for (i, config) in [&s3, &posix].into_iter().enumerate() {
            let fs = FieldStore::open(config.clone()).expect("open");
            times[i].0.push(list(&fs));
            times[i].1.push(list(&fs));
        }
    }
    let [(s3_cold, s3_warm), (px_cold, px_warm)] = times;
    let (sc, sw, pc, pw) = (
        median(s3_cold),
        median(s3_warm),
        median(px_cold),
        median(px_warm),
    );
    println!("list of {n} fields, median of {reps} (ms): catalogue, cold, warm");
    println!("s3     {:9.1} {:9.1}", sc * 1e3, sw * 1e3);
    println!("posix  {:9.1} {:9.1}", pc * 1e3, pw * 1e3);
    println!("s3/posix time: cold {:.2}x, warm {:.2}x", sc / pc, sw / pw);
}
