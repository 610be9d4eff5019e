//! Commit measurement: W writers of one dataset flushing at the same
//! instant, each step, on a row of S3 log slots. Today's commit (the
//! engine's `slots::publish`: a conditional PUT into the first free slot;
//! a loser lists the end and tries there) against a combining commit, in
//! which a loser stops racing with its own record: it PUTs the record as a
//! *proposal* under a key of its own, then races with a BATCH record that
//! names every proposal it lists, its own included; a loser of that race
//! GETs the slot it lost and is done when the winner's batch names its
//! proposal: of W writers losing one slot, the next slot's winner commits
//! all it listed. In herd mode a writer whose last flush lost a race
//! proposes at once. Each run's log is replayed and must hold every
//! writer's records once, in order. Needs a server: `S3_ENDPOINT`, `S3_ACCESS`,
//! `S3_SECRET` (`bench/s3/weed.sh` starts one). Run:
//! `cargo test -p fieldstore-s3 --release --lib herd_bench -- --ignored --nocapture`
//! (`HERD_WRITERS`, `HERD_STEPS`, `HERD_VALUE` to change the defaults).
//! Results: `docs/experiments/2026-11-rados-slots.md`, "Combining".

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use fieldstore_core::engine::slots::{self, SlotLog};
use fieldstore_core::Result;

use crate::client::Client;
use crate::config::S3Config;

/// Requests by kind: conditional PUT, PUT, GET (and HEAD), listing.
#[derive(Default)]
struct Requests {
    put_new: AtomicU64,
    lost: AtomicU64,
    put: AtomicU64,
    get: AtomicU64,
    list: AtomicU64,
}

impl Requests {
    fn take(&self) -> [u64; 5] {
        [&self.put_new, &self.lost, &self.put, &self.get, &self.list]
            .map(|c| c.swap(0, Ordering::Relaxed))
    }
}

/// One run's slots, `<run>/log/<20 digits>`, and its proposals,
/// `<run>/prop/<the slot its writer lost, 20 digits>/<writer>.<seq>`.
struct Row<'a> {
    client: &'a Client,
    bucket: &'a str,
    run: String,
    n: &'a Requests,
}

impl Row<'_> {
    fn slot_key(&self, n: u64) -> String {
        format!("{}/log/{n:020}", self.run)
    }

    fn after(&self, n: Option<u64>, max: usize) -> Result<Vec<u64>> {
        self.n.list.fetch_add(1, Ordering::Relaxed);
        let log = format!("{}/log/", self.run);
        let after = n.map_or_else(|| log.clone(), |n| self.slot_key(n));
        let keys = self.client.keys_after(self.bucket, &log, &after, max)?;
        Ok(keys
            .iter()
            .filter_map(|k| k[log.len()..].parse().ok())
            .collect())
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        self.n.put.fetch_add(1, Ordering::Relaxed);
        self.client.put(self.bucket, key, value, None)
    }

    fn get_key(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
        self.n.get.fetch_add(1, Ordering::Relaxed);
        self.client.get(self.bucket, key, buf)
    }

    /// The proposals of writers that lost slot `epoch` or a later one.
    fn proposals_from(&self, epoch: u64) -> Result<Vec<String>> {
        self.n.list.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("{}/prop/", self.run);
        let after = match epoch {
            0 => prefix.clone(),
            e => format!("{prefix}{:020}/~", e - 1),
        };
        self.client.keys_after(self.bucket, &prefix, &after, 1000)
    }
}

