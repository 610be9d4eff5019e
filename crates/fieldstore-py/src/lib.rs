//! `fieldstore._fieldstore`: the native half of the Python package
//! `fieldstore`.
//!
//! The public API (pyfdb's: `FDB`, `DataHandle`, `ListElement`, `IndexAxis`,
//! `URI`) is the pure-Python façade in `python/fieldstore/`; this module gives
//! it a handle (`Store`), list results (`Entry`) and a reader of
//! retrieved fields (`Reader`). Every call that does I/O releases the GIL.
//! Errors become the exception classes of `fieldstore.errors`, chosen by
//! [`ErrorKind`].
//!
//! Nothing here is public API: the names may change with the façade.

#[cfg(feature = "grib")]
mod arrays;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use fieldstore::{
    Config, Control, Error, ErrorKind, FieldLocation, FieldStore, FieldStream, Key, Level,
    ListElement, ListOptions, Locks, Operation, Request, Since, WatchOptions, WipeOptions,
};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyType};

/// The exception class of `fieldstore.errors` for an error kind.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidInput => "InvalidInputError",
        ErrorKind::InvalidConfig => "InvalidConfigError",
        ErrorKind::NotFound => "NotFoundError",
        ErrorKind::PermissionDenied => "PermissionDeniedError",
        ErrorKind::StorageFull => "StorageFullError",
        ErrorKind::Unavailable => "UnavailableError",
        ErrorKind::Corrupt => "CorruptDataError",
        ErrorKind::Locked => "LockedError",
        ErrorKind::TimedOut => "TimedOutError",
        ErrorKind::Unsupported => "UnsupportedError",
        ErrorKind::Io => "FieldStoreIOError",
        _ => "InternalError",
    }
}

/// A fieldstore error as the Python exception of its kind.
fn to_py(py: Python<'_>, e: &Error) -> PyErr {
    let message = e.to_string();
    let class = py
        .import("fieldstore.errors")
        .and_then(|m| m.getattr(class_name(e.kind())))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(class) => PyErr::from_type(class, (message,)),
        // The package is broken (errors.py missing): still say what failed.
        Err(_) => PyOSError::new_err(format!("{}: {message}", e.kind())),
    }
}

/// `fieldstore::Result` → `PyResult`.
trait OrRaise<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for fieldstore::Result<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, &e))
    }
}

/// A selection as the façade passes it: `(keyword, [value, …])` pairs, each
/// value possibly `/`-separated (`0/to/12/by/6`).
type Selection = Vec<(String, Vec<String>)>;

fn request(py: Python<'_>, store: &FieldStore, selection: &Selection) -> PyResult<Request> {
    let request = Request::from_pairs(selection.iter().map(|(k, v)| (k, v)))
        .map_err(|e| to_py(py, &Error::from(e)))?;
    request
        .validate(store.schema())
        .map_err(|e| to_py(py, &Error::from(e)))?;
    Ok(request)
}

fn level(level: i64) -> PyResult<Level> {
    match level {
        1 => Ok(Level::Dataset),
        2 => Ok(Level::Collocation),
        3 => Ok(Level::Element),
        other => Err(PyValueError::new_err(format!(
            "level must be 1 (datasets), 2 (collocations) or 3 (fields), not {other}"
        ))),
    }
}

/// Keys of `levels` of `e` as one dict, keywords sorted (as pyfdb returns
/// them). An empty value is an absent optional keyword.
///
/// FDB5 keeps the empty values of the dataset and collocation levels but not
/// those of the element level.
fn key_dict<'py>(
    py: Python<'py>,
    e: &ListElement,
    levels: &[Level],
) -> PyResult<Bound<'py, PyDict>> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for level in levels {
        match level {
            Level::Dataset => pairs.extend(e.dataset.iter()),
            Level::Collocation => pairs.extend(e.collocation.iter()),
            _ => pairs.extend(e.element.iter().filter(|(_, v)| !v.is_empty())),
        }
    }
    pairs.sort_unstable();
    let dict = PyDict::new(py);
    for (k, v) in pairs {
        dict.set_item(k, v)?;
    }
    Ok(dict)
}

