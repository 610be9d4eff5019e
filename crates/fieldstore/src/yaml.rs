//! YAML inputs (configs, server configs), refused in time linear in their
//! size when they are too large or nested too deep, before the parser sees
//! them: 400 kB of `[` would otherwise cost the parser time and stack out
//! of all proportion to what a config is.
//!
//! Every YAML text fieldstore reads goes through [`parse_yaml`] or
//! [`parse_yaml_as`] (re-exported by [`crate::config`]).

use fieldstore_core::{Error, ErrorKind, Result};
use serde::de::DeserializeOwned;

/// The largest YAML input taken, in bytes: the limit on configuration
/// files (a config of thousands of roots is some hundred kilobytes), for
/// texts that come from elsewhere (Python, the C API's strings).
pub const YAML_MAX_BYTES: usize = crate::text_file::TEXT_FILE_LIMIT as usize;

/// The deepest nesting taken: block levels (indentation, `- ` items) and
/// flow levels (`[`, `{`) together. FDB5's configs nest about 6 deep.
pub const YAML_MAX_DEPTH: usize = 64;

/// Parse YAML `text` into a value, after [`check_yaml`]; `source` (a path,
/// or what the text is) names it in messages.
///
/// # Errors
/// `InvalidConfig` naming `source` and the limit exceeded, or the parser's
/// message.
pub fn parse_yaml(text: &str, source: &str) -> Result<serde_yaml_ng::Value> {
    parse_yaml_as(text, source)
}

/// Parse YAML `text` into `T`, after [`check_yaml`]; serde's messages keep
/// their positions (`spaces[0].roots[1]: unknown field …, at line 4`).
///
/// # Errors
/// As [`parse_yaml`].
pub fn parse_yaml_as<T: DeserializeOwned>(text: &str, source: &str) -> Result<T> {
    check_yaml(text, source)?;
    serde_yaml_ng::from_str(text).map_err(|e| invalid(source, e))
}

/// Refuse `text` if it is larger than [`YAML_MAX_BYTES`] or nested deeper
/// than [`YAML_MAX_DEPTH`]. One pass over the bytes, no allocation beyond
/// the stack of indentation widths (at most the limit). Conservative in
/// what it counts: brackets inside plain scalars count as nesting (YAML
/// would take `a[b` as text; no config has them), brackets in quotes,
/// comments and block scalars (`|`, `>`) do not.
///
/// # Errors
/// `InvalidConfig` naming `source`, the limit and where it was passed.
pub fn check_yaml(text: &str, source: &str) -> Result<()> {
    if text.len() > YAML_MAX_BYTES {
        return Err(invalid(
            source,
            format!(
                "{} bytes of YAML: more than the {YAML_MAX_BYTES} a config may have; refused unread",
                text.len()
            ),
        ));
    }
    let mut scan = Scan::default();
    for (n, line) in text.lines().enumerate() {
        if let Some(column) = scan.line(line) {
            return Err(invalid(
                source,
                format!(
                    "YAML nested more than {YAML_MAX_DEPTH} levels deep (line {}, column {column}); \
                     refused unparsed",
                    n + 1
                ),
            ));
        }
    }
    Ok(())
}

/// The scanner's state across lines.
#[derive(Default)]
struct Scan {
    /// Indentation widths of the open block levels, increasing.
    indents: Vec<usize>,
    /// Open `[` and `{`.
    flow: usize,
    /// Inside a quoted scalar continued from an earlier line.
    quote: Option<u8>,
    /// Inside a block scalar: lines indented more than this belong to it.
    block_scalar: Option<usize>,
}

impl Scan {
    /// Scan one line; the 1-based column where the nesting passed the
    /// limit, if it did.
    fn line(&mut self, line: &str) -> Option<usize> {
        let bytes = line.as_bytes();
        let indent = bytes.iter().take_while(|&&b| b == b' ').count();
        let rest = &bytes[indent..];
        if self.quote.is_none() && self.flow == 0 {
            if let Some(scalar_indent) = self.block_scalar {
                if rest.is_empty() || indent > scalar_indent {
                    return None;
                }
                self.block_scalar = None;
            }
            if rest.is_empty() || rest[0] == b'#' {
                return None;
            }
            while self.indents.last().is_some_and(|&w| w > indent) {
                self.indents.pop();
            }
            if self.indents.last().is_none_or(|&w| w < indent) {
                self.indents.push(indent);
            }
        }
        let mut depth = self.indents.len() + self.flow;
        let mut i = indent;
        // `- - - x`: each item marker opens a level of its own.
        while self.quote.is_none() && self.flow == 0 && bytes.get(i) == Some(&b'-') {
            if !matches!(bytes.get(i + 1), Some(b' ') | None) {
                break;
            }
            depth += 1;
            if depth > YAML_MAX_DEPTH {
                return Some(i + 1);
            }
            i += 2;
        }
        if depth > YAML_MAX_DEPTH {
            return Some(i + 1);
        }
        let mut last = 0u8;
        while i < bytes.len() {
            let b = bytes[i];
            match self.quote {
                Some(b'\'') if b == b'\'' => self.quote = None,
                Some(b'"') if b == b'\\' => i += 1,
                Some(b'"') if b == b'"' => self.quote = None,
                Some(_) => {}
                None => match b {
                    b'\'' | b'"' => self.quote = Some(b),
                    b'#' if i == 0 || last == b' ' || last == b'\t' => break,
                    b'[' | b'{' => {
                        self.flow += 1;
                        if self.indents.len() + self.flow > YAML_MAX_DEPTH {
                            return Some(i + 1);
                        }
                    }
                    b']' | b'}' => self.flow = self.flow.saturating_sub(1),
                    _ => {}
                },
            }
            last = b;
            i += 1;
        }
        if self.quote.is_none() && self.flow == 0 && opens_block_scalar(line) {
            self.block_scalar = Some(indent);
        }
        None
    }
}

