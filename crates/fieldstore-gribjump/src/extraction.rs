//! Extraction requests, their results and the iterator over them, and the
//! extraction itself: GribJump's `extract` over fieldstore's
//! [`extract_listed`].
//!
//! Semantics (GribJump 0.13's, checked against it by
//! `tests/python/test_polytope.py`):
//! - each request of `gribjump_extract` names one field; one result per
//!   request, in order. A request that names no stored field fails the
//!   whole call (`DataNotFound. Matched M fields but N were requested`);
//! - a result holds the values of every range, concatenated (NaN where the
//!   field's bitmap says missing), and per range `ceil(n/64)` mask words,
//!   bit `k` of word `j` set if value `64j+k` is present;
//! - a request's grid hash must equal the field's `md5GridSection`
//!   (`Bad value: Grid hash mismatch …`); a request without one is refused
//!   unless `ignoreGridHash` ([`crate::config`]);
//! - a range outside the field's grid fails the call.

use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, c_int, c_ulong, c_void};
use std::sync::Mutex;

use fieldstore::{FieldStore, ListElement, ListOptions};
use fieldstore_grib::{extract_listed, ExtractOptions, Selection};

use crate::config::Settings;
use crate::error::{
    entry, guarded, CError, GRIBJUMP_ITERATOR_COMPLETE, GRIBJUMP_ITERATOR_ERROR,
    GRIBJUMP_ITERATOR_SUCCESS,
};
use crate::grid_hash;
use crate::handle::{gribjump_handle_t, HandleObj};
use crate::registry::{self, Kind, Object};
use crate::request_text::RequestText;
use crate::util::{c_str, opt_str, out, ranges, slice, slice_mut};

macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[doc = concat!("Opaque C type `", stringify!($name), "`.")]
        #[allow(non_camel_case_types)]
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(
    gribjump_extraction_request_t,
    gribjump_path_extraction_request_t,
    gribjump_extraction_result_t,
    gribjump_extractioniterator_t
);

/// `gribjump_extraction_request_t`: a MARS request, ranges, a grid hash.
#[derive(Debug)]
pub struct RequestObj {
    /// The request.
    pub request: RequestText,
    /// Half-open ranges of grid indices.
    pub ranges: Vec<(u64, u64)>,
    /// The grid hash the field must have.
    pub hash: Option<String>,
}

impl Object for RequestObj {
    const KIND: Kind = Kind::Request;
}

/// `gribjump_path_extraction_request_t`: a GRIB message in a local file.
#[derive(Debug)]
pub struct PathRequestObj {
    /// The file.
    pub path: String,
    /// The message's first byte in it.
    pub offset: u64,
    /// Half-open ranges of grid indices.
    pub ranges: Vec<(u64, u64)>,
    /// The grid hash the message must have.
    pub hash: Option<String>,
}

impl Object for PathRequestObj {
    const KIND: Kind = Kind::PathRequest;
}

/// One field's extracted values: `gribjump_extraction_result_t`.
#[derive(Debug, Default)]
pub struct ResultData {
    /// Every range's values, concatenated; NaN where missing.
    pub values: Vec<f64>,
    /// Per range, `ceil(n/64)` words of presence bits.
    pub masks: Vec<u64>,
}

impl ResultData {
    fn new(values: Vec<f64>, ranges: &[(u64, u64)]) -> ResultData {
        let mut masks = Vec::new();
        let mut at = 0usize;
        for &(start, end) in ranges {
            let n = (end - start) as usize;
            let part = &values[at.min(values.len())..(at + n).min(values.len())];
            let mut words = vec![0u64; n.div_ceil(64)];
            for (k, v) in part.iter().enumerate() {
                if !v.is_nan() {
                    words[k / 64] |= 1 << (k % 64);
                }
            }
            masks.extend(words);
            at += n;
        }
        ResultData { values, masks }
    }
}

/// `gribjump_extraction_result_t`.
#[derive(Debug)]
pub struct ResultObj(pub ResultData);

impl Object for ResultObj {
    const KIND: Kind = Kind::Result;
}

/// `gribjump_extractioniterator_t`: the results not yet taken.
#[derive(Debug)]
pub struct IteratorObj(pub Mutex<VecDeque<ResultData>>);

impl Object for IteratorObj {
    const KIND: Kind = Kind::Iterator;
}

