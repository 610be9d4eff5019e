//! GRIB files through the binary: `fieldstore archive FILE.grib...` files
//! every message under its MARS key as FDB5 does, `retrieve -o out.grib`
//! gives the messages back byte for byte in request order, and bad messages
//! are reported with the file, the message index, the byte offset and the
//! problem (exact text and exit code), archiving nothing, unless
//! `--skip-bad`.

mod common;

use std::collections::{BTreeSet, HashSet};
use std::process::Stdio;

use common::{fixtures, repo, Env, Run};

const SPLITS: &str = include_str!("../../../tests/fixtures/oracle/ecmwf-splits.tsv");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(repo().join("tests/fixtures/grib").join(name)).expect("fixture")
}

/// The messages of a GRIB file (no padding).
fn messages(bytes: &[u8]) -> Vec<Vec<u8>> {
    fieldstore_grib::split_messages(bytes)
        .map(|m| m.expect("valid message").bytes().to_vec())
        .collect()
}

/// Whether this binary's ecCodes puts `timespan` into GRIB2 keys (2.50 and
/// later, as FDB5's wheels; see docs/grib.md).
fn eccodes_has_timespan() -> bool {
    let v: Vec<u32> = fieldstore_grib::eccodes_version()
        .split('.')
        .map(|p| p.parse().expect("version"))
        .collect();
    v[..2] >= [2, 50][..]
}

/// What `fdb-list` printed for every fixture message (the oracle), as this
/// ecCodes should make fieldstore print it.
fn fdb5_list() -> BTreeSet<String> {
    SPLITS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let line = l.split('\t').nth(3).expect("4 columns").to_string();
            if eccodes_has_timespan() {
                line
            } else {
                line.replace(",timespan=none", "")
                    .replace(",timespan=1h", "")
            }
        })
        .collect()
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn listed(env: &Env) -> BTreeSet<String> {
    env.run(&["list"]).ok().lines().into_iter().collect()
}

#[test]
fn every_fixture_is_filed_as_fdb5_files_it() {
    let env = Env::new();
    let files = fixtures();
    assert_eq!(files.len(), 7);
    let total: usize = files
        .iter()
        .map(|f| messages(&std::fs::read(f).expect("read")).concat().len())
        .sum();
    let mut args = vec!["archive"];
    args.extend(files.iter().map(|f| path(f)));
    let r = env.run(&args).ok();
    assert_eq!(
        r.stderr,
        format!("fieldstore: archived 14 fields ({total} bytes) from 7 files\n")
    );
    assert!(r.stdout.is_empty());
    assert_eq!(listed(&env), fdb5_list());
    // The e6 fields are told apart by timespan, as in FDB5.
    let axes = env.run(&["axes", "class=e6", "--depth", "2"]).ok().out();
    if eccodes_has_timespan() {
        assert!(axes.contains("\ntimespan=1h/none\n"), "{axes}");
    }
}

#[test]
fn retrieve_writes_valid_grib_in_request_order_byte_for_byte() {
    let env = Env::new();
    let timespan = fixture("timespan.grib");
    let levtypes = fixture("levtypes.grib");
    env.write("t.grib", &timespan);
    env.write("l.grib", &levtypes);
    env.run(&["archive", "t.grib", "l.grib"]).ok();
    let t = messages(&timespan);

    // Steps 18, 6, 12 of 2t: messages 2, 0, 1 of the file, in that order.
    let request = "class=e6,expver=5659,stream=oper,date=20161230,time=1800,type=fc,\
                   levtype=sfc,step=18/6/12,param=167";
    let r = env.run(&["retrieve", request, "-o", "out.grib"]).ok();
    assert_eq!(
        r.stderr,
        format!(
            "fieldstore: retrieved 3 fields ({} bytes) to out.grib\n",
            t[0].len() * 3
        )
    );
    let out = std::fs::read(env.path("out.grib")).expect("out.grib");
    assert!(out == [&t[2][..], &t[0], &t[1]].concat(), "byte-identical");
    // A valid GRIB file: it splits into the same messages, with the same keys.
    let again = messages(&out);
    assert_eq!(again.len(), 3);
    for (m, i) in again.iter().zip([2, 0, 1]) {
        assert_eq!(
            fieldstore_grib::mars_key(m).expect("key"),
            fieldstore_grib::mars_key(&t[i]).expect("key")
        );
    }

    // Every listed field, retrieved by its key, is one archived message.
    let originals: HashSet<Vec<u8>> = t.into_iter().chain(messages(&levtypes)).collect();
    let r = env.run(&["list", "--json"]).ok();
    assert_eq!(r.lines().len(), 8);
    for line in r.lines() {
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        let key: Vec<String> = v["key"]
            .as_object()
            .expect("key")
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().expect("string")))
            .collect();
        let got = env.run(&["retrieve", &key.join(",")]).ok().stdout;
        assert!(originals.contains(&got), "{line}");
    }
}

