//! The stand-in's libdaos semantics, called as C callers call them (the
//! exported functions, in-process, memory backend): strict handles, DAOS
//! error codes, KV and array edge cases, OID bits, class checks, counters.

use std::ffi::{c_void, CString};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, Ordering};

use daos_standin::types::*;
use daos_standin::*;

fn init() {
    assert_eq!(daos_init(), 0);
}

fn pool() -> DaosHandle {
    init();
    static N: AtomicU64 = AtomicU64::new(0);
    let label = CString::new(format!("api-{}", N.fetch_add(1, Ordering::Relaxed))).unwrap();
    // SAFETY: valid C strings and output handle.
    unsafe {
        assert_eq!(daos_standin_pool_create(label.as_ptr()), 0);
        let mut h = DaosHandle::default();
        assert_eq!(
            daos_pool_connect2(
                label.as_ptr(),
                null(),
                DAOS_PC_RW,
                &mut h,
                null_mut(),
                null_mut()
            ),
            0
        );
        h
    }
}

fn cont(poh: DaosHandle, label: &str, rf: Option<u64>) -> DaosHandle {
    let l = CString::new(label).unwrap();
    let mut e = DaosPropEntry {
        dpe_type: DAOS_PROP_CO_REDUN_FAC,
        dpe_flags: 0,
        dpe_reserv: 0,
        dpe_val: rf.unwrap_or(0),
    };
    let prop = DaosProp {
        dpp_nr: 1,
        dpp_reserv: 0,
        dpp_entries: &mut e,
    };
    let p: *const DaosProp = if rf.is_some() { &prop } else { null() };
    // SAFETY: valid arguments for the calls.
    unsafe {
        assert_eq!(
            daos_cont_create_with_label(poh, l.as_ptr(), p, null_mut(), null_mut()),
            0
        );
        let mut coh = DaosHandle::default();
        assert_eq!(
            daos_cont_open2(
                poh,
                l.as_ptr(),
                DAOS_COO_RW,
                &mut coh,
                null_mut(),
                null_mut()
            ),
            0
        );
        coh
    }
}

fn oid(coh: DaosHandle, lo: u64, otype: u32, class: u32) -> Result<DaosObjId, i32> {
    let mut o = DaosObjId { lo, hi: 0 };
    // SAFETY: valid handle and in/out OID.
    let rc = unsafe { daos_obj_generate_oid2(coh, &mut o, otype, class, 0, 0) };
    if rc == 0 {
        Ok(o)
    } else {
        Err(rc)
    }
}

const S1: u32 = 0x0100_0001;
const S2: u32 = 0x0100_0002;

fn kv(coh: DaosHandle, lo: u64, class: u32) -> DaosHandle {
    let o = oid(coh, lo, DAOS_OT_KV_HASHED, class).unwrap();
    let mut h = DaosHandle::default();
    // SAFETY: valid arguments.
    assert_eq!(
        unsafe { daos_kv_open(coh, o, DAOS_OO_RW, &mut h, null_mut()) },
        0
    );
    h
}

fn put(h: DaosHandle, key: &str, v: &[u8], flags: u64) -> i32 {
    let k = CString::new(key).unwrap();
    // SAFETY: valid key and buffer.
    unsafe {
        daos_kv_put(
            h,
            DaosHandle::default(),
            flags,
            k.as_ptr(),
            v.len() as u64,
            v.as_ptr() as *const c_void,
            null_mut(),
        )
    }
}

fn get(h: DaosHandle, key: &str, cap: usize, flags: u64) -> (i32, u64, Vec<u8>) {
    let k = CString::new(key).unwrap();
    let mut buf = vec![0u8; cap];
    let mut size = cap as u64;
    let p = if cap == 0 {
        null_mut()
    } else {
        buf.as_mut_ptr() as *mut c_void
    };
    // SAFETY: valid key and buffer of `cap` bytes.
    let rc = unsafe {
        daos_kv_get(
            h,
            DaosHandle::default(),
            flags,
            k.as_ptr(),
            &mut size,
            p,
            null_mut(),
        )
    };
    buf.truncate((size as usize).min(cap));
    (rc, size, buf)
}

