/* test_rma_handoff.cu — the inbox protocol under stress: for every ordered pair of ranks
 * (producer -> consumer) of an emulated world, W = 2, 4, 8, at least 1e6 handoffs of a 512-byte
 * tile + a release flag through a ring of S slots with credits, with random delays on both
 * sides. Each tile word encodes (producer, consumer, sequence, lane), so a consumer that sees a
 * flag before its data (a stale tile), or part of a tile (a torn tile), counts an error.
 * A shorter run repeats it with host-mapped heaps (the PCIe path).
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

#include <time.h>

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
 * receives from rank j). */
static __global__ void handoff_kernel(xs_team team, char* data, uint64_t* flag, uint64_t* ack,
                                      uint32_t n, unsigned long long* errors,
                                      unsigned long long* handoffs) {
  xs_team me = xs_team_for_block(&team, 2);
  int role = xs_team_block(2);
  int j = (int)(threadIdx.x / 32u);
  uint32_t lane = threadIdx.x & 31u;
  if (j == me.rank || j >= me.size) return;
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

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run_handoff(int W, xs_mem_kind mem, uint32_t n) {
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.ranks = W;
  cfg.mem = mem;
  cfg.heap_bytes = (size_t)1 << 20;
  cfg.timeout_ns = 5000000000ull;
  xs_world* w = NULL;
  TW_CHECK(xs_world_create_emulated(&w, &cfg));
  void *data, *flag, *ack;
  size_t dbytes = (size_t)W * SLOTS * TILE, fbytes = (size_t)W * SLOTS * 8;
  TW_CHECK(xs_malloc(&data, w, dbytes, 0));
  TW_CHECK(xs_malloc(&flag, w, fbytes, 0));
  TW_CHECK(xs_malloc(&ack, w, fbytes, 0));
  TW_CHECK(xs_world_memset(w, data, 0xCC, dbytes));
  TW_CHECK(xs_world_memset(w, flag, 0, fbytes));
  TW_CHECK(xs_world_memset(w, ack, 0, fbytes));
  unsigned long long* d = NULL;
  unsigned long long h[2] = {0, 0};
  TW_CUDA(cudaMalloc((void**)&d, sizeof h));
  TW_CUDA(cudaMemset(d, 0, sizeof h));
  xs_launch_plan plan;
  TW_CHECK(xs_world_launch_plan(&plan, w, (const void*)handoff_kernel, 32 * W, 0, 2));
  double t0 = wall_s();
  TW_LAUNCH(plan, handoff_kernel, 32 * W, (char*)data, (uint64_t*)flag, (uint64_t*)ack, n, d,
            d + 1);
  TW_CHECK(xs_world_sync(w));
  double dt = wall_s() - t0;
  TW_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  xs_status_report st;
  TW_CHECK(xs_world_status(&st, w, 1));
  unsigned long long want = (unsigned long long)W * (unsigned long long)(W - 1) * n;
  printf("     W=%d %-11s: %llu handoffs (%u per ordered pair) in %.2f s, %llu wrong\n", W,
         mem == XS_MEM_DEVICE ? "HBM" : "host-mapped", h[1], n, dt, h[0]);
  XT_CHECK_MSG(st.code == XS_OK, "W=%d: %s", W, st.message);
  XT_CHECK_MSG(h[0] == 0, "W=%d: %llu stale or torn tiles", W, h[0]);
  XT_CHECK_MSG(h[1] == want, "W=%d: %llu handoffs, expected %llu", W, h[1], want);
  cudaFree(d);
  TW_CHECK(xs_world_destroy(w));
  return st.code != XS_OK || h[0] != 0 || h[1] != want;
}

static void test_handoff_hbm(void) {
  const int Ws[3] = {2, 4, 8};
  const char* e = getenv("XSTAGE_HANDOFFS"); /* default 1e6 per ordered pair */
  uint32_t n = e && atol(e) > 0 ? (uint32_t)atol(e) : 1000000u;
  for (int k = 0; k < 3; k++)
    XT_CHECK(run_handoff(Ws[k], XS_MEM_DEVICE, n) == 0);
}

static void test_handoff_host_mapped(void) {
  XT_CHECK(run_handoff(2, XS_MEM_HOST_MAPPED, 20000u) == 0);
  XT_CHECK(run_handoff(4, XS_MEM_HOST_MAPPED, 5000u) == 0);
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) XT_SKIP("no CUDA GPU");
  XT_RUN(test_handoff_hbm);
  XT_RUN(test_handoff_host_mapped);
  return XT_END();
}
