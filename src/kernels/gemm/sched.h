/* sched.h — tile scheduler and grouped-layout index math of the GEMM engine, as plain C inline
 * functions shared by the host, the kernels and tests/unit/test_gemm_sched.c (no CUDA needed).
 *
 * Terms (see include/xstage/gemm.h): a problem has `groups` x `m_blocks` x `n_blocks` output
 * tiles; tile index t = (g * m_blocks + mb) * n_blocks + nb. A *position* k in [0, count) is a
 * slot of the schedule; xsg_order_tile maps positions to tile indices so that every tile is
 * visited exactly once (a bijection on [0, count)).
 */
#ifndef XSTAGE_KERNELS_GEMM_SCHED_H
#define XSTAGE_KERNELS_GEMM_SCHED_H

#include <stdint.h>

#ifdef __CUDACC__
#define XSG_HD static inline __host__ __device__
#else
#define XSG_HD static inline
#endif

typedef struct xsg_grid {
  int groups;   /* >= 1 */
  int m_blocks; /* per group, >= 0 */
  int n_blocks; /* >= 0 */
  int order;    /* xs_gemm_order: 0 raster M, 1 raster N (2, a list, is handled by the caller) */
  int swizzle;  /* band width in tiles, >= 1 */
} xsg_grid;

typedef struct xsg_tile {
  int g, mb, nb;
} xsg_tile;

XSG_HD int xsg_cdiv(int a, int b) {
  return (a + b - 1) / b;
}

XSG_HD int xsg_tile_count(const xsg_grid* grid) {
  return grid->groups * grid->m_blocks * grid->n_blocks;
}

XSG_HD int xsg_tile_index(const xsg_grid* grid, int g, int mb, int nb) {
  return (g * grid->m_blocks + mb) * grid->n_blocks + nb;
}

XSG_HD xsg_tile xsg_tile_decode(const xsg_grid* grid, int t) {
  xsg_tile r;
  int per_group = grid->m_blocks * grid->n_blocks;
  r.g = t / per_group;
  int rem = t - r.g * per_group;
  r.mb = rem / grid->n_blocks;
  r.nb = rem - r.mb * grid->n_blocks;
  return r;
}

/* Position k -> tile index for the raster orders. Groups are taken one after another; inside a
 * group the (m, n) plane is cut into bands `swizzle` blocks wide along the raster dimension; a
 * band is walked with the raster dimension fastest, so consecutive CTAs share the operand tile
 * of the other dimension (L2 reuse) while a band's operands stay small. */
XSG_HD int xsg_order_tile(const xsg_grid* grid, int k) {
  int per_group = grid->m_blocks * grid->n_blocks;
  int g = k / per_group;
  int local = k - g * per_group;
  int fast = grid->order == 1 ? grid->n_blocks : grid->m_blocks; /* raster dimension */
  int slow = grid->order == 1 ? grid->m_blocks : grid->n_blocks;
  int band_tiles = grid->swizzle * slow;
  int band = local / band_tiles;
  int first = band * grid->swizzle;
  int width = fast - first < grid->swizzle ? fast - first : grid->swizzle;
  int r = local - band * band_tiles;
  int f = first + r % width;
  int s = r / width;
  int mb = grid->order == 1 ? s : f;
  int nb = grid->order == 1 ? f : s;
  return xsg_tile_index(grid, g, mb, nb);
}

/* ---- v7: token-major tiles, several tile streams per CTA ----
 * v7 puts the weights on the wgmma M side and the tokens on its N side (src/kernels/gemm/
 * README.md), so its tile height (output rows = tokens) is small: the least of 16, 32, 64 that
 * holds `rows` (the rows per group: MASKED M, DENSE M; CONTIG passes its total M, which is >= 128
 * whenever an expert has rows, so it gets 64). Each divides XS_GEMM_GROUP_ALIGN, so a CONTIG
 * tile never straddles two experts. */
XSG_HD int xsg_v7_tile_m(int rows) {
  return rows <= 16 ? 16 : rows <= 32 ? 32 : 64;
}

