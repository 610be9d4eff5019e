//! The publisher's position, kept durably: which fields (key and
//! location) Aviso has acknowledged a notification for.
//!
//! The state file is a log of JSON lines, appended with one `write` each:
//! `{"i":N,"f":[[key,location],…]}` before notification N is posted (its
//! intent) and `{"d":N}` once the server acknowledged it. A field counts
//! as notified only when an intent naming it has its `d` line, which is
//! written after the server's 2xx reply: so a publisher killed at any
//! instant (SIGKILL included: the lines are in the kernel's page cache)
//! forgets nothing it did not post, and at worst posts again what it
//! posted but had not recorded (a duplicate, which intents without `d`
//! let it count). Opening the file compacts it: the notified fields in one
//! intent and its `d` line, written to a temporary file that replaces the
//! old one atomically.
//!
//! One publisher per state file: two would each compact, post and record
//! the same notifications, and one's compaction would drop the other's
//! lines. The [`Journal`] holds an exclusive `flock` on `<state>.lock`
//! (beside it: the state file itself is replaced by each compaction, so a
//! lock on it would not outlive the first) from before the file is read
//! until the publisher ends — the kernel lets go when the process dies,
//! SIGKILL included. A second publisher is refused at start, naming the
//! process that holds it.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use fieldstore::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};

/// What the state file held when it was opened.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Whether there was no state file: the publisher starts for the first
    /// time.
    pub fresh: bool,
    /// Fields notified and acknowledged: full key → location.
    pub notified: HashMap<String, String>,
    /// Fields of notifications posted (or about to be) but never
    /// acknowledged: posting them again may duplicate.
    pub unacknowledged: HashSet<String>,
}

/// The state file, open for appending, and its lock.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    next: u64,
    /// `<state>.lock`, locked (`flock`, exclusive) while this lives.
    _lock: File,
}

/// Lock `<path>.lock` for this process: exclusive, not waiting.
///
/// # Errors
/// `Unavailable`, naming the holder, when another publisher holds it;
/// `Io` when it cannot be created or locked.
fn lock(path: &Path) -> Result<File> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|e| io_error(&lock_path, "cannot open the lock of", e))?;
    // SAFETY: a valid descriptor; flock takes no pointers.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(io_error(&lock_path, "cannot lock", e));
        }
        let mut holder = String::new();
        let _ = f.read_to_string(&mut holder);
        let holder = holder.trim();
        return Err(Error::new(
            ErrorKind::Unavailable,
            format!(
                "the notify state file {} is in use by another publisher ({}, holding {}): \
                 one publisher per state file — stop that one, or give this one its own \
                 --state",
                path.display(),
                if holder.is_empty() {
                    "process unknown".to_string()
                } else {
                    format!("process {holder}")
                },
                lock_path.display()
            ),
        ));
    }
    // Name the holder for the next one refused (best effort).
    let _ = f.set_len(0);
    let _ = f.rewind();
    let _ = write!(f, "{}", std::process::id());
    Ok(f)
}

#[derive(Debug, Serialize, Deserialize)]
struct Line {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    i: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    f: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    d: Option<u64>,
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::io(
        format!("{what} the notify state file {}", path.display()),
        e,
    )
}

impl Journal {
    /// Open (or create) the state file at `path`, read what it records,
    /// and compact it.
    ///
    /// # Errors
    /// `Unavailable` when another publisher has it open (see the module
    /// documentation); `Io` when it cannot be read or written; `Corrupt` for a line that is
    /// not the publisher's (a torn last line, from a write cut short, is
    /// ignored: its intent or acknowledgement did not happen).
    pub fn open(path: &Path) -> Result<(Journal, Recovered)> {
        let lock = lock(path)?;
        let mut recovered = Recovered::default();
        let mut intents: HashMap<u64, Vec<(String, String)>> = HashMap::new();
        match File::open(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => recovered.fresh = true,
            Err(e) => return Err(io_error(path, "cannot open", e)),
            Ok(f) => {
                let lines: Vec<String> = BufReader::new(f)
                    .lines()
                    .collect::<std::io::Result<_>>()
                    .map_err(|e| io_error(path, "cannot read", e))?;
                let n = lines.len();
                for (at, text) in lines.iter().enumerate() {
                    let line: Line = match serde_json::from_str(text) {
                        Ok(l) => l,
                        Err(_) if at + 1 == n => break,
                        Err(e) => {
                            return Err(Error::new(
                                ErrorKind::Corrupt,
                                format!(
                                    "the notify state file {} line {}: not a line of fieldstore \
                                     notify's ({e}); move it away to start afresh",
                                    path.display(),
                                    at + 1
                                ),
                            ))
                        }
                    };
                    if let Some(i) = line.i {
                        intents.insert(i, line.f);
                    } else if let Some(d) = line.d {
                        for (k, loc) in intents.remove(&d).unwrap_or_default() {
                            recovered.unacknowledged.remove(&k);
                            recovered.notified.insert(k, loc);
                        }
                    }
                }
                for (k, _) in intents.into_values().flatten() {
                    if !recovered.notified.contains_key(&k) {
                        recovered.unacknowledged.insert(k);
                    }
                }
            }
        }
        let journal = Journal::compact(path, &recovered, lock)?;
        Ok((journal, recovered))
    }

