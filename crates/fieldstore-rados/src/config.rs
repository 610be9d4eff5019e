//! The `rados:` section of a fieldstore configuration.
//!
//! ```yaml
//! engine: rados
//! store: rados
//! rados:
//!   conf: /etc/ceph/ceph.conf   # default: librados's search ($CEPH_CONF, /etc/ceph/ceph.conf, …)
//!   pool: fieldstore            # required; must exist
//!   namespace: ""               # default: the pool's default namespace
//!   user: admin                 # client name, default admin (client.admin)
//!   cluster: ceph               # cluster name, default ceph
//!   timeout: 60                 # seconds before a mount, mon or OSD op fails (Unavailable)
//!   object_size: 67108864       # data objects roll over past this size (default 64 MiB,
//!                               # capped at the cluster's osd_max_object_size)
//!   in_flight: 16               # asynchronous writes in flight per writer
//!   log_segment_size: 67108864  # a dataset's log continues in a new object past this
//!   notify: true                # writers notify watchers (rados watch/notify) after each flush
//!   writer_lease: 30            # seconds (at least 12): a writer silent this long counts as
//!                               # dead (purge reclaims its objects) and its flushes fail
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use fieldstore_core::{Error, ErrorKind, Result};
use serde_json::Value;

use crate::rados::{Cluster, ClusterSpec, Pool};

/// The parsed `rados:` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RadosConfig {
    /// Path of `ceph.conf`; `None` for librados's default search.
    pub conf: Option<String>,
    /// The pool (must exist).
    pub pool: String,
    /// The namespace within the pool ("" is the default namespace).
    pub namespace: String,
    /// The client name, without `client.`.
    pub user: String,
    /// The cluster name.
    pub cluster: String,
    /// Seconds before a mount, monitor or OSD operation gives up.
    pub timeout_secs: u32,
    /// Data objects roll over to a new object past this many bytes.
    pub object_size: u64,
    /// Asynchronous writes in flight per store writer.
    pub in_flight: usize,
    /// A dataset's log continues in a new segment object past this size.
    pub log_segment_size: u64,
    /// Writers send an asynchronous notify to the dataset's head object
    /// after each flush (and to the root when they register a dataset), so
    /// that watchers wake at once; without it watchers see flushes within
    /// their 50 ms poll.
    pub notify: bool,
    /// A store writer whose client the cluster has not heard from for this
    /// long counts as dead: purge reclaims the objects it left, and its
    /// own flushes fail (`liveness`).
    pub writer_lease: std::time::Duration,
}

/// The shortest `writer_lease`.
const MIN_LEASE_SECS: u64 = 12;

const KEYS: &[&str] = &[
    "conf",
    "pool",
    "namespace",
    "user",
    "cluster",
    "timeout",
    "object_size",
    "in_flight",
    "log_segment_size",
    "notify",
    "writer_lease",
];

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidConfig, message.into())
}

impl RadosConfig {
    /// A configuration for `pool` with every default.
    pub fn new(pool: impl Into<String>) -> RadosConfig {
        RadosConfig {
            conf: None,
            pool: pool.into(),
            namespace: String::new(),
            user: "admin".to_string(),
            cluster: "ceph".to_string(),
            timeout_secs: 60,
            object_size: 64 << 20,
            in_flight: 16,
            log_segment_size: 64 << 20,
            notify: true,
            writer_lease: crate::liveness::DEFAULT_LEASE,
        }
    }

