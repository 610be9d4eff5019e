//! Which store a handle opens: fieldstore's configuration, or FDB5's.
//!
//! The C API's `fdb_new_handle()` (and `fdb_new_handle_from_yaml` with an
//! empty system config), the CLI without `--config` and Python's `FDB()`
//! without a config ([`from_environment`]) look, in order, at:
//! 1. fieldstore's own variables, `FIELDSTORE_CONFIG` (a config file) and
//!    `FIELDSTORE_ROOT` (the embedded store's root), as every fieldstore
//!    tool does ([`Config::from_env`]);
//! 2. FDB5's: `FDB_CONFIG`, then `FDB5_CONFIG` (the YAML text itself);
//!    `FDB_CONFIG_FILE`, then `FDB5_CONFIG_FILE` (a YAML file);
//!    `FDB_HOME`, then `FDB5_HOME`, with `etc/fdb/config.yaml` (or
//!    `.json`) under it. `FDB_HOME` without such a file is an error (FDB5
//!    would read its legacy text configuration, which fieldstore does not
//!    support); `FDB5_HOME` without one is passed over, since `findlibs`
//!    users set it to find the library;
//! 3. otherwise the embedded store under `./fieldstore-data`.
//!
//! FDB5's YAML is translated into fieldstore's shape ([`from_fdb5_yaml`]):
//! `~fdb` in paths expands from `fdb_home` or `FDB_HOME`; spaces (names,
//! regexes, handlers) and roots (names, the six flags) are fieldstore's
//! own keys (`docs/config.md`). What fieldstore cannot do the same way
//! (another `type`, split catalogue and store roots) is refused with its
//! name.
//!
//! Every root is checked before the store opens ([`refuse_fdb5_roots`]):
//! one holding FDB5's own on-disk format is refused with an error naming
//! it, so fieldstore never writes into it.

use std::path::{Path, PathBuf};

use fieldstore_core::{Error, ErrorKind, Result};
use serde_yaml_ng::{Mapping, Value};

use crate::config::Config;
use crate::yaml::invalid;

/// A YAML value in a message: `'text'`, or its YAML form.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        other => serde_yaml_ng::to_string(other)
            .map(|t| t.trim().to_string())
            .unwrap_or_else(|_| format!("{other:?}")),
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn unsupported(source: &str, message: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Unsupported, format!("{source}: {message}"))
}

/// Where FDB5's environment puts the configuration, when fieldstore's own
/// variables are unset.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fdb5Source {
    /// `FDB_CONFIG` or `FDB5_CONFIG`: the YAML text itself.
    Text { var: &'static str, text: String },
    /// `FDB_CONFIG_FILE`, `FDB5_CONFIG_FILE`, or `etc/fdb/config.yaml`
    /// (`.json`) under `FDB_HOME` or `FDB5_HOME`.
    File { var: &'static str, path: PathBuf },
    /// `FDB_HOME` without a YAML configuration under it.
    HomeWithoutYaml { home: String },
}

/// FDB5's variable that chooses the configuration, in FDB5's order; `None`
/// when fieldstore's own variables are set or none of FDB5's is (or only
/// `FDB5_HOME` without a configuration under it, which `findlibs` users set
/// to find the library).
fn fdb5_source() -> Option<Fdb5Source> {
    if env("FIELDSTORE_CONFIG").is_some() || env("FIELDSTORE_ROOT").is_some() {
        return None;
    }
    for var in ["FDB_CONFIG", "FDB5_CONFIG"] {
        if let Some(text) = env(var) {
            return Some(Fdb5Source::Text { var, text });
        }
    }
    for var in ["FDB_CONFIG_FILE", "FDB5_CONFIG_FILE"] {
        if let Some(path) = env(var) {
            let path = PathBuf::from(path);
            return Some(Fdb5Source::File { var, path });
        }
    }
    for var in ["FDB_HOME", "FDB5_HOME"] {
        let Some(home) = env(var) else {
            continue;
        };
        let etc = Path::new(&home).join("etc/fdb");
        if let Some(path) = ["config.yaml", "config.json"]
            .into_iter()
            .map(|name| etc.join(name))
            .find(|path| path.exists())
        {
            return Some(Fdb5Source::File { var, path });
        }
        if var == "FDB_HOME" {
            return Some(Fdb5Source::HomeWithoutYaml { home });
        }
    }
    None
}

/// The FDB5 variable the configuration comes from (`FDB5_CONFIG_FILE`,
/// …), if [`from_environment`] takes it from FDB5's environment.
pub fn fdb5_variable() -> Option<&'static str> {
    fdb5_source().map(|s| match s {
        Fdb5Source::Text { var, .. } | Fdb5Source::File { var, .. } => var,
        Fdb5Source::HomeWithoutYaml { .. } => "FDB_HOME",
    })
}