/// An open store.
#[pyclass(module = "fieldstore._fieldstore", name = "Store", frozen)]
struct Store {
    fs: Arc<FieldStore>,
}

#[pymethods]
impl Store {
    /// Open the store `yaml` (config text, relative paths resolved against
    /// `base`) or `path` (a config file) describes, or with neither the
    /// environment's ([`environment`]: `FIELDSTORE_CONFIG`,
    /// `FIELDSTORE_ROOT`, FDB5's variables, `./fieldstore-data`).
    #[new]
    #[pyo3(signature = (yaml=None, path=None, base=None))]
    fn new(
        py: Python<'_>,
        yaml: Option<String>,
        path: Option<PathBuf>,
        base: Option<PathBuf>,
    ) -> PyResult<Self> {
        let fs = py
            .detach(|| {
                let config = match (yaml, path) {
                    (Some(text), _) => {
                        let base = base.unwrap_or_else(|| PathBuf::from("."));
                        Config::from_yaml(&text, &base, "config")?
                    }
                    (None, Some(path)) => Config::from_file(&path)?,
                    (None, None) => environment()?,
                };
                let fs = FieldStore::open(config)?;
                // Parameter names in requests and keys (`param="2t"`),
                // resolved by ecCodes' parameter database as MARS does.
                #[cfg(feature = "grib")]
                let fs = fs.with_param_names(fieldstore_grib::param_names());
                Ok::<_, fieldstore::Error>(fs)
            })
            .or_raise(py)?;
        Ok(Store { fs: Arc::new(fs) })
    }

    /// "the store looked in holds no dataset: …" when it holds none
    /// ([`FieldStore::empty_store_notice`]), for the Python layer to warn
    /// of after an answer that found nothing.
    fn empty_store_notice(&self, py: Python<'_>) -> Option<String> {
        py.detach(|| self.fs.empty_store_notice())
    }

    /// Where the configuration came from.
    fn source(&self) -> String {
        self.fs.config().source.clone()
    }

