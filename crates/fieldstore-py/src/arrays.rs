//! Fields as arrays: what the package's xarray backend, Zarr store and
//! earthkit-data source (`fieldstore/_cube.py` and its users) call to turn
//! listed fields into values.
//!
//! [`decode_into`] reads a batch of fields and decodes their values through
//! ecCodes straight into a caller's NumPy buffer, one row per field, on
//! several threads at once with the GIL released. [`field_keys`] and
//! [`field_array`] read one field's metadata and coordinates.
//!
//! Built with the `grib` feature only (the package's `HAS_GRIB`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fieldstore::{Error, FieldLocation, FieldStore};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::IntoPyObjectExt;

use fieldstore_grib::KeyValue;

use crate::{Entry, OrRaise};

/// One listed field: where its bytes are, and its key for messages.
struct Field {
    fs: Arc<FieldStore>,
    location: FieldLocation,
    key: String,
}

fn field(entry: &Entry) -> PyResult<Field> {
    let location = entry.e.location.clone().ok_or_else(|| {
        PyValueError::new_err(format!(
            "{} is not a field (listed above the field level)",
            entry.e.braced()
        ))
    })?;
    Ok(Field {
        fs: entry.fs.clone(),
        location,
        key: entry.e.braced(),
    })
}

impl Field {
    /// The field's bytes, verified, into `buf`.
    fn read(&self, buf: &mut Vec<u8>) -> fieldstore::Result<()> {
        self.fs.store().read(&self.location, buf)?;
        if buf.len() as u64 != self.location.length {
            return Err(Error::corrupt(format!(
                "{}: read {} bytes, the index says {}",
                self.location,
                buf.len(),
                self.location.length
            )));
        }
        Ok(())
    }
}

/// Decode each field of `rows` into its row of `out` (one thread's share:
/// rows are taken from `work` until it is empty or `failed` is set).
fn decode_rows<T: fieldstore_grib::Sample>(
    work: &Mutex<std::vec::IntoIter<(&Field, &mut [T])>>,
    failed: &AtomicBool,
) -> fieldstore::Result<()> {
    let mut buf = Vec::new();
    loop {
        if failed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let next = work.lock().unwrap_or_else(|p| p.into_inner()).next();
        let Some((field, row)) = next else {
            return Ok(());
        };
        let done = field
            .read(&mut buf)
            .and_then(|()| fieldstore_grib::decode_values(&buf, row))
            .map_err(|e| e.context(&field.key));
        if done.is_err() {
            failed.store(true, Ordering::Relaxed);
            return done;
        }
    }
}

/// Decode every field into its row of `out` on up to `threads` threads.
fn decode_all<T: fieldstore_grib::Sample>(
    fields: &[Option<Field>],
    out: &mut [T],
    points: usize,
    threads: usize,
) -> fieldstore::Result<()> {
    let mut rows: Vec<(&Field, &mut [T])> = Vec::with_capacity(fields.len());
    for (f, row) in fields.iter().zip(out.chunks_mut(points)) {
        match f {
            Some(f) => rows.push((f, row)),
            None => row.fill(T::NAN),
        }
    }
    // Tell each store what comes, in order (the POSIX store reads ahead).
    let mut by_store: Vec<(&Arc<FieldStore>, Vec<FieldLocation>)> = Vec::new();
    for (f, _) in &rows {
        match by_store.iter_mut().find(|(fs, _)| Arc::ptr_eq(fs, &f.fs)) {
            Some((_, locations)) => locations.push(f.location.clone()),
            None => by_store.push((&f.fs, vec![f.location.clone()])),
        }
    }
    for (fs, locations) in &by_store {
        fs.store().prefetch(locations);
    }
    let threads = threads.clamp(1, rows.len().max(1));
    let work = Mutex::new(rows.into_iter());
    let failed = AtomicBool::new(false);
    if threads == 1 {
        return decode_rows(&work, &failed);
    }
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| decode_rows(&work, &failed)))
            .collect();
        let mut result = Ok(());
        for w in workers {
            let r = w
                .join()
                .unwrap_or_else(|_| Err(Error::internal("a decoding thread panicked")));
            if result.is_ok() {
                result = r;
            }
        }
        result
    })
}

/// Decode the values of `entries` (fields from `Store.list`; `None` for a
/// field that is not stored) into the C-contiguous buffer at `address`:
/// row `i` (`points` values of `float32`, or of `float64` with `double`)
/// gets `entries[i]`'s values, bitmap points NaN, or all NaN for `None`.
/// Every element is written, so the buffer may be uninitialised memory
/// (`numpy.empty`: its pages are first touched by the decoding threads).
/// Runs on up to `threads` threads without the GIL.
///
/// For the façade, which passes the address of a NumPy array of
/// `len(entries) * points` elements it keeps alive for the call.
#[pyfunction]
#[pyo3(signature = (entries, address, points, double=false, threads=1))]
pub(crate) fn decode_into(
    py: Python<'_>,
    entries: Vec<Option<PyRef<'_, Entry>>>,
    address: usize,
    points: usize,
    double: bool,
    threads: usize,
) -> PyResult<()> {
    let fields = entries
        .iter()
        .map(|e| e.as_ref().map(|e| field(e)).transpose())
        .collect::<PyResult<Vec<_>>>()?;
    let len = fields.len().checked_mul(points).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{} fields of {points} points overflow",
            fields.len()
        ))
    })?;
    if len == 0 {
        return Ok(());
    }
    if address == 0 || points == 0 {
        return Err(PyValueError::new_err("null buffer or no points"));
    }
    if double {
        // SAFETY: the façade passes the address of a writable, C-contiguous,
        // aligned float64 array of `len` elements that it keeps alive and
        // does not touch until this call returns.
        let out = unsafe { std::slice::from_raw_parts_mut(address as *mut f64, len) };
        py.detach(|| decode_all(&fields, out, points, threads))
            .or_raise(py)
    } else {
        // SAFETY: as above, float32.
        let out = unsafe { std::slice::from_raw_parts_mut(address as *mut f32, len) };
        py.detach(|| decode_all(&fields, out, points, threads))
            .or_raise(py)
    }
}

