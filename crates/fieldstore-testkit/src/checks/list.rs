//! Clause 6: list and axes over partial requests, at each depth.

use std::collections::BTreeSet;

use fieldstore::{FieldStore, Key, Level};

use super::{braced_levels, opened};
use crate::support::{
    archive_payload, axes, axes_of, list, list_lines, must, request, Spec, Stored,
};
use crate::Open;

const DEPTHS: [Level; 3] = [Level::Dataset, Level::Collocation, Level::Element];

/// The grid both checks archive: 2 dates × 2 times (4 datasets), each with
/// collocations `type=pf,levtype=pl` (numbers 1, 2; levels 500, 850; params
/// 130, 131), `type=cf,levtype=pl` (number 0) and `type=cf,levtype=sfc`
/// (number 0, no levelist, params 167, 165), steps 0, 6, 12, 18: 224
/// fields. Each collocation holds the full product of its values, so
/// pruning by per-keyword axes is exact.
fn grid() -> Vec<Spec> {
    let mut out = Vec::new();
    for date in [20231201, 20231202] {
        for time in [0, 1200] {
            let colls: [Collocation; 3] = [
                ("pf", "pl", &[1, 2], &[Some(500), Some(850)], &[130, 131]),
                ("cf", "pl", &[0], &[Some(500), Some(850)], &[130, 131]),
                ("cf", "sfc", &[0], &[None], &[167, 165]),
            ];
            for (ty, levtype, numbers, levels, params) in colls {
                for step in [0, 6, 12, 18] {
                    for &number in numbers {
                        for &levelist in levels {
                            for &param in params {
                                out.push(Spec {
                                    date,
                                    time,
                                    ty,
                                    levtype,
                                    step,
                                    number: Some(number),
                                    levelist,
                                    param,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn populate(open: Open<'_>, x: &str) -> (FieldStore, Vec<(Spec, Stored)>) {
    let w = opened(open, "writer");
    let stored: Vec<(Spec, Stored)> = grid()
        .into_iter()
        .map(|s| {
            let st = archive_payload(&w, &s.key(x), 1, 30, 200);
            (s, st)
        })
        .collect();
    must(w.flush(), "flush of the grid");
    drop(w);
    (opened(open, "reader"), stored)
}

/// `type`, `levtype`, numbers, levels, params.
type Collocation = (
    &'static str,
    &'static str,
    &'static [u32],
    &'static [Option<u32>],
    &'static [u32],
);

type Predicate = fn(&Spec) -> bool;

/// Partial requests (after `class=od,expver=…`), what they select, and the
/// depths at which to list them. Depth 1 is only asked where every dataset
/// the request's level-1 keywords select holds a selected field.
fn cases() -> Vec<(&'static str, Predicate, &'static [Level])> {
    vec![
        ("", |_| true, &DEPTHS),
        ("date=20231202", |s| s.date == 20231202, &DEPTHS),
        (
            "date=20231201/20231202,time=12",
            |s| s.time == 1200,
            &DEPTHS,
        ),
        ("date=all,time=all,stream=enfo", |_| true, &DEPTHS),
        ("type=cf", |s| s.ty == "cf", &DEPTHS),
        ("levtype=sfc", |s| s.levtype == "sfc", &DEPTHS[1..]),
        (
            "step=0/to/12/by/6,param=131",
            |s| s.step <= 12 && s.param == 131,
            &DEPTHS[1..],
        ),
        (
            "type=pf,number=2,levelist=850/500,step=6/to/18/by/6",
            |s| s.ty == "pf" && s.number == Some(2) && s.step >= 6,
            &DEPTHS[1..],
        ),
        (
            "date=20231201,time=0000,type=cf,levtype=pl,step=18,number=0,levelist=850,param=130",
            |s| {
                s.date == 20231201
                    && s.time == 0
                    && s.ty == "cf"
                    && s.levtype == "pl"
                    && s.step == 18
                    && s.levelist == Some(850)
                    && s.param == 130
            },
            &DEPTHS,
        ),
        (
            "param=130/167",
            |s| s.param == 130 || s.param == 167,
            &DEPTHS[1..],
        ),
        ("levelist=500", |s| s.levelist == Some(500), &DEPTHS[1..]),
        (
            "number=1/to/2",
            |s| s.number.is_some_and(|n| n >= 1),
            &DEPTHS[1..],
        ),
        ("date=20231203", |_| false, &DEPTHS),
        ("step=7", |_| false, &DEPTHS[1..]),
        ("type=fc", |_| false, &DEPTHS[1..]),
    ]
}

fn full_request(x: &str, rest: &str) -> fieldstore::Request {
    if rest.is_empty() {
        request(&format!("class=od,expver={x}"))
    } else {
        request(&format!("class=od,expver={x},{rest}"))
    }
}

/// Clause 6: list answers partial requests — keywords left out, lists of
/// values, ranges with and without `by`, `all`, non-canonical spellings —
/// at the dataset, collocation and element depth, each entry once, exactly
/// the entries holding a selected field; element entries carry locations
/// that read back the archived bytes.
pub fn list_partial_requests(open: Open<'_>) {
    let x = "lst1";
    let (fs, stored) = populate(open, x);
    for (rest, pred, depths) in cases() {
        let req = full_request(x, rest);
        for &depth in depths {
            let d = depth as usize - 1;
            let want: BTreeSet<String> = stored
                .iter()
                .filter(|(s, _)| pred(s))
                .map(|(_, st)| braced_levels(&fs, &st.key)[d].clone())
                .collect();
            let want: Vec<String> = want.into_iter().collect();
            let got = list_lines(&fs, &req, depth);
            assert_eq!(got, want, "list {req} at depth {}: wrong entries", d + 1);
        }
    }
    // Element entries carry their location and nothing above them does.
    let req = full_request(x, "");
    let mut buf = Vec::new();
    let entries = list(&fs, &req, Level::Element, false);
    assert_eq!(entries.len(), stored.len(), "list {req}: number of fields");
    for e in &entries {
        let k = e.full_key().to_string();
        let (_, st) = stored
            .iter()
            .find(|(_, st)| st.canonical == k)
            .unwrap_or_else(|| panic!("list {req} shows {k}, which was not archived"));
        let loc = e
            .location
            .as_ref()
            .unwrap_or_else(|| panic!("list {req} at depth 3: no location for {k}"));
        must(
            fs.store().read(loc, &mut buf),
            format_args!("reading {loc} of {k}"),
        );
        assert!(
            buf == st.data,
            "list {req}: the location of {k} ({loc}) reads other bytes"
        );
    }
    for depth in [Level::Dataset, Level::Collocation] {
        for e in list(&fs, &req, depth, false) {
            assert!(
                e.location.is_none() && e.element.is_empty(),
                "list {req} at {depth:?} gives element-level data: {e:?}"
            );
        }
    }
}

/// Clause 6: axes give, per keyword, the values present among what a
/// partial request selects, down to the dataset, collocation or element
/// level.
pub fn axes_partial_requests(open: Open<'_>) {
    let x = "axs1";
    let (fs, stored) = populate(open, x);
    for (rest, pred, depths) in cases() {
        let req = full_request(x, rest);
        for &depth in depths {
            let keys: Vec<Key> = stored
                .iter()
                .filter(|(s, _)| pred(s))
                .map(|(_, st)| {
                    let s = must(fs.schema().split(&st.key), "split");
                    match depth {
                        Level::Dataset => s.dataset.key().clone(),
                        Level::Collocation => Key::join([s.dataset.key(), s.collocation.key()]),
                        Level::Element => s.full_key(),
                    }
                })
                .collect();
            let want = axes_of(&keys);
            let got = axes(&fs, &req, depth);
            assert_eq!(got, want, "axes {req} at depth {}", depth as usize);
        }
    }
}
