//! `fdb_datareader_t`: the bytes of retrieved fields, as one seekable
//! stream.
//!
//! `fdb_retrieve` looks the fields up; the reader then reads one field at
//! a time through the store, which verifies its checksum before any byte of
//! it is returned, and tells the store which fields come next
//! (the handle's read-ahead). A seek into another field reads that field whole.
//!
//! Differences from FDB5, none of which a working client can notice:
//! `open` is optional and may be called again (it rewinds; FDB5 fails the
//! second call); reading before `open` reads (FDB5 returns 0 bytes); a
//! negative count is an error (FDB5 reads nothing).

use std::ffi::{c_int, c_long, c_void};
use std::sync::{Arc, Mutex};

use fieldstore::{FieldLocation, FieldStore, FieldStream};

use crate::error::{entry, CError, FDB_SUCCESS};
use crate::kind::Kind;
use crate::registry::{self, Object};
use crate::util::{lock, out};

/// Opaque C type `fdb_datareader_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct fdb_datareader_t {
    _private: [u8; 0],
}

/// The fields of one retrieve, as a stream ([`FieldStream`]), with the
/// bounds the C API checks.
#[derive(Debug)]
pub struct Stream(FieldStream);

impl Stream {
    /// A stream over `fields`, read through `fs`'s store.
    pub fn new(fs: Arc<FieldStore>, fields: Vec<FieldLocation>) -> Stream {
        Stream(FieldStream::new(fs.store().clone(), fields))
    }

    /// Total bytes.
    pub fn size(&self) -> u64 {
        self.0.size()
    }

    /// The current position.
    pub fn pos(&self) -> u64 {
        self.0.position()
    }

    /// Move to `pos` (`0..=size`).
    ///
    /// # Errors
    /// `InvalidInput` outside the stream; the position is unchanged.
    pub fn seek(&mut self, pos: i128) -> Result<(), CError> {
        let size = self.size();
        match u64::try_from(pos) {
            Ok(p) if p <= size => {
                self.0.seek(p);
                Ok(())
            }
            _ => Err(CError::invalid(format!(
                "position {pos} is outside the retrieved data (0 to {size} bytes)"
            ))),
        }
    }

    /// Copy the next bytes into `out`; how many (0 at the end).
    ///
    /// # Errors
    /// `Corrupt` if a field fails its checksum (none of its bytes is
    /// copied); I/O errors.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, CError> {
        Ok(self.0.read(out)?)
    }

    /// Rewind and release the buffered field.
    pub fn rewind(&mut self) {
        self.0.rewind();
    }
}

/// `fdb_datareader_t`: empty until `fdb_retrieve` fills it.
#[derive(Debug, Default)]
pub struct ReaderObj(pub(crate) Mutex<Option<Stream>>);

impl Object for ReaderObj {
    const KIND: Kind = Kind::DataReader;
}

fn with_stream<T>(
    dr: *mut fdb_datareader_t,
    f: impl FnOnce(&mut Stream) -> Result<T, CError>,
) -> Result<T, CError> {
    let r = registry::get::<ReaderObj>(dr.cast())?;
    let mut state = lock(&r.0);
    let stream = state.as_mut().ok_or_else(|| {
        CError::invalid("the data reader holds no data yet: pass it to fdb_retrieve first")
    })?;
    f(stream)
}

fn to_long(v: u64) -> Result<c_long, CError> {
    c_long::try_from(v).map_err(|_| CError::invalid(format!("{v} does not fit a C long")))
}

/// A new data reader, empty until `fdb_retrieve`.
///
/// # Safety
/// `dr` is NULL (an error) or points to writable memory for a pointer.
#[no_mangle]
pub unsafe extern "C" fn fdb_new_datareader(dr: *mut *mut fdb_datareader_t) -> c_int {
    entry("fdb_new_datareader", || {
        // SAFETY: the caller's promise.
        let dr = unsafe { out(dr, "dr (the out-pointer)") }?;
        *dr = registry::insert(ReaderObj::default()).cast();
        Ok(FDB_SUCCESS)
    })
}

