//! The `daos:` section of a fieldstore configuration.
//!
//! ```yaml
//! engine: daos
//! store: daos
//! daos:
//!   pool: fieldstore              # label or UUID (default "default", as FDB5)
//!   root_container: fieldstore_root
//!   catalogue: { pool: meta }     # optional: another pool for the catalogue
//!   store: { pool: bulk }         # optional: another pool for field arrays
//!   kv_class: S1                  # object class of KVs
//!   array_class: S1               # object class of field arrays (the paper's best)
//!   oids_per_alloc: 1024          # OIDs reserved per daos_cont_alloc_oids
//!   chunk_size: 1048576           # array chunk size, bytes
//!   container_redundancy: 0       # DAOS_PROP_CO_REDUN_FAC of created containers
//!   writer_lease: 30              # seconds: a writer's process not heard from for two leases
//!                                 # is dead (purge destroys its unflushed arrays)
//!   library: /opt/daos/lib64/libdaos.so.2   # else $FIELDSTORE_DAOS_LIBRARY, else libdaos.so.2
//! ```

use std::path::PathBuf;

use fieldstore_core::{Error, ErrorKind, Result};
use serde_json::Value;

/// `OC_S1`.
pub const OC_S1: u32 = 0x0100_0001;

/// The default chunk size of field arrays (FDB5's): 1 MiB.
pub const DEFAULT_CHUNK: u64 = 1 << 20;

/// The default lease of a writer on a container (`daos.writer_lease`).
pub(crate) const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// The parsed `daos:` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaosConfig {
    /// Pool of the catalogue (root container, dataset KVs).
    pub catalogue_pool: String,
    /// Pool of the field arrays.
    pub store_pool: String,
    /// Label of the root container (in the catalogue pool).
    pub root_container: String,
    /// Object class of KVs (`daos_oclass_id_t`).
    pub kv_class: u32,
    /// Object class of arrays.
    pub array_class: u32,
    /// OIDs reserved per `daos_cont_alloc_oids` call.
    pub oids_per_alloc: u64,
    /// Chunk size of field arrays, in bytes.
    pub chunk_size: u64,
    /// Redundancy factor of the containers fieldstore creates; `None`: the
    /// pool's default.
    pub container_redundancy: Option<u32>,
    /// The library, if the config names one.
    pub library: Option<PathBuf>,
    /// The lease of a writing process on a store container: not renewed
    /// for two leases, it is dead and purge destroys the arrays it left
    /// (`lease`).
    pub writer_lease: std::time::Duration,
}

impl Default for DaosConfig {
    fn default() -> Self {
        DaosConfig {
            catalogue_pool: "default".into(),
            store_pool: "default".into(),
            root_container: "fieldstore_root".into(),
            kv_class: OC_S1,
            array_class: OC_S1,
            oids_per_alloc: 1024,
            chunk_size: DEFAULT_CHUNK,
            container_redundancy: None,
            library: None,
            writer_lease: DEFAULT_LEASE,
        }
    }
}

/// The section's keys as an unknown key's message lists them (each also
/// taken under FDB5's longer name where it has one).
const KEYS: &[&str] = &[
    "pool",
    "root_container",
    "catalogue",
    "store",
    "kv_class",
    "array_class",
    "oids_per_alloc",
    "chunk_size",
    "container_redundancy",
    "library",
    "writer_lease",
];

fn invalid(msg: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidConfig, format!("daos: {msg}"))
}

fn string(v: &Value, key: &str) -> Result<String> {
    v.as_str()
        .map(str::to_string)
        .or_else(|| v.as_u64().map(|n| n.to_string()))
        .ok_or_else(|| invalid(format!("{key} must be a string, not {v}")))
}

fn number(v: &Value, key: &str) -> Result<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| invalid(format!("{key} must be a non-negative integer, not {v}")))
}

