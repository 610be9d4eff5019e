//! What a process is told to do in one phase: its role and its task, sent
//! to a worker as one JSON line.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::args::Batch;
use crate::payload::Check;
use crate::store_spec::StoreSpec;

/// What a process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Archive, flush after every (step, member).
    Write,
    /// Retrieve and read.
    Read,
    /// List, one request per step.
    List,
    /// Write the same bytes with the same flushes as `Write`, bare: no
    /// store (`crate::bare`).
    Bare,
    /// Follow writers: read each field as soon as a flush makes it
    /// visible, recording when it was seen (`--scenario follow`).
    Follow,
    /// Raw bandwidth, IOR-style: write transfers with no store
    /// (`crate::raw`).
    RawWrite,
    /// Raw bandwidth: read another process's transfers back.
    RawRead,
    /// Field I/O: each field into its own DAOS array, indexed in KVs
    /// (`crate::fieldio`).
    FieldIoWrite,
    /// Field I/O: read the fields back by querying the KVs.
    FieldIoRead,
}

impl Role {
    /// `write`, `read`, `list`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Write => "write",
            Role::Read => "read",
            Role::List => "list",
            Role::Bare => "bare-write",
            Role::Follow => "follow",
            Role::RawWrite => "raw-write",
            Role::RawRead => "raw-read",
            Role::FieldIoWrite => "fieldio-write",
            Role::FieldIoRead => "fieldio-read",
        }
    }
}

/// One process's work in one phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Task {
    /// What to do.
    pub role: Role,
    /// Rank within the group (also the writer id in unique ids).
    pub rank: u32,
    /// The store.
    pub store: StoreSpec,
    /// class, expver, stream, date, time, type, levtype.
    pub base: Vec<(String, String)>,
    /// Steps, members, levels, params of this process.
    pub steps: Vec<u32>,
    /// Ensemble members.
    pub members: Vec<u32>,
    /// Levels.
    pub levels: Vec<u32>,
    /// paramIds.
    pub params: Vec<u32>,
    /// Synthetic field size.
    pub field_size: u64,
    /// GRIB template instead of synthetic bytes.
    pub template: Option<PathBuf>,
    /// Randomise every field.
    pub randomise: bool,
    /// What to verify on read/list.
    pub check: Check,
    /// Fields per retrieve.
    pub batch: Batch,
    /// Go through the catalogue and store traits, timing each.
    pub detailed: bool,
    /// Follow: how to learn of flushes.
    #[serde(default)]
    pub follow: crate::args::FollowMode,
    /// Follow by polling: pause between lists, ms.
    #[serde(default)]
    pub poll_period_ms: u64,
    /// Follow without reading the fields.
    #[serde(default)]
    pub follow_no_read: bool,
    /// Raw roles: the transfers.
    #[serde(default)]
    pub raw: Option<crate::raw::RawTask>,
}

impl Task {
    /// The `date` of its base key as YYYYMMDD (0 if it has none).
    pub(crate) fn date(&self) -> u64 {
        self.base
            .iter()
            .find(|(k, _)| k == "date")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    }

    /// Fields this task touches.
    pub fn fields(&self) -> u64 {
        [&self.steps, &self.members, &self.levels]
            .iter()
            .map(|v| v.len() as u64)
            .product::<u64>()
            * self.params.len() as u64
    }
}
