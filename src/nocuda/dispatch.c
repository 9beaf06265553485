/* dispatch.c — the GPU dispatch entry points in a build without CUDA. The workspace size is
 * pure arithmetic and is the same as in the CUDA build (src/kernels/dispatch/dispatch.cu). */
#include "core/internal.h"

xs_result xs_dispatch_workspace_size(size_t* bytes, int n_tokens, int top_k, int n_experts) {
  XSI_ARG(bytes != NULL, "bytes is NULL");
  XSI_ARG(n_tokens >= 1 && top_k >= 1 && n_experts >= 1 && n_experts <= 1024,
          "dispatch: need n_tokens, top_k >= 1 and 1 <= n_experts <= 1024");
  size_t slots = (size_t)n_tokens * (size_t)top_k;
  size_t blocks = (slots + 1023) / 1024;
  *bytes = blocks * (size_t)n_experts * sizeof(int32_t) + slots * sizeof(int32_t);
  return XS_OK;
}

xs_result xs_dispatch_launch(const xs_dispatch_args* args, void* stream) {
  (void)args;
  (void)stream;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "dispatch kernel: this build has no CUDA (no nvcc)");
}
