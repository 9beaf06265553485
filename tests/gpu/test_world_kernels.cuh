/* test_world_kernels.cuh — collectives written with device.cuh and their host checkers, shared
 * by the world tests of every backend (emulated, local, nccl). Each process checks the ranks it
 * drives, byte-exact, against a formula; outputs are poisoned first. */
#ifndef XSTAGE_TEST_WORLD_KERNELS_CUH
#define XSTAGE_TEST_WORLD_KERNELS_CUH

#include "test.h"
#include "xstage/device.cuh"
#include "xstage/xstage.h"

#include <arpa/inet.h>
#include <cuda_runtime.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TW_CHECK(call)                                                                             \
  do {                                                                                             \
    xs_result tw_r_ = (call);                                                                      \
    XT_CHECK_MSG(tw_r_ == XS_OK, "%s: %s: %s", #call, xs_strerror(tw_r_), xs_last_error());        \
    if (tw_r_ != XS_OK) return 1;                                                                  \
  } while (0)
#define TW_CUDA(call)                                                                              \
  do {                                                                                             \
    cudaError_t tw_e_ = (call);                                                                    \
    XT_CHECK_MSG(tw_e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(tw_e_));                \
    if (tw_e_ != cudaSuccess) return 1;                                                            \
  } while (0)

static inline double tw_wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The nccl backend reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT. Not started by a launcher
 * (WORLD_SIZE unset), a test process becomes rank 0 of a one-rank world (W = 1) on a free
 * loopback port; under `xstage launch` or torchrun the environment is left alone. */
static inline void tw_nccl_default_env(void) {
  if (getenv("WORLD_SIZE")) return;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = 29533;
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && !bind(fd, (struct sockaddr*)&a, sizeof a) &&
      !getsockname(fd, (struct sockaddr*)&a, &len))
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  char buf[16];
  snprintf(buf, sizeof buf, "%d", port);
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", buf, 1);
}

/* The byte pattern of (rank, block, seed): random-looking, different for every input. */
static __host__ __device__ inline uint32_t tw_word(uint32_t seed, uint32_t rank, uint32_t blk,
                                                   uint32_t i) {
  uint32_t x = seed * 0x9e3779b1u ^ (rank + 1u) * 0x85ebca6bu ^ (blk + 1u) * 0xc2b2ae35u ^ i;
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  return x;
}

/* All-gather: every rank's `mine` (n bytes) lands in all[r * n] on every rank. Each CTA of a
 * rank stores its share to every peer, then adds 1 to each peer's `arrived` (release); a rank
 * is done when W * blocks_per_rank arrivals are in (acquire). With `per_sender` (host-mapped
 * heaps of GPUs without atomics on host memory: xs_world_info.host_atomics) CTA b of rank r
 * instead sets arrived[r * bpr + b] to 1 on each peer (one writer per word, no atomic), and a
 * rank waits for all W * bpr words. */
static __global__ void tw_all_gather_kernel(xs_team team, int bpr, const char* mine, char* all,
                                            size_t n, uint64_t* arrived, int per_sender) {
  xs_team me = xs_team_for_block(&team, bpr);
  int blk = xs_team_block(bpr);
  size_t share = (n / 16 + (size_t)bpr - 1) / (size_t)bpr * 16;
  size_t lo = (size_t)blk * share, hi = lo + share < n ? lo + share : n;
  const char* src = (const char*)xs_ptr_local(&me, mine);
  for (int p = 0; p < me.size; p++) {
    if (lo < hi) xs_put_tile_block(&me, p, all + (size_t)me.rank * n + lo, src + lo, hi - lo);
    if (per_sender)
      xs_signal_block(&me, p, arrived + me.rank * bpr + blk, 1, XS_SIGNAL_SET);
    else
      xs_signal_block(&me, p, arrived, 1, XS_SIGNAL_ADD);
  }
  if (per_sender)
    for (int i = 0; i < me.size * bpr; i++)
      xs_wait_until_block(&me, arrived + i, XS_CMP_GE, 1, 100);
  else
    xs_wait_until_block(&me, arrived, XS_CMP_GE, (uint64_t)me.size * (uint64_t)bpr, 100);
}

/* All-to-all: block j of rank r's `send` goes to slot r of rank j's `recv` (n bytes each); one
 * warp per destination; flag[r] on rank j is set to `epoch` when slot r is in. */
