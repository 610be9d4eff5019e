//! fieldstore's client of FDB5's remote protocol (`type: remote`): a
//! [`Catalogue`](fieldstore_core::Catalogue) and a
//! [`Store`](fieldstore_core::Store) whose work is done by servers — FDB5's
//! `fdb-server` or `fieldstore serve` alike.
//!
//! The catalogue answers whole requests ([`CatalogueQueries`]): list, axes
//! and retrieve's lookup each cost one request to the catalogue server,
//! never a walk of its datasets. Archival goes the protocol's two steps
//! through a per-dataset pipeline (`link`). Reads go to the store server
//! a location names.
//!
//! - [`connection`]: one connection per server endpoint, logical clients
//!   multiplexed over it, every wait bounded by the time-out.
//! - [`convert`]: keys, requests, locations and schemas on the wire.
//! - [`catalogue`], [`store`]: the two backend halves.
//!
//! [`CatalogueQueries`]: fieldstore_core::CatalogueQueries

pub mod catalogue;
pub mod connection;
pub mod convert;
mod link;
pub mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use fieldstore_core::{DatasetKey, Error, ErrorKind, Result, Schema};

pub use catalogue::RemoteCatalogue;
pub use connection::Dial;
pub use store::RemoteStore;

use connection::{Connection, Mailbox};
use link::Link;

use crate::elements::Stores;
use crate::schema::Schema as WireSchema;
use crate::{Message, Reader};

/// The default time-out of a remote call (FDB5's clients wait forever;
/// fieldstore's do not).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One handle's session with a catalogue server and the store servers it
/// names.
pub struct Remote {
    dial: Dial,
    catalogue: Arc<Connection>,
    schema: Schema,
    /// The store servers the catalogue names, in its order.
    stores: Vec<(String, u16)>,
    /// Picks this client's store for each dataset (see [`Remote::link`]).
    salt: u64,
    connections: Mutex<HashMap<(String, u16), Arc<Connection>>>,
    /// Idle logical clients per store endpoint, for reads.
    readers: Mutex<HashMap<(String, u16), Vec<Mailbox>>>,
    links: Mutex<HashMap<DatasetKey, Weak<Mutex<Link>>>>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("catalogue", &self.dial.endpoint())
            .field("stores", &self.stores)
            .finish()
    }
}

