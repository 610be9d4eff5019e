//! One client connection: the handshake, then the control loop on this
//! thread and, with two connections, the data loop on another.
//!
//! A frame that breaks the protocol (bad marker, version, size, end
//! marker, an undecodable payload) ends the connection with its reason
//! logged on standard error; the server and its other connections go on.
//! An operation that fails (a request fieldstore refuses, a field that
//! cannot be read) is answered with FDB5's `Error` message and the
//! connection goes on. When a connection ends, whatever its clients
//! archived and did not flush is discarded: it never becomes visible.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fieldstore::{Error, ErrorKind, FieldStore, Level, ListOptions, Result};
use fieldstore_remote::archive::{decode_flush, CatalogueBlob, ReadRequest, StoreBlob};
use fieldstore_remote::elements::{AxesElement, ListElement, ListEncoder, Stores};
use fieldstore_remote::frame::{self, decode_frame, read_frame, FrameError};
use fieldstore_remote::key::Key as WireKey;
use fieldstore_remote::location::{
    FieldLocation as WireLocation, Uri, REMOTE_FIELD_LOCATION, TOC_FIELD_LOCATION,
};
use fieldstore_remote::request::ToolRequest;
use fieldstore_remote::session::Endpoint;
use fieldstore_remote::startup::{
    feature as bit, negotiate, ClientStartup, DataStartup, ServerStartup, REMOTE_PROTOCOL_VERSION,
};
use fieldstore_remote::wipe::{
    kind, sign, CatalogueWipeState, StoreWipeReply, StoreWipeRequest, StoreWipeState, WipeRequest,
    WipeState,
};
use fieldstore_remote::{Header, Message, Reader, Writer};

use super::{open, wire, Role as ServeRole, Server};

/// How long the handshake may take (each read, and the data connection's
/// arrival).
const HANDSHAKE: Duration = Duration::from_secs(30);
/// Largest startup payload (FDB5's are about 600 bytes).
const STARTUP_LIMIT: u32 = 64 << 10;
/// How long a flush waits for the field locations it counts.
const FLUSH_WAIT: Duration = Duration::from_secs(600);
/// The API messages this server serves, enabled at startup: FDB5's client
/// refuses the others itself, naming them ("not enabled by server").
const SERVED: i64 = bit(Message::Flush)
    | bit(Message::Archive)
    | bit(Message::List)
    | bit(Message::Inspect)
    | bit(Message::Read)
    | bit(Message::Store)
    | bit(Message::Axes)
    | bit(Message::Exists)
    | bit(Message::Wipe);
/// Bytes a connection's readers buffer.
const READ_BUFFER: usize = 256 << 10;
/// Bytes of reply frames gathered before one write (a listing's elements
/// go out in a few writes, not one per element).
const WRITE_BATCH: usize = 256 << 10;
/// Bytes per data blob of a read (FDB5's: just under 4 MiB).
const READ_CHUNK: usize = (4 << 20) - (2 << 10);

/// Reply frames of one request on the data channel, gathered and written
/// [`WRITE_BATCH`] bytes at a time: a listing of thousands of elements
/// costs a few writes, and the client a few reads.
struct Batch<'a> {
    conn: &'a Conn,
    client: u32,
    request: u32,
    out: Vec<u8>,
}

impl<'a> Batch<'a> {
    fn new(conn: &'a Conn, client: u32, request: u32) -> Batch<'a> {
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
    fn blob(&mut self, payload: &[u8]) -> Result<()> {
        self.push(Message::Blob, payload)?;
        if self.out.len() >= WRITE_BATCH {
            self.write()?;
        }
        Ok(())
    }

    /// `Complete`, and everything gathered written.
    fn complete(mut self) -> Result<()> {
        self.push(Message::Complete, &[])?;
        self.write()
    }
}

/// Which of the server's two ports a connection came in on: the
/// catalogue's (`serverPort`) or the store's. Messages both roles know
/// (`Flush`, `Exists`, `Wipe` and its steps) are told apart by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Port {
    /// `serverPort`.
    Catalogue,
    /// The port the `Stores` reply names.
    Store,
}

/// A wipe the catalogue announced with `--doit`, waiting for its steps.
struct PendingWipe {
    /// The request, narrowed to the one dataset.
    request: fieldstore::Request,
    unsafe_wipe_all: bool,
    /// Done already (by `DoUnsafeFullWipe` or `DoWipeURIs`).
    done: bool,
}

/// Which of FDB5's server roles a logical client addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Catalogue,
    Store,
}

