//! Each dataset is read with the schema it was created under (stored with
//! it), as FDB5 does: after the configured schema changes, a dataset
//! written under the old one stays listable and retrievable and takes new
//! fields in its old layout; new datasets take the new one.

use fieldstore::{FieldStore, Key, ListOptions, Request, Result};

use crate::support::must;

/// `step` in the element key.
pub const SCHEMA_OLD: &str =
    "[ class, expver, stream, date, time, domain?\n  [ type, levtype\n    [ step, levelist?, param ]]]\n";
/// `step` moved up to the collocation key.
pub const SCHEMA_NEW: &str =
    "[ class, expver, stream, date, time, domain?\n  [ type, levtype, step\n    [ levelist?, param ]]]\n";

/// Opens a handle onto the backend under test configured with the schema
/// whose text it is given (every call onto the same backend).
pub type OpenWithSchema<'a> = &'a (dyn Fn(&str) -> Result<FieldStore> + Sync);

fn key(date: u32, step: u32) -> Key {
    must(
        format!("class=od,expver=0s01,stream=oper,date={date},time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167")
            .parse(),
        "the check's key",
    )
}

fn listing(fs: &FieldStore, request: &str) -> Vec<String> {
    let request: Request = must(request.parse(), "the check's request");
    must(fs.list(&request, ListOptions::default()), "list")
        .iter()
        .map(|e| format!("{}{}", e.collocation.braced(), e.element.braced()))
        .collect()
}

/// A dataset created under [`SCHEMA_OLD`] keeps its layout when handles
/// open with [`SCHEMA_NEW`]: both handles list and retrieve both datasets.
pub fn datasets_keep_their_schema(open_with: OpenWithSchema<'_>) {
    let old = must(
        open_with(SCHEMA_OLD),
        "opening a handle with the old schema",
    );
    must(old.archive(&key(20231201, 0), b"d1 step 0"), "archive");
    must(old.flush(), "flush");
    let new = must(
        open_with(SCHEMA_NEW),
        "opening a handle with the new schema",
    );
    must(
        new.archive(&key(20231201, 6), b"d1 step 6"),
        "archive into the old dataset",
    );
    must(
        new.archive(&key(20231202, 0), b"d2 step 0"),
        "archive into a new dataset",
    );
    must(new.flush(), "flush");
    for (fs, who) in [(&new, "new"), (&old, "old")] {
        assert_eq!(
            listing(fs, "class=od,expver=0s01,date=20231201"),
            [
                "{type=fc,levtype=sfc}{step=6,param=167}",
                "{type=fc,levtype=sfc}{step=0,param=167}",
            ],
            "the old dataset, listed through the {who} schema's handle, in its own layout"
        );
        assert_eq!(
            listing(fs, "class=od,expver=0s01,date=20231202"),
            ["{type=fc,levtype=sfc,step=0}{param=167}"],
            "the new dataset, listed through the {who} schema's handle, in the new layout"
        );
        let request: Request = must(
            "class=od,expver=0s01,stream=oper,date=20231201/20231202,time=1200,domain=g,type=fc,levtype=sfc,step=6/0,param=167"
                .parse(),
            "the check's request",
        );
        let reader = must(fs.retrieve(&request), "retrieve");
        assert_eq!(
            must(reader.read_all(), "reading what retrieve found"),
            b"d1 step 6d1 step 0d2 step 0",
            "both datasets retrieved in request order through the {who} schema's handle"
        );
    }
}
