/* attention.c — the attention API in a build without CUDA: the tile count (pure arithmetic)
 * works; running the kernel reports XS_ERR_UNSUPPORTED. */
#include "core/internal.h"

xs_result xs_attention_num_tiles(int64_t* num_tiles, const xs_attn_args* args) {
  XSI_ARG(num_tiles != NULL, "num_tiles is NULL");
  XSI_ARG(args != NULL, "args is NULL");
  XSI_ARG(args->B >= 1 && args->H >= 1 && args->S >= 1, "B, H and S must be >= 1");
  *num_tiles = (int64_t)args->B * args->H * ((args->S + XS_ATTN_TILE_M - 1) / XS_ATTN_TILE_M);
  xsi_clear_error();
  return XS_OK;
}

xs_result xs_attention_version(int* version, const char** name, const xs_attn_args* args) {
  (void)version;
  (void)name;
  (void)args;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "attention: this build has no CUDA");
}

xs_result xs_attention_forward(const xs_attn_args* args) {
  (void)args;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "attention: this build has no CUDA");
}
