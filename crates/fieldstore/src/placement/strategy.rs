//! FDB5's placement strategies that need nothing but the roots: `Default`
//! (alias `First`) and eckit's `FileSpaceStrategies` (free space and
//! chance).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use fieldstore_core::{DatasetKey, Result};

use super::{no_writable_root, writable, RootHandler};
use crate::root::Root;

/// `Default` / `First`: the first writable root, in configuration order.
#[derive(Debug, Clone, Copy)]
pub struct First;

impl RootHandler for First {
    fn name(&self) -> &str {
        "Default"
    }

    fn choose(&self, _key: &DatasetKey, roots: &[Root]) -> Result<usize> {
        writable(roots)
            .first()
            .map(|(i, _)| *i)
            .ok_or_else(|| no_writable_root(roots))
    }
}

/// One of eckit's strategies over the writable roots.
#[derive(Debug)]
pub struct Strategy {
    kind: Kind,
    name: &'static str,
    /// `RoundRobin`'s turn (per process, as eckit's).
    turn: AtomicUsize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The root with the most bytes available (the last of equals).
    LeastUsed,
    /// The root with the largest share of its file system available.
    LeastUsedPercent,
    /// Each writable root in turn.
    RoundRobin,
    /// Uniformly at random.
    Random,
    /// At random, weighted by bytes available.
    WeightedRandom,
    /// At random, weighted by the share available.
    WeightedRandomPercent,
}

/// Bytes available and in all of the file system holding `path`.
fn space(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: a NUL-terminated path and a buffer of the right type.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs succeeded, so it filled the buffer.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the field types differ by platform
    let unit = st.f_frsize as u64;
    #[allow(clippy::unnecessary_cast)]
    Some((st.f_bavail as u64 * unit, st.f_blocks as u64 * unit))
}

/// A number in `[0, 1)`, from the process's randomly keyed hasher.
fn chance() -> f64 {
    static DRAWS: AtomicUsize = AtomicUsize::new(0);
    let n = DRAWS.fetch_add(1, Ordering::Relaxed);
    let bits = RandomState::new().hash_one(n) >> 11;
    bits as f64 / (1u64 << 53) as f64
}

/// An index drawn with probability proportional to `weights` (uniform
/// when they are all zero).
fn draw(weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return ((chance() * weights.len() as f64) as usize).min(weights.len() - 1);
    }
    let mut x = chance() * total;
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.len() - 1
}

impl Strategy {
    /// The strategy a handler name names (`LeastUsed`, …), if any.
    pub fn named(name: &str) -> Option<Strategy> {
        let (kind, name) = match name {
            "LeastUsed" => (Kind::LeastUsed, "LeastUsed"),
            "LeastUsedPercent" => (Kind::LeastUsedPercent, "LeastUsedPercent"),
            "RoundRobin" => (Kind::RoundRobin, "RoundRobin"),
            "Random" => (Kind::Random, "Random"),
            "PureRandom" => (Kind::Random, "PureRandom"),
            "WeightedRandom" => (Kind::WeightedRandom, "WeightedRandom"),
            "WeightedRandomPercent" => (Kind::WeightedRandomPercent, "WeightedRandomPercent"),
            _ => return None,
        };
        Some(Strategy {
            kind,
            name,
            turn: AtomicUsize::new(0),
        })
    }
}

impl RootHandler for Strategy {
    fn name(&self) -> &str {
        self.name
    }

    fn choose(&self, _key: &DatasetKey, roots: &[Root]) -> Result<usize> {
        let candidates = writable(roots);
        if candidates.is_empty() {
            return Err(no_writable_root(roots));
        }
        let sizes: Vec<(u64, u64)> = candidates
            .iter()
            .map(|(_, r)| space(&r.path).unwrap_or((0, 0)))
            .collect();
        let percent = |(avail, total): (u64, u64)| {
            if total == 0 {
                0.0
            } else {
                avail as f64 / total as f64
            }
        };
        let pick = match self.kind {
            Kind::LeastUsed => (0..sizes.len())
                .max_by_key(|&i| (sizes[i].0, i))
                .unwrap_or(0),
            Kind::LeastUsedPercent => (0..sizes.len())
                .max_by(|&a, &b| {
                    percent(sizes[a])
                        .total_cmp(&percent(sizes[b]))
                        .then(a.cmp(&b))
                })
                .unwrap_or(0),
            Kind::RoundRobin => self.turn.fetch_add(1, Ordering::Relaxed) % candidates.len(),
            Kind::Random => draw(&vec![1.0; candidates.len()]),
            Kind::WeightedRandom => draw(&sizes.iter().map(|s| s.0 as f64).collect::<Vec<_>>()),
            Kind::WeightedRandomPercent => {
                draw(&sizes.iter().map(|s| percent(*s)).collect::<Vec<_>>())
            }
        };
        Ok(candidates[pick].0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> DatasetKey {
        "class=od,expver=0001".parse().unwrap()
    }

    #[test]
    fn first_skips_read_only_and_missing_roots() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&b).unwrap();
        std::fs::create_dir_all(dir.path().join("c")).unwrap();
        let ro = Root {
            writable: false,
            ..Root::new(dir.path().join("c"))
        };
        let roots = [ro, Root::new(&a), Root::new(&b)];
        assert_eq!(First.choose(&key(), &roots).unwrap(), 2);
        let e = First.choose(&key(), &roots[..2]).unwrap_err();
        assert!(e.message().contains("no writable root"), "{e}");
    }

    #[test]
    fn strategies_choose_only_writable_roots() {
        let dir = tempfile::tempdir().unwrap();
        let mut roots = Vec::new();
        for (i, w) in [(0, false), (1, true), (2, true)] {
            let p = dir.path().join(format!("r{i}"));
            std::fs::create_dir_all(&p).unwrap();
            roots.push(Root {
                writable: w,
                ..Root::new(p)
            });
        }
        for name in [
            "LeastUsed",
            "LeastUsedPercent",
            "RoundRobin",
            "Random",
            "WeightedRandom",
            "WeightedRandomPercent",
        ] {
            let s = Strategy::named(name).unwrap();
            let mut seen = std::collections::BTreeSet::new();
            for _ in 0..64 {
                seen.insert(s.choose(&key(), &roots).unwrap());
            }
            assert!(!seen.contains(&0), "{name} chose a read-only root");
            if matches!(name, "RoundRobin" | "Random" | "WeightedRandom") {
                // Same file system: both roots weigh the same.
                assert_eq!(seen.len(), 2, "{name}: {seen:?}");
            }
        }
    }
}
