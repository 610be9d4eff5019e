//! What `retrieve` returns: a reader over the fields, in request order.

use std::io::{self, Read};
use std::sync::Arc;

use fieldstore_core::{Error, FieldLocation, Key, Result};

use crate::readahead::Readahead;
use fieldstore_core::store::Store;

/// Looks a field up again (its newest location, or `None` if it no longer
/// exists).
pub(crate) type Resolver = Arc<dyn Fn(&Key) -> Result<Option<FieldLocation>> + Send + Sync>;

/// The fields a request named, as one byte stream in request order.
/// Fields that do not exist are simply absent.
///
/// Bytes are read lazily, one field at a time; each field is verified
/// against its checksum before any of it is returned.
pub struct DataReader {
    store: Arc<dyn Store>,
    resolve: Option<Resolver>,
    fields: Vec<(Key, FieldLocation)>,
    next: usize,
    readahead: Readahead,
    buf: Vec<u8>,
    pos: usize,
}

impl std::fmt::Debug for DataReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataReader")
            .field("fields", &self.fields.len())
            .field("next", &self.next)
            .finish()
    }
}

impl DataReader {
    pub(crate) fn new(store: Arc<dyn Store>, fields: Vec<(Key, FieldLocation)>) -> Self {
        DataReader {
            store,
            resolve: None,
            fields,
            next: 0,
            readahead: Readahead::new(),
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// Look fields up again when their bytes are gone at read time.
    pub(crate) fn with_resolver(mut self, resolve: Resolver) -> Self {
        self.resolve = Some(resolve);
        self
    }

    /// The fields found, with their keys, in order.
    pub fn fields(&self) -> &[(Key, FieldLocation)] {
        &self.fields
    }

    /// Number of fields found.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Total bytes.
    pub fn size(&self) -> u64 {
        self.fields.iter().map(|(_, l)| l.length).sum()
    }

    /// Read the next whole field into `buf`; `Ok(None)` at the end.
    ///
    /// # Errors
    /// `Corrupt` if a field fails its checksum; I/O errors.
    pub fn next_field(&mut self, buf: &mut Vec<u8>) -> Result<Option<Key>> {
        self.next_with(|store, loc| store.read(loc, buf))
    }

    /// Read the next field with `read` (into the caller's buffer or ours),
    /// looking it up again if its bytes are gone; `Ok(None)` at the end.
    fn next_with(
        &mut self,
        mut read: impl FnMut(&dyn Store, &FieldLocation) -> Result<()>,
    ) -> Result<Option<Key>> {
        self.hint_ahead();
        // Looking up again the same field: a dataset moved back and forth
        // between the lookup and the read may be found where it was again
        // and moved once more before the read (each look finds it
        // somewhere: a move is atomic for lookups).
        let mut again = 0;
        loop {
            let Some((key, loc)) = self.fields.get(self.next) else {
                return Ok(None);
            };
            let err = match read(&*self.store, loc) {
                Ok(()) => {
                    self.next += 1;
                    return Ok(Some(key.clone()));
                }
                Err(e) => e,
            };
            again += 1;
            // The bytes are gone: a wipe, a purge of a version replaced
            // since the lookup, or a move. Look the field up again.
            let Some(resolve) = self
                .resolve
                .as_ref()
                .filter(|_| err.kind() == fieldstore_core::ErrorKind::NotFound)
            else {
                return Err(err);
            };
            match resolve(key)? {
                None => {
                    // The field no longer exists: it is absent.
                    self.fields.remove(self.next);
                    self.readahead.removed(self.next);
                    again = 0;
                }
                Some(newer) if again < LOOKUPS => self.fields[self.next].1 = newer,
                Some(newer) if newer != *loc && again < LOOKUPS_AT_MOST => {
                    self.fields[self.next].1 = newer
                }
                Some(newer) if newer != *loc => {
                    return Err(err.context(format!(
                        "{} replaced and its bytes removed each of the {again} times it was \
                         looked up before they could be read",
                        key.braced()
                    )))
                }
                Some(_) => return Err(err),
            }
        }
    }

    /// Keep the store told what comes next ([`Readahead`]).
    fn hint_ahead(&mut self) {
        let fields = &self.fields;
        self.readahead
            .before_read(&*self.store, self.next, fields.len(), |i| &fields[i].1);
    }

    /// Read everything into one buffer.
    ///
    /// # Errors
    /// As [`DataReader::next_field`].
    pub fn read_all(mut self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.size() as usize);
        let mut buf = Vec::new();
        while self.next_field(&mut buf)?.is_some() {
            out.extend_from_slice(&buf);
        }
        Ok(out)
    }
}

impl Read for DataReader {
    /// A field that fits whole in `out`, which is not much larger than the
    /// field, is read straight
    /// into it (one copy, file → caller, verified there); others go through
    /// the reader's buffer.
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let room = out.len();
        let fits = move |l: &FieldLocation| crate::stream::reads_direct(l.length, room);
        if self.pos == self.buf.len() && self.fields.get(self.next).is_some_and(|(_, l)| fits(l)) {
            let mut direct = None;
            let mut spill = std::mem::take(&mut self.buf);
            let read = self.next_with(|store, loc| {
                if fits(loc) {
                    let n = loc.length as usize;
                    direct = Some(n);
                    store.read_into(loc, &mut out[..n])
                } else {
                    // Looked up again and grown: through the buffer.
                    direct = None;
                    store.read(loc, &mut spill)
                }
            });
            self.buf = spill;
            self.pos = 0;
            match read {
                Ok(None) => return Ok(0),
                Err(e) => {
                    self.buf.clear();
                    return Err(to_io(e));
                }
                Ok(Some(_)) => {
                    if let Some(n) = direct {
                        self.buf.clear();
                        return Ok(n);
                    }
                    // Else in the buffer: copied below.
                }
            }
        }
        while self.pos == self.buf.len() {
            let mut buf = std::mem::take(&mut self.buf);
            match self.next_field(&mut buf) {
                Ok(Some(_)) => {
                    self.buf = buf;
                    self.pos = 0;
                }
                Ok(None) => return Ok(0),
                Err(e) => return Err(to_io(e)),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// How many times a field whose bytes are gone at the location it was
/// found at is looked up again at the same location before its read fails.
const LOOKUPS: usize = 8;

/// How many times one field is looked up again in all: a field replaced,
/// and its old bytes purged, between every lookup and read would otherwise
/// keep its reader looking for as long as that goes on.
const LOOKUPS_AT_MOST: usize = 64;

fn to_io(e: Error) -> io::Error {
    let kind = match e.kind() {
        fieldstore_core::ErrorKind::NotFound => io::ErrorKind::NotFound,
        fieldstore_core::ErrorKind::Corrupt => io::ErrorKind::InvalidData,
        fieldstore_core::ErrorKind::PermissionDenied => io::ErrorKind::PermissionDenied,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use fieldstore_core::DatasetKey;

    use super::*;
    use crate::readahead::PREFETCH_BYTES;
    use fieldstore_core::store::StoreWriter;

    #[derive(Debug, PartialEq)]
    enum Event {
        Prefetch(u64),
        Read(u64),
    }

    /// Serves each field as `length` copies of its index (`gone`: finds
    /// its bytes gone) and records the hints and reads it gets, in order.
    #[derive(Debug, Default)]
    struct Recording {
        events: Mutex<Vec<Event>>,
        gone: bool,
    }

    impl Recording {
        fn reads(&self) -> usize {
            let events = self.events.lock().unwrap();
            events
                .iter()
                .filter(|e| matches!(e, Event::Read(_)))
                .count()
        }
    }

    impl Store for Recording {
        fn writer(&self, _: &DatasetKey) -> Result<Box<dyn StoreWriter>> {
            Err(Error::internal("read-only"))
        }
        fn read(&self, location: &FieldLocation, buf: &mut Vec<u8>) -> Result<()> {
            self.events
                .lock()
                .unwrap()
                .push(Event::Read(location.offset));
            if self.gone {
                return Err(Error::new(
                    fieldstore_core::ErrorKind::NotFound,
                    format!("{} is gone", location.uri),
                ));
            }
            buf.clear();
            buf.resize(location.length as usize, location.offset as u8);
            Ok(())
        }
        fn prefetch(&self, locations: &[FieldLocation]) {
            let mut events = self.events.lock().unwrap();
            events.extend(locations.iter().map(|l| Event::Prefetch(l.offset)));
        }
        fn read_into(&self, location: &FieldLocation, out: &mut [u8]) -> Result<()> {
            fieldstore_core::store::read_into_by_copy(self, location, out)
        }
        fn read_range(&self, location: &FieldLocation, offset: u64, out: &mut [u8]) -> Result<()> {
            let range = location.range(offset, out.len() as u64)?;
            fieldstore_core::store::read_into_by_copy(self, &range, out)
        }
        fn scheme(&self) -> &'static str {
            "test"
        }
        fn maintenance(&self) -> Option<&dyn fieldstore_core::StoreMaintenance> {
            None
        }
    }

    /// `read_into_by_copy` (for stores without a native `read_into`): the
    /// field's bytes; a length that differs is `Corrupt`.
    #[test]
    fn read_into_by_copy_reads_through_read_and_checks_the_length() {
        let store = Recording::default();
        let loc = FieldLocation::new(Arc::from("memory://x"), 7, 4);
        let mut out = [0u8; 4];
        store.read_into(&loc, &mut out).unwrap();
        assert_eq!(out, [7; 4]);
        let mut short = [0u8; 3];
        let e = store.read_into(&loc, &mut short).unwrap_err();
        assert_eq!(e.kind(), fieldstore_core::ErrorKind::Corrupt, "{e}");
    }

    /// A field replaced and purged between every lookup and read is looked
    /// up a bounded number of times, then fails naming why; one that stays
    /// where it was fails after `LOOKUPS`; one that vanished is absent, and
    /// does not use up the lookups of the next.
    #[test]
    fn lookups_again_are_bounded() {
        let key = |v: &str| Key::from_pairs([("step", v)]).unwrap();
        let loc = |offset| FieldLocation::new("test://f", offset, 4);
        let store = Arc::new(Recording {
            gone: true,
            ..Recording::default()
        });
        let next = std::sync::atomic::AtomicU64::new(1);
        let resolver: Resolver = Arc::new(move |k: &Key| {
            Ok(match k.get("step") {
                Some("0") => None,
                Some("1") => Some(loc(0)),
                _ => Some(loc(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))),
            })
        });
        let fields = vec![(key("0"), loc(0)), (key("1"), loc(0))];
        let mut reader = DataReader::new(store.clone(), fields).with_resolver(resolver.clone());
        let e = reader.next_field(&mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), fieldstore_core::ErrorKind::NotFound, "{e}");
        assert!(!e.message().contains("replaced"), "{e}");
        // One read of the vanished field, then `LOOKUPS` of the other.
        assert_eq!(store.reads(), 1 + LOOKUPS);

        let store = Arc::new(Recording {
            gone: true,
            ..Recording::default()
        });
        let fields = vec![(key("2"), loc(0))];
        let mut reader = DataReader::new(store.clone(), fields).with_resolver(resolver);
        let e = reader.next_field(&mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), fieldstore_core::ErrorKind::NotFound, "{e}");
        assert!(
            e.message()
                .contains("{step=2} replaced and its bytes removed"),
            "{e}"
        );
        assert_eq!(store.reads(), LOOKUPS_AT_MOST);
    }

