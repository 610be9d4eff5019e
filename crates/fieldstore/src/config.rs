//! Configuration in FDB5's YAML shape.
//!
//! ```yaml
//! type: local
//! engine: toc            # catalogue: toc | memory
//! store: file            # store: file | memory
//! schema: ./schema       # relative paths are relative to the config file
//! spaces:
//!   - regex: '^od:'        # on the dataset key's values joined by ':'
//!     handler: Default     # or expver, envvar, LeastUsed, RoundRobin, …
//!     roots:
//!       - path: ./root
//!       - {path: ./old, writable: false, wipe: false}
//! ```
//!
//! Every key, what it does and where it differs from FDB5: `docs/config.md`.
//!
//! With no configuration at all ([`Config::from_env`]): `FIELDSTORE_CONFIG`
//! names a config file; otherwise an embedded POSIX store lives under
//! `FIELDSTORE_ROOT`, or `./fieldstore-data`, with ECMWF's schema built in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fieldstore_core::{Error, ErrorKind, Key, Result, Schema};
use serde::Deserialize;

pub use crate::root::Root;
pub use crate::text_file::{read_text_file, TEXT_FILE_LIMIT};
pub use crate::yaml::{check_yaml, parse_yaml, parse_yaml_as, YAML_MAX_BYTES, YAML_MAX_DEPTH};

use crate::placement::{self, Placement, Space};
use crate::routing::{self, Lane, Matcher};
use crate::yaml::invalid;

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
    /// S3 objects, one per log record (crate `fieldstore-s3`, feature `s3`).
    S3,
    /// `type: select`: the lanes' catalogues ([`Config::lanes`]).
    Select,
    /// `type: remote`: a catalogue server (FDB5's `fdb-server` or
    /// `fieldstore serve`), answering whole requests.
    Remote,
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
    /// S3 objects (crate `fieldstore-s3`, feature `s3`).
    S3,
    /// `type: select`: the lanes' stores ([`Config::lanes`]).
    Select,
    /// `type: remote`: the store servers the catalogue server names.
    Remote,
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
    /// POSIX roots of every space, in configuration order (each names its
    /// space); readers visit those with `visit`.
    pub roots: Vec<Root>,
    /// The `spaces`: which datasets each owns and how it places them
    /// (empty: one `Default` space of every root).
    pub spaces: Vec<Space>,
    /// Where the configuration came from, for messages.
    pub source: String,
    /// Backend sections (`daos:`, `rados:`, `s3:`, `file:`), as given; each
    /// backend reads its own.
    pub backends: BTreeMap<String, serde_json::Value>,
    /// `type: select`: the sub-stores, in order (`routing.rs`); empty for
    /// a local store.
    pub lanes: Vec<Lane<Config>>,
    /// `archive-defaults:`: keywords and values given to a GRIB message's
    /// MARS key where ecCodes gives the keyword none (GRIB from other
    /// centres has no `class`), before the schema splits it; empty unless
    /// configured.
    pub archive_defaults: Key,
}

impl Config {
    /// The section a backend reads (`daos`, `rados`, `file`), or null.
    pub fn backend(&self, name: &str) -> &serde_json::Value {
        static NULL: serde_json::Value = serde_json::Value::Null;
        self.backends.get(name).unwrap_or(&NULL)
    }

