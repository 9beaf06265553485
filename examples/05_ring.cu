/* 05_ring.cu — ring exchange: an all-gather in W-1 neighbour steps.
 *
 * At step s rank r forwards block (r - s) mod W — its own at step 0, afterwards the one it
 * received in the step before — to rank r+1, and sets that block's flag there (release).
 * Before forwarding a received block it waits for the block's flag (acquire). After W-1 steps
 * every rank holds every block. Only neighbours ever talk: the pattern of ring collectives.
 */
#include "common.cuh"

#define BLOCK (128u * 1024u)

static __global__ void ring_kernel(xs_team team, char* buf, uint64_t* flag) {
  xs_team me = xs_team_for_block(&team, 1);
  int W = me.size, next = (me.rank + 1) % W;
  for (int s = 0; s < W - 1; s++) {
    int b = (me.rank - s + W) % W; /* the block forwarded at step s */
    if (s > 0 && !xs_wait_until_block(&me, flag + b, XS_CMP_EQ, 1, 10u + (uint32_t)s)) return;
    char* blk = buf + (size_t)b * BLOCK;
    xs_put_tile_block(&me, next, blk, xs_ptr_local(&me, blk), BLOCK);
    xs_signal_block(&me, next, flag + b, 1, XS_SIGNAL_SET);
  }
  if (W > 1) /* the last block to arrive comes from the rank after me */
    xs_wait_until_block(&me, flag + (me.rank + 1) % W, XS_CMP_EQ, 1, 99);
}

int main(void) {
  xs_world* w = ex_world((size_t)16 << 20, 0);
  xs_world_info info;
  EX_CHECK(xs_world_info_get(&info, w));
  int W = info.size;
  size_t bytes = (size_t)BLOCK * (size_t)W;
  void *buf, *flag;
  EX_CHECK(xs_malloc(&buf, w, bytes, 0));
  EX_CHECK(xs_malloc(&flag, w, sizeof(uint64_t) * (size_t)W, 0));
  EX_CHECK(xs_world_memset(w, buf, 0xEE, bytes));
  EX_CHECK(xs_world_memset(w, flag, 0, sizeof(uint64_t) * (size_t)W));
  uint32_t* h = (uint32_t*)malloc(BLOCK);
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    for (uint32_t i = 0; i < BLOCK / 4; i++)
      h[i] = ex_value(r, 0, i);
    void* d = NULL;
    EX_CHECK(xs_world_ptr(&d, w, (char*)buf + (size_t)r * BLOCK, r));
    EX_CUDA(cudaMemcpy(d, h, BLOCK, cudaMemcpyDefault));
  }
  free(h);
  EX_CHECK(xs_world_barrier(w));
  xs_launch_plan plan;
  EX_CHECK(xs_world_launch_plan(&plan, w, (const void*)ring_kernel, 512, 0, 1));
  EX_LAUNCH(plan, ring_kernel, 512, 0, (char*)buf, (uint64_t*)flag);
  EX_CHECK(xs_world_sync(w));
  long wrong = 0;
  for (int r = info.rank_first; r < info.rank_first + info.nlocal; r++) {
    uint32_t* a = (uint32_t*)ex_fetch(w, buf, bytes, r);
    for (size_t i = 0; i < bytes / 4; i++)
      wrong += a[i] != ex_value((int)(i / (BLOCK / 4)), 0, (uint32_t)(i % (BLOCK / 4)));
    free(a);
  }
  return ex_finish(w, wrong, "05_ring");
}
