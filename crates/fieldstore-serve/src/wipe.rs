//! Wipe: FDB5's remote wipe, the catalogue's states and `--doit` steps.

use fieldstore::{Error, ErrorKind, Result};
use fieldstore_remote::key::Key as WireKey;
use fieldstore_remote::location::Uri;
use fieldstore_remote::wipe::{
    kind, sign, CatalogueWipeState, StoreWipeState, WipeRequest, WipeState,
};
use fieldstore_remote::{Message, Writer};

use crate::conn::{lock, Conn, PendingWipe, Port};
use crate::wire;

impl Conn {
    /// The wipe secret: FDB5 refuses remote wipes without one, and so
    /// does this server.
    pub(crate) fn secret(&self) -> Result<String> {
        self.server.config.wipe_secret.clone().ok_or_else(|| {
            Error::new(
                ErrorKind::PermissionDenied,
                "remote wipe needs a shared secret on the server (FDB_WIPE_SECRET or \
                 fdbWipeSecret), as FDB5's fdb-server does",
            )
        })
    }

    /// The catalogue's answer to `Wipe`: what fieldstore's wipe (a dry
    /// run) would delete, one state per dataset, in FDB5's shape: the
    /// catalogue's files, and a store state signed with the secret for the
    /// data. With `--doit`, each dataset's wipe is remembered for the
    /// steps that follow.
    pub(crate) fn wipe(&self, w: &WipeRequest, secret: &str) -> Result<Vec<Vec<u8>>> {
        let request = if w.tool.all {
            fieldstore::Request::new()
        } else {
            wire::request(&w.tool.request)?
        };
        let options = fieldstore::WipeOptions {
            doit: false,
            unsafe_wipe_all: w.unsafe_wipe_all,
        };
        let report = self.server.reader.wipe(&request, options)?;
        let mut out = Vec::new();
        for d in &report.datasets {
            let db_key = wire::wire_key(d.dataset.key());
            let mut catalogue: Vec<(i32, Vec<Uri>)> = Vec::new();
            let mut data = Vec::new();
            let mut add = |k: i32, uri: Uri| match catalogue.iter_mut().find(|(c, _)| *c == k) {
                Some((_, v)) => v.push(uri),
                None => catalogue.push((k, vec![uri])),
            };
            for item in &d.items {
                match item.kind {
                    fieldstore::maintenance::ItemKind::Data => {
                        data.push(self.store_uri(&item.name))
                    }
                    fieldstore::maintenance::ItemKind::Index => {
                        add(kind::CATALOGUE_INDEX, item_uri(&item.name))
                    }
                    fieldstore::maintenance::ItemKind::Control => {
                        add(kind::CATALOGUE_CONTROL, item_uri(&item.name))
                    }
                    _ => add(kind::CATALOGUE, item_uri(&item.name)),
                }
            }
            // A partial wipe removes the collocations' entries, which are
            // no file of their own in fieldstore: each is named as an
            // index "URI" under the dataset, so that FDB5's client (which
            // does nothing when nothing is to delete) goes ahead.
            for c in d.collocations.iter().flatten() {
                add(
                    kind::CATALOGUE_INDEX,
                    item_uri(&format!("{}/{}", d.place, c.braced())),
                );
            }
            catalogue.sort_by_key(|(k, _)| *k);
            let mut safe = Vec::new();
            let mut data_safe = Vec::new();
            for k in &d.kept {
                match k.item.kind {
                    fieldstore::maintenance::ItemKind::Data => {
                        data_safe.push(self.store_uri(&k.item.name))
                    }
                    _ => safe.push(item_uri(&k.item.name)),
                }
            }
            // A partial wipe keeps the dataset: FDB5's client then takes
            // the step-by-step path instead of asking for a full wipe.
            if d.collocations.is_some() && safe.is_empty() {
                safe.push(item_uri(&d.place));
            }
            let mut stores = Vec::new();
            if !data.is_empty() || !data_safe.is_empty() {
                let state = WipeState {
                    delete: if data.is_empty() {
                        vec![]
                    } else {
                        vec![(kind::STORE, data)]
                    },
                    safe: data_safe,
                    unknown: Vec::new(),
                };
                let store_uri = self.store_uri(&d.place);
                stores.push((
                    store_uri.clone(),
                    StoreWipeState {
                        signature: sign(&state, secret),
                        state,
                        store_uri,
                    },
                ));
            }
            let state = CatalogueWipeState {
                state: WipeState {
                    delete: catalogue,
                    safe,
                    unknown: Vec::new(),
                },
                db_key: db_key.clone(),
                stores,
                info: format!(
                    "[Database: {}, fieldstore: {}]",
                    d.dataset.braced(),
                    d.place
                ),
            };
            if w.doit {
                let mut narrowed = fieldstore::Request::from_key(d.dataset.key());
                for (k, v) in request.iter() {
                    if d.dataset.key().get(k).is_none() {
                        narrowed.set(k, v.clone());
                    }
                }
                lock(&self.wipes).insert(
                    key_id(&db_key),
                    PendingWipe {
                        request: narrowed,
                        unsafe_wipe_all: w.unsafe_wipe_all,
                        done: false,
                    },
                );
            }
            let mut wr = Writer::new();
            state.encode(&mut wr);
            out.push(wr.into_bytes());
        }
        Ok(out)
    }