impl DaosConfig {
    /// Parse the section (`null`: every default).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidConfig`] naming the key.
    pub fn from_value(section: &Value) -> Result<DaosConfig> {
        let mut c = DaosConfig::default();
        let map = match section {
            Value::Null => return Ok(c),
            Value::Object(m) => m,
            other => {
                return Err(invalid(format!(
                    "the section must be a mapping, not {other}"
                )))
            }
        };
        let mut pool = None;
        let mut cat_pool = None;
        let mut store_pool = None;
        for (k, v) in map {
            match k.as_str() {
                "pool" => pool = Some(string(v, k)?),
                "root_container" | "root_cont" => c.root_container = string(v, k)?,
                "kv_class" => c.kv_class = parse_class(&string(v, k)?)?,
                "array_class" => c.array_class = parse_class(&string(v, k)?)?,
                "oids_per_alloc" | "container_oids_per_alloc" => {
                    c.oids_per_alloc = number(v, k)?;
                    if c.oids_per_alloc == 0 {
                        return Err(invalid("oids_per_alloc must be at least 1"));
                    }
                }
                "chunk_size" | "object_create_chunk_size" => {
                    c.chunk_size = number(v, k)?;
                    if c.chunk_size == 0 {
                        return Err(invalid("chunk_size must be at least 1"));
                    }
                }
                "container_redundancy" => {
                    let rf = number(v, k)?;
                    if rf > 4 {
                        return Err(invalid(format!("container_redundancy {rf} is not 0 to 4")));
                    }
                    c.container_redundancy = Some(rf as u32);
                }
                "library" => c.library = Some(PathBuf::from(string(v, k)?)),
                "writer_lease" => {
                    let secs = number(v, k)?;
                    if !(1..=3600).contains(&secs) {
                        return Err(invalid(format!(
                            "writer_lease {secs} is not 1 to 3600 seconds"
                        )));
                    }
                    c.writer_lease = std::time::Duration::from_secs(secs);
                }
                "catalogue" | "store" => {
                    let Value::Object(sub) = v else {
                        return Err(invalid(format!("{k} must be a mapping")));
                    };
                    for (sk, sv) in sub {
                        match (k.as_str(), sk.as_str()) {
                            ("catalogue", "pool") => cat_pool = Some(string(sv, sk)?),
                            ("store", "pool") => store_pool = Some(string(sv, sk)?),
                            ("catalogue", "root_container" | "root_cont") => {
                                c.root_container = string(sv, sk)?;
                            }
                            _ => return Err(invalid(format!("unknown key {k}.{sk}"))),
                        }
                    }
                }
                other => {
                    return Err(invalid(format!(
                        "unknown key '{other}' (expected one of {})",
                        KEYS.join(", ")
                    )))
                }
            }
        }
        let pool = pool.unwrap_or(c.catalogue_pool.clone());
        c.catalogue_pool = cat_pool.unwrap_or(pool.clone());
        c.store_pool = store_pool.unwrap_or(pool);
        if !label_is_valid(&c.root_container) {
            return Err(invalid(format!(
                "root_container '{}' is not a valid DAOS label (1 to 127 of A-Z a-z 0-9 : . _ -)",
                c.root_container
            )));
        }
        Ok(c)
    }
}

/// `daos_label_is_valid`: 1 to 127 characters of `[A-Za-z0-9:._-]`, not
/// shaped like a UUID.
pub fn label_is_valid(label: &str) -> bool {
    let b = label.as_bytes();
    let uuid_shaped = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    (1..=127).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b':' | b'.' | b'_' | b'-'))
        && !uuid_shaped
}

/// Redundancy ords by name (`enum daos_obj_redun`).
const EC: &[(&str, u32)] = &[
    ("2P1", 32),
    ("2P2", 33),
    ("4P1", 34),
    ("4P2", 35),
    ("8P1", 36),
    ("8P2", 37),
    ("16P1", 38),
    ("16P2", 39),
    ("4P3", 40),
    ("8P3", 41),
    ("16P3", 42),
];

fn groups(g: &str, name: &str) -> Result<u32> {
    if g == "X" {
        return Ok(0xffff);
    }
    match g.parse::<u32>() {
        Ok(n) if (1..0xffff).contains(&n) => Ok(n),
        _ => Err(invalid(format!(
            "object class '{name}': bad group count '{g}'"
        ))),
    }
}

/// Parse an object class name: `S1`, `S2`, …, `SX`, `RP_2G1`, `RP_3GX`,
/// `EC_2P1G1`, `EC_4P2GX`, … (an `OC_` prefix is allowed), `UNKNOWN` (let
/// DAOS choose from the container's redundancy), or a number.
///
/// # Errors
/// [`ErrorKind::InvalidConfig`] for anything else.
pub fn parse_class(name: &str) -> Result<u32> {
    let n = name.trim();
    let upper = n.to_ascii_uppercase();
    let s = upper.strip_prefix("OC_").unwrap_or(&upper);
    if let Ok(v) = n.parse::<u32>() {
        return Ok(v);
    }
    if s == "UNKNOWN" {
        return Ok(0);
    }
    if let Some(g) = s.strip_prefix('S') {
        return Ok((1 << 24) | groups(g, name)?);
    }
    if let Some(rest) = s.strip_prefix("RP_") {
        let (r, g) = rest
            .split_once('G')
            .ok_or_else(|| invalid(format!("object class '{name}': expected RP_<n>G<groups>")))?;
        let ord = match r {
            "2" => 8,
            "3" => 9,
            "4" => 10,
            _ => {
                return Err(invalid(format!(
                    "object class '{name}': replication {r} is not supported (2, 3 or 4)"
                )))
            }
        };
        return Ok((ord << 24) | groups(g, name)?);
    }
    if let Some(rest) = s.strip_prefix("EC_") {
        let (kp, g) = rest.split_once('G').ok_or_else(|| {
            invalid(format!(
                "object class '{name}': expected EC_<k>P<p>G<groups>"
            ))
        })?;
        let ord = EC
            .iter()
            .find(|(n, _)| *n == kp)
            .map(|(_, o)| *o)
            .ok_or_else(|| invalid(format!("object class '{name}': unknown erasure code {kp}")))?;
        return Ok((ord << 24) | groups(g, name)?);
    }
    Err(invalid(format!(
        "unknown object class '{name}' (expected S1, S2, SX, RP_2G1, RP_3GX, EC_2P1G1, …)"
    )))
}