    /// Where new datasets go: the spaces over the roots.
    pub fn placement(&self) -> Placement {
        Placement::new(&self.spaces, &self.roots)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(rename = "type")]
    kind: Option<String>,
    engine: Option<String>,
    store: Option<String>,
    schema: Option<String>,
    fdb_home: Option<String>,
    #[serde(default)]
    spaces: Vec<RawSpace>,
    daos: Option<serde_json::Value>,
    rados: Option<serde_json::Value>,
    s3: Option<serde_json::Value>,
    file: Option<serde_json::Value>,
    #[serde(rename = "archive-defaults")]
    archive_defaults: Option<serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpace {
    name: Option<String>,
    regex: Option<String>,
    handler: Option<String>,
    #[serde(default)]
    roots: Vec<RawRoot>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoot {
    path: String,
    /// Accepted for FDB5's configs; fieldstore names roots by path.
    #[allow(dead_code)]
    name: Option<String>,
    writable: Option<bool>,
    visit: Option<bool>,
    list: Option<bool>,
    retrieve: Option<bool>,
    archive: Option<bool>,
    wipe: Option<bool>,
}

/// `archive-defaults:`, a mapping of keywords to scalar values (FDB5's
/// YAML shape), as a key; absent, an empty one.
fn archive_defaults(value: Option<&serde_yaml_ng::Value>, source: &str) -> Result<Key> {
    use serde_yaml_ng::Value;
    let mut key = Key::new();
    let Some(value) = value else {
        return Ok(key);
    };
    let Value::Mapping(map) = value else {
        return Err(invalid(
            source,
            "archive-defaults: expected a mapping of keywords to values (class: od)",
        ));
    };
    for (k, v) in map {
        let keyword = k.as_str().ok_or_else(|| {
            invalid(
                source,
                format!("archive-defaults: keyword {k:?} is not a string"),
            )
        })?;
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => {
                return Err(invalid(
                    source,
                    format!("archive-defaults.{keyword}: expected one value, not {other:?}"),
                ))
            }
        };
        key.push(keyword, text)
            .map_err(|e| invalid(source, format!("archive-defaults.{keyword}: {e}")))?;
    }
    Ok(key)
}

/// The schema a config names (`schema:`), or ECMWF's.
fn schema_at(path: Option<&str>, base: &Path, source: &str) -> Result<Schema> {
    match path {
        None => Ok(Schema::ecmwf()),
        Some(path) => {
            let path = base.join(path);
            let text = read_text_file(&path, &format!("{source}: schema {}", path.display()))
                .map_err(|e| Error::new(ErrorKind::InvalidConfig, e.message().to_string()))?;
            Ok(Schema::parse(&path.display().to_string(), &text)?)
        }
    }
}

/// The schema each of a select configuration's `fdbs` names (`schema:`,
/// relative to `base`), if it names one.
fn lane_schemas(
    fdbs: &[serde_yaml_ng::Value],
    base: &Path,
    source: &str,
) -> Result<Vec<Option<Schema>>> {
    let own = |(i, lane): (usize, &serde_yaml_ng::Value)| match lane.get("schema") {
        None => Ok(None),
        Some(serde_yaml_ng::Value::String(path)) => schema_at(Some(path), base, source).map(Some),
        Some(_) => Err(invalid(
            source,
            format!("fdbs[{i}].schema: expected a path"),
        )),
    };
    fdbs.iter().enumerate().map(own).collect()
}

/// The keyword lists of a schema's first-level rules, in order: what names
/// its datasets.
fn first_level(schema: &Schema) -> Vec<Vec<String>> {
    let rules = schema.rules().iter();
    rules
        .map(|r| r.keywords().map(str::to_string).collect())
        .collect()
}

/// Whether a sub-store's own schema names datasets as the select
/// configuration's does (the same first-level keyword lists): a dataset is
/// routed, found and listed by its first level, one for every sub-store,
/// while each sub-store splits below it with its own schema (stored with
/// each dataset it creates, `dataset_schema.rs`).
///
/// # Errors
/// The two first levels, when they differ.
fn same_first_level(own: &Schema, naming: &Schema) -> std::result::Result<(), String> {
    let (mine, theirs) = (first_level(own), first_level(naming));
    if mine == theirs {
        return Ok(());
    }
    let show = |l: &[Vec<String>]| {
        l.iter()
            .map(|r| format!("[{}]", r.join(", ")))
            .collect::<Vec<_>>()
            .join(" ")
    };
    Err(format!(
        "its first-level rules {} differ from those naming the select configuration's datasets \
         {}: sub-stores' schemas may differ below the first level only (fieldstore routes, finds \
         and lists whole datasets by it)",
        show(&mine),
        show(&theirs)
    ))
}

/// `path` without `.` components and trailing slashes, for comparing
/// roots before they exist (`..` is left alone: it may cross a symbolic
/// link; the backend compares canonical paths when it opens the roots).
fn lexical(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}

/// The spaces and their roots, checked before anything is opened: each
/// regex compiles, each handler exists (and has what it needs), no space
/// comes after one that takes every dataset it could take, no root is
/// listed twice, and every space has a root. Errors name the key path in
/// the YAML (`spaces[1].roots[0].path`).
fn spaces_of(
    raw: Vec<RawSpace>,
    base: &Path,
    fdb_home: Option<&Path>,
    source: &str,
) -> Result<(Vec<Space>, Vec<Root>)> {
    let mut spaces: Vec<Space> = Vec::new();
    let mut roots: Vec<Root> = Vec::new();
    let mut root_at: Vec<String> = Vec::new();
    for (i, s) in raw.into_iter().enumerate() {
        let at = format!("spaces[{i}]");
        let regex_text = s.regex.clone().unwrap_or_else(|| ".*".to_string());
        let regex = if regex_text.is_empty() || regex_text == ".*" {
            None
        } else {
            Some(regex::Regex::new(&regex_text).map_err(|e| {
                invalid(
                    source,
                    format!("{at}.regex: '{regex_text}' does not compile: {e}"),
                )
            })?)
        };
        let name = s.handler.as_deref().unwrap_or("Default");
        let handler = placement::handler(name, fdb_home)
            .map_err(|e| invalid(source, format!("{at}.handler: {}", e.message())))?
            .ok_or_else(|| {
                invalid(
                    source,
                    format!(
                        "{at}.handler: unknown handler '{name}' (expected one of {})",
                        placement::HANDLERS.join(", ")
                    ),
                )
            })?;
        if let Some((j, earlier)) = spaces
            .iter()
            .enumerate()
            .find(|(_, e)| e.regex.is_none() || e.regex_text == regex_text)
        {
            return Err(invalid(
                source,
                format!(
                    "{at} overlaps spaces[{j}]: spaces[{j}].regex '{}' matches every dataset \
                     {at}.regex '{regex_text}' matches, and the first space that matches a \
                     dataset owns it, so {at} would never hold one",
                    earlier.regex_text
                ),
            ));
        }
        if s.roots.is_empty() {
            return Err(invalid(source, format!("{at}.roots: a space needs a root")));
        }
        for (k, r) in s.roots.into_iter().enumerate() {
            let rat = format!("{at}.roots[{k}]");
            if r.path.is_empty() {
                return Err(invalid(source, format!("{rat}.path is empty")));
            }
            let writable = r.writable.unwrap_or(true);
            let visit = r.visit.unwrap_or(true);
            let root = Root {
                path: base.join(&r.path),
                writable: r.archive.unwrap_or(writable),
                visit: r.list.unwrap_or(visit),
                retrieve: r.retrieve.unwrap_or(visit),
                wipe: r.wipe.unwrap_or(writable),
                space: i,
                create: false,
                implicit: false,
            };
            let here = lexical(&root.path);
            if let Some(p) = roots.iter().position(|o| lexical(&o.path) == here) {
                return Err(invalid(
                    source,
                    format!(
                        "{rat}.path: {} is also {}.path: list each root once (a root in two \
                         places would be visited twice)",
                        root.path.display(),
                        root_at[p]
                    ),
                ));
            }
            roots.push(root);
            root_at.push(rat);
        }
        spaces.push(Space {
            name: s.name.unwrap_or_default(),
            at,
            regex_text,
            regex,
            handler,
        });
    }
    Ok((spaces, roots))
}

impl Config {
    /// `engine` and `store` with `schema`, from `source`, and nothing else:
    /// no roots, spaces, backend sections, lanes or archive defaults.
    fn bare(engine: Engine, store: StoreKind, schema: Schema, source: &str) -> Config {
        Config {
            engine,
            store,
            schema,
            source: source.to_string(),
            roots: Vec::new(),
            spaces: Vec::new(),
            backends: BTreeMap::new(),
            lanes: Vec::new(),
            archive_defaults: Key::new(),
        }
    }

