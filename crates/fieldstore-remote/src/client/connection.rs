//! One connection to a server endpoint, shared by the logical clients
//! (catalogue and store sessions, queries) of a handle, as FDB5's client
//! shares one per endpoint.
//!
//! Frames are written whole under a lock, so that logical clients sharing
//! a socket never interleave. One thread per socket reads frames and hands
//! each to the mailbox of its client id; a reply for a client that is gone
//! is dropped. When a socket fails or the server closes it, every mailbox
//! is closed, so that every waiter learns it at once: nothing waits for a
//! dead server longer than the time-out, and nothing hangs.

use std::collections::{HashMap, VecDeque};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fieldstore_core::{Error, ErrorKind, Result};

use crate::frame::{self, read_frame};
use crate::session::{Endpoint, SessionId};
use crate::startup::{
    ClientStartup, DataStartup, ServerStartup, DEFAULT_FEATURES, REMOTE_PROTOCOL_VERSION,
};
use crate::value::Value;
use crate::{Header, Message, Reader, Writer};

/// Largest frame accepted from a server: read replies come in blobs of
/// under 4 MiB, a schema in about 120 KiB.
const REPLY_LIMIT: u32 = 64 << 20;

/// A frame as read.
pub(crate) type Frame = (Header, Vec<u8>);

/// How to reach a server and how long to wait for it.
#[derive(Debug, Clone)]
pub struct Dial {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// The longest wait for connecting and for each reply frame.
    pub timeout: Duration,
    /// Ask for FDB5's single-connection mode (`preferSingleConnection`).
    pub prefer_single: bool,
}

impl Dial {
    /// `host:port`, for messages.
    pub fn endpoint(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the reader threads share with the connection.
#[derive(Default)]
struct Mailboxes {
    open: HashMap<u32, Sender<Frame>>,
    /// Why the connection ended, once it has.
    broken: Option<String>,
}

/// An open connection (one socket, or two in FDB5's default mode).
pub struct Connection {
    endpoint: String,
    timeout: Duration,
    control: Mutex<TcpStream>,
    data: Option<Mutex<TcpStream>>,
    mailboxes: Arc<Mutex<Mailboxes>>,
    next_client: AtomicU32,
    next_request: AtomicU32,
    /// The server tells watchers of flushes (fieldstore's `Watch`).
    pushes_flushes: bool,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("endpoint", &self.endpoint)
            .field("sockets", &(1 + usize::from(self.data.is_some())))
            .finish()
    }
}

fn unavailable(endpoint: &str, what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        format!("fieldstore remote: server {endpoint}: {what}"),
    )
}

fn connect(host: &str, port: u16, timeout: Duration, endpoint: &str) -> Result<TcpStream> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| unavailable(endpoint, format!("cannot resolve {host}: {e}")))?
        .collect();
    let mut last = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                s.set_write_timeout(Some(timeout))
                    .map_err(|e| unavailable(endpoint, e))?;
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(unavailable(
        endpoint,
        match last {
            Some(e) => format!("cannot connect: {e}"),
            None => format!("{host} resolves to no address"),
        },
    ))
}

fn session() -> SessionId {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    SessionId {
        host: crate::session::hostname(),
        pid: i32::try_from(std::process::id()).unwrap_or(i32::MAX),
        time: now.as_secs(),
        random: i32::from_le_bytes((now.subsec_nanos() ^ n.rotate_left(16)).to_le_bytes()),
    }
}

/// One frame read during the handshake, within the time-out.
fn handshake_frame(s: &mut TcpStream, endpoint: &str) -> Result<Frame> {
    let f = read_frame(s, REPLY_LIMIT).map_err(|e| unavailable(endpoint, e))?;
    if f.0.message == Message::Error {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "fieldstore remote: server {endpoint} refused the connection: {}",
                String::from_utf8_lossy(&f.1)
            ),
        ));
    }
    if f.0.message != Message::Startup {
        return Err(unavailable(
            endpoint,
            format!("expected Startup, got {}", f.0.message),
        ));
    }
    Ok(f)
}

