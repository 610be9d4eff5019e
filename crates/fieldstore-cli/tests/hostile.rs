//! Hostile input through the binary (issue 17, items 6, 7 and 12; issue 26,
//! item 8): inputs
//! without end, output paths that are not plain files, requests that are not
//! requests. Each gets a clear error naming what is wrong and where, and
//! harms nothing stored or anything else on the machine.

mod common;

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Env, BASE};

fn key(rest: &str) -> String {
    format!("{BASE},{rest}")
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

fn is_fifo(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// A store with a good field at step 0 and a damaged one at step 6, so that
/// `retrieve step=0/6` writes the first and then fails (exit 5).
fn with_a_damaged_field() -> Env {
    let env = Env::new();
    env.archive(&key("step=0,param=167"), b"good field");
    env.archive(&key("step=6,param=167"), b"will be damaged");
    common::damage_field(&env, "step=6");
    env
}

/// Run `retrieve REQUEST -o fifo` while this process reads the FIFO: up to
/// `read_limit` bytes, then closes it. Returns the run and what was read.
/// Never hangs on a command that fails before opening the FIFO.
fn retrieve_into_fifo(
    env: &Env,
    request: &str,
    fifo: &Path,
    read_limit: u64,
) -> (common::Run, Vec<u8>) {
    let reader = {
        let fifo = fifo.to_path_buf();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            let f = File::open(&fifo).expect("open the FIFO for reading");
            f.take(read_limit).read_to_end(&mut got).expect("read");
            got
        })
    };
    let child = env
        .command()
        .args(["retrieve", request, "-o"])
        .arg(fifo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = child.wait_with_output().expect("wait");
    // If the command never opened the FIFO, the reader still waits in open:
    // a read-write open never blocks and releases it.
    drop(OpenOptions::new().read(true).write(true).open(fifo));
    let got = reader.join().expect("reader");
    let run = common::Run {
        code: out.status.code().expect("exit code"),
        stdout: out.stdout,
        stderr: String::from_utf8(out.stderr).expect("utf-8"),
    };
    (run, got)
}

// ---- item 7: `retrieve -o PATH` removes only what it created ------------

#[test]
fn a_failed_retrieve_removes_only_a_file_it_created() {
    let env = with_a_damaged_field();
    let request = key("step=0/6,param=167");

    // Created by the command: removed after the error.
    let r = env.run(&["retrieve", &request, "-o", "new.bin"]);
    assert_eq!(r.code, 5, "{r:?}");
    assert!(!env.path("new.bin").exists(), "its own partial output goes");

    // There before: kept (it holds what was written before the error).
    let old = env.write("old.bin", b"precious");
    let r = env.run(&["retrieve", &request, "-o", "old.bin"]);
    assert_eq!(r.code, 5, "{r:?}");
    assert!(
        old.is_file(),
        "a file that was there before is never removed"
    );
    assert_eq!(std::fs::read(&old).expect("read"), b"good field");

    // A FIFO: kept, and its reader got the good field.
    let fifo = env.path("fifo");
    mkfifo(&fifo);
    let (r, got) = retrieve_into_fifo(&env, &request, &fifo, u64::MAX);
    assert_eq!(r.code, 5, "{r:?}");
    assert_eq!(got, b"good field");
    assert!(is_fifo(&fifo), "a FIFO is never removed");
}

#[test]
fn a_fifo_whose_reader_goes_away_is_an_error() {
    let env = Env::new();
    // Far more than a pipe holds, so the write must wait for the reader.
    let big: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
    env.archive(&key("step=0,param=167"), &big);
    let fifo = env.path("fifo");
    mkfifo(&fifo);
    let (r, got) = retrieve_into_fifo(&env, &key("step=0,param=167"), &fifo, 1);
    assert_eq!(got.len(), 1);
    r.fails(
        1,
        &format!(
            "{}: the reader went away before every field was written (Broken pipe (os error 32))",
            fifo.display()
        ),
    );
    assert!(is_fifo(&fifo), "a FIFO is never removed");
}

#[test]
fn dev_full_is_never_removed() {
    let full = Path::new("/dev/full");
    if !std::fs::metadata(full).is_ok_and(|m| m.file_type().is_char_device()) {
        eprintln!("no /dev/full: skipped");
        return;
    }
    let env = Env::new();
    env.archive(&key("step=0,param=167"), &vec![7u8; 1 << 16]);
    let r = env.run(&["retrieve", &key("step=0,param=167"), "-o", "/dev/full"]);
    r.fails(6, "/dev/full: No space left on device (os error 28)");
    assert!(
        std::fs::metadata(full).is_ok_and(|m| m.file_type().is_char_device()),
        "/dev/full is still there"
    );
}

// ---- item 12: what cannot be a request is refused, naming it ------------

#[test]
fn a_leading_word_must_be_a_mars_verb() {
    let env = Env::new();
    env.archive(&key("step=0,param=167"), b"kept");
    env.archive(
        &key("step=0,param=167"),
        b"replaced: purge would reclaim the first",
    );
    for cmd in ["list", "axes", "where", "purge", "stats", "status"] {
        env.run(&[cmd, "foo"]).fails(
            2,
            "malformed request at character 0: 'foo' is neither keyword=value nor a MARS verb \
             (archive, retrieve, list, read, write, compute, stage)",
        );
    }
    env.run(&["purge", "foo", "--doit"]).fails(
        2,
        "malformed request at character 0: 'foo' is neither keyword=value nor a MARS verb \
         (archive, retrieve, list, read, write, compute, stage)",
    );
    env.run(&["purge", "list", "--doit"]).fails(
        2,
        "malformed request at character 0: the MARS verb 'list' must be followed by \
         keyword=value items (leave the request out to mean everything)",
    );
    // Nothing was purged: the replaced field's file is still counted.
    let stats = env.run(&["stats"]).ok().out();
    assert!(stats.contains("duplicates=1"), "{stats}");
    // A real verb followed by items is accepted and ignored.
    let r = env.run(&["list", "retrieve,class=od,step=0"]).ok();
    assert_eq!(r.lines().len(), 1, "{r:?}");
}

#[test]
fn bad_steps_and_dates_are_named_as_archive_names_them() {
    let env = Env::new();
    env.archive(&key("step=0,param=167"), b"s0");
    env.archive(&key("step=12,param=167"), b"s12");
    env.run(&["list", "step=-6"]).fails(
        2,
        "keyword 'step' in request: '-6' is not a valid Step: a step cannot be negative \
         (a step range is written from-to, e.g. 0-6)",
    );
    for cmd in ["list", "retrieve", "where", "axes"] {
        env.run(&[cmd, &key("date=20230230,step=0,param=167").replace("date=20231201,", "")])
            .fails(
                2,
                "keyword 'date' in request: '20230230' is not a valid Date: no such day in the calendar",
            );
    }
    env.run(&["list", "class=od,date=abc"]).fails(
        2,
        "keyword 'date' in request: 'abc' is not a valid Date: expected YYYYMMDD, YYYY-MM-DD, \
         or a relative day such as 0 or -1",
    );
    // Archive refuses the same values, with the same words.
    let f = env.write("f", b"x");
    let r = env.run(&[
        "archive",
        "--key",
        &key("step=0,param=167").replace("20231201", "20230230"),
        f.to_str().expect("path"),
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("'20230230' is not a valid Date: no such day in the calendar"),
        "{r:?}"
    );
    // Ranges, lists and relative dates still work.
    let r = env
        .run(&[
            "list",
            "class=od,date=20231101/to/20231231,step=0/to/12/by/6",
        ])
        .ok();
    assert_eq!(r.lines().len(), 2, "{r:?}");
    let r = env
        .run(&[
            "retrieve",
            &key("step=0/12,param=167").replace("date=20231201", "date=20231201/-1"),
        ])
        .ok();
    assert_eq!(r.stdout, b"s0s12");
}

// ---- item 6: no input makes archive hold more than the limit -------------

#[test]
fn endless_input_ends_with_an_error_naming_the_offset_or_the_limit() {
    let env = Env::new();
    env.archive(&key("step=0,param=167"), b"kept");
    let k = key("step=6,param=167");
    // GRIB: no message in more bytes than the limit (bytes that are not
    // GRIB are skipped, as ecCodes skips them, up to it), from a device or
    // from standard input, whether bad messages are skipped or not.
    let no_message = |r: &common::Run, file: &str| {
        assert_eq!(r.code, 2, "{r:?}");
        assert!(
            r.stderr.starts_with(&format!(
                "fieldstore: error: archiving {file}: GRIB message 0 at byte offset 0: no GRIB \
                 message in the "
            )) && r
                .stderr
                .ends_with("(more than the largest message allowed): giving up\n"),
            "{r:?}"
        );
    };
    let r = env.run(&["archive", "--max-field-size", "100000", "/dev/zero"]);
    no_message(&r, "/dev/zero");
    let r = common::run(
        env.command()
            .args(["archive", "--max-field-size", "100000", "-"])
            .stdin(File::open("/dev/zero").expect("/dev/zero")),
    );
    no_message(&r, "-");
    let r = env.run(&[
        "archive",
        "--skip-bad",
        "--max-field-size",
        "100000",
        "/dev/zero",
    ]);
    no_message(&r, "/dev/zero");
    // --key: read up to the limit, then refused naming it.
    env.run(&[
        "archive",
        "--key",
        &k,
        "--max-field-size",
        "1000",
        "/dev/zero",
    ])
    .fails(
        2,
        "/dev/zero: more than 1000 bytes, the largest field allowed (--max-field-size)",
    );
    // A regular file is refused by its size, before it is read.
    let f = env.write("eleven", b"eleven byte");
    let f = f.to_str().expect("path");
    env.run(&["archive", "--key", &k, "--max-field-size", "10", f])
        .fails(
            2,
            &format!("{f}: more than 10 bytes, the largest field allowed (--max-field-size)"),
        );
    env.run(&["archive", "--key", &k, "--max-field-size", "11", f])
        .ok();
    // Nothing stored was harmed, and only the field within the limit is new.
    let r = env.run(&["list"]).ok();
    assert_eq!(r.lines().len(), 2, "{r:?}");
    let r = env.run(&["retrieve", &key("step=0,param=167")]).ok();
    assert_eq!(r.stdout, b"kept");
}

#[test]
fn a_grib_message_above_the_limit_is_refused_before_it_is_read() {
    let env = Env::new();
    let grib = common::repo().join("tests/fixtures/grib/rd-fc.grib");
    let len = std::fs::metadata(&grib).expect("fixture").len();
    let grib = grib.to_str().expect("path");
    env.run(&["archive", "--max-field-size", &(len - 1).to_string(), grib])
        .fails(
            2,
            &format!(
                "archiving {grib}: GRIB message 0 at byte offset 0: the message is {len} bytes \
                 long, more than the largest message allowed ({} bytes)",
                len - 1
            ),
        );
    // Nothing archived: not even the root was created.
    assert!(!env.root().exists());
    env.run(&["archive", "--max-field-size", &len.to_string(), grib])
        .ok();
    assert_eq!(env.run(&["list"]).ok().lines().len(), 1);
}

// ---- issue 26, item 8: configuration and schema files are read with a limit

/// Run under a 2 GiB address-space limit, returning how long it took: a
/// regression that reads a device without a limit dies of it here (in
/// seconds) instead of filling the machine's memory.
fn run_bounded(mut c: Command) -> (common::Run, std::time::Duration) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure only calls setrlimit,
    // which is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = std::time::Instant::now();
    let r = common::run(&mut c);
    (r, start.elapsed())
}

/// The message for a file above the limit.
fn too_large(label: &str) -> String {
    format!(
        "{label}: larger than 16 MiB, the limit for a configuration, schema or map file: is it \
         the right file?"
    )
}

#[test]
fn endless_configs_and_schemas_stop_at_the_limit_as_invalid_configuration() {
    let env = Env::new();
    let fails_fast = |c: Command, message: &str| {
        let what = format!("{c:?}");
        let (r, took) = run_bounded(c);
        r.fails(3, message);
        assert!(
            took < std::time::Duration::from_secs(5),
            "{what} took {took:?}"
        );
    };
    let mut c = env.command();
    c.args(["--config", "/dev/zero", "list"]);
    fails_fast(c, &too_large("config /dev/zero"));
    let mut c = env.command();
    c.env("FIELDSTORE_CONFIG", "/dev/zero").arg("info");
    fails_fast(c, &too_large("config /dev/zero"));
    let config = env.config_with_schema(Path::new("/dev/zero"));
    let mut c = env.command();
    c.arg("--config").arg(&config).arg("list");
    fails_fast(
        c,
        &too_large(&format!("{}: schema /dev/zero", config.display())),
    );
    let mut c = env.command();
    c.args(["schema", "--check", "/dev/zero"]);
    fails_fast(c, &too_large("/dev/zero"));
}

#[test]
fn binary_configs_and_schemas_are_invalid_configuration_not_corrupt_data() {
    let env = Env::new();
    let binary = env.write("binary", b"type: local\n\xff\xfe\x00\x01binary");
    let binary = binary.display().to_string();
    let schema_binary = env.config_with_schema(Path::new(&binary));
    let config = schema_binary.display().to_string();
    let not_text = |label: &str| {
        format!("{label}: not UTF-8 text (invalid byte at offset 12): is it the right file?")
    };
    env.run(&["--config", &binary, "list"])
        .fails(3, &not_text(&format!("config {binary}")));
    env.run(&["--config", &config, "list"])
        .fails(3, &not_text(&format!("{config}: schema {binary}")));
    env.run(&["schema", "--check", &binary])
        .fails(3, &not_text(&binary));
    // Text that is not YAML (or not a schema) was already exit 3.
    let garbage = env.write("garbage.yaml", "{{{ not: [yaml");
    let r = env.run(&["--config", garbage.to_str().expect("path"), "list"]);
    assert_eq!(r.code, 3, "{r:?}");
}