    /// The embedded default: a POSIX store under `root` with ECMWF's schema.
    /// A missing `root` is created by the first archive ([`Root::create`]);
    /// until then, reading it is `NotFound`.
    pub fn embedded(root: impl Into<PathBuf>) -> Config {
        let root = root.into();
        let source = format!("embedded store at {}", root.display());
        Config {
            roots: vec![Root {
                create: true,
                ..Root::new(root)
            }],
            ..Config::bare(Engine::Toc, StoreKind::File, Schema::ecmwf(), &source)
        }
    }

    /// An in-memory store with `schema`.
    pub fn memory(schema: Schema) -> Config {
        let source = "in-memory store";
        Config::bare(Engine::Memory, StoreKind::Memory, schema, source)
    }

    /// Parse YAML; relative paths are resolved against `base`. `source`
    /// names the text in messages (a path).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidConfig`] naming the problem and where.
    pub fn from_yaml(text: &str, base: &Path, source: &str) -> Result<Config> {
        let value = parse_yaml(text, source)?;
        match value.get("type").and_then(serde_yaml_ng::Value::as_str) {
            Some("select") => return Config::select_from_yaml(value, base, source),
            Some("remote") => return Config::remote_from_yaml(value, source),
            _ => {}
        }
        // From the text again, not the value: serde's messages then say
        // where (`spaces[0].roots[1]: unknown field …, at line 4`).
        let raw: RawConfig = parse_yaml_as(text, source)?;
        if let Some(kind) = raw.kind.as_deref() {
            if kind != "local" {
                return Err(invalid(
                    source,
                    format!(
                        "type '{kind}' is not supported (expected 'local', 'select' or 'remote')"
                    ),
                ));
            }
        }
        // Each engine's name, its store's name (the store it uses unless
        // `store:` says otherwise), and the two.
        const KINDS: [(&str, &str, Engine, StoreKind); 5] = [
            ("toc", "file", Engine::Toc, StoreKind::File),
            ("memory", "memory", Engine::Memory, StoreKind::Memory),
            ("daos", "daos", Engine::Daos, StoreKind::Daos),
            ("rados", "rados", Engine::Rados, StoreKind::Rados),
            ("s3", "s3", Engine::S3, StoreKind::S3),
        ];
        let name = raw.engine.as_deref().unwrap_or("toc");
        let Some(&(_, default_store, engine, _)) = KINDS.iter().find(|k| k.0 == name) else {
            return Err(invalid(
                source,
                format!(
                    "engine '{name}' is not supported (expected toc, daos, rados, s3 or memory)"
                ),
            ));
        };
        let name = raw.store.as_deref().unwrap_or(default_store);
        let Some(&(.., store)) = KINDS.iter().find(|k| k.1 == name) else {
            return Err(invalid(
                source,
                format!(
                    "store '{name}' is not supported (expected file, daos, rados, s3 or memory)"
                ),
            ));
        };
        let schema = schema_at(raw.schema.as_deref(), base, source)?;
        let fdb_home = raw.fdb_home.as_deref().map(|h| base.join(h));
        let (spaces, roots) = spaces_of(raw.spaces, base, fdb_home.as_deref(), source)?;
        let sections = [
            ("daos", raw.daos),
            ("rados", raw.rados),
            ("s3", raw.s3),
            ("file", raw.file),
        ];
        let backends = sections
            .into_iter()
            .filter_map(|(name, v)| Some((name.to_string(), v?)))
            .collect();
        if (engine == Engine::Toc || store == StoreKind::File) && roots.is_empty() {
            return Err(invalid(
                source,
                "engine 'toc' and store 'file' need at least one root under 'spaces'",
            ));
        }
        let archive_defaults = archive_defaults(raw.archive_defaults.as_ref(), source)?;
        Ok(Config {
            roots,
            spaces,
            backends,
            archive_defaults,
            ..Config::bare(engine, store, schema, source)
        })
    }

