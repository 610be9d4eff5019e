//! A connection after its handshake: its sockets, its logical clients and
//! how replies are written.
//!
//! A frame that breaks the protocol (bad marker, version, size, end
//! marker, an undecodable payload) ends the connection with its reason
//! logged on standard error; the server and its other connections go on.
//! An operation that fails (a request fieldstore refuses, a field that
//! cannot be read) is answered with FDB5's `Error` message and the
//! connection goes on. When a connection ends, whatever its clients
//! archived and did not flush is discarded: it never becomes visible.
//!
//! Every write has a deadline (`writeTimeout`, the sockets' write
//! time-out): a client that stops reading ends its own connection, and the
//! lock of its socket is never held longer than that. Closing needs no
//! lock: it shuts the sockets through handles of their own.

use std::collections::HashMap;
use std::io::Write;
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};

use fieldstore::{Error, FieldStore, Result};
use fieldstore_remote::archive::CatalogueBlob;
use fieldstore_remote::frame::{self, FrameError};
use fieldstore_remote::key::Key as WireKey;
use fieldstore_remote::session::Endpoint;
use fieldstore_remote::Message;

use crate::budget::Budget;
pub(crate) use crate::frames::End;
use crate::frames::Socket;
use crate::pending::Owner;
use crate::shared::Server;
use crate::watch::{Flushed, Signal};

/// Bytes of reply frames gathered before one write (a listing's elements
/// go out in a few writes, not one per element).
const WRITE_BATCH: usize = 256 << 10;

/// Reply frames of one request on the data channel, gathered and written
/// [`WRITE_BATCH`] bytes at a time: a listing of thousands of elements
/// costs a few writes, and the client a few reads.
pub(crate) struct Batch<'a> {
    conn: &'a Conn,
    client: u32,
    request: u32,
    out: Vec<u8>,
}

impl<'a> Batch<'a> {
    pub(crate) fn new(conn: &'a Conn, client: u32, request: u32) -> Batch<'a> {
        Batch {
            conn,
            client,
            request,
            out: Vec::new(),
        }
    }

    fn push(&mut self, message: Message, payload: &[u8]) -> Result<()> {
        let frame = frame::encode_frame(message, false, self.client, self.request, payload)
            .map_err(|e| Error::internal(e.to_string()))?;
        self.out.extend_from_slice(&frame);
        Ok(())
    }

    fn write(&mut self) -> Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.conn.write_raw(false, &self.out)?;
        self.out.clear();
        Ok(())
    }

    /// One `Blob`, written once enough is gathered.
    pub(crate) fn blob(&mut self, payload: &[u8]) -> Result<()> {
        self.push(Message::Blob, payload)?;
        if self.out.len() >= WRITE_BATCH {
            self.write()?;
        }
        Ok(())
    }

    /// `Complete`, and everything gathered written.
    pub(crate) fn complete(mut self) -> Result<()> {
        self.push(Message::Complete, &[])?;
        self.write()
    }
}

/// Which of the server's two ports a connection came in on: the
/// catalogue's (`serverPort`) or the store's. Messages both roles know
/// (`Flush`, `Exists`, `Wipe` and its steps) are told apart by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Port {
    /// `serverPort`.
    Catalogue,
    /// The port the `Stores` reply names.
    Store,
}

/// A wipe the catalogue announced with `--doit`, waiting for its steps.
pub(crate) struct PendingWipe {
    /// The request, narrowed to the one dataset.
    pub(crate) request: fieldstore::Request,
    pub(crate) unsafe_wipe_all: bool,
    /// Done already (by `DoUnsafeFullWipe` or `DoWipeURIs`).
    pub(crate) done: bool,
}

/// Which of FDB5's server roles a logical client addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Catalogue,
    Store,
}