    /// Parse the `rados:` section (`config.backend("rados")`).
    ///
    /// # Errors
    /// `InvalidConfig` naming the key that is missing, unknown or of the
    /// wrong type.
    pub fn from_value(v: &Value) -> Result<RadosConfig> {
        let map = match v {
            Value::Object(m) => m,
            Value::Null => {
                return Err(invalid(
                    "engine/store 'rados' needs a 'rados:' section with at least 'pool'",
                ))
            }
            _ => return Err(invalid("the 'rados:' section must be a mapping")),
        };
        if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "rados: unknown key '{k}' (expected one of {})",
                KEYS.join(", ")
            )));
        }
        let text = |k: &str| -> Result<Option<String>> {
            match map.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(Value::Number(n)) => Ok(Some(n.to_string())),
                Some(other) => Err(invalid(format!("rados.{k} must be a string, not {other}"))),
            }
        };
        let number = |k: &str, max: u64| -> Result<Option<u64>> {
            match map.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => match n.as_u64() {
                    Some(x) if x > 0 && x <= max => Ok(Some(x)),
                    _ => Err(invalid(format!(
                        "rados.{k} must be a whole number from 1 to {max}, not {n}"
                    ))),
                },
                Some(other) => Err(invalid(format!("rados.{k} must be a number, not {other}"))),
            }
        };
        let pool = text("pool")?
            .filter(|p| !p.is_empty())
            .ok_or_else(|| invalid("rados.pool is required"))?;
        let mut c = RadosConfig::new(pool);
        c.conf = text("conf")?.filter(|s| !s.is_empty());
        c.namespace = text("namespace")?.unwrap_or_default();
        if let Some(u) = text("user")? {
            c.user = u.strip_prefix("client.").unwrap_or(&u).to_string();
        }
        c.cluster = text("cluster")?.unwrap_or(c.cluster);
        c.timeout_secs = number("timeout", 3600)?.map_or(c.timeout_secs, |t| t as u32);
        c.object_size = number("object_size", 1 << 40)?.map_or(c.object_size, |s| s.max(1 << 20));
        if let Some(s) = number("log_segment_size", 1 << 40)? {
            c.log_segment_size = s.max(4096);
        }
        if let Some(n) = number("writer_lease", 3600)? {
            // librados pings a watch every 5 s (objecter_tick_interval); a
            // flush waits until the last ping is under half a lease old, so
            // a lease under two ticks and a margin would make flushes wait.
            if n < MIN_LEASE_SECS {
                return Err(invalid(format!(
                    "rados.writer_lease must be at least {MIN_LEASE_SECS} seconds (librados \
                     confirms a watch every 5 s), not {n}"
                )));
            }
            c.writer_lease = std::time::Duration::from_secs(n);
        }
        c.in_flight = number("in_flight", 1024)?.map_or(c.in_flight, |n| n as usize);
        match map.get("notify") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => c.notify = *b,
            Some(other) => {
                return Err(invalid(format!(
                    "rados.notify must be true or false, not {other}"
                )))
            }
        }
        Ok(c)
    }

    fn spec(&self) -> ClusterSpec {
        ClusterSpec {
            conf: self.conf.clone(),
            cluster: self.cluster.clone(),
            user: format!("client.{}", self.user),
            timeout_secs: self.timeout_secs,
        }
    }

    /// Connect (or reuse this process's connection to the same cluster)
    /// and open the pool and namespace.
    pub(crate) fn open_pool(&self) -> Result<Pool> {
        Pool::open(connect(&self.spec())?, &self.pool, &self.namespace)
    }
}

/// One connection per cluster and process, shared by every catalogue and
/// store that names it, closed when the last one goes.
pub(crate) fn connect(spec: &ClusterSpec) -> Result<Arc<Cluster>> {
    static CLUSTERS: Mutex<Option<HashMap<ClusterSpec, Weak<Cluster>>>> = Mutex::new(None);
    let mut guard = CLUSTERS.lock().unwrap_or_else(|p| p.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(c) = map.get(spec).and_then(Weak::upgrade) {
        return Ok(c);
    }
    let c = Arc::new(Cluster::connect(spec)?);
    map.retain(|_, w| w.strong_count() > 0);
    map.insert(spec.clone(), Arc::downgrade(&c));
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_defaults() {
        let v: Value = serde_json::json!({"pool": "p", "conf": "/x/ceph.conf", "user": "client.fs", "timeout": 5});
        let c = RadosConfig::from_value(&v).unwrap();
        assert_eq!(c.pool, "p");
        assert_eq!(c.conf.as_deref(), Some("/x/ceph.conf"));
        assert_eq!(c.user, "fs");
        assert_eq!(c.timeout_secs, 5);
        assert_eq!(c.namespace, "");
        assert_eq!(c.object_size, 64 << 20);
        assert!(c.notify, "writers notify by default");
        assert_eq!(c.writer_lease, std::time::Duration::from_secs(30));
        let short = RadosConfig::from_value(&serde_json::json!({"pool": "p", "writer_lease": 12}));
        assert_eq!(short.unwrap().writer_lease.as_secs(), 12);
        let quiet = RadosConfig::from_value(&serde_json::json!({"pool": "p", "notify": false}));
        assert!(!quiet.unwrap().notify);
    }

    #[test]
    fn bad_sections_are_named() {
        let cases = [
            (serde_json::json!(null), "needs a 'rados:' section"),
            (serde_json::json!({"conf": "/x"}), "rados.pool is required"),
            (
                serde_json::json!({"pool": "p", "pol": 1}),
                "unknown key 'pol'",
            ),
            (
                serde_json::json!({"pool": "p", "timeout": -1}),
                "rados.timeout must be a whole number",
            ),
            (
                serde_json::json!({"pool": ["p"]}),
                "rados.pool must be a string",
            ),
            (
                serde_json::json!({"pool": "p", "notify": "yes"}),
                "rados.notify must be true or false",
            ),
            (
                serde_json::json!({"pool": "p", "writer_lease": 5}),
                "rados.writer_lease must be at least 12 seconds",
            ),
        ];
        for (v, want) in cases {
            let e = RadosConfig::from_value(&v).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidConfig);
            assert!(e.to_string().contains(want), "{v}: {e}");
        }
    }
}
