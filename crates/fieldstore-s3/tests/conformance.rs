//! The conformance suite with the POSIX catalogue over the S3 store (as
//! FDB5's S3 branch pairs them) on a real S3 server (SeaweedFS, started by
//! `common`), one bucket and one root per check; damage written behind
//! the store's back (a flipped byte, a truncated or removed object); and
//! the errors of bad input, for the S3 store and the S3 catalogue alike: a
//! missing bucket, refused credentials, an endpoint that does not answer.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use fieldstore::{ErrorKind, FieldLocation, FieldStore, Request};
use fieldstore_testkit::support::{archive_payload, must, Spec, PL};
use fieldstore_testkit::{damaged_field_detected, Open};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

fn with_s3(check: &dyn Fn(Open<'_>)) {
    let Some(s) = common::server() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = s.config(&common::bucket("conf"), dir.path());
    let open = move || FieldStore::open(config.clone());
    check(&open);
}

fieldstore_testkit::conformance_tests!(with_s3);

/// The bucket and key of an `s3://` location, and a client to reach them
/// without the store.
fn raw(loc: &FieldLocation) -> (Bucket, Credentials, String) {
    let s = common::server().expect("a server");
    let rest = loc.uri.strip_prefix("s3://").expect("an S3 location");
    let (bucket, key) = rest.split_once('/').expect("bucket/key");
    let b = Bucket::new(
        url::Url::parse(&s.endpoint).expect("the endpoint"),
        UrlStyle::Path,
        bucket.to_string(),
        "us-east-1",
    )
    .expect("a bucket");
    (
        b,
        Credentials::new(common::ACCESS, common::SECRET),
        key.to_string(),
    )
}

/// Rewrite the object a location points into with `change` applied.
fn rewrite(loc: &FieldLocation, change: &dyn Fn(&mut Vec<u8>)) {
    let (b, c, key) = raw(loc);
    let url = b.get_object(Some(&c), &key).sign(Duration::from_secs(60));
    let mut bytes = Vec::new();
    ureq::get(url.as_str())
        .call()
        .expect("GET the object")
        .body_mut()
        .as_reader()
        .read_to_end(&mut bytes)
        .expect("its bytes");
    change(&mut bytes);
    let url = b.put_object(Some(&c), &key).sign(Duration::from_secs(60));
    ureq::put(url.as_str())
        .send(&bytes[..])
        .expect("PUT the damaged object");
}

fn remove(loc: &FieldLocation) {
    let (b, c, key) = raw(loc);
    let url = b
        .delete_object(Some(&c), &key)
        .sign(Duration::from_secs(60));
    ureq::delete(url.as_str())
        .call()
        .expect("DELETE the object");
}

#[test]
fn damaged_field_is_detected() {
    with_s3(&|open| {
        damaged_field_detected(open, &|loc: &FieldLocation| {
            rewrite(loc, &|b| {
                let at = (loc.offset + loc.length / 2) as usize;
                b[at] ^= 0x10;
            })
        })
    });
}

/// Three fields in one object; the object cut in the middle of the second
/// field: the first reads back, the second and third are `Corrupt` naming
/// the object (never short data); the object removed: `NotFound`.
#[test]
fn truncated_or_removed_object_is_an_error() {
    with_s3(&|open| {
        let fs = must(open(), "open");
        let fields: Vec<_> = (0..3)
            .map(|step| archive_payload(&fs, &Spec { step, ..PL }.key("trun"), 1, 5000, 5000))
            .collect();
        must(fs.flush(), "flush");
        let locs: Vec<FieldLocation> = fields
            .iter()
            .map(|f| must(fs.location(&f.key), "location").expect("a location"))
            .collect();
        assert!(
            locs.iter().all(|l| l.uri == locs[0].uri),
            "one flush, one object: {locs:?}"
        );
        let cut = (locs[1].offset + 100) as usize;
        rewrite(&locs[1], &|b| b.truncate(cut));
        let reader = must(open(), "reopen");
        let get = |i: usize| {
            reader
                .retrieve(&Request::from_key(&fields[i].key))
                .and_then(|r| r.read_all())
        };
        assert_eq!(must(get(0), "the field before the cut"), fields[0].data);
        for i in [1, 2] {
            let e = get(i).expect_err("a field cut short or gone read back");
            assert_eq!(e.kind(), ErrorKind::Corrupt, "field {i}: {e}");
            let object = locs[i].uri.rsplit('/').next().expect("a key");
            assert!(e.to_string().contains(object), "{e}");
        }
        remove(&locs[0]);
        let e = get(0).expect_err("a field of a removed object read back");
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    });
}

/// Fields larger than `write_buffer` are PUT before the flush, in objects
/// of their own; all read back, and the writer's memory stays bounded.
#[test]
fn writes_past_the_buffer_go_early() {
    let Some(s) = common::server() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut config = s.config(&common::bucket("early"), dir.path());
    let mut section = config.backend("s3").clone();
    section["write_buffer"] = serde_json::json!(100_000);
    config.backends.insert("s3".into(), section);
    let fs = must(FieldStore::open(config), "open");
    let fields: Vec<_> = (0..10)
        .map(|step| archive_payload(&fs, &Spec { step, ..PL }.key("buff"), 1, 30_000, 60_000))
        .collect();
    must(fs.flush(), "flush");
    let mut objects = std::collections::BTreeSet::new();
    for f in &fields {
        let loc = must(fs.location(&f.key), "location").expect("a location");
        objects.insert(loc.uri.to_string());
        let got = must(
            fs.retrieve(&Request::from_key(&f.key))
                .and_then(|r| r.read_all()),
            "retrieve",
        );
        assert!(got == f.data, "{} read back other bytes", f.key);
    }
    assert!(
        objects.len() >= 3,
        "10 fields of 30-60 kB with a 100 kB buffer in {} objects",
        objects.len()
    );
}

/// Open a config with this `s3:` section, which must fail, twice: the S3
/// store under the POSIX catalogue, and the S3 catalogue over the POSIX
/// store; the errors and how long each took.
fn open_errs(yaml_s3: &str) -> Vec<(fieldstore::Error, Duration)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    ["engine: toc\nstore: s3", "engine: s3\nstore: file"]
        .iter()
        .map(|pair| {
            let yaml = format!(
                "{pair}\n{yaml_s3}spaces:\n- roots:\n  - path: {}\n",
                dir.path().display()
            );
            let config =
                fieldstore::Config::from_yaml(&yaml, std::path::Path::new("/"), "bad config")
                    .expect("the config parses");
            let t = Instant::now();
            let e = FieldStore::open(config).expect_err("opening a bad S3 backend succeeded");
            (e, t.elapsed())
        })
        .collect()
}