/// Whether `line` ends with a block scalar's header (`key: |`, `- >-`,
/// `key: |2`), after which more indented lines are the scalar's text.
fn opens_block_scalar(line: &str) -> bool {
    let line = line.split(" #").next().unwrap_or(line).trim_end();
    let start = line.rfind([' ', '\t']).map_or(0, |i| i + 1);
    let header = &line[start..];
    let mut chars = header.chars();
    matches!(chars.next(), Some('|' | '>'))
        && chars.all(|c| matches!(c, '-' | '+' | '1'..='9'))
        && (start == 0 || line[..start].trim_end().ends_with([':', '-']))
}

/// An `InvalidConfig` error: `message` about the configuration `source`.
pub(crate) fn invalid(source: &str, message: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidConfig, format!("{source}: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn refused(text: &str) -> String {
        let e = parse_yaml(text, "c.yaml").expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidConfig);
        e.to_string()
    }

    /// The case: 400 kB of `[` are refused at the 64th (the
    /// document's own level is the first), at once.
    #[test]
    fn deep_flow_nesting_is_refused_in_linear_time() {
        let text = "[".repeat(400_000);
        let started = Instant::now();
        let message = refused(&text);
        assert!(
            started.elapsed() < Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            message,
            "c.yaml: YAML nested more than 64 levels deep (line 1, column 64); refused unparsed"
        );
        let text = format!("a: {}", "{x: ".repeat(100_000));
        assert!(refused(&text).contains("nested more than 64 levels deep"));
    }

    /// A config file goes through the guard: the error names the file.
    #[test]
    fn configs_are_guarded() {
        let text = "[".repeat(400_000);
        let started = Instant::now();
        let e =
            crate::config::Config::from_yaml(&text, std::path::Path::new("."), "/etc/deep.yaml")
                .expect_err("refused");
        assert!(
            started.elapsed() < Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(e.kind(), ErrorKind::InvalidConfig);
        assert!(
            e.to_string()
                .starts_with("/etc/deep.yaml: YAML nested more than 64 levels deep"),
            "{e}"
        );
    }

    #[test]
    fn deep_block_nesting_is_refused() {
        let mut text = String::new();
        for level in 0..100 {
            text.push_str(&" ".repeat(level));
            text.push_str("k:\n");
        }
        assert!(
            refused(&text).contains("(line 65, column 65)"),
            "{}",
            refused(&text)
        );
        let dashes = format!("{}x\n", "- ".repeat(100));
        assert!(refused(&dashes).contains("nested more than 64 levels deep"));
    }

    #[test]
    fn large_inputs_are_refused_unread() {
        let text = format!("a: '{}'\n", "x".repeat(YAML_MAX_BYTES));
        assert_eq!(
            refused(&text),
            format!(
                "c.yaml: {} bytes of YAML: more than the {YAML_MAX_BYTES} a config may have; refused unread",
                text.len()
            )
        );
    }

    /// Configs as they are written parse; brackets in quotes, comments and
    /// block scalars are not nesting.
    #[test]
    fn ordinary_configs_pass() {
        let text = "type: local\nengine: toc\nspaces:\n  - regex: '^od:[[[[['\n    handler: Default # [[[[\n    roots:\n      - path: ./root\n      - {path: ./old, writable: false}\nnote: |\n  [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\nlast: \"a \\\" [\"\n";
        let v = parse_yaml(text, "c.yaml").expect("parses");
        assert_eq!(v["spaces"][0]["roots"][1]["path"], "./old");
        assert_eq!(v["last"], "a \" [");
        let nested = format!("{}{}", "[".repeat(60), "]".repeat(60));
        parse_yaml(&nested, "c.yaml").expect("60 levels are fine");
    }

    #[test]
    fn parser_errors_name_the_source() {
        let e = parse_yaml("a: [1, 2", "c.yaml").unwrap_err();
        assert!(e.to_string().starts_with("c.yaml: "), "{e}");
    }
}
