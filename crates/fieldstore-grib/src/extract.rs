//! `fs.extract(request, selection)`: values at points of many GRIB fields,
//! reading only the bytes that hold them (`docs/extract.md`).
//!
//! Per field: the jump info kept with its index entry (or, for a field
//! archived without, computed from its header through ranged reads); the
//! selection resolved to grid indices (latitude/longitude points to the
//! nearest grid point, from ecCodes' geometry of the grid, computed once
//! per grid and cached); then [`crate::values_at`] over the store's
//! [`fieldstore::Store::read_range`]. Fields are read in file order
//! (by unit, then offset) by a bounded number of threads, each holding one
//! field's selected bytes at a time; the answer is in the request's order.
//! Fields with no jump info (other packings) are decoded whole with ecCodes
//! and counted in [`Extraction::decoded`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use fieldstore::{FieldLocation, FieldStore, Key, ListElement, ListOptions, Request, Store};
use fieldstore_core::{Error, ErrorKind, Result};

use crate::jump::{ByteSource, JumpInfo};
use crate::unpack::ReadCost;

/// Which values of each field to extract.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// Half-open index ranges `[start, end)`.
    Ranges(Vec<(u64, u64)>),
    /// Grid indices, in the order wanted.
    Indices(Vec<u64>),
    /// One flag per grid point: the points set, in grid order.
    Mask(Vec<bool>),
    /// Latitude/longitude points (degrees): the nearest grid point of each.
    Points(Vec<(f64, f64)>),
}

/// How a field's values were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// Through the jump info kept with the index entry.
    Stored,
    /// Through jump info computed from the field's header now (a field
    /// archived without it).
    Computed,
    /// By decoding the whole field with ecCodes, and why.
    Decoded(String),
}

/// The grid point a point asked for was answered from: the nearest one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridPoint {
    /// Its latitude (degrees), as ecCodes gives it.
    pub latitude: f64,
    /// Its longitude (degrees), as ecCodes gives it.
    pub longitude: f64,
    /// Its great-circle distance from the point asked for, in km, on the
    /// sphere ecCodes' nearest-point lookup uses (radius
    /// [`EARTH_RADIUS_KM`]).
    pub distance_km: f64,
}

/// The radius of the sphere distances are measured on (ecCodes' nearest
/// point lookup's).
pub const EARTH_RADIUS_KM: f64 = 6371.229;

/// One field's extracted values.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldValues {
    /// The field's full key.
    pub key: Key,
    /// The grid indices the values are at (for points: the nearest
    /// grid points).
    pub indices: Vec<u64>,
    /// For a selection of points: the grid point each was answered from,
    /// in the order asked (empty for other selections).
    pub nearest: Vec<GridPoint>,
    /// The values, NaN where the field has no value (bitmap).
    pub values: Vec<f64>,
    /// How they were found.
    pub method: Method,
}

/// What [`ExtractGrib::extract`] returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extraction {
    /// One per field the request names, in the request's order.
    pub fields: Vec<FieldValues>,
    /// What was read from the store.
    pub read: ReadCost,
    /// The fields' total length in bytes (what decoding them whole reads).
    pub field_bytes: u64,
    /// Fields decoded whole (no jump info for their packing).
    pub decoded: usize,
    /// Fields whose jump info was computed from their header (no jump info
    /// with their entry yet: their first extraction).
    pub computed: usize,
    /// Of those, how many had it kept with their index entry (an
    /// annotation, `FieldStore::annotate`) for the next extractions.
    pub persisted: usize,
    /// Why computed jump info could not be kept (a read-only store, a
    /// dataset locked against archiving): extraction still answers.
    pub not_persisted: Option<String>,
}

/// Settings of an extraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractOptions {
    /// Fields read at once (threads); at least 1.
    pub parallelism: usize,
    /// Keep the jump info computed for a field without it (its first
    /// extraction) with its index entry, so later extractions read only
    /// what they need (on by default; [`ExtractGrib::extract_with`] only).
    pub persist: bool,
    /// Give each field's [`FieldValues::indices`] (on by default). Off,
    /// they are left empty: a caller that knows them (the ranges it asked
    /// for) saves a copy a field, 80 KB for a 10,000-index range.
    pub indices: bool,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions {
            parallelism: 4,
            persist: true,
            indices: true,
        }
    }
}

