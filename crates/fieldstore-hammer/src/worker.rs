//! One process's share of a phase: its task run — set up, the barrier, the
//! timed I/O loop — into its result. Tasks on the store (write, read,
//! list, follow) run here; the other kinds (bare writes, raw transfers,
//! Field I/O) in their own modules, which this one calls.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fieldstore::{
    CatalogueWriter, DatasetKey, DatasetReader, Error, FieldStore, Key, ListOptions, Request,
    Result, StoreWriter,
};

use fieldstore_daos::client::Daos;

use crate::args::Batch;
use crate::bare::BareFile;
use crate::payload::{self, Check, Generator, Identity};
use crate::result::{cpu_times, hostname, now, ProcResult};
use crate::store_spec::StoreSpec;
use crate::task::{Role, Task};
use crate::trace::Ops;

fn key_of(task: &Task, step: u32, member: u32, level: u32, param: u32) -> Result<Key> {
    // One key built in one go, as a model's I/O server builds one per field
    // (pair by pair, `push` copies the key's text again at every pair).
    let numbers = [step, member, level, param].map(|n| n.to_string());
    let base = task.base.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let varying = ["step", "number", "levelist", "param"]
        .into_iter()
        .zip(&numbers);
    Ok(Key::from_pairs(
        base.chain(varying.map(|(k, v)| (k, v.as_str()))),
    )?)
}

fn base_payload(task: &Task) -> Result<Vec<u8>> {
    match &task.template {
        Some(p) => std::fs::read(p).map_err(|e| Error::io(format!("template {}", p.display()), e)),
        None => Ok(Generator::synthetic(
            usize::try_from(task.field_size)
                .map_err(|_| Error::invalid_input("--field-size too large"))?,
        )),
    }
}

/// The result of `task`, set up since `setup`, stamped ready and then
/// released by `barrier`: where every kind of task starts its window.
fn released(
    task: &Task,
    setup: Instant,
    barrier: &mut dyn FnMut() -> Result<f64>,
) -> Result<ProcResult> {
    let mut r = ProcResult {
        rank: task.rank,
        role: task.role.as_str().into(),
        host: hostname(),
        pid: std::process::id(),
        setup_secs: setup.elapsed().as_secs_f64(),
        ..ProcResult::default()
    };
    r.t_ready = now();
    r.t_release = barrier()?;
    Ok(r)
}

/// Run a task: set up (open the store, make the payload), wait at
/// `barrier` (which returns the release time), then do the timed I/O.
///
/// # Errors
/// Store errors; a task the schema rejects.
pub fn execute(task: &Task, barrier: &mut dyn FnMut() -> Result<f64>) -> Result<ProcResult> {
    let setup = Instant::now();
    if let (Role::RawWrite | Role::RawRead, Some(raw)) = (task.role, &task.raw) {
        return execute_raw(task, raw, setup, barrier);
    }
    if matches!(task.role, Role::FieldIoWrite | Role::FieldIoRead) {
        return execute_fieldio(task, setup, barrier);
    }
    let fs = task.store.open()?;
    let counter = daos_counter(&task.store);
    let mut gen = match task.role {
        Role::Write => Some(Generator::new(
            base_payload(task)?,
            task.randomise,
            task.rank,
        )?),
        _ => None,
    };
    let bare = match task.role {
        Role::Bare => Some(BareFile::create(task, base_payload(task)?.len() as u64)?),
        _ => None,
    };
    let mut r = released(task, setup, barrier)?;
    let mut ops = Ops::default();
    let rpcs0 = counter.and_then(Daos::standin_rpcs);
    let (u0, s0) = cpu_times();
    r.t_first_io = now();
    match task.role {
        Role::Write => {
            if let Some(gen) = gen.as_mut() {
                write(task, &fs, gen, &mut ops, &mut r)?;
            }
        }
        Role::Read => read(task, &fs, &mut ops, &mut r)?,
        Role::List => list(task, &fs, &mut ops, &mut r)?,
        Role::Follow => follow(task, &fs, &mut ops, &mut r)?,
        Role::Bare => {
            if let Some(bare) = &bare {
                bare.write(task, &mut ops, &mut r)?;
            }
        }
        // Field I/O tasks returned above; a raw task without its
        // transfers is a malformed task line.
        Role::RawWrite | Role::RawRead | Role::FieldIoWrite | Role::FieldIoRead => {
            return Err(Error::invalid_input(format!(
                "a {} task without its transfers",
                task.role.as_str()
            )))
        }
    }
    r.t_last_io = now();
    let (u1, s1) = cpu_times();
    r.rpcs = rpcs0.and_then(|a| counter?.standin_rpcs().map(|b| b - a));
    finish(r, ops, u0, s0, u1, s1)
}

