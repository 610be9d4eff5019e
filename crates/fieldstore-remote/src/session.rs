//! Session ids and endpoints, as exchanged in the handshake.

use crate::stream::{DecodeError, Reader, Writer};

/// eckit's `SessionID`: who opened a connection, so that the data
/// connection can be matched to its control connection. Encoded as host
/// name (string), process id (`int`), time (`unsigned long long`) and a
/// random number (`long`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionId {
    /// The host name.
    pub host: String,
    /// The process id.
    pub pid: i32,
    /// A time stamp (eckit's choice of units).
    pub time: u64,
    /// A random number.
    pub random: i32,
}

impl SessionId {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        w.string(&self.host)
            .int(self.pid)
            .ulong_long(self.time)
            .long(self.random);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<SessionId, DecodeError> {
        Ok(SessionId {
            host: r.string()?,
            pid: r.int()?,
            time: r.ulong_long()?,
            random: r.long()?,
        })
    }
}

/// eckit's `net::Endpoint`: a host name (string) and a port (`int`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// Host name or address.
    pub host: String,
    /// Port.
    pub port: i32,
}

impl Endpoint {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        w.string(&self.host).int(self.port);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<Endpoint, DecodeError> {
        Ok(Endpoint {
            host: r.string()?,
            port: r.int()?,
        })
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// This host's name as a session names it (`localhost` if the kernel
/// gives none).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}
