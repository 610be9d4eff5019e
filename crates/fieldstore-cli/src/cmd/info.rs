//! `fieldstore info`: what this binary is and which store it would use.
//! Reads the configuration only; never opens the store.

use fieldstore::{Engine, Result, StoreKind};
use serde::Serialize;

use crate::args::InfoArgs;
use crate::context::{Context, Origin, Ui};

#[derive(Debug, Serialize)]
struct Info {
    version: &'static str,
    config: String,
    config_origin: String,
    engine: String,
    store: String,
    roots: Vec<RootInfo>,
    /// The spaces that place new datasets (one `Default` space of every
    /// root when the configuration has none).
    spaces: Vec<SpaceInfo>,
    /// `type: select`: the sub-stores, in order (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    lanes: Vec<LaneInfo>,
    schema: String,
    schema_rules: usize,
    /// The ecCodes this binary reads GRIB keys with (it decides keys:
    /// before 2.50, GRIB2 fields get no `timespan`).
    eccodes: String,
    /// The FDB5 C interface fieldstore's C library implements
    /// (`crates/fieldstore-capi`, `docs/capi.md`).
    c_api: &'static str,
}

/// What `fdb_version` of fieldstore's C library reports (its
/// `fdb_vcs_version` says `fieldstore <version>`).
const C_API: &str =
    "FDB5 5.25.0 fdb_c.h (libfieldstore.so, also as libfdb5.so: scripts/install-capi.sh)";

#[derive(Debug, Serialize)]
struct RootInfo {
    path: String,
    writable: bool,
    visit: bool,
    retrieve: bool,
    wipe: bool,
    /// The index of its space in `spaces`.
    space: usize,
}

#[derive(Debug, Serialize)]
struct LaneInfo {
    select: String,
    excludes: Vec<String>,
    engine: String,
    store: String,
    roots: Vec<String>,
}

#[derive(Debug, Serialize)]
struct SpaceInfo {
    name: String,
    regex: String,
    handler: String,
}

