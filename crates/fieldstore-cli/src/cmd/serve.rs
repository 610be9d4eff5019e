//! `fieldstore serve --config server.yaml`: serve a store to FDB5's remote
//! clients (`fdb-write`, `fdb-list`, `fdb-read`, `fdb-axes`, `fdb-wipe` with a
//! `type: remote` config). See docs/serve.md.

use std::io::Write;

use fieldstore::{Error, ErrorKind, Result};

use crate::args::{GlobalArgs, ServeArgs};
use crate::serve::{ServeConfig, Server};

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
    let server = Server::new(config)?;
    let (catalogue, store) = server.bind()?;
    let addr = catalogue
        .local_addr()
        .map_err(|e| Error::io("the listening address", e))?;
    // Tests and scripts wait for this line to learn the ports.
    let _ = writeln!(
        std::io::stderr(),
        "fieldstore serve: listening on {addr} (store port {})",
        server.store_port()
    );
    server.run(catalogue, store);
    Ok(())
}
