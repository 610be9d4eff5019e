//! `fieldstore extract`: values at points of stored GRIB fields, in text,
//! `--json` and `--csv`, equal to ecCodes decoding the whole field at the
//! nearest grid point (ecCodes' own coordinates); bad points and indices
//! are usage errors naming them, and a request matching nothing is
//! `NotFound`.

mod common;

use common::{repo, Env};

const REQUEST: &str =
    "class=od,expver=0001,stream=oper,date=20070323,time=1200,type=fc,levtype=sfc,step=0,param=130";

fn setup() -> (Env, Vec<u8>) {
    let env = Env::new();
    let m = std::fs::read(repo().join("tests/fixtures/grib/extract/ccsds-g2-bitmap.grib")).unwrap();
    env.write("f.grib", &m);
    env.run(&[
        "archive",
        "--defaults",
        "class=od,expver=0001,stream=oper,type=fc",
        "f.grib",
    ])
    .ok();
    (env, m)
}

/// ecCodes' value at the grid point nearest to (lat, lon), its index, and
/// the grid point's latitude, longitude and great-circle distance (km, on
/// a sphere of 6,371.229 km) from (lat, lon).
fn oracle_at(m: &[u8], lat: f64, lon: f64) -> (usize, f64, (f64, f64, f64)) {
    let lats = fieldstore_grib::read_array(m, "latitudes").unwrap();
    let lons = fieldstore_grib::read_array(m, "longitudes").unwrap();
    let i = (0..lats.len())
        .min_by(|&a, &b| {
            let d = |j: usize| (lats[j] - lat).powi(2) + (lons[j] - lon).powi(2);
            d(a).total_cmp(&d(b))
        })
        .unwrap();
    let mut v = vec![0f64; lats.len()];
    fieldstore_grib::decode_values(m, &mut v).unwrap();
    let (p1, p2) = (lat.to_radians(), lats[i].to_radians());
    let dl = (lons[i] - lon).to_radians();
    // Spherical law of cosines: another formula than the haversine.
    let c = (p1.sin() * p2.sin() + p1.cos() * p2.cos() * dl.cos()).clamp(-1.0, 1.0);
    (i, v[i], (lats[i], lons[i], 6371.229 * c.acos()))
}

#[test]
fn points_in_text_json_and_csv() {
    let (env, m) = setup();
    // Grid points 0.25° apart from 60N 10W: these sit between them.
    let points = [(59.03, -9.01), (40.12, 20.0), (55.5, 0.1)];
    let args: Vec<String> = points
        .iter()
        .flat_map(|(a, b)| ["--point".into(), format!("{a},{b}")])
        .collect();
    let mut text = vec!["extract", REQUEST];
    text.extend(args.iter().map(String::as_str));
    let out = env.run(&text).ok();
    let line = out.out();
    for &(lat, lon) in &points {
        let (i, v, (glat, glon, d)) = oracle_at(&m, lat, lon);
        let want = if v.is_nan() {
            format!("{lat},{lon}→{i} ({glat},{glon} {d:.1} km)=NaN")
        } else {
            format!("{lat},{lon}→{i} ({glat},{glon} {d:.1} km)={v}")
        };
        assert!(line.contains(&want), "{want} not in {line}");
        assert!(d < 25.0, "the points sit near the grid: {d} km");
    }
    assert!(
        out.stderr.contains("extracted from 1 field"),
        "{}",
        out.stderr
    );

    let mut json = text.clone();
    json.push("--json");
    let out = env.run(&json).ok();
    let v: serde_json::Value = serde_json::from_str(out.out().trim()).unwrap();
    assert_eq!(v["key"]["param"], "130");
    assert_eq!(v["method"], "jump info");
    for (n, &(lat, lon)) in points.iter().enumerate() {
        let (i, want, (glat, glon, d)) = oracle_at(&m, lat, lon);
        assert_eq!(v["indices"][n], i as u64);
        let at = &v["nearest"][n];
        assert_eq!(at["latitude"].as_f64(), Some(glat));
        assert_eq!(at["longitude"].as_f64(), Some(glon));
        let got = at["distance_km"].as_f64().unwrap();
        assert!(
            (got - d).abs() < 1e-6,
            "distance {got} km, {d} km by another formula"
        );
        if want.is_nan() {
            assert!(v["values"][n].is_null());
        } else {
            assert_eq!(v["values"][n].as_f64().unwrap().to_bits(), want.to_bits());
        }
    }

    let mut csv = text.clone();
    csv.push("--csv");
    let lines = env.run(&csv).ok().lines();
    assert_eq!(
        lines[0],
        "key,latitude,longitude,index,grid_latitude,grid_longitude,distance_km,value"
    );
    assert_eq!(lines.len(), 1 + points.len());
    let (i, _, (glat, glon, d)) = oracle_at(&m, points[0].0, points[0].1);
    assert!(
        lines[1].contains(&format!(",{i},{glat},{glon},{d:.3},")),
        "{}",
        lines[1]
    );
}

