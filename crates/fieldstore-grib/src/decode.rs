//! A GRIB message's values and the keys that describe them, through ecCodes:
//! what array views (the Python package's xarray backend and Zarr store)
//! need to turn stored fields into arrays.
//!
//! - [`decode_values`] unpacks a message's values straight into the
//!   caller's buffer (single or double precision, no intermediate array),
//!   with missing points (bitmap or missing-value management) as NaN and rows scanned in
//!   alternating directions put in order, as cfgrib gives them.
//! - [`read_keys`] and [`read_array`] read metadata keys (`shortName`,
//!   `gridType`, `Ni`) and array keys (`latitudes`, `distinctLongitudes`).
//!
//! Each call makes its own handle, so calls on different threads never
//! share one; with a thread-safe ecCodes they run at once (see the `eccodes`
//! module: the lock is taken shared).

use std::ffi::{c_int, c_long, CString};

use fieldstore_core::{Error, ErrorKind, Result};

use crate::eccodes::{enter_shared, error_text, Handle, Session};
use crate::ffi;

/// The value cfgrib asks ecCodes to put where a point is missing (`numpy.finfo(float32).max`) before turning those points into
/// NaN: no real value reaches it in single precision, unlike ecCodes'
/// default of 9999.
const MISSING: f64 = f32::MAX as f64;

mod sealed {
    use std::ffi::{c_char, c_int, c_void};

    use crate::ffi;

    /// ecCodes' array getter of a sample type (kept out of the public API;
    /// `handle` is a `codes_handle*`).
    pub trait Sealed {
        /// # Safety
        /// `handle` is live; `key` is NUL-terminated; `out` is writable for
        /// `*len` elements.
        unsafe fn get_array(
            handle: *const c_void,
            key: *const c_char,
            out: *mut Self,
            len: *mut usize,
        ) -> c_int;
    }

    impl Sealed for f32 {
        unsafe fn get_array(
            handle: *const c_void,
            key: *const c_char,
            out: *mut f32,
            len: *mut usize,
        ) -> c_int {
            // SAFETY: as the trait method's contract.
            unsafe { ffi::codes_get_float_array(handle.cast(), key, out, len) }
        }
    }

    impl Sealed for f64 {
        unsafe fn get_array(
            handle: *const c_void,
            key: *const c_char,
            out: *mut f64,
            len: *mut usize,
        ) -> c_int {
            // SAFETY: as the trait method's contract.
            unsafe { ffi::codes_get_double_array(handle.cast(), key, out, len) }
        }
    }
}

/// A floating-point type values decode to: `f32` (cfgrib's default) or
/// `f64`. Sealed: ecCodes decodes to these two only.
pub trait Sample: Copy + PartialEq + sealed::Sealed + Send + 'static {
    /// Not a number, for missing points.
    const NAN: Self;
    /// `f32`: ecCodes may unpack in single precision.
    const SINGLE: bool;
    /// The missing-point marker (`MISSING`) in this type.
    fn missing() -> Self;
    /// `v` in this type, as ecCodes converts its doubles (rounded).
    fn from_f64(v: f64) -> Self;
}

impl Sample for f32 {
    const NAN: f32 = f32::NAN;
    const SINGLE: bool = true;
    fn missing() -> f32 {
        f32::MAX
    }
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
}

impl Sample for f64 {
    const NAN: f64 = f64::NAN;
    const SINGLE: bool = false;
    fn missing() -> f64 {
        MISSING
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
}

/// ecCodes' library cannot be loaded (see `ffi::load`).
fn no_eccodes(why: String) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        format!("ecCodes cannot be loaded: {why}"),
    )
}

fn invalid(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidInput, what.to_string())
}

/// `InvalidInput` if ecCodes failed an assertion in this session (see the
/// `eccodes` module's "Assertions"): the message fails, its handle is not
/// read further.
fn checked(session: &Session) -> Result<()> {
    session
        .check()
        .map_err(|problem| invalid(format_args!("GRIB message: {problem}")))
}

fn open<'a>(session: &Session, message: &'a [u8]) -> Result<Handle<'a>> {
    let handle = Handle::new(session, message);
    checked(session)?;
    handle.ok_or_else(|| {
        invalid(format!(
            "not a GRIB message ecCodes can decode: {}",
            session.said(|| "no handle".to_string())
        ))
    })
}