#[test]
fn handles_are_typed_and_checked() {
    let poh = pool();
    let coh = cont(poh, "h", None);
    let k = kv(coh, 0, S1);
    // daos_obj_close on a KV handle: libdaos leaks it, the stand-in refuses.
    assert_eq!(daos_obj_close(k, null_mut()), -der::NO_HDL);
    // A container with an open object cannot close; a pool with an open
    // container cannot disconnect.
    assert_eq!(daos_cont_close(coh, null_mut()), -der::BUSY);
    assert_eq!(daos_pool_disconnect(poh, null_mut()), -der::BUSY);
    assert_eq!(daos_kv_close(k, null_mut()), 0);
    assert_eq!(daos_kv_close(k, null_mut()), -der::NO_HDL, "closed twice");
    assert_eq!(put(k, "a", b"1", 0), -der::NO_HDL, "used after close");
    assert_eq!(
        daos_kv_close(coh, null_mut()),
        -der::NO_HDL,
        "a container is not a KV"
    );
    assert_eq!(
        daos_kv_close(DaosHandle { cookie: 0 }, null_mut()),
        -der::NO_HDL
    );
    // Events and transactions are refused.
    let k = kv(coh, 0, S1);
    let mut ev = [0u64; 22];
    assert_eq!(
        daos_kv_close(k, ev.as_mut_ptr() as *mut c_void),
        -der::NOSYS
    );
    let key = CString::new("a").unwrap();
    // SAFETY: valid arguments except the transaction.
    let rc = unsafe {
        daos_kv_put(
            k,
            DaosHandle { cookie: 11 },
            0,
            key.as_ptr(),
            1,
            b"x".as_ptr() as *const c_void,
            null_mut(),
        )
    };
    assert_eq!(rc, -der::NOSYS);
    assert_eq!(daos_kv_close(k, null_mut()), 0);
    assert_eq!(daos_cont_close(coh, null_mut()), 0);
    assert_eq!(daos_pool_disconnect(poh, null_mut()), 0);
}

#[test]
fn containers_labels_and_errors() {
    let poh = pool();
    let coh = cont(poh, "c1", None);
    let l = CString::new("c1").unwrap();
    let bad = CString::new("12345678-1234-1234-1234-123456789abc").unwrap();
    let slash = CString::new("a/b").unwrap();
    let missing = CString::new("nope").unwrap();
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(
            daos_cont_create_with_label(poh, l.as_ptr(), null(), null_mut(), null_mut()),
            -der::EXIST
        );
        assert_eq!(
            daos_cont_create_with_label(poh, bad.as_ptr(), null(), null_mut(), null_mut()),
            -der::INVAL
        );
        assert_eq!(
            daos_cont_create_with_label(poh, slash.as_ptr(), null(), null_mut(), null_mut()),
            -der::INVAL
        );
        let mut h = DaosHandle::default();
        assert_eq!(
            daos_cont_open2(
                poh,
                missing.as_ptr(),
                DAOS_COO_RW,
                &mut h,
                null_mut(),
                null_mut()
            ),
            -der::NONEXIST
        );
        assert_eq!(
            daos_cont_destroy2(poh, l.as_ptr(), 0, null_mut()),
            -der::BUSY,
            "open handles"
        );
        let mut n = 0u64;
        assert_eq!(daos_pool_list_cont(poh, &mut n, null_mut(), null_mut()), 0);
        assert_eq!(n, 1);
        let mut info = [DaosPoolContInfo {
            pci_uuid: [0; 16],
            pci_label: [0; 128],
        }; 1];
        let mut small = 0u64;
        assert_eq!(
            daos_pool_list_cont(poh, &mut small, info.as_mut_ptr(), null_mut()),
            -der::TRUNC
        );
        assert_eq!(
            daos_pool_list_cont(poh, &mut n, info.as_mut_ptr(), null_mut()),
            0
        );
        assert_eq!(&info[0].pci_label[..3], b"c1\0");
        // OID ranges are unique and never contiguous across calls.
        let (mut a, mut b) = (0u64, 0u64);
        assert_eq!(daos_cont_alloc_oids(coh, 10, &mut a, null_mut()), 0);
        assert_eq!(daos_cont_alloc_oids(coh, 10, &mut b, null_mut()), 0);
        assert!(b > a + 10, "{a} {b}");
        assert_eq!(daos_cont_close(coh, null_mut()), 0);
        assert_eq!(daos_cont_destroy2(poh, l.as_ptr(), 0, null_mut()), 0);
        assert_eq!(
            daos_cont_open2(poh, l.as_ptr(), DAOS_COO_RW, &mut h, null_mut(), null_mut()),
            -der::NONEXIST
        );
        let mut p = DaosHandle::default();
        assert_eq!(
            daos_pool_connect2(
                missing.as_ptr(),
                null(),
                DAOS_PC_RW,
                &mut p,
                null_mut(),
                null_mut()
            ),
            -der::NONEXIST
        );
    }
}

