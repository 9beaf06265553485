#!/usr/bin/env bash
# calib.sh — issue 3 on the H200, from the repo root, with ./build already built (no rebuild):
# the xbench GPU test (every byte of every flavour, host + HBM; timestamps; clock mode; timeout;
# CSV -> fit), the anchors' xbench configurations in clock mode (one sync and one free run of
# 16x1MB G=10us beside them), then
#   xstage calibrate --target host --full, --target host --quick, --target hbm --quick, and a
#   CPU-only --refit of the host CSV with another held-out draw
# Everything is logged to "$OUT/calib.log"; the CSV/JSON/SVG of both targets are copied to $OUT
# (6 files), and the raw per-producer stamps of the key xbench runs merged into
# $OUT/xbench-stamps.csv (each row names its K, V, gap and mode; `xs_xbench_stamps_csv_read` /
# xs_xbench_reduce redo the reduction offline); 8 files with the log. Summary table last. About 5 minutes at most: every step has its own
# timeout, and the calibrations have a wall-clock budget.
set -u
. "$(dirname "$0")/lib.sh"
xs_gpu_init calib
mkdir -p "$OUT/calib"
BIN=build/xstage
STEP_W=44
xs_gpu_header ls -la "$BIN" build/test_xbench build/test_sweep

# Tests first: a fault or a hang shows here, with its configuration, before the long steps.
step "test_sweep (CPU)" 30 build/test_sweep
step "test_xbench (GPU)" 120 build/test_xbench

# The anchors (shared/anchors-h200.md), each next to the embedded profile's prediction. xbench
# and calibrate run in CLOCK mode by default: after one start barrier, burst b of every producer
# is scheduled at t0 + b*P on %globaltimer (P = T0 + G; a producer still late starts at once);
# T_iss = E_b - max(S_b, E_{b-1}), the gap before it max(0, S_b - E_{b-1}) (docs/calibration.md).
# One sync run (a grid barrier before every burst: it drains the stage) and one free run (no
# alignment: producers drift apart) of the same configuration for comparison.
X="$BIN xbench"
ST="$OUT/calib/stamps"
mkdir -p "$ST"
step "host st 16x1MB G=0 clock"     15 $X --target host --K 16 --V 1MB --G 0 --bursts 32 --check --stamps "$ST/a.csv"
step "host st 16x1MB G=10us clock"  15 $X --target host --K 16 --V 1MB --G 10us --bursts 48 --stamps "$ST/b.csv"
step "host st 16x1MB G=20us clock"  15 $X --target host --K 16 --V 1MB --G 20us --bursts 32 --stamps "$ST/c.csv"
step "host st 132x1MB G=15us clock" 15 $X --target host --K 132 --V 1MB --G 15us --bursts 48 --stamps "$ST/d.csv"
step "host st 16x1MB G=10us sync"   15 $X --target host --K 16 --V 1MB --G 10us --bursts 48 --sync sync --stamps "$ST/e.csv"
step "host st 16x1MB G=10us free"   15 $X --target host --K 16 --V 1MB --G 10us --bursts 48 --sync free --stamps "$ST/f.csv"
step "host st 16x1MB G=20us flag"   15 $X --target host --K 16 --V 1MB --G 20us --bursts 32 --flag --check
step "host st 32x4MB from idle"     15 $X --target host --K 32 --V 4MB --G 200us --bursts 4
step "host tma 132x28.9MB"          20 $X --target host --K 132 --V 30277632 --G 1ms --bursts 2 --flavour tma --check
step "hbm st 16x1MB G=0"            15 $X --target hbm --K 16 --V 1MB --G 0 --bursts 32 --profile h200-hbm

# The raw stamps of the runs above, one CSV (header once; rows name their configuration).
first=1
for f in "$ST"/*.csv; do
  [ -f "$f" ] || continue
  if [ $first = 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
done >"$OUT/xbench-stamps.csv"
[ -s "$OUT/xbench-stamps.csv" ] || rm -f "$OUT/xbench-stamps.csv"

# the offline reduction of the first run (16x1MB G=0 clock): must print the same table as above
[ -f "$OUT/xbench-stamps.csv" ] &&
  step "stamps offline (run 0)"     15 $BIN xbench --from-stamps "$OUT/xbench-stamps.csv" --run 0


# The calibrations (clock-scheduled producers, P = T0 + G, every grid configuration repeated;
# fit and errors on the per-configuration medians, each sequence predicted with its measured
# per-burst gaps): host in full, the quick host calibration that
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
  echo "--- xbench: steady state and prediction (aggregate T_iss; clock mode: 16x1MB G=0 settles near V/R ~20 us"
  echo "    with gaps 0, G=20us near T0 ~1.2-1.5 us with gaps ~P-T0; sustained GB/s <= cudaMemcpy D2H ~55;"
  echo "    sync: T_iss includes the barrier that waits for the drain; free: skew up to ~1 ms)"
  echo "    32x4MB from idle: mean CTA ~35 us, last ~67 us; TMA 132x28.9MB: issue ~0.3 us, source free ~564 us)"
  grep -E '^# xbench:|^steady state|^predicted|^check:' "$LOG" | sed 's/^/  /'
  echo "--- calibration (per target: R vs cudaMemcpy, held-out medians/p90, transitions, repeatability)"
  grep -E '^# xstage calibrate:|^sequences|^R \(sustained|^Q knee|^fitted:|^fit and errors|^held-out|^fitted rows|^pairs|^no X-Stage|^repeatability|^ +[0-9]+ +[0-9.]+ (KiB|MiB)' "$LOG" | sed 's/^/  /'
  echo "--- files"
  ls -la "$OUT" | grep -vE ' \.\.?$'
} | tee -a "$LOG"
