//! Where the stand-in keeps pools, containers and objects: in memory (one
//! process, unit tests) or in a directory (several processes share a pool:
//! multi-process tests, SIGKILL tests, the hammer).
//!
//! Both keep DAOS's guarantees that fieldstore relies on: a KV put is
//! atomic (readers see the old value or the new one), a conditional insert
//! succeeds for exactly one of several racing writers, container creation
//! by label is exclusive, OID allocation never hands out a value twice.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::types::{der, DaosObjId};

/// A container's identity and properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContMeta {
    /// UUID.
    pub uuid: [u8; 16],
    /// Label, if it has one.
    pub label: Option<String>,
    /// `DAOS_PROP_CO_REDUN_FAC`.
    pub rf: u32,
}

/// An object: pool, container UUID, full OID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjRef {
    /// Pool identifier (its label).
    pub pool: String,
    /// Container UUID.
    pub cont: [u8; 16],
    /// The OID, header included.
    pub oid: DaosObjId,
}

/// How a KV put treats an existing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    /// Overwrite or create.
    Any,
    /// Fail with `-DER_EXIST` if the key exists.
    Insert,
    /// Fail with `-DER_NONEXIST` if it does not.
    Update,
}

type R<T> = Result<T, i32>;

/// The storage behind the API.
pub trait Backend: Send + Sync {
    /// Create a pool (an administrator's `dmg pool create`).
    fn pool_create(&self, label: &str) -> R<()>;
    /// Find a pool by label or UUID string; its identifier.
    fn pool_lookup(&self, name: &str) -> R<String>;
    /// Create a container; `-DER_EXIST` if its label is taken.
    fn cont_create(&self, pool: &str, meta: &ContMeta) -> R<()>;
    /// Find a container by label or UUID string.
    fn cont_lookup(&self, pool: &str, name: &str) -> R<ContMeta>;
    /// Destroy a container and everything in it.
    fn cont_destroy(&self, pool: &str, meta: &ContMeta) -> R<()>;
    /// Every container of a pool.
    fn cont_list(&self, pool: &str) -> R<Vec<ContMeta>>;
    /// Reserve `n` OIDs; the first.
    fn alloc_oids(&self, pool: &str, cont: &[u8; 16], n: u64) -> R<u64>;
    /// Put a KV value.
    fn kv_put(&self, o: &ObjRef, key: &[u8], value: &[u8], cond: Cond) -> R<()>;
    /// Get a KV value.
    fn kv_get(&self, o: &ObjRef, key: &[u8]) -> R<Option<Vec<u8>>>;
    /// Remove a key; whether it existed.
    fn kv_remove(&self, o: &ObjRef, key: &[u8]) -> R<bool>;
    /// Every key.
    fn kv_keys(&self, o: &ObjRef) -> R<Vec<Vec<u8>>>;
    /// Remove everything of an object (keys, bytes, array metadata).
    fn punch(&self, o: &ObjRef) -> R<()>;
    /// Array metadata (cell size, chunk size).
    fn array_meta(&self, o: &ObjRef) -> R<Option<(u64, u64)>>;
    /// Set array metadata; with `exclusive`, `-DER_EXIST` if set already.
    fn array_set_meta(&self, o: &ObjRef, meta: (u64, u64), exclusive: bool) -> R<()>;
    /// Write bytes at a byte offset. With `attr` (an array opened with
    /// attributes): record them on first write, `-DER_INVAL` if the array
    /// was written with others.
    fn array_write(&self, o: &ObjRef, off: u64, data: &[u8], attr: Option<(u64, u64)>) -> R<()>;
    /// Read bytes at a byte offset; how many exist there (the rest of `buf`
    /// is untouched). With `attr`: `-DER_INVAL` if the array was written
    /// with other attributes.
    fn array_read(
        &self,
        o: &ObjRef,
        off: u64,
        buf: &mut [u8],
        attr: Option<(u64, u64)>,
    ) -> R<usize>;
    /// Size in bytes (one past the highest byte written).
    fn array_size(&self, o: &ObjRef) -> R<u64>;
    /// Truncate or extend to a size in bytes.
    fn array_truncate(&self, o: &ObjRef, size: u64) -> R<()>;
}

