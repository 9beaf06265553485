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

/* ---- AUTO's cost model for the 128-row tiles (gemm.cu xs_gemm_tiles) ----
 * The version whose busiest CTA computes least, per-tile speed included:
 *   cost(v) = ceil(tiles(v) / sms) x tile columns(v) x weight(v),
 *   tiles(v) = m_blocks x ceil(n_out / output columns(v))
 * (B columns 128 / 256 / 224 / 192 / 208 for v2 / v3 / v4 / v5 / v6; with SiLU*mul a tile has half
 * as many output columns). m_blocks: the 128-row blocks with work (DENSE ceil(M / 128), CONTIG
 * M / 128, MASKED per expert ceil(count / 128) summed, or E x ceil(M / 128) when the counts are
 * not known on the host). The weights are each version's relative time per tile column at equal
 * waves (v3 = 100). Dense (gemm.cu says where each comes from): v2 112, v4 105, v5 106; v6 is not
 * weighed. Grouped: v2 112, v4 105, v6 101, v5 not weighed. v6's 101 (107 before session 9, an
 * estimate from shared-memory bytes per FMA) is the fit of five full bench runs (33-37, 48
 * grouped cases x 2 layouts): the mean loss of AUTO's pick against the best of v2/v3/v4/v6 in
 * the same run fell from 0.68 % to 0.37 % (held out one run at a time: the same weights each
 * time, 0.58-0.75 % -> 0.31-0.37 %); 100 and 103 were worse (0.72 %, 0.61 %). Without SiLU*mul
 * v3's tile runs as v11 (gemm.cu), which session 9's fit did not weigh: its weight is 99 there
 * (session 11: against the best of v2/v3/v4/v6/v11 in the same run, over all 256 grouped case
 * layouts of runs 51-54, the mean loss fell from 0.281 % to 0.263 %, and from 0.295 % to 0.259 %
 * in runs 47-50; the one pick that moves is DeepSeek-V3 down E=64 T=128, v6 -> v11, which v11
 * ran 1.2 % faster on average, in 7 of 8 runs; any weight from 98 to 99.5 moves the same pick,
 * and no dense one). Ties go to v3, then v4, v2. Returns 2, 3, 4, 5 or 6. */
XSG_HD int xsg_auto_pick(int64_t m_blocks, int n_out, int silu, int sms, int grouped) {
  const int cols[7] = {0, 0, 128, 256, 224, 192, 208};
  const int w_dense[7] = {0, 0, 112, 100, 105, 106, 0};
  const int w_grouped[7] = {0, 0, 112, 100, 105, 0, 101};
  const int* w = grouped ? w_grouped : w_dense;
  const int64_t n_sms = sms > 0 ? sms : 1;
  const int order[5] = {3, 4, 2, 5, 6};
  int best_v = 3;
  int64_t best = -1;
  for (int i = 0; i < 5; i++) {
    const int v = order[i];
    if (!w[v]) continue;
    const int64_t tiles = m_blocks * xsg_cdiv(n_out, silu ? cols[v] / 2 : cols[v]);
    const int weight = v == 3 && !silu ? 99 : w[v]; /* v3's tile runs as v11 without SiLU*mul */
    const int64_t cost = (tiles + n_sms - 1) / n_sms * cols[v] * weight;
    if (best < 0 || cost < best) best = cost, best_v = v;
  }
  return best_v;
}

/* ---- L2 cache policies of the TMA loads (session 10; src/kernels/gemm/README.md, "Tuning
 * round 16") ----
 * Kinds of xsg_params.l2_hint (gemm_internal.h; xs_l2_policy in ptx/hopper.cuh): */
#define XSG_L2_EVICT_FIRST 1
#define XSG_L2_EVICT_LAST 2

/* Whether a grouped problem reads each expert's weights once: every expert has at most one
 * 128-row block of tokens (MASKED: the buffer's M rows per expert; CONTIG: M / experts on
 * average). layout: 0 DENSE, 1 CONTIG, 2 MASKED (xs_gemm_layout). DENSE: 0. */
XSG_HD int xsg_weights_once(int layout, int64_t M, int experts) {
  if (layout == 2) return M <= 128;
  if (layout == 1) return experts > 0 && M <= (int64_t)128 * experts;
  return 0;
}

