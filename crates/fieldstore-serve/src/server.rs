//! The server's ports: binding them, and accepting connections, each on
//! its own thread, at most `maxConnections` at once.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fieldstore::{Error, Result};

use crate::config::Role;
use crate::conn::Port;
use crate::handshake;
use crate::shared::Server;

impl Server {
    /// Bind the ports of this server's roles: the catalogue's, the
    /// store's, or both.
    ///
    /// # Errors
    /// A port is taken or not allowed.
    pub fn bind(&self) -> Result<Listeners> {
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

    /// Accept connections on the bound ports until the process ends, each
    /// connection on its own thread.
    pub fn run(self: &Arc<Server>, listeners: Listeners) {
        match listeners {
            Listeners {
                catalogue: Some(catalogue),
                store: Some(store),
            } => {
                let server = Arc::clone(self);
                let store_thread = std::thread::Builder::new()
                    .name("serve-store".into())
                    .spawn(move || server.accept(store, Port::Store));
                if let Err(e) = store_thread {
                    eprintln!("fieldstore serve: no thread for the store port: {e}");
                    return;
                }
                self.accept(catalogue, Port::Catalogue);
            }
            Listeners {
                catalogue: Some(catalogue),
                store: None,
            } => self.accept(catalogue, Port::Catalogue),
            Listeners {
                catalogue: None,
                store: Some(store),
            } => self.accept(store, Port::Store),
            Listeners {
                catalogue: None,
                store: None,
            } => {}
        }
    }

    fn accept(self: &Arc<Server>, listener: TcpListener, port: Port) {
        let refusals = Refusals::default();
        loop {
            let (stream, peer) = match listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // Out of file descriptors and the like: this connection is
                // lost, the server goes on.
                Err(e) => {
                    eprintln!("fieldstore serve: accept failed: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            };
            let Some(slot) = Slot::take(self) else {
                refusals.refuse(peer, self.config.limits.max_connections);
                drop(stream);
                continue;
            };
            let id = self.next_connection.fetch_add(1, Ordering::Relaxed);
            let server = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name(format!("serve-{id}"))
                .spawn(move || {
                    let _slot = slot;
                    handshake::serve(server, stream, peer, id, port);
                });
            if let Err(e) = spawned {
                eprintln!("fieldstore serve: no thread for connection from {peer}: {e}");
            }
        }
    }
}

/// A connection's place among the `maxConnections`, given back when the
/// connection's thread ends.
struct Slot(Arc<Server>);

impl Slot {
    fn take(server: &Arc<Server>) -> Option<Slot> {
        let max = server.config.limits.max_connections;
        server
            .connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Arc::clone(server)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Connections refused at the limit, logged at most once a second with
/// their count (a flood of them must not flood the log).
#[derive(Default)]
struct Refusals(Mutex<(Option<Instant>, u64)>);

impl Refusals {
    fn refuse(&self, peer: SocketAddr, max: usize) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        g.1 += 1;
        if g.0.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            eprintln!(
                "fieldstore serve: refused {} connection(s), the last from {peer}: {max} \
                 connections are served already (maxConnections)",
                g.1
            );
            *g = (Some(Instant::now()), 0);
        }
    }
}

/// The listening sockets of a server's roles.
pub struct Listeners {
    /// The catalogue's (`serverPort`), unless a store only.
    pub catalogue: Option<TcpListener>,
    /// The store's, unless a catalogue only.
    pub store: Option<TcpListener>,
}
