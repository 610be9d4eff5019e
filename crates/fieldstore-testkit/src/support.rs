//! Fixtures and helpers shared by the checks, the test files and the worker.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use fieldstore::backends::memory::MemoryBackend;
use fieldstore::{
    Axes, Config, FieldStore, Key, Level, ListElement, ListOptions, Request, Result, Root, Schema,
};

/// fdb-hammer's schema (`tests/fixtures/schema/hammer.schema`):
/// `[ class, expver, stream, date, time [ type, levtype [ step, number?, levelist?, param ]]]`.
pub const HAMMER_SCHEMA: &str = include_str!("../../../tests/fixtures/schema/hammer.schema");

/// The schema the checks' keys are written for ([`HAMMER_SCHEMA`]).
///
/// # Panics
/// Never: the schema is a fixture that parses.
pub fn schema() -> Schema {
    Schema::parse("hammer.schema", HAMMER_SCHEMA).expect("the hammer schema fixture parses")
}

/// A factory of handles onto one fresh in-memory backend: every handle it
/// opens sees what the others flushed, like processes sharing a root.
pub fn memory_factory(schema: Schema) -> impl Fn() -> Result<FieldStore> + Send + Sync {
    let backend = MemoryBackend::new();
    move || {
        Ok(FieldStore::with_backends(
            Config::memory(schema.clone()),
            Arc::new(backend.catalogue()),
            Arc::new(backend.store()),
        ))
    }
}

/// A POSIX configuration (`engine: toc`, `store: file`) with one root.
pub fn posix_config(root: &Path, schema: Schema) -> Config {
    let mut config = Config::embedded(root);
    config.schema = schema;
    config.roots = vec![Root::new(root)];
    config.source = format!("test store at {}", root.display());
    config
}

/// Unwrap a fieldstore result, failing the check with `what` and the error.
#[track_caller]
pub fn must<T, E: std::fmt::Display>(
    r: std::result::Result<T, E>,
    what: impl std::fmt::Display,
) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: unexpected error: {e}"),
    }
}

/// Parse a key written by a check.
#[track_caller]
pub fn key(text: &str) -> Key {
    text.parse()
        .unwrap_or_else(|e| panic!("test key {text:?} does not parse: {e}"))
}

/// Parse a request written by a check.
#[track_caller]
pub fn request(text: &str) -> Request {
    text.parse()
        .unwrap_or_else(|e| panic!("test request {text:?} does not parse: {e}"))
}

/// The canonical full key of `key` under `fs`'s schema, as retrieve and list
/// report it (`Schema::split(key).full_key()`).
#[track_caller]
pub fn canonical(fs: &FieldStore, key: &Key) -> String {
    must(fs.schema().split(key), format_args!("splitting {key}"))
        .full_key()
        .to_string()
}

/// A field of the checks' datasets, in the hammer schema's terms. Absent
/// optional keywords are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Spec {
    /// `date`, `YYYYMMDD`.
    pub date: u32,
    /// `time`, `HHMM`.
    pub time: u32,
    /// `type`.
    pub ty: &'static str,
    /// `levtype`.
    pub levtype: &'static str,
    /// `step`, hours.
    pub step: u32,
    /// `number`.
    pub number: Option<u32>,
    /// `levelist`.
    pub levelist: Option<u32>,
    /// `param`.
    pub param: u32,
}

/// The conformance checks' pressure-level field: `type=pf,levtype=pl`, member 1,
/// level 500, parameter 130, step 0 of 2023-12-01 12 UTC.
pub const PL: Spec = Spec {
    date: 20231201,
    time: 1200,
    ty: "pf",
    levtype: "pl",
    step: 0,
    number: Some(1),
    levelist: Some(500),
    param: 130,
};

/// The conformance checks' surface field: `type=cf,levtype=sfc`, parameter 167, at the
/// same date and time as [`PL`].
pub const SFC: Spec = Spec {
    date: 20231201,
    time: 1200,
    ty: "cf",
    levtype: "sfc",
    step: 0,
    number: None,
    levelist: None,
    param: 167,
};

impl Spec {
    /// `class=od,expver=<expver>,stream=enfo,date=…,time=…,type=pf,levtype=pl,step=6,number=1,levelist=500,param=130`.
    pub fn key(&self, expver: &str) -> Key {
        let mut s = format!(
            "class=od,expver={expver},stream=enfo,date={},time={:04},type={},levtype={},step={}",
            self.date, self.time, self.ty, self.levtype, self.step
        );
        if let Some(n) = self.number {
            s.push_str(&format!(",number={n}"));
        }
        if let Some(l) = self.levelist {
            s.push_str(&format!(",levelist={l}"));
        }
        s.push_str(&format!(",param={}", self.param));
        key(&s)
    }

