#!/usr/bin/env bash
# nvlink.sh — issue 8 (NVLink part) on a machine with >= 2 GPUs, from the repo root, with ./build
# already built: the GPU topology, the xbench test (peer:1 and peer:all rings checked byte for
# byte, cudaMemcpyPeer), an NVLink calibration (`xstage calibrate --target peer:all`: each peer,
# then every peer at once when there are >= 2 peers; NVLINK_LEVEL=quick|full, default full), and
# the GEMM epilogue hook storing every tile to a peer GPU (bench_gemm_remote) against the
# calibrated profile. With one GPU only the host-mapped GEMM hook runs (the peer steps say
# SKIPPED). Log: "$OUT/nvlink.log"; profile/CSV/SVG of the first peer copied to $OUT.
set -u
. "$(dirname "$0")/lib.sh"
xs_gpu_init nvlink
BIN=build/xstage
STEP_W=44
LEVEL=${NVLINK_LEVEL:-full}
TOTAL=${NVLINK_BUDGET_S:-240} # GPU-time budget of the whole peer:all calibration
xs_gpu_header nvidia-smi topo -m
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "GPUs: $NGPU" | tee -a "$LOG"
# peer:all calibrates each peer, then (>= 2 peers) all of them at once: the budget is shared
NT=$(( NGPU - 1 + (NGPU > 2 ? 1 : 0) ))
[ "$NT" -ge 1 ] || NT=1
BUDGET=$(( TOTAL / NT ))
[ "$BUDGET" -ge 30 ] || BUDGET=30
mkdir -p "$OUT/nv"

step "test_xbench (GPU; peers with >= 2)"  150 build/test_xbench
if [ "$NGPU" -ge 2 ]; then
  step "xbench peer:1 16x1MB G=0 --check"  20 $BIN xbench --target peer:1 --K 16 --V 1MB --G 0 --bursts 32 --check --profile h200-nvlink
  step "xbench peer:1 132x8MB G=0"         20 $BIN xbench --target peer:1 --K 132 --V 8MB --G 0 --bursts 32 --profile h200-nvlink
  step "calibrate peer:all --$LEVEL"       $(( (BUDGET * 3 / 2 + 20) * NT )) $BIN calibrate --target peer:all --"$LEVEL" -o "$OUT/nv" --budget-s "$BUDGET"
  P=""
  [ -f "$OUT/nv/profile-peer:1.json" ] && P="--profile $OUT/nv/profile-peer:1.json"
  step "gemm hook -> peer:1"               150 build/bench_gemm_remote --target peer:1 $P --reps 8
fi
step "gemm hook -> host (PCIe)"           150 build/bench_gemm_remote --target host --reps 5 \
  --shapes 8192x8192x8192,8192x8192x2048,4096x7168x2048

# files: the first peer's calibration (names without ':' travel back)
for f in "$OUT"/nv/*; do
  [ -f "$f" ] || continue
  b=$(basename "$f" | tr ':' '-')
  case "$b" in *peer-1*|*peer-all*) cp "$f" "$OUT/$b" ;; esac
done
rm -rf "$OUT/nv"

{
  echo
  echo "=== nvlink summary ($(( $(date +%s) - t_start )) s; log: $LOG)"
  printf "%b" "$SUM"
  echo "--- tests"
  grep -E 'passed, .* failed|SKIPPED|^  FAIL|cudaMemcpyPeer' "$LOG" | head -12
  echo "--- xbench"
  grep -E '^# xbench:|^steady state|^predicted|^check:' "$LOG" | sed 's/^/  /'
  echo "--- calibration"
  grep -E '^# xstage calibrate:|^sequences|^R \(sustained|^Q knee|^fitted:|^fit and errors|^held-out|^fitted rows|^pairs|^no X-Stage|^repeatability|skipped' "$LOG" | sed 's/^/  /'
  echo "--- gemm hook"
  grep -E '^# gemm_remote|^shape|^[0-9]+x[0-9]+x[0-9]+ |FAIL|^PASS' "$LOG" | sed 's/^/  /'
  ls -la "$OUT" | grep -vE ' \.\.?$'
} | tee -a "$LOG"
