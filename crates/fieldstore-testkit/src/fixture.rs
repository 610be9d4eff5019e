//! The content of the backends' checked-in format fixtures (DAOS, RADOS,
//! S3; the POSIX one, `crates/fieldstore/tests/format_v1.rs`, which this
//! crate cannot serve, holds the same): what is written into it, and the
//! check that a build still reads it exactly. One content for every medium, so that their fixtures
//! say the same thing and a change that breaks one reading is seen the
//! same way everywhere.
//!
//! Three steps of two params under [`SCHEMA`]; step 12 archived twice (the
//! second flush replaces it); a collocation archived, then wiped.

use fieldstore::{FieldStore, Key, ListOptions, Request, Schema, WipeOptions};

/// The fixtures' schema.
pub const SCHEMA: &str = "[ class, expver, stream, date, time [ type, levtype [ step, param ]]]";

/// [`SCHEMA`], parsed.
///
/// # Panics
/// Never: the text is fixed.
pub fn schema() -> Schema {
    Schema::parse("fixture", SCHEMA).expect("the fixtures' schema")
}

/// The fields a fixture holds, each with the bytes it reads.
pub fn fields() -> Vec<(Key, Vec<u8>)> {
    let mut out = Vec::new();
    for step in [0, 6, 12] {
        for param in [130, 167] {
            let key: Key = format!(
                "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=fc,levtype=sfc,step={step},param={param}"
            )
            .parse()
            .expect("a key");
            let version = if step == 12 { 2 } else { 1 };
            let data = format!("field {key} version {version}").into_bytes();
            out.push((key, data));
        }
    }
    out
}

/// The field of the wiped collocation: a fixture must not show it.
pub fn wiped() -> Key {
    "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=an,levtype=sfc,step=0,param=130"
        .parse()
        .expect("a key")
}

/// Write the fixture's content through `fs`: every field at version 1,
/// step 12 again at version 2, the collocation of [`wiped`], then its wipe.
///
/// # Panics
/// If any step fails.
pub fn write(fs: &FieldStore) {
    for (key, data) in fields() {
        let first = String::from_utf8(data)
            .expect("text")
            .replace("version 2", "version 1");
        fs.archive(&key, first.as_bytes()).expect("archive");
    }
    fs.flush().expect("flush");
    for (key, data) in fields()
        .into_iter()
        .filter(|(k, _)| k.get("step") == Some("12"))
    {
        fs.archive(&key, &data).expect("archive");
    }
    fs.flush().expect("flush");
    fs.archive(&wiped(), b"wiped").expect("archive");
    fs.flush().expect("flush");
    let request: Request =
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=an,levtype=sfc"
            .parse()
            .expect("a request");
    let options = WipeOptions {
        doit: true,
        ..Default::default()
    };
    fs.wipe(&request, options).expect("wipe");
}

/// Check that `fs` lists exactly the fixture's fields and reads each one's
/// bytes, and not the wiped one; `what` names the fixture in messages.
///
/// # Panics
/// On any difference.
pub fn check_exactly(fs: &FieldStore, what: &str) {
    let listed = fs
        .list(
            &"class=od".parse().expect("a request"),
            ListOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{what}: list: {e}"));
    let mut got: Vec<String> = listed.iter().map(|e| e.full_key().to_string()).collect();
    let mut want: Vec<String> = fields().iter().map(|(k, _)| k.to_string()).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "{what}: the listing");
    for (key, data) in &fields() {
        let got = fs
            .retrieve(&Request::from_key(key))
            .and_then(|r| r.read_all())
            .unwrap_or_else(|e| panic!("{what}: retrieve {key}: {e}"));
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(data),
            "{what}: {key}"
        );
    }
    let gone = fs
        .retrieve(&Request::from_key(&wiped()))
        .and_then(|r| r.read_all())
        .unwrap_or_else(|e| panic!("{what}: retrieve the wiped field: {e}"));
    assert!(gone.is_empty(), "{what}: the wiped field is back");
}

/// Rewrite the header of the framed record at the start of `record` to
/// `version` and type `kind`, its CRC-32C recomputed (the 20-byte header of
/// `fieldstore_core::record::Framing`: magic, version, type, length, payload
/// CRC, header CRC). The fixture tests make a version-1 store from a
/// version-2 one this way, and a store of a version no build reads.
///
/// # Panics
/// If `record` is shorter than a header.
pub fn set_header(record: &mut [u8], version: u16, kind: u16) {
    record[4..6].copy_from_slice(&version.to_le_bytes());
    record[6..8].copy_from_slice(&kind.to_le_bytes());
    let crc = crc32c::crc32c(&record[..16]);
    record[16..20].copy_from_slice(&crc.to_le_bytes());
}

/// The header a version-2 record of type `kind` had at version 1, by
/// `older` — (version 1's number, today's number) per type, as the test
/// keeps it apart from the code it tests.
///
/// # Panics
/// If `version` is not 2, or `kind` has no version-1 number.
pub fn as_version_1(older: &[(u16, u16)], version: u16, kind: u16) -> (u16, u16) {
    assert_eq!(version, 2, "a record of version {version}");
    let (old, _) = older
        .iter()
        .find(|(_, now)| *now == kind)
        .unwrap_or_else(|| panic!("record type {kind} has no version-1 number"));
    (1, *old)
}