    /// The request naming this spec's dataset in family `expver`.
    pub fn dataset_request(&self, expver: &str) -> Request {
        request(&format!(
            "class=od,expver={expver},stream=enfo,date={},time={:04}",
            self.date, self.time
        ))
    }

    /// The request naming this spec's collocation (its `type` and
    /// `levtype`) of its dataset in family `expver`: what a wipe of that
    /// collocation asks.
    pub fn collocation_request(&self, expver: &str) -> Request {
        request(&format!(
            "class=od,expver={expver},stream=enfo,date={},time={:04},type={},levtype={}",
            self.date, self.time, self.ty, self.levtype
        ))
    }
}

/// A field archived by a check: its key, canonical key and bytes.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The key as archived.
    pub key: Key,
    /// The canonical full key.
    pub canonical: String,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Archive a self-verifying payload (version `version`, length between
/// `min_len` and `max_len`) for `key` through `fs`.
#[track_caller]
pub fn archive_payload(
    fs: &FieldStore,
    key: &Key,
    version: u32,
    min_len: usize,
    max_len: usize,
) -> Stored {
    let canonical = canonical(fs, key);
    let len = crate::payload::length_for(&canonical, version, min_len, max_len);
    let data = crate::payload::make(&canonical, version, len);
    must(fs.archive(key, &data), format_args!("archiving {key}"));
    Stored {
        key: key.clone(),
        canonical,
        data,
    }
}

/// Retrieve `request` and return `(canonical key, bytes)` per field, in the
/// order retrieve yields them.
#[track_caller]
pub fn retrieve(fs: &FieldStore, request: &Request) -> Vec<(String, Vec<u8>)> {
    let mut reader = must(fs.retrieve(request), format_args!("retrieve {request}"));
    let mut out = Vec::new();
    loop {
        let mut buf = Vec::new();
        match must(
            reader.next_field(&mut buf),
            format_args!("reading the fields of retrieve {request}"),
        ) {
            Some(k) => out.push((k.to_string(), buf)),
            None => return out,
        }
    }
}

/// Retrieve one key: its bytes, or `None` if retrieve yields nothing.
/// Fails the check if retrieve yields more than one field.
#[track_caller]
pub fn retrieve_one(fs: &FieldStore, key: &Key) -> Option<Vec<u8>> {
    let r = Request::from_key(key);
    let mut got = retrieve(fs, &r);
    assert!(
        got.len() <= 1,
        "retrieve of the single key {key} yielded {} fields: {:?}",
        got.len(),
        got.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );
    got.pop().map(|(_, d)| d)
}

/// `list` with the given depth and duplicates setting.
#[track_caller]
pub fn list(
    fs: &FieldStore,
    request: &Request,
    depth: Level,
    duplicates: bool,
) -> Vec<ListElement> {
    must(
        fs.list(request, ListOptions { depth, duplicates }),
        format_args!("list {request} (depth {depth:?}, duplicates {duplicates})"),
    )
}

/// The `{…}{…}{…}` lines of [`list`], sorted.
#[track_caller]
pub fn list_lines(fs: &FieldStore, request: &Request, depth: Level) -> Vec<String> {
    let mut v: Vec<String> = list(fs, request, depth, false)
        .iter()
        .map(ListElement::braced)
        .collect();
    v.sort();
    v
}

/// `axes`, with absent optional keywords (the empty value) left out: the
/// contract speaks of values present, and whether a backend reports an
/// absent keyword as the empty value is not part of it.
#[track_caller]
pub fn axes(fs: &FieldStore, request: &Request, depth: Level) -> Axes {
    let mut a = must(
        fs.axes(request, depth),
        format_args!("axes {request} (depth {depth:?})"),
    );
    for values in a.values_mut() {
        values.remove("");
    }
    a.retain(|_, v| !v.is_empty());
    a
}

/// The axes of a set of keys (every keyword's values, empty values left
/// out).
pub fn axes_of<'a>(keys: impl IntoIterator<Item = &'a Key>) -> Axes {
    let mut out: Axes = BTreeMap::new();
    for k in keys {
        for (kw, v) in k.iter().filter(|(_, v)| !v.is_empty()) {
            out.entry(kw.to_string()).or_default().insert(v.to_string());
        }
    }
    out
}
