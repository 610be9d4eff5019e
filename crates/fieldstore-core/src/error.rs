//! The one public error type of fieldstore.
//!
//! An [`Error`] carries an [`ErrorKind`] that tells the caller *what to do*
//! (fix the input, retry, give up, report a bug), a human message that names
//! *what is wrong and where*, and optionally the underlying cause.
//!
//! Modules keep detailed private error enums (`KeyError`, `SchemaError`, …)
//! and map them to an `Error` at the module boundary; the detailed enum
//! becomes the error's `source`, so nothing is lost for debugging.

use std::fmt;

/// What the caller should do about an error.
///
/// New kinds may be added: match with a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A key, request, field or argument is malformed or does not fit the
    /// schema. Fix the input; retrying is pointless.
    InvalidInput,
    /// A schema or configuration is malformed. Fix the file named in the
    /// message.
    InvalidConfig,
    /// A named thing (a file, a root, a dataset) does not exist.
    /// Note: retrieving a field that does not exist is *not* an error.
    NotFound,
    /// The operation is not permitted (file permissions, read-only root).
    PermissionDenied,
    /// The storage is full. Free space, then retry.
    StorageFull,
    /// A transient failure (a server down, a timeout). Retrying may succeed.
    Unavailable,
    /// Stored data failed an integrity check. The damaged item is named in
    /// the message; it is never returned as data.
    Corrupt,
    /// The dataset is locked against this operation (see `control`).
    Locked,
    /// What was waited for did not happen before the deadline (a field
    /// `retrieve` waited for was not flushed): wait longer, or check the
    /// writers.
    TimedOut,
    /// The backend does not implement this operation.
    Unsupported,
    /// Any other I/O failure.
    Io,
    /// A bug in fieldstore. Please report it.
    Internal,
}

impl ErrorKind {
    /// A short lower-case name, stable across versions (used by the CLI and
    /// the bindings).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::InvalidConfig => "invalid configuration",
            ErrorKind::NotFound => "not found",
            ErrorKind::PermissionDenied => "permission denied",
            ErrorKind::StorageFull => "storage full",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Corrupt => "corrupt data",
            ErrorKind::Locked => "locked",
            ErrorKind::TimedOut => "timed out",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Io => "I/O error",
            ErrorKind::Internal => "internal error",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// fieldstore's error: a kind, a message, and an optional cause.
#[derive(thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

/// `Result<T, fieldstore_core::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// An error of `kind` whose message is `source`'s, keeping `source` as the
    /// cause.
    pub fn from_source<E>(kind: ErrorKind, source: E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        Error::new(kind, source.to_string()).with_source(source)
    }

    /// Attach a cause.
    pub fn with_source<E>(mut self, source: E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        self.source = Some(Box::new(source));
        self
    }

    /// Prefix the message with where the error happened (`"while archiving
    /// field 3 of x.grib"`). The kind and the cause are unchanged.
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// What the caller should do.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Convenience: an [`ErrorKind::InvalidInput`] error.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidInput, message)
    }

    /// Convenience: an [`ErrorKind::Corrupt`] error.
    pub fn corrupt(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Corrupt, message)
    }

    /// Convenience: an [`ErrorKind::Internal`] error.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, message)
    }

    /// Map an I/O error to a kind, naming `what` (a path, an object) in the
    /// message.
    pub fn io(what: impl fmt::Display, err: std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let kind = match err.kind() {
            K::NotFound => ErrorKind::NotFound,
            K::PermissionDenied | K::ReadOnlyFilesystem => ErrorKind::PermissionDenied,
            K::StorageFull | K::QuotaExceeded => ErrorKind::StorageFull,
            K::TimedOut | K::Interrupted | K::WouldBlock | K::ConnectionRefused => {
                ErrorKind::Unavailable
            }
            K::InvalidData | K::UnexpectedEof => ErrorKind::Corrupt,
            _ => ErrorKind::Io,
        };
        Error::new(kind, format!("{what}: {err}")).with_source(err)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(source) = &self.source {
            d.field("source", source);
        }
        d.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_map_to_kinds_and_name_the_path() {
        let e = Error::io(
            "/data/x.toc",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().starts_with("/data/x.toc: "), "{e}");
        let e = Error::io(
            "/ro",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    }

    #[test]
    fn context_prefixes_message_and_keeps_kind() {
        let e = Error::invalid_input("bad").context("field 3 of x.grib");
        assert_eq!(e.to_string(), "field 3 of x.grib: bad");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn the_cause_is_the_source() {
        use std::error::Error as _;
        let e = Error::from_source(ErrorKind::Io, std::io::Error::other("disk"));
        assert_eq!(e.to_string(), "disk");
        assert_eq!(e.source().map(|s| s.to_string()).as_deref(), Some("disk"));
        let e = Error::internal("bug").with_source(std::fmt::Error);
        assert_eq!(
            e.source().map(|s| s.to_string()).as_deref(),
            Some("an error occurred when formatting an argument")
        );
        assert!(Error::corrupt("bad").source().is_none());
        assert_eq!(format!("{:>6}", Error::corrupt("bad")), "bad", "as written");
    }
}