impl Connection {
    /// Connect and hand-shake: FDB5 5.25's protocol (frame version 12,
    /// remote protocol 3), two sockets unless the server or `dial` asks
    /// for one.
    ///
    /// # Errors
    /// `Unavailable` if the server cannot be reached or breaks the
    /// protocol; `Unsupported` if it refuses this client's version.
    pub fn open(dial: &Dial) -> Result<Arc<Connection>> {
        let endpoint = dial.endpoint();
        let mut control = connect(&dial.host, dial.port, dial.timeout, &endpoint)?;
        control
            .set_read_timeout(Some(dial.timeout))
            .map_err(|e| unavailable(&endpoint, e))?;
        let mine = session();
        let mut config = vec![
            (
                Value::String("RemoteFieldLocation".into()),
                Value::List(vec![Value::Number(1)]),
            ),
            (
                Value::String("NumberOfConnections".into()),
                Value::List(vec![Value::Number(1), Value::Number(2)]),
            ),
            (
                Value::String("EnabledFeatures".into()),
                Value::Number(DEFAULT_FEATURES),
            ),
        ];
        if dial.prefer_single {
            config.push((
                Value::String("PreferSingleConnection".into()),
                Value::Bool(true),
            ));
        }
        let startup = ClientStartup {
            session: mine.clone(),
            endpoint: Endpoint {
                host: dial.host.clone(),
                port: i32::from(dial.port),
            },
            protocol_version: REMOTE_PROTOCOL_VERSION,
            config: Value::Map(config),
        };
        let mut w = Writer::new();
        startup.encode(&mut w);
        frame::write_frame(&mut control, Message::Startup, true, 0, 0, w.bytes())
            .map_err(|e| unavailable(&endpoint, e))?;
        let (_, payload) = handshake_frame(&mut control, &endpoint)?;
        let reply = ServerStartup::decode(&mut Reader::new(&payload))
            .map_err(|e| unavailable(&endpoint, format!("undecodable Startup reply: {e}")))?;
        if reply.client_session != mine {
            return Err(unavailable(
                &endpoint,
                "the Startup reply names another client session",
            ));
        }
        let pushes_flushes = matches!(
            reply.config.get(crate::startup::WATCH_KEY),
            Some(Value::Bool(true))
        );
        let connections = reply
            .config
            .get("NumberOfConnections")
            .and_then(Value::as_numbers)
            .unwrap_or_else(|| vec![2]);
        let data = if connections.first() == Some(&1) {
            None
        } else {
            // The server names its data endpoint; a name this host cannot
            // resolve (another machine's host name) means the control
            // connection's address.
            let host = if (reply.data_endpoint.host.as_str(), 0)
                .to_socket_addrs()
                .is_ok_and(|mut a| a.next().is_some())
            {
                reply.data_endpoint.host.clone()
            } else {
                control
                    .peer_addr()
                    .map(|a| a.ip().to_string())
                    .map_err(|e| unavailable(&endpoint, e))?
            };
            let port = u16::try_from(reply.data_endpoint.port).map_err(|_| {
                unavailable(
                    &endpoint,
                    format!("data port {} out of range", reply.data_endpoint.port),
                )
            })?;
            let mut d = connect(&host, port, dial.timeout, &endpoint)?;
            let mut w = Writer::new();
            DataStartup {
                client_session: mine,
                server_session: reply.server_session,
            }
            .encode(&mut w);
            frame::write_frame(&mut d, Message::Startup, false, 0, 0, w.bytes())
                .map_err(|e| unavailable(&endpoint, e))?;
            Some(d)
        };
        control
            .set_read_timeout(None)
            .map_err(|e| unavailable(&endpoint, e))?;
        let mailboxes = Arc::new(Mutex::new(Mailboxes::default()));
        for s in std::iter::once(&control).chain(data.as_ref()) {
            let reader = s.try_clone().map_err(|e| unavailable(&endpoint, e))?;
            let boxes = Arc::clone(&mailboxes);
            let name = endpoint.clone();
            std::thread::Builder::new()
                .name("fieldstore-remote-reader".into())
                .spawn(move || read_loop(reader, &boxes, &name))
                .map_err(|e| Error::io("starting a reader thread", e))?;
        }
        Ok(Arc::new(Connection {
            endpoint,
            timeout: dial.timeout,
            control: Mutex::new(control),
            data: data.map(Mutex::new),
            mailboxes,
            next_client: AtomicU32::new(1),
            next_request: AtomicU32::new(1),
            pushes_flushes,
        }))
    }

    /// The server's `host:port`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Whether the server tells watchers of flushes (`fieldstore serve`
    /// does; FDB5's servers do not).
    pub fn pushes_flushes(&self) -> bool {
        self.pushes_flushes
    }

    /// A new logical client with its own mailbox.
    ///
    /// # Errors
    /// `Unavailable` if the connection has ended.
    pub(crate) fn client(self: &Arc<Self>) -> Result<Mailbox> {
        let id = self.next_client.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        let mut g = lock(&self.mailboxes);
        if let Some(why) = &g.broken {
            return Err(unavailable(&self.endpoint, why));
        }
        g.open.insert(id, tx);
        drop(g);
        Ok(Mailbox {
            connection: Arc::clone(self),
            client: id,
            rx,
            stash: VecDeque::new(),
        })
    }

