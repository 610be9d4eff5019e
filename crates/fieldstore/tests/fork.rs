//! A handle inherited across `fork()` (issue 26, item 7): in the child,
//! archive, flush and discard fail with an error naming the parent, and
//! dropping the handle there touches nothing; the parent's fields archived
//! before and after the fork, flushed or pending at the fork, all list and
//! read back with their bytes.
//!
//! Alone in this test binary: the fork happens with no other test running.

use fieldstore::{Config, ErrorKind, FieldStore, Key, ListOptions};

fn key(step: u32) -> Key {
    format!(
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step={step},param=167"
    )
    .parse()
    .unwrap()
}

/// A payload large enough to be staged (not one write per field).
fn payload(step: u32) -> Vec<u8> {
    let mut v = vec![b'a' + step as u8; 100_000];
    v[..8].copy_from_slice(format!("step{step:04}").as_bytes());
    v
}

/// The child's checks; its exit code: 0 when each call failed as it must,
/// else the number of the check that did not hold.
fn child(fs: FieldStore, parent: u32) -> i32 {
    let refused = |r: fieldstore::Result<()>| match r {
        Err(e) => {
            e.kind() == ErrorKind::InvalidInput
                && e.message()
                    .contains(&format!("this handle was opened by process {parent}"))
                && e.message().contains("open a new handle in the child")
        }
        Ok(()) => false,
    };
    if !refused(fs.archive(&key(50), &payload(50))) {
        return 10;
    }
    if !refused(fs.flush()) {
        return 11;
    }
    if !refused(fs.discard()) {
        return 12;
    }
    // Dropping it here must neither flush the parent's pending field nor
    // touch the files it still writes.
    drop(fs);
    // The child names its writers apart from the parent's (same counter,
    // another pid), so their files, objects and log keys never collide.
    let id = fieldstore_core::writer_id::next();
    if fieldstore_core::writer_id::parse(&id).map(|(_, pid)| pid) != Some(std::process::id()) {
        return 13;
    }
    0
}

#[test]
fn a_handle_used_in_a_forked_child_refuses_to_write_and_the_parents_fields_survive() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FieldStore::open(Config::embedded(dir.path())).unwrap();
    fs.archive(&key(0), &payload(0)).unwrap();
    fs.flush().unwrap();
    // Pending at the fork: the child's copy must not flush it.
    fs.archive(&key(1), &payload(1)).unwrap();
    let parent = std::process::id();
    // SAFETY: the child runs only the checks above (no lock another thread
    // of this test binary could hold matters to them: allocation is
    // fork-safe in glibc) and leaves with `_exit`, never returning into the
    // test harness, whatever happens.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child(fs, parent)))
            .unwrap_or(99);
        // SAFETY: ends the child without running the harness's exit code.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked; `status` is writable.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's check failed (status {status}: exit code {} is the check's number)",
        libc::WEXITSTATUS(status)
    );
    // The parent goes on: a field after the fork, one flush for both.
    fs.archive(&key(2), &payload(2)).unwrap();
    fs.flush().unwrap();
    drop(fs);

    let reader = FieldStore::open(Config::embedded(dir.path())).unwrap();
    let listed = reader
        .list(&"class=od".parse().unwrap(), ListOptions::default())
        .unwrap();
    let mut steps: Vec<String> = listed
        .iter()
        .map(|e| e.full_key().get("step").unwrap().to_string())
        .collect();
    steps.sort();
    assert_eq!(steps, ["0", "1", "2"], "the parent's fields, and only them");
    for step in 0..3 {
        let bytes = reader
            .retrieve(&format!("{key}", key = key(step)).parse().unwrap())
            .unwrap()
            .read_all()
            .unwrap();
        assert!(bytes == payload(step), "step {step}: wrong bytes");
    }
}
