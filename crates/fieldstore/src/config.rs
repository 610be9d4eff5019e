//! Configuration in FDB5's YAML shape.
//!
//! ```yaml
//! type: local
//! engine: toc            # catalogue: toc | memory
//! store: file            # store: file | memory
//! schema: ./schema       # relative paths are relative to the config file
//! spaces:
//!   - handler: Default
//!     roots:
//!       - path: ./root
//! ```
//!
//! With no configuration at all ([`Config::from_env`]): `FIELDSTORE_CONFIG`
//! names a config file; otherwise an embedded POSIX store lives under
//! `FIELDSTORE_ROOT`, or `./fieldstore-data`, with ECMWF's schema built in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fieldstore_core::{Error, ErrorKind, Result, Schema};
use serde::Deserialize;

/// Which catalogue (`engine:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Engine {
    /// The POSIX table-of-contents catalogue.
    Toc,
    /// In-process memory (tests, examples).
    Memory,
    /// DAOS key-value objects (crate `fieldstore-daos`, feature `daos`).
    Daos,
    /// Ceph RADOS omaps (crate `fieldstore-rados`, feature `rados`).
    Rados,
}

/// Which store (`store:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreKind {
    /// POSIX files.
    File,
    /// In-process memory.
    Memory,
    /// DAOS arrays (crate `fieldstore-daos`, feature `daos`).
    Daos,
    /// Ceph RADOS objects (crate `fieldstore-rados`, feature `rados`).
    Rados,
}

/// A root directory of the POSIX backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The directory.
    pub path: PathBuf,
    /// New datasets may be created here.
    pub writable: bool,
    /// Datasets here are listed and read.
    pub visit: bool,
    /// Create the directory when the store is opened, if missing (the
    /// embedded default does; configured roots must exist).
    pub create: bool,
}

impl Root {
    /// A writable, visited root that must exist.
    pub fn new(path: impl Into<PathBuf>) -> Root {
        Root {
            path: path.into(),
            writable: true,
            visit: true,
            create: false,
        }
    }
}

/// An opened configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The catalogue.
    pub engine: Engine,
    /// The store.
    pub store: StoreKind,
    /// The schema (ECMWF's when the config names none).
    pub schema: Schema,
    /// POSIX roots, in order; new datasets go to the first writable one.
    pub roots: Vec<Root>,
    /// Where the configuration came from, for messages.
    pub source: String,
    /// Backend sections (`daos:`, `rados:`, `file:`), as given; each
    /// backend reads its own.
    pub backends: BTreeMap<String, serde_json::Value>,
}

