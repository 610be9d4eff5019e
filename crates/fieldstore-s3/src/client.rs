//! The S3 requests the store makes: rusty-s3 signs them (presigned URLs,
//! SigV4) and parses the XML of their answers; ureq sends them, every wait
//! bounded by the configured time-outs. Errors say what to do through
//! their kind:
//!
//! | what happened | kind |
//! |---|---|
//! | no connection, a time-out, 5xx, `SlowDown` | `Unavailable` (retry later) |
//! | `NoSuchBucket`, `NoSuchKey` | `NotFound` |
//! | 403 (`AccessDenied`, `InvalidAccessKeyId`, `SignatureDoesNotMatch`) | `PermissionDenied` |
//! | `QuotaExceeded`, 507 | `StorageFull` |
//! | any other status | `Io` |
//!
//! Each names the endpoint and what was asked. Requests that another try
//! may mend (`Unavailable` but for a time-out) are sent up to three more
//! times after a short pause (all are idempotent: objects are PUT whole,
//! under names no other writer uses).

use std::io::Read;

use instant_xml::FromXml;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fieldstore_core::{Error, ErrorKind, Result};
use rusty_s3::actions::{ListObjectsV2, ListObjectsV2Response, ObjectIdentifier};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

use crate::config::S3Config;
use crate::naming::PROBE;

/// How long a signed URL stays valid: longer than any request may take.
const SIGNED_FOR: Duration = Duration::from_secs(3600);

/// How long a conditional PUT waits for its answer before it looks at the
/// object instead ([`Client::put_new`]).
const RACE_WAIT: Duration = Duration::from_millis(250);

thread_local! {
    /// Requests this thread sent, retries included ([`requests_sent`]).
    static SENT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many S3 requests the calling thread has sent (retries included):
/// what request budgets are measured with. Requests sent on other threads
/// (a cold reader's parallel catch-up, lease renewal, read-ahead) are not
/// counted here.
pub fn requests_sent() -> u64 {
    SENT.with(std::cell::Cell::get)
}

/// One S3 server and the credentials to speak to it.
pub(crate) struct Client {
    agent: ureq::Agent,
    /// As configured, for messages.
    pub(crate) endpoint: String,
    url: url::Url,
    style: UrlStyle,
    region: String,
    credentials: Option<Credentials>,
    /// The request time-out, for messages.
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "S3 endpoint {}", self.endpoint)
    }
}

/// An object as a listing shows it.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub key: String,
    pub size: u64,
    /// The server's time of its last write (Unix ms).
    pub modified_ms: i64,
}

/// A listing and the server's time when it answered (Unix ms, from its
/// `Date` header: whole seconds).
pub(crate) struct Listing {
    pub objects: Vec<Listed>,
    pub server_now_ms: i64,
}

/// S3's error body (`<Error><Code>…</Code><Message>…</Message></Error>`).
#[derive(Debug, Default, FromXml)]
#[xml(rename = "Error")]
struct ErrorBody {
    #[xml(rename = "Code")]
    code: Option<String>,
    #[xml(rename = "Message")]
    message: Option<String>,
}

