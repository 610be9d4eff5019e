//! The publisher: a thread that follows the store's flushes and groups
//! each look's fields into notifications, and the caller's thread, which
//! posts them in order, records each acknowledged one in the state file,
//! and keeps what the server does not take pending.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fieldstore::{Error, ErrorKind, FieldStore, Request, Result, Since, WatchOptions};

use crate::identifier::IdentifierMap;
use crate::journal::{Journal, Recovered};
use crate::notification::{group, Pending};
use crate::sink::{PostError, Sink};

/// How [`publish`] runs.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// The event type and its identifier keys.
    pub map: IdentifierMap,
    /// Which store the payloads name.
    pub store: String,
    /// The state file ([`Journal`]).
    pub state: PathBuf,
    /// With no state file yet: announce only what is flushed from now on
    /// (the fields already there are recorded as notified), instead of
    /// announcing them too. With a state file, everything it does not
    /// record is announced, whatever this says.
    pub since_now: bool,
    /// Poll the store instead of waiting for its notifications.
    pub polling: bool,
    /// Stop reading the store while this many notifications are pending.
    pub max_pending: usize,
    /// The longest wait between two attempts to post.
    pub max_backoff: Duration,
    /// Stop following the store after this long (then post what is
    /// pending, for at most `drain`).
    pub timeout: Option<Duration>,
    /// After the store was followed to the end, how long to keep trying to
    /// post what is still pending before giving up on this run.
    pub drain: Duration,
}

/// What [`publish`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishStats {
    /// Looks that found fields (one or more flushes each).
    pub looks: u64,
    /// Fields announced.
    pub fields: u64,
    /// Fields skipped at start: the state file records them as notified.
    pub already_notified: u64,
    /// Notifications the server accepted.
    pub posted: u64,
    /// Of those, how many may have reached listeners before: posted
    /// before a restart but never acknowledged, or posted again after an
    /// attempt that got no reply.
    pub possible_duplicates: u64,
    /// Attempts to post that failed (each retried).
    pub failed_attempts: u64,
}

enum Message {
    Batch(Vec<Pending>, u64),
    Baseline(Vec<(String, String)>),
    Note(String),
    Failed(Error),
}

/// Follow what `request` names in `fs` and post each look's fields to
/// `sink`, until the watch ends (`timeout`, or an error).
///
/// `log` gets one line per event worth an operator's attention: the
/// start, a server that stops answering or refuses (with how much is
/// pending), its return.
///
/// # Errors
/// The state file cannot be read or written; the watch fails (a wiped
/// dataset: `NotFound`); notifications still pending `drain` after the
/// watch ended (`Unavailable`: they are kept for the next run, since the
/// state file does not record them).
pub fn publish(
    fs: Arc<FieldStore>,
    request: &Request,
    options: &PublishOptions,
    sink: &mut dyn Sink,
    log: &mut dyn FnMut(&str),
) -> Result<PublishStats> {
    let (mut journal, recovered) = Journal::open(&options.state)?;
    if recovered.fresh {
        log(&format!(
            "state file {} created: {}",
            options.state.display(),
            if options.since_now {
                "announcing what is flushed from now on"
            } else {
                "announcing every field the request names, those already there first"
            }
        ));
    } else {
        log(&format!(
            "state file {}: resuming after {} notified fields{}",
            options.state.display(),
            recovered.notified.len(),
            if recovered.unacknowledged.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} fields were posted without an acknowledgement and are posted again \
                     (counted as possible duplicates)",
                    recovered.unacknowledged.len()
                )
            }
        ));
    }
    let (tx, rx) = mpsc::sync_channel::<Message>(2);
    let watch_options = WatchOptions {
        since: Since::Start,
        timeout: options.timeout,
        polling: options.polling,
        ..WatchOptions::default()
    };
    let baseline = recovered.fresh && options.since_now;
    let map = options.map.clone();
    let store = options.store.clone();
    let request = request.clone();
    let follower = std::thread::Builder::new()
        .name("notify-follow".into())
        .spawn(move || {
            if let Err(e) = follow(
                &fs,
                &request,
                watch_options,
                recovered,
                baseline,
                &map,
                &store,
                &tx,
            ) {
                let _ = tx.send(Message::Failed(e));
            }
        })
        .map_err(|e| Error::io("cannot start the thread that follows the store", e))?;
    let mut poster = Poster {
        journal: &mut journal,
        sink,
        pending: VecDeque::new(),
        stats: PublishStats::default(),
        ended: false,
        failure: None,
        max_pending: options.max_pending.max(1),
    };
    let result = poster.run(&rx, options, log);
    drop(rx);
    let _ = follower.join();
    result
}

