//! Archive and flush: FDB5's two archive steps (store blob, catalogue
//! blob) and the flush that makes what a client archived visible.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fieldstore::{Error, ErrorKind, Result};
use fieldstore_remote::archive::{CatalogueBlob, StoreBlob};
use fieldstore_remote::key::Key as WireKey;
use fieldstore_remote::location::{FieldLocation as WireLocation, Uri, TOC_FIELD_LOCATION};
use fieldstore_remote::{Message, Reader, Writer};

use crate::config::Role as ServeRole;
use crate::conn::{bad, lock, Conn, End, Role};
use crate::frames::Frame;
use crate::pending::Parked;
use crate::shared::open;
use crate::wire;

/// How long a flush waits for the field locations it counts.
const FLUSH_WAIT: Duration = Duration::from_secs(600);

impl Conn {
    /// A `Blob` of `client`: the part `range` of `frame`'s payload.
    pub(crate) fn blob(
        &self,
        client: u32,
        request: u32,
        frame: &Arc<Frame>,
        range: Range<usize>,
    ) -> std::result::Result<(), End> {
        let payload = &frame.payload[range];
        let role = lock(&self.clients).get(&client).map(|c| c.role);
        match role {
            Some(Role::Store) => {
                let blob = StoreBlob::decode(&mut Reader::new(payload))
                    .map_err(|e| bad("store Blob", e))?;
                let stored = if self.server.config.role == ServeRole::Store {
                    self.store_blob(client, &blob)
                } else {
                    let at = crate::frames::offset_in(&frame.payload, blob.data);
                    let field = Parked::new(Arc::clone(frame), at..at + blob.data.len());
                    self.server
                        .pending
                        .park(self.id, &self.owner, field)
                        .map(|path| WireLocation {
                            class: TOC_FIELD_LOCATION.into(),
                            uri: Uri::new("file", path),
                            offset: 0,
                            length: i64::try_from(blob.data.len()).unwrap_or(i64::MAX),
                            remap_key: WireKey::default(),
                        })
                };
                self.answer_store(client, request, stored)
            }
            Some(Role::Catalogue) => {
                let mut r = Reader::new(payload);
                let blob = CatalogueBlob::decode(&mut r).map_err(|e| bad("catalogue Blob", e))?;
                let result = self.archive(client, &blob);
                let mut g = lock(&self.clients);
                if let Some(c) = g.get_mut(&client) {
                    c.archived += 1;
                    if let Err(e) = result {
                        c.failed.get_or_insert_with(|| e.to_string());
                    }
                }
                drop(g);
                self.archived.notify_all();
                Ok(())
            }
            None => Err(End::Bad(format!(
                "Blob for client {client}, which announced neither Archive nor Store"
            ))),
        }
    }

