/* test_world_args.c — argument checking of the world API on any machine (no GPU needed):
 * NULL pointers, bad configs, and the build's answer when it cannot make a world. */
#include "core/internal.h"
#include "test.h"
#include "xstage/xstage.h"

#include <string.h>

static void test_null_arguments(void) {
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  xs_team team;
  xs_launch_plan plan;
  xs_status_report rep;
  xs_world_info info;
  void* p = (void*)&cfg;
  XT_EQ_INT(xs_world_create_emulated(NULL, &cfg), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_create_local(NULL, &cfg), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_create_nccl(NULL, &cfg), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_adopt_nccl(NULL, NULL, &cfg), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_destroy(NULL), XS_OK);
  XT_EQ_INT(xs_world_info_get(&info, NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_team(&team, NULL, 0), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_launch_plan(&plan, NULL, NULL, 128, 0, 1), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_sync(NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_barrier(NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_status(&rep, NULL, 0), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_clear_signals(NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_malloc(&p, NULL, 256, 0), XS_ERR_INVALID_ARG);
  XT_CHECK(p == NULL); /* *out is cleared even on failure */
  XT_EQ_INT(xs_free(NULL, NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_ptr(&p, NULL, NULL, 0), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_memset(NULL, NULL, 0, 16), XS_ERR_INVALID_ARG);
  size_t n = 0;
  xs_trace_event* ev = NULL;
  XT_EQ_INT(xs_world_trace_fetch(&ev, &n, NULL, NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_trace_reset(NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_world_env_read(NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_rma_bench(NULL, NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_trace_write(NULL, NULL, 0, XS_TRACE_FORMAT_RAW), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_trace_write("/tmp/x", NULL, 3, XS_TRACE_FORMAT_RAW), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_trace_read(NULL, &n, "/tmp/x"), XS_ERR_INVALID_ARG);
}

/* A bad config is rejected before any device is touched (CUDA build); the no-CUDA build
 * answers XS_ERR_UNSUPPORTED for every creation. */
static void test_bad_configs(void) {
  xs_world* w = (xs_world*)&w;
#ifdef XS_HAVE_CUDA
  const xs_result bad = XS_ERR_INVALID_ARG;
#else
  const xs_result bad = XS_ERR_UNSUPPORTED;
#endif
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  cfg.size = sizeof cfg - 8;
  XT_EQ_INT(xs_world_create_emulated(&w, &cfg), bad);
  XT_CHECK(w == NULL);
  cfg = (xs_world_config)XS_WORLD_CONFIG_INITIALIZER;
  cfg.ranks = 0;
  XT_EQ_INT(xs_world_create_emulated(&w, &cfg), bad);
  cfg.ranks = XS_MAX_RANKS + 1;
  XT_EQ_INT(xs_world_create_emulated(&w, &cfg), bad);
  cfg = (xs_world_config)XS_WORLD_CONFIG_INITIALIZER;
  cfg.heap_bytes = 0;
  XT_EQ_INT(xs_world_create_emulated(&w, &cfg), bad);
  XT_EQ_INT(xs_world_create_local(&w, &cfg), bad);
  XT_EQ_INT(xs_world_create_nccl(&w, &cfg), bad);
  cfg = (xs_world_config)XS_WORLD_CONFIG_INITIALIZER;
  cfg.timeout_ns = 0;
  XT_EQ_INT(xs_world_create_emulated(&w, &cfg), bad);
  cfg = (xs_world_config)XS_WORLD_CONFIG_INITIALIZER;
  cfg.mem = (xs_mem_kind)7;
  XT_EQ_INT(xs_world_create_emulated(&w, &cfg), bad);
  cfg = (xs_world_config)XS_WORLD_CONFIG_INITIALIZER;
  cfg.mem = XS_MEM_HOST_MAPPED;
  XT_EQ_INT(xs_world_adopt_nccl(&w, NULL, &cfg), bad); /* nccl heaps are device memory */
  cfg = (xs_world_config)XS_WORLD_CONFIG_INITIALIZER;
  cfg.trace_events = (size_t)1 << 30;
  XT_EQ_INT(xs_world_create_emulated(&w, &cfg), bad);
  XT_CHECK(w == NULL);
  XT_CHECK(strlen(xs_last_error()) > 0);
  xs_rma_bench_result r;
  xs_rma_bench_config bc = XS_RMA_BENCH_CONFIG_INITIALIZER;
  bc.threads = 48;
  XT_EQ_INT(xs_rma_bench(&r, &bc), bad);
  bc = (xs_rma_bench_config)XS_RMA_BENCH_CONFIG_INITIALIZER;
  bc.bytes = 1024;
  XT_EQ_INT(xs_rma_bench(&r, &bc), bad);
}

/* A valid config on a machine without a GPU: a clear error, no crash, nothing leaked. */
static void test_no_device(void) {
  int gpu = 0;
  xs_world* w = NULL;
  xs_world_config cfg = XS_WORLD_CONFIG_INITIALIZER;
  xs_result r = xs_world_create_emulated(&w, &cfg);
  if (r == XS_OK) {
    gpu = 1; /* a GPU is present: the world works; exercise the heap errors on it */
    void *a = NULL, *b = NULL;
    XT_EQ_INT(xs_malloc(&a, w, 1000, 0), XS_OK);
    XT_EQ_INT(xs_malloc(&b, w, 1000, 4096), XS_OK);
    XT_CHECK(((uintptr_t)b & 4095) == 0);
    XT_EQ_INT(xs_malloc(&b, w, 0, 0), XS_ERR_INVALID_ARG);
    XT_EQ_INT(xs_malloc(&b, w, (size_t)1 << 40, 0), XS_ERR_EXHAUSTED);
    XT_CHECK(strstr(xs_last_error(), "largest free block") != NULL);
    XT_EQ_INT(xs_free(w, (char*)a + 16), XS_ERR_INVALID_ARG); /* misaligned */
    XT_EQ_INT(xs_free(w, (void*)&cfg), XS_ERR_INVALID_ARG);   /* foreign */
    XT_EQ_INT(xs_free(w, a), XS_OK);
    XT_EQ_INT(xs_free(w, a), XS_ERR_STATE); /* double free */
    XT_EQ_INT(xs_free(w, NULL), XS_OK);
    xs_team t;
    XT_EQ_INT(xs_world_team(&t, w, cfg.ranks), XS_ERR_INVALID_ARG);
    XT_EQ_INT(xs_world_memset(w, a, 0, (size_t)1 << 40), XS_ERR_INVALID_ARG);
    XT_EQ_INT(xs_world_destroy(w), XS_OK);
  } else {
#ifdef XS_HAVE_CUDA
    XT_EQ_INT(r, XS_ERR_NO_DEVICE);
#else
    XT_EQ_INT(r, XS_ERR_UNSUPPORTED);
#endif
    XT_CHECK(w == NULL);
    XT_CHECK(strlen(xs_last_error()) > 0);
  }
  printf("     (world creation %s)\n", gpu ? "succeeded on a GPU" : "refused without a GPU");
}

int main(void) {
  XT_RUN(test_null_arguments);
  XT_RUN(test_bad_configs);
  XT_RUN(test_no_device);
  return XT_END();
}
