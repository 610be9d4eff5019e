//! `fieldstore serve --config server.yaml`: serve a store to FDB5's remote
//! clients (`fdb-write`, `fdb-list`, `fdb-read`, `fdb-axes`, `fdb-wipe` with a
//! `type: remote` config). See docs/serve.md.

use std::io::Write;

use fieldstore::{Error, ErrorKind, Result};

use crate::args::{GlobalArgs, ServeArgs};
use fieldstore_serve::{Listeners, ServeConfig, Server};

/// Run the server until it is killed.
///
/// # Errors
/// `InvalidConfig` without `--config` or for a config not served; the
/// store cannot be opened; the port cannot be bound.
pub(crate) fn run(args: &ServeArgs, global: &GlobalArgs) -> Result<()> {
    let Some(path) = &global.config else {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            "serve needs --config FILE (FDB5's server config shape, docs/serve.md)",
        ));
    };
    let mut config = ServeConfig::from_file(path, args.listen)?;
    if let Some(p) = args.port {
        config.port = p;
    }
    // Requests may name parameters by short name, as on the command line.
    config.store.schema = config
        .store
        .schema
        .clone()
        .with_param_names(fieldstore_grib::param_names());
    let server = Server::new(config)?;
    let listeners = server.bind()?;
    let addr = listeners
        .catalogue
        .as_ref()
        .or(listeners.store.as_ref())
        .map(|l| l.local_addr())
        .transpose()
        .map_err(|e| Error::io("the listening address", e))?;
    // Tests and scripts wait for this line to learn the ports.
    if let Some(addr) = addr {
        let roles = match listeners {
            Listeners {
                catalogue: Some(_),
                store: Some(_),
            } => format!("store port {}", server.store_port()),
            Listeners {
                catalogue: Some(_), ..
            } => "catalogue only".to_string(),
            _ => "store only".to_string(),
        };
        let _ = writeln!(
            std::io::stderr(),
            "fieldstore serve: listening on {addr} ({roles})"
        );
    }
    server.run(listeners);
    Ok(())
}
