/* 02_all_gather.cu — all-gather with per-rank arrival counters.
 *
 * Each rank owns BLOCK bytes; afterwards every rank holds all W blocks in rank order. Each of
 * the CTAS CTAs of a rank stores its share of the block to every rank, then adds 1 to that
 * rank's `arrived` counter (release: publishes the share). A rank's CTAs are done when
 * W * CTAS arrivals are in (acquire). Checked byte-exact on every rank.
 */
#include "common.cuh"

#define BLOCK (256u * 1024u)
#define CTAS 4

static __global__ void all_gather_kernel(xs_team team, const char* mine, char* all,
                                         uint64_t* arrived) {
  xs_team me = xs_team_for_block(&team, CTAS);
  int blk = xs_team_block(CTAS);
  const size_t share = BLOCK / CTAS, off = (size_t)blk * share;
  const char* src = (const char*)xs_ptr_local(&me, mine) + off;
  for (int k = 0; k < me.size; k++) {
    int p = (me.rank + k) % me.size; /* NOTE: start at a different peer on every rank */
    xs_put_tile_block(&me, p, all + (size_t)me.rank * BLOCK + off, src, share);
    xs_signal_block(&me, p, arrived, 1, XS_SIGNAL_ADD);
  }
  xs_wait_until_block(&me, arrived, XS_CMP_GE, (uint64_t)me.size * CTAS, 1);
}

int main(void) {
  xs_world* w = ex_world((size_t)32 << 20, 0);
  xs_world_info info;
  EX_CHECK(xs_world_info_get(&info, w));
  if (info.mem == XS_MEM_HOST_MAPPED && !info.host_atomics) {
    /* NOTE: XS_SIGNAL_ADD is an atomic at the destination; a GPU on PCIe has none on host
     * memory (device.cuh XS_SIGNAL_ADD). 03_all_to_all shows the SET-only pattern. */
    printf("02_all_gather: SKIPPED: its arrival counters use XS_SIGNAL_ADD, and this GPU has no "
           "atomics on host memory (xs_world_info.host_atomics = 0); run it with HBM heaps\n");
    xs_world_destroy(w);
    return 77;
  }
  size_t all_bytes = (size_t)BLOCK * (size_t)info.size;
  void *mine, *all, *arrived;
  EX_CHECK(xs_malloc(&mine, w, BLOCK, 0));
  EX_CHECK(xs_malloc(&all, w, all_bytes, 0));
  EX_CHECK(xs_malloc(&arrived, w, sizeof(uint64_t), 0));
  uint32_t* h = (uint32_t*)malloc(BLOCK);
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    for (uint32_t i = 0; i < BLOCK / 4; i++)
      h[i] = ex_value(r, 0, i);
    ex_store(w, mine, h, BLOCK, r);
  }
  free(h);
  EX_CHECK(xs_world_memset(w, all, 0xEE, all_bytes));
  EX_CHECK(xs_world_memset(w, arrived, 0, sizeof(uint64_t)));
  EX_CHECK(xs_world_barrier(w));
  xs_launch_plan plan;
  EX_CHECK(xs_world_launch_plan(&plan, w, (const void*)all_gather_kernel, 256, 0, CTAS));
  EX_LAUNCH(plan, all_gather_kernel, 256, 0, (const char*)mine, (char*)all, (uint64_t*)arrived);
  EX_CHECK(xs_world_sync(w));
  long wrong = 0;
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    uint32_t* a = (uint32_t*)ex_fetch(w, all, all_bytes, r);
    for (size_t i = 0; i < all_bytes / 4; i++)
      wrong += a[i] != ex_value((int)(i / (BLOCK / 4)), 0, (uint32_t)(i % (BLOCK / 4)));
    free(a);
  }
  return ex_finish(w, wrong, "02_all_gather");
}