/// A logical client of this connection.
pub(crate) struct Client {
    pub(crate) role: Role,
    /// The dataset named by the last `Schema` request (archives go there).
    pub(crate) db_key: Option<WireKey>,
    /// Its own handle: its flush publishes its fields only.
    pub(crate) writer: Option<FieldStore>,
    /// Fields archived since the last flush.
    pub(crate) archived: u32,
    /// The keys archived since the last flush, for the watchers.
    pub(crate) flushed: Flushed,
    /// The first archive failure since the last flush.
    pub(crate) failed: Option<String>,
    /// A store-only server's writers, per dataset (the bytes, durable at
    /// the store's flush).
    pub(crate) store_writers: HashMap<fieldstore::DatasetKey, Box<dyn fieldstore::StoreWriter>>,
    /// A catalogue-only server's writers, per dataset (locations on other
    /// servers' stores, visible at the catalogue's flush).
    pub(crate) catalogue_writers:
        HashMap<fieldstore::DatasetKey, Box<dyn fieldstore::CatalogueWriter>>,
}

impl Client {
    pub(crate) fn new(role: Role) -> Client {
        Client {
            role,
            db_key: None,
            writer: None,
            archived: 0,
            flushed: Flushed::default(),
            failed: None,
            store_writers: HashMap::new(),
            catalogue_writers: HashMap::new(),
        }
    }

    /// The full key of a catalogue step: the dataset its last `Schema`
    /// named, then the blob's collocation and element keys.
    ///
    /// # Errors
    /// `InvalidInput` before `Schema` named the dataset, or for keys that
    /// do not join.
    pub(crate) fn key_of(&self, blob: &CatalogueBlob) -> Result<fieldstore::Key> {
        let db_key = self
            .db_key
            .as_ref()
            .ok_or_else(|| Error::invalid_input("archive before the dataset was named (Schema)"))?;
        crate::wire::join_keys([db_key, &blob.idx_key, &blob.datum_key])
    }

    /// Drop what was archived and not flushed (writers dropped unflushed
    /// make nothing visible).
    pub(crate) fn discard(&mut self) {
        if let Some(w) = self.writer.take() {
            let _ = w.discard();
        }
        self.store_writers.clear();
        self.catalogue_writers.clear();
        self.flushed = Flushed::default();
    }
}

/// A payload that does not decode ends the connection.
pub(crate) fn bad(what: &str, e: fieldstore_remote::DecodeError) -> End {
    End::Bad(format!("undecodable {what} payload: {e}"))
}