    /// A `type: remote` configuration, in FDB5's client shape: `host`,
    /// `port` (7654 by default), `preferSingleConnection`, and
    /// fieldstore's `timeout` (seconds per reply, 60 by default; FDB5's
    /// clients wait forever). `engine` and `store` may say `remote`; the
    /// schema is the server's, so a `schema` here is refused rather than
    /// ignored.
    fn remote_from_yaml(value: serde_yaml_ng::Value, source: &str) -> Result<Config> {
        use serde_yaml_ng::Value;
        let Value::Mapping(map) = value else {
            return Err(invalid(source, "expected a mapping of settings"));
        };
        let mut host = None;
        let mut port = 7654u16;
        let mut prefer_single = false;
        let mut timeout = 60.0f64;
        for (k, v) in map {
            let Some(key) = k.as_str() else {
                return Err(invalid(source, format!("key {k:?} is not a string")));
            };
            let bad = |what: &str| invalid(source, format!("{key}: expected {what}, got {v:?}"));
            match key {
                "type" => {}
                "engine" | "store" => {
                    if v.as_str() != Some("remote") {
                        return Err(invalid(
                            source,
                            format!("{key}: {v:?}: a remote configuration's {key} is 'remote'"),
                        ));
                    }
                }
                "host" => host = Some(v.as_str().ok_or_else(|| bad("a host name"))?.to_string()),
                "port" => {
                    port = v
                        .as_u64()
                        .and_then(|p| u16::try_from(p).ok())
                        .filter(|p| *p > 0)
                        .ok_or_else(|| bad("a port number"))?
                }
                "preferSingleConnection" => {
                    prefer_single = v.as_bool().ok_or_else(|| bad("true or false"))?
                }
                "timeout" => {
                    timeout = v
                        .as_f64()
                        .filter(|t| *t > 0.0 && *t < 1e6)
                        .ok_or_else(|| bad("seconds, more than 0"))?
                }
                other => {
                    return Err(invalid(
                        source,
                        format!(
                            "'{other}' is not a key of a remote configuration (type, engine, \
                             store, host, port, preferSingleConnection, timeout): the server's \
                             own configuration says the rest"
                        ),
                    ))
                }
            }
        }
        let host = host.ok_or_else(|| invalid(source, "a remote configuration needs 'host'"))?;
        let backends = BTreeMap::from([(
            "remote".to_string(),
            serde_json::json!({
                "host": host,
                "port": port,
                "preferSingleConnection": prefer_single,
                "timeout": timeout,
            }),
        )]);
        // The schema is replaced by the server's when the store is opened.
        let schema = Schema::ecmwf();
        Ok(Config {
            backends,
            ..Config::bare(Engine::Remote, StoreKind::Remote, schema, source)
        })
    }

