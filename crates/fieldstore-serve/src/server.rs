//! `fieldstore serve`: FDB5's remote protocol, server side, over any
//! fieldstore backend (docs/serve.md).
//!
//! By default one process plays both of FDB5's server roles, catalogue
//! and store, on two ports (why two: [`ServeConfig`]): FDB5's client asks
//! the catalogue for its stores and is told this server's store port, so
//! archive, list, axes, inspect and read all come here. Configured so, it
//! plays one role, as FDB5's servers do: a catalogue whose stores are other
//! servers, or a store. A thread per connection (plus one
//! reading its data connection); every
//! connection's memory is bounded by the largest frame accepted and the
//! server-wide limit on fields between the two archive steps
//! ([`pending`]).

mod config;
mod connection;
mod pending;
mod wire;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::Arc;

use fieldstore::{Error, FieldStore, Result};
use fieldstore_remote::session::SessionId;
use fieldstore_remote::Writer;

pub(crate) use config::{Role, ServeConfig};
use pending::Pending;

/// What every connection of a server shares.
pub(crate) struct Server {
    config: ServeConfig,
    /// The handle list, axes, inspect and read go through (archives use
    /// one handle per client, so that one client's flush never publishes
    /// another's fields).
    reader: FieldStore,
    pending: Pending,
    session: SessionId,
    next_connection: AtomicU64,
    /// The store listener's port, once bound.
    store_port: AtomicU16,
    /// The schema as FDB5 serialises it, encoded once.
    schema_payload: Vec<u8>,
    /// Clients told of every flush (fieldstore's `Watch` extension).
    watchers: connection::Watchers,
}

impl Server {
    /// A server over the store `config` describes.
    ///
    /// # Errors
    /// As [`FieldStore::open`].
    pub(crate) fn new(config: ServeConfig) -> Result<Arc<Server>> {
        let reader = open(&config)?;
        let mut w = Writer::new();
        wire::schema(reader.schema()).encode(&mut w);
        let host = fieldstore_remote::session::hostname();
        let session = SessionId {
            host,
            pid: i32::try_from(std::process::id()).unwrap_or(0),
            time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            random: i32::try_from(std::process::id() ^ 0x5eed).unwrap_or(0),
        };
        Ok(Arc::new(Server {
            pending: Pending::new(config.pending_limit),
            config,
            reader,
            session,
            next_connection: AtomicU64::new(1),
            store_port: AtomicU16::new(0),
            schema_payload: w.into_bytes(),
            watchers: connection::Watchers::default(),
        }))
    }

    /// Bind the ports of this server's roles: the catalogue's, the
    /// store's, or both.
    ///
    /// # Errors
    /// A port is taken or not allowed.
    pub(crate) fn bind(&self) -> Result<Listeners> {
        let bind = |port| {
            let addr = SocketAddr::new(self.config.listen, port);
            TcpListener::bind(addr).map_err(|e| Error::io(format_args!("listening on {addr}"), e))
        };
        let (catalogue, store) = match self.config.role {
            Role::Both => (
                Some(bind(self.config.port)?),
                Some(bind(self.config.store_port)?),
            ),
            Role::Catalogue(_) => (Some(bind(self.config.port)?), None),
            Role::Store => (None, Some(bind(self.config.port)?)),
        };
        if let Some(store) = &store {
            let port = store
                .local_addr()
                .map_err(|e| Error::io("the store's address", e))?
                .port();
            self.store_port.store(port, Ordering::Relaxed);
        }
        Ok(Listeners { catalogue, store })
    }

    /// The store's port, as bound (0 for a catalogue only).
    pub(crate) fn store_port(&self) -> u16 {
        self.store_port.load(Ordering::Relaxed)
    }

    /// Accept connections on the bound ports until killed, each
    /// connection on its own thread.
    pub(crate) fn run(self: &Arc<Server>, listeners: Listeners) {
        match listeners {
            Listeners {
                catalogue: Some(catalogue),
                store: Some(store),
            } => {
                let server = Arc::clone(self);
                let store_thread = std::thread::Builder::new()
                    .name("serve-store".into())
                    .spawn(move || server.accept(store, connection::Port::Store));
                if let Err(e) = store_thread {
                    eprintln!("fieldstore serve: no thread for the store port: {e}");
                    return;
                }
                self.accept(catalogue, connection::Port::Catalogue);
            }
            Listeners {
                catalogue: Some(catalogue),
                store: None,
            } => self.accept(catalogue, connection::Port::Catalogue),
            Listeners {
                catalogue: None,
                store: Some(store),
            } => self.accept(store, connection::Port::Store),
            Listeners {
                catalogue: None,
                store: None,
            } => {}
        }
    }

    fn accept(self: &Arc<Server>, listener: TcpListener, port: connection::Port) {
        loop {
            let (stream, peer) = match listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // Out of file descriptors and the like: this connection is
                // lost, the server goes on.
                Err(e) => {
                    eprintln!("fieldstore serve: accept failed: {e}");
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    continue;
                }
            };
            let id = self.next_connection.fetch_add(1, Ordering::Relaxed);
            let server = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name(format!("serve-{id}"))
                .spawn(move || connection::serve(server, stream, peer, id, port));
            if let Err(e) = spawned {
                eprintln!("fieldstore serve: no thread for connection from {peer}: {e}");
            }
        }
    }
}

/// The listening sockets of a server's roles.
pub(crate) struct Listeners {
    /// The catalogue's (`serverPort`), unless a store only.
    pub(crate) catalogue: Option<TcpListener>,
    /// The store's, unless a catalogue only.
    pub(crate) store: Option<TcpListener>,
}

/// A handle on the served store, resolving parameter names as the CLI does.
fn open(config: &ServeConfig) -> Result<FieldStore> {
    let mut store = config.store.clone();
    store.schema = store
        .schema
        .with_param_names(fieldstore_grib::param_names());
    FieldStore::open(store)
}
