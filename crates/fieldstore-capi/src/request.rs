//! `fdb_request_t`: what to list, retrieve, wipe or purge.
//!
//! A request holds each keyword's values as given, split on `/` (FDB5's
//! quirk, kept: `{"1/2", "3"}` is three values and `0/to/12/by/6` a range).
//! It becomes a [`fieldstore::Request`] when used, so values are matched in
//! canonical form whatever their spelling, expanded or not.
//!
//! `fdb_expand_request` (FDB5: metkit's MARS expansion) checks the values
//! and rewrites them in canonical form with the types ECMWF's schema gives
//! their keywords, ranges enumerated, so that `fdb_request_get` shows what
//! will be matched. Keywords ECMWF's schema does not know are kept as given
//! (the handle's schema judges them when the request is used). Short
//! parameter names (`2t`) become parameter ids (167) through ecCodes'
//! parameter database, as MARS resolves them (the schema's parameter
//! table, `fieldstore_grib::param_names`, the same the handles use); an
//! unknown name is an error naming it.

use std::ffi::{c_char, c_int};
use std::sync::{LazyLock, Mutex};

use fieldstore::{Item, Request, Schema, Values};

use crate::error::{entry, CError, FDB_SUCCESS};
use crate::kind::Kind;
use crate::registry::{self, Object};
use crate::util::{c_str, lock, out};

/// The most values one range may expand to in `fdb_expand_request`; a
/// longer range is kept as a range (it is matched arithmetically anyway).
pub const EXPAND_LIMIT: u64 = 100_000;

/// A request's state.
#[derive(Debug, Default, Clone)]
pub struct RequestState {
    /// Keywords (lower-cased) in the order first given, with their values.
    pub entries: Vec<(String, Vec<String>)>,
    /// Keywords whose range `fdb_expand_request` kept as a range (longer
    /// than [`EXPAND_LIMIT`]): expanded as far as fieldstore expands, so
    /// `fdb_retrieve` takes them. Setting the keyword again forgets it.
    pub kept_ranges: Vec<String>,
}

impl RequestState {
    /// Set `keyword`'s values, replacing earlier ones.
    pub fn set(&mut self, keyword: &str, values: Vec<String>) {
        let keyword = keyword.to_ascii_lowercase();
        self.kept_ranges.retain(|k| *k != keyword);
        match self.entries.iter_mut().find(|(k, _)| *k == keyword) {
            Some(e) => e.1 = values,
            None => self.entries.push((keyword, values)),
        }
    }

    /// The first keyword whose values hold a range (`a/to/b`) that
    /// `fdb_expand_request` did not expand, with its values.
    pub fn unexpanded_range(&self) -> Option<&(String, Vec<String>)> {
        self.entries
            .iter()
            .find(|(k, values)| !self.kept_ranges.contains(k) && values.iter().any(|v| is_range(v)))
    }

    /// What `fdb_expand_request` makes of the request (see the module
    /// documentation), remembering the ranges it kept.
    ///
    /// # Errors
    /// `InvalidInput`: values no type of their keyword takes, unknown
    /// parameter names.
    pub fn expanded(&self) -> Result<RequestState, CError> {
        let given = self.to_request()?;
        let request = LANGUAGE.resolve_request(&given)?;
        let mut out = RequestState::default();
        for (keyword, values) in request.iter() {
            out.set(keyword, canonical_values(keyword, values)?);
            if out.unexpanded_range().is_some_and(|(k, _)| k == keyword) {
                out.kept_ranges.push(keyword.to_string());
            }
        }
        Ok(out)
    }

    /// As a fieldstore request to retrieve, FDB5's way: a range not
    /// expanded by `fdb_expand_request` is refused, as FDB5's
    /// `fdb_retrieve` refuses it (its keyword types fail on the value
    /// `to`: `Invalid date to`; metkit, not `fdb_retrieve`, expands ranges).
    ///
    /// # Errors
    /// `InvalidInput` naming the keyword and its values; those of
    /// [`RequestState::to_request`].
    pub fn to_retrieve_request(&self) -> Result<Request, CError> {
        if let Some((keyword, values)) = self.unexpanded_range() {
            return Err(CError::invalid(format!(
                "the request's {keyword}={} is a range not expanded: fdb_retrieve (as FDB5's) \
                 takes values, not ranges; call fdb_expand_request first, which enumerates it",
                values.join("/")
            )));
        }
        self.to_request()
    }

