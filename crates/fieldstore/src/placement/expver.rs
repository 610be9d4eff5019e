//! The `expver` handler: each experiment version keeps the root it was
//! first given, in a map file shared by every process (FDB5's
//! `ExpverFileSpaceHandler` and its `expver_to_fdb_root.map`).
//!
//! The map holds lines `expver root` (`#` comments and blank lines
//! ignored). For a new dataset: an expver already in the map gets its
//! root; otherwise `$FDB_ROOT` (or `$FDB5_ROOT`), which must be a writable
//! root of the space, or else a root drawn as `WeightedRandom` does; the
//! choice is appended to the map under an exclusive lock on
//! `<map>.lock`, after reading the map again, so that racing processes
//! agree on the first one's choice.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use fieldstore_core::{DatasetKey, Error, ErrorKind, Result};

use super::strategy::Strategy;
use super::{root_named, writable, RootHandler};
use crate::root::Root;

/// Places datasets by expver, remembering each expver's root.
#[derive(Debug)]
pub struct Expver {
    /// The map file.
    pub map: PathBuf,
    fallback: Strategy,
}

impl Expver {
    /// The handler keeping `$FDB_EXPVER_FILE`, else
    /// `<fdb_home>/etc/fdb/expver_to_fdb_root.map` (`fdb_home` from the
    /// configuration, else `$FDB_HOME`).
    ///
    /// # Errors
    /// `InvalidConfig` when neither says where the map is.
    pub fn from_env(fdb_home: Option<&Path>) -> Result<Expver> {
        let env = |v: &str| {
            std::env::var_os(v)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
        };
        let map = env("FDB_EXPVER_FILE")
            .or_else(|| {
                fdb_home
                    .map(Path::to_path_buf)
                    .or_else(|| env("FDB_HOME"))
                    .map(|h| h.join("etc/fdb/expver_to_fdb_root.map"))
            })
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidConfig,
                    "the expver handler keeps its map in $FDB_EXPVER_FILE or \
                     <fdb_home>/etc/fdb/expver_to_fdb_root.map: set one of them \
                     (fdb_home in the config or $FDB_HOME)",
                )
            })?;
        Ok(Expver {
            map,
            fallback: Strategy::named("WeightedRandom").expect("a strategy"),
        })
    }

    /// The map's `expver → root` lines.
    fn read(&self) -> Result<Vec<(String, PathBuf)>> {
        let text = crate::text_file::read_text_file(
            &self.map,
            &format!("the expver handler's map {}", self.map.display()),
        )?;
        let mut out = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if words.is_empty() || words[0].starts_with('#') {
                continue;
            }
            if words.len() != 2 {
                return Err(Error::new(
                    ErrorKind::InvalidConfig,
                    format!(
                        "{} line {}: expected 'expver root', found '{line}'",
                        self.map.display(),
                        n + 1
                    ),
                ));
            }
            out.push((words[0].to_string(), PathBuf::from(words[1])));
        }
        Ok(out)
    }

    fn lookup(&self, expver: &str) -> Result<Option<PathBuf>> {
        Ok(self
            .read()?
            .into_iter()
            .find(|(e, _)| e == expver)
            .map(|(_, p)| p))
    }
}

/// FDB5's rule: up to four digits, or four letters and digits.
fn valid_expver(e: &str) -> bool {
    (e.len() <= 4 && e.bytes().all(|b| b.is_ascii_digit()))
        || (e.len() == 4 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
}

fn lock(path: &Path) -> Result<File> {
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path.display(), e))?;
    crate::sync::flock(&f, libc::LOCK_EX)
        .map_err(|e| Error::io(format!("locking {}", path.display()), e))?;
    Ok(f)
}

impl RootHandler for Expver {
    fn name(&self) -> &str {
        "expver"
    }

