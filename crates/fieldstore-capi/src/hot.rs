//! The objects C calls on for every listed field — list iterators and split
//! keys — held in slabs of slots rather than in the [`registry`]'s table.
//! This module is the slab; the two slabs of the C API, and the fork
//! handlers that hold their locks, are the [`registry`]'s.
//!
//! Listing with keys costs thirteen calls per field (`next`, `attrs`,
//! `splitkey`, ten `next_metadata`). Through the table each call cost
//! ~30 ns (two thread-local lookups, a reference count, a type check
//! through a vtable, and a mutex's lock and unlock: two locked
//! instructions): a quarter of a listing's time. Here a call decodes the
//! token, loads the slot's generation, and takes the slot with one
//! compare-and-swap (released with a plain store): no lock, no reference
//! count, no thread-local.
//!
//! # Tokens and safety
//! A token is `(generation << 20 | slot) << 8 | kind << 4`: the same tag as
//! the registry's tokens (never NULL, 16-byte aligned, typed), and the
//! generation the slot had when the object was created. Slots are never
//! freed (a slab only grows, chunk by chunk, up to 2^20 live objects of a
//! kind), so reading a slot a token names is always safe, whatever the
//! token; generations are never reused, so a deleted object's token never
//! matches again. A token is never dereferenced.
//!
//! # Invariants
//! - A slot's `state` is read or written only by the thread that set its
//!   `busy` flag (acquire on set, release on clear), and only after it
//!   checked, holding the flag, that the slot's generation is the token's.
//! - `generation` is 0 exactly when the slot holds no object; it changes
//!   only while `busy` is held.
//! - Calls on one object are serialised by `busy`: a second thread spins,
//!   then yields, and after about a second reports the object as in use by
//!   another thread (FDB5's objects are not for concurrent use at all; this
//!   only keeps such a client from corrupting anything, and two objects
//!   taken in opposite orders by two threads from waiting forever).
//!
//! [`registry`]: crate::registry

use std::alloc::{alloc_zeroed, Layout};
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::error::CError;
use crate::kind::Kind;

const SLOT_BITS: u32 = 20;
const GENERATION_BITS: u32 = 64 - 8 - SLOT_BITS;
/// Slots per chunk (zeroed memory: only the slots used are touched).
const CHUNK: usize = 1024;
const CHUNKS: usize = (1 << SLOT_BITS) / CHUNK;

