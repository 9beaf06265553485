/* xstage/attention.h — Hopper attention forward (bf16 in/out, fp32 softmax and accumulation)
 * with an epilogue hook we own: per finished output tile, a descriptor-driven store to any
 * device-addressable memory and an optional per-tile flag, in a caller-chosen tile order.
 *
 * Layout (flash-attn / DiT order; all bf16, contiguous, rows of head_dim elements):
 *   q, o : [B, S,   H, head_dim]        k, v : [B, Skv, H, head_dim]
 *   lse  : [B, H, S] fp32, natural log: lse = log(sum_j exp(scale * q.k_j)) (may be NULL)
 * O = softmax(scale * Q K^T [+ causal mask]) V per (batch, head). Causal is top-left aligned,
 * like torch's is_causal: query i sees keys j <= i.
 *
 * Tiles: the output is cut into tiles of XS_ATTN_TILE_M query rows of one (batch, head);
 * tile index = (b * H + h) * ceil(S / XS_ATTN_TILE_M) + query tile. Every version (1, 2) uses
 * these tiles, so an epilogue map, flags and tile order mean the same for all of them.
 *
 * Ulysses (see docs/attention.md): the destination map sends token s of a tile to
 * dst[s / tokens_per_dst], row s % tokens_per_dst, at head (h + head_offset): with W ranks
 * each owning S / W tokens, dst[r] is rank r's output shard [B, S/W, H_total, d] (a peer's
 * symmetric heap once the world layer exists) and the per-tile flag tells rank r the tile
 * has landed.
 */
#ifndef XSTAGE_ATTENTION_H
#define XSTAGE_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "xstage/xstage.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XS_ATTN_TILE_M 128 /* query rows per output tile (all versions) */
#define XS_ATTN_MAX_DST 8  /* destinations in one epilogue map */
#define XS_ATTN_VERSIONS 2 /* versions 1..XS_ATTN_VERSIONS exist; 0 picks the best */

/* Where finished output tiles go. Zero-initialised (XS_ATTN_EPILOGUE_INITIALIZER) = the plain
 * epilogue: O is stored to args.o, no flags, default tile order. */
typedef struct xs_attn_epilogue {
  int num_dst;                /* 0: store to args.o; 1..XS_ATTN_MAX_DST: use the map below */
  void* dst[XS_ATTN_MAX_DST]; /* bf16 base of each destination (device-accessible: HBM,
                                 host-mapped, peer); 16-byte aligned */
  int tokens_per_dst;         /* tokens owned by each destination; num_dst * tokens_per_dst
                                 >= S; token s goes to dst[s / tokens_per_dst] */
  int head_offset;            /* head h is stored at head index h + head_offset (>= 0) */
  int64_t stride_b;           /* elements between batches in a destination (multiple of 8) */
  int64_t stride_s;           /* elements between tokens (multiple of 8) */
  int64_t stride_h;           /* elements between heads (multiple of 8) */
  uint32_t* tile_flags;       /* NULL, or one word per tile (device-accessible): after all of
                                 a tile's O stores, flag[tile] = flag_value with a release
                                 store at system scope */
  uint32_t flag_value;        /* value written to a finished tile's flag */
  const int32_t* tile_order;  /* NULL = default order, or a device array of all tile indices
                                 (a permutation of 0..num_tiles-1): the kernel starts tiles in
                                 this order. Not checked on the device: a repeated or missing
                                 index leaves tiles computed twice or never. */
  int trickle;                /* 0: each tile's stores go out when it ends. 1 (version 2, with a
                                 map, without tile_flags): each consumer warpgroup stores its
                                 rows of a finished tile in 8 pieces spread evenly over the
                                 key/value steps of its next tile, the planner's split of a
                                 tile's burst (docs/model.md §10: backed-up remote stores stall
                                 the loads); a CTA's last tile, and rows that straddle two
                                 destinations, still go out at once. For links that bind: on
                                 the H200 host path it ran 1.26-1.36x faster at S = 4608, where
                                 the output's bytes at R exceed the compute, 3 % faster at
                                 S = 16896 and 3.5 % slower at S = 75600, where they do not (docs/attention.md). Version 1
                                 stores at once. */
} xs_attn_epilogue;

#define XS_ATTN_EPILOGUE_INITIALIZER                                                               \
  { 0, {0}, 0, 0, 0, 0, 0, 0, 0u, 0, 0 }

/* One attention forward call. Pointers are device pointers (q, k, v, o, lse). */
typedef struct xs_attn_args {
  size_t size;         /* sizeof(xs_attn_args) */
  int B, H;            /* batch, heads (>= 1) */
  int S, Skv;          /* query and key/value tokens per sequence (>= 1) */
  int head_dim;        /* 64 or 128 */
  int causal;          /* 0 or 1 (top-left aligned) */
  float softmax_scale; /* > 0, or 0 for 1/sqrt(head_dim) */
  const void* q;       /* bf16 [B, S, H, d], 16-byte aligned */
  const void* k;       /* bf16 [B, Skv, H, d] */
  const void* v;       /* bf16 [B, Skv, H, d] */
  void* o;             /* bf16 [B, S, H, d]; may be NULL when epilogue.num_dst > 0 */
  float* lse;          /* fp32 [B, H, S], or NULL */
  int version;         /* 0 = best available, else 1..XS_ATTN_VERSIONS */
  xs_attn_epilogue epilogue;
  void* stream; /* cudaStream_t, NULL = default stream */
} xs_attn_args;

#define XS_ATTN_ARGS_INITIALIZER                                                                   \
  {                                                                                                \
    sizeof(xs_attn_args), 1, 1, 1, 1, 128, 0, 0.0f, 0, 0, 0, 0, 0, 0,                              \
        XS_ATTN_EPILOGUE_INITIALIZER, 0                                                            \
  }

/* Enqueue O = attention(Q, K, V) on args->stream. Asynchronous: returns after the launch;
 * errors inside the kernel surface at the next synchronisation. Checks every field (shape
 * ranges, head_dim, alignment, epilogue map covering S, strides) and returns
 * XS_ERR_INVALID_ARG naming the field; XS_ERR_UNSUPPORTED when the version cannot run here
 * (version 2 needs compute capability 9.0, i.e. sm_90a code) or the build has no CUDA;
 * XS_ERR_NO_DEVICE without a GPU; XS_ERR_CUDA when a launch fails. */
xs_result xs_attention_forward(const xs_attn_args* args);

/* Tiles of a call: *num_tiles = B * H * ceil(S / XS_ATTN_TILE_M) (the length of tile_flags and
 * tile_order). Pure host arithmetic. */
xs_result xs_attention_num_tiles(int64_t* num_tiles, const xs_attn_args* args);

/* Version actually used for args (resolves version 0), and its name ("v2 tma-wgmma-pingpong").
 * *name may be NULL. Returns XS_ERR_UNSUPPORTED/XS_ERR_NO_DEVICE as xs_attention_forward. */
xs_result xs_attention_version(int* version, const char** name, const xs_attn_args* args);

#ifdef __cplusplus
}
#endif
#endif /* XSTAGE_ATTENTION_H */
