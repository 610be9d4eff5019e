//! The locks held around `fork()`: a library registers a function that
//! takes its locks ([`hold_around_fork`]); the fork handlers (installed
//! once per process with `pthread_atfork`) call every registered function
//! before the fork, in the thread that forks, and release what they took
//! after it, in parent and child. So the child never inherits a lock held
//! by a thread that does not exist in it: a fork waits for the thread that
//! holds one to let it go.
//!
//! # Invariants
//! - A registered function takes its locks always in the same order, one
//!   no code path takes in the other order (else a fork can deadlock); the
//!   guards it returns are released in the reverse order.
//! - No two registered functions take the same lock (the locks are not
//!   reentrant: the second would wait for the first forever). Each C
//!   library links its own copy of its dependencies, so two libraries in
//!   one process never share one; a single program linking both crates
//!   would.
//! - Functions registered earlier run first. At most [`SLOTS`] functions are
//!   registered per copy of this crate (each C library links its own); the
//!   same function registered twice runs once.
//! - The handlers never unwind into C: a panic in a registered function is
//!   caught (what it took so far is released after the fork).

use std::any::Any;
use std::cell::RefCell;
use std::sync::{Once, OnceLock};

/// The guards of the locks a function took, released in the reverse order.
pub type Held = Vec<Box<dyn Any>>;

/// How many functions can be registered.
pub const SLOTS: usize = 4;

static HOLDERS: [OnceLock<fn() -> Held>; SLOTS] = [const { OnceLock::new() }; SLOTS];

thread_local! {
    /// What `prepare` took, released by `release` (both run in the thread
    /// that called `fork`).
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

extern "C" fn prepare() {
    let _ = std::panic::catch_unwind(|| {
        let mut held = Vec::with_capacity(SLOTS);
        for holder in HOLDERS.iter().map_while(OnceLock::get) {
            held.push(holder());
        }
        HELD.with(|h| *h.borrow_mut() = held);
    });
}

extern "C" fn release() {
    let _ = std::panic::catch_unwind(|| {
        HELD.with(|h| {
            let mut held = std::mem::take(&mut *h.borrow_mut());
            while let Some(mut guards) = held.pop() {
                while let Some(guard) = guards.pop() {
                    drop(guard);
                }
            }
        });
    });
}

/// Hold the locks `hold` takes around every `fork()` of this process, from
/// now on (see the module's invariants). Cheap to call again with the same
/// function; the library calls it from a `Once` of its own before it first
/// takes one of those locks.
///
/// # Panics
/// If [`SLOTS`] other functions are registered already (a bug: each library
/// registers one).
pub fn hold_around_fork(hold: fn() -> Held) {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: both handlers are `extern "C"`, never unwind, and only
        // take and release the registered locks.
        unsafe {
            libc::pthread_atfork(Some(prepare), Some(release), Some(release));
        }
    });
    for slot in &HOLDERS {
        // `fn` pointers compare by address: the same function, registered
        // again, is found.
        match slot.get() {
            Some(f) if std::ptr::fn_addr_eq(*f, hold) => return,
            Some(_) => continue,
            None => {
                if slot.set(hold).is_ok()
                    || slot.get().is_some_and(|f| std::ptr::fn_addr_eq(*f, hold))
                {
                    return;
                }
            }
        }
    }
    panic!("fork_guard: more than {SLOTS} lock holders registered");
}