    /// The configuration in force, in FDB5's shape.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.fs.config();
        let d = PyDict::new(py);
        d.set_item(
            "type",
            if c.engine == fieldstore::Engine::Remote {
                "remote"
            } else if c.lanes.is_empty() {
                "local"
            } else {
                "select"
            },
        )?;
        d.set_item("engine", format!("{:?}", c.engine).to_lowercase())?;
        d.set_item("store", format!("{:?}", c.store).to_lowercase())?;
        let placement_spaces = if c.spaces.is_empty() {
            vec![(".*".to_string(), "Default".to_string())]
        } else {
            c.spaces
                .iter()
                .map(|s| (s.regex_text.clone(), s.handler.name().to_string()))
                .collect()
        };
        let last = placement_spaces.len() - 1;
        let spaces = PyList::empty(py);
        for (i, (regex, handler)) in placement_spaces.into_iter().enumerate() {
            let roots = PyList::empty(py);
            for r in c.roots.iter().filter(|r| r.space.min(last) == i) {
                let root = PyDict::new(py);
                root.set_item("path", r.path.display().to_string())?;
                root.set_item("writable", r.writable)?;
                root.set_item("visit", r.visit)?;
                root.set_item("retrieve", r.retrieve)?;
                root.set_item("wipe", r.wipe)?;
                roots.append(root)?;
            }
            let space = PyDict::new(py);
            space.set_item("regex", regex)?;
            space.set_item("handler", handler)?;
            space.set_item("roots", roots)?;
            spaces.append(space)?;
        }
        d.set_item("spaces", spaces)?;
        d.set_item("source", &c.source)?;
        Ok(d)
    }

    /// Archive `data` as one field under `key` (`(keyword, value)` pairs).
    fn archive(&self, py: Python<'_>, data: &[u8], key: Vec<(String, String)>) -> PyResult<()> {
        let key = Key::from_pairs(key).map_err(|e| to_py(py, &Error::from(e)))?;
        py.detach(|| self.fs.archive(&key, data)).or_raise(py)
    }

    /// Archive every GRIB message of `data` under its own MARS key, with
    /// `defaults` (`(keyword, value)` pairs) where ecCodes gives a keyword
    /// none; all or nothing. Returns the number of messages; for each
    /// message archived under the key of an earlier one (the last wins),
    /// the text saying so; and, if bytes that are not GRIB were skipped
    /// (a record header, padding, junk between messages), the warning's
    /// text and their `(start, end)` byte ranges.
    #[pyo3(signature = (data, defaults=Vec::new()))]
    fn archive_grib(
        &self,
        py: Python<'_>,
        data: &[u8],
        defaults: Vec<(String, String)>,
    ) -> PyResult<GribArchived> {
        let defaults = Key::from_pairs(defaults)
            .map_err(|e| to_py(py, &Error::from(e).context("archive defaults")))?;
        py.detach(|| archive_grib(&self.fs, data, defaults))
            .or_raise(py)
    }

    /// Values at points of the GRIB fields `selection` names
    /// (`docs/extract.md`). `kind` is `ranges` (`data`: start, end,
    /// start, end…), `indices`, `mask` (`data`: 0/1 per point) or `points`
    /// (`points`: latitude, longitude pairs). Per field, in the request's
    /// order: `(key pairs, indices, values as native-endian f64 bytes,
    /// method, for points the grid point answering each: (latitude,
    /// longitude, distance in km))`; then `(bytes read, reads, fields'
    /// bytes)`.
    #[pyo3(signature = (selection, kind, data=Vec::new(), points=Vec::new()))]
    fn extract<'py>(
        &self,
        py: Python<'py>,
        selection: Selection,
        kind: &str,
        data: Vec<u64>,
        points: Vec<(f64, f64)>,
    ) -> PyResult<Extracted<'py>> {
        let request = request(py, &self.fs, &selection)?;
        let found = py
            .detach(|| extract(&self.fs, &request, kind, data, points))
            .or_raise(py)?;
        let (fields, cost, notice) = found;
        let fields = fields
            .into_iter()
            .map(|(key, indices, values, method, nearest)| {
                let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
                (key, indices, PyBytes::new(py, &bytes), method, nearest)
            })
            .collect();
        Ok((fields, cost, notice))
    }

    /// Make everything archived durable and visible.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.fs.flush()).or_raise(py)
    }

    /// Drop everything archived and not flushed. Raises in a process
    /// forked from the one that opened the handle.
    fn discard(&self, py: Python<'_>) -> PyResult<()> {
        self.fs.discard().or_raise(py)
    }

    /// Whether something archived is not flushed yet.
    fn dirty(&self) -> bool {
        self.fs.dirty()
    }

    /// The fields `selection` names, in request order; with `wait`
    /// (seconds), once every one of them exists. With them, a notice of
    /// what the request names and the store lacks ([`notice`]), for the
    /// Python layer to warn of.
    #[pyo3(signature = (selection, wait=None))]
    fn retrieve(
        &self,
        py: Python<'_>,
        selection: Selection,
        wait: Option<f64>,
    ) -> PyResult<(Reader, Option<Notice>)> {
        let request = request(py, &self.fs, &selection)?;
        let wait = wait
            .map(|s| {
                std::time::Duration::try_from_secs_f64(s).map_err(|_| {
                    PyValueError::new_err(format!("wait={s}: not a number of seconds"))
                })
            })
            .transpose()?;
        let (reader, notice) = py
            .detach(|| {
                let reader = match wait {
                    Some(w) => self.fs.retrieve_wait(&request, w),
                    None => self.fs.retrieve(&request),
                }?;
                let found: Vec<&Key> = reader.fields().iter().map(|(k, _)| k).collect();
                let notice = notice(&self.fs, &request, &found);
                Ok::<_, Error>((reader, notice))
            })
            .or_raise(py)?;
        let fields = reader.fields().iter().map(|(_, l)| l.clone()).collect();
        Ok((Reader::new(self.fs.clone(), fields), notice))
    }

    /// A watch of what `selection` names (see `FieldStore::watch`).
    #[pyo3(signature = (selection, since_now=false, count=None, timeout=None, polling=false))]
    fn watch(
        &self,
        py: Python<'_>,
        selection: Selection,
        since_now: bool,
        count: Option<usize>,
        timeout: Option<f64>,
        polling: bool,
    ) -> PyResult<Watcher> {
        let request = request(py, &self.fs, &selection)?;
        let timeout = timeout
            .map(|s| {
                std::time::Duration::try_from_secs_f64(s).map_err(|_| {
                    PyValueError::new_err(format!("timeout={s}: not a number of seconds"))
                })
            })
            .transpose()?;
        let options = WatchOptions {
            since: if since_now { Since::Now } else { Since::Start },
            count,
            timeout,
            until_complete: false,
            polling,
        };
        let watch = py
            .detach(|| self.fs.watch_shared(&request, options))
            .or_raise(py)?;
        Ok(Watcher {
            fs: self.fs.clone(),
            watch: std::sync::Mutex::new(Some(watch)),
        })
    }

    /// What `selection` names, down to `level` (1–3).
    fn list(
        &self,
        py: Python<'_>,
        selection: Selection,
        include_masked: bool,
        level: i64,
    ) -> PyResult<Entries> {
        let depth = self::level(level)?;
        let request = request(py, &self.fs, &selection)?;
        let options = ListOptions {
            depth,
            duplicates: include_masked,
        };
        let list = py.detach(|| self.fs.list(&request, options)).or_raise(py)?;
        Ok(Entries {
            fs: self.fs.clone(),
            rest: list.into_iter(),
        })
    }

    /// The stored fields a fully specified `selection` names, found by
    /// point lookups (pyfdb's `inspect`).
    fn inspect(&self, py: Python<'_>, selection: Selection) -> PyResult<Entries> {
        let request = request(py, &self.fs, &selection)?;
        let found = py
            .detach(|| -> fieldstore::Result<Vec<ListElement>> {
                let reader = self.fs.retrieve(&request)?;
                let mut out = Vec::with_capacity(reader.len());
                let mut seen = HashSet::new();
                for (key, location) in reader.fields() {
                    if !seen.insert(location.clone()) {
                        continue;
                    }
                    let split = self.fs.schema().split(key)?;
                    out.push(ListElement {
                        dataset: split.dataset,
                        collocation: split.collocation,
                        element: split.element,
                        location: Some(location.clone()),
                    });
                }
                Ok(out)
            })
            .or_raise(py)?;
        Ok(Entries {
            fs: self.fs.clone(),
            rest: found.into_iter(),
        })
    }

    /// The values per keyword among what `selection` names, levels 1 to
    /// `level`: `[(keyword, [value, …]), …]`, both sorted as strings.
    fn axes(
        &self,
        py: Python<'_>,
        selection: Selection,
        level: i64,
    ) -> PyResult<Vec<(String, Vec<String>)>> {
        let depth = self::level(level)?;
        let request = request(py, &self.fs, &selection)?;
        let axes = py.detach(|| self.fs.axes(&request, depth)).or_raise(py)?;
        Ok(axes
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect()))
            .collect())
    }

    /// The values `selection` names explicitly, per keyword, spelled as
    /// stored keys spell them (`fieldstore_core::Schema::requested_values`):
    /// what the array views add to their coordinates, stored or not.
    fn requested_values(
        &self,
        py: Python<'_>,
        selection: Selection,
    ) -> PyResult<Vec<(String, Vec<String>)>> {
        let request = request(py, &self.fs, &selection)?;
        self.fs
            .schema()
            .requested_values(&request)
            .map_err(|e| to_py(py, &Error::from(e)))
    }

    /// Wipe what `selection` names (whole datasets or collocations); a
    /// dry run unless `doit`. The report as JSON (`fieldstore::WipeReport`).
    fn wipe(
        &self,
        py: Python<'_>,
        selection: Selection,
        doit: bool,
        unsafe_wipe_all: bool,
    ) -> PyResult<String> {
        let request = request(py, &self.fs, &selection)?;
        let options = WipeOptions {
            doit,
            unsafe_wipe_all,
        };
        let report = py.detach(|| self.fs.wipe(&request, options)).or_raise(py)?;
        json(py, &report)
    }

    /// Remove replaced fields' bytes; a dry run unless `doit`. JSON
    /// (`fieldstore::PurgeReport`).
    fn purge(&self, py: Python<'_>, selection: Selection, doit: bool) -> PyResult<String> {
        let request = request(py, &self.fs, &selection)?;
        let report = py.detach(|| self.fs.purge(&request, doit)).or_raise(py)?;
        json(py, &report)
    }

    /// Counts per dataset. JSON (`[fieldstore::DatasetStats]`).
    fn stats(&self, py: Python<'_>, selection: Selection) -> PyResult<String> {
        let request = request(py, &self.fs, &selection)?;
        let stats = py.detach(|| self.fs.stats(&request)).or_raise(py)?;
        json(py, &stats)
    }

    /// Place and locks per dataset. JSON (`[fieldstore::DatasetStatus]`).
    fn status(&self, py: Python<'_>, selection: Selection) -> PyResult<String> {
        let request = request(py, &self.fs, &selection)?;
        let status = py.detach(|| self.fs.status(&request)).or_raise(py)?;
        json(py, &status)
    }

    /// Lock (`lock`) or unlock the `operations` (`archive`, `retrieve`,
    /// `list`, `wipe`) of the datasets `selection` names. JSON of their
    /// status afterwards.
    fn control(
        &self,
        py: Python<'_>,
        selection: Selection,
        lock: bool,
        operations: Vec<String>,
    ) -> PyResult<String> {
        let request = request(py, &self.fs, &selection)?;
        let mut locks = Locks::NONE;
        for name in &operations {
            let op = Operation::from_name(name).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "unknown operation '{name}' (expected archive, retrieve, list or wipe)"
                ))
            })?;
            locks = locks.with(op);
        }
        let action = if lock { Control::Lock } else { Control::Unlock };
        let status = py
            .detach(|| self.fs.control(&request, action, locks))
            .or_raise(py)?;
        json(py, &status)
    }

    fn __repr__(&self) -> String {
        format!("fieldstore.Store({})", self.fs.config().source)
    }
}

