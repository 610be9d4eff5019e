//! eckit's `Stream` serialisation, both directions.
//!
//! Every value is a one-byte tag followed by its bytes; numbers are
//! big-endian. The tags this protocol meets:
//!
//! | tag | value | bytes after the tag |
//! |-----|-------|---------------------|
//! | 1  | start of object | then the class name as a string |
//! | 2  | end of object | – |
//! | 5  | `int` (and `bool`, as 0/1) | 4 |
//! | 6  | `unsigned int` | 4 |
//! | 9  | `long` | 4 (eckit writes 32 bits whatever the host's long) |
//! | 10 | `unsigned long` (and `size_t`) | 4 |
//! | 11 | `long long` | 8 |
//! | 12 | `unsigned long long` | 8 |
//! | 14 | `double` | 8 (IEEE 754) |
//! | 15 | string | 4-byte length, then the bytes |
//! | 16 | blob | 4-byte length, then the bytes |
//! | 17 | exception | a string: the sender's error |
//!
//! An object (eckit's `Streamable`) is: start tag, class name, the class's
//! fields, end tag. Like eckit, the reader skips an end-of-object tag
//! where it expects a value (eckit's `readTag` does), so readers of nested
//! objects need not account for every end tag; [`Reader::end_object`] is
//! strict for the places that do.

/// Tag: start of an object.
pub const TAG_START_OBJ: u8 = 1;
/// Tag: end of an object.
pub const TAG_END_OBJ: u8 = 2;
/// Tag: `int`.
pub const TAG_INT: u8 = 5;
/// Tag: `unsigned int`.
pub const TAG_UINT: u8 = 6;
/// Tag: `long` (32 bits on the wire).
pub const TAG_LONG: u8 = 9;
/// Tag: `unsigned long` (32 bits on the wire).
pub const TAG_ULONG: u8 = 10;
/// Tag: `long long`.
pub const TAG_LONG_LONG: u8 = 11;
/// Tag: `unsigned long long`.
pub const TAG_ULONG_LONG: u8 = 12;
/// Tag: `double`.
pub const TAG_DOUBLE: u8 = 14;
/// Tag: string.
pub const TAG_STRING: u8 = 15;
/// Tag: blob.
pub const TAG_BLOB: u8 = 16;
/// Tag: exception (a string follows).
pub const TAG_EXCEPTION: u8 = 17;

/// Why a payload could not be decoded. Each says what was expected and at
/// which byte of the payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The payload ended early.
    #[error("payload ends at byte {at} while reading {what}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Byte offset.
        at: usize,
    },
    /// Another tag than the one expected.
    #[error("at byte {at}: expected {want}, found tag {got}")]
    BadTag {
        /// What was expected.
        want: &'static str,
        /// The tag found.
        got: u8,
        /// Byte offset.
        at: usize,
    },
    /// The sender serialised an exception instead of a value.
    #[error("the peer sent an error: {0}")]
    Remote(String),
    /// A well-formed value that makes no sense here.
    #[error("at byte {at}: {what}")]
    Invalid {
        /// What is wrong.
        what: String,
        /// Byte offset.
        at: usize,
    },
    /// Bytes left over after a complete message.
    #[error("{0} unexpected bytes after the message")]
    Trailing(usize),
}

