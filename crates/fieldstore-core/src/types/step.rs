//! `Step`: forecast steps and step ranges.
//!
//! A step is a duration. Whole hours print as a bare number (`6`); other
//! durations as minutes (`30m`) or, below a minute, seconds (`90s`). A step
//! range prints `from-to`, and collapses to `to` when both ends are equal, as
//! FDB5 (metkit's `StepRange`) does: `00` → `0`, `02-12` → `2-12`,
//! `60m` → `1`, `30m-60m` → `30m-1`.

use super::{KeywordType, TypeError};

/// Seconds of one step value (`6`, `06`, `6h`, `30m`, `90s`, `1d`).
pub(crate) fn step_seconds(value: &str) -> Result<i64, TypeError> {
    let bad = |reason: &str| TypeError::new(KeywordType::Step, value, reason);
    let unit_at = value.find(|c: char| !c.is_ascii_digit());
    let (number, unit) = value.split_at(unit_at.unwrap_or(value.len()));
    if number.is_empty() {
        return Err(bad(
            "expected a number of hours, optionally with a unit (30m, 90s)",
        ));
    }
    let n: i64 = number.parse().map_err(|_| bad("step out of range"))?;
    let scale = match unit {
        "" | "h" | "H" => 3600,
        "m" | "M" => 60,
        "s" | "S" => 1,
        "d" | "D" => 86_400,
        _ => return Err(bad("unknown unit: expected s, m, h or d")),
    };
    n.checked_mul(scale).ok_or_else(|| bad("step out of range"))
}

/// The canonical spelling of a duration in seconds.
pub(crate) fn format_step(seconds: i64) -> String {
    if seconds % 3600 == 0 {
        (seconds / 3600).to_string()
    } else if seconds % 60 == 0 {
        format!("{}m", seconds / 60)
    } else {
        format!("{seconds}s")
    }
}

/// A step (`6`, `30m`) or a step range (`0-6`); see the module doc.
///
/// Steps are never negative, as in MARS (a forecast step counts from the
/// base time forwards): `-6` is refused, naming the whole value, rather than
/// read as a range with an empty start.
pub(crate) fn canonical_step(value: &str) -> Result<String, TypeError> {
    let bad = |reason: &str| TypeError::new(KeywordType::Step, value, reason);
    match value.split_once('-') {
        Some(("", _)) => Err(bad(
            "a step cannot be negative (a step range is written from-to, e.g. 0-6)",
        )),
        Some((_, "")) => Err(bad(
            "a step range needs a value after '-' (from-to, e.g. 0-6)",
        )),
        Some((from, to)) => {
            let (a, b) = (step_seconds(from)?, step_seconds(to)?);
            if a > b {
                return Err(bad("a step range must not end before it starts"));
            }
            if a == b {
                Ok(format_step(b))
            } else {
                Ok(format!("{}-{}", format_step(a), format_step(b)))
            }
        }
        None => step_seconds(value).map(format_step),
    }
}