    fn choose(&self, key: &DatasetKey, roots: &[Root]) -> Result<usize> {
        let expver = key.get("expver").unwrap_or("");
        if !valid_expver(expver) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("the expver handler needs an expver of up to 4 digits or 4 letters and digits, not '{expver}'"),
            ));
        }
        let index_of = |path: &Path, why: &str| {
            root_named(roots, path).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidConfig,
                    format!(
                        "{why} {} for expver {expver}, which is not one of the space's roots",
                        path.display()
                    ),
                )
            })
        };
        let from_map = format!("{} maps it to", self.map.display());
        if let Some(p) = self.lookup(expver)? {
            return index_of(&p, &from_map);
        }
        let forced = ["FDB_ROOT", "FDB5_ROOT"].iter().find_map(|v| {
            std::env::var_os(v)
                .filter(|p| !p.is_empty())
                .map(|p| (v, p))
        });
        let candidate = match forced {
            Some((var, p)) => {
                let p = PathBuf::from(p);
                match root_named(roots, &p) {
                    Some(i) if writable(roots).iter().any(|(j, _)| *j == i) => i,
                    _ => {
                        return Err(Error::new(
                            ErrorKind::InvalidConfig,
                            format!(
                                "${var} is {}, which is not a writable root of the space",
                                p.display()
                            ),
                        ))
                    }
                }
            }
            None => self.fallback.choose(key, roots)?,
        };
        let lock_path = PathBuf::from(format!("{}.lock", self.map.display()));
        let _held = lock(&lock_path)?;
        // Another process may have mapped it meanwhile: its choice wins.
        if let Some(p) = self.lookup(expver)? {
            return index_of(&p, &from_map);
        }
        let mut f = OpenOptions::new()
            .append(true)
            .open(&self.map)
            .map_err(|e| Error::io(self.map.display(), e))?;
        f.write_all(format!("{expver} {}\n", roots[candidate].path.display()).as_bytes())
            .map_err(|e| Error::io(self.map.display(), e))?;
        Ok(candidate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expver_keeps_its_root_and_new_ones_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let map = dir.path().join("map");
        std::fs::write(&map, format!("# comment\n\nxyz1 {}\n", b.display())).unwrap();
        let h = Expver {
            map: map.clone(),
            fallback: Strategy::named("WeightedRandom").unwrap(),
        };
        let roots = [Root::new(&a), Root::new(&b)];
        let k = |e: &str| {
            format!("class=od,expver={e}")
                .parse::<DatasetKey>()
                .unwrap()
        };
        assert_eq!(h.choose(&k("xyz1"), &roots).unwrap(), 1);
        let first = h.choose(&k("0001"), &roots).unwrap();
        for _ in 0..8 {
            assert_eq!(h.choose(&k("0001"), &roots).unwrap(), first);
        }
        let text = std::fs::read_to_string(&map).unwrap();
        assert!(
            text.ends_with(&format!("0001 {}\n", roots[first].path.display())),
            "{text}"
        );
        let e = h.choose(&k("toolong"), &roots).unwrap_err();
        assert!(e.message().contains("'toolong'"), "{e}");
        std::fs::write(&map, "0002 /elsewhere\n").unwrap();
        let e = h.choose(&k("0002"), &roots).unwrap_err();
        assert!(e.message().contains("/elsewhere for expver 0002"), "{e}");
    }

    /// Issue 26, item 8: the map is text read with a limit; a binary one
    /// is a configuration error, and a device is read up to the limit only.
    #[test]
    fn the_map_is_text_read_with_a_limit() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::create_dir_all(&a).unwrap();
        let roots = [Root::new(&a)];
        let key: DatasetKey = "class=od,expver=0001".parse().unwrap();
        let binary = dir.path().join("map");
        std::fs::write(&binary, b"0001 \xff\xfe\n").unwrap();
        let h = |map: &Path| Expver {
            map: map.to_path_buf(),
            fallback: Strategy::named("WeightedRandom").unwrap(),
        };
        let e = h(&binary).choose(&key, &roots).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{e}");
        assert!(
            e.message()
                .contains("not UTF-8 text (invalid byte at offset 5)"),
            "{e}"
        );
        let start = std::time::Instant::now();
        let e = h(Path::new("/dev/zero")).choose(&key, &roots).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{e}");
        assert!(
            e.message()
                .starts_with("the expver handler's map /dev/zero: larger than 16 MiB"),
            "{e}"
        );
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
