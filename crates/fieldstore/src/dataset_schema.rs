//! Each dataset read with its own schema, as FDB5 does.
//!
//! The configured schema splits a key's first level: it names the dataset.
//! Below it, a dataset's keys are split and matched with the schema that
//! was in force when the dataset was created (stored with it: the POSIX
//! `INIT` record), so that a dataset written under last year's schema
//! stays listable and retrievable, and takes new fields in the same
//! layout, after the schema file changes. FDB5 does the same
//! (`RuleDatabase::expand` uses "the database's schema").
//!
//! Where the stored schema is the configured one (the common case) nothing
//! changes and nothing is parsed; a different one is parsed once per
//! handle and text.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use fieldstore_core::schema::DatasetMatch;
use fieldstore_core::{DatasetKey, Error, ErrorKind, Request, Result, Schema, Selector, SplitKey};

use crate::sync::lock;

/// How many copies of the configured schema's text are remembered by
/// address (each costs the text's size, tens of kilobytes for ECMWF's).
const SAME_KEPT: usize = 32;

/// The schemas datasets were created under, parsed once per text.
#[derive(Debug, Default)]
pub(crate) struct DatasetSchemas {
    parsed: Mutex<Parsed>,
}

#[derive(Debug, Default)]
struct Parsed {
    /// Stored texts that differ from the configured schema, parsed.
    by_text: HashMap<Arc<str>, Arc<Schema>>,
    /// Stored texts already found equal to the configured schema, by
    /// address (held, so that the address stays theirs): readers hand out
    /// the same `Arc` each time, so a schema of tens of kilobytes is
    /// compared once per reader, not once per lookup.
    same: HashMap<usize, Arc<str>>,
}

impl DatasetSchemas {
    /// The schema splitting `dataset`'s keys below level 1: the one stored
    /// with it (`stored`), when it differs from `configured`; `None` when
    /// it is the configured one or the backend keeps none.
    ///
    /// # Errors
    /// `Corrupt` when the stored schema does not parse (the configured one
    /// could split the dataset's keys differently from how they were
    /// stored, so it is not used instead).
    pub(crate) fn own(
        &self,
        configured: &Schema,
        stored: Option<Arc<str>>,
        dataset: &DatasetKey,
    ) -> Result<Option<Arc<Schema>>> {
        let Some(text) = stored else {
            return Ok(None);
        };
        let address = text.as_ptr() as usize;
        let mut parsed = lock(&self.parsed);
        if parsed.same.contains_key(&address) {
            return Ok(None);
        }
        if *text == *configured.text() {
            // Bounded: each reader or writer opened may bring its own copy.
            if parsed.same.len() >= SAME_KEPT {
                parsed.same.clear();
            }
            parsed.same.insert(address, text);
            return Ok(None);
        }
        if let Some(s) = parsed.by_text.get(&text) {
            return Ok(Some(s.clone()));
        }
        let name = format!("schema of dataset {}", dataset.braced());
        let schema = Schema::parse(&name, &text).map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                format!(
                    "the schema stored with dataset {} does not parse: {e}",
                    dataset.braced()
                ),
            )
        })?;
        // Names in requests resolve as the handle's own schema resolves
        // them (the table is the handle's, not the dataset's).
        let schema = match configured.param_names() {
            Some(names) => schema.with_param_names(names.clone()),
            None => schema,
        };
        let schema = Arc::new(schema);
        parsed.by_text.insert(text, schema.clone());
        Ok(Some(schema))
    }
}

/// What matches `dataset`'s keys below level 1: `selector` (the configured
/// schema's) and its match `dm` of the dataset, or, when the dataset has
/// its own schema `own`, that schema's selector of `request` and its match;
/// `None` when that schema does not take the dataset.
///
/// # Errors
/// `InvalidInput` if `own` does not take `request`.
pub(crate) fn own_selector<'a>(
    own: &'a Option<Arc<Schema>>,
    request: &Request,
    selector: &'a Selector<'a>,
    dataset: &DatasetKey,
    dm: DatasetMatch,
) -> Result<Option<(Cow<'a, Selector<'a>>, DatasetMatch)>> {
    let Some(own) = own else {
        return Ok(Some((Cow::Borrowed(selector), dm)));
    };
    let own = own.selector(request)?;
    Ok(own.match_dataset(dataset).map(|dm| (Cow::Owned(own), dm)))
}

/// `split` (made by the configured schema) split again below level 1 by
/// `own`, the schema of its dataset.
///
/// # Errors
/// `InvalidInput` when `own` does not take the key, or puts it in another
/// dataset (its first-level rules differ), naming both.
pub(crate) fn resplit(own: &Schema, split: &SplitKey) -> Result<SplitKey> {
    let full = split.full_key();
    let again = own.split(&full).map_err(|e| {
        let e = Error::from(e);
        Error::new(
            e.kind(),
            format!(
                "dataset {} was created under another schema, which does not take {full}: {}",
                split.dataset.braced(),
                e.message()
            ),
        )
    })?;
    if again.dataset != split.dataset {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "dataset {} was created under another schema, which puts {full} in dataset {}",
                split.dataset.braced(),
                again.dataset.braced()
            ),
        ));
    }
    Ok(again)
}
