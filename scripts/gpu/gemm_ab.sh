#!/usr/bin/env bash
# gemm_ab.sh — A/B of two carried builds on the GEMM probe, from the repo root on the GPU machine:
# each case runs build A's and build B's bench_gemm_probe alternately (AB_REPEAT times each), so
# slow drifts of the clock hit both. Logs to "$OUT/gemm_ab.log"; a table of the v3/cuBLAS ratios
# last. AB_A, AB_B: the build folders (default .carry/build_old, .carry/build); AB_CASES: cases
# separated by ';' (bench_gemm_probe arguments).
set -u
A=${AB_A:-.carry/build_old}
B=${AB_B:-.carry/build}
R=${AB_REPEAT:-2}
CASES=${AB_CASES:-"--experts 8 --tokens 512 --N 7168 --K 2048;--experts 64 --tokens 512 --N 4096 --K 1536;--experts 8 --tokens 512 --N 4096 --K 1536;--experts 8 --tokens 512 --N 4096 --K 7168 --silu;--experts 8 --tokens 512 --N 3072 --K 4096 --silu;--experts 8 --tokens 128 --N 7168 --K 2048;--experts 1 --tokens 8192 --N 8192 --K 8192"}
LOG=${OUT:-.}/gemm_ab.log
export NCCL_NVLS_ENABLE=0
IFS=';' read -r -a CS <<<"$CASES"
table=""
for c in "${CS[@]}"; do
  ra="" rb=""
  for i in $(seq "$R"); do
    for which in A B; do
      dir=$A
      [ "$which" = B ] && dir=$B
      echo "=== $which ($dir) $c" >>"$LOG"
      # shellcheck disable=SC2086
      out=$(LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}" timeout 120 "$dir/bench_gemm_probe" $c --rounds 6 2>&1)
      echo "$out" >>"$LOG"
      r=$(echo "$out" | awk '$1 == "v3" && NF == 4 {print $4}')
      if [ "$which" = A ]; then ra="$ra ${r:-FAIL}"; else rb="$rb ${r:-FAIL}"; fi
    done
  done
  table+=$(printf '%-48s A:%s  B:%s' "$c" "$ra" "$rb")$'\n'
done
echo
echo "=== v3 / cuBLAS strided-batched (> 1: v3 faster); A = $A, B = $B"
printf '%s' "$table" | tee -a "$LOG"