/// The configuration of the environment (see the module documentation):
/// fieldstore's variables, else FDB5's, else the embedded store. What the
/// C API's `fdb_new_handle()`, the CLI without `--config` and Python's
/// `FDB()` open.
///
/// # Errors
/// `InvalidConfig` for a config that does not parse or describes what
/// fieldstore does not support; `NotFound` for a file named that does not
/// exist, and for `FDB_HOME` without a YAML configuration.
pub fn from_environment() -> Result<Config> {
    match fdb5_source() {
        None => Config::from_env(),
        Some(Fdb5Source::Text { var, text }) => {
            let source = format!("${var}");
            from_fdb5_yaml(&text, Path::new("."), &source)?
                .ok_or_else(|| invalid(&source, "the configuration is empty"))
        }
        Some(Fdb5Source::File { var, path }) => from_fdb5_file(&path, &format!("${var}")),
        Some(Fdb5Source::HomeWithoutYaml { home }) => Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "$FDB_HOME is {home}, which has no etc/fdb/config.yaml: fieldstore needs a \
                 YAML configuration (FDB5's legacy text configuration is not supported); \
                 or set FIELDSTORE_CONFIG or FIELDSTORE_ROOT"
            ),
        )),
    }
}

fn from_fdb5_file(path: &Path, via: &str) -> Result<Config> {
    let source = format!("{} (from {via})", path.display());
    let text = crate::text_file::read_text_file(path, &format!("config {source}"))?;
    let base = path.parent().unwrap_or(Path::new("."));
    from_fdb5_yaml(&text, base, &source)?
        .ok_or_else(|| invalid(&source, "the configuration is empty"))
}

/// `~fdb` (or `~fdb/…`) expanded from `fdb_home`, `FDB_HOME` or
/// `FDB5_HOME`.
fn expand_home(path: &mut String, fdb_home: Option<&str>, source: &str) -> Result<()> {
    let Some(rest) = path
        .strip_prefix("~fdb")
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
    else {
        return Ok(());
    };
    let home = fdb_home
        .map(str::to_string)
        .or_else(|| env("FDB_HOME"))
        .or_else(|| env("FDB5_HOME"))
        .ok_or_else(|| {
            invalid(
                source,
                format!("'{path}' needs fdb_home in the config or FDB_HOME in the environment"),
            )
        })?;
    *path = format!("{home}{rest}");
    Ok(())
}

fn flag(map: &Mapping, key: &str, source: &str) -> Result<Option<bool>> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(invalid(
            source,
            format!("'{key}' must be true or false, not {}", show(other)),
        )),
    }
}

/// Keys of FDB5's configs (system or user) that change nothing here.
const IGNORED: &[&str] = &[
    "configSource",
    "statistics",
    "permissions",
    "useSubToc",
    "preloadTocBTree",
    "limits",
];

