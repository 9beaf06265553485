/* attention_internal.h — what the attention host code and its kernel versions share (not
 * public). One parameter block, resolved from xs_attn_args by attention.cu, passed by value to
 * every kernel; one launcher per version (llm.c style: attention_kernel_vN + its launcher).
 */
#ifndef XSTAGE_KERNELS_ATTENTION_INTERNAL_H
#define XSTAGE_KERNELS_ATTENTION_INTERNAL_H

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/internal.h"
#include "xstage/attention.h"

/* Kernel parameters. bf16 tensors are carried as uint16_t (plain C). Invariants checked by
 * xs_attention_forward before any launch. */
typedef struct attn_params {
  const uint16_t* q; /* [B, S, H, D] */
  const uint16_t* k; /* [B, Skv, H, D] */
  const uint16_t* v; /* [B, Skv, H, D] */
  float* lse;        /* [B, H, S] natural log, or NULL */
  int B, H, S, Skv, D;
  int causal;       /* 0/1, top-left aligned: key j visible to query i iff j <= i */
  float scale;      /* softmax scale applied to q.k */
  float scale_log2; /* scale * log2(e): the exp2 domain of version 2 */
  int n_qtiles;     /* ceil(S / XS_ATTN_TILE_M) */
  int num_tiles;    /* B * H * n_qtiles */
  /* Epilogue, resolved: the plain epilogue is dst[0] = o with O's own strides and
   * tokens_per_dst = S, map = 0; a caller's map has map = 1. */
  int map;
  int num_dst;
  uint16_t* dst[XS_ATTN_MAX_DST];
  int tokens_per_dst;
  int head_offset;
  int64_t stride_b, stride_s, stride_h; /* elements */
  uint32_t* flags;                      /* per tile, or NULL */
  uint32_t flag_value;
  const int32_t* order; /* tile order, or NULL (each version's default) */
  int order_sections;   /* version 2, causal default order: head sections (1..B*H), set by
                           its launcher */
  int trickle;          /* 1: version 2 trickles each tile's stores over the next tile (last
                           here: the other fields keep their offsets) */
} attn_params;

/* Launchers: enqueue the version on `stream`; XS_ERR_CUDA with the CUDA message on failure. */
xs_result xsi_attention_v1(const attn_params* p, cudaStream_t stream);
/* Version 2 also needs the SM count (persistent grid) and its three tensor maps. */
xs_result xsi_attention_v2(const attn_params* p, const CUtensorMap* tq, const CUtensorMap* tk,
                           const CUtensorMap* tv, int num_sms, cudaStream_t stream);

/* Version 2's tile of keys (rows of one K/V TMA box); the host encodes its tensor maps with
 * boxes of 64 columns x XS_ATTN_TILE_M query rows (Q) or XSI_ATTN_V2_BN key rows (K, V). */
#define XSI_ATTN_V2_BN 128

#endif
