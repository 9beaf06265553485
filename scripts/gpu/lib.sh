# lib.sh — sourced by the scripts/gpu/<area>.sh scripts (not run by itself).
#   xs_gpu_init AREA      environment (CUDA libraries from PyTorch's wheels, NVLink multicast
#                         off), $OUT, $LOG="$OUT/AREA.log" emptied, $SUM="" and $t_start
#   step NAME LIMIT CMD…  CMD under a timeout, output to the log and the terminal; one summary
#                         line per step in $SUM (name padded to $STEP_W columns, default 34)
#   xs_gpu_header [CMD…]  date, GPU, commit (and CMD's output) at the top of the log
xs_gpu_init() {
  NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
  export LD_LIBRARY_PATH="$NV/nccl/lib:$NV/cublas/lib:${LD_LIBRARY_PATH:-}"
  export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
  OUT=${OUT:-/tmp/xs_out}
  mkdir -p "$OUT"
  LOG="$OUT/$1.log"
  : >"$LOG"
  SUM=""
  t_start=$(date +%s)
}

step() {
  local name=$1 limit=$2
  shift 2
  echo "=== $name: $* (limit ${limit}s)" | tee -a "$LOG"
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  local dt=$(( $(date +%s) - t0 ))
  [ "$rc" = 124 ] && echo "=== $name: TIMED OUT after ${limit}s" | tee -a "$LOG"
  SUM+="$(printf "%-${STEP_W:-34}s rc=%-4s %4ss" "$name" "$rc" "$dt")\n"
}

xs_gpu_header() {
  {
    date -u
    nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
    git log -1 --format='commit %h %s' 2>/dev/null
    [ $# -gt 0 ] && "$@" 2>&1
  } | tee -a "$LOG"
}