#[test]
fn archive_reads_grib_from_standard_input() {
    let env = Env::new();
    let mut c = env.command();
    c.args(["archive", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(&fixture("levtypes.grib")).expect("write");
    }
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "fieldstore: archived 2 fields (2952 bytes) from 1 file\n"
    );
    assert_eq!(listed(&env).len(), 2);
}

/// Bad inputs, written into the test directory: (file name, bytes, the
/// error after `archiving NAME: `).
fn bad_files(env: &Env) -> Vec<(&'static str, String)> {
    let levtypes = fixture("levtypes.grib");
    // Message 1 of levtypes.grib: offset 1560, 1476 bytes; cut 10 short.
    env.write("cut.grib", &levtypes[..1560 + 1476 - 10]);
    let mut damaged = levtypes.clone();
    damaged[1476 - 1] = b'X';
    env.write("damaged.grib", &damaged);
    env.write("notes.txt", "hello world\n");
    // ecCodes fails an assertion on it (and by default aborts the process).
    env.write(
        "assert.grib",
        std::fs::read(repo().join("tests/fixtures/grib-assert/msmm-bad-fcmonth.grib"))
            .expect("fixture"),
    );
    env.write("empty.grib", "");
    // rd-fc.grib without ECMWF's local section and from another centre:
    // ecCodes reads it, but it carries no MARS labelling (no class, stream,
    // type, expver).
    let rd = fixture("rd-fc.grib");
    let mut foreign = rd[..8 + 28].to_vec();
    foreign.extend_from_slice(&rd[8 + 52..]);
    foreign[8 + 2] = 28;
    foreign[8 + 4] = 7;
    let len = foreign.len() as u32;
    foreign[4..7].copy_from_slice(&len.to_be_bytes()[1..]);
    env.write("foreign.grib", &foreign);
    vec![
        (
            "cut.grib",
            "GRIB message 1 at byte offset 1560: truncated: the message is 1476 bytes long \
             but only 1466 bytes are left"
                .to_string(),
        ),
        (
            "damaged.grib",
            "GRIB message 0 at byte offset 0: no '7777' end marker at byte offset 1472 \
             (found '777X'): wrong length or damaged message"
                .to_string(),
        ),
        (
            "notes.txt",
            "GRIB message 0 at byte offset 0: no GRIB message: none of the input's 12 bytes \
             starts one (not a GRIB file?)"
                .to_string(),
        ),
        (
            "assert.grib",
            "GRIB message 0 at byte offset 0: ecCodes cannot decode the message: ecCodes \
             assertion failed: `gribForecastMonth == fcmonth' in "
                .to_string(),
        ),
        (
            "empty.grib",
            "GRIB message 0 at byte offset 0: no GRIB message: the input is empty".to_string(),
        ),
        (
            "foreign.grib",
            "GRIB message 0 at byte offset 0: MARS key levtype=sfc,date=20201102,time=0000,\
             step=12,param=166.128 does not fit the schema: missing keyword 'class' required \
             by rule [ class=ti/s2, expver, stream, date, time, model [ origin, type, levtype, \
             hdate? [ step, number?, levelist?, param ]]] (line 110); ecCodes gives this \
             message no MARS class (GRIB from another centre?): give the keys it lacks with \
             --defaults (class=od,expver=0001,stream=oper,type=fc) or archive-defaults in the config"
                .to_string(),
        ),
    ]
}

