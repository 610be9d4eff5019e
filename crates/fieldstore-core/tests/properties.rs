//! Property tests: canonicalisation is idempotent; keys and requests
//! round-trip through their printed forms; splitting is stable.

use fieldstore_core::{Item, Key, KeywordType, Request, Schema, Values};
use proptest::prelude::*;

/// Values shaped like what users and GRIB files give, plus noise.
fn value_for(ty: KeywordType) -> BoxedStrategy<String> {
    let noise = "[A-Za-z0-9:.+/-]{1,10}";
    let specific: BoxedStrategy<String> = match ty {
        KeywordType::Date
        | KeywordType::ClimateDaily
        | KeywordType::ClimateMonthly
        | KeywordType::Month
        | KeywordType::MonthOfDate
        | KeywordType::Year
        | KeywordType::YearMonth => prop_oneof![
            (1900i32..2100, 1u32..13, 1u32..29).prop_map(|(y, m, d)| format!("{y:04}{m:02}{d:02}")),
            (1900i32..2100, 1u32..13, 1u32..29)
                .prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}")),
            (-30i32..=0).prop_map(|d| d.to_string()),
            (1u32..13).prop_map(|m| m.to_string()),
            prop::sample::select(vec!["jan", "feb", "dec", "jan-15", "dec-31"])
                .prop_map(String::from),
        ]
        .boxed(),
        KeywordType::Time => prop_oneof![
            (0u32..24).prop_map(|h| h.to_string()),
            (0u32..24, 0u32..60).prop_map(|(h, m)| format!("{h:02}{m:02}")),
            (0u32..24, 0u32..60).prop_map(|(h, m)| format!("{h}:{m:02}")),
        ]
        .boxed(),
        KeywordType::Step => prop_oneof![
            (0u32..400).prop_map(|s| s.to_string()),
            (0u32..400, prop::sample::select(vec!["s", "m", "h", "d"]))
                .prop_map(|(s, u)| format!("{s}{u}")),
            (0u32..100, 0u32..100).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
            (0u32..100, 0u32..100).prop_map(|(a, b)| format!("{}m-{}m", a.min(b), a.max(b))),
        ]
        .boxed(),
        KeywordType::Param | KeywordType::ParamId => prop_oneof![
            (1u32..300_000).prop_map(|p| p.to_string()),
            (1u32..999, 0u32..255).prop_map(|(p, t)| format!("{p}.{t}")),
            "[a-z0-9]{1,5}",
        ]
        .boxed(),
        KeywordType::Integer => any::<i32>().prop_map(|n| format!("{n:03}")).boxed(),
        KeywordType::Double => prop_oneof![
            any::<i32>().prop_map(|n| n.to_string()),
            (any::<i16>(), 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
            any::<f64>()
                .prop_filter("finite", |x| x.is_finite())
                .prop_map(|x| x.to_string()),
        ]
        .boxed(),
        KeywordType::Expver => "[A-Za-z0-9]{1,4}".boxed(),
        _ => noise.boxed(),
    };
    prop_oneof![4 => specific, 1 => noise].boxed()
}

fn type_and_value() -> impl Strategy<Value = (KeywordType, String)> {
    prop::sample::select(KeywordType::ALL.to_vec()).prop_flat_map(|ty| (Just(ty), value_for(ty)))
}

