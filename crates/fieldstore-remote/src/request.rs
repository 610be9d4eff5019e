//! MARS requests and FDB5's tool requests.
//!
//! A MARS request (metkit's `MarsRequest`) is its verb (string), the
//! number of parameters (`int`), and for each its name, the number of
//! values (`int`) and the values. A tool request (`FDBToolRequest`) is a
//! MARS request and whether it means everything (`--all`, a `bool`).

use crate::stream::{DecodeError, Reader, Writer};

/// A MARS request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarsRequest {
    /// The verb (`retrieve`, `list`, or empty).
    pub verb: String,
    /// Parameters and their values, in order.
    pub params: Vec<(String, Vec<String>)>,
}

impl MarsRequest {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        w.string(&self.verb)
            .int(i32::try_from(self.params.len()).unwrap_or(i32::MAX));
        for (name, values) in &self.params {
            w.string(name)
                .int(i32::try_from(values.len()).unwrap_or(i32::MAX));
            for v in values {
                w.string(v);
            }
        }
    }

    /// Decode (keywords lower-cased, as FDB5's server decodes them).
    ///
    /// # Errors
    /// [`DecodeError`]; [`DecodeError::Invalid`] for a negative or
    /// impossible count.
    pub fn decode(r: &mut Reader<'_>) -> Result<MarsRequest, DecodeError> {
        let verb = r.string()?.to_lowercase();
        let n = count(r)?;
        let mut params = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.string()?.to_lowercase();
            let m = count(r)?;
            let mut values = Vec::with_capacity(m);
            for _ in 0..m {
                values.push(r.string()?);
            }
            params.push((name, values));
        }
        Ok(MarsRequest { verb, params })
    }
}

/// An `int` count of items of at least 5 bytes each (a string).
fn count(r: &mut Reader<'_>) -> Result<usize, DecodeError> {
    let n = r.int()?;
    let n = usize::try_from(n).map_err(|_| r.invalid(format!("negative count {n}")))?;
    if n.saturating_mul(5) > r.remaining() {
        return Err(r.invalid(format!("a count of {n} does not fit the payload")));
    }
    Ok(n)
}

/// A tool request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolRequest {
    /// The request.
    pub request: MarsRequest,
    /// `--all`: everything (the request is then empty).
    pub all: bool,
}

impl ToolRequest {
    /// Encode.
    pub fn encode(&self, w: &mut Writer) {
        self.request.encode(w);
        w.bool(self.all);
    }

    /// Decode.
    ///
    /// # Errors
    /// [`DecodeError`].
    pub fn decode(r: &mut Reader<'_>) -> Result<ToolRequest, DecodeError> {
        Ok(ToolRequest {
            request: MarsRequest::decode(r)?,
            all: r.bool()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn requests_round_trip(verb in "[a-z]{0,8}", all: bool,
                               params in prop::collection::vec(("[a-z]{1,8}", prop::collection::vec("[a-z0-9]{1,6}", 0..4)), 0..5)) {
            let t = ToolRequest { request: MarsRequest { verb, params }, all };
            let mut w = Writer::new();
            t.encode(&mut w);
            let b = w.into_bytes();
            let mut r = Reader::new(&b);
            prop_assert_eq!(ToolRequest::decode(&mut r).unwrap(), t);
            r.finish().unwrap();
        }
    }
}
