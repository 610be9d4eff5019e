use super::*;

#[test]
fn parses_lists_ranges_all_and_verbs() {
    let r: Request = "retrieve, class=od , expver=0001,step=0/to/12/by/6,levelist=500/850,date=20231201/to/20231203,param=all".parse().unwrap();
    assert_eq!(r.to_string(), "class=od,expver=0001,step=0/to/12/by/6,levelist=500/850,date=20231201/to/20231203,param=all");
    assert_eq!(
        r.get("step"),
        Some(&Values::Items(vec![Item::Range {
            from: "0".into(),
            to: "12".into(),
            by: Some("6".into())
        }]))
    );
    assert!(r.has_all());
    let r: Request = "number=1/3/to/5/10".parse().unwrap();
    assert_eq!(r.to_string(), "number=1/3/to/5/10");
    assert!("".parse::<Request>().unwrap().is_empty());
}

#[test]
fn from_pairs_accepts_dict_shapes() {
    let r = Request::from_pairs([
        ("class", vec!["od"]),
        ("step", vec!["0", "6"]),
        ("levelist", vec!["1/to/3"]),
    ])
    .unwrap();
    assert_eq!(r.to_string(), "class=od,step=0/6,levelist=1/to/3");
}

#[test]
fn an_empty_string_from_a_dict_names_an_absent_keyword() {
    // pyfdb's combined_key() shape: `timespan: ''` for an absent one.
    let r = Request::from_pairs([("class", vec!["od"]), ("timespan", vec![""])]).unwrap();
    assert_eq!(
        r.get("timespan"),
        Some(&Values::Items(vec![Item::Value(String::new())]))
    );
    // Within a list, or in request text, an empty value is still an error.
    assert!(Request::from_pairs([("step", vec!["0", ""])]).is_err());
    assert!("class=od,timespan=".parse::<Request>().is_err());
}

#[test]
fn malformed_requests_are_refused_verbatim() {
    let cases = [
        ("class=od,,step=1", "malformed request at character 9: empty item (two commas in a row?)"),
        ("class=od,step", "malformed request at character 9: expected keyword=value, found 'step'"),
        ("class=od,step=", "malformed request at character 14: empty value for keyword 'step'"),
        ("step=to/6", "malformed request at character 5: 'to' in keyword 'step' needs a value before it"),
        ("step=0/to", "malformed request at character 7: 'to' in keyword 'step' needs a value after it"),
        ("step=0/to/6/by", "malformed request at character 12: 'by' in keyword 'step' needs a value after it"),
        ("step=0/by/6", "malformed request at character 7: 'by' in keyword 'step' must follow a 'from/to/to' range"),
        ("step=1/all", "malformed request at character 7: 'all' cannot be combined with other values of keyword 'step'"),
        ("class=od,class=rd", "keyword 'class' appears twice in the request"),
        ("cl@ss=od", "malformed request at character 0: invalid keyword 'cl@ss'"),
        ("class=o d", "malformed request at character 6: invalid character ' ' in value 'o d' of keyword 'class'"),
    ];
    for (text, want) in cases {
        assert_eq!(
            text.parse::<Request>().unwrap_err().to_string(),
            want,
            "{text}"
        );
    }
}

#[test]
fn only_mars_verbs_may_lead_and_never_alone() {
    for text in ["retrieve,class=od", "LIST, class=od", "archive,class=od"] {
        let r: Request = text.parse().unwrap();
        assert_eq!(r.to_string(), "class=od", "{text}");
    }
    let cases = [
        ("foo", "malformed request at character 0: 'foo' is neither keyword=value nor a MARS verb (archive, retrieve, list, read, write, compute, stage)"),
        (" foo,class=od", "malformed request at character 1: 'foo' is neither keyword=value nor a MARS verb (archive, retrieve, list, read, write, compute, stage)"),
        ("list", "malformed request at character 0: the MARS verb 'list' must be followed by keyword=value items (leave the request out to mean everything)"),
        ("retrieve,", "malformed request at character 0: the MARS verb 'retrieve' must be followed by keyword=value items (leave the request out to mean everything)"),
        ("class=od,retrieve", "malformed request at character 9: expected keyword=value, found 'retrieve'"),
    ];
    for (text, want) in cases {
        assert_eq!(
            text.parse::<Request>().unwrap_err().to_string(),
            want,
            "{text}"
        );
    }
}

/// Keywords are case-insensitive wherever a request is asked, as in MARS:
/// `get`, `remove` and `set` find a keyword however it was spelled, and a
/// schema's spelling replaces the entry rather than adding a second one.
#[test]
fn keywords_are_found_in_any_case() {
    let mut r: Request = "Class=od,PARAM=130".parse().unwrap();
    assert_eq!(r.to_string(), "class=od,param=130");
    assert!(r.get("Param").is_some() && r.get("CLASS").is_some());
    let one = |v: &str| Values::Items(vec![Item::Value(v.into())]);
    r.set_spelled("Param", one("131"));
    assert_eq!(r.to_string(), "class=od,Param=131");
    assert_eq!(r.get("param"), Some(&one("131")));
    r.set("PARAM", one("132"));
    assert_eq!(r.to_string(), "class=od,param=132");
    assert_eq!(r.remove("Class"), Some(one("od")));
    assert_eq!(r.to_string(), "param=132");
    assert!(r.insert("Param", one("1")).is_err());
}
