//! What splitting a field's key by the schema costs: once per archived
//! field, before anything is written.
//!
//! Keys: an ensemble member on pressure levels and an operational surface
//! field, split by ECMWF's schema (the ensemble's chain is its 32nd dataset
//! rule: every rule before it is tried first), and the hammer's key by the
//! hammer's schema; and a writer's run of keys (`ecmwf/enfo-pl-run`: the
//! ensemble member's 4 steps × 10 levels × 5 parameters, one after
//! another, as a model's I/O server archives them, and `ecmwf/oper-sfc-run`,
//! 41 steps × 5 surface parameters: the last chain's shortcut is taken when
//! the rules before it do not look at what changed, `schema/split.rs`).
//! `cargo bench -p fieldstore-core --bench split`; results in
//! `docs/benchmarks.md` ("Splitting keys").
#![allow(missing_docs)] // criterion's macros generate undocumented items

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use fieldstore_core::key::Key;
use fieldstore_core::schema::Schema;

const ENSEMBLE: &str = "class=od,expver=0001,stream=enfo,date=20231201,time=1200,domain=g,\
                        type=pf,levtype=pl,number=13,levelist=500,step=6,param=130";
const SURFACE: &str = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,\
                       type=fc,levtype=sfc,step=6,param=167";
const HAMMER: &str = "class=od,expver=xxxx,stream=enfo,date=20231201,time=0000,type=ef,\
                      levtype=pl,step=6,number=1,levelist=10,param=130";

fn split(c: &mut Criterion) {
    let ecmwf = Schema::ecmwf();
    let hammer = Schema::parse(
        "hammer.schema",
        include_str!("../../../tests/fixtures/schema/hammer.schema"),
    )
    .expect("the hammer schema parses");
    for (name, schema, text) in [
        ("ecmwf/enfo-pl", &ecmwf, ENSEMBLE),
        ("ecmwf/oper-sfc", &ecmwf, SURFACE),
        ("hammer/oper-ml", &hammer, HAMMER),
    ] {
        let key: Key = text.parse().expect("a key");
        schema.split(&key).unwrap_or_else(|e| panic!("{name}: {e}"));
        c.bench_function(&format!("split/{name}"), |b| {
            b.iter(|| schema.split(black_box(&key)).expect("splits"))
        });
    }
    let mut ensemble = Vec::new();
    for step in [0, 6, 12, 18] {
        for level in [1000, 925, 850, 700, 500, 400, 300, 250, 200, 100] {
            for param in [130, 131, 132, 133, 157] {
                let text = ENSEMBLE
                    .replace("levelist=500", &format!("levelist={level}"))
                    .replace("step=6", &format!("step={step}"))
                    .replace("param=130", &format!("param={param}"));
                ensemble.push(text.parse::<Key>().expect("a key"));
            }
        }
    }
    let mut surface = Vec::new();
    for step in (0..=240).step_by(6) {
        for param in [167, 165, 166, 151, 228] {
            let text = SURFACE
                .replace("step=6", &format!("step={step}"))
                .replace("param=167", &format!("param={param}"));
            surface.push(text.parse::<Key>().expect("a key"));
        }
    }
    for (name, run) in [("enfo-pl-run", &ensemble), ("oper-sfc-run", &surface)] {
        let mut next = run.iter().cycle();
        c.bench_function(&format!("split/ecmwf/{name}"), |b| {
            b.iter(|| {
                let key = next.next().expect("a cycle never ends");
                ecmwf.split(black_box(key)).expect("splits")
            })
        });
    }
}

criterion_group!(benches, split);
criterion_main!(benches);