    /// A `type: select` configuration (`routing.rs`): its `fdbs`, each a
    /// selection and a local sub-store with its own schema or the
    /// parent's.
    fn select_from_yaml(value: serde_yaml_ng::Value, base: &Path, source: &str) -> Result<Config> {
        use serde_yaml_ng::Value;
        let Value::Mapping(map) = value else {
            return Err(invalid(source, "expected a mapping of settings"));
        };
        let mut schema_path = None;
        let mut fdb_home = None;
        let mut fdbs = None;
        let mut defaults = None;
        for (k, v) in map {
            match (k.as_str(), v) {
                (Some("type"), _) => {}
                (Some("archive-defaults"), v) => defaults = Some(v),
                (Some("schema"), Value::String(p)) => schema_path = Some(p),
                (Some("fdb_home"), v @ Value::String(_)) => fdb_home = Some(v),
                (Some("fdbs"), Value::Sequence(list)) => fdbs = Some(list),
                (Some(k @ ("schema" | "fdb_home")), _) => {
                    return Err(invalid(source, format!("{k}: expected a path")))
                }
                (Some("fdbs"), _) => {
                    return Err(invalid(source, "fdbs: expected a list of sub-stores"))
                }
                (k, _) => {
                    return Err(invalid(
                        source,
                        format!(
                            "{}: not read in a select configuration (expected type, schema, fdb_home, fdbs, archive-defaults; the store settings go in each of fdbs)",
                            k.unwrap_or("a key that is not a string")
                        ),
                    ))
                }
            }
        }
        let fdbs = fdbs
            .filter(|l| !l.is_empty())
            .ok_or_else(|| invalid(source, "fdbs: a select configuration needs sub-stores"))?;
        let own_schemas = lane_schemas(&fdbs, base, source)?;
        // The schema naming datasets (level 1): the configuration's; else,
        // as FDB5 configurations write it, the first sub-store's.
        let schema = match (&schema_path, own_schemas.iter().flatten().next()) {
            (None, Some(first)) => first.clone(),
            _ => schema_at(schema_path.as_deref(), base, source)?,
        };
        let mut lanes = Vec::new();
        for ((i, lane), own) in fdbs.into_iter().enumerate().zip(own_schemas) {
            let at = format!("fdbs[{i}]");
            let Value::Mapping(mut lane) = lane else {
                return Err(invalid(source, format!("{at}: expected a mapping")));
            };
            let matcher = |v: &Value, at: &str| -> Result<Matcher> {
                let text = v
                    .as_str()
                    .ok_or_else(|| invalid(source, format!("{at}: expected 'keyword=regex,…'")))?;
                let m = Matcher::parse(text).map_err(|e| invalid(source, format!("{at}: {e}")))?;
                routing::check_dataset_keywords(&m, &schema)
                    .map_err(|e| invalid(source, format!("{at}: {e}")))?;
                Ok(m)
            };
            let select = match lane.remove("select") {
                Some(v) => matcher(&v, &format!("{at}.select"))?,
                None => Matcher::parse("").map_err(|e| invalid(source, e))?,
            };
            let excludes = match lane.remove("excludes") {
                None => Vec::new(),
                Some(Value::Sequence(list)) => list
                    .iter()
                    .enumerate()
                    .map(|(j, v)| matcher(v, &format!("{at}.excludes[{j}]")))
                    .collect::<Result<Vec<_>>>()?,
                Some(_) => {
                    return Err(invalid(
                        source,
                        format!("{at}.excludes: expected a list of 'keyword=regex,…'"),
                    ))
                }
            };
            lane.remove("schema");
            let own_schema = own.is_some();
            let own = match own {
                Some(own) => {
                    same_first_level(&own, &schema)
                        .map_err(|e| invalid(source, format!("{at}.schema: {e}")))?;
                    own
                }
                None => schema.clone(),
            };
            match lane.get("type") {
                None => {}
                Some(Value::String(t)) if t == "local" => {}
                Some(other) => {
                    return Err(invalid(
                        source,
                        format!("{at}.type: {other:?}: sub-stores are local stores (type: local)"),
                    ))
                }
            }
            if let (Some(home), false) = (&fdb_home, lane.contains_key("fdb_home")) {
                lane.insert(Value::from("fdb_home"), home.clone());
            }
            let text = serde_yaml_ng::to_string(&Value::Mapping(lane))
                .map_err(|e| invalid(source, format!("{at}: {e}")))?;
            let mut config = Config::from_yaml(&text, base, &format!("{source}: {at}"))?;
            config.schema = own;
            lanes.push(Lane {
                at,
                select,
                excludes,
                config,
                own_schema,
            });
        }
        Ok(Config {
            lanes,
            archive_defaults: archive_defaults(defaults.as_ref(), source)?,
            ..Config::bare(Engine::Select, StoreKind::Select, schema, source)
        })
    }

