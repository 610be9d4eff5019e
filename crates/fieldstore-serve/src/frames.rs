//! Reading a client's frames within bounds: how long a connection may sit
//! idle, how long a frame may take once it starts, and how many bytes a
//! frame may hold before they arrive.
//!
//! A frame's payload is never allocated at the size its header claims:
//! small frames (at most [`SMALL`] bytes, most of the protocol's) are read
//! into a buffer of their size; a larger one grows as its bytes arrive, a
//! [`CHUNK`] at a time, each chunk's room taken from the connection's and
//! the server's [`Budget`] first. So a client that claims 250 MiB and
//! sends a trickle holds a trickle, and is closed at the frame's deadline.

use std::io::{self, BufRead, BufReader, Read};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fieldstore_remote::frame::{FrameError, Header, END_MARKER, HEADER_LEN};

use crate::budget::{Budget, Permit};

/// Frames up to this size are read without taking room from the budgets:
/// what a connection holds for them is bounded by its read buffers.
pub(crate) const SMALL: usize = 64 << 10;
/// Room taken from the budgets per step of a large frame.
const CHUNK: usize = 1 << 20;
/// Bytes of a large frame read at once straight into its payload (zeroed
/// just before: memory a client's claim alone never touches more of).
const STRAIGHT: usize = 256 << 10;
/// Bytes a connection's readers buffer (two readers per connection at
/// most: this and [`SMALL`] bound what a connection holds outside the
/// budgets).
pub(crate) const READ_BUFFER: usize = 64 << 10;

/// A connected socket, shared by its reader, its writer and whoever
/// closes it: one descriptor per connection (reads and writes go through
/// `&TcpStream`; writers serialise on a lock of their own, and shutting it
/// down needs none).
#[derive(Debug, Clone)]
pub(crate) struct Socket(Arc<TcpStream>);

impl Socket {
    /// Share `stream`.
    pub(crate) fn new(stream: TcpStream) -> Socket {
        Socket(Arc::new(stream))
    }

    /// The socket.
    pub(crate) fn stream(&self) -> &TcpStream {
        &self.0
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

impl io::Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self.0).write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        (&*self.0).write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&*self.0).flush()
    }
}

/// Why a connection ends.
#[derive(Debug)]
pub(crate) enum End {
    /// The client said `Exit` or closed between frames.
    Done,
    /// The client broke the protocol or a bound; the reason is logged.
    Bad(String),
}

impl From<FrameError> for End {
    fn from(e: FrameError) -> End {
        match e {
            FrameError::Closed => End::Done,
            other => End::Bad(other.to_string()),
        }
    }
}

/// One frame read: its header, its payload, and the room the payload
/// holds in the budgets (given back when the frame is dropped).
#[derive(Debug)]
pub(crate) struct Frame {
    /// The header.
    pub(crate) header: Header,
    /// The payload.
    pub(crate) payload: Vec<u8>,
    /// The payload's room.
    #[expect(dead_code, reason = "held for its drop, which gives the room back")]
    pub(crate) permit: Permit,
}

/// A socket's frames, read within deadlines and budgets.
pub(crate) struct FrameReader {
    inner: BufReader<Socket>,
    /// Largest payload accepted.
    limit: u32,
    /// The connection's budget, then the server's.
    budgets: [Arc<Budget>; 2],
    /// How long the connection may wait for a frame to start.
    idle: Duration,
    /// How long a frame may take once it starts.
    frame: Duration,
    /// The config keys of the two, for the log (the handshake's are
    /// `handshakeTimeout`).
    keys: (&'static str, &'static str),
    /// The read time-out the socket has now (set only when it changes).
    timeout: Option<Duration>,
}

impl FrameReader {
    /// Frames of `stream`, at most `limit` bytes of payload each, large
    /// ones within `budgets` (the connection's, then the server's).
    pub(crate) fn new(
        stream: Socket,
        limit: u32,
        budgets: [Arc<Budget>; 2],
        idle: Duration,
        frame: Duration,
    ) -> FrameReader {
        FrameReader {
            inner: BufReader::with_capacity(READ_BUFFER, stream),
            limit,
            budgets,
            idle,
            frame,
            keys: ("handshakeTimeout", "handshakeTimeout"),
            timeout: None,
        }
    }

    /// The bounds after the handshake (whose are shorter): `idleTimeout`
    /// and `frameTimeout`.
    pub(crate) fn set_bounds(&mut self, limit: u32, idle: Duration, frame: Duration) {
        self.limit = limit;
        self.idle = idle;
        self.frame = frame;
        self.keys = ("idleTimeout", "frameTimeout");
    }

