//! One dataset's archive pipeline: its store client and its catalogue
//! client, shared by the handle's store writer and catalogue writer of
//! that dataset.
//!
//! FDB5's protocol archives in two steps: the store server takes the
//! bytes and answers with their location; the catalogue server is then
//! sent the key and that location. A round trip per field would bound a
//! client to one field per network latency, so nothing here waits for the
//! store's answer: [`Link::archive`] sends the field and returns a
//! placeholder location naming its request; [`Link::insert`] queues the
//! keys and forwards, in archive order, every field whose location has
//! come back. A flush waits for the rest: the store's `Flush` (its data
//! durable), then the catalogue's remaining keys and its `Flush`, which
//! makes the fields visible. So data is durable before it is visible, as
//! everywhere in fieldstore.

use std::collections::{HashMap, VecDeque};

use fieldstore_core::{CollocationKey, ElementKey, Error, ErrorKind, FieldLocation, Result};

use super::connection::{server_error, Mailbox};
use super::convert::{wire_key, wrapped};
use crate::archive::{encode_flush, CatalogueBlob};
use crate::key::Key as WireKey;
use crate::location::FieldLocation as WireLocation;
use crate::{Message, Reader, Writer};

/// The scheme of a placeholder location: the store's request id.
const PENDING: &str = "fdb-pending:";

/// A dataset's two logical clients and the fields between the steps.
pub(crate) struct Link {
    db: WireKey,
    store: Mailbox,
    store_started: bool,
    /// The store server's endpoint, as locations name it.
    store_host: String,
    store_port: u16,
    catalogue: Mailbox,
    catalogue_started: bool,
    /// Store requests not answered yet.
    in_flight: usize,
    /// The store's answers not yet forwarded to the catalogue.
    resolved: HashMap<u32, WireLocation>,
    /// Keys inserted, in order, with the store request of their bytes.
    queue: VecDeque<(WireKey, WireKey, u32)>,
    store_sent: usize,
    catalogue_sent: usize,
    /// The first store failure since the last flush.
    failed: Option<Error>,
}

impl Link {
    pub(crate) fn new(
        db: WireKey,
        store: Mailbox,
        store_host: String,
        store_port: u16,
        catalogue: Mailbox,
    ) -> Link {
        Link {
            db,
            store,
            store_started: false,
            store_host,
            store_port,
            catalogue,
            catalogue_started: false,
            in_flight: 0,
            resolved: HashMap::new(),
            queue: VecDeque::new(),
            store_sent: 0,
            catalogue_sent: 0,
            failed: None,
        }
    }

    /// Send one field to the store; a placeholder location naming the
    /// request (resolved by [`Link::insert`]).
    pub(crate) fn archive(
        &mut self,
        collocation: &CollocationKey,
        data: &[u8],
    ) -> Result<FieldLocation> {
        if let Some(e) = &self.failed {
            return Err(Error::new(
                e.kind(),
                format!("an earlier field of this flush failed: {e}"),
            ));
        }
        if !self.store_started {
            self.store.call(Message::Store, &[])?;
            self.store_started = true;
        }
        let request = self.store.connection().request_id();
        // The blob is the two keys, then the field's bytes untagged
        // (`StoreBlob`): the keys encoded, the bytes sent as they are.
        let mut w = Writer::new();
        self.db.encode(&mut w);
        wire_key(collocation.key()).encode(&mut w);
        self.store.connection().send_parts(
            false,
            Message::Blob,
            self.store.id(),
            request,
            &[w.bytes(), data],
        )?;
        self.store_sent += 1;
        self.in_flight += 1;
        self.take_answers(false)?;
        Ok(FieldLocation::new(
            format!("{PENDING}{request}"),
            0,
            data.len() as u64,
        ))
    }

