//! `fieldstore notify`: tell an Aviso server (ECMWF's `aviso-server`,
//! listened to with `pyaviso`'s `aviso listen`) of every flush that makes
//! fields visible.
//!
//! The publisher follows the store as `fieldstore watch` does (the
//! catalogue's waiter: inotify, RADOS watch/notify, polling, or the
//! server's word through `type: remote`), so it reads the store and is
//! never in a writer's flush path. Each look of the watch (the fields of
//! the flushes it found) becomes one notification per distinct identifier
//! ([`IdentifierMap`]), posted to `POST /api/v1/notification` in order
//! ([`AvisoHttp`]).
//!
//! Guarantees ([`publish`]): nothing is lost, across the publisher's own
//! restart (SIGKILL included) or the server's absence, because a field is
//! recorded as notified in the state file ([`Journal`]) only after the
//! server accepted the notification that names it, and a restarted
//! publisher announces every field of the request the state file does not
//! record. A notification posted but not yet recorded when the publisher
//! died is posted again: a duplicate, counted. While the server is away
//! or refuses, notifications stay pending (at most `max_pending` in
//! memory; the watch is not read further meanwhile) and are retried with a
//! back-off; the log says how many are pending and why.

mod identifier;
mod journal;
mod notification;
mod publisher;
mod sink;

pub use identifier::IdentifierMap;
pub use journal::{Journal, Recovered};
pub use notification::{group, Notification, Payload, Pending};
pub use publisher::{publish, PublishOptions, PublishStats};
pub use sink::{AvisoHttp, PostError, Sink};
