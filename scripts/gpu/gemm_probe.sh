#!/usr/bin/env bash
# gemm_probe.sh — where a grouped GEMM case loses to cuBLAS strided-batched, from the repo root
# with ./build built: the case and its dense equivalent timed beside cuBLAS, then Nsight Compute
# on the kernels of the case (ours: v3 = gemm_kernel_hopper<256>; cuBLAS's: whatever it picks,
# named in the log) with the counters that separate the suspects (tensor-pipe activity, clock,
# DRAM and L2 traffic, L2 hit rate, stall reasons, launch shape). Everything goes to
# "$OUT/gemm_probe.log"; ncu's raw output to "$OUT/ncu_*.txt".
#   PROBE_CASE="--experts 8 --tokens 512 --N 4096 --K 7168 --silu"  (default: DeepSeek-V3 gate/up
#   E=8 T=512), PROBE_DENSE="--M 4096 --N 4096 --K 7168" (its dense equivalent).
set -u
. "$(dirname "$0")/lib.sh"
xs_gpu_init gemm_probe
BIN=build/xstage
CASE=${PROBE_CASE:---experts 8 --tokens 512 --N 4096 --K 7168 --silu}
DENSE=${PROBE_DENSE:---M 4096 --N 4096 --K 7168}
xs_gpu_header
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo "")
echo "ncu: ${NCU:-none}" | tee -a "$LOG"

# shellcheck disable=SC2086
step "dense equivalent" 40 "$BIN" bench gemm $DENSE --reps 5
# shellcheck disable=SC2086
step "grouped case" 60 "$BIN" bench gemm --grouped $CASE --reps 5
if [ -n "$NCU" ]; then
  # Every kernel's name, grid, block, cluster and time (one cheap metric pass each).
  # shellcheck disable=SC2086
  step "ncu names" 90 "$NCU" --csv --log-file "$OUT/ncu_names.csv" -c 160 --metrics \
    gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__shared_mem_per_block_dynamic,launch__registers_per_thread \
    "$BIN" bench gemm --grouped $CASE --reps 3
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
  M+=",sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum"
  M+=",dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,lts__t_bytes.sum"
  M+=",l1tex__m_xbar2l1tex_read_bytes.sum,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed"
  M+=",sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__cluster_dim_x"
  for tag in ours cublas; do
    K='regex:gemm_kernel_hopper<256>'
    [ $tag = cublas ] && K='regex:nvjet|xmma|cutlass|sm90_'
    # shellcheck disable=SC2086
    step "ncu $tag" 90 "$NCU" --kernel-name-base demangled -k "$K" -c 8 --log-file "$OUT/ncu_$tag.txt" --metrics "$M" \
      --section WarpStateStats "$BIN" bench gemm --grouped $CASE --reps 3
  done
  # shellcheck disable=SC2086
  step "ncu ours dense" 60 "$NCU" --kernel-name-base demangled -k 'regex:gemm_kernel_hopper<256>' -c 4 \
    --log-file "$OUT/ncu_ours_dense.txt" --metrics "$M" --section WarpStateStats \
    "$BIN" bench gemm $DENSE --reps 3
fi
{
  echo
  echo "=== gemm_probe summary ($(( $(date +%s) - t_start )) s; log: $LOG)"
  printf "%b" "$SUM"
  echo "--- kernels seen by ncu"
  awk -F'","' 'NR>1 {print $5}' "$OUT/ncu_names.csv" 2>/dev/null | cut -c1-110 | sort | uniq -c | sort -rn | head -25
  for t in ours cublas ours_dense; do
    echo "--- ncu $t"
    grep -E 'gpu__time|cycles_elapsed.avg.per|gmma|dram__|lts__t_sector_hit|grid_size|cluster_dim|Stall|  [a-z_]+_[a-z]+ ' "$OUT/ncu_$t.txt" 2>/dev/null | head -30
  done
  echo "--- timing lines"
  grep -E '^  (cublas|contig|masked|auto|v[0-9])|^  dense|vs strided' "$LOG" | head -40
} | tee -a "$LOG"