    /// Read a YAML config file.
    ///
    /// # Errors
    /// `NotFound`/`PermissionDenied` if it cannot be read; `InvalidConfig`
    /// (also for a file above [`TEXT_FILE_LIMIT`] or not UTF-8).
    pub fn from_file(path: &Path) -> Result<Config> {
        let text = read_text_file(path, &format!("config {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Config::from_yaml(&text, base, &path.display().to_string())
    }

    /// The configuration the tools use when given none: the file named by
    /// `FIELDSTORE_CONFIG`, else the embedded store under `FIELDSTORE_ROOT`
    /// or `./fieldstore-data` (created by the first archive; read before
    /// that, `FIELDSTORE_ROOT`'s is `NotFound`, the default empty).
    ///
    /// # Errors
    /// As [`Config::from_file`]; I/O errors creating the embedded root.
    pub fn from_env() -> Result<Config> {
        if let Some(path) = std::env::var_os("FIELDSTORE_CONFIG").filter(|p| !p.is_empty()) {
            return Config::from_file(Path::new(&path));
        }
        match std::env::var_os("FIELDSTORE_ROOT").filter(|p| !p.is_empty()) {
            Some(root) => Ok(Config::embedded(PathBuf::from(root))),
            None => {
                let mut config = Config::embedded("fieldstore-data");
                config.roots[0].implicit = true;
                Ok(config)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_core::DatasetKey;

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
                "c.yaml: engine 'lmdb' is not supported (expected toc, daos, rados, s3 or memory)",
            ),
            (
                "type: random\n",
                "c.yaml: type 'random' is not supported (expected 'local', 'select' or 'remote')",
            ),
            (
                "type: remote\n",
                "c.yaml: a remote configuration needs 'host'",
            ),
            (
                "type: remote\nhost: h\nschema: ./s\n",
                "c.yaml: 'schema' is not a key of a remote configuration (type, engine, store, \
                 host, port, preferSingleConnection, timeout): the server's own configuration \
                 says the rest",
            ),
            (
                "type: remote\nhost: h\nport: 0\n",
                "c.yaml: port: expected a port number, got Number(0)",
            ),
            (
                "type: remote\nhost: h\nengine: toc\n",
                "c.yaml: engine: String(\"toc\"): a remote configuration's engine is 'remote'",
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

    #[test]
    fn a_remote_configuration_in_fdb5s_client_shape() {
        let c = Config::from_yaml(
            "type: remote\nengine: remote\nstore: remote\nhost: fdb.example\nport: 7655\n\
             preferSingleConnection: true\ntimeout: 2.5\n",
            Path::new("."),
            "c.yaml",
        )
        .unwrap();
        assert_eq!((c.engine, c.store), (Engine::Remote, StoreKind::Remote));
        let r = c.backend("remote");
        assert_eq!(r["host"], "fdb.example");
        assert_eq!(r["port"], 7655);
        assert_eq!(r["preferSingleConnection"], true);
        assert_eq!(r["timeout"], 2.5);
        let c = Config::from_yaml("type: remote\nhost: h\n", Path::new("."), "c.yaml").unwrap();
        assert_eq!(c.backend("remote")["port"], 7654);
    }

    #[test]
    fn spaces_roots_and_flags() {
        let c = Config::from_yaml(
            "spaces:\n\
             - name: ops\n  regex: '^od:'\n  handler: LeastUsed\n  roots:\n  \
             - path: a\n  - {path: b, writable: false, wipe: true}\n\
             - roots:\n  - {path: c, visit: true, retrieve: false, archive: false}\n",
            Path::new("/r"),
            "c.yaml",
        )
        .unwrap();
        assert_eq!(c.spaces.len(), 2);
        assert_eq!(c.spaces[0].name, "ops");
        assert_eq!(c.spaces[0].handler.name(), "LeastUsed");
        assert_eq!(c.spaces[1].handler.name(), "Default");
        assert_eq!(c.spaces[1].regex_text, ".*");
        let flags: Vec<_> = c
            .roots
            .iter()
            .map(|r| (r.space, r.writable, r.visit, r.retrieve, r.wipe))
            .collect();
        assert_eq!(
            flags,
            [
                (0, true, true, true, true),
                (0, false, true, true, true),
                (1, false, true, false, true)
            ]
        );
        // `wipe` follows `writable`, not `archive` (as in FDB5).
        assert_eq!(c.roots[2].disabled().iter().count(), 2);
        let od: DatasetKey = "class=od,expver=0001".parse().unwrap();
        let rd: DatasetKey = "class=rd,expver=0001".parse().unwrap();
        assert!(c.spaces[0].owns(&od));
        assert!(!c.spaces[0].owns(&rd));
    }

    #[test]
    fn bad_spaces_are_named_by_their_key_path() {
        let cases = [
            (
                "spaces:\n- roots: [{path: a}]\n- handler: Clever\n  roots: [{path: b}]\n",
                "c.yaml: spaces[1].handler: unknown handler 'Clever' (expected one of Default, First,",
            ),
            (
                "spaces:\n- regex: 'od:('\n  roots: [{path: a}]\n",
                "c.yaml: spaces[0].regex: 'od:(' does not compile:",
            ),
            (
                "spaces:\n- roots: [{path: a}]\n- regex: '^od'\n  roots: [{path: b}]\n",
                "c.yaml: spaces[1] overlaps spaces[0]: spaces[0].regex '.*' matches every dataset",
            ),
            (
                "spaces:\n- {regex: '^od', roots: [{path: a}]}\n- {regex: '^od', roots: [{path: b}]}\n",
                "c.yaml: spaces[1] overlaps spaces[0]: spaces[0].regex '^od'",
            ),
            (
                "spaces:\n- {regex: '^od', roots: [{path: a}]}\n- roots: [{path: b}, {path: ./a/}]\n",
                "c.yaml: spaces[1].roots[1].path: /r/./a/ is also spaces[0].roots[0].path",
            ),
            (
                "spaces:\n- {regex: '^od', roots: []}\n",
                "c.yaml: spaces[0].roots: a space needs a root",
            ),
        ];
        for (text, want) in cases {
            let e = Config::from_yaml(text, Path::new("/r"), "c.yaml").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{text}");
            assert!(
                e.to_string().starts_with(want),
                "{text}\n{e}\nwanted {want}"
            );
        }
        let e = Config::from_yaml(
            "spaces:\n- roots:\n  - {path: a, writeable: true}\n",
            Path::new("/r"),
            "c.yaml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("spaces[0].roots[0]"), "{e}");
        assert!(e.to_string().contains("unknown field `writeable`"), "{e}");
    }

    #[test]
    fn each_engine_has_its_store_unless_told_and_unknown_ones_are_named() {
        let base = Path::new("/etc/fs");
        for (engine, store) in [
            ("memory", StoreKind::Memory),
            ("daos", StoreKind::Daos),
            ("rados", StoreKind::Rados),
            ("s3", StoreKind::S3),
        ] {
            let c = Config::from_yaml(&format!("engine: {engine}\n"), base, "c.yaml").unwrap();
            assert_eq!(c.store, store, "{engine}");
        }
        let c =
            Config::from_yaml("engine: memory\nstore: daos\nschema: ~\n", base, "c.yaml").unwrap();
        assert_eq!((c.engine, c.store), (Engine::Memory, StoreKind::Daos));
        let e = Config::from_yaml("engine: memory\nstore: toc\n", base, "c.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.yaml: store 'toc' is not supported (expected file, daos, rados, s3 or memory)"
        );
        let e = Config::from_yaml("engine: file\n", base, "c.yaml").unwrap_err();
        assert!(
            e.to_string().contains("engine 'file' is not supported"),
            "{e}"
        );
        let c = Config::from_yaml("engine: memory\ns3: {a: 1}\nfile: {b: 2}\n", base, "c.yaml")
            .unwrap();
        assert_eq!(c.backends.keys().collect::<Vec<_>>(), ["file", "s3"]);
        assert_eq!(c.backend("s3")["a"], 1);
    }
}
