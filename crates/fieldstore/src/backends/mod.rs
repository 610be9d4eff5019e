//! Backends: POSIX files and memory built in; DAOS and RADOS from their own
//! crates behind the `daos`, `rados` and `s3` features.

pub mod memory;
pub mod posix;
mod select;
mod select_waiter;

use std::sync::Arc;

use fieldstore_core::{Catalogue, Error, ErrorKind, Result, Store};

use crate::config::{Config, Engine, StoreKind};

// Unused when every backend feature is on.
#[cfg_attr(
    all(feature = "daos", feature = "rados", feature = "s3"),
    allow(dead_code)
)]
fn not_built(what: &str, feature: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("{what} needs fieldstore built with the '{feature}' feature"),
    )
}

fn no_lanes() -> Error {
    Error::new(
        ErrorKind::InvalidConfig,
        "a select configuration needs sub-stores (fdbs)",
    )
}

/// The catalogue and store a configuration names. Any catalogue may be
/// paired with any store: locations carry their scheme.
pub(crate) fn open(config: &Config) -> Result<(Arc<dyn Catalogue>, Arc<dyn Store>)> {
    if !config.lanes.is_empty() {
        let lanes = select::Lanes::open(&config.lanes)?;
        return Ok((
            Arc::new(select::SelectCatalogue(lanes.clone())),
            Arc::new(select::SelectStore(lanes)),
        ));
    }
    if config.engine == Engine::Remote || config.store == StoreKind::Remote {
        let remote = fieldstore_remote::client::Remote::connect(remote_dial(config)?)?;
        return Ok((
            Arc::new(fieldstore_remote::client::RemoteCatalogue::new(
                remote.clone(),
            )),
            Arc::new(fieldstore_remote::client::RemoteStore::new(remote)),
        ));
    }
    let memory = memory::MemoryBackend::new();
    let catalogue: Arc<dyn Catalogue> = match config.engine {
        Engine::Toc => Arc::new(posix::TocCatalogue::new(posix::TocMedium::open(
            &config.roots,
            config.placement(),
        )?)),
        Engine::Memory => Arc::new(memory.catalogue()),
        Engine::Select => return Err(no_lanes()),
        Engine::Remote => return Err(Error::internal("remote configurations are opened above")),
        // Backend crates add their arms here, behind their feature.
        #[cfg(feature = "daos")]
        Engine::Daos => Arc::new(fieldstore_daos::DaosCatalogue::new(
            fieldstore_daos::DaosMedium::open(config.backend("daos"))?,
        )),
        #[cfg(not(feature = "daos"))]
        #[allow(unreachable_patterns)]
        Engine::Daos => return Err(not_built("engine 'daos'", "daos")),
        #[cfg(feature = "rados")]
        Engine::Rados => Arc::new(fieldstore_rados::RadosCatalogue::new(
            fieldstore_rados::RadosMedium::from_config(config.backend("rados"))?,
        )),
        #[cfg(not(feature = "rados"))]
        #[allow(unreachable_patterns)]
        Engine::Rados => return Err(not_built("engine 'rados'", "rados")),
        #[cfg(feature = "s3")]
        Engine::S3 => Arc::new(fieldstore_s3::S3Catalogue::new(
            fieldstore_s3::S3Medium::from_config(config.backend("s3"))?,
        )),
        #[cfg(not(feature = "s3"))]
        #[allow(unreachable_patterns)]
        Engine::S3 => return Err(not_built("engine 's3'", "s3")),
    };
    let store: Arc<dyn Store> = match config.store {
        StoreKind::File => Arc::new(posix::FileStore::open(
            &config.roots,
            config.placement(),
            posix::DataWrites::from_config(config.backend("file"))?,
        )?),
        StoreKind::Memory => Arc::new(memory.store()),
        StoreKind::Select => return Err(no_lanes()),
        StoreKind::Remote => return Err(Error::internal("remote configurations are opened above")),
        #[cfg(feature = "daos")]
        StoreKind::Daos => Arc::new(fieldstore_daos::DaosStore::open(config.backend("daos"))?),
        #[cfg(not(feature = "daos"))]
        #[allow(unreachable_patterns)]
        StoreKind::Daos => return Err(not_built("store 'daos'", "daos")),
        #[cfg(feature = "rados")]
        StoreKind::Rados => Arc::new(fieldstore_rados::RadosStore::from_config(
            config.backend("rados"),
        )?),
        #[cfg(not(feature = "rados"))]
        #[allow(unreachable_patterns)]
        StoreKind::Rados => return Err(not_built("store 'rados'", "rados")),
        #[cfg(feature = "s3")]
        StoreKind::S3 => Arc::new(fieldstore_s3::S3Store::from_config(config.backend("s3"))?),
        #[cfg(not(feature = "s3"))]
        #[allow(unreachable_patterns)]
        StoreKind::S3 => return Err(not_built("store 's3'", "s3")),
    };
    Ok((catalogue, store))
}

/// How to reach the server of a `type: remote` configuration (its
/// `remote` section, as `Config::remote_from_yaml` wrote it).
fn remote_dial(config: &Config) -> Result<fieldstore_remote::client::Dial> {
    let r = config.backend("remote");
    let bad = || {
        Error::new(
            ErrorKind::InvalidConfig,
            format!("{}: a remote store needs host and port", config.source),
        )
    };
    Ok(fieldstore_remote::client::Dial {
        host: r["host"].as_str().ok_or_else(bad)?.to_string(),
        port: r["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(bad)?,
        timeout: std::time::Duration::from_secs_f64(r["timeout"].as_f64().unwrap_or(60.0)),
        prefer_single: r["preferSingleConnection"].as_bool().unwrap_or(false),
    })
}