    /// As a fieldstore request.
    ///
    /// # Errors
    /// `InvalidInput`: a keyword without values, or values that do not
    /// parse (`1/to`).
    pub fn to_request(&self) -> Result<Request, CError> {
        if let Some((k, _)) = self.entries.iter().find(|(_, v)| v.is_empty()) {
            return Err(CError::invalid(format!(
                "keyword '{k}' has no values in the request"
            )));
        }
        Ok(Request::from_pairs(
            self.entries.iter().map(|(k, v)| (k.as_str(), v.iter())),
        )?)
    }
}

/// Whether a value, as held, is or holds FDB5's range word `to` (a value
/// `fdb_expand_request` kept whole, of a keyword ECMWF's schema lacks,
/// holds the range written out: `1/to/3`).
fn is_range(value: &str) -> bool {
    value.eq_ignore_ascii_case("to") || value.to_ascii_lowercase().contains("/to/")
}

/// `fdb_request_t`.
#[derive(Debug, Default)]
pub struct RequestObj(pub(crate) Mutex<RequestState>);

impl Object for RequestObj {
    const KIND: Kind = Kind::Request;
}

/// Opaque C type `fdb_request_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_request_t {
    _private: [u8; 0],
}

/// A new, empty request (names everything).
///
/// # Safety
/// `req` is NULL (an error) or points to writable memory for a pointer.
#[no_mangle]
pub unsafe extern "C" fn fdb_new_request(req: *mut *mut fdb_request_t) -> c_int {
    entry("fdb_new_request", || {
        // SAFETY: the caller's promise.
        let req = unsafe { out(req, "req (the out-pointer)") }?;
        *req = registry::insert(RequestObj::default()).cast();
        Ok(FDB_SUCCESS)
    })
}

/// Set `param`'s values to `values[0..numValues]`, each split on `/`
/// (empty pieces dropped), replacing earlier values.
///
/// # Safety
/// `param` is NULL or a NUL-terminated string; `values` is NULL or points
/// to `numValues` pointers, each NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fdb_request_add(
    req: *mut fdb_request_t,
    param: *const c_char,
    values: *const *const c_char,
    num_values: c_int,
) -> c_int {
    entry("fdb_request_add", || {
        let r = registry::get::<RequestObj>(req.cast())?;
        // SAFETY: the caller's promise.
        let param = unsafe { c_str(param, "param") }?;
        let n = usize::try_from(num_values)
            .map_err(|_| CError::invalid(format!("numValues is negative ({num_values})")))?;
        if values.is_null() {
            return Err(CError::invalid("values is NULL"));
        }
        let mut split = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: `values` points to `n` pointers (the caller's promise).
            let p = unsafe { *values.add(i) };
            // SAFETY: each is NULL or a NUL-terminated string.
            let v = unsafe { c_str(p, &format!("values[{i}]")) }?;
            split.extend(v.split('/').filter(|s| !s.is_empty()).map(str::to_string));
        }
        lock(&r.0).set(param, split);
        Ok(FDB_SUCCESS)
    })
}

/// `param`'s values as a new array of new strings (`malloc`ed: the caller
/// frees each string and the array with `free`).
///
/// # Safety
/// `param` is NULL or a NUL-terminated string; `values` and `numValues` are
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_request_get(
    req: *mut fdb_request_t,
    param: *const c_char,
    values: *mut *mut *mut c_char,
    num_values: *mut usize,
) -> c_int {
    entry("fdb_request_get", || {
        let r = registry::get::<RequestObj>(req.cast())?;
        // SAFETY: the caller's promises.
        let (param, values, num_values) = unsafe {
            (
                c_str(param, "param")?,
                out(values, "values (the out-pointer)")?,
                out(num_values, "numValues")?,
            )
        };
        let keyword = param.to_ascii_lowercase();
        let state = lock(&r.0);
        let Some((_, vs)) = state.entries.iter().find(|(k, _)| *k == keyword) else {
            return Err(CError::invalid(format!(
                "the request has no keyword '{param}'"
            )));
        };
        *values = malloc_strings(vs)?;
        *num_values = vs.len();
        Ok(FDB_SUCCESS)
    })
}

