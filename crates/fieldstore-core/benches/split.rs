//! What splitting a field's key by the schema costs: once per archived
//! field, before anything is written.
//!
//! Keys: an ensemble member on pressure levels and an operational surface
//! field, split by ECMWF's schema (the ensemble's chain is its 32nd dataset
//! rule: every rule before it is tried first), and the hammer's key by the
//! hammer's schema. `cargo bench -p fieldstore-core --bench split`;
//! results in `docs/benchmarks.md` ("Splitting keys").
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
}

criterion_group!(benches, split);
criterion_main!(benches);
