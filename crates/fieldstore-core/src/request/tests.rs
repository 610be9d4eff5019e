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