/// An array of `malloc`ed copies of `strings`, itself `malloc`ed.
fn malloc_strings(strings: &[String]) -> Result<*mut *mut c_char, CError> {
    let oom = || CError::new(fieldstore::ErrorKind::Io, "out of memory");
    // SAFETY: malloc of a non-zero size; checked for NULL.
    let array = unsafe { libc::malloc(strings.len().max(1) * size_of::<*mut c_char>()) }
        .cast::<*mut c_char>();
    if array.is_null() {
        return Err(oom());
    }
    for (i, s) in strings.iter().enumerate() {
        // SAFETY: malloc; checked for NULL below.
        let p = unsafe { libc::malloc(s.len() + 1) }.cast::<c_char>();
        if p.is_null() {
            for j in 0..i {
                // SAFETY: the strings allocated so far, then the array.
                unsafe { libc::free((*array.add(j)).cast()) };
            }
            // SAFETY: allocated above.
            unsafe { libc::free(array.cast()) };
            return Err(oom());
        }
        // SAFETY: `p` has room for the bytes and the NUL; `array` for
        // `strings.len()` pointers.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), p, s.len());
            *p.add(s.len()) = 0;
            *array.add(i) = p;
        }
    }
    Ok(array)
}

/// ECMWF's schema, whose keyword types stand for MARS's language, with
/// ecCodes' parameter names (as the handles have).
static LANGUAGE: LazyLock<Schema> =
    LazyLock::new(|| Schema::ecmwf().with_param_names(fieldstore_grib::param_names()));

/// The canonical values of one keyword, in the keyword's first type in
/// ECMWF's schema (its global declaration: `date: Date`), ranges
/// enumerated. A value that type refuses but another of the keyword's types
/// accepts (`date=jan-01` of a climatology) is kept as written; one no type
/// accepts is an error.
fn canonical_values(keyword: &str, values: &Values) -> Result<Vec<String>, CError> {
    let types = LANGUAGE.types_of(keyword);
    let Values::Items(items) = values else {
        return Ok(vec!["all".to_string()]);
    };
    let Some((&first, others)) = types.split_first() else {
        return Ok(items.iter().map(ToString::to_string).collect());
    };
    let mut out = Vec::new();
    for item in items {
        let refused = match item {
            Item::Value(v) => match first.canonical(v) {
                Ok(c) => {
                    out.push(c);
                    continue;
                }
                Err(e) => e,
            },
            Item::Range { from, to, by } => match first.range(from, to, by.as_deref()) {
                Ok(r) if r.len() <= EXPAND_LIMIT => {
                    out.extend(r.iter());
                    continue;
                }
                Ok(r) => {
                    out.extend(r.to_request_string().split('/').map(str::to_string));
                    continue;
                }
                Err(e) => e,
            },
        };
        let accepted = others.iter().any(|ty| match item {
            Item::Value(v) => ty.canonical(v).is_ok(),
            Item::Range { from, to, by } => ty.range(from, to, by.as_deref()).is_ok(),
        });
        if !accepted {
            return Err(CError::invalid(format!("keyword '{keyword}': {refused}")));
        }
        out.extend(item.to_string().split('/').map(str::to_string));
    }
    Ok(out)
}

/// Check the request's values and rewrite them in canonical form, ranges
/// enumerated (see the module documentation).
#[no_mangle]
pub extern "C" fn fdb_expand_request(req: *mut fdb_request_t) -> c_int {
    entry("fdb_expand_request", || {
        let r = registry::get::<RequestObj>(req.cast())?;
        let mut state = lock(&r.0);
        *state = state.expanded()?;
        Ok(FDB_SUCCESS)
    })
}

/// Release a request.
#[no_mangle]
pub extern "C" fn fdb_delete_request(req: *mut fdb_request_t) -> c_int {
    entry("fdb_delete_request", || {
        registry::remove::<RequestObj>(req.cast())?;
        Ok(FDB_SUCCESS)
    })
}

/// The request `req` names as a fieldstore request; NULL is `None`.
pub(crate) fn request_of(req: *const fdb_request_t) -> Result<Option<Request>, CError> {
    if req.is_null() {
        return Ok(None);
    }
    let r = registry::get::<RequestObj>(req.cast())?;
    let state = lock(&r.0);
    state.to_request().map(Some)
}