impl ExtractOptions {
    /// Set [`ExtractOptions::persist`].
    #[must_use]
    pub fn persist(mut self, keep: bool) -> Self {
        self.persist = keep;
        self
    }

    /// Set [`ExtractOptions::indices`].
    #[must_use]
    pub fn indices(mut self, give: bool) -> Self {
        self.indices = give;
        self
    }

    /// Set [`ExtractOptions::parallelism`].
    #[must_use]
    pub fn parallelism(mut self, n: usize) -> Self {
        self.parallelism = n.max(1);
        self
    }
}

/// Extraction of values at points, on a [`FieldStore`].
pub trait ExtractGrib {
    /// The values of `selection` in every field `request` names.
    ///
    /// # Errors
    /// As [`FieldStore::list`]; `InvalidInput` for an index outside a
    /// field's grid or a point selection on a grid ecCodes gives no
    /// coordinates for (naming the field); the store's read errors;
    /// `Corrupt` for damaged jump info or packed data that contradicts it.
    fn extract(&self, request: &Request, selection: &Selection) -> Result<Extraction> {
        self.extract_with(request, selection, ExtractOptions::default())
    }

    /// [`ExtractGrib::extract`] with options.
    ///
    /// # Errors
    /// As [`ExtractGrib::extract`].
    fn extract_with(
        &self,
        request: &Request,
        selection: &Selection,
        options: ExtractOptions,
    ) -> Result<Extraction>;
}

impl ExtractGrib for FieldStore {
    fn extract_with(
        &self,
        request: &Request,
        selection: &Selection,
        options: ExtractOptions,
    ) -> Result<Extraction> {
        let listed: Vec<ListElement> = self
            .list(request, ListOptions::default())?
            .into_iter()
            .filter(|e| e.location.is_some())
            .collect();
        let listed = in_request_order(self, request, listed)?;
        extract_listed(self, &listed, selection, options)
    }
}

/// Sort what a listing of `request` found into the order the request gives
/// its values (`step=18/6/12`: 18, 6, 12), as `retrieve` answers; a
/// listing comes in key order. Keys the order cannot place (stored under a
/// dataset's own schema) keep their listing order after the others.
///
/// # Errors
/// As [`FieldStore::list`] for a request the schema refuses.
pub fn in_request_order(
    fs: &FieldStore,
    request: &Request,
    listed: Vec<ListElement>,
) -> Result<Vec<ListElement>> {
    let order = fs.schema().listing_order(request)?;
    let mut placed: Vec<_> = listed
        .into_iter()
        .map(|e| {
            let at = fs
                .schema()
                .split(&e.full_key())
                .ok()
                .and_then(|split| order.position(&split));
            (at.is_none(), at, e)
        })
        .collect();
    // Stable: keys the request does not order keep the listing's order.
    placed.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    Ok(placed.into_iter().map(|(_, _, e)| e).collect())
}

/// [`ExtractGrib::extract_with`] over fields `fs` listed (at the field
/// level; others are skipped): with [`ExtractOptions::persist`], the jump
/// info computed for fields without it is kept with their entries.
///
/// # Errors
/// As [`ExtractGrib::extract`].
pub fn extract_listed(
    fs: &FieldStore,
    listed: &[ListElement],
    selection: &Selection,
    options: ExtractOptions,
) -> Result<Extraction> {
    let listed: Vec<&ListElement> = listed.iter().filter(|e| e.location.is_some()).collect();
    let fields: Vec<(Key, FieldLocation)> = listed
        .iter()
        .filter_map(|e| e.location.clone().map(|l| (e.full_key(), l)))
        .collect();
    let (mut out, computed) = run(fs.store().as_ref(), &fields, selection, options)?;
    if options.persist && !computed.is_empty() {
        // Computed jump info, kept with the entries it was computed for:
        // as annotations of the location listed, which apply only while
        // the field is still there (never resurrecting a field replaced or
        // wiped meanwhile).
        let learnt: Vec<_> = computed
            .into_iter()
            .map(|(i, info)| (listed[i], info.encode().into()))
            .collect();
        match fs.annotate(&learnt) {
            Ok(n) => out.persisted = n,
            Err(e) => out.not_persisted = Some(e.to_string()),
        }
    }
    Ok(out)
}