#[test]
fn oid_bits_and_class_checks() {
    let poh = pool();
    let coh = cont(poh, "o", None);
    // daos.md §2.1 worked values.
    assert_eq!(
        oid(coh, 0, DAOS_OT_KV_HASHED, S1).unwrap().hi,
        0x0801_0001_0000_0000
    );
    assert_eq!(
        oid(coh, 0x2a, DAOS_OT_ARRAY_BYTE, S1).unwrap(),
        DaosObjId {
            lo: 0x2a,
            hi: 0x0d01_0001_0000_0000
        }
    );
    assert_eq!(
        oid(coh, 0, 99, S1),
        Err(-der::INVAL),
        "type beyond DAOS_OT_MAX"
    );
    assert_eq!(
        oid(coh, 0, DAOS_OT_KV_HASHED, 0x7700_0001),
        Err(-der::INVAL),
        "unknown class"
    );
    // An object class weaker than the container's redundancy factor.
    let rf1 = cont(poh, "rf1", Some(1));
    assert_eq!(oid(rf1, 0, DAOS_OT_KV_HASHED, S1), Err(-der::INVAL));
    assert!(
        oid(rf1, 0, DAOS_OT_KV_HASHED, 0x0800_0001).is_ok(),
        "RP_2G1 fits RF1"
    );
    let s1 = oid(coh, 5, DAOS_OT_KV_HASHED, S1).unwrap();
    let mut h = DaosHandle::default();
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(
            daos_kv_open(rf1, s1, DAOS_OO_RW, &mut h, null_mut()),
            -der::INVAL
        );
        // A KV open of an array OID, an array open of a KV OID, an OID that
        // was never generated.
        let arr = oid(coh, 6, DAOS_OT_ARRAY_BYTE, S1).unwrap();
        assert_eq!(
            daos_kv_open(coh, arr, DAOS_OO_RW, &mut h, null_mut()),
            -der::INVAL
        );
        assert_eq!(
            daos_array_open_with_attr(
                coh,
                s1,
                DaosHandle::default(),
                DAOS_OO_RW,
                1,
                1 << 20,
                &mut h,
                null_mut()
            ),
            -der::INVAL
        );
        assert_eq!(
            daos_kv_open(
                coh,
                DaosObjId { lo: 1, hi: 0 },
                DAOS_OO_RW,
                &mut h,
                null_mut()
            ),
            -der::INVAL
        );
    }
}

#[test]
fn kv_get_put_remove_semantics() {
    let poh = pool();
    let coh = cont(poh, "kv", None);
    let k = kv(coh, 0, S1);
    assert_eq!(
        get(k, "missing", 16, 0),
        (0, 0, vec![]),
        "a missing key is not an error"
    );
    assert_eq!(get(k, "missing", 16, DAOS_COND_KEY_GET).0, -der::NONEXIST);
    assert_eq!(put(k, "a", b"hello", DAOS_COND_KEY_INSERT), 0);
    assert_eq!(put(k, "a", b"again", DAOS_COND_KEY_INSERT), -der::EXIST);
    assert_eq!(put(k, "b", b"x", DAOS_COND_KEY_UPDATE), -der::NONEXIST);
    assert_eq!(get(k, "a", 0, 0), (0, 5, vec![]), "size query");
    let (rc, size, _) = get(k, "a", 3, 0);
    assert_eq!(
        (rc, size),
        (-der::REC2BIG, 5),
        "too small a buffer reports the size"
    );
    assert_eq!(get(k, "a", 16, 0), (0, 5, b"hello".to_vec()));
    let key = CString::new("a").unwrap();
    let none = CString::new("none").unwrap();
    let empty = CString::new("").unwrap();
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(
            daos_kv_remove(
                k,
                DaosHandle::default(),
                DAOS_COND_KEY_REMOVE,
                none.as_ptr(),
                null_mut()
            ),
            -der::NONEXIST
        );
        assert_eq!(
            daos_kv_remove(k, DaosHandle::default(), 0, key.as_ptr(), null_mut()),
            0
        );
        assert_eq!(
            daos_kv_put(
                k,
                DaosHandle::default(),
                0,
                empty.as_ptr(),
                1,
                b"x".as_ptr() as *const c_void,
                null_mut()
            ),
            -der::INVAL
        );
    }
    assert_eq!(get(k, "a", 16, 0), (0, 0, vec![]));
    assert_eq!(daos_kv_close(k, null_mut()), 0);
}

