//! Every shell block of the READMEs and `docs/` runs (issue 28), with this
//! build's `fieldstore` first on `PATH`, in a fresh directory, against a
//! temporary store (`/tmp/fs` in a block is replaced by the test's own).
//! The directory holds `forecast.grib` (`tests/fixtures/docs/forecast.grib`:
//! the fields the Python blocks' test writes under that name, so that one
//! request works in both), `analysis.grib` (the repository's `rd-fc.grib`)
//! and `t2m.grib` (`synth11.grib`: bytes archived under an explicit key).
//!
//! A block not meant to run says why on the line before its fence,
//! `<!-- docs-test: no-run: why -->` (a page, before its first block:
//! `<!-- docs-test: no-run-page: why -->`), as the Python blocks' test
//! (`crates/fieldstore-py/tests/test_docs.py`) reads them. Those blocks are
//! still checked: `bash -n` parses them, and every `scripts/…` and
//! `bench/…` path they name exists.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::repo;

struct Block {
    page: PathBuf,
    line: usize,
    code: String,
    no_run: Option<String>,
}

impl Block {
    fn at(&self) -> String {
        format!(
            "{}:{}",
            self.page
                .strip_prefix(repo())
                .unwrap_or(&self.page)
                .display(),
            self.line
        )
    }
}

fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(repo().join("crates"))
        .expect("crates")
        .map(|e| e.expect("entry").path().join("README.md"))
        .filter(|p| p.is_file())
        .collect();
    crates.sort();
    pages.extend(crates);
    let mut docs = Vec::new();
    let mut dirs = vec![repo().join("docs")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).expect("docs") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                docs.push(p);
            }
        }
    }
    docs.sort();
    pages.extend(docs);
    pages
}

/// The marker on `line`, if any: (`no-run` or `no-run-page`, reason).
fn marker(line: &str) -> Option<(String, String)> {
    let rest = line
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim();
    let rest = rest.strip_prefix("docs-test:")?.trim();
    let (kind, reason) = rest.split_once(':')?;
    Some((kind.trim().to_string(), reason.trim().to_string()))
}

fn shell_blocks(page: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(page).expect("page");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut page_reason = None;
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].strip_prefix("```") else {
            if let Some((kind, reason)) = marker(lines[i]) {
                if kind == "no-run-page" {
                    page_reason = Some(reason);
                }
            }
            i += 1;
            continue;
        };
        let start = i;
        let mut j = i + 1;
        while j < lines.len() && !lines[j].starts_with("```") {
            j += 1;
        }
        let language = info.split_whitespace().next().unwrap_or("").to_lowercase();
        if matches!(language.as_str(), "sh" | "bash" | "shell" | "console") {
            let before = lines[..start]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .copied()
                .unwrap_or("");
            let no_run = match marker(before) {
                Some((kind, reason)) if kind == "no-run" => Some(reason),
                _ => page_reason.clone(),
            };
            out.push(Block {
                page: page.to_path_buf(),
                line: start + 1,
                code: lines[start + 1..j.min(lines.len())].join("\n") + "\n",
                no_run,
            });
        }
        i = j + 1;
    }
    out
}

fn all_blocks() -> Vec<Block> {
    pages().iter().flat_map(|p| shell_blocks(p)).collect()
}

#[test]
fn the_shell_blocks_of_the_docs_run() {
    let blocks = all_blocks();
    let run: Vec<&Block> = blocks.iter().filter(|b| b.no_run.is_none()).collect();
    assert!(
        run.iter().any(|b| b.page.ends_with("docs/cli.md")),
        "docs/cli.md's block is found and run"
    );
    for block in run {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fieldstore"), bin.join("fieldstore"))
            .expect("symlink");
        let work = dir.path().join("work");
        std::fs::create_dir(&work).expect("work");
        let fixtures = repo().join("tests/fixtures");
        for (name, from) in [
            ("forecast.grib", "docs/forecast.grib"),
            ("analysis.grib", "grib/rd-fc.grib"),
            ("t2m.grib", "grib/synth11.grib"),
        ] {
            std::fs::copy(fixtures.join(from), work.join(name)).expect("copy");
        }
        let store = dir.path().join("fs");
        let code = block
            .code
            .replace("/tmp/fs", store.to_str().expect("utf-8"));
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &code])
            .current_dir(&work)
            .env("PATH", path)
            .env_remove("FIELDSTORE_CONFIG")
            .env_remove("FIELDSTORE_ROOT")
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "{} failed ({}):\n{}\n{}",
            block.at(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // The block did something: it printed, and the store it named
        // holds datasets.
        assert!(!out.stdout.is_empty(), "{}: printed nothing", block.at());
        assert!(store.is_dir(), "{}: nothing archived", block.at());
    }
}

#[test]
fn the_shell_blocks_not_run_parse_and_name_what_exists() {
    let blocks = all_blocks();
    let skipped: Vec<&Block> = blocks.iter().filter(|b| b.no_run.is_some()).collect();
    assert!(!skipped.is_empty());
    for block in skipped {
        let reason = block.no_run.as_deref().unwrap_or("");
        assert!(
            reason.len() >= 10,
            "{}: say why it does not run",
            block.at()
        );
        let out = Command::new("bash")
            .args(["-n", "-c", &block.code])
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "{}: {}",
            block.at(),
            String::from_utf8_lossy(&out.stderr)
        );
        for word in block
            .code
            .split(|c: char| c.is_whitespace() || c == '=' || c == '"')
        {
            if (word.starts_with("scripts/") || word.starts_with("bench/"))
                && word.ends_with(|c: char| c.is_ascii_alphanumeric())
            {
                assert!(
                    repo().join(word).exists(),
                    "{}: names {word}, which does not exist",
                    block.at()
                );
            }
        }
    }
}
