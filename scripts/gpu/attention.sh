#!/usr/bin/env bash
# attention.sh — issue 7 on the H200, from the repo root, with ./build already built (no rebuild):
# SASS check (HGMMA), a v2 smoke run, tests/gpu/test_attention, `xstage bench attention` on the
# DiT shapes (+ d=64, causal; hook variants: map, map + flags "hbm", host + flags, "hostmap"
# = host without flags, the host rows beside the X-Stage model's prediction), and cuDNN/flash
# through torch SDPA beside ours (bench/attention_cudnn.py). Everything is logged to
# "$OUT/attention.log"; a summary table is printed last. About 150 s at most: every step has
# its own timeout.
set -u
. "$(dirname "$0")/lib.sh"
xs_gpu_init attention
BUILD=${BUILD:-build}   # the build folder (default ./build, as the lead builds it)
BIN=$BUILD/xstage
PY=/opt/torch/.venv/bin/python3
[ -x "$PY" ] || PY=python3
xs_gpu_header

# SASS: version 2 must use HGMMA (wgmma), not HMMA, and spill nothing to local memory.
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
LIBF=""
for f in "$BUILD/libxstage.so" "$BUILD/libxstage.a" "$BIN"; do [ -f "$f" ] && { LIBF=$f; break; }; done
if [ -x "$CUOBJ" ] && [ -n "$LIBF" ]; then
  "$CUOBJ" -sass "$LIBF" 2>"$OUT/attention_sass.err" |
    awk '/Function : /{f=$3} f ~ /attention_kernel/ {print f": "$0}' >"$OUT/attention_sass.txt"
  {
    echo "=== SASS of the attention kernels in $LIBF ($CUOBJ)"
    head -3 "$OUT/attention_sass.err"
    for k in $(awk -F': ' '{print $1}' "$OUT/attention_sass.txt" | sort -u); do
      printf '%-72s HGMMA %4d  HMMA %4d  LDL/STL %3d  MUFU.EX2 %4d\n' "$k" \
        "$(grep -F "$k: " "$OUT/attention_sass.txt" | grep -c HGMMA)" \
        "$(grep -F "$k: " "$OUT/attention_sass.txt" | grep -c ' HMMA')" \
        "$(grep -F "$k: " "$OUT/attention_sass.txt" | grep -cE 'LDL|STL')" \
        "$(grep -F "$k: " "$OUT/attention_sass.txt" | grep -c 'MUFU.EX2')"
    done
    # The main loop must read: DEPBAR 0x1, the softmax's MUFU.EX2, then DEPBAR 0x0 (overlap).
    for k in $(awk -F': ' '{print $1}' "$OUT/attention_sass.txt" | sort -u | grep kernel_v2); do
      echo "order $k:"
      grep -F "$k: " "$OUT/attention_sass.txt" | grep -oE 'HGMMA[^ ]*|WARPGROUP\.DEPBAR[^;]*|MUFU\.EX2|F2FP' |
        awk '/MUFU|F2FP/ {c[$1]++; next} {for (x in c) printf "%d %s, ", c[x], x; delete c; print}
             END {for (x in c) printf "%d %s, ", c[x], x}' | uniq -c | tr '\n' ' ' | sed 's/  */ /g'
      echo
    done
  } | tee -a "$LOG"
  SUM+="$(printf '%-34s %s' "sass: HGMMA in attention kernels" "$(grep -c HGMMA "$OUT/attention_sass.txt")")\n"
else
  echo "=== no cuobjdump or no library: SASS not checked" | tee -a "$LOG"
fi

# A small v2 run first: a hang or a fault shows here, with the shape, before the long steps.
step "smoke v2 d=128" 15 "$BIN" bench attention --B 1 --H 2 --S 300 --d 128 --version 0 --reps 2
step "smoke v2 d=64 causal" 15 "$BIN" bench attention --B 2 --H 2 --S 257 --d 64 --causal --version 0 --reps 2
step "test_attention" 60 "$BUILD/test_attention"

B="$BIN bench attention --B 1"
step "bench H=24 S=4608 d=128" 20 $B --H 24 --S 4608 --d 128 --version 0
step "bench H=24 S=16896 d=128" 15 $B --H 24 --S 16896 --d 128 --version 2
step "bench H=40 S=32760 d=128" 20 $B --H 40 --S 32760 --d 128 --version 2
step "bench H=5 S=75600 d=128" 15 $B --H 5 --S 75600 --d 128 --version 2
step "bench H=24 S=8192 d=64" 15 $B --H 24 --S 8192 --d 64 --version 0 --hook none
step "bench H=24 S=8192 d=128 causal" 15 $B --H 24 --S 8192 --d 128 --causal --version 0 --hook none
step "bench H=24 S=16896 d=128 causal" 15 $B --H 24 --S 16896 --d 128 --causal --version 2 --hook none
left=$(( 150 - ($(date +%s) - t_start) ))
[ "$left" -lt 30 ] && left=30
step "cudnn vs ours (torch SDPA)" "$left" "$PY" bench/attention_cudnn.py --bin "$BIN"

{
  echo
  echo "=== attention summary ($(( $(date +%s) - t_start )) s; log: $LOG)"
  printf "%b" "$SUM"
  echo "--- TFLOP/s rows (version hook ms TFLOP/s vs_plain, the model's lockstep and spread vs_plain for host rows, wrong)"
  grep -E '^# attention fwd|^v[0-9]' "$LOG"
  echo "--- cuDNN comparison"
  sed -n '/=== cudnn vs ours/,$p' "$LOG" | grep -E '^[0-9]+,|^# worst|^shape' || echo "(none)"
  echo "--- test result"
  grep -E 'passed, .* failed|SKIPPED|FAIL' "$LOG" | tail -8
} | tee -a "$LOG"