/// One extraction: what to list, the ranges, the hash, and whether it must
/// name exactly one field.
struct Item<'a> {
    request: &'a RequestText,
    ranges: &'a [(u64, u64)],
    hash: Option<&'a str>,
}

/// The results of `items`, one per field found, in order (each item's
/// fields in the request's order). `single`: every item must name exactly
/// one field (`gribjump_extract`).
fn extract(
    fs: &FieldStore,
    settings: Settings,
    items: &[Item<'_>],
    single: bool,
) -> Result<Vec<ResultData>, CError> {
    // Find every item's fields.
    let requests: Vec<&RequestText> = items.iter().map(|i| i.request).collect();
    let found: Vec<Vec<ListElement>> = if single {
        crate::finding::fields_of(fs, &requests)?
    } else {
        requests
            .iter()
            .map(|r| fs.list(r.request(), ListOptions::default()))
            .collect::<Result<_, _>>()?
    };
    let found = found
        .into_iter()
        .zip(&requests)
        .map(|(listed, r)| in_request_order(fs, r, listed))
        .collect::<Result<Vec<_>, _>>()?;
    let missing: Vec<&str> = items
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_empty() || single && f.len() != 1)
        .map(|(i, _)| i.request.text())
        .collect();
    if !missing.is_empty() {
        let matched = found.iter().filter(|f| !f.is_empty()).count();
        return Err(CError::new(format!(
            "DataNotFound. Matched {matched} fields but {} were requested; nothing stored for: {}",
            items.len(),
            missing.join("; ")
        )));
    }
    if !single {
        for (item, fields) in items.iter().zip(&found) {
            whole_request(fs, item.request, fields)?;
        }
    }
    // The grid hashes.
    let store = fs.store();
    let mut n = 0usize;
    for (item, fields) in items.iter().zip(&found) {
        for f in fields {
            let Some(loc) = &f.location else { continue };
            match item.hash {
                Some(want) => {
                    let have = grid_hash::of_field(store.as_ref(), loc)?;
                    if !have.eq_ignore_ascii_case(want) {
                        return Err(CError::new(format!(
                            "Bad value: Grid hash mismatch for extraction item {n} ({}) at {}. \
                             Request specified: {want}, JumpInfo contains: {have}",
                            f.full_key(),
                            loc.uri
                        )));
                    }
                }
                None if !settings.ignore_grid_hash => {
                    return Err(CError::new(format!(
                        "Bad value: Grid hash was not specified in request but is required \
                         (extraction item {n}, {}; set GRIBJUMP_IGNORE_GRID=1 or \
                         ignoreGridHash: true to extract without one)",
                        item.request.text()
                    )))
                }
                None => {}
            }
            n += 1;
        }
    }
    // Extract: one call per distinct set of ranges, with every field that
    // wants it (fields are read in file order, on `threads` threads).
    let mut groups: HashMap<&[(u64, u64)], Vec<usize>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        groups.entry(item.ranges).or_default().push(i);
    }
    let mut out: Vec<Vec<ResultData>> = (0..items.len()).map(|_| Vec::new()).collect();
    // Each result's indices are the ranges asked for: not given back.
    let options = ExtractOptions::default()
        .parallelism(settings.threads)
        .indices(false);
    for (ranges, members) in groups {
        let listed: Vec<ListElement> = members
            .iter()
            .flat_map(|&i| found[i].iter().cloned())
            .collect();
        let got = extract_listed(fs, &listed, &Selection::Ranges(ranges.to_vec()), options)?;
        let mut fields = got.fields.into_iter();
        for &i in &members {
            for _ in 0..found[i].len() {
                let f = fields.next().ok_or_else(|| {
                    CError::new("internal error: fewer fields extracted than listed")
                })?;
                out[i].push(ResultData::new(f.values, ranges));
            }
        }
    }
    Ok(out.into_iter().flatten().collect())
}