/// The DAOS library, when the store uses DAOS (for its RPC counts).
fn daos_counter(store: &StoreSpec) -> Option<&'static Daos> {
    let config = crate::raw::config_of(store).ok()?;
    let daos = matches!(config.engine, fieldstore::Engine::Daos)
        || matches!(config.store, fieldstore::StoreKind::Daos);
    // Already loaded by the store's open: this only looks it up.
    daos.then(|| Daos::get(None).ok()).flatten()
}

/// A raw task (`crate::raw`): same barrier, window and result as the
/// store's tasks.
fn execute_raw(
    task: &Task,
    raw: &crate::raw::RawTask,
    setup: Instant,
    barrier: &mut dyn FnMut() -> Result<f64>,
) -> Result<ProcResult> {
    let mut prepared = crate::raw::prepare(&task.store, raw)?;
    let mut r = released(task, setup, barrier)?;
    let mut ops = Ops::default();
    let rpcs0 = prepared.rpcs();
    let (u0, s0) = cpu_times();
    r.t_first_io = now();
    if task.role == Role::RawWrite {
        prepared.write(raw, &mut ops, &mut r)?;
    } else {
        prepared.read(raw, &mut ops, &mut r)?;
    }
    r.t_last_io = now();
    let (u1, s1) = cpu_times();
    r.rpcs = rpcs0.and_then(|a| prepared.rpcs().map(|b| b - a));
    finish(r, ops, u0, s0, u1, s1)
}

/// A Field I/O task (`crate::fieldio`): same barrier, window and result
/// as the store's tasks.
fn execute_fieldio(
    task: &Task,
    setup: Instant,
    barrier: &mut dyn FnMut() -> Result<f64>,
) -> Result<ProcResult> {
    let fio = crate::fieldio::open(&task.store)?;
    let mut gen = match task.role {
        Role::FieldIoWrite => Some(Generator::new(
            base_payload(task)?,
            task.randomise,
            task.rank,
        )?),
        _ => None,
    };
    let mut r = released(task, setup, barrier)?;
    let mut ops = Ops::default();
    let rpcs0 = fio.rpcs();
    let (u0, s0) = cpu_times();
    r.t_first_io = now();
    match gen.as_mut() {
        Some(gen) => fio.write(task, gen, &mut ops, &mut r)?,
        None => fio.read(task, &mut ops, &mut r)?,
    }
    r.t_last_io = now();
    let (u1, s1) = cpu_times();
    r.rpcs = rpcs0.and_then(|a| fio.rpcs().map(|b| b - a));
    finish(r, ops, u0, s0, u1, s1)
}

fn finish(mut r: ProcResult, ops: Ops, u0: f64, s0: f64, u1: f64, s1: f64) -> Result<ProcResult> {
    r.cpu_user = u1 - u0;
    r.cpu_sys = s1 - s0;
    ops.into_result(&mut r);
    Ok(r)
}

struct DetailedWriter {
    dataset: DatasetKey,
    store: Box<dyn StoreWriter>,
    catalogue: Box<dyn CatalogueWriter>,
}

fn write(
    task: &Task,
    fs: &FieldStore,
    gen: &mut Generator,
    ops: &mut Ops,
    r: &mut ProcResult,
) -> Result<()> {
    let date = task.date();
    let mut detailed: Option<DetailedWriter> = None;
    for &step in &task.steps {
        for &member in &task.members {
            for &level in &task.levels {
                for &param in &task.params {
                    let t = Instant::now();
                    let id = Identity::new(date, step, member, level, param);
                    let key = key_of(task, step, member, level, param)?;
                    let data = gen.field(&id);
                    let t = ops.add("encode", t);
                    let split = fs.schema().split(&key)?;
                    let t = ops.add("split", t);
                    if task.detailed {
                        if detailed.as_ref().is_none_or(|w| w.dataset != split.dataset) {
                            if let Some(mut old) = detailed.take() {
                                old.catalogue.prepare_flush()?;
                                old.store.flush()?;
                                old.catalogue.flush()?;
                            }
                            detailed = Some(DetailedWriter {
                                dataset: split.dataset.clone(),
                                store: fs.store().writer(&split.dataset)?,
                                catalogue: fs.catalogue().writer(&split.dataset, fs.schema())?,
                            });
                        }
                        let Some(w) = detailed.as_mut() else {
                            return Err(Error::internal("no writer"));
                        };
                        let t = ops.add("open writer", t);
                        let loc = w.store.archive(&split.collocation, data)?;
                        let t = ops.add("store.archive", t);
                        w.catalogue
                            .insert(&split.collocation, &split.element, &loc)?;
                        ops.add("catalogue.insert", t);
                    } else {
                        fs.archive_split(&split, data)?;
                        ops.add("archive", t);
                    }
                    r.fields += 1;
                    r.bytes += data.len() as u64;
                    ops.io(data.len() as u64);
                }
            }
            let t = Instant::now();
            if let Some(w) = detailed.as_mut() {
                // In the handle's order (`FieldStore::flush`).
                w.catalogue.prepare_flush()?;
                let t = ops.add("catalogue.prepare", t);
                w.store.flush()?;
                let t = ops.add("store.flush", t);
                w.catalogue.flush()?;
                ops.add("catalogue.flush", t);
            } else {
                fs.flush()?;
                ops.add("flush", t);
            }
            r.flushed_at.push((step, member, now()));
        }
    }
    Ok(())
}