/// List every key with `nr` descriptors and a `buf`-byte buffer per call.
fn list_all(k: DaosHandle, nr: u32, buf: usize) -> (Vec<String>, usize, usize) {
    let mut anchor = DaosAnchor {
        da_type: 0,
        da_shard: 0,
        da_flags: 0,
        da_sub_anchors: 0,
        da_buf: [0; 104],
    };
    let mut keys = Vec::new();
    let (mut calls, mut empty) = (0, 0);
    let mut b = vec![0u8; buf];
    while anchor.da_type != DAOS_ANCHOR_TYPE_EOF {
        let mut kds = vec![DaosKeyDesc::default(); nr as usize];
        let mut n = nr;
        let mut iov = DIov {
            iov_buf: b.as_mut_ptr() as *mut c_void,
            iov_buf_len: b.len(),
            iov_len: 0,
        };
        let mut sgl = DSgList {
            sg_nr: 1,
            sg_nr_out: 0,
            sg_iovs: &mut iov,
        };
        // SAFETY: descriptors, buffer and anchor outlive the call.
        let rc = unsafe {
            daos_kv_list(
                k,
                DaosHandle::default(),
                &mut n,
                kds.as_mut_ptr(),
                &mut sgl,
                &mut anchor,
                null_mut(),
            )
        };
        calls += 1;
        if rc == -der::KEY2BIG {
            b.resize(kds[0].kd_key_len as usize, 0);
            continue;
        }
        assert_eq!(rc, 0);
        if n == 0 {
            empty += 1;
        }
        let mut pos = 0;
        for kd in &kds[..n as usize] {
            let l = kd.kd_key_len as usize;
            keys.push(String::from_utf8(b[pos..pos + l].to_vec()).unwrap());
            pos += l;
        }
        assert_eq!(iov.iov_len, pos);
    }
    keys.sort();
    (keys, calls, empty)
}

#[test]
fn kv_list_anchors_small_buffers_and_shards() {
    let poh = pool();
    let coh = cont(poh, "ls", None);
    let k = kv(coh, 0, S2);
    let mut want: Vec<String> = (0..50).map(|i| format!("key-{i:03}")).collect();
    want.push("a-much-longer-key-than-the-others-of-this-listing".into());
    for key in &want {
        assert_eq!(put(k, key, b"v", 0), 0);
    }
    want.sort();
    let (all, calls, _) = list_all(k, 1024, 64 * 1024);
    assert_eq!(all, want);
    assert_eq!(calls, 2, "an S2 KV: one call per shard");
    // One key per call, and a buffer smaller than the longest key.
    let (all, calls, _) = list_all(k, 1, 8);
    assert_eq!(all, want, "anchors resume where they stopped");
    assert!(calls > want.len());
    // An empty S2 KV still needs a call per shard; the first returns nothing.
    let e = kv(coh, 1, S2);
    let (none, calls, empty) = list_all(e, 16, 1024);
    assert!(none.is_empty());
    assert_eq!((calls, empty), (2, 2));
    assert_eq!(daos_kv_close(k, null_mut()), 0);
    assert_eq!(daos_kv_close(e, null_mut()), 0);
}

