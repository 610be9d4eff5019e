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

#[test]
fn cf_var_names_resolve_when_they_are_no_short_name() {
    for (name, id) in [
        ("t2m", 167),
        ("T2M", 167),
        ("u10", 165),
        ("d2m", 168),
        ("si10", 207),
        ("u100", 228246),
        ("fg10_6", 123),
        ("d2sp", 140250),
        ("r2", 260242),
        ("p24", 24),
    ] {
        assert_eq!(
            fieldstore_grib::param_id_of_cf_var_name(name),
            Some(id),
            "{name}"
        );
    }
    // Candidates whose parameter bears another cfVarName are refused (`t2`
    // would be 2t, whose cfVarName is t2m), and so are names of nothing.
    for name in ["t2", "u10m", "p", "p0", "nosuchname", "", "2t"] {
        assert_eq!(
            fieldstore_grib::param_id_of_cf_var_name(name),
            None,
            "{name:?}"
        );
    }
    // The table: short names first (`t` is 130), cfVarNames after.
    let table = fieldstore_grib::param_names();
    assert_eq!(table.param_id("t"), Some(130));
    assert_eq!(table.param_id("t2m"), Some(167));
    assert_eq!(table.param_id("u10"), Some(165));
    assert_eq!(table.param_id("t2"), None);
}