/// FNV-1a, 64 bits: the stand-in's hash for keys (shards, anchors, names).
pub fn hash64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // Final avalanche so that nearby keys spread over shards.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// A UUID-shaped string (`8-4-4-4-12` hex digits).
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Format a UUID.
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Parse a UUID string.
pub fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    if !is_uuid(s) {
        return None;
    }
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A fresh random-looking UUID (version 4 bits set).
pub fn new_uuid() -> [u8; 16] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let c = COUNTER.fetch_add(1, Ordering::Relaxed);
    let seed = format!("{t}.{}.{c}", std::process::id());
    let a = hash64(seed.as_bytes());
    let b = hash64(&a.to_le_bytes());
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&a.to_le_bytes());
    u[8..].copy_from_slice(&b.to_le_bytes());
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}

/// A pool's UUID, derived from its label so every process agrees.
pub fn pool_uuid(label: &str) -> [u8; 16] {
    let a = hash64(label.as_bytes());
    let b = hash64(&a.to_be_bytes());
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&a.to_le_bytes());
    u[8..].copy_from_slice(&b.to_le_bytes());
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}

// ---------------------------------------------------------------- memory

#[derive(Default)]
struct MemObj {
    kv: HashMap<Vec<u8>, Vec<u8>>,
    data: Vec<u8>,
    meta: Option<(u64, u64)>,
}

struct MemCont {
    meta: ContMeta,
    next_oid: u64,
    objs: HashMap<DaosObjId, MemObj>,
}

#[derive(Default)]
struct MemPool {
    conts: HashMap<[u8; 16], MemCont>,
    labels: HashMap<String, [u8; 16]>,
}

/// Pools in this process's memory.
#[derive(Default)]
pub struct Memory {
    pools: Mutex<HashMap<String, MemPool>>,
}

impl Memory {
    fn with_pool<T>(&self, pool: &str, f: impl FnOnce(&mut MemPool) -> R<T>) -> R<T> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        let p = pools.get_mut(pool).ok_or(-der::NONEXIST)?;
        f(p)
    }

    fn with_obj<T>(&self, o: &ObjRef, f: impl FnOnce(&mut MemObj) -> R<T>) -> R<T> {
        self.with_pool(&o.pool, |p| {
            let c = p.conts.get_mut(&o.cont).ok_or(-der::NO_HDL)?;
            f(c.objs.entry(o.oid).or_default())
        })
    }
}

