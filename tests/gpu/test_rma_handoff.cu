/* test_rma_handoff.cu — the inbox protocol under stress: for every ordered pair of ranks
 * (producer -> consumer), at least 1e6 handoffs of a 512-byte tile + a release flag through a
 * ring of S slots with credits, with random delays on both sides. Each tile word encodes
 * (producer, consumer, sequence, lane), so a consumer that sees a flag before its data (a stale
 * tile), or part of a tile (a torn tile), counts an error. A shorter run repeats it with
 * host-mapped heaps (the PCIe path) where the backend has them. Every run prints its rate per
 * ordered pair (the pairs run concurrently).
 *
 * The backend comes from the environment, as in the examples:
 *   (unset) | XSTAGE_WORLD=emulated   W = 2, 4, 8 virtual ranks on one GPU
 *   XSTAGE_WORLD=local                W = every visible GPU (XSTAGE_RANKS=W: fewer), one
 *                                     process; SKIPPED with fewer than 2 GPUs
 *   XSTAGE_WORLD=nccl                 one rank per process: `XSTAGE_WORLD=nccl xstage launch -n N
 *                                     -- test_rma_handoff`; plainly, W = 1 (the rank hands off to
 *                                     itself); HBM only (nccl heaps are NCCL symmetric memory)
 *   XSTAGE_HANDOFFS=n                 handoffs per ordered pair (default 1e6)
 * Each process counts, in memory of the GPU that runs each rank, the tiles its consumer warps
 * received and the wrong ones, and checks its own total: ranks it drives x (W-1) x n.
 *
 *   producer warp (me -> c), message i, slot i % S:
 *     wait ack[c][slot] >= i-S+1 (credit: the consumer has read message i-S)   acquire
 *     32 lanes: st.global.v4 of the tile into c's data[me][slot]              weak stores
 *     xs_signal_warp: flag[me][slot] = i+1 on c                                release
 *   consumer warp (s -> me):
 *     xs_wait_until_warp flag[s][slot] == i+1                                  acquire
 *     32 lanes: ld.global.v4 + check                                           weak loads
 *     xs_signal_warp: ack[me][slot] = i+1 on s                                 release
 */
#include "test_world_kernels.cuh"

#define SLOTS 8
#define TILE 512 /* 32 lanes x 16 bytes */

static __device__ __forceinline__ uint4 tile_word(int p, int c, uint32_t seq, uint32_t lane) {
  uint32_t tag = ((uint32_t)p << 24) | ((uint32_t)c << 16) | lane;
  return make_uint4(seq, tag, seq * 0x9e3779b9u ^ tag, ~seq);
}

static __device__ __forceinline__ uint32_t rng(uint32_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* Block 0 of each rank: producer warps (warp j sends to rank j); block 1: consumer warps (warp j
 * receives from rank j). W = 1 has no pair of distinct ranks: its rank hands off to itself. */
static __global__ void handoff_kernel(xs_team team, char* data, uint64_t* flag, uint64_t* ack,
                                      uint32_t n, unsigned long long* errors,
                                      unsigned long long* handoffs) {
  xs_team me = xs_team_for_block(&team, 2);
  int role = xs_team_block(2);
  int j = (int)(threadIdx.x / 32u);
  uint32_t lane = threadIdx.x & 31u;
  if (j >= me.size || (j == me.rank && me.size > 1)) return;
  uint32_t seed =
      0x1234567u ^ ((uint32_t)me.rank << 20) ^ ((uint32_t)j << 12) ^ ((uint32_t)role << 8) ^ lane;
  unsigned long long bad = 0, done = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t slot = i % SLOTS;
    if ((rng(&seed) & 7u) == 0u) xs_nanosleep(rng(&seed) & 511u); /* random delay */
    __syncwarp();
    if (role == 0) { /* producer: me -> j */
      if (i >= SLOTS && !xs_wait_until_warp(&me, ack + j * SLOTS + slot, XS_CMP_GE,
                                            (uint64_t)(i - SLOTS + 1), 1000u + (uint32_t)j))
        break;
      char* dst = data + ((size_t)me.rank * SLOTS + slot) * TILE + lane * 16u;
      xs_put_v4_thread(&me, j, dst, tile_word(me.rank, j, i + 1, lane));
      xs_signal_warp(&me, j, flag + me.rank * SLOTS + slot, (uint64_t)(i + 1), XS_SIGNAL_SET);
    } else { /* consumer: j -> me */
      if (!xs_wait_until_warp(&me, flag + j * SLOTS + slot, XS_CMP_GE, (uint64_t)(i + 1),
                              2000u + (uint32_t)j))
        break;
      const uint64_t* f = (const uint64_t*)xs_ptr_local(&me, flag + j * SLOTS + slot);
      if (lane == 0 && xs_ld_acquire_sys_u64(f) != (uint64_t)(i + 1)) bad++; /* ran ahead */
      const char* src =
          (const char*)xs_ptr_local(&me, data + ((size_t)j * SLOTS + slot) * TILE + lane * 16u);
      uint4 v = xs_ld_v4(src), e = tile_word(j, me.rank, i + 1, lane);
      if (v.x != e.x || v.y != e.y || v.z != e.z || v.w != e.w) bad++;
      done += lane == 0;
      xs_signal_warp(&me, j, ack + me.rank * SLOTS + slot, (uint64_t)(i + 1), XS_SIGNAL_SET);
    }
  }
  if (bad) atomicAdd(errors, bad);
  if (done) atomicAdd(handoffs, done);
}

