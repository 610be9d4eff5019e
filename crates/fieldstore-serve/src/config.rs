//! `fieldstore serve`'s configuration: FDB5's server config shape.
//!
//! The server keys (`type`, `serverPort`, `dataPortStart`,
//! `dataPortCount`, `stores`, `fdbWipeSecret` (else `$FDB_WIPE_SECRET`),
//! FDB5 5.25's `wipe` (false: remote wipes refused as `Unauthorised`),
//! fieldstore's `maxPayload`, `pendingLimit` and the bounds of [`Limits`],
//! and FDB5's `serverThreaded`, accepted and ignored: fieldstore always
//! runs a thread per connection, their number bounded by
//! `maxConnections`) are taken out;
//! everything else is an ordinary fieldstore/FDB5 store configuration
//! (`engine`, `store`, `schema`, `spaces`, `daos:`, `rados:` …) read by
//! [`fieldstore::Config::from_yaml`].
//!
//! Three shapes, by `type` and `stores:`:
//! - `type: catalogue` without `stores:`, or with one entry naming a port
//!   of its own: fieldstore's combined server, both roles from one
//!   process on two ports, the catalogue on `serverPort`, the store on the
//!   port `stores:` names (or one the system picks). FDB5's client finds
//!   the store through the catalogue's `Stores` reply. The store needs a
//!   port of its own: FDB5's client shares one connection between
//!   catalogue and store on the same endpoint, and its connection thread,
//!   handling the store's reply to an archived field, waits for the
//!   catalogue's reply that only that same thread could read: it
//!   deadlocks.
//! - `type: catalogue` with `serveStore: false` or several `stores:`: a
//!   catalogue only, as FDB5's, its stores the servers `stores:` names.
//! - `type: store`: a store only, on `serverPort`.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use fieldstore::{Config, Error, ErrorKind, Result};

/// FDB5's default port.
pub const DEFAULT_PORT: u16 = 7654;

/// A server's configuration.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The store served.
    pub store: Config,
    /// The control port (`serverPort`; 0: any free port).
    pub port: u16,
    /// Data ports to choose from (`dataPortStart`, `dataPortCount`); none:
    /// a port the system picks.
    pub data_ports: Option<(u16, u16)>,
    /// Where to listen.
    pub listen: IpAddr,
    /// Which of FDB5's roles this server plays.
    pub role: Role,
    /// The store's host announced to clients, if the config names one
    /// (`stores: [{default: host:port}]`); else the host each client
    /// dialled.
    pub store_host: Option<String>,
    /// The store's port (from `stores:`; 0: one the system picks).
    pub store_port: u16,
    /// Largest frame payload accepted.
    pub max_payload: u32,
    /// Most bytes of fields held between a store blob and its catalogue
    /// entry, over all connections.
    pub pending_limit: u64,
    /// FDB5's wipe secret (`$FDB_WIPE_SECRET` / `fdbWipeSecret`).
    pub wipe_secret: Option<String>,
    /// Whether remote wipes are enabled at all (FDB5 5.25's `wipe` key,
    /// default true): without, `Wipe` is left out of the features
    /// announced and answered `Unauthorised`.
    pub wipe: bool,
    /// What a client may hold and how long it may take.
    pub limits: Limits,
}

/// The bounds that keep one client from deciding what others get: each a
/// config key of the same name (times in seconds, sizes in bytes).
///
/// With the defaults, what the server holds is bounded by about
/// `memoryLimit` plus 128 KiB of read buffers per connection (1 GiB at
/// 1,024 connections), and at most two threads per connection (three for
/// one that watches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// `maxConnections`: connections served at once; one more is closed
    /// at once, its refusal logged (default 1,024).
    pub max_connections: usize,
    /// `handshakeTimeout`: the whole startup exchange, data connection
    /// included (default 10 s).
    pub handshake: Duration,
    /// `idleTimeout`: a connection that starts no frame for this long is
    /// closed, unless it watches (default 3,600 s: a model writes once per
    /// output step).
    pub idle: Duration,
    /// `frameTimeout`: a frame, once its first byte arrived, must be whole
    /// within this (default 120 s).
    pub frame: Duration,
    /// `writeTimeout`: a write to a client that does not read ends its
    /// connection after this (default 60 s).
    pub write: Duration,
    /// `memoryLimit`: bytes of large frames held at once over all
    /// connections, read or parked; a reader waits for room (the client
    /// is not read meanwhile: back-pressure). Default 768 MiB.
    pub memory: u64,
    /// `connectionMemoryLimit`: the same for one connection (default
    /// 256 MiB, at least `maxPayload`).
    pub connection_memory: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 1024,
            handshake: Duration::from_secs(10),
            idle: Duration::from_secs(3600),
            frame: Duration::from_secs(120),
            write: Duration::from_secs(60),
            memory: 768 << 20,
            connection_memory: 256 << 20,
        }
    }
}

