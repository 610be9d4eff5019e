//! Clause 8 (second half) and 9: damaged data is detected, never returned.

use fieldstore::{ErrorKind, FieldLocation};

use super::{opened, PL};
use crate::support::{archive_payload, must, retrieve_one, Spec, Stored};
use crate::Open;

/// Clauses 8–9: three fields are flushed, then `corrupt` damages the
/// stored bytes of the middle one behind the backend's back. Retrieving it
/// is a `Corrupt` error whose message names where the damage is (the
/// location's file or object), never data; the other two fields still read
/// back exactly, and list still shows all three.
pub fn damaged_field_detected(open: Open<'_>, corrupt: &(dyn Fn(&FieldLocation) + Sync)) {
    let x = "dmg1";
    let w = opened(open, "writer");
    let fields: Vec<Stored> = [0, 6, 12]
        .iter()
        .map(|&step| archive_payload(&w, &Spec { step, ..PL }.key(x), 1, 1000, 4000))
        .collect();
    must(w.flush(), "flush");
    drop(w);
    let victim = &fields[1];
    let loc = must(opened(open, "probe").location(&victim.key), "location")
        .unwrap_or_else(|| panic!("location of the flushed {} is None", victim.key));
    corrupt(&loc);

    let reader = opened(open, "reader");
    let place = loc
        .path()
        .rsplit('/')
        .next()
        .unwrap_or(loc.path())
        .to_string();
    let result = reader
        .retrieve(&fieldstore::Request::from_key(&victim.key))
        .and_then(|r| r.read_all());
    match result {
        Ok(bytes) if bytes == victim.data => {
            panic!("the damaged field {} ({loc}) read back unchanged: the damage hook did not damage it", victim.key)
        }
        Ok(bytes) => panic!(
            "retrieve of the damaged field {} ({loc}) returned {} bytes of damaged data instead of a Corrupt error",
            victim.key,
            bytes.len()
        ),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Corrupt, "retrieve of the damaged field {}: {e}", victim.key);
            assert!(
                e.to_string().contains(&place),
                "the Corrupt error for {} does not say where the damage is ({place}): {e}",
                victim.key
            );
        }
    }
    let mut buf = Vec::new();
    match reader.store().read(&loc, &mut buf) {
        Err(e) => assert_eq!(
            e.kind(),
            ErrorKind::Corrupt,
            "Store::read of the damaged {loc}: {e}"
        ),
        Ok(()) => panic!(
            "Store::read of the damaged {loc} returned {} bytes instead of a Corrupt error",
            buf.len()
        ),
    }
    for s in [&fields[0], &fields[2]] {
        let got = retrieve_one(&reader, &s.key)
            .unwrap_or_else(|| panic!("{} disappeared after its neighbour was damaged", s.key));
        assert!(
            got == s.data,
            "{} changed after its neighbour was damaged",
            s.key
        );
    }
    let listed = must(
        reader.list(
            &crate::support::request(&format!("class=od,expver={x}")),
            fieldstore::ListOptions::default(),
        ),
        "list after the damage",
    );
    assert_eq!(
        listed.len(),
        3,
        "list after one field's bytes were damaged: {listed:?}"
    );
}
