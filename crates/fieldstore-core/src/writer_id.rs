//! Writer ids: `<host>.<pid>.<start ns>.<counter>`, unique across the
//! hosts and processes sharing a store, so that no two writers ever name
//! one file, object or log key. Every backend names its writers' units
//! and records with them.
//!
//! `<host>` is the host name with every character other than ASCII
//! letters, digits and `-` written `_` (so it has no dots and ids split
//! on `.`); `<start ns>` is when the process first asked for an id (Unix
//! time in nanoseconds), which tells apart two processes that had the
//! same pid.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// This host's name, sanitised (`host` if it has none).
pub fn host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        let name: String = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim()
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '-' => c,
                _ => '_',
            })
            .collect();
        if name.is_empty() {
            "host".into()
        } else {
            name
        }
    })
}

/// `<host>.<pid>.<start ns>`: this process, among all that share a store.
/// Worked out again in a child of `fork` (which inherits the parent's
/// memory but not its pid), so that parent and child never share ids.
pub fn process() -> String {
    static PROCESS: Mutex<Option<(u32, String)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut p = PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    match &*p {
        Some((cached, id)) if *cached == pid => id.clone(),
        _ => {
            let start = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            let id = format!("{}.{pid}.{start}", host());
            *p = Some((pid, id.clone()));
            id
        }
    }
}

/// A new writer id: [`process`] and a per-process counter.
pub fn next() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!("{}.{}", process(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// The host and pid of a writer id, if `s` is one.
pub fn parse(s: &str) -> Option<(&str, u32)> {
    let parts: Vec<&str> = s.split('.').collect();
    let ok = parts.len() == 4
        && !parts[0].is_empty()
        && parts[0]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && parts[1..]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !ok {
        return None;
    }
    Some((parts[0], parts[1].parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_parse() {
        let (a, b) = (next(), next());
        assert_ne!(a, b);
        assert!(a.starts_with(&process()));
        assert_eq!(parse(&a), Some((host(), std::process::id())));
        assert!(!host().contains('.'));
    }

    #[test]
    fn other_strings_are_not_ids() {
        for s in [
            "",
            "vm.1.2",
            "vm.1.2.3.4",
            ".1.2.3",
            "v m.1.2.3",
            "vm.x.2.3",
            "vm.1..3",
        ] {
            assert_eq!(parse(s), None, "{s:?}");
        }
        assert_eq!(parse("vm_1-a.42.17.3"), Some(("vm_1-a", 42)));
    }
}
