//! The C API from C: programs compiled here with the system's C compiler
//! against `include/fdb5/api/fdb_c.h` and linked with `-lfieldstore`, as
//! a client builds.
//!
//! - `tests/c/test_fdb_c.c` calls every function of `fdb_c.h`, every
//!   error path and iteration end, under valgrind (no invalid access, no
//!   leak of any kind);
//! - `tests/c/threads.c`: four threads archive, flush, list and retrieve at
//!   once;
//! - `tests/c/fork.c`: forks while other threads are in the library; no
//!   child may hang;
//! - `tests/c/inherited.c`: a handle inherited across `fork()` fails in the
//!   child, and the parent's fields survive;
//! - the header: it declares exactly the 47 functions of FDB5 5.25's
//!   `fdb_c.h` (plus fieldstore's extensions), which the library exports;
//!   it compiles as C and C++; and every declaration is compatible with
//!   FDB5's own header (checked by the C compiler, when FDB5's wheel is
//!   installed: always under CI).

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use common::*;

/// The functions of FDB5 5.25's `fdb_c.h`.
const FDB5_FUNCTIONS: [&str; 47] = [
    "fdb_initialise",
    "fdb_version",
    "fdb_vcs_version",
    "fdb_error_string",
    "fdb_set_failure_handler",
    "fdb_new_key",
    "fdb_key_add",
    "fdb_delete_key",
    "fdb_new_request",
    "fdb_request_add",
    "fdb_request_get",
    "fdb_expand_request",
    "fdb_delete_request",
    "fdb_new_splitkey",
    "fdb_splitkey_next_metadata",
    "fdb_delete_splitkey",
    "fdb_listiterator_next",
    "fdb_listiterator_attrs",
    "fdb_listiterator_splitkey",
    "fdb_delete_listiterator",
    "fdb_new_datareader",
    "fdb_datareader_open",
    "fdb_datareader_close",
    "fdb_datareader_tell",
    "fdb_datareader_seek",
    "fdb_datareader_skip",
    "fdb_datareader_size",
    "fdb_datareader_read",
    "fdb_delete_datareader",
    "fdb_new_handle",
    "fdb_new_handle_from_yaml",
    "fdb_archive",
    "fdb_archive_multiple",
    "fdb_list",
    "fdb_retrieve",
    "fdb_flush",
    "fdb_delete_handle",
    "fdb_wipe",
    "fdb_wipe_iterator_next",
    "fdb_delete_wipe_iterator",
    "fdb_delete_wipe_element",
    "fdb_wipe_element_string",
    "fdb_purge",
    "fdb_purge_iterator_next",
    "fdb_delete_purge_iterator",
    "fdb_delete_purge_element",
    "fdb_purge_element_string",
];

/// fieldstore's own additions.
const EXTENSIONS: [&str; 3] = [
    "fieldstore_last_error_kind",
    "fieldstore_live_objects",
    "fieldstore_skipped_bytes",
];

fn header() -> PathBuf {
    crate_dir().join("include/fdb5/api/fdb_c.h")
}

/// The prototypes of the header: one string per function, whitespace
/// joined, without comments.
fn prototypes() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(header()).expect("read header");
    let mut code = String::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("comment end") + start + 2;
        rest = &rest[end..];
    }
    code.push_str(rest);
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    code.split(';')
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| s.contains('(') && !s.starts_with("typedef"))
        .filter_map(|s| {
            let s = s.rsplit('}').next().unwrap_or(&s).trim().to_string();
            let name = s[..s.find('(')?]
                .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()?
                .to_string();
            Some((name, s))
        })
        .collect()
}

#[test]
fn the_c_test_program_passes_under_valgrind() {
    let dir = scratch("test_fdb_c");
    let exe = dir.join("test_fdb_c");
    compile_c(&crate_dir().join("tests/c/test_fdb_c.c"), &exe, &[]);
    let work = dir.join("work");
    std::fs::create_dir(&work).expect("work dir");
    let out = run(&exe, &[&work, &repo().join("tests/fixtures/grib")], true);
    assert!(out.contains(", 0 failed"), "{out}");
    eprint!("{out}");
}

#[test]
fn the_c_test_program_calls_every_function() {
    let text = std::fs::read_to_string(crate_dir().join("tests/c/test_fdb_c.c")).expect("read");
    for name in FDB5_FUNCTIONS.iter().chain(EXTENSIONS.iter()) {
        assert!(
            text.contains(&format!("{name}(")),
            "tests/c/test_fdb_c.c does not call {name}"
        );
    }
}

/// Issue 41: bytes around GRIB messages are skipped as ecCodes skips them
/// (`fieldstore_skipped_bytes` gives their ranges), a damaged message is an
/// error, and ecCodes' assertion is an error code, not the end of the
/// program.
#[test]
fn grib_input_junk_is_skipped_and_an_eccodes_assertion_is_an_error_code() {
    let dir = scratch("grib_input");
    let exe = dir.join("grib_input");
    compile_c(&crate_dir().join("tests/c/grib_input.c"), &exe, &[]);
    let out = run(&exe, &[&dir, &repo().join("tests/fixtures")], false);
    assert!(out.contains(", 0 failed"), "{out}");
    eprint!("{out}");
}

#[test]
fn four_threads_archive_flush_list_and_retrieve_at_once() {
    let dir = scratch("threads");
    let exe = dir.join("threads");
    compile_c(&crate_dir().join("tests/c/threads.c"), &exe, &[]);
    let out = run(&exe, &[&dir], false);
    assert!(out.contains(", 0 failures"), "{out}");
    eprint!("{out}");
}

