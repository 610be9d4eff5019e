//! Progress bars on standard error, drawn only when it is a terminal (never
//! into logs or pipes) and not `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What a bar counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Unit {
    /// Bytes (retrieve, archive).
    Bytes,
    /// Files (archive of many files).
    Files,
}

/// A bar of `len` units; hidden unless `enabled`.
pub(crate) fn bar(enabled: bool, len: u64, unit: Unit, message: &'static str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let template = match unit {
        Unit::Bytes => {
            "{msg} {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}"
        }
        Unit::Files => "{msg} {wide_bar} {pos}/{len} files, {per_sec} ETA {eta}",
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    // The templates are constants, tested below.
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_message(message);
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_and_disabled_bars_are_hidden() {
        for unit in [Unit::Bytes, Unit::Files] {
            assert!(bar(false, 10, unit, "x").is_hidden());
        }
        assert!(ProgressStyle::with_template(
            "{msg} {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}"
        )
        .is_ok());
        assert!(ProgressStyle::with_template(
            "{msg} {wide_bar} {pos}/{len} files, {per_sec} ETA {eta}"
        )
        .is_ok());
    }
}
