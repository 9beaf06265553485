/* common.cuh — what every example shares: creating the world its environment asks for,
 * checking results, and the PASS/FAIL/SKIPPED ending.
 *
 *   XSTAGE_WORLD=emulated (default) | local | nccl     which backend
 *   XSTAGE_RANKS=W                                     ranks: emulated (default 4), local
 *                                                      (default every visible GPU); nccl: the
 *                                                      launcher decides
 *   XSTAGE_HOST_MAPPED=1                               heaps in host-mapped memory (emulated,
 *                                                      local)
 *   XSTAGE_TRACE=file                                  examples that trace write it there
 *   XSTAGE_TIMEOUT_MS=T                                bound of each device wait (default 2000)
 * The nccl backend runs one rank per process, each checking the ranks it drives; the launcher
 * passes its environment on to every rank:
 *   XSTAGE_WORLD=nccl xstage launch -n 2 -- ./example_01_put_get
 * Exit status: 0 PASS, 1 FAIL, 77 SKIPPED (no GPU). */
#ifndef XSTAGE_EXAMPLES_COMMON_CUH
#define XSTAGE_EXAMPLES_COMMON_CUH

#include "xstage/device.cuh"
#include "xstage/xstage.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EX_CHECK(call)                                                                             \
  do {                                                                                             \
    xs_result ex_r_ = (call);                                                                      \
    if (ex_r_ != XS_OK) {                                                                          \
      fprintf(stderr, "%s:%d: %s: %s: %s\nFAIL\n", __FILE__, __LINE__, #call, xs_strerror(ex_r_),  \
              xs_last_error());                                                                    \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#define EX_CUDA(call)                                                                              \
  do {                                                                                             \
    cudaError_t ex_e_ = (call);                                                                    \
    if (ex_e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d: %s: %s\nFAIL\n", __FILE__, __LINE__, #call,                          \
              cudaGetErrorString(ex_e_));                                                          \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* Launch `kernel` once per entry of a launch plan; the team comes first. */
#define EX_LAUNCH(plan, kernel, threads, smem, ...)                                                \
  for (int ex_i_ = 0; ex_i_ < (plan).count; ex_i_++) {                                             \
    EX_CUDA(cudaSetDevice((plan).launch[ex_i_].device));                                           \
    kernel<<<(plan).launch[ex_i_].grid, (threads), (smem),                                         \
             (cudaStream_t)(plan).launch[ex_i_].stream>>>((plan).launch[ex_i_].team, __VA_ARGS__); \
    EX_CUDA(cudaGetLastError());                                                                   \
  }

/* The world the environment asks for (exits 77 without a GPU). */
static inline xs_world* ex_world(size_t heap_bytes, size_t trace_events) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    printf("SKIPPED: no CUDA GPU\n");
    exit(77);
  }
  const char* kind = getenv("XSTAGE_WORLD");
  const char* ranks = getenv("XSTAGE_RANKS");
  const char* hm = getenv("XSTAGE_HOST_MAPPED");
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.ranks = ranks ? atoi(ranks) : 4;
  cfg.heap_bytes = heap_bytes;
  cfg.trace_events = trace_events;
  cfg.mem = hm && atoi(hm) ? XS_MEM_HOST_MAPPED : XS_MEM_DEVICE;
  const char* tmo = getenv("XSTAGE_TIMEOUT_MS");
  if (tmo && atoi(tmo) > 0) cfg.timeout_ns = (uint64_t)atoi(tmo) * 1000000ull;
  xs_world* w = NULL;
  if (!kind || !strcmp(kind, "emulated")) {
    EX_CHECK(xs_world_create_emulated(&w, &cfg));
  } else if (!strcmp(kind, "local")) {
    cfg.ranks = ranks ? cfg.ranks : 0;
    EX_CHECK(xs_world_create_local(&w, &cfg));
  } else if (!strcmp(kind, "nccl")) {
    EX_CHECK(xs_world_create_nccl(&w, &cfg));
  } else {
    fprintf(stderr, "XSTAGE_WORLD='%s': expected emulated, local or nccl\nFAIL\n", kind);
    exit(1);
  }
  xs_world_info info;
  EX_CHECK(xs_world_info_get(&info, w));
  printf("world: %s, W=%d, this process drives ranks %d..%d\n",
         info.backend == XS_BACKEND_EMULATED ? "emulated"
         : info.backend == XS_BACKEND_LOCAL  ? "local"
                                             : "nccl",
         info.size, info.rank_first, info.rank_first + info.nlocal - 1);
  return w;
}

/* Copy `bytes` of symmetric `sym` on rank r to a new host buffer (free with free()). */
static inline void* ex_fetch(xs_world* w, const void* sym, size_t bytes, int r) {
  void* d = NULL;
  void* h = malloc(bytes);
  if (!h) exit(1);
  EX_CHECK(xs_world_ptr(&d, w, sym, r));
  EX_CUDA(cudaMemcpy(h, d, bytes, cudaMemcpyDefault));
  return h;
}
/* Copy host data to symmetric `sym` on rank r. */
static inline void ex_store(xs_world* w, void* sym, const void* h, size_t bytes, int r) {
  void* d = NULL;
  EX_CHECK(xs_world_ptr(&d, w, sym, r));
  EX_CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyDefault));
}

/* The value every example writes: word i of rank r's block b. */
static __host__ __device__ inline uint32_t ex_value(int r, int b, uint32_t i) {
  return ((uint32_t)r << 28) ^ ((uint32_t)b << 20) ^ (i * 2654435761u >> 12);
}

/* Device status must be clean; print PASS/FAIL, destroy the world, return the exit status. */
static inline int ex_finish(xs_world* w, long wrong, const char* name) {
  xs_status_report st;
  EX_CHECK(xs_world_sync(w));
  EX_CHECK(xs_world_status(&st, w, 1));
  if (st.code != XS_OK) printf("device status: %s\n", st.message);
  int ok = wrong == 0 && st.code == XS_OK;
  EX_CHECK(xs_world_barrier(w));
  EX_CHECK(xs_world_destroy(w));
  printf("%s: %s (%ld wrong words)\n", name, ok ? "PASS" : "FAIL", wrong);
  return ok ? 0 : 1;
}

#endif
