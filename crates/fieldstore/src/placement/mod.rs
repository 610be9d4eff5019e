//! Where a new dataset is created: FDB5's file spaces.
//!
//! A configuration's `spaces` are tried in order; the first whose `regex`
//! matches the dataset key's values joined by `:` (`od:0001:oper:…`, as
//! FDB5 renders it) owns the dataset, and its `handler` chooses one of its
//! roots. Only a dataset that exists in no visited root is placed: an
//! existing one stays where it is. Readers visit every visited root of
//! every space, whatever the regexes say.
//!
//! The handlers are FDB5's (`toc/FileSpaceHandler.cc` and its siblings):
//! `Default`/`First` ([`strategy`]), the free-space and random strategies
//! of eckit ([`strategy`]), `expver` ([`expver`]) and `envvar`
//! ([`envvar`]). Each is a [`RootHandler`].

pub mod envvar;
pub mod expver;
pub mod strategy;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fieldstore_core::{DatasetKey, Error, ErrorKind, Result};

use crate::root::Root;

/// How a space chooses the root of a new dataset (FDB5's
/// `FileSpaceHandler`).
///
/// # Contract
/// - `choose` is asked only for a dataset that exists in no visited root;
///   `roots` are the space's roots in the order of the configuration
///   (writable or not: the handler looks at [`Root::writable`]).
/// - It returns an index into `roots`, of a writable root, or an error
///   whose kind says what to do (`InvalidConfig`: fix the configuration
///   or the environment it reads; `PermissionDenied`: no root may be
///   written). It never creates the dataset.
/// - The same key may be asked for again (a retried creation): handlers
///   that remember a choice (`expver`) answer alike.
pub trait RootHandler: Send + Sync + fmt::Debug {
    /// The name a configuration gives it (`Default`, `expver`, …).
    fn name(&self) -> &str;

    /// The root for the new dataset `key`.
    ///
    /// # Errors
    /// See the contract.
    fn choose(&self, key: &DatasetKey, roots: &[Root]) -> Result<usize>;
}

/// Every handler name a configuration may give, for messages.
pub const HANDLERS: &[&str] = &[
    "Default",
    "First",
    "LeastUsed",
    "LeastUsedPercent",
    "RoundRobin",
    "Random",
    "PureRandom",
    "WeightedRandom",
    "WeightedRandomPercent",
    "expver",
    "envvar",
];

/// The handler called `name`, or `None` for an unknown name. `fdb_home`
/// locates the `expver` handler's map when `FDB_EXPVER_FILE` does not.
///
/// # Errors
/// `InvalidConfig` when the `expver` handler has no map to keep.
pub fn handler(name: &str, fdb_home: Option<&Path>) -> Result<Option<Arc<dyn RootHandler>>> {
    Ok(Some(match name {
        "Default" | "First" => Arc::new(strategy::First),
        "expver" => Arc::new(expver::Expver::from_env(fdb_home)?),
        "envvar" => Arc::new(envvar::EnvVar::from_env()),
        other => match strategy::Strategy::named(other) {
            Some(s) => Arc::new(s),
            None => return Ok(None),
        },
    }))
}

/// One space: which datasets it owns and how it places them.
#[derive(Debug, Clone)]
pub struct Space {
    /// Its `name` (may be empty).
    pub name: String,
    /// Where it is in the configuration (`spaces[1]`), for messages.
    pub at: String,
    /// Its `regex`, as written (`.*` when absent).
    pub regex_text: String,
    /// The compiled regex; `None` matches every dataset.
    pub regex: Option<regex::Regex>,
    /// Its handler.
    pub handler: Arc<dyn RootHandler>,
}

impl Space {
    /// The space FDB5 assumes when a configuration has none: every
    /// dataset, the first writable root.
    pub fn default_space() -> Space {
        Space {
            name: String::new(),
            at: "spaces[0]".to_string(),
            regex_text: ".*".to_string(),
            regex: None,
            handler: Arc::new(strategy::First),
        }
    }

    /// Whether it owns `key` (its regex is searched for in the values
    /// joined by `:`, anywhere, as POSIX `regexec` does).
    pub fn owns(&self, key: &DatasetKey) -> bool {
        self.regex
            .as_ref()
            .is_none_or(|r| r.is_match(&key.fingerprint()))
    }
}

