/* attention.cu — the attention forward's host side: argument checks, the epilogue map, tensor
 * maps, and the dispatcher over the versions (llm.c style; each version in its own file):
 *
 *   v1  attention_v1.cu  SIMT fp32, one CTA per 128-row tile, online softmax   (reference-like)
 *   v2  attention_v2.cu  TMA + mbarrier ring, wgmma (RS for P V), ping-pong consumers,
 *                        setmaxnreg, persistent grid                                 (default)
 *
 * Checker: tests/gpu/test_attention.cu. Benchmark: xstage bench attention --help.
 */
#include "kernels/attention/attention_internal.h"

#include <math.h>
#include <string.h>

static const char* const g_version_names[XS_ATTN_VERSIONS + 1] = {"best", "v1 simt-fp32",
                                                                  "v2 tma-wgmma-pingpong"};

static int aligned16(const void* p) {
  return ((uintptr_t)p & 15u) == 0;
}

/* Checks every field of args (no device access). */
static xs_result check_args(const xs_attn_args* a) {
  XSI_ARG(a != NULL, "args is NULL");
  XSI_ARG(a->size == sizeof(xs_attn_args), "args.size is %zu, expected sizeof(xs_attn_args) = %zu",
          a->size, sizeof(xs_attn_args));
  XSI_ARG(a->B >= 1 && a->H >= 1, "B = %d and H = %d must be >= 1", a->B, a->H);
  XSI_ARG(a->S >= 1 && a->Skv >= 1, "S = %d and Skv = %d must be >= 1", a->S, a->Skv);
  XSI_ARG(a->head_dim == 64 || a->head_dim == 128, "head_dim = %d: 64 or 128", a->head_dim);
  XSI_ARG(a->causal == 0 || a->causal == 1, "causal = %d: 0 or 1", a->causal);
  XSI_ARG(a->softmax_scale >= 0.0f && isfinite(a->softmax_scale),
          "softmax_scale = %g: finite and >= 0 (0 = 1/sqrt(head_dim))", (double)a->softmax_scale);
  XSI_ARG(a->version >= 0 && a->version <= XS_ATTN_VERSIONS, "version = %d: 0..%d", a->version,
          XS_ATTN_VERSIONS);
  XSI_ARG(a->q && a->k && a->v, "q, k and v must not be NULL");
  XSI_ARG(aligned16(a->q) && aligned16(a->k) && aligned16(a->v) && aligned16(a->o) &&
              aligned16(a->lse),
          "q, k, v, o and lse must be 16-byte aligned");
  int64_t tiles = (int64_t)a->B * a->H * ((a->S + XS_ATTN_TILE_M - 1) / XS_ATTN_TILE_M);
  XSI_ARG(tiles <= 0x7fffffff, "B * H * ceil(S / %d) = %lld tiles: at most 2^31 - 1",
          XS_ATTN_TILE_M, (long long)tiles);
  XSI_ARG((int64_t)a->B * a->S * a->H <= 0x7fffffff && (int64_t)a->B * a->Skv * a->H <= 0x7fffffff,
          "B * S * H and B * Skv * H must be < 2^31");
  const xs_attn_epilogue* e = &a->epilogue;
  XSI_ARG(e->num_dst >= 0 && e->num_dst <= XS_ATTN_MAX_DST, "epilogue.num_dst = %d: 0..%d",
          e->num_dst, XS_ATTN_MAX_DST);
  if (e->num_dst == 0) {
    XSI_ARG(a->o != NULL, "o is NULL and the epilogue has no destination map (num_dst = 0)");
  } else {
    for (int i = 0; i < e->num_dst; i++)
      XSI_ARG(e->dst[i] && aligned16(e->dst[i]), "epilogue.dst[%d] is NULL or not 16-byte aligned",
              i);
    XSI_ARG(e->tokens_per_dst >= 1 && (int64_t)e->num_dst * e->tokens_per_dst >= a->S,
            "epilogue: num_dst (%d) * tokens_per_dst (%d) must cover S = %d", e->num_dst,
            e->tokens_per_dst, a->S);
    XSI_ARG(e->head_offset >= 0, "epilogue.head_offset = %d must be >= 0", e->head_offset);
    XSI_ARG(e->stride_b >= 0 && e->stride_s >= 0 && e->stride_h >= 0 && e->stride_b % 8 == 0 &&
                e->stride_s % 8 == 0 && e->stride_h % 8 == 0,
            "epilogue strides (b %lld, s %lld, h %lld) must be >= 0 and multiples of 8 elements",
            (long long)e->stride_b, (long long)e->stride_s, (long long)e->stride_h);
  }
  XSI_ARG(!e->tile_flags || ((uintptr_t)e->tile_flags & 3u) == 0,
          "epilogue.tile_flags must be 4-byte aligned");
  XSI_ARG(e->trickle == 0 || e->trickle == 1, "epilogue.trickle = %d: 0 or 1", e->trickle);
  if (e->trickle && (e->num_dst == 0 || e->tile_flags))
    return xsi_set_error(XS_ERR_UNSUPPORTED,
                         "epilogue.trickle needs a destination map (num_dst >= 1) and no "
                         "tile_flags (a trickled tile's flag is not implemented)");
  return XS_OK;
}