/// The name of a class id, for messages (`S1`, `RP_2GX`, `0x…`).
pub fn class_name(class: u32) -> String {
    let ord = class >> 24;
    let g = class & 0xffff;
    let gs = if g == 0xffff {
        "X".to_string()
    } else {
        g.to_string()
    };
    match ord {
        0 => "UNKNOWN".into(),
        1 => format!("S{gs}"),
        8..=10 => format!("RP_{}G{gs}", ord - 6),
        _ => match EC.iter().find(|(_, o)| *o == ord) {
            Some((n, _)) => format!("EC_{n}G{gs}"),
            None => format!("{class:#010x}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_parse_to_daos_values() {
        assert_eq!(parse_class("S1").unwrap(), 0x0100_0001);
        assert_eq!(parse_class("OC_SX").unwrap(), 0x0100_ffff);
        assert_eq!(parse_class("s2").unwrap(), 0x0100_0002);
        assert_eq!(parse_class("RP_2G1").unwrap(), 0x0800_0001);
        assert_eq!(parse_class("RP_3GX").unwrap(), 0x0900_ffff);
        assert_eq!(parse_class("EC_2P1G1").unwrap(), 0x2000_0001);
        assert_eq!(parse_class("EC_16P2GX").unwrap(), 0x2700_ffff);
        assert_eq!(parse_class("UNKNOWN").unwrap(), 0);
        for bad in ["S0", "RP_5G1", "EC_3P1G1", "Q1", "SY"] {
            let e = parse_class(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{bad}");
            assert!(e.to_string().contains(bad), "{e}");
        }
        for c in ["S1", "SX", "RP_2G4", "EC_4P2GX"] {
            assert_eq!(class_name(parse_class(c).unwrap()), c);
        }
    }

    #[test]
    fn section_defaults_overrides_and_errors() {
        let c = DaosConfig::from_value(&Value::Null).unwrap();
        assert_eq!(c, DaosConfig::default());
        let v: Value = serde_json::json!({
            "pool": "p", "root_container": "r", "store": {"pool": "bulk"},
            "kv_class": "SX", "array_class": "S2", "oids_per_alloc": 10,
            "chunk_size": "65536", "container_redundancy": 0
        });
        let c = DaosConfig::from_value(&v).unwrap();
        assert_eq!(c.catalogue_pool, "p");
        assert_eq!(c.store_pool, "bulk");
        assert_eq!(c.root_container, "r");
        assert_eq!(c.kv_class, 0x0100_ffff);
        assert_eq!(c.array_class, 0x0100_0002);
        assert_eq!(c.oids_per_alloc, 10);
        assert_eq!(c.chunk_size, 65536);
        assert_eq!(c.container_redundancy, Some(0));
        // Every key the message offers is taken.
        let e = DaosConfig::from_value(&serde_json::json!({"pools": "p"})).unwrap_err();
        for k in KEYS {
            assert!(e.to_string().contains(k), "{e} should offer {k}");
            let value = match *k {
                "catalogue" | "store" => serde_json::json!({}),
                "kv_class" | "array_class" => serde_json::json!("S1"),
                _ => serde_json::json!("12"),
            };
            if let Err(e) = DaosConfig::from_value(&serde_json::json!({ *k: value })) {
                assert!(!e.to_string().contains("unknown key"), "{k}: {e}");
            }
        }
        for (bad, word) in [
            (serde_json::json!({"pools": "p"}), "pools"),
            (serde_json::json!({"root_container": "a/b"}), "a/b"),
            (serde_json::json!({"oids_per_alloc": 0}), "oids_per_alloc"),
            (serde_json::json!({"store": {"root": 1}}), "store.root"),
            (serde_json::json!({"container_redundancy": 7}), "7"),
        ] {
            let e = DaosConfig::from_value(&bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidConfig);
            assert!(e.to_string().contains(word), "{e} should name {word}");
        }
    }
}
