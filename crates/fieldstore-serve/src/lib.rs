//! `fieldstore serve` as a library: FDB5's remote protocol, server side,
//! over any fieldstore store (docs/serve.md).
//!
//! By default one process plays both of FDB5's server roles, catalogue
//! and store, on two ports (why two: [`ServeConfig`]): FDB5's client asks
//! the catalogue for its stores and is told this server's store port, so
//! archive, list, axes, inspect and read all come here. Configured so, it
//! plays one role, as FDB5's servers do: a catalogue whose stores are other
//! servers, or a store.
//!
//! ```no_run
//! # fn main() -> fieldstore::Result<()> {
//! use fieldstore_serve::{ServeConfig, Server};
//! let config = ServeConfig::from_file("server.yaml".as_ref(), [127, 0, 0, 1].into())?;
//! let server = Server::new(config)?;
//! let listeners = server.bind()?;
//! server.run(listeners); // until the process ends
//! # Ok(())
//! # }
//! ```
//!
//! # What one client can do to others
//! Nothing but share the machine: every wait is bounded (a handshake, a
//! whole frame once it starts, an idle connection, every write), every
//! buffer is bounded before its bytes arrive (per connection and in total,
//! with back-pressure), the number of connections is capped (so are the
//! threads: at most two per connection, and one more for a connection
//! that watches), a watcher is told of flushes by
//! its own thread, never by the flushing client's, and what a client parks
//! or watches is its own. The bounds and their defaults: [`Limits`];
//! the threat model: docs/serve.md.
//!
//! # Layers
//! Each module names only modules listed before it (the `layers` test
//! checks the code against this list).
//! - `config`: the server's configuration (FDB5's server config shape)
//!   and its limits.
//! - `wire`: fieldstore's keys, schemas and locations as FDB5 sends them.
//! - `budget`: bytes held at once, per connection and in total.
//! - `frames`: reading a frame within its deadlines and budgets.
//! - `pending`: fields between FDB5's two archive steps.
//! - `watch`: the watchers' registry and their flags.
//! - `shared`: what every connection shares (the [`Server`]).
//! - `conn`: a connection after its handshake, its clients, its replies.
//! - `lookup`: list, axes, inspect, exists.
//! - `read`: a field's bytes, verified.
//! - `archive`: the two archive steps and flush.
//! - `wipe`: FDB5's remote wipe.
//! - `dispatch`: the read loops and what each message does.
//! - `handshake`: the startup exchange, then the connection served.
//! - `server`: binding the ports and accepting connections.

mod archive;
mod budget;
mod config;
mod conn;
mod dispatch;
mod frames;
mod handshake;
mod lookup;
mod pending;
mod read;
mod server;
mod shared;
mod watch;
mod wipe;
mod wire;

pub use config::{Limits, Role, ServeConfig, DEFAULT_PORT};
pub use server::Listeners;
pub use shared::Server;