fn array_io(h: DaosHandle, write: bool, off: u64, buf: &mut [u8]) -> (i32, DaosArrayIod) {
    let mut rg = DaosRange {
        rg_idx: off,
        rg_len: buf.len() as u64,
    };
    let mut iod = DaosArrayIod {
        arr_nr: 1,
        arr_rgs: &mut rg,
        arr_nr_short_read: 0,
        arr_nr_read: 0,
    };
    let mut iov = DIov {
        iov_buf: buf.as_mut_ptr() as *mut c_void,
        iov_buf_len: buf.len(),
        iov_len: buf.len(),
    };
    let mut sgl = DSgList {
        sg_nr: 1,
        sg_nr_out: 0,
        sg_iovs: &mut iov,
    };
    // SAFETY: iod, sgl and buffer outlive the call.
    let rc = unsafe {
        if write {
            daos_array_write(h, DaosHandle::default(), &mut iod, &mut sgl, null_mut())
        } else {
            daos_array_read(h, DaosHandle::default(), &mut iod, &mut sgl, null_mut())
        }
    };
    (rc, iod)
}

#[test]
fn arrays_short_reads_attributes_and_metadata() {
    let poh = pool();
    let coh = cont(poh, "ar", None);
    let o = oid(coh, 7, DAOS_OT_ARRAY_BYTE, S1).unwrap();
    let mut h = DaosHandle::default();
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(
            daos_array_open_with_attr(
                coh,
                o,
                DaosHandle::default(),
                DAOS_OO_RW,
                1,
                1 << 20,
                &mut h,
                null_mut()
            ),
            0
        );
    }
    let mut data = b"0123456789".to_vec();
    assert_eq!(array_io(h, true, 0, &mut data).0, 0);
    let mut buf = [0u8; 16];
    let (rc, iod) = array_io(h, false, 4, &mut buf);
    assert_eq!(rc, 0, "reading past the end is not an error");
    assert_eq!((iod.arr_nr_read, iod.arr_nr_short_read), (6, 10));
    assert_eq!(&buf[..6], b"456789");
    assert!(
        buf[6..].iter().all(|b| *b == 0xA5),
        "missing bytes are poisoned, not zeroed"
    );
    let mut size = 0u64;
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(
            daos_array_get_size(h, DaosHandle::default(), &mut size, null_mut()),
            0
        );
        assert_eq!(size, 10);
        assert_eq!(
            daos_obj_close(h, null_mut()),
            -der::NO_HDL,
            "an array is not an object handle"
        );
        assert_eq!(daos_array_close(h, null_mut()), 0);
        // Reopened with another chunk size: libdaos would misread; refused.
        assert_eq!(
            daos_array_open_with_attr(
                coh,
                o,
                DaosHandle::default(),
                DAOS_OO_RO,
                1,
                4096,
                &mut h,
                null_mut()
            ),
            0
        );
        assert_eq!(array_io(h, false, 0, &mut buf).0, -der::INVAL);
        assert_eq!(daos_array_close(h, null_mut()), 0);
        // DAOS_OT_ARRAY: open needs a create; create twice is EXIST;
        // open_with_attr is for attribute arrays only.
        let a = oid(coh, 8, DAOS_OT_ARRAY, S1).unwrap();
        let (mut cell, mut chunk) = (0u64, 0u64);
        assert_eq!(
            daos_array_open(
                coh,
                a,
                DaosHandle::default(),
                DAOS_OO_RW,
                &mut cell,
                &mut chunk,
                &mut h,
                null_mut()
            ),
            -der::NONEXIST
        );
        assert_eq!(
            daos_array_create(coh, a, DaosHandle::default(), 4, 64, &mut h, null_mut()),
            0
        );
        assert_eq!(daos_array_close(h, null_mut()), 0);
        assert_eq!(
            daos_array_create(coh, a, DaosHandle::default(), 4, 64, &mut h, null_mut()),
            -der::EXIST
        );
        assert_eq!(
            daos_array_open(
                coh,
                a,
                DaosHandle::default(),
                DAOS_OO_RW,
                &mut cell,
                &mut chunk,
                &mut h,
                null_mut()
            ),
            0
        );
        assert_eq!((cell, chunk), (4, 64));
        // Cell size 4: a write of 3 records is 12 bytes.
        let mut twelve = [1u8; 12];
        let mut rg = DaosRange {
            rg_idx: 0,
            rg_len: 3,
        };
        let mut iod = DaosArrayIod {
            arr_nr: 1,
            arr_rgs: &mut rg,
            arr_nr_short_read: 0,
            arr_nr_read: 0,
        };
        let mut iov = DIov {
            iov_buf: twelve.as_mut_ptr() as *mut c_void,
            iov_buf_len: 12,
            iov_len: 11,
        };
        let mut sgl = DSgList {
            sg_nr: 1,
            sg_nr_out: 0,
            sg_iovs: &mut iov,
        };
        assert_eq!(
            daos_array_write(h, DaosHandle::default(), &mut iod, &mut sgl, null_mut()),
            -der::INVAL,
            "sizes disagree"
        );
        (*sgl.sg_iovs).iov_len = 12;
        assert_eq!(
            daos_array_write(h, DaosHandle::default(), &mut iod, &mut sgl, null_mut()),
            0
        );
        assert_eq!(daos_array_close(h, null_mut()), 0);
        let b = oid(coh, 9, DAOS_OT_ARRAY_BYTE, S1).unwrap();
        assert_eq!(
            daos_array_open(
                coh,
                b,
                DaosHandle::default(),
                DAOS_OO_RW,
                &mut cell,
                &mut chunk,
                &mut h,
                null_mut()
            ),
            -der::INVAL
        );
    }
}

