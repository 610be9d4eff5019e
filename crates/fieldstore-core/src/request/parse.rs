//! The request parser.

use super::{Item, Request, RequestError, Values};

fn syntax(position: usize, message: impl Into<String>) -> RequestError {
    RequestError::Syntax {
        position,
        message: message.into(),
    }
}

/// Parse the values of one keyword; `offset` is where `text` starts in the
/// whole request, for error positions.
pub(super) fn parse_values(
    keyword: &str,
    text: &str,
    offset: usize,
) -> Result<Values, RequestError> {
    if text.trim().eq_ignore_ascii_case("all") {
        return Ok(Values::All);
    }
    let mut tokens = Vec::new();
    let mut pos = offset;
    for raw in text.split('/') {
        let token = raw.trim();
        if token.is_empty() {
            return Err(syntax(pos, format!("empty value for keyword '{keyword}'")));
        }
        if let Some(c) = token
            .chars()
            .find(|c| matches!(c, '=' | '{' | '}') || c.is_control() || c.is_whitespace())
        {
            return Err(syntax(
                pos,
                format!("invalid character '{c}' in value '{token}' of keyword '{keyword}'"),
            ));
        }
        tokens.push((pos, token));
        pos += raw.len() + 1;
    }
    let mut items: Vec<Item> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let (pos, token) = tokens[i];
        // The words, in any case (compared in place: a request is parsed
        // for every extraction request a client makes).
        let word = ["to", "by", "all"]
            .into_iter()
            .find(|w| token.eq_ignore_ascii_case(w));
        match word.unwrap_or("") {
            "to" => {
                let Some(Item::Value(from)) = items.pop() else {
                    return Err(syntax(
                        pos,
                        format!("'to' in keyword '{keyword}' needs a value before it"),
                    ));
                };
                let Some(&(_, to)) = tokens.get(i + 1).filter(|(_, t)| !is_word(t)) else {
                    return Err(syntax(
                        pos,
                        format!("'to' in keyword '{keyword}' needs a value after it"),
                    ));
                };
                i += 2;
                let mut by = None;
                if let Some(&(bpos, t)) = tokens.get(i) {
                    if t.eq_ignore_ascii_case("by") {
                        let Some(&(_, b)) = tokens.get(i + 1).filter(|(_, t)| !is_word(t)) else {
                            return Err(syntax(
                                bpos,
                                format!("'by' in keyword '{keyword}' needs a value after it"),
                            ));
                        };
                        by = Some(b.to_string());
                        i += 2;
                    }
                }
                items.push(Item::Range {
                    from,
                    to: to.to_string(),
                    by,
                });
            }
            "by" => {
                return Err(syntax(
                    pos,
                    format!("'by' in keyword '{keyword}' must follow a 'from/to/to' range"),
                ))
            }
            "all" => {
                return Err(syntax(
                    pos,
                    format!("'all' cannot be combined with other values of keyword '{keyword}'"),
                ))
            }
            _ => {
                items.push(Item::Value(token.to_string()));
                i += 1;
            }
        }
    }
    Ok(Values::Items(items))
}

/// The MARS verbs a request may start with (`retrieve,class=od,...`), in
/// any case. The verb is accepted and ignored: what is done with a request is
/// the command's business. Only these words may lead: any other bare word is
/// a mistake (`list foo` must not list everything).
pub(super) const VERBS: [&str; 7] = [
    "archive", "retrieve", "list", "read", "write", "compute", "stage",
];

fn is_word(t: &str) -> bool {
    t.eq_ignore_ascii_case("to") || t.eq_ignore_ascii_case("by")
}

pub(super) fn parse_request(s: &str) -> Result<Request, RequestError> {
    let mut req = Request::new();
    if s.trim().is_empty() {
        return Ok(req);
    }
    let mut pos = 0;
    for (n, raw) in s.split(',').enumerate() {
        let item = raw.trim();
        let lead = raw.len() - raw.trim_start().len();
        match item.split_once('=') {
            Some((k, v)) => {
                let k = k.trim();
                // Validity does not depend on case (ASCII letters, digits,
                // `_`, `.`): checked before `insert` lower-cases it.
                if !crate::key::is_valid_keyword(k) {
                    return Err(syntax(pos + lead, format!("invalid keyword '{k}'")));
                }
                let voff = pos + raw.find('=').map_or(0, |i| i + 1);
                let values = parse_values(k, v, voff)?;
                req.insert(k, values)?;
            }
            // MARS requests may start with a verb (`retrieve,class=od,...`),
            // which must be followed by items: a verb alone names nothing,
            // and taking it for "everything" would let `purge list` purge
            // every dataset.
            None if n == 0 && VERBS.iter().any(|v| v.eq_ignore_ascii_case(item)) => {
                if !s[raw.len()..].contains('=') {
                    return Err(syntax(
                        pos + lead,
                        format!(
                            "the MARS verb '{item}' must be followed by keyword=value items \
                             (leave the request out to mean everything)"
                        ),
                    ));
                }
            }
            None if n == 0 && !item.is_empty() && item.bytes().all(|b| b.is_ascii_alphabetic()) => {
                return Err(syntax(
                    pos + lead,
                    format!(
                        "'{item}' is neither keyword=value nor a MARS verb ({})",
                        VERBS.join(", ")
                    ),
                ))
            }
            None if item.is_empty() => {
                return Err(syntax(pos + lead, "empty item (two commas in a row?)"))
            }
            None => {
                return Err(syntax(
                    pos + lead,
                    format!("expected keyword=value, found '{item}'"),
                ))
            }
        }
        pos += raw.len() + 1;
    }
    Ok(req)
}
