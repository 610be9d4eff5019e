//! fieldstore's domain model: keys, the FDB5 schema language, keyword types
//! and requests. No I/O happens here.
//!
//! - [`Key`] and its level newtypes [`DatasetKey`], [`CollocationKey`],
//!   [`ElementKey`];
//! - [`Schema`]: parse FDB5 schemas, [`Schema::split`] a field's key into its
//!   levels, [`Schema::expand`] a request into keys, [`Schema::selector`] to
//!   match stored keys against a partial request;
//! - [`KeywordType`]: canonical forms of values;
//! - [`Request`]: the MARS request subset;
//! - [`FieldLocation`]: where a store put a field's bytes, and its
//!   [`checksum`];
//! - [`record`]: the record framing and payload encoding of the backends'
//!   catalogue formats;
//! - [`engine`]: what a reader of a log-structured catalogue knows of a
//!   dataset, with the same damage, pruning and position guarantees on
//!   every backend;
//! - the backend traits [`Catalogue`] and [`Store`], with their contracts;
//! - [`Error`] and [`ErrorKind`]: the one public error type.
//!
//! # Layers
//! Each module names only modules listed before it, never an item of the
//! crate root (the `layers` test of `fieldstore-testkit` checks the code
//! against this list).
//! - `error`: the one error type and its kinds.
//! - `types`: keyword types and the canonical forms of values.
//! - `params`: parameter names a caller may give ids for.
//! - `key`: keys and their levels.
//! - `location`: where a store put a field's bytes.
//! - `checksum`: the CRC-32C every store keeps of a field's bytes.
//! - `axes`: the values each keyword takes in a group of keys.
//! - `annotation`: extensions that annotate an older entry.
//! - `list_element`: what a listing yields.
//! - `request`: the MARS request subset.
//! - `schema`: FDB5's schema language: split, expand, select, validate.
//! - `maintenance`: locks, control, data-management items.
//! - `writer_id`: names of writers.
//! - `record`: record framing, payload encoding, index blocks.
//! - `catalogue`: the catalogue traits and their contracts.
//! - `store`: the store traits and their contracts.
//! - `engine`: the log-structured catalogues' reader, and the whole
//!   catalogue of slot media.
#![deny(rustdoc::broken_intra_doc_links)]
// Library code reports errors; it does not panic on them. Tests may unwrap.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod annotation;
pub mod axes;
pub mod catalogue;
pub mod checksum;
pub mod engine;
pub mod error;
pub mod key;
pub mod list_element;
pub mod location;
pub mod maintenance;
pub mod params;
pub mod record;
pub mod request;
pub mod schema;
pub mod store;
pub mod types;
pub mod writer_id;

pub use catalogue::{
    Axes, AxesExt, Catalogue, CatalogueMaintenance, CatalogueQueries, CatalogueWriter,
    ChangeWaiter, Changes, CollocationInfo, DamageMayName, DamagedDatasets, DatasetCondition,
    DatasetMover, DatasetReader, DatasetReaderExt, PollingWaiter,
};
pub use error::{Error, ErrorKind, Result};
pub use key::{CollocationKey, DatasetKey, ElementKey, Key, KeyError};
pub use list_element::ListElement;
pub use location::FieldLocation;
pub use maintenance::{Control, Locks, Operation};
pub use params::ParamNames;
pub use request::{Item, Request, RequestError, Values};
pub use schema::{
    Expansion, Incomplete, Level, Matcher, Predicate, RequestOrder, RequestPosition, Rule, RuleId,
    Schema, SchemaError, Selector, SplitKey, ValueSet, ECMWF_SCHEMA, MAX_VALUE_BYTES,
};
pub use store::{Store, StoreMaintenance, StoreWriter};
pub use types::{KeywordType, TypeError, ValueRange};
