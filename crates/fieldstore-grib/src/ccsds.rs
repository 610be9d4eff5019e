//! CCSDS-packed values (GRIB2 template 5.42) through libaec ≥ 1.1, the
//! one ecCodes itself loaded (the ecCodes wheel bundles libaec 1.1.x).
//!
//! A CCSDS stream is a sequence of reference sample intervals (RSIs) of
//! `rsi × block_size` samples; each starts with a reference sample, so it
//! decodes on its own from its bit offset. [`index`] finds every RSI's bit
//! offset by decoding the field once (libaec's `aec_decode_enable_offsets`);
//! `values` then reads only the RSIs that hold the wanted values and
//! decodes them from there (`aec_buffer_seek`, `aec_decode`). A process whose libaec lacks
//! these functions (libaec < 1.1: Debian bookworm's 1.0.6) gets
//! `Unsupported`, and callers decode whole fields with ecCodes.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::OnceLock;

use fieldstore_core::{Error, ErrorKind, Result};

use crate::jump::{ByteSource, JumpInfo, Packing};

#[repr(C)]
struct AecStream {
    next_in: *const u8,
    avail_in: usize,
    total_in: usize,
    next_out: *mut u8,
    avail_out: usize,
    total_out: usize,
    bits_per_sample: c_uint,
    block_size: c_uint,
    rsi: c_uint,
    flags: c_uint,
    state: *mut c_void,
}

const AEC_OK: c_int = 0;
const AEC_DATA_3BYTE: u32 = 2;
const AEC_DATA_MSB: u32 = 4;
const AEC_FLUSH: c_int = 1;

type StreamFn = unsafe extern "C" fn(*mut AecStream) -> c_int;
type DecodeFn = unsafe extern "C" fn(*mut AecStream, c_int) -> c_int;
type CountFn = unsafe extern "C" fn(*mut AecStream, *mut usize) -> c_int;
type OffsetsFn = unsafe extern "C" fn(*mut AecStream, *mut usize, usize) -> c_int;
type SeekFn = unsafe extern "C" fn(*mut AecStream, usize) -> c_int;

struct Aec {
    init: StreamFn,
    decode: DecodeFn,
    end: StreamFn,
    enable_offsets: StreamFn,
    count_offsets: CountFn,
    get_offsets: OffsetsFn,
    seek: SeekFn,
}

static AEC: OnceLock<std::result::Result<Aec, String>> = OnceLock::new();

fn aec() -> Result<&'static Aec> {
    AEC.get_or_init(load).as_ref().map_err(|why| {
        Error::new(
            ErrorKind::Unsupported,
            format!("CCSDS extraction needs libaec ≥ 1.1: {why}"),
        )
    })
}

fn load() -> std::result::Result<Aec, String> {
    // ecCodes first: its libaec is the one to use (already mapped then).
    crate::ffi::load().map_err(str::to_string)?;
    let mut lib = std::ptr::null_mut();
    for name in [c"libaec.so.0", c"libaec.so"] {
        // SAFETY: a NUL-terminated name; RTLD_NOLOAD only looks for a
        // library already mapped, loading nothing.
        lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if !lib.is_null() {
            break;
        }
    }
    if lib.is_null() {
        return Err("the ecCodes in use did not load a libaec".into());
    }
    macro_rules! sym {
        ($name:literal, $ty:ty) => {{
            // SAFETY: `lib` is a live handle; the name is NUL-terminated.
            let p = unsafe { libc::dlsym(lib, $name.as_ptr()) };
            if p.is_null() {
                return Err(format!("libaec has no {}", $name.to_string_lossy()));
            }
            // SAFETY: the symbol is libaec's function of this signature
            // (libaec.h, 1.1).
            unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
        }};
    }
    Ok(Aec {
        init: sym!(c"aec_decode_init", StreamFn),
        decode: sym!(c"aec_decode", DecodeFn),
        end: sym!(c"aec_decode_end", StreamFn),
        enable_offsets: sym!(c"aec_decode_enable_offsets", StreamFn),
        count_offsets: sym!(c"aec_decode_count_offsets", CountFn),
        get_offsets: sym!(c"aec_decode_get_offsets", OffsetsFn),
        seek: sym!(c"aec_buffer_seek", SeekFn),
    })
}