/// That `fields` are every field `request` names, as GribJump 0.13 wants
/// of `gribjump_extract_single`: its request names the cross product of
/// its values (ranges enumerated as listing does), and each must be a
/// stored field's whole key. So some of them missing fails the call
/// (`DataNotFound. Matched 2 fields but 3 were requested`), and so does a
/// request that leaves out a keyword of the fields it matches (GribJump
/// matches no key with it: `Matched 0 fields`). A request with `all` is
/// not counted.
fn whole_request(
    fs: &FieldStore,
    request: &RequestText,
    fields: &[ListElement],
) -> Result<(), CError> {
    let r = request.request();
    if r.iter().any(|(_, v)| matches!(v, fieldstore::Values::All)) {
        return Ok(());
    }
    let named = fs
        .schema()
        .requested_values(r)
        .map_err(|e| CError::new(format!("the request {:?}: {e}", request.text())))?;
    let wanted = named
        .iter()
        .fold(1u64, |n, (_, v)| n.saturating_mul(v.len() as u64));
    if fields.len() as u64 == wanted {
        return Ok(());
    }
    let keywords: Vec<&str> = r.keywords().collect();
    let mut unnamed: Vec<String> = Vec::new();
    for f in fields {
        for k in f.full_key().keywords() {
            if !keywords.contains(&k) && !unnamed.iter().any(|u| u == k) {
                unnamed.push(k.to_string());
            }
        }
    }
    if fields.len() as u64 > wanted || !unnamed.is_empty() {
        return Err(CError::new(format!(
            "DataNotFound. Matched 0 fields but {wanted} were requested: the request names no \
             value of {} ({} stored fields match it in part; GribJump matches whole keys): {}",
            unnamed.join(", "),
            fields.len(),
            request.text()
        )));
    }
    Err(CError::new(format!(
        "DataNotFound. Matched {} fields but {wanted} were requested; some of the fields {} \
         names are not stored",
        fields.len(),
        request.text()
    )))
}

/// The fields of a listing (entries with a location) in the order the
/// request gives its values (`step=12/6`: 12, then 6), as fieldstore's
/// `extract` answers.
fn in_request_order(
    fs: &FieldStore,
    request: &RequestText,
    listed: Vec<ListElement>,
) -> Result<Vec<ListElement>, CError> {
    let listed: Vec<ListElement> = listed
        .into_iter()
        .filter(|e| e.location.is_some())
        .collect();
    if listed.len() < 2 {
        return Ok(listed);
    }
    Ok(fieldstore_grib::in_request_order(
        fs,
        request.request(),
        listed,
    )?)
}

fn iterator(results: Vec<ResultData>) -> *mut gribjump_extractioniterator_t {
    registry::insert(IteratorObj(Mutex::new(results.into()))).cast()
}

/// A request: `reqstr` (a MARS request naming one field), `n_ranges`
/// numbers at `ranges` (pairs `[start, end)`), and the grid hash (NULL:
/// none).
///
/// # Safety
/// `request` is NULL (an error) or writable; the strings are NULL or
/// NUL-terminated; `ranges` holds `n_ranges` numbers.
#[no_mangle]
pub unsafe extern "C" fn gribjump_new_request(
    request: *mut *mut gribjump_extraction_request_t,
    reqstr: *const c_char,
    ranges_: *const usize,
    n_ranges: usize,
    gridhash: *const c_char,
) -> c_int {
    entry("gribjump_new_request", || {
        // SAFETY: the caller's promises.
        let request = unsafe { out(request, "request (the out-pointer)") }?;
        // SAFETY: as above.
        let text = unsafe { c_str(reqstr, "reqstr") }?;
        // SAFETY: as above.
        let ranges = unsafe { ranges(ranges_, n_ranges) }?;
        // SAFETY: as above.
        let hash = unsafe { opt_str(gridhash, "gridhash") }?.map(str::to_string);
        let obj = RequestObj {
            request: RequestText::new(text)?,
            ranges,
            hash,
        };
        *request = registry::insert(obj).cast();
        Ok(())
    })
}