    /// A fresh request id.
    pub(crate) fn request_id(&self) -> u32 {
        self.next_request.fetch_add(1, Ordering::Relaxed)
    }

    /// Send one frame; `control` picks the channel (the control socket
    /// carries both in single-connection mode, each frame keeping its
    /// channel bit).
    ///
    /// # Errors
    /// `Unavailable` if the socket fails.
    pub(crate) fn send(
        &self,
        control: bool,
        message: Message,
        client: u32,
        request: u32,
        payload: &[u8],
    ) -> Result<()> {
        self.send_parts(control, message, client, request, &[payload])
    }

    /// [`Connection::send`] of a payload in pieces (a field's keys, then
    /// its bytes, which are not copied when large).
    ///
    /// # Errors
    /// As [`Connection::send`].
    pub(crate) fn send_parts(
        &self,
        control: bool,
        message: Message,
        client: u32,
        request: u32,
        parts: &[&[u8]],
    ) -> Result<()> {
        let socket = match (&self.data, control) {
            (Some(d), false) => d,
            _ => &self.control,
        };
        let mut s = lock(socket);
        frame::write_frame_parts(&mut *s, message, control, client, request, parts).map_err(|e| {
            match e {
                frame::FrameError::Io(e) => self.broken(format!("sending {message}: {e}")),
                e => Error::invalid_input(format!("fieldstore remote: {e}")),
            }
        })
    }

    /// The error of a connection found broken (and remembered as such).
    fn broken(&self, why: String) -> Error {
        let mut g = lock(&self.mailboxes);
        let why = g.broken.get_or_insert(why).clone();
        g.open.clear();
        unavailable(&self.endpoint, why)
    }

    fn why_broken(&self) -> String {
        lock(&self.mailboxes)
            .broken
            .clone()
            .unwrap_or_else(|| "connection closed".into())
    }
}

impl Drop for Connection {
    /// Says goodbye as FDB5's client does (`Exit` on each socket), then
    /// closes the sockets, which ends the reader threads.
    fn drop(&mut self) {
        if self.data.is_some() {
            let _ = self.send(false, Message::Exit, 0, 0, &[]);
        }
        let _ = self.send(true, Message::Exit, 0, 0, &[]);
        for s in std::iter::once(&self.control).chain(self.data.as_ref()) {
            let _ = lock(s).shutdown(Shutdown::Both);
        }
    }
}

fn read_loop(socket: TcpStream, boxes: &Mutex<Mailboxes>, endpoint: &str) {
    // Buffered: a listing's many small frames cost a few reads.
    let mut socket = std::io::BufReader::with_capacity(256 << 10, socket);
    let why = loop {
        match read_frame(&mut socket, REPLY_LIMIT) {
            Ok((h, payload)) => {
                if h.message == Message::Exit {
                    break "the server closed the connection".to_string();
                }
                let g = lock(boxes);
                if let Some(tx) = g.open.get(&h.client_id) {
                    let _ = tx.send((h, payload));
                }
            }
            Err(frame::FrameError::Closed) => break "the server closed the connection".into(),
            Err(e) => break format!("reading from {endpoint}: {e}"),
        }
    };
    let mut g = lock(boxes);
    g.broken.get_or_insert(why);
    // Dropping the senders wakes every waiter.
    g.open.clear();
}

/// A logical client: its id on the connection and the frames addressed to
/// it. Dropping it tells the server (`Stop`).
pub(crate) struct Mailbox {
    connection: Arc<Connection>,
    client: u32,
    rx: Receiver<Frame>,
    /// Frames read while waiting for another one.
    stash: VecDeque<Frame>,
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "client {} of {}", self.client, self.connection.endpoint)
    }
}

/// The error a server sent (`Error` frames carry plain text). fieldstore's
/// server names its error kind first; other text is the server's failure.
pub(crate) fn server_error(endpoint: &str, payload: &[u8]) -> Error {
    let text = String::from_utf8_lossy(payload).trim().to_string();
    let inner = text.strip_prefix("fieldstore serve: ").unwrap_or(&text);
    let kind = [
        ErrorKind::InvalidInput,
        ErrorKind::NotFound,
        ErrorKind::PermissionDenied,
        ErrorKind::StorageFull,
        ErrorKind::Corrupt,
        ErrorKind::Locked,
        ErrorKind::Unsupported,
        ErrorKind::TimedOut,
        ErrorKind::Unavailable,
    ]
    .into_iter()
    .find(|k| inner.starts_with(k.as_str()))
    .unwrap_or(ErrorKind::Io);
    Error::new(kind, format!("server {endpoint}: {text}"))
}

