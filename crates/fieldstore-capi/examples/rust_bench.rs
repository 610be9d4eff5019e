//! The work of `bench/capi/capi_bench.c`, done through the Rust handle
//! instead of the C API, for the comparison in `docs/benchmarks.md`: the
//! same phases, keys, sizes, flushes and reads, the same JSON line.
//!
//! ```text
//! rust_bench ROOT SCHEMA SIZE NSTEPS NLEVELS NPARAMS LABEL PHASE
//! ```
//! Built and run by `bench/capi/run.sh`, one phase per process.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use fieldstore::{Config, FieldStore, Key, ListOptions, Request};

fn cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

struct Run {
    label: String,
    size: usize,
    fields: usize,
    start: Instant,
    cpu: f64,
}

impl Run {
    fn report(&self, phase: &str, fields: usize, bytes: usize) {
        let seconds = self.start.elapsed().as_secs_f64();
        self.print(phase, fields, bytes, seconds, cpu() - self.cpu);
    }

    fn report_times(&self, phase: &str, fields: usize, seconds: f64, cpu_seconds: f64) {
        self.print(phase, fields, 0, seconds, cpu_seconds);
    }

    fn print(&self, phase: &str, fields: usize, bytes: usize, seconds: f64, cpu_seconds: f64) {
        println!(
            "{{\"impl\": \"{}\", \"size\": {}, \"fields\": {}, \"phase\": \"{}\", \"seconds\": {:.6}, \
             \"cpu_seconds\": {:.6}, \"fields_per_s\": {:.1}, \"mib_per_s\": {:.2}}}",
            self.label,
            self.size,
            fields,
            phase,
            seconds,
            cpu_seconds,
            fields as f64 / seconds,
            bytes as f64 / seconds / 1048576.0
        );
        assert_eq!(fields, self.fields, "{phase}");
    }
}

fn values(n: usize, first: usize, stride: usize) -> String {
    (0..n)
        .map(|i| (first + i * stride).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

const FIXED: [(&str, &str); 7] = [
    ("class", "od"),
    ("expver", "0001"),
    ("stream", "oper"),
    ("date", "20240101"),
    ("time", "0000"),
    ("type", "fc"),
    ("levtype", "pl"),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 9 {
        eprintln!("usage: rust_bench ROOT SCHEMA SIZE NSTEPS NLEVELS NPARAMS LABEL PHASE");
        std::process::exit(2);
    }
    let (root, schema, phase) = (&args[1], &args[2], args[8].as_str());
    let size: usize = args[3].parse()?;
    let (nsteps, nlevels, nparams): (usize, usize, usize) =
        (args[4].parse()?, args[5].parse()?, args[6].parse()?);
    let yaml = format!(
        "{{type: local, engine: toc, schema: '{schema}', spaces: [{{handler: Default, roots: [{{path: '{root}'}}]}}]}}"
    );
    let mut data = vec![0u8; size];
    let mut x: u64 = 88172645463325252;
    for b in data.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let mut request = Request::from_pairs(FIXED.iter().map(|(k, v)| (*k, [*v])))?;
    if phase == "retrieve" {
        let more = format!(
            "step={},levelist={},param={}",
            values(nsteps, 0, 1),
            values(nlevels, 100, 10),
            values(nparams, 1, 1)
        );
        for (kw, vs) in more.parse::<Request>()?.iter() {
            request.set(kw, vs.clone());
        }
    }

    // The time includes opening the handle.
    let run = Run {
        label: args[7].clone(),
        size,
        fields: nsteps * nlevels * nparams,
        start: Instant::now(),
        cpu: cpu(),
    };
    let fs = FieldStore::open(Config::from_yaml(&yaml, Path::new("."), "bench")?)?;
    match phase {
        "archive" => {
            let mut key = Key::from_pairs(FIXED)?;
            let mut archived = 0usize;
            for s in 0..nsteps {
                key.set("step", s.to_string())?;
                for l in 0..nlevels {
                    key.set("levelist", (100 + 10 * l).to_string())?;
                    for p in 0..nparams {
                        key.set("param", (1 + p).to_string())?;
                        data[..8].copy_from_slice(&(archived as u64).to_le_bytes());
                        fs.archive(&key, &data)?;
                        archived += 1;
                    }
                }
                fs.flush()?;
            }
            run.report("archive+flush", archived, archived * size);
        }
        "list" | "list+keys" => {
            let keys = phase == "list+keys";
            let mut listed = 0usize;
            let mut total = 0u64;
            let mut metadata = 0usize;
            for e in fs.list(&request, ListOptions::default())? {
                total += e.location.as_ref().map_or(0, |l| l.length);
                if keys {
                    for level in [e.dataset.key(), e.collocation.key(), e.element.key()] {
                        let mut pairs: Vec<(&str, &str)> = level.iter().collect();
                        pairs.sort_unstable();
                        metadata += pairs.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
                    }
                }
                listed += 1;
            }
            run.report(phase, listed, 0);
            assert_eq!(total, (run.fields * size) as u64);
            assert!(!keys || metadata > 0);
        }
        "list-warm" => {
            // As capi_bench.c's list-warm: ten listings with the one handle,
            // the median of the last nine.
            let listing = || -> Result<usize, Box<dyn std::error::Error>> {
                let mut total = 0u64;
                let elements = fs.list(&request, ListOptions::default())?;
                let listed = elements.len();
                for e in elements {
                    total += e.location.as_ref().map_or(0, |l| l.length);
                }
                assert_eq!(total, (run.fields * size) as u64);
                Ok(listed)
            };
            let mut listed = listing()?;
            let (mut wall, mut cpus) = (Vec::new(), Vec::new());
            for _ in 0..9 {
                let (t, c) = (Instant::now(), cpu());
                listed = listing()?;
                wall.push(t.elapsed().as_secs_f64());
                cpus.push(cpu() - c);
            }
            wall.sort_by(f64::total_cmp);
            cpus.sort_by(f64::total_cmp);
            run.report_times("list (warm)", listed, wall[4], cpus[4]);
        }
        "retrieve" => {
            let mut reader = fs.retrieve(&request)?;
            let mut read_bytes = 0usize;
            let mut fields_read = 0usize;
            loop {
                let mut n = 0;
                while n < size {
                    let got = reader.read(&mut data[n..])?;
                    if got == 0 {
                        break;
                    }
                    n += got;
                }
                if n == 0 {
                    break;
                }
                read_bytes += n;
                fields_read += 1;
            }
            run.report("retrieve", fields_read, read_bytes);
            assert_eq!(read_bytes, run.fields * size);
        }
        other => return Err(format!("unknown phase {other}").into()),
    }
    Ok(())
}
