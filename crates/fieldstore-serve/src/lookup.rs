//! List, axes, inspect and exists: the catalogue's answers to requests.

use fieldstore::{Level, ListOptions, Result};
use fieldstore_remote::elements::{AxesElement, ListElement, ListEncoder};
use fieldstore_remote::key::Key as WireKey;
use fieldstore_remote::location::{
    FieldLocation as WireLocation, REMOTE_FIELD_LOCATION, TOC_FIELD_LOCATION,
};
use fieldstore_remote::request::ToolRequest;
use fieldstore_remote::Writer;

use crate::conn::{Batch, Conn};
use crate::wire;

impl Conn {
    /// Run `produce` and stream its payloads as blobs, then `Complete`; a
    /// failure is sent as `Error` on the data channel instead.
    pub(crate) fn stream_reply(
        &self,
        client: u32,
        request: u32,
        produce: impl FnOnce() -> Result<Vec<Vec<u8>>>,
    ) {
        let sent = produce().and_then(|blobs| {
            let mut batch = Batch::new(self, client, request);
            for b in blobs {
                batch.blob(&b)?;
            }
            batch.complete()
        });
        if let Err(e) = sent {
            self.error(false, client, request, &e);
        }
    }

    /// List, each element sent as it is visited: memory stays that of one
    /// element however large the listing. A client that stops reading
    /// stops the visit. Masked entries are sent too, each after its key's
    /// newer ones, as FDB5's servers send them: the client drops them
    /// unless asked for duplicates (`fdb-list --full`, pyfdb's
    /// `duplicates=True`).
    pub(crate) fn list(
        &self,
        client: u32,
        request_id: u32,
        tool: &ToolRequest,
        depth: i32,
    ) -> Result<()> {
        let request = wire::lookup_request(&tool.request, self.server.reader.schema())?;
        let depth = wire::level("list depth", depth)?;
        let mut sent = Ok(());
        let mut batch = Batch::new(self, client, request_id);
        // Consecutive elements share their dataset, collocation and data
        // file: those are built and encoded once (`ListEncoder`).
        let mut encoder = ListEncoder::default();
        let mut w = Writer::new();
        self.server.reader.visit(
            &request,
            ListOptions {
                depth,
                duplicates: true,
            },
            &mut |e| {
                let location = e
                    .location
                    .as_ref()
                    .filter(|_| !e.element.key().is_empty())
                    .map(|l| {
                        let range = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
                        let head = move || {
                            let wl = self.location(TOC_FIELD_LOCATION, l);
                            (wl.class, wl.uri.with_checksum(None))
                        };
                        (&*l.uri, head, l.checksum, range(l.offset), range(l.length))
                    });
                w.clear();
                encoder.encode(
                    &mut w,
                    (e.dataset.key().as_str(), || wire::wire_key(e.dataset.key())),
                    (e.collocation.key().as_str(), || {
                        wire::wire_key(e.collocation.key())
                    }),
                    &wire::datum_key(e.element.key()),
                    location,
                    0,
                );
                sent = batch.blob(w.bytes());
                sent.is_ok()
            },
        )?;
        sent?;
        batch.complete()
    }

    pub(crate) fn location(&self, class: &str, l: &fieldstore::FieldLocation) -> WireLocation {
        // A catalogue-only server's locations name their store servers.
        if !l.uri.starts_with("fdb://") {
            let port = u16::try_from(self.store.port).unwrap_or(0);
            return wire::remote_location(class, l, &self.store.host, port);
        }
        if let Ok((host, port, inner)) = fieldstore_remote::client::convert::store_of(l) {
            let wrapped = fieldstore_remote::client::convert::wrapped(&inner, &host, port);
            return WireLocation {
                class: class.to_string(),
                ..wrapped
            };
        }
        let port = u16::try_from(self.store.port).unwrap_or(0);
        wire::remote_location(class, l, &self.store.host, port)
    }

    pub(crate) fn axes(&self, tool: &ToolRequest, level: i32) -> Result<Vec<Vec<u8>>> {
        let request = wire::lookup_request(&tool.request, self.server.reader.schema())?;
        let level = wire::level("axes level", level)?;
        let axes = self.server.reader.axes(&request, level)?;
        // Empty values (absent optional keywords) are sent as FDB5 sends
        // them: its tools show them beside other values and drop keywords
        // that have no other.
        let axes: Vec<(String, Vec<String>)> = axes
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect::<Vec<_>>()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        // FDB5's reader refuses an empty axes element.
        if axes.is_empty() {
            return Ok(Vec::new());
        }
        // One element for everything: FDB5's client merges the elements
        // of all datasets anyway.
        let element = AxesElement {
            db_key: WireKey::default(),
            axes,
        };
        let mut w = Writer::new();
        element.encode(&mut w);
        Ok(vec![w.into_bytes()])
    }

    pub(crate) fn inspect(&self, tool: &ToolRequest) -> Result<Vec<Vec<u8>>> {
        let request = wire::lookup_request(&tool.request, self.server.reader.schema())?;
        let fs = &self.server.reader;
        // Explicit values (what FDB5's clients send): the point lookups
        // alone, keys already split. `all`: what retrieve lists.
        let found = if request.has_all() {
            let schema = fs.schema();
            let reader = fs.retrieve(&request)?;
            let mut found = Vec::new();
            for (key, location) in reader.fields() {
                let split = schema.split(key)?;
                found.push(fieldstore::ListElement {
                    dataset: split.dataset,
                    collocation: split.collocation,
                    element: split.element,
                    location: Some(location.clone()),
                });
            }
            found
        } else {
            fs.locate(&request)?
        };
        let mut out = Vec::new();
        for e in &found {
            let Some(location) = &e.location else {
                continue;
            };
            let element = ListElement {
                keys: [
                    wire::wire_key(e.dataset.key()),
                    wire::wire_key(e.collocation.key()),
                    wire::wire_key(e.element.key()),
                ],
                location: Some(self.location(REMOTE_FIELD_LOCATION, location)),
                timestamp: 0,
            };
            let mut w = Writer::new();
            element.encode(&mut w);
            out.push(w.into_bytes());
        }
        Ok(out)
    }

    pub(crate) fn exists(&self, db_key: &WireKey) -> Result<bool> {
        let key = wire::join_keys([db_key])?;
        let request = fieldstore::Request::from_key(&key);
        let found = self.server.reader.list(
            &request,
            ListOptions {
                depth: Level::Dataset,
                duplicates: false,
            },
        )?;
        Ok(!found.is_empty())
    }
}
