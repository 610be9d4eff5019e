//! `param_id`: short parameter names resolved by ecCodes' parameter
//! database, as MARS (metkit) resolves them in requests: the table every
//! interface installs (`param_names`).

#[test]
fn short_names_resolve_to_parameter_ids() {
    for (name, id) in [
        ("2t", 167),
        ("2T", 167),
        ("t", 130),
        ("z", 129),
        ("10u", 165),
        ("msl", 151),
        ("zust", 228003),
        ("tp", 228),
        ("cp", 143),
        // GRIB1 first, as metkit: 34, not GRIB2's 151159.
        ("sst", 34),
        // Only GRIB2 carries it.
        ("2r", 260242),
    ] {
        assert_eq!(fieldstore_grib::param_id(name), Some(id), "{name}");
    }
    for name in ["bogus", "167", "", "2t\0"] {
        assert_eq!(fieldstore_grib::param_id(name), None, "{name:?}");
    }
}

#[test]
fn the_table_remembers_answers_and_unknown_names() {
    let table = fieldstore_grib::param_names();
    assert_eq!(table.param_id("2t"), Some(167));
    assert_eq!(table.param_id("2t"), Some(167));
    assert_eq!(table.param_id("nosuchname"), None);
    assert_eq!(table.param_id("nosuchname"), None);
}
