//! The handshake and the configuration it negotiates.
//!
//! 1. On the control connection the client sends `Startup` (client id 0,
//!    request id 0): its [`SessionId`], the endpoint it dialled, the
//!    remote protocol version it speaks (an `unsigned int`, 3 for FDB5
//!    5.25, distinct from the frame version 12) and its configuration, an
//!    eckit [`Value`] map: `RemoteFieldLocation` (versions of the location
//!    encoding it reads), `NumberOfConnections` (1, 2 or both),
//!    optionally `PreferSingleConnection`, and `EnabledFeatures` (a bit per
//!    API message, bit *i* for message 100 + *i*).
//! 2. The server answers `Startup`: the client's session, its own, the
//!    data endpoint, and the agreed configuration (one location version,
//!    one number of connections, the features both enable).
//! 3. With two connections, the client then dials the data endpoint and
//!    sends `Startup` on it: both session ids, which the server checks
//!    against the control connection's. With one, everything goes over
//!    the control connection and the data endpoint is the client's own.

use crate::message::Message;
use crate::session::{Endpoint, SessionId};
use crate::stream::{DecodeError, Reader, Writer};
use crate::value::Value;

/// The remote protocol version FDB5 5.25 speaks in its startup message.
pub const REMOTE_PROTOCOL_VERSION: u32 = 3;

/// The features (API messages) FDB5 5.25 enables by default: flush,
/// archive, retrieve, list, stats, inspect, read, store, axes, exists.
pub const DEFAULT_FEATURES: i64 = feature(Message::Flush)
    | feature(Message::Archive)
    | feature(Message::Retrieve)
    | feature(Message::List)
    | feature(Message::Stats)
    | feature(Message::Inspect)
    | feature(Message::Read)
    | feature(Message::Store)
    | feature(Message::Axes)
    | feature(Message::Exists);

/// The feature bit of an API message (100..=163).
pub const fn feature(m: Message) -> i64 {
    1i64 << (m as u16 - Message::Flush as u16)
}

/// The client's startup message.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientStartup {
    /// The client's session.
    pub session: SessionId,
    /// The endpoint the client dialled.
    pub endpoint: Endpoint,
    /// The remote protocol version.
    pub protocol_version: u32,
    /// The client's configuration.
    pub config: Value,
}

impl ClientStartup {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.session.encode(w);
        self.endpoint.encode(w);
        w.uint(self.protocol_version);
        self.config.encode(w);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<ClientStartup, DecodeError> {
        Ok(ClientStartup {
            session: SessionId::decode(r)?,
            endpoint: Endpoint::decode(r)?,
            protocol_version: r.uint()?,
            config: Value::decode(r)?,
        })
    }
}

/// The server's startup reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStartup {
    /// The client's session, echoed.
    pub client_session: SessionId,
    /// The server's session.
    pub server_session: SessionId,
    /// Where to open the data connection.
    pub data_endpoint: Endpoint,
    /// The agreed configuration.
    pub config: Value,
}

impl ServerStartup {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.client_session.encode(w);
        self.server_session.encode(w);
        self.data_endpoint.encode(w);
        self.config.encode(w);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<ServerStartup, DecodeError> {
        Ok(ServerStartup {
            client_session: SessionId::decode(r)?,
            server_session: SessionId::decode(r)?,
            data_endpoint: Endpoint::decode(r)?,
            config: Value::decode(r)?,
        })
    }
}

/// The startup message on the data connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataStartup {
    /// The client's session.
    pub client_session: SessionId,
    /// The server's session, as the server announced it.
    pub server_session: SessionId,
}

impl DataStartup {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.client_session.encode(w);
        self.server_session.encode(w);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<DataStartup, DecodeError> {
        Ok(DataStartup {
            client_session: SessionId::decode(r)?,
            server_session: SessionId::decode(r)?,
        })
    }
}

/// What client and server agreed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agreed {
    /// One connection (control only) or two.
    pub single_connection: bool,
    /// The location encoding version.
    pub location_version: i64,
    /// Features both enable.
    pub features: i64,
    /// The server pushes flushes to watchers (fieldstore's extension,
    /// [`WATCH_KEY`]); set by a server that does, never by `negotiate`.
    pub watch: bool,
}

