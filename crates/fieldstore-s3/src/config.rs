//! The `s3:` section of a fieldstore configuration (FDB5's S3 branch keeps
//! one too: an endpoint, a bucket, credentials), shared by the S3
//! catalogue and store.
//!
//! ```yaml
//! engine: s3                          # or toc, rados, daos
//! store: s3
//! s3:
//!   endpoint: http://127.0.0.1:8333   # required; `host:port` means http://host:port
//!   bucket: fieldstore                # required
//!   region: us-east-1                 # default us-east-1
//!   credentials:                      # default: AWS_ACCESS_KEY_ID and
//!     access_key_id: fsaccess         #   AWS_SECRET_ACCESS_KEY (and
//!     secret_access_key: fssecret     #   AWS_SESSION_TOKEN), else anonymous
//!   create_bucket: true               # create the bucket when it is missing
//!   url_style: path                   # path (http://host/bucket/key) or virtual
//!   timeout: 30                       # seconds any request may wait for the server
//!   connect_timeout: 5                # seconds a connection may take
//!   write_buffer: 1048576             # a writer PUTs once it holds this many bytes
//!   writer_lease: 30                  # seconds: a writer's lease (docs/format/s3.md)
//! ```
//!
//! `credentials` also takes eckit's names, `accessKeyID` and `secretKey`.

use std::time::Duration;

use fieldstore_core::{Error, ErrorKind, Result};
use serde_json::Value;

/// The parsed `s3:` section.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Config {
    /// The server, as a URL with scheme (`http://127.0.0.1:8333`).
    pub endpoint: String,
    /// The bucket field bytes go to.
    pub bucket: String,
    /// The region requests are signed for.
    pub region: String,
    /// Access key id and secret (and a session token); `None`: anonymous
    /// requests.
    pub credentials: Option<(String, String, Option<String>)>,
    /// Create the bucket when it does not exist.
    pub create_bucket: bool,
    /// Virtual-host URLs (`bucket.host`) instead of path URLs.
    pub virtual_host: bool,
    /// How long a request may wait for the server (each phase: sending,
    /// the response, the body).
    pub timeout: Duration,
    /// How long a connection may take.
    pub connect_timeout: Duration,
    /// A writer PUTs what it holds once it holds this many bytes, before
    /// its flush: a writer's memory is bounded by it, and so is the size of
    /// the objects small fields are packed into. 1 MiB by default: a
    /// ranged GET costs SeaweedFS a read of the whole chunk it falls in
    /// (measured: a 64 KiB field read from a 4 MiB object takes 2.4× as
    /// long as from a 1 MiB one; `docs/benchmarks.md`, S3).
    pub write_buffer: usize,
    /// A writer's lease (`crate::lease`).
    pub writer_lease: Duration,
}

impl std::fmt::Debug for S3Config {
    /// Without the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Config")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field(
                "access_key_id",
                &self.credentials.as_ref().map(|c| c.0.as_str()),
            )
            .field("create_bucket", &self.create_bucket)
            .field("timeout", &self.timeout)
            .field("write_buffer", &self.write_buffer)
            .field("writer_lease", &self.writer_lease)
            .finish_non_exhaustive()
    }
}

/// The default `writer_lease`.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

const KEYS: &[&str] = &[
    "endpoint",
    "bucket",
    "region",
    "credentials",
    "create_bucket",
    "url_style",
    "timeout",
    "connect_timeout",
    "write_buffer",
    "writer_lease",
];

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidConfig, message.into())
}

impl S3Config {
    /// A configuration for `bucket` at `endpoint` with every default
    /// (credentials from the environment).
    pub fn new(endpoint: impl Into<String>, bucket: impl Into<String>) -> S3Config {
        S3Config {
            endpoint: endpoint.into(),
            bucket: bucket.into(),
            region: "us-east-1".into(),
            credentials: from_env(),
            create_bucket: true,
            virtual_host: false,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            write_buffer: 1 << 20,
            writer_lease: DEFAULT_LEASE,
        }
    }