/// As [`open_errs`], each checked by `check`.
fn open_err(yaml_s3: &str, check: &dyn Fn(&fieldstore::Error, Duration)) {
    for (e, took) in open_errs(yaml_s3) {
        check(&e, took);
    }
}

#[test]
fn missing_bucket_is_named_when_it_may_not_be_created() {
    let Some(s) = common::server() else { return };
    let bucket = common::bucket("absent");
    let yaml = format!(
        "s3:\n  endpoint: {}\n  bucket: {bucket}\n  create_bucket: false\n  credentials:\n    \
         access_key_id: {}\n    secret_access_key: {}\n",
        s.endpoint,
        common::ACCESS,
        common::SECRET
    );
    open_err(&yaml, &|e, _| {
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        let text = e.to_string();
        assert!(
            text.contains(&bucket) && text.contains(&s.endpoint),
            "{text}"
        );
    });
}

#[test]
fn wrong_credentials_are_refused_by_name() {
    let Some(s) = common::server() else { return };
    for (key, secret) in [(common::ACCESS, "not-the-secret"), ("nobody", "x")] {
        let yaml = format!(
            "s3:\n  endpoint: {}\n  bucket: {}\n  credentials:\n    access_key_id: {key}\n    \
             secret_access_key: {secret}\n",
            s.endpoint,
            common::bucket("creds")
        );
        open_err(&yaml, &|e, _| {
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            assert!(
                e.to_string().contains(&s.endpoint) && e.to_string().contains("credentials"),
                "{e}"
            );
        });
    }
    // Anonymous requests too (no credentials in the config or the
    // environment).
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        let yaml = format!(
            "s3:\n  endpoint: {}\n  bucket: {}\n",
            s.endpoint,
            common::bucket("anon")
        );
        open_err(&yaml, &|e, _| {
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}")
        });
    }
}

/// Nothing listening: `Unavailable` at once; a server that accepts but
/// never answers: `Unavailable` once the time-out passed, not later,
/// naming the endpoint both times.
#[test]
fn an_endpoint_that_does_not_answer_is_named_within_the_timeout() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        l.local_addr().expect("its address").port()
    };
    let yaml = format!("s3:\n  endpoint: http://127.0.0.1:{closed}\n  bucket: nothing-there\n");
    open_err(&yaml, &|e, took| {
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
        assert!(
            e.to_string().contains(&format!("127.0.0.1:{closed}")),
            "{e}"
        );
        assert!(took < Duration::from_secs(10), "{took:?}: {e}");
    });

    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = silent.local_addr().expect("its address").port();
    let yaml = format!(
        "s3:\n  endpoint: http://127.0.0.1:{port}\n  bucket: nothing-there\n  timeout: 1.5\n"
    );
    open_err(&yaml, &|e, took| {
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
        assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
        assert!(
            took >= Duration::from_millis(1400) && took < Duration::from_secs(10),
            "{took:?}: {e}"
        );
    });
    drop(silent);
}

/// Stores opened at once on a bucket that does not exist yet all open:
/// the creations that lose the race are not errors (SeaweedFS answers them
/// `BucketAlreadyExists`, AWS `BucketAlreadyOwnedByYou`).
#[test]
fn stores_opened_together_all_create_the_missing_bucket() {
    let Some(s) = common::server() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    for round in 0..5 {
        let config = s.config(&common::bucket(&format!("race{round}")), dir.path());
        let start = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            let opened: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        FieldStore::open(config.clone()).map(|_| ())
                    })
                })
                .collect();
            for (i, o) in opened.into_iter().enumerate() {
                if let Err(e) = o.join().expect("the opener") {
                    panic!("round {round}: opener {i} failed: {e}");
                }
            }
        });
    }
}