/* The library's L2 policy for a launch: xsg_params.l2_hint (A's kind | B's kind << 2: 1
 * evict_first, 2 evict_last) and *promo128 (1: the A and B tensor maps promote 128-byte L2
 * lines, 0: 256 bytes). kernel: 1 v7, 2 v14, 0 the others. v7 with tiles of <= 32 tokens streams
 * its weights evict_first. v14, and the 128-row kernels on a DENSE problem, with one m-block
 * (M <= 128: each weight row read by one tile) stream their weights evict_first: the weights then
 * no longer push A (the tokens, re-read by every CTA) out of L2, and the CTAs' read rates even
 * out (session 29, bench_gemm_probe_v14 --rotate 4 --l2-hint 4 against none: at 128 x 7168 x 8192
 * with SiLU*mul on v14 the multiplies' ends spread over 27.1-29.2 us instead of 26.6-33.8, 36.9
 * against 38.3 us per launch; v4 at 128 x 28672 x 8192 and 128 x 57344 x 8192 with SiLU*mul
 * 1-1.3 % less time).
 * The 128-row kernels (v2-v6, v11-v13: hopper = 1), when each expert's weights are read once
 * (xsg_weights_once), stream the weights evict_first with 256-byte lines when all `tiles` fit in
 * one wave on `sms` SMs (128-byte lines until session 17), else keep the tokens evict_last with
 * 128-byte lines. Everything else loads with no policy and 256-byte promotion. Measured on the
 * H200 (bench_gemm_probe[_v7] --hints): the README's rounds 16 and 23. layer (xs_gemm_args.context
 * = XS_GEMM_CONTEXT_LAYER): the one-wave launches promote 128-byte lines too (session 21,
 * bench_gemm_chain --layer: 5-7 % faster there in the layer's order at 8 experts x 128 tokens,
 * where back to back 256 bytes measured 1.4-4.8 % faster). */
