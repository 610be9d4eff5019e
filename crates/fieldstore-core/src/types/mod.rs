//! Keyword types: how a keyword's values are canonicalised.
//!
//! Every value that enters a key — from a GRIB message, a user's key, or a
//! request — goes through its keyword's type, so that `time=12`, `time=1200`
//! and `time=12:00` name the same field. The types are FDB5's (§2.5 of the
//! FDB5 report); where fieldstore's canonical form differs from FDB5's, the
//! difference is stated on the type and in `docs/compatibility.md`.
//!
//! # Invariant
//! `canonical` is idempotent: `canonical(canonical(v)) == canonical(v)` for
//! every value it accepts (checked by property tests).

mod date;
mod number;
mod param;
mod range;
mod step;
mod time;

pub use date::CivilDate;
pub use range::ValueRange;

use std::fmt;

/// A value a type does not accept. The schema adds the keyword and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{value}' is not a valid {type_name}: {reason}")]
pub struct TypeError {
    /// The type's schema name (`Date`, `Time`, …).
    pub type_name: &'static str,
    /// The value as given.
    pub value: String,
    /// Why it was refused.
    pub reason: String,
}

impl TypeError {
    pub(crate) fn new(ty: KeywordType, value: &str, reason: impl Into<String>) -> Self {
        TypeError {
            type_name: ty.name(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

/// The type of a keyword, as declared in a schema (`param: Param;`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeywordType {
    /// Lower-cased text.
    Default,
    /// A calendar date, `YYYYMMDD`. Accepts `2023-12-01` and relative days
    /// (`0` today, `-1` yesterday, in UTC).
    Date,
    /// Time of day, `HHMM`. Accepts `12`, `1200`, `12:00`, `12:00:00`.
    Time,
    /// A forecast step or step range: whole hours as a number (`6`), other
    /// durations with a unit (`30m`, `90s`), ranges `from-to` (`0-6`).
    Step,
    /// A parameter as its ECMWF paramId: `167`, `167.128` → `167`,
    /// `228.228` → `228228`. FDB5 keeps `167.128` as written and resolves it
    /// against the stored axis at read time; fieldstore canonicalises on
    /// entry so that both spellings name one field.
    Param,
    /// Like [`KeywordType::Param`] (FDB5's strict variant).
    ParamId,
    /// Experiment version: four characters, left-padded with `0`
    /// (`1` → `0001`). FDB5 rejects `1` on archive; fieldstore pads it.
    Expver,
    /// An integer, printed without leading zeros (`01` → `1`).
    Integer,
    /// A real number; integral values without decimals (`1000.0` → `1000`),
    /// others in their shortest exact form (`0.50` → `0.5`).
    Double,
    /// A grid: `/` becomes `+`.
    Grid,
    /// Accepted and discarded: always the empty value.
    Ignore,
    /// The first three characters (`First3`).
    First3,
    /// Month and day, `MMDD`, from a date, `MMDD`, or `mon-dd` (`dec-01`).
    ClimateDaily,
    /// Month number `1`..`12`, from a date, a number, or a month name.
    ClimateMonthly,
    /// Month of a date, `1`..`12`.
    Month,
    /// Month of a date, `01`..`12`.
    MonthOfDate,
    /// Year of a date, `YYYY`.
    Year,
    /// Year and month of a date, `YYYYMM`.
    YearMonth,
}

impl KeywordType {
    /// Every type, for tests and documentation, and the table
    /// [`KeywordType::from_name`] looks names up in.
    pub const ALL: &'static [KeywordType] = &[
        KeywordType::Default,
        KeywordType::Date,
        KeywordType::Time,
        KeywordType::Step,
        KeywordType::Param,
        KeywordType::ParamId,
        KeywordType::Expver,
        KeywordType::Integer,
        KeywordType::Double,
        KeywordType::Grid,
        KeywordType::Ignore,
        KeywordType::First3,
        KeywordType::ClimateDaily,
        KeywordType::ClimateMonthly,
        KeywordType::Month,
        KeywordType::MonthOfDate,
        KeywordType::Year,
        KeywordType::YearMonth,
    ];

    /// The type named `name` in a schema (`Date`, `ClimateDaily`, …).
    /// `ClimateMonth` is accepted as an alias of `ClimateMonthly` (the ECMWF
    /// schema's comments use it).
    pub fn from_name(name: &str) -> Option<KeywordType> {
        let name = match name {
            "ParamId" => "ParamID",
            "ClimateMonth" => "ClimateMonthly",
            name => name,
        };
        KeywordType::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// The schema name of the type.
    pub fn name(self) -> &'static str {
        match self {
            KeywordType::Default => "Default",
            KeywordType::Date => "Date",
            KeywordType::Time => "Time",
            KeywordType::Step => "Step",
            KeywordType::Param => "Param",
            KeywordType::ParamId => "ParamID",
            KeywordType::Expver => "Expver",
            KeywordType::Integer => "Integer",
            KeywordType::Double => "Double",
            KeywordType::Grid => "Grid",
            KeywordType::Ignore => "Ignore",
            KeywordType::First3 => "First3",
            KeywordType::ClimateDaily => "ClimateDaily",
            KeywordType::ClimateMonthly => "ClimateMonthly",
            KeywordType::Month => "Month",
            KeywordType::MonthOfDate => "MonthOfDate",
            KeywordType::Year => "Year",
            KeywordType::YearMonth => "YearMonth",
        }
    }

    /// The canonical form of `value`, as stored in keys.
    ///
    /// The empty value is canonical for every type (it stands for an absent
    /// optional keyword).
    ///
    /// # Errors
    /// A [`TypeError`] naming the value and the reason.
    pub fn canonical(self, value: &str) -> Result<String, TypeError> {
        let value = value.trim();
        if value.is_empty() {
            return Ok(String::new());
        }
        match self {
            KeywordType::Default => Ok(value.to_ascii_lowercase()),
            KeywordType::Date => date::canonical_date(value).map(|d| d.to_string()),
            KeywordType::Time => time::canonical_time(value),
            KeywordType::Step => step::canonical_step(value),
            KeywordType::Param | KeywordType::ParamId => param::canonical_param(self, value),
            KeywordType::Expver => canonical_expver(value),
            KeywordType::Integer => number::canonical_integer(value),
            KeywordType::Double => number::canonical_double(value),
            KeywordType::Grid => Ok(value.replace('/', "+").to_ascii_lowercase()),
            KeywordType::Ignore => Ok(String::new()),
            KeywordType::First3 => Ok(value
                .chars()
                .take(3)
                .collect::<String>()
                .to_ascii_lowercase()),
            KeywordType::ClimateDaily => date::canonical_climate_daily(value),
            KeywordType::ClimateMonthly => date::canonical_climate_monthly(value),
            KeywordType::Month => date::month_of(self, value).map(|m| m.to_string()),
            KeywordType::MonthOfDate => date::month_of(self, value).map(|m| format!("{m:02}")),
            KeywordType::Year => date::canonical_year(value),
            KeywordType::YearMonth => date::canonical_year_month(value),
        }
    }

    /// A request range `from/to/to[/by/by]` over this type.
    ///
    /// # Errors
    /// A [`TypeError`] if the type has no order (text, params) or a bound is
    /// not a value of the type, or the increment is zero.
    pub fn range(self, from: &str, to: &str, by: Option<&str>) -> Result<ValueRange, TypeError> {
        ValueRange::new(self, from, to, by)
    }
}

impl fmt::Display for KeywordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn canonical_expver(value: &str) -> Result<String, TypeError> {
    if value.len() > 4 || !value.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(TypeError::new(
            KeywordType::Expver,
            value,
            "expected up to 4 letters or digits",
        ));
    }
    Ok(format!("{:0>4}", value.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests;
