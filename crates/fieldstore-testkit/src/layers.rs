//! The layer order of a crate's modules, as its `lib.rs` documents it (its
//! "# Layers" section, bottom first), checked against the code by
//! [`check`]: a module names, through `crate::` paths, only modules listed
//! before it — never one above it, nor an item of the crate root (the top).
//! Every module the crate declares, and every file under `src/`, has its
//! place in the list. The C API and the hammer call it from a test.
//!
//! The check reads text, not syntax: comments are left out (a comment may
//! mention a module above), and so are a file's unit tests (they may drive
//! the module through the crate's top), and a `super::` path out of a top-level module
//! is not seen (the crate writes `crate::` paths).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The modules of `lib`'s "# Layers" section, bottom first: each item of
/// the section's list starts with the module's name in backquotes.
fn documented_order(lib: &str) -> Vec<String> {
    let mut in_section = false;
    let mut order = Vec::new();
    for line in lib.lines() {
        let Some(doc) = line.trim_start().strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if let Some(heading) = doc.strip_prefix('#') {
            in_section = heading.trim_start_matches('#').trim() == "Layers";
        } else if let Some(item) = doc.strip_prefix("- `").filter(|_| in_section) {
            order.extend(item.split('`').next().map(str::to_string));
        }
    }
    order
}

/// The modules `lib` declares (`mod name;`, public or not), but this one.
fn declared(lib: &str) -> BTreeSet<String> {
    lib.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            rest.strip_prefix("mod ")?.strip_suffix(';')
        })
        .map(str::to_string)
        .collect()
}

/// `text` without its comments (whole comment lines, and the rest of a
/// line from `//` on, also inside a string: that only hides a path) and
/// without its unit tests (a `#[cfg(test)]` module `tests`, last in the
/// file as clippy wants it): a module's own tests may drive it through the
/// crate's top, as its callers do.
fn code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let tests = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod tests"));
    lines[..tests.unwrap_or(lines.len())]
        .iter()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first path segments after `crate::` in `text`'s code: the crate's
/// modules (or root items) it names, also inside `crate::{a, b::c}`.
fn named(text: &str) -> BTreeSet<String> {
    let code = code(text);
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                // Top-level items of the group: split at commas outside
                // nested braces.
                let mut depth = 0;
                let mut start = 0;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            names.insert(ident(&group[start..i]));
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            names.insert(ident(&group[start..i]));
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
            }
            None => {
                names.insert(ident(rest));
            }
        }
    }
    names.remove("");
    names
}

/// The files of module `name`: `src/name.rs` and everything under
/// `src/name/` (either may be missing).
fn files_of(src: &Path, name: &str) -> Vec<PathBuf> {
    let file = src.join(format!("{name}.rs"));
    let mut files: Vec<PathBuf> = Some(file).filter(|f| f.is_file()).into_iter().collect();
    let mut dirs: Vec<PathBuf> = Some(src.join(name))
        .filter(|d| d.is_dir())
        .into_iter()
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// Check the crate at `crate_dir` (its `CARGO_MANIFEST_DIR`).
///
/// # Panics
/// With every module that names a module above it or a root item, and
/// every module missing from (or only in) the list, when there is any.
pub fn check(crate_dir: &Path) {
    let src = crate_dir.join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let order = documented_order(&lib);
    let mut problems = Vec::new();

    let listed: BTreeSet<String> = order.iter().cloned().collect();
    assert_eq!(
        listed.len(),
        order.len(),
        "a module is listed twice: {order:?}"
    );
    let declared = declared(&lib);
    for name in declared.symmetric_difference(&listed) {
        problems.push(if declared.contains(name) {
            format!("`{name}` is declared in lib.rs but not in its # Layers list")
        } else {
            format!("`{name}` is in lib.rs's # Layers list but not declared")
        });
    }
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let is_module = path.is_dir() || path.extension().is_some_and(|e| e == "rs");
        if is_module && !["lib", "bin"].contains(&stem.as_str()) && !listed.contains(&stem) {
            problems.push(format!(
                "{} is no module of the # Layers list",
                path.display()
            ));
        }
    }

    for (layer, module) in order.iter().enumerate() {
        for file in files_of(&src, module) {
            let text = std::fs::read_to_string(&file).unwrap();
            for name in named(&text) {
                match order.iter().position(|m| *m == name) {
                    Some(l) if l <= layer => {}
                    Some(_) => problems.push(format!(
                        "{}: `{module}` names `{name}`, a layer above it",
                        file.display()
                    )),
                    None if declared.contains(&name) => {} // reported above
                    None => problems.push(format!(
                        "{}: `{module}` names `crate::{name}`, an item of the crate root (the top)",
                        file.display()
                    )),
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the modules break the layer order of lib.rs (bottom first: {}):\n{}",
        order.join(", "),
        problems.join("\n")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reading of paths: plain and grouped, comments left out, other
    /// crates' paths (`$crate::`, `my_crate::`) not counted.
    #[test]
    fn crate_paths_are_read_from_code_only() {
        let text = "use crate::{error::{entry, CError}, util};\n\
                // crate::commented\n\
                let x = crate::registry::get(); // crate::trailing\n\
                /// [`crate::doc`]\n\
                $crate::macro_path; other_crate::thing;\n";
        let expected: BTreeSet<String> = ["error", "util", "registry"]
            .into_iter()
            .map(str::to_string)
            .collect();
        assert_eq!(named(text), expected);
    }

    /// A module's unit tests are not read: they may use the crate's top.
    #[test]
    fn unit_tests_are_left_out() {
        let text =
            "use crate::low::thing;\n\n#[cfg(test)]\nmod tests {\n    use crate::top::Handle;\n}\n";
        let expected: BTreeSet<String> = ["low"].into_iter().map(str::to_string).collect();
        assert_eq!(named(text), expected);
    }
}
