use super::*;

fn c(ty: KeywordType, v: &str) -> String {
    ty.canonical(v).unwrap_or_else(|e| panic!("{ty} {v}: {e}"))
}

#[test]
fn canonical_forms_table() {
    use KeywordType as T;
    let table: &[(KeywordType, &str, &str)] = &[
        (T::Default, "OD", "od"),
        (T::Date, "20231201", "20231201"),
        (T::Date, "2023-12-01", "20231201"),
        (T::Date, "20240229", "20240229"),
        (T::Time, "12", "1200"),
        (T::Time, "6", "0600"),
        (T::Time, "1200", "1200"),
        (T::Time, "123", "0123"),
        (T::Time, "12:00", "1200"),
        (T::Time, "1:23", "0123"),
        (T::Time, "00:18:00", "0018"),
        (T::Time, "0", "0000"),
        (T::Step, "0", "0"),
        (T::Step, "00", "0"),
        (T::Step, "06", "6"),
        (T::Step, "0-6", "0-6"),
        (T::Step, "02-12", "2-12"),
        (T::Step, "60m", "1"),
        (T::Step, "30m", "30m"),
        (T::Step, "30m-60m", "30m-1"),
        (T::Step, "6-6", "6"),
        (T::Step, "90s", "90s"),
        (T::Step, "1d", "24"),
        (T::Param, "167", "167"),
        (T::Param, "167.128", "167"),
        (T::Param, "228.228", "228228"),
        (T::Param, "2T", "2t"),
        (T::Expver, "1", "0001"),
        (T::Expver, "0001", "0001"),
        (T::Expver, "X1AB", "x1ab"),
        (T::Integer, "01", "1"),
        (T::Integer, "-3", "-3"),
        (T::Double, "1000", "1000"),
        (T::Double, "1000.0", "1000"),
        (T::Double, "0.5", "0.5"),
        (T::Double, "0.50", "0.5"),
        (T::Double, "-0", "0"),
        (T::Grid, "0.25/0.25", "0.25+0.25"),
        (T::Ignore, "anything", ""),
        (T::First3, "IFSXYZ", "ifs"),
        (T::ClimateDaily, "20231201", "1201"),
        (T::ClimateDaily, "1201", "1201"),
        (T::ClimateDaily, "dec-01", "1201"),
        (T::ClimateMonthly, "20231201", "12"),
        (T::ClimateMonthly, "3", "3"),
        (T::ClimateMonthly, "mar", "3"),
        (T::Month, "20230301", "3"),
        (T::MonthOfDate, "20230301", "03"),
        (T::Year, "20230301", "2023"),
        (T::YearMonth, "2023-03-01", "202303"),
    ];
    for (ty, input, want) in table {
        assert_eq!(&c(*ty, input), want, "{ty}({input})");
        // Idempotence.
        assert_eq!(&c(*ty, want), want, "{ty}({want}) is not a fixed point");
    }
}

#[test]
fn relative_dates_count_back_from_today() {
    let today = CivilDate::today();
    assert_eq!(c(KeywordType::Date, "0"), today.to_string());
    assert_eq!(
        c(KeywordType::Date, "-1"),
        CivilDate::from_days(today.to_days() - 1).to_string()
    );
}

#[test]
fn bad_values_are_refused_verbatim() {
    use KeywordType as T;
    let table: &[(KeywordType, &str, &str)] = &[
        (T::Date, "20230231", "'20230231' is not a valid Date: no such day in the calendar"),
        (T::Date, "yesterday", "'yesterday' is not a valid Date: expected YYYYMMDD, YYYY-MM-DD, or a relative day such as 0 or -1"),
        (T::Time, "25", "'25' is not a valid Time: hour must be 0..23 and minute 0..59"),
        (T::Time, "12:00:30", "'12:00:30' is not a valid Time: times are kept to the minute; seconds must be 00"),
        (T::Step, "6x", "'6x' is not a valid Step: unknown unit: expected s, m, h or d"),
        (T::Step, "12-6", "'12-6' is not a valid Step: a step range must not end before it starts"),
        (T::Step, "-6", "'-6' is not a valid Step: a step cannot be negative (a step range is written from-to, e.g. 0-6)"),
        (T::Step, "6-", "'6-' is not a valid Step: a step range needs a value after '-' (from-to, e.g. 0-6)"),
        (T::Integer, "1.5", "'1.5' is not a valid Integer: expected an integer"),
        (T::Double, "nan", "'nan' is not a valid Double: expected a finite number"),
        (T::Expver, "00001", "'00001' is not a valid Expver: expected up to 4 letters or digits"),
        (T::ClimateMonthly, "13", "'13' is not a valid ClimateMonthly: month must be 1..12"),
    ];
    for (ty, input, want) in table {
        assert_eq!(ty.canonical(input).unwrap_err().to_string(), *want);
    }
}

