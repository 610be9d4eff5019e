use super::*;
use crate::key::Key;

const SMALL: &str = "
param: Param; step: Step; date: Date; time: Time; expver: Expver; levelist: Double; number: Integer;
[ class=od, expver, stream=oper/dcda, date, time, domain?g
    [ type, levtype
        [ step, levelist?, param ]]
]
[ class=od, expver, stream=enfo, date, time, domain?g
    [ type=pf/cf, levtype
        [ step, number?, levelist?, param ]]
]
[ class=!od, expver, stream, date, time
    [ type, levtype, number-
        [ step, levelist?, param ]]
]
";

fn key(s: &str) -> Key {
    s.parse().unwrap()
}

#[test]
fn ecmwf_and_hammer_schemas_parse() {
    let s = Schema::ecmwf();
    assert_eq!(s.rules().len(), 98);
    assert_eq!(
        s.types_of("param"),
        &[KeywordType::Param, KeywordType::ParamId]
    );
    assert!(s.types_of("hdate").contains(&KeywordType::Year));
    let hammer = include_str!("../../../../tests/fixtures/schema/hammer.schema");
    let h = Schema::parse("hammer.schema", hammer).unwrap();
    assert_eq!(h.rules().len(), 1);
    assert_eq!(h.describe(RuleId { dataset: 0, collocation: 0, element: 0 }),
        "[ class, expver, stream, date, time [ type, levtype [ step, number?, levelist?, param ]]] (line 25)");
}

