#!/usr/bin/env bash
# calib.sh — issue 3 on the H200, from the repo root, with ./build already built (no rebuild):
# the xbench GPU test (every byte of every flavour, host + HBM; timestamps; timeout; CSV -> fit),
# the anchors' xbench configurations (shared/anchors-h200.md; free and sync side by side), then
#   xstage calibrate --target host --full, --target host --quick, --target hbm --quick, and a
#   CPU-only --refit of the host CSV with another held-out draw
# Everything is logged to "$OUT/calib.log"; the CSV/JSON/SVG of both targets are copied to $OUT
# (6 files), and the raw per-producer stamps of the key xbench runs merged into
# $OUT/xbench-stamps.csv (each row names its K, V, gap and mode; `xs_xbench_stamps_csv_read` /
# xs_xbench_reduce redo the reduction offline); 8 files with the log. Summary table last. About 5 minutes at most: every step has its own
# timeout, and the calibrations have a wall-clock budget.
set -u
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH="$NV/nccl/lib:$NV/cublas/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/xs_out}
mkdir -p "$OUT/calib"
LOG="$OUT/calib.log"
: >"$LOG"
BIN=build/xstage
SUM=""
t_start=$(date +%s)

# step NAME LIMIT CMD...: runs CMD under a timeout, output to the log and the terminal.
step() {
  local name=$1 limit=$2
  shift 2
  echo "=== $name: $* (limit ${limit}s)" | tee -a "$LOG"
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  local dt=$(( $(date +%s) - t0 ))
  [ "$rc" = 124 ] && echo "=== $name: TIMED OUT after ${limit}s" | tee -a "$LOG"
  SUM+="$(printf '%-44s rc=%-4s %4ss' "$name" "$rc" "$dt")\n"
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
  git log -1 --format='commit %h %s' 2>/dev/null
  ls -la "$BIN" build/test_xbench build/test_sweep 2>&1
} | tee -a "$LOG"

# Tests first: a fault or a hang shows here, with its configuration, before the long steps.
step "test_sweep (CPU)" 30 build/test_sweep
step "test_xbench (GPU)" 120 build/test_xbench

# The anchors (shared/anchors-h200.md), each next to the embedded profile's prediction. xbench
# runs free by default (one start barrier; the gap is compute, as the model means it); the
# "sync" runs put a grid barrier in every gap, which waits for the outstanding remote stores
# (docs/calibration.md, "What a gap must be"): compare their gap_us and T_iss columns.
# T_iss is the AGGREGATE issue time (E_b - E_{b-1} - G_b, docs/calibration.md) in both modes;
# own_max/own_mean are the producers' own durations, skew how far they drifted apart.
X="$BIN xbench"
ST="$OUT/calib/stamps"
mkdir -p "$ST"
step "host st 16x1MB G=0 free"      15 $X --target host --K 16 --V 1MB --G 0 --bursts 32 --check --stamps "$ST/a.csv"
step "host st 16x1MB G=0 sync"      15 $X --target host --K 16 --V 1MB --G 0 --bursts 32 --sync sync --stamps "$ST/b.csv"
step "host st 16x1MB G=10us free"   15 $X --target host --K 16 --V 1MB --G 10us --bursts 48 --stamps "$ST/c.csv"
step "host st 16x1MB G=10us sync"   15 $X --target host --K 16 --V 1MB --G 10us --bursts 48 --sync sync --stamps "$ST/d.csv"
step "host st 16x1MB G=20us"        15 $X --target host --K 16 --V 1MB --G 20us --bursts 32 --stamps "$ST/e.csv"
step "host st 16x1MB G=20us spin"   15 $X --target host --K 16 --V 1MB --G 20us --bursts 32 --gap-mode spin
step "host st 132x1MB G=15us"       15 $X --target host --K 132 --V 1MB --G 15us --bursts 48 --stamps "$ST/f.csv"
step "host st 32x4MB G=0"           15 $X --target host --K 32 --V 4MB --G 0 --bursts 24 --stamps "$ST/g.csv"
step "host st 16x1MB G=20us flag"   15 $X --target host --K 16 --V 1MB --G 20us --bursts 32 --flag --check
step "host st 32x4MB from idle"     15 $X --target host --K 32 --V 4MB --G 200us --bursts 4
step "host relaxed 32x4MB"          15 $X --target host --K 32 --V 4MB --G 200us --bursts 4 --flavour relaxed
step "host release 16x1MB G=20us"   15 $X --target host --K 16 --V 1MB --G 20us --bursts 8 --flavour release
step "host tma 8x4MB"               15 $X --target host --K 8 --V 4MB --G 200us --bursts 4 --flavour tma --check
step "host tma 32x4MB"              15 $X --target host --K 32 --V 4MB --G 200us --bursts 4 --flavour tma
step "host tma 132x28.9MB"          20 $X --target host --K 132 --V 30277632 --G 1ms --bursts 2 --flavour tma --check
step "hbm st 16x1MB G=0"            15 $X --target hbm --K 16 --V 1MB --G 0 --bursts 32 --profile h200-hbm
step "hbm tma 132x28.9MB"           15 $X --target hbm --K 132 --V 30277632 --G 20us --bursts 4 --flavour tma --profile h200-hbm --check

