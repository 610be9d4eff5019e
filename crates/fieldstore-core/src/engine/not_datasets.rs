//! Names a search of a medium's namespace found not to be datasets
//! ([`super::slot_catalogue::SlotMedium::unregistered`]), remembered for a
//! while.
//!
//! A bucket or pool may be shared with other data: without this, every
//! listing of datasets would look into each foreign name again (S3: a GET
//! of a `meta` that is not there, ~1 ms; 1,100 such prefixes cost 1.1 s a
//! listing on SeaweedFS). A name is looked at again once its entry is
//! older than the time to live, so a dataset created under a name found
//! empty (its data written before its `meta`) is found by a later search.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Names found not to hold a dataset, and when.
#[derive(Debug)]
pub struct NotDatasets {
    ttl: Duration,
    seen: Mutex<HashMap<String, Instant>>,
}

impl NotDatasets {
    /// How long a name found not to be a dataset is not looked at again.
    pub const TTL: Duration = Duration::from_secs(60);

    /// An empty set whose entries live [`NotDatasets::TTL`].
    pub fn new() -> NotDatasets {
        NotDatasets::with_ttl(NotDatasets::TTL)
    }

    /// An empty set whose entries live `ttl`.
    pub fn with_ttl(ttl: Duration) -> NotDatasets {
        NotDatasets {
            ttl,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `name` was found not to be a dataset less than the time to
    /// live ago.
    pub fn recent(&self, name: &str) -> bool {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(name).is_some_and(|t| t.elapsed() < self.ttl)
    }

    /// Remember that `name` is not a dataset (now); entries past their
    /// time to live are dropped, so the set holds what one time to live of
    /// searches found.
    pub fn add(&self, name: &str) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let ttl = self.ttl;
        seen.retain(|_, t| t.elapsed() < ttl);
        seen.insert(name.to_string(), Instant::now());
    }
}

impl Default for NotDatasets {
    fn default() -> NotDatasets {
        NotDatasets::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_remembered_for_its_time_to_live() {
        let n = NotDatasets::with_ttl(Duration::from_millis(50));
        assert!(!n.recent("a"));
        n.add("a");
        assert!(n.recent("a"));
        assert!(!n.recent("b"));
        std::thread::sleep(Duration::from_millis(60));
        assert!(!n.recent("a"), "past its time to live");
        n.add("b");
        assert_eq!(
            n.seen.lock().unwrap().len(),
            1,
            "the expired entry is dropped"
        );
    }
}