    /// A `--doit` step. On the store port there is nothing to do (the
    /// catalogue's steps delete the data), and a full wipe by the store
    /// alone is declined, so that FDB5's client goes on to the
    /// catalogue's `DoWipeURIs`. On the catalogue port, `DoWipeURIs` (or
    /// `DoUnsafeFullWipe`) runs fieldstore's wipe of the dataset,
    /// `DoWipeFinish` forgets it. `Some(b)`: the step answers a `bool`.
    pub(crate) fn wipe_step(&self, step: Message, key: &WireKey) -> Result<Option<bool>> {
        if self.port == Port::Store {
            return Ok((step == Message::DoUnsafeFullWipe).then_some(false));
        }
        let id = key_id(key);
        let mut wipes = lock(&self.wipes);
        let pending = wipes.get_mut(&id).ok_or_else(|| {
            Error::invalid_input(format!("{step} for a dataset with no wipe announced: {id}"))
        })?;
        match step {
            Message::DoWipeUris | Message::DoUnsafeFullWipe if !pending.done => {
                let options = fieldstore::WipeOptions {
                    doit: true,
                    unsafe_wipe_all: pending.unsafe_wipe_all,
                };
                self.server.reader.wipe(&pending.request, options)?;
                pending.done = true;
            }
            Message::DoWipeFinish => {
                wipes.remove(&id);
            }
            _ => {}
        }
        Ok((step == Message::DoUnsafeFullWipe).then_some(true))
    }

    /// An item of this server's store as the `fdb` URI FDB5's client
    /// reports and sends back.
    pub(crate) fn store_uri(&self, name: &str) -> Uri {
        let inner = item_uri(name);
        Uri {
            host: self.store.host.clone(),
            port: self.store.port,
            query: vec![("internalScheme".into(), inner.scheme.clone())],
            ..Uri::new("fdb", inner.name)
        }
    }
}

/// A path or URI fieldstore's wipe names, as an eckit URI.
fn item_uri(name: &str) -> Uri {
    match name.split_once("://") {
        Some((scheme, rest)) if !scheme.contains('/') => {
            let path = if rest.starts_with('/') {
                rest.to_string()
            } else {
                format!("/{rest}")
            };
            Uri::new(scheme, path)
        }
        _ => Uri::new("file", name),
    }
}

/// A key as a map key: its pairs in order.
fn key_id(key: &WireKey) -> String {
    key.present()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}
