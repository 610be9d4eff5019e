//! FDB5's environment honoured (issue 42, item 2): with fieldstore's own
//! variables unset, the CLI reads FDB5's (`FDB5_CONFIG_FILE`, `FDB_HOME`,
//! …) as the C API does; a root holding FDB5's format is refused by name;
//! an answer from a store holding no dataset says which store was looked
//! in.

mod common;

use std::process::Command;

use common::{run, Env, Run};

const KEY: &str = "class=od,expver=0001,stream=oper,date=20240101,time=0000,domain=g,\
                   type=fc,levtype=sfc,step=0,param=167";

/// The CLI with fieldstore's and FDB5's variables cleared, then `vars`.
fn fieldstore(env: &Env, vars: &[(&str, &std::path::Path)], args: &[&str]) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fieldstore"));
    for var in [
        "FIELDSTORE_CONFIG",
        "FIELDSTORE_ROOT",
        "FDB_CONFIG",
        "FDB5_CONFIG",
        "FDB_CONFIG_FILE",
        "FDB5_CONFIG_FILE",
        "FDB_HOME",
        "FDB5_HOME",
    ] {
        c.env_remove(var);
    }
    for (var, value) in vars {
        c.env(var, value);
    }
    c.current_dir(env.path("")).args(args);
    run(&mut c)
}

/// A store at `env`'s root holding one field, and FDB5's config naming it.
fn store(env: &Env) -> std::path::PathBuf {
    std::fs::create_dir_all(env.root()).unwrap();
    let config = env.write(
        "fdb5.yaml",
        format!(
            "type: local\nengine: toc\nspaces:\n- handler: Default\n  roots:\n  - path: {}\n",
            env.root().display()
        ),
    );
    env.archive(KEY, b"GRIB-7777");
    config
}

#[test]
fn fdb5_config_file_and_home_are_read() {
    let env = Env::new();
    let config = store(&env);
    for var in ["FDB5_CONFIG_FILE", "FDB_CONFIG_FILE"] {
        let r = fieldstore(&env, &[(var, &config)], &["list", "class=od"]).ok();
        assert_eq!(r.lines().len(), 1, "{var}: {r:?}");
    }
    let home = env.path("home");
    std::fs::create_dir_all(home.join("etc/fdb")).unwrap();
    std::fs::copy(&config, home.join("etc/fdb/config.yaml")).unwrap();
    let r = fieldstore(&env, &[("FDB_HOME", &home)], &["list", "class=od"]).ok();
    assert_eq!(r.lines().len(), 1, "{r:?}");
    let r = fieldstore(&env, &[("FDB5_CONFIG_FILE", &config)], &["info"]).ok();
    assert!(r.out().contains("FDB5_CONFIG_FILE"), "{}", r.out());
    // fieldstore's own variable wins.
    let other = env.path("other");
    let r = fieldstore(
        &env,
        &[("FDB5_CONFIG_FILE", &config), ("FIELDSTORE_ROOT", &other)],
        &["list", "class=od"],
    );
    assert_ne!(r.code, 0, "FIELDSTORE_ROOT names a missing root: {r:?}");
}

#[test]
fn fdb_home_without_yaml_is_refused_out_loud() {
    let env = Env::new();
    let home = env.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let r = fieldstore(&env, &[("FDB_HOME", &home)], &["list"]);
    assert_eq!(r.code, 4, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "$FDB_HOME is {}, which has no etc/fdb/config.yaml: fieldstore needs a YAML configuration",
            home.display()
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn an_empty_default_store_says_so() {
    let env = Env::new();
    let r = fieldstore(&env, &[], &["list", "class=od"]).ok();
    assert!(r.out().is_empty());
    assert!(
        r.stderr.contains("fieldstore: the store looked in holds no dataset: embedded store at fieldstore-data (the default: no --config, FIELDSTORE_CONFIG"),
        "{}",
        r.stderr
    );
    let r = fieldstore(&env, &[], &["retrieve", KEY, "-o", "out.grib"]).ok();
    assert!(
        r.stderr.contains("the store looked in holds no dataset"),
        "{}",
        r.stderr
    );
    // A store holding data says nothing more when a request finds nothing.
    let config = store(&env);
    let r = fieldstore(
        &env,
        &[("FDB5_CONFIG_FILE", &config)],
        &["list", "class=rd"],
    )
    .ok();
    assert!(!r.stderr.contains("holds no dataset"), "{}", r.stderr);
}
