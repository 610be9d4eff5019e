//! What every connection of a server shares: the store handle, the parked
//! fields, the watchers, the memory budget and the connections' count.

use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use fieldstore::{FieldStore, Result};
use fieldstore_remote::session::SessionId;
use fieldstore_remote::Writer;

use crate::budget::Budget;
use crate::config::ServeConfig;
use crate::pending::Pending;
use crate::watch::Watchers;
use crate::wire;

/// A server: what every connection of it shares. [`Server::bind`] its
/// ports, then [`Server::run`] it.
pub struct Server {
    pub(crate) config: ServeConfig,
    /// The handle list, axes, inspect and read go through (archives use
    /// one handle per client, so that one client's flush never publishes
    /// another's fields).
    pub(crate) reader: FieldStore,
    pub(crate) pending: Pending,
    pub(crate) session: SessionId,
    pub(crate) next_connection: AtomicU64,
    /// Connections served now (at most `maxConnections`).
    pub(crate) connections: AtomicUsize,
    /// The store listener's port, once bound.
    pub(crate) store_port: AtomicU16,
    /// The schema as FDB5 serialises it, encoded once.
    pub(crate) schema_payload: Vec<u8>,
    /// Clients told of flushes (fieldstore's `Watch` extension).
    pub(crate) watchers: Watchers,
    /// Bytes of large frames held at once, over all connections.
    pub(crate) memory: Arc<Budget>,
}

impl Server {
    /// A server over the store `config` describes (give its schema
    /// parameter names, as the CLI does, for requests that name
    /// parameters by short name).
    ///
    /// # Errors
    /// As [`FieldStore::open`].
    pub fn new(config: ServeConfig) -> Result<Arc<Server>> {
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
            memory: Budget::new(config.limits.memory),
            config,
            reader,
            session,
            next_connection: AtomicU64::new(1),
            connections: AtomicUsize::new(0),
            store_port: AtomicU16::new(0),
            schema_payload: w.into_bytes(),
            watchers: Watchers::default(),
        }))
    }

    /// The store's port, as bound (0 for a catalogue only).
    pub fn store_port(&self) -> u16 {
        self.store_port.load(Ordering::Relaxed)
    }
}

/// A handle on the served store (one per archiving client, so that its
/// flush publishes its own fields only).
pub(crate) fn open(config: &ServeConfig) -> Result<FieldStore> {
    FieldStore::open(config.store.clone())
}