fn json<T: serde::Serialize>(py: Python<'_>, value: &T) -> PyResult<String> {
    serde_json::to_string(value)
        .map_err(|e| to_py(py, &Error::internal(format!("report to JSON: {e}"))))
}

/// What `Store.archive_grib` returns: messages archived, duplicate-key
/// warnings, and the skipped bytes' warning with its ranges.
type GribArchived = (usize, Vec<String>, Option<(String, Vec<(u64, u64)>)>);

#[cfg(feature = "grib")]
fn archive_grib(fs: &FieldStore, data: &[u8], defaults: Key) -> fieldstore::Result<GribArchived> {
    use fieldstore_grib::{ArchiveGrib as _, GribOptions};
    let summary = fs.archive_grib_with(data, GribOptions::default().defaults(defaults))?;
    let skipped = (!summary.skipped_bytes.is_empty()).then(|| {
        (
            summary.skipped_bytes.to_string(),
            summary
                .skipped_bytes
                .ranges()
                .iter()
                .map(|r| (r.start, r.end))
                .collect(),
        )
    });
    Ok((
        summary.fields,
        summary.duplicates.iter().map(ToString::to_string).collect(),
        skipped,
    ))
}

/// The configuration of the environment, as the CLI and the C API read
/// it: fieldstore's variables, else FDB5's (a root holding FDB5's own
/// format refused by name), else the embedded store.
fn environment() -> fieldstore::Result<Config> {
    let config = fieldstore::fdb5_config::from_environment()?;
    if fieldstore::fdb5_config::fdb5_variable().is_some() {
        fieldstore::fdb5_config::refuse_fdb5_roots(&config)?;
    }
    Ok(config)
}