/// How long a follower waits for the writers at most.
const FOLLOW_TIMEOUT: Duration = Duration::from_secs(600);

/// Follow the writers: every field of the task's steps and members, read
/// as soon as a flush makes it visible, by watching or by polling `list`
/// step after step. Records when each flush was first seen.
fn follow(task: &Task, fs: &FieldStore, ops: &mut Ops, r: &mut ProcResult) -> Result<()> {
    let expected = task.fields();
    r.expected = expected;
    let mut seen: HashMap<(u32, u32), f64> = HashMap::new();
    let mut got: HashSet<Key> = HashSet::new();
    let mut buf = Vec::new();
    let mut take = |e: &fieldstore::ListElement, at: f64, r: &mut ProcResult, ops: &mut Ops| {
        let key = e.full_key();
        if !got.insert(key.clone()) {
            return Ok::<(), Error>(());
        }
        if let Ok(id) = Identity::of_key(&key) {
            let k = (id.step as u32, id.number as u32);
            seen.entry(k).or_insert(at);
        }
        if task.follow_no_read {
            r.fields += 1;
            return Ok(());
        }
        if let Some(loc) = &e.location {
            let t = Instant::now();
            fs.store().read(loc, &mut buf)?;
            ops.add("read", t);
            r.fields += 1;
            r.bytes += buf.len() as u64;
            ops.io(buf.len() as u64);
            if task.check != Check::None {
                record_check(r, &buf, &key, task.check);
            }
        }
        Ok(())
    };
    match task.follow {
        crate::args::FollowMode::Watch => {
            let req = request(task, &task.steps, &task.members, &task.levels, &task.params)?;
            let t = Instant::now();
            let options = fieldstore::WatchOptions {
                count: Some(expected as usize),
                timeout: Some(FOLLOW_TIMEOUT),
                ..fieldstore::WatchOptions::default()
            };
            let mut watch = fs.watch(&req, options)?;
            ops.add("watch", t);
            loop {
                let t = Instant::now();
                let next = watch.next();
                ops.add("watch", t);
                let Some(event) = next else { break };
                let event = event?;
                // When the look found it, not when this loop got to it
                // (it may have been reading the fields found before).
                let at = event
                    .seen_at
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64());
                take(&event.element, at, r, ops)?;
            }
        }
        crate::args::FollowMode::Poll => {
            let per_step = (task.members.len() * task.levels.len() * task.params.len()) as u64;
            let deadline = Instant::now() + FOLLOW_TIMEOUT;
            for &step in &task.steps {
                let req = request(task, &[step], &task.members, &task.levels, &task.params)?;
                let mut have = 0u64;
                while have < per_step && Instant::now() < deadline {
                    let t = Instant::now();
                    let listed = fs.list(&req, ListOptions::default())?;
                    let at = now();
                    ops.add("list (poll)", t);
                    for e in &listed {
                        take(e, at, r, ops)?;
                    }
                    have = listed.len() as u64;
                    if have < per_step && task.poll_period_ms > 0 {
                        std::thread::sleep(Duration::from_millis(task.poll_period_ms));
                    }
                }
            }
        }
    }
    r.missing = expected.saturating_sub(r.fields);
    let mut seen: Vec<(u32, u32, f64)> = seen.into_iter().map(|((s, m), t)| (s, m, t)).collect();
    seen.sort_by(|a, b| a.2.total_cmp(&b.2));
    r.seen_at = seen;
    Ok(())
}

fn request(
    task: &Task,
    steps: &[u32],
    members: &[u32],
    levels: &[u32],
    params: &[u32],
) -> Result<Request> {
    let s = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>();
    let mut pairs: Vec<(String, Vec<String>)> = task
        .base
        .iter()
        .map(|(k, v)| (k.clone(), vec![v.clone()]))
        .collect();
    pairs.push(("step".into(), s(steps)));
    pairs.push(("number".into(), s(members)));
    pairs.push(("levelist".into(), s(levels)));
    pairs.push(("param".into(), s(params)));
    Ok(Request::from_pairs(pairs)?)
}

