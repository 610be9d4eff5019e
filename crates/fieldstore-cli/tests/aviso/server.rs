//! A real `aviso-server` (crates.io 0.13.1, built and cached by
//! scripts/test-aviso.sh) on loopback: in-memory backend, authentication
//! off, Aviso's example `mars` schema.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `mars` event type of Aviso's example configuration
/// (`configuration/config.yaml.example`), without its authentication.
const SCHEMA: &str = r#"notification_schema:
  mars:
    payload:
      required: false
    topic:
      base: "mars"
      key_order: ["class", "expver", "domain", "date", "time", "stream", "step"]
    identifier:
      class:
        type: StringHandler
        max_length: 2
        required: true
      date:
        type: DateHandler
        canonical_format: "%Y%m%d"
        required: false
      domain:
        type: EnumHandler
        values: ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z"]
        required: false
      expver:
        type: ExpverHandler
        default: "0001"
        required: false
      step:
        type: IntHandler
        range: [0, 100000]
        required: false
      stream:
        type: StringHandler
        required: false
      time:
        type: TimeHandler
        required: false
"#;

/// The server binary, from `FIELDSTORE_AVISO_SERVER`.
pub(crate) fn binary() -> Option<PathBuf> {
    std::env::var_os("FIELDSTORE_AVISO_SERVER")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// A running server; killed when dropped.
pub(crate) struct Server {
    child: Option<Child>,
    pub(crate) port: u16,
    config: PathBuf,
    log: PathBuf,
    binary: PathBuf,
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    l.local_addr().expect("address").port()
}

impl Server {
    /// Write its configuration into `dir` and start it on a free port.
    pub(crate) fn start(binary: &Path, dir: &Path) -> Server {
        let port = free_port();
        let config = dir.join("aviso-server.yaml");
        std::fs::write(
            &config,
            format!(
                "application:\n  host: \"127.0.0.1\"\n  port: {port}\n  base_url: \"http://127.0.0.1:{port}\"\n  \
                 static_files_path: \"{}\"\nlogging:\n  level: warn\n  format: json\nauth:\n  enabled: false\n\
                 watch_endpoint:\n  sse_heartbeat_interval_sec: 5\n  connection_max_duration_sec: 3600\n  \
                 replay_batch_size: 100\n  max_historical_notifications: 100000\n  replay_batch_delay_ms: 0\n  \
                 concurrent_notification_processing: 15\nnotification_backend:\n  kind: in_memory\n  in_memory:\n    \
                 max_history_per_topic: 100\n    max_topics: 100000\n{SCHEMA}",
                dir.display()
            ),
        )
        .expect("write the server's config");
        let mut s = Server {
            child: None,
            port,
            config,
            log: dir.join("aviso-server.log"),
            binary: binary.to_path_buf(),
        };
        s.restart();
        s
    }

    /// `http://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Start it (again, on the same port) and wait until `/health` answers.
    pub(crate) fn restart(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("server log");
        let child = Command::new(&self.binary)
            .env("AVISOSERVER_CONFIG_FILE", &self.config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start aviso-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.healthy() {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "aviso-server exited ({status}): {}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "aviso-server not healthy after 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn healthy(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        if s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let mut reply = String::new();
        let _ = s.read_to_string(&mut reply);
        reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200")
    }

    /// SIGKILL it.
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