impl Mailbox {
    /// This client's id.
    pub(crate) fn id(&self) -> u32 {
        self.client
    }

    /// Its connection.
    pub(crate) fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// The next frame for this client.
    ///
    /// # Errors
    /// `TimedOut` after the connection's time-out; `Unavailable` if the
    /// connection ended.
    pub(crate) fn recv(&mut self) -> Result<Frame> {
        if let Some(f) = self.stash.pop_front() {
            return Ok(f);
        }
        self.recv_wire()
    }

    /// The next frame for this client within `wait`, `None` after it.
    ///
    /// # Errors
    /// `Unavailable` if the connection ended.
    pub(crate) fn recv_within(&mut self, wait: Duration) -> Result<Option<Frame>> {
        if let Some(f) = self.stash.pop_front() {
            return Ok(Some(f));
        }
        match self.rx.recv_timeout(wait) {
            Ok(f) => Ok(Some(f)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(unavailable(
                &self.connection.endpoint,
                self.connection.why_broken(),
            )),
        }
    }

    /// A frame already here, if any (never waits).
    pub(crate) fn try_recv(&mut self) -> Option<Frame> {
        self.stash.pop_front().or_else(|| self.rx.try_recv().ok())
    }

    fn recv_wire(&mut self) -> Result<Frame> {
        let c = &self.connection;
        match self.rx.recv_timeout(c.timeout) {
            Ok(f) => Ok(f),
            Err(RecvTimeoutError::Timeout) => Err(Error::new(
                ErrorKind::TimedOut,
                format!(
                    "fieldstore remote: server {}: no reply within {:.1} s",
                    c.endpoint,
                    c.timeout.as_secs_f64()
                ),
            )),
            Err(RecvTimeoutError::Disconnected) => Err(unavailable(&c.endpoint, c.why_broken())),
        }
    }

    /// Send a control message and wait for its `Received`; its payload.
    /// Frames for other requests of this client that arrive meanwhile are
    /// kept for [`Mailbox::recv`].
    ///
    /// # Errors
    /// The server's `Error`; as [`Mailbox::recv`].
    pub(crate) fn call(&mut self, message: Message, payload: &[u8]) -> Result<(u32, Vec<u8>)> {
        let request = self.connection.request_id();
        self.connection
            .send(true, message, self.client, request, payload)?;
        // With two sockets, the reply's first blobs (data socket) may come
        // before its `Received` (control socket): they wait in the stash.
        loop {
            let (h, p) = self.recv_wire()?;
            if h.request_id == request {
                match h.message {
                    Message::Received => return Ok((request, p)),
                    Message::Error => return Err(server_error(&self.connection.endpoint, &p)),
                    Message::Unauthorised => {
                        return Err(Error::new(
                            ErrorKind::PermissionDenied,
                            format!(
                                "server {}: {message} not enabled: {}",
                                self.connection.endpoint,
                                String::from_utf8_lossy(&p)
                            ),
                        ))
                    }
                    _ => {}
                }
            }
            self.stash.push_back((h, p));
        }
    }

    /// [`Mailbox::call`], then the streamed reply: each `Blob`'s payload
    /// to `each` until `Complete`. `each` returning `false` stops reading
    /// (the rest of the reply is dropped with this client).
    ///
    /// # Errors
    /// As [`Mailbox::call`]; an `Error` frame in the stream; `each`'s.
    pub(crate) fn stream(
        &mut self,
        message: Message,
        payload: &[u8],
        each: &mut dyn FnMut(Vec<u8>) -> Result<bool>,
    ) -> Result<()> {
        let (request, _) = self.call(message, payload)?;
        loop {
            let (h, p) = self.recv()?;
            if h.request_id != request {
                continue;
            }
            match h.message {
                Message::Blob => {
                    if !each(p)? {
                        return Ok(());
                    }
                }
                Message::Complete => return Ok(()),
                Message::Error => return Err(server_error(&self.connection.endpoint, &p)),
                other => {
                    return Err(unavailable(
                        &self.connection.endpoint,
                        format!("unexpected {other} in the reply to {message}"),
                    ))
                }
            }
        }
    }
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        lock(&self.connection.mailboxes).open.remove(&self.client);
        let _ = self
            .connection
            .send(true, Message::Stop, self.client, 0, &[]);
    }
}