#[test]
fn names_round_trip() {
    for ty in KeywordType::ALL {
        assert_eq!(KeywordType::from_name(ty.name()), Some(*ty));
    }
    assert_eq!(
        KeywordType::from_name("ClimateMonth"),
        Some(KeywordType::ClimateMonthly)
    );
    assert_eq!(
        KeywordType::from_name("ParamId"),
        Some(KeywordType::ParamId)
    );
    assert_eq!(KeywordType::from_name("Nope"), None);
}

#[test]
fn all_lists_every_type_once() {
    use KeywordType::*;
    // Exhaustive: a new type does not compile here until it has its place
    // in `ALL` (which `from_name` looks names up in).
    let place = |ty: KeywordType| match ty {
        Default => 0,
        Date => 1,
        Time => 2,
        Step => 3,
        Param => 4,
        ParamId => 5,
        Expver => 6,
        Integer => 7,
        Double => 8,
        Grid => 9,
        Ignore => 10,
        First3 => 11,
        ClimateDaily => 12,
        ClimateMonthly => 13,
        Month => 14,
        MonthOfDate => 15,
        Year => 16,
        YearMonth => 17,
    };
    let places: Vec<usize> = KeywordType::ALL.iter().map(|&ty| place(ty)).collect();
    assert_eq!(places, (0..18).collect::<Vec<_>>());
}

#[test]
fn ranges_are_lazy_and_arithmetic() {
    let r = KeywordType::Step.range("0", "12", Some("6")).unwrap();
    assert_eq!(r.iter().collect::<Vec<_>>(), ["0", "6", "12"]);
    assert!(r.contains("6") && !r.contains("3") && !r.contains("18"));

    let r = KeywordType::Date
        .range("20231230", "20240102", None)
        .unwrap();
    assert_eq!(
        r.iter().collect::<Vec<_>>(),
        ["20231230", "20231231", "20240101", "20240102"]
    );

    let r = KeywordType::Double
        .range("1000", "850", Some("50"))
        .unwrap();
    assert_eq!(r.iter().collect::<Vec<_>>(), ["1000", "950", "900", "850"]);

    let r = KeywordType::Double
        .range("0.5", "1.5", Some("0.25"))
        .unwrap();
    assert_eq!(
        r.iter().collect::<Vec<_>>(),
        ["0.5", "0.75", "1", "1.25", "1.5"]
    );
    assert!(r.contains("0.75") && !r.contains("0.6"));

    let r = KeywordType::Time.range("0000", "1800", Some("6")).unwrap();
    assert_eq!(
        r.iter().collect::<Vec<_>>(),
        ["0000", "0600", "1200", "1800"]
    );

    // Without `by`: MARS's increments.
    let r = KeywordType::Step.range("0", "24", None).unwrap();
    assert_eq!(r.iter().collect::<Vec<_>>(), ["0", "12", "24"]);
    let r = KeywordType::Time.range("0", "18", None).unwrap();
    assert_eq!(
        r.iter().collect::<Vec<_>>(),
        ["0000", "0600", "1200", "1800"]
    );

    // A billion-element range costs nothing until iterated.
    let r = KeywordType::Integer.range("1", "1000000000", None).unwrap();
    assert_eq!(r.len(), 1_000_000_000);
    assert!(r.contains("999999999"));
    // Positions are arithmetic too, in iteration order whatever the direction.
    assert_eq!(r.position("999999999"), Some(999_999_998));
    assert_eq!(r.position("0"), None);
    let r = KeywordType::Double
        .range("1000", "850", Some("50"))
        .unwrap();
    assert_eq!(r.position("1000"), Some(0));
    assert_eq!(r.position("850"), Some(3));
    assert_eq!(r.position("875"), None);

    assert_eq!(
        KeywordType::Grid.range("a", "b", None).unwrap_err().to_string(),
        "'a/to/b' is not a valid Grid: values of type Grid have no order, so they cannot form a range"
    );
    assert_eq!(
        KeywordType::Integer
            .range("1", "5", Some("0"))
            .unwrap_err()
            .to_string(),
        "'0' is not a valid Integer: a range's increment ('by') must not be zero"
    );
}