fn requests(task: &Task) -> Result<Vec<(Request, u64)>> {
    let mut out = Vec::new();
    match task.batch {
        Batch::All => out.push((
            request(task, &task.steps, &task.members, &task.levels, &task.params)?,
            task.fields(),
        )),
        Batch::Step => {
            for s in &task.steps {
                for m in &task.members {
                    out.push((
                        request(task, &[*s], &[*m], &task.levels, &task.params)?,
                        (task.levels.len() * task.params.len()) as u64,
                    ));
                }
            }
        }
        Batch::Field => {
            for s in &task.steps {
                for m in &task.members {
                    for l in &task.levels {
                        for p in &task.params {
                            out.push((request(task, &[*s], &[*m], &[*l], &[*p])?, 1));
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

fn record_check(r: &mut ProcResult, data: &[u8], key: &Key, check: Check) {
    let outcome = Identity::of_key(key)
        .map_err(|e| e.to_string())
        .and_then(|id| payload::verify(data, &id, check));
    if let Err(e) = outcome {
        r.check_failures += 1;
        r.first_failure.get_or_insert_with(|| format!("{key}: {e}"));
    }
}

fn read(task: &Task, fs: &FieldStore, ops: &mut Ops, r: &mut ProcResult) -> Result<()> {
    // Requests are built before the window: they are the caller's input.
    let reqs = requests(task)?;
    let mut buf = Vec::new();
    let mut readers: HashMap<DatasetKey, Arc<dyn DatasetReader>> = HashMap::new();
    for (req, expected) in reqs {
        r.expected += expected;
        let mut found = 0u64;
        if task.detailed {
            let t = Instant::now();
            let splits: Vec<_> = fs.schema().expand(&req)?.collect();
            let mut t = ops.add("expand", t);
            let mut refreshed = HashSet::new();
            for split in splits {
                let reader = match readers.get(&split.dataset) {
                    Some(rd) => {
                        if refreshed.insert(split.dataset.clone()) {
                            rd.refresh()?;
                            t = ops.add("catalogue.refresh", t);
                        }
                        rd.clone()
                    }
                    None => match fs.catalogue().reader(&split.dataset)? {
                        Some(rd) => {
                            readers.insert(split.dataset.clone(), rd.clone());
                            refreshed.insert(split.dataset.clone());
                            t = ops.add("catalogue.open", t);
                            rd
                        }
                        None => continue,
                    },
                };
                let loc = reader.lookup(&split.collocation, &split.element)?;
                t = ops.add("catalogue.lookup", t);
                let Some(loc) = loc else { continue };
                fs.store().read(&loc, &mut buf)?;
                t = ops.add("store.read", t);
                found += 1;
                r.fields += 1;
                r.bytes += buf.len() as u64;
                ops.io(buf.len() as u64);
                if task.check != Check::None {
                    record_check(r, &buf, &split.full_key(), task.check);
                    t = ops.add("verify", t);
                }
            }
        } else {
            let t = Instant::now();
            let mut reader = fs.retrieve(&req)?;
            let mut t = ops.add("retrieve", t);
            while let Some(key) = reader.next_field(&mut buf)? {
                t = ops.add("read", t);
                found += 1;
                r.fields += 1;
                r.bytes += buf.len() as u64;
                ops.io(buf.len() as u64);
                if task.check != Check::None {
                    record_check(r, &buf, &key, task.check);
                    t = ops.add("verify", t);
                }
            }
        }
        r.missing += expected.saturating_sub(found);
    }
    Ok(())
}

fn list(task: &Task, fs: &FieldStore, ops: &mut Ops, r: &mut ProcResult) -> Result<()> {
    let mut reqs = Vec::new();
    for s in &task.steps {
        reqs.push(request(
            task,
            &[*s],
            &task.members,
            &task.levels,
            &task.params,
        )?);
    }
    let date = task.date();
    let mut first = true;
    for req in reqs {
        let mut seen: HashSet<Identity> = HashSet::new();
        let mut bad: Option<String> = None;
        let mut failures = 0u64;
        let mut n = 0u64;
        let check = task.check != Check::None;
        let t = Instant::now();
        fs.visit(&req, ListOptions::default(), &mut |e| {
            n += 1;
            if check {
                let k = e.full_key();
                match Identity::of_key(&k) {
                    Ok(id) if id.date == date && seen.insert(id) => {}
                    Ok(_) => {
                        failures += 1;
                        bad.get_or_insert_with(|| format!("{k}: listed twice or wrong date"));
                    }
                    Err(e) => {
                        failures += 1;
                        bad.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            true
        })?;
        ops.add(if first { "list (first)" } else { "list" }, t);
        first = false;
        let expected = (task.members.len() * task.levels.len() * task.params.len()) as u64;
        r.expected += expected;
        r.fields += n;
        r.missing += expected.saturating_sub(n);
        r.check_failures += failures;
        if r.first_failure.is_none() {
            r.first_failure = bad;
        }
    }
    Ok(())
}