/// The request `req` names as a fieldstore request to retrieve
/// ([`RequestState::to_retrieve_request`]); NULL is `None`.
pub(crate) fn retrieve_request_of(req: *const fdb_request_t) -> Result<Option<Request>, CError> {
    if req.is_null() {
        return Ok(None);
    }
    let r = registry::get::<RequestObj>(req.cast())?;
    let state = lock(&r.0);
    state.to_retrieve_request().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(pairs: &[(&str, &[&str])]) -> Result<RequestState, CError> {
        let mut s = RequestState::default();
        for (k, v) in pairs {
            s.set(k, v.iter().map(|x| x.to_string()).collect());
        }
        s.expanded()
    }

    #[test]
    fn retrieve_refuses_ranges_expand_did_not_enumerate() {
        let mut s = RequestState::default();
        s.set(
            "date",
            vec!["20191110".into(), "to".into(), "20191111".into()],
        );
        let e = s.to_retrieve_request().unwrap_err();
        assert!(
            e.message
                .contains("date=20191110/to/20191111 is a range not expanded"),
            "{}",
            e.message
        );
        assert!(s.to_request().is_ok(), "listing takes ranges");
        let expanded = s.expanded().unwrap();
        assert_eq!(expanded.entries[0].1, ["20191110", "20191111"]);
        assert!(expanded.to_retrieve_request().is_ok());
        // Kept as a range by the expansion (too long): taken.
        let long = expand(&[("step", &["0", "to", "100000000"])]).unwrap();
        assert_eq!(long.kept_ranges, ["step"]);
        assert!(long.to_retrieve_request().is_ok());
        // Set again by the caller: an unexpanded range again.
        let mut again = long.clone();
        again.set("step", vec!["0".into(), "to".into(), "6".into()]);
        assert!(again.to_retrieve_request().is_err());
    }

    #[test]
    fn expansion_canonicalises_and_enumerates() {
        let s = expand(&[
            ("step", &["0", "to", "12", "by", "6", "24"]),
            ("date", &["20230101", "to", "20230103"]),
            ("time", &["12"]),
            ("expver", &["1"]),
            ("levelist", &["500"]),
            ("foo", &["Bar"]),
            ("param", &["all"]),
        ])
        .unwrap();
        let get = |k: &str| s.entries.iter().find(|(x, _)| x == k).unwrap().1.clone();
        assert_eq!(get("step"), ["0", "6", "12", "24"]);
        assert_eq!(get("date"), ["20230101", "20230102", "20230103"]);
        assert_eq!(get("time"), ["1200"]);
        assert_eq!(get("expver"), ["0001"]);
        assert_eq!(get("levelist"), ["500"]);
        assert_eq!(get("foo"), ["Bar"]);
        assert_eq!(get("param"), ["all"]);
        let s = expand(&[("param", &["2t", "130", "167.128", "T", "3.228", "sst"])]).unwrap();
        assert_eq!(s.entries[0].1, ["167", "130", "167", "130", "228003", "34"]);
        // An unknown name is an error naming it (FDB5: "Cannot match
        // parameter nosuchname").
        let e = expand(&[("param", &["2t", "nosuchname"])]).unwrap_err();
        assert!(e.message.contains("'nosuchname'"), "{}", e.message);
    }

    #[test]
    fn expansion_refuses_bad_values_and_keeps_huge_ranges() {
        let e = expand(&[("step", &["abc"])]).unwrap_err();
        assert!(e.message.contains("step"), "{}", e.message);
        let e = expand(&[("time", &["2599"])]).unwrap_err();
        assert!(e.message.contains("time"), "{}", e.message);
        // Another type of the keyword accepts it: kept as written.
        let s = expand(&[("date", &["jan-01"])]).unwrap();
        assert_eq!(s.entries[0].1, ["jan-01"]);
        let s = expand(&[("step", &["0", "to", "100000000"])]).unwrap();
        assert_eq!(s.entries[0].1.join("/"), "0/to/100000000/by/12");
        let e = expand(&[("step", &[])]).unwrap_err();
        assert!(e.message.contains("no values"), "{}", e.message);
    }
}
