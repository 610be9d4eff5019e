//! Calendar dates and the date-derived types (Date, ClimateDaily,
//! ClimateMonthly, Month, MonthOfDate, Year, YearMonth).

use std::fmt;

use super::{KeywordType, TypeError};

/// A proleptic Gregorian calendar date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CivilDate {
    /// Year, e.g. 2023.
    pub year: i32,
    /// Month 1..=12.
    pub month: u32,
    /// Day 1..=31.
    pub day: u32,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

fn is_leap(year: i32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

impl CivilDate {
    /// A date if `year-month-day` exists in the calendar.
    pub fn new(year: i32, month: u32, day: u32) -> Option<CivilDate> {
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        Some(CivilDate { year, month, day })
    }

    /// Days since 1970-01-01 (negative before).
    pub fn to_days(self) -> i64 {
        // Shift the year to start in March so the leap day is last.
        let y = i64::from(self.year) - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` days after 1970-01-01.
    pub fn from_days(days: i64) -> CivilDate {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        CivilDate { year, month, day }
    }

    /// Today's date in UTC, from the system clock.
    pub fn today() -> CivilDate {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        CivilDate::from_days(secs.div_euclid(86_400))
    }
}

impl fmt::Display for CivilDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}{:02}{:02}", self.year, self.month, self.day)
    }
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Parse a date: `YYYYMMDD`, `YYYY-MM-DD`, or relative days `0`, `-1`, ….
pub(crate) fn canonical_date(value: &str) -> Result<CivilDate, TypeError> {
    let bad = |reason: &str| TypeError::new(KeywordType::Date, value, reason);
    if value == "0" || (value.starts_with('-') && all_digits(&value[1..])) {
        let offset: i64 = value
            .parse()
            .map_err(|_| bad("relative day out of range"))?;
        return Ok(CivilDate::from_days(CivilDate::today().to_days() + offset));
    }
    let parts = if value.len() == 8 && all_digits(value) {
        Some((&value[0..4], &value[4..6], &value[6..8]))
    } else if value.len() == 10 && value.as_bytes()[4] == b'-' && value.as_bytes()[7] == b'-' {
        Some((&value[0..4], &value[5..7], &value[8..10]))
    } else {
        None
    };
    let digits = |(y, m, d): &(&str, &str, &str)| all_digits(y) && all_digits(m) && all_digits(d);
    let Some((y, m, d)) = parts.filter(digits) else {
        return Err(bad(
            "expected YYYYMMDD, YYYY-MM-DD, or a relative day such as 0 or -1",
        ));
    };
    let parse = |s: &str| s.parse::<u32>().map_err(|_| bad("not a number"));
    let year = parse(y)? as i32;
    CivilDate::new(year, parse(m)?, parse(d)?).ok_or_else(|| bad("no such day in the calendar"))
}

fn month_from_name(s: &str) -> Option<u32> {
    let lower = s.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| *m == lower)
        .map(|i| i as u32 + 1)
}

/// `MMDD` from a date, `MMDD`, or `mon-dd`.
pub(crate) fn canonical_climate_daily(value: &str) -> Result<String, TypeError> {
    let bad = |reason: &str| TypeError::new(KeywordType::ClimateDaily, value, reason);
    let (month, day) = if value.len() == 4 && all_digits(value) {
        let m: u32 = value[..2].parse().map_err(|_| bad("not a number"))?;
        let d: u32 = value[2..].parse().map_err(|_| bad("not a number"))?;
        (m, d)
    } else if let Some((mon, d)) = value.split_once('-').filter(|(m, _)| m.len() == 3) {
        let m = month_from_name(mon).ok_or_else(|| bad("unknown month name"))?;
        let d: u32 = d.parse().map_err(|_| bad("expected mon-dd"))?;
        (m, d)
    } else {
        let date = canonical_date(value).map_err(|_| bad("expected a date, MMDD, or mon-dd"))?;
        (date.month, date.day)
    };
    // 2000 is a leap year, so 0229 is accepted.
    CivilDate::new(2000, month, day).ok_or_else(|| bad("no such day of the year"))?;
    Ok(format!("{month:02}{day:02}"))
}

/// Month number from a month number, a month name, or a date.
pub(crate) fn canonical_climate_monthly(value: &str) -> Result<String, TypeError> {
    let bad = |reason: &str| TypeError::new(KeywordType::ClimateMonthly, value, reason);
    if all_digits(value) && value.len() <= 2 {
        return month_of(KeywordType::ClimateMonthly, value).map(|m| m.to_string());
    }
    if let Some(m) = month_from_name(value) {
        return Ok(m.to_string());
    }
    canonical_date(value)
        .map(|d| d.month.to_string())
        .map_err(|_| bad("expected a month 1..12, a month name, or a date"))
}

/// A month number from a date or from a month number itself (so that the
/// canonical form is a fixed point).
pub(crate) fn month_of(ty: KeywordType, value: &str) -> Result<u32, TypeError> {
    if all_digits(value) && value.len() <= 2 {
        return match value.parse::<u32>() {
            Ok(m) if (1..=12).contains(&m) => Ok(m),
            _ => Err(TypeError::new(ty, value, "month must be 1..12")),
        };
    }
    canonical_date(value)
        .map(|d| d.month)
        .map_err(|_| TypeError::new(ty, value, "expected a date or a month 1..12"))
}

/// `YYYYMM` from a date or `YYYYMM` itself.
pub(crate) fn canonical_year_month(value: &str) -> Result<String, TypeError> {
    let month = |m: &str| m.parse::<u32>().is_ok_and(|m| (1..=12).contains(&m));
    if value.len() == 6 && all_digits(value) && month(&value[4..]) {
        return Ok(value.to_string());
    }
    canonical_date(value)
        .map(|d| format!("{:04}{:02}", d.year, d.month))
        .map_err(|_| TypeError::new(KeywordType::YearMonth, value, "expected a date or YYYYMM"))
}

/// `YYYY` from a year or a date.
pub(crate) fn canonical_year(value: &str) -> Result<String, TypeError> {
    if value.len() == 4 && all_digits(value) {
        return Ok(value.to_string());
    }
    canonical_date(value)
        .map(|d| format!("{:04}", d.year))
        .map_err(|_| TypeError::new(KeywordType::Year, value, "expected a year or a date"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_round_trip() {
        for days in [-800_000_i64, -1, 0, 1, 11_016, 19_692, 2_932_896] {
            assert_eq!(CivilDate::from_days(days).to_days(), days);
        }
        assert_eq!(CivilDate::new(1970, 1, 1).map(CivilDate::to_days), Some(0));
        assert_eq!(
            CivilDate::new(2000, 3, 1).map(CivilDate::to_days),
            Some(11_017)
        );
        assert_eq!(CivilDate::new(2023, 2, 29), None);
        assert!(CivilDate::new(2024, 2, 29).is_some());
    }
}
