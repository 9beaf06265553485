#!/usr/bin/env bash
# all.sh — one call on the GPU machine: environment facts, each area's script under its own time
# limit, everything packed into $OUT/results.tgz, and a summary printed last.
#   AREAS="world calib" bash scripts/gpu/all.sh      (default: every scripts/gpu/<area>.sh)
# Expects the build in .carry/build (scripts/pack-build.sh) or ./build.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
libdirs=$(find "$NV" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${libdirs}/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PATH=/opt/torch/.venv/bin:$PATH
OUT=${OUT:-/tmp/xs_out}
mkdir -p "$OUT"
if [ -d .carry/build ]; then rm -rf build && cp -r .carry/build build; fi
{
  date -u; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd build/xstage | grep -E "not found|cuda|nccl|cublas|xstage"
} >"$OUT/env.log" 2>&1
cat "$OUT/env.log"
declare -A LIMIT=([world]=200 [calib]=480 [tempo]=150 [gemm]=250 [attention]=180 [nvlink]=560 [multi_world]=220 [gemm_probe]=420)
summary=""
for area in ${AREAS:-world calib tempo gemm attention}; do
  [ -f "scripts/gpu/$area.sh" ] || { summary+="$area: no script\n"; continue; }
  t0=$(date +%s)
  timeout -k 10 "${LIMIT[$area]:-120}" bash "scripts/gpu/$area.sh" >"$OUT/$area.stdout" 2>&1
  rc=$?
  summary+="== $area: rc=$rc, $(( $(date +%s) - t0 )) s\n$(tail -25 "$OUT/$area.stdout")\n"
done
(cd "$OUT" && { tar czf /tmp/xs_results.tgz . 2>/dev/null; find . -mindepth 1 -delete; mv /tmp/xs_results.tgz results.tgz; })
printf "%b" "$summary"
