//! The calling thread's last error: a message (a C string) and a kind (a
//! number the library defines; 0 when no call failed on the thread).
//!
//! # Invariants
//! - Per thread: a thread never sees another thread's message.
//! - The pointer [`message`] returns stays valid until the same thread
//!   records another error (or exits): the string is only replaced by
//!   [`record`], on that thread.
//! - Usable from thread-local destructors: after the thread's storage is
//!   gone, [`record`] records nothing and the readers return fixed values.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::catch_unwind;

struct Last {
    message: CString,
    kind: c_int,
}

thread_local! {
    static LAST: RefCell<Last> = RefCell::new(Last {
        message: CString::from(c"no error recorded on this thread"),
        kind: 0,
    });
}

/// Record `message` and `kind` as the calling thread's last error. A NUL in
/// the message is written `\0`, so that C sees all of it.
pub fn record(message: String, kind: c_int) {
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    let _ = LAST.try_with(|l| {
        let mut l = l.borrow_mut();
        l.message = message;
        l.kind = kind;
    });
}

/// The calling thread's last error message ("no error recorded on this
/// thread" before any): see the module's invariants for how long it lives.
pub fn message() -> *const c_char {
    catch_unwind(|| {
        LAST.try_with(|l| l.borrow().message.as_ptr())
            .unwrap_or(c"the thread is exiting".as_ptr())
    })
    .unwrap_or(c"internal error".as_ptr())
}

/// The calling thread's last error kind (0 before any, and while the
/// thread exits); `on_panic` if reading it panicked.
pub fn kind(on_panic: c_int) -> c_int {
    catch_unwind(|| LAST.try_with(|l| l.borrow().kind).unwrap_or(0)).unwrap_or(on_panic)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn text() -> String {
        // SAFETY: `message` returns a NUL-terminated string alive until the
        // next `record` on this thread.
        unsafe { CStr::from_ptr(message()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn each_thread_has_its_own_last_error() {
        assert_eq!(text(), "no error recorded on this thread");
        assert_eq!(kind(-1), 0);
        record("bad\0thing".into(), 3);
        assert_eq!(text(), "bad\\0thing");
        assert_eq!(kind(-1), 3);
        let other = std::thread::spawn(|| (text(), kind(-1))).join().unwrap();
        assert_eq!(other, ("no error recorded on this thread".into(), 0));
    }
}