fn get_long(handle: &Handle<'_>, key: &std::ffi::CStr) -> Option<i64> {
    let mut v: c_long = 0;
    // SAFETY: the handle is live; `key` is NUL-terminated; `v` is a valid
    // out-pointer.
    let code = unsafe { ffi::codes_get_long(handle.raw, key.as_ptr(), &mut v) };
    #[allow(clippy::useless_conversion)]
    (code == ffi::CODES_SUCCESS).then(|| i64::from(v))
}

fn get_size(handle: &Handle<'_>, key: &std::ffi::CStr) -> std::result::Result<usize, c_int> {
    let mut n = 0usize;
    // SAFETY: the handle is live; `key` is NUL-terminated; `n` is a valid
    // out-pointer.
    let code = unsafe { ffi::codes_get_size(handle.raw, key.as_ptr(), &mut n) };
    if code == ffi::CODES_SUCCESS {
        Ok(n)
    } else {
        Err(code)
    }
}

/// The value ecCodes will put at the message's missing points, in `T`, or
/// `None` if it has none to mark.
///
/// Every way GRIB marks a point missing (a bitmap, in either edition; GRIB2
/// complex packing's missing-value management, which has no bitmap and
/// counts them in `numberOfMissing`) is unpacked by ecCodes as its
/// `missingValue` key. As cfgrib does, that key is set to [`MISSING`]
/// first, a value no real datum reaches in single precision (ecCodes'
/// default, 9999, is a real value in many fields), and is then the marker.
/// If ecCodes refuses the setting, the marker is the `missingValue` it
/// reports, used only when the message says it has missing points, so a
/// real value equal to it in a field without any stays a value.
fn missing_marker<T: Sample>(handle: &Handle<'_>) -> Option<T> {
    // SAFETY: the handle is live; `missingValue` is a transient key: the
    // handle's memory changes, never the message it borrows.
    let code = unsafe { ffi::codes_set_double(handle.raw, c"missingValue".as_ptr(), MISSING) };
    if code == ffi::CODES_SUCCESS {
        return Some(T::missing());
    }
    let bitmap = get_long(handle, c"bitmapPresent").unwrap_or(0) == 1;
    let counted = get_long(handle, c"numberOfMissing").unwrap_or(0) > 0;
    if !bitmap && !counted {
        return None;
    }
    let mut reported = 0f64;
    // SAFETY: the handle is live; `reported` is a valid out-pointer.
    let code =
        unsafe { ffi::codes_get_double(handle.raw, c"missingValue".as_ptr(), &mut reported) };
    (code == ffi::CODES_SUCCESS).then(|| T::from_f64(reported))
}

/// Refuse a message whose bitmap marks more points present than its data
/// section holds values: ecCodes 2.50 (`DataApplyBitmap::unpack`) fills
/// every present point from the coded values without checking their
/// count, reading past its own buffer (found by `tests/damaged.rs` under
/// valgrind, on a GRIB1 bitmap section grown by a byte). Costs reading the
/// bitmap once more, for messages that have one.
fn bitmap_fits(handle: &Handle<'_>) -> std::result::Result<(), String> {
    if get_long(handle, c"bitmapPresent") != Some(1) {
        return Ok(());
    }
    let Some(coded) = get_long(handle, c"numberOfCodedValues") else {
        return Err("the message has a bitmap but no readable number of coded values".into());
    };
    let n = get_size(handle, c"bitmap")
        .map_err(|code| format!("cannot read the message's bitmap: {}", error_text(code)))?;
    let mut bits = vec![0f64; n];
    let mut len = n;
    // SAFETY: the handle is live; `bits` is writable for `len` elements.
    let code = unsafe {
        ffi::codes_get_double_array(handle.raw, c"bitmap".as_ptr(), bits.as_mut_ptr(), &mut len)
    };
    if code != ffi::CODES_SUCCESS {
        return Err(format!(
            "cannot read the message's bitmap: {}",
            error_text(code)
        ));
    }
    let present = bits[..len.min(n)].iter().filter(|b| **b != 0.0).count();
    if present as i64 > coded {
        return Err(format!(
            "damaged GRIB message: its bitmap marks {present} points present, its data section \
             holds {coded} values"
        ));
    }
    Ok(())
}