/// Rewind to the start; `*size`, if `size` is not NULL, is the total
/// length.
///
/// # Safety
/// `size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_datareader_open(
    dr: *mut fdb_datareader_t,
    size: *mut c_long,
) -> c_int {
    entry("fdb_datareader_open", || {
        let total = with_stream(dr, |s| {
            s.seek(0)?;
            to_long(s.size())
        })?;
        // SAFETY: NULL or writable (the caller's promise).
        if let Some(size) = unsafe { size.as_mut() } {
            *size = total;
        }
        Ok(FDB_SUCCESS)
    })
}

/// Release the buffered field and rewind.
#[no_mangle]
pub extern "C" fn fdb_datareader_close(dr: *mut fdb_datareader_t) -> c_int {
    entry("fdb_datareader_close", || {
        with_stream(dr, |s| {
            s.rewind();
            Ok(FDB_SUCCESS)
        })
    })
}

/// The current position.
///
/// # Safety
/// `pos` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_datareader_tell(dr: *mut fdb_datareader_t, pos: *mut c_long) -> c_int {
    entry("fdb_datareader_tell", || {
        // SAFETY: the caller's promise.
        let pos = unsafe { out(pos, "pos") }?;
        *pos = with_stream(dr, |s| to_long(s.pos()))?;
        Ok(FDB_SUCCESS)
    })
}

/// Move to `pos`, `0 <= pos <= size`.
#[no_mangle]
pub extern "C" fn fdb_datareader_seek(dr: *mut fdb_datareader_t, pos: c_long) -> c_int {
    entry("fdb_datareader_seek", || {
        with_stream(dr, |s| s.seek(i128::from(pos)))?;
        Ok(FDB_SUCCESS)
    })
}

/// Move by `count` bytes (negative: back), staying within `0..=size`.
#[no_mangle]
pub extern "C" fn fdb_datareader_skip(dr: *mut fdb_datareader_t, count: c_long) -> c_int {
    entry("fdb_datareader_skip", || {
        with_stream(dr, |s| s.seek(i128::from(s.pos()) + i128::from(count)))?;
        Ok(FDB_SUCCESS)
    })
}

/// The total length of what `fdb_retrieve` found.
///
/// # Safety
/// `size` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_datareader_size(
    dr: *mut fdb_datareader_t,
    size: *mut c_long,
) -> c_int {
    entry("fdb_datareader_size", || {
        // SAFETY: the caller's promise.
        let size = unsafe { out(size, "size") }?;
        *size = with_stream(dr, |s| to_long(s.size()))?;
        Ok(FDB_SUCCESS)
    })
}

/// Copy up to `count` bytes into `buf`; `*read` is how many (0 at the end).
///
/// # Safety
/// `buf` is NULL (an error unless `count` is 0) or writable for `count`
/// bytes; `read` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn fdb_datareader_read(
    dr: *mut fdb_datareader_t,
    buf: *mut c_void,
    count: c_long,
    read: *mut c_long,
) -> c_int {
    entry("fdb_datareader_read", || {
        // SAFETY: the caller's promise.
        let read = unsafe { out(read, "read") }?;
        let count = usize::try_from(count)
            .map_err(|_| CError::invalid(format!("count is negative ({count})")))?;
        if buf.is_null() && count > 0 {
            return Err(CError::invalid("buf is NULL"));
        }
        let n = with_stream(dr, |s| {
            if count == 0 {
                return Ok(0);
            }
            // SAFETY: `buf` is writable for `count` bytes (the caller's
            // promise), not NULL (checked), and not otherwise accessed
            // during the call.
            let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), count) };
            s.read(out)
        })?;
        *read = to_long(n as u64)?;
        Ok(FDB_SUCCESS)
    })
}

/// Release a data reader.
#[no_mangle]
pub extern "C" fn fdb_delete_datareader(dr: *mut fdb_datareader_t) -> c_int {
    entry("fdb_delete_datareader", || {
        registry::remove::<ReaderObj>(dr.cast())?;
        Ok(FDB_SUCCESS)
    })
}
