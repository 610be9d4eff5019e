//! Time of day (`Time`): canonical `HHMM`.

use super::{KeywordType, TypeError};

/// Minutes after midnight of a time value (`6`, `12`, `1200`, `123`, `12:00`,
/// `00:18:00`, `120000`).
pub(crate) fn minutes_of_day(value: &str) -> Result<u32, TypeError> {
    let bad = |reason: &str| TypeError::new(KeywordType::Time, value, reason);
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    let num = |s: &str| s.parse::<u32>().map_err(|_| bad("not a number"));
    let (h, m, s) = if value.contains(':') {
        let parts: Vec<&str> = value.split(':').collect();
        if !(2..=3).contains(&parts.len()) || !parts.iter().all(|p| digits(p)) {
            return Err(bad("expected HH:MM or HH:MM:SS"));
        }
        (
            num(parts[0])?,
            num(parts[1])?,
            if parts.len() == 3 { num(parts[2])? } else { 0 },
        )
    } else if value.bytes().all(|b| b.is_ascii_digit()) {
        match value.len() {
            1 | 2 => (num(value)?, 0, 0),
            3 | 4 => num(value).map(|n| (n / 100, n % 100, 0))?,
            6 => num(value).map(|n| (n / 10_000, n / 100 % 100, n % 100))?,
            _ => return Err(bad("expected H, HH, HHMM, HHMMSS or HH:MM")),
        }
    } else {
        return Err(bad("expected H, HH, HHMM, HHMMSS or HH:MM"));
    };
    if h > 23 || m > 59 {
        return Err(bad("hour must be 0..23 and minute 0..59"));
    }
    if s != 0 {
        return Err(bad("times are kept to the minute; seconds must be 00"));
    }
    Ok(h * 60 + m)
}

pub(crate) fn format_minutes_of_day(minutes: u32) -> String {
    format!("{:02}{:02}", minutes / 60, minutes % 60)
}

pub(crate) fn canonical_time(value: &str) -> Result<String, TypeError> {
    minutes_of_day(value).map(format_minutes_of_day)
}
