//! A raw client of FDB5's remote protocol, for tests that send what
//! FDB5's clients would not.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use fieldstore_remote::frame::{encode_frame, read_frame};
use fieldstore_remote::session::{Endpoint, SessionId};
use fieldstore_remote::startup::ClientStartup;
use fieldstore_remote::value::Value;
use fieldstore_remote::{Message, Writer};

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
