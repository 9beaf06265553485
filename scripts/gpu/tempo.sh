#!/usr/bin/env bash
# tempo.sh — issue 6 (TEMPO) on the H200, from the repo root, with ./build already built (no
# rebuild): the dispatch kernel against its CPU reference and its graph-replay time
# (tests/gpu/test_dispatch), the expert-time profile t(G, N) measured with cuBLAS at DeepSeek-V3
# and Qwen3-235B expert sizes (bench/tempo_profile.cu), and its max-affine fit
# (`xstage balance fit`). Writes "$OUT/tempo_profile.csv" and "$OUT/tempo.log"; prints a summary
# table last (fitted a, b, c, beta, n* per model; dispatch kernel us). About 90 s at most.
set -u
. "$(dirname "$0")/lib.sh"
xs_gpu_init tempo
CSV="$OUT/tempo_profile.csv"
STEP_W=30
xs_gpu_header

for b in build/test_dispatch build/bench_tempo_profile build/xstage; do
  [ -x "$b" ] || echo "=== missing $b (build ./build first; this script does not rebuild)" | tee -a "$LOG"
done

# 1. dispatch kernel: bit-exact against xs_balance_assign, then timed over 2000 graph replays.
step "test_dispatch" 60 build/test_dispatch

# 2. the profile: G activated experts x n rows each, batched cuBLAS bf16 GEMMs (gate+up, down).
step "tempo_profile (batched)" 120 build/bench_tempo_profile --out "$CSV" --model both \
  --method batched --G 1,2,4,8,16,32 --n 1,8,32,64,96,128,192,256,384,512,1024,2048 --reps 10
# the same on a small grid with one cublasGemmEx per expert, for comparison (not fitted)
step "tempo_profile (loop)" 60 build/bench_tempo_profile --out "$OUT/tempo_profile_loop.csv" \
  --model both --method loop --G 1,4,16 --n 1,64,256,1024 --reps 5

# 3. fit t = max(a + b*G, c + beta*N) per model
step "balance fit" 30 build/xstage balance fit "$CSV"
step "balance fit (json)" 30 build/xstage balance fit "$CSV" --json

echo
echo "=== steps"
printf "$SUM"
echo
echo "=== TEMPO summary (H200)"
printf '%-14s %9s %9s %9s %10s %8s %8s\n' model a_us b_us c_us beta_us 'n*' rms
awk '/^=== balance fit:/{f=1; next} /^===/{f=0} f && ($1=="deepseek-v3" || $1=="qwen3-235b") {
  printf "%-14s %9s %9s %9s %10s %8s %8s\n", $1, $3, $4, $5, $6, $7, $8 }' "$LOG"
echo
grep '^dispatch_us' "$LOG" || echo "dispatch kernel: no timing (see test_dispatch above)"