#[test]
fn display_reparses_to_same_rules() {
    let s = Schema::ecmwf();
    let printed = s.to_string();
    // Types are resolved into the rules, so re-parse with the same globals.
    let globals: String = ECMWF_SCHEMA
        .lines()
        .filter(|l| l.contains(';') && !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let again = Schema::parse("again", &format!("{globals}\n{printed}")).unwrap();
    assert_eq!(again.rules().len(), s.rules().len());
    for (a, b) in again.rules().iter().zip(s.rules()) {
        assert_eq!(a.to_string(), b.to_string());
    }
}

#[test]
fn first_matching_rule_wins_and_values_are_canonical() {
    let s = Schema::parse("small", SMALL).unwrap();
    let k = s.split(&key("class=od,expver=1,stream=enfo,date=2023-12-01,time=12,type=pf,levtype=pl,step=06,number=01,levelist=500.0,param=130.128")).unwrap();
    assert_eq!(k.braced(), "{class=od,expver=0001,stream=enfo,date=20231201,time=1200}{type=pf,levtype=pl}{step=6,number=1,levelist=500,param=130}");
    assert_eq!(
        k.rule,
        RuleId {
            dataset: 1,
            collocation: 0,
            element: 0
        }
    );
    assert_eq!(
        k.dataset.to_string(),
        "class=od,expver=0001,stream=enfo,date=20231201,time=1200,domain="
    );
    // Hidden keyword: accepted, stored empty.
    let k = s.split(&key("class=rd,expver=abcd,stream=oper,date=20231201,time=0,type=fc,levtype=sfc,number=5,step=0,param=167")).unwrap();
    assert_eq!(k.collocation.to_string(), "type=fc,levtype=sfc,number=");
    assert_eq!(k.full_key().to_string(), "class=rd,expver=abcd,stream=oper,date=20231201,time=0000,type=fc,levtype=sfc,step=0,param=167");
}

#[test]
fn bad_keys_get_errors_naming_keyword_and_rule() {
    let s = Schema::parse("small", SMALL).unwrap();
    let cases = [
        ("class=od,expver=0001,stream=oper,date=20231201,time=1200,type=fc,levtype=sfc,step=0,param=167,foo=1",
         "unknown keyword 'foo': no rule of the schema uses it"),
        ("class=od,expver=0001,stream=oper,date=20231201,time=1200,type=fc,levtype=sfc,step=0,param=167,number=1",
         "keyword 'number' is not used by the matching rule [ class=od, expver, stream=oper/dcda, date, time, domain?g [ type, levtype [ step, levelist?, param ]]] (line 5)"),
        ("class=od,expver=0001,stream=oper,date=20231201,time=1200,type=fc,levtype=sfc,param=167",
         "missing keyword 'step' required by rule [ class=od, expver, stream=oper/dcda, date, time, domain?g [ type, levtype [ step, levelist?, param ]]] (line 5)"),
        ("class=od,expver=0001,stream=enfo,date=20231201,time=1200,type=an,levtype=sfc,step=0,param=167",
         "value 'an' of keyword 'type' is not allowed by rule [ class=od, expver, stream=enfo, date, time, domain?g [ type=pf/cf, levtype [ step, number?, levelist?, param ]]] (line 9)"),
        ("class=od,expver=0001,stream=oper,date=20231232,time=1200,type=fc,levtype=sfc,step=0,param=167",
         "keyword 'date': '20231232' is not a valid Date: no such day in the calendar (rule [ class=od, expver, stream=oper/dcda, date, time, domain?g [ type, levtype [ step, levelist?, param ]]] (line 5))"),
    ];
    for (k, want) in cases {
        assert_eq!(s.split(&key(k)).unwrap_err().to_string(), want, "{k}");
    }
    // An unknown keyword is named first, also when the key fails otherwise
    // too (the split looks for it only once matching failed).
    let unknown = "unknown keyword 'foo': no rule of the schema uses it";
    let no_step = "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=fc,levtype=sfc,param=167,foo=1";
    assert_eq!(s.split(&key(no_step)).unwrap_err().to_string(), unknown);
    let long = format!(
        "class=od,expver=0001,stream=oper,date=20231201,time=1200,type=fc,levtype=sfc,step=0,param=167,number={},foo=1",
        "1".repeat(super::MAX_VALUE_BYTES + 1)
    );
    assert_eq!(s.split(&key(&long)).unwrap_err().to_string(), unknown);
}

#[test]
fn schema_parse_errors_give_line_and_column() {
    let cases = [
        (
            "[ class, expver\n  [ type [ step ]]",
            "t:2:19: unclosed '[' opened at line 1",
        ),
        ("param: Parm;\n", "t:1:8: unknown type 'Parm'"),
        (
            "[ class=, expver [ type [ step ]]]",
            "t:1:9: expected a value for keyword 'class', found ','",
        ),
        (
            "[ class [ type ]]",
            "t:1:0: this collocation rule has no element rule inside it",
        ),
        (
            "[ class [ type [ step [ x ]]]]",
            "t:1:23: a schema has at most three levels (dataset, collocation, element)",
        ),
        (
            "[ Class [ type [ step, class ]]]",
            "t: keywords 'Class' and 'class' differ only in case: keys and requests name keywords in any case, so they would be one",
        ),

        (
            "[ a, a [ b [ c ]]]",
            "t: keyword 'a' appears twice in the rule at line 1",
        ),
        ("param Param;", "t:1:7: expected ':', found 'P'"),
        ("[ a=x/\u{b} [ b [ c ]]]", "t:1:7: expected a value for keyword 'a', found '\\u{b}'"),
        ("[ a=x\u{a0}y [ b [ c ]]]", "t:1:8: invalid value 'x\\u{a0}y' for keyword 'a': values may not contain whitespace, control characters, '{' or '}'"),
    ];
    for (text, want) in cases {
        assert_eq!(
            Schema::parse("t", text).unwrap_err().to_string(),
            want,
            "{text}"
        );
    }
}

#[test]
fn single_exclusion_excludes() {
    // FDB5 parses `key=!a` as an inclusion (its Appendix A.4); we do not.
    let s = Schema::parse("t", "[ class=!od [ type [ step ]]]").unwrap();
    assert!(s.split(&key("class=od,type=fc,step=1")).is_err());
    assert!(s.split(&key("class=rd,type=fc,step=1")).is_ok());
}

#[test]
fn one_keyword_typed_differently_per_level() {
    let s = Schema::ecmwf();
    let k = s.split(&key("class=ce,expver=0001,stream=efcl,date=20231201,model=m,domain=g,hdate=20001215,type=fc,levtype=sfc,origin=ecmf,time=0000,step=6,param=167")).unwrap();
    assert_eq!(k.braced(), "{class=ce,expver=0001,stream=efcl,date=20231201,model=m,domain=g,hdate=2000}{hdate=12,type=fc,levtype=sfc,origin=ecmf}{hdate=20001215,time=0000,step=6,param=167}");
    assert_eq!(k.full_key().get("hdate"), Some("20001215"));
}

fn request(s: &str) -> crate::request::Request {
    s.parse().unwrap()
}

#[test]
fn expand_enumerates_in_request_order_and_respects_first_match() {
    let s = Schema::parse("small", SMALL).unwrap();
    let all: Vec<SplitKey> = s
        .expand(&request("class=od,expver=1,stream=enfo,date=20231201,time=12,domain=g,type=pf,levtype=pl,step=0/to/12/by/6,number=1/2,levelist=500,param=130"))
        .unwrap()
        .collect();
    // `domain=g` is the optional keyword's default: fields stored without
    // `domain` are named too, after those with it.
    assert_eq!(all.len(), 12);
    assert!(all[..6]
        .iter()
        .all(|k| k.dataset.get("domain") == Some("g")));
    assert!(all[6..].iter().all(|k| k.dataset.get("domain") == Some("")));
    let keys: Vec<String> = all[..6].iter().map(|k| k.element.braced()).collect();
    assert_eq!(
        keys,
        [
            "{step=0,number=1,levelist=500,param=130}",
            "{step=0,number=2,levelist=500,param=130}",
            "{step=6,number=1,levelist=500,param=130}",
            "{step=6,number=2,levelist=500,param=130}",
            "{step=12,number=1,levelist=500,param=130}",
            "{step=12,number=2,levelist=500,param=130}",
        ]
    );
    // Optional `domain?g` left out: both the default and the empty value.
    let ds: Vec<String> = s.expand(&request("class=od,expver=1,stream=oper,date=20231201,time=12,type=fc,levtype=sfc,step=0,param=167"))
        .unwrap().map(|k| k.dataset.to_string()).collect();
    assert_eq!(
        ds,
        [
            "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g",
            "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=",
        ]
    );
    // A missing required keyword names no key.
    assert_eq!(
        s.expand(&request(
            "class=od,expver=1,stream=oper,date=20231201,time=12,type=fc,levtype=sfc,param=167"
        ))
        .unwrap()
        .count(),
        0
    );
    // Ranges are not expanded to bound or order a request.
    let huge = request("class=od,expver=1,stream=oper,date=20231201,time=12,type=fc,levtype=sfc,step=0/to/100000000,param=167/130");
    let e = s.expand(&huge).unwrap();
    // 100000000 hours by 12: 8333334 steps, × 2 params × (domain g, absent).
    assert_eq!(e.size_hint_upper(), 8_333_334 * 2 * 2);
    assert!(e.names_keys());
    let order = e.order();
    let at = |k: &str| order.position(&s.split(&key(k)).unwrap());
    let base = "class=od,expver=1,stream=oper,date=20231201,time=12,type=fc,levtype=sfc";
    let p0 = at(&format!("{base},domain=g,step=0,param=167")).unwrap();
    let p1 = at(&format!("{base},domain=g,step=0,param=130")).unwrap();
    let p2 = at(&format!("{base},domain=g,step=99999996,param=167")).unwrap();
    let p3 = at(&format!("{base},step=0,param=167")).unwrap();
    assert!(p0 < p1 && p1 < p2 && p2 < p3);
    // Not named: a step off the range's increment, another param, a level.
    assert_eq!(at(&format!("{base},step=6,param=167")), None);
    assert_eq!(at(&format!("{base},step=12,param=131")), None);
    assert_eq!(at(&format!("{base},step=12,levelist=500,param=167")), None);
    assert!(!s
        .expand(&request(
            "class=od,expver=1,stream=oper,date=20231201,time=12,type=fc,levtype=sfc,param=167"
        ))
        .unwrap()
        .names_keys());
    // `all` cannot be enumerated.
    assert_eq!(
        s.expand(&request("class=od,step=all"))
            .err()
            .unwrap()
            .to_string(),
        "keyword 'step' is 'all': retrieve needs explicit values; list the request instead"
    );
}

#[test]
fn selector_matches_levels_with_each_rules_types() {
    let s = Schema::ecmwf();
    let sel = s
        .selector(&request(
            "class=od,time=12,step=0/to/12/by/6,levelist=500.0,param=130.128",
        ))
        .unwrap();
    let k = s.split(&key("class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=pl,step=6,levelist=500,param=130")).unwrap();
    let dm = sel.match_dataset(&k.dataset).unwrap();
    let cm = sel.match_collocation(&dm, &k.collocation).unwrap();
    let f = sel.element_filter(&cm);
    assert!(f.matches(&k.element));
    let other = s.split(&key("class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=pl,step=3,levelist=500,param=130")).unwrap();
    assert!(!f.matches(&other.element));
    // The filter constrains step, levelist and param.
    let axes = |steps: &[&str]| {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        crate::axes::Axes::from([
            ("step".to_string(), set(steps)),
            ("levelist".to_string(), set(&["500", "850"])),
            ("param".to_string(), set(&["130"])),
        ])
    };
    assert!(f.admits_axes(&axes(&["3", "12"])));
    assert!(!f.admits_axes(&axes(&["3", "9"])));
    assert!(
        !f.admits_axes(&crate::axes::Axes::new()),
        "no step axis: nothing matches"
    );
    let sel = s.selector(&request("class=od,time=0000")).unwrap();
    assert!(sel.match_dataset(&k.dataset).is_none());
    // A request keyword the field's keys lack excludes it at element level.
    let sel = s.selector(&request("class=od,number=1")).unwrap();
    let dm = sel.match_dataset(&k.dataset).unwrap();
    let cm = sel.match_collocation(&dm, &k.collocation).unwrap();
    assert!(!sel.element_filter(&cm).matches(&k.element));
    assert_eq!(
        s.selector(&request("class=od,foo=1"))
            .unwrap_err()
            .to_string(),
        "unknown keyword 'foo' in request: the schema has no rule using it"
    );
    assert_eq!(s.selector(&request("class=od,time=2500")).unwrap_err().to_string(),
        "keyword 'time' in request: '2500' is not a valid Time: hour must be 0..23 and minute 0..59");
}

/// A two-name parameter table for the tests.
#[derive(Debug)]
struct Names;

impl crate::params::ParamNames for Names {
    fn param_id(&self, name: &str) -> Option<u64> {
        assert_eq!(name, name.to_ascii_lowercase(), "names arrive lower-cased");
        match name {
            "2t" => Some(167),
            "t" => Some(130),
            _ => None,
        }
    }
}

#[test]
fn parameter_names_resolve_through_the_table_everywhere() {
    let plain = Schema::parse("t", SMALL).unwrap();
    let s = plain.clone().with_param_names(std::sync::Arc::new(Names));
    let base = "class=od,expver=1,stream=oper,date=20230101,time=0,type=fc,levtype=sfc,step=0";
    // split: a key naming a parameter is stored under its paramId.
    let k = s.split(&key(&format!("{base},param=2T"))).unwrap();
    assert_eq!(k.element.get("param"), Some("167"));
    // Numeric spellings are the type's, with or without a table.
    let k = s.split(&key(&format!("{base},param=167.128"))).unwrap();
    assert_eq!(k.element.get("param"), Some("167"));
    // expand: names, ids and number.table name the same keys.
    let expand = |params: &str| -> Vec<String> {
        let r: crate::request::Request = format!("{base},param={params}").parse().unwrap();
        s.expand(&r)
            .unwrap()
            .map(|k| k.full_key().to_string())
            .collect()
    };
    let named = expand("2t/T");
    assert_eq!(named, expand("167/130.128"));
    assert!(named.iter().any(|k| k.ends_with("param=167")), "{named:?}");
    // selector: a stored 167 is matched by `2t`.
    let stored = s.split(&key(&format!("{base},param=167"))).unwrap();
    let r: crate::request::Request = "class=od,param=2t".parse().unwrap();
    let sel = s.selector(&r).unwrap();
    let dm = sel.match_dataset(&stored.dataset).unwrap();
    let cm = sel.match_collocation(&dm, &stored.collocation).unwrap();
    assert!(sel.element_filter(&cm).matches(&stored.element));
    assert_eq!(sel.request().to_string(), "class=od,param=167");
    // An unknown name is an error naming it and the keyword, in requests
    // and in keys.
    let r: crate::request::Request = "class=od,param=2t/nosuchname".parse().unwrap();
    for e in [
        s.selector(&r).map(drop).unwrap_err(),
        s.expand(&r).map(drop).unwrap_err(),
    ] {
        assert!(
            matches!(&e, crate::request::RequestError::UnknownParameter { keyword, name }
                if keyword == "param" && name == "nosuchname"),
            "{e}"
        );
        assert!(
            e.to_string().contains("unknown parameter 'nosuchname'"),
            "{e}"
        );
    }
    let e = s
        .split(&key(&format!("{base},param=nosuchname")))
        .unwrap_err();
    assert!(matches!(e, SchemaError::UnknownParameter { .. }), "{e}");
    assert_eq!(
        crate::error::Error::from(e).kind(),
        crate::error::ErrorKind::InvalidInput
    );
    // Without a table a name is text: kept lower-cased, matched as written.
    let k = plain.split(&key(&format!("{base},param=2T"))).unwrap();
    assert_eq!(k.element.get("param"), Some("2t"));
    assert!(plain.selector(&r).is_ok());
    // Only keywords that are parameters in every rule are resolved.
    let mixed = Schema::parse(
        "m",
        "[ class [ type [ param ]]]\n[ stream, param: Param [ type [ step ]]]",
    )
    .unwrap()
    .with_param_names(std::sync::Arc::new(Names));
    let k = mixed.split(&key("class=od,type=fc,param=T")).unwrap();
    assert_eq!(k.element.get("param"), Some("t"));
}

/// An FDB5 schema in fdb-fortran's style, with a camelCase keyword (issue
/// 28). FDB5 5.25 takes it, keeps the spelling in keys and listings, and
/// matches keywords case-sensitively (measured through its C API);
/// fieldstore keeps the schema's spelling and takes keys and requests
/// naming keywords in any case (as FDB5's tools do through metkit for MARS
/// keywords).
#[test]
fn camel_case_keywords_take_the_schemas_spelling() {
    let text = "generatingProcessIdentifier: Integer;\n\
                [ class, expver, stream, date, time, domain\n\
                  [ type, levtype, generatingProcessIdentifier\n\
                    [ step, param ]]]\n";
    let s = Schema::parse("fortran", text).unwrap();
    let base = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step=0,param=167";
    for spelled in [
        "generatingProcessIdentifier",
        "generatingprocessidentifier",
        "GENERATINGPROCESSIDENTIFIER",
    ] {
        let k = s.split(&key(&format!("{base},{spelled}=01"))).unwrap();
        assert_eq!(
            k.collocation.to_string(),
            "type=fc,levtype=sfc,generatingProcessIdentifier=1",
            "{spelled}"
        );
    }
    // Other keywords in another case, as before.
    let k = s
        .split(&key(
            &format!("{base},generatingProcessIdentifier=1").replace("class=", "CLASS=")
        ))
        .unwrap();
    assert_eq!(k.dataset.get("class"), Some("od"));
    // Requests too: a selector matches the stored key.
    let stored = s
        .split(&key(&format!("{base},generatingProcessIdentifier=1")))
        .unwrap();
    for spelled in ["generatingProcessIdentifier", "generatingprocessidentifier"] {
        let request: crate::request::Request = format!("class=od,{spelled}=1").parse().unwrap();
        let sel = s.selector(&request).unwrap();
        let dm = sel.match_dataset(&stored.dataset).expect("dataset");
        assert!(
            sel.match_collocation(&dm, &stored.collocation).is_some(),
            "{spelled}"
        );
        let request: crate::request::Request = format!("class=od,{spelled}=2").parse().unwrap();
        let sel = s.selector(&request).unwrap();
        let dm = sel.match_dataset(&stored.dataset).expect("dataset");
        assert!(
            sel.match_collocation(&dm, &stored.collocation).is_none(),
            "{spelled}"
        );
    }
    // One keyword in two spellings.
    let e = s
        .split(&key(&format!(
            "{base},generatingProcessIdentifier=1,generatingprocessidentifier=1"
        )))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "keyword 'generatingProcessIdentifier' is given twice, as 'generatingProcessIdentifier' \
         and 'generatingprocessidentifier' (keywords are matched ignoring case)"
    );
}