/// The values at grid `indices` (the message's order) of each field of
/// `entries` into the caller's buffer, one row of `indices.len()` per
/// entry, NaN for an absent entry: reading only the bytes that hold them
/// (`docs/extract.md`). Returns how many fields were decoded whole (a
/// packing without jump info). Runs without the GIL.
///
/// For the façade, which passes the address of a NumPy array of
/// `len(entries) * len(indices)` elements it keeps alive for the call.
#[pyfunction]
#[pyo3(signature = (entries, indices, address, double=false, threads=4))]
pub(crate) fn extract_into(
    py: Python<'_>,
    entries: Vec<Option<PyRef<'_, Entry>>>,
    indices: Vec<u64>,
    address: usize,
    double: bool,
    threads: usize,
) -> PyResult<usize> {
    let width = indices.len();
    let len = entries.len().checked_mul(width).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{} fields of {width} points overflow",
            entries.len()
        ))
    })?;
    if len == 0 {
        return Ok(0);
    }
    if address == 0 {
        return Err(PyValueError::new_err("null buffer"));
    }
    let mut rows = Vec::new();
    let mut fields = Vec::new();
    let mut fs = None;
    for (row, e) in entries.iter().enumerate() {
        if let Some(e) = e {
            let f = field(e)?;
            fs.get_or_insert_with(|| f.fs.clone());
            rows.push(row);
            fields.push(e.e.clone());
        }
    }
    // Jump info computed for a field's first extraction is kept with its
    // entry, as `fs.extract` keeps it.
    let got = match &fs {
        None => None,
        Some(fs) => Some(
            py.detach(|| {
                fieldstore_grib::extract_listed(
                    fs,
                    &fields,
                    &fieldstore_grib::Selection::Indices(indices),
                    fieldstore_grib::ExtractOptions::default().parallelism(threads),
                )
            })
            .or_raise(py)?,
        ),
    };
    let mut values = vec![f64::NAN; len];
    let mut decoded = 0;
    if let Some(got) = got {
        decoded = got.decoded;
        for (row, f) in rows.iter().zip(&got.fields) {
            values[row * width..(row + 1) * width].copy_from_slice(&f.values);
        }
    }
    if double {
        // SAFETY: the façade passes the address of a writable, C-contiguous,
        // aligned float64 array of `len` elements that it keeps alive and
        // does not touch until this call returns.
        let out = unsafe { std::slice::from_raw_parts_mut(address as *mut f64, len) };
        out.copy_from_slice(&values);
    } else {
        // SAFETY: as above, float32. Double precision rounded, as cfgrib.
        let out = unsafe { std::slice::from_raw_parts_mut(address as *mut f32, len) };
        for (o, v) in out.iter_mut().zip(&values) {
            *o = *v as f32;
        }
    }
    Ok(decoded)
}

/// The values of `keys` in the field `entry`, each as an `int`, `float` or
/// `str` by its ecCodes type (`None` for a key the message does not have).
#[pyfunction]
pub(crate) fn field_keys<'py>(
    py: Python<'py>,
    entry: PyRef<'_, Entry>,
    keys: Vec<String>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let f = field(&entry)?;
    let values = py
        .detach(|| {
            let mut buf = Vec::new();
            f.read(&mut buf)?;
            let names: Vec<&str> = keys.iter().map(String::as_str).collect();
            fieldstore_grib::read_keys(&buf, &names).map_err(|e| e.context(&f.key))
        })
        .or_raise(py)?;
    values
        .into_iter()
        .map(|v| match v {
            None => Ok(py.None().into_bound(py)),
            Some(KeyValue::Long(n)) => n.into_bound_py_any(py),
            Some(KeyValue::Double(x)) => x.into_bound_py_any(py),
            Some(KeyValue::Str(s)) => s.into_bound_py_any(py),
        })
        .collect()
}

/// The array key `key` (`latitudes`, `distinctLongitudes`…) of the field
/// `entry`: float64 values in native byte order, as `bytes`.
#[pyfunction]
pub(crate) fn field_array<'py>(
    py: Python<'py>,
    entry: PyRef<'_, Entry>,
    key: String,
) -> PyResult<Bound<'py, PyBytes>> {
    let f = field(&entry)?;
    let values = py
        .detach(|| {
            let mut buf = Vec::new();
            f.read(&mut buf)?;
            fieldstore_grib::read_array(&buf, &key).map_err(|e| e.context(&f.key))
        })
        .or_raise(py)?;
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    Ok(PyBytes::new(py, &bytes))
}

/// The version of the ecCodes linked (`2.50.0`).
#[pyfunction]
pub(crate) fn eccodes_version() -> String {
    fieldstore_grib::eccodes_version()
}

/// Whether several threads decode at once (the ecCodes linked was built
/// thread-safe); with `false`, they take turns.
#[pyfunction]
pub(crate) fn parallel_decoding() -> bool {
    fieldstore_grib::eccodes_thread_safe()
}