impl SlotLog for Row<'_> {
    fn get(&self, n: u64, buf: &mut Vec<u8>) -> Result<bool> {
        self.get_key(&self.slot_key(n), buf)
    }

    fn exists(&self, n: u64) -> Result<bool> {
        self.n.get.fetch_add(1, Ordering::Relaxed);
        Ok(self.client.head(self.bucket, &self.slot_key(n))?.is_some())
    }

    fn next_after(&self, n: u64) -> Result<Option<u64>> {
        Ok(self.after(Some(n), 1)?.first().copied())
    }

    fn end_from(&self, from: u64) -> Result<Option<u64>> {
        let listed = self.after(from.checked_sub(1), 1000)?;
        Ok(Some(listed.last().map_or(from, |l| l + 1)))
    }

    fn insert(&self, n: u64, value: &[u8]) -> Result<bool> {
        self.n.put_new.fetch_add(1, Ordering::Relaxed);
        let won = self.client.put_new(self.bucket, &self.slot_key(n), value)?;
        if !won {
            self.n.lost.fetch_add(1, Ordering::Relaxed);
        }
        Ok(won)
    }

    fn name(&self, n: u64) -> String {
        self.slot_key(n)
    }
}

/// A writer's record: `I<writer>.<seq>` and padding to `len` bytes.
fn inline(w: usize, seq: u64, len: usize) -> Vec<u8> {
    let mut v = format!("I{w:04}.{seq:06}\n").into_bytes();
    v.resize(len.max(v.len()), b'.');
    v
}

/// The writer and sequence number of a record [`inline`] made.
fn writer_seq(rec: &[u8]) -> (usize, u64) {
    let head = String::from_utf8_lossy(&rec[1..]);
    let head = head.lines().next().unwrap_or_default();
    let (w, s) = head.split_once('.').expect("writer.seq");
    (w.parse().expect("writer"), s.parse().expect("seq"))
}

/// A batch: `B` and the proposals' keys, a line each.
fn batch(keys: &[String]) -> Vec<u8> {
    let mut v = b"B".to_vec();
    for k in keys {
        v.extend_from_slice(k.as_bytes());
        v.push(b'\n');
    }
    v
}

