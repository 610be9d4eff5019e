//! Request ranges (`from/to/to/by/by`) over ordered types, kept lazy.
//!
//! A range is held as three integers in the type's unit (days for dates,
//! seconds for steps, minutes for times, scaled units for decimals), so that
//! membership is arithmetic and iteration never materialises the values.

use super::{date, number, step, time, KeywordType, TypeError};

/// `step=0/to/24` means `0/12/24`, as in MARS (and so in FDB5).
const DEFAULT_STEP_BY_SECONDS: i64 = 12 * 3600;
/// `time=0000/to/1800` means `0000/0600/1200/1800`, as in MARS.
const DEFAULT_TIME_BY_MINUTES: i64 = 6 * 60;

/// A lazily expanded range of canonical values. Without `by`, the
/// increment is MARS's: 12 hours for steps, 6 hours for times, one day for
/// dates, one for numbers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ValueRange {
    ty: KeywordType,
    unit: Unit,
    from: i64,
    to: i64,
    /// Always positive; the direction is from `from` towards `to`.
    by: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Unit {
    Integer,
    /// Decimal numbers scaled by 10^n.
    Scaled(u32),
    Days,
    Seconds,
    Minutes,
}

fn decimals(s: &str) -> Option<u32> {
    if s.contains(['e', 'E']) {
        return None;
    }
    Some(s.split_once('.').map_or(0, |(_, frac)| frac.len() as u32))
}

impl ValueRange {
    pub(crate) fn new(
        ty: KeywordType,
        from: &str,
        to: &str,
        by: Option<&str>,
    ) -> Result<Self, TypeError> {
        let unordered = || {
            TypeError::new(
                ty,
                &format!("{from}/to/{to}"),
                format!("values of type {ty} have no order, so they cannot form a range"),
            )
        };
        let (unit, a, b, step) = match ty {
            KeywordType::Date => {
                let a = date::canonical_date(from)?.to_days();
                let b = date::canonical_date(to)?.to_days();
                let s = by.map_or(Ok(1), |by| number::parse_integer(ty, by))?;
                (Unit::Days, a, b, s)
            }
            KeywordType::Step => {
                let a = step::step_seconds(from)?;
                let b = step::step_seconds(to)?;
                // MARS's default increment for steps (metkit).
                let s = by.map_or(Ok(DEFAULT_STEP_BY_SECONDS), step::step_seconds)?;
                (Unit::Seconds, a, b, s)
            }
            KeywordType::Time => {
                let a = i64::from(time::minutes_of_day(from)?);
                let b = i64::from(time::minutes_of_day(to)?);
                let s = match by {
                    // `by/6` means six hours; `by/0030` or `by/00:30` is a time.
                    Some(by) if by.len() <= 2 => number::parse_integer(ty, by)? * 60,
                    Some(by) => i64::from(time::minutes_of_day(by)?),
                    // MARS's default increment for times (metkit).
                    None => DEFAULT_TIME_BY_MINUTES,
                };
                (Unit::Minutes, a, b, s)
            }
            KeywordType::Double => {
                let n = [Some(from), Some(to), by]
                    .into_iter()
                    .flatten()
                    .map(decimals)
                    .try_fold(0u32, |acc, d| d.map(|d| acc.max(d)))
                    .filter(|n| *n <= 9)
                    .ok_or_else(|| {
                        TypeError::new(
                            ty,
                            from,
                            "range bounds must be plain decimals with at most 9 decimals",
                        )
                    })?;
                let scale = 10f64.powi(n as i32);
                let scaled = |s: &str| number::parse_double(s).map(|x| (x * scale).round() as i64);
                let s = by.map_or(Ok(scale as i64), scaled)?;
                (Unit::Scaled(n), scaled(from)?, scaled(to)?, s)
            }
            KeywordType::Integer
            | KeywordType::Default
            | KeywordType::Param
            | KeywordType::ParamId => {
                let parse = |s: &str| s.parse::<i64>().map_err(|_| unordered());
                let s = by.map_or(Ok(1), |by| number::parse_integer(ty, by))?;
                (Unit::Integer, parse(from)?, parse(to)?, s)
            }
            _ => return Err(unordered()),
        };
        if step == 0 {
            return Err(TypeError::new(
                ty,
                by.unwrap_or("0"),
                "a range's increment ('by') must not be zero",
            ));
        }
        Ok(ValueRange {
            ty,
            unit,
            from: a,
            to: b,
            by: step.abs(),
        })
    }

    /// Number of values in the range.
    pub fn len(&self) -> u64 {
        (self.to - self.from).unsigned_abs() / self.by as u64 + 1
    }

    /// Always false: a range holds at least its first value.
    pub fn is_empty(&self) -> bool {
        false
    }

    fn format(&self, v: i64) -> String {
        match self.unit {
            Unit::Integer => v.to_string(),
            Unit::Scaled(0) => v.to_string(),
            Unit::Scaled(n) => number::format_double(v as f64 / 10f64.powi(n as i32)),
            Unit::Days => date::CivilDate::from_days(v).to_string(),
            Unit::Seconds => step::format_step(v),
            Unit::Minutes => time::format_minutes_of_day(v.rem_euclid(24 * 60) as u32),
        }
    }

    fn unit_value(&self, canonical: &str) -> Option<i64> {
        match self.unit {
            Unit::Integer => canonical.parse().ok(),
            Unit::Scaled(n) => number::parse_double(canonical)
                .ok()
                .map(|x| (x * 10f64.powi(n as i32)).round() as i64),
            Unit::Days => date::canonical_date(canonical).ok().map(|d| d.to_days()),
            Unit::Seconds => step::step_seconds(canonical).ok(),
            Unit::Minutes => time::minutes_of_day(canonical).ok().map(i64::from),
        }
    }

    /// Whether the canonical value `canonical` is one of the range's values.
    pub fn contains(&self, canonical: &str) -> bool {
        let Some(v) = self.unit_value(canonical) else {
            return false;
        };
        let (lo, hi) = (self.from.min(self.to), self.from.max(self.to));
        // Canonical forms must agree too: `0.50` is not canonical and is not
        // a member even though its number is.
        v >= lo && v <= hi && (v - self.from) % self.by == 0 && self.format(v) == canonical
    }

    /// Where the canonical value `canonical` comes in [`ValueRange::iter`]
    /// (0 for `from`), or `None` if it is not one of the range's values.
    /// Arithmetic: the range is not expanded.
    pub fn position(&self, canonical: &str) -> Option<u64> {
        if !self.contains(canonical) {
            return None;
        }
        let v = self.unit_value(canonical)?;
        Some((v - self.from).unsigned_abs() / self.by as u64)
    }

    /// The values, in order from `from` towards `to`, in canonical form.
    pub fn iter(&self) -> impl Iterator<Item = String> + '_ {
        let dir = if self.from <= self.to { 1 } else { -1 };
        (0..self.len()).map(move |i| self.format(self.from + dir * self.by * i as i64))
    }

    /// The request spelling: `from/to/to/by/by`.
    pub fn to_request_string(&self) -> String {
        let by = match self.unit {
            Unit::Integer | Unit::Days => self.by.to_string(),
            Unit::Scaled(n) => number::format_double(self.by as f64 / 10f64.powi(n as i32)),
            Unit::Seconds => step::format_step(self.by),
            Unit::Minutes if self.by % 60 == 0 => (self.by / 60).to_string(),
            Unit::Minutes => format!("{:02}:{:02}", self.by / 60, self.by % 60),
        };
        let (from, to) = (self.format(self.from), self.format(self.to));
        format!("{from}/to/{to}/by/{by}")
    }
}
