//! `fieldstore extract`: values at points of the GRIB fields a request
//! names, reading only the bytes that hold them (`docs/extract.md`).
//!
//! Text: one line per field, its key then `index=value` per point (for
//! `--point`, `lat,lon→index (grid lat,lon, distance km)=value`: the grid
//! point answering, as ecCodes' nearest-point lookup finds it); `--json`:
//! one object per field (`key`, `indices`, `values`, `method`, and for
//! points `nearest`: each grid point's `latitude`, `longitude` and
//! `distance_km`; missing values `null`); `--csv`: a header, then one row
//! per field and point. A summary on standard error
//! says how many fields, bytes read against the fields' bytes, and how
//! many fields were decoded whole, and how many fields the request names
//! are missing, with the first (`--json`: `{"missing": {key}}` after the
//! fields, one per missing field).

use std::collections::BTreeMap;

use fieldstore::{Error, ErrorKind, FieldStore, Request, Result};
use fieldstore_grib::{ExtractGrib, ExtractOptions, Method, Selection};
use serde::Serialize;

use crate::args::ExtractArgs;
use crate::context::{usage, Context, Ui};

/// Run `fieldstore extract`.
///
/// # Errors
/// A malformed request, point or index (usage errors naming it);
/// `NotFound` if no field matches; extraction errors.
pub(crate) fn run(args: &ExtractArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let request = ctx.request(Some(&args.request))?;
    let selection = selection(args)?;
    let fs = ctx.open()?;
    extract(&fs, &request, &selection, args, ui)
}

/// The selection the arguments give.
fn selection(args: &ExtractArgs) -> Result<Selection> {
    if !args.points.is_empty() {
        let points = args
            .points
            .iter()
            .map(|p| {
                let parsed = p.split_once(',').and_then(|(a, b)| {
                    Some((a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?))
                });
                match parsed {
                    Some((lat, lon)) if (-90.0..=90.0).contains(&lat) && lon.is_finite() => {
                        Ok((lat, lon))
                    }
                    _ => Err(usage(format!(
                        "--point {p}: want LAT,LON in degrees, latitude within -90..90"
                    ))),
                }
            })
            .collect::<Result<_>>()?;
        return Ok(Selection::Points(points));
    }
    if args.indices.is_empty() {
        return Err(usage("give --point LAT,LON or --index INDICES"));
    }
    let mut ranges = Vec::new();
    for part in args.indices.iter().flat_map(|s| s.split(',')) {
        let bad = || {
            usage(format!(
                "--index {part}: want I or START-END (END excluded)"
            ))
        };
        let part = part.trim();
        let range = match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (
                    a.parse::<u64>().map_err(|_| bad())?,
                    b.parse::<u64>().map_err(|_| bad())?,
                );
                if a > b {
                    return Err(bad());
                }
                (a, b)
            }
            None => {
                let i = part.parse::<u64>().map_err(|_| bad())?;
                // The range [i, i + 1) must be representable: no grid has
                // 2^64 - 1 points, so the largest index is refused here
                // rather than wrapping to an empty range.
                let end = i.checked_add(1).ok_or_else(|| {
                    usage(format!(
                        "--index {part}: no grid has that many points (an index is at most {})",
                        u64::MAX - 1
                    ))
                })?;
                (i, end)
            }
        };
        ranges.push(range);
    }
    Ok(Selection::Ranges(ranges))
}

#[derive(Serialize)]
struct JsonField<'a> {
    key: BTreeMap<&'a str, &'a str>,
    indices: &'a [u64],
    values: Vec<Option<f64>>,
    method: String,
    /// For points: where each was answered from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    nearest: Vec<JsonGridPoint>,
}

#[derive(Serialize)]
struct JsonGridPoint {
    latitude: f64,
    longitude: f64,
    distance_km: f64,
}

/// A field the request names and the store lacks, after the fields
/// (`--json`).
#[derive(Serialize)]
struct JsonMissing<'a> {
    missing: BTreeMap<&'a str, &'a str>,
}

fn method(m: &Method) -> String {
    match m {
        Method::Stored => "jump info".into(),
        Method::Computed => "jump info computed".into(),
        Method::Decoded(why) => format!("decoded whole: {why}"),
    }
}