/// The spaces of a store and their roots.
#[derive(Debug, Clone)]
pub struct Placement {
    spaces: Vec<Space>,
    /// Each space's roots (the configuration's roots with that space).
    roots: Vec<Vec<Root>>,
}

impl Placement {
    /// The placement of `roots` (each naming its space by
    /// [`Root::space`]) over `spaces`; with no spaces, one `Default` space
    /// of every root.
    pub fn new(spaces: &[Space], roots: &[Root]) -> Placement {
        let spaces = if spaces.is_empty() {
            vec![Space::default_space()]
        } else {
            spaces.to_vec()
        };
        let last = spaces.len() - 1;
        let mut per_space = vec![Vec::new(); spaces.len()];
        for r in roots {
            per_space[r.space.min(last)].push(r.clone());
        }
        Placement {
            spaces,
            roots: per_space,
        }
    }

    /// The space owning `key` and its index.
    ///
    /// # Errors
    /// `InvalidConfig` naming every space's regex when none matches.
    pub fn space_of(&self, key: &DatasetKey) -> Result<(usize, &Space)> {
        self.spaces
            .iter()
            .enumerate()
            .find(|(_, s)| s.owns(key))
            .ok_or_else(|| {
                let tried: Vec<String> = self
                    .spaces
                    .iter()
                    .map(|s| format!("{}.regex '{}'", s.at, s.regex_text))
                    .collect();
                Error::new(
                    ErrorKind::InvalidConfig,
                    format!(
                        "no space holds dataset {} (matched as '{}'): {}",
                        key.braced(),
                        key.fingerprint(),
                        tried.join(", ")
                    ),
                )
            })
    }

    /// The root where the new dataset `key` is created (the directory of
    /// the root, not of the dataset).
    ///
    /// # Errors
    /// As [`Placement::space_of`] and the space's [`RootHandler`], each
    /// message naming the space.
    pub fn root_for_new(&self, key: &DatasetKey) -> Result<PathBuf> {
        let (i, space) = self.space_of(key)?;
        let roots = &self.roots[i];
        let at = |e: Error| {
            Error::new(
                e.kind(),
                format!(
                    "{} (handler {}, regex '{}'), new dataset {}: {}",
                    space.at,
                    space.handler.name(),
                    space.regex_text,
                    key.braced(),
                    e.message()
                ),
            )
        };
        if roots.is_empty() {
            return Err(at(Error::new(
                ErrorKind::InvalidConfig,
                "the space has no roots",
            )));
        }
        let chosen = space.handler.choose(key, roots).map_err(at)?;
        let root = roots.get(chosen).ok_or_else(|| {
            at(Error::new(
                ErrorKind::Internal,
                format!("the handler chose root {chosen} of {}", roots.len()),
            ))
        })?;
        if !root.writable {
            return Err(at(Error::new(
                ErrorKind::PermissionDenied,
                format!(
                    "the handler chose root {}, which is not writable",
                    root.path.display()
                ),
            )));
        }
        Ok(root.path.clone())
    }
}

/// The writable roots among `roots` that exist, with their indices, in
/// order (FDB5's `FileSpace::enabled(Archive)`).
pub(crate) fn writable(roots: &[Root]) -> Vec<(usize, &Root)> {
    roots
        .iter()
        .enumerate()
        .filter(|(_, r)| r.writable && r.path.is_dir())
        .collect()
}

/// The error of a space with no writable root.
pub(crate) fn no_writable_root(roots: &[Root]) -> Error {
    let all: Vec<String> = roots.iter().map(|r| r.path.display().to_string()).collect();
    Error::new(
        ErrorKind::PermissionDenied,
        format!(
            "no writable root (writable/archive) exists among its roots: {}",
            all.join(", ")
        ),
    )
}

/// The index of the root of `roots` that is the directory `path`
/// (compared by canonical path), if any.
pub(crate) fn root_named(roots: &[Root], path: &Path) -> Option<usize> {
    let want = std::fs::canonicalize(path).ok()?;
    roots
        .iter()
        .position(|r| std::fs::canonicalize(&r.path).is_ok_and(|c| c == want))
}