/// Fields per thread below which an extraction does not add one.
const FIELDS_PER_THREAD: usize = 16;

/// One field's answer, once read, with the jump info computed for it (a
/// field without it in its entry).
type Slot = Option<Result<(FieldValues, ReadCost, Option<JumpInfo>)>>;

/// [`ExtractGrib::extract`] over fields already found.
///
/// # Errors
/// As [`ExtractGrib::extract`].
pub fn extract_fields(
    store: &dyn Store,
    fields: &[(Key, FieldLocation)],
    selection: &Selection,
    options: ExtractOptions,
) -> Result<Extraction> {
    Ok(run(store, fields, selection, options)?.0)
}

/// [`extract_fields`], with the jump info computed for fields without it
/// (by their index in `fields`).
fn run(
    store: &dyn Store,
    fields: &[(Key, FieldLocation)],
    selection: &Selection,
    options: ExtractOptions,
) -> Result<(Extraction, Vec<(usize, JumpInfo)>)> {
    // File order: by unit, then offset.
    let mut order: Vec<usize> = (0..fields.len()).collect();
    order.sort_by(|&a, &b| {
        let (la, lb) = (&fields[a].1, &fields[b].1);
        (&la.uri, la.offset).cmp(&(&lb.uri, lb.offset))
    });
    // Indices and ranges name the same grid indices in every field:
    // resolved once (each field checks them against its points), not a
    // vector a field.
    let shared = match selection {
        Selection::Indices(_) | Selection::Ranges(_) => {
            indices_of(selection, u64::MAX).ok().map(|v| {
                let top = v.iter().max().copied();
                (v, top)
            })
        }
        _ => None,
    };
    let shared = shared.as_ref().map(|(v, top)| Shared {
        indices: v,
        top: *top,
    });
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Mutex<Vec<Slot>> = Mutex::new((0..fields.len()).map(|_| None).collect());
    // The caller works too; helpers only for requests large enough to
    // pay for waking them (a few fields run on the calling thread: a
    // sleeping CPU's wake-up, milliseconds on a VM, costs more than they do).
    let helpers = options
        .parallelism
        .max(1)
        .min(fields.len().div_ceil(FIELDS_PER_THREAD))
        .saturating_sub(1);
    let work = || loop {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some(&i) = order.get(n) else { break };
        let (key, loc) = &fields[i];
        let r = one_field(store, key, loc, selection, shared, options.indices);
        let failed = r.is_err();
        results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
        if failed {
            // The others stop at their next field.
            next.store(order.len(), std::sync::atomic::Ordering::Relaxed);
        }
    };
    std::thread::scope(|s| {
        for _ in 0..helpers {
            s.spawn(work);
        }
        work();
    });
    let mut out = Extraction::default();
    let mut computed = Vec::new();
    for (i, (r, (_, loc))) in results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .zip(fields)
        .enumerate()
    {
        let Some(r) = r else { continue };
        let (field, cost, info) = r?;
        if let Some(info) = info {
            computed.push((i, info));
        }
        out.read.add(cost);
        out.field_bytes += loc.length;
        match field.method {
            Method::Decoded(_) => out.decoded += 1,
            Method::Computed => out.computed += 1,
            Method::Stored => {}
        }
        out.fields.push(field);
    }
    if out.fields.len() != fields.len() {
        return Err(Error::internal("an extraction stopped without an error"));
    }
    Ok((out, computed))
}

/// A field in a store, read in ranges; the first bytes read once and kept
/// for parsing the header.
struct StoreSource<'a> {
    store: &'a dyn Store,
    loc: &'a FieldLocation,
    head: Vec<u8>,
    cost: ReadCost,
}

impl ByteSource for StoreSource<'_> {
    fn size(&self) -> u64 {
        self.loc.length
    }
    fn read(&mut self, offset: u64, len: usize) -> Result<Vec<u8>> {
        if let Some(b) = self.head.get(offset as usize..offset as usize + len) {
            return Ok(b.to_vec());
        }
        let mut out = vec![0u8; len];
        self.store.read_range(self.loc, offset, &mut out)?;
        self.cost.reads += 1;
        self.cost.bytes += len as u64;
        Ok(out)
    }
}

