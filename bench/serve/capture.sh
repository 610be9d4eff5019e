#!/usr/bin/env bash
# Capture real FDB5 remote traffic: FDB5's fdb-server as catalogue and as
# store, each behind bench/serve/capture_proxy.py, driven by the wheel's
# fdb-write, fdb-list, fdb-axes and fdb-read with a `type: remote` client.
# Usage: bench/serve/capture.sh OUTDIR [SINGLE]   (SINGLE=1: the client
# prefers a single connection). Needs scripts/setup-fdb5.sh's venv. The
# servers get a wipe secret; the last steps wipe a dataset (dry run, then
# --doit) and list again.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
single=${2:-0}
sp=$(ls -d "$repo"/target/fdb5/venv/lib/python3*/site-packages)
export LD_LIBRARY_PATH=$sp/fdb5lib/lib64:$sp/eckitlib/lib64:$sp/metkitlib/lib64:$sp/eccodeslib/lib64
bin=$sp/fdb5lib/bin
unset FDB5_CONFIG FDB_CONFIG FDB5_CONFIG_FILE FDB_CONFIG_FILE
export FDB_HOME=$out/home
mkdir -p "$out"/{home,root-cat,root-store,frames}
schema=$repo/tests/fixtures/schema/ecmwf.schema
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cport=$(free_port); sport=$(free_port); pc=$(free_port); ps_=$(free_port)
cat > "$out/cat.yaml" <<Y
type: catalogue
engine: toc
store: file
schema: $schema
serverPort: $cport
stores: [{default: "localhost:$ps_"}]
spaces: [{handler: Default, roots: [{path: $out/root-cat}]}]
Y
cat > "$out/store.yaml" <<Y
type: store
engine: toc
store: file
schema: $schema
serverPort: $sport
spaces: [{handler: Default, roots: [{path: $out/root-store}]}]
Y
cat > "$out/client.yaml" <<Y
type: remote
engine: remote
store: remote
host: localhost
port: $pc
Y
if [ "$single" = 1 ]; then echo "preferSingleConnection: true" >> "$out/client.yaml"; fi
export FDB_WIPE_SECRET=capture-secret
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
FDB5_CONFIG_FILE=$out/cat.yaml "$bin/fdb-server" > "$out/cat.log" 2>&1 & pids+=($!)
FDB5_CONFIG_FILE=$out/store.yaml "$bin/fdb-server" > "$out/store.log" 2>&1 & pids+=($!)
python3 "$repo/bench/serve/capture_proxy.py" --listen "$pc" --target "127.0.0.1:$cport" --out "$out/frames" --name cat 2>/dev/null & pids+=($!)
python3 "$repo/bench/serve/capture_proxy.py" --listen "$ps_" --target "127.0.0.1:$sport" --out "$out/frames" --name store 2>/dev/null & pids+=($!)
sleep 1.5
export FDB5_CONFIG_FILE=$out/client.yaml
run() { echo "\$ $*" >> "$out/tools.log"; "$@" >> "$out/tools.log" 2>&1 || echo "rc=$?" >> "$out/tools.log"; }
run "$bin/fdb-write" "$repo/tests/fixtures/grib/synth11.grib" "$repo/tests/fixtures/grib/levtypes.grib"
run "$bin/fdb-list" --all --minimum-keys= --porcelain
run "$bin/fdb-axes" --all --minimum-keys= --json
run "$bin/fdb-list" --minimum-keys= --porcelain class=od,param=167
printf 'retrieve,class=od,expver=0001,stream=oper,type=fc,date=20230508,time=1200,domain=g,levtype=sfc,param=151130,step=1\n' > "$out/req"
run "$bin/fdb-read" "$out/req" "$out/read.grib"
sleep 0.5
run "$bin/fdb-list" --all --minimum-keys= --porcelain --location
run "$bin/fdb-axes" --minimum-keys= --json --level=1 class=od
sleep 0.5
run "$bin/fdb-wipe" --minimum-keys= class=od,date=20230508
run "$bin/fdb-wipe" --minimum-keys= class=od,date=20230508 --doit
run "$bin/fdb-list" --all --minimum-keys= --porcelain
sleep 0.5