static __global__ void tw_all_to_all_kernel(xs_team team, const char* send, char* recv, size_t n,
                                            uint64_t* flag, uint64_t epoch) {
  xs_team me = xs_team_for_block(&team, 1);
  int j = (int)(threadIdx.x / 32u);
  if (j >= me.size) return;
  const char* src = (const char*)xs_ptr_local(&me, send) + (size_t)j * n;
  xs_put_tile_warp(&me, j, recv + (size_t)me.rank * n, src, n);
  xs_signal_warp(&me, j, flag + me.rank, epoch, XS_SIGNAL_SET);
  xs_wait_until_warp(&me, flag + j, XS_CMP_EQ, epoch, 200 + (uint32_t)j);
}

/* Launch a kernel of the plan on every entry (variadic args after the team). */
#define TW_LAUNCH(plan, kernel, threads, ...)                                                      \
  for (int tw_i_ = 0; tw_i_ < (plan).count; tw_i_++) {                                             \
    cudaSetDevice((plan).launch[tw_i_].device);                                                    \
    kernel<<<(plan).launch[tw_i_].grid, (threads), 0,                                              \
             (cudaStream_t)(plan).launch[tw_i_].stream>>>((plan).launch[tw_i_].team, __VA_ARGS__); \
  }

/* Fill `sym` (bytes) on every local rank with tw_word(seed, rank, blk = offset / blk_bytes). */
static inline int tw_fill(xs_world* w, void* sym, size_t bytes, size_t blk_bytes, uint32_t seed) {
  xs_world_info info;
  TW_CHECK(xs_world_info_get(&info, w));
  uint32_t* h = (uint32_t*)malloc(bytes);
  if (!h) return 1;
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    for (size_t i = 0; i < bytes / 4; i++)
      h[i] = tw_word(seed, (uint32_t)r, (uint32_t)(i * 4 / blk_bytes),
                     (uint32_t)(i % (blk_bytes / 4)));
    void* d = NULL;
    xs_result res = xs_world_ptr(&d, w, sym, r);
    if (res == XS_OK && cudaMemcpy(d, h, bytes, cudaMemcpyDefault) != cudaSuccess)
      res = XS_ERR_CUDA;
    if (res != XS_OK) {
      free(h);
      XT_CHECK_MSG(0, "fill rank %d failed", r);
      return 1;
    }
  }
  free(h);
  return 0;
}

/* Count words of `sym` on local rank r that differ from expect(r, word index). */
typedef uint32_t (*tw_expect_fn)(int rank, size_t word, const void* ctx);
static inline long tw_count_wrong(xs_world* w, void* sym, size_t bytes, int r, tw_expect_fn f,
                                  const void* ctx) {
  uint32_t* h = (uint32_t*)malloc(bytes);
  void* d = NULL;
  if (!h || xs_world_ptr(&d, w, sym, r) != XS_OK ||
      cudaMemcpy(h, d, bytes, cudaMemcpyDefault) != cudaSuccess) {
    free(h);
    return -1;
  }
  long wrong = 0;
  for (size_t i = 0; i < bytes / 4; i++)
    wrong += h[i] != f(r, i, ctx);
  free(h);
  return wrong;
}

typedef struct tw_ctx {
  uint32_t seed;
  size_t n; /* bytes per block */
} tw_ctx;

/* all[q * n + k] on any rank = mine of rank q, word k (block index 0 of a 1-block fill). */
static inline uint32_t tw_expect_ag(int rank, size_t word, const void* p) {
  const tw_ctx* c = (const tw_ctx*)p;
  size_t per = c->n / 4;
  (void)rank;
  return tw_word(c->seed, (uint32_t)(word / per), 0, (uint32_t)(word % per));
}
/* recv slot s on rank j = block j of rank s's send. */
static inline uint32_t tw_expect_a2a(int rank, size_t word, const void* p) {
  const tw_ctx* c = (const tw_ctx*)p;
  size_t per = c->n / 4;
  return tw_word(c->seed, (uint32_t)(word / per), (uint32_t)rank, (uint32_t)(word % per));
}