    /// Rewrite the file with what `recovered` holds as notified.
    fn compact(path: &Path, recovered: &Recovered, lock: File) -> Result<Journal> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        {
            let mut f = File::create(&tmp).map_err(|e| io_error(&tmp, "cannot create", e))?;
            if !recovered.notified.is_empty() {
                let mut fields: Vec<(String, String)> = recovered
                    .notified
                    .iter()
                    .map(|(k, l)| (k.clone(), l.clone()))
                    .collect();
                fields.sort();
                let mut text = line(&Line {
                    i: Some(0),
                    f: fields,
                    d: None,
                });
                text.push_str(&line(&Line {
                    i: None,
                    f: Vec::new(),
                    d: Some(0),
                }));
                f.write_all(text.as_bytes())
                    .map_err(|e| io_error(&tmp, "cannot write", e))?;
            }
            f.sync_all().map_err(|e| io_error(&tmp, "cannot sync", e))?;
        }
        std::fs::rename(&tmp, path).map_err(|e| io_error(path, "cannot replace", e))?;
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| io_error(path, "cannot open", e))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            next: 1,
            _lock: lock,
        })
    }

    /// Record that notification `fields` is about to be posted; its number.
    ///
    /// # Errors
    /// `Io` when the line cannot be written.
    pub fn intent(&mut self, fields: &[(String, String)]) -> Result<u64> {
        let n = self.next;
        self.append(&line(&Line {
            i: Some(n),
            f: fields.to_vec(),
            d: None,
        }))?;
        self.next += 1;
        Ok(n)
    }

    /// Record that the server acknowledged notification `n`.
    ///
    /// # Errors
    /// `Io` when the line cannot be written.
    pub fn acknowledged(&mut self, n: u64) -> Result<()> {
        self.append(&line(&Line {
            i: None,
            f: Vec::new(),
            d: Some(n),
        }))
    }

    /// Record `fields` as notified without posting them: the fields already
    /// there when a first publisher starts from now.
    ///
    /// # Errors
    /// `Io` when the lines cannot be written.
    pub fn baseline(&mut self, fields: &[(String, String)]) -> Result<()> {
        let n = self.intent(fields)?;
        self.acknowledged(n)
    }

    fn append(&mut self, text: &str) -> Result<()> {
        self.file
            .write_all(text.as_bytes())
            .map_err(|e| io_error(&self.path, "cannot append to", e))
    }
}

fn line(l: &Line) -> String {
    let mut s = serde_json::to_string(l).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(k: &str) -> (String, String) {
        (k.to_string(), format!("file:/x/{k} offset=0 length=3"))
    }

    #[test]
    fn only_acknowledged_fields_count_as_notified() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state");
        {
            let (mut j, r) = Journal::open(&path).expect("open");
            assert!(r.fresh);
            let a = j.intent(&[field("a"), field("b")]).expect("intent");
            j.acknowledged(a).expect("ack");
            j.intent(&[field("c")]).expect("intent");
            // Killed here: c was posted, maybe, never acknowledged.
        }
        let (mut j, r) = Journal::open(&path).expect("reopen");
        assert!(!r.fresh);
        assert_eq!(r.notified.len(), 2);
        assert_eq!(r.notified.get("a"), Some(&field("a").1));
        assert!(r.unacknowledged.contains("c") && r.unacknowledged.len() == 1);
        // The compacted file keeps a and b, forgets the intent of c.
        j.baseline(&[field("d")]).expect("baseline");
        drop(j);
        let (_, r) = Journal::open(&path).expect("third open");
        let mut keys: Vec<&String> = r.notified.keys().collect();
        keys.sort();
        assert_eq!(keys, ["a", "b", "d"]);
        assert!(r.unacknowledged.is_empty());
    }

    #[test]
    fn one_journal_per_state_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state");
        let (first, _) = Journal::open(&path).expect("open");
        // flock: a second open file description conflicts, in this process
        // as in another.
        let e = Journal::open(&path).expect_err("refused while the first is open");
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
        assert!(
            e.to_string().contains(&format!(
                "in use by another publisher (process {}",
                std::process::id()
            )),
            "{e}"
        );
        drop(first);
        Journal::open(&path).expect("open once the first is gone");
    }

    #[test]
    fn a_torn_last_line_is_ignored_a_torn_middle_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state");
        std::fs::write(
            &path,
            "{\"i\":1,\"f\":[[\"a\",\"l\"]]}\n{\"d\":1}\n{\"i\":2,\"f\":[[\"b",
        )
        .expect("write");
        let (_, r) = Journal::open(&path).expect("open");
        assert_eq!(r.notified.len(), 1);
        std::fs::write(&path, "garbage\n{\"d\":1}\n").expect("write");
        let e = Journal::open(&path).expect_err("refused");
        assert!(e.to_string().contains("line 1"), "{e}");
    }
}