/// All-zero bytes are a valid empty slot (generation 0, not busy, no
/// state), so chunks are allocated zeroed: the kernel's zero pages, touched
/// only slot by slot as objects are created.
struct Slot<T> {
    generation: AtomicU64,
    busy: AtomicBool,
    /// Initialised exactly when `generation` is not 0.
    state: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: `state` is only touched by the thread holding `busy` (see the
// module's invariants), which hands it from thread to thread with
// acquire/release ordering, as a mutex does.
unsafe impl<T: Send> Sync for Slot<T> {}

/// What creating and deleting objects share (under a mutex: they are rare).
struct Slots {
    free: Vec<u32>,
    next_slot: u32,
    live: usize,
}

/// The objects of one kind.
pub struct Slab<T> {
    kind: Kind,
    /// Run before the slab's calls take its lock: its owner installs there
    /// the fork handlers that hold the lock around `fork()` (the
    /// registry's), given as a function so that the slab does not name the
    /// module above it.
    before_lock: fn(),
    /// Chunk `i` holds slots `i * CHUNK ..`; allocated at first use, never
    /// freed (so still reachable at exit, for leak checkers).
    chunks: [AtomicPtr<Slot<T>>; CHUNKS],
    /// The next generation to issue (generations start at 1).
    next_generation: AtomicU64,
    slots: Mutex<Slots>,
}

/// Holds a slot's `busy` flag; clears it when dropped (also on a panic).
struct Busy<'a, T>(&'a Slot<T>);

impl<T> Drop for Busy<'_, T> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

impl<T: Send> Slab<T> {
    /// An empty slab of objects of `kind`; `before_lock` runs before its
    /// calls (`insert`, `remove`, `live`) take its lock.
    pub const fn new(kind: Kind, before_lock: fn()) -> Self {
        Slab {
            kind,
            before_lock,
            chunks: [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS],
            next_generation: AtomicU64::new(1),
            slots: Mutex::new(Slots {
                free: Vec::new(),
                next_slot: 0,
                live: 0,
            }),
        }
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        (self.before_lock)();
        // The critical sections leave `Slots` consistent at every step.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The slot `index`, if its chunk exists.
    fn slot(&self, index: usize) -> Option<&Slot<T>> {
        let chunk = self.chunks.get(index / CHUNK)?.load(Ordering::Acquire);
        // SAFETY: a non-null chunk points to CHUNK slots that are never
        // freed; `index % CHUNK` is in bounds.
        (!chunk.is_null()).then(|| unsafe { &*chunk.add(index % CHUNK) })
    }

    /// Register `state`; the token C gets for it.
    ///
    /// # Errors
    /// `InvalidInput` when 2^20 objects of the kind are live at once.
    pub fn insert(&self, state: T) -> Result<*mut c_void, CError> {
        let index = {
            let mut slots = self.slots();
            let index = match slots.free.pop() {
                Some(i) => i as usize,
                None => {
                    let i = slots.next_slot as usize;
                    if i >= CHUNKS * CHUNK {
                        return Err(CError::invalid(format!(
                            "{} objects of type {} are live: delete some first",
                            CHUNKS * CHUNK,
                            self.kind.c_name()
                        )));
                    }
                    if i % CHUNK == 0 {
                        let layout = Layout::array::<Slot<T>>(CHUNK)
                            .map_err(|e| CError::invalid(format!("internal: slab layout: {e}")))?;
                        // SAFETY: the layout is not zero-sized; all-zero
                        // bytes are CHUNK empty slots (see `Slot`).
                        let chunk = unsafe { alloc_zeroed(layout) }.cast::<Slot<T>>();
                        if chunk.is_null() {
                            std::alloc::handle_alloc_error(layout);
                        }
                        self.chunks[i / CHUNK].store(chunk, Ordering::Release);
                    }
                    slots.next_slot += 1;
                    i
                }
            };
            slots.live += 1;
            index
        };
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        if generation >= 1 << GENERATION_BITS {
            let mut slots = self.slots();
            slots.free.push(index as u32);
            slots.live -= 1;
            return Err(CError::invalid(format!(
                "2^{GENERATION_BITS} objects of type {} were created in this process: no token is left",
                self.kind.c_name()
            )));
        }
        let slot = self
            .slot(index)
            .ok_or_else(|| CError::invalid("internal: a free slot has no chunk"))?;
        // Free, but a call with a stale token may be checking it.
        let _busy = self.take(slot)?;
        // SAFETY: `busy` is held; the slot is free (generation 0), so
        // nothing initialised is overwritten.
        unsafe { (*slot.state.get()).write(state) };
        slot.generation.store(generation, Ordering::Release);
        let serial = generation << SLOT_BITS | index as u64;
        Ok((serial << 8 | (self.kind as u64) << 4) as usize as *mut c_void)
    }

    /// The slot and generation `token` names, checked against its type.
    fn decode(&self, token: *const c_void) -> Result<(&Slot<T>, u64), CError> {
        let name = self.kind.c_name();
        if token.is_null() {
            return Err(CError::invalid(format!("the {name} argument is NULL")));
        }
        let raw = token as usize as u64;
        let tag = (raw >> 4) & 0xf;
        let serial = raw >> 8;
        let (generation, index) = (serial >> SLOT_BITS, serial & ((1 << SLOT_BITS) - 1));
        let not_ours = || {
            CError::invalid(format!(
                "the {name} argument {token:p} is not an object this library created"
            ))
        };
        if raw & 0xf != 0 {
            return Err(not_ours());
        }
        if tag != self.kind as u64 {
            return Err(match Kind::from_tag(tag) {
                Some(other) => CError::invalid(format!(
                    "the {name} argument {token:p} is a {}, not a {name}",
                    other.c_name()
                )),
                None => not_ours(),
            });
        }
        if generation == 0
            || generation >= self.next_generation.load(Ordering::Relaxed)
            || generation >= 1 << GENERATION_BITS
        {
            return Err(not_ours());
        }
        let slot = self.slot(index as usize).ok_or_else(not_ours)?;
        Ok((slot, generation))
    }

    fn gone(&self, token: *const c_void) -> CError {
        CError::invalid(format!(
            "the {} argument {token:p} was deleted",
            self.kind.c_name()
        ))
    }

    /// Set `slot`'s busy flag: spin, then yield; give up after about a
    /// second (see the module's invariants).
    fn take<'a>(&self, slot: &'a Slot<T>) -> Result<Busy<'a, T>, CError> {
        let mut tries = 0u32;
        let mut since: Option<std::time::Instant> = None;
        loop {
            if slot
                .busy
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(Busy(slot));
            }
            tries += 1;
            if tries < 100 {
                std::hint::spin_loop();
                continue;
            }
            std::thread::yield_now();
            let start = *since.get_or_insert_with(std::time::Instant::now);
            if start.elapsed() > std::time::Duration::from_secs(1) {
                return Err(CError::invalid(format!(
                    "the {} is in use by another thread: objects of FDB5's C API are not for concurrent use",
                    self.kind.c_name()
                )));
            }
        }
    }

    /// Run `f` on the object `token` names, alone.
    ///
    /// # Errors
    /// `InvalidInput` naming the argument (NULL, another type, never
    /// created, deleted, in use by another thread), or what `f` returns.
    pub fn with<R>(
        &self,
        token: *const c_void,
        f: impl FnOnce(&mut T) -> Result<R, CError>,
    ) -> Result<R, CError> {
        let (slot, generation) = self.decode(token)?;
        if slot.generation.load(Ordering::Acquire) != generation {
            return Err(self.gone(token));
        }
        let _busy = self.take(slot)?;
        // Deleted (and maybe reused) between the check and the flag.
        if slot.generation.load(Ordering::Relaxed) != generation {
            return Err(self.gone(token));
        }
        // SAFETY: `busy` is held and the slot holds the token's object.
        // SAFETY: `busy` is held, and the generation is the token's (not
        // 0), so the state is initialised.
        f(unsafe { (*slot.state.get()).assume_init_mut() })
    }

    /// Delete the object `token` names.
    ///
    /// # Errors
    /// As [`Slab::with`].
    pub fn remove(&self, token: *const c_void) -> Result<(), CError> {
        let (slot, generation) = self.decode(token)?;
        let state = {
            let _busy = self.take(slot)?;
            if slot.generation.load(Ordering::Relaxed) != generation {
                return Err(self.gone(token));
            }
            slot.generation.store(0, Ordering::Relaxed);
            // SAFETY: `busy` is held and the generation was the token's, so
            // the state is initialised; generation 0 now marks it moved out.
            unsafe { (*slot.state.get()).assume_init_read() }
        };
        // Freed outside the flag (a listing's elements take a while).
        drop(state);
        let index = (token as usize as u64 >> 8) & ((1 << SLOT_BITS) - 1);
        let mut slots = self.slots();
        slots.free.push(index as u32);
        slots.live -= 1;
        Ok(())
    }

    /// How many objects are live.
    pub fn live(&self) -> usize {
        self.slots().live
    }

    /// Hold the slab's lock (around `fork()`: see
    /// [`registry::install_fork_handlers`](crate::registry::install_fork_handlers)).
    pub fn hold_for_fork(&'static self) -> impl std::any::Any {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// The tests' slabs install no fork handlers.
    fn no_fork_handlers() {}

    static THINGS: Slab<Arc<()>> = Slab::new(Kind::SplitKey, no_fork_handlers);

    /// A token finds its object until it is deleted, then never again, even
    /// once its slot holds another object; the state is dropped at delete.
    #[test]
    fn a_deleted_token_stays_deleted_when_its_slot_is_reused() {
        let witness = Arc::new(());
        let a = THINGS.insert(witness.clone()).unwrap();
        assert!(THINGS.with(a, |w| Ok(Arc::ptr_eq(w, &witness))).unwrap());
        THINGS.remove(a).unwrap();
        assert_eq!(Arc::strong_count(&witness), 1, "dropped at delete");
        let b = THINGS.insert(Arc::new(())).unwrap();
        assert_ne!(a, b);
        for e in [
            THINGS.with(a, |_| Ok(())).unwrap_err(),
            THINGS.remove(a).unwrap_err(),
        ] {
            assert!(e.message.contains("was deleted"), "{}", e.message);
        }
        assert!(THINGS.with(b, |_| Ok(())).is_ok());
        THINGS.remove(b).unwrap();
    }

    /// NULL, misaligned, untyped, other-typed and never-issued tokens are
    /// errors naming what is wrong; none is dereferenced.
    #[test]
    fn bad_tokens_are_errors() {
        let issued = THINGS.insert(Arc::new(())).unwrap() as usize;
        let cases: [(usize, &str); 5] = [
            (0, "is NULL"),
            (issued + 1, "not an object this library created"),
            (
                (issued & !0xf0) | (Kind::Handle as usize) << 4,
                "is a fdb_handle_t",
            ),
            (issued + (1 << 40), "not an object this library created"),
            (0xdead_beef_0000_0040, "not an object this library created"),
        ];
        for (token, expected) in cases {
            let e = THINGS.with(token as *const c_void, |_| Ok(())).unwrap_err();
            assert!(e.message.contains(expected), "{token:#x}: {}", e.message);
        }
        THINGS.remove(issued as *const c_void).unwrap();
    }

    /// Four threads creating, using and deleting objects at once, each
    /// also hammering one shared object: every call sees its own object,
    /// and the shared one's count is exact (calls on it were serialised).
    #[test]
    fn threads_use_their_own_and_a_shared_object() {
        static COUNTERS: Slab<u64> = Slab::new(Kind::ListIterator, no_fork_handlers);
        let shared = COUNTERS.insert(0).unwrap() as usize;
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..2000u64 {
                        let own = COUNTERS.insert(t << 32 | i).unwrap();
                        assert_eq!(COUNTERS.with(own, |v| Ok(*v)).unwrap(), t << 32 | i);
                        COUNTERS
                            .with(shared as *const c_void, |v| {
                                *v += 1;
                                Ok(())
                            })
                            .unwrap();
                        COUNTERS.remove(own).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(
            COUNTERS.with(shared as *const c_void, |v| Ok(*v)).unwrap(),
            8000
        );
        COUNTERS.remove(shared as *const c_void).unwrap();
        assert_eq!(COUNTERS.live(), 0);
    }
}