impl Limits {
    /// Take the limits' keys out of `map`.
    fn take(map: &mut serde_yaml_ng::Mapping, source: &str) -> Result<Limits> {
        let mut l = Limits::default();
        let number = |map: &mut serde_yaml_ng::Mapping, key: &str| -> Result<Option<u64>> {
            match map.remove(key) {
                None => Ok(None),
                Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                    invalid(source, format!("{key}: expected a whole number, got {v:?}"))
                }),
            }
        };
        let seconds = |n: u64, key: &str| -> Result<Duration> {
            if n == 0 {
                return Err(invalid(
                    source,
                    format!("{key}: 0 would refuse every client"),
                ));
            }
            Ok(Duration::from_secs(n))
        };
        if let Some(n) = number(map, "maxConnections")? {
            if n == 0 {
                return Err(invalid(
                    source,
                    "maxConnections: 0 would refuse every client",
                ));
            }
            l.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = number(map, "handshakeTimeout")? {
            l.handshake = seconds(n, "handshakeTimeout")?;
        }
        if let Some(n) = number(map, "idleTimeout")? {
            l.idle = seconds(n, "idleTimeout")?;
        }
        if let Some(n) = number(map, "frameTimeout")? {
            l.frame = seconds(n, "frameTimeout")?;
        }
        if let Some(n) = number(map, "writeTimeout")? {
            l.write = seconds(n, "writeTimeout")?;
        }
        if let Some(n) = number(map, "memoryLimit")? {
            l.memory = n;
        }
        if let Some(n) = number(map, "connectionMemoryLimit")? {
            l.connection_memory = n;
        }
        Ok(l)
    }
}

/// The roles of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Catalogue and store, on two ports (fieldstore's own shape).
    Both,
    /// A catalogue whose stores are these other servers (`host`, `port`).
    Catalogue(Vec<(String, u16)>),
    /// A store only.
    Store,
}

fn invalid(source: &str, message: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidConfig, format!("{source}: {message}"))
}

fn take_u16(map: &mut serde_yaml_ng::Mapping, key: &str, source: &str) -> Result<Option<u16>> {
    match map.remove(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| invalid(source, format!("{key}: expected a port number, got {v:?}"))),
    }
}

impl ServeConfig {
    /// Read a server config file.
    ///
    /// # Errors
    /// `NotFound`/`PermissionDenied` reading it; `InvalidConfig` for a
    /// shape fieldstore does not serve (saying which key), or whatever
    /// [`Config::from_yaml`] refuses.
    pub fn from_file(path: &Path, listen: IpAddr) -> Result<ServeConfig> {
        let text = fieldstore::config::read_text_file(path, "server config")?;
        let base = path.parent().unwrap_or(Path::new("."));
        ServeConfig::from_yaml(&text, base, &path.display().to_string(), listen)
    }