impl Client {
    /// A client of the configured endpoint (no request yet).
    ///
    /// # Errors
    /// `InvalidConfig` for an endpoint that is no http(s) URL.
    pub(crate) fn new(cfg: &S3Config) -> Result<Arc<Client>> {
        let bad = |why: String| {
            Error::new(
                ErrorKind::InvalidConfig,
                format!("s3.endpoint '{}': {why}", cfg.endpoint),
            )
        };
        let url = url::Url::parse(&cfg.endpoint).map_err(|e| bad(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(bad("not an http:// or https:// URL with a host".into()));
        }
        if url.scheme() == "https" {
            return Err(bad(
                "https needs fieldstore-s3 built with ureq's rustls feature".into(),
            ));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(cfg.connect_timeout))
            .timeout_resolve(Some(cfg.connect_timeout))
            .timeout_send_request(Some(cfg.timeout))
            .timeout_send_body(Some(cfg.timeout))
            .timeout_recv_response(Some(cfg.timeout))
            .timeout_recv_body(Some(cfg.timeout))
            .max_idle_connections_per_host(64)
            .build();
        Ok(Arc::new(Client {
            agent: ureq::Agent::new_with_config(config),
            endpoint: cfg.endpoint.clone(),
            url,
            style: if cfg.virtual_host {
                UrlStyle::VirtualHost
            } else {
                UrlStyle::Path
            },
            region: cfg.region.clone(),
            credentials: cfg.credentials.as_ref().map(|(k, s, t)| match t {
                Some(t) => Credentials::new_with_token(k, s, t),
                None => Credentials::new(k, s),
            }),
            timeout: cfg.timeout,
        }))
    }

    /// A client of the configured endpoint whose bucket exists: checked,
    /// and created when missing and `create_bucket` allows.
    ///
    /// # Errors
    /// `Unavailable` naming the endpoint if it does not answer within the
    /// time-outs; `NotFound` if the bucket does not exist (and may not be
    /// created); `PermissionDenied` if the credentials are refused.
    pub(crate) fn connect(cfg: &S3Config) -> Result<Arc<Client>> {
        let client = Client::new(cfg)?;
        if !client.bucket_exists(&cfg.bucket)? {
            if !cfg.create_bucket {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "S3 bucket '{}' does not exist at {} (s3.create_bucket is false)",
                        cfg.bucket, cfg.endpoint
                    ),
                ));
            }
            client.create_bucket(&cfg.bucket)?;
        }
        Ok(client)
    }

    fn bucket(&self, name: &str) -> Result<Bucket> {
        Bucket::new(
            self.url.clone(),
            self.style,
            name.to_string(),
            self.region.clone(),
        )
        .map_err(|e| Error::invalid_input(format!("S3 bucket '{name}': {e}")))
    }

    fn creds(&self) -> Option<&Credentials> {
        self.credentials.as_ref()
    }

    /// Whether `bucket` exists (one listing of at most one key: unlike a
    /// HEAD, its error answer says why it was refused).
    ///
    /// # Errors
    /// As [`Client::list`], but `Ok(false)` for `NoSuchBucket`.
    pub(crate) fn bucket_exists(&self, bucket: &str) -> Result<bool> {
        let b = self.bucket(bucket)?;
        let mut list = ListObjectsV2::new(&b, self.creds());
        list.with_max_keys(1);
        let what = format!("listing bucket '{bucket}'");
        let url = list.sign(SIGNED_FOR);
        let listed = found(self.call(&what, true, || self.agent.get(url.as_str()).call()))?;
        Ok(listed.is_some())
    }

    /// Create `bucket`.
    ///
    /// # Errors
    /// `PermissionDenied` if these credentials may not; as any request.
    pub(crate) fn create_bucket(&self, bucket: &str) -> Result<()> {
        let b = self.bucket(bucket)?;
        let url = b.create_bucket(self.creds().ok_or_else(|| {
            Error::new(
                ErrorKind::PermissionDenied,
                format!(
                    "S3 bucket '{bucket}' does not exist at {} and anonymous requests cannot \
                     create it (set s3.credentials or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)",
                    self.endpoint
                ),
            )
        })?);
        let what = format!("creating bucket '{bucket}'");
        let url = url.sign(SIGNED_FOR);
        // Processes that open a new store together all create its bucket.
        // The creations that lose are answered BucketAlreadyOwnedByYou
        // (AWS), BucketAlreadyExists (SeaweedFS), OperationAborted while
        // the winning one is under way, and, seen once from SeaweedFS 4.48
        // in CI, NoSuchBucket (a race inside the server, not pinned down).
        // Whether the bucket is there to use is what a listing says; if it
        // is not, the creation is tried again, three times at most.
        let mut attempts = 0;
        loop {
            let err = match self.call(&what, true, || self.agent.put(url.as_str()).send_empty()) {
                Ok(_) => return Ok(()),
                Err(e) if e.to_string().contains("HTTP 409") || e.kind() == ErrorKind::NotFound => {
                    e
                }
                Err(e) => return Err(e),
            };
            for _ in 0..20 {
                if self.bucket_exists(bucket)? {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            attempts += 1;
            if attempts == 3 {
                return Err(err);
            }
        }
    }

    /// PUT `data` as object `key`, waiting at most `timeout` (the
    /// configured one if `None`).
    ///
    /// # Errors
    /// As any request.
    pub(crate) fn put(
        &self,
        bucket: &str,
        key: &str,
        data: &[u8],
        timeout: Option<Duration>,
    ) -> Result<()> {
        let b = self.bucket(bucket)?;
        let url = b.put_object(self.creds(), key).sign(SIGNED_FOR);
        let what = format!("writing s3://{bucket}/{key}");
        // A lease's renewal is not tried again: its thread tries anew soon.
        self.call(&what, timeout.is_none(), || {
            let mut req = self.agent.put(url.as_str());
            if let Some(t) = timeout {
                req = req.config().timeout_global(Some(t)).build();
            }
            req.send(data)
        })
        .map(|_| ())
    }

    /// PUT `data` as object `key` only if there is none
    /// (`If-None-Match: *`, checked and written in one step by the server);
    /// `false` when there was one. The catalogue's commit
    /// ([`fieldstore_core::engine::slots`]).
    ///
    /// An answer that does not come within [`RACE_WAIT`] of the request
    /// being sent is not waited for: the object tells whose it is (`data`
    /// itself, written by this PUT, or another's), and while there is none
    /// the PUT is sent again (it, or one sent before, then writes it, or
    /// finds it taken). So a writer that lost a race learns it in
    /// [`RACE_WAIT`], not in the 1–2 s SeaweedFS takes to answer the
    /// losers of a race for one key. An object, once written, is never
    /// replaced, and a FLUSH record names its writer and time: the object
    /// is `data` when this call wrote it (or when another wrote the very
    /// same bytes, such as a WIPED record: the same record either way).
    ///
    /// # Errors
    /// As any request; a conflict with another conditional write of the
    /// same key in progress (409) is `Unavailable`, tried again.
    pub(crate) fn put_new(&self, bucket: &str, key: &str, data: &[u8]) -> Result<bool> {
        let b = self.bucket(bucket)?;
        let url = b.put_object(self.creds(), key).sign(SIGNED_FOR);
        let what = format!("creating s3://{bucket}/{key}");
        let deadline = std::time::Instant::now() + self.timeout;
        let mut held_before = false;
        loop {
            let held = std::cell::Cell::new(false);
            let sent = self.call(&what, true, || {
                let put = self.agent.put(url.as_str()).config();
                let put = put.timeout_recv_response(Some(RACE_WAIT)).build();
                put.header("If-None-Match", "*")
                    .send(data)
                    .map_err(|e| match e {
                        // Not an error `call` tries again after a pause:
                        // the object is looked at instead.
                        ureq::Error::Timeout(ureq::Timeout::RecvResponse) => {
                            held.set(true);
                            ureq::Error::Other(format!("no answer in {RACE_WAIT:?}").into())
                        }
                        e => e,
                    })
            });
            match sent {
                Ok(resp) if resp.status().as_u16() != 412 => return Ok(true),
                Ok(_) if !held_before => return Ok(false),
                // Taken, perhaps by a try of this call not waited for.
                Ok(_) => {}
                Err(_) if held.get() => held_before = true,
                Err(e) => return Err(e),
            }
            let mut now = Vec::new();
            if self.get(bucket, key, &mut now)? {
                return Ok(now == data);
            }
            if std::time::Instant::now() > deadline {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "{what}: the S3 endpoint {} answered no conditional PUT in {:?}, and \
                         the object is not there",
                        self.endpoint, self.timeout
                    ),
                ));
            }
        }
    }

    /// Whether the server honours `If-None-Match: *` ([`Client::put_new`]
    /// is a commit only where it does): a probe object is created twice
    /// (the second must be refused), then removed. Three requests, at the
    /// first ask for each endpoint and bucket in a process; a `true` is
    /// remembered.
    ///
    /// # Errors
    /// As any request.
    pub(crate) fn honours_put_new(&self, bucket: &str) -> Result<bool> {
        static HONOURED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
        let honoured = || HONOURED.lock().unwrap_or_else(|e| e.into_inner());
        let place = format!("{} {bucket}", self.endpoint);
        if honoured().contains(&place) {
            return Ok(true);
        }
        let probe = format!("{PROBE}{}", fieldstore_core::writer_id::next());
        // Two bodies: `put_new` tells its own object by its bytes.
        let first = self.put_new(bucket, &probe, b"1")?;
        let second = self.put_new(bucket, &probe, b"2")?;
        self.delete(bucket, &probe)?;
        if first && !second {
            honoured().insert(place);
        }
        Ok(first && !second)
    }

    /// The whole object `key` into `out` (its old content replaced);
    /// `false` if there is none.
    ///
    /// # Errors
    /// As any request.
    pub(crate) fn get(&self, bucket: &str, key: &str, out: &mut Vec<u8>) -> Result<bool> {
        let b = self.bucket(bucket)?;
        let url = b.get_object(self.creds(), key).sign(SIGNED_FOR);
        let what = format!("reading s3://{bucket}/{key}");
        let got = self.call(&what, true, || self.agent.get(url.as_str()).call());
        let Some(mut resp) = found(got)? else {
            return Ok(false);
        };
        out.clear();
        resp.body_mut()
            .with_config()
            .limit(1 << 30)
            .reader()
            .read_to_end(out)
            .map_err(|e| self.io_error(&what, &e))?;
        Ok(true)
    }

    /// Read `out.len()` bytes of object `key` from `offset` (a ranged
    /// GET); returns how many came (fewer when the object ends first).
    ///
    /// # Errors
    /// `NotFound` for a missing object or bucket; as any request.
    pub(crate) fn get_range(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        out: &mut [u8],
    ) -> Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let b = self.bucket(bucket)?;
        let url = b.get_object(self.creds(), key).sign(SIGNED_FOR);
        let what = format!("reading s3://{bucket}/{key}");
        let range = format!("bytes={offset}-{}", offset + out.len() as u64 - 1);
        let mut resp = self.call(&what, true, || {
            self.agent
                .get(url.as_str())
                .header("Range", range.as_str())
                .call()
        })?;
        if resp.status().as_u16() == 416 {
            // The object ends before the range starts.
            return Ok(0);
        }
        if resp.status().as_u16() == 200 && offset > 0 {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "{what}: the server at {} ignored the byte range asked for",
                    self.endpoint
                ),
            ));
        }
        let mut reader = resp.body_mut().as_reader();
        let mut got = 0;
        while got < out.len() {
            match reader.read(&mut out[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(&what, &e)),
            }
        }
        Ok(got)
    }

    /// The size of object `key`, `None` if there is none.
    ///
    /// # Errors
    /// As any request.
    pub(crate) fn head(&self, bucket: &str, key: &str) -> Result<Option<u64>> {
        let b = self.bucket(bucket)?;
        let url = b.head_object(self.creds(), key).sign(SIGNED_FOR);
        let what = format!("looking up s3://{bucket}/{key}");
        let resp = found(self.call(&what, true, || self.agent.head(url.as_str()).call()))?;
        Ok(resp.and_then(|r| {
            r.headers()
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
        }))
    }

    /// Every object whose key starts with `prefix`, in key order (all
    /// pages), and the server's time of the last page.
    ///
    /// # Errors
    /// As any request; `Io` for an answer that is not a listing.
    pub(crate) fn list(&self, bucket: &str, prefix: &str) -> Result<Listing> {
        let what = format!("listing s3://{bucket}/{prefix}");
        let mut objects = Vec::new();
        let no_date = || {
            Error::new(
                ErrorKind::Io,
                format!("{what}: the answer has no Date header"),
            )
        };
        let mut date = None;
        self.pages(
            bucket,
            &what,
            |l| l.with_prefix(prefix.to_string()),
            |page, d| {
                date = Some(d.ok_or_else(no_date)?);
                for c in page.contents {
                    let modified_ms = c
                        .last_modified
                        .parse::<jiff::Timestamp>()
                        .map_err(|e| {
                            Error::new(
                                ErrorKind::Io,
                                format!("{what}: LastModified '{}': {e}", c.last_modified),
                            )
                        })?
                        .as_millisecond();
                    objects.push(Listed {
                        key: c.key,
                        size: c.size,
                        modified_ms,
                    });
                }
                Ok(())
            },
        )?;
        let server_now_ms = date.ok_or_else(no_date)?;
        Ok(Listing {
            objects,
            server_now_ms,
        })
    }

    /// The bucket's top-level prefixes: every distinct start of a key up
    /// to and including its first `delimiter` (one listing per 1,000).
    ///
    /// # Errors
    /// As any request; `Io` for an answer that is not a listing.
    pub(crate) fn prefixes(&self, bucket: &str, delimiter: &str) -> Result<Vec<String>> {
        let what = format!("listing the prefixes of s3://{bucket}");
        let mut prefixes = Vec::new();
        self.pages(
            bucket,
            &what,
            |l| l.with_delimiter(delimiter.to_string()),
            |page, _| {
                prefixes.extend(page.common_prefixes.into_iter().map(|p| p.prefix));
                Ok(())
            },
        )?;
        Ok(prefixes)
    }

    /// Every page of a listing of `bucket` that `configure` shapes, in
    /// order, to `each` with the server's `Date` of the page (Unix ms).
    ///
    /// # Errors
    /// As any request; `Io` for an answer that is not a listing; `each`'s.
    fn pages(
        &self,
        bucket: &str,
        what: &str,
        configure: impl Fn(&mut ListObjectsV2<'_>),
        mut each: impl FnMut(ListObjectsV2Response, Option<i64>) -> Result<()>,
    ) -> Result<()> {
        let b = self.bucket(bucket)?;
        let mut token: Option<String> = None;
        loop {
            let mut list = ListObjectsV2::new(&b, self.creds());
            configure(&mut list);
            if let Some(t) = &token {
                list.with_continuation_token(t.clone());
            }
            let (mut page, date) = self.list_page(what, &list.sign(SIGNED_FOR))?;
            let next = page.next_continuation_token.take();
            each(page, date)?;
            match next {
                Some(t) if !t.is_empty() => token = Some(t),
                _ => return Ok(()),
            }
        }
    }

    /// The first `max` keys under `prefix` after `after`, in order (one
    /// listing).
    ///
    /// # Errors
    /// As any request; `Io` for an answer that is not a listing.
    pub(crate) fn keys_after(
        &self,
        bucket: &str,
        prefix: &str,
        after: &str,
        max: usize,
    ) -> Result<Vec<String>> {
        let b = self.bucket(bucket)?;
        let what = format!("listing s3://{bucket}/{prefix} after {after}");
        let mut list = ListObjectsV2::new(&b, self.creds());
        list.with_prefix(prefix);
        list.with_start_after(after);
        list.with_max_keys(max);
        let (page, _) = self.list_page(&what, &list.sign(SIGNED_FOR))?;
        Ok(page.contents.into_iter().map(|c| c.key).collect())
    }

    /// One page of the listing `url` asks for, and the server's `Date`
    /// (Unix ms) if it sent one.
    fn list_page(
        &self,
        what: &str,
        url: &url::Url,
    ) -> Result<(ListObjectsV2Response, Option<i64>)> {
        let mut resp = self.call(what, true, || self.agent.get(url.as_str()).call())?;
        let date = resp
            .headers()
            .get("date")
            .and_then(|d| d.to_str().ok())
            .and_then(parse_http_date);
        let text = resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| self.transport(what, e))?;
        let page = ListObjectsV2::parse_response(&text).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("{what}: not a listing ({e}) from {}", self.endpoint),
            )
        })?;
        Ok((page, date))
    }

    /// Delete object `key` (a missing one is no error: S3 answers 204).
    ///
    /// # Errors
    /// As any request.
    pub(crate) fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        let b = self.bucket(bucket)?;
        let url = b.delete_object(self.creds(), key).sign(SIGNED_FOR);
        let what = format!("removing s3://{bucket}/{key}");
        found(self.call(&what, true, || self.agent.delete(url.as_str()).call())).map(drop)
    }

    /// Delete many objects, up to 1,000 per request (DeleteObjects).
    ///
    /// # Errors
    /// As any request; `Io` naming the first key the server did not delete.
    pub(crate) fn delete_many(&self, bucket: &str, keys: &[String]) -> Result<()> {
        let b = self.bucket(bucket)?;
        for chunk in keys.chunks(1000) {
            let ids: Vec<ObjectIdentifier> = chunk
                .iter()
                .map(|k| ObjectIdentifier::new(k.clone()))
                .collect();
            let mut action = b.delete_objects(self.creds(), ids.iter());
            action.set_quiet(true);
            let url = action.sign(SIGNED_FOR);
            let (body, md5) = action.body_with_md5();
            let what = format!("removing {} objects of s3://{bucket}", chunk.len());
            let mut resp = self.call(&what, true, || {
                self.agent
                    .post(url.as_str())
                    .header("Content-MD5", md5.as_str())
                    .send(body.as_bytes())
            })?;
            let text = resp
                .body_mut()
                .with_config()
                .limit(16 << 20)
                .read_to_string()
                .map_err(|e| self.transport(&what, e))?;
            // Quiet mode: the answer lists only the keys not removed, and
            // may be empty. One that is no DeleteResult says nothing of
            // what was removed: an error, not a success.
            if text.trim().is_empty() {
                continue;
            }
            let r = rusty_s3::actions::DeleteObjectsResponse::parse(&text).map_err(|e| {
                let start: String = text.chars().take(120).collect();
                Error::new(
                    ErrorKind::Io,
                    format!(
                        "{what}: the S3 server at {} answered with no DeleteResult ({e}), so \
                         which objects were removed is unknown: {start:?}",
                        self.endpoint
                    ),
                )
            })?;
            if let Some(e) = r.errors.first() {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("{what}: {} was not removed: {}", e.key, e.message),
                ));
            }
        }
        Ok(())
    }

    /// The response of a request `send` makes, or the error its status
    /// or transport failure means (a 416 is a response: only ranged GETs
    /// get one). With `retry`, a request that failed in a way another try
    /// may mend (5xx, `SlowDown`, a connection refused or cut) is sent up
    /// to three more times, after 50, 200 and 800 ms — never after a
    /// time-out, which already waited a whole `timeout`.
    fn call(
        &self,
        what: &str,
        retry: bool,
        send: impl Fn() -> std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<ureq::http::Response<ureq::Body>> {
        let mut pause = Duration::from_millis(50);
        let mut tries = 0;
        loop {
            let started = std::time::Instant::now();
            SENT.with(|n| n.set(n.get() + 1));
            match self.call_once(what, send()) {
                Err(e)
                    if retry
                        && tries < 3
                        && e.kind() == ErrorKind::Unavailable
                        && started.elapsed() < self.timeout / 2 =>
                {
                    tries += 1;
                    std::thread::sleep(pause);
                    pause *= 4;
                }
                r => return r,
            }
        }
    }

    fn call_once(
        &self,
        what: &str,
        r: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<ureq::http::Response<ureq::Body>> {
        let mut resp = r.map_err(|e| self.transport(what, e))?;
        let status = resp.status().as_u16();
        // 416 and 412 are answers: only ranged GETs get the one, and
        // conditional PUTs the other.
        if status < 300 || status == 416 || status == 412 {
            return Ok(resp);
        }
        let body = resp
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_to_string()
            .unwrap_or_default();
        Err(self.status_error(what, status, &body))
    }

    /// What an S3 error status and body mean.
    fn status_error(&self, what: &str, status: u16, body: &str) -> Error {
        let ErrorBody { code, message } = instant_xml::from_str(body).unwrap_or_default();
        let (code, message) = (code.unwrap_or_default(), message.unwrap_or_default());
        let said = if code.is_empty() {
            format!("HTTP {status}")
        } else if message.is_empty() {
            format!("{code} (HTTP {status})")
        } else {
            format!("{code}: {message} (HTTP {status})")
        };
        let (kind, hint) = match (status, code.as_str()) {
            (_, "NoSuchBucket") => (
                ErrorKind::NotFound,
                " (the bucket does not exist; s3.create_bucket: true creates it)",
            ),
            (404, _) | (_, "NoSuchKey") => (ErrorKind::NotFound, ""),
            (403, _) | (_, "AccessDenied" | "InvalidAccessKeyId" | "SignatureDoesNotMatch") => (
                ErrorKind::PermissionDenied,
                " (check s3.credentials, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
            ),
            (_, "QuotaExceeded") | (507, _) => (ErrorKind::StorageFull, ""),
            (_, "SlowDown" | "ConditionalRequestConflict") | (500..=599, _) => {
                (ErrorKind::Unavailable, "")
            }
            _ => (ErrorKind::Io, ""),
        };
        Error::new(
            kind,
            format!(
                "{what}: the S3 server at {} answered {said}{hint}",
                self.endpoint
            ),
        )
    }

    /// What a transport failure means: `Unavailable` for a server that
    /// cannot be reached or did not answer in time.
    fn transport(&self, what: &str, e: ureq::Error) -> Error {
        match e {
            ureq::Error::Timeout(t) => Error::new(
                ErrorKind::Unavailable,
                format!(
                    "{what}: the S3 endpoint {} did not answer in time ({t}; s3.timeout is {:?}, \
                     s3.connect_timeout bounds connecting)",
                    self.endpoint, self.timeout
                ),
            ),
            ureq::Error::Io(io) => self.io_error(what, &io),
            ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => Error::new(
                ErrorKind::Unavailable,
                format!(
                    "{what}: cannot reach the S3 endpoint {}: {e}",
                    self.endpoint
                ),
            ),
            other => Error::new(
                ErrorKind::Io,
                format!("{what}: S3 endpoint {}: {other}", self.endpoint),
            ),
        }
    }

    fn io_error(&self, what: &str, e: &std::io::Error) -> Error {
        use std::io::ErrorKind as K;
        let kind = match e.kind() {
            K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::BrokenPipe
            | K::TimedOut
            | K::UnexpectedEof
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::AddrNotAvailable => ErrorKind::Unavailable,
            _ => ErrorKind::Io,
        };
        Error::new(
            kind,
            format!("{what}: the S3 endpoint {}: {e}", self.endpoint),
        )
    }
}

/// The answer, `None` for `NotFound` (a missing object or bucket).
fn found<T>(r: Result<T>) -> Result<Option<T>> {
    match r {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        r => r.map(Some),
    }
}

/// An HTTP date (`Sat, 28 Nov 2026 18:54:09 GMT`) as Unix ms.
fn parse_http_date(s: &str) -> Option<i64> {
    jiff::fmt::rfc2822::parse(s)
        .ok()
        .map(|z| z.timestamp().as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_are_read() {
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:10 GMT"),
            Some(10_000)
        );
        assert_eq!(parse_http_date("yesterday"), None);
    }

    #[test]
    fn error_bodies_say_what_to_do() {
        let c = Client::new(&S3Config::new("http://127.0.0.1:1", "bbb")).unwrap();
        let e = c.status_error(
            "reading",
            404,
            "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The specified \
             bucket does not exist</Message></Error>",
        );
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("NoSuchBucket"), "{e}");
        let e = c.status_error(
            "reading",
            403,
            "<Error><Code>InvalidAccessKeyId</Code></Error>",
        );
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("127.0.0.1:1"), "{e}");
        assert_eq!(c.status_error("x", 503, "").kind(), ErrorKind::Unavailable);
    }

    /// A server that answers the next request on `l` with 200 and `body`.
    fn answer_once(l: std::net::TcpListener, body: &'static str) -> std::thread::JoinHandle<()> {
        use std::io::{BufRead, BufReader, Write};
        std::thread::spawn(move || {
            let (s, _) = l.accept().expect("a connection");
            let mut r = BufReader::new(s);
            let mut length = 0;
            loop {
                let mut line = String::new();
                r.read_line(&mut line).expect("a request line");
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().expect("a length");
                }
                if line.trim().is_empty() {
                    break;
                }
            }
            std::io::copy(&mut r.by_ref().take(length), &mut std::io::sink()).expect("the body");
            let mut s = r.into_inner();
            write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .expect("the answer");
        })
    }

    /// A DeleteObjects answered 200 with something that is no DeleteResult
    /// (a proxy's page, a cut body) is an error naming the server: purge
    /// must not count objects as removed that may still be there. An empty
    /// answer (quiet mode, nothing failed) is a success.
    #[test]
    fn a_delete_answered_with_no_delete_result_is_an_error() {
        let quiet = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult \
                     xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"></DeleteResult>";
        let quiet_short = "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>";
        for (body, ok) in [
            ("<html>gateway</html>", false),
            ("", true),
            (quiet, true),
            (quiet_short, true),
        ] {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
            let endpoint = format!("http://{}", l.local_addr().expect("its address"));
            let server = answer_once(l, body);
            let c = Client::new(&S3Config::new(&endpoint, "bbb")).unwrap();
            let r = c.delete_many("bbb", &["a".to_string(), "b".to_string()]);
            server.join().expect("the server");
            match r {
                Ok(()) => assert!(ok, "{body:?} was taken for a DeleteResult"),
                Err(e) => {
                    assert!(!ok, "{body:?}: {e}");
                    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
                    assert!(e.to_string().contains(&endpoint), "{e}");
                    assert!(e.to_string().contains("gateway"), "{e}");
                }
            }
        }
    }
}
