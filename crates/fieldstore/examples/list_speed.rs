//! Quick timing of archive/flush/list/retrieve on the POSIX backend.
//! `cargo run --release -p fieldstore --example list_speed -- ROOT N`
use std::time::Instant;

use fieldstore::{Config, FieldStore, ListOptions};

fn main() -> fieldstore::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from(args.get(1).map_or("/tmp/fs-speed", String::as_str));
    let n: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).map_err(|e| fieldstore::Error::io("root", e))?;
    let fs = FieldStore::open(Config::embedded(&root))?;
    let payload = vec![0u8; 1024];
    let t = Instant::now();
    for i in 0..n {
        let key = format!(
            "class=od,expver=0001,stream=enfo,date=20231201,time=1200,domain=g,type=pf,levtype=pl,step={},number={},levelist={},param=130",
            i % 10,
            (i / 10) % 50,
            i / 500
        );
        fs.archive(&key.parse()?, &payload)?;
    }
    let archive = t.elapsed();
    let t = Instant::now();
    fs.flush()?;
    let flush = t.elapsed();
    let reader = FieldStore::open(Config::embedded(&root))?;
    let t = Instant::now();
    let listed = reader.list(&"class=od".parse()?, ListOptions::default())?;
    let first = t.elapsed();
    let t = Instant::now();
    let mut count = 0usize;
    reader.visit(&"class=od".parse()?, ListOptions::default(), &mut |_| {
        count += 1;
        true
    })?;
    let again = t.elapsed();
    let t = Instant::now();
    let r = reader.retrieve(&"class=od,expver=1,stream=enfo,date=20231201,time=12,domain=g,type=pf,levtype=pl,step=0/to/9,number=1/to/50,levelist=1/to/10,param=130".parse()?)?;
    let found = r.len();
    let bytes = r.read_all()?.len();
    let retrieve = t.elapsed();
    println!(
        "n={n} archive {:.0}/s flush {:?} list(first) {} in {:?} = {:.0}/s; list(open) {count} in {:?} = {:.0}/s; retrieve {found} fields {bytes} B in {:?}",
        f64::from(n) / archive.as_secs_f64(),
        flush,
        listed.len(),
        first,
        listed.len() as f64 / first.as_secs_f64(),
        again,
        count as f64 / again.as_secs_f64(),
        retrieve
    );
    Ok(())
}