/* What one process drives: a world of `kind` with W ranks (emulated, local: W; nccl: ignored). */
static xs_world* make_world(const char* kind, int W, xs_mem_kind mem) {
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.ranks = W;
  cfg.mem = mem;
  cfg.heap_bytes = (size_t)1 << 20;
  cfg.timeout_ns = 5000000000ull;
  xs_world* w = NULL;
  xs_result r;
  if (!strcmp(kind, "nccl")) {
    tw_nccl_default_env();
    r = xs_world_create_nccl(&w, &cfg);
    if (r == XS_ERR_UNSUPPORTED) XT_SKIP("nccl world: %s", xs_last_error());
  } else if (!strcmp(kind, "local")) {
    r = xs_world_create_local(&w, &cfg);
  } else {
    r = xs_world_create_emulated(&w, &cfg);
  }
  XT_CHECK_MSG(r == XS_OK, "%s world (W=%d): %s: %s", kind, W, xs_strerror(r), xs_last_error());
  return r == XS_OK ? w : NULL;
}

static int run_handoff(const char* kind, int W_req, xs_mem_kind mem, uint32_t n) {
  xs_world* w = make_world(kind, W_req, mem);
  if (!w) return 1;
  xs_world_info info;
  TW_CHECK(xs_world_info_get(&info, w));
  int W = info.size;
  void *data, *flag, *ack;
  size_t dbytes = (size_t)W * SLOTS * TILE, fbytes = (size_t)W * SLOTS * 8;
  TW_CHECK(xs_malloc(&data, w, dbytes, 0));
  TW_CHECK(xs_malloc(&flag, w, fbytes, 0));
  TW_CHECK(xs_malloc(&ack, w, fbytes, 0));
  TW_CHECK(xs_world_memset(w, data, 0xCC, dbytes));
  TW_CHECK(xs_world_memset(w, flag, 0, fbytes));
  TW_CHECK(xs_world_memset(w, ack, 0, fbytes));
  xs_launch_plan plan;
  TW_CHECK(xs_world_launch_plan(&plan, w, (const void*)handoff_kernel, 32 * W, 0, 2));
  /* NOTE: one pair of counters per launch, in memory of the GPU that runs it: the kernel's
   * atomics never cross a GPU boundary, and each process sums its own on the host. */
  unsigned long long* d[XS_MAX_RANKS] = {NULL};
  for (int i = 0; i < plan.count; i++) {
    TW_CUDA(cudaSetDevice(plan.launch[i].device));
    TW_CUDA(cudaMalloc((void**)&d[i], 2 * sizeof(unsigned long long)));
    TW_CUDA(cudaMemset(d[i], 0, 2 * sizeof(unsigned long long)));
    TW_CUDA(cudaDeviceSynchronize());
  }
  TW_CHECK(xs_world_barrier(w)); /* every rank's slots are poisoned and its flags zero */
  double t0 = tw_wall_s();
  for (int i = 0; i < plan.count; i++) {
    TW_CUDA(cudaSetDevice(plan.launch[i].device));
    handoff_kernel<<<plan.launch[i].grid, 32 * W, 0, (cudaStream_t)plan.launch[i].stream>>>(
        plan.launch[i].team, (char*)data, (uint64_t*)flag, (uint64_t*)ack, n, d[i], d[i] + 1);
    TW_CUDA(cudaGetLastError());
  }
  TW_CHECK(xs_world_sync(w));
  double dt = tw_wall_s() - t0;
  unsigned long long wrong = 0, got = 0;
  for (int i = 0; i < plan.count; i++) {
    unsigned long long h[2] = {0, 0};
    TW_CUDA(cudaSetDevice(plan.launch[i].device));
    TW_CUDA(cudaMemcpy(h, d[i], sizeof h, cudaMemcpyDeviceToHost));
    TW_CUDA(cudaFree(d[i]));
    wrong += h[0];
    got += h[1];
  }
  xs_status_report st;
  TW_CHECK(xs_world_status(&st, w, 1));
  unsigned long long pairs = W > 1 ? (unsigned long long)(W - 1) : 1ull; /* senders per rank */
  unsigned long long want = (unsigned long long)info.nlocal * pairs * n;
  printf("     %s W=%d %-11s ranks %d..%d: %llu handoffs (%u per ordered pair) in %.2f s: "
         "%.2f M/s per pair, %.2f M/s received here, %llu wrong\n",
         kind, W, mem == XS_MEM_DEVICE ? "HBM" : "host-mapped", info.rank_first,
         info.rank_first + info.nlocal - 1, got, n, dt, 1e-6 * (double)n / dt,
         1e-6 * (double)got / dt, wrong);
  fflush(stdout);
  XT_CHECK_MSG(st.code == XS_OK, "%s W=%d: %s", kind, W, st.message);
  XT_CHECK_MSG(wrong == 0, "%s W=%d: %llu stale or torn tiles", kind, W, wrong);
  XT_CHECK_MSG(got == want, "%s W=%d: %llu handoffs, expected %llu", kind, W, got, want);
  TW_CHECK(xs_world_barrier(w)); /* no peer's final acks still in flight into this heap */
  TW_CHECK(xs_world_destroy(w));
  return st.code != XS_OK || wrong != 0 || got != want;
}

