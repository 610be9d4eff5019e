//! The C boundary of `libgribjump` (called as C would, through the rlib):
//! bad tokens and arguments are error codes with messages naming them,
//! never crashes; an extraction gives ecCodes' values and GribJump's masks;
//! the iterator ends; the axes' strings are the store's. (Bitmaps and
//! missing values: `tests/python/test_polytope.py`, against GribJump.)

use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use fieldstore::{FieldStore, ListOptions, Request};
use fieldstore_grib::ArchiveGrib;
use gribjump::axes::*;
use gribjump::extraction::*;
use gribjump::handle::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/grib/rd-fc.grib"
);

struct Store {
    /// The fixture's one field: its key as a request, its grid hash, its
    /// values as ecCodes decodes them.
    request: String,
    hash: String,
    values: Vec<f64>,
}

/// One store for the whole test binary, named by `FIELDSTORE_ROOT` before
/// any handle is made.
fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        for var in [
            "FIELDSTORE_CONFIG",
            "FDB_HOME",
            "FDB5_HOME",
            "FDB5_CONFIG_FILE",
            "FDB_CONFIG_FILE",
            "FDB5_CONFIG",
            "FDB_CONFIG",
            "GRIBJUMP_CONFIG_FILE",
            "GRIBJUMP_IGNORE_GRID",
            "GRIBJUMP_THREADS",
        ] {
            std::env::remove_var(var);
        }
        std::env::set_var("FIELDSTORE_ROOT", &dir);
        let file = std::fs::read(FIXTURE).unwrap();
        let message = fieldstore_grib::split_messages(&file)
            .next()
            .unwrap()
            .unwrap();
        let bytes = message.bytes();
        let fs = FieldStore::open(fieldstore::fdb5_config::from_environment().unwrap()).unwrap();
        fs.archive_grib(bytes).unwrap();
        fs.flush().unwrap();
        let listed = fs.list(&Request::new(), ListOptions::default()).unwrap();
        let key = listed
            .iter()
            .find(|e| e.location.is_some())
            .unwrap()
            .full_key();
        let n = fieldstore_grib::number_of_values(message.bytes()).unwrap();
        let mut values = vec![0f64; n];
        fieldstore_grib::decode_values(message.bytes(), &mut values).unwrap();
        Store {
            request: format!("retrieve,{key}"),
            hash: gribjump::grid_hash::of_message(&mut message.bytes()).unwrap(),
            values,
        }
    })
}

fn last_error() -> String {
    // SAFETY: the library returns a NUL-terminated string it keeps.
    unsafe { CStr::from_ptr(gribjump::error::gribjump_error_string()) }
        .to_string_lossy()
        .into_owned()
}

fn handle() -> *mut gribjump_handle_t {
    store();
    let mut h = null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(
        unsafe { gribjump_new_handle(&mut h) },
        0,
        "{}",
        last_error()
    );
    h
}

fn request(
    text: &str,
    ranges: &[usize],
    hash: Option<&str>,
) -> (i32, *mut gribjump_extraction_request_t) {
    let text = CString::new(text).unwrap();
    let hash = hash.map(|h| CString::new(h).unwrap());
    let mut r = null_mut();
    // SAFETY: valid strings and array for the call.
    let rc = unsafe {
        gribjump_new_request(
            &mut r,
            text.as_ptr(),
            ranges.as_ptr(),
            ranges.len(),
            hash.as_ref().map_or(null(), |h| h.as_ptr()),
        )
    };
    (rc, r)
}

