#!/usr/bin/env bash
# gemm.sh — issue 5 on the H200, from the repo root, with ./build already built (no rebuild):
# SASS check (HGMMA present, no local-memory spills in the GEMM kernels), a small smoke run,
# the CPU and GPU tests, `xstage bench gemm` on the issue's dense shapes (+ hook overhead), a TP
# layer's dense GEMMs at 128-2048 tokens (v14's range), the twelve balanced MoE cases as whole
# expert MLPs, and a grouped (MoE) set: the quick set, then the full sweep. The bench times
# cuBLAS and every version of a case interleaved (rounds of one batch each, ratios = medians of
# per-round ratios), so the card's clock drift under load cancels; the SM clock and power are
# logged after each bench step.
# The dense bench runs twice: ratios and the hook overhead must hold in both passes. Everything
# is logged to "$OUT/gemm.log"; the summary is printed last, the target verdicts at its end.
# About 240 s at most: every step has its own timeout, the last ones share what is left.
set -u
. "$(dirname "$0")/lib.sh"
xs_gpu_init gemm
BIN=build/xstage
STEP_W=30
# clocks WHEN: the SM clock, power and temperature now (the bench steps' drift shows here).
clocks() {
  echo "--- clocks $1: $(nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
    --format=csv,noheader 2>&1 | head -1)" | tee -a "$LOG"
}
# left CAP: seconds left of the 240 s budget, at most CAP, at least 10.
left() {
  local l=$(( 240 - ($(date +%s) - t_start) ))
  [ "$l" -gt "$1" ] && l=$1
  [ "$l" -lt 10 ] && l=10
  echo "$l"
}

xs_gpu_header

# SASS: v2-v6 must use HGMMA (wgmma) and spill nothing (LDL/STL) — per GEMM kernel.
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
LIB=$(ls build/libxstage.so* 2>/dev/null | head -1)
[ -n "$LIB" ] || LIB=$BIN
if [ -x "$CUOBJ" ]; then
  "$CUOBJ" -sass "$LIB" 2>/dev/null | awk '/Function : /{f=$3} f ~ /gemm_kernel/ {print f": "$0}' >"$OUT/gemm_sass.txt"
  {
    echo "=== SASS of the GEMM kernels ($CUOBJ $LIB)"
    for k in $(awk -F': ' '{print $1}' "$OUT/gemm_sass.txt" | sort -u); do
      printf '%-90s HGMMA %4d  HMMA %4d  FFMA %5d  LDL/STL %3d\n' "$k" \
        "$(grep -F "$k: " "$OUT/gemm_sass.txt" | grep -c HGMMA)" \
        "$(grep -F "$k: " "$OUT/gemm_sass.txt" | grep -c ' HMMA')" \
        "$(grep -F "$k: " "$OUT/gemm_sass.txt" | grep -c 'FFMA')" \
        "$(grep -F "$k: " "$OUT/gemm_sass.txt" | grep -cE 'LDL|STL')"
    done
  } | tee -a "$LOG"
  SUM+="$(printf '%-30s %s' "sass HGMMA (gemm kernels)" "$(grep -c HGMMA "$OUT/gemm_sass.txt")")\n"
else
  echo "=== no cuobjdump: SASS not checked" | tee -a "$LOG"
fi

# Small runs first: a fault or a hang shows here, with its shape, before the long steps.
# (v2-v6 producers trap after 4 s stuck on a barrier: "unspecified launch failure".)
step "smoke 256x256x256" 15 "$BIN" bench gemm --M 256 --N 256 --K 256 --reps 3
step "smoke 129x136x72" 10 "$BIN" bench gemm --M 129 --N 136 --K 72 --reps 3
step "test_gemm_sched" 10 build/test_gemm_sched
step "test_gemm" 45 build/test_gemm
clocks "before the benches"
step "bench dense" "$(left 30)" "$BIN" bench gemm
clocks "after bench dense"
step "bench grouped quick" "$(left 25)" "$BIN" bench gemm --grouped --quick
clocks "after bench grouped quick"
step "bench dense (again)" "$(left 30)" "$BIN" bench gemm
clocks "after bench dense (again)"
# v14 (split-K, one wave): a TP layer's dense GEMMs in their order at small batches, and QKV
step "tp layer (128-2048 tokens)" "$(left 30)" build/bench_gemm_chain --tp-layer \
  --tp-m 128,256,512,2048 --rounds 10 --reps 10
step "bench dense 512x1280x8192" "$(left 15)" "$BIN" bench gemm --M 512 --N 1280 --K 8192
# issue 5's twelve balanced MoE cases as whole expert MLPs (ours fused against cuBLAS's unfused
# path and its two GEMMs alone; back to back and in a CUDA graph; session 26)
step "expert MLP whole (12 cases)" "$(left 40)" build/bench_gemm_chain --mlp --all --rounds 8 \
  --reps 10
step "bench grouped full" "$(left 160)" "$BIN" bench gemm --grouped
clocks "after bench grouped full"

{
  echo
  echo "=== gemm summary ($(( $(date +%s) - t_start )) s; log: $LOG)"
  printf "%b" "$SUM"
  echo "--- test results"
  grep -E 'passed, .* failed|SKIPPED|runs checked|^ *FAIL' "$LOG" | tail -12
  echo "--- clocks"
  grep -E '^--- clocks' "$LOG"
  echo "--- hook overhead (dense passes: 8192^3, 4096x28672x8192, 2048x3072x4096, 512x7168x2048)"
  grep -E 'hook overhead' "$LOG" || echo "(none)"
  echo "--- cuBLAS drift over the timed rounds, per case (clock moving while a case is timed)"
  grep -oE 'drift over the rounds [-+0-9.]+%' "$LOG" | awk '{print $NF}' | tr '\n' ' '
  echo
  echo "--- timing method (dense: cuBLAS, then AUTO's pick, each timed alone after the rounds; ms, TFLOP/s, ratio)"
  grep -E '^  (cublas alone|auto -> v[0-9]+ alone) ' "$LOG" || echo "(none)"
  echo "--- dense per launch at the full clock (cuBLAS / AUTO, each launch alone with idle after it, order alternating)"
  awk '/^# (dense|grouped)/{h=$0} /^#   per launch at the full clock/ && h ~ /^# dense/{print h; print}' "$LOG"
  echo "--- TP layer (Llama-3-70B TP8, cuBLAS / row in brackets; then the layer timed whole)"
  grep -E '^## TP layer|^   (auto|cublas) |^   the layer whole' "$LOG" || echo "(none)"
  echo "--- expert MLP timed whole (ours fused; cuBLAS unfused / row in brackets)"
  grep -E 'the expert MLP whole|^   (back to back|in a CUDA graph) ' "$LOG" | \
    sed -e 's/, the expert MLP whole (MASKED[^:]*: ours against the unfused cuBLAS path/:/' || echo "(none)"
  echo "--- bench summaries (interleaved ratios; TFLOP/s from median times)"
  awk '/^# summary/{on=1} on && NF {print} /^=== /{on=0}' "$LOG" | grep -v -e '^===' -e '^--- clocks' || echo "(none)"
  echo "--- targets (issue 5; verdict on AUTO's pick; dense twice: both passes should meet)"
  awk '/^# summary/{on=1} on && / (met|MISS) /{print} /^=== /{on=0}' "$LOG" || echo "(none)"
} | tee -a "$LOG"