impl Backend for Memory {
    fn pool_create(&self, label: &str) -> R<()> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if pools.contains_key(label) {
            return Err(-der::EXIST);
        }
        pools.insert(label.to_string(), MemPool::default());
        Ok(())
    }

    fn pool_lookup(&self, name: &str) -> R<String> {
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if pools.contains_key(name) {
            return Ok(name.to_string());
        }
        let uuid = parse_uuid(name).ok_or(-der::NONEXIST)?;
        pools
            .keys()
            .find(|l| pool_uuid(l) == uuid)
            .cloned()
            .ok_or(-der::NONEXIST)
    }

    fn cont_create(&self, pool: &str, meta: &ContMeta) -> R<()> {
        self.with_pool(pool, |p| {
            if let Some(l) = &meta.label {
                if p.labels.contains_key(l) {
                    return Err(-der::EXIST);
                }
                p.labels.insert(l.clone(), meta.uuid);
            }
            p.conts.insert(
                meta.uuid,
                MemCont {
                    meta: meta.clone(),
                    next_oid: 1,
                    objs: HashMap::new(),
                },
            );
            Ok(())
        })
    }

    fn cont_lookup(&self, pool: &str, name: &str) -> R<ContMeta> {
        self.with_pool(pool, |p| {
            let uuid = match parse_uuid(name) {
                Some(u) => u,
                None => *p.labels.get(name).ok_or(-der::NONEXIST)?,
            };
            Ok(p.conts.get(&uuid).ok_or(-der::NONEXIST)?.meta.clone())
        })
    }

    fn cont_destroy(&self, pool: &str, meta: &ContMeta) -> R<()> {
        self.with_pool(pool, |p| {
            if let Some(l) = &meta.label {
                p.labels.remove(l);
            }
            p.conts.remove(&meta.uuid).ok_or(-der::NONEXIST)?;
            Ok(())
        })
    }

    fn cont_list(&self, pool: &str) -> R<Vec<ContMeta>> {
        self.with_pool(pool, |p| {
            Ok(p.conts.values().map(|c| c.meta.clone()).collect())
        })
    }

    fn alloc_oids(&self, pool: &str, cont: &[u8; 16], n: u64) -> R<u64> {
        self.with_pool(pool, |p| {
            let c = p.conts.get_mut(cont).ok_or(-der::NO_HDL)?;
            let first = c.next_oid;
            // Leave a hole between ranges: callers must not assume that
            // successive allocations are contiguous.
            c.next_oid = first + n + 1;
            Ok(first)
        })
    }

    fn kv_put(&self, o: &ObjRef, key: &[u8], value: &[u8], cond: Cond) -> R<()> {
        self.with_obj(o, |obj| {
            let exists = obj.kv.contains_key(key);
            match cond {
                Cond::Insert if exists => return Err(-der::EXIST),
                Cond::Update if !exists => return Err(-der::NONEXIST),
                _ => {}
            }
            obj.kv.insert(key.to_vec(), value.to_vec());
            Ok(())
        })
    }

    fn kv_get(&self, o: &ObjRef, key: &[u8]) -> R<Option<Vec<u8>>> {
        self.with_obj(o, |obj| Ok(obj.kv.get(key).cloned()))
    }

    fn kv_remove(&self, o: &ObjRef, key: &[u8]) -> R<bool> {
        self.with_obj(o, |obj| Ok(obj.kv.remove(key).is_some()))
    }

    fn kv_keys(&self, o: &ObjRef) -> R<Vec<Vec<u8>>> {
        self.with_obj(o, |obj| Ok(obj.kv.keys().cloned().collect()))
    }

    fn punch(&self, o: &ObjRef) -> R<()> {
        self.with_obj(o, |obj| {
            *obj = MemObj::default();
            Ok(())
        })
    }

    fn array_meta(&self, o: &ObjRef) -> R<Option<(u64, u64)>> {
        self.with_obj(o, |obj| Ok(obj.meta))
    }

    fn array_set_meta(&self, o: &ObjRef, meta: (u64, u64), exclusive: bool) -> R<()> {
        self.with_obj(o, |obj| {
            if exclusive && obj.meta.is_some() {
                return Err(-der::EXIST);
            }
            obj.meta = Some(meta);
            Ok(())
        })
    }

    fn array_write(&self, o: &ObjRef, off: u64, data: &[u8], attr: Option<(u64, u64)>) -> R<()> {
        self.with_obj(o, |obj| {
            if let Some(a) = attr {
                match obj.meta {
                    Some(m) if m != a => return Err(-der::INVAL),
                    Some(_) => {}
                    None => obj.meta = Some(a),
                }
            }
            let end = off as usize + data.len();
            if obj.data.len() < end {
                obj.data.resize(end, 0);
            }
            obj.data[off as usize..end].copy_from_slice(data);
            Ok(())
        })
    }

    fn array_read(
        &self,
        o: &ObjRef,
        off: u64,
        buf: &mut [u8],
        attr: Option<(u64, u64)>,
    ) -> R<usize> {
        self.with_obj(o, |obj| {
            if let (Some(a), Some(m)) = (attr, obj.meta) {
                if a != m {
                    return Err(-der::INVAL);
                }
            }
            let off = off as usize;
            if off >= obj.data.len() {
                return Ok(0);
            }
            let n = buf.len().min(obj.data.len() - off);
            buf[..n].copy_from_slice(&obj.data[off..off + n]);
            Ok(n)
        })
    }

    fn array_size(&self, o: &ObjRef) -> R<u64> {
        self.with_obj(o, |obj| Ok(obj.data.len() as u64))
    }

    fn array_truncate(&self, o: &ObjRef, size: u64) -> R<()> {
        self.with_obj(o, |obj| {
            obj.data.resize(size as usize, 0);
            Ok(())
        })
    }
}

