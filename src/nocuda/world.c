/* world.c (no CUDA) — the world API in a build without nvcc: every GPU entry point checks its
 * pointers and returns XS_ERR_UNSUPPORTED; the pure-C parts (environment, bootstrap, trace
 * files) are the real ones.
 *
 * NOTE: the pure-C files of src/world are compiled here by inclusion, because CMake compiles
 * src/world only when nvcc is found; this keeps one copy of that code for both builds. */
#include "world/bootstrap.c"
#include "world/trace_io.c"

static xs_result no_cuda(const char* what) {
  return xsi_set_error(XS_ERR_UNSUPPORTED, "%s: this build has no CUDA (nvcc was not found)", what);
}

xs_result xs_world_create_emulated(xs_world** out, const xs_world_config* cfg) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  (void)cfg;
  return no_cuda("emulated world");
}
xs_result xs_world_create_local(xs_world** out, const xs_world_config* cfg) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  (void)cfg;
  return no_cuda("local world");
}
xs_result xs_world_create_nccl(xs_world** out, const xs_world_config* cfg) {
  return xs_world_adopt_nccl(out, NULL, cfg);
}
xs_result xs_world_adopt_nccl(xs_world** out, void* nccl_comm, const xs_world_config* cfg) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  (void)nccl_comm;
  (void)cfg;
  return no_cuda("nccl world");
}
/* No world can exist in this build: only NULL reaches here. */
xs_result xs_world_destroy(xs_world* w) {
  (void)w;
  return XS_OK;
}
xs_result xs_world_info_get(xs_world_info* out, const xs_world* w) {
  XSI_ARG(out != NULL && w != NULL, "out or world is NULL");
  return no_cuda("world info");
}
xs_result xs_world_team(xs_team* out, const xs_world* w, int rank) {
  XSI_ARG(out != NULL && w != NULL, "out or world is NULL");
  (void)rank;
  return no_cuda("world team");
}
xs_result xs_world_launch_plan(xs_launch_plan* out, const xs_world* w, const void* kernel,
                               int threads, size_t smem_bytes, int blocks_per_rank) {
  XSI_ARG(out != NULL && w != NULL, "out or world is NULL");
  (void)kernel;
  (void)threads;
  (void)smem_bytes;
  (void)blocks_per_rank;
  return no_cuda("launch plan");
}
xs_result xs_world_sync(xs_world* w) {
  XSI_ARG(w != NULL, "world is NULL");
  return no_cuda("world sync");
}
xs_result xs_world_barrier(xs_world* w) {
  XSI_ARG(w != NULL, "world is NULL");
  return no_cuda("world barrier");
}
xs_result xs_world_status(xs_status_report* out, xs_world* w, int reset) {
  XSI_ARG(out != NULL && w != NULL, "out or world is NULL");
  (void)reset;
  return no_cuda("world status");
}
xs_result xs_world_clear_signals(xs_world* w) {
  XSI_ARG(w != NULL, "world is NULL");
  return no_cuda("clear signals");
}
xs_result xs_malloc(void** out, xs_world* w, size_t bytes, size_t align) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  XSI_ARG(w != NULL, "world is NULL");
  (void)bytes;
  (void)align;
  return no_cuda("xs_malloc");
}
xs_result xs_free(xs_world* w, void* p) {
  XSI_ARG(w != NULL, "world is NULL");
  (void)p;
  return no_cuda("xs_free");
}
xs_result xs_world_ptr(void** out, const xs_world* w, const void* sym, int rank) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  XSI_ARG(w != NULL, "world is NULL");
  (void)sym;
  (void)rank;
  return no_cuda("world pointer");
}
xs_result xs_world_memset(xs_world* w, void* sym, int value, size_t bytes) {
  XSI_ARG(w != NULL, "world is NULL");
  (void)sym;
  (void)value;
  (void)bytes;
  return no_cuda("world memset");
}
xs_result xs_world_trace_fetch(xs_trace_event** out, size_t* n, size_t* dropped, xs_world* w) {
  XSI_ARG(out != NULL && n != NULL && w != NULL, "out, n or world is NULL");
  *out = NULL;
  *n = 0;
  if (dropped) *dropped = 0;
  return no_cuda("trace fetch");
}
xs_result xs_world_trace_reset(xs_world* w) {
  XSI_ARG(w != NULL, "world is NULL");
  return no_cuda("trace reset");
}
xs_result xs_rma_bench(xs_rma_bench_result* out, const xs_rma_bench_config* cfg) {
  XSI_ARG(out != NULL, "out is NULL");
  (void)cfg;
  return no_cuda("rma bench");
}