proptest! {
    #[test]
    fn canonical_is_idempotent((ty, v) in type_and_value()) {
        if let Ok(c) = ty.canonical(&v) {
            let again = ty.canonical(&c);
            prop_assert_eq!(again, Ok(c), "{} {:?}", ty, v);
        }
    }

    #[test]
    fn key_round_trips(pairs in prop::collection::btree_map("[a-z][a-z0-9_]{0,8}", "[A-Za-z0-9:.+/-]{0,8}", 0..8)) {
        let key = Key::from_pairs(pairs).unwrap();
        let printed = key.to_string();
        let parsed: Key = printed.parse().unwrap();
        prop_assert_eq!(&parsed, &key);
        prop_assert_eq!(parsed.to_string(), printed);
    }

    /// A key (held as its canonical text) behaves as the list of pairs it
    /// names: the same pairs, lookups, edits, order and equality, whatever
    /// the keywords and values (`a` and `a1` as keywords, empty values).
    #[test]
    fn key_is_its_list_of_pairs(
        pairs in prop::collection::vec(("[a-c][a-c1.]{0,2}", "[a-c0-9!%.-]{0,3}"), 0..6),
        other in prop::collection::vec(("[a-c][a-c1.]{0,2}", "[a-c0-9!%.-]{0,3}"), 0..6),
        edit in ("[a-c][a-c1.]{0,2}", "[a-c0-9]{0,2}"),
    ) {
        fn model(pairs: &[(String, String)]) -> Vec<(String, String)> {
            let mut out: Vec<(String, String)> = Vec::new();
            for (k, v) in pairs {
                if !out.iter().any(|(ok, _)| ok == k) {
                    out.push((k.clone(), v.clone()));
                }
            }
            out
        }
        let (a, b) = (model(&pairs), model(&other));
        let ka = Key::from_pairs(a.clone()).unwrap();
        let kb = Key::from_pairs(b.clone()).unwrap();
        let listed = |k: &Key| k.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        prop_assert_eq!(listed(&ka), a.clone());
        prop_assert_eq!(ka.len(), a.len());
        prop_assert_eq!(ka.is_empty(), a.is_empty());
        prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
        prop_assert_eq!(ka == kb, a == b);
        for (k, v) in &a {
            prop_assert_eq!(ka.get(k), Some(v.as_str()));
        }
        // set, remove, join and without_empty as on the list.
        let (kw, value) = edit;
        prop_assert_eq!(ka.get(&kw), a.iter().find(|(k, _)| *k == kw).map(|(_, v)| v.as_str()));
        let mut set = ka.clone();
        set.set(kw.clone(), value.clone()).unwrap();
        let mut expected = a.clone();
        match expected.iter_mut().find(|(k, _)| *k == kw) {
            Some(e) => e.1 = value.clone(),
            None => expected.push((kw.clone(), value.clone())),
        }
        prop_assert_eq!(listed(&set), expected);
        let mut removed = ka.clone();
        let got = removed.remove(&kw);
        prop_assert_eq!(got, a.iter().find(|(k, _)| *k == kw).map(|(_, v)| v.clone()));
        prop_assert_eq!(listed(&removed), a.iter().filter(|(k, _)| *k != kw).cloned().collect::<Vec<_>>());
        let mut joined = a.clone();
        for (k, v) in &b {
            match joined.iter_mut().find(|(ok, _)| ok == k) {
                Some(e) => e.1 = v.clone(),
                None => joined.push((k.clone(), v.clone())),
            }
        }
        prop_assert_eq!(listed(&Key::join([&ka, &kb])), joined.clone());
        joined.retain(|(_, v)| !v.is_empty());
        prop_assert_eq!(listed(&Key::join_present([&ka, &kb])), joined);
        prop_assert_eq!(
            listed(&ka.without_empty()),
            a.iter().filter(|(_, v)| !v.is_empty()).cloned().collect::<Vec<_>>()
        );
    }

    #[test]
    fn request_print_parse_round_trips(
        entries in prop::collection::btree_map(
            "[a-z][a-z0-9_]{0,8}",
            prop_oneof![
                1 => Just(Values::All),
                5 => prop::collection::vec(prop_oneof![
                    "[A-Za-z0-9:.+-]{1,8}".prop_filter("not a word", |s| !["to", "by", "all"].contains(&s.to_ascii_lowercase().as_str())).prop_map(Item::Value),
                    ("[0-9]{1,4}", "[0-9]{1,4}", prop::option::of("[1-9][0-9]{0,2}"))
                        .prop_map(|(from, to, by)| Item::Range { from, to, by }),
                ], 1..5).prop_map(Values::Items),
            ],
            0..8)
    ) {
        let mut req = Request::new();
        for (k, v) in entries {
            req.insert(&k, v).unwrap();
        }
        let printed = req.to_string();
        let parsed: Request = printed.parse().unwrap();
        prop_assert_eq!(&parsed, &req);
        prop_assert_eq!(parsed.to_string(), printed);
    }

    /// Splitting a split key's full key gives the same split: canonical keys
    /// are fixed points of the schema too.
    #[test]
    fn split_is_stable(
        expver in "[0-9]{1,4}", date in (1950i32..2050, 1u32..13, 1u32..29), time in 0u32..24,
        step in 0u32..240, levelist in prop::option::of(1u32..1000), number in prop::option::of(0u32..51),
        param in 1u32..300,
    ) {
        let schema = Schema::ecmwf();
        let (stream, ty) = if number.is_some() { ("enfo", "pf") } else { ("oper", "fc") };
        let mut s = format!("class=od,expver={expver},stream={stream},date={:04}{:02}{:02},time={time},domain=g,type={ty},step={step},param={param}.128",
            date.0, date.1, date.2);
        match levelist { Some(l) => s += &format!(",levtype=pl,levelist={l}"), None => s += ",levtype=sfc" }
        if let Some(n) = number { s += &format!(",number={n}"); }
        let key: Key = s.parse().unwrap();
        let split = schema.split(&key).unwrap();
        let again = schema.split(&split.full_key()).unwrap();
        prop_assert_eq!(again, split);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every key `expand` yields is where `split` would put it: expansion
    /// (with its shortcut that skips re-matching) and archive agree.
    #[test]
    fn expand_agrees_with_split(
        class in prop::sample::select(vec!["od", "rd", "ea", "e6", "ai"]),
        stream in prop::sample::select(vec!["oper", "enfo", "wave", "scda", "enda", "lwda", "elda"]),
        ty in prop::sample::subsequence(vec!["fc", "an", "pf", "cf", "4v"], 1..3),
        levtype in prop::sample::subsequence(vec!["sfc", "pl", "ml"], 1..3),
        domain in prop::option::of(prop::sample::select(vec!["g", "m"])),
        number in prop::option::of(1u32..4),
    ) {
        let schema = Schema::ecmwf();
        let mut r = format!(
            "class={class},expver=1,stream={stream},date=20231201,time=0/12,type={},levtype={},step=0/6,levelist=500/850,param=130/167,anoffset=9",
            ty.join("/"), levtype.join("/"));
        if let Some(d) = domain { r += &format!(",domain={d}"); }
        if let Some(n) = number { r += &format!(",number=1/to/{n}"); }
        let request: Request = r.parse().unwrap();
        for split in schema.expand(&request).unwrap().take(2000) {
            let again = schema.split(&split.full_key());
            prop_assert_eq!(again.as_ref().ok(), Some(&split), "{} from {}", split.braced(), r);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `RequestOrder` knows the expansion without enumerating it: every key
    /// the expansion yields has a position, positions increase strictly in
    /// the order they are yielded (so sorting by position is request order),
    /// and the upper bound holds.
    #[test]
    fn request_order_agrees_with_expand(
        class in prop::sample::select(vec!["od", "rd", "ea"]),
        stream in prop::sample::select(vec!["oper", "enfo", "wave", "scda"]),
        ty in prop::sample::subsequence(vec!["fc", "an", "pf", "cf"], 1..3),
        levtype in prop::sample::subsequence(vec!["sfc", "pl"], 1..3),
        domain in prop::option::of(prop::sample::select(vec!["g", "m"])),
        steps in prop::sample::select(vec!["0/6", "12/to/0/by/6", "6/0/to/12/by/3", "0"]),
    ) {
        let schema = Schema::ecmwf();
        let mut r = format!(
            "class={class},expver=1,stream={stream},date=20231201,time=0/12,type={},levtype={},step={steps},levelist=500/850,param=130/167,number=1/to/2",
            ty.join("/"), levtype.join("/"));
        if let Some(d) = domain { r += &format!(",domain={d}"); }
        let request: Request = r.parse().unwrap();
        let expansion = schema.expand(&request).unwrap();
        let bound = expansion.size_hint_upper();
        let order = expansion.order();
        let keys: Vec<_> = schema.expand(&request).unwrap().collect();
        prop_assert!(keys.len() as u64 <= bound, "{} keys, bound {}", keys.len(), bound);
        let mut last = None;
        for split in &keys {
            let at = order.position(split);
            prop_assert!(at.is_some(), "{} from {} has no position", split.braced(), r);
            prop_assert!(last < at, "{} from {} out of order", split.braced(), r);
            last = at;
        }
    }
}