/// The follower thread: one batch of notifications per look.
#[allow(clippy::too_many_arguments)]
fn follow(
    fs: &Arc<FieldStore>,
    request: &Request,
    options: WatchOptions,
    mut recovered: Recovered,
    baseline: bool,
    map: &IdentifierMap,
    store: &str,
    tx: &mpsc::SyncSender<Message>,
) -> Result<()> {
    let mut watch = fs.watch_shared(request, options)?;
    let _ = tx.send(Message::Note(format!(
        "following the store ({})",
        watch.mechanism()
    )));
    // The first look's fields are those already there.
    let mut initial = watch.queued();
    while let Some(first) = watch.next() {
        let mut events = vec![first?];
        while watch.queued() > 0 {
            match watch.next() {
                Some(e) => events.push(e?),
                None => break,
            }
        }
        let mut skipped = 0;
        if initial > 0 {
            initial = 0;
            if baseline {
                let fields = events
                    .iter()
                    .map(|e| {
                        let loc = e.element.location.as_ref().map(ToString::to_string);
                        (e.element.full_key().to_string(), loc.unwrap_or_default())
                    })
                    .collect();
                if tx.send(Message::Baseline(fields)).is_err() {
                    return Ok(());
                }
                continue;
            }
            let before = events.len();
            events.retain(|e| {
                let loc = e.element.location.as_ref().map(ToString::to_string);
                recovered.notified.get(&e.element.full_key().to_string()) != loc.as_ref()
            });
            skipped = (before - events.len()) as u64;
        }
        let mut batch = group(&events, map, fs.schema(), store);
        if !recovered.unacknowledged.is_empty() {
            for p in &mut batch {
                p.maybe_duplicate = p
                    .fields
                    .iter()
                    .any(|(k, _)| recovered.unacknowledged.contains(k));
            }
            recovered.unacknowledged.clear();
        }
        recovered.notified = std::collections::HashMap::new();
        if tx.send(Message::Batch(batch, skipped)).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

struct Poster<'a> {
    journal: &'a mut Journal,
    sink: &'a mut dyn Sink,
    pending: VecDeque<Pending>,
    stats: PublishStats,
    ended: bool,
    failure: Option<Error>,
    max_pending: usize,
}

fn describe(p: &Pending) -> String {
    let id: Vec<String> = p
        .notification
        .identifier
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    id.join(",")
}

impl Poster<'_> {
    fn take(&mut self, message: Message, log: &mut dyn FnMut(&str)) -> Result<()> {
        match message {
            Message::Batch(batch, skipped) => {
                self.stats.already_notified += skipped;
                if !batch.is_empty() {
                    self.stats.looks += 1;
                }
                self.stats.fields += batch.iter().map(|p| p.fields.len() as u64).sum::<u64>();
                self.pending.extend(batch);
            }
            Message::Baseline(fields) => {
                log(&format!(
                    "{} fields already there recorded as notified (not announced)",
                    fields.len()
                ));
                self.journal.baseline(&fields)?;
            }
            Message::Note(text) => log(&text),
            Message::Failed(e) => {
                self.failure = Some(e);
                self.ended = true;
            }
        }
        Ok(())
    }

    /// Take what the follower sent: wait for it when nothing is pending,
    /// at most `wait` otherwise (never while `max_pending` are pending).
    fn receive(
        &mut self,
        rx: &Receiver<Message>,
        wait: Option<Duration>,
        log: &mut dyn FnMut(&str),
    ) -> Result<()> {
        if self.ended {
            if let Some(w) = wait {
                std::thread::sleep(w);
            }
            return Ok(());
        }
        if self.pending.is_empty() {
            match rx.recv() {
                Ok(m) => self.take(m, log)?,
                Err(_) => self.ended = true,
            }
        } else if let Some(w) = wait {
            if self.pending.len() >= self.max_pending {
                std::thread::sleep(w);
                return Ok(());
            }
            match rx.recv_timeout(w) {
                Ok(m) => self.take(m, log)?,
                Err(RecvTimeoutError::Timeout) => return Ok(()),
                Err(RecvTimeoutError::Disconnected) => self.ended = true,
            }
        }
        while !self.ended && self.pending.len() < self.max_pending {
            match rx.try_recv() {
                Ok(m) => self.take(m, log)?,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => self.ended = true,
            }
        }
        Ok(())
    }

    fn run(
        &mut self,
        rx: &Receiver<Message>,
        options: &PublishOptions,
        log: &mut dyn FnMut(&str),
    ) -> Result<PublishStats> {
        let first_backoff = Duration::from_millis(50);
        let mut backoff = first_backoff;
        let mut outage: Option<(Instant, PostError, Instant)> = None;
        let mut ended_at: Option<Instant> = None;
        loop {
            self.receive(rx, None, log)?;
            if self.ended && ended_at.is_none() {
                ended_at = Some(Instant::now());
            }
            let Some(head) = self.pending.front_mut() else {
                if self.ended {
                    break;
                }
                continue;
            };
            let seq = match head.seq {
                Some(s) => s,
                None => {
                    let s = self.journal.intent(&head.fields)?;
                    head.seq = Some(s);
                    s
                }
            };
            match self.sink.post(&head.notification) {
                Ok(()) => {
                    self.journal.acknowledged(seq)?;
                    self.stats.posted += 1;
                    self.stats.possible_duplicates += u64::from(head.maybe_duplicate);
                    self.pending.pop_front();
                    if let Some((since, _, _)) = outage.take() {
                        log(&format!(
                            "{} accepts notifications again after {:.1} s; {} pending",
                            self.sink.describe(),
                            since.elapsed().as_secs_f64(),
                            self.pending.len()
                        ));
                    }
                    backoff = first_backoff;
                }
                Err(e) => {
                    self.stats.failed_attempts += 1;
                    if matches!(e, PostError::NoReply(_)) {
                        // The server may have it already.
                        head.maybe_duplicate = true;
                    }
                    let now = Instant::now();
                    let say = match &outage {
                        None => true,
                        Some((_, last, said)) => {
                            *last != e || now.duration_since(*said) >= Duration::from_secs(10)
                        }
                    };
                    if say {
                        log(&format!(
                            "cannot post to {}: {e}; {} notification{} pending, kept (the oldest: {} \
                             with {} field{}); retrying every ≤ {:.1} s",
                            self.sink.describe(),
                            self.pending.len(),
                            if self.pending.len() == 1 { "" } else { "s" },
                            describe(&self.pending[0]),
                            self.pending[0].fields.len(),
                            if self.pending[0].fields.len() == 1 { "" } else { "s" },
                            options.max_backoff.as_secs_f64()
                        ));
                        let since = outage.as_ref().map_or(now, |o| o.0);
                        outage = Some((since, e, now));
                    }
                    if let Some(at) = ended_at {
                        if at.elapsed() >= options.drain {
                            break;
                        }
                    }
                    self.receive(rx, Some(backoff), log)?;
                    backoff = (backoff * 2).min(options.max_backoff);
                }
            }
        }
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        if !self.pending.is_empty() {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "{} notification{} still pending {:.1} s after the store was followed to \
                     the end ({}): the state file does not record them, so the next run \
                     posts them",
                    self.pending.len(),
                    if self.pending.len() == 1 { "" } else { "s" },
                    options.drain.as_secs_f64(),
                    outage.map_or_else(String::new, |o| o.1.to_string())
                ),
            ));
        }
        Ok(self.stats.clone())
    }
}