fn one_field(
    store: &dyn Store,
    key: &Key,
    loc: &FieldLocation,
    selection: &Selection,
    shared: Option<Shared<'_>>,
    give_indices: bool,
) -> Result<(FieldValues, ReadCost, Option<JumpInfo>)> {
    let context = |e: Error| e.context(format!("extracting from {key}"));
    let mut src = StoreSource {
        store,
        loc,
        head: Vec::new(),
        cost: ReadCost::default(),
    };
    let stored = match &loc.extension {
        Some(x) => JumpInfo::decode(x).map_err(context)?,
        None => None,
    };
    let (info, method) = match stored {
        Some(j) => (Ok(j), Method::Stored),
        None => {
            // Headers are within the first few KiB of most fields.
            let n = loc.length.min(4096) as usize;
            src.head = src.read(0, n).map_err(context)?;
            let parsed = JumpInfo::parse(&mut src).map_err(context)?;
            let parsed = match parsed {
                // CCSDS block offsets (the data section read whole once),
                // bitmap counts (the bitmap read whole once).
                // No libaec ≥ 1.1, data libaec cannot decode: decoded whole.
                Ok(mut j) => match j.complete(&mut src) {
                    Ok(()) => Ok(j),
                    Err(e)
                        if matches!(e.kind(), ErrorKind::Unsupported | ErrorKind::InvalidInput) =>
                    {
                        Err(e.to_string())
                    }
                    Err(e) => return Err(context(e)),
                },
                Err(why) => Err(why.0),
            };
            (parsed, Method::Computed)
        }
    };
    match info {
        Ok(info) => {
            let mut own;
            let (indices, nearest): (&[u64], Vec<GridPoint>) = match shared {
                Some(s) if s.top.is_none_or(|t| t < info.points) => (s.indices, Vec::new()),
                _ => {
                    own = resolve(selection, info.points, Some(info.grid), &mut |_| {
                        let mut whole = vec![0u8; loc.length as usize];
                        store.read_into(loc, &mut whole)?;
                        Ok(whole)
                    })
                    .map_err(context)?;
                    (&own.0, std::mem::take(&mut own.1))
                }
            };
            let mut values = Vec::new();
            let mut ignored = ReadCost::default();
            crate::values_at(&info, &mut src, indices, &mut values, &mut ignored)
                .map_err(context)?;
            let computed = (method == Method::Computed).then_some(info);
            Ok((
                FieldValues {
                    key: key.clone(),
                    indices: if give_indices {
                        indices.to_vec()
                    } else {
                        Vec::new()
                    },
                    nearest,
                    values,
                    method,
                },
                src.cost,
                computed,
            ))
        }
        Err(why) => {
            let mut whole = Vec::new();
            store.read(loc, &mut whole).map_err(context)?;
            let mut cost = src.cost;
            cost.reads += 1;
            cost.bytes += whole.len() as u64;
            let n = crate::decode::number_of_values(&whole).map_err(context)?;
            let mut all = vec![0f64; n];
            crate::decode_values(&whole, &mut all).map_err(context)?;
            let (mut indices, nearest) =
                resolve(selection, n as u64, None, &mut |_| Ok(whole.clone())).map_err(context)?;
            let values = indices.iter().map(|&i| all[i as usize]).collect();
            if !give_indices {
                indices = Vec::new();
            }
            Ok((
                FieldValues {
                    key: key.clone(),
                    indices,
                    nearest,
                    values,
                    method: Method::Decoded(why),
                },
                cost,
                None,
            ))
        }
    }
}

/// The grid indices of an index or range selection, resolved once for
/// every field of an extraction, and the largest (a field with fewer
/// points resolves the selection itself, for its error).
#[derive(Clone, Copy)]
struct Shared<'a> {
    indices: &'a [u64],
    top: Option<u64>,
}

/// The grid indices of `selection` on a grid of `points` points whose
/// identity is `grid` (`None`: unknown, coordinates not cached), and for
/// points the grid point each was answered from; `message` gives the whole
/// field when coordinates are needed and not cached.
fn resolve(
    selection: &Selection,
    points: u64,
    grid: Option<u64>,
    message: &mut dyn FnMut(()) -> Result<Vec<u8>>,
) -> Result<(Vec<u64>, Vec<GridPoint>)> {
    if let Selection::Points(p) = selection {
        let geometry = geometry(grid, message)?;
        if geometry.lat.len() as u64 != points {
            return Err(Error::invalid_input(format!(
                "ecCodes gives {} coordinates for a field of {points} points",
                geometry.lat.len()
            )));
        }
        let mut indices = Vec::with_capacity(p.len());
        let mut nearest = Vec::with_capacity(p.len());
        for &(lat, lon) in p {
            let (i, g) = geometry.nearest(lat, lon)?;
            indices.push(i);
            nearest.push(g);
        }
        return Ok((indices, nearest));
    }
    Ok((indices_of(selection, points)?, Vec::new()))
}

