//! The catalogue half of `type: remote`: queries forwarded whole to the
//! catalogue server, fields indexed through each dataset's `Link`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use fieldstore_core::catalogue::CatalogueQueries;
use fieldstore_core::{
    Axes, Catalogue, CatalogueMaintenance, CatalogueWriter, ChangeWaiter, Changes, CollocationKey,
    DamagedDatasets, DatasetKey, DatasetMover, DatasetReader, ElementKey, Error, ErrorKind,
    FieldLocation, Level, ListElement, PollingWaiter, Request, Result, Schema,
};

use super::convert::{tool_request, ElementDecoder};
use super::link::Link;
use super::{lock, Remote};
use crate::elements::AxesElement;
use crate::{Message, Reader, Writer};

/// The longest pause between two looks of a watcher (the protocol has no
/// notifications).
const POLL_MAX: std::time::Duration = std::time::Duration::from_millis(100);

/// A catalogue server, reached through a [`Remote`] session.
#[derive(Debug)]
pub struct RemoteCatalogue(pub(crate) Arc<Remote>);

impl RemoteCatalogue {
    /// The catalogue half of `remote`.
    pub fn new(remote: Arc<Remote>) -> RemoteCatalogue {
        RemoteCatalogue(remote)
    }

    /// A streamed query: `payload` is the tool request and any argument.
    fn stream(
        &self,
        message: Message,
        payload: &[u8],
        each: &mut dyn FnMut(Vec<u8>) -> Result<bool>,
    ) -> Result<()> {
        self.0.query_client()?.stream(message, payload, each)
    }
}

fn depth_arg(depth: Level) -> i32 {
    match depth {
        Level::Dataset => 1,
        Level::Collocation => 2,
        Level::Element => 3,
    }
}

/// Requests are checked against the server's schema before they are
/// sent, as a local store checks them against its own: a keyword the
/// schema does not know or a value its type refuses is `InvalidInput`
/// naming it, never an empty answer (a server may not check).
impl CatalogueQueries for RemoteCatalogue {
    fn schema(&self) -> &Schema {
        self.0.schema()
    }

    /// FDB5's servers send masked entries too, each after its key's newer
    /// ones (FDB5's client drops them unless asked for duplicates): so
    /// does this client, keeping the first entry of each key.
    fn list(
        &self,
        request: &Request,
        depth: Level,
        duplicates: bool,
        visit: &mut dyn FnMut(ListElement) -> bool,
    ) -> Result<()> {
        self.0.schema().selector(request)?;
        let mut w = Writer::new();
        tool_request(request).encode(&mut w);
        w.int(depth_arg(depth));
        let endpoint = self.0.endpoint();
        let mut decoder = ElementDecoder::default();
        let mut seen = HashSet::new();
        self.stream(Message::List, w.bytes(), &mut |blob| {
            let e = decoder.decode(&blob, &endpoint)?;
            if !duplicates
                && !seen.insert((e.dataset.clone(), e.collocation.clone(), e.element.clone()))
            {
                return Ok(true);
            }
            Ok(visit(e))
        })
    }

    fn axes(&self, request: &Request, depth: Level) -> Result<Axes> {
        self.0.schema().selector(request)?;
        let mut w = Writer::new();
        tool_request(request).encode(&mut w);
        w.int(depth_arg(depth));
        let endpoint = self.0.endpoint();
        let mut axes = Axes::new();
        self.stream(Message::Axes, w.bytes(), &mut |blob| {
            let e = AxesElement::decode(&mut Reader::new(&blob))
                .map_err(|e| Error::corrupt(format!("server {endpoint}: undecodable axes: {e}")))?;
            // The element's axes hold its dataset's keywords already when
            // anything below matched; its dataset key alone is no answer
            // (FDB5's server sends one for every dataset it visited).
            for (k, values) in e.axes {
                axes.entry(k).or_default().extend(values);
            }
            Ok(true)
        })?;
        Ok(axes)
    }

    fn inspect(&self, request: &Request) -> Result<Vec<ListElement>> {
        self.0.schema().expand(request)?;
        let mut w = Writer::new();
        tool_request(request).encode(&mut w);
        let mut out = Vec::new();
        let endpoint = self.0.endpoint();
        let mut decoder = ElementDecoder::default();
        self.stream(Message::Inspect, w.bytes(), &mut |blob| {
            out.push(decoder.decode(&blob, &endpoint)?);
            Ok(true)
        })?;
        Ok(out)
    }
}