#[test]
fn a_bad_message_fails_the_run_and_archives_nothing() {
    let env = Env::new();
    env.write("kept.grib", fixture("template.grib"));
    env.run(&["archive", "kept.grib"]).ok();
    let before = listed(&env);
    assert_eq!(before.len(), 1);
    let rd = repo().join("tests/fixtures/grib/rd-fc.grib");
    for (name, problem) in bad_files(&env) {
        // A good file first: it is archived, then discarded with the run.
        let r = env.run(&["archive", path(&rd), name]);
        if name == "assert.grib" {
            // Where ecCodes was built is in the message: its start only.
            assert_eq!(r.code, 2, "{r:?}");
            let want = format!("fieldstore: error: archiving {name}: {problem}");
            assert!(r.stderr.starts_with(&want), "{r:?}");
        } else {
            r.fails(2, &format!("archiving {name}: {problem}"));
        }
        assert_eq!(
            listed(&env),
            before,
            "{name}: nothing of the run is visible"
        );
    }
    let r = env.run(&["retrieve", "class=ea,expver=0001,stream=enda,date=20200101,time=0000,domain=g,type=an,levtype=sfc,step=0,number=0,param=167"]).ok();
    assert!(
        r.stdout == messages(&fixture("template.grib"))[0],
        "kept intact"
    );
}

