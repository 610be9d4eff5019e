//! Clauses 1 and 9: keys are canonicalised; bad input is rejected and
//! harms nothing.

use fieldstore::{ErrorKind, Level};

use super::{expect_exactly, opened};
use crate::support::{archive_payload, key, list, must, request, retrieve_one, Stored};
use crate::Open;

/// Clause 1: keys are canonicalised by type. A field archived as
/// `time=12,step=06,param=130.128,levelist=500.0` is the field
/// `time=1200,step=6,param=130,levelist=500`: retrieve finds it under
/// either spelling, list shows the canonical one, and archiving it again
/// under a third spelling (`time=12:00`) replaces it.
pub fn keys_are_canonicalised(open: Open<'_>) {
    let x = "can1";
    let fs = opened(open, "writer");
    let spelled = key(&format!(
        "class=OD,expver={x},stream=enfo,date=2023-12-01,time=12,type=pf,levtype=pl,step=06,number=01,levelist=500.0,param=130.128"
    ));
    let canonical = key(&format!(
        "class=od,expver={x},stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,step=6,number=1,levelist=500,param=130"
    ));
    let first = archive_payload(&fs, &spelled, 1, 100, 1000);
    assert_eq!(
        first.canonical,
        canonical.to_string(),
        "the schema's canonical form of {spelled}"
    );
    must(fs.flush(), "flush");
    let reader = opened(open, "reader");
    for k in [&spelled, &canonical] {
        let got = retrieve_one(&reader, k).unwrap_or_else(|| panic!("retrieve {k} found nothing"));
        assert!(got == first.data, "retrieve {k}: wrong bytes");
    }
    let req = request(&format!("class=od,expver={x}"));
    let lines: Vec<String> = list(&reader, &req, Level::Element, true)
        .iter()
        .map(|e| e.full_key().to_string())
        .collect();
    assert_eq!(lines, [canonical.to_string()], "list {req} with duplicates");

    let third = key(&format!(
        "class=od,expver={x},stream=enfo,date=20231201,time=12:00,type=pf,levtype=pl,step=6,number=1,levelist=500,param=130"
    ));
    let second = archive_payload(&fs, &third, 2, 100, 1000);
    must(fs.flush(), "flush of the replacement");
    let got = retrieve_one(&reader, &canonical)
        .unwrap_or_else(|| panic!("retrieve {canonical} found nothing"));
    assert!(
        got == second.data,
        "archiving {third} did not replace the field archived as {spelled}"
    );
    let dedup = list(&reader, &req, Level::Element, false);
    assert_eq!(
        dedup.len(),
        1,
        "list {req}: one field under three spellings, got {dedup:?}"
    );
    let dups = list(&reader, &req, Level::Element, true);
    assert_eq!(
        dups.len(),
        2,
        "list {req} with duplicates: the field and its replacement, got {dups:?}"
    );
}

/// Clauses 1 and 9: a key with an unknown keyword, a missing required
/// keyword, an invalid value, or matching no rule is rejected with
/// `InvalidInput` naming the keyword and the rule, as are malformed requests to
/// retrieve, list and axes; the handle stays usable and nothing already
/// stored is harmed.
pub fn bad_input_rejected(open: Open<'_>) {
    let x = "bad1";
    let fs = opened(open, "writer");
    let good_key = |extra: &str| {
        key(&format!(
            "class=od,expver={x},stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,number=1,levelist=500,param=130{extra}"
        ))
    };
    let kept = archive_payload(&fs, &good_key(",step=0"), 1, 100, 1000);
    must(fs.flush(), "flush");
    let pending = archive_payload(&fs, &good_key(",step=6"), 1, 100, 1000);

    let bad_keys = [
        (
            good_key(",step=12,colour=red"),
            "colour",
            "an unknown keyword",
        ),
        (good_key(""), "step", "a missing required keyword"),
        (
            good_key(",step=soon"),
            "step",
            "a value the keyword's type refuses",
        ),
        (
            key(&format!(
                "expver={x},stream=enfo,date=20231201,time=1200,type=pf,levtype=pl,step=0,param=130"
            )),
            "class",
            "a key that matches no rule (no class)",
        ),
    ];
    let data = crate::payload::make("bad", 1, 100);
    for (k, keyword, what) in &bad_keys {
        match fs.archive(k, &data) {
            Ok(()) => panic!("archive of {k} ({what}) succeeded, want an InvalidInput error"),
            Err(e) => {
                assert_eq!(
                    e.kind(),
                    ErrorKind::InvalidInput,
                    "archive of {k} ({what}): {e}"
                );
                let msg = e.to_string();
                assert!(
                    msg.contains(&format!("'{keyword}'")) && msg.contains("rule"),
                    "archive of {k} ({what}): the error does not name the keyword '{keyword}' \
                     and the rule: {e}"
                );
            }
        }
    }
    let bad_requests = [
        (format!("class=od,expver={x},colour=red"), "colour"),
        (format!("class=od,expver={x},step=soon"), "step"),
    ];
    for (text, keyword) in &bad_requests {
        let req = request(text);
        let errors = [
            ("retrieve", fs.retrieve(&req).err()),
            (
                "list",
                fs.list(&req, fieldstore::ListOptions::default()).err(),
            ),
            ("axes", fs.axes(&req, Level::Element).err()),
        ];
        for (op, e) in errors {
            let e =
                e.unwrap_or_else(|| panic!("{op} {text} succeeded, want an InvalidInput error"));
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{op} {text}: {e}");
            assert!(
                e.to_string().contains(keyword),
                "{op} {text}: the error does not name '{keyword}': {e}"
            );
        }
    }
    must(fs.flush(), "flush after the rejected archives");
    let reader = opened(open, "reader");
    let both: Vec<&Stored> = vec![&kept, &pending];
    expect_exactly(&reader, x, &both, &[], "after rejected keys and requests");
}