impl Catalogue for RemoteCatalogue {
    fn writer(&self, dataset: &DatasetKey, _schema: &Schema) -> Result<Box<dyn CatalogueWriter>> {
        Ok(Box::new(RemoteCatalogueWriter(self.0.link(dataset)?)))
    }

    fn datasets(&self) -> Result<Vec<DatasetKey>> {
        let mut out = Vec::new();
        self.list(&Request::new(), Level::Dataset, false, &mut |e| {
            out.push(e.dataset);
            true
        })?;
        Ok(out)
    }

    /// Refused: the protocol has no way to read a dataset's index; list,
    /// axes and retrieve are answered by the server
    /// ([`Catalogue::queries`]).
    fn reader(&self, dataset: &DatasetKey) -> Result<Option<Arc<dyn DatasetReader>>> {
        Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "reading the index of {} through the catalogue server {}: FDB5's protocol answers \
                 list, axes and retrieve only",
                dataset.braced(),
                self.0.endpoint()
            ),
        ))
    }

    fn describe(&self, dataset: &DatasetKey) -> String {
        format!("{} on fdb://{}", dataset.braced(), self.0.endpoint())
    }

    /// Told by the server (`fieldstore serve`'s `Watch`), else polling
    /// (FDB5's servers have no notifications).
    fn waiter(&self) -> Result<Box<dyn ChangeWaiter>> {
        self.watch(&[])
    }

    /// Told by the server only of the flushes `request` names.
    fn waiter_for(&self, request: &Request) -> Result<Box<dyn ChangeWaiter>> {
        let mut w = crate::Writer::new();
        super::convert::tool_request(request).encode(&mut w);
        self.watch(w.bytes())
    }

    fn maintenance(&self) -> Option<&dyn CatalogueMaintenance> {
        None
    }

    fn damaged_datasets(&self) -> Option<&dyn DamagedDatasets> {
        None
    }

    fn mover(&self) -> Option<&dyn DatasetMover> {
        None
    }

    fn queries(&self) -> Option<&dyn CatalogueQueries> {
        Some(self)
    }
}

impl RemoteCatalogue {
    /// A waiter registered with `Watch` (its payload: the request, or
    /// nothing for every flush), else polling (FDB5's servers have no
    /// notifications).
    fn watch(&self, payload: &[u8]) -> Result<Box<dyn ChangeWaiter>> {
        if !self.0.pushes_flushes() {
            return Ok(Box::new(PollingWaiter::new(POLL_MAX)));
        }
        let mut client = self.0.query_client()?;
        let (request, _) = client.call(Message::Watch, payload)?;
        Ok(Box::new(PushedWaiter {
            client,
            request,
            endpoint: self.0.endpoint(),
        }))
    }
}

/// Waits for the server's word of a flush: registered (its `Watch`
/// answered) before the caller's first look, so no flush after it is
/// missed.
struct PushedWaiter {
    client: super::connection::Mailbox,
    request: u32,
    endpoint: String,
}

impl ChangeWaiter for PushedWaiter {
    /// The server's word names no dataset (and the watch lists through
    /// the server, one request per look, whatever changed): `Unknown`.
    fn wait(&mut self, timeout: std::time::Duration) -> Result<Changes> {
        let mut told = false;
        let mut wait = timeout;
        // Every word already here counts as one change.
        while let Some((h, payload)) = self.client.recv_within(wait)? {
            if h.request_id == self.request {
                match h.message {
                    Message::Blob => told = true,
                    Message::Error => {
                        return Err(super::connection::server_error(&self.endpoint, &payload))
                    }
                    _ => {}
                }
            }
            if told {
                wait = std::time::Duration::ZERO;
            }
        }
        Ok(Changes::Unknown)
    }

    fn mechanism(&self) -> String {
        format!("told of flushes by {}", self.endpoint)
    }

    fn found(&mut self) {}
}

/// One dataset's catalogue writer: its half of the dataset's [`Link`].
struct RemoteCatalogueWriter(Arc<Mutex<Link>>);

impl CatalogueWriter for RemoteCatalogueWriter {
    fn insert(
        &mut self,
        collocation: &CollocationKey,
        element: &ElementKey,
        location: &FieldLocation,
    ) -> Result<()> {
        lock(&self.0).insert(collocation, element, location)
    }

    fn flush(&mut self) -> Result<()> {
        lock(&self.0).flush_catalogue()
    }

    /// Never known for certain: the server may have committed before its
    /// answer was lost.
    fn last_flush_invisible(&self) -> bool {
        false
    }

    fn schema_text(&self) -> Option<Arc<str>> {
        None
    }
}