    /// A store-only server's store step: the bytes written to this
    /// server's store; their location, with their checksum.
    fn store_blob(&self, client: u32, blob: &StoreBlob<'_>) -> Result<WireLocation> {
        let dataset = fieldstore::DatasetKey(wire::key(&blob.db_key)?);
        let collocation = fieldstore::CollocationKey(wire::key(&blob.idx_key)?);
        let mut g = lock(&self.clients);
        let c = g
            .get_mut(&client)
            .ok_or_else(|| Error::internal("store blob for a client that stopped"))?;
        let w = match c.store_writers.entry(dataset.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(self.server.reader.store().writer(&dataset)?)
            }
        };
        let l = w.archive(&collocation, blob.data)?;
        Ok(wire::store_location(&l))
    }

    /// Answer a store step: the field's location (`Store`), or `Error`
    /// and the connection goes on. Only a failed write to the client ends
    /// it.
    fn answer_store(
        &self,
        client: u32,
        request: u32,
        stored: Result<WireLocation>,
    ) -> std::result::Result<(), End> {
        match stored {
            Ok(loc) => {
                let mut w = Writer::new();
                loc.encode(&mut w);
                self.send(true, Message::Store, client, request, w.bytes())
                    .map_err(|e| End::Bad(e.to_string()))
            }
            Err(e) => {
                self.error(true, client, request, &e);
                Ok(())
            }
        }
    }

    /// A catalogue-only server's catalogue step: the location (on another
    /// server's store) indexed under the joined key, visible at the flush.
    fn index(&self, client: u32, blob: &CatalogueBlob) -> Result<()> {
        let mut g = lock(&self.clients);
        let c = g
            .get_mut(&client)
            .ok_or_else(|| Error::internal("archive for a client that stopped"))?;
        let key = c.key_of(blob)?;
        let fs = &self.server.reader;
        let split = fs.schema().split(&key)?;
        let location = fieldstore_remote::client::convert::location(&blob.location);
        let w = match c.catalogue_writers.entry(split.dataset.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(fs.catalogue().writer(&split.dataset, fs.schema())?)
            }
        };
        w.insert(&split.collocation, &split.element, &location)?;
        c.flushed.add(fs.schema(), &key, self.server.watchers.any());
        Ok(())
    }

    /// The catalogue step: the parked bytes, archived under the joined key.
    fn archive(&self, client: u32, blob: &CatalogueBlob) -> Result<()> {
        if matches!(self.server.config.role, ServeRole::Catalogue(_)) {
            return self.index(client, blob);
        }
        let field = self
            .server
            .pending
            .take(&self.owner, &blob.location.uri.name)?;
        let mut g = lock(&self.clients);
        let c = g
            .get_mut(&client)
            .ok_or_else(|| Error::internal("archive for a client that stopped"))?;
        let key = c.key_of(blob)?;
        if c.writer.is_none() {
            c.writer = Some(open(&self.server.config)?);
        }
        match &c.writer {
            Some(w) => w.archive(&key, field.bytes())?,
            None => return Err(Error::internal("no writer")),
        }
        c.flushed.add(
            self.server.reader.schema(),
            &key,
            self.server.watchers.any(),
        );
        Ok(())
    }

    /// A catalogue flush waits for the `n` field locations the client
    /// says it sent (they come on the data connection, maybe after the
    /// flush), then publishes them; a store flush has nothing to do (the
    /// catalogue flush makes the data durable first).
    pub(crate) fn flush(&self, client: u32, request: u32, n: u32) -> Result<()> {
        let until = Instant::now() + FLUSH_WAIT;
        let mut g = lock(&self.clients);
        let Some(role) = g.get(&client).map(|c| c.role) else {
            drop(g);
            return self.send(true, Message::Received, client, request, &[]);
        };
        let mut flushed = crate::watch::Flushed::default();
        if role == Role::Catalogue {
            loop {
                let c = g
                    .get(&client)
                    .ok_or_else(|| Error::internal("client stopped during flush"))?;
                if c.archived >= n || c.failed.is_some() {
                    break;
                }
                if self.closing.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Unavailable, "connection closing"));
                }
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(Error::new(
                        ErrorKind::TimedOut,
                        format!("flush: {} of {n} field locations arrived", c.archived),
                    ));
                }
                g = match self.archived.wait_timeout(g, left) {
                    Ok((g, _)) => g,
                    Err(p) => p.into_inner().0,
                };
            }
            let c = g
                .get_mut(&client)
                .ok_or_else(|| Error::internal("client stopped during flush"))?;
            c.archived = 0;
            if let Some(why) = c.failed.take() {
                c.discard();
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("archive failed, nothing flushed: {why}"),
                ));
            }
            if let Some(w) = &c.writer {
                w.flush()?;
            }
            for w in c.catalogue_writers.values_mut() {
                w.flush()?;
            }
            flushed = std::mem::take(&mut c.flushed);
        } else if let Some(c) = g.get_mut(&client) {
            // A store-only server's flush: the data durable (the client
            // flushes the catalogue after, which makes it visible).
            for w in c.store_writers.values_mut() {
                w.flush()?;
                w.indexed();
            }
        }
        drop(g);
        // What became visible raises the flags of the watches it
        // concerns; their own threads tell them (never this one: a
        // watcher that does not read must not hold up a writer).
        if !flushed.is_empty() {
            self.server
                .watchers
                .notify(self.server.reader.schema(), &flushed);
        }
        self.send(true, Message::Received, client, request, &[])
    }
}
