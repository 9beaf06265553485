#!/usr/bin/env bash
# gemm_probe.sh — where a grouped GEMM case loses to cuBLAS strided-batched, from the repo root
# with ./build built: the case and its dense equivalent timed beside cuBLAS, then Nsight Compute
# on the kernels of the case (ours: v3 = gemm_kernel_hopper<256>; cuBLAS's: whatever it picks,
# named in the log) with the counters that separate the suspects (tensor-pipe activity, clock,
# DRAM and L2 traffic, L2 hit rate, stall reasons, launch shape). Everything goes to
# "$OUT/gemm_probe.log"; ncu's raw output to "$OUT/ncu_*.txt".
#   PROBE_CASE="--experts 8 --tokens 512 --N 4096 --K 7168 --silu"  (default: DeepSeek-V3 gate/up
#   E=8 T=512), PROBE_DENSE="--M 4096 --N 4096 --K 7168;--M 512 --N 32768 --K 7168" (dense shapes
#   of the same size: the same tile count, and the same B traffic, separated by ';').
set -u
. "$(dirname "$0")/lib.sh"
xs_gpu_init gemm_probe
BIN=build/xstage
CASE=${PROBE_CASE:---experts 8 --tokens 512 --N 4096 --K 7168 --silu}
DENSE=${PROBE_DENSE:---M 4096 --N 4096 --K 7168;--M 512 --N 32768 --K 7168}
xs_gpu_header
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo "")
echo "ncu: ${NCU:-none}" | tee -a "$LOG"

IFS=';' read -r -a DENSES <<<"$DENSE"
for d in "${DENSES[@]}"; do
  # shellcheck disable=SC2086
  step "dense $d" 40 "$BIN" bench gemm $d --reps 5
done
# shellcheck disable=SC2086
step "grouped case" 60 "$BIN" bench gemm --grouped $CASE --reps 5
if [ -n "$NCU" ]; then
  "$NCU" --query-metrics 2>/dev/null | grep -iE 'gmma|tensor_op' | head -20 >>"$LOG"
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__inst_executed_pipe_tensor_op_gmma.sum"
  M+=",sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
  M+=",sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum"
  M+=",dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,lts__t_bytes.sum"
  M+=",l1tex__m_xbar2l1tex_read_bytes.sum,launch__grid_size,launch__cluster_dim_x,launch__cluster_dim_y"
  OURS='regex:hopper<.{0,6}256>'
  CUB='regex:nvjet_sm90_tst|xmma|cutlass'
  n=0
  # ncu TAG FILTER BENCH-ARGS…: counters of the first matching timed-size kernels.
  ncu_step() {
    local tag=$1 k=$2
    shift 2
    step "ncu $tag" 90 "$NCU" --kernel-name-base demangled -k "$k" -c 3 --log-file "$OUT/ncu_$tag.txt" \
      --metrics "$M" --section WarpStateStats "$BIN" bench gemm "$@" --reps 3
  }
  # shellcheck disable=SC2086
  ncu_step grouped_ours "$OURS" --grouped $CASE
  # shellcheck disable=SC2086
  ncu_step grouped_cublas 'regex:coop' --grouped $CASE
  for d in "${DENSES[@]}"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    ncu_step dense${n}_ours "$OURS" $d
    # shellcheck disable=SC2086
    ncu_step dense${n}_cublas "$CUB" $d
  done
fi
{
  echo
  echo "=== gemm_probe summary ($(( $(date +%s) - t_start )) s; log: $LOG)"
  printf "%b" "$SUM"
  for f in "$OUT"/ncu_*.txt; do
    echo "--- $(basename "$f")"
    grep -E '^  [a-zA-Z]|gpu__time|gmma|dram__bytes|lts__t_sector_hit|xbar' "$f" | head -24
  done
  echo "--- timing lines"
  grep -E '^  (cublas|contig|masked|auto|v[0-9])|^  dense|vs strided' "$LOG" | head -40
} | tee -a "$LOG"