/// A connection after its handshake.
pub(crate) struct Conn {
    pub(crate) server: Arc<Server>,
    pub(crate) id: u64,
    pub(crate) peer: SocketAddr,
    /// The client process, owner of what this connection parks.
    pub(crate) owner: Owner,
    pub(crate) control: Mutex<Socket>,
    /// The data connection's writing side; `None` with one connection.
    pub(crate) data: Option<Mutex<Socket>>,
    /// The sockets, for closing them without their locks.
    pub(crate) shutdown: Vec<Socket>,
    pub(crate) clients: Mutex<HashMap<u32, Client>>,
    /// Signalled when a client's archived count or failure changes.
    pub(crate) archived: Condvar,
    pub(crate) closing: AtomicBool,
    /// The store endpoint announced to this connection's clients.
    pub(crate) store: Endpoint,
    /// The port the connection came in on.
    pub(crate) port: Port,
    /// The API calls agreed at startup (`EnabledFeatures`).
    pub(crate) features: i64,
    /// Wipes announced on this (catalogue) connection, by dataset key.
    pub(crate) wipes: Mutex<HashMap<String, PendingWipe>>,
    /// Bytes of large frames this connection holds at once.
    pub(crate) memory: Arc<Budget>,
    /// Its watches' flags, waited on by its notifier thread.
    pub(crate) signal: Arc<Signal>,
    /// Whether its notifier thread runs.
    pub(crate) notifier: OnceLock<()>,
    /// This connection, for its notifier thread (set once it is shared).
    pub(crate) me: OnceLock<Weak<Conn>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Conn {
    /// One loop ended. A bad frame on either connection closes both; the
    /// data connection's orderly `Exit` leaves the control connection to
    /// finish (the client sends its own `Exit` there next).
    pub(crate) fn ended(&self, which: &str, end: End) {
        match end {
            End::Bad(reason) => {
                if !self.closing.load(Ordering::Relaxed) {
                    eprintln!(
                        "fieldstore serve: connection {} from {}: closed ({which}): {reason}",
                        self.id, self.peer
                    );
                }
                self.close();
            }
            End::Done if which == "data" => {}
            End::Done => self.close(),
        }
    }

    /// Stop both loops and the notifier: shut the sockets (their reads
    /// and writes return), wake flushes.
    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::Relaxed);
        for s in &self.shutdown {
            let _ = s.stream().shutdown(Shutdown::Both);
        }
        self.signal.close();
        self.archived.notify_all();
    }

    /// Discard what was not flushed; drop parked fields and watches.
    pub(crate) fn cleanup(&self) {
        for (_, mut c) in lock(&self.clients).drain() {
            c.discard();
        }
        self.server.pending.forget(self.id);
        self.server.watchers.forget(self.id);
        self.signal.close();
    }

    /// Start the notifier thread, once: it tells this connection's
    /// watchers of the flushes that raised their flags, so that no flush
    /// ever writes to a watcher's socket.
    ///
    /// # Errors
    /// No thread could be started.
    pub(crate) fn start_notifier(&self) -> Result<()> {
        if self.notifier.get().is_some() {
            return Ok(());
        }
        let me = self
            .me
            .get()
            .cloned()
            .ok_or_else(|| Error::internal("a connection not yet shared"))?;
        let signal = Arc::clone(&self.signal);
        std::thread::Builder::new()
            .name(format!("serve-{}-watch", self.id))
            .spawn(move || {
                while let Some(raised) = signal.wait() {
                    let Some(conn) = me.upgrade() else { return };
                    for (client, request) in raised {
                        if let Err(e) = conn.send(false, Message::Blob, client, request, &[]) {
                            conn.ended("watch", End::Bad(format!("telling a watcher: {e}")));
                            return;
                        }
                    }
                }
            })
            .map_err(|e| Error::io("starting a watch's notifier", e))?;
        let _ = self.notifier.set(());
        Ok(())
    }

    /// Send a frame; `control` picks the logical channel (with one
    /// connection both are the control socket, the header still telling
    /// them apart, as FDB5 does).
    pub(crate) fn send(
        &self,
        control: bool,
        message: Message,
        client: u32,
        request: u32,
        payload: &[u8],
    ) -> Result<()> {
        // A large payload (a field read) is written as it is, not copied.
        let mut s = lock(self.socket(control));
        frame::write_frame_parts(&mut *s, message, control, client, request, &[payload]).map_err(
            |e| match e {
                FrameError::Io(e) => Error::io("writing to the client", e),
                e => Error::internal(e.to_string()),
            },
        )
    }

    /// The socket of the channel `control` picks: with one connection the
    /// control socket carries both.
    pub(crate) fn socket(&self, control: bool) -> &Mutex<Socket> {
        match (&self.data, control) {
            (Some(d), false) => d,
            _ => &self.control,
        }
    }

    /// Write whole frames to the channel `control` picks.
    pub(crate) fn write_raw(&self, control: bool, bytes: &[u8]) -> Result<()> {
        lock(self.socket(control))
            .write_all(bytes)
            .map_err(|e| Error::io("writing to the client", e))
    }

    /// Answer a failed request with `Error`, and log it: FDB5 5.25's
    /// client receives the text but prints blanks in its place (it copies
    /// the payload the wrong way), so the server's log is where an
    /// operator reads why.
    pub(crate) fn error(&self, control: bool, client: u32, request: u32, e: &Error) {
        eprintln!(
            "fieldstore serve: connection {} from {}: client {client} request {request}: {e}",
            self.id, self.peer
        );
        let text = format!("fieldstore serve: {e}");
        let _ = self.send(control, Message::Error, client, request, text.as_bytes());
    }

    pub(crate) fn role(&self, client: u32, role: Role) -> Result<()> {
        let mut g = lock(&self.clients);
        let c = g.entry(client).or_insert_with(|| Client::new(role));
        if c.role != role {
            return Err(Error::invalid_input(format!(
                "client {client} addressed the {:?} before, now the {role:?}",
                c.role
            )));
        }
        Ok(())
    }
}