// ------------------------------------------------------------- directory

/// Pools as directories under a root, shared by every process that names
/// the same root:
///
/// ```text
/// <root>/<pool label>/                     a pool
///   labels/<container label>               symlink to ../conts/<uuid>
///   conts/<uuid>/meta                      "label\nrf\n"
///   conts/<uuid>/oids                      next OID (8 bytes LE), under flock
///   conts/<uuid>/obj/<hi:016x>.<lo:016x>/  a KV: one file per key,
///     k<escaped key> | h<hash>             u32 LE key length, key, value
///   conts/<uuid>/obj/<hi:016x>.<lo:016x>.arr  an array: cell and chunk size
///                                          (u64 LE each, 0 = unknown), then the bytes
/// ```
///
/// KV puts write a temporary file and rename it over the key's file
/// (atomic); conditional inserts hard-link it (exclusive).
pub struct Directory {
    root: PathBuf,
    sync: bool,
}

fn io_rc(e: &io::Error) -> i32 {
    match e.kind() {
        io::ErrorKind::NotFound => -der::NONEXIST,
        io::ErrorKind::AlreadyExists => -der::EXIST,
        io::ErrorKind::StorageFull => -der::NOSPACE,
        io::ErrorKind::PermissionDenied => -der::NO_PERM,
        _ => -der::IO,
    }
}

fn escape_key(key: &[u8]) -> String {
    let mut s = String::from("k");
    for &b in key {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.' || b == b':' {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    if s.len() > 200 {
        return format!("h{:016x}", hash64(key));
    }
    s
}

fn unescape_key(name: &str) -> Option<Vec<u8>> {
    let body = name.strip_prefix('k')?;
    let b = body.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

fn tmp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        ".tmp.{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

impl Directory {
    /// Pools under `root` (which must exist). With `sync`, every put and
    /// write is fdatasync'ed, as a DAOS engine persists before it replies.
    pub fn new(root: PathBuf, sync: bool) -> Directory {
        Directory { root, sync }
    }

    fn pool_dir(&self, pool: &str) -> PathBuf {
        self.root.join(pool)
    }

    fn cont_dir(&self, pool: &str, cont: &[u8; 16]) -> PathBuf {
        self.pool_dir(pool).join("conts").join(uuid_string(cont))
    }

    fn obj_dir(&self, o: &ObjRef) -> PathBuf {
        self.cont_dir(&o.pool, &o.cont)
            .join("obj")
            .join(format!("{:016x}.{:016x}", o.oid.hi, o.oid.lo))
    }

    /// `-DER_NO_HDL` if the object's container is gone (destroyed, which
    /// revokes every handle of it, as in DAOS): a missing key or array is
    /// then not just absent.
    fn check_cont(&self, o: &ObjRef) -> R<()> {
        if self.cont_dir(&o.pool, &o.cont).exists() {
            Ok(())
        } else {
            Err(-der::NO_HDL)
        }
    }

    /// The object directory, created on first use; `-DER_NO_HDL` if the
    /// container is gone.
    fn obj_dir_create(&self, o: &ObjRef) -> R<PathBuf> {
        let d = self.obj_dir(o);
        if !d.exists() {
            if !self.cont_dir(&o.pool, &o.cont).exists() {
                return Err(-der::NO_HDL);
            }
            fs::create_dir_all(&d).map_err(|e| io_rc(&e))?;
        }
        Ok(d)
    }

    fn read_meta(dir: &Path, uuid: [u8; 16]) -> R<ContMeta> {
        let text = fs::read_to_string(dir.join("meta")).map_err(|e| io_rc(&e))?;
        let mut lines = text.lines();
        let label = lines.next().unwrap_or("");
        let rf = lines.next().and_then(|l| l.parse().ok()).unwrap_or(0);
        Ok(ContMeta {
            uuid,
            label: (!label.is_empty()).then(|| label.to_string()),
            rf,
        })
    }

    fn write_file(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut f = fs::File::create(path)?;
        f.write_all(bytes)?;
        if self.sync {
            f.sync_data()?;
        }
        Ok(())
    }

    /// An array: one file, a 16-byte header then the bytes.
    fn array_file(&self, o: &ObjRef) -> PathBuf {
        self.cont_dir(&o.pool, &o.cont)
            .join("obj")
            .join(format!("{:016x}.{:016x}.arr", o.oid.hi, o.oid.lo))
    }

    fn array_open_write(&self, o: &ObjRef) -> R<fs::File> {
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.array_file(o))
            .map_err(|e| match e.kind() {
                // The container's directory is gone.
                io::ErrorKind::NotFound => -der::NO_HDL,
                _ => io_rc(&e),
            })
    }

    fn key_file(&self, o: &ObjRef, key: &[u8]) -> PathBuf {
        self.obj_dir(o).join(escape_key(key))
    }

    fn read_value(path: &Path, key: &[u8]) -> R<Option<Vec<u8>>> {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_rc(&e)),
        };
        if bytes.len() < 4 {
            return Err(-der::IO);
        }
        let klen = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        if bytes.len() < 4 + klen {
            return Err(-der::IO);
        }
        if &bytes[4..4 + klen] != key {
            // A hash-named file of another (colliding) key.
            return Ok(None);
        }
        Ok(Some(bytes[4 + klen..].to_vec()))
    }
}