XSG_HD int xsg_l2_choice(int kernel, int hopper, int tile_m, int layout, int64_t M, int experts,
                         int64_t tiles, int sms, int layer, int* promo128) {
  *promo128 = 0;
  if (kernel == 1) return tile_m <= 32 ? XSG_L2_EVICT_FIRST << 2 : 0;
  if (kernel == 2 || (hopper && layout == 0)) return M <= 128 ? XSG_L2_EVICT_FIRST << 2 : 0;
  if (hopper && xsg_weights_once(layout, M, experts)) {
    const int one_wave = tiles <= sms;
    *promo128 = !one_wave || layer;
    return one_wave ? XSG_L2_EVICT_FIRST << 2 : XSG_L2_EVICT_LAST;
  }
  return 0;
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

/* v7's tile width in B rows: 128 (two wgmma M = 64 halves: 128 output columns, or 64 with
 * SiLU*mul) or 64 (one: 64 output columns, or 32 gate rows interleaved with their 32 up rows).
 * At few tokens per expert v7 streams B, and the busiest SM sets the time: narrow tiles when they
 * cut its B rows (ceil(tiles / sms) x width) by more than 10 %. Measured on the H200
 * (bench_gemm_probe_v7, E=8 T=16): Qwen3-235B gate/up (192 wide tiles on 132 SMs: 2 on 60 SMs,
 * 1 on 72; 384 narrow: 2 or 3 each; -25 %) 55.5 -> 53.9 us (session 6); DeepSeek-V3 down (448 ->
 * 896 tiles, 4 x 128 -> 7 x 64 rows, -12.5 %) 60.3 -> 60.9 us in session 6, a loss while a CTA's
 * odd tile left one stream idle, and 60.95 / 60.75 / 60.55 -> 60.23 / 60.24 / 60.03 us (three
 * runs) in session 8 with the split tile (xsg_v7_split_position), hence 10 % rather than 20 %.
 * n_out: output columns; units: groups x m-blocks; narrow_ok: 0 when the narrow tile cannot run
 * (SiLU*mul without its 5-D tensor map). */
XSG_HD int xsg_v7_width(int n_out, int silu, int units, int sms, int narrow_ok) {
  if (!narrow_ok || sms <= 0 || units <= 0) return 128;
  const int64_t wide = (int64_t)units * xsg_cdiv(n_out, silu ? 64 : 128);
  const int64_t narrow = (int64_t)units * xsg_cdiv(n_out, silu ? 32 : 64);
  const int64_t busy_wide = (wide + sms - 1) / sms * 128,
                busy_narrow = (narrow + sms - 1) / sms * 64;
  return 10 * busy_narrow < 9 * busy_wide ? 64 : 128;
}

/* v7's persistent CTAs (two streams each) for `tiles` positions: the fewest that keep the
 * busiest CTA's tile count, ceil(tiles / sms), so the CTAs' loads differ by at most one tile
 * (session 6: 448 tiles on 112 CTAs, 4 each, rather than 132 with 3 or 4). */
XSG_HD int xsg_v7_ctas(int tiles, int sms) {
  if (tiles <= 0 || sms <= 0) return 1;
  const int per = xsg_cdiv(tiles, sms);
  return xsg_cdiv(tiles, per);
}

/* The default raster-M band of a CONTIG problem: its m-blocks per expert (rounded up), 1..cap
 * (cap: the dense default, 8 m-blocks). The experts' weights differ, so a band reaching into the
 * next expert shares no B tile; a band of one expert's m-blocks walks the experts one after
 * another as MASKED's compacted schedule does. Session 7 (probe, DeepSeek-V3 down E=64 T=128,
 * v3 against cuBLAS strided-batched): band 1 1.027, 2 1.015, 4 0.997, 8 0.972; at T=512 (4
 * m-blocks per expert) band 4 is as good as 8 and bands 1-2 lose 4-5 %. */
XSG_HD int xsg_contig_band(int m_blocks, int experts, int cap) {
  if (experts <= 0 || m_blocks <= 0) return cap;
  const int per = xsg_cdiv(m_blocks, experts);
  return per < 1 ? 1 : per > cap ? cap : per;
}

/* The raster band of a launch (gemm.cu; xsg_grid.swizzle): the caller's `swizzle`, or the
 * default, 8 blocks. NOTE: v10's raster-M default is 16 m-blocks of 64 rows, the 1024 rows of
 * v3's 8 x 128, so the A and B footprint of a band in L2 matches v3's. A CONTIG raster-M band
 * holds one expert's m-blocks (xsg_contig_band). raster_m: the order is raster M (not raster N,
 * not a caller's list). */
XSG_HD int xsg_band(int swizzle, int raster_m, int v10, int contig, int m_blocks, int experts) {
  if (swizzle) return swizzle;
  const int dflt = v10 && raster_m ? 16 : 8;
  return contig && raster_m ? xsg_contig_band(m_blocks, experts, dflt) : dflt;
}

/* A v7 CTA runs `streams` independent tile streams (one per consumer warpgroup). Stream s of
 * persistent CTA b (of `ctas`) takes positions xsg_stream_first(b, s, ctas), then every
 * streams * ctas further on: position k belongs to CTA k % ctas, stream (k / ctas) % streams.
 * The first ctas positions go to stream 0 of every CTA, so a schedule shorter than two waves
 * still spreads over all CTAs (SMs) before any CTA runs two streams. */
XSG_HD int xsg_stream_first(int cta, int stream, int ctas) {
  return stream * ctas + cta;
}

/* v7's split tile (session 8): the schedule position whose k-blocks CTA `cta`'s two streams
 * share, or -1. A CTA owns positions cta, cta + ctas, ... below `positions`; with an odd count
 * stream 0 has one tile more than stream 1 (its last, cta + (n - 1) ctas), and stream 1 would
 * idle for a whole tile at the end. That last tile is split: stream 0 takes its k-blocks
 * [0, k_blocks / 2), stream 1 the rest after its own tiles, hands the partial sums over in shared
 * memory, and stream 0 finishes the tile. Only with `enabled`, k_blocks >= min_kb (each half
 * must hold the speculative start's k-blocks) and n >= 3: a CTA's only tile stays whole (measured,
 * bench_gemm_probe_v7 E=8 T=16: one split tile per CTA was 3 % slower on 96 CTAs, 1 % faster on
 * 128; three tiles per CTA 2.5 % faster, Qwen3-235B gate/up). */
XSG_HD int xsg_v7_split_position(int cta, int ctas, int positions, int k_blocks, int min_kb,
                                 int enabled) {
  if (!enabled || ctas <= 0 || cta >= positions || k_blocks < min_kb) return -1;
  const int n = (positions - 1 - cta) / ctas + 1;
  return n >= 3 && n & 1 ? cta + (n - 1) * ctas : -1;
}

/* v3 / v11's last partial wave in column halves (xsg_params.tail_split; session 13). A
 * persistent grid of `ctas` CTAs walks schedule slots c, c + ctas, ... (CTA c). Positions
 * [0, *full) run as whole tiles, one slot each; *full is `positions` rounded down to whole waves
 * when the rest (the last partial wave) is at most half the grid, and then each tile of that
 * rest runs as two halves on two CTAs: slots *full + 2j and *full + 2j + 1 are halves 0 and 1 of
 * position *full + j. The last wave then takes about half a tile's time instead of a whole one
 * while most SMs idle (Qwen3-235B down E=64 T=512: 4096 tiles on 132 SMs, 31.03 waves). Nothing
 * is split when the rest is over half the grid (two halves on one CTA gain nothing) or empty
 * (*full = positions). Returns the slot count. */
XSG_HD int xsg_tail_slots(int positions, int ctas, int* full) {
  const int whole = ctas > 0 ? positions / ctas * ctas : positions;
  *full = 2 * (positions - whole) <= ctas ? whole : positions;
  return *full + 2 * (positions - *full);
}

/* Slot k's schedule position (k < xsg_tail_slots's count); *piece: -1 the whole tile, else the
 * half (0: its first columns, 1: the rest). */
XSG_HD int xsg_tail_position(int k, int full, int* piece) {
  if (k < full) {
    *piece = -1;
    return k;
  }
  *piece = (k - full) & 1;
  return full + ((k - full) >> 1);
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

/* CONTIG's speculative start (session 16; gemm_v2.cu): the expert that owns m-block mb when the M
 * rows are split evenly, every expert M / experts rows (experts >= 1), a whole number of
 * tile_m-row blocks (the balanced case, cuBLAS strided-batched's); -1 when M is not split so. */
XSG_HD int xsg_contig_guess(int mb, int M, int experts, int tile_m) {
  const int seg = M / experts;
  if (seg < tile_m || seg % tile_m || M % experts) return -1;
  return mb * tile_m / seg;
}

/* Whether expert g (0 <= g < experts) owns `row` by the CONTIG offsets: the same answer as
 * xsg_contig_expert(offsets, experts, row) == g, in two loads. */
XSG_HD int xsg_contig_owns(const int32_t* offsets, int g, int row) {
  return offsets[g] <= row && row < offsets[g + 1];
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

/* Compacted position k in [0, pre[experts]) -> the tile's coordinates (grid->groups = experts).
 * Inside an expert the grid's raster order (order, swizzle) runs over its used m-blocks only;
 * experts come one after another. NOTE (session 6): an expert with one used m-block (every v7
 * launch, v2-v6 at <= 128 rows per expert) takes its n-blocks in order under both rasters, so
 * that case skips xsg_order_tile's divisions: the kernels' producers run this between the
 * schedule table and their first TMA issue, one dependent chain on one thread, where each
 * division by a variable costs ~100 cycles. */
XSG_HD xsg_tile xsg_masked_coords(const xsg_grid* grid, const int32_t* pre, int experts, int k) {
  int lo = 0, hi = experts - 1; /* the largest e with pre[e] <= k: empty experts are skipped */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (pre[mid] <= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  xsg_tile r;
  r.g = lo;
  const int local = k - pre[lo], work = pre[lo + 1] - pre[lo];
  if (work <= grid->n_blocks) { /* one used m-block: n-blocks in order */
    r.mb = 0;
    r.nb = local;
    return r;
  }
  xsg_grid sub = *grid;
  sub.groups = 1;
  sub.m_blocks = work / grid->n_blocks;
  const int t = xsg_order_tile(&sub, local); /* mb * n_blocks + nb inside the expert */
  r.mb = t / grid->n_blocks;
  r.nb = t - r.mb * grid->n_blocks;
  return r;
}

/* The same as a tile index in the full numbering. */
XSG_HD int xsg_masked_tile(const xsg_grid* grid, const int32_t* pre, int experts, int k) {
  const xsg_tile t = xsg_masked_coords(grid, pre, experts, k);
  return xsg_tile_index(grid, t.g, t.mb, t.nb);
}

/* ---- v8: tile pairs for clusters of two CTAs ----
 * v8 (src/kernels/gemm/README.md) runs clusters of two CTAs, ranks 0 and 1, that compute two
 * vertically adjacent tiles of one group: m-blocks first + 2j and first + 2j + 1 of the same
 * n-block, which multiply the same B tile, so each CTA loads half of it for both (TMA
 * multicast). Its schedule is over *pairs*; cluster c (of C) takes pair positions c, c + C, ...
 * and both CTAs of a cluster walk the same positions. A pair whose group has an odd number of
 * m-blocks with work ends in a pair with no rank-1 tile: rank 1 still loads its half of B for
 * rank 0 (and computes and stores nothing). Tile indices (flags, maps) are those of the tile
 * grid (xsg_tile_index), unchanged. */

/* The pair grid of a tile grid: the m-blocks of each group taken two at a time (an odd last one
 * makes a pair with a rank-0 tile only). The raster-M band of `swizzle` m-blocks becomes
 * ceil(swizzle / 2) pairs, so that a band spans as many rows as in the one-CTA kernels. */
XSG_HD xsg_grid xsg_pair_grid(const xsg_grid* tiles) {
  xsg_grid g = *tiles;
  g.m_blocks = xsg_cdiv(tiles->m_blocks, 2);
  if (g.order == 0) g.swizzle = xsg_cdiv(tiles->swizzle, 2);
  return g;
}

/* Pairs with work of a group whose rows with work are [0, rows) (MASKED: min(count, M); CONTIG:
 * the segment's rows, a multiple of tile_m): ceil(m-blocks / 2) x n_blocks. */
XSG_HD int xsg_pair_work(int rows, int tile_m, int n_blocks) {
  return rows > 0 ? xsg_cdiv(xsg_cdiv(rows, tile_m), 2) * n_blocks : 0;
}

/* Member `rank` (0, 1) of pair m-block `pm` of a group whose m-blocks with work are
 * [first, end): *mb = first + 2 pm + rank (an m-block of the tile grid); returns 1 when that
 * tile has work (*mb < end). The pair itself has work when member 0 has. */
XSG_HD int xsg_pair_member(int first, int end, int pm, int rank, int* mb) {
  *mb = first + 2 * pm + rank;
  return *mb < end;
}

/* The compacted pair walk (MASKED with <= XSG_MASKED_MAX_EXPERTS experts, and CONTIG, whose
 * per-expert segments need not hold an even number of m-blocks): pre[e] = pairs with work of
 * experts < e (xsg_pair_work), pre[experts] = their total. Pair position k in [0, pre[experts])
 * -> its expert (.g), its pair m-block inside the expert (.mb) and its n-block (.nb). Inside an
 * expert the grid's raster order (order, swizzle of `pairs`, a pair grid) runs over its pairs;
 * experts come one after another. */
XSG_HD xsg_tile xsg_compact_pair(const xsg_grid* pairs, const int32_t* pre, int experts, int k) {
  int lo = 0, hi = experts - 1; /* the largest e with pre[e] <= k: empty experts are skipped */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (pre[mid] <= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  xsg_grid sub = *pairs;
  sub.groups = 1;
  sub.m_blocks = (pre[lo + 1] - pre[lo]) / pairs->n_blocks;
  const int t = xsg_order_tile(&sub, k - pre[lo]); /* pm * n_blocks + nb inside the expert */
  xsg_tile r;
  r.g = lo;
  r.mb = t / pairs->n_blocks;
  r.nb = t - r.mb * pairs->n_blocks;
  return r;
}

/* The pair prefix of a MASKED problem (counts: E entries, M rows per expert) on the host. */
XSG_HD int xsg_pair_prefix_masked(int32_t* pre, const int32_t* counts, int experts, int M,
                                  int tile_m, int n_blocks) {
  pre[0] = 0;
  for (int e = 0; e < experts; e++)
    pre[e + 1] = pre[e] + xsg_pair_work(counts[e] < M ? counts[e] : M, tile_m, n_blocks);
  return pre[experts];
}

/* The pair prefix of a CONTIG problem (offsets: E + 1 entries, multiples of tile_m). */
XSG_HD int xsg_pair_prefix_contig(int32_t* pre, const int32_t* offsets, int experts, int tile_m,
                                  int n_blocks) {
  pre[0] = 0;
  for (int e = 0; e < experts; e++)
    pre[e + 1] = pre[e] + xsg_pair_work(offsets[e + 1] - offsets[e], tile_m, n_blocks);
  return pre[experts];
}

/* An upper bound of the CONTIG pair positions before the offsets are known (they are on the
 * device): m_blocks = ceil(M / tile_m) tile rows split into segments of mb_e m-blocks make
 * sum_e ceil(mb_e / 2) <= (m_blocks + segments) / 2 pair rows, and there are at most
 * min(experts, m_blocks) segments with rows. */
XSG_HD int xsg_pair_bound_contig(int m_blocks, int experts, int n_blocks) {
  const int segments = experts < m_blocks ? experts : m_blocks;
  return xsg_cdiv(m_blocks + segments, 2) * n_blocks;
}

/* v8's grid: `max_ctas` (the schedule's; 0: two per co-resident cluster, `max_clusters`, as
 * the occupancy query gives it) rounded down to whole clusters of two (at least one), and no
 * more clusters than `positions` (pair positions; an upper bound is fine: a cluster without a
 * position only meets its partner at entry and exit). Returns the CTA count (even, >= 2), or 0
 * when positions <= 0. */
XSG_HD int xsg_v8_ctas(int max_ctas, int max_clusters, int positions) {
  if (positions <= 0) return 0;
  int clusters = max_ctas > 0 ? max_ctas / 2 : max_clusters;
  if (clusters < 1) clusters = 1;
  if (clusters > positions) clusters = positions;
  return 2 * clusters;
}

/* ---- Each CTA's first tile, worked out on the host (session 15) ----
 * A persistent CTA b starts at schedule position b. Finding that tile on the device is a chain of
 * dependent integer divisions (xsg_order_tile, xsg_tile_decode; ~6 of them, each ~20
 * instructions) on one thread before the kernel's first TMA issue can go out. The host knows
 * the answer, so the Hopper kernels (gemm_v2.cu) get it as a launch parameter: entry b is
 * m-block | n-block << 16 of position b's tile. Only for a raster order in one group (DENSE,
 * CONTIG) whose first wave is whole (positions >= ctas, so position b is a whole tile and not a
 * half of the last partial wave: xsg_tail_slots) and whose blocks fit 16 bits; else *n = 0 and
 * every CTA finds its own first tile as before. */
#define XSG_FIRST_MAX 160
XSG_HD int xsg_first_tiles(const xsg_grid* grid, int positions, int ctas, int listed, int compact,
                           uint32_t* out) {
  if (listed || compact || grid->groups != 1 || grid->swizzle < 1 || ctas < 1 ||
      ctas > XSG_FIRST_MAX || positions < ctas || grid->m_blocks > 0xffff ||
      grid->n_blocks > 0xffff || xsg_tile_count(grid) < positions)
    return 0;
  /* xsg_order_tile's walk in one group, stepped (no divisions: this runs on the host per launch,
   * for every CTA): f along the raster dimension within the band [first, first + width), s
   * along the other, bands one after another. */
  const int fast = grid->order == 1 ? grid->n_blocks : grid->m_blocks;
  const int slow = grid->order == 1 ? grid->m_blocks : grid->n_blocks;
  int first = 0, width = fast < grid->swizzle ? fast : grid->swizzle, f = 0, s = 0;
  for (int b = 0; b < ctas; b++) {
    const int mb = grid->order == 1 ? s : f, nb = grid->order == 1 ? f : s;
    out[b] = (uint32_t)mb | (uint32_t)nb << 16;
    if (++f == first + width) {
      f = first;
      if (++s == slow) { /* the next band */
        s = 0;
        first += grid->swizzle;
        width = fast - first < grid->swizzle ? fast - first : grid->swizzle;
        f = first;
      }
    }
  }
  return ctas;
}

/* Entry w of xsg_first_tiles as a tile of group 0. */
XSG_HD xsg_tile xsg_first_tile_of(uint32_t w) {
  xsg_tile t;
  t.g = 0;
  t.mb = (int)(w & 0xffffu);
  t.nb = (int)(w >> 16);
  return t;
}

/* ---- input readiness (xs_gemm_ready, include/xstage/gemm.h) ----
 * The flag groups a tile waits for: A rows [row0, row_end) of expert `expert` (row_end already
 * clipped to the rows with data) lie in groups [*first, *last]; groups hold `rows` rows each and
 * start, for MASKED (masked != 0), at expert * ceil(M / rows). Returns 0 (no wait) when the
 * range is empty. */
XSG_HD int xsg_ready_groups(int masked, int M, int rows, int expert, int row0, int row_end,
                            int* first, int* last) {
  if (row_end <= row0) return 0;
  const int base = masked ? expert * xsg_cdiv(M, rows) : 0;
  *first = base + row0 / rows;
  *last = base + (row_end - 1) / rows;
  return 1;
}

/* The number of flag groups of a problem (the flags array holds groups x span words). */
XSG_HD int64_t xsg_ready_group_count(int masked, int M, int experts, int rows) {
  return (int64_t)(masked ? experts : 1) * xsg_cdiv(M, rows);
}

/* Whether a flag word reads as ready for `expect` (epochs: wrap-safe difference). */
XSG_HD int xsg_ready_ok(uint32_t flag, uint32_t expect) {
  return (int32_t)(flag - expect) >= 0;
}

/* ---- split-K (v14, gemm_splitk.cu) ----
 * Slice s of S takes k-blocks [*kb0, *kb1) = [s KB / S, (s + 1) KB / S): the slices cover the
 * k-blocks once, in order, and differ by at most one k-block. */
XSG_HD void xsg_splitk_range(int k_blocks, int S, int s, int* kb0, int* kb1) {
  /* NOTE: 32-bit (k_blocks < 2^25 and S <= 16 here): a 64-bit division is a call in device code,
   * and the call made ptxas spill 140 bytes in v14's kernel. */
  *kb0 = k_blocks * s / S;
  *kb1 = k_blocks * (s + 1) / S;
}

/* v14's first units from the host (gemm_splitk.cu): CTA b's first unit is u = b, the slice
 * u % S of position u / S; entry b = m-block | n-block << 8 | slice << 28, so that the kernel's
 * first TMA need not wait for the division chain of the decode (xsg_order_tile, xsg_tile_decode,
 * u / S: ~0.5 us at the start of every launch, session 28). The positions' tiles come from
 * xsg_first_tiles' stepped walk (no divisions: this runs on the host at every launch). Only for
 * a raster order in one group (no caller's list) with at most 256 m-blocks (and fewer than 2^16
 * n-blocks), S <= 16 and every CTA holding a unit; else 0 entries (each CTA decodes its own).
 * Returns the entries (ctas). */
XSG_HD int xsg_splitk_first(const xsg_grid* grid, int positions, int S, int ctas, int listed,
                            uint32_t* out) {
  if (S < 1 || S > 16 || ctas < 1 || ctas > XSG_FIRST_MAX || (long long)positions * S < ctas ||
      grid->m_blocks > 256)
    return 0;
  const int P = (ctas + S - 1) / S; /* the positions the CTAs start on */
  uint32_t tiles[XSG_FIRST_MAX];
  if (xsg_first_tiles(grid, positions, P, listed, 0, tiles) != P) return 0;
  for (int b = 0, pos = 0, slice = 0; b < ctas; b++) {
    const xsg_tile t = xsg_first_tile_of(tiles[pos]);
    out[b] = (uint32_t)t.mb | (uint32_t)t.nb << 8 | (uint32_t)slice << 28;
    if (++slice == S) {
      slice = 0;
      pos++;
    }
  }
  return ctas;
}

/* Entry w of xsg_splitk_first: its tile (group 0) and slice. */
XSG_HD xsg_tile xsg_splitk_first_of(uint32_t w, int* slice) {
  xsg_tile t;
  t.g = 0;
  t.mb = (int)(w & 0xffu);
  t.nb = (int)((w >> 8) & 0xfffffu);
  *slice = (int)(w >> 28);
  return t;
}

/* The output share of slice s in the fix-up: 8-column output groups [*lo, *hi) of the tile's
 * `groups` (32 for a 256-column tile, 16 with SiLU*mul), cut like the k-blocks. With S > groups
 * some slices get none. */
XSG_HD void xsg_splitk_share(int groups, int S, int s, int* lo, int* hi) {
  xsg_splitk_range(groups, S, s, lo, hi);
}

/* Whether S slices' fix-up fits in shared memory: a CTA gathers its share of every slice's sums
 * (ceil(groups / S) output groups x 4 KiB of fp32, twice with SiLU*mul: gate and up; groups =
 * bn / 8, bn / 16 with SiLU*mul) into the 192 KiB of the ring. Every S <= 16 fits but S = 13, 14,
 * 15 with SiLU*mul on 256-row tiles. */
#define XSG_SPLITK_SUMS_BYTES (4 * 48 * 1024)
XSG_HD int xsg_splitk_fits(int S, int silu, int bn) {
  const int groups = silu ? bn / 16 : bn / 8;
  return S >= 1 &&
         (int64_t)S * (silu ? 2 : 1) * xsg_cdiv(groups, S) * 4096 <= XSG_SPLITK_SUMS_BYTES;
}

/* Split-K's workspace: a fixed block of counters (16 bytes per tile position, for up to 1024
 * positions: a split launch has at most one unit per SM), then a 128 x 256 tile of fp32 sums
 * (128 KiB) per unit (position x slice). Fixed, so that launches of other shapes on the same
 * workspace find their counters zero (each launch zeroes its own again). 0 for S = 1. */
#define XSG_SPLITK_TILE_BYTES (128 * 256 * 4)
#define XSG_SPLITK_MAX_POSITIONS 1024
#define XSG_SPLITK_COUNTER_BYTES (16 * XSG_SPLITK_MAX_POSITIONS)
XSG_HD int64_t xsg_splitk_workspace_bytes(int positions, int S) {
  if (S <= 1) return 0;
  return XSG_SPLITK_COUNTER_BYTES + (int64_t)positions * S * XSG_SPLITK_TILE_BYTES;
}

/* v7's split of K (xsg_params.ksplit; DENSE, a decode step's weight stream). v7 puts the
 * weights on the wgmma M side, so a tile's fp32 sums are only BT x BW (16 x 64 = 4 KiB at 16
 * tokens): each of a tile's S slices stores them in the workspace and the last to arrive (a
 * per-tile counter) adds all S in slice order and runs the epilogue; nobody waits, so the units
 * need not be resident at once. The plan (want < 2): S = 2 sms / tiles (the 2 x sms tile
 * streams), at most XSG_V7_KSPLIT_PLAN_MAX, at most 256 / bt (the last slice reads S x bt x 64 fp32
 * per 64 B rows), at least XSG_V7_KSPLIT_MIN_KB k-blocks per slice (the slices:
 * xsg_splitk_range), and no split below XSG_V7_KSPLIT_MIN_S. Measured on the H200 (session 25,
 * call A, `xstage bench gemm`, against cuBLAS): M x 1280 x 8192 (20 tiles of 64 B rows) at M = 1
 * / 16 S = 13 0.74 / 0.71 and S = 8 0.76 / 0.69 (unsplit 0.25 / 0.23, v14 0.65 / 0.59), M = 32
 * S = 8 0.64 (13: 0.61); 112-128 tiles at S = 2: 16 x 7168 x 8192 level (0.995 against 0.980),
 * 16 x 8192 x 3584 0.88 against 0.96, 64 x 8192 x 1024 0.60 against 0.75. At most 8: with the
 * weights rotated over 4 copies (none of a launch's own in L2, as in a model's forward pass; calls
 * M, N, bench_gemm_probe_v7 --dense --rotate 4) S = 8 ran 11.5-11.7 us at 1 and 16 tokens where
 * S = 13 ran 12.2-12.4 (re-reading the same weights, S = 13 was level at 1 token and 0.3-0.6 us
 * faster at 16). want >= 2: the
 * caller's S, at most one slice per k-block (a slice must multiply something). */
#define XSG_V7_KSPLIT_MAX 16 /* = XSG_SPLITK_MAX, the most a caller may ask */
#define XSG_V7_KSPLIT_PLAN_MAX 8
#define XSG_V7_KSPLIT_MIN_KB 4
#define XSG_V7_KSPLIT_MIN_S 4
XSG_HD int xsg_v7_ksplit(int tiles, int k_blocks, int bt, int sms, int want) {
  if (tiles < 1 || k_blocks < 1 || bt < 1) return 1;
  int S = want;
  if (want < 2) {
    S = 2 * sms / tiles;
    if (S > XSG_V7_KSPLIT_PLAN_MAX) S = XSG_V7_KSPLIT_PLAN_MAX;
    if (S > 256 / bt) S = 256 / bt;
    if (S > k_blocks / XSG_V7_KSPLIT_MIN_KB) S = k_blocks / XSG_V7_KSPLIT_MIN_KB;
    if (S < XSG_V7_KSPLIT_MIN_S) S = 1;
  }
  if (S > k_blocks) S = k_blocks;
  return S >= 2 ? S : 1;
}
/* v7's workspace for T tiles of BT x BW in S slices: the counters' block, then each unit's sums */
XSG_HD int64_t xsg_v7_ksplit_bytes(int tiles, int S, int bt, int bw) {
  if (S <= 1) return 0;
  return XSG_SPLITK_COUNTER_BYTES + (int64_t)tiles * S * bt * bw * 4;
}

/* v14's plan for a dense M x N x K problem (N: rows of B, 2I with SiLU*mul) on `sms` SMs: the
 * tile width *bn (256, 128 or 64 B rows: tiles of 128 x bn, output columns bn or bn / 2 with
 * SiLU*mul) and the split S, returned: S >= 2 split-K, 1 v14 unsplit (one wave of 128 x 128 or
 * 128 x 64 tiles), 0 none (v2 or v3 predicted faster; or `want` does not fit). `want` >= 2 asks
 * for that S (the width that fits and is predicted faster); 0 lets the model choose; only_bn
 * nonzero: tiles of that width only (the probe's). Constraints: S x tiles <= sms (one unit per
 * SM), the share fits (xsg_splitk_fits), a slice keeps at least XSG_SPLITK_MIN_KB k-blocks; v14
 * unsplit only where its tiles fit in one wave. Prediction, in ns (xsg_splitk_predict): the
 * slower of the busiest CTA's k-blocks (per k-block on v14's 128 x 256 / 128 x 128 / 128 x 64
 * tiles XSG_SPLITK_KB_NS / _KB128_NS / _KB64_NS; on v3 XSG_SPLITK_KB_NS, on v2 _V2_KB_NS) and
 * streaming A and B from HBM (XSG_SPLITK_HBM_BPNS bytes per ns), plus the fix-up of a split
 * (XSG_SPLITK_FIXUP_NS, _FIXUP128_NS, _FIXUP64_NS: the sums scale with the tile). Fitted to the
 * H200 (session 22, bench_gemm_chain --splitk, back to back, calls C, J, N, O): per k-block v3
 * 0.61-0.64 us, v14 128 x 128 0.27-0.40 (split or not), 128 x 64 ~0.30 (its loads, not its
 * flops, bound it), v2 0.39-0.45 (v14 unsplit ran the same 128 x 128 tiles 10-30 % faster than v2
 * in one wave: its direct epilogue, no persistent schedule); the fix-up (the whole kernel minus
 * the multiply alone) 6.3-9.0 us on 128 x 256 tiles, 4.8-5.6 on 128 x 128, ~3.6 on 128 x 64;
 * 128 x 8192 x 3584 streams its 59 MB of weights at ~4 TB/s. */
#define XSG_SPLITK_MIN_KB 4
#define XSG_SPLITK_MAX 16
#define XSG_SPLITK_KB_NS 640
#define XSG_SPLITK_KB128_NS 340
#define XSG_SPLITK_KB64_NS 300
#define XSG_SPLITK_V2_KB_NS 400
#define XSG_SPLITK_HBM_BPNS 4000
#define XSG_SPLITK_FIXUP_NS 7500
#define XSG_SPLITK_FIXUP128_NS 5200
#define XSG_SPLITK_FIXUP64_NS 3800
/* The predicted time of v14 (v14 != 0) on tiles 128 x bn with split S, or of v3 (bn 256) / v2
 * (bn 128) unsplit (v14 == 0). */
XSG_HD int64_t xsg_splitk_predict(int M, int N, int K, int silu, int bn, int S, int sms, int v14) {
  const int n_out = silu ? N / 2 : N, k_blocks = xsg_cdiv(K, 64);
  const int tiles = xsg_cdiv(M, 128) * xsg_cdiv(n_out, silu ? bn / 2 : bn);
  const int64_t mem = ((int64_t)M + N) * K * 2 / XSG_SPLITK_HBM_BPNS;
  const int64_t kb_ns = bn == 256   ? XSG_SPLITK_KB_NS
                        : !v14      ? XSG_SPLITK_V2_KB_NS
                        : bn == 128 ? XSG_SPLITK_KB128_NS
                                    : XSG_SPLITK_KB64_NS;
  const int64_t fix = bn == 256   ? XSG_SPLITK_FIXUP_NS
                      : bn == 128 ? XSG_SPLITK_FIXUP128_NS
                                  : XSG_SPLITK_FIXUP64_NS;
  int64_t t = S > 1 ? (int64_t)xsg_cdiv(k_blocks, S) * kb_ns
                    : (int64_t)xsg_cdiv(tiles, sms) * k_blocks * kb_ns;
  t = t > mem ? t : mem;
  return t + (S > 1 ? fix : 0);
}
XSG_HD int xsg_splitk_plan_w(int M, int N, int K, int silu, int sms, int want, int only_bn,
                             int* bn) {
  const int n_out = silu ? N / 2 : N, k_blocks = xsg_cdiv(K, 64);
  int best_s = 0, best_bn = 256;
  int64_t best = -1;
  for (int w = 256; w >= 64; w /= 2) {
    if (only_bn && w != only_bn) continue;
    const int tiles = xsg_cdiv(M, 128) * xsg_cdiv(n_out, silu ? w / 2 : w);
    if (tiles < 1 || sms < 2) continue;
    int S = want >= 2 ? want : sms / tiles;
    if (want < 2) {
      if (S > XSG_SPLITK_MAX) S = XSG_SPLITK_MAX;
      if (S > k_blocks / XSG_SPLITK_MIN_KB) S = k_blocks / XSG_SPLITK_MIN_KB;
      while (S >= 2 && !xsg_splitk_fits(S, silu, w))
        S--;
    } else if ((int64_t)S * tiles > sms || !xsg_splitk_fits(S, silu, w)) {
      S = 0;
    }
    if (S >= 2) {
      const int64_t t = xsg_splitk_predict(M, N, K, silu, w, S, sms, 1);
      if (best < 0 || t < best) best = t, best_s = S, best_bn = w;
    }
    if (want < 2 && w < 256 && tiles <= sms) { /* v14 unsplit, one wave */
      const int64_t t = xsg_splitk_predict(M, N, K, silu, w, 1, sms, 1);
      if (best < 0 || t < best) best = t, best_s = 1, best_bn = w;
    }
  }
  *bn = best_bn;
  if (want >= 2 || best < 0) return best < 0 ? 0 : best_s;
  const int64_t v3 = xsg_splitk_predict(M, N, K, silu, 256, 1, sms, 0);
  const int64_t v2 = xsg_splitk_predict(M, N, K, silu, 128, 1, sms, 0);
  return best < (v2 < v3 ? v2 : v3) ? best_s : 0;
}
#endif