    /// Bound the next blocking read by `left` (at most the shorter of the
    /// two bounds: a wait longer than that is made of several reads). The
    /// socket's time-out is changed only when it must be: in the steady
    /// state a frame costs no system call for its deadlines.
    fn set_timeout(&mut self, left: Duration) -> io::Result<()> {
        let tick = self.idle.min(self.frame);
        let want = left.clamp(Duration::from_millis(1), tick);
        let keep = self.timeout.is_some_and(|t| {
            if want == tick {
                t == tick
            } else {
                t.abs_diff(want) <= Duration::from_millis(250)
            }
        });
        if !keep {
            self.inner.get_ref().stream().set_read_timeout(Some(want))?;
            self.timeout = Some(want);
        }
        Ok(())
    }

    /// The next frame. `watching`: whether the connection may stay idle
    /// past the idle time-out (it is told of flushes: it only listens).
    ///
    /// # Errors
    /// [`End::Done`] at a clean end between frames; [`End::Bad`] naming
    /// the bound or the protocol rule broken.
    pub(crate) fn next(&mut self, watching: &dyn Fn() -> bool) -> Result<Frame, End> {
        // Wait for the frame's first byte, up to the idle time-out.
        let mut waiting = Instant::now();
        loop {
            if !self.inner.buffer().is_empty() {
                break;
            }
            let left = self.idle.saturating_sub(waiting.elapsed());
            self.set_timeout(left).map_err(io_end)?;
            match self.inner.fill_buf() {
                Ok([]) => return Err(End::Done),
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => {
                    if waiting.elapsed() >= self.idle {
                        if !watching() {
                            return Err(End::Bad(format!(
                                "idle for {} s ({})",
                                self.idle.as_secs(),
                                self.keys.0
                            )));
                        }
                        // A watcher only listens: another idle period.
                        waiting = Instant::now();
                    }
                }
                Err(e) => return Err(io_end(e)),
            }
        }
        let deadline = Instant::now() + self.frame;
        let mut hb = [0u8; HEADER_LEN];
        self.read_within(&mut hb, deadline, "header")?;
        let header = Header::decode(&hb, self.limit)?;
        let size = header.payload_size as usize;
        let mut permit = Permit::default();
        let mut payload = Vec::new();
        if size <= SMALL {
            payload.resize(size, 0);
            self.read_within(&mut payload, deadline, "payload")?;
        } else {
            // Room is taken a chunk ahead; memory is written only as
            // bytes arrive (capacity reserved ahead is not touched until
            // then): bytes a client only claims cost no memory.
            let mut room = 0;
            while payload.len() < size {
                if payload.len() == room {
                    let step = CHUNK.min(size - room);
                    self.take_room(&mut permit, step, size, deadline)?;
                    room += step;
                    payload.reserve(step);
                }
                self.append_within(&mut payload, room, deadline)?;
            }
        }
        let mut tail = [0u8; 4];
        self.read_within(&mut tail, deadline, "end marker")?;
        if tail != END_MARKER {
            return Err(FrameError::BadEndMarker(tail).into());
        }
        Ok(Frame {
            header,
            payload,
            permit,
        })
    }

    /// Take `step` more bytes of room for a frame of `size`, by
    /// `deadline`.
    fn take_room(
        &self,
        permit: &mut Permit,
        step: usize,
        size: usize,
        deadline: Instant,
    ) -> Result<(), End> {
        let budgets = [&self.budgets[0], &self.budgets[1]];
        permit
            .grow(&budgets, step as u64, deadline)
            .map_err(|full| {
                End::Bad(format!(
                "no room for a frame of {size} bytes within {} s ({}): {} of {} bytes ({}) held",
                self.frame.as_secs(),
                self.keys.1,
                full.in_use(),
                full.limit(),
                if Arc::ptr_eq(&full, &self.budgets[0]) {
                    "connectionMemoryLimit"
                } else {
                    "memoryLimit"
                }
            ))
            })
    }

    /// Append to `payload` what arrives, up to `upto` bytes in all, by
    /// `deadline`: what the read buffer holds, else one read straight into
    /// the payload (at most [`STRAIGHT`] bytes zeroed ahead of it).
    fn append_within(
        &mut self,
        payload: &mut Vec<u8>,
        upto: usize,
        deadline: Instant,
    ) -> Result<(), End> {
        let buffered = self.inner.buffer();
        if !buffered.is_empty() {
            let n = buffered.len().min(upto - payload.len());
            payload.extend_from_slice(&buffered[..n]);
            self.inner.consume(n);
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.late("payload"));
        }
        self.set_timeout(left).map_err(io_end)?;
        let at = payload.len();
        payload.resize(at + (upto - at).min(STRAIGHT), 0);
        loop {
            // The buffer is empty: reading past it loses nothing.
            match self.inner.get_mut().read(&mut payload[at..]) {
                Ok(0) => {
                    return Err(End::Bad(
                        "connection closed inside a frame (payload)".into(),
                    ))
                }
                Ok(n) => {
                    payload.truncate(at + n);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => return Err(self.late("payload")),
                Err(e) => return Err(io_end(e)),
            }
        }
    }

