/* test_world_local.cu — the local backend (one process, every visible GPU, peer access):
 * all-gather and all-to-all byte-exact through the same kernels the emulated world runs (HBM
 * heaps on every GPU; host-mapped heaps on two), and a missing signal: rank 1's bounded wait
 * fires, xs_world_status names rank, CTA, location, flag, observed and expected value, the
 * other GPUs are released, and the world runs collectives again afterwards.
 * Needs >= 2 GPUs (SKIPPED otherwise).
 *   test_world_local            every test
 *   test_world_local timeout    only the missing-signal test */
#include "test_world_kernels.cuh"

static void test_local_collectives(void) {
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.ranks = 0; /* every visible GPU, at most 8 */
  cfg.heap_bytes = (size_t)16 << 20;
  xs_world* w = NULL;
  xs_result r = xs_world_create_local(&w, &cfg);
  XT_CHECK_MSG(r == XS_OK, "create: %s: %s", xs_strerror(r), xs_last_error());
  if (r != XS_OK) return;
  xs_world_info info;
  XT_EQ_INT(xs_world_info_get(&info, w), XS_OK);
  XT_EQ_INT(info.nlocal, info.size);
  printf("     local world of %d GPUs\n", info.size);
  XT_CHECK(tw_run_collectives(w, 1 << 20, 4, 21u) == 0);
  XT_CHECK(tw_run_collectives(w, 4096, 1, 22u) == 0);
  XT_EQ_INT(xs_world_barrier(w), XS_OK);
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
}

static void test_local_host_mapped(void) {
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.ranks = 2;
  cfg.mem = XS_MEM_HOST_MAPPED;
  cfg.heap_bytes = (size_t)4 << 20;
  xs_world* w = NULL;
  xs_result r = xs_world_create_local(&w, &cfg);
  XT_CHECK_MSG(r == XS_OK, "create: %s: %s", xs_strerror(r), xs_last_error());
  if (r != XS_OK) return;
  XT_CHECK(tw_run_collectives(w, 65536, 2, 23u) == 0);
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
}

static void test_local_timeout(void) {
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.ranks = 0;
  cfg.heap_bytes = (size_t)4 << 20;
  cfg.timeout_ns = 500000000ull; /* 500 ms */
  xs_world* w = NULL;
  xs_result r = xs_world_create_local(&w, &cfg);
  XT_CHECK_MSG(r == XS_OK, "create: %s: %s", xs_strerror(r), xs_last_error());
  if (r != XS_OK) return;
  XT_CHECK(tw_run_timeout(w) == 0);
  XT_EQ_INT(xs_world_destroy(w), XS_OK);
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : NULL;
  if (only && strcmp(only, "timeout")) {
    fprintf(stderr, "usage: test_world_local [timeout]\n");
    return 2;
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) XT_SKIP("no CUDA GPU");
  if (n < 2) XT_SKIP("the local world needs >= 2 GPUs (this machine has %d)", n);
  if (!only) {
    XT_RUN(test_local_collectives);
    XT_RUN(test_local_host_mapped);
  }
  XT_RUN(test_local_timeout);
  return XT_END();
}
