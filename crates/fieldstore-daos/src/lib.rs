//! fieldstore DAOS backend (in progress).
