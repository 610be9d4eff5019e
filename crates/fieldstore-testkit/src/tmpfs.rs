//! A tmpfs mounted for one test: a second file system (so that a move
//! between roots copies), or a small one to fill up. Mounting needs root;
//! CI runs as root, where a failed mount fails the test instead of skipping
//! it.

use std::path::{Path, PathBuf};

/// A tmpfs mounted at a path, unmounted when dropped.
#[derive(Debug)]
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mount a tmpfs of `size` (`mount -o size=`, e.g. `256m`) at `path`,
    /// created if needed. `None` (the test should skip) when mounting is
    /// refused outside CI.
    ///
    /// # Panics
    /// When mounting fails in CI (`CI` set).
    pub fn mount(path: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(path).expect("creating the mount point");
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must be able to mount a tmpfs (runs as root)"
            );
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        Some(Tmpfs(path.to_path_buf()))
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}