fn flock(f: &fs::File, lock: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let op = if lock { libc::LOCK_EX } else { libc::LOCK_UN };
    // SAFETY: flock on a file descriptor that `f` keeps open.
    let rc = unsafe { libc::flock(f.as_raw_fd(), op) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl Backend for Directory {
    fn pool_create(&self, label: &str) -> R<()> {
        let d = self.pool_dir(label);
        match fs::create_dir(&d) {
            Ok(()) => {}
            Err(e) => return Err(io_rc(&e)),
        }
        for sub in ["conts", "labels"] {
            fs::create_dir_all(d.join(sub)).map_err(|e| io_rc(&e))?;
        }
        Ok(())
    }

    fn pool_lookup(&self, name: &str) -> R<String> {
        if !name.is_empty() && !name.contains('/') && !name.starts_with('.') {
            let d = self.pool_dir(name);
            if d.is_dir() {
                // A pool made with a plain mkdir gets its sub-directories now.
                for sub in ["conts", "labels"] {
                    fs::create_dir_all(d.join(sub)).map_err(|e| io_rc(&e))?;
                }
                return Ok(name.to_string());
            }
        }
        let uuid = parse_uuid(name).ok_or(-der::NONEXIST)?;
        let entries = fs::read_dir(&self.root).map_err(|e| io_rc(&e))?;
        for e in entries.flatten() {
            let label = e.file_name().to_string_lossy().into_owned();
            if pool_uuid(&label) == uuid {
                return Ok(label);
            }
        }
        Err(-der::NONEXIST)
    }

    fn cont_create(&self, pool: &str, meta: &ContMeta) -> R<()> {
        let dir = self.cont_dir(pool, &meta.uuid);
        let tmp = self.pool_dir(pool).join("conts").join(tmp_name());
        fs::create_dir(&tmp).map_err(|e| io_rc(&e))?;
        let text = format!("{}\n{}\n", meta.label.as_deref().unwrap_or(""), meta.rf);
        let done = self
            .write_file(&tmp.join("meta"), text.as_bytes())
            .and_then(|()| fs::create_dir(tmp.join("obj")))
            .and_then(|()| fs::rename(&tmp, &dir));
        if let Err(e) = done {
            let _ = fs::remove_dir_all(&tmp);
            return Err(io_rc(&e));
        }
        if let Some(label) = &meta.label {
            let link = self.pool_dir(pool).join("labels").join(label);
            let target = Path::new("../conts").join(uuid_string(&meta.uuid));
            if let Err(e) = std::os::unix::fs::symlink(&target, &link) {
                let _ = fs::remove_dir_all(&dir);
                return Err(io_rc(&e));
            }
        }
        Ok(())
    }

    fn cont_lookup(&self, pool: &str, name: &str) -> R<ContMeta> {
        let uuid = match parse_uuid(name) {
            Some(u) => u,
            None => {
                if name.contains('/') || name.starts_with('.') {
                    return Err(-der::NONEXIST);
                }
                let link = self.pool_dir(pool).join("labels").join(name);
                let target = fs::read_link(&link).map_err(|e| io_rc(&e))?;
                let s = target
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                parse_uuid(&s).ok_or(-der::IO)?
            }
        };
        Directory::read_meta(&self.cont_dir(pool, &uuid), uuid)
    }

    fn cont_destroy(&self, pool: &str, meta: &ContMeta) -> R<()> {
        if let Some(l) = &meta.label {
            let _ = fs::remove_file(self.pool_dir(pool).join("labels").join(l));
        }
        let dir = self.cont_dir(pool, &meta.uuid);
        let dead = self.pool_dir(pool).join("conts").join(tmp_name());
        fs::rename(&dir, &dead).map_err(|e| io_rc(&e))?;
        fs::remove_dir_all(&dead).map_err(|e| io_rc(&e))
    }

    fn cont_list(&self, pool: &str) -> R<Vec<ContMeta>> {
        let conts = self.pool_dir(pool).join("conts");
        let mut out = Vec::new();
        for e in fs::read_dir(&conts).map_err(|e| io_rc(&e))?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(uuid) = parse_uuid(&name) {
                if let Ok(m) = Directory::read_meta(&e.path(), uuid) {
                    out.push(m);
                }
            }
        }
        Ok(out)
    }

    fn alloc_oids(&self, pool: &str, cont: &[u8; 16], n: u64) -> R<u64> {
        let dir = self.cont_dir(pool, cont);
        if !dir.exists() {
            return Err(-der::NO_HDL);
        }
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join("oids"))
            .map_err(|e| io_rc(&e))?;
        flock(&f, true).map_err(|e| io_rc(&e))?;
        let result = (|| -> io::Result<u64> {
            let mut b = [0u8; 8];
            let got = f.read_at(&mut b, 0)?;
            let first = if got == 8 { u64::from_le_bytes(b) } else { 1 };
            // A hole between ranges, as in the memory backend.
            f.write_all_at(&(first + n + 1).to_le_bytes(), 0)?;
            if self.sync {
                f.sync_data()?;
            }
            Ok(first)
        })();
        let _ = flock(&f, false);
        result.map_err(|e| io_rc(&e))
    }

    fn kv_put(&self, o: &ObjRef, key: &[u8], value: &[u8], cond: Cond) -> R<()> {
        let dir = self.obj_dir_create(o)?;
        let path = dir.join(escape_key(key));
        let tmp = dir.join(tmp_name());
        let mut bytes = Vec::with_capacity(4 + key.len() + value.len());
        bytes.extend_from_slice(&(key.len() as u32).to_le_bytes());
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
        self.write_file(&tmp, &bytes).map_err(|e| io_rc(&e))?;
        let r = match cond {
            Cond::Insert => {
                let r = fs::hard_link(&tmp, &path);
                let _ = fs::remove_file(&tmp);
                r
            }
            Cond::Update if !path.exists() => {
                let _ = fs::remove_file(&tmp);
                return Err(-der::NONEXIST);
            }
            _ => fs::rename(&tmp, &path),
        };
        if let Err(e) = r {
            let _ = fs::remove_file(&tmp);
            return Err(io_rc(&e));
        }
        if self.sync {
            if let Ok(d) = fs::File::open(&dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }

    fn kv_get(&self, o: &ObjRef, key: &[u8]) -> R<Option<Vec<u8>>> {
        let v = Directory::read_value(&self.key_file(o, key), key)?;
        if v.is_none() {
            self.check_cont(o)?;
        }
        Ok(v)
    }

    fn kv_remove(&self, o: &ObjRef, key: &[u8]) -> R<bool> {
        match fs::remove_file(self.key_file(o, key)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io_rc(&e)),
        }
    }

    fn kv_keys(&self, o: &ObjRef) -> R<Vec<Vec<u8>>> {
        let dir = self.obj_dir(o);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.check_cont(o)?;
                return Ok(Vec::new());
            }
            Err(e) => return Err(io_rc(&e)),
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(k) = unescape_key(&name) {
                out.push(k);
            } else if name.starts_with('h') {
                let mut f = match fs::File::open(e.path()) {
                    Ok(f) => f,
                    Err(_) => continue, // removed meanwhile
                };
                let mut len = [0u8; 4];
                if f.read_exact(&mut len).is_err() {
                    continue;
                }
                let mut k = vec![0u8; u32::from_le_bytes(len) as usize];
                if f.read_exact(&mut k).is_ok() {
                    out.push(k);
                }
            }
        }
        Ok(out)
    }

    fn punch(&self, o: &ObjRef) -> R<()> {
        match fs::remove_file(self.array_file(o)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_rc(&e)),
        }
        let dir = self.obj_dir(o);
        let dead = self.cont_dir(&o.pool, &o.cont).join("obj").join(tmp_name());
        match fs::rename(&dir, &dead) {
            Ok(()) => fs::remove_dir_all(&dead).map_err(|e| io_rc(&e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_rc(&e)),
        }
    }

    fn array_meta(&self, o: &ObjRef) -> R<Option<(u64, u64)>> {
        match fs::File::open(self.array_file(o)) {
            Ok(f) => read_header(&f),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_rc(&e)),
        }
    }

    fn array_set_meta(&self, o: &ObjRef, meta: (u64, u64), exclusive: bool) -> R<()> {
        let f = self.array_open_write(o)?;
        if exclusive && read_header(&f)?.is_some() {
            return Err(-der::EXIST);
        }
        write_header(&f, meta)
    }

    fn array_write(&self, o: &ObjRef, off: u64, data: &[u8], attr: Option<(u64, u64)>) -> R<()> {
        let f = self.array_open_write(o)?;
        if let Some(a) = attr {
            match read_header(&f)? {
                Some(m) if m != a => return Err(-der::INVAL),
                Some(_) => {}
                None => write_header(&f, a)?,
            }
        }
        f.write_all_at(data, ARRAY_HEADER + off)
            .map_err(|e| io_rc(&e))?;
        if self.sync {
            f.sync_data().map_err(|e| io_rc(&e))?;
        }
        Ok(())
    }

    fn array_read(
        &self,
        o: &ObjRef,
        off: u64,
        buf: &mut [u8],
        attr: Option<(u64, u64)>,
    ) -> R<usize> {
        let f = match fs::File::open(self.array_file(o)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.check_cont(o)?;
                return Ok(0);
            }
            Err(e) => return Err(io_rc(&e)),
        };
        if let (Some(a), Some(m)) = (attr, read_header(&f)?) {
            if a != m {
                return Err(-der::INVAL);
            }
        }
        let mut done = 0;
        while done < buf.len() {
            match f.read_at(&mut buf[done..], ARRAY_HEADER + off + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_rc(&e)),
            }
        }
        Ok(done)
    }

    fn array_size(&self, o: &ObjRef) -> R<u64> {
        match fs::metadata(self.array_file(o)) {
            Ok(m) => Ok(m.len().saturating_sub(ARRAY_HEADER)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io_rc(&e)),
        }
    }

    fn array_truncate(&self, o: &ObjRef, size: u64) -> R<()> {
        let f = self.array_open_write(o)?;
        f.set_len(ARRAY_HEADER + size).map_err(|e| io_rc(&e))
    }
}