/// Bytes per decoded sample, as we ask libaec for them (never 3).
fn sample_bytes(bits: u8) -> usize {
    match bits {
        0..=8 => 1,
        9..=16 => 2,
        _ => 4,
    }
}

struct Params {
    flags: u32,
    block: u32,
    rsi: u32,
}

fn params(info: &JumpInfo) -> Result<Params> {
    match &info.packing {
        // Samples least significant byte first (libaec's default without
        // AEC_DATA_MSB, whatever the host), 1, 2 or 4 bytes: only how libaec stores
        // its output, not how the stream is coded.
        Packing::Ccsds {
            flags,
            block_size,
            rsi,
            ..
        } => Ok(Params {
            flags: u32::from(*flags) & !(AEC_DATA_3BYTE | AEC_DATA_MSB),
            block: u32::from(*block_size),
            rsi: u32::from(*rsi),
        }),
        Packing::Simple => Err(Error::invalid_input("not a CCSDS-packed field")),
    }
}

/// A stream over `input`, initialised for decoding; ended on drop.
struct Stream<'a> {
    s: AecStream,
    aec: &'static Aec,
    _input: std::marker::PhantomData<&'a [u8]>,
}

impl<'a> Stream<'a> {
    fn new(info: &JumpInfo, input: &'a [u8], out: &mut [u8]) -> Result<Stream<'a>> {
        let aec = aec()?;
        let p = params(info)?;
        let mut s = AecStream {
            next_in: input.as_ptr(),
            avail_in: input.len(),
            total_in: 0,
            next_out: out.as_mut_ptr(),
            avail_out: out.len(),
            total_out: 0,
            bits_per_sample: c_uint::from(info.bits_per_value),
            block_size: p.block,
            rsi: p.rsi,
            flags: p.flags,
            state: std::ptr::null_mut(),
        };
        // SAFETY: `s` is a valid stream description; libaec allocates its
        // state, freed by `aec_decode_end` in `Drop`.
        let code = unsafe { (aec.init)(&mut s) };
        if code != AEC_OK {
            return Err(aec_error("aec_decode_init", code));
        }
        Ok(Stream {
            s,
            aec,
            _input: std::marker::PhantomData,
        })
    }
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised and is ended once.
        unsafe { (self.aec.end)(&mut self.s) };
    }
}

fn aec_error(call: &str, code: c_int) -> Error {
    Error::invalid_input(format!(
        "the CCSDS data cannot be decoded ({call} returned {code})"
    ))
}

/// Record in `info` the bit offset of every RSI of the packed data
/// `data` (the whole data section): by walking the stream's block
/// structure without decoding samples (`ccsds_walk`), or, if the walk
/// does not come out clean, by decoding it once with libaec.
///
/// # Errors
/// `Unsupported` without libaec ≥ 1.1; `InvalidInput` if libaec cannot
/// decode the data.
pub fn index(info: &mut JumpInfo, data: &[u8]) -> Result<()> {
    if info.bits_per_value == 0 {
        return Ok(());
    }
    // libaec must be there to read the values later anyway.
    aec()?;
    if let Some(offsets) = walk(info, data) {
        if let Packing::Ccsds { rsi_offsets, .. } = &mut info.packing {
            *rsi_offsets = offsets;
            return Ok(());
        }
    }
    index_with_libaec(info, data)
}

/// The RSI offsets of `data` by walking its block structure, `None` if
/// the walk does not come out clean (or the field is not CCSDS-packed).
pub fn walk(info: &JumpInfo, data: &[u8]) -> Option<Vec<u64>> {
    let Packing::Ccsds {
        flags,
        block_size,
        rsi,
        ..
    } = &info.packing
    else {
        return None;
    };
    crate::ccsds_walk::rsi_offsets(
        data,
        info.bits_per_value,
        u32::from(*flags),
        u32::from(*block_size),
        u32::from(*rsi),
        info.coded,
    )
}