    /// Parse a server config.
    ///
    /// # Errors
    /// As [`ServeConfig::from_file`].
    pub fn from_yaml(text: &str, base: &Path, source: &str, listen: IpAddr) -> Result<ServeConfig> {
        // Nesting and size bounded before parsing: refused in linear time.
        let value: serde_yaml_ng::Value = fieldstore::config::parse_yaml(text, source)?;
        let serde_yaml_ng::Value::Mapping(mut map) = value else {
            return Err(invalid(source, "expected a mapping"));
        };
        let kind = map
            .remove("type")
            .and_then(|v| v.as_str().map(str::to_string));
        let store_only = match kind.as_deref() {
            None | Some("catalogue") | Some("local") => false,
            Some("store") => true,
            Some(other) => {
                return Err(invalid(
                    source,
                    format!("type: {other}: expected catalogue or store"),
                ))
            }
        };
        let serve_store = match map.remove("serveStore") {
            None => None,
            Some(v) => Some(
                v.as_bool()
                    .ok_or_else(|| invalid(source, "serveStore: expected true or false"))?,
            ),
        };
        let port = take_u16(&mut map, "serverPort", source)?.unwrap_or(DEFAULT_PORT);
        let start = take_u16(&mut map, "dataPortStart", source)?;
        let count = take_u16(&mut map, "dataPortCount", source)?;
        let data_ports = match (start, count) {
            (None, None) => None,
            (Some(s), Some(c)) if c > 0 && u32::from(s) + u32::from(c) <= 65536 => Some((s, c)),
            (Some(_), None) => {
                return Err(invalid(
                    source,
                    "dataPortStart needs dataPortCount (as in FDB5)",
                ))
            }
            _ => {
                return Err(invalid(
                    source,
                    "dataPortStart/dataPortCount: an empty or impossible range",
                ))
            }
        };
        map.remove("serverThreaded");
        let mut store_host = None;
        let mut store_port = 0;
        let mut stores = Vec::new();
        if let Some(list) = map.remove("stores") {
            let list = list
                .as_sequence()
                .ok_or_else(|| invalid(source, "stores: expected a list"))?;
            for (i, entry) in list.iter().enumerate() {
                let endpoint = entry
                    .get("default")
                    .and_then(serde_yaml_ng::Value::as_str)
                    .ok_or_else(|| {
                        invalid(source, format!("stores[{i}]: expected default: host:port"))
                    })?;
                let (host, p) = endpoint
                    .rsplit_once(':')
                    .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
                    .ok_or_else(|| {
                        invalid(
                            source,
                            format!("stores[{i}].default: {endpoint:?} is not host:port"),
                        )
                    })?;
                stores.push((host, p));
            }
        }
        let role = if store_only {
            if !stores.is_empty() || serve_store.is_some() {
                return Err(invalid(
                    source,
                    "type: store: stores and serveStore are a catalogue's keys",
                ));
            }
            Role::Store
        } else if serve_store == Some(false) || stores.len() > 1 {
            if stores.is_empty() {
                return Err(invalid(
                    source,
                    "serveStore: false needs the store servers under stores:",
                ));
            }
            if serve_store == Some(true) {
                return Err(invalid(
                    source,
                    "serveStore: true serves one store of its own; stores: names several",
                ));
            }
            Role::Catalogue(std::mem::take(&mut stores))
        } else {
            if let Some((host, p)) = stores.pop() {
                if p == port && port != 0 {
                    return Err(invalid(
                        source,
                        format!(
                            "stores[0].default: port {p} is the catalogue's serverPort: the store \
                             needs a port of its own (FDB5's client deadlocks sharing one \
                             connection between catalogue and store)"
                        ),
                    ));
                }
                store_host = Some(host);
                store_port = p;
            }
            Role::Both
        };
        let max_payload = match map.remove("maxPayload") {
            None => 256 << 20,
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| invalid(source, "maxPayload: expected bytes (at most 4 GiB)"))?,
        };
        let pending_limit = match map.remove("pendingLimit") {
            None => 1 << 30,
            Some(v) => v
                .as_u64()
                .ok_or_else(|| invalid(source, "pendingLimit: expected bytes"))?,
        };
        let limits = Limits::take(&mut map, source)?;
        if limits.connection_memory < u64::from(max_payload)
            || limits.memory < limits.connection_memory
        {
            return Err(invalid(
                source,
                format!(
                    "maxPayload {max_payload} <= connectionMemoryLimit {} <= memoryLimit {} \
                     does not hold: a frame of maxPayload could never be read",
                    limits.connection_memory, limits.memory
                ),
            ));
        }
        let wipe = match map.remove("wipe") {
            None => true,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| invalid(source, "wipe: expected true or false"))?,
        };
        let secret_in_config = map
            .remove("fdbWipeSecret")
            .and_then(|v| v.as_str().map(str::to_string));
        let wipe_secret = std::env::var("FDB_WIPE_SECRET")
            .ok()
            .filter(|s| !s.is_empty())
            .or(secret_in_config);
        map.insert("type".into(), "local".into());
        let rest = serde_yaml_ng::to_string(&map).map_err(|e| invalid(source, e))?;
        let store = Config::from_yaml(&rest, base, source)?;
        Ok(ServeConfig {
            store,
            role,
            port,
            data_ports,
            listen,
            store_host,
            store_port,
            max_payload,
            pending_limit,
            wipe_secret,
            wipe,
            limits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ServeConfig> {
        ServeConfig::from_yaml(
            text,
            Path::new("/tmp"),
            "test.yaml",
            IpAddr::from([127, 0, 0, 1]),
        )
    }

    #[test]
    fn fdb5_catalogue_shape_is_read() {
        let c = parse(
            "type: catalogue\nengine: toc\nstore: file\nserverPort: 37654\ndataPortStart: 37700\n\
             dataPortCount: 20\nstores: [{default: \"localhost:37655\"}]\n\
             spaces: [{handler: Default, roots: [{path: /tmp/r}]}]\n",
        )
        .unwrap();
        assert_eq!(c.port, 37654);
        assert_eq!(c.data_ports, Some((37700, 20)));
        assert_eq!(
            (c.store_host.as_deref(), c.store_port),
            (Some("localhost"), 37655)
        );
    }

    #[test]
    fn roles_follow_type_and_stores() {
        let roots = "spaces: [{handler: Default, roots: [{path: /tmp/r}]}]\n";
        let c = parse(&format!("type: store\nserverPort: 7655\n{roots}")).unwrap();
        assert_eq!(c.role, Role::Store);
        let c = parse(&format!(
            "type: catalogue\nstores: [{{default: \"a:1\"}}, {{default: \"b:2\"}}]\n{roots}"
        ))
        .unwrap();
        assert_eq!(
            c.role,
            Role::Catalogue(vec![("a".into(), 1), ("b".into(), 2)])
        );
        let c = parse(&format!(
            "type: catalogue\nserveStore: false\nstores: [{{default: \"a:1\"}}]\n{roots}"
        ))
        .unwrap();
        assert_eq!(c.role, Role::Catalogue(vec![("a".into(), 1)]));
        let c = parse(&format!("type: catalogue\n{roots}")).unwrap();
        assert_eq!(c.role, Role::Both);
    }

    #[test]
    fn deeply_nested_input_is_refused_in_linear_time() {
        let text = format!("type: catalogue\nstores: {}\n", "[".repeat(400_000));
        let started = std::time::Instant::now();
        let e = parse(&text).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig);
        assert!(e.to_string().contains("test.yaml"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn limits_are_read_and_checked_against_each_other() {
        let roots = "spaces: [{handler: Default, roots: [{path: /tmp/r}]}]\n";
        let c = parse(&format!(
            "maxConnections: 10\nidleTimeout: 5\nwriteTimeout: 7\nmemoryLimit: 536870912\n\
             wipe: false\n{roots}"
        ))
        .unwrap();
        assert_eq!(c.limits.max_connections, 10);
        assert_eq!(c.limits.idle.as_secs(), 5);
        assert_eq!(c.limits.write.as_secs(), 7);
        assert!(!c.wipe);
        let e = parse(&format!("connectionMemoryLimit: 1024\n{roots}")).unwrap_err();
        assert!(e.to_string().contains("maxPayload"), "{e}");
        let e = parse(&format!("frameTimeout: 0\n{roots}")).unwrap_err();
        assert!(e.to_string().contains("frameTimeout"), "{e}");
    }

    #[test]
    fn shapes_not_served_are_refused_by_name() {
        let e = parse("type: store\nstores: [{default: \"a:1\"}]\n").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig);
        assert!(e.to_string().contains("type: store"));
        let e = parse("type: catalogue\nserveStore: false\n").unwrap_err();
        assert!(e.to_string().contains("needs the store servers"), "{e}");
        let e =
            parse("type: catalogue\nserverPort: 1\nstores: [{default: \"h:1\"}]\n").unwrap_err();
        assert!(e.to_string().contains("port of its own"), "{e}");
        let e = parse("dataPortStart: 10\n").unwrap_err();
        assert!(e.to_string().contains("dataPortCount"), "{e}");
    }
}
