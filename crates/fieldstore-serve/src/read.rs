//! Read: a field's bytes, verified, streamed to the client that asks.
//!
//! A location this server hands out carries the field's checksum (the
//! `crc32c` query key of its URI, kept by FDB5's clients as they send the
//! location back), so the store verifies the bytes before any is sent: a
//! damaged field is an `Error`, never bytes. A location without one (an
//! older listing, a client that drops the key) is read unverified.
//! The field's room is taken from the connection's and the server's
//! budgets while it is held.

use std::time::Instant;

use fieldstore::{Error, ErrorKind, Result};
use fieldstore_remote::location::FieldLocation as WireLocation;
use fieldstore_remote::Message;

use crate::budget::Permit;
use crate::conn::Conn;
use crate::wire;

/// Bytes per data blob of a read (FDB5's: just under 4 MiB).
const READ_CHUNK: usize = (4 << 20) - (2 << 10);

impl Conn {
    /// Read a field this server handed out. A `file` location must lie
    /// under one of the configured roots: a client cannot make the server
    /// read any file it names.
    pub(crate) fn read(&self, client: u32, request: u32, location: &WireLocation) -> Result<()> {
        let loc = wire::from_wire_location(location)?;
        if let Some(path) = loc.uri.strip_prefix("file://") {
            let path = std::path::Path::new(path);
            let inside = !path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
                && self
                    .server
                    .config
                    .store
                    .roots
                    .iter()
                    .any(|r| path.starts_with(&r.path));
            if !inside {
                return Err(Error::new(
                    ErrorKind::PermissionDenied,
                    format!("{} is not under a root of this server", path.display()),
                ));
            }
        }
        let mut room = Permit::default();
        let deadline = Instant::now() + self.server.config.limits.frame;
        room.grow(&[&self.memory, &self.server.memory], loc.length, deadline)
            .map_err(|full| {
                Error::new(
                    ErrorKind::StorageFull,
                    format!(
                        "no room to read a field of {} bytes: {} of {} bytes held by reads and \
                         archives (connectionMemoryLimit, memoryLimit)",
                        loc.length,
                        full.in_use(),
                        full.limit()
                    ),
                )
            })?;
        let mut buf = Vec::new();
        self.server.reader.store().read(&loc, &mut buf)?;
        for chunk in buf.chunks(READ_CHUNK) {
            self.send(false, Message::Blob, client, request, chunk)?;
        }
        self.send(false, Message::Complete, client, request, &[])
    }
}
