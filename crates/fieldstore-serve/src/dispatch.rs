//! A connection's read loops and the messages they dispatch: the control
//! loop on the connection's thread and, with two connections, the data
//! loop on another.

use std::sync::Arc;

use fieldstore::{Error, ErrorKind};
use fieldstore_remote::archive::{decode_flush, ReadRequest};
use fieldstore_remote::elements::Stores;
use fieldstore_remote::frame::decode_frame;
use fieldstore_remote::key::Key as WireKey;
use fieldstore_remote::request::ToolRequest;
use fieldstore_remote::session::Endpoint;
use fieldstore_remote::wipe::{sign, StoreWipeReply, StoreWipeRequest, WipeRequest};
use fieldstore_remote::{Header, Message, Reader, Writer};

use crate::config::Role as ServeRole;
use crate::conn::{bad, lock, Conn, End, Port, Role};
use crate::frames::{offset_in, Frame, FrameReader};
use crate::wire;

impl Conn {
    /// The control connection's frames, until it ends.
    pub(crate) fn control_loop(&self, mut reader: FrameReader) -> End {
        loop {
            let frame = match reader.next(&|| self.server.watchers.watching(self.id)) {
                Ok(f) => f,
                Err(e) => return e,
            };
            let h = frame.header;
            if h.message == Message::Exit {
                if h.client_id != 0 {
                    return End::Bad(format!("Exit for client {} (expected 0)", h.client_id));
                }
                if self.data.is_some() {
                    let _ = self.send(false, Message::Exit, 0, 0, &[]);
                }
                let _ = self.send(true, Message::Exit, 0, 0, &[]);
                return End::Done;
            }
            // With one connection, data frames come this way too.
            let result = if h.control {
                self.handle_control(&h, &frame.payload)
            } else if self.data.is_none() {
                self.handle_data(frame)
            } else {
                return End::Bad(format!(
                    "{} marked as data on the control connection",
                    h.message
                ));
            };
            if let Err(end) = result {
                return end;
            }
        }
    }

    /// The data connection's frames, until it ends. It may stay idle as
    /// long as the control connection lives (a reader's data connection
    /// only receives).
    pub(crate) fn data_loop(&self, mut reader: FrameReader) -> End {
        loop {
            let frame =
                match reader.next(&|| !self.closing.load(std::sync::atomic::Ordering::Relaxed)) {
                    Ok(f) => f,
                    Err(e) => return e,
                };
            let h = frame.header;
            if h.control {
                return End::Bad(format!(
                    "{} marked as control on the data connection",
                    h.message
                ));
            }
            if h.message == Message::Exit {
                let _ = self.send(false, Message::Exit, 0, 0, &[]);
                return End::Done;
            }
            if let Err(end) = self.handle_data(frame) {
                return end;
            }
        }
    }