/* Resolves version 0 and checks the device can run the version. */
static xs_result pick_version(int* out, int* num_sms, const xs_attn_args* a) {
  int dev = 0, major = 0, minor = 0, count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
    cudaGetLastError();
    return xsi_set_error(XS_ERR_NO_DEVICE, "attention: no CUDA device");
  }
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(num_sms, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess)
    return xsi_set_error(XS_ERR_CUDA, "attention: device query: %s", cudaGetErrorString(e));
  /* NOTE: sm_90a code (wgmma, setmaxnreg) runs on compute capability 9.0 only. */
  int hopper = major == 9 && minor == 0;
  int v = a->version ? a->version : (hopper ? 2 : 1);
  if (v == 2 && !hopper)
    return xsi_set_error(XS_ERR_UNSUPPORTED,
                         "attention v2 needs compute capability 9.0 (sm_90a); device is %d.%d",
                         major, minor);
  *out = v;
  return XS_OK;
}

typedef CUresult (*encode_tiled_fn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                    const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                    const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/* cuTensorMapEncodeTiled through the runtime's driver entry point (the library does not link
 * libcuda: machines without a driver must still load it). Looked up once. */
static xs_result get_encode(encode_tiled_fn* out) {
  static encode_tiled_fn fn = NULL;
  if (!fn) {
    void* p = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !p) {
      cudaGetLastError();
      return xsi_set_error(XS_ERR_CUDA, "attention: cuTensorMapEncodeTiled not available");
    }
    fn = (encode_tiled_fn)p;
  }
  *out = fn;
  return XS_OK;
}

/* Tensor map of a [B, rows, H, d] bf16 tensor, boxes of 64 head-dim columns x box_rows rows of
 * one (batch, head), 128-byte swizzle (what the wgmma descriptors of version 2 expect). */
static xs_result encode_map(CUtensorMap* map, const void* base, const xs_attn_args* a, int rows,
                            int box_rows, const char* what) {
  cuuint64_t dims[4] = {(cuuint64_t)a->head_dim, (cuuint64_t)a->H, (cuuint64_t)rows,
                        (cuuint64_t)a->B};
  cuuint64_t strides[3] = {(cuuint64_t)a->head_dim * 2, (cuuint64_t)a->H * a->head_dim * 2,
                           (cuuint64_t)rows * a->H * a->head_dim * 2};
  cuuint32_t box[4] = {64, 1, (cuuint32_t)box_rows, 1};
  cuuint32_t estr[4] = {1, 1, 1, 1};
  encode_tiled_fn encode = NULL;
  XSI_CHECK(get_encode(&encode));
  CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, (void*)base, dims, strides, box,
                      estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return xsi_set_error(XS_ERR_CUDA,
                         "attention: cuTensorMapEncodeTiled for %s (rows %d, box %d) failed: "
                         "CUresult %d",
                         what, rows, box_rows, (int)r);
  return XS_OK;
}