/* All-gather + all-to-all on a world, byte-exact on every local rank; 0 = pass. */
static inline int tw_run_collectives(xs_world* w, size_t n, int bpr, uint32_t seed) {
  xs_world_info info;
  TW_CHECK(xs_world_info_get(&info, w));
  int W = info.size;
  void *mine, *all, *arrived, *send, *recv, *flag;
  TW_CHECK(xs_malloc(&mine, w, n, 0));
  TW_CHECK(xs_malloc(&all, w, n * (size_t)W, 0));
  const size_t arrived_bytes = 8 * (size_t)W * (size_t)bpr;
  /* ADD counters need atomics at the destination (device.cuh XS_SIGNAL_ADD) */
  const int per_sender = info.mem == XS_MEM_HOST_MAPPED && !info.host_atomics;
  TW_CHECK(xs_malloc(&arrived, w, arrived_bytes, 0));
  TW_CHECK(xs_malloc(&send, w, n * (size_t)W, 0));
  TW_CHECK(xs_malloc(&recv, w, n * (size_t)W, 4096));
  TW_CHECK(xs_malloc(&flag, w, 8 * (size_t)W, 0));
  if (tw_fill(w, mine, n, n, seed) || tw_fill(w, send, n * (size_t)W, n, seed)) return 1;
  TW_CHECK(xs_world_memset(w, all, 0xA5, n * (size_t)W)); /* poison */
  TW_CHECK(xs_world_memset(w, recv, 0x5A, n * (size_t)W));
  TW_CHECK(xs_world_memset(w, arrived, 0, arrived_bytes));
  TW_CHECK(xs_world_memset(w, flag, 0, 8 * (size_t)W));
  TW_CHECK(xs_world_barrier(w)); /* every rank's inputs are ready before any peer writes */
  xs_launch_plan plan;
  TW_CHECK(xs_world_launch_plan(&plan, w, (const void*)tw_all_gather_kernel, 256, 0, bpr));
  TW_LAUNCH(plan, tw_all_gather_kernel, 256, bpr, (const char*)mine, (char*)all, n,
            (uint64_t*)arrived, per_sender);
  TW_CHECK(xs_world_launch_plan(&plan, w, (const void*)tw_all_to_all_kernel, 32 * W, 0, 1));
  TW_LAUNCH(plan, tw_all_to_all_kernel, 32 * W, (const char*)send, (char*)recv, n, (uint64_t*)flag,
            (uint64_t)7);
  TW_CHECK(xs_world_sync(w));
  TW_CHECK(xs_world_barrier(w));
  xs_status_report st;
  TW_CHECK(xs_world_status(&st, w, 1));
  XT_CHECK_MSG(st.code == XS_OK, "device status: %s", st.message);
  tw_ctx c = {seed, n};
  int bad = st.code != XS_OK;
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    long ag = tw_count_wrong(w, all, n * (size_t)W, r, tw_expect_ag, &c);
    long a2a = tw_count_wrong(w, recv, n * (size_t)W, r, tw_expect_a2a, &c);
    XT_CHECK_MSG(ag == 0, "W=%d rank %d: all-gather: %ld wrong words", W, r, ag);
    XT_CHECK_MSG(a2a == 0, "W=%d rank %d: all-to-all: %ld wrong words", W, r, a2a);
    bad |= ag != 0 || a2a != 0;
  }
  void* ptrs[6] = {flag, recv, send, arrived, all, mine};
  for (int i = 0; i < 6; i++)
    TW_CHECK(xs_free(w, ptrs[i]));
  return bad;
}

/* A missing signal in a world with one GPU per rank (local, nccl; the emulated world shares one
 * status word between ranks, so its waits fail fast after the first error and it has its own
 * test). CTA 1 of the victim (rank 1; rank 0 when W = 1) waits at location 42 on flags[0] of its
 * own heap, which nobody sets: its bounded wait must fire after the world's timeout. Then it
 * sets flags[1] on every other rank to 1 (the wait succeeded) or 2 (it gave up). CTA 1 of the
 * other ranks waits for that word (location 43) with a bound 40 times the world's, which covers
 * the victim's timeout plus the launch skew between processes: so the world holds exactly one
 * device-side error, on the victim's GPU, and no rank waits longer than that. */
#define TW_TIMEOUT_BPR 2
static __global__ void tw_timeout_kernel(xs_team team, uint64_t* flags) {
  xs_team me = xs_team_for_block(&team, TW_TIMEOUT_BPR);
  if (xs_team_block(TW_TIMEOUT_BPR) != 1) return; /* CTA 0 of each rank idles: cta ids differ */
  int victim = me.size > 1 ? 1 : 0;
  if (me.rank == victim) {
    bool ok = xs_wait_until_block(&me, flags + 0, XS_CMP_EQ, 1, 42);
    for (int p = 0; p < me.size; p++)
      if (p != me.rank) xs_signal_block(&me, p, flags + 1, ok ? 1u : 2u, XS_SIGNAL_SET);
  } else {
    me.timeout_ns *= 40;
    xs_wait_until_block(&me, flags + 1, XS_CMP_NE, 0, 43);
  }
}

/* Run tw_timeout_kernel on every rank this process drives and check what xs_world_status says
 * on this process: the victim's process gets {XS_ERR_TIMEOUT, victim, its CTA, location 42, the
 * flag's address, saw 0, expected 1} and exactly one error, after at least the timeout; every
 * other process gets no error, and the victim's "gave up" (2) in flags[1] of each rank it
 * drives. Then the status is reset, the signal pads cleared, and the world must still run the
 * collectives byte-exact. Collective in the nccl backend. 0 = pass. */