/// Bytes before an array's data in its file: cell size and chunk size
/// (u64 LE each; zero: not recorded yet).
const ARRAY_HEADER: u64 = 16;

fn read_header(f: &fs::File) -> R<Option<(u64, u64)>> {
    let mut b = [0u8; 16];
    let mut got = 0;
    while got < 16 {
        match f.read_at(&mut b[got..], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_rc(&e)),
        }
    }
    let mut cell = [0u8; 8];
    let mut chunk = [0u8; 8];
    cell.copy_from_slice(&b[0..8]);
    chunk.copy_from_slice(&b[8..16]);
    let m = (u64::from_le_bytes(cell), u64::from_le_bytes(chunk));
    Ok((m.0 != 0).then_some(m))
}

fn write_header(f: &fs::File, m: (u64, u64)) -> R<()> {
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&m.0.to_le_bytes());
    b[8..16].copy_from_slice(&m.1.to_le_bytes());
    f.write_all_at(&b, 0).map_err(|e| io_rc(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_escape_and_round_trip() {
        for k in [&b"a=b,c"[..], b"f.12", b"%/\x01", b"plain:ok-1_2"] {
            assert_eq!(unescape_key(&escape_key(k)).as_deref(), Some(k));
        }
        let long = vec![b'x'; 300];
        assert!(escape_key(&long).starts_with('h'));
    }

    #[test]
    fn uuids_round_trip() {
        let u = new_uuid();
        assert_eq!(parse_uuid(&uuid_string(&u)), Some(u));
        assert!(is_uuid(&uuid_string(&pool_uuid("p"))));
        assert!(!is_uuid("not-a-uuid"));
    }

    fn obj() -> ObjRef {
        ObjRef {
            pool: "p".into(),
            cont: [1; 16],
            oid: DaosObjId { lo: 1, hi: 2 },
        }
    }

    fn exercise(b: &dyn Backend) {
        b.pool_create("p").unwrap();
        assert_eq!(b.pool_create("p"), Err(-der::EXIST));
        let meta = ContMeta {
            uuid: [1; 16],
            label: Some("c".into()),
            rf: 0,
        };
        b.cont_create("p", &meta).unwrap();
        let again = ContMeta {
            uuid: [2; 16],
            ..meta.clone()
        };
        assert_eq!(b.cont_create("p", &again), Err(-der::EXIST));
        assert_eq!(b.cont_lookup("p", "c").unwrap(), meta);
        let o = obj();
        b.kv_put(&o, b"k", b"v1", Cond::Insert).unwrap();
        assert_eq!(b.kv_put(&o, b"k", b"v2", Cond::Insert), Err(-der::EXIST));
        assert_eq!(b.kv_put(&o, b"x", b"v2", Cond::Update), Err(-der::NONEXIST));
        b.kv_put(&o, b"k", b"v3", Cond::Any).unwrap();
        assert_eq!(b.kv_get(&o, b"k").unwrap().as_deref(), Some(&b"v3"[..]));
        assert_eq!(b.kv_keys(&o).unwrap(), vec![b"k".to_vec()]);
        assert!(b.kv_remove(&o, b"k").unwrap());
        assert_eq!(b.kv_get(&o, b"k").unwrap(), None);
        b.array_write(&o, 4, b"abcd", Some((1, 4))).unwrap();
        assert_eq!(b.array_write(&o, 0, b"x", Some((1, 8))), Err(-der::INVAL));
        let mut buf = [0u8; 10];
        assert_eq!(b.array_read(&o, 2, &mut buf, None).unwrap(), 6);
        assert_eq!(&buf[2..6], b"abcd");
        assert_eq!(b.array_size(&o).unwrap(), 8);
        let a = b.alloc_oids("p", &[1; 16], 10).unwrap();
        let c = b.alloc_oids("p", &[1; 16], 10).unwrap();
        assert!(c >= a + 10);
        b.cont_destroy("p", &meta).unwrap();
        assert_eq!(b.cont_lookup("p", "c"), Err(-der::NONEXIST));
    }

    #[test]
    fn memory_backend() {
        exercise(&Memory::default());
    }

    #[test]
    fn directory_backend() {
        let dir = tempfile::tempdir().unwrap();
        exercise(&Directory::new(dir.path().to_path_buf(), false));
    }
}