/// The key of the agreed configuration by which a server says that it
/// takes [`Message::Watch`] (fieldstore's extension; FDB5's clients ignore
/// keys they do not know).
pub const WATCH_KEY: &str = "fieldstoreWatch";

impl Agreed {
    /// The configuration value sent back in [`ServerStartup::config`].
    pub fn to_value(&self) -> Value {
        let mut pairs = vec![
            (
                Value::String("RemoteFieldLocation".into()),
                Value::List(vec![Value::Number(self.location_version)]),
            ),
            (
                Value::String("NumberOfConnections".into()),
                Value::List(vec![Value::Number(if self.single_connection {
                    1
                } else {
                    2
                })]),
            ),
            (
                Value::String("EnabledFeatures".into()),
                Value::Number(self.features),
            ),
        ];
        if self.watch {
            pairs.push((Value::String(WATCH_KEY.into()), Value::Bool(true)));
        }
        Value::Map(pairs)
    }
}

/// Agree with a client's configuration: `connections` are the numbers of
/// connections this server accepts (a subset of `[1, 2]`), `features` the
/// messages it serves.
///
/// Rules (FDB5's): location versions and numbers of connections are
/// intersected, the highest common one chosen, except that a client's
/// `PreferSingleConnection` picks 1 (or `false` picks 2) when both are
/// common. A client that sends no `NumberOfConnections` accepts both; one
/// that sends no `EnabledFeatures` asks for FDB5's defaults
/// ([`DEFAULT_FEATURES`], without wipe).
///
/// # Errors
/// A message for the client when nothing is common.
pub fn negotiate(client: &Value, connections: &[i64], features: i64) -> Result<Agreed, String> {
    let versions = client
        .get("RemoteFieldLocation")
        .and_then(Value::as_numbers)
        .unwrap_or_else(|| vec![1]);
    let location_version = versions
        .iter()
        .copied()
        .filter(|v| *v == 1)
        .max()
        .ok_or_else(|| {
            format!("RemoteFieldLocation versions {versions:?}: this server reads version 1 only")
        })?;
    let offered = client
        .get("NumberOfConnections")
        .and_then(Value::as_numbers)
        .unwrap_or_else(|| vec![1, 2]);
    let mut common: Vec<i64> = offered
        .iter()
        .copied()
        .filter(|n| connections.contains(n))
        .collect();
    common.sort_unstable();
    common.dedup();
    let mut chosen = *common.last().ok_or_else(|| {
        format!(
            "number of connections not matching: client supports {offered:?}, server supports \
             {connections:?}"
        )
    })?;
    if let Some(Value::Bool(prefer_single)) = client.get("PreferSingleConnection") {
        let wanted = if *prefer_single { 1 } else { 2 };
        if common.contains(&wanted) {
            chosen = wanted;
        }
    }
    // As FDB5 5.25's server: a client that says nothing asks for FDB5's
    // defaults (no wipe).
    let client_features = match client.get("EnabledFeatures") {
        Some(Value::Number(n)) => *n,
        _ => DEFAULT_FEATURES,
    };
    Ok(Agreed {
        single_connection: chosen == 1,
        location_version,
        features: client_features & features,
        watch: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(nc: &[i64], prefer: Option<bool>) -> Value {
        let mut pairs = vec![(
            Value::String("NumberOfConnections".into()),
            Value::List(nc.iter().map(|n| Value::Number(*n)).collect()),
        )];
        if let Some(p) = prefer {
            pairs.push((
                Value::String("PreferSingleConnection".into()),
                Value::Bool(p),
            ));
        }
        Value::Map(pairs)
    }

    #[test]
    fn two_connections_unless_the_client_prefers_one() {
        let a = negotiate(&client(&[1, 2], None), &[1, 2], DEFAULT_FEATURES).unwrap();
        assert!(!a.single_connection);
        let a = negotiate(&client(&[1, 2], Some(true)), &[1, 2], DEFAULT_FEATURES).unwrap();
        assert!(a.single_connection);
        let a = negotiate(&client(&[1, 2], None), &[1], DEFAULT_FEATURES).unwrap();
        assert!(a.single_connection);
        assert!(negotiate(&client(&[2], None), &[1], DEFAULT_FEATURES).is_err());
    }

    #[test]
    fn fdb5_default_features_are_0xed0f() {
        assert_eq!(DEFAULT_FEATURES, 0xED0F);
        assert_eq!(feature(Message::Wipe), 1 << 6);
    }
}
