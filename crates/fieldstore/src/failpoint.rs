//! Named points in the maintenance code where this crate's unit tests run
//! code of their own, to put a race with live writers in its worst
//! interleaving deterministically (a writer flushing and exiting between a
//! purge's plan and its removals, say). Compiled in only for unit tests:
//! other builds have no hooks and no cost. Hooks are per thread, so tests
//! running in parallel do not see each other's.

#[cfg(test)]
pub(crate) use hooks::{clear, set};

/// The point `name` is reached.
#[inline]
pub(crate) fn hit(name: &'static str) {
    #[cfg(test)]
    hooks::hit(name);
    #[cfg(not(test))]
    let _ = name;
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

    /// Remove every hook of this thread.
    pub(crate) fn clear() {
        HOOKS.with(|h| h.borrow_mut().clear());
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