/// Encodes values into a growing buffer.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Writer {
        Writer::default()
    }

    /// The bytes written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Forget what was written, keeping the buffer (one writer for many
    /// payloads).
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// The bytes written so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    fn tag(&mut self, t: u8) -> &mut Self {
        self.buf.push(t);
        self
    }

    /// An untagged 4-byte length (of a string or blob). eckit refuses
    /// longer ones; so does FDB5's frame, whose size is 32 bits.
    fn len(&mut self, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.buf.extend_from_slice(&n.to_be_bytes());
    }

    /// An `int`.
    pub fn int(&mut self, v: i32) -> &mut Self {
        self.tag(TAG_INT);
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A `bool` (eckit writes an `int`).
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.int(i32::from(v))
    }

    /// An `unsigned int`.
    pub fn uint(&mut self, v: u32) -> &mut Self {
        self.tag(TAG_UINT);
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A `long` (32 bits on the wire).
    pub fn long(&mut self, v: i32) -> &mut Self {
        self.tag(TAG_LONG);
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// An `unsigned long` or `size_t` (32 bits on the wire: eckit
    /// truncates larger values, so counts must fit).
    pub fn ulong(&mut self, v: u32) -> &mut Self {
        self.tag(TAG_ULONG);
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A count as `size_t`, saturating at `u32::MAX` (no count this
    /// protocol sends comes near).
    pub fn count(&mut self, n: usize) -> &mut Self {
        self.ulong(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// A `long long`.
    pub fn long_long(&mut self, v: i64) -> &mut Self {
        self.tag(TAG_LONG_LONG);
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// An `unsigned long long`.
    pub fn ulong_long(&mut self, v: u64) -> &mut Self {
        self.tag(TAG_ULONG_LONG);
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A `double`.
    pub fn double(&mut self, v: f64) -> &mut Self {
        self.tag(TAG_DOUBLE);
        self.buf.extend_from_slice(&v.to_bits().to_be_bytes());
        self
    }

    /// A string (bytes; FDB5's are UTF-8 or ASCII).
    pub fn string(&mut self, s: &str) -> &mut Self {
        self.tag(TAG_STRING);
        self.len(s.len());
        self.buf.extend_from_slice(s.as_bytes());
        self
    }

    /// A blob.
    pub fn blob(&mut self, b: &[u8]) -> &mut Self {
        self.tag(TAG_BLOB);
        self.len(b.len());
        self.buf.extend_from_slice(b);
        self
    }

    /// Start an object of class `class`.
    pub fn start_object(&mut self, class: &str) -> &mut Self {
        self.tag(TAG_START_OBJ);
        self.string(class)
    }

    /// End the current object.
    pub fn end_object(&mut self) -> &mut Self {
        self.tag(TAG_END_OBJ)
    }

    /// Untagged bytes (an archive blob's field follows its keys so).
    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }
}

/// Decodes values from a payload.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    /// Byte offset of the next read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Skip `prefix` if the bytes not read yet start with it (a value
    /// already decoded elsewhere: the encoding is self-delimiting, so a
    /// whole encoded value found here is that value); whether it did.
    pub fn skip_if(&mut self, prefix: &[u8]) -> bool {
        let here = &self.buf[self.pos..];
        if !prefix.is_empty() && here.starts_with(prefix) {
            self.pos += prefix.len();
            true
        } else {
            false
        }
    }

    /// The bytes from `start` to here (what was read since).
    pub fn since(&self, start: usize) -> &'a [u8] {
        &self.buf[start.min(self.pos)..self.pos]
    }

    /// The bytes not read yet, consuming them.
    pub fn rest(&mut self) -> &'a [u8] {
        let r = &self.buf[self.pos..];
        self.pos = self.buf.len();
        r
    }

    /// Fail unless everything was read.
    ///
    /// # Errors
    /// [`DecodeError::Trailing`].
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(DecodeError::Trailing(n)),
        }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::Truncated { what, at: self.pos });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// The next tag without consuming it (end-of-object tags included).
    pub fn peek_tag(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// Consume the tag `want`, skipping end-of-object tags before it as
    /// eckit does.
    fn expect(&mut self, want: u8, name: &'static str) -> Result<(), DecodeError> {
        loop {
            let at = self.pos;
            let t = self.array::<1>(name)?[0];
            if t == TAG_END_OBJ && want != TAG_END_OBJ {
                continue;
            }
            if t == want {
                return Ok(());
            }
            if t == TAG_EXCEPTION {
                let what = self.string_body("exception")?;
                return Err(DecodeError::Remote(what));
            }
            return Err(DecodeError::BadTag {
                want: name,
                got: t,
                at,
            });
        }
    }

    fn u32_body(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array::<4>(what)?))
    }

    fn u64_body(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array::<8>(what)?))
    }

    fn string_body(&mut self, what: &'static str) -> Result<String, DecodeError> {
        let n = self.u32_body(what)? as usize;
        let at = self.pos;
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| DecodeError::Invalid {
            what: format!("{what} is not UTF-8"),
            at,
        })
    }

    /// An `int`.
    ///
    /// # Errors
    /// [`DecodeError`] on another tag or too few bytes.
    pub fn int(&mut self) -> Result<i32, DecodeError> {
        self.expect(TAG_INT, "an int")?;
        Ok(self.u32_body("an int")? as i32)
    }

    /// A `bool` (an `int`, any non-zero value true, as in eckit).
    ///
    /// # Errors
    /// As [`Reader::int`].
    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.int()? != 0)
    }

    /// An `unsigned int`.
    ///
    /// # Errors
    /// As [`Reader::int`].
    pub fn uint(&mut self) -> Result<u32, DecodeError> {
        self.expect(TAG_UINT, "an unsigned int")?;
        self.u32_body("an unsigned int")
    }

    /// A `long`.
    ///
    /// # Errors
    /// As [`Reader::int`].
    pub fn long(&mut self) -> Result<i32, DecodeError> {
        self.expect(TAG_LONG, "a long")?;
        Ok(self.u32_body("a long")? as i32)
    }

    /// An `unsigned long` / `size_t`.
    ///
    /// # Errors
    /// As [`Reader::int`].
    pub fn ulong(&mut self) -> Result<u32, DecodeError> {
        self.expect(TAG_ULONG, "an unsigned long")?;
        self.u32_body("an unsigned long")
    }

    /// A count of items that take at least `min_item_bytes` each: refused
    /// when the payload could not hold them, so that no caller reserves
    /// memory for a count a hostile peer made up.
    ///
    /// # Errors
    /// As [`Reader::int`]; [`DecodeError::Invalid`] for an impossible count.
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = self.ulong()? as usize;
        if n.saturating_mul(min_item_bytes.max(1)) > self.remaining() {
            return Err(DecodeError::Invalid {
                what: format!(
                    "a count of {n} items does not fit the {} bytes left",
                    self.remaining()
                ),
                at,
            });
        }
        Ok(n)
    }

    /// A `long long`.
    ///
    /// # Errors
    /// As [`Reader::int`].
    pub fn long_long(&mut self) -> Result<i64, DecodeError> {
        self.expect(TAG_LONG_LONG, "a long long")?;
        Ok(self.u64_body("a long long")? as i64)
    }

    /// An `unsigned long long`.
    ///
    /// # Errors
    /// As [`Reader::int`].
    pub fn ulong_long(&mut self) -> Result<u64, DecodeError> {
        self.expect(TAG_ULONG_LONG, "an unsigned long long")?;
        self.u64_body("an unsigned long long")
    }

    /// A `double`.
    ///
    /// # Errors
    /// As [`Reader::int`].
    pub fn double(&mut self) -> Result<f64, DecodeError> {
        self.expect(TAG_DOUBLE, "a double")?;
        Ok(f64::from_bits(self.u64_body("a double")?))
    }

    /// A string.
    ///
    /// # Errors
    /// As [`Reader::int`]; [`DecodeError::Invalid`] if not UTF-8.
    pub fn string(&mut self) -> Result<String, DecodeError> {
        self.expect(TAG_STRING, "a string")?;
        self.string_body("a string")
    }

    /// A blob.
    ///
    /// # Errors
    /// As [`Reader::int`].
    pub fn blob(&mut self) -> Result<&'a [u8], DecodeError> {
        self.expect(TAG_BLOB, "a blob")?;
        let n = self.u32_body("a blob")? as usize;
        self.take(n, "a blob")
    }

    /// The start of an object; its class name.
    ///
    /// # Errors
    /// As [`Reader::int`].
    pub fn start_object(&mut self) -> Result<String, DecodeError> {
        self.expect(TAG_START_OBJ, "an object")?;
        self.string()
    }

    /// The start of an object of class `class`.
    ///
    /// # Errors
    /// As [`Reader::start_object`]; [`DecodeError::Invalid`] for another
    /// class.
    pub fn start_object_of(&mut self, class: &'static str) -> Result<(), DecodeError> {
        let at = self.pos;
        let got = self.start_object()?;
        if got != class {
            return Err(DecodeError::Invalid {
                what: format!("expected an object of class {class}, found {got}"),
                at,
            });
        }
        Ok(())
    }

    /// The end of an object (strict: the next tag must be it).
    ///
    /// # Errors
    /// [`DecodeError::BadTag`] otherwise.
    pub fn end_object(&mut self) -> Result<(), DecodeError> {
        self.expect(TAG_END_OBJ, "the end of an object")
    }

    /// Consume the next tag byte, whatever it is (for the anonymous
    /// objects FDB5 starts without a class name, after a
    /// [`Reader::peek_tag`]).
    pub fn skip_tag(&mut self) {
        if self.pos < self.buf.len() {
            self.pos += 1;
        }
    }

    /// Whether the next tag ends an object (or the payload ends).
    pub fn at_end_of_object(&self) -> bool {
        matches!(self.peek_tag(), None | Some(TAG_END_OBJ))
    }

    /// An error for the value just read.
    pub fn invalid(&self, what: impl Into<String>) -> DecodeError {
        DecodeError::Invalid {
            what: what.into(),
            at: self.pos,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_bytes_are_eckits() {
        let mut w = Writer::new();
        w.string("vm")
            .int(29586)
            .ulong(6)
            .bool(true)
            .long_long(60751);
        assert_eq!(
            w.bytes(),
            b"\x0f\x00\x00\x00\x02vm\x05\x00\x00\x73\x92\x0a\x00\x00\x00\x06\x05\x00\x00\x00\x01\
              \x0b\x00\x00\x00\x00\x00\x00\xed\x4f"
        );
    }

    #[test]
    fn end_tags_are_skipped_before_values_and_exceptions_are_reported() {
        let mut w = Writer::new();
        w.start_object("X").end_object().end_object().int(3);
        let b = w.into_bytes();
        let mut r = Reader::new(&b);
        assert_eq!(r.start_object().unwrap(), "X");
        assert_eq!(r.int().unwrap(), 3);
        r.finish().unwrap();
        let mut e = vec![TAG_EXCEPTION];
        e.extend_from_slice(&[0, 0, 0, 4]);
        e.extend_from_slice(b"oops");
        assert_eq!(
            Reader::new(&e).int(),
            Err(DecodeError::Remote("oops".into()))
        );
    }

    #[test]
    fn impossible_counts_are_refused_before_any_allocation() {
        let mut w = Writer::new();
        w.ulong(u32::MAX);
        let b = w.into_bytes();
        assert!(matches!(
            Reader::new(&b).count(1),
            Err(DecodeError::Invalid { .. })
        ));
        let mut s = vec![TAG_STRING, 0xff, 0xff, 0xff, 0xff];
        s.push(b'a');
        assert!(matches!(
            Reader::new(&s).string(),
            Err(DecodeError::Truncated { .. })
        ));
    }

    proptest! {
        #[test]
        fn values_round_trip(i: i32, u: u32, ll: i64, ull: u64, d in any::<f64>().prop_filter("nan", |d| !d.is_nan()),
                             s in "\\PC{0,40}", b in prop::collection::vec(any::<u8>(), 0..40), flag: bool) {
            let mut w = Writer::new();
            w.int(i).uint(u).long(i).ulong(u).long_long(ll).ulong_long(ull).double(d)
                .string(&s).blob(&b).bool(flag).start_object("C").end_object();
            let bytes = w.into_bytes();
            let mut r = Reader::new(&bytes);
            prop_assert_eq!(r.int().unwrap(), i);
            prop_assert_eq!(r.uint().unwrap(), u);
            prop_assert_eq!(r.long().unwrap(), i);
            prop_assert_eq!(r.ulong().unwrap(), u);
            prop_assert_eq!(r.long_long().unwrap(), ll);
            prop_assert_eq!(r.ulong_long().unwrap(), ull);
            prop_assert_eq!(r.double().unwrap(), d);
            prop_assert_eq!(r.string().unwrap(), s);
            prop_assert_eq!(r.blob().unwrap(), &b[..]);
            prop_assert_eq!(r.bool().unwrap(), flag);
            prop_assert_eq!(r.start_object().unwrap(), "C");
            r.end_object().unwrap();
            r.finish().unwrap();
        }
    }
}