#[test]
fn indices_and_ranges() {
    let (env, m) = setup();
    let mut all = vec![0f64; 16000];
    fieldstore_grib::decode_values(&m, &mut all).unwrap();
    let lines = env
        .run(&["extract", REQUEST, "--index", "2-5,15999", "--csv"])
        .ok()
        .lines();
    let want: Vec<String> = [2usize, 3, 4, 15999]
        .iter()
        .map(|&i| {
            let v = if all[i].is_nan() {
                String::new()
            } else {
                all[i].to_string()
            };
            format!("\"{REQUEST}\",{i},{v}")
        })
        .collect();
    assert_eq!(lines[1..], want[..]);
}

#[test]
fn bad_selections_are_named() {
    let (env, _) = setup();
    env.run(&["extract", REQUEST, "--point", "91,0"]).fails(
        2,
        "--point 91,0: want LAT,LON in degrees, latitude within -90..90",
    );
    env.run(&["extract", REQUEST, "--point", "abc"]).fails(
        2,
        "--point abc: want LAT,LON in degrees, latitude within -90..90",
    );
    env.run(&["extract", REQUEST, "--index", "5-2"])
        .fails(2, "--index 5-2: want I or START-END (END excluded)");
    env.run(&["extract", REQUEST])
        .fails(2, "give --point LAT,LON or --index INDICES");
    let r = env.run(&["extract", REQUEST, "--index", "16000"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains("index 16000 is out of range: the field has 16000 points"),
        "{}",
        r.stderr
    );
    let r = env.run(&[
        "extract",
        &REQUEST.replace("step=0", "step=6"),
        "--index",
        "1",
    ]);
    assert!(
        r.stderr.contains("no stored field matches the request"),
        "{r:?}"
    );
}

/// `archive` (no jump info at archive by default): the first extraction
/// computes the jump info (`method` says so) and keeps it with the entry;
/// the next one finds it there; the values are ecCodes'. `--jump-info`:
/// found at the first extraction.
#[test]
fn jump_info_built_on_first_extraction() {
    let env = Env::new();
    let m = std::fs::read(repo().join("tests/fixtures/grib/extract/ccsds-g2-bitmap.grib")).unwrap();
    env.write("f.grib", &m);
    env.run(&[
        "archive",
        "--defaults",
        "class=od,expver=0001,stream=oper,type=fc",
        "f.grib",
    ])
    .ok();
    let mut all = vec![0f64; 16000];
    fieldstore_grib::decode_values(&m, &mut all).unwrap();
    let check = |out: &str, method: &str| {
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["method"], method);
        match v["values"][0].as_f64() {
            Some(x) => assert_eq!(x.to_bits(), all[4321].to_bits()),
            None => assert!(all[4321].is_nan()),
        }
    };
    let out = env
        .run(&["extract", REQUEST, "--index", "4321", "--json"])
        .ok();
    check(&out.out(), "jump info computed");
    assert!(
        out.stderr
            .contains("1 with jump info computed (1 kept with their entries)"),
        "{}",
        out.stderr
    );
    let out = env
        .run(&["extract", REQUEST, "--index", "4321", "--json"])
        .ok();
    check(&out.out(), "jump info");
    let env = Env::new();
    env.write("f.grib", &m);
    env.run(&[
        "archive",
        "--jump-info",
        "--defaults",
        "class=od,expver=0001,stream=oper,type=fc",
        "f.grib",
    ])
    .ok();
    let out = env
        .run(&["extract", REQUEST, "--index", "4321", "--json"])
        .ok();
    check(&out.out(), "jump info");
    assert!(
        out.stderr.contains("0 with jump info computed"),
        "{}",
        out.stderr
    );
}