/// [`index`] by decoding the data with libaec (what the walk is checked
/// against).
///
/// # Errors
/// As [`index`].
pub fn index_with_libaec(info: &mut JumpInfo, data: &[u8]) -> Result<()> {
    if info.bits_per_value == 0 {
        return Ok(());
    }
    let mut out = vec![0u8; info.coded as usize * sample_bytes(info.bits_per_value)];
    let mut stream = Stream::new(info, data, &mut out)?;
    let aec = stream.aec;
    // SAFETY: an initialised stream; `out` and `data` outlive it and are
    // what it was given.
    unsafe {
        let code = (aec.enable_offsets)(&mut stream.s);
        if code != AEC_OK {
            return Err(aec_error("aec_decode_enable_offsets", code));
        }
        let code = (aec.decode)(&mut stream.s, AEC_FLUSH);
        if code != AEC_OK {
            return Err(aec_error("aec_decode", code));
        }
        let mut n = 0usize;
        let code = (aec.count_offsets)(&mut stream.s, &mut n);
        if code != AEC_OK {
            return Err(aec_error("aec_decode_count_offsets", code));
        }
        let mut offsets = vec![0usize; n];
        let code = (aec.get_offsets)(&mut stream.s, offsets.as_mut_ptr(), n);
        if code != AEC_OK {
            return Err(aec_error("aec_decode_get_offsets", code));
        }
        if let Packing::Ccsds { rsi_offsets, .. } = &mut info.packing {
            *rsi_offsets = offsets.into_iter().map(|o| o as u64).collect();
        }
    }
    Ok(())
}

/// The values of `packed` ((slot, rank) pairs, ranks ascending) into
/// `out`, reading through `src` only the RSIs that hold them.
pub(crate) fn values(
    info: &JumpInfo,
    src: &mut dyn ByteSource,
    packed: &[(usize, u64)],
    out: &mut [f64],
) -> Result<()> {
    let Packing::Ccsds {
        block_size,
        rsi,
        rsi_offsets,
        ..
    } = &info.packing
    else {
        return Err(Error::invalid_input("not a CCSDS-packed field"));
    };
    let per_rsi = u64::from(*block_size) * u64::from(*rsi);
    if per_rsi == 0 || (rsi_offsets.len() as u64) < info.coded.div_ceil(per_rsi) {
        return Err(Error::invalid_input(
            "the CCSDS field's block offsets are not recorded",
        ));
    }
    let sb = sample_bytes(info.bits_per_value);
    let scale = info.scale();
    // One buffer for every RSI's samples.
    let mut decoded: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < packed.len() {
        let n = packed[i].1 / per_rsi;
        let mut j = i + 1;
        while j < packed.len() && packed[j].1 / per_rsi == n {
            j += 1;
        }
        // The RSI's bytes: from the byte holding its first bit to the
        // byte holding the next RSI's first bit (or the data's end).
        let start_bit = rsi_offsets[n as usize];
        let lo = start_bit / 8;
        let hi = rsi_offsets
            .get(n as usize + 1)
            .map_or(info.data_length, |b| {
                (b.div_ceil(8) + 8).min(info.data_length)
            });
        let bytes = src.read(info.data_offset + lo, (hi - lo) as usize)?;
        let first = n * per_rsi;
        // Samples up to the last one wanted: libaec stops there.
        let count = (packed[j - 1].1 - first + 1).min(info.coded - first);
        decoded.clear();
        decoded.resize(count as usize * sb, 0);
        {
            let mut stream = Stream::new(info, &bytes, &mut decoded)?;
            // A fresh stream expects an RSI's first block: skip to its
            // first bit, decode exactly its samples.
            // SAFETY: an initialised stream over `bytes` (at least one
            // byte: the RSI's first), writing at most `decoded.len()`
            // bytes into `decoded`.
            let code = unsafe { (stream.aec.seek)(&mut stream.s, (start_bit % 8) as usize) };
            if code != AEC_OK {
                return Err(aec_error("aec_buffer_seek", code));
            }
            // SAFETY: as above.
            let code = unsafe { (stream.aec.decode)(&mut stream.s, AEC_FLUSH) };
            if code != AEC_OK || stream.s.total_out != decoded.len() {
                return Err(aec_error("aec_decode", code));
            }
        }
        for &(s, k) in &packed[i..j] {
            let at = (k - first) as usize * sb;
            let b = &decoded[at..at + sb];
            let x = match sb {
                1 => u64::from(b[0]),
                2 => u64::from(u16::from_le_bytes([b[0], b[1]])),
                _ => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            };
            out[s] = scale.value(x);
        }
        i = j;
    }
    Ok(())
}
