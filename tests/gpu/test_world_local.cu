/* test_world_local.cu — the local backend (one process, every visible GPU, peer access):
 * all-gather and all-to-all byte-exact, the device barrier through the same kernels the
 * emulated world runs. Needs >= 2 GPUs (SKIPPED otherwise). */
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

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) XT_SKIP("no CUDA GPU");
  if (n < 2) XT_SKIP("the local world needs >= 2 GPUs (this machine has %d)", n);
  XT_RUN(test_local_collectives);
  XT_RUN(test_local_host_mapped);
  return XT_END();
}
