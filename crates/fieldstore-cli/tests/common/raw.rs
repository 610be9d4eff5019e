//! A raw client of FDB5's remote protocol, for tests that send what
//! FDB5's clients would not.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use fieldstore_remote::archive::{CatalogueBlob, StoreBlob};
use fieldstore_remote::frame::{encode_frame, read_frame};
use fieldstore_remote::key::Key;
use fieldstore_remote::location::FieldLocation;
use fieldstore_remote::session::{Endpoint, SessionId};
use fieldstore_remote::startup::ClientStartup;
use fieldstore_remote::value::Value;
use fieldstore_remote::{Message, Reader, Writer};

/// A raw client: one connection (single-connection mode), handshake done.
pub struct Raw {
    pub s: TcpStream,
}

impl Raw {
    pub fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        Raw { s }
    }

    pub fn send(&mut self, m: Message, control: bool, client: u32, request: u32, payload: &[u8]) {
        let f = encode_frame(m, control, client, request, payload).expect("frame");
        self.s.write_all(&f).expect("send");
    }

    pub fn recv(&mut self) -> (fieldstore_remote::Header, Vec<u8>) {
        read_frame(&mut self.s, 1 << 30).expect("a frame")
    }

    pub fn startup(port: u16) -> Raw {
        Raw::startup_as(port, 1)
    }

    /// [`Raw::startup`] as process `pid` of host `test`: connections of
    /// one process share what they park.
    pub fn startup_as(port: u16, pid: i32) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        Raw::startup_on(s, port, pid)
    }

    /// [`Raw::startup_as`] on a socket already connected to `port`.
    pub fn startup_on(s: TcpStream, port: u16, pid: i32) -> Raw {
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut raw = Raw { s };
        let startup = ClientStartup {
            session: SessionId {
                host: "test".into(),
                pid,
                time: 2,
                random: 3,
            },
            endpoint: Endpoint {
                host: "localhost".into(),
                port: i32::from(port),
            },
            protocol_version: 3,
            config: Value::Map(vec![(
                Value::String("NumberOfConnections".into()),
                Value::List(vec![Value::Number(1)]),
            )]),
        };
        let mut w = Writer::new();
        startup.encode(&mut w);
        raw.send(Message::Startup, true, 0, 0, w.bytes());
        let (h, _) = raw.recv();
        assert_eq!(h.message, Message::Startup);
        raw
    }

    /// The store's port, from this catalogue connection's `Stores` reply.
    pub fn store_port(&mut self) -> u16 {
        self.send(Message::Stores, true, 1, 1, b"");
        let (_, stores) = self.recv();
        let stores =
            fieldstore_remote::elements::Stores::decode(&mut Reader::new(&stores)).expect("stores");
        u16::try_from(stores.stores[0].1[0].port).expect("port")
    }

    /// FDB5's store step for `client` on a store connection: `Store`,
    /// then the field's bytes; the location the store answers.
    pub fn park(&mut self, client: u32, db: &Key, idx: &Key, data: &[u8]) -> FieldLocation {
        self.send(Message::Store, true, client, 1, b"");
        assert_eq!(self.recv().0.message, Message::Received);
        let mut w = Writer::new();
        StoreBlob {
            db_key: db.clone(),
            idx_key: idx.clone(),
            data,
        }
        .encode(&mut w);
        self.send(Message::Blob, false, client, 1, w.bytes());
        let (h, loc) = self.recv();
        assert_eq!(h.message, Message::Store);
        FieldLocation::decode(&mut Reader::new(&loc)).expect("location")
    }

    /// FDB5's catalogue step for `client` on a catalogue connection, up to
    /// its flush: `Schema` naming the dataset, `Archive`, the blob.
    pub fn index(&mut self, client: u32, db: &Key, idx: Key, datum: Key, location: FieldLocation) {
        let mut w = Writer::new();
        db.encode(&mut w);
        self.send(Message::Schema, true, client, 2, w.bytes());
        assert_eq!(self.recv().0.message, Message::Received);
        self.send(Message::Archive, true, client, 3, b"");
        assert_eq!(self.recv().0.message, Message::Received);
        let mut w = Writer::new();
        CatalogueBlob {
            idx_key: idx,
            datum_key: datum,
            location,
        }
        .encode(&mut w);
        self.send(Message::Blob, false, client, 3, w.bytes());
    }

    /// Whether the server closed the connection (reads end).
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 64];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }
}

/// A field the raw tests archive: `rd-fc.grib`'s bytes and its dataset,
/// collocation and element keys as FDB5's client sends them.
pub fn rd_fc_field() -> (Vec<u8>, Key, Key, Key) {
    let grib = std::fs::read(super::repo().join("tests/fixtures/grib/rd-fc.grib")).expect("grib");
    let db = Key::new([
        ("class", "rd"),
        ("expver", "xxxx"),
        ("stream", "oper"),
        ("date", "20201102"),
        ("time", "0000"),
        ("domain", "g"),
    ]);
    let idx = Key::new([("type", "fc"), ("levtype", "sfc")]);
    let datum = Key::new([("step", "12"), ("param", "166")]);
    (grib, db, idx, datum)
}