/// What `Store.extract` returns: the fields, the cost, and a notice of
/// what the request names and the store lacks ([`notice`]).
type Extracted<'py> = (
    Vec<(
        Vec<(String, String)>,
        Vec<u64>,
        Bound<'py, PyBytes>,
        String,
        Vec<(f64, f64, f64)>,
    )>,
    (u64, u64, u64),
    Option<Notice>,
);

/// What the Python layer warns of after a retrieve or extract of `request`
/// that found `found`: a store holding no dataset (which store), a request
/// naming no complete key (the keywords the
/// nearest rule requires), or the fields it names that are missing (how
/// many, the first). `None` when everything named was found or it cannot
/// be told cheaply ([`FieldStore::shortfall`]).
fn notice(fs: &FieldStore, request: &Request, found: &[&Key]) -> Option<Notice> {
    if found.is_empty() {
        if let Some(empty) = fs.empty_store_notice() {
            return Some(("empty store", empty));
        }
    }
    if found.is_empty() && fs.names_no_key(request) {
        let what = fs.schema().incomplete(request).map_or_else(
            || "give a value to every keyword of a rule".to_string(),
            |i| i.to_string(),
        );
        return Some((
            "missing fields",
            format!(
                "the request names no complete key: {what}; list partial requests with FDB.list"
            ),
        ));
    }
    let shortfall = fs.shortfall(request, found.iter().copied()).ok()??;
    Some(("missing fields", shortfall.summary()))
}