fn engine_name(e: Engine) -> String {
    match e {
        Engine::Toc => "toc".to_string(),
        Engine::Memory => "memory".to_string(),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn store_name(s: StoreKind) -> String {
    match s {
        StoreKind::File => "file".to_string(),
        StoreKind::Memory => "memory".to_string(),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn gather(ctx: &Context) -> Info {
    let c = &ctx.config;
    let config = match &ctx.origin {
        Origin::Flag(p) | Origin::EnvConfig(p) => p.display().to_string(),
        Origin::EnvRoot(_) | Origin::Default | Origin::Fdb5(_) => c.source.clone(),
    };
    Info {
        version: env!("CARGO_PKG_VERSION"),
        config,
        config_origin: ctx.origin.describe(),
        engine: engine_name(c.engine),
        store: store_name(c.store),
        roots: c
            .roots
            .iter()
            .map(|r| RootInfo {
                path: r.path.display().to_string(),
                writable: r.writable,
                visit: r.visit,
                retrieve: r.retrieve,
                wipe: r.wipe,
                space: r.space,
            })
            .collect(),
        spaces: if c.roots.is_empty() {
            Vec::new()
        } else if c.spaces.is_empty() {
            vec![SpaceInfo {
                name: String::new(),
                regex: ".*".to_string(),
                handler: "Default".to_string(),
            }]
        } else {
            c.spaces
                .iter()
                .map(|s| SpaceInfo {
                    name: s.name.clone(),
                    regex: s.regex_text.clone(),
                    handler: s.handler.name().to_string(),
                })
                .collect()
        },
        lanes: c
            .lanes
            .iter()
            .map(|l| LaneInfo {
                select: l.select.text.clone(),
                excludes: l.excludes.iter().map(|e| e.text.clone()).collect(),
                engine: engine_name(l.config.engine),
                store: store_name(l.config.store),
                roots: l
                    .config
                    .roots
                    .iter()
                    .map(|r| r.path.display().to_string())
                    .collect(),
            })
            .collect(),
        schema: c.schema.name().to_string(),
        schema_rules: c.schema.rules().len(),
        eccodes: fieldstore_grib::eccodes_version(),
        c_api: C_API,
    }
}

/// Run `fieldstore info`.
///
/// # Errors
/// Only failures to write the output.
pub(crate) fn run(args: &InfoArgs, ctx: &Context, ui: &mut Ui<'_>) -> Result<()> {
    let info = gather(ctx);
    if args.json {
        return ui.json(&info);
    }
    ui.line(&format!("version: {}", info.version))?;
    ui.line(&format!("config: {} ({})", info.config, info.config_origin))?;
    ui.line(&format!("engine: {}", info.engine))?;
    ui.line(&format!("store: {}", info.store))?;
    if !info.lanes.is_empty() {
        ui.line("sub-stores (first that selects a new dataset takes it):")?;
    }
    for (i, l) in info.lanes.iter().enumerate() {
        let excludes: String = l
            .excludes
            .iter()
            .map(|e| format!(", excludes '{e}'"))
            .collect();
        let roots = if l.roots.is_empty() {
            String::new()
        } else {
            format!(", roots {}", l.roots.join(", "))
        };
        ui.line(&format!(
            "  fdbs[{i}]: select '{}'{excludes}: engine {}, store {}{roots}",
            l.select, l.engine, l.store
        ))?;
    }
    if info.lanes.is_empty() {
        if info.roots.is_empty() {
            ui.line("roots: none")?;
        } else {
            ui.line("roots:")?;
        }
    }
    let many = info.spaces.len() > 1;
    for (i, space) in info.spaces.iter().enumerate() {
        if many {
            let name = if space.name.is_empty() {
                String::new()
            } else {
                format!(" {}", space.name)
            };
            ui.line(&format!(
                "  space {i}{name}: regex '{}', handler {}",
                space.regex, space.handler
            ))?;
        }
        for r in info.roots.iter().filter(|r| r.space == i || !many) {
            let mut flags = Vec::new();
            if r.writable {
                flags.push("writable");
            }
            if r.visit {
                flags.push("visit");
            }
            // Shown only where they differ from the flag they follow.
            if r.retrieve != r.visit {
                flags.push(if r.retrieve {
                    "retrieve"
                } else {
                    "no retrieve"
                });
            }
            if r.wipe != r.writable {
                flags.push(if r.wipe { "wipe" } else { "no wipe" });
            }
            let flags = if flags.is_empty() {
                "disabled".to_string()
            } else {
                flags.join(", ")
            };
            let indent = if many { "    " } else { "  " };
            ui.line(&format!("{indent}{} ({flags})", r.path))?;
        }
    }
    ui.line(&format!(
        "schema: {} ({} dataset rules)",
        info.schema, info.schema_rules
    ))?;
    ui.line(&format!("eccodes: {}", info.eccodes))?;
    ui.line(&format!("c api: {}", info.c_api))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore::Config;

    fn run_info(ctx: &Context, json: bool) -> String {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut ui = Ui::capture(&mut out, &mut err);
        run(&InfoArgs { json }, ctx, &mut ui).expect("info");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn embedded_store_text_and_json() {
        let ctx = Context::with_config(Config::embedded("/data/fs"));
        let out = run_info(&ctx, false);
        assert_eq!(
            out,
            format!(
                "version: {}\nconfig: embedded store at /data/fs (default)\nengine: toc\nstore: file\nroots:\n  /data/fs (writable, visit)\nschema: <built-in ECMWF schema> ({} dataset rules)\neccodes: {}\nc api: {C_API}\n",
                env!("CARGO_PKG_VERSION"),
                ctx.config.schema.rules().len(),
                fieldstore_grib::eccodes_version(),
            )
        );
        let v: serde_json::Value = serde_json::from_str(&run_info(&ctx, true)).expect("json");
        assert_eq!(v["engine"], "toc");
        assert_eq!(v["roots"][0]["path"], "/data/fs");
        assert_eq!(v["roots"][0]["writable"], true);
        assert_eq!(v["eccodes"], fieldstore_grib::eccodes_version());
    }

    #[test]
    fn select_configs_show_their_sub_stores() {
        let yaml = "type: select\nfdbs:\n- select: class=od\n  excludes: ['expver=x']\n  \
                    spaces: [{roots: [{path: od}]}]\n- engine: rados\n  rados: {pool: p}\n";
        let c = Config::from_yaml(yaml, std::path::Path::new("/s"), "s.yaml").expect("config");
        let out = run_info(&Context::with_config(c), false);
        assert!(
            out.contains(
                "engine: select\nstore: select\nsub-stores (first that selects a new dataset takes it):\n  \
                 fdbs[0]: select 'class=od', excludes 'expver=x': engine toc, store file, roots /s/od\n  \
                 fdbs[1]: select '': engine rados, store rados\nschema: "
            ),
            "{out}"
        );
    }
}
