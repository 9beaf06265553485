#!/usr/bin/env bash
# world.sh — issue 4 on the H200, from the repo root, with ./build already built (no rebuild):
# the world/RMA GPU tests (emulated W=2,4,8; the W=1 nccl world directly and through
# `xstage launch`; local: SKIPPED on one GPU), the five examples (emulated W=4 and W=8,
# host-mapped heaps, a trace converted to Chrome JSON and SVG), compute-sanitizer memcheck and
# racecheck on short example runs, and `xstage bench rma`. Full log: "$OUT/world.log"; the
# summary table is printed last. About 150 s at most: every step has its own timeout and later
# steps are skipped once 140 s have passed.
set -u
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH="$NV/nccl/lib:$NV/cublas/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/xs_out}
mkdir -p "$OUT"
LOG="$OUT/world.log"
: >"$LOG"
BUILD=${BUILD:-build}
BIN=$BUILD/xstage
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
SUM=""
t_start=$(date +%s)

# step NAME LIMIT CMD...: CMD under a timeout, output to the log (and the terminal's tail).
step() {
  local name=$1 limit=$2
  shift 2
  local el=$(( $(date +%s) - t_start ))
  if [ "$el" -gt 140 ]; then
    SUM+="$(printf '%-40s %-8s %5s' "$name" "skipped" "-")\n"
    return
  fi
  echo "=== $name: $* (limit ${limit}s)" >>"$LOG"
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" >>"$LOG" 2>&1
  local rc=$?
  local dt=$(( $(date +%s) - t0 ))
  local verdict=PASS
  [ "$rc" = 77 ] && verdict=SKIPPED
  [ "$rc" != 0 ] && [ "$rc" != 77 ] && verdict="FAIL($rc)"
  [ "$rc" = 124 ] && verdict=TIMEOUT && echo "=== $name: TIMED OUT after ${limit}s" >>"$LOG"
  echo "=== $name: rc=$rc in ${dt}s" >>"$LOG"
  SUM+="$(printf '%-40s %-8s %4ss' "$name" "$verdict" "$dt")\n"
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv 2>&1
  git log -1 --format='commit %h %s' 2>/dev/null
  ldd "$BUILD/libxstage.so" 2>/dev/null | grep -E "nccl|cudart|not found"
} >>"$LOG" 2>&1

step "gpu/test_world_emulated"            60 "$BUILD/test_world_emulated"
step "gpu/test_rma_handoff (1e6/pair)"    60 "$BUILD/test_rma_handoff"
step "gpu/test_world_nccl (W=1)"          30 "$BUILD/test_world_nccl"
step "xstage launch -n 1 test_world_nccl" 30 "$BIN" launch -n 1 --timeout 25 -- "$BUILD/test_world_nccl"
step "gpu/test_world_local"               20 "$BUILD/test_world_local"
for ex in 01_put_get 02_all_gather 03_all_to_all 04_message_passing 05_ring; do
  step "example $ex (W=4)"                15 "$BUILD/example_$ex"
done
step "example 02_all_gather (W=8)"        15 env XSTAGE_RANKS=8 "$BUILD/example_02_all_gather"
step "example 03_all_to_all (W=8)"        15 env XSTAGE_RANKS=8 "$BUILD/example_03_all_to_all"
step "example 05_ring (W=8, host-mapped)" 15 env XSTAGE_RANKS=8 XSTAGE_HOST_MAPPED=1 "$BUILD/example_05_ring"
step "example 04 traced (W=2)"            15 env XSTAGE_RANKS=2 XSTAGE_MESSAGES=200 \
  XSTAGE_TRACE="$OUT/world_04.trace" "$BUILD/example_04_message_passing"
step "xstage trace -> json, svg"          10 bash -c "'$BIN' trace '$OUT/world_04.trace' && \
  '$BIN' trace '$OUT/world_04.trace' -o '$OUT/world_04_trace.json' && \
  '$BIN' trace '$OUT/world_04.trace' -o '$OUT/world_04_trace.svg'"
step "xstage bench rma"                   40 "$BIN" bench rma
step "xstage bench rma --json"            40 bash -c "'$BIN' bench rma --iters 10 --pingpongs 5000 --json >'$OUT/bench_rma.json'"
# Sanitizers: short runs (W=2, few messages) with a generous wait bound (instrumented kernels
# are slow); --error-exitcode makes any finding a failure.
SANENV="XSTAGE_RANKS=2 XSTAGE_MESSAGES=20 XSTAGE_TIMEOUT_MS=15000"
if [ ! -x "$SAN" ]; then
  echo "=== compute-sanitizer not found ($SAN): sanitizer steps skipped" >>"$LOG"
  SUM+="$(printf '%-40s %-8s %5s' "compute-sanitizer" "missing" "-")\n"
  SAN=""
fi
for ex in 01_put_get 02_all_gather 03_all_to_all 04_message_passing 05_ring; do
  [ -n "$SAN" ] && step "memcheck $ex"  25 env $SANENV "$SAN" --tool memcheck --error-exitcode 9 "$BUILD/example_$ex"
done
for ex in 01_put_get 02_all_gather 03_all_to_all 04_message_passing 05_ring; do
  [ -n "$SAN" ] && step "racecheck $ex" 25 env $SANENV "$SAN" --tool racecheck --error-exitcode 9 "$BUILD/example_$ex"
done
cat "$OUT/bench_rma.json" >>"$LOG" 2>/dev/null

echo "=== bench rma table" && grep -A12 "^# xstage bench rma" "$LOG" | head -14
echo "=== timeouts / device status lines" && grep -E "timeout report|device status|wrong|handoffs" "$LOG" | head -20
echo
printf '%-40s %-8s %5s\n' "step" "result" "time"
printf "%b" "$SUM"
echo "total $(( $(date +%s) - t_start ))s; log: $LOG"
