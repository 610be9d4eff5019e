//! Running an entry point's body so that no panic crosses the C boundary:
//! a panic (a bug) becomes a message, for the library to record and turn
//! into its error code.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a panic said (its `&str` or `String` payload).
pub fn panic_text(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// `body`'s value, or, if it panicked, the message a caller gets:
/// `internal error (a bug in fieldstore, please report it): <what>`.
///
/// The body is taken as unwind-safe: the libraries' shared state is only
/// changed by single operations (a map insert, a lock's guarded value
/// replaced), so a panic leaves it whole; a poisoned lock is taken anyway.
pub fn catch<R>(body: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(body)).map_err(|panic| {
        format!(
            "internal error (a bug in fieldstore, please report it): {}",
            panic_text(panic.as_ref())
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_a_message() {
        assert_eq!(catch(|| 7), Ok(7));
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let got = catch(|| -> u8 { panic!("at {}", 3) });
        let plain = catch(|| -> u8 { std::panic::panic_any(5u8) });
        std::panic::set_hook(hook);
        assert_eq!(
            got.unwrap_err(),
            "internal error (a bug in fieldstore, please report it): at 3"
        );
        assert!(plain.unwrap_err().ends_with("unknown panic"));
    }
}