#[test]
fn bad_tokens_are_errors_naming_the_argument() {
    assert_eq!(gribjump_delete_handle(null_mut()), 1);
    assert!(
        last_error().contains("gribjump_handle_t argument is NULL"),
        "{}",
        last_error()
    );
    let h = handle();
    // A handle passed as a request.
    assert_eq!(gribjump_delete_request(h.cast()), 1);
    assert!(
        last_error().contains("is a gribjump_handle_t, not a gribjump_extraction_request_t"),
        "{}",
        last_error()
    );
    // Never issued.
    assert_eq!(gribjump_delete_axes(0x1234_5600 as *mut gribjump_axes_t), 1);
    assert!(
        last_error().contains("not an object this library created"),
        "{}",
        last_error()
    );
    // Deleted twice.
    assert_eq!(gribjump_delete_handle(h), 0);
    assert_eq!(gribjump_delete_handle(h), 1);
    assert!(last_error().contains("was deleted"), "{}", last_error());
    // NULL out-pointers.
    // SAFETY: NULL is what is being checked.
    assert_eq!(unsafe { gribjump_new_handle(null_mut()) }, 1);
    assert!(last_error().contains("is NULL"));
    // SAFETY: as above.
    assert_eq!(unsafe { gribjump_new_result(null_mut()) }, 1);
    let mut it = null_mut();
    // SAFETY: a deleted handle and an empty request array.
    assert_eq!(
        unsafe { gribjump_extract(h, null_mut(), 0, null(), &mut it) },
        1
    );
    assert!(last_error().contains("was deleted"), "{}", last_error());
    let mut res = null_mut();
    // SAFETY: a NULL iterator, checked.
    assert_eq!(
        unsafe { gribjump_extractioniterator_next(null_mut(), &mut res) },
        2
    );
}

#[test]
fn bad_requests_are_errors() {
    let s = store();
    let (rc, _) = request("retrieve,class", &[0, 1], None);
    assert_eq!(rc, 1);
    assert!(last_error().contains("the request"), "{}", last_error());
    let (rc, _) = request(&s.request, &[5, 5], None);
    assert_eq!(rc, 1);
    assert!(
        last_error().contains("empty or reversed"),
        "{}",
        last_error()
    );
    let (rc, _) = request(&s.request, &[0, 1, 2], None);
    assert_eq!(rc, 1);
    assert!(last_error().contains("pairs"), "{}", last_error());
    // SAFETY: NULL ranges with a count: checked.
    let rc = unsafe {
        let text = CString::new(s.request.as_str()).unwrap();
        let mut r = null_mut();
        gribjump_new_request(&mut r, text.as_ptr(), null(), 2, null())
    };
    assert_eq!(rc, 1);
    assert!(last_error().contains("NULL"), "{}", last_error());
    let h = handle();
    let mut axes = null_mut();
    let text = CString::new("class=rd").unwrap();
    // SAFETY: valid arguments but the level.
    assert_eq!(
        unsafe { gribjump_new_axes(h, text.as_ptr(), 7, null(), &mut axes) },
        1
    );
    assert!(last_error().contains("level 7"), "{}", last_error());
    gribjump_delete_handle(h);
}

#[test]
fn an_extraction_gives_eccodes_values_and_gribjumps_masks() {
    let s = store();
    let h = handle();
    let n = s.values.len();
    let ranges = [0usize, 70, n - 10, n];
    let (rc, r) = request(&s.request, &ranges, Some(&s.hash));
    assert_eq!(rc, 0, "{}", last_error());
    let (rc, wrong) = request(&s.request, &ranges, Some("0123"));
    assert_eq!(rc, 0);
    let mut it = null_mut();
    let mut reqs = [wrong];
    // SAFETY: one live request.
    assert_eq!(
        unsafe { gribjump_extract(h, reqs.as_mut_ptr(), 1, null(), &mut it) },
        1
    );
    assert!(
        last_error().contains("Grid hash mismatch"),
        "{}",
        last_error()
    );
    let mut reqs = [r];
    // SAFETY: as above.
    assert_eq!(
        unsafe { gribjump_extract(h, reqs.as_mut_ptr(), 1, null(), &mut it) },
        0,
        "{}",
        last_error()
    );
    let mut res = null_mut();
    // SAFETY: a live iterator and an out-pointer.
    assert_eq!(unsafe { gribjump_extractioniterator_next(it, &mut res) }, 0);
    let mut values = vec![0f64; 80];
    let mut p = values.as_mut_ptr();
    // SAFETY: a buffer of 80 doubles, announced as 79: refused.
    assert_eq!(unsafe { gribjump_result_values(res, &mut p, 79) }, 1);
    assert!(last_error().contains("holds 80 values"), "{}", last_error());
    // SAFETY: 80 doubles.
    assert_eq!(unsafe { gribjump_result_values(res, &mut p, 80) }, 0);
    let want: Vec<f64> = s.values[..70]
        .iter()
        .chain(&s.values[n - 10..])
        .copied()
        .collect();
    for (a, b) in values.iter().zip(&want) {
        assert!(
            a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan() || *b == 9999.0 && a.is_nan(),
            "{a} {b}"
        );
    }
    let mut masks = vec![0u64; 3];
    let mut m = masks.as_mut_ptr();
    // SAFETY: 3 words: 2 for the first range, 1 for the second.
    assert_eq!(
        unsafe { gribjump_result_mask(res, &mut m, 3) },
        0,
        "{}",
        last_error()
    );
    for (k, v) in values.iter().enumerate() {
        let (word, bit) = if k < 70 {
            (k / 64, k % 64)
        } else {
            (2, k - 70)
        };
        assert_eq!(masks[word] >> bit & 1 == 1, !v.is_nan(), "value {k}");
    }
    assert_eq!(
        masks,
        [!0, (1 << 6) - 1, (1 << 10) - 1],
        "no bitmap: all present"
    );
    let mut again = null_mut();
    // SAFETY: as above.
    assert_eq!(
        unsafe { gribjump_extractioniterator_next(it, &mut again) },
        1,
        "complete"
    );
    assert!(again.is_null());
    assert_eq!(gribjump_delete_result(res), 0);
    assert_eq!(gribjump_extractioniterator_delete(it), 0);
    assert_eq!(gribjump_delete_request(r), 0);
    assert_eq!(gribjump_delete_request(wrong), 0);
    assert_eq!(gribjump_delete_handle(h), 0);
}

