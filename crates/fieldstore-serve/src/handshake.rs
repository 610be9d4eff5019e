//! A connection's handshake: FDB5's startup exchange, the data
//! connection, then the connection served to its end.
//!
//! Each step of the handshake (the startup frame, the data connection's
//! arrival, its startup frame) has `handshakeTimeout`; a startup frame is
//! at most [`STARTUP_LIMIT`] bytes, so a client that connects and says
//! nothing, or drips, holds a thread and a few kilobytes for that long.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use fieldstore_remote::frame;
use fieldstore_remote::session::Endpoint;
use fieldstore_remote::startup::{
    feature as bit, negotiate, ClientStartup, DataStartup, ServerStartup, REMOTE_PROTOCOL_VERSION,
};
use fieldstore_remote::{Message, Reader, Writer};

use crate::budget::Budget;
use crate::conn::{Conn, Port};
use crate::frames::{End, FrameReader, Socket};
use crate::pending::Owner;
use crate::shared::Server;
use crate::watch::Signal;

/// Largest startup payload (FDB5's are about 600 bytes).
const STARTUP_LIMIT: u32 = 64 << 10;
/// The API messages this server serves, enabled at startup (less `Wipe`
/// with `wipe: false`): FDB5's client refuses the others itself, naming
/// them ("not enabled by server"); a client that sends one anyway is
/// answered `Unauthorised`.
const SERVED: i64 = bit(Message::Flush)
    | bit(Message::Archive)
    | bit(Message::List)
    | bit(Message::Inspect)
    | bit(Message::Read)
    | bit(Message::Store)
    | bit(Message::Axes)
    | bit(Message::Exists)
    | bit(Message::Wipe);

/// Serve one connection to its end; never panics on what the peer sends.
pub(crate) fn serve(server: Arc<Server>, stream: TcpStream, peer: SocketAddr, id: u64, port: Port) {
    let _ = stream.set_nodelay(true);
    match handshake(&server, stream, peer, id, port) {
        Ok((conn, control_reader, data_reader)) => {
            let conn = Arc::new(conn);
            let _ = conn.me.set(Arc::downgrade(&conn));
            let data_thread = data_reader.map(|r| {
                let c = Arc::clone(&conn);
                std::thread::Builder::new()
                    .name(format!("serve-{id}-data"))
                    .spawn(move || {
                        let end = c.data_loop(r);
                        c.ended("data", end);
                    })
            });
            let data_thread = match data_thread {
                Some(Err(e)) => {
                    conn.ended(
                        "data",
                        End::Bad(format!("no thread for the data connection: {e}")),
                    );
                    conn.cleanup();
                    return;
                }
                Some(Ok(t)) => Some(t),
                None => None,
            };
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

type Handshake = (Conn, FrameReader, Option<FrameReader>);

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
    let limits = &server.config.limits;
    let memory = Budget::new(limits.connection_memory);
    let budgets = || [Arc::clone(&memory), Arc::clone(&server.memory)];
    let frames = |s: Socket| {
        FrameReader::new(
            s,
            STARTUP_LIMIT,
            budgets(),
            limits.handshake,
            limits.handshake,
        )
    };
    stream.set_write_timeout(Some(limits.write)).map_err(text)?;
    let mut writer = Socket::new(stream);
    let mut reader = frames(writer.clone());
    let f = reader.next(&|| false).map_err(ended)?;
    let h = f.header;
    if h.message != Message::Startup || !h.control || h.request_id != 0 {
        return Err(format!(
            "expected Startup on the control connection, got {}",
            h.message
        ));
    }
    let startup = ClientStartup::decode(&mut Reader::new(&f.payload))
        .map_err(|e| format!("undecodable Startup: {e}"))?;
    let refuse = |writer: &mut Socket, why: String| {
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
    let served = if server.config.wipe {
        SERVED
    } else {
        SERVED & !bit(Message::Wipe)
    };
    let mut agreed =
        negotiate(&startup.config, &[1, 2], served).map_err(|e| refuse(&mut writer, e))?;
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
        let stream = accept_within(&listener, limits.handshake)?;
        let _ = stream.set_nodelay(true);
        stream.set_write_timeout(Some(limits.write)).map_err(text)?;
        let stream = Socket::new(stream);
        let mut data_reader = frames(stream.clone());
        let f = data_reader
            .next(&|| false)
            .map_err(|e| format!("data connection: {}", ended(e)))?;
        if f.header.message != Message::Startup || f.header.control {
            return Err(format!(
                "expected Startup on the data connection, got {}",
                f.header.message
            ));
        }
        let ds = DataStartup::decode(&mut Reader::new(&f.payload))
            .map_err(|e| format!("undecodable data Startup: {e}"))?;
        if ds.client_session != startup.session || ds.server_session != server.session {
            return Err("the data connection's session ids are not this connection's".into());
        }
        data_reader.set_bounds(server.config.max_payload, limits.idle, limits.frame);
        data = Some((stream, data_reader));
    }
    reader.set_bounds(server.config.max_payload, limits.idle, limits.frame);
    let store = Endpoint {
        host: server.config.store_host.clone().unwrap_or(host),
        port: i32::from(server.store_port()),
    };
    let mut shutdown = vec![writer.clone()];
    let (data_writer, data_reader) = match data {
        Some((w, r)) => {
            shutdown.push(w.clone());
            (Some(Mutex::new(w)), Some(r))
        }
        None => (None, None),
    };
    let owner = Owner {
        host: startup.session.host.clone(),
        pid: startup.session.pid,
    };
    Ok((
        Conn {
            server: Arc::clone(server),
            id,
            peer,
            owner,
            control: Mutex::new(writer),
            data: data_writer,
            shutdown,
            clients: Mutex::new(HashMap::new()),
            archived: Condvar::new(),
            closing: AtomicBool::new(false),
            store,
            port,
            features: agreed.features,
            wipes: Mutex::new(HashMap::new()),
            memory,
            signal: Arc::new(Signal::default()),
            notifier: OnceLock::new(),
            me: OnceLock::new(),
        },
        reader,
        data_reader,
    ))
}

/// A handshake frame's failure, as the log says it.
fn ended(e: End) -> String {
    match e {
        End::Done => "the client closed the connection".into(),
        End::Bad(why) => why,
    }
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
