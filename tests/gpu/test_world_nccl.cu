/* test_world_nccl.cu — the nccl backend. Run plainly it is a one-rank world (W = 1) on one GPU:
 * NCCL symmetric memory, ncclDevCommCreate, ncclGetLsaPointer, the LSA barrier and the device
 * primitives on that heap. Under `xstage launch -n N build/test_world_nccl` (or torchrun) every
 * rank runs the same all-gather / all-to-all as the other backends and checks its own rank.
 * The timeout test: rank 1 (rank 0 when W = 1) waits for a signal nobody sends; its bounded
 * wait fires, its process's xs_world_status names rank, CTA, location, flag, observed and
 * expected value, the other processes are released and see no error, every process exits, and
 * the same world then runs the collectives again.
 * SKIPPED without a GPU or without NCCL's device API.
 *   test_world_nccl             every test
 *   test_world_nccl timeout     only the timeout test */
#include "test_world_kernels.cuh"

/* Ring: rank r puts 4 KiB to rank r+1 and signals; waits for rank r-1's (W = 1: itself). */
static __global__ void ring_kernel(xs_team team, const char* src, char* dst, uint64_t* flag) {
  int next = (team.rank + 1) % team.size;
  xs_put_tile_block(&team, next, dst, xs_ptr_local(&team, src), 4096);
  xs_signal_block(&team, next, flag, 1, XS_SIGNAL_ADD);
  xs_wait_until_block(&team, flag, XS_CMP_GE, 1, 7);
  xs_barrier_block(&team, 0, 8);
}

static void test_nccl_world(void) {
  tw_nccl_default_env();
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.heap_bytes = (size_t)32 << 20;
  xs_world* w = NULL;
  xs_result r = xs_world_create_nccl(&w, &cfg);
  if (r == XS_ERR_UNSUPPORTED) XT_SKIP("nccl world: %s", xs_last_error());
  XT_CHECK_MSG(r == XS_OK, "create: %s: %s", xs_strerror(r), xs_last_error());
  if (r != XS_OK) return;
  xs_world_info info;
  XT_EQ_INT(xs_world_info_get(&info, w), XS_OK);
  XT_EQ_INT(info.backend, XS_BACKEND_NCCL);
  XT_EQ_INT(info.nlocal, 1);
  printf("     nccl world: rank %d of %d\n", info.rank_first, info.size);
  XT_CHECK(tw_run_collectives(w, 65536, 4, 31u) == 0);
  void *src, *dst, *flag;
  XT_EQ_INT(xs_malloc(&src, w, 4096, 0), XS_OK);
  XT_EQ_INT(xs_malloc(&dst, w, 4096, 0), XS_OK);
  XT_EQ_INT(xs_malloc(&flag, w, 8, 0), XS_OK);
  XT_CHECK(tw_fill(w, src, 4096, 4096, 77u) == 0);
  XT_EQ_INT(xs_world_memset(w, dst, 0, 4096), XS_OK);
  XT_EQ_INT(xs_world_memset(w, flag, 0, 8), XS_OK);
  XT_EQ_INT(xs_world_barrier(w), XS_OK);
  xs_launch_plan plan;
  XT_EQ_INT(xs_world_launch_plan(&plan, w, (const void*)ring_kernel, 128, 0, 1), XS_OK);
  TW_LAUNCH(plan, ring_kernel, 128, (const char*)src, (char*)dst, (uint64_t*)flag);
  XT_EQ_INT(xs_world_sync(w), XS_OK);
  XT_EQ_INT(xs_world_barrier(w), XS_OK);
  xs_status_report st;
  XT_EQ_INT(xs_world_status(&st, w, 1), XS_OK);
  XT_CHECK_MSG(st.code == XS_OK, "%s", st.message);
  tw_ctx c = {77u, 4096};
  int prev = (info.rank_first + info.size - 1) % info.size;
  uint32_t h[1024];
  void* d = NULL;
  XT_EQ_INT(xs_world_ptr(&d, w, dst, info.rank_first), XS_OK);
  XT_CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDefault) == cudaSuccess);
  long wrong = 0;
  for (int i = 0; i < 1024; i++)
    wrong += h[i] != tw_word(c.seed, (uint32_t)prev, 0, (uint32_t)i);
  XT_CHECK_MSG(wrong == 0, "ring: %ld wrong words", wrong);
  XT_EQ_INT(xs_world_ptr(&d, w, dst, info.size), XS_ERR_INVALID_ARG); /* no such rank */
  XT_EQ_INT(xs_free(w, flag), XS_OK);
  XT_EQ_INT(xs_free(w, dst), XS_OK);
  XT_EQ_INT(xs_free(w, src), XS_OK);
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
}

static void test_nccl_timeout(void) {
  tw_nccl_default_env();
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.heap_bytes = (size_t)4 << 20;
  cfg.timeout_ns = 500000000ull; /* 500 ms; the host barrier waits 10 x this */
  xs_world* w = NULL;
  xs_result r = xs_world_create_nccl(&w, &cfg);
  if (r == XS_ERR_UNSUPPORTED) XT_SKIP("nccl world: %s", xs_last_error());
  XT_CHECK_MSG(r == XS_OK, "create: %s: %s", xs_strerror(r), xs_last_error());
  if (r != XS_OK) return;
  XT_CHECK(tw_run_timeout(w) == 0);
  XT_EQ_INT(xs_world_barrier(w), XS_OK); /* no peer still writes into this heap */
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : NULL;
  if (only && strcmp(only, "timeout")) {
    fprintf(stderr, "usage: test_world_nccl [timeout]\n");
    return 2;
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) XT_SKIP("no CUDA GPU");
  if (!only) XT_RUN(test_nccl_world);
  XT_RUN(test_nccl_timeout);
  return XT_END();
}