#[test]
fn counters_count_would_be_rpcs() {
    let poh = pool();
    let coh = cont(poh, "cn", None);
    daos_standin_reset(1);
    let k = kv(coh, 0, S1);
    assert_eq!(put(k, "a", b"1", 0), 0);
    assert_eq!(get(k, "a", 8, 0).0, 0);
    assert_eq!(daos_kv_close(k, null_mut()), 0);
    let o = oid(coh, 3, DAOS_OT_ARRAY_BYTE, S1).unwrap();
    let mut h = DaosHandle::default();
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(
            daos_array_open_with_attr(
                coh,
                o,
                DaosHandle::default(),
                DAOS_OO_RW,
                1,
                4,
                &mut h,
                null_mut()
            ),
            0
        );
    }
    let mut ten = [7u8; 10];
    assert_eq!(
        array_io(h, true, 0, &mut ten).0,
        0,
        "10 bytes in chunks of 4: 3 RPCs"
    );
    assert_eq!(daos_array_close(h, null_mut()), 0);
    let name = |n: &str| CString::new(n).unwrap();
    // SAFETY: valid C strings.
    unsafe {
        assert_eq!(daos_standin_rpc_count(name("daos_kv_put").as_ptr(), 1), 1);
        assert_eq!(
            daos_standin_rpc_count(name("daos_kv_open").as_ptr(), 1),
            0,
            "local"
        );
        assert_eq!(daos_standin_count(name("daos_kv_open").as_ptr(), 1), 1);
        assert_eq!(
            daos_standin_rpc_count(name("daos_obj_generate_oid").as_ptr(), 1),
            0,
            "local"
        );
        assert_eq!(
            daos_standin_rpc_count(name("daos_array_write").as_ptr(), 1),
            3
        );
        assert_eq!(daos_standin_rpc_count(null(), 1), 5);
        // Injected failures hit the n-th next call of this thread.
        assert_eq!(
            daos_standin_inject(name("daos_kv_put").as_ptr(), 2, -der::NOSPACE),
            0
        );
    }
    let k = kv(coh, 0, S1);
    assert_eq!(put(k, "b", b"1", 0), 0);
    assert_eq!(put(k, "c", b"1", 0), -der::NOSPACE);
    assert_eq!(put(k, "d", b"1", 0), 0);
    assert_eq!(daos_kv_close(k, null_mut()), 0);
}

#[test]
fn properties_and_error_strings() {
    let p = daos_prop_alloc(2);
    assert!(!p.is_null());
    // SAFETY: a list of 2 entries from daos_prop_alloc; the label is
    // malloc'ed, as daos_prop_free expects.
    unsafe {
        assert_eq!((*p).dpp_nr, 2);
        let e = &mut *(*p).dpp_entries;
        e.dpe_type = DAOS_PROP_CO_LABEL;
        e.dpe_val = libc::strdup(c"lbl".as_ptr()) as u64;
        daos_prop_free(p);
        assert!(daos_prop_alloc(DAOS_PROP_ENTRIES_MAX_NR + 1).is_null());
        let s = std::ffi::CStr::from_ptr(d_errstr(-der::NONEXIST));
        assert_eq!(s.to_str().unwrap(), "DER_NONEXIST");
    }
}
