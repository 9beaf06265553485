#!/usr/bin/env bash
# gemm_ab.sh — A/B(/C...) of carried builds on the GEMM probe, from the repo root on the GPU
# machine: each case runs every build's bench_gemm_probe in turn (AB_REPEAT times each), so slow
# drifts of the clock hit all of them. Logs to "$OUT/gemm_ab.log"; a table of the v3/cuBLAS
# ratios last. AB_BUILDS: the build folders, space-separated (default: AB_A AB_B, which default
# to .carry/build_old .carry/build); AB_CASES: cases separated by ';' (bench_gemm_probe
# arguments); AB_ROW: the probe row to report (default v3).
set -u
A=${AB_A:-.carry/build_old}
B=${AB_B:-.carry/build}
read -r -a BUILDS <<<"${AB_BUILDS:-$A $B}"
R=${AB_REPEAT:-2}
ROW=${AB_ROW:-v3}
CASES=${AB_CASES:-"--experts 8 --tokens 512 --N 7168 --K 2048;--experts 64 --tokens 512 --N 4096 --K 1536;--experts 8 --tokens 512 --N 4096 --K 1536;--experts 8 --tokens 512 --N 4096 --K 7168 --silu;--experts 8 --tokens 512 --N 3072 --K 4096 --silu;--experts 8 --tokens 128 --N 7168 --K 2048;--experts 1 --tokens 8192 --N 8192 --K 8192"}
LOG=${OUT:-.}/gemm_ab.log
export NCCL_NVLS_ENABLE=0
IFS=';' read -r -a CS <<<"$CASES"
table=""
for c in "${CS[@]}"; do
  declare -A got=()
  for i in $(seq "$R"); do
    for dir in "${BUILDS[@]}"; do
      echo "=== $dir $c" >>"$LOG"
      # shellcheck disable=SC2086
      out=$(LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}" timeout 120 "$dir/bench_gemm_probe" $c --rounds 6 2>&1)
      echo "$out" >>"$LOG"
      r=$(echo "$out" | awk -v row="$ROW" '$1 == row && NF == 5 {print $4}')
      got[$dir]="${got[$dir]:-} ${r:-FAIL}"
    done
  done
  line=$(printf '%-48s' "$c")
  for dir in "${BUILDS[@]}"; do line+="  $(basename "$dir"):${got[$dir]}"; done
  table+="$line"$'\n'
  unset got
done
echo
echo "=== $ROW / cuBLAS strided-batched (> 1: faster); builds: ${BUILDS[*]}"
printf '%s' "$table" | tee -a "$LOG"