    /// A control message. `Err` ends the connection; an operation's
    /// failure is answered with `Error` and returns `Ok`.
    pub(crate) fn handle_control(
        &self,
        h: &Header,
        payload: &[u8],
    ) -> std::result::Result<(), End> {
        let (client, request) = (h.client_id, h.request_id);
        // A call not agreed at startup: refused as FDB5 5.25's server
        // refuses it (its clients refuse such calls before sending).
        if !h.message.enabled(self.features) {
            let why = format!("Unauthorized message: {}", h.message);
            eprintln!(
                "fieldstore serve: connection {} from {}: client {client} request {request}: {why}",
                self.id, self.peer
            );
            return self
                .send(true, Message::Unauthorised, client, request, why.as_bytes())
                .map_err(|e| End::Bad(e.to_string()));
        }
        let outcome = match h.message {
            Message::Stop => {
                if let Some(mut c) = lock(&self.clients).remove(&client) {
                    c.discard();
                }
                self.server.watchers.remove(self.id, client);
                Ok(())
            }
            Message::Stores => self.role(client, Role::Catalogue).and_then(|()| {
                let stores = match &self.server.config.role {
                    ServeRole::Catalogue(others) => Stores {
                        stores: others
                            .iter()
                            .map(|(host, port)| {
                                let e = Endpoint {
                                    host: host.clone(),
                                    port: i32::from(*port),
                                };
                                (e.to_string(), vec![e])
                            })
                            .collect(),
                    },
                    _ => Stores {
                        stores: vec![(self.store.to_string(), vec![self.store.clone()])],
                    },
                };
                let mut w = Writer::new();
                stores.encode(&mut w);
                self.send(true, Message::Received, client, request, w.bytes())
            }),
            Message::Schema => {
                let db_key = if payload.is_empty() {
                    None
                } else {
                    let mut r = Reader::new(payload);
                    Some(WireKey::decode(&mut r).map_err(|e| bad("Schema", e))?)
                };
                self.role(client, Role::Catalogue).and_then(|()| {
                    if let Some(k) = db_key {
                        if let Some(c) = lock(&self.clients).get_mut(&client) {
                            c.db_key = Some(k);
                        }
                    }
                    self.send(
                        true,
                        Message::Received,
                        client,
                        request,
                        &self.server.schema_payload,
                    )
                })
            }
            Message::Archive => self
                .role(client, Role::Catalogue)
                .and_then(|()| self.send(true, Message::Received, client, request, &[])),
            Message::Store => self
                .role(client, Role::Store)
                .and_then(|()| self.send(true, Message::Received, client, request, &[])),
            Message::Flush => {
                let n = decode_flush(&mut Reader::new(payload)).map_err(|e| bad("Flush", e))?;
                self.flush(client, request, n)
            }
            Message::List | Message::Axes => {
                let mut r = Reader::new(payload);
                let tool = ToolRequest::decode(&mut r).map_err(|e| bad("List/Axes", e))?;
                let depth = r.int().map_err(|e| bad("List/Axes", e))?;
                self.role(client, Role::Catalogue).and_then(|()| {
                    self.send(true, Message::Received, client, request, &[])?;
                    if h.message == Message::List {
                        if let Err(e) = self.list(client, request, &tool, depth) {
                            self.error(false, client, request, &e);
                        }
                    } else {
                        self.stream_reply(client, request, || self.axes(&tool, depth));
                    }
                    Ok(())
                })
            }
            Message::Inspect => {
                let tool = ToolRequest::decode(&mut Reader::new(payload))
                    .map_err(|e| bad("Inspect", e))?;
                self.role(client, Role::Catalogue).and_then(|()| {
                    self.send(true, Message::Received, client, request, &[])?;
                    self.stream_reply(client, request, || self.inspect(&tool));
                    Ok(())
                })
            }
            Message::Read => {
                let read =
                    ReadRequest::decode(&mut Reader::new(payload)).map_err(|e| bad("Read", e))?;
                self.role(client, Role::Store).and_then(|()| {
                    self.send(true, Message::Received, client, request, &[])?;
                    if let Err(e) = self.read(client, request, &read.location) {
                        self.error(false, client, request, &e);
                    }
                    Ok(())
                })
            }
            Message::Wipe if self.port == Port::Catalogue => {
                let w =
                    WipeRequest::decode(&mut Reader::new(payload)).map_err(|e| bad("Wipe", e))?;
                self.secret().and_then(|secret| {
                    self.send(true, Message::Received, client, request, &[])?;
                    self.stream_reply(client, request, || self.wipe(&w, &secret));
                    Ok(())
                })
            }
            Message::Wipe => {
                let w = StoreWipeRequest::decode(&mut Reader::new(payload))
                    .map_err(|e| bad("store Wipe", e))?;
                self.secret().and_then(|secret| {
                    if w.state.signature != sign(&w.state.state, &secret) {
                        return Err(Error::new(
                            ErrorKind::PermissionDenied,
                            "wipe state not signed by this server's catalogue (FDB_WIPE_SECRET)",
                        ));
                    }
                    // The catalogue's steps delete the data too (fieldstore
                    // wipes a dataset whole, data before its entries): the
                    // store has nothing more to name.
                    let mut w = Writer::new();
                    StoreWipeReply::default().encode(&mut w);
                    self.send(true, Message::Received, client, request, w.bytes())
                })
            }
            Message::DoMaskIndexEntries
            | Message::DoWipeUris
            | Message::DoWipeFinish
            | Message::DoUnsafeFullWipe
            | Message::DoWipeUnknowns => {
                let key =
                    WireKey::decode(&mut Reader::new(payload)).map_err(|e| bad("wipe step", e))?;
                self.wipe_step(h.message, &key)
                    .and_then(|answer| match answer {
                        Some(b) => {
                            let mut w = Writer::new();
                            w.bool(b);
                            self.send(true, Message::Received, client, request, w.bytes())
                        }
                        None => self.send(true, Message::Received, client, request, &[]),
                    })
            }
            Message::Watch => {
                // A request (fieldstore's clients send theirs): told only
                // of flushes it names; none: of every flush.
                let filter = if payload.is_empty() {
                    None
                } else {
                    let tool = ToolRequest::decode(&mut Reader::new(payload))
                        .map_err(|e| bad("Watch", e))?;
                    Some(tool)
                };
                self.role(client, Role::Catalogue).and_then(|()| {
                    // A request the schema cannot read filters nothing:
                    // told of every flush (more than asked, never less).
                    let filter = filter.filter(|t| !t.all).and_then(|t| {
                        wire::lookup_request(&t.request, self.server.reader.schema()).ok()
                    });
                    self.start_notifier()?;
                    // Registered before the answer: a flush after the
                    // client hears `Received` is told.
                    self.server.watchers.add(
                        self.id,
                        client,
                        request,
                        filter,
                        std::sync::Arc::clone(&self.signal),
                    );
                    self.send(true, Message::Received, client, request, &[])
                })
            }
            Message::Exists => {
                let key =
                    WireKey::decode(&mut Reader::new(payload)).map_err(|e| bad("Exists", e))?;
                self.exists(&key).and_then(|yes| {
                    let mut w = Writer::new();
                    w.bool(yes);
                    self.send(true, Message::Received, client, request, w.bytes())
                })
            }
            other => Err(Error::new(
                ErrorKind::Unsupported,
                format!("{other} is not served by fieldstore serve (docs/serve.md)"),
            )),
        };
        if let Err(e) = outcome {
            if e.kind() == ErrorKind::Io {
                return Err(End::Bad(e.to_string()));
            }
            self.error(true, client, request, &e);
        }
        Ok(())
    }

