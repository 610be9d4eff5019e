//! The token format: what C holds instead of an address.
//!
//! A token is `serial << 8 | tag << 4`: never NULL, 16-byte aligned (it
//! looks like a pointer to C), tagged with the object's type (bits 4–7, a
//! [`Kind`]'s tag, 1 to 15), and unique for the life of the process (its
//! table never reuses a serial). So a token of another type, one deleted,
//! or one the library never issued (garbage, or another library's pointer)
//! is recognised and named in an error; no token is ever dereferenced.

use std::ffi::c_void;

/// The object types of one C API: the tag its tokens carry.
pub trait Kind: Copy + Eq + Send + Sync + 'static {
    /// The tag, 1 to 15 (0 is no type).
    fn tag(self) -> u8;
    /// The type whose tag is `tag`, if any.
    fn from_tag(tag: u8) -> Option<Self>;
    /// The C type's name, for messages (`fdb_handle_t`).
    fn c_name(self) -> &'static str;
}

/// A token that names no live object of the type asked for: the message
/// names the argument's C type and the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError(pub String);

/// The token of object `serial` of type `kind`.
pub fn encode<K: Kind>(serial: u64, kind: K) -> *mut c_void {
    (serial << 8 | u64::from(kind.tag() & 0xf) << 4) as usize as *mut c_void
}

/// The serial `token` carries, if it is a token of type `want` that was
/// issued: `issued(serial)` says whether the table issued that serial (it
/// may since have been deleted).
///
/// # Errors
/// NULL; not a token this library issued (wrong format, or a serial never
/// issued); a token of another type (named).
pub fn serial_of<K: Kind>(
    token: *const c_void,
    want: K,
    issued: impl FnOnce(u64) -> bool,
) -> Result<u64, TokenError> {
    let name = want.c_name();
    if token.is_null() {
        return Err(TokenError(format!("the {name} argument is NULL")));
    }
    let raw = token as usize as u64;
    let serial = raw >> 8;
    let ours = raw & 0xf == 0 && serial != 0 && issued(serial);
    match K::from_tag(((raw >> 4) & 0xf) as u8).filter(|_| ours) {
        Some(k) if k == want => Ok(serial),
        Some(k) => Err(TokenError(format!(
            "the {name} argument {token:p} is a {}, not a {name}",
            k.c_name()
        ))),
        None => Err(TokenError(format!(
            "the {name} argument {token:p} is not an object this library created"
        ))),
    }
}

/// The error for a token of type `kind` whose object was deleted.
pub fn deleted<K: Kind>(token: *const c_void, kind: K) -> TokenError {
    TokenError(format!(
        "the {} argument {token:p} was deleted",
        kind.c_name()
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Two types, for the tests of this crate.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum TestKind {
        A = 1,
        B = 2,
    }

    impl Kind for TestKind {
        fn tag(self) -> u8 {
            self as u8
        }
        fn from_tag(tag: u8) -> Option<Self> {
            match tag {
                1 => Some(TestKind::A),
                2 => Some(TestKind::B),
                _ => None,
            }
        }
        fn c_name(self) -> &'static str {
            match self {
                TestKind::A => "a_t",
                TestKind::B => "b_t",
            }
        }
    }

    #[test]
    fn a_token_is_checked_for_null_format_issue_and_type() {
        let t = encode(5, TestKind::A);
        assert_eq!(t as usize, 5 << 8 | 1 << 4);
        assert_eq!(serial_of(t, TestKind::A, |s| s < 6), Ok(5));
        let msg = |r: Result<u64, TokenError>| r.unwrap_err().0;
        assert_eq!(
            msg(serial_of(std::ptr::null(), TestKind::A, |_| true)),
            "the a_t argument is NULL"
        );
        assert!(msg(serial_of(t, TestKind::B, |_| true)).contains("is a a_t, not a b_t"));
        assert!(msg(serial_of(t, TestKind::A, |s| s < 5)).contains("not an object this library"));
        let odd = (t as usize | 1) as *const c_void;
        assert!(msg(serial_of(odd, TestKind::A, |_| true)).contains("not an object"));
        let untyped = (5usize << 8) as *const c_void;
        assert!(msg(serial_of(untyped, TestKind::A, |_| true)).contains("not an object"));
        assert!(deleted(t, TestKind::A).0.ends_with("was deleted"));
    }
}
