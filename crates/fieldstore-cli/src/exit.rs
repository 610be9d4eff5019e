//! Exit codes: one per [`ErrorKind`], so that scripts can tell "fix your
//! input" from "retry later" from "report a bug". The table is documented in
//! `docs/cli.md`; changing a number is a breaking change.

use fieldstore::ErrorKind;

/// Success.
pub(crate) const OK: u8 = 0;
/// An internal error, or an I/O error of no more specific kind.
pub(crate) const FAILURE: u8 = 1;
/// Bad usage or invalid input: a malformed request or key, a key that does
/// not fit the schema. Also what clap uses for bad arguments.
pub(crate) const INVALID_INPUT: u8 = 2;
/// A malformed configuration or schema.
pub(crate) const INVALID_CONFIG: u8 = 3;
/// A named file, root or dataset does not exist.
pub(crate) const NOT_FOUND: u8 = 4;
/// Stored data failed an integrity check.
pub(crate) const CORRUPT: u8 = 5;
/// No space left.
pub(crate) const STORAGE_FULL: u8 = 6;
/// Permission denied, read-only file system or root.
pub(crate) const PERMISSION_DENIED: u8 = 7;
/// The dataset is locked against the operation.
pub(crate) const LOCKED: u8 = 8;
/// A transient failure: retrying may succeed.
pub(crate) const UNAVAILABLE: u8 = 9;
/// The operation is not supported by this build or backend.
pub(crate) const UNSUPPORTED: u8 = 10;
/// What was waited for did not happen in time (`retrieve --wait`).
pub(crate) const TIMED_OUT: u8 = 11;

/// The exit code for an error of `kind`.
pub(crate) fn code(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::InvalidInput => INVALID_INPUT,
        ErrorKind::InvalidConfig => INVALID_CONFIG,
        ErrorKind::NotFound => NOT_FOUND,
        ErrorKind::Corrupt => CORRUPT,
        ErrorKind::StorageFull => STORAGE_FULL,
        ErrorKind::PermissionDenied => PERMISSION_DENIED,
        ErrorKind::Locked => LOCKED,
        ErrorKind::Unavailable => UNAVAILABLE,
        ErrorKind::Unsupported => UNSUPPORTED,
        ErrorKind::TimedOut => TIMED_OUT,
        ErrorKind::Io | ErrorKind::Internal => FAILURE,
        _ => FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_distinct_documented_code() {
        let table = [
            (ErrorKind::Io, 1),
            (ErrorKind::Internal, 1),
            (ErrorKind::InvalidInput, 2),
            (ErrorKind::InvalidConfig, 3),
            (ErrorKind::NotFound, 4),
            (ErrorKind::Corrupt, 5),
            (ErrorKind::StorageFull, 6),
            (ErrorKind::PermissionDenied, 7),
            (ErrorKind::Locked, 8),
            (ErrorKind::Unavailable, 9),
            (ErrorKind::Unsupported, 10),
            (ErrorKind::TimedOut, 11),
        ];
        for (kind, want) in table {
            assert_eq!(code(kind), want, "{kind:?}");
        }
        assert_eq!(OK, 0);
        // docs/cli.md lists the same table.
        let doc = include_str!("../../../docs/cli.md");
        for (kind, want) in table {
            let row = format!("| {want} | {} |", kind.as_str());
            assert!(doc.contains(&row), "docs/cli.md lacks the row `{row}`");
        }
    }
}