/* A v7 CTA runs `streams` independent tile streams (one per consumer warpgroup). Stream s of
 * persistent CTA b (of `ctas`) takes positions xsg_stream_first(b, s, ctas), then every
 * streams * ctas further on: position k belongs to CTA k % ctas, stream (k / ctas) % streams.
 * The first ctas positions go to stream 0 of every CTA, so a schedule shorter than two waves
 * still spreads over all CTAs (SMs) before any CTA runs two streams. */
XSG_HD int xsg_stream_first(int cta, int stream, int ctas) {
  return stream * ctas + cta;
}

/* Contiguous layout: the expert owning `row`, or -1 when row >= offsets[experts] (past the last
 * segment). offsets[0..experts] is non-decreasing; empty experts (equal offsets) own no row. */
XSG_HD int xsg_contig_expert(const int32_t* offsets, int experts, int row) {
  if (row < offsets[0] || row >= offsets[experts]) return -1;
  int lo = 0, hi = experts - 1; /* largest e with offsets[e] <= row */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= row)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* Contiguous layout offsets from per-expert counts (segments rounded up to `align` rows).
 * Returns 0, or -1 on a negative count or an int overflow. */
XSG_HD int xsg_contig_offsets(int32_t* offsets, const int32_t* counts, int experts, int align) {
  int64_t at = 0;
  offsets[0] = 0;
  for (int e = 0; e < experts; e++) {
    if (counts[e] < 0) return -1;
    at += ((int64_t)counts[e] + align - 1) / align * align;
    if (at > 0x7fffffff) return -1;
    offsets[e + 1] = (int32_t)at;
  }
  return 0;
}

/* ---- masked layout, compacted schedule ----
 * The masked buffer has groups x m_blocks x n_blocks tiles, but only the first
 * ceil(min(count_e, M) / tile_m) m-blocks of expert e have work. Walking the full buffer and
 * skipping empty tiles leaves the persistent CTAs unevenly loaded (CTA i takes positions i,
 * i + grid, ...: with 1-m-block experts the tiles with work sit at a stride that shares factors
 * with the grid) and costs a count lookup per skipped position. The compacted schedule numbers
 * only the tiles with work: pre[e] = work tiles of experts < e (pre[0] = 0, pre[E] = total).
 * The kernel builds pre[] in shared memory from the device counts (so graphs still work). */

/* Work tiles of one masked expert: used m-blocks x n_blocks. */
XSG_HD int xsg_masked_work(int count, int M, int tile_m, int n_blocks) {
  const int rows = count < M ? count : M;
  return rows > 0 ? xsg_cdiv(rows, tile_m) * n_blocks : 0;
}

/* Fill pre[0..experts] (the prefix above) on the host; returns pre[experts]. */
XSG_HD int xsg_masked_prefix(int32_t* pre, const int32_t* counts, int experts, int M, int tile_m,
                             int n_blocks) {
  pre[0] = 0;
  for (int e = 0; e < experts; e++)
    pre[e + 1] = pre[e] + xsg_masked_work(counts[e], M, tile_m, n_blocks);
  return pre[experts];
}

/* Compacted position k in [0, pre[experts]) -> tile index in the full numbering (grid->groups =
 * experts). Inside an expert the grid's raster order (order, swizzle) runs over its used
 * m-blocks only; experts come one after another. */
XSG_HD int xsg_masked_tile(const xsg_grid* grid, const int32_t* pre, int experts, int k) {
  int lo = 0, hi = experts - 1; /* the largest e with pre[e] <= k: empty experts are skipped */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (pre[mid] <= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  xsg_grid sub = *grid;
  sub.groups = 1;
  sub.m_blocks = (pre[lo + 1] - pre[lo]) / grid->n_blocks;
  const int t = xsg_order_tile(&sub, k - pre[lo]); /* mb * n_blocks + nb inside the expert */
  const int mb = t / grid->n_blocks;
  return xsg_tile_index(grid, lo, mb, t - mb * grid->n_blocks);
}

#endif
