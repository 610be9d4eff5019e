//! Named points in the maintenance code where this crate's unit tests run
//! code of their own, to put a race with live writers in its worst
//! interleaving deterministically (a writer flushing and exiting between a
//! purge's plan and its removals, say). Compiled in only for unit tests:
//! other builds have no hooks and no cost. Hooks are per thread, so tests
//! running in parallel do not see each other's.

#[cfg(test)]
pub(crate) use hooks::{clear, set, set_synced};

/// The point `name` is reached.
#[inline]
pub(crate) fn hit(name: &'static str) {
    #[cfg(test)]
    hooks::hit(name);
    #[cfg(not(test))]
    let _ = name;
}

/// `path` (a file or a directory) was just made durable: its `fsync` or
/// `fdatasync` returned. The crash-image tests (`crash.rs`) record what a
/// power cut at each such point would leave.
#[inline]
pub(crate) fn synced(path: &std::path::Path) {
    #[cfg(test)]
    hooks::synced(path);
    #[cfg(not(test))]
    let _ = path;
}

#[cfg(test)]
mod hooks {
    use std::cell::RefCell;
    use std::collections::HashMap;

    type Hook = Box<dyn FnMut()>;

    thread_local! {
        static HOOKS: RefCell<HashMap<&'static str, Hook>> = RefCell::new(HashMap::new());
    }

    /// Run `hook` (on this thread) each time the point `name` is reached.
    pub(crate) fn set(name: &'static str, hook: impl FnMut() + 'static) {
        HOOKS.with(|h| h.borrow_mut().insert(name, Box::new(hook)));
    }

    type SyncHook = Box<dyn FnMut(&std::path::Path)>;

    thread_local! {
        static SYNCED: RefCell<Option<SyncHook>> = const { RefCell::new(None) };
    }

    /// Run `hook` (on this thread) after each sync, with the path synced.
    pub(crate) fn set_synced(hook: impl FnMut(&std::path::Path) + 'static) {
        SYNCED.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
    }

    pub(crate) fn synced(path: &std::path::Path) {
        let hook = SYNCED.with(|h| h.borrow_mut().take());
        if let Some(mut hook) = hook {
            hook(path);
            SYNCED.with(|h| {
                h.borrow_mut().get_or_insert(hook);
            });
        }
    }

    /// Remove every hook of this thread.
    pub(crate) fn clear() {
        HOOKS.with(|h| h.borrow_mut().clear());
        SYNCED.with(|h| *h.borrow_mut() = None);
    }

    pub(crate) fn hit(name: &'static str) {
        // Taken out while it runs, so that it may reach other points.
        let hook = HOOKS.with(|h| h.borrow_mut().remove(name));
        if let Some(mut hook) = hook {
            hook();
            HOOKS.with(|h| {
                h.borrow_mut().entry(name).or_insert(hook);
            });
        }
    }
}