static inline int tw_run_timeout(xs_world* w) {
  xs_world_info info;
  TW_CHECK(xs_world_info_get(&info, w));
  int W = info.size, victim = W > 1 ? 1 : 0, bad = 0;
  int mine = victim >= info.rank_first && victim < info.rank_first + info.nlocal;
  double tmo = (double)info.timeout_ns * 1e-9;
  void* flags = NULL;
  TW_CHECK(xs_malloc(&flags, w, 2 * sizeof(uint64_t), 0));
  TW_CHECK(xs_world_memset(w, flags, 0, 2 * sizeof(uint64_t)));
  TW_CHECK(xs_world_barrier(w)); /* no rank signals into a word a peer has not zeroed yet */
  xs_launch_plan plan;
  TW_CHECK(xs_world_launch_plan(&plan, w, (const void*)tw_timeout_kernel, 64, 0, TW_TIMEOUT_BPR));
  unsigned cta = 0; /* blockIdx.x of the victim's waiting CTA in its launch */
  for (int i = 0; i < plan.count; i++)
    if (victim >= plan.launch[i].rank_first &&
        victim < plan.launch[i].rank_first + plan.launch[i].nranks)
      cta = (unsigned)((victim - plan.launch[i].rank_first) * TW_TIMEOUT_BPR + 1);
  double t0 = tw_wall_s();
  TW_LAUNCH(plan, tw_timeout_kernel, 64, (uint64_t*)flags);
  TW_CHECK(xs_world_sync(w));
  double dt = tw_wall_s() - t0;
  xs_status_report st;
  TW_CHECK(xs_world_status(&st, w, 1));
  if (mine) {
    void* flag0 = NULL;
    char want[32];
    TW_CHECK(xs_world_ptr(&flag0, w, flags, victim));
    snprintf(want, sizeof want, "rank %d (cta %u)", victim, cta);
    XT_CHECK_MSG(st.code == XS_ERR_TIMEOUT, "W=%d: status %d (%s), expected a timeout", W,
                 (int)st.code, st.message);
    XT_EQ_INT(st.rank, victim);
    XT_EQ_INT(st.cta, cta);
    XT_EQ_INT(st.location, 42);
    XT_CHECK(st.flag == (uint64_t)(uintptr_t)flag0);
    XT_EQ_INT(st.observed, 0);
    XT_EQ_INT(st.expected, 1);
    XT_EQ_INT(st.count, 1); /* the other ranks were released, none timed out */
    XT_CHECK_MSG(strstr(st.message, want) && strstr(st.message, "location 42") &&
                     strstr(st.message, "saw 0, expected 1"),
                 "message: %s", st.message);
    XT_CHECK_MSG(dt >= 0.9 * tmo, "the wait gave up after %.3f s, before its %.3f s bound", dt,
                 tmo);
    bad |= st.code != XS_ERR_TIMEOUT || st.rank != victim || st.cta != cta || st.location != 42 ||
           st.observed != 0 || st.expected != 1 || st.count != 1 || dt < 0.9 * tmo ||
           st.flag != (uint64_t)(uintptr_t)flag0;
    printf("     W=%d timeout report after %.3f s (bound %.3f s): %s\n", W, dt, tmo, st.message);
  } else {
    XT_CHECK_MSG(st.code == XS_OK && st.count == 0, "rank %d: %s", info.rank_first, st.message);
    bad |= st.code != XS_OK || st.count != 0;
    printf("     W=%d rank %d: released by rank %d's abort after %.3f s, status %s\n", W,
           info.rank_first, victim, dt, st.message);
  }
  XT_CHECK_MSG(dt < tmo + 5.0, "the world took %.2f s to give up (bound %.3f s)", dt, tmo);
  bad |= dt >= tmo + 5.0;
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    if (r == victim) continue;
    uint64_t v = 0;
    void* d = NULL;
    TW_CHECK(xs_world_ptr(&d, w, (uint64_t*)flags + 1, r));
    TW_CUDA(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDefault));
    XT_CHECK_MSG(v == 2, "rank %d: flags[1] = %llu, expected the victim's 2 (gave up)", r,
                 (unsigned long long)v);
    bad |= v != 2;
  }
  TW_CHECK(xs_world_status(&st, w, 0)); /* the reset cleared it */
  XT_CHECK_MSG(st.code == XS_OK && st.rank == -1 && st.count == 0, "after reset: %s", st.message);
  bad |= st.code != XS_OK;
  /* still usable: clear the pads on every rank, meet, run good collectives */
  TW_CHECK(xs_world_clear_signals(w));
  TW_CHECK(xs_world_barrier(w));
  TW_CHECK(xs_free(w, flags));
  bad |= tw_run_collectives(w, 65536, 2, 41u);
  return bad;
}

#endif