#[test]
fn axes_hand_out_the_stores_values() {
    let s = store();
    let h = handle();
    let text = CString::new("").unwrap();
    let mut axes = null_mut();
    // SAFETY: valid arguments.
    assert_eq!(
        unsafe { gribjump_new_axes(h, text.as_ptr(), 3, null(), &mut axes) },
        0,
        "{}",
        last_error()
    );
    let mut n = 0usize;
    // SAFETY: a live axes object and an out-pointer.
    assert_eq!(unsafe { gribjump_axes_keys_size(axes, &mut n) }, 0);
    let mut keys: Vec<*const c_char> = vec![null(); n];
    // SAFETY: n slots.
    assert_eq!(unsafe { gribjump_axes_keys(axes, keys.as_mut_ptr(), n) }, 0);
    let mut seen = Vec::new();
    for &k in &keys {
        let mut m = 0usize;
        // SAFETY: a key the axes gave.
        assert_eq!(unsafe { gribjump_axes_values_size(axes, k, &mut m) }, 0);
        let mut vs: Vec<*const c_char> = vec![null(); m];
        // SAFETY: m slots.
        assert_eq!(
            unsafe { gribjump_axes_values(axes, k, vs.as_mut_ptr(), m) },
            0
        );
        // SAFETY: strings the axes own.
        let key = unsafe { CStr::from_ptr(k) }.to_str().unwrap().to_string();
        for v in vs {
            // SAFETY: as above.
            let v = unsafe { CStr::from_ptr(v) }.to_str().unwrap();
            if !v.is_empty() {
                seen.push(format!("{key}={v}"));
            }
        }
    }
    for kv in s.request.trim_start_matches("retrieve,").split(',') {
        assert!(seen.contains(&kv.to_string()), "{kv} not among {seen:?}");
    }
    let bad = CString::new("nosuchkey").unwrap();
    let mut m = 0usize;
    // SAFETY: valid arguments.
    assert_eq!(
        unsafe { gribjump_axes_values_size(axes, bad.as_ptr(), &mut m) },
        1
    );
    assert!(
        last_error().contains("no key \"nosuchkey\""),
        "{}",
        last_error()
    );
    assert_eq!(gribjump_delete_axes(axes), 0);
    gribjump_delete_handle(h);
}

#[test]
fn versions_are_gribjump_0_13_1s() {
    // SAFETY: static strings.
    let v = unsafe { CStr::from_ptr(gribjump_version()) }
        .to_str()
        .unwrap();
    assert_eq!(v, "0.13.1");
    assert_eq!(gribjump_version_int(), 1301);
    // SAFETY: as above.
    assert!(unsafe { CStr::from_ptr(gribjump_git_sha1()) }
        .to_str()
        .unwrap()
        .starts_with("fieldstore "));
    assert_eq!(gribjump_initialise(), 0);
}