/// What the Python layer warns of: its kind (`missing fields`, `empty
/// store`: the warning's class) and text.
type Notice = (&'static str, String);

/// One field's extraction before it becomes Python objects: key, indices,
/// values, method, and for points the grid point answering each
/// (latitude, longitude, distance in km).
type FieldOut = (
    Vec<(String, String)>,
    Vec<u64>,
    Vec<f64>,
    String,
    Vec<(f64, f64, f64)>,
);

/// An extraction before it becomes Python objects: the fields, the cost
/// (bytes read, reads, the fields' bytes) and the notice.
type ExtractOut = (Vec<FieldOut>, (u64, u64, u64), Option<Notice>);

#[cfg(feature = "grib")]
fn extract(
    fs: &FieldStore,
    request: &Request,
    kind: &str,
    data: Vec<u64>,
    points: Vec<(f64, f64)>,
) -> fieldstore::Result<ExtractOut> {
    use fieldstore_grib::{ExtractGrib as _, Method, Selection as S};
    let selection = match kind {
        "ranges" if data.len() % 2 == 0 => {
            S::Ranges(data.chunks(2).map(|c| (c[0], c[1])).collect())
        }
        "indices" => S::Indices(data),
        "mask" => S::Mask(data.into_iter().map(|b| b != 0).collect()),
        "points" => S::Points(points),
        other => {
            return Err(Error::invalid_input(format!(
                "unknown selection {other:?} (ranges of even length, indices, mask or points)"
            )))
        }
    };
    let got = fs.extract(request, &selection)?;
    let found: Vec<&Key> = got.fields.iter().map(|f| &f.key).collect();
    let notice = notice(fs, request, &found);
    let fields = got
        .fields
        .into_iter()
        .map(|f| {
            let method = match f.method {
                Method::Stored => "jump info".to_string(),
                Method::Computed => "jump info computed".to_string(),
                Method::Decoded(why) => format!("decoded whole: {why}"),
            };
            let key = f
                .key
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let nearest = f
                .nearest
                .iter()
                .map(|g| (g.latitude, g.longitude, g.distance_km))
                .collect();
            (key, f.indices, f.values, method, nearest)
        })
        .collect();
    Ok((
        fields,
        (got.read.bytes, got.read.reads, got.field_bytes),
        notice,
    ))
}

#[cfg(not(feature = "grib"))]
fn extract(
    _fs: &FieldStore,
    _request: &Request,
    _kind: &str,
    _data: Vec<u64>,
    _points: Vec<(f64, f64)>,
) -> fieldstore::Result<ExtractOut> {
    Err(Error::new(
        ErrorKind::Unsupported,
        "this build of fieldstore has no GRIB support (Cargo feature `grib`): extract needs it",
    ))
}

#[cfg(not(feature = "grib"))]
fn archive_grib(
    _fs: &FieldStore,
    _data: &[u8],
    _defaults: Key,
) -> fieldstore::Result<GribArchived> {
    Err(Error::new(
        ErrorKind::Unsupported,
        "this build of fieldstore has no GRIB support (Cargo feature `grib`): \
         archive(data) needs it to read the messages' keys; give the key: \
         archive(data, identifier={...})",
    ))
}

/// The results of `list`, made into Python objects one at a time as they
/// are iterated.
#[pyclass(module = "fieldstore._fieldstore", name = "Entries")]
struct Entries {
    fs: Arc<FieldStore>,
    rest: std::vec::IntoIter<ListElement>,
}

#[pymethods]
impl Entries {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> Option<Entry> {
        self.rest.next().map(|e| Entry {
            fs: self.fs.clone(),
            e,
        })
    }

    /// How many are left.
    fn __len__(&self) -> usize {
        self.rest.len()
    }
}

/// A running watch: iterating blocks (without the GIL) until the next
/// field is flushed, and yields `(Entry, replaced)`.
#[pyclass(module = "fieldstore._fieldstore", name = "Watcher")]
struct Watcher {
    fs: Arc<FieldStore>,
    /// `None` once ended. In a mutex: a Python object may be shared
    /// between threads; one of them iterates at a time.
    watch: std::sync::Mutex<Option<fieldstore::Watch<'static>>>,
}

#[pymethods]
impl Watcher {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<(Entry, bool)>> {
        let mut guard = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        let Some(watch) = guard.as_mut() else {
            return Ok(None);
        };
        let next = py.detach(|| watch.next());
        match next {
            Some(Ok(event)) => Ok(Some((
                Entry {
                    fs: self.fs.clone(),
                    e: event.element,
                },
                event.replaced,
            ))),
            Some(Err(e)) => {
                *guard = None;
                Err(to_py(py, &e))
            }
            None => {
                *guard = None;
                Ok(None)
            }
        }
    }

    /// How the watch learns of flushes (`inotify`, `polling …`).
    fn mechanism(&self) -> String {
        self.watch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map_or_else(|| "ended".into(), fieldstore::Watch::mechanism)
    }

    /// End the watch now.
    fn close(&self) {
        *self.watch.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// One result of `list`.
#[pyclass(module = "fieldstore._fieldstore", name = "Entry", frozen)]
struct Entry {
    pub(crate) fs: Arc<FieldStore>,
    pub(crate) e: ListElement,
}

#[pymethods]
impl Entry {
    /// The three level keys (empty dicts below the listed level); empty
    /// values are kept at levels 1 and 2, left out at level 3, as FDB5 does.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        Ok(vec![
            key_dict(py, &self.e, &[Level::Dataset])?,
            key_dict(py, &self.e, &[Level::Collocation])?,
            key_dict(py, &self.e, &[Level::Element])?,
        ])
    }

    /// The levels' keys in one dict (empty values as in [`Entry::keys`]).
    fn combined_key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        key_dict(
            py,
            &self.e,
            &[Level::Dataset, Level::Collocation, Level::Element],
        )
    }

    /// The key without empty values, in schema order, as a request (for
    /// retrieving the element).
    fn request(&self) -> Vec<(String, String)> {
        self.e
            .full_key()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// `{dataset}{collocation}{element}`, as `fdb-list` prints it.
    fn braced(&self) -> String {
        self.e.braced()
    }

    fn has_location(&self) -> bool {
        self.e.location.is_some()
    }

    fn uri(&self) -> Option<String> {
        self.e.location.as_ref().map(|l| l.uri.to_string())
    }

    fn offset(&self) -> Option<u64> {
        self.e.location.as_ref().map(|l| l.offset)
    }

    fn length(&self) -> Option<u64> {
        self.e.location.as_ref().map(|l| l.length)
    }

    /// A reader of this field's bytes (fields only).
    fn reader(&self) -> Option<Reader> {
        self.e
            .location
            .as_ref()
            .map(|l| Reader::new(self.fs.clone(), vec![l.clone()]))
    }

    fn __repr__(&self) -> String {
        match &self.e.location {
            Some(l) => format!("{}, {l}", self.e.braced()),
            None => self.e.braced(),
        }
    }
}

