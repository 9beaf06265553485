#!/bin/sh
# nvcc-guard.sh — the CUDA compiler launcher (CMakeLists.txt, CMAKE_CUDA_COMPILER_LAUNCHER).
# Runs the compile as is and fails it when ptxas reports that it serialized a kernel's wgmma
# instructions (C7511, or any ptxas message that names wgmma and serialization): such a kernel
# compiles and is correct, but runs its tensor-core work without pipelining (13-15 % slower on
# the H200 in session 24, where the v11 kernels sat at the edge of their 168 registers and small
# code changes tipped them over unnoticed).
out=$("$@" 2>&1)
rc=$?
[ -n "$out" ] && printf '%s\n' "$out" >&2
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q 'wgmma.* serialized\|C75[12][0-9].*wgmma'; then
  echo "nvcc-guard: ptxas serialized the wgmma pipeline of a kernel above; refusing the build" >&2
  # The object is removed, so that the next make compiles it again instead of taking it.
  prev=""
  for a in "$@"; do
    [ "$prev" = "-o" ] && rm -f "$a"
    prev=$a
  done
  exit 1
fi
exit "$rc"