/// A logical client of this connection.
struct Client {
    role: Role,
    /// The dataset named by the last `Schema` request (archives go there).
    db_key: Option<WireKey>,
    /// Its own handle: its flush publishes its fields only.
    writer: Option<FieldStore>,
    /// Fields archived since the last flush.
    archived: u32,
    /// The first archive failure since the last flush.
    failed: Option<String>,
    /// A store-only server's writers, per dataset (the bytes, durable at
    /// the store's flush).
    store_writers: HashMap<fieldstore::DatasetKey, Box<dyn fieldstore::StoreWriter>>,
    /// A catalogue-only server's writers, per dataset (locations on other
    /// servers' stores, visible at the catalogue's flush).
    catalogue_writers: HashMap<fieldstore::DatasetKey, Box<dyn fieldstore::CatalogueWriter>>,
}

impl Client {
    fn new(role: Role) -> Client {
        Client {
            role,
            db_key: None,
            writer: None,
            archived: 0,
            failed: None,
            store_writers: HashMap::new(),
            catalogue_writers: HashMap::new(),
        }
    }

    /// Drop what was archived and not flushed (writers dropped unflushed
    /// make nothing visible).
    fn discard(&mut self) {
        if let Some(w) = self.writer.take() {
            let _ = w.discard();
        }
        self.store_writers.clear();
        self.catalogue_writers.clear();
    }
}

/// Why a connection ends.
enum End {
    /// The client said `Exit` or closed between frames.
    Done,
    /// The client broke the protocol.
    Bad(String),
}

impl From<FrameError> for End {
    fn from(e: FrameError) -> End {
        match e {
            FrameError::Closed => End::Done,
            other => End::Bad(other.to_string()),
        }
    }
}

/// A payload that does not decode ends the connection.
fn bad(what: &str, e: fieldstore_remote::DecodeError) -> End {
    End::Bad(format!("undecodable {what} payload: {e}"))
}

/// A connection after its handshake.
struct Conn {
    server: Arc<Server>,
    id: u64,
    peer: SocketAddr,
    control: Mutex<TcpStream>,
    /// The data connection's writing side; `None` with one connection.
    data: Option<Mutex<TcpStream>>,
    clients: Mutex<HashMap<u32, Client>>,
    /// Signalled when a client's archived count or failure changes.
    archived: Condvar,
    closing: AtomicBool,
    /// The store endpoint announced to this connection's clients.
    store: Endpoint,
    /// The port the connection came in on.
    port: Port,
    /// Wipes announced on this (catalogue) connection, by dataset key.
    wipes: Mutex<HashMap<String, PendingWipe>>,
    /// This connection, for the watchers' registry (set once it is
    /// shared).
    me: std::sync::OnceLock<std::sync::Weak<Conn>>,
}

/// The clients told of every flush (fieldstore's `Watch` extension): each
/// gets an empty `Blob` under its `Watch` request whenever any client's
/// flush made something visible. Entries of closed connections go at the
/// next notification.
#[derive(Default)]
pub(super) struct Watchers(Mutex<Vec<(std::sync::Weak<Conn>, u32, u32)>>);

impl Watchers {
    fn add(&self, conn: std::sync::Weak<Conn>, client: u32, request: u32) {
        lock(&self.0).push((conn, client, request));
    }

    /// Tell every watcher; forget those whose connection is gone or
    /// fails (a watcher that stops reading is dropped, not waited for:
    /// the sockets' write timeout bounds a stuck one).
    fn notify(&self) {
        let watchers: Vec<_> = lock(&self.0).clone();
        let mut gone = Vec::new();
        for (i, (conn, client, request)) in watchers.iter().enumerate() {
            let sent = conn.upgrade().is_some_and(|c| {
                !c.closing.load(Ordering::Relaxed)
                    && c.send(false, Message::Blob, *client, *request, &[]).is_ok()
            });
            if !sent {
                gone.push(i);
            }
        }
        if !gone.is_empty() {
            let mut g = lock(&self.0);
            let mut i = 0;
            g.retain(|_| {
                let keep = !gone.contains(&i);
                i += 1;
                keep
            });
        }
    }