/* Fills the kernel parameter block (plain epilogue resolved to a map onto O). */
static void fill_params(attn_params* p, const xs_attn_args* a) {
  memset(p, 0, sizeof *p);
  p->q = (const uint16_t*)a->q;
  p->k = (const uint16_t*)a->k;
  p->v = (const uint16_t*)a->v;
  p->lse = a->lse;
  p->B = a->B;
  p->H = a->H;
  p->S = a->S;
  p->Skv = a->Skv;
  p->D = a->head_dim;
  p->causal = a->causal;
  p->scale = a->softmax_scale > 0.0f ? a->softmax_scale : 1.0f / sqrtf((float)a->head_dim);
  p->scale_log2 = p->scale * 1.4426950408889634f;
  p->n_qtiles = (a->S + XS_ATTN_TILE_M - 1) / XS_ATTN_TILE_M;
  p->num_tiles = a->B * a->H * p->n_qtiles;
  const xs_attn_epilogue* e = &a->epilogue;
  if (e->num_dst == 0) {
    p->map = 0;
    p->num_dst = 1;
    p->dst[0] = (uint16_t*)a->o;
    p->tokens_per_dst = a->S;
    p->stride_b = (int64_t)a->S * a->H * a->head_dim;
    p->stride_s = (int64_t)a->H * a->head_dim;
    p->stride_h = a->head_dim;
  } else {
    p->map = 1;
    p->num_dst = e->num_dst;
    for (int i = 0; i < e->num_dst; i++)
      p->dst[i] = (uint16_t*)e->dst[i];
    p->tokens_per_dst = e->tokens_per_dst;
    p->head_offset = e->head_offset;
    p->stride_b = e->stride_b;
    p->stride_s = e->stride_s;
    p->stride_h = e->stride_h;
  }
  p->flags = e->tile_flags;
  p->flag_value = e->flag_value;
  p->order = e->tile_order;
  p->trickle = e->trickle;
}

xs_result xs_attention_num_tiles(int64_t* num_tiles, const xs_attn_args* args) {
  XSI_ARG(num_tiles != NULL, "num_tiles is NULL");
  XSI_ARG(args != NULL, "args is NULL");
  XSI_ARG(args->B >= 1 && args->H >= 1 && args->S >= 1, "B, H and S must be >= 1");
  *num_tiles = (int64_t)args->B * args->H * ((args->S + XS_ATTN_TILE_M - 1) / XS_ATTN_TILE_M);
  xsi_clear_error();
  return XS_OK;
}

xs_result xs_attention_version(int* version, const char** name, const xs_attn_args* args) {
  XSI_ARG(version != NULL, "version is NULL");
  XSI_CHECK(check_args(args));
  int sms = 0;
  XSI_CHECK(pick_version(version, &sms, args));
  if (name) *name = g_version_names[*version];
  xsi_clear_error();
  return XS_OK;
}

xs_result xs_attention_forward(const xs_attn_args* args) {
  XSI_CHECK(check_args(args));
  int version = 0, sms = 0;
  XSI_CHECK(pick_version(&version, &sms, args));
  attn_params p;
  fill_params(&p, args);
  cudaStream_t stream = (cudaStream_t)args->stream;
  if (version == 1) {
    XSI_CHECK(xsi_attention_v1(&p, stream));
  } else {
    CUtensorMap tq, tk, tv;
    XSI_CHECK(encode_map(&tq, args->q, args, args->S, XS_ATTN_TILE_M, "q"));
    XSI_CHECK(encode_map(&tk, args->k, args, args->Skv, XSI_ATTN_V2_BN, "k"));
    XSI_CHECK(encode_map(&tv, args->v, args, args->Skv, XSI_ATTN_V2_BN, "v"));
    XSI_CHECK(xsi_attention_v2(&p, &tq, &tk, &tv, sms, stream));
  }
  xsi_clear_error();
  return XS_OK;
}