    /// Parse the `s3:` section (`config.backend("s3")`).
    ///
    /// # Errors
    /// `InvalidConfig` naming the key that is missing, unknown or of the
    /// wrong type.
    pub fn from_value(v: &Value) -> Result<S3Config> {
        let map = match v {
            Value::Object(m) => m,
            Value::Null => {
                return Err(invalid(
                    "store 's3' needs an 's3:' section with at least 'endpoint' and 'bucket'",
                ))
            }
            _ => return Err(invalid("the 's3:' section must be a mapping")),
        };
        if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "s3: unknown key '{k}' (expected one of {})",
                KEYS.join(", ")
            )));
        }
        let text = |k: &str| -> Result<Option<String>> {
            match map.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(invalid(format!("s3.{k} must be a string, not {other}"))),
            }
        };
        let number = |k: &str, min: f64, max: f64| -> Result<Option<f64>> {
            match map.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => match n.as_f64() {
                    Some(x) if x >= min && x <= max => Ok(Some(x)),
                    _ => Err(invalid(format!(
                        "s3.{k} must be a number from {min} to {max}, not {n}"
                    ))),
                },
                Some(other) => Err(invalid(format!("s3.{k} must be a number, not {other}"))),
            }
        };
        let endpoint = text("endpoint")?
            .filter(|e| !e.is_empty())
            .ok_or_else(|| invalid("s3.endpoint is required (e.g. http://127.0.0.1:8333)"))?;
        let endpoint = if endpoint.contains("://") {
            endpoint
        } else {
            format!("http://{endpoint}")
        };
        let bucket = text("bucket")?
            .filter(|b| !b.is_empty())
            .ok_or_else(|| invalid("s3.bucket is required"))?;
        check_bucket_name(&bucket)?;
        let mut c = S3Config::new(endpoint, bucket);
        if let Some(r) = text("region")?.filter(|r| !r.is_empty()) {
            c.region = r;
        }
        match map.get("credentials") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                let get = |names: &[&str]| {
                    names
                        .iter()
                        .find_map(|n| m.get(*n).and_then(Value::as_str))
                        .map(str::to_string)
                };
                let key = get(&["access_key_id", "accessKeyID", "aws_access_key_id"]);
                let secret = get(&["secret_access_key", "secretKey", "aws_secret_access_key"]);
                let token = get(&["session_token", "sessionToken", "aws_session_token"]);
                let (Some(k), Some(s)) = (key, secret) else {
                    return Err(invalid(
                        "s3.credentials needs access_key_id and secret_access_key",
                    ));
                };
                c.credentials = Some((k, s, token));
            }
            Some(other) => {
                return Err(invalid(format!(
                    "s3.credentials must be a mapping with access_key_id and \
                     secret_access_key, not {other}"
                )))
            }
        }
        match map.get("create_bucket") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => c.create_bucket = *b,
            Some(other) => {
                return Err(invalid(format!(
                    "s3.create_bucket must be true or false, not {other}"
                )))
            }
        }
        match text("url_style")?.as_deref() {
            None | Some("path") => {}
            Some("virtual") => c.virtual_host = true,
            Some(other) => {
                return Err(invalid(format!(
                    "s3.url_style must be 'path' or 'virtual', not '{other}'"
                )))
            }
        }
        if let Some(t) = number("timeout", 0.1, 3600.0)? {
            c.timeout = Duration::from_secs_f64(t);
        }
        if let Some(t) = number("connect_timeout", 0.1, 600.0)? {
            c.connect_timeout = Duration::from_secs_f64(t);
        }
        if let Some(b) = number("write_buffer", 4096.0, (5u64 << 30) as f64)? {
            c.write_buffer = b as usize;
        }
        if let Some(l) = number("writer_lease", 1.0, 3600.0)? {
            c.writer_lease = Duration::from_secs_f64(l);
        }
        Ok(c)
    }
}

/// The credentials of the standard environment variables, if set.
fn from_env() -> Option<(String, String, Option<String>)> {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    Some((
        var("AWS_ACCESS_KEY_ID")?,
        var("AWS_SECRET_ACCESS_KEY")?,
        var("AWS_SESSION_TOKEN"),
    ))
}

/// S3's bucket naming rules (3 to 63 lower-case letters, digits, `-` and
/// `.`, starting and ending with a letter or digit), checked before any
/// request so that a typo is named as such.
fn check_bucket_name(b: &str) -> Result<()> {
    let ok = (3..=63).contains(&b.len())
        && b.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
        && b.as_bytes()[0].is_ascii_alphanumeric()
        && b.as_bytes()[b.len() - 1].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "s3.bucket '{b}' is not a bucket name (3 to 63 lower-case letters, digits, '-' \
             and '.', starting and ending with a letter or digit)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_section_is_read_with_its_defaults() {
        let c = S3Config::from_value(&json!({
            "endpoint": "127.0.0.1:8333", "bucket": "fields",
            "credentials": {"accessKeyID": "k", "secretKey": "s"}
        }))
        .unwrap();
        assert_eq!(c.endpoint, "http://127.0.0.1:8333");
        assert_eq!(c.region, "us-east-1");
        assert_eq!(c.credentials, Some(("k".into(), "s".into(), None)));
        assert!(c.create_bucket);
        assert_eq!(c.writer_lease, DEFAULT_LEASE);
    }

    #[test]
    fn bad_sections_name_the_key() {
        for (v, want) in [
            (json!(null), "needs an 's3:' section"),
            (json!({"bucket": "b"}), "s3.endpoint is required"),
            (json!({"endpoint": "h:1"}), "s3.bucket is required"),
            (
                json!({"endpoint": "h:1", "bucket": "B_"}),
                "not a bucket name",
            ),
            (
                json!({"endpoint": "h:1", "bucket": "bbb", "pool": 1}),
                "unknown key 'pool'",
            ),
            (
                json!({"endpoint": "h:1", "bucket": "bbb", "credentials": {"access_key_id": "k"}}),
                "needs access_key_id and secret_access_key",
            ),
            (
                json!({"endpoint": "h:1", "bucket": "bbb", "timeout": 0}),
                "s3.timeout must be",
            ),
        ] {
            let e = S3Config::from_value(&v).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidConfig, "{v}");
            assert!(e.to_string().contains(want), "{v}: {e}");
        }
    }
}
