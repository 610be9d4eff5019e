//! Read-ahead for `Store::prefetch`: fields a reader will read next are
//! fetched in the background, neighbours in one object by one ranged GET
//! (a span), and kept until read. What S3 gives for one request is worth
//! batching: a flush's fields are packed into one object, and SeaweedFS
//! answers a ranged GET by reading the whole chunk it falls in, so one GET
//! for a run of neighbours costs what a GET of one of them does.
//!
//! # Invariants
//! - Hints never change what is read: a read served from a span is
//!   checked against the field's CRC-32C like any other, and a span that
//!   failed or came short sends the read to the server itself.
//! - Memory is bounded: spans in flight or waiting to be read hold at most
//!   [`MAX_HELD`] bytes (a hint past it is ignored), and a field not read
//!   within [`KEEP`] of its hint is forgotten.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use fieldstore_core::FieldLocation;

use crate::client::Client;
use crate::naming;

/// Bytes of spans held at most.
const MAX_HELD: u64 = 64 << 20;
/// A span covers neighbours at most this far apart...
const MAX_GAP: u64 = 64 << 10;
/// ...and at most this many bytes.
const MAX_SPAN: u64 = 8 << 20;
/// Spans fetched at once.
const THREADS: usize = 4;
/// A field hinted but not read within this is forgotten.
const KEEP: Duration = Duration::from_secs(60);

/// One ranged GET's bytes, for the fields it covers.
struct Span {
    bucket: String,
    key: String,
    offset: u64,
    len: u64,
    /// `None` while in flight; then the bytes, or `None` inside if the GET
    /// failed or came short.
    bytes: Mutex<Option<Option<Vec<u8>>>>,
    done: Condvar,
    held: Arc<AtomicU64>,
}

impl Drop for Span {
    fn drop(&mut self) {
        self.held.fetch_sub(self.len, Ordering::Relaxed);
    }
}

/// A hinted field: its location's URI, offset and length.
type FieldId = (Arc<str>, u64, u64);

/// The fields hinted and not read yet, and the threads fetching them.
pub(crate) struct Prefetcher {
    client: Arc<Client>,
    fields: Mutex<HashMap<FieldId, (Arc<Span>, Instant)>>,
    held: Arc<AtomicU64>,
    queue: Mutex<Option<Sender<Weak<Span>>>>,
    /// Request time-out: how long a read waits for its span at most.
    wait: Duration,
}

impl std::fmt::Debug for Prefetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.held.load(Ordering::Relaxed);
        write!(f, "Prefetcher({held} bytes held)")
    }
}

impl Prefetcher {
    pub(crate) fn new(client: Arc<Client>, wait: Duration) -> Prefetcher {
        Prefetcher {
            client,
            fields: Mutex::new(HashMap::new()),
            held: Arc::new(AtomicU64::new(0)),
            queue: Mutex::new(None),
            wait,
        }
    }

    /// Start fetching `locations` (best effort: never fails, never waits
    /// for the server).
    pub(crate) fn hint(&self, locations: &[FieldLocation]) {
        let mut by_object: HashMap<&str, Vec<&FieldLocation>> = HashMap::new();
        for l in locations {
            if l.length > 0 && l.length <= MAX_SPAN {
                by_object.entry(&l.uri).or_default().push(l);
            }
        }
        let mut fields = self.fields.lock().unwrap_or_else(|p| p.into_inner());
        fields.retain(|_, (_, at)| at.elapsed() < KEEP);
        for (uri, mut locs) in by_object {
            let Ok((bucket, key)) = naming::parse_uri(uri) else {
                continue;
            };
            locs.sort_by_key(|l| l.offset);
            for (start, end, range) in runs(&locs) {
                let len = end - start;
                if self.held.load(Ordering::Relaxed) + len > MAX_HELD {
                    return;
                }
                let run = &locs[range];
                if run
                    .iter()
                    .all(|l| fields.contains_key(&(l.uri.clone(), l.offset, l.length)))
                {
                    continue;
                }
                self.held.fetch_add(len, Ordering::Relaxed);
                let span = Arc::new(Span {
                    bucket: bucket.to_string(),
                    key: key.to_string(),
                    offset: start,
                    len,
                    bytes: Mutex::new(None),
                    done: Condvar::new(),
                    held: self.held.clone(),
                });
                for l in run {
                    fields.insert(
                        (l.uri.clone(), l.offset, l.length),
                        (span.clone(), Instant::now()),
                    );
                }
                self.send(Arc::downgrade(&span));
            }
        }
    }