impl Config {
    /// The section a backend reads (`daos`, `rados`, `file`), or null.
    pub fn backend(&self, name: &str) -> &serde_json::Value {
        static NULL: serde_json::Value = serde_json::Value::Null;
        self.backends.get(name).unwrap_or(&NULL)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    engine: Option<String>,
    #[serde(default)]
    store: Option<String>,
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    spaces: Vec<RawSpace>,
    #[serde(default)]
    daos: Option<serde_json::Value>,
    #[serde(default)]
    rados: Option<serde_json::Value>,
    #[serde(default)]
    file: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpace {
    #[serde(default)]
    handler: Option<String>,
    #[serde(default)]
    roots: Vec<RawRoot>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoot {
    path: String,
    #[serde(default = "yes")]
    writable: bool,
    #[serde(default = "yes")]
    visit: bool,
}

fn yes() -> bool {
    true
}

fn invalid(source: &str, message: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidConfig, format!("{source}: {message}"))
}

impl Config {
    /// The embedded default: a POSIX store under `root` with ECMWF's schema.
    pub fn embedded(root: impl Into<PathBuf>) -> Config {
        let root = root.into();
        Config {
            engine: Engine::Toc,
            store: StoreKind::File,
            schema: Schema::ecmwf(),
            source: format!("embedded store at {}", root.display()),
            backends: BTreeMap::new(),
            roots: vec![Root {
                create: true,
                ..Root::new(root)
            }],
        }
    }

    /// An in-memory store with `schema`.
    pub fn memory(schema: Schema) -> Config {
        Config {
            engine: Engine::Memory,
            store: StoreKind::Memory,
            schema,
            roots: Vec::new(),
            source: "in-memory store".to_string(),
            backends: BTreeMap::new(),
        }
    }

    /// Parse YAML; relative paths are resolved against `base`. `source`
    /// names the text in messages (a path).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidConfig`] naming the problem and where.
    pub fn from_yaml(text: &str, base: &Path, source: &str) -> Result<Config> {
        let raw: RawConfig = serde_yaml_ng::from_str(text).map_err(|e| invalid(source, e))?;
        if let Some(kind) = raw.kind.as_deref() {
            if kind != "local" {
                return Err(invalid(
                    source,
                    format!("type '{kind}' is not supported (expected 'local')"),
                ));
            }
        }
        let engine = match raw.engine.as_deref().unwrap_or("toc") {
            "toc" => Engine::Toc,
            "memory" => Engine::Memory,
            "daos" => Engine::Daos,
            "rados" => Engine::Rados,
            other => {
                return Err(invalid(
                    source,
                    format!(
                        "engine '{other}' is not supported (expected toc, daos, rados or memory)"
                    ),
                ))
            }
        };
        let default_store = match engine {
            Engine::Toc => "file",
            Engine::Memory => "memory",
            Engine::Daos => "daos",
            Engine::Rados => "rados",
        };
        let store = match raw.store.as_deref().unwrap_or(default_store) {
            "file" => StoreKind::File,
            "memory" => StoreKind::Memory,
            "daos" => StoreKind::Daos,
            "rados" => StoreKind::Rados,
            other => {
                return Err(invalid(
                    source,
                    format!(
                        "store '{other}' is not supported (expected file, daos, rados or memory)"
                    ),
                ))
            }
        };
        let schema = match &raw.schema {
            None => Schema::ecmwf(),
            Some(path) => {
                let path = base.join(path);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| Error::io(format!("{source}: schema {}", path.display()), e))
                    .map_err(|e| Error::new(ErrorKind::InvalidConfig, e.message().to_string()))?;
                Schema::parse(&path.display().to_string(), &text)?
            }
        };
        let mut roots = Vec::new();
        for space in raw.spaces {
            if let Some(h) = space.handler.as_deref() {
                if h != "Default" {
                    return Err(invalid(
                        source,
                        format!("space handler '{h}' is not supported (expected Default)"),
                    ));
                }
            }
            for r in space.roots {
                roots.push(Root {
                    path: base.join(r.path),
                    writable: r.writable,
                    visit: r.visit,
                    create: false,
                });
            }
        }
        let mut backends = BTreeMap::new();
        if let Some(v) = raw.daos {
            backends.insert("daos".to_string(), v);
        }
        if let Some(v) = raw.rados {
            backends.insert("rados".to_string(), v);
        }
        if let Some(v) = raw.file {
            backends.insert("file".to_string(), v);
        }
        if (engine == Engine::Toc || store == StoreKind::File) && roots.is_empty() {
            return Err(invalid(
                source,
                "engine 'toc' and store 'file' need at least one root under 'spaces'",
            ));
        }
        Ok(Config {
            engine,
            store,
            schema,
            roots,
            source: source.to_string(),
            backends,
        })
    }

    /// Read a YAML config file.
    ///
    /// # Errors
    /// `NotFound`/`PermissionDenied` if it cannot be read; `InvalidConfig`.
    pub fn from_file(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("config {}", path.display()), e))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Config::from_yaml(&text, base, &path.display().to_string())
    }

    /// The configuration the tools use when given none: the file named by
    /// `FIELDSTORE_CONFIG`, else the embedded store under `FIELDSTORE_ROOT`
    /// or `./fieldstore-data` (created if missing).
    ///
    /// # Errors
    /// As [`Config::from_file`]; I/O errors creating the embedded root.
    pub fn from_env() -> Result<Config> {
        if let Some(path) = std::env::var_os("FIELDSTORE_CONFIG").filter(|p| !p.is_empty()) {
            return Config::from_file(Path::new(&path));
        }
        let root = std::env::var_os("FIELDSTORE_ROOT")
            .filter(|p| !p.is_empty())
            .map_or_else(|| PathBuf::from("fieldstore-data"), PathBuf::from);
        Ok(Config::embedded(root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fdb5_shape_and_resolves_paths() {
        let c = Config::from_yaml(
            "type: local\nengine: toc\nstore: file\nspaces:\n- handler: Default\n  roots:\n  - path: ./root\n",
            Path::new("/etc/fs"),
            "c.yaml",
        )
        .unwrap();
        assert_eq!(c.engine, Engine::Toc);
        assert_eq!(c.roots[0].path, Path::new("/etc/fs/./root"));
    }

    #[test]
    fn bad_configs_are_named() {
        let cases = [
            (
                "engine: lmdb\n",
                "c.yaml: engine 'lmdb' is not supported (expected toc, daos, rados or memory)",
            ),
            (
                "type: remote\n",
                "c.yaml: type 'remote' is not supported (expected 'local')",
            ),
            (
                "engine: toc\n",
                "c.yaml: engine 'toc' and store 'file' need at least one root under 'spaces'",
            ),
        ];
        for (text, want) in cases {
            let e = Config::from_yaml(text, Path::new("."), "c.yaml").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidConfig);
            assert_eq!(e.to_string(), want);
        }
        let e = Config::from_yaml("engine: [\n", Path::new("."), "c.yaml").unwrap_err();
        assert!(e.to_string().starts_with("c.yaml: "), "{e}");
        let e = Config::from_yaml("enigne: toc\n", Path::new("."), "c.yaml").unwrap_err();
        assert!(e.to_string().contains("unknown field `enigne`"), "{e}");
    }
}