/// A request for the GRIB message at `offset` in the local file
/// `filename`. `scheme` must be `file` (or empty); `host` and `port` (a
/// GribJump server's) are not used.
///
/// # Safety
/// As [`gribjump_new_request`].
#[no_mangle]
pub unsafe extern "C" fn gribjump_new_request_from_path(
    request: *mut *mut gribjump_path_extraction_request_t,
    filename: *const c_char,
    scheme: *const c_char,
    offset: usize,
    host: *const c_char,
    port: c_int,
    range_arr: *const usize,
    range_arr_size: usize,
    gridhash: *const c_char,
) -> c_int {
    let _ = (host, port);
    entry("gribjump_new_request_from_path", || {
        // SAFETY: the caller's promises.
        let request = unsafe { out(request, "request (the out-pointer)") }?;
        // SAFETY: as above.
        let path = unsafe { c_str(filename, "filename") }?;
        // SAFETY: as above.
        let scheme = unsafe { opt_str(scheme, "scheme") }?.unwrap_or("");
        if !matches!(scheme, "" | "file") {
            return Err(CError::new(format!(
                "scheme {scheme:?} is not supported: only local files (scheme \"file\")"
            )));
        }
        // SAFETY: as above.
        let ranges = unsafe { ranges(range_arr, range_arr_size) }?;
        // SAFETY: as above.
        let hash = unsafe { opt_str(gridhash, "gridhash") }?.map(str::to_string);
        *request = registry::insert(PathRequestObj {
            path: path.to_string(),
            offset: offset as u64,
            ranges,
            hash,
        })
        .cast();
        Ok(())
    })
}

/// Delete a request.
///
/// # Safety
/// None beyond the token's: any value is checked.
#[no_mangle]
pub extern "C" fn gribjump_delete_request(request: *mut gribjump_extraction_request_t) -> c_int {
    entry("gribjump_delete_request", || {
        registry::remove::<RequestObj>(request as *const c_void)?;
        Ok(())
    })
}

/// Delete a path request.
#[no_mangle]
pub extern "C" fn gribjump_delete_path_request(
    request: *mut gribjump_path_extraction_request_t,
) -> c_int {
    entry("gribjump_delete_path_request", || {
        registry::remove::<PathRequestObj>(request as *const c_void)?;
        Ok(())
    })
}