static const char* g_kind = "emulated";
static uint32_t g_n = 1000000u; /* handoffs per ordered pair (XSTAGE_HANDOFFS) */
static int g_ranks = 0;         /* XSTAGE_RANKS: W of the local world (0 = every GPU) */

static void test_handoff_hbm(void) {
  if (strcmp(g_kind, "emulated")) {
    XT_CHECK(run_handoff(g_kind, g_ranks, XS_MEM_DEVICE, g_n) == 0);
    return;
  }
  const int Ws[3] = {2, 4, 8};
  for (int k = 0; k < 3; k++)
    XT_CHECK(run_handoff(g_kind, Ws[k], XS_MEM_DEVICE, g_n) == 0);
}

/* Not run under nccl: that backend's heaps are NCCL symmetric memory (main says so). */
static void test_handoff_host_mapped(void) {
  if (!strcmp(g_kind, "local")) {
    int W = g_ranks;
    if (W == 0 && cudaGetDeviceCount(&W) != cudaSuccess) W = 2;
    XT_CHECK(run_handoff(g_kind, g_ranks, XS_MEM_HOST_MAPPED, W <= 2 ? 20000u : 5000u) == 0);
    return;
  }
  XT_CHECK(run_handoff(g_kind, 2, XS_MEM_HOST_MAPPED, 20000u) == 0);
  XT_CHECK(run_handoff(g_kind, 4, XS_MEM_HOST_MAPPED, 5000u) == 0);
}

int main(void) {
  const char* kind = getenv("XSTAGE_WORLD");
  const char* e = getenv("XSTAGE_HANDOFFS");
  const char* r = getenv("XSTAGE_RANKS");
  if (kind && *kind) g_kind = kind;
  if (strcmp(g_kind, "emulated") && strcmp(g_kind, "local") && strcmp(g_kind, "nccl")) {
    fprintf(stderr, "XSTAGE_WORLD='%s': expected emulated, local or nccl\n", g_kind);
    return 2;
  }
  if (e && atol(e) > 0) g_n = (uint32_t)atol(e);
  if (r && atoi(r) > 0) g_ranks = atoi(r);
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) XT_SKIP("no CUDA GPU");
  if (!strcmp(g_kind, "local") && (g_ranks ? g_ranks : n) < 2)
    XT_SKIP("the local world needs >= 2 GPUs (this machine has %d)", n);
  XT_RUN(test_handoff_hbm);
  if (strcmp(g_kind, "nccl"))
    XT_RUN(test_handoff_host_mapped);
  else
    printf("SKIPPED test_handoff_host_mapped: the nccl backend's heaps are NCCL symmetric memory, "
           "never host-mapped\n");
  return XT_END();
}