/// The proposals' keys a [`batch`] names; `None` for any other value.
fn batch_keys(value: &[u8]) -> Option<Vec<String>> {
    let names = value.strip_prefix(b"B")?;
    Some(
        String::from_utf8_lossy(names)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

/// Today's commit: the engine's publish.
fn publish_racing(row: &Row<'_>, end: u64, value: &[u8]) -> Result<u64> {
    slots::publish(row, end, value, &mut || Ok(()))
}

/// The combining commit (module doc). `committed`: proposals this writer
/// saw in batches it read, left out of its own batches.
fn publish_combining(
    row: &Row<'_>,
    end: u64,
    value: &[u8],
    me: &str,
    committed: &mut HashSet<String>,
    herd: &mut Option<bool>,
) -> Result<u64> {
    // `herd`: `None` always tries the record itself first; `Some(lost)`
    // skips that try while the writer's last flush lost a race.
    let skip = herd.unwrap_or(false);
    if !skip && row.insert(end, value)? {
        return Ok(end);
    }
    let mut lost = !skip;
    let mut done = |slot: u64, lost: bool| {
        if let Some(h) = herd {
            *h = lost;
        }
        Ok(slot)
    };
    let mine = format!("{}/prop/{end:020}/{me}", row.run);
    row.put(&mine, value)?;
    // Every slot before `end` exists; `end` itself only if it was tried.
    let known = if skip { end } else { end + 1 };
    let mut slot = row.end_from(known)?.unwrap_or(known);
    let mut buf = Vec::new();
    loop {
        let listed: Vec<String> = row
            .proposals_from(end)?
            .into_iter()
            .filter(|k| !committed.contains(k))
            .collect();
        if row.insert(slot, &batch(&listed))? {
            committed.extend(listed);
            return done(slot, lost);
        }
        lost = true;
        let named = if row.get(slot, &mut buf)? {
            batch_keys(&buf)
        } else {
            None
        };
        if let Some(named) = named {
            let included = named.contains(&mine);
            committed.extend(named);
            if included {
                return done(slot, lost);
            }
        }
        slot = row.end_from(slot + 1)?.unwrap_or(slot + 1);
    }
}

/// Every slot of `run` in order, proposals read where batches name them,
/// each writer's records kept once (a proposal named again later is the
/// same record): per writer, the sequence numbers in the order they became
/// visible.
fn replay(row: &Row<'_>) -> Result<BTreeMap<usize, Vec<u64>>> {
    let mut out: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut next = 0u64;
    let mut buf = Vec::new();
    let mut take = |rec: &[u8], out: &mut BTreeMap<usize, Vec<u64>>| {
        let (w, s) = writer_seq(rec);
        if seen.insert((w, s)) {
            out.entry(w).or_default().push(s);
        }
    };
    while row.get(next, &mut buf)? {
        if let Some(keys) = batch_keys(&buf) {
            for k in keys {
                let mut p = Vec::new();
                assert!(
                    row.get_key(&k, &mut p)?,
                    "slot {next} names {k}, which is missing"
                );
                take(&p, &mut out);
            }
        } else {
            take(&buf, &mut out);
        }
        next += 1;
    }
    Ok(out)
}

fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(|v| v.trim().parse().expect("a number"))
        .collect()
}

#[test]
#[ignore = "a measurement: needs S3_ENDPOINT, S3_ACCESS, S3_SECRET (bench/s3/weed.sh)"]
fn herd_bench() {
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set"));
    let mut cfg = S3Config::new(env("S3_ENDPOINT"), format!("herd-{}", std::process::id()));
    cfg.credentials = Some((env("S3_ACCESS"), env("S3_SECRET"), None));
    let client = Client::connect(&cfg).expect("the S3 server");
    let writers = env_list("HERD_WRITERS", "1,2,4,8,16");
    let steps = env_list("HERD_STEPS", "20")[0] as u64;
    let value_len = env_list("HERD_VALUE", "2000")[0];
    println!("writers  commit     ms/step(median)  per flush: cond.PUT  lost  PUT  GET  LIST  all");
    for &w in &writers {
        for variant in 0..3 {
            let combining = variant > 0;
            let n = Requests::default();
            let name = ["racing", "combining", "comb+herd"][variant];
            let run = format!("w{w}-{name}");
            let row = Row {
                client: &client,
                bucket: &cfg.bucket,
                run,
                n: &n,
            };
            let barrier = Arc::new(Barrier::new(w));
            let times: Vec<Vec<f64>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..w)
                    .map(|id| {
                        let (row, barrier) = (&row, barrier.clone());
                        s.spawn(move || {
                            let mut end = 0u64;
                            let mut committed = HashSet::new();
                            let mut herd = (variant == 2).then_some(false);
                            let mut times = Vec::new();
                            for seq in 0..steps {
                                let value = inline(id, seq, value_len);
                                barrier.wait();
                                let t = Instant::now();
                                let me = format!("{id:04}.{seq:06}");
                                let slot = if combining {
                                    publish_combining(
                                        row,
                                        end,
                                        &value,
                                        &me,
                                        &mut committed,
                                        &mut herd,
                                    )
                                } else {
                                    publish_racing(row, end, &value)
                                }
                                .expect("publish");
                                end = slot + 1;
                                times.push(t.elapsed().as_secs_f64() * 1e3);
                            }
                            times
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let [put_new, lost, put, get, list] = n.take();
            let mut per_step: Vec<f64> = (0..steps as usize)
                .map(|i| times.iter().map(|t| t[i]).fold(0.0, f64::max))
                .collect();
            per_step.sort_by(f64::total_cmp);
            let flushes = (w as u64 * steps) as f64;
            let f = |x: u64| x as f64 / flushes;
            println!(
                "{w:7}  {:9}  {:15.1}  {:19.2}  {:4.2}  {:3.2}  {:3.2}  {:4.2}  {:4.2}",
                name,
                per_step[per_step.len() / 2],
                f(put_new),
                f(lost),
                f(put),
                f(get),
                f(list),
                f(put_new + put + get + list),
            );
            // Every writer's records are in the log once each, in order.
            let seen = replay(&row).expect("replay");
            n.take();
            assert_eq!(seen.len(), w, "writers in the log");
            for (id, seqs) in seen {
                let want: Vec<u64> = (0..steps).collect();
                assert_eq!(seqs, want, "writer {id}'s records");
            }
        }
    }
}