/// `extract` with an open store.
pub(crate) fn extract(
    fs: &FieldStore,
    request: &Request,
    selection: &Selection,
    args: &ExtractArgs,
    ui: &mut Ui<'_>,
) -> Result<()> {
    let options = ExtractOptions::default().parallelism(args.parallelism);
    let got = fs.extract_with(request, selection, options)?;
    if got.fields.is_empty() {
        crate::context::note_empty_store(fs, ui);
        let hint = crate::cmd::retrieve::incomplete_hint(fs, request).unwrap_or_default();
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("no stored field matches the request{hint}"),
        ));
    }
    let shortfall = fs
        .shortfall(request, got.fields.iter().map(|f| &f.key))
        .ok()
        .flatten();
    let points = match selection {
        Selection::Points(p) => Some(p),
        _ => None,
    };
    if args.csv {
        ui.line(if points.is_some() {
            "key,latitude,longitude,index,grid_latitude,grid_longitude,distance_km,value"
        } else {
            "key,index,value"
        })?;
    }
    for f in &got.fields {
        if args.json {
            ui.json(&JsonField {
                key: f.key.iter().collect(),
                indices: &f.indices,
                values: f
                    .values
                    .iter()
                    .map(|v| (!v.is_nan()).then_some(*v))
                    .collect(),
                method: method(&f.method),
                nearest: f
                    .nearest
                    .iter()
                    .map(|g| JsonGridPoint {
                        latitude: g.latitude,
                        longitude: g.longitude,
                        distance_km: g.distance_km,
                    })
                    .collect(),
            })?;
        } else if args.csv {
            for (n, (i, v)) in f.indices.iter().zip(&f.values).enumerate() {
                let value = if v.is_nan() {
                    String::new()
                } else {
                    v.to_string()
                };
                let line = match (points, f.nearest.get(n)) {
                    (Some(p), Some(g)) => format!(
                        "\"{}\",{},{},{i},{},{},{:.3},{value}",
                        f.key, p[n].0, p[n].1, g.latitude, g.longitude, g.distance_km
                    ),
                    _ => format!("\"{}\",{i},{value}", f.key),
                };
                ui.line(&line)?;
            }
        } else {
            let mut line = f.key.braced();
            for (n, (i, v)) in f.indices.iter().zip(&f.values).enumerate() {
                if let (Some(p), Some(g)) = (points, f.nearest.get(n)) {
                    line.push_str(&format!(
                        " {},{}→{i} ({},{} {:.1} km)={v}",
                        p[n].0, p[n].1, g.latitude, g.longitude, g.distance_km
                    ));
                } else {
                    line.push_str(&format!(" {i}={v}"));
                }
            }
            ui.line(&line)?;
        }
    }
    ui.note(&format!(
        "extracted from {} field{}: read {} bytes in {} reads of {} ({:.3} %); {} decoded whole, {} with jump info computed ({} kept with their entries{})",
        got.fields.len(),
        if got.fields.len() == 1 { "" } else { "s" },
        got.read.bytes,
        got.read.reads,
        got.field_bytes,
        100.0 * got.read.bytes as f64 / got.field_bytes.max(1) as f64,
        got.decoded,
        got.computed,
        got.persisted,
        got.not_persisted
            .as_ref()
            .map_or(String::new(), |why| format!(": not kept: {why}")),
    ));
    if let Some(shortfall) = shortfall {
        if args.json {
            for point in &shortfall.missing {
                ui.json(&JsonMissing {
                    missing: fieldstore::shortfall::pairs(point).collect(),
                })?;
            }
        }
        ui.note(&shortfall.summary());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indices(list: &str) -> Result<Selection> {
        selection(&ExtractArgs {
            request: String::new(),
            points: Vec::new(),
            indices: vec![list.to_string()],
            parallelism: 1,
            json: false,
            csv: false,
        })
    }

    /// The largest index is refused naming it, not wrapped into an empty
    /// range ("range 18446744073709551615..0 ends before it starts").
    #[test]
    fn the_largest_index_is_refused_naming_it() {
        let e = indices("18446744073709551615").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            e.to_string(),
            "--index 18446744073709551615: no grid has that many points (an index is at most 18446744073709551614)"
        );
        match indices("18446744073709551614,0-18446744073709551615").expect("selection") {
            Selection::Ranges(r) => assert_eq!(
                r,
                [(u64::MAX - 1, u64::MAX), (0, u64::MAX)],
                "the largest representable ranges"
            ),
            other => panic!("{other:?}"),
        }
    }
}
