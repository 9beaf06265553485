/* 03_all_to_all.cu — all-to-all with one warp per destination and one flag per source.
 *
 * Rank r's send buffer holds W blocks; block j goes to slot r of rank j's recv buffer. Warp j
 * of each rank's CTA stores block j (xs_put_tile_warp), then sets flag[r] on rank j (release).
 * Warp j then waits for flag[j] on its own rank (acquire): block j of its recv is in.
 */
#include "common.cuh"

#define BLOCK (64u * 1024u)

static __global__ void all_to_all_kernel(xs_team team, const char* send, char* recv,
                                         uint64_t* flag) {
  xs_team me = xs_team_for_block(&team, 1);
  int j = (int)(threadIdx.x / 32u); /* the destination (and source) of this warp */
  const char* src = (const char*)xs_ptr_local(&me, send) + (size_t)j * BLOCK;
  xs_put_tile_warp(&me, j, recv + (size_t)me.rank * BLOCK, src, BLOCK);
  xs_signal_warp(&me, j, flag + me.rank, 1, XS_SIGNAL_SET);
  xs_wait_until_warp(&me, flag + j, XS_CMP_EQ, 1, 100u + (uint32_t)j);
}

int main(void) {
  xs_world* w = ex_world((size_t)32 << 20, 0);
  xs_world_info info;
  EX_CHECK(xs_world_info_get(&info, w));
  int W = info.size;
  size_t bytes = (size_t)BLOCK * (size_t)W;
  void *send, *recv, *flag;
  EX_CHECK(xs_malloc(&send, w, bytes, 0));
  EX_CHECK(xs_malloc(&recv, w, bytes, 0));
  EX_CHECK(xs_malloc(&flag, w, sizeof(uint64_t) * (size_t)W, 0));
  uint32_t* h = (uint32_t*)malloc(bytes);
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    for (size_t i = 0; i < bytes / 4; i++)
      h[i] = ex_value(r, (int)(i / (BLOCK / 4)), (uint32_t)(i % (BLOCK / 4)));
    ex_store(w, send, h, bytes, r);
  }
  free(h);
  EX_CHECK(xs_world_memset(w, recv, 0xEE, bytes));
  EX_CHECK(xs_world_memset(w, flag, 0, sizeof(uint64_t) * (size_t)W));
  EX_CHECK(xs_world_barrier(w));
  xs_launch_plan plan;
  EX_CHECK(xs_world_launch_plan(&plan, w, (const void*)all_to_all_kernel, 32 * W, 0, 1));
  EX_LAUNCH(plan, all_to_all_kernel, 32 * W, 0, (const char*)send, (char*)recv, (uint64_t*)flag);
  EX_CHECK(xs_world_sync(w));
  long wrong = 0;
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    uint32_t* a = (uint32_t*)ex_fetch(w, recv, bytes, r);
    for (size_t i = 0; i < bytes / 4; i++) /* slot s of rank r = block r of rank s */
      wrong += a[i] != ex_value((int)(i / (BLOCK / 4)), r, (uint32_t)(i % (BLOCK / 4)));
    free(a);
  }
  return ex_finish(w, wrong, "03_all_to_all");
}