#[test]
fn values_are_checked_in_the_types_of_the_rules_the_request_can_match() {
    let schema = Schema::ecmwf();
    let check = |text: &str| {
        text.parse::<crate::request::Request>()
            .unwrap()
            .validate(&schema)
            .map_err(|e| e.to_string())
    };
    // As archive checks them: class=od dates are Dates.
    assert_eq!(
        check("class=od,date=20230230").unwrap_err(),
        "keyword 'date' in request: '20230230' is not a valid Date: no such day in the calendar"
    );
    assert_eq!(
        check("class=od,expver=0001,date=abc").unwrap_err(),
        "keyword 'date' in request: 'abc' is not a valid Date: expected YYYYMMDD, YYYY-MM-DD, or a relative day such as 0 or -1"
    );
    assert_eq!(
        check("class=od,date=20230101/to/20230230").unwrap_err(),
        "keyword 'date' in request: '20230230' is not a valid Date: no such day in the calendar"
    );
    // Every form the Date type takes.
    for ok in [
        "class=od,date=20230228",
        "class=od,date=2023-02-28",
        "class=od,date=0",
        "class=od,date=-1",
        "class=od,date=20230101/to/20230131",
        "class=od,date=20230101/to/20230131/by/7",
        "class=od,date=20230101/20230102,step=0/to/12/by/6",
        "class=od,date=all",
    ] {
        check(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    // A class=cs rule takes any text as a date (`date:Default`), as archive
    // does: without a class the request may name such a field.
    check("date=abc").expect("class=cs dates are text");
    check("class=cs,date=abc").expect("class=cs dates are text");
    // Negative steps name the value.
    assert_eq!(
        check("step=-6").unwrap_err(),
        "keyword 'step' in request: '-6' is not a valid Step: a step cannot be negative (a step range is written from-to, e.g. 0-6)"
    );
    // Keywords of different rules: nothing can match, nothing to refuse.
    check("class=od,country=de").expect("matches nothing");
}

/// A request that gives every dataset keyword explicit values names its
/// dataset keys: each one archive makes of a field with those values
/// (canonical: `expver=1` is `0001`, `2023-12-01` is `20231201`; an absent
/// optional keyword empty), in `cmp_fingerprint` order. Leaving a dataset
/// keyword out, or naming more keys than the bound, asks for a listing.
#[test]
fn pinned_datasets_are_the_keys_archive_makes() {
    let s = Schema::parse("small", SMALL).unwrap();
    let dataset = |k: &str| {
        s.split(&key(&format!("{k},type=pf,levtype=pl,step=0,param=130")))
            .unwrap()
            .dataset
    };
    let pinned = |r: &str, limit: usize| s.selector(&request(r)).unwrap().pinned_datasets(limit);

    let one = pinned(
        "class=od,expver=1,stream=oper,date=2023-12-01,time=12,domain=g",
        256,
    );
    // `domain=g` is the default: fields archived without a domain match too.
    let mut want = vec![
        dataset("class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g"),
        dataset("class=od,expver=0001,stream=oper,date=20231201,time=1200"),
    ];
    want.sort_by(|a, b| a.cmp_fingerprint(b));
    assert_eq!(one, Some(want));
    let other = pinned(
        "class=od,expver=1,stream=oper,date=20231201,time=12,domain=f",
        256,
    );
    assert_eq!(
        other,
        Some(vec![dataset(
            "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=f"
        )])
    );

    // Two streams (two rules), three dates, two domains.
    let many = pinned(
        "class=od,expver=1,stream=oper/enfo,date=20231201/to/20231203,time=12,domain=g",
        256,
    )
    .unwrap();
    assert_eq!(many.len(), 12, "{many:?}");
    assert!(many.windows(2).all(|w| w[0].cmp_fingerprint(&w[1]).is_le()));
    for d in &many {
        // A field archived with these values (no domain: the empty one).
        let k = d.to_string();
        assert_eq!(*d, dataset(k.trim_end_matches(",domain=")), "{k}");
    }
    assert_eq!(
        pinned(
            "class=od,expver=1,stream=oper/enfo,date=20231201/to/20231203,time=12,domain=g",
            11
        ),
        None
    );

    // A dataset keyword left out or `all`: any value; list.
    assert_eq!(
        pinned("class=od,expver=1,stream=oper,date=20231201,time=12", 256),
        None
    );
    assert_eq!(
        pinned(
            "class=od,expver=1,stream=oper,date=all,time=12,domain=g",
            256
        ),
        None
    );
    // A keyword of a rule the request rules out does not matter; nothing
    // at all is a pinned answer.
    assert_eq!(
        pinned(
            "class=od,expver=1,stream=wave,date=20231201,time=12,domain=g",
            256
        ),
        Some(vec![])
    );
    // class=!od: rule 3, no domain; `number-` is below level 1.
    assert_eq!(
        pinned("class=rd,expver=xxxx,stream=oper,date=20231201,time=0", 256),
        Some(vec![dataset(
            "class=rd,expver=xxxx,stream=oper,date=20231201,time=0000"
        )])
    );

    // The ECMWF schema: its `od`/`oper` datasets, with a domain.
    let e = Schema::ecmwf();
    let sel = e
        .selector(&request(
            "class=od,expver=1,stream=oper,date=20231201,time=1200,domain=g",
        ))
        .unwrap();
    let keys = sel.pinned_datasets(256).unwrap();
    let split = e
        .split(&key("class=od,expver=1,stream=oper,date=20231201,time=1200,domain=g,type=fc,levtype=sfc,step=0,param=167"))
        .unwrap();
    assert!(keys.contains(&split.dataset), "{keys:?}");
    assert!(keys.iter().all(|k| sel.match_dataset(k).is_some()));
}

/// A split that starts from the chain the last split took
/// (`split.rs`'s `LastChain`) answers as trying every rule in order: a
/// schema whose earlier rules fail on element keywords (`step`, `param`)
/// and values, and the keys that take each chain one after the other.
#[test]
fn the_last_chain_never_changes_a_split() {
    let s = Schema::parse(
        "layered",
        "step: Step; param: Param;
[ class, expver, stream=oper [ levtype=sfc [ step=0, param ]]]
[ class, expver, stream=oper [ levtype=sfc [ step, param=167 ]]]
[ class, expver, stream [ levtype [ step, param ]]]
[ class, expver, stream [ levtype [ step, param, number ]]]
",
    )
    .unwrap();
    let keys = [
        "class=od,expver=1,stream=oper,levtype=sfc,step=6,param=130",
        "class=od,expver=1,stream=oper,levtype=sfc,step=0,param=130",
        "class=od,expver=1,stream=oper,levtype=sfc,step=6,param=167",
        "class=od,expver=1,stream=oper,levtype=sfc,step=12,param=130",
        "class=od,expver=1,stream=oper,levtype=sfc,step=6,param=130,number=3",
        "class=od,expver=1,stream=enfo,levtype=sfc,step=0,param=130",
        "class=od,expver=1,stream=enfo,levtype=sfc,step=6,param=167",
        "class=od,expver=1,stream=oper,levtype=pl,step=0,param=130",
        "class=od,expver=1,stream=oper,levtype=sfc,step=x,param=130",
        "class=od,expver=1,stream=oper,levtype=sfc,param=130",
        "class=od,expver=1,stream=oper,levtype=sfc,step=0,param=130",
    ];
    for (i, a) in keys.iter().enumerate() {
        for b in &keys[i..] {
            let warm = s.clone();
            let _ = warm.split(&key(a));
            let fresh = s.clone();
            assert_eq!(
                format!("{:?}", warm.split(&key(b))),
                format!("{:?}", fresh.split(&key(b))),
                "{b} after {a}"
            );
        }
    }
    // Taken where the keys agree on what decided it: `stream=enfo` with
    // another step and param (the rules before look at `stream` only);
    // not for `stream=oper`, whose rules before look at `step` and `param`.
    // `taken(schema, keys)`: how often splitting `keys` in turn took it.
    let taken = |s: Schema, keys: &[&str]| {
        for k in keys {
            s.split(&key(k)).unwrap();
        }
        s.last_chain
            .taken
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(taken(s.clone(), &[keys[5], keys[6]]), 1);
    assert_eq!(taken(s.clone(), &[keys[0], keys[3]]), 0);
    // ECMWF's ensemble members: the 30-odd rules before theirs look at
    // none of the element keywords.
    let member = "class=od,expver=0001,stream=enfo,date=20231201,time=1200,domain=g,type=pf,\
                  levtype=pl,number=13";
    let members = [
        format!("{member},levelist=500,step=6,param=130"),
        format!("{member},levelist=850,step=12,param=131"),
    ];
    let members: Vec<&str> = members.iter().map(String::as_str).collect();
    assert_eq!(taken(Schema::ecmwf(), &members), 1);
    // And its operational surface fields: no rule before theirs looks at
    // `step` or `param` either.
    let surface = "class=od,expver=0001,stream=oper,date=20231201,time=1200,domain=g,type=fc,\
                   levtype=sfc";
    let fields: Vec<String> = [(6, 167), (12, 165), (240, 228)]
        .iter()
        .map(|(step, param)| format!("{surface},step={step},param={param}"))
        .collect();
    let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
    assert_eq!(taken(Schema::ecmwf(), &fields), 2);
}

proptest::proptest! {
    /// As above, on ECMWF's schema: sequences of keys each a change of
    /// the one before (a keyword's value changed, a keyword dropped or
    /// added), split by one schema, answer as a fresh schema each.
    #[test]
    fn the_last_chain_never_changes_an_ecmwf_split(
        changes in proptest::collection::vec((0usize..14, 0usize..6), 1..40)
    ) {
        let values: [(&str, &[&str]); 14] = [
            ("class", &["od", "rd", "ai"]),
            ("expver", &["0001", "abcd"]),
            ("stream", &["enfo", "oper", "waef", "scda"]),
            ("date", &["20231201", "20231202"]),
            ("time", &["1200", "0000", "0600"]),
            ("type", &["pf", "cf", "fc", "an", "em"]),
            ("levtype", &["pl", "sfc", "ml", "pt"]),
            ("number", &["13", "1", "x"]),
            ("levelist", &["500", "850", "1"]),
            ("step", &["6", "0", "12", "0-6"]),
            ("param", &["130", "167", "t"]),
            ("domain", &["g", "a"]),
            ("anoffset", &["9"]),
            ("hdate", &["20201201"]),
        ];
        let ecmwf = Schema::ecmwf();
        let mut current: Vec<Option<usize>> =
            vec![Some(0), Some(0), Some(0), Some(0), Some(0), Some(0), Some(0), Some(0),
                 Some(0), Some(0), Some(0), None, None, None];
        for (which, to) in changes {
            let choices = values[which].1;
            // `to` beyond the values: the keyword goes (or comes back).
            current[which] = match (current[which], to) {
                (_, t) if t < choices.len() => Some(t),
                (Some(_), _) => None,
                (None, _) => Some(0),
            };
            let text: Vec<String> = current
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| format!("{}={}", values[i].0, values[i].1[v])))
                .collect();
            if text.is_empty() {
                continue;
            }
            let k = key(&text.join(","));
            let fresh = ecmwf.clone();
            proptest::prop_assert_eq!(
                format!("{:?}", ecmwf.split(&k)),
                format!("{:?}", fresh.split(&k)),
                "{}", k
            );
        }
    }
}