#[test]
fn a_message_matching_no_rule_names_the_rule() {
    let env = Env::new();
    env.write(
        "od.schema",
        "[ class=od, expver, stream, date, time, domain? [ type, levtype [ step, levelist?, param ]]]\n",
    );
    env.write(
        "c.yaml",
        "schema: od.schema\nspaces:\n- roots:\n  - path: root\n",
    );
    std::fs::create_dir_all(env.root()).expect("root");
    let mut both = fixture("levtypes.grib");
    let offset = both.len();
    both.extend(fixture("rd-fc.grib"));
    env.write("both.grib", &both);
    env.run(&["--config", "c.yaml", "archive", "both.grib"])
        .fails(
            2,
            &format!(
                "archiving both.grib: GRIB message 2 at byte offset {offset}: MARS key domain=g,\
             levtype=sfc,date=20201102,time=0000,step=12,param=166.128,class=rd,type=fc,\
             stream=oper,expver=xxxx does not fit the schema: value 'rd' of keyword 'class' is \
             not allowed by rule [ class=od, expver, stream, date, time, domain? [ type, \
             levtype [ step, levelist?, param ]]] (line 1)"
            ),
        );
    assert!(env
        .run(&["--config", "c.yaml", "list"])
        .ok()
        .stdout
        .is_empty());
    let r = env.run(&["--config", "c.yaml", "archive", "--skip-bad", "both.grib"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        env.run(&["--config", "c.yaml", "list"]).ok().lines().len(),
        2
    );
}

#[test]
fn skip_bad_archives_the_rest_and_says_what_was_skipped() {
    let env = Env::new();
    let bad = bad_files(&env);
    let rd = repo().join("tests/fixtures/grib/rd-fc.grib");
    let mut args = vec!["archive", "--skip-bad", path(&rd)];
    args.extend(bad.iter().map(|(name, _)| *name));
    let r: Run = env.run(&args);
    assert_eq!(r.code, 0, "{r:?}");
    let mut want: String = bad
        .iter()
        .map(|(name, problem)| format!("fieldstore: warning: skipped {name}: {problem}\n"))
        .collect();
    // rd-fc.grib, message 0 of cut.grib, message 1 of damaged.grib.
    want.push_str(
        "fieldstore: archived 3 fields (4428 bytes) from 7 files; skipped 6 bad messages\n",
    );
    // Where ecCodes was built (its assertion names its source file) aside.
    let stderr: String = r
        .stderr
        .lines()
        .map(|l| match l.find("fcmonth' in ") {
            Some(at) => format!("{}\n", &l[..at + "fcmonth' in ".len()]),
            None => format!("{l}\n"),
        })
        .collect();
    assert_eq!(stderr, want);
    let listed = listed(&env);
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(listed.iter().any(|l| l.contains("{class=rd,")));
    assert!(listed.iter().any(|l| l.contains("{type=fc,levtype=pl}")));
    assert!(listed.iter().any(|l| l.contains("{type=fc,levtype=sfc}")));

    // --quiet keeps the warnings, drops the summary.
    let r = env.run(&["archive", "--quiet", "--skip-bad", "empty.grib"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stderr,
        "fieldstore: warning: skipped empty.grib: GRIB message 0 at byte offset 0: no GRIB \
         message: the input is empty\n"
    );
}

/// An ecCodes tool (`grib_get`, `grib_copy`): the wheel's of
/// `scripts/setup.sh` (next to the library directory it names), else one on
/// the `PATH`.
fn eccodes_tool(name: &str) -> std::path::PathBuf {
    let dirs = std::fs::read_to_string(repo().join("target/eccodes/lib-dirs")).unwrap_or_default();
    let from_wheel = dirs
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|lib| std::path::Path::new(lib).join("../bin").join(name))
        .filter(|p| p.exists());
    from_wheel.unwrap_or_else(|| {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .expect("sh");
        assert!(
            found.status.success(),
            "ecCodes' {name} not found (scripts/setup.sh installs it with the eccodeslib wheel)"
        );
        String::from_utf8_lossy(&found.stdout).trim().into()
    })
}

#[test]
fn bytes_that_are_not_grib_are_skipped_as_eccodes_skips_them() {
    let env = Env::new();
    // As Météo-France's ecoclimap: a 12,000-byte record header first; then
    // junk between two files' messages, padding to a 4 KiB block after
    // `7777`, and a trailer.
    let header: Vec<u8> = (0..12_000u32)
        .map(|i| b"record header "[i as usize % 14])
        .collect();
    let mut bytes = header;
    bytes.extend(fixture("levtypes.grib"));
    bytes.extend_from_slice(b"junk between files");
    bytes.extend(fixture("timespan.grib"));
    let block = bytes.len().next_multiple_of(4096);
    bytes.resize(block, 0);
    bytes.extend(fixture("rd-fc.grib"));
    bytes.extend_from_slice(b"trailer\n");
    let file = env.write("ecoclimap-like.grib", &bytes);

    // What ecCodes itself reads from the file: each message's offset and
    // length, and the messages' bytes.
    let got = std::process::Command::new(eccodes_tool("grib_get"))
        .args(["-p", "offset,totalLength", path(&file)])
        .output()
        .expect("grib_get");
    assert!(got.status.success(), "{got:?}");
    let eccodes: Vec<(usize, usize)> = String::from_utf8_lossy(&got.stdout)
        .lines()
        .map(|l| {
            let v: Vec<usize> = l
                .split_whitespace()
                .map(|x| x.parse().expect("number"))
                .collect();
            (v[0], v[1])
        })
        .collect();
    let copy = env.path("copy.grib");
    let status = std::process::Command::new(eccodes_tool("grib_copy"))
        .args([path(&file), path(&copy)])
        .status()
        .expect("grib_copy");
    assert!(status.success());
    let eccodes_bytes = std::fs::read(&copy).expect("copy");
    assert_eq!(eccodes.len(), 9, "{eccodes:?}");

    // fieldstore's split: the same messages at the same places.
    let mut split = fieldstore_grib::split_messages(&bytes);
    let ours: Vec<(usize, usize)> = split
        .by_ref()
        .map(|m| {
            m.map(|m| (m.offset(), m.bytes().len()))
                .expect("no damaged message")
        })
        .collect();
    assert_eq!(ours, eccodes);
    let ranges: Vec<String> = split
        .skipped()
        .ranges()
        .iter()
        .map(|r| format!("{}..{}", r.start, r.end))
        .collect();
    let skipped: u64 = split.skipped().total();
    assert_eq!(ranges.len(), 4, "{ranges:?}");
    assert!(ranges[0] == "0..12000", "{ranges:?}");

    // Archived: every message ecCodes reads, byte for byte, with one
    // warning naming the ranges skipped.
    let r = env.run(&["archive", "ecoclimap-like.grib"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stderr,
        format!(
            "fieldstore: warning: ecoclimap-like.grib: skipped {skipped} bytes that are not GRIB \
             (as ecCodes does): bytes {}\n\
             fieldstore: archived 9 fields ({} bytes) from 1 file\n",
            ranges.join(", "),
            eccodes_bytes.len()
        )
    );
    let listed = listed(&env);
    assert_eq!(listed.len(), 9, "{listed:?}");
    let mut back = Vec::new();
    for key in &listed {
        let request = key.replace("}{", ",").replace(['{', '}'], "");
        let r = env.run(&["retrieve", &request]).ok();
        back.extend(r.stdout);
    }
    let mut want: Vec<Vec<u8>> = messages(&eccodes_bytes);
    let mut have: Vec<Vec<u8>> = messages(&back);
    want.sort();
    have.sort();
    assert!(have == want, "the messages ecCodes reads, byte for byte");

    // A message that starts with `GRIB` but is damaged is still an error.
    let mut damaged = bytes.clone();
    let at = ours[2].0;
    damaged[at + ours[2].1 - 1] = b'X';
    env.write("damaged.grib", &damaged);
    let r = env.run(&["archive", "damaged.grib"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.starts_with(&format!(
            "fieldstore: error: archiving damaged.grib: GRIB message 2 at byte offset {at}: no \
             '7777' end marker"
        )),
        "{r:?}"
    );
}

#[test]
fn skip_bad_resumes_after_a_damaged_message_inside_a_file() {
    let env = Env::new();
    let mut bytes = fixture("rd-fc.grib");
    let junk_at = bytes.len();
    // Junk (skipped), then a `GRIB` that starts no message (an error).
    bytes.extend_from_slice(b"some garbage, then GRIB but not a message");
    let damaged_at = junk_at + "some garbage, then ".len();
    bytes.extend(fixture("template.grib"));
    env.write("mixed.grib", &bytes);
    env.run(&["archive", "mixed.grib"]).fails(
        2,
        &format!(
            "archiving mixed.grib: GRIB message 1 at byte offset {damaged_at}: unsupported GRIB \
             edition 116 (only 1 and 2 are supported)"
        ),
    );
    let r = env.run(&["archive", "--skip-bad", "mixed.grib"]);
    assert_eq!(r.code, 0, "{r:?}");
    let archived =
        messages(&fixture("rd-fc.grib"))[0].len() + messages(&fixture("template.grib"))[0].len();
    assert_eq!(
        r.stderr,
        format!(
            "fieldstore: warning: mixed.grib: skipped 19 bytes that are not GRIB (as ecCodes \
             does): bytes {junk_at}..{damaged_at}\n\
             fieldstore: warning: skipped mixed.grib: GRIB message 1 at byte offset {damaged_at}: \
             unsupported GRIB edition 116 (only 1 and 2 are supported)\n\
             fieldstore: archived 2 fields ({archived} bytes) from 1 file; skipped 1 bad message\n"
        )
    );
    assert_eq!(listed(&env).len(), 2);
}

#[test]
fn skip_bad_and_key_do_not_mix() {
    let env = Env::new();
    let r = env.run(&["archive", "--skip-bad", "--key", "class=od", "f"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("the argument '--skip-bad' cannot be used with '--key <KEY>'"),
        "{r:?}"
    );
}

/// GRIB from another centre (NCEP, `tests/fixtures/grib-foreign`): ecCodes
/// gives no `class`, so ECMWF's schema refuses it, as FDB5 does; with
/// `--defaults` the keys it lacks are filled (the config's
/// `archive-defaults:` after them) and ecCodes' own keys are kept. Two
/// messages with one key in a file: both archived, the last wins, and a
/// warning names both.
#[test]
fn defaults_fill_what_ecmwfs_schema_needs_and_duplicates_are_reported() {
    let env = Env::new();
    let foreign = repo().join("tests/fixtures/grib-foreign/kwbc-t.grib");
    let r = env.run(&["archive", path(&foreign)]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("missing keyword 'class'"), "{r:?}");
    let r = env
        .run(&[
            "archive",
            "--defaults",
            "class=od,expver=0001,stream=oper,type=fc,step=99",
            path(&foreign),
        ])
        .ok();
    assert_eq!(
        r.stderr,
        "fieldstore: archived 2 fields (2342 bytes) from 1 file\n"
    );
    let listed = env.run(&["list", "class=od"]).ok().lines();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed[0].starts_with("{class=od,expver=0001,stream=oper,date=20240115,time=0000"),
        "{listed:?}"
    );
    let r = env.run(&[
        "archive",
        "--defaults",
        "class=od,expver=00 01",
        path(&foreign),
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .starts_with("fieldstore: error: --defaults class=od,expver=00 01: "),
        "{r:?}"
    );

    // The config's archive-defaults (FDB5's YAML shape), with a schema of
    // MARS keywords (docs/schemas/foreign.schema keys such data by its
    // GRIB identity instead: crates/fieldstore-py/tests/test_foreign.py).
    let schema = env.write(
        "mars.schema",
        "param: Param;\nstep: Step;\ndate: Date;\ntime: Time;\nexpver: Expver;\nlevelist: Double;\n\
         [ class, expver, stream, date, time, origin?\n\
         [ type, levtype, timespan?\n[ step, levelist?, param ]]]\n",
    );
    let config = env.config_with_schema(&schema);
    let mut text = std::fs::read_to_string(&config).expect("config");
    text.push_str("archive-defaults:\n  class: rd\n  expver: xxxx\n  stream: oper\n  type: fc\n  origin: kwbc\n");
    std::fs::write(&config, text).expect("config");
    env.run(&["--config", path(&config), "archive", path(&foreign)])
        .ok();
    let listed = env
        .run(&["--config", path(&config), "list", "class=rd"])
        .ok()
        .lines();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed[0]
            .starts_with("{class=rd,expver=xxxx,stream=oper,date=20240115,time=0000,origin=kwbc}"),
        "{listed:?}"
    );

    // One file whose messages 0 and 2 have one key.
    let bytes = std::fs::read(&foreign).expect("fixture");
    let first = messages(&bytes)[0].clone();
    let twice = env.write("twice.grib", [bytes.clone(), first].concat());
    let r = env
        .run(&["--config", path(&config), "archive", path(&twice)])
        .ok();
    assert_eq!(
        r.stderr,
        format!(
            "fieldstore: warning: {}: GRIB message 2 at byte offset {} has the key \
             {{class=rd,expver=xxxx,stream=oper,date=20240115,time=0000,origin=kwbc}}\
             {{type=fc,levtype=sfc,timespan=none}}{{step=0,param=130}} of GRIB message 0 at byte \
             offset 0: both are archived, the last wins\n\
             fieldstore: archived 3 fields (3513 bytes) from 1 file\n",
            path(&twice),
            bytes.len()
        )
    );
}

/// Two files of one command whose messages have one key: both archived,
/// the last wins, and a warning names both files, messages and offsets.
#[test]
fn one_key_in_two_files_of_one_command_is_reported() {
    let env = Env::new();
    let levtypes = repo().join("tests/fixtures/grib/levtypes.grib");
    let bytes = std::fs::read(&levtypes).expect("fixture");
    let second = fieldstore_grib::split_messages(&bytes)
        .nth(1)
        .expect("two messages")
        .expect("valid")
        .offset();
    let copy = env.write("again.grib", &bytes);
    let r = env.run(&["archive", path(&levtypes), "again.grib"]).ok();
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{r:?}");
    assert_eq!(
        lines[0],
        format!(
            "fieldstore: warning: again.grib: GRIB message 0 at byte offset 0 has the key \
             {{class=od,expver=0001,stream=oper,date=20251125,time=0000,domain=g}}{{type=fc,levtype=pl}}\
             {{step=0,levelist=1000,param=130}} of {}: GRIB message 0 at byte offset 0: both are \
             archived, the last wins",
            path(&levtypes)
        )
    );
    assert!(
        lines[1].contains(&format!(
            "GRIB message 1 at byte offset {second} has the key"
        )),
        "{r:?}"
    );
    assert_eq!(
        lines[2],
        "fieldstore: archived 4 fields (5904 bytes) from 2 files"
    );
    assert_eq!(listed(&env).len(), 2);
    drop(copy);
}
