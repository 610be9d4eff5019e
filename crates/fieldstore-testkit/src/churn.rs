//! Writers and readers racing wipes of their dataset (the "churn"
//! workload of the multi-process wipe test).
//!
//! Writer `w` archives rounds of [`Churn::per_round`] fields (`step =
//! round * per_round + j`, `number = w`) and flushes after each round. A
//! flush that fails because the dataset was wiped under it bumps the
//! writer's *generation* — the payload version of everything it archives
//! next — and the writer goes on with the next round, into the dataset
//! created anew. Between two failures a writer binds to one incarnation of
//! the dataset, so within one incarnation all of a writer's fields have one
//! generation.
//!
//! What a reader must see in one listing, whatever the wipes do: for each
//! writer, fields of one generation only (one incarnation: never half of
//! the old dataset and half of the new one), and whole rounds only (flushes
//! are atomic); every field it can read verifies (key and checksum). A
//! field whose bytes are gone when read (the wipe came between the listing
//! and the read) is allowed: that is the next incarnation's business.

use std::collections::{BTreeMap, BTreeSet};

use fieldstore::{ErrorKind, FieldStore, Key, ListOptions, Request, Result};

use crate::payload;
use crate::support::{key, request};

/// The shape of the churn workload.
#[derive(Debug, Clone)]
pub struct Churn {
    /// The dataset's `expver`.
    pub expver: String,
    /// Fields per round (one flush each).
    pub per_round: usize,
}

/// What a writer did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriterLog {
    /// Rounds flushed.
    pub flushed: usize,
    /// Flushes that failed because the dataset was wiped.
    pub wiped: usize,
}

impl Churn {
    /// The key of field `j` of round `round` of writer `writer`.
    pub fn key(&self, writer: usize, round: usize, j: usize) -> Key {
        key(&format!(
            "class=od,expver={},stream=enfo,date=20240101,time=0000,type=pf,levtype=pl,step={},number={writer},levelist=500,param=130",
            self.expver,
            round * self.per_round + j,
        ))
    }

    /// The dataset's request.
    pub fn request(&self) -> Request {
        request(&format!(
            "class=od,expver={},stream=enfo,date=20240101,time=0000",
            self.expver
        ))
    }

    /// Write rounds until `stop()` says so after a flush attempt; `report`
    /// gets a line per round (`flushed <round>` or `wiped <round>`).
    ///
    /// # Errors
    /// Any error other than a flush refused because the dataset was wiped.
    pub fn write(
        &self,
        fs: &FieldStore,
        writer: usize,
        stop: &dyn Fn() -> bool,
        report: &mut dyn FnMut(&str),
    ) -> Result<WriterLog> {
        let mut log = WriterLog::default();
        let mut generation = 1u32;
        for round in 0.. {
            for j in 0..self.per_round {
                let k = self.key(writer, round, j);
                let canonical = fs.schema().split(&k)?.full_key().to_string();
                let len = payload::length_for(&canonical, generation, 28, 600);
                fs.archive(&k, &payload::make(&canonical, generation, len))?;
            }
            match fs.flush() {
                Ok(()) => {
                    log.flushed += 1;
                    report(&format!("flushed {round}"));
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    log.wiped += 1;
                    generation += 1;
                    report(&format!("wiped {round}"));
                }
                Err(e) => return Err(e),
            }
            if stop() {
                break;
            }
        }
        Ok(log)
    }

    /// One poll: list the dataset and read every listed field; check the
    /// rules of the module docs. Returns the fields seen per writer.
    ///
    /// # Errors
    /// A broken rule, as a message; store errors other than a field's
    /// bytes gone.
    pub fn poll(&self, fs: &FieldStore) -> std::result::Result<BTreeMap<usize, usize>, String> {
        let listed = fs
            .list(&self.request(), ListOptions::default())
            .map_err(|e| format!("list: {e}"))?;
        let mut seen: BTreeMap<usize, (BTreeSet<u32>, BTreeSet<usize>)> = BTreeMap::new();
        let mut buf = Vec::new();
        for e in &listed {
            let k = e.full_key();
            let writer: usize = k
                .get("number")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("listed {k}: no writer number"))?;
            let step: usize = k
                .get("step")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("listed {k}: no step"))?;
            let Some(loc) = &e.location else {
                return Err(format!("listed {k} without a location"));
            };
            let entry = seen.entry(writer).or_default();
            entry.1.insert(step);
            match fs.store().read(loc, &mut buf) {
                Ok(()) => {
                    let generation = payload::verify(&buf, &k.to_string())
                        .map_err(|err| format!("{loc} of {k}: {err}"))?;
                    entry.0.insert(generation);
                }
                Err(err) if err.kind() == ErrorKind::NotFound => {}
                Err(err) => return Err(format!("reading {loc} of {k}: {err}")),
            }
        }
        let mut out = BTreeMap::new();
        for (writer, (generations, steps)) in seen {
            if generations.len() > 1 {
                return Err(format!(
                    "one listing shows writer {writer}'s fields of generations {generations:?}: \
                     two incarnations of the dataset at once"
                ));
            }
            let rounds: BTreeSet<usize> = steps.iter().map(|s| s / self.per_round).collect();
            for r in rounds {
                let have = (r * self.per_round..(r + 1) * self.per_round)
                    .filter(|s| steps.contains(s))
                    .count();
                if have != self.per_round {
                    return Err(format!(
                        "one listing shows {have} of the {} fields of writer {writer}'s round {r}: \
                         a flush half visible",
                        self.per_round
                    ));
                }
            }
            out.insert(writer, steps.len());
        }
        Ok(out)
    }
}