impl Remote {
    /// Connect to the catalogue server `dial` names: its store endpoints
    /// and its schema.
    ///
    /// # Errors
    /// `Unavailable` or `TimedOut` if it cannot be reached; `Corrupt` if
    /// its answers cannot be read.
    pub fn connect(dial: Dial) -> Result<Arc<Remote>> {
        let catalogue = Connection::open(&dial)?;
        let endpoint = catalogue.endpoint().to_string();
        let corrupt = |what: &str, e: crate::DecodeError| {
            Error::corrupt(format!("server {endpoint}: {what}: {e}"))
        };
        let mut client = catalogue.client()?;
        let (_, payload) = client.call(Message::Stores, &[])?;
        let stores =
            Stores::decode(&mut Reader::new(&payload)).map_err(|e| corrupt("Stores", e))?;
        let mut endpoints = Vec::new();
        for e in stores.stores.iter().flat_map(|(_, e)| e.first()) {
            let port = u16::try_from(e.port)
                .map_err(|_| Error::corrupt(format!("server {endpoint}: store port {}", e.port)))?;
            if !endpoints.contains(&(e.host.clone(), port)) {
                endpoints.push((e.host.clone(), port));
            }
        }
        if endpoints.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                format!("server {endpoint} names no store server"),
            ));
        }
        let (_, payload) = client.call(Message::Schema, &[])?;
        let wire =
            WireSchema::decode(&mut Reader::new(&payload)).map_err(|e| corrupt("Schema", e))?;
        let schema = convert::schema(&wire, &endpoint)?;
        drop(client);
        let salt = u64::from(std::process::id()).rotate_left(32)
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::from(d.subsec_nanos()));
        Ok(Arc::new(Remote {
            dial,
            catalogue,
            schema,
            stores: endpoints,
            salt,
            connections: Mutex::default(),
            readers: Mutex::default(),
            links: Mutex::default(),
        }))
    }

    /// The catalogue server's schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The catalogue server's `host:port`.
    pub fn endpoint(&self) -> String {
        self.dial.endpoint()
    }

    /// The connection to a store server, opened on first use. A host name
    /// this machine cannot resolve (the server's own name for itself)
    /// means the catalogue server's host.
    fn store_connection(&self, host: &str, port: u16) -> Result<Arc<Connection>> {
        let key = (host.to_string(), port);
        if let Some(c) = lock(&self.connections).get(&key) {
            return Ok(Arc::clone(c));
        }
        use std::net::ToSocketAddrs;
        let resolvable = (host, port)
            .to_socket_addrs()
            .is_ok_and(|mut a| a.next().is_some());
        let dial = Dial {
            host: if resolvable {
                host.to_string()
            } else {
                self.dial.host.clone()
            },
            port,
            ..self.dial.clone()
        };
        let c = Connection::open(&dial)?;
        lock(&self.connections).insert(key, Arc::clone(&c));
        Ok(c)
    }

    /// The archive pipeline of `dataset`: the one its other writer half
    /// holds, or a new one.
    ///
    /// A dataset's fields go to one store server per client, as FDB5's
    /// client sends them; with several, which one is a hash of the dataset
    /// and this client's salt, so that the writers of one dataset (the
    /// members of an ensemble) spread over the stores, while the catalogue
    /// server indexes them all.
    fn link(&self, dataset: &DatasetKey) -> Result<Arc<Mutex<Link>>> {
        use std::hash::{Hash, Hasher};
        let mut links = lock(&self.links);
        links.retain(|_, l| l.strong_count() > 0);
        if let Some(l) = links.get(dataset).and_then(Weak::upgrade) {
            return Ok(l);
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        dataset.hash(&mut h);
        self.salt.hash(&mut h);
        let pick = usize::try_from(h.finish() % self.stores.len() as u64).unwrap_or(0);
        let (host, port) = self
            .stores
            .get(pick)
            .cloned()
            .ok_or_else(|| Error::internal("no store server to pick"))?;
        let store = self.store_connection(&host, port)?.client()?;
        let catalogue = self.catalogue.client()?;
        let link = Arc::new(Mutex::new(Link::new(
            convert::wire_key(dataset.key()),
            store,
            host,
            port,
            catalogue,
        )));
        links.insert(dataset.clone(), Arc::downgrade(&link));
        Ok(link)
    }

    /// Whether the catalogue server tells watchers of flushes.
    fn pushes_flushes(&self) -> bool {
        self.catalogue.pushes_flushes()
    }

    /// A logical client of the catalogue server for one query.
    fn query_client(&self) -> Result<Mailbox> {
        self.catalogue.client()
    }

    /// Read a field from the store server its location names (a pooled
    /// logical client of that server).
    fn read(&self, location: &fieldstore_core::FieldLocation, out: &mut Vec<u8>) -> Result<()> {
        let (host, port, wire) = convert::store_of(location)?;
        let key = (host.clone(), port);
        let pooled = lock(&self.readers).get_mut(&key).and_then(Vec::pop);
        let mut client = match pooled {
            Some(c) => c,
            None => self.store_connection(&host, port)?.client()?,
        };
        let mut w = crate::Writer::new();
        crate::archive::ReadRequest {
            location: wire,
            remap_key: crate::key::Key::default(),
        }
        .encode(&mut w);
        out.clear();
        let expected = usize::try_from(location.length).unwrap_or(usize::MAX);
        client.stream(Message::Read, w.bytes(), &mut |blob| {
            // One blob (a field under 4 MiB): taken as it is, not copied.
            if out.is_empty() {
                *out = blob;
            } else {
                out.extend_from_slice(&blob);
            }
            Ok(true)
        })?;
        lock(&self.readers).entry(key).or_default().push(client);
        if out.len() != expected {
            return Err(Error::corrupt(format!(
                "{location}: the store server sent {} bytes, the catalogue says {expected}",
                out.len()
            )));
        }
        // End to end: what arrived is what was archived.
        fieldstore_core::checksum::verify(
            location,
            out,
            ": the field was damaged on the server or on the way",
        )
    }
}
