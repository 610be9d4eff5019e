//! The conformance suite through FDB5's remote protocol: fieldstore's own
//! client (`type: remote`) against a `fieldstore serve` of a POSIX root,
//! in this process, one server per check. Every check of the suite either
//! runs here or is named in [`NOT_THROUGH_A_CLIENT`] with the reason.

use std::path::Path;

use fieldstore::{Config, FieldStore};
use fieldstore_serve::{ServeConfig, Server};
use fieldstore_testkit::Open;

fn with_remote(check: &dyn Fn(Open<'_>)) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("the root");
    let schema =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/schema/hammer.schema");
    let yaml = format!(
        "serverPort: 0\nengine: toc\nstore: file\nschema: {}\nspaces: [{{roots: [{{path: {}}}]}}]\n",
        schema.display(),
        root.display()
    );
    let config = ServeConfig::from_yaml(&yaml, dir.path(), "server config", [127, 0, 0, 1].into())
        .expect("the server config");
    let server = Server::new(config).expect("the server");
    let listeners = server.bind().expect("the server's ports");
    let port = listeners
        .catalogue
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .expect("the catalogue's port")
        .port();
    std::thread::spawn(move || server.run(listeners));
    let client = Config::from_yaml(
        &format!("type: remote\nhost: 127.0.0.1\nport: {port}\ntimeout: 30\n"),
        dir.path(),
        "client config",
    )
    .expect("the client config");
    check(&move || FieldStore::open(client.clone()));
}

/// One `#[test]` per check that holds through a client.
macro_rules! through_a_client {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                with_remote(&|open| fieldstore_testkit::$name(open));
            }
        )*
        const THROUGH_A_CLIENT: &[&str] = &[$(stringify!($name)),*];
    };
}

through_a_client!(
    flush_makes_visible,
    archive_copies_data,
    flush_publishes_only_own_writes,
    retrieve_missing_is_empty,
    retrieve_in_request_order,
    location_lookup,
    read_range_reads_part_of_a_field,
    keys_are_canonicalised,
    bad_input_rejected,
    replace_is_atomic,
    replace_under_concurrent_reads,
    list_partial_requests,
    axes_partial_requests,
    shared_handle_across_threads,
    concurrent_writers,
    readers_during_writes,
    abandoned_writer_keeps_flushed,
    watch_follows_each_dataset,
    retrieve_waits_for_complete_requests,
);

/// The checks that do not run through a client, and why: what
/// docs/serve.md says a client does not do ("Not through a client"), and
/// the gap left open (the last).
const NOT_THROUGH_A_CLIENT: &[(&str, &str)] = &[
    (
        "annotation_applies_to_its_field_only",
        "annotations are not kept through a client",
    ),
    (
        "entry_extension_carried",
        "a remote catalogue indexes only fields archived through its store",
    ),
    (
        "wipe_dataset",
        "maintenance is the server's business: Unsupported",
    ),
    (
        "wipe_collocations",
        "maintenance is the server's business: Unsupported",
    ),
    (
        "purge_replaced",
        "maintenance is the server's business: Unsupported",
    ),
    (
        "stats_counts",
        "maintenance is the server's business: Unsupported",
    ),
    (
        "locks_honoured",
        "maintenance is the server's business: Unsupported",
    ),
    (
        "wipe_refuses_fields",
        "refused, but the message names the line of the schema as the client rewrites the \
         server's, not of the server's file",
    ),
    (
        "watch_reports_each_field_once",
        "it ends with a wipe, which a client does not do (everything before it holds through \
         a client)",
    ),
];

#[test]
fn every_check_runs_or_is_said_not_to() {
    for (name, _) in fieldstore_testkit::CHECKS {
        let skipped = NOT_THROUGH_A_CLIENT.iter().any(|(n, _)| n == name);
        assert!(
            THROUGH_A_CLIENT.contains(name) != skipped,
            "{name}: run it through a client, or say in NOT_THROUGH_A_CLIENT why not (not both)"
        );
    }
}

/// What docs/serve.md says a client does not do fails `Unsupported` at
/// once, with a dataset there to act on, and leaves it as it was.
#[test]
fn maintenance_through_a_client_is_unsupported() {
    use fieldstore_testkit::support::{archive_payload, must, request, retrieve_one, PL};
    with_remote(&|open| {
        let fs = must(open(), "opening a client");
        let field = archive_payload(&fs, &PL.key("mnt1"), 1, 50, 3000);
        must(fs.flush(), "flush");
        let dataset = request("class=od,expver=mnt1,stream=enfo,date=20231201,time=1200");
        let doit = fieldstore::WipeOptions {
            doit: true,
            unsafe_wipe_all: false,
        };
        let outcomes = [
            ("wipe", fs.wipe(&dataset, doit).err()),
            ("purge", fs.purge(&dataset, true).err()),
            ("stats", fs.stats(&dataset).err()),
            ("status", fs.status(&dataset).err()),
        ];
        for (what, e) in outcomes {
            let e = e.unwrap_or_else(|| panic!("{what} through a client succeeded"));
            assert_eq!(e.kind(), fieldstore::ErrorKind::Unsupported, "{what}: {e}");
        }
        let again = must(open(), "a second client");
        assert_eq!(
            retrieve_one(&again, &field.key).as_deref(),
            Some(field.data.as_slice()),
            "the field after the refused maintenance"
        );
    });
}