# The raw stamps of the runs above, one CSV (header once; rows name their configuration).
first=1
for f in "$ST"/*.csv; do
  [ -f "$f" ] || continue
  if [ $first = 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
done >"$OUT/xbench-stamps.csv"
[ -s "$OUT/xbench-stamps.csv" ] || rm -f "$OUT/xbench-stamps.csv"

# the offline reduction of the first run (16x1MB G=0 free): must print the same table as above
[ -f "$OUT/xbench-stamps.csv" ] &&
  step "stamps offline (run 0)"     15 $BIN xbench --from-stamps "$OUT/xbench-stamps.csv" --run 0


# The calibrations (free-running producers, FMA gaps, every grid configuration repeated, fit
# and errors on the per-configuration medians): host in full, the quick host calibration that
# `xstage run` uses (must end within 60 s), HBM quick; then the host CSV analysed again with
# another held-out draw (CPU only: how much the errors depend on the draw).
step "calibrate host --full"        330 $BIN calibrate --target host --full -o "$OUT/calib" --budget-s 200
mkdir -p "$OUT/calibq"
step "calibrate host --quick"       90 $BIN calibrate --target host --quick -o "$OUT/calibq"
step "calibrate hbm --quick"        100 $BIN calibrate --target hbm --quick -o "$OUT/calib" --budget-s 50 --no-memcpy
[ -f "$OUT/calib/xstage-host.csv" ] &&
  step "refit host (seed 7)"        60 $BIN calibrate --refit "$OUT/calib/xstage-host.csv" --seed 7
rm -rf "$OUT/calibq"

# At most 6 files besides the log and the stamps, at the top level of $OUT.
for f in xstage-host.csv profile-host.json calibration-host.svg xstage-hbm.csv profile-hbm.json \
         calibration-hbm.svg; do
  [ -f "$OUT/calib/$f" ] && cp "$OUT/calib/$f" "$OUT/$f"
done
rm -rf "$OUT/calib"

{
  echo
  echo "=== calib summary ($(( $(date +%s) - t_start )) s; log: $LOG)"
  printf "%b" "$SUM"
  echo "--- tests"
  grep -E 'passed, .* failed|SKIPPED|^  FAIL' "$LOG" | head -12
  echo "--- xbench: steady state and prediction (aggregate T_iss; anchors: 16x1MB G=0 settles near V/R ~20 us,"
  echo "    G=20us ~1.2-1.5 us; sustained GB/s of G=0 runs must not exceed cudaMemcpy D2H ~55;"
  echo "    sync: T_iss includes the barrier that waits for the drain)"
  echo "    32x4MB from idle: mean CTA ~35 us, last ~67 us; TMA 132x28.9MB: issue ~0.3 us, source free ~564 us)"
  grep -E '^# xbench:|^steady state|^predicted|^check:' "$LOG" | sed 's/^/  /'
  echo "--- calibration (per target: R vs cudaMemcpy, held-out medians/p90, transitions, repeatability)"
  grep -E '^# xstage calibrate:|^sequences|^R \(sustained|^Q knee|^fitted:|^fit and errors|^held-out|^fitted rows|^pairs|^no X-Stage|^repeatability|^ +[0-9]+ +[0-9.]+ (KiB|MiB)' "$LOG" | sed 's/^/  /'
  echo "--- files"
  ls -la "$OUT" | grep -vE ' \.\.?$'
} | tee -a "$LOG"