    /// Forget a client's watch (it stopped).
    fn remove(&self, conn: u64, client: u32) {
        lock(&self.0)
            .retain(|(c, cl, _)| !(*cl == client && c.upgrade().is_some_and(|c| c.id == conn)));
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serve one connection to its end; never panics on what the peer sends.
pub(super) fn serve(server: Arc<Server>, stream: TcpStream, peer: SocketAddr, id: u64, port: Port) {
    let _ = stream.set_nodelay(true);
    match handshake(&server, stream, peer, id, port) {
        Ok((conn, control_reader, data_reader)) => {
            let conn = Arc::new(conn);
            let _ = conn.me.set(Arc::downgrade(&conn));
            let data_thread = data_reader.map(|r| {
                let c = Arc::clone(&conn);
                std::thread::spawn(move || {
                    let end = c.data_loop(r);
                    c.ended("data", end);
                })
            });
            let end = conn.control_loop(control_reader);
            conn.ended("control", end);
            if let Some(t) = data_thread {
                let _ = t.join();
            }
            conn.cleanup();
        }
        Err(reason) => {
            eprintln!("fieldstore serve: connection {id} from {peer}: handshake failed: {reason}")
        }
    }
}

type Handshake = (Conn, TcpStream, Option<TcpStream>);

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn handshake(
    server: &Arc<Server>,
    stream: TcpStream,
    peer: SocketAddr,
    id: u64,
    port: Port,
) -> std::result::Result<Handshake, String> {
    let mut reader = stream.try_clone().map_err(text)?;
    let mut writer = stream;
    reader.set_read_timeout(Some(HANDSHAKE)).map_err(text)?;
    let (h, payload) = read_frame(&mut reader, STARTUP_LIMIT).map_err(text)?;
    if h.message != Message::Startup || !h.control || h.request_id != 0 {
        return Err(format!(
            "expected Startup on the control connection, got {}",
            h.message
        ));
    }
    let startup = ClientStartup::decode(&mut Reader::new(&payload))
        .map_err(|e| format!("undecodable Startup: {e}"))?;
    let refuse = |writer: &mut TcpStream, why: String| {
        let _ = frame::write_frame(writer, Message::Error, true, 0, 0, why.as_bytes());
        why
    };
    if startup.protocol_version != REMOTE_PROTOCOL_VERSION {
        return Err(refuse(
            &mut writer,
            format!(
                "remote protocol version {} not supported: this server (fieldstore serve) speaks \
                 {REMOTE_PROTOCOL_VERSION}, FDB5 5.25's",
                startup.protocol_version
            ),
        ));
    }
    let mut agreed =
        negotiate(&startup.config, &[1, 2], SERVED).map_err(|e| refuse(&mut writer, e))?;
    // fieldstore's clients may ask to be told of flushes (FDB5's ignore it).
    agreed.watch = port == Port::Catalogue;
    let host = startup.endpoint.host.clone();
    let data_listener = if agreed.single_connection {
        None
    } else {
        Some(bind_data_port(server).map_err(|e| refuse(&mut writer, e))?)
    };
    let data_endpoint = match &data_listener {
        None => startup.endpoint.clone(),
        Some(l) => Endpoint {
            host: host.clone(),
            port: l.local_addr().map(|a| i32::from(a.port())).map_err(text)?,
        },
    };
    let reply = ServerStartup {
        client_session: startup.session.clone(),
        server_session: server.session.clone(),
        data_endpoint,
        config: agreed.to_value(),
    };
    let mut w = Writer::new();
    reply.encode(&mut w);
    frame::write_frame(&mut writer, Message::Startup, true, 0, 0, w.bytes()).map_err(text)?;
    let mut data = None;
    if let Some(listener) = data_listener {
        let stream = accept_within(&listener, HANDSHAKE)?;
        let _ = stream.set_nodelay(true);
        let mut data_reader = stream.try_clone().map_err(text)?;
        data_reader
            .set_read_timeout(Some(HANDSHAKE))
            .map_err(text)?;
        let (h, payload) = read_frame(&mut data_reader, STARTUP_LIMIT)
            .map_err(|e| format!("data connection: {e}"))?;
        if h.message != Message::Startup || h.control {
            return Err(format!(
                "expected Startup on the data connection, got {}",
                h.message
            ));
        }
        let ds = DataStartup::decode(&mut Reader::new(&payload))
            .map_err(|e| format!("undecodable data Startup: {e}"))?;
        if ds.client_session != startup.session || ds.server_session != server.session {
            return Err("the data connection's session ids are not this connection's".into());
        }
        data_reader.set_read_timeout(None).map_err(text)?;
        data = Some((stream, data_reader));
    }
    reader.set_read_timeout(None).map_err(text)?;
    let store = Endpoint {
        host: server.config.store_host.clone().unwrap_or(host),
        port: i32::from(server.store_port()),
    };
    let (data_writer, data_reader) = match data {
        Some((w, r)) => (Some(Mutex::new(w)), Some(r)),
        None => (None, None),
    };
    Ok((
        Conn {
            server: Arc::clone(server),
            id,
            peer,
            control: Mutex::new(writer),
            data: data_writer,
            clients: Mutex::new(HashMap::new()),
            archived: Condvar::new(),
            closing: AtomicBool::new(false),
            store,
            port,
            wipes: Mutex::new(HashMap::new()),
            me: std::sync::OnceLock::new(),
        },
        reader,
        data_reader,
    ))
}

/// A listener for the data connection: a free port of `dataPortStart` ..
/// `dataPortStart + dataPortCount`, else one the system picks.
fn bind_data_port(server: &Server) -> std::result::Result<TcpListener, String> {
    let ip = server.config.listen;
    match server.config.data_ports {
        None => TcpListener::bind((ip, 0)).map_err(|e| format!("no data port: {e}")),
        Some((start, count)) => {
            let end = u32::from(start) + u32::from(count);
            for p in u32::from(start)..end {
                let Ok(p) = u16::try_from(p) else { break };
                if let Ok(l) = TcpListener::bind((ip, p)) {
                    return Ok(l);
                }
            }
            Err(format!("data ports {start}..{end} are all taken"))
        }
    }
}

fn accept_within(
    listener: &TcpListener,
    limit: Duration,
) -> std::result::Result<TcpStream, String> {
    listener.set_nonblocking(true).map_err(text)?;
    let until = Instant::now() + limit;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).map_err(text)?;
                return Ok(s);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err("the client did not open its data connection".into())
            }
            Err(e) => return Err(format!("accepting the data connection: {e}")),
        }
    }
}

