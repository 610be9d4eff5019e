//! One module per subcommand. Each has a `run(args, ctx, ui)` that parses
//! and checks its input before opening the store, and a function over an
//! open [`fieldstore::FieldStore`] that the unit tests drive with the
//! in-memory backend.

pub(crate) mod archive;
pub(crate) mod axes;
pub(crate) mod control;
pub(crate) mod extract;
pub(crate) mod hammer;
pub(crate) mod info;
pub(crate) mod list;
pub(crate) mod r#move;
pub(crate) mod notify;
pub(crate) mod purge;
pub(crate) mod retrieve;
pub(crate) mod schema;
pub(crate) mod serve;
pub(crate) mod stats;
pub(crate) mod status;
pub(crate) mod watch;
pub(crate) mod r#where;
pub(crate) mod wipe;