/// Decode the values of the GRIB `message` into `out`, which must hold
/// exactly as many elements as the message has points.
///
/// Missing points become NaN, however the message marks them (a bitmap,
/// or complex packing's missing-value management: see `missing_marker`);
/// a grid scanned in alternating row directions (`alternativeRowScanning`)
/// has its odd rows reversed, so every row runs west to east as cfgrib
/// gives them, for the grid types cfgrib gives in 2-D (others, Mercator's,
/// keep ecCodes' order, as in cfgrib). Values are as ecCodes
/// unpacks them in `T`, except `f32` with a decimal scale factor, unpacked
/// in double precision and rounded: the bits cfgrib's default `float32`
/// arrays hold either way.
///
/// # Errors
/// `InvalidInput` if ecCodes cannot decode the message (what it said is in
/// the message), or the message's number of points is not `out.len()` (a
/// field on another grid than the array's).
pub fn decode_values<T: Sample>(message: &[u8], out: &mut [T]) -> Result<()> {
    let session = enter_shared().map_err(no_eccodes)?;
    let handle = open(&session, message)?;
    let n = get_size(&handle, c"values");
    checked(&session)?;
    let n = n.map_err(|code| {
        invalid(format!(
            "cannot read the values of the GRIB message: {}",
            session.said(|| error_text(code))
        ))
    })?;
    if n != out.len() {
        return Err(invalid(format!(
            "the GRIB message has {n} points, the array {} (a field on another grid)",
            out.len()
        )));
    }
    let marker = missing_marker::<T>(&handle);
    checked(&session)?;
    bitmap_fits(&handle).map_err(invalid)?;
    checked(&session)?;
    let mut len = out.len();
    // cfgrib unpacks in double precision and rounds to float32. ecCodes'
    // single-precision unpacking gives the same bits when the decimal
    // scale factor is 0 (ECMWF's fields; measured on simple, complex, CCSDS
    // and second-order packing, GRIB1 and GRIB2), not otherwise (a value
    // in 5 one bit off with D=1: 2.1000001 for 2.1): then double, rounded.
    let scaled = T::SINGLE && get_long(&handle, c"decimalScaleFactor").is_some_and(|d| d != 0);
    checked(&session)?;
    let code = if scaled {
        let mut wide = vec![0f64; out.len()];
        // SAFETY: the handle is live; `wide` is writable for `len`
        // elements, and ecCodes writes at most that many.
        let code = unsafe {
            <f64 as sealed::Sealed>::get_array(
                handle.raw.cast_const().cast(),
                c"values".as_ptr(),
                wide.as_mut_ptr(),
                &mut len,
            )
        };
        for (o, w) in out.iter_mut().zip(&wide) {
            *o = T::from_f64(*w);
        }
        code
    } else {
        // SAFETY: the handle is live; `out` is writable for `len` elements,
        // and ecCodes writes at most that many.
        unsafe {
            T::get_array(
                handle.raw.cast_const().cast(),
                c"values".as_ptr(),
                out.as_mut_ptr(),
                &mut len,
            )
        }
    };
    checked(&session)?;
    if code != ffi::CODES_SUCCESS || len != out.len() {
        return Err(invalid(format!(
            "cannot decode the values of the GRIB message: {}",
            session.said(|| error_text(code))
        )));
    }
    if let Some(errors) = session.errors() {
        return Err(invalid(format!(
            "ecCodes could not decode the GRIB message: {errors}"
        )));
    }
    if let Some(missing) = marker {
        for v in out.iter_mut().filter(|v| **v == missing) {
            *v = T::NAN;
        }
    }
    // Only the grids cfgrib gives in 2-D (its `GRID_TYPES_DIMENSION_COORDS`
    // and `GRID_TYPES_2D_NON_DIMENSION_COORDS`), as it rearranges only
    // those: any other grid (Mercator…), one `values` dimension, keeps
    // ecCodes' order.
    let mut kind = vec![0u8; 64];
    let grid_type = handle.get_string(c"gridType", &mut kind);
    checked(&session)?;
    let two_d = grid_type.is_ok_and(|k| {
        [
            &b"regular_ll"[..],
            b"regular_gg",
            b"rotated_ll",
            b"rotated_gg",
            b"lambert",
            b"lambert_azimuthal_equal_area",
            b"albers",
            b"polar_stereographic",
        ]
        .contains(&k)
    });
    if two_d && get_long(&handle, c"alternativeRowScanning") == Some(1) {
        let nx = get_long(&handle, c"Nx").unwrap_or(0);
        checked(&session)?;
        if nx > 0 {
            for row in out.chunks_mut(nx as usize).skip(1).step_by(2) {
                row.reverse();
            }
        }
    }
    checked(&session)
}

/// The number of values ecCodes decodes the GRIB `message` to (the length
/// of its `values`).
///
/// # Errors
/// `InvalidInput` if ecCodes cannot decode the message.
pub fn number_of_values(message: &[u8]) -> Result<usize> {
    let session = enter_shared().map_err(no_eccodes)?;
    let handle = open(&session, message)?;
    let n = get_size(&handle, c"values");
    checked(&session)?;
    n.map_err(|code| {
        invalid(format!(
            "cannot read the values of the GRIB message: {}",
            session.said(|| error_text(code))
        ))
    })
}

