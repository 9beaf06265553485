/* 01_put_get.cu — put and get between ranks.
 *
 * Every rank pushes a 64 KiB buffer into the next rank's inbox (put: 16-byte stores by the whole
 * CTA), meets the others at a barrier (which makes every rank's puts visible to every rank), then
 * pulls the previous rank's buffer into local memory (get). Both copies are checked byte-exact.
 *   run: ./example_01_put_get            (emulated, W=4, one GPU)
 *        XSTAGE_RANKS=8 ./example_01_put_get ; xstage launch -n 2 -- env XSTAGE_WORLD=nccl ...
 */
#include "common.cuh"

#define BYTES 65536u

static __global__ void put_get_kernel(xs_team team, const char* src, char* inbox, char* got) {
  xs_team me = xs_team_for_block(&team, 1); /* one CTA per rank */
  int next = (me.rank + 1) % me.size, prev = (me.rank + me.size - 1) % me.size;
  /* put: my src -> next rank's inbox (weak v4 stores, published by the barrier) */
  xs_put_tile_block(&me, next, inbox, xs_ptr_local(&me, src), BYTES);
  /* barrier: every rank's puts happen-before every rank's reads below */
  if (!xs_barrier_block(&me, 0, 1)) return;
  /* get: previous rank's src -> my got (coherent v4 loads) */
  xs_get_tile_block(&me, prev, xs_ptr_local(&me, got), src, BYTES);
}

int main(void) {
  xs_world* w = ex_world((size_t)16 << 20, 0);
  xs_world_info info;
  EX_CHECK(xs_world_info_get(&info, w));
  void *src, *inbox, *got;
  EX_CHECK(xs_malloc(&src, w, BYTES, 0));
  EX_CHECK(xs_malloc(&inbox, w, BYTES, 0));
  EX_CHECK(xs_malloc(&got, w, BYTES, 0));
  uint32_t* h = (uint32_t*)malloc(BYTES);
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    for (uint32_t i = 0; i < BYTES / 4; i++)
      h[i] = ex_value(r, 0, i);
    ex_store(w, src, h, BYTES, r);
  }
  EX_CHECK(xs_world_memset(w, inbox, 0xEE, BYTES)); /* poison the outputs */
  EX_CHECK(xs_world_memset(w, got, 0xEE, BYTES));
  EX_CHECK(xs_world_barrier(w)); /* inputs ready on every rank */
  xs_launch_plan plan;
  EX_CHECK(xs_world_launch_plan(&plan, w, (const void*)put_get_kernel, 256, 0, 1));
  EX_LAUNCH(plan, put_get_kernel, 256, 0, (const char*)src, (char*)inbox, (char*)got);
  EX_CHECK(xs_world_sync(w));
  long wrong = 0;
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    int prev = (r + info.size - 1) % info.size;
    uint32_t* a = (uint32_t*)ex_fetch(w, inbox, BYTES, r);
    uint32_t* b = (uint32_t*)ex_fetch(w, got, BYTES, r);
    for (uint32_t i = 0; i < BYTES / 4; i++)
      wrong += (a[i] != ex_value(prev, 0, i)) + (b[i] != ex_value(prev, 0, i));
    free(a);
    free(b);
  }
  free(h);
  return ex_finish(w, wrong, "01_put_get");
}
