//! Where things live under a root: dataset directories and file names.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use fieldstore_core::{DatasetKey, Error, ErrorKind, Result};

use crate::config::Root;

/// The table of contents' file name within a dataset directory.
pub(crate) const TOC: &str = "toc";

/// A dataset directory's name: the key's values joined by `:` (FDB5's
/// naming, e.g. `od:0001:oper:20231201:1200:g`), with `%`, `/` and a leading
/// `.` percent-encoded; names too long for a file system end in a hash.
pub(crate) fn dataset_dir_name(key: &DatasetKey) -> String {
    let mut name = String::new();
    for (i, v) in key.values().enumerate() {
        if i > 0 {
            name.push(':');
        }
        for c in v.chars() {
            match c {
                '%' => name.push_str("%25"),
                '/' => name.push_str("%2F"),
                c => name.push(c),
            }
        }
    }
    if name.starts_with('.') {
        name.replace_range(0..1, "%2E");
    }
    if name.is_empty() {
        name.push_str("%00");
    }
    if name.len() > 200 {
        let hash = crc32c::crc32c(key.to_string().as_bytes());
        let mut cut = 180;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
        name.push_str(&format!("~{hash:08x}"));
    }
    name
}

/// The directory of `key` in `roots`: where it exists already (it has a
/// table of contents), else in the first writable root.
pub(crate) fn find_dataset(roots: &[Root], key: &DatasetKey) -> Option<PathBuf> {
    let name = dataset_dir_name(key);
    roots
        .iter()
        .filter(|r| r.visit)
        .map(|r| r.path.join(&name))
        .find(|d| d.join(TOC).exists())
}

/// The directory where `key` lives or will be created.
pub(crate) fn dataset_dir_for_write(roots: &[Root], key: &DatasetKey) -> Result<PathBuf> {
    if let Some(d) = find_dataset(roots, key) {
        return Ok(d);
    }
    let root = roots.iter().find(|r| r.writable).ok_or_else(|| {
        Error::new(
            ErrorKind::PermissionDenied,
            "no writable root is configured for new datasets",
        )
    })?;
    if !root.path.is_dir() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "root {} does not exist or is not a directory",
                root.path.display()
            ),
        ));
    }
    Ok(root.path.join(dataset_dir_name(key)))
}

/// A name unique among all writers on all hosts sharing the file system:
/// host, process, start time in nanoseconds, and a per-process counter.
pub(crate) fn writer_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}.{}.{}.{}", hostname(), std::process::id(), nanos, n)
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most
    // that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "host".to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name: String = String::from_utf8_lossy(&buf[..end])
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "host".to_string()
    } else {
        name
    }
}

/// `fdatasync(2)`: the file's data (and size) on stable storage.
pub(crate) fn sync_data(file: &File, path: &Path) -> Result<()> {
    file.sync_data()
        .map_err(|e| Error::io(format!("syncing {}", path.display()), e))
}

/// Make a directory's entries durable (after creating or renaming files).
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    let f = File::open(dir).map_err(|e| Error::io(dir.display(), e))?;
    f.sync_all()
        .map_err(|e| Error::io(format!("syncing directory {}", dir.display()), e))
}

/// `mkdir`, where an existing directory is fine.
pub(crate) fn ensure_dir(dir: &Path) -> Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(Error::io(
            format!("creating dataset directory {}", dir.display()),
            e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_fdb5_and_escape() {
        let k: DatasetKey = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain="
            .parse()
            .unwrap();
        assert_eq!(dataset_dir_name(&k), "od:0001:oper:20231201:1200:");
        let k: DatasetKey = "a=.x/y%z".parse().unwrap();
        assert_eq!(dataset_dir_name(&k), "%2Ex%2Fy%25z");
        let long: DatasetKey = format!("a={}", "x".repeat(300)).parse().unwrap();
        let n = dataset_dir_name(&long);
        assert!(n.len() < 200 && n.contains('~'), "{n}");
    }
}
