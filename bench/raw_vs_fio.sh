#!/usr/bin/env bash
# raw_vs_fio.sh -- checks `fieldstore hammer --scenario raw` (IOR-style raw bandwidth, POSIX)
# against fio on the same file system, same run, same shapes:
#   easy: P processes, a file each, sequential transfers of TRANSFER bytes, fsync at the end;
#   hard: P processes, one shared file, interleaved 47008-byte transfers (fio: rw=write:<skip>
#         with offset_increment), fsync at the end;
#   reads of both after dropping the page cache (root).
# Both use pwrite/pread from one buffer (fio: ioengine=psync) into files not preallocated
# (fio: fallocate=none; its default preallocation makes every write convert an unwritten extent). Repetitions interleave the two
# tools; medians are printed with the ratio hammer / fio (the issue's bar: within 10 %).
#
# Usage: bench/raw_vs_fio.sh          Knobs [defaults]:
#   DIR       where the files go (one file system for both)   [${TMPDIR:-/tmp}/raw-vs-fio]
#   PROCS     processes                                         [2]
#   MIB       MiB per process and phase                         [512]
#   TRANSFER  easy transfer size, bytes                         [1048576]
#   REPS      repetitions                                       [3]
#   HAMMER    a fieldstore-hammer binary (default: cargo build --release)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
DIR=${DIR:-${TMPDIR:-/tmp}/raw-vs-fio}
PROCS=${PROCS:-2}
MIB=${MIB:-512}
TRANSFER=${TRANSFER:-1048576}
REPS=${REPS:-3}
HARD=47008
if ! command -v fio >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fio >/dev/null
    else
        echo "fio missing: apt-get install fio" >&2; exit 1
    fi
fi
if [ -z "${HAMMER:-}" ]; then
    (cd "$REPO" && cargo build -q --release -p fieldstore-hammer)
    HAMMER=${CARGO_TARGET_DIR:-$REPO/target}/release/fieldstore-hammer
fi
BYTES=$((MIB * 1048576))
NHARD=$(((BYTES + HARD - 1) / HARD))
NEASY=$(((BYTES + TRANSFER - 1) / TRANSFER))
OUT=$(mktemp -d)
trap 'rm -rf "$OUT" "$DIR"' EXIT
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

fio_phase() { # <easy|hard> <write|read> -> MiB/s
    # invalidate=0: the page cache is dropped once before each read phase, as the hammer does;
    # fio's default invalidates each job's file as the job starts, which on the shared file
    # throws away what the jobs already running had read ahead. fadvise_hint=0: IOR gives
    # the kernel no access-pattern advice, and neither does the hammer (fio's default
    # POSIX_FADV_SEQUENTIAL doubles the read-ahead window).
    local common=(--directory="$DIR" --ioengine=psync --fallocate=none --invalidate=0
                  --fadvise_hint=0 --numjobs="$PROCS" --output-format=json)
    if [ "$1" = easy ]; then
        common+=(--bs="$TRANSFER" --size=$((NEASY * TRANSFER)))
    else
        # Job j's region starts at j*HARD; its size makes the last job's region end exactly at
        # the shared file's end (NHARD*PROCS transfers). A region past the end makes fio lay the
        # file out (write it) before a read job: the reads then come from the page cache.
        common+=(--filename=shared --bs=$HARD --offset_increment=$HARD --io_size=$((NHARD * HARD))
                 --size=$(((NHARD * PROCS - PROCS + 1) * HARD)))
    fi
    local rw=$2
    [ "$1" = hard ] && rw="$2:$((HARD * (PROCS - 1)))"
    [ "$2" = write ] && common+=(--end_fsync=1)
    fio --name="$1" --rw="$rw" "${common[@]}" >"$OUT/fio.json"
    # All jobs' bytes over the longest job's runtime: the hammer's global timing bandwidth
    # as far as fio's report allows (it gives no per-job start times).
    python3 -c "import json; j=[x['$2'] for x in json.load(open('$OUT/fio.json'))['jobs']]; \
print(sum(x['io_bytes'] for x in j) / (max(x['runtime'] for x in j) / 1000) / 2**20)"
}

for ((r = 1; r <= REPS; r++)); do
    for tool in $([ $((r % 2)) = 1 ] && echo "fio hammer" || echo "hammer fio"); do
        rm -rf "$DIR"; mkdir -p "$DIR"
        if [ "$tool" = fio ]; then
            ew=$(fio_phase easy write); hw=$(fio_phase hard write)
            drop; er=$(fio_phase easy read); drop; hr=$(fio_phase hard read)
        else
            "$HAMMER" --root "$DIR" --scenario raw --processes "$PROCS" --raw-bytes "$BYTES" \
                --raw-transfer "$TRANSFER" --drop-caches --json >"$OUT/h.json"
            read -r ew hw er hr < <(python3 -c "
import json; rows={r['phase']: r['gtb_mib_s'] for r in json.load(open('$OUT/h.json'))['repetitions'][0]['rows']}
print(rows['raw-easy-write'], rows['raw-hard-write'], rows['raw-easy-read'], rows['raw-hard-read'])")
        fi
        echo "$tool $r $ew $hw $er $hr" | tee -a "$OUT/all.txt" >&2
    done
done
python3 - "$OUT/all.txt" "$PROCS" "$MIB" "$TRANSFER" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
names = ["easy write", "hard write", "easy read", "hard read"]
vals = {t: [[float(r[2 + i]) for r in rows if r[0] == t] for i in range(4)] for t in ("hammer", "fio")}
med = {t: [statistics.median(v) for v in vals[t]] for t in vals}
print(f"raw bandwidth, POSIX, {sys.argv[2]} processes x {sys.argv[3]} MiB, easy transfer "
      f"{sys.argv[4]} B, hard 47008 B; median of {len(rows) // 2} (MiB/s)")
print("| phase | fieldstore hammer --scenario raw (min-max) | fio (min-max) | hammer / fio |")
print("|---|---|---|---|")
for i, n in enumerate(names):
    h, f = med["hammer"][i], med["fio"][i]
    hr, fr = vals["hammer"][i], vals["fio"][i]
    print(f"| {n} | {h:.0f} ({min(hr):.0f}-{max(hr):.0f}) | {f:.0f} ({min(fr):.0f}-{max(fr):.0f}) | {h / f:.2f} |")
PY
