#!/usr/bin/env bash
# ab.sh — two builds of fieldstore-hammer (A: before a change, B: after) on
# one POSIX root, rounds interleaved A B A B …, 64 KiB and 1 MiB fields,
# scenario A (write, read, list), each run into an emptied root
# (docs/experiments/2026-11-engine-and-traits.md).
#
#   bench/posix/ab.sh HAMMER_A HAMMER_B [ROUNDS]
#
# PROCS processes [1]; NSTEPS steps of 10 levels × 10 (1 MiB) or × 50
# (64 KiB) parameters per process [12]; ORDER="B A" runs B first in each
# round (run both orders and pool the pairs); ROOT a directory on the file
# system to measure [a fresh one under $TMPDIR].
set -euo pipefail
A=$1; B=$2; rounds=${3:-3}; procs=${PROCS:-1}; nsteps=${NSTEPS:-12}
root=${ROOT:-$(mktemp -d "${TMPDIR:-/tmp}/ab-posix.XXXXXX")}
mkdir -p "$root"
trap 'rm -rf "${root:?}"/*' EXIT
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(df -T "$root" | tail -1 | awk '{print $2}') at $root"
run() { # binary tag size nparams
  rm -rf "${root:?}"/*
  "$1" --root "$root" --scenario a --processes "$procs" --nsteps "$nsteps" --nlevels 10 --nparams "$4" \
     --field-size "$3" --expver "$2" --no-randomise-data 2>&1 | grep -E '^(phase|write|read|list) ' | head -4
}
for r in $(seq "$rounds"); do
  for v in ${ORDER:-A B}; do
    bin=$A; [ "$v" = B ] && bin=$B
    echo "-- round $r $v 64KiB"; run "$bin" "k${v}${r}" 65536 50
    echo "-- round $r $v 1MiB"; run "$bin" "m${v}${r}" 1048576 10
  done
done
