//! The RADOS tests' cluster ([`fieldstore_testkit::ceph`]: one throwaway
//! cluster per test binary, one namespace per test) and configs on it.
#![allow(dead_code, unreachable_pub, unused_imports)]

use std::path::Path;

use fieldstore::Config;
pub use fieldstore_testkit::ceph::{cluster, namespace, start, start_osds, Cluster};

/// A config on `cluster` with the hammer schema: `engine` and `store` as
/// named, in `namespace`, with `root` as the POSIX root if one is needed.
pub fn config(
    cluster: &Cluster,
    engine: &str,
    store: &str,
    namespace: &str,
    root: Option<&Path>,
) -> Config {
    let mut yaml = format!(
        "engine: {engine}\nstore: {store}\n{}",
        cluster.section(namespace)
    );
    if let Some(r) = root {
        yaml.push_str(&format!("spaces:\n- roots:\n  - path: {}\n", r.display()));
    }
    let mut c = Config::from_yaml(&yaml, Path::new("/"), "test config")
        .unwrap_or_else(|e| panic!("test config:\n{yaml}\n{e}"));
    c.schema = fieldstore_testkit::support::schema();
    c
}