    /// Queue a span for the fetching threads (started on first use).
    fn send(&self, span: Weak<Span>) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if q.is_none() {
            let (tx, rx) = channel::<Weak<Span>>();
            let rx = Arc::new(Mutex::new(rx));
            for _ in 0..THREADS {
                let rx = rx.clone();
                let client = self.client.clone();
                let _ = std::thread::Builder::new()
                    .name("fieldstore-s3-prefetch".into())
                    .spawn(move || fetch_loop(&client, &rx));
            }
            *q = Some(tx);
        }
        if let Some(tx) = q.as_ref() {
            let _ = tx.send(span);
        }
    }

    /// The bytes of the field at `location` if it was hinted and its span
    /// arrived whole (waiting for it at most a request time-out): `true`
    /// if `out` holds them. The field is forgotten either way (read once).
    pub(crate) fn take(&self, location: &FieldLocation, out: &mut [u8]) -> bool {
        let entry = self
            .fields
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(location.uri.clone(), location.offset, location.length));
        let Some((span, _)) = entry else {
            return false;
        };
        let locked = span.bytes.lock().unwrap_or_else(|p| p.into_inner());
        let waited = span
            .done
            .wait_timeout_while(locked, self.wait, |b| b.is_none());
        let bytes = waited.unwrap_or_else(|p| p.into_inner()).0;
        // Still `None` here: not arrived within the wait.
        let Some(Some(b)) = bytes.as_ref() else {
            return false;
        };
        let at = (location.offset - span.offset) as usize;
        match b.get(at..at + out.len()) {
            Some(src) if out.len() as u64 == location.length => {
                out.copy_from_slice(src);
                true
            }
            _ => false,
        }
    }
}

/// The runs of neighbours among the fields `locs` of one object (sorted
/// by offset): each the bytes `[start, end)` one GET fetches, and the
/// fields it covers. Neighbours are at most [`MAX_GAP`] apart, and a run
/// spans at most [`MAX_SPAN`] bytes.
fn runs(locs: &[&FieldLocation]) -> Vec<(u64, u64, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < locs.len() {
        let start = locs[i].offset;
        let mut end = start + locs[i].length;
        let mut j = i + 1;
        while j < locs.len()
            && locs[j].offset <= end + MAX_GAP
            && locs[j].offset + locs[j].length - start <= MAX_SPAN
        {
            end = end.max(locs[j].offset + locs[j].length);
            j += 1;
        }
        out.push((start, end, i..j));
        i = j;
    }
    out
}

/// A fetching thread: GET each span still wanted, until the store is gone.
fn fetch_loop(client: &Client, rx: &Mutex<Receiver<Weak<Span>>>) {
    loop {
        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(span) = next else { return };
        let Some(span) = span.upgrade() else { continue };
        let mut buf = vec![0u8; span.len as usize];
        let got = client
            .get_range(&span.bucket, &span.key, span.offset, &mut buf)
            .ok()
            .filter(|n| *n == buf.len())
            .map(|_| buf);
        *span.bytes.lock().unwrap_or_else(|p| p.into_inner()) = Some(got);
        span.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_share_a_get_within_the_gap_and_the_span() {
        let at =
            |offset: u64, length: u64| FieldLocation::new(Arc::from("s3://b/k"), offset, length);
        // Packed 64 KiB fields, a gap of 64 KiB (still neighbours), one of
        // 64 KiB + 1 (not), then a run that would pass 8 MiB.
        let k = 64 << 10;
        let mut locs = vec![at(0, k), at(k, k), at(3 * k, k), at(5 * k + 1, k)];
        let big = 10 * k;
        locs.extend((0..14).map(|i| at(big + i * (1 << 20), 1 << 20)));
        let refs: Vec<&FieldLocation> = locs.iter().collect();
        let got = runs(&refs);
        assert_eq!(got[0], (0, 4 * k, 0..3));
        assert_eq!(got[1], (5 * k + 1, 6 * k + 1, 3..4));
        assert_eq!(got[2], (big, big + 8 * (1 << 20), 4..12));
        assert_eq!(got[3], (big + 8 * (1 << 20), big + 14 * (1 << 20), 12..18));
        assert_eq!(got.len(), 4);
    }
}
