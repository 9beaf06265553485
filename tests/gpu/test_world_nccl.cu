/* test_world_nccl.cu — the nccl backend. Run plainly it is a one-rank world (W = 1) on one GPU:
 * NCCL symmetric memory, ncclDevCommCreate, ncclGetLsaPointer, the LSA barrier and the device
 * primitives on that heap. Under `xstage launch -n N build/test_world_nccl` (or torchrun) every
 * rank runs the same all-gather / all-to-all as the other backends and checks its own rank.
 * SKIPPED without a GPU or without NCCL's device API. */
#include "test_world_kernels.cuh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* W = 1 when not launched by a launcher: rank 0 of 1 on a free port. */
static void default_env(void) {
  if (getenv("WORLD_SIZE")) return;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = 29533;
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && !bind(fd, (struct sockaddr*)&a, sizeof a) &&
      !getsockname(fd, (struct sockaddr*)&a, &len))
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  char buf[16];
  snprintf(buf, sizeof buf, "%d", port);
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", buf, 1);
}

/* Ring: rank r puts 4 KiB to rank r+1 and signals; waits for rank r-1's (W = 1: itself). */
static __global__ void ring_kernel(xs_team team, const char* src, char* dst, uint64_t* flag) {
  int next = (team.rank + 1) % team.size;
  xs_put_tile_block(&team, next, dst, xs_ptr_local(&team, src), 4096);
  xs_signal_block(&team, next, flag, 1, XS_SIGNAL_ADD);
  xs_wait_until_block(&team, flag, XS_CMP_GE, 1, 7);
  xs_barrier_block(&team, 0, 8);
}

static void test_nccl_world(void) {
  default_env();
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

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) XT_SKIP("no CUDA GPU");
  XT_RUN(test_nccl_world);
  return XT_END();
}