#[test]
fn a_fork_while_threads_use_the_library_does_not_deadlock_the_child() {
    let dir = scratch("fork");
    let exe = dir.join("fork");
    compile_c(&crate_dir().join("tests/c/fork.c"), &exe, &[]);
    let out = run(&exe, &[&dir], false);
    assert!(out.contains(", 0 failures"), "{out}");
    eprint!("{out}");
}

/// Issue 26, item 7: a child's calls through a handle inherited across
/// `fork()` fail naming the parent (they used to succeed and corrupt both
/// processes' fields), and the parent's fields from before and after the
/// fork all list and read back.
#[test]
fn a_handle_inherited_across_fork_fails_in_the_child_and_the_parents_fields_survive() {
    let dir = scratch("inherited");
    let exe = dir.join("inherited");
    compile_c(&crate_dir().join("tests/c/inherited.c"), &exe, &[]);
    let out = run(&exe, &[&dir], false);
    assert!(out.contains(", 0 failed"), "{out}");
    eprint!("{out}");
}

#[test]
fn the_header_declares_what_the_library_exports() {
    let declared: BTreeSet<String> = prototypes().into_iter().map(|(n, _)| n).collect();
    let wanted: BTreeSet<String> = FDB5_FUNCTIONS
        .iter()
        .chain(EXTENSIONS.iter())
        .map(|s| s.to_string())
        .collect();
    assert_eq!(declared, wanted, "the header's functions");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(built_library())
        .output()
        .expect("run nm (binutils)");
    assert!(out.status.success());
    let exported: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, kind, name) = (f.next()?, f.next()?, f.next()?);
            (kind == "T").then(|| name.to_string())
        })
        .collect();
    assert_eq!(exported, wanted, "the library's exported functions");
}

#[test]
fn the_header_compiles_as_c_and_as_cpp() {
    let dir = scratch("header");
    let c = dir.join("client.c");
    std::fs::write(
        &c,
        "#include \"fdb5/api/fdb_c.h\"\n#include \"fdb5/api/fdb_c.h\"\n\
         int main(void) { const char* v; return fdb_version(&v) == FDB_SUCCESS ? 0 : 1; }\n",
    )
    .expect("write");
    let cpp = dir.join("client.cpp");
    std::fs::copy(&c, &cpp).expect("copy");
    for (compiler, std, file) in [
        (cc(), "-std=c99", &c),
        (cc(), "-std=c11", &c),
        (cc(), "-std=gnu17", &c),
        ("c++".to_string(), "-std=c++11", &cpp),
        ("c++".to_string(), "-std=c++17", &cpp),
    ] {
        let mut cmd = Command::new(&compiler);
        cmd.args([std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-c"]);
        if !compiler.contains("++") {
            cmd.arg("-Wstrict-prototypes");
        }
        let out = cmd
            .arg("-I")
            .arg(crate_dir().join("include"))
            .arg(file)
            .arg("-o")
            .arg(dir.join("client.o"))
            .output()
            .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
        assert!(
            out.status.success(),
            "{compiler} {std}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// FDB5's own `fdb_c.h`, from the `fdb5lib` wheel of `scripts/setup-fdb5.sh`
/// (run here; `FIELDSTORE_SKIP_FDB5=1` skips, except under CI).
fn fdb5_header() -> Option<PathBuf> {
    if std::env::var_os("FIELDSTORE_SKIP_FDB5").is_some() && !in_ci() {
        eprintln!("FIELDSTORE_SKIP_FDB5 is set: not comparing with FDB5's header");
        return None;
    }
    let out = Command::new("bash")
        .arg(repo().join("scripts/setup-fdb5.sh"))
        .output()
        .expect("run scripts/setup-fdb5.sh");
    assert!(
        out.status.success(),
        "scripts/setup-fdb5.sh failed (FIELDSTORE_SKIP_FDB5=1 skips): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let python = String::from_utf8(out.stdout).expect("utf-8");
    let venv = PathBuf::from(python.trim());
    let venv = venv.parent()?.parent()?.to_path_buf();
    let lib = std::fs::read_dir(venv.join("lib"))
        .ok()?
        .flatten()
        .next()?
        .path();
    let h = lib.join("site-packages/fdb5lib/include/fdb5/api/fdb_c.h");
    assert!(h.exists(), "{} missing", h.display());
    Some(h)
}

#[test]
fn every_declaration_is_compatible_with_fdb5s_header() {
    let Some(theirs) = fdb5_header() else {
        return;
    };
    // FDB5's header, then each of our prototypes again: the compiler
    // refuses a redeclaration with an incompatible type.
    let mut tu = format!("#include \"{}\"\n", theirs.display());
    let mut n = 0;
    for (name, proto) in prototypes() {
        if name.starts_with("fdb_") {
            tu.push_str(&proto);
            tu.push_str(";\n");
            n += 1;
        }
    }
    assert_eq!(n, 47);
    for (name, value) in [
        ("FDB_SUCCESS", 0),
        ("FDB_ERROR_GENERAL_EXCEPTION", 1),
        ("FDB_ERROR_UNKNOWN_EXCEPTION", 2),
        ("FDB_ITERATION_COMPLETE", 3),
    ] {
        tu.push_str(&format!("_Static_assert({name} == {value}, \"{name}\");\n"));
    }
    let dir = scratch("fdb5-header");
    let file = dir.join("both.c");
    std::fs::write(&file, tu).expect("write");
    let out = Command::new(cc())
        .args(["-std=c11", "-Wall", "-Werror", "-c"])
        .arg(&file)
        .arg("-o")
        .arg(dir.join("both.o"))
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "fieldstore's prototypes conflict with FDB5's ({}):\n{}",
        theirs.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