/// Extract `nrequests` requests, each naming one field: an iterator over
/// one result per request, in order. `ctx` (a log context) is not used.
///
/// # Safety
/// `requests` holds `nrequests` tokens; `iterator` is NULL (an error) or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn gribjump_extract(
    handle: *mut gribjump_handle_t,
    requests: *mut *mut gribjump_extraction_request_t,
    nrequests: c_ulong,
    ctx: *const c_char,
    iterator_: *mut *mut gribjump_extractioniterator_t,
) -> c_int {
    let _ = ctx;
    entry("gribjump_extract", || {
        // SAFETY: the caller's promises.
        let it = unsafe { out(iterator_, "iterator (the out-pointer)") }?;
        let h = registry::get::<HandleObj>(handle as *const c_void)?;
        h.fs.check_process()?;
        // SAFETY: as above.
        let tokens = unsafe { slice(requests.cast_const(), nrequests as usize, "requests") }?;
        let reqs = tokens
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                registry::get::<RequestObj>(t as *const c_void)
                    .map_err(|e| CError::new(format!("request {i}: {}", e.0)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let items: Vec<Item<'_>> = reqs
            .iter()
            .map(|r| Item {
                request: &r.request,
                ranges: &r.ranges,
                hash: r.hash.as_deref(),
            })
            .collect();
        *it = iterator(extract(&h.fs, h.settings, &items, true)?);
        Ok(())
    })
}

/// Extract one request naming any number of fields: one result per field,
/// in the request's order.
///
/// # Safety
/// As [`gribjump_new_request`] and [`gribjump_extract`].
#[no_mangle]
pub unsafe extern "C" fn gribjump_extract_single(
    handle: *mut gribjump_handle_t,
    request: *const c_char,
    range_arr: *const usize,
    range_arr_size: usize,
    gridhash: *const c_char,
    ctx: *const c_char,
    iterator_: *mut *mut gribjump_extractioniterator_t,
) -> c_int {
    let _ = ctx;
    entry("gribjump_extract_single", || {
        // SAFETY: the caller's promises.
        let it = unsafe { out(iterator_, "iterator (the out-pointer)") }?;
        let h = registry::get::<HandleObj>(handle as *const c_void)?;
        h.fs.check_process()?;
        // SAFETY: as above.
        let text = unsafe { c_str(request, "request") }?;
        // SAFETY: as above.
        let ranges = unsafe { ranges(range_arr, range_arr_size) }?;
        // SAFETY: as above.
        let hash = unsafe { opt_str(gridhash, "gridhash") }?;
        let parsed = RequestText::new(text)?;
        let item = Item {
            request: &parsed,
            ranges: &ranges,
            hash,
        };
        *it = iterator(extract(&h.fs, h.settings, &[item], false)?);
        Ok(())
    })
}

/// One message of a local file: its bytes (the length from its header).
fn read_message(path: &str, offset: u64) -> Result<Vec<u8>, CError> {
    use std::os::unix::fs::FileExt;
    let file =
        std::fs::File::open(path).map_err(|e| CError::new(format!("cannot open {path}: {e}")))?;
    let at = |what: &str, e: std::io::Error| {
        CError::new(format!("{path} at byte {offset}: {what}: {e}"))
    };
    let mut head = [0u8; 16];
    file.read_exact_at(&mut head, offset)
        .map_err(|e| at("reading the GRIB header", e))?;
    if &head[..4] != b"GRIB" {
        return Err(CError::new(format!(
            "{path} at byte {offset}: no GRIB message starts there"
        )));
    }
    let len = match head[7] {
        1 => {
            let n = u64::from(head[4]) << 16 | u64::from(head[5]) << 8 | u64::from(head[6]);
            if n & 0x80_0000 != 0 {
                return Err(CError::new(format!(
                    "{path} at byte {offset}: GRIB1 messages of 8 MiB or more are not supported here"
                )));
            }
            n
        }
        2 => head[8..16].iter().fold(0u64, |n, &b| n << 8 | u64::from(b)),
        e => {
            return Err(CError::new(format!(
                "{path} at byte {offset}: GRIB edition {e}"
            )))
        }
    };
    let mut message = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
    file.read_exact_at(&mut message, offset)
        .map_err(|e| at("reading the message", e))?;
    Ok(message)
}

fn extract_path(r: &PathRequestObj, settings: Settings) -> Result<ResultData, CError> {
    let message = read_message(&r.path, r.offset)?;
    match &r.hash {
        Some(want) => {
            let have = grid_hash::of_message(&mut message.as_slice())?;
            if !have.eq_ignore_ascii_case(want) {
                return Err(CError::new(format!(
                    "Bad value: Grid hash mismatch for {} at byte {}. Request specified: {want}, \
                     JumpInfo contains: {have}",
                    r.path, r.offset
                )));
            }
        }
        None if !settings.ignore_grid_hash => {
            return Err(CError::new(format!(
                "Bad value: Grid hash was not specified in request but is required ({} at byte {})",
                r.path, r.offset
            )))
        }
        None => {}
    }
    let points = fieldstore_grib::number_of_values(&message)?;
    let mut all = vec![0f64; points];
    fieldstore_grib::decode_values(&message, &mut all)?;
    let mut values = Vec::new();
    for &(start, end) in &r.ranges {
        let part = all.get(start as usize..end as usize).ok_or_else(|| {
            CError::new(format!(
                "the range [{start}, {end}) is outside the field's {points} points ({} at byte {})",
                r.path, r.offset
            ))
        })?;
        values.extend_from_slice(part);
    }
    Ok(ResultData::new(values, &r.ranges))
}

/// Extract GRIB messages of local files (each decoded whole by ecCodes).
///
/// # Safety
/// As [`gribjump_extract`].
#[no_mangle]
pub unsafe extern "C" fn gribjump_extract_from_paths(
    handle: *mut gribjump_handle_t,
    requests: *mut *mut gribjump_path_extraction_request_t,
    nrequests: c_ulong,
    ctx: *const c_char,
    iterator_: *mut *mut gribjump_extractioniterator_t,
) -> c_int {
    let _ = ctx;
    entry("gribjump_extract_from_paths", || {
        // SAFETY: the caller's promises.
        let it = unsafe { out(iterator_, "iterator (the out-pointer)") }?;
        let h = registry::get::<HandleObj>(handle as *const c_void)?;
        h.fs.check_process()?;
        // SAFETY: as above.
        let tokens = unsafe { slice(requests.cast_const(), nrequests as usize, "requests") }?;
        let results = tokens
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let r = registry::get::<PathRequestObj>(t as *const c_void)
                    .map_err(|e| CError::new(format!("request {i}: {}", e.0)))?;
                extract_path(&r, h.settings)
            })
            .collect::<Result<Vec<_>, _>>()?;
        *it = iterator(results);
        Ok(())
    })
}

