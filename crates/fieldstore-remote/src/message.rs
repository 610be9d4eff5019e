//! The message types a frame header names (FDB5's `remote::Message`).
//!
//! Numbers are FDB5's, which groups them: 0–6 connection management,
//! 100–115 API calls, 150–154 the steps of a remote wipe, 200–202 replies,
//! 300–301 data.

use std::fmt;

/// One message type. A header carries the raw number; [`Message::from_u16`]
/// names it, so an unknown number is reported, not misread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Message {
    /// No message (FDB5 uses it for "nothing read").
    None = 0,
    /// Close this connection (client id 0).
    Exit = 1,
    /// The handshake, on both connections.
    Startup = 2,
    /// An error; the payload is the text, not a `Stream`.
    Error = 3,
    /// The catalogue's list of store endpoints.
    Stores = 4,
    /// The schema (top level, or of the dataset named in the payload).
    Schema = 5,
    /// A logical client is done with this connection.
    Stop = 6,
    /// Flush: the payload is the number of fields archived since the last.
    Flush = 100,
    /// The catalogue client starts sending field locations.
    Archive = 101,
    /// Retrieve (not sent by 5.25's tools: they list, then read).
    Retrieve = 102,
    /// List.
    List = 103,
    /// Dump.
    Dump = 104,
    /// Status.
    Status = 105,
    /// Wipe, first step (the catalogue's or a store's wipe state).
    Wipe = 106,
    /// Purge.
    Purge = 107,
    /// Stats.
    Stats = 108,
    /// Control (lock/unlock).
    Control = 109,
    /// Inspect: the newest location of each field a request names.
    Inspect = 110,
    /// Read one field location from a store.
    Read = 111,
    /// Move.
    Move = 112,
    /// The store client starts sending fields; also a store's reply with
    /// a field's location.
    Store = 113,
    /// Axes.
    Axes = 114,
    /// Whether a dataset exists.
    Exists = 115,
    /// Wipe: delete the URIs of the agreed wipe state.
    DoWipeUris = 150,
    /// Wipe: delete URIs nobody claims (unsafe wipe only).
    DoWipeUnknowns = 151,
    /// Wipe: remove what is left empty.
    DoWipeFinish = 152,
    /// Wipe: mask the index entries of wiped fields.
    DoMaskIndexEntries = 153,
    /// Wipe: everything of a dataset at once.
    DoUnsafeFullWipe = 154,
    /// A request was taken (with its reply payload, if any).
    Received = 200,
    /// The last blob of a streamed reply was sent.
    Complete = 201,
    /// FDB5 5.25's refusal of a call the server did not enable: the
    /// payload is the text `Unauthorized message: NAME(N)`, not a stream.
    Unauthorised = 202,
    /// One element of data.
    Blob = 300,
    /// Several blob frames in one payload.
    MultiBlob = 301,
    /// fieldstore's extension, not FDB5's: the client asks to be told of
    /// every flush the server makes visible (an empty `Blob` under this
    /// request each time). Sent only to a server whose startup reply says
    /// `fieldstoreWatch` ([`crate::startup::WATCH_KEY`]): FDB5's servers
    /// would refuse the number.
    Watch = 62720,
}

const ALL: &[Message] = &[
    Message::None,
    Message::Exit,
    Message::Startup,
    Message::Error,
    Message::Stores,
    Message::Schema,
    Message::Stop,
    Message::Flush,
    Message::Archive,
    Message::Retrieve,
    Message::List,
    Message::Dump,
    Message::Status,
    Message::Wipe,
    Message::Purge,
    Message::Stats,
    Message::Control,
    Message::Inspect,
    Message::Read,
    Message::Move,
    Message::Store,
    Message::Axes,
    Message::Exists,
    Message::DoWipeUris,
    Message::DoWipeUnknowns,
    Message::DoWipeFinish,
    Message::DoMaskIndexEntries,
    Message::DoUnsafeFullWipe,
    Message::Received,
    Message::Complete,
    Message::Unauthorised,
    Message::Blob,
    Message::MultiBlob,
    Message::Watch,
];

impl Message {
    /// The message numbered `n`, if FDB5 5.25 has one.
    pub fn from_u16(n: u16) -> Option<Message> {
        ALL.iter().copied().find(|m| *m as u16 == n)
    }

    /// Its number on the wire.
    pub fn code(self) -> u16 {
        self as u16
    }

    /// Every message type.
    pub fn all() -> &'static [Message] {
        ALL
    }
}

impl Message {
    /// Whether a call of this message is allowed under `features`, the
    /// agreed [`EnabledFeatures`](crate::startup::feature) mask, by FDB5
    /// 5.25's rule: an API call (100–149) needs its own bit, a wipe step
    /// (150–154) the `Wipe` bit, anything else is always allowed.
    pub fn enabled(self, features: i64) -> bool {
        let n = self.code();
        match n {
            100..=149 => features & crate::startup::feature(self) != 0,
            150..=154 => features & crate::startup::feature(Message::Wipe) != 0,
            _ => true,
        }
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}({})", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_and_unknown_numbers_are_none() {
        for m in Message::all() {
            assert_eq!(Message::from_u16(m.code()), Some(*m));
        }
        assert_eq!(Message::from_u16(7), None);
        assert_eq!(Message::from_u16(116), None);
        assert_eq!(Message::Store.code(), 113);
        assert_eq!(Message::Axes.code(), 114);
        assert_eq!(Message::Unauthorised.code(), 202);
    }

    #[test]
    fn calls_are_enabled_by_their_bit_and_wipe_steps_by_wipe() {
        let no_wipe = crate::startup::DEFAULT_FEATURES;
        let wipe = no_wipe | crate::startup::feature(Message::Wipe);
        assert!(!Message::Wipe.enabled(no_wipe));
        assert!(!Message::DoWipeUris.enabled(no_wipe));
        assert!(Message::DoUnsafeFullWipe.enabled(wipe));
        assert!(Message::List.enabled(no_wipe));
        assert!(!Message::Stats.enabled(0));
        assert!(Message::Stores.enabled(0) && Message::Watch.enabled(0));
    }
}