    /// Queue a field's keys for the catalogue and forward what can be.
    pub(crate) fn insert(
        &mut self,
        collocation: &CollocationKey,
        element: &ElementKey,
        location: &FieldLocation,
    ) -> Result<()> {
        let request = location
            .uri
            .strip_prefix(PENDING)
            .and_then(|r| r.parse::<u32>().ok())
            .filter(|_| !location.annotates && location.extension.is_none())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "a remote catalogue indexes only fields just archived through its store \
                         (not {location}, nor annotations or extensions)"
                    ),
                )
            })?;
        self.queue.push_back((
            wire_key(collocation.key()),
            wire_key(element.key()),
            request,
        ));
        self.take_answers(false)?;
        self.forward()
    }

    /// Read the store's answers: all of them if `wait`, else those here.
    fn take_answers(&mut self, wait: bool) -> Result<()> {
        while self.in_flight > 0 {
            let frame = if wait {
                self.store.recv()?
            } else {
                match self.store.try_recv() {
                    Some(f) => f,
                    None => return Ok(()),
                }
            };
            let (h, payload) = frame;
            match h.message {
                Message::Store => {
                    let loc = WireLocation::decode(&mut Reader::new(&payload)).map_err(|e| {
                        Error::corrupt(format!(
                            "server {}: undecodable field location: {e}",
                            self.store.connection().endpoint()
                        ))
                    })?;
                    self.resolved.insert(h.request_id, loc);
                    self.in_flight -= 1;
                }
                Message::Error => {
                    self.in_flight -= 1;
                    let e = server_error(self.store.connection().endpoint(), &payload);
                    self.failed.get_or_insert(e);
                }
                // Answers to calls that gave up waiting; nothing to do.
                _ => {}
            }
        }
        Ok(())
    }

    /// Send the catalogue every queued field whose location is known, in
    /// order.
    fn forward(&mut self) -> Result<()> {
        while let Some((_, _, request)) = self.queue.front() {
            let Some(store_location) = self.resolved.remove(request) else {
                return Ok(());
            };
            if !self.catalogue_started {
                let mut w = Writer::new();
                self.db.encode(&mut w);
                self.catalogue.call(Message::Schema, w.bytes())?;
                self.catalogue.call(Message::Archive, &[])?;
                self.catalogue_started = true;
            }
            let Some((idx, datum, _)) = self.queue.pop_front() else {
                return Ok(());
            };
            let blob = CatalogueBlob {
                idx_key: idx,
                datum_key: datum,
                location: wrapped(&store_location, &self.store_host, self.store_port),
            };
            let mut w = Writer::new();
            blob.encode(&mut w);
            let request = self.catalogue.connection().request_id();
            self.catalogue.connection().send(
                false,
                Message::Blob,
                self.catalogue.id(),
                request,
                w.bytes(),
            )?;
            self.catalogue_sent += 1;
        }
        Ok(())
    }

    /// The store's part of a flush: every answer, then its `Flush` (the
    /// data durable).
    ///
    /// # Errors
    /// The first failure of a field since the last flush (nothing of the
    /// flush is made visible); the server's or the connection's errors.
    pub(crate) fn flush_store(&mut self) -> Result<()> {
        self.take_answers(true)?;
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.store_sent > 0 {
            let mut w = Writer::new();
            encode_flush(&mut w, u32::try_from(self.store_sent).unwrap_or(u32::MAX));
            self.store.call(Message::Flush, w.bytes())?;
            self.store_sent = 0;
        }
        Ok(())
    }

    /// The catalogue's part: the remaining keys, then its `Flush`, after
    /// which the fields are visible.
    pub(crate) fn flush_catalogue(&mut self) -> Result<()> {
        self.take_answers(true)?;
        self.forward()?;
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if !self.queue.is_empty() {
            return Err(Error::internal(format!(
                "{} fields inserted that the store was never sent",
                self.queue.len()
            )));
        }
        if self.catalogue_sent > 0 {
            let mut w = Writer::new();
            encode_flush(
                &mut w,
                u32::try_from(self.catalogue_sent).unwrap_or(u32::MAX),
            );
            self.catalogue.call(Message::Flush, w.bytes())?;
            self.catalogue_sent = 0;
        }
        Ok(())
    }
}
