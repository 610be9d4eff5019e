//! Where notifications go: an Aviso server's `POST /api/v1/notification`.

use std::fmt;
use std::time::Duration;

use crate::notification::Notification;

/// Why a notification was not accepted. Either way it stays pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostError {
    /// The server cannot be reached: nothing was sent.
    Unreachable(String),
    /// Sent, but no reply came (a timeout, a connection cut): the server
    /// may have taken it, so posting it again may duplicate it.
    NoReply(String),
    /// The server answered, and not with 2xx.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The start of its reply's body.
        body: String,
    },
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostError::Unreachable(why) => write!(f, "no answer: {why}"),
            PostError::NoReply(why) => write!(f, "no reply: {why}"),
            PostError::Refused { status, body } => write!(f, "refused with HTTP {status}: {body}"),
        }
    }
}

/// Something that accepts notifications.
///
/// Contract: `post` returns `Ok` only once the notification was accepted
/// for delivery (Aviso's 2xx); it returns within a bounded time.
pub trait Sink {
    /// Post one notification.
    ///
    /// # Errors
    /// [`PostError`] when it was not accepted.
    fn post(&mut self, notification: &Notification) -> Result<(), PostError>;
    /// Where it posts (for the log).
    fn describe(&self) -> String;
}

/// An Aviso server (`aviso-server`), through one kept-alive HTTP
/// connection.
#[derive(Debug)]
pub struct AvisoHttp {
    agent: ureq::Agent,
    url: String,
    base: String,
}

impl AvisoHttp {
    /// The server at `base` (`http://host:port`, with or without a
    /// trailing `/`): posts to `{base}/api/v1/notification`, each waiting
    /// at most `timeout` for the whole exchange.
    ///
    /// # Errors
    /// `InvalidInput` for a URL that is not `http://…` (an `https://`
    /// server needs TLS, which this build does not have).
    pub fn new(base: &str, timeout: Duration) -> fieldstore::Result<AvisoHttp> {
        let base = base.trim_end_matches('/').to_string();
        let rest = base.strip_prefix("http://").ok_or_else(|| {
            fieldstore::Error::invalid_input(format!(
                "the Aviso URL '{base}' is not http://HOST:PORT{}",
                if base.starts_with("https://") {
                    " (https is not built in: put a TLS proxy in front, or build \
                     fieldstore-aviso with ureq's rustls feature)"
                } else {
                    ""
                }
            ))
        })?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(fieldstore::Error::invalid_input(format!(
                "the Aviso URL '{base}' names no host"
            )));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build();
        Ok(AvisoHttp {
            agent: ureq::Agent::new_with_config(config),
            url: format!("{base}/api/v1/notification"),
            base,
        })
    }
}

impl Sink for AvisoHttp {
    fn post(&mut self, notification: &Notification) -> Result<(), PostError> {
        let body = serde_json::to_vec(notification)
            .map_err(|e| PostError::Unreachable(format!("cannot encode the notification: {e}")))?;
        let mut reply = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .send(&body[..])
            .map_err(|e| {
                let refused = matches!(
                    &e,
                    ureq::Error::ConnectionFailed
                        | ureq::Error::HostNotFound
                        | ureq::Error::BadUri(_)
                ) || matches!(&e, ureq::Error::Io(io) if matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
                ));
                if refused {
                    PostError::Unreachable(e.to_string())
                } else {
                    PostError::NoReply(e.to_string())
                }
            })?;
        let status = reply.status().as_u16();
        let text = reply
            .body_mut()
            .with_config()
            .limit(64 * 1024)
            .read_to_string()
            .unwrap_or_default();
        if (200..300).contains(&status) {
            return Ok(());
        }
        let mut body: String = text.chars().take(300).collect();
        if body.is_empty() {
            body = "(empty reply)".to_string();
        }
        Err(PostError::Refused { status, body })
    }

    fn describe(&self) -> String {
        self.base.clone()
    }
}