/// The grid indices of a selection of indices, ranges or a mask on a grid
/// of `points` points.
fn indices_of(selection: &Selection, points: u64) -> Result<Vec<u64>> {
    let out_of_range = |i: u64| {
        Error::invalid_input(format!(
            "index {i} is out of range: the field has {points} points"
        ))
    };
    Ok(match selection {
        Selection::Indices(v) => {
            if let Some(&i) = v.iter().find(|&&i| i >= points) {
                return Err(out_of_range(i));
            }
            v.clone()
        }
        Selection::Ranges(r) => {
            let mut v = Vec::new();
            for &(a, b) in r {
                if a > b {
                    return Err(Error::invalid_input(format!(
                        "range {a}..{b} ends before it starts"
                    )));
                }
                if b > points {
                    return Err(out_of_range(b - 1));
                }
                v.extend(a..b);
            }
            v
        }
        Selection::Mask(m) => {
            if m.len() as u64 != points {
                return Err(Error::invalid_input(format!(
                    "a mask of {} flags for a field of {points} points",
                    m.len()
                )));
            }
            (0..points).filter(|&i| m[i as usize]).collect()
        }
        Selection::Points(_) => {
            return Err(Error::internal(
                "points are resolved with their grid's coordinates",
            ))
        }
    })
}

/// A grid's point coordinates, as ecCodes gives them.
pub(crate) struct Geometry {
    lat: Vec<f64>,
    lon: Vec<f64>,
}

impl Geometry {
    /// The index of the grid point nearest (great circle) to `lat`, `lon`,
    /// the first of equals, and where it is.
    fn nearest(&self, lat: f64, lon: f64) -> Result<(u64, GridPoint)> {
        if !(-90.0..=90.0).contains(&lat) || !lon.is_finite() {
            return Err(Error::invalid_input(format!(
                "point ({lat}, {lon}): latitude must be within -90..90 and longitude finite"
            )));
        }
        let (p1, l1) = (lat.to_radians(), lon.to_radians());
        let cp1 = p1.cos();
        let mut best = (f64::INFINITY, 0usize);
        for (i, (&la, &lo)) in self.lat.iter().zip(&self.lon).enumerate() {
            let cp2 = la.to_radians().cos();
            // Haversine: monotonic in the distance.
            let dl = lo.to_radians() - l1;
            let dp = (la.to_radians() - p1) / 2.0;
            let h = dp.sin().powi(2) + cp1 * cp2 * (dl / 2.0).sin().powi(2);
            if h < best.0 {
                best = (h, i);
            }
        }
        let (h, i) = best;
        let at = GridPoint {
            latitude: self.lat.get(i).copied().unwrap_or(f64::NAN),
            longitude: self.lon.get(i).copied().unwrap_or(f64::NAN),
            distance_km: 2.0 * EARTH_RADIUS_KM * h.clamp(0.0, 1.0).sqrt().asin(),
        };
        Ok((i as u64, at))
    }
}

type Geometries = Mutex<HashMap<u64, Arc<Geometry>>>;

/// Coordinates of the grid `grid`, from the cache or ecCodes (once per
/// grid and process).
fn geometry(
    grid: Option<u64>,
    message: &mut dyn FnMut(()) -> Result<Vec<u8>>,
) -> Result<Arc<Geometry>> {
    static CACHE: OnceLock<Geometries> = OnceLock::new();
    let cache = CACHE.get_or_init(Geometries::default);
    if let Some(g) = grid.and_then(|grid| {
        cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&grid)
            .cloned()
    }) {
        return Ok(g);
    }
    let m = message(())?;
    let lat = crate::read_array(&m, "latitudes")?;
    let lon = crate::read_array(&m, "longitudes")?;
    let g = Arc::new(Geometry { lat, lon });
    if let Some(grid) = grid {
        cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(grid, g.clone());
    }
    Ok(g)
}