    /// Fill `buf` by `deadline`.
    fn read_within(&mut self, buf: &mut [u8], deadline: Instant, what: &str) -> Result<(), End> {
        let mut got = 0;
        while got < buf.len() {
            // Bytes already buffered cost no system call and no time-out.
            if self.inner.buffer().is_empty() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(self.late(what));
                }
                self.set_timeout(left).map_err(io_end)?;
            }
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(End::Bad(format!(
                        "connection closed inside a frame ({what})"
                    )))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => return Err(self.late(what)),
                Err(e) => return Err(io_end(e)),
            }
        }
        Ok(())
    }

    fn late(&self, what: &str) -> End {
        End::Bad(format!(
            "frame not whole within {} s ({}), waiting for its {what}",
            self.frame.as_secs(),
            self.keys.1
        ))
    }
}

/// Where `inner`, a part of `outer` (a payload decoded from it), starts
/// in it.
pub(crate) fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize)
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn io_end(e: io::Error) -> End {
    End::Bad(format!("i/o: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_remote::frame::write_frame;
    use fieldstore_remote::Message;
    use std::io::Write;
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (c, l.accept().unwrap().0)
    }

    fn reader(s: TcpStream, budget: u64, frame: Duration) -> FrameReader {
        let idle = Duration::from_millis(200);
        let mut r = FrameReader::new(
            Socket::new(s),
            256 << 20,
            [Budget::new(budget), Budget::new(budget)],
            idle,
            frame,
        );
        r.set_bounds(256 << 20, idle, frame);
        r
    }

    #[test]
    fn frames_small_and_large_are_read_and_their_room_given_back() {
        let (mut c, s) = pair();
        let mut r = reader(s, 8 << 20, Duration::from_secs(5));
        let big = vec![7u8; 3 << 20];
        std::thread::spawn(move || {
            write_frame(&mut c, Message::Blob, false, 1, 2, b"small").unwrap();
            write_frame(&mut c, Message::Blob, false, 1, 3, &big).unwrap();
            std::thread::sleep(Duration::from_secs(1));
        });
        let f = r.next(&|| false).unwrap();
        assert_eq!(f.payload, b"small");
        let f = r.next(&|| false).unwrap();
        assert_eq!(f.payload.len(), 3 << 20);
        assert_eq!(r.budgets[1].in_use(), 3 << 20);
        drop(f);
        assert_eq!(r.budgets[1].in_use(), 0);
    }

    #[test]
    fn a_claimed_size_holds_only_what_arrives_until_the_deadline() {
        let (mut c, s) = pair();
        let mut r = reader(s, 1 << 30, Duration::from_millis(300));
        // A header claiming 250 MiB, then a trickle.
        let h = Header::new(Message::Blob, false, 1, 1, 250 << 20);
        c.write_all(&h.encode().unwrap()).unwrap();
        c.write_all(&[0u8; 100]).unwrap();
        let started = Instant::now();
        let e = r.next(&|| false).unwrap_err();
        assert!(
            matches!(&e, End::Bad(m) if m.contains("frameTimeout")),
            "{e:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(r.budgets[1].in_use(), 0);
    }

    #[test]
    fn an_idle_connection_ends_unless_it_watches() {
        let (_c, s) = pair();
        let mut r = reader(s, 1 << 20, Duration::from_secs(1));
        let e = r.next(&|| false).unwrap_err();
        assert!(
            matches!(&e, End::Bad(m) if m.contains("idleTimeout")),
            "{e:?}"
        );
        // Watching, it waits on (until the client closes).
        let (c, s) = pair();
        let mut r = reader(s, 1 << 20, Duration::from_secs(1));
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            drop(c);
        });
        assert!(matches!(r.next(&|| true), Err(End::Done)));
    }

    #[test]
    fn no_room_within_the_deadline_ends_the_connection_naming_the_bound() {
        let (mut c, s) = pair();
        let mut r = reader(s, 2 << 20, Duration::from_millis(300));
        std::thread::spawn(move || {
            let _ = write_frame(&mut c, Message::Blob, false, 1, 1, &vec![1u8; 3 << 20]);
        });
        let e = r.next(&|| false).unwrap_err();
        assert!(
            matches!(&e, End::Bad(m) if m.contains("connectionMemoryLimit")),
            "{e:?}"
        );
    }
}