/// The bytes of a list of fields, as one stream ([`FieldStream`]: each
/// field read whole and verified before any of its bytes is returned, one
/// field in memory at a time, the store told what comes next).
#[pyclass(module = "fieldstore._fieldstore", name = "Reader")]
struct Reader(FieldStream);

impl Reader {
    fn new(fs: Arc<FieldStore>, fields: Vec<FieldLocation>) -> Self {
        Reader(FieldStream::new(fs.store().clone(), fields))
    }

    fn wanted(&self, n: i64) -> usize {
        let rest = self.0.remaining();
        let n = if n < 0 { rest } else { rest.min(n as u64) };
        n as usize
    }
}

#[pymethods]
impl Reader {
    /// Total bytes.
    #[pyo3(name = "size")]
    fn py_size(&self) -> u64 {
        self.0.size()
    }

    /// Number of fields.
    fn count(&self) -> usize {
        self.0.count()
    }

    /// The current position.
    fn tell(&self) -> u64 {
        self.0.position()
    }

    /// Move to byte `pos` of the stream (past the end reads nothing).
    fn seek(&mut self, pos: u64) {
        self.0.seek(pos);
    }

    /// Up to `n` bytes (all that is left if `n < 0`); empty at the end.
    #[pyo3(signature = (n=-1))]
    fn read<'py>(&mut self, py: Python<'py>, n: i64) -> PyResult<Bound<'py, PyBytes>> {
        let len = self.wanted(n);
        let mut failure = None;
        let bytes = PyBytes::new_with(py, len, |out| {
            if let Err(e) = py.detach(|| self.0.read(out)) {
                failure = Some(e);
            }
            Ok(())
        })?;
        match failure {
            Some(e) => Err(to_py(py, &e)),
            None => Ok(bytes),
        }
    }

    /// Read up to `length` bytes into the writable memory at `address`; the
    /// number of bytes read (0 at the end).
    ///
    /// For the façade's `readinto`, which passes the address of a buffer it
    /// holds exported (ctypes `from_buffer`) for the length of the call.
    fn _readinto_address(
        &mut self,
        py: Python<'_>,
        address: usize,
        length: usize,
    ) -> PyResult<usize> {
        let len = self.wanted(length.min(i64::MAX as usize) as i64);
        if len == 0 {
            return Ok(0);
        }
        if address == 0 {
            return Err(PyValueError::new_err("null buffer address"));
        }
        // SAFETY: the façade passes the address and size of a writable,
        // C-contiguous buffer it keeps exported (so alive and not resized)
        // until this call returns; `len <= length`. Nothing else writes it
        // meanwhile: the buffer's owner is blocked in this call.
        let out = unsafe { std::slice::from_raw_parts_mut(address as *mut u8, len) };
        let n = py.detach(|| self.0.read(out)).or_raise(py)?;
        Ok(n)
    }

    /// Forget the field held in memory and go back to the start.
    fn close(&mut self) {
        self.0.rewind();
    }

    fn __repr__(&self) -> String {
        format!(
            "{} field(s), {} bytes, at {}",
            self.0.count(),
            self.0.size(),
            self.0.position()
        )
    }
}

/// The native module.
#[pymodule]
fn _fieldstore(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("GRIB", cfg!(feature = "grib"))?;
    m.add_class::<Store>()?;
    m.add_class::<Entries>()?;
    m.add_class::<Entry>()?;
    m.add_class::<Reader>()?;
    m.add_class::<Watcher>()?;
    #[cfg(feature = "grib")]
    {
        m.add_function(wrap_pyfunction!(arrays::decode_into, m)?)?;
        m.add_function(wrap_pyfunction!(arrays::extract_into, m)?)?;
        m.add_function(wrap_pyfunction!(arrays::field_keys, m)?)?;
        m.add_function(wrap_pyfunction!(arrays::field_array, m)?)?;
        m.add_function(wrap_pyfunction!(arrays::parallel_decoding, m)?)?;
        m.add_function(wrap_pyfunction!(arrays::eccodes_version, m)?)?;
    }
    Ok(())
}