    #[test]
    fn every_field_is_hinted_once_in_order_before_it_is_read_and_not_too_far_ahead() {
        // Fields of 3 MiB and of 1 KiB mixed; offset = index.
        let lengths: Vec<u64> = (0..200u64)
            .map(|i| if i % 3 == 0 { 3 << 20 } else { 1024 })
            .collect();
        let fields = lengths
            .iter()
            .enumerate()
            .map(|(i, &len)| (Key::new(), FieldLocation::new("test://f", i as u64, len)))
            .collect();
        let store = Arc::new(Recording::default());
        let mut reader = DataReader::new(store.clone(), fields);
        let mut buf = Vec::new();
        let mut n = 0u64;
        while reader.next_field(&mut buf).unwrap().is_some() {
            assert!(buf.iter().all(|&b| b == n as u8));
            n += 1;
        }
        assert_eq!(n, 200);
        let events = store.events.lock().unwrap();
        let hinted: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Prefetch(i) => Some(*i),
                Event::Read(_) => None,
            })
            .collect();
        assert_eq!(hinted, (0..200).collect::<Vec<u64>>());
        let mut hinted_upto = 0u64;
        for e in events.iter() {
            match e {
                Event::Prefetch(i) => hinted_upto = i + 1,
                Event::Read(i) => {
                    assert!(*i < hinted_upto, "field {i} read before it was hinted");
                    let ahead: u64 = lengths[*i as usize..hinted_upto as usize].iter().sum();
                    assert!(
                        ahead <= PREFETCH_BYTES + 2 * (3 << 20),
                        "{ahead} bytes hinted ahead of field {i}"
                    );
                }
            }
        }
    }
}