/// A key's value in its native ecCodes type.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyValue {
    /// An integer (also a code table's code: `stepUnits` is 1, not `h`).
    Long(i64),
    /// A floating-point number.
    Double(f64),
    /// A string.
    Str(String),
}

impl std::fmt::Display for KeyValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyValue::Long(v) => write!(f, "{v}"),
            KeyValue::Double(v) => write!(f, "{v}"),
            KeyValue::Str(v) => f.write_str(v),
        }
    }
}

/// The values of `keys` in the GRIB `message`, each in its native type
/// (as ecCodes' Python binding, and so cfgrib, gets them); `None` for a key
/// the message does not have.
///
/// # Errors
/// `InvalidInput` if ecCodes cannot decode the message, or a key name has
/// a NUL byte.
pub fn read_keys(message: &[u8], keys: &[&str]) -> Result<Vec<Option<KeyValue>>> {
    let names = keys
        .iter()
        .map(|k| CString::new(*k).map_err(|_| invalid(format!("key name {k:?} has a NUL byte"))))
        .collect::<Result<Vec<_>>>()?;
    let session = enter_shared().map_err(no_eccodes)?;
    let handle = open(&session, message)?;
    let mut buf = vec![0u8; 128];
    let mut values = Vec::with_capacity(names.len());
    for name in &names {
        let mut read = || {
            let mut kind: c_int = 0;
            // SAFETY: the handle is live; `name` is NUL-terminated; `kind`
            // is a valid out-pointer.
            let code = unsafe { ffi::codes_get_native_type(handle.raw, name.as_ptr(), &mut kind) };
            if code != ffi::CODES_SUCCESS {
                return None;
            }
            match kind {
                ffi::TYPE_LONG => get_long(&handle, name).map(KeyValue::Long),
                ffi::TYPE_DOUBLE => {
                    let mut v = 0f64;
                    // SAFETY: as above; `v` is a valid out-pointer.
                    let code = unsafe { ffi::codes_get_double(handle.raw, name.as_ptr(), &mut v) };
                    (code == ffi::CODES_SUCCESS).then_some(KeyValue::Double(v))
                }
                _ => None,
            }
            .or_else(|| {
                handle
                    .get_string(name, &mut buf)
                    .ok()
                    .map(|v| KeyValue::Str(String::from_utf8_lossy(v).into_owned()))
            })
        };
        let value = read();
        checked(&session)?;
        values.push(value);
    }
    // What ecCodes said about keys the message lacks is not an error here.
    let _ = session.errors();
    Ok(values)
}

