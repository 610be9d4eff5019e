//! `param_id`: short parameter names resolved by ecCodes' parameter
//! database, as MARS resolves them in requests (used by the C API's
//! `fdb_expand_request`).

#[test]
fn short_names_resolve_to_parameter_ids() {
    for (name, id) in [
        ("2t", 167),
        ("2T", 167),
        ("t", 130),
        ("z", 129),
        ("10u", 165),
        ("msl", 151),
    ] {
        assert_eq!(fieldstore_grib::param_id(name), Some(id), "{name}");
    }
    for name in ["bogus", "167", "", "2t\0"] {
        assert_eq!(fieldstore_grib::param_id(name), None, "{name:?}");
    }
}