/// Translate one local store's settings (the whole config, or a lane of
/// a select) in place.
fn translate_local(map: &mut Mapping, fdb_home: Option<&str>, source: &str) -> Result<()> {
    match map.get("type") {
        None => {}
        Some(Value::String(t)) if t == "local" => {}
        Some(other) => {
            return Err(invalid(
                source,
                format!(
                    "type {} is not supported: fieldstore opens local stores (type: local), routes between them (type: select) and reaches servers (type: remote)",
                    show(other)
                ),
            ))
        }
    }
    for key in IGNORED {
        map.remove(*key);
    }
    for key in [
        "writable",
        "visitable",
        "list",
        "retrieve",
        "archive",
        "wipe",
    ] {
        match flag(map, key, source)? {
            Some(false) => {
                return Err(unsupported(
                    source,
                    format!("'{key}: false': fieldstore handles cannot disable an operation"),
                ))
            }
            Some(true) => {
                map.remove(key);
            }
            None => {}
        }
    }
    if let Some(Value::String(schema)) = map.get_mut("schema") {
        expand_home(schema, fdb_home, source)?;
    }
    if let Some(spaces) = map.get_mut("spaces") {
        let Value::Sequence(spaces) = spaces else {
            return Err(invalid(source, "'spaces' must be a list"));
        };
        for space in spaces {
            let Value::Mapping(space) = space else {
                return Err(invalid(source, "each space must be a mapping"));
            };
            space.remove("name");
            for key in ["catalogueRoots", "storeRoots", "marsDisks"] {
                if space.contains_key(key) {
                    return Err(unsupported(
                        source,
                        format!("spaces with '{key}': fieldstore keeps a dataset's catalogue and data in one root"),
                    ));
                }
            }
            if let Some(Value::Sequence(roots)) = space.get_mut("roots") {
                for root in roots {
                    let Value::Mapping(root) = root else {
                        return Err(invalid(source, "each root must be a mapping with a 'path'"));
                    };
                    if let Some(Value::String(p)) = root.get_mut("path") {
                        expand_home(p, fdb_home, source)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Parse FDB5's YAML (or JSON) config `text` into fieldstore's `Config`;
/// `None` for an empty one. Relative paths are resolved against `base`.
///
/// # Errors
/// `InvalidConfig` naming the problem; `Unsupported` for what fieldstore
/// does not do (see the module documentation).
pub fn from_fdb5_yaml(text: &str, base: &Path, source: &str) -> Result<Option<Config>> {
    let value: Value = crate::config::parse_yaml(text, source)?;
    let mut map = match value {
        Value::Null => return Ok(None),
        Value::Mapping(m) if m.is_empty() => return Ok(None),
        Value::Mapping(m) => m,
        other => {
            return Err(invalid(
                source,
                format!("expected a mapping of settings, not {}", show(&other)),
            ))
        }
    };
    let select = matches!(map.get("type"), Some(Value::String(t)) if t == "select");
    let remote = matches!(map.get("type"), Some(Value::String(t)) if t == "remote");
    let fdb_home = match map.remove("fdb_home") {
        None => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(invalid(
                source,
                format!("fdb_home: not a path: {}", show(&other)),
            ))
        }
    };
    // FDB5's keys fieldstore ignores: a local configuration drops them in
    // `translate_local`, as each lane of a select does.
    if remote || select {
        for key in IGNORED {
            map.remove(*key);
        }
    }
    // A remote configuration, a client of a catalogue server (host, port
    // and how to talk to it), stays as it is: the server's own
    // configuration says the rest.
    if select {
        // The parent keeps type, schema and fdbs; each lane is a local
        // config of its own, translated as one.
        if let Some(Value::String(schema)) = map.get_mut("schema") {
            expand_home(schema, fdb_home.as_deref(), source)?;
        }
        if let Some(Value::Sequence(lanes)) = map.get_mut("fdbs") {
            for (i, lane) in lanes.iter_mut().enumerate() {
                let Value::Mapping(lane) = lane else {
                    return Err(invalid(source, format!("fdbs[{i}]: expected a mapping")));
                };
                translate_local(lane, fdb_home.as_deref(), &format!("{source}: fdbs[{i}]"))?;
            }
        }
    } else if !remote {
        translate_local(&mut map, fdb_home.as_deref(), source)?;
    }
    if let Some(home) = &fdb_home {
        // The expver handler keeps its map under it.
        map.insert(Value::from("fdb_home"), Value::from(home.as_str()));
    }
    let text = serde_yaml_ng::to_string(&Value::Mapping(map)).map_err(|e| invalid(source, e))?;
    let config = Config::from_yaml(&text, base, source)?;
    Ok(Some(config))
}

/// How many entries of a root are looked at for FDB5 databases.
const PROBED_ENTRIES: usize = 64;

/// Refuse roots that hold FDB5's own on-disk format: a dataset directory
/// whose `toc` is not fieldstore's (whose records start `FSR1`). Looks at
/// the first 64 entries of each root; a root that does not
/// exist is left for the store to report.
///
/// # Errors
/// `InvalidConfig` naming the root and the FDB5 database found.
pub fn refuse_fdb5_roots(config: &Config) -> Result<()> {
    for lane in &config.lanes {
        refuse_fdb5_roots(&lane.config)?;
    }
    for root in &config.roots {
        let Ok(entries) = std::fs::read_dir(&root.path) else {
            continue;
        };
        for entry in entries.flatten().take(PROBED_ENTRIES) {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let toc: PathBuf = entry.path().join("toc");
            let mut magic = [0u8; 4];
            let read =
                std::fs::File::open(&toc).and_then(|mut f| std::io::Read::read(&mut f, &mut magic));
            match read {
                Ok(0) | Err(_) => continue,
                Ok(_) if magic == *b"FSR1" => continue,
                Ok(_) => {
                    return Err(Error::new(
                        ErrorKind::InvalidConfig,
                        format!(
                            "root {} holds FDB5's own on-disk format ({} is an FDB5 table of \
                             contents): fieldstore neither reads nor writes FDB5 databases; give \
                             fieldstore a root of its own",
                            root.path.display(),
                            toc.display()
                        ),
                    ))
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdb5_shapes_translate() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let text = format!(
            "{{\"type\": \"local\", \"engine\": \"toc\", \"fdb_home\": \"{}\", \"useSubToc\": true, \
             \"spaces\": [{{\"name\": \"s\", \"regex\": \".*\", \"handler\": \"WeightedRandom\", \
             \"roots\": [{{\"path\": \"~fdb/root\", \"name\": \"r\", \"list\": true, \"retrieve\": true, \
             \"archive\": false, \"wipe\": false}}]}}]}}",
            dir.path().display()
        );
        let c = from_fdb5_yaml(&text, Path::new("."), "t").unwrap().unwrap();
        assert_eq!(c.roots.len(), 1);
        assert_eq!(c.roots[0].path, root);
        assert!(c.roots[0].visit && c.roots[0].retrieve);
        assert!(!c.roots[0].writable && !c.roots[0].wipe);
        assert_eq!(c.spaces[0].handler.name(), "WeightedRandom");
        assert!(from_fdb5_yaml("", Path::new("."), "t").unwrap().is_none());
        assert!(from_fdb5_yaml("{}", Path::new("."), "t").unwrap().is_none());
    }

    #[test]
    fn fdb5_select_configs_translate_lane_by_lane() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "type: select\nfdb_home: {}\nschema: ~fdb/schema\nuseSubToc: true\nfdbs:\n\
             - select: class=od\n  type: local\n  engine: toc\n  statistics: true\n  \
             spaces: [{{name: s, handler: expver, roots: [{{path: ~fdb/od, name: r, archive: false}}]}}]\n\
             - select: class=rd\n  spaces: [{{roots: [{{path: ~fdb/rd}}]}}]\n",
            dir.path().display()
        );
        std::fs::write(
            dir.path().join("schema"),
            "[ class, expver [ type [ step, param ]]]\n",
        )
        .unwrap();
        let c = from_fdb5_yaml(&text, Path::new("."), "t").unwrap().unwrap();
        assert_eq!(c.lanes.len(), 2);
        assert_eq!(c.lanes[0].config.roots[0].path, dir.path().join("od"));
        assert!(!c.lanes[0].config.roots[0].writable && c.lanes[0].config.roots[0].wipe);
        assert_eq!(c.lanes[0].config.spaces[0].handler.name(), "expver");
        assert_eq!(c.lanes[1].config.roots[0].path, dir.path().join("rd"));
        assert_eq!(c.lanes[1].config.schema.rules().len(), 1);
        let e = from_fdb5_yaml(
            "type: select\nfdbs:\n- type: remote\n  host: x\n",
            Path::new("."),
            "t",
        )
        .unwrap_err();
        assert!(
            e.message()
                .starts_with("t: fdbs[0]: type 'remote' is not supported"),
            "{}",
            e.message()
        );
        // A remote client's FDB5 keys are dropped, its own kept.
        let c = from_fdb5_yaml(
            "type: remote\nhost: x\nstatistics: true\nconfigSource: y\n",
            Path::new("."),
            "t",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.engine, crate::config::Engine::Remote);
        assert_eq!(c.backend("remote")["host"], "x");
        // `~fdb` alone, and a path that only starts with the letters.
        let c = from_fdb5_yaml(
            "fdb_home: /h\nspaces: [{roots: [{path: ~fdb}, {path: ~fdbx/r}]}]\n",
            Path::new("/b"),
            "t",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.roots[0].path, Path::new("/h"));
        assert_eq!(c.roots[1].path, Path::new("/b/~fdbx/r"));
    }

    #[test]
    fn what_fieldstore_cannot_do_is_refused_by_name() {
        let cases = [
            ("type: random\n", "type 'random' is not supported"),
            (
                "spaces: [{regex: 'od(', roots: [{path: /x}]}]\n",
                "spaces[0].regex: 'od(' does not compile",
            ),
            (
                "spaces: [{catalogueRoots: [], roots: []}]\n",
                "catalogueRoots",
            ),
            ("archive: false\n", "'archive: false'"),
            (
                "spaces: [{handler: Clever, roots: []}]\n",
                "spaces[0].handler: unknown handler 'Clever'",
            ),
            ("bogus: 1\n", "bogus"),
        ];
        for (text, want) in cases {
            let e = from_fdb5_yaml(text, Path::new("."), "t").unwrap_err();
            assert!(e.message().contains(want), "{text}: {}", e.message());
        }
    }

    #[test]
    fn fdb5_databases_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("od:0001:oper:20230101:1200:g");
        std::fs::create_dir(&db).unwrap();
        let config = Config::from_yaml(
            &format!(
                "spaces: [{{roots: [{{path: {}}}]}}]\n",
                dir.path().display()
            ),
            Path::new("."),
            "t",
        )
        .unwrap();
        refuse_fdb5_roots(&config).unwrap();
        std::fs::write(db.join("toc"), b"FSR1....").unwrap();
        refuse_fdb5_roots(&config).unwrap();
        std::fs::write(db.join("toc"), [0x74u8, 0, 0, 0, 3, 0]).unwrap();
        let e = refuse_fdb5_roots(&config).unwrap_err();
        assert!(
            e.message().contains("FDB5's own on-disk format"),
            "{}",
            e.message()
        );
        assert!(e.message().contains(&dir.path().display().to_string()));
    }

    /// Issue 26, item 8: a binary file is a configuration error, and a
    /// device without end is read up to the limit only.
    #[test]
    fn config_files_are_text_read_with_a_limit() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("config.yaml");
        std::fs::write(&binary, b"type: local\n\xff\xfe").unwrap();
        let e = from_fdb5_file(&binary, "FDB_CONFIG_FILE").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{}", e.message());
        assert!(
            e.message()
                .ends_with("not UTF-8 text (invalid byte at offset 12): is it the right file?"),
            "{}",
            e.message()
        );
        let start = std::time::Instant::now();
        let e = from_fdb5_file(Path::new("/dev/zero"), "FDB_CONFIG_FILE").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{}", e.message());
        assert!(
            e.message().starts_with(
                "config /dev/zero (from FDB_CONFIG_FILE): larger than 16 MiB, the limit"
            ),
            "{}",
            e.message()
        );
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