    /// A data message: archive blobs (both roles) and the data channel's
    /// `Flush` notice. A blob's field stays in its frame (parked fields
    /// keep the frame, and its room in the budgets, until taken).
    fn handle_data(&self, frame: Frame) -> std::result::Result<(), End> {
        let h = frame.header;
        let frame = Arc::new(frame);
        match h.message {
            Message::Blob => self.blob(h.client_id, h.request_id, &frame, 0..frame.payload.len()),
            Message::MultiBlob => {
                let mut rest = &frame.payload[..];
                while !rest.is_empty() {
                    let (inner, p, r) = decode_frame(rest, self.server.config.max_payload)
                        .map_err(|e| End::Bad(format!("MultiBlob: {e}")))?;
                    if inner.message != Message::Blob || inner.client_id != h.client_id {
                        return Err(End::Bad(
                            "MultiBlob holds a frame that is not its client's Blob".into(),
                        ));
                    }
                    let at = offset_in(&frame.payload, p);
                    self.blob(inner.client_id, inner.request_id, &frame, at..at + p.len())?;
                    rest = r;
                }
                Ok(())
            }
            // FDB5's client may say on the data channel that it is done.
            Message::Flush => Ok(()),
            other => Err(End::Bad(format!("{other} on the data channel"))),
        }
    }
}
