//! One look's fields, grouped into Aviso notifications: one per distinct
//! identifier, naming the fields it covers and where to retrieve them.

use std::collections::{BTreeMap, BTreeSet};

use fieldstore::{Schema, WatchEvent};
use serde::Serialize;

use crate::identifier::IdentifierMap;

/// The body of `POST /api/v1/notification`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notification {
    /// The Aviso event type (`mars`).
    pub event_type: String,
    /// The identifier: Aviso key → value.
    pub identifier: BTreeMap<String, String>,
    /// What was flushed.
    pub payload: Payload,
}

/// What a notification tells of its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Payload {
    /// How many fields the flushes made visible under this identifier.
    pub count: usize,
    /// Of those, how many replace a field of the same key.
    pub replaced: usize,
    /// The fields' other keywords (not in the identifier), each with the
    /// values the fields have, sorted.
    pub keys: BTreeMap<String, Vec<String>>,
    /// A fieldstore (MARS) request that names every one of them: the
    /// identifier's keywords and the values of `keys`.
    pub request: String,
    /// Which store holds them (as the publisher was told: a config file,
    /// a root, a server's address).
    pub store: String,
}

/// A notification not yet acknowledged by the server, and the fields it
/// announces (full key, location), which the state file records once it
/// is.
#[derive(Debug, Clone)]
pub struct Pending {
    /// What is posted.
    pub notification: Notification,
    /// `(full key, location)` of each field it covers.
    pub fields: Vec<(String, String)>,
    /// Its number in the state file, once its intent was recorded.
    pub seq: Option<u64>,
    /// It may reach listeners twice: it names a field the state file
    /// recorded as posted but not acknowledged before a restart, or an
    /// attempt to post it got no reply.
    pub maybe_duplicate: bool,
}

/// Group the fields of one look into one notification per distinct
/// identifier, in the order their first field came.
pub fn group(
    events: &[WatchEvent],
    map: &IdentifierMap,
    schema: &Schema,
    store: &str,
) -> Vec<Pending> {
    struct Group {
        fields: Vec<(String, String)>,
        replaced: usize,
        keys: BTreeMap<String, BTreeSet<String>>,
        request_ids: BTreeMap<String, String>,
    }
    let mut order: Vec<BTreeMap<String, String>> = Vec::new();
    let mut groups: BTreeMap<BTreeMap<String, String>, Group> = BTreeMap::new();
    for e in events {
        let key = e.element.full_key();
        let identifier = map.identifier(schema, &key);
        let g = groups.entry(identifier.clone()).or_insert_with(|| {
            order.push(identifier.clone());
            Group {
                fields: Vec::new(),
                replaced: 0,
                keys: BTreeMap::new(),
                request_ids: BTreeMap::new(),
            }
        });
        let location = e
            .element
            .location
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        g.fields.push((key.to_string(), location));
        g.replaced += usize::from(e.replaced);
        for (kw, v) in key.iter() {
            if v.is_empty() {
                continue;
            }
            if map.fills(kw) {
                g.request_ids.insert(kw.to_string(), v.to_string());
            } else {
                g.keys
                    .entry(kw.to_string())
                    .or_default()
                    .insert(v.to_string());
            }
        }
    }
    order
        .into_iter()
        .filter_map(|identifier| {
            let g = groups.remove(&identifier)?;
            let mut request: Vec<String> = g
                .request_ids
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let keys: BTreeMap<String, Vec<String>> = g
                .keys
                .into_iter()
                .map(|(k, vs)| (k, vs.into_iter().collect()))
                .collect();
            request.extend(keys.iter().map(|(k, vs)| format!("{k}={}", vs.join("/"))));
            Some(Pending {
                notification: Notification {
                    event_type: map.event().to_string(),
                    identifier,
                    payload: Payload {
                        count: g.fields.len(),
                        replaced: g.replaced,
                        keys,
                        request: request.join(","),
                        store: store.to_string(),
                    },
                },
                fields: g.fields,
                seq: None,
                maybe_duplicate: false,
            })
        })
        .collect()
}