impl Conn {
    /// One loop ended. A bad frame on either connection closes both; the
    /// data connection's orderly `Exit` leaves the control connection to
    /// finish (the client sends its own `Exit` there next).
    fn ended(&self, which: &str, end: End) {
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

    /// Stop both loops: shut the sockets (their reads return), wake flushes.
    fn close(&self) {
        self.closing.store(true, Ordering::Relaxed);
        let _ = lock(&self.control).shutdown(Shutdown::Both);
        if let Some(d) = &self.data {
            let _ = lock(d).shutdown(Shutdown::Both);
        }
        self.archived.notify_all();
    }

    /// Discard what was not flushed; drop parked fields.
    fn cleanup(&self) {
        for (_, mut c) in lock(&self.clients).drain() {
            c.discard();
        }
        self.server.pending.forget(self.id);
    }

    /// Send a frame; `control` picks the logical channel (with one
    /// connection both are the control socket, the header still telling
    /// them apart, as FDB5 does).
    fn send(
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
    fn socket(&self, control: bool) -> &Mutex<TcpStream> {
        match (&self.data, control) {
            (Some(d), false) => d,
            _ => &self.control,
        }
    }

    /// Write whole frames to the channel `control` picks.
    fn write_raw(&self, control: bool, bytes: &[u8]) -> Result<()> {
        lock(self.socket(control))
            .write_all(bytes)
            .map_err(|e| Error::io("writing to the client", e))
    }

    /// Answer a failed request with `Error`, and log it: FDB5 5.25's
    /// client receives the text but prints blanks in its place (it copies
    /// the payload the wrong way), so the server's log is where an
    /// operator reads why.
    fn error(&self, control: bool, client: u32, request: u32, e: &Error) {
        eprintln!(
            "fieldstore serve: connection {} from {}: client {client} request {request}: {e}",
            self.id, self.peer
        );
        let text = format!("fieldstore serve: {e}");
        let _ = self.send(control, Message::Error, client, request, text.as_bytes());
    }

    fn role(&self, client: u32, role: Role) -> Result<()> {
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

    fn control_loop(&self, reader: TcpStream) -> End {
        let limit = self.server.config.max_payload;
        // Buffered: a frame costs one read, not three (header, payload,
        // end marker), when several are waiting.
        let mut reader = io::BufReader::with_capacity(READ_BUFFER, reader);
        loop {
            let (h, payload) = match read_frame(&mut reader, limit) {
                Ok(f) => f,
                Err(e) => return e.into(),
            };
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
                self.handle_control(&h, &payload)
            } else if self.data.is_none() {
                self.handle_data(&h, &payload)
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

    fn data_loop(&self, reader: TcpStream) -> End {
        let limit = self.server.config.max_payload;
        let mut reader = io::BufReader::with_capacity(READ_BUFFER, reader);
        loop {
            let (h, payload) = match read_frame(&mut reader, limit) {
                Ok(f) => f,
                Err(e) => return e.into(),
            };
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
            if let Err(end) = self.handle_data(&h, &payload) {
                return end;
            }
        }
    }

    /// A control message. `Err` ends the connection; an operation's
    /// failure is answered with `Error` and returns `Ok`.
    fn handle_control(&self, h: &Header, payload: &[u8]) -> std::result::Result<(), End> {
        let (client, request) = (h.client_id, h.request_id);
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
            Message::Watch => self.role(client, Role::Catalogue).and_then(|()| {
                let me = self
                    .me
                    .get()
                    .cloned()
                    .ok_or_else(|| Error::internal("a connection not yet shared"))?;
                // Registered before the answer: a flush after the client
                // hears `Received` is told.
                self.server.watchers.add(me, client, request);
                self.send(true, Message::Received, client, request, &[])
            }),
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
    /// `Flush` notice.
    fn handle_data(&self, h: &Header, payload: &[u8]) -> std::result::Result<(), End> {
        match h.message {
            Message::Blob => self.blob(h.client_id, h.request_id, payload),
            Message::MultiBlob => {
                let mut rest = payload;
                while !rest.is_empty() {
                    let (inner, p, r) = decode_frame(rest, self.server.config.max_payload)
                        .map_err(|e| End::Bad(format!("MultiBlob: {e}")))?;
                    if inner.message != Message::Blob || inner.client_id != h.client_id {
                        return Err(End::Bad(
                            "MultiBlob holds a frame that is not its client's Blob".into(),
                        ));
                    }
                    self.blob(inner.client_id, inner.request_id, p)?;
                    rest = r;
                }
                Ok(())
            }
            // FDB5's client may say on the data channel that it is done.
            Message::Flush => Ok(()),
            other => Err(End::Bad(format!("{other} on the data channel"))),
        }
    }

    fn blob(&self, client: u32, request: u32, payload: &[u8]) -> std::result::Result<(), End> {
        let role = lock(&self.clients).get(&client).map(|c| c.role);
        match role {
            Some(Role::Store) => {
                let blob = StoreBlob::decode(&mut Reader::new(payload))
                    .map_err(|e| bad("store Blob", e))?;
                if self.server.config.role == ServeRole::Store {
                    return self.store_blob(client, request, &blob);
                }
                match self.server.pending.park(self.id, blob.data.to_vec()) {
                    Ok(path) => {
                        let loc = WireLocation {
                            class: TOC_FIELD_LOCATION.into(),
                            uri: Uri::new("file", path),
                            offset: 0,
                            length: i64::try_from(blob.data.len()).unwrap_or(i64::MAX),
                            remap_key: WireKey::default(),
                        };
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
    /// server's store, their location sent back.
    fn store_blob(
        &self,
        client: u32,
        request: u32,
        blob: &StoreBlob<'_>,
    ) -> std::result::Result<(), End> {
        let written = (|| -> Result<WireLocation> {
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
            Ok(WireLocation {
                class: TOC_FIELD_LOCATION.into(),
                uri: Uri::new("file", wire::location_name(&l)),
                offset: i64::try_from(l.offset).unwrap_or(i64::MAX),
                length: i64::try_from(l.length).unwrap_or(i64::MAX),
                remap_key: WireKey::default(),
            })
        })();
        match written {
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
        let db_key = c
            .db_key
            .clone()
            .ok_or_else(|| Error::invalid_input("archive before the dataset was named (Schema)"))?;
        let key = wire::join_keys([&db_key, &blob.idx_key, &blob.datum_key])?;
        let fs = &self.server.reader;
        let split = fs.schema().split(&key)?;
        let location = fieldstore_remote::client::convert::location(&blob.location);
        let w = match c.catalogue_writers.entry(split.dataset.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(fs.catalogue().writer(&split.dataset, fs.schema())?)
            }
        };
        w.insert(&split.collocation, &split.element, &location)
    }

    /// The catalogue step: the parked bytes, archived under the joined key.
    fn archive(&self, client: u32, blob: &CatalogueBlob) -> Result<()> {
        if matches!(self.server.config.role, ServeRole::Catalogue(_)) {
            return self.index(client, blob);
        }
        let bytes = self.server.pending.take(&blob.location.uri.name)?;
        let mut g = lock(&self.clients);
        let c = g
            .get_mut(&client)
            .ok_or_else(|| Error::internal("archive for a client that stopped"))?;
        let db_key = c
            .db_key
            .clone()
            .ok_or_else(|| Error::invalid_input("archive before the dataset was named (Schema)"))?;
        let key = wire::join_keys([&db_key, &blob.idx_key, &blob.datum_key])?;
        if c.writer.is_none() {
            c.writer = Some(open(&self.server.config)?);
        }
        match &c.writer {
            Some(w) => w.archive(&key, &bytes),
            None => Err(Error::internal("no writer")),
        }
    }

    /// A catalogue flush waits for the `n` field locations the client
    /// says it sent (they come on the data connection, maybe after the
    /// flush), then publishes them; a store flush has nothing to do (the
    /// catalogue flush makes the data durable first).
    fn flush(&self, client: u32, request: u32, n: u32) -> Result<()> {
        let until = Instant::now() + FLUSH_WAIT;
        let mut g = lock(&self.clients);
        let Some(role) = g.get(&client).map(|c| c.role) else {
            drop(g);
            return self.send(true, Message::Received, client, request, &[]);
        };
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
        } else if let Some(c) = g.get_mut(&client) {
            // A store-only server's flush: the data durable (the client
            // flushes the catalogue after, which makes it visible).
            for w in c.store_writers.values_mut() {
                w.flush()?;
                w.indexed();
            }
        }
        drop(g);
        // Something may have become visible: watchers look again.
        if role == Role::Catalogue {
            self.server.watchers.notify();
        }
        self.send(true, Message::Received, client, request, &[])
    }

    /// Run `produce` and stream its payloads as blobs, then `Complete`; a
    /// failure is sent as `Error` on the data channel instead.
    fn stream_reply(
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
    /// stops the visit.
    fn list(&self, client: u32, request_id: u32, tool: &ToolRequest, depth: i32) -> Result<()> {
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
                duplicates: false,
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
                            (wl.class, wl.uri)
                        };
                        (&*l.uri, head, range(l.offset), range(l.length))
                    });
                w.clear();
                encoder.encode(
                    &mut w,
                    (e.dataset.key().as_str(), || wire::wire_key(e.dataset.key())),
                    (e.collocation.key().as_str(), || {
                        wire::wire_key(e.collocation.key())
                    }),
                    &wire::wire_key(e.element.key()),
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

    fn location(&self, class: &str, l: &fieldstore::FieldLocation) -> WireLocation {
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

    fn axes(&self, tool: &ToolRequest, level: i32) -> Result<Vec<Vec<u8>>> {
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

    fn inspect(&self, tool: &ToolRequest) -> Result<Vec<Vec<u8>>> {
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

    /// Read a field this server handed out. A `file` location must lie
    /// under one of the configured roots: a client cannot make the server
    /// read any file it names.
    fn read(&self, client: u32, request: u32, location: &WireLocation) -> Result<()> {
        let loc = wire::from_wire_location(location)?;
        if let Some(path) = loc.uri.strip_prefix("file://") {
            let path = std::path::Path::new(path);
            let inside = !path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
                && self
                    .server
                    .config
                    .store
                    .roots
                    .iter()
                    .any(|r| path.starts_with(&r.path));
            if !inside {
                return Err(Error::new(
                    ErrorKind::PermissionDenied,
                    format!("{} is not under a root of this server", path.display()),
                ));
            }
        }
        let mut buf = Vec::new();
        self.server.reader.store().read(&loc, &mut buf)?;
        for chunk in buf.chunks(READ_CHUNK) {
            self.send(false, Message::Blob, client, request, chunk)?;
        }
        self.send(false, Message::Complete, client, request, &[])
    }

    /// The wipe secret: FDB5 refuses remote wipes without one, and so
    /// does this server.
    fn secret(&self) -> Result<String> {
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
    fn wipe(&self, w: &WipeRequest, secret: &str) -> Result<Vec<Vec<u8>>> {
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
    fn wipe_step(&self, step: Message, key: &WireKey) -> Result<Option<bool>> {
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
    fn store_uri(&self, name: &str) -> Uri {
        let inner = item_uri(name);
        Uri {
            host: self.store.host.clone(),
            port: self.store.port,
            query: vec![("internalScheme".into(), inner.scheme.clone())],
            ..Uri::new("fdb", inner.name)
        }
    }

    fn exists(&self, db_key: &WireKey) -> Result<bool> {
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
