//! `fieldstore schema`: print the schema in force, or check a schema file.

use std::path::Path;

use fieldstore::{Error, Result, Schema};

use crate::args::SchemaArgs;
use crate::context::{display, Context, Ui};

/// Run `fieldstore schema`. Never opens the store.
///
/// # Errors
/// `--check`: the file cannot be read (`NotFound`, …) or is not a valid
/// schema (`InvalidConfig`, message `FILE:LINE:COLUMN: what`).
pub(crate) fn run(args: &SchemaArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    match &args.check {
        Some(path) => check_file(path, args.parsed, ui),
        None => print(&ctx.config.schema, args.parsed, ui),
    }
}

/// `schema --check FILE`: needs no configuration.
///
/// # Errors
/// As [`run`].
pub(crate) fn check_file(path: &Path, parsed: bool, ui: &mut Ui<'_>) -> Result<()> {
    let schema = check(path)?;
    if parsed {
        return print(&schema, true, ui);
    }
    ui.line(&format!("{}: ok: {}", display(path), summary(&schema)))
}

/// Parse a schema file.
pub(crate) fn check(path: &Path) -> Result<Schema> {
    let text = fieldstore::config::read_text_file(path, &display(path))?;
    Schema::parse(&display(path), &text).map_err(Error::from)
}

/// `3 dataset rules, 12 rule chains, 40 keywords`.
fn summary(schema: &Schema) -> String {
    format!(
        "{} dataset rules, {} rule chains, {} keywords",
        schema.rules().len(),
        schema.chains().count(),
        schema.keywords().count()
    )
}

fn print(schema: &Schema, parsed: bool, ui: &mut Ui<'_>) -> Result<()> {
    let text = if parsed {
        schema.to_string()
    } else {
        schema.text().to_string()
    };
    ui.line(text.trim_end_matches('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::{Config, ErrorKind};

    fn run_schema(ctx: &Context, args: &SchemaArgs) -> Result<String> {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut ui = Ui::capture(&mut out, &mut err);
        run(args, ctx, &mut ui)?;
        Ok(String::from_utf8(out).expect("utf-8"))
    }

    #[test]
    fn prints_the_schema_in_force_and_checks_files() {
        let text = "step: Step;\n[ class [ type [ step, param ]]]\n";
        let ctx = Context::with_config(Config::memory(text.parse().expect("schema")));
        let out = run_schema(
            &ctx,
            &SchemaArgs {
                check: None,
                parsed: false,
            },
        )
        .expect("schema");
        assert_eq!(out, text);

        let dir = tempfile::tempdir().expect("tempdir");
        let good = dir.path().join("good");
        std::fs::write(&good, text).expect("write");
        let out = run_schema(
            &ctx,
            &SchemaArgs {
                check: Some(good.clone()),
                parsed: false,
            },
        )
        .expect("check");
        assert_eq!(
            out,
            format!(
                "{}: ok: 1 dataset rules, 1 rule chains, 4 keywords\n",
                good.display()
            )
        );

        let bad = dir.path().join("bad");
        std::fs::write(&bad, "[ class\n  [ type [ step, param ]]\n").expect("write");
        let e = run_schema(
            &ctx,
            &SchemaArgs {
                check: Some(bad.clone()),
                parsed: false,
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig);
        let prefix = format!("{}:", bad.display());
        assert!(e.to_string().starts_with(&prefix), "{e}");
        // FILE:LINE:COLUMN: message
        let rest = &e.to_string()[prefix.len()..];
        let mut parts = rest.splitn(3, ':');
        assert!(
            parts.next().is_some_and(|l| l.parse::<u32>().is_ok()),
            "{e}"
        );
        assert!(
            parts.next().is_some_and(|c| c.parse::<u32>().is_ok()),
            "{e}"
        );

        let e = run_schema(
            &ctx,
            &SchemaArgs {
                check: Some(dir.path().join("none")),
                parsed: false,
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    }
}
