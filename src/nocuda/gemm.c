/* gemm.c — the GEMM engine in a build without CUDA: the pure-C layout helper works, every GPU
 * entry point returns XS_ERR_UNSUPPORTED. */
#include "core/internal.h"
#include "kernels/gemm/bench.h"
#include "kernels/gemm/sched.h"
#include "xstage/gemm.h"

xs_result xs_gemm_tiles(xs_gemm_tiling* out, const xs_gemm_args* args, xs_gemm_act act) {
  (void)out;
  (void)args;
  (void)act;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm: this build has no CUDA");
}

xs_result xs_gemm_run(const xs_gemm_args* args, xs_gemm_epilogue epi, xs_gemm_schedule sched,
                      void* stream) {
  (void)args;
  (void)epi;
  (void)sched;
  (void)stream;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm: this build has no CUDA");
}

xs_result xs_gemm_workspace_size(size_t* bytes, const xs_gemm_args* args, xs_gemm_act act) {
  (void)args;
  (void)act;
  if (bytes) *bytes = 0;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm: this build has no CUDA");
}

xs_result xs_gemm_preload(void) {
  return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm: this build has no CUDA");
}

xs_result xs_gemm_contig_layout(int32_t* offsets, const int32_t* counts, int experts) {
  XSI_ARG(offsets && counts, "gemm_contig_layout: NULL argument");
  XSI_ARG(experts >= 1, "gemm_contig_layout: experts %d < 1", experts);
  if (xsg_contig_offsets(offsets, counts, experts, XS_GEMM_GROUP_ALIGN) != 0)
    return xsi_set_error(XS_ERR_INVALID_ARG, "gemm_contig_layout: negative count or > 2^31 rows");
  xsi_clear_error();
  return XS_OK;
}

int xsg_bench_clusters2(void) {
  return -1;
}

xs_result xsg_bench_idle(int us, void* stream) {
  (void)us;
  (void)stream;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm bench: this build has no CUDA");
}

xs_result xsg_bench_silu_mul(void* out, const void* full, const int32_t* counts, int E, int rows,
                             int I, void* stream) {
  (void)out, (void)full, (void)counts, (void)E, (void)rows, (void)I, (void)stream;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm bench: this build has no CUDA");
}

xs_result xsg_bench_run(xsg_bench_row* rows, int max_rows, int* nrows, char* detail,
                        size_t detail_len, const xsg_bench_case* c, xsg_bench_vs* vs) {
  (void)rows;
  (void)vs;
  (void)max_rows;
  (void)detail;
  (void)detail_len;
  (void)c;
  if (nrows) *nrows = 0;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm bench: this build has no CUDA");
}