/// The array key `key` of the GRIB `message` (`latitudes`, `longitudes`,
/// `distinctLatitudes`, `distinctLongitudes`, `pl`), in double precision.
///
/// # Errors
/// `InvalidInput` if ecCodes cannot decode the message or has no such
/// array for it (what it said is in the message).
pub fn read_array(message: &[u8], key: &str) -> Result<Vec<f64>> {
    let name =
        CString::new(key).map_err(|_| invalid(format!("key name {key:?} has a NUL byte")))?;
    let session = enter_shared().map_err(no_eccodes)?;
    let handle = open(&session, message)?;
    let unreadable = |code: c_int| {
        invalid(format!(
            "cannot read '{key}' of the GRIB message: {}",
            session.said(|| error_text(code))
        ))
    };
    let n = get_size(&handle, &name);
    checked(&session)?;
    let n = n.map_err(unreadable)?;
    let mut out = vec![0f64; n];
    let mut len = n;
    // SAFETY: the handle is live; `out` is writable for `len` elements.
    let code = unsafe {
        ffi::codes_get_double_array(handle.raw, name.as_ptr(), out.as_mut_ptr(), &mut len)
    };
    checked(&session)?;
    if code != ffi::CODES_SUCCESS {
        return Err(unreadable(code));
    }
    out.truncate(len);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!(
            "{}/../../tests/fixtures/grib/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    fn first(bytes: &[u8]) -> &[u8] {
        crate::split_messages(bytes)
            .next()
            .unwrap()
            .unwrap()
            .bytes()
    }

    fn points(m: &[u8]) -> usize {
        match read_keys(m, &["numberOfPoints"]).unwrap()[0] {
            Some(KeyValue::Long(n)) => n as usize,
            ref other => panic!("numberOfPoints: {other:?}"),
        }
    }

    #[test]
    fn single_and_double_precision_agree_after_rounding() {
        let file = fixture("levtypes.grib");
        let m = first(&file);
        let n = points(m);
        let mut f = vec![0f32; n];
        let mut d = vec![0f64; n];
        decode_values(m, &mut f).unwrap();
        decode_values(m, &mut d).unwrap();
        assert!(
            d.iter().any(|v| *v != d[0]),
            "a constant field tests nothing"
        );
        for (a, b) in f.iter().zip(&d) {
            assert_eq!(a.to_bits(), (*b as f32).to_bits());
        }
    }

    #[test]
    fn bitmap_points_are_nan() {
        // synth11.grib has a bitmap.
        let file = fixture("synth11.grib");
        let m = first(&file);
        let keys = read_keys(m, &["numberOfPoints", "numberOfMissing", "bitmapPresent"]).unwrap();
        assert_eq!(keys[2], Some(KeyValue::Long(1)));
        let n = points(m);
        let Some(KeyValue::Long(missing)) = keys[1] else {
            panic!("numberOfMissing: {:?}", keys[1])
        };
        let missing = missing as usize;
        let mut v = vec![0f32; n];
        decode_values(m, &mut v).unwrap();
        assert!(missing > 0);
        assert_eq!(v.iter().filter(|x| x.is_nan()).count(), missing);
    }

    #[test]
    fn missing_points_without_a_bitmap_are_nan() {
        // GRIB2 complex packing with missing-value management: no bitmap,
        // ecCodes' default marker (9999) where the points are missing.
        let m = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/grib-missing/complex-no-bitmap.grib"
        ))
        .unwrap();
        let keys = read_keys(&m, &["bitmapPresent", "numberOfMissing"]).unwrap();
        assert_eq!(keys[0], Some(KeyValue::Long(0)));
        assert_eq!(keys[1], Some(KeyValue::Long(71)));
        let n = points(&m);
        let mut f = vec![0f32; n];
        let mut d = vec![0f64; n];
        decode_values(&m, &mut f).unwrap();
        decode_values(&m, &mut d).unwrap();
        assert_eq!(f.iter().filter(|x| x.is_nan()).count(), 71);
        assert_eq!(d.iter().filter(|x| x.is_nan()).count(), 71);
        assert!(d.iter().all(|x| *x != 9999.0));
    }

    #[test]
    fn a_buffer_of_the_wrong_size_is_refused_and_left_alone() {
        let file = fixture("levtypes.grib");
        let mut v = vec![7f32; 3];
        let e = decode_values(first(&file), &mut v).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("points"), "{e}");
        assert_eq!(v, [7.0; 3]);
    }

    #[test]
    fn garbage_is_refused() {
        let mut v = vec![0f64; 4];
        let e = decode_values(b"GRIB not really", &mut v).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn keys_and_arrays() {
        let file = fixture("levtypes.grib");
        let m = first(&file);
        let k = read_keys(
            m,
            &[
                "shortName",
                "gridType",
                "noSuchKey",
                "stepUnits",
                "iDirectionIncrementInDegrees",
            ],
        )
        .unwrap();
        assert_eq!(k[0], Some(KeyValue::Str("t".into())));
        assert_eq!(k[1], Some(KeyValue::Str("regular_ll".into())));
        assert_eq!(k[2], None);
        assert_eq!(k[3], Some(KeyValue::Long(1)));
        assert_eq!(k[4], Some(KeyValue::Double(10.0)));
        let lats = read_array(m, "distinctLatitudes").unwrap();
        assert!(lats.len() > 1);
        assert!(read_array(m, "noSuchKey").is_err());
    }

    #[test]
    fn the_wheel_is_thread_safe_and_threads_agree() {
        let file = fixture("timespan.grib");
        let messages: Vec<&[u8]> = crate::split_messages(&file)
            .map(|m| m.unwrap().bytes())
            .collect();
        let n = points(messages[0]);
        let serial: Vec<Vec<f32>> = messages
            .iter()
            .map(|m| {
                let mut v = vec![0f32; n];
                decode_values(m, &mut v).unwrap();
                v
            })
            .collect();
        let parallel: Vec<Vec<f32>> = std::thread::scope(|s| {
            let handles: Vec<_> = messages
                .iter()
                .map(|m| {
                    s.spawn(move || {
                        let mut v = vec![0f32; n];
                        decode_values(m, &mut v).unwrap();
                        v
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(serial.len(), parallel.len());
        for (a, b) in serial.iter().zip(&parallel) {
            assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
    }
}