/// The next result (the caller owns it: `gribjump_delete_result`), or
/// `GRIBJUMP_ITERATOR_COMPLETE` (and `*result` untouched).
///
/// # Safety
/// `result` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn gribjump_extractioniterator_next(
    it: *mut gribjump_extractioniterator_t,
    result: *mut *mut gribjump_extraction_result_t,
) -> c_int {
    guarded(
        "gribjump_extractioniterator_next",
        GRIBJUMP_ITERATOR_SUCCESS,
        GRIBJUMP_ITERATOR_ERROR,
        || {
            // SAFETY: the caller's promise.
            let result = unsafe { out(result, "result (the out-pointer)") }?;
            let it = registry::get::<IteratorObj>(it as *const c_void)?;
            let next = it.0.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
            match next {
                Some(r) => {
                    *result = registry::insert(ResultObj(r)).cast();
                    Ok(GRIBJUMP_ITERATOR_SUCCESS)
                }
                None => Ok(GRIBJUMP_ITERATOR_COMPLETE),
            }
        },
    )
}

/// Delete an iterator (and the results it has not returned).
#[no_mangle]
pub extern "C" fn gribjump_extractioniterator_delete(
    it: *const gribjump_extractioniterator_t,
) -> c_int {
    entry("gribjump_extractioniterator_delete", || {
        registry::remove::<IteratorObj>(it as *const c_void)?;
        Ok(())
    })
}

/// An empty result.
///
/// # Safety
/// `result` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn gribjump_new_result(
    result: *mut *mut gribjump_extraction_result_t,
) -> c_int {
    entry("gribjump_new_result", || {
        // SAFETY: the caller's promise.
        let result = unsafe { out(result, "result (the out-pointer)") }?;
        *result = registry::insert(ResultObj(ResultData::default())).cast();
        Ok(())
    })
}

/// Copy the result's `nvalues` values (all of them: the ranges' total
/// length) into the buffer `values[0]` points to.
///
/// # Safety
/// `values` is NULL (an error) or points to a pointer to `nvalues`
/// writable doubles.
#[no_mangle]
pub unsafe extern "C" fn gribjump_result_values(
    result: *mut gribjump_extraction_result_t,
    values: *mut *mut f64,
    nvalues: usize,
) -> c_int {
    entry("gribjump_result_values", || {
        let r = registry::get::<ResultObj>(result as *const c_void)?;
        if nvalues != r.0.values.len() {
            return Err(CError::new(format!(
                "nvalues is {nvalues} but the result holds {} values",
                r.0.values.len()
            )));
        }
        // SAFETY: the caller's promise.
        let buf = *unsafe { out(values, "values") }?;
        // SAFETY: as above.
        let buf = unsafe { slice_mut(buf, nvalues, "values[0]") }?;
        buf.copy_from_slice(&r.0.values);
        Ok(())
    })
}

/// Copy the result's `nmasks` mask words into the buffer `masks[0]`
/// points to.
///
/// # Safety
/// As [`gribjump_result_values`], for `nmasks` 64-bit words.
#[no_mangle]
pub unsafe extern "C" fn gribjump_result_mask(
    result: *mut gribjump_extraction_result_t,
    masks: *mut *mut u64,
    nmasks: usize,
) -> c_int {
    entry("gribjump_result_mask", || {
        let r = registry::get::<ResultObj>(result as *const c_void)?;
        if nmasks != r.0.masks.len() {
            return Err(CError::new(format!(
                "nmasks is {nmasks} but the result holds {} mask words",
                r.0.masks.len()
            )));
        }
        // SAFETY: the caller's promise.
        let buf = *unsafe { out(masks, "masks") }?;
        // SAFETY: as above.
        let buf = unsafe { slice_mut(buf, nmasks, "masks[0]") }?;
        buf.copy_from_slice(&r.0.masks);
        Ok(())
    })
}

/// Delete a result.
#[no_mangle]
pub extern "C" fn gribjump_delete_result(result: *mut gribjump_extraction_result_t) -> c_int {
    entry("gribjump_delete_result", || {
        registry::remove::<ResultObj>(result as *const c_void)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_have_one_bit_per_present_value_per_range() {
        let mut v = vec![1.0; 70];
        v[2] = f64::NAN;
        v[65] = f64::NAN;
        let r = ResultData::new(v, &[(0, 66), (100, 104)]);
        assert_eq!(r.masks.len(), 2 + 1);
        assert_eq!(r.masks[0], !(1u64 << 2));
        assert_eq!(r.masks[1], 0b01);
        assert_eq!(r.masks[2], 0b1111);
    }
}
