/* test_gemm_sched.c — the GEMM tile scheduler and grouped-layout index math, on the CPU. */
#include <string.h>

#include "kernels/gemm/bench.h"
#include "kernels/gemm/sched.h"
#include "test.h"
#include "xstage/gemm.h"

/* Every raster order visits every tile exactly once and decodes back to its coordinates. */
static void test_orders_are_permutations(void) {
  static const int groups[] = {1, 3}, mbs[] = {1, 2, 5, 7, 64}, nbs[] = {1, 3, 8, 28};
  static const int swz[] = {1, 2, 3, 8, 64};
  static unsigned char seen[3 * 64 * 28];
  for (int gi = 0; gi < 2; gi++)
    for (int mi = 0; mi < 5; mi++)
      for (int ni = 0; ni < 4; ni++)
        for (int order = 0; order < 2; order++)
          for (int si = 0; si < 5; si++) {
            xsg_grid g = {groups[gi], mbs[mi], nbs[ni], order, swz[si]};
            const int n = xsg_tile_count(&g);
            memset(seen, 0, sizeof seen);
            int bad = 0;
            for (int k = 0; k < n; k++) {
              const int t = xsg_order_tile(&g, k);
              if (t < 0 || t >= n || seen[t]++) bad++;
              xsg_tile d = xsg_tile_decode(&g, t);
              if (xsg_tile_index(&g, d.g, d.mb, d.nb) != t || d.mb >= g.m_blocks ||
                  d.nb >= g.n_blocks || d.g >= g.groups)
                bad++;
            }
            XT_CHECK_MSG(bad == 0, "groups %d mb %d nb %d order %d swizzle %d: %d bad", g.groups,
                         g.m_blocks, g.n_blocks, order, g.swizzle, bad);
          }
}

/* Raster M with a band of S: the first S positions share n-block 0 and walk m 0..S-1. */
static void test_raster_locality(void) {
  xsg_grid g = {1, 10, 6, 0, 4};
  for (int k = 0; k < 4; k++) {
    xsg_tile t = xsg_tile_decode(&g, xsg_order_tile(&g, k));
    XT_EQ_INT(t.nb, 0);
    XT_EQ_INT(t.mb, k);
  }
  xsg_tile t = xsg_tile_decode(&g, xsg_order_tile(&g, 4)); /* then n-block 1 of the band */
  XT_EQ_INT(t.mb, 0);
  XT_EQ_INT(t.nb, 1);
  /* The last band is 2 wide (10 = 4 + 4 + 2): position 48 starts it. */
  t = xsg_tile_decode(&g, xsg_order_tile(&g, 48));
  XT_EQ_INT(t.mb, 8);
  XT_EQ_INT(t.nb, 0);
  t = xsg_tile_decode(&g, xsg_order_tile(&g, 49));
  XT_EQ_INT(t.mb, 9);
  g.order = 1; /* raster N: n varies fastest inside a band */
  t = xsg_tile_decode(&g, xsg_order_tile(&g, 1));
  XT_EQ_INT(t.mb, 0);
  XT_EQ_INT(t.nb, 1);
  /* Groups come one after another. */
  xsg_grid gg = {3, 2, 2, 0, 8};
  XT_EQ_INT(xsg_tile_decode(&gg, xsg_order_tile(&gg, 4)).g, 1);
  XT_EQ_INT(xsg_tile_decode(&gg, xsg_order_tile(&gg, 11)).g, 2);
}

/* Contiguous layout: aligned segments, empty experts own no rows, lookup by row. */
static void test_contig_layout(void) {
  const int32_t counts[6] = {0, 1, 128, 129, 0, 300};
  int32_t off[7];
  XT_EQ_INT(xs_gemm_contig_layout(off, counts, 6), XS_OK);
  const int32_t want[7] = {0, 0, 128, 256, 512, 512, 896};
  for (int e = 0; e <= 6; e++) {
    XT_EQ_INT(off[e], want[e]);
    XT_EQ_INT(off[e] % XS_GEMM_GROUP_ALIGN, 0);
  }
  for (int e = 0; e < 6; e++)
    XT_CHECK(off[e + 1] - off[e] >= counts[e]);
  for (int row = 0; row < 900; row++) {
    int want_e = row < 128 ? 1 : row < 256 ? 2 : row < 512 ? 3 : row < 896 ? 5 : -1;
    XT_EQ_INT(xsg_contig_expert(off, 6, row), want_e);
  }
  /* All experts empty: no row belongs to anyone. */
  const int32_t zeros[3] = {0, 0, 0};
  int32_t zoff[4];
  XT_EQ_INT(xs_gemm_contig_layout(zoff, zeros, 3), XS_OK);
  XT_EQ_INT(zoff[3], 0);
  XT_EQ_INT(xsg_contig_expert(zoff, 3, 0), -1);
  /* One expert with one token: one padded segment. */
  const int32_t one[1] = {1};
  int32_t ooff[2];
  XT_EQ_INT(xs_gemm_contig_layout(ooff, one, 1), XS_OK);
  XT_EQ_INT(ooff[1], 128);
  XT_EQ_INT(xsg_contig_expert(ooff, 1, 127), 0);
}

static void test_contig_layout_errors(void) {
  int32_t off[3];
  const int32_t neg[2] = {5, -1}, big[2] = {0x7fffff00, 0x7fffff00};
  XT_EQ_INT(xs_gemm_contig_layout(off, neg, 2), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_gemm_contig_layout(off, big, 2), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_gemm_contig_layout(NULL, neg, 2), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_gemm_contig_layout(off, neg, 0), XS_ERR_INVALID_ARG);
}

/* The compacted masked schedule visits every tile with work exactly once (and no other tile),
 * for empty, one-token, partial and full experts, both raster orders and several bands. */
static void test_masked_compact(void) {
  static const int32_t counts[] = {0, 1, 128, 129, 0, 300, 1000, 0, 64};
  enum { E = 9, M = 300, TM = 128, MB = 3 };
  static const int nbs[] = {1, 3, 16};
  static const int swz[] = {1, 2, 8};
  static unsigned char seen[E * MB * 16];
  int32_t pre[E + 1];
  for (int ni = 0; ni < 3; ni++)
    for (int order = 0; order < 2; order++)
      for (int si = 0; si < 3; si++) {
        xsg_grid g = {E, MB, nbs[ni], order, swz[si]};
        const int total = xsg_masked_prefix(pre, counts, E, M, TM, g.n_blocks);
        int expect = 0;
        for (int e = 0; e < E; e++) {
          const int rows = counts[e] < M ? counts[e] : M;
          expect += (rows + TM - 1) / TM * g.n_blocks;
        }
        XT_EQ_INT(total, expect);
        memset(seen, 0, sizeof seen);
        int bad = 0;
        for (int k = 0; k < total; k++) {
          const int t = xsg_masked_tile(&g, pre, E, k);
          if (t < 0 || t >= xsg_tile_count(&g) || seen[t]++) {
            bad++;
            continue;
          }
          xsg_tile d = xsg_tile_decode(&g, t);
          const int rows = counts[d.g] < M ? counts[d.g] : M;
          if (d.mb * TM >= rows) bad++; /* a tile without work */
        }
        XT_CHECK_MSG(bad == 0, "nb %d order %d swizzle %d: %d bad", g.n_blocks, order, g.swizzle,
                     bad);
      }
  /* Experts come one after another: the first tile of expert 2 follows expert 1's only tile
   * row (n_blocks tiles). */
  xsg_grid g = {E, MB, 4, 0, 8};
  xsg_masked_prefix(pre, counts, E, M, TM, 4);
  XT_EQ_INT(xsg_tile_decode(&g, xsg_masked_tile(&g, pre, E, 0)).g, 1);
  XT_EQ_INT(xsg_tile_decode(&g, xsg_masked_tile(&g, pre, E, 4)).g, 2);
}

/* xsg_masked_coords' one-m-block shortcut gives what xsg_order_tile gives on the expert's
 * sub-grid (one used m-block: the n-blocks in order, under both rasters and every band), and
 * its coordinates always match the tile index xsg_masked_tile returns. */
static void test_masked_coords(void) {
  static const int32_t counts[] = {16, 0, 5, 16, 1, 0, 0, 9};
  enum { E = 8, M = 16, TM = 16 };
  static const int nbs[] = {1, 3, 7, 32};
  static const int swz[] = {1, 2, 5, 8, 64};
  int32_t pre[E + 1];
  for (int ni = 0; ni < 4; ni++)
    for (int order = 0; order < 2; order++)
      for (int si = 0; si < 5; si++) {
        const xsg_grid g = {E, 1, nbs[ni], order, swz[si]};
        const int total = xsg_masked_prefix(pre, counts, E, M, TM, g.n_blocks);
        XT_EQ_INT(total, 5 * g.n_blocks);
        int bad = 0;
        for (int k = 0; k < total; k++) {
          const xsg_tile c = xsg_masked_coords(&g, pre, E, k);
          int e = 0; /* the expert by a linear walk, the tile by the general order */
          while (pre[e + 1] <= k)
            e++;
          xsg_grid sub = g;
          sub.groups = 1;
          const xsg_tile want = xsg_tile_decode(&g, xsg_order_tile(&sub, k - pre[e]));
          const xsg_tile back = xsg_tile_decode(&g, xsg_masked_tile(&g, pre, E, k));
          if (c.g != e || c.mb != want.mb || c.nb != want.nb || back.g != c.g || back.mb != c.mb ||
              back.nb != c.nb)
            bad++;
        }
        XT_CHECK_MSG(bad == 0, "nb %d order %d swizzle %d: %d wrong", g.n_blocks, order, g.swizzle,
                     bad);
      }
}

/* AUTO's cost model for 128-row tiles (xsg_auto_pick; gemm.cu): the picks the bench measured
 * fastest, on 132 SMs. */
static void test_auto_pick(void) {
  /* the four dense targets: v3, v3, v5, v4 (the v3 pick runs as v11 without SiLU*mul) */
  XT_EQ_INT(xsg_auto_pick(64, 8192, 0, 132, 0), 3);  /* 8192^3: 16 waves x 256 */
  XT_EQ_INT(xsg_auto_pick(32, 28672, 0, 132, 0), 3); /* 4096x28672x8192 */
  XT_EQ_INT(xsg_auto_pick(16, 3072, 0, 132, 0), 5);  /* 2048x3072x4096: 2 waves x 192 */
  XT_EQ_INT(xsg_auto_pick(4, 7168, 0, 132, 0), 4);   /* 512x7168x2048: one wave of 224 */
  XT_EQ_INT(xsg_auto_pick(64, 7168, 0, 132, 0), 3);  /* dense never weighs v6 */
  /* grouped: DeepSeek-V3 down E=64 T=128, 64 m-blocks x 7168: v3 1792 tiles = 14 waves x 256,
   * v6 2240 = 17 x 208. With v3's weight 100 v6 wins (runs 33-37: 1.0-2.1 % faster than v3); but
   * without SiLU*mul v3's tile runs as v11 (weight 99), which ran 1.2 % faster than v6 on average
   * in runs 47-54: v3 (v11) since session 11. With SiLU*mul the same tile counts keep v6. */
  XT_EQ_INT(xsg_auto_pick(64, 7168, 0, 132, 1), 3);
  XT_EQ_INT(xsg_auto_pick(64, 3584, 1, 132, 1), 6);
  /* Qwen3-235B gate/up E=8 T=512 Zipf (34 m-blocks, 1536 SiLU columns): v6 (4 x 208) */
  XT_EQ_INT(xsg_auto_pick(34, 1536, 1, 132, 1), 6);
  /* balanced E=8 T=512 (32 m-blocks) and 4096 rows of 7168 columns: v3's full waves */
  XT_EQ_INT(xsg_auto_pick(32, 2048, 1, 132, 1), 3);
  XT_EQ_INT(xsg_auto_pick(32, 4096, 0, 132, 1), 3);
  /* MASKED Qwen3-235B gate/up E=8 T=128 Zipf (counts 377 .. 47 of a 377-row buffer): the tiles
   * with work are 11 m-blocks (v3: 132 tiles, one wave), the whole buffer 24 (v6 there; run 37:
   * v6 0.0910 ms against v3 0.0678) */
  const int32_t counts[8] = {377, 189, 126, 95, 75, 63, 54, 47};
  int64_t work = 0;
  for (int e = 0; e < 8; e++)
    work += xsg_cdiv(counts[e], 128);
  XT_EQ_INT((int)work, 11);
  XT_EQ_INT(xsg_auto_pick(work, 1536, 1, 132, 1), 3);
  XT_EQ_INT(xsg_auto_pick(8 * xsg_cdiv(377, 128), 1536, 1, 132, 1), 6);
  /* degenerate input: no SM count, no rows */
  XT_EQ_INT(xsg_auto_pick(0, 4096, 0, 132, 1), 3);
  XT_EQ_INT(xsg_auto_pick(10, 4096, 0, 0, 1) >= 2, 1);
  /* never a version the model does not weigh on that kind of problem */
  for (int mb = 1; mb < 300; mb += 13)
    for (int n = 64; n <= 16384; n += 448) {
      XT_CHECK(xsg_auto_pick(mb, n, 0, 132, 0) != 6);
      XT_CHECK(xsg_auto_pick(mb, n, mb & 1, 132, 1) != 5);
    }
}

/* v7's tile width: narrow (64 B rows) only where it lowers the busiest SM's B rows by > 10 %;
 * wide when the narrow tile cannot run or nothing is known; and its grid: the fewest CTAs that
 * keep the busiest CTA's tile count. */
static void test_v7_width(void) {
  /* 132 SMs: Qwen3-235B gate/up E=8 (1536 SiLU columns): 192 wide tiles (2 x 128 rows on the
   * busiest SM) against 384 narrow (3 x 64) */
  XT_EQ_INT(xsg_v7_width(1536, 1, 8, 132, 1), 64);
  XT_EQ_INT(xsg_v7_width(1536, 1, 8, 132, 0), 128);  /* no 5-D map */
  XT_EQ_INT(xsg_v7_width(4096, 0, 8, 132, 1), 128);  /* 256 vs 512 tiles: 2 x 128 = 4 x 64 */
  XT_EQ_INT(xsg_v7_width(7168, 0, 8, 132, 1), 64);   /* 448 vs 896: 4 x 128, 7 x 64: -12.5 % */
  XT_EQ_INT(xsg_v7_width(4608, 0, 8, 132, 1), 64);   /* 288 vs 576: 3 x 128, 5 x 64: -16.7 % */
  XT_EQ_INT(xsg_v7_width(2048, 1, 64, 132, 1), 128); /* 2048 vs 4096: 16 x 128 = 32 x 64 */
  XT_EQ_INT(xsg_v7_width(7168, 0, 64, 132, 1), 128); /* 28 x 128 vs 55 x 64: 1.8 %, kept wide */
  XT_EQ_INT(xsg_v7_width(4096, 0, 1, 0, 1), 128);    /* no SM count */
  XT_EQ_INT(xsg_v7_width(4096, 0, 0, 132, 1), 128);  /* no rows */
  XT_EQ_INT(xsg_v7_width(64, 0, 1, 132, 1), 64);     /* one tile: half the rows on its SM */
  XT_EQ_INT(xsg_v7_ctas(448, 132), 112);
  XT_EQ_INT(xsg_v7_ctas(256, 132), 128);
  XT_EQ_INT(xsg_v7_ctas(384, 132), 128);
  XT_EQ_INT(xsg_v7_ctas(192, 132), 96);
  XT_EQ_INT(xsg_v7_ctas(100, 132), 100);
  XT_EQ_INT(xsg_v7_ctas(1, 132), 1);
  XT_EQ_INT(xsg_v7_ctas(0, 132), 1);
  XT_EQ_INT(xsg_contig_band(64, 64, 8), 1); /* T=128, 64 experts: one m-block each */
  XT_EQ_INT(xsg_contig_band(32, 8, 8), 4);  /* T=512: four */
  XT_EQ_INT(xsg_contig_band(33, 8, 8), 5);  /* rounded up */
  XT_EQ_INT(xsg_contig_band(640, 8, 8), 8); /* capped at the dense default */
  XT_EQ_INT(xsg_contig_band(1280, 8, 16), 16);
  XT_EQ_INT(xsg_contig_band(5, 64, 8), 1); /* fewer m-blocks than experts */
  XT_EQ_INT(xsg_contig_band(0, 8, 8), 8);  /* nothing to order */
  XT_EQ_INT(xsg_contig_band(32, 0, 8), 8);
  XT_EQ_INT(xsg_band(3, 1, 1, 1, 32, 8), 3);      /* the caller's band wins */
  XT_EQ_INT(xsg_band(0, 1, 0, 0, 32, 8), 8);      /* dense default */
  XT_EQ_INT(xsg_band(0, 1, 1, 0, 32, 8), 16);     /* v10 raster M */
  XT_EQ_INT(xsg_band(0, 0, 1, 0, 32, 8), 8);      /* v10 raster N */
  XT_EQ_INT(xsg_band(0, 1, 0, 1, 32, 8), 4);      /* CONTIG raster M: one expert's m-blocks */
  XT_EQ_INT(xsg_band(0, 0, 0, 1, 32, 8), 8);      /* CONTIG raster N or a list: the default */
  XT_EQ_INT(xsg_band(0, 1, 1, 1, 640, 8), 16);    /* v10 CONTIG: capped at its default */
  for (int tiles = 1; tiles < 2000; tiles += 7) { /* never a busier CTA than sms CTAs give */
    const int c = xsg_v7_ctas(tiles, 132);
    XT_CHECK(c >= 1 && c <= 132 && xsg_cdiv(tiles, c) == xsg_cdiv(tiles, 132));
  }
}

/* v7's tile height: the least of 16, 32, 64 holding the rows per group, and a divisor of the
 * contiguous layout's segment alignment (a tile never straddles two experts). */
static void test_v7_tile_m(void) {
  static const int rows[] = {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 128, 4096};
  static const int want[] = {16, 16, 16, 16, 32, 32, 32, 64, 64, 64, 64, 64, 64};
  for (int i = 0; i < 13; i++) {
    const int tm = xsg_v7_tile_m(rows[i]);
    XT_EQ_INT(tm, want[i]);
    XT_CHECK(XS_GEMM_GROUP_ALIGN % tm == 0);
    XT_CHECK(rows[i] > 64 || rows[i] <= tm); /* up to 64 rows: one token tile per group */
  }
}

/* Two tile streams per CTA (v7): the walk of every (CTA, stream) covers each position exactly
 * once; the first `ctas` positions land on stream 0 of distinct CTAs (a short schedule spreads
 * over the SMs first); streams differ by at most one position. */
static void test_streams(void) {
  static const int ctass[] = {1, 3, 7, 132}, counts[] = {0, 1, 5, 131, 132, 133, 263, 264, 1000};
  static unsigned char seen[1000];
  for (int ci = 0; ci < 4; ci++)
    for (int ni = 0; ni < 9; ni++) {
      const int ctas = ctass[ci], n = counts[ni], streams = 2;
      memset(seen, 0, sizeof seen);
      int bad = 0, most = 0, least = 1 << 30;
      for (int b = 0; b < ctas; b++)
        for (int st = 0; st < streams; st++) {
          int mine = 0;
          for (int k = xsg_stream_first(b, st, ctas); k < n; k += streams * ctas, mine++) {
            if (seen[k]++) bad++;
            if (k < ctas && (st != 0 || k != b)) bad++;
          }
          most = mine > most ? mine : most;
          least = mine < least ? mine : least;
        }
      for (int k = 0; k < n; k++)
        bad += seen[k] != 1;
      XT_CHECK_MSG(bad == 0, "ctas %d positions %d: %d bad", ctas, n, bad);
      XT_CHECK_MSG(most - least <= 1, "ctas %d positions %d: streams run %d..%d", ctas, n, least,
                   most);
    }
}

/* v7's split tile: with an odd count of positions (3 or more) a CTA's last one (on stream 0) is
 * shared, so both streams carry the same k-blocks; with an even count, one tile, a disabled split
 * or too few k-blocks nothing is split. Checked by walking the streams as the kernel does. */
static void test_v7_split(void) {
  static const int ctass[] = {1, 3, 7, 128, 132}, counts[] = {0, 1, 2, 5, 131, 132, 133, 384, 1000};
  const int kbs = 64, min_kb = 4;
  for (int ci = 0; ci < 5; ci++)
    for (int ni = 0; ni < 9; ni++) {
      const int ctas = ctass[ci], n = counts[ni];
      int bad = 0;
      for (int b = 0; b < ctas; b++) {
        const int sp = xsg_v7_split_position(b, ctas, n, kbs, min_kb, 1);
        int kb[2] = {0, 0}, mine = 0, on0 = 0;
        for (int st = 0; st < 2; st++)
          for (int k = xsg_stream_first(b, st, ctas); k < n; k += 2 * ctas) {
            mine++;
            kb[st] += k == sp ? kbs / 2 : kbs;
            on0 += k == sp && st == 0;
          }
        if (sp >= 0) kb[1] += kbs - kbs / 2;             /* stream 1's share, after its own tiles */
        if ((mine >= 3 && mine & 1) != (sp >= 0)) bad++; /* split: an odd count, not one */
        if (sp >= 0 && (on0 != 1 || sp + ctas < n || sp % ctas != b))
          bad++;                                /* its last, stream 0 */
        if (kb[0] != kb[1] && mine != 1) bad++; /* equal k-blocks on both streams */
        if (xsg_v7_split_position(b, ctas, n, kbs, min_kb, 0) != -1) bad++; /* disabled */
        if (xsg_v7_split_position(b, ctas, n, min_kb - 1, min_kb, 1) != -1) bad++;
      }
      XT_CHECK_MSG(bad == 0, "ctas %d positions %d: %d bad", ctas, n, bad);
    }
  XT_EQ_INT(xsg_v7_split_position(5, 128, 384, 64, 4, 1), 261); /* 3 tiles: 5, 133, 261 */
  XT_EQ_INT(xsg_v7_split_position(5, 128, 256, 64, 4, 1), -1);  /* 2 tiles: one per stream */
  XT_EQ_INT(xsg_v7_split_position(100, 128, 64, 64, 4, 1), -1); /* CTA 100 has no position */
  XT_EQ_INT(xsg_v7_split_position(5, 128, 64, 64, 4, 1), -1);   /* one tile: kept whole */
  XT_EQ_INT(xsg_v7_split_position(5, 128, 640, 64, 4, 1), 517); /* five: 5 ... 517 */
}

/* ---- v8: tile pairs on clusters of two CTAs ---- */

/* Walk a v8 schedule the way the kernel does (cluster c of `clusters` takes pair positions c,
 * c + clusters, ...; both ranks resolve each pair) and count how often each tile of the tile
 * grid is computed (seen[t]) and how many idle members there are. Layout 0 dense / masked over
 * the pair grid (counts == NULL: dense), 1 masked compacted, 2 contig compacted (offsets). The
 * rules are the kernel's (gemm_v8.cu v8_pair): a pair has work when its rank-0 member has; a
 * member has work when its m-block is below the group's end. Returns the number of errors:
 * members of one pair in different groups / n-blocks / not adjacent, a rank-1 member with work
 * whose rank-0 member has none, a tile index out of range. */
static int walk_pairs(const xsg_grid* tiles, int layout, const int32_t* counts, const int32_t* off,
                      int M, int TM, int clusters, unsigned char* seen, int* idle) {
  const xsg_grid pairs = xsg_pair_grid(tiles);
  int32_t pre[64];
  int positions;
  if (layout == 1)
    positions = xsg_pair_prefix_masked(pre, counts, tiles->groups, M, TM, tiles->n_blocks);
  else if (layout == 2)
    positions = xsg_pair_prefix_contig(pre, off, tiles->groups, TM, tiles->n_blocks);
  else
    positions = xsg_tile_count(&pairs);
  const int E = tiles->groups;
  int bad = 0;
  *idle = 0;
  for (int c = 0; c < clusters; c++)
    for (int k = c; k < positions; k += clusters) {
      const xsg_tile pr = layout ? xsg_compact_pair(&pairs, pre, E, k)
                                 : xsg_tile_decode(&pairs, xsg_order_tile(&pairs, k));
      int first = 0, end, group = pr.g;
      if (layout == 2) {
        first = off[pr.g] / TM, end = off[pr.g + 1] / TM, group = 0;
      } else if (counts) {
        const int rows = counts[pr.g] < M ? counts[pr.g] : M;
        end = xsg_cdiv(rows, TM);
      } else {
        end = tiles->m_blocks;
      }
      int mb0, mb1;
      const int w0 = xsg_pair_member(first, end, pr.mb, 0, &mb0);
      const int w1 = xsg_pair_member(first, end, pr.mb, 1, &mb1);
      if (layout && !w0) bad++; /* the compacted walks hold pairs with work only */
      if (!w0 && w1) bad++;
      if (mb1 != mb0 + 1 || (mb0 - first) % 2) bad++;
      if (!w0) continue;
      if (!w1) ++*idle;
      for (int r = 0; r < 2; r++) {
        if (!(r ? w1 : w0)) continue;
        const int mb = r ? mb1 : mb0;
        if (mb >= tiles->m_blocks || pr.nb >= tiles->n_blocks) {
          bad++;
          continue;
        }
        seen[xsg_tile_index(tiles, group, mb, pr.nb)]++;
      }
    }
  return bad;
}

/* DENSE (one group) and MASKED over the whole pair grid: every tile exactly once, an idle member
 * exactly where a group's m-block count is odd (one per n-block), for both orders, several bands
 * and cluster counts. */
static void test_pairs_dense(void) {
  static const int mbs[] = {1, 2, 3, 5, 8, 65}, nbs[] = {1, 3, 8}, swz[] = {1, 2, 3, 8};
  static const int cls[] = {1, 2, 3, 66};
  static unsigned char seen[65 * 8];
  for (int mi = 0; mi < 6; mi++)
    for (int ni = 0; ni < 3; ni++)
      for (int order = 0; order < 2; order++)
        for (int si = 0; si < 4; si++)
          for (int ci = 0; ci < 4; ci++) {
            const xsg_grid g = {1, mbs[mi], nbs[ni], order, swz[si]};
            memset(seen, 0, sizeof seen);
            int idle = 0;
            int bad = walk_pairs(&g, 0, NULL, NULL, 0, 128, cls[ci], seen, &idle);
            for (int t = 0; t < xsg_tile_count(&g); t++)
              bad += seen[t] != 1;
            XT_CHECK_MSG(bad == 0, "mb %d nb %d order %d swizzle %d clusters %d: %d bad",
                         g.m_blocks, g.n_blocks, order, g.swizzle, cls[ci], bad);
            XT_EQ_INT(idle, g.m_blocks % 2 ? g.n_blocks : 0);
          }
  /* The pair grid: m-blocks two at a time, the raster-M band halved (same rows per band),
   * raster N's band unchanged. */
  const xsg_grid g = {2, 7, 5, 0, 8};
  xsg_grid pg = xsg_pair_grid(&g);
  XT_EQ_INT(pg.m_blocks, 4);
  XT_EQ_INT(pg.swizzle, 4);
  XT_EQ_INT(pg.groups, 2);
  XT_EQ_INT(pg.n_blocks, 5);
  const xsg_grid gn = {1, 7, 5, 1, 3};
  pg = xsg_pair_grid(&gn);
  XT_EQ_INT(pg.swizzle, 3);
  const xsg_grid g1 = {1, 10, 6, 0, 1};
  XT_EQ_INT(xsg_pair_grid(&g1).swizzle, 1); /* never below one pair */
  /* Raster M, band 8 m-blocks = 4 pairs: the first 4 positions are n-block 0, m-blocks 0..7. */
  const xsg_grid gb = {1, 10, 6, 0, 8};
  pg = xsg_pair_grid(&gb);
  for (int k = 0; k < 4; k++) {
    const xsg_tile t = xsg_tile_decode(&pg, xsg_order_tile(&pg, k));
    XT_EQ_INT(t.nb, 0);
    XT_EQ_INT(t.mb, k);
  }
  int mb;
  XT_EQ_INT(xsg_pair_member(0, 3, 1, 0, &mb), 1);
  XT_EQ_INT(mb, 2);
  XT_EQ_INT(xsg_pair_member(0, 3, 1, 1, &mb), 0); /* m-block 3 of 3: the idle member */
  XT_EQ_INT(mb, 3);
  XT_EQ_INT(xsg_pair_member(4, 7, 1, 0, &mb), 1); /* a segment starting at m-block 4 */
  XT_EQ_INT(mb, 6);
}

/* MASKED: the compacted pair walk and the whole-buffer walk compute the same tiles, each tile
 * with work exactly once and no other; idle members exactly for experts with an odd number of
 * used m-blocks (empty, one-token, 128 / 129 / 256 / 257 / 300 / 384 / > M rows). */
static void test_pairs_masked(void) {
  static const int32_t counts[] = {0, 1, 128, 129, 256, 257, 300, 384, 1000, 0, 64};
  enum { E = 11, M = 384, TM = 128, MB = 3 };
  static const int nbs[] = {1, 2, 5};
  static unsigned char seen[E * MB * 5], seen2[E * MB * 5];
  int32_t pre[E + 1];
  for (int ni = 0; ni < 3; ni++)
    for (int order = 0; order < 2; order++)
      for (int cl = 1; cl <= 4; cl += 3) {
        const xsg_grid g = {E, MB, nbs[ni], order, 2};
        memset(seen, 0, sizeof seen);
        memset(seen2, 0, sizeof seen2);
        int idle = 0, idle2 = 0;
        int bad = walk_pairs(&g, 1, counts, NULL, M, TM, cl, seen, &idle);
        bad += walk_pairs(&g, 0, counts, NULL, M, TM, cl, seen2, &idle2);
        int want_idle = 0, want_pairs = 0;
        for (int t = 0; t < xsg_tile_count(&g); t++) {
          const xsg_tile d = xsg_tile_decode(&g, t);
          const int rows = counts[d.g] < M ? counts[d.g] : M;
          const int busy = d.mb * TM < rows;
          bad += seen[t] != busy;
          bad += seen2[t] != busy;
        }
        for (int e = 0; e < E; e++) {
          const int used = xsg_cdiv(counts[e] < M ? counts[e] : M, TM);
          want_idle += used % 2 ? g.n_blocks : 0;
          want_pairs += xsg_cdiv(used, 2) * g.n_blocks;
          XT_EQ_INT(xsg_pair_work(counts[e] < M ? counts[e] : M, TM, g.n_blocks),
                    xsg_cdiv(used, 2) * g.n_blocks);
        }
        XT_CHECK_MSG(bad == 0, "nb %d order %d clusters %d: %d bad", g.n_blocks, order, cl, bad);
        XT_EQ_INT(idle, want_idle);
        XT_EQ_INT(idle2, want_idle);
        XT_EQ_INT(xsg_pair_prefix_masked(pre, counts, E, M, TM, g.n_blocks), want_pairs);
      }
  /* Experts come one after another in the compacted walk: expert 1 (one token: one pair per
   * n-block) first, then expert 2. */
  const xsg_grid g = {E, MB, 4, 0, 8};
  const xsg_grid pg = xsg_pair_grid(&g);
  xsg_pair_prefix_masked(pre, counts, E, M, TM, 4);
  XT_EQ_INT(xsg_compact_pair(&pg, pre, E, 0).g, 1);
  XT_EQ_INT(xsg_compact_pair(&pg, pre, E, 3).g, 1);
  XT_EQ_INT(xsg_compact_pair(&pg, pre, E, 4).g, 2);
  XT_EQ_INT(xsg_compact_pair(&pg, pre, E, 3).nb, 3);
}

/* CONTIG: pairs never straddle two experts' segments (segments of 0, 1, 2, 3, 4 and 1 m-blocks),
 * every m-block below offsets[E] is computed exactly once per n-block and none past it, idle
 * members exactly for segments of an odd number of m-blocks; the bound xs_gemm_run sizes the
 * grid with holds. */
static void test_pairs_contig(void) {
  static const int32_t counts[] = {0, 1, 128, 129, 0, 300, 385, 256, 1};
  enum { E = 9, TM = 128 };
  int32_t off[E + 1], pre[E + 1];
  XT_EQ_INT(xs_gemm_contig_layout(off, counts, E), XS_OK);
  const int M = off[E] + 3 * TM; /* rows past the last segment: never computed */
  static unsigned char seen[32 * 6];
  for (int nb = 1; nb <= 6; nb += 5)
    for (int order = 0; order < 2; order++)
      for (int cl = 1; cl <= 5; cl += 2) {
        const xsg_grid g = {E, xsg_cdiv(M, TM), nb, order, 3}; /* groups = E: the prefix's */
        xsg_grid tiles = g;
        tiles.groups = 1; /* CONTIG tile indices: one group of m-blocks over all of A */
        memset(seen, 0, sizeof seen);
        int idle = 0;
        int bad = walk_pairs(&g, 2, NULL, off, M, TM, cl, seen, &idle);
        int want_idle = 0;
        for (int e = 0; e < E; e++)
          want_idle += ((off[e + 1] - off[e]) / TM) % 2 ? nb : 0;
        for (int t = 0; t < xsg_tile_count(&tiles); t++) {
          const xsg_tile d = xsg_tile_decode(&tiles, t);
          bad += seen[t] != (d.mb * TM < off[E]);
        }
        XT_CHECK_MSG(bad == 0, "nb %d order %d clusters %d: %d bad", nb, order, cl, bad);
        XT_EQ_INT(idle, want_idle);
        const int total = xsg_pair_prefix_contig(pre, off, E, TM, nb);
        XT_CHECK(total <= xsg_pair_bound_contig(g.m_blocks, E, nb));
        XT_EQ_INT(total, (0 + 1 + 1 + 1 + 0 + 2 + 2 + 1 + 1) * nb);
      }
  /* The bound is tight for one-m-block segments and never below the truth. */
  XT_EQ_INT(xsg_pair_bound_contig(4, 4, 3), 4 * 3); /* 4 segments of 1 m-block: 4 pairs */
  XT_EQ_INT(xsg_pair_bound_contig(4, 1, 1), 3);     /* one segment of 4 would be 2: bound 3 */
  XT_EQ_INT(xsg_pair_bound_contig(0, 8, 5), 0);
}

/* v8's grid: whole clusters of two, at least one, no more clusters than pair positions. */
static void test_v8_ctas(void) {
  XT_EQ_INT(xsg_v8_ctas(0, 66, 1000), 132);
  XT_EQ_INT(xsg_v8_ctas(0, 66, 10), 20);
  XT_EQ_INT(xsg_v8_ctas(1, 66, 100), 2);
  XT_EQ_INT(xsg_v8_ctas(3, 66, 100), 2);
  XT_EQ_INT(xsg_v8_ctas(7, 66, 100), 6);
  XT_EQ_INT(xsg_v8_ctas(8, 66, 3), 6);
  XT_EQ_INT(xsg_v8_ctas(0, 0, 5), 2);
  XT_EQ_INT(xsg_v8_ctas(0, 66, 0), 0);
  XT_EQ_INT(xsg_v8_ctas(400, 66, 1000), 400); /* more than fit at once: correct, just queued */
}

/* v3 / v11's tail split (sched.h xsg_tail_slots, xsg_tail_position): every position's columns are
 * covered exactly once (a whole tile, or halves 0 and 1), each CTA holds at most one half, halves
 * appear only in the last partial wave and only when it is at most half the grid, and every whole
 * tile keeps its slot. */
static void test_tail_split(void) {
  int full = -1;
  XT_EQ_INT(xsg_tail_slots(4096, 132, &full), 4096 - 4 + 8); /* Qwen3-235B down E=64 T=512 */
  XT_EQ_INT(full, 4092);
  XT_EQ_INT(xsg_tail_slots(512, 132, &full), 512); /* E=8: 116 of 132 in the last wave */
  XT_EQ_INT(full, 512);
  XT_EQ_INT(xsg_tail_slots(264, 132, &full), 264); /* whole waves */
  XT_EQ_INT(full, 264);
  XT_EQ_INT(xsg_tail_slots(198, 132, &full), 264); /* 66 = half the grid: split */
  XT_EQ_INT(full, 132);
  XT_EQ_INT(xsg_tail_slots(199, 132, &full), 199); /* 67: not */
  XT_EQ_INT(xsg_tail_slots(60, 132, &full), 120);  /* one partial wave: all halves */
  XT_EQ_INT(full, 0);
  XT_EQ_INT(xsg_tail_slots(0, 132, &full), 0);
  int bad = 0;
  for (int ctas = 1; ctas <= 40; ctas++)
    for (int positions = 0; positions <= 200; positions++) {
      const int slots = xsg_tail_slots(positions, ctas, &full);
      int cover[200] = {0}; /* bit 0: half 0, bit 1: half 1, 4: whole */
      int halves_per_cta[40] = {0};
      const int rest = positions - positions / ctas * ctas;
      for (int k = 0; k < slots; k++) {
        int piece = 7;
        const int pos = xsg_tail_position(k, full, &piece);
        if (pos < 0 || pos >= positions) {
          bad++;
          continue;
        }
        if (piece < 0) {
          if (pos != k) bad++; /* whole tiles keep their slot */
          cover[pos] += 4;
        } else {
          cover[pos] += 1 << piece;
          halves_per_cta[k % ctas]++;
          if (pos < positions / ctas * ctas || 2 * rest > ctas) bad++;
        }
      }
      for (int i = 0; i < positions; i++)
        if (cover[i] != 4 && cover[i] != 3) bad++;
      for (int c = 0; c < ctas; c++)
        if (halves_per_cta[c] > 1) bad++;
    }
  XT_EQ_INT(bad, 0);
}

/* The L2 policy rule (sched.h xsg_l2_choice): which launches get which cache policy. */
static void test_l2_choice(void) {
  /* weights read once: every expert has at most one 128-row block */
  XT_EQ_INT(xsg_weights_once(2, 128, 64), 1);  /* MASKED, buffer of 128 rows per expert */
  XT_EQ_INT(xsg_weights_once(2, 129, 64), 0);  /* two m-blocks possible */
  XT_EQ_INT(xsg_weights_once(1, 8192, 64), 1); /* CONTIG, 128 rows per expert on average */
  XT_EQ_INT(xsg_weights_once(1, 8193, 64), 0);
  XT_EQ_INT(xsg_weights_once(1, 128, 0), 0); /* no experts: not grouped work */
  XT_EQ_INT(xsg_weights_once(0, 128, 1), 0); /* DENSE: never */
  int promo = -1;
  /* v7: B evict_first (1 << 2) at tiles of 16 and 32 tokens, nothing at 64; never 128 B */
  XT_EQ_INT(xsg_l2_choice(1, 0, 16, 2, 16, 8, 256, 132, 0, &promo), 4);
  XT_EQ_INT(promo, 0);
  XT_EQ_INT(xsg_l2_choice(1, 0, 32, 2, 32, 64, 2048, 132, 0, &promo), 4);
  XT_EQ_INT(xsg_l2_choice(1, 0, 64, 2, 64, 64, 2048, 132, 0, &promo), 0);
  XT_EQ_INT(promo, 0);
  /* the 128-row kernels, weights read once: B evict_first with 256-byte promotion when the tiles
   * fit in one wave (session 17), else A evict_last (2) with 128-byte promotion */
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 1, 8192, 64, 1024, 132, 0, &promo), 2);
  XT_EQ_INT(promo, 1);
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 2, 128, 8, 128, 132, 0, &promo), 4);
  XT_EQ_INT(promo, 0);
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 2, 128, 8, 133, 132, 0, &promo), 2); /* one tile past a wave */
  XT_EQ_INT(promo, 1);
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 1, 4096, 8, 128, 132, 0, &promo),
            0); /* T=512: four m-blocks */
  XT_EQ_INT(promo, 0);
  /* DENSE on the 128-row kernels: B evict_first with one m-block (session 29), else nothing */
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 0, 128, 1, 28, 132, 0, &promo), 4);
  XT_EQ_INT(promo, 0);
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 0, 128, 1, 224, 132, 1, &promo), 4); /* two waves, layer */
  XT_EQ_INT(promo, 0);
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 0, 129, 1, 28, 132, 0, &promo), 0);
  XT_EQ_INT(promo, 0);
  XT_EQ_INT(xsg_l2_choice(0, 0, 128, 1, 8192, 64, 1024, 132, 0, &promo), 0); /* v8 / v10 / v1 */
  XT_EQ_INT(promo, 0);
  /* in a layer's order: the one-wave launches keep B evict_first with 128-byte lines; the rest
   * is as back to back */
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 2, 128, 8, 128, 132, 1, &promo), 4);
  XT_EQ_INT(promo, 1);
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 2, 128, 8, 133, 132, 1, &promo), 2);
  XT_EQ_INT(promo, 1);
  XT_EQ_INT(xsg_l2_choice(0, 1, 128, 1, 4096, 8, 128, 132, 1, &promo), 0);
  XT_EQ_INT(promo, 0);
  XT_EQ_INT(xsg_l2_choice(1, 0, 16, 2, 16, 8, 256, 132, 1, &promo), 4); /* v7: unchanged */
  XT_EQ_INT(promo, 0);
  /* v14 (kernel 2): B evict_first with one m-block (M <= 128), else nothing; 256-byte lines */
  XT_EQ_INT(xsg_l2_choice(2, 0, 128, 0, 128, 0, 56, 132, 0, &promo), 4);
  XT_EQ_INT(promo, 0);
  XT_EQ_INT(xsg_l2_choice(2, 0, 128, 0, 1, 0, 20, 132, 1, &promo), 4);
  XT_EQ_INT(xsg_l2_choice(2, 0, 128, 0, 129, 0, 40, 132, 0, &promo), 0);
  XT_EQ_INT(promo, 0);
}

/* The bench's interval for a median: k from Pascal's triangle (an independent count), the
 * sample sorted, and the coverage it claims seen on simulated samples. */
static void test_median_interval(void) {
  double v[40], lo, hi;
  XT_NEAR(xsg_median_interval(NULL, 0, &lo, &hi), 0.0, 0);
  XT_CHECK(isnan(lo) && isnan(hi));
  /* n = 10: k = 2, coverage 1 - 2 (1 + 10) / 1024; n = 20: k = 6, 1 - 2 * 21700 / 2^20 */
  for (int i = 0; i < 10; i++)
    v[i] = 10 - i; /* 10 .. 1, reversed */
  XT_NEAR(xsg_median_interval(v, 10, &lo, &hi), 1.0 - 22.0 / 1024.0, 1e-12);
  XT_NEAR(lo, 2.0, 0);
  XT_NEAR(hi, 9.0, 0);
  for (int i = 0; i < 10; i++)
    XT_NEAR(v[i], i + 1.0, 0);
  for (int i = 0; i < 20; i++)
    v[i] = (i * 7) % 20; /* a permutation of 0..19 */
  XT_NEAR(xsg_median_interval(v, 20, &lo, &hi), 1.0 - 2.0 * 21700.0 / 1048576.0, 1e-12);
  XT_NEAR(lo, 5.0, 0);
  XT_NEAR(hi, 14.0, 0);
  /* n < 6: [min, max] and 1 - 2^(1-n), below 95 % */
  for (int i = 0; i < 5; i++)
    v[i] = 3.0 - i;
  XT_NEAR(xsg_median_interval(v, 5, &lo, &hi), 1.0 - 1.0 / 16.0, 1e-12);
  XT_CHECK(lo == -1.0 && hi == 3.0);
  /* every n up to 40: the largest k whose coverage is >= 95 %, by Pascal's triangle */
  static double pas[41][41];
  for (int n = 0; n <= 40; n++)
    for (int i = 0; i <= n; i++)
      pas[n][i] = i == 0 || i == n ? 1.0 : pas[n - 1][i - 1] + pas[n - 1][i];
  for (int n = 6; n <= 40; n++) {
    int k = 1;
    double cov = 0;
    for (int kk = 1; 2 * kk <= n + 1; kk++) {
      double tail = 0;
      for (int i = 0; i < kk; i++)
        tail += pas[n][i];
      const double c = 1.0 - 2.0 * tail / ldexp(1.0, n);
      if (c >= 0.95) k = kk, cov = c;
    }
    for (int i = 0; i < n; i++)
      v[i] = i;
    const double got = xsg_median_interval(v, n, &lo, &hi);
    XT_CHECK_MSG(fabs(got - cov) < 1e-12 && lo == k - 1 && hi == n - k,
                 "n %d: coverage %.6f [%g, %g], expected %.6f [%d, %d]", n, got, lo, hi, cov, k - 1,
                 n - k);
  }
  /* simulated: samples of 10 from a uniform law with median 0 */
  unsigned long long x = 12345;
  int hit = 0;
  const int trials = 40000;
  for (int t = 0; t < trials; t++) {
    for (int i = 0; i < 10; i++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      v[i] = (double)(x >> 11) / 9007199254740992.0 - 0.5;
    }
    xsg_median_interval(v, 10, &lo, &hi);
    hit += lo <= 0.0 && 0.0 <= hi;
  }
  XT_CHECK_MSG(fabs((double)hit / trials - (1.0 - 22.0 / 1024.0)) < 0.005, "covered %d of %d", hit,
               trials);
}

/* The timed rounds' order: a permutation every round, two rows alternating, and with more rows
 * no row behind the same predecessor in most rounds (what rotation did). */
static void test_round_order(void) {
  int o[40], seen[40], pred[40][40];
  memset(pred, 0, sizeof pred);
  for (int r = 0; r < 10; r++) {
    xsg_round_order(o, 31, r);
    memset(seen, 0, sizeof seen);
    for (int j = 0; j < 31; j++) {
      XT_CHECK(o[j] >= 0 && o[j] < 31 && !seen[o[j]]++);
      if (j > 0 && o[j] >= 0 && o[j] < 31 && o[j - 1] >= 0 && o[j - 1] < 31) pred[o[j]][o[j - 1]]++;
    }
  }
  int worst = 0;
  for (int a = 0; a < 31; a++)
    for (int b = 0; b < 31; b++)
      worst = pred[a][b] > worst ? pred[a][b] : worst;
  XT_CHECK_MSG(worst <= 3, "a row followed the same row in %d of 10 rounds", worst);
  for (int r = 0; r < 4; r++) {
    xsg_round_order(o, 2, r);
    XT_EQ_INT(o[0], r % 2);
    XT_EQ_INT(o[1], 1 - r % 2);
  }
  xsg_round_order(o, 1, 3);
  XT_EQ_INT(o[0], 0);
}

/* xsg_first_tiles: entry b is position b's tile (what the kernel's next_tile finds for slot b:
 * a whole tile, since the first wave is whole), packed and unpacked exactly; no entries where
 * the host cannot know the first tile or the packing would not fit. */
static void test_first_tiles(void) {
  static uint32_t f[XSG_FIRST_MAX];
  const int shapes[][2] = {{1, 200}, {200, 1}, {4, 16}, {32, 28}, {37, 5}, {64, 64}, {3, 70}};
  const int ctas_list[] = {1, 7, 78, 114, 132, XSG_FIRST_MAX};
  int checked = 0;
  for (int s = 0; s < 7; s++)
    for (int order = 0; order < 2; order++)
      for (int sw = 1; sw <= 9; sw += 4)
        for (int ci = 0; ci < 6; ci++) {
          const xsg_grid g = {1, shapes[s][0], shapes[s][1], order, sw};
          const int count = xsg_tile_count(&g), ctas = ctas_list[ci];
          const int n = xsg_first_tiles(&g, count, ctas, 0, 0, f);
          if (count < ctas) {
            XT_EQ_INT(n, 0);
            continue;
          }
          XT_EQ_INT(n, ctas);
          int whole = 0;
          const int slots = xsg_tail_slots(count, ctas, &whole);
          XT_CHECK(whole >= ctas && slots >= ctas);
          for (int b = 0; b < n; b++) {
            int piece = 0;
            const int pos = xsg_tail_position(b, whole, &piece);
            const xsg_tile want = xsg_tile_decode(&g, xsg_order_tile(&g, pos));
            const xsg_tile got = xsg_first_tile_of(f[b]);
            XT_EQ_INT(piece, -1);
            XT_EQ_INT(got.g, 0);
            XT_EQ_INT(got.mb, want.mb);
            XT_EQ_INT(got.nb, want.nb);
            checked++;
          }
        }
  XT_CHECK(checked > 10000);
  /* no entries: a caller's list, the compacted MASKED schedule, several groups, a partial first
   * wave, no CTAs, blocks past 16 bits, no band, more CTAs than entries */
  const xsg_grid g = {1, 8, 16, 0, 4}, g2 = {2, 8, 16, 0, 4}, big = {1, 70000, 2, 0, 8};
  XT_EQ_INT(xsg_first_tiles(&g, 128, 100, 1, 0, f), 0);
  XT_EQ_INT(xsg_first_tiles(&g, 128, 100, 0, 1, f), 0);
  XT_EQ_INT(xsg_first_tiles(&g2, 256, 100, 0, 0, f), 0);
  XT_EQ_INT(xsg_first_tiles(&g, 128, 129, 0, 0, f), 0);
  XT_EQ_INT(xsg_first_tiles(&g, 128, 0, 0, 0, f), 0);
  XT_EQ_INT(xsg_first_tiles(&big, 140000, 132, 0, 0, f), 0);
  const xsg_grid no_band = {1, 8, 16, 0, 0};
  XT_EQ_INT(xsg_first_tiles(&no_band, 128, 100, 0, 0, f), 0);
  const xsg_grid wide = {1, 200, 300, 0, 8};
  XT_EQ_INT(xsg_first_tiles(&wide, 60000, XSG_FIRST_MAX + 1, 0, 0, f), 0);
  XT_EQ_INT(xsg_first_tiles(&wide, 60000, XSG_FIRST_MAX, 0, 0, f), XSG_FIRST_MAX);
}

/* CONTIG's speculative start (gemm_v2.cu): the even-split guess is the expert that owns the
 * m-block whenever the offsets are the even split, and -1 where M is not split into whole tiles
 * per expert; xsg_contig_owns agrees with xsg_contig_expert on any non-decreasing offsets (empty
 * experts, rows before the first segment and past the last). */
static void test_contig_guess(void) {
  int32_t off[65];
  int checked = 0;
  for (int E = 1; E <= 64; E += 7)
    for (int per = 128; per <= 1024; per *= 2) {
      for (int e = 0; e <= E; e++)
        off[e] = e * per;
      for (int mb = 0; mb < E * per / 128; mb++) {
        XT_EQ_INT(xsg_contig_guess(mb, E * per, E, 128), xsg_contig_expert(off, E, mb * 128));
        checked++;
      }
    }
  XT_CHECK(checked > 1000);
  XT_EQ_INT(xsg_contig_guess(0, 1000, 8, 128), -1);   /* 125 rows each: not whole tiles */
  XT_EQ_INT(xsg_contig_guess(0, 64 * 8, 8, 128), -1); /* 64 rows each */
  XT_EQ_INT(xsg_contig_guess(0, 1025, 8, 128), -1);   /* M not a multiple of 8 */
  XT_EQ_INT(xsg_contig_guess(5, 3 * 256, 3, 128), 2);
  uint32_t x = 12345;
  int owned = 0, not_owned = 0;
  for (int trial = 0; trial < 2000; trial++) {
    const int E = 1 + trial % 40;
    off[0] = (int32_t)((x = x * 1664525u + 1013904223u) >> 29) * 128; /* 0 .. 7 blocks */
    for (int e = 0; e < E; e++) { /* a third of the experts empty */
      x = x * 1664525u + 1013904223u;
      off[e + 1] = off[e] + ((x >> 16) % 3 == 0 ? 0 : (int32_t)((x >> 20) % 5 + 1) * 128);
    }
    for (int row = 0; row < off[E] + 256; row += 128)
      for (int g = 0; g < E; g++) {
        const int own = xsg_contig_owns(off, g, row);
        XT_EQ_INT(own, xsg_contig_expert(off, E, row) == g);
        owned += own;
        not_owned += !own;
      }
  }
  XT_CHECK(owned > 1000 && not_owned > 1000);
}

static void test_cdiv(void) {
  XT_EQ_INT(xsg_cdiv(1, 128), 1);
  XT_EQ_INT(xsg_cdiv(128, 128), 1);
  XT_EQ_INT(xsg_cdiv(129, 128), 2);
  XT_EQ_INT(xsg_cdiv(0, 64), 0);
}

/* Input readiness (xs_gemm_ready): the groups a tile waits for are exactly those of its rows,
 * found by walking the rows one by one; with rows = tile_m and span = n_blocks, a first GEMM's
 * tile flags are the second GEMM's flag words (the contract gemm.h documents for chaining). */
static void test_ready_groups(void) {
  static const int Ms[] = {1, 63, 128, 129, 1000}, rowss[] = {1, 7, 64, 128, 333};
  int bad = 0;
  for (int mi = 0; mi < 5; mi++)
    for (int ri = 0; ri < 5; ri++)
      for (int masked = 0; masked < 2; masked++)
        for (int e = 0; e < (masked ? 3 : 1); e++)
          for (int row0 = 0; row0 < Ms[mi]; row0 += 37)
            for (int len = 0; len <= 130; len += 13) {
              const int M = Ms[mi], rows = rowss[ri];
              const int row_end = row0 + len < M ? row0 + len : M;
              /* the reference: each row's group, counting the groups of earlier experts */
              int per_expert = 0;
              for (int r = 0; r < M; r++)
                if (r % rows == 0) per_expert++;
              int lo = -1, hi = -1;
              for (int r = row0; r < row_end; r++) {
                const int gr = (masked ? e * per_expert : 0) + r / rows;
                if (lo < 0 || gr < lo) lo = gr;
                if (gr > hi) hi = gr;
              }
              int f0 = -5, f1 = -5;
              const int any = xsg_ready_groups(masked, M, rows, e, row0, row_end, &f0, &f1);
              if (any != (lo >= 0) || (any && (f0 != lo || f1 != hi))) bad++;
              if (xsg_ready_group_count(masked, M, masked ? 3 : 1, rows) !=
                  (masked ? 3 : 1) * per_expert)
                bad++;
            }
  XT_CHECK_MSG(bad == 0, "%d mismatches against the row walk", bad);

  /* chaining: MASKED L1 with E = 3, M = 300 (3 m-blocks of 128), 5 n-blocks; L2 waits with
   * rows = 128, span = 5 on L1's flags: the words of L2's tile rows are L1's tiles of them */
  const xsg_grid l1 = {3, 3, 5, 0, 8};
  int chain_bad = 0;
  for (int g = 0; g < 3; g++)
    for (int mb = 0; mb < 3; mb++) {
      const int row0 = mb * 128, row_end = row0 + 128 < 300 ? row0 + 128 : 300;
      int f0, f1;
      XT_CHECK(xsg_ready_groups(1, 300, 128, g, row0, row_end, &f0, &f1));
      if (f0 != f1) chain_bad++;
      for (int nb = 0; nb < 5; nb++)
        if (f0 * 5 + nb != xsg_tile_index(&l1, g, mb, nb)) chain_bad++;
    }
  XT_CHECK_MSG(chain_bad == 0, "%d words differ from L1's tile indices", chain_bad);

  /* epochs: ready when flag - expect, as a signed 32-bit difference, is >= 0 */
  XT_CHECK(xsg_ready_ok(5u, 5u));
  XT_CHECK(xsg_ready_ok(6u, 5u));
  XT_CHECK(!xsg_ready_ok(4u, 5u));
  XT_CHECK(!xsg_ready_ok(0u, 1u));
  XT_CHECK(xsg_ready_ok(0u, 0xffffffffu));  /* past a wrap */
  XT_CHECK(!xsg_ready_ok(0xffffffffu, 0u)); /* one short of 0 after a wrap */
}

/* v14's first units from the host: CTA b's entry names the tile of position b / S (the raster
 * order's) and slice b % S, exactly as the kernel's own decode would; no entries where the
 * conditions fail. */
static void test_splitk_first(void) {
  static uint32_t f[XSG_FIRST_MAX];
  const int shapes[][2] = {{1, 20}, {1, 128}, {4, 16}, {2, 66}, {200, 1}, {3, 5}, {256, 1}};
  const int splits[] = {1, 2, 3, 4, 7, 9, 14, 15, 16}; /* (16: slice 15, the field's top) */
  int checked = 0;
  for (int si = 0; si < 7; si++)
    for (int order = 0; order < 2; order++)
      for (int sw = 1; sw <= 9; sw += 4)
        for (int si2 = 0; si2 < 9; si2++) {
          const int S = splits[si2];
          const xsg_grid g = {1, shapes[si][0], shapes[si][1], order, sw};
          const int count = xsg_tile_count(&g);
          const long long units = (long long)count * S;
          const int ctas = units < XSG_FIRST_MAX ? (int)units : 132;
          const int n = xsg_splitk_first(&g, count, S, ctas, 0, f);
          XT_EQ_INT(n, ctas);
          for (int b = 0; b < n; b++) {
            const xsg_tile want = xsg_tile_decode(&g, xsg_order_tile(&g, b / S));
            int slice = -1;
            const xsg_tile got = xsg_splitk_first_of(f[b], &slice);
            XT_EQ_INT(got.g, 0);
            XT_EQ_INT(got.mb, want.mb);
            XT_EQ_INT(got.nb, want.nb);
            XT_EQ_INT(slice, b % S);
            checked++;
          }
        }
  XT_CHECK(checked > 5000);
  /* no entries: a caller's list, several groups, too many CTAs, fewer units than CTAs, S past
   * 16, m-blocks past 256, n-blocks past 2^16, no CTAs */
  const xsg_grid g = {1, 2, 16, 0, 4}, g2 = {2, 2, 16, 0, 4}, tall = {1, 257, 1, 0, 8},
                 wide = {1, 1, (1 << 16) + 1, 1, 8};
  XT_EQ_INT(xsg_splitk_first(&g, 32, 2, 64, 1, f), 0);
  XT_EQ_INT(xsg_splitk_first(&g2, 64, 1, 64, 0, f), 0);
  XT_EQ_INT(xsg_splitk_first(&g, 32, 8, XSG_FIRST_MAX + 1, 0, f), 0);
  XT_EQ_INT(xsg_splitk_first(&g, 32, 2, 65, 0, f), 0);
  XT_EQ_INT(xsg_splitk_first(&g, 32, 17, 132, 0, f), 0);
  XT_EQ_INT(xsg_splitk_first(&tall, 257, 1, 132, 0, f), 0);
  XT_EQ_INT(xsg_splitk_first(&wide, 132, 1, 132, 0, f), 0);
  XT_EQ_INT(xsg_splitk_first(&g, 32, 1, 0, 0, f), 0);
  XT_EQ_INT(xsg_splitk_first(&g, 32, 1, 32, 0, f), 32);
}

/* Split-K (v14): the slices cover the k-blocks once, in order, within one k-block of each other;
 * the fix-up's shares cover the pairs once; the workspace size; AUTO's split. */
static void test_splitk(void) {
  for (int kb = 1; kb <= 300; kb += (kb < 40 ? 1 : 37))
    for (int S = 1; S <= XSG_SPLITK_MAX; S++) {
      int next = 0, lo_n = kb, hi_n = 0;
      for (int s = 0; s < S; s++) {
        int a, b;
        xsg_splitk_range(kb, S, s, &a, &b);
        XT_CHECK_MSG(a == next && b >= a, "kb %d S %d slice %d: [%d, %d) after %d", kb, S, s, a, b,
                     next);
        next = b;
        lo_n = b - a < lo_n ? b - a : lo_n;
        hi_n = b - a > hi_n ? b - a : hi_n;
      }
      XT_CHECK_MSG(next == kb && hi_n - lo_n <= 1, "kb %d S %d: end %d, sizes %d..%d", kb, S, next,
                   lo_n, hi_n);
    }
  for (int groups = 16; groups <= 32; groups += 16)
    for (int S = 1; S <= XSG_SPLITK_MAX; S++) {
      int covered[32] = {0};
      for (int s = 0; s < S; s++) {
        int lo, hi;
        xsg_splitk_share(groups, S, s, &lo, &hi);
        for (int g = lo; g < hi; g++)
          covered[g]++;
      }
      for (int g = 0; g < groups; g++)
        XT_CHECK_MSG(covered[g] == 1, "groups %d S %d: group %d stored %d times", groups, S, g,
                     covered[g]);
      /* the fix-up's gathered sums fit the ring: every S without SiLU*mul, all but 13-15 with */
      XT_EQ_INT(xsg_splitk_fits(S, groups == 16, 256), groups == 32 || S < 13 || S == 16);
      XT_EQ_INT(xsg_splitk_fits(S, groups == 16, 128), 1);
    }
  XT_EQ_INT((long long)xsg_splitk_workspace_bytes(20, 1), 0);
  XT_EQ_INT((long long)xsg_splitk_workspace_bytes(20, 6),
            (long long)XSG_SPLITK_COUNTER_BYTES + 20ll * 6 * 128 * 256 * 4);
  /* AUTO on the H200's 132 SMs (sched.h's model, fitted to session 22's measurements, calls C,
   * J, N, O): Llama-3-70B TP8 QKV at 512 and 128 tokens and gate/up at 128 split; down at 128
   * tokens (59 MB of weights) one wave of 128 x 64 tiles (22.6 us against v2's 28.0, call O); O at
   * 128 and 256 tokens, gate/up and down at 256 one wave of v14 (its tiles beat v2's by 10-30 %);
   * 68 tiles of 128 x 256 and 136 of 128 x 128: none; 512 x 7168 x 2048 and the other long shapes:
   * none (AUTO's other versions) */
  int bn = 0;
  XT_CHECK(xsg_splitk_plan_w(512, 1280, 8192, 0, 132, 0, 0, &bn) == 3 && bn == 128);
  XT_CHECK(xsg_splitk_plan_w(128, 1280, 8192, 0, 132, 0, 0, &bn) >= 2);
  XT_CHECK(xsg_splitk_plan_w(128, 7168, 8192, 0, 132, 0, 0, &bn) >= 2);
  XT_CHECK(xsg_splitk_plan_w(128, 8192, 3584, 0, 132, 0, 0, &bn) == 1 && bn == 64);
  XT_CHECK(xsg_splitk_plan_w(128, 8192, 1024, 0, 132, 0, 0, &bn) == 1 && bn == 64);
  XT_CHECK(xsg_splitk_plan_w(256, 8192, 1024, 0, 132, 0, 0, &bn) == 1 && bn == 128);
  XT_CHECK(xsg_splitk_plan_w(256, 7168, 8192, 0, 132, 0, 0, &bn) == 1 && bn == 128);
  XT_EQ_INT(xsg_splitk_plan_w(2176, 1024, 8192, 0, 132, 0, 0, &bn), 0);
  XT_EQ_INT(xsg_splitk_plan_w(512, 7168, 2048, 0, 132, 0, 0, &bn), 0);
  XT_EQ_INT(xsg_splitk_plan_w(2048, 3072, 4096, 0, 132, 0, 0, &bn), 0);
  XT_EQ_INT(xsg_splitk_plan_w(8192, 8192, 8192, 0, 132, 0, 0, &bn), 0);
  /* the caller's S: the width that fits; none */
  XT_EQ_INT(xsg_splitk_plan_w(512, 1280, 8192, 0, 132, 6, 0, &bn), 6);
  XT_EQ_INT(bn, 256); /* 40 tiles of 128 x 128 x 6 > 132 */
  XT_EQ_INT(xsg_splitk_plan_w(512, 1280, 8192, 0, 132, 3, 0, &bn), 3);
  XT_EQ_INT(xsg_splitk_plan_w(512, 1280, 8192, 0, 132, 7, 0, &bn), 0);  /* 20 x 7 > 132 */
  XT_EQ_INT(xsg_splitk_plan_w(512, 2304, 8192, 1, 132, 13, 0, &bn), 0); /* 36 x 13: neither */
  for (int M = 1; M <= 1024; M += 127)
    for (int n = 256; n <= 8192; n += 256)
      for (int K = 64; K <= 16384; K += 960)
        for (int silu = 0; silu < 2; silu++) {
          const int S = xsg_splitk_plan_w(M, n, K, silu, 132, 0, 0, &bn);
          const int tiles = xsg_cdiv(M, 128) * xsg_cdiv(silu ? n / 2 : n, silu ? bn / 2 : bn);
          XT_CHECK_MSG(S == 0 || (S == 1 && bn < 256 && tiles <= 132) ||
                           (S >= 2 && S <= XSG_SPLITK_MAX && tiles * S <= 132 &&
                            xsg_cdiv(K, 64) / S >= XSG_SPLITK_MIN_KB &&
                            xsg_splitk_fits(S, silu, bn)),
                       "M %d n %d K %d silu %d: S %d bn %d", M, n, K, silu, S, bn);
        }
}

/* v7's split of K: S fills the 2 x sms streams, at most XSG_V7_KSPLIT_PLAN_MAX and 256 / bt, at
 * least XSG_V7_KSPLIT_MIN_KB k-blocks a slice, none below XSG_V7_KSPLIT_MIN_S; the caller's S
 * clamped to the k-blocks; the workspace's size. */
static void test_v7_ksplit(void) {
  XT_EQ_INT(xsg_v7_ksplit(20, 128, 16, 132, 0), 8); /* decode QKV 1280 wide: 13, capped */
  XT_EQ_INT(xsg_v7_ksplit(20, 128, 32, 132, 0), 8); /* 32 tokens */
  XT_EQ_INT(xsg_v7_ksplit(20, 128, 64, 132, 0), 4); /* 64 tokens: 256 / 64 */
  XT_EQ_INT(xsg_v7_ksplit(40, 128, 16, 132, 0), 6);
  XT_EQ_INT(xsg_v7_ksplit(112, 128, 16, 132, 0), 1); /* 7168 wide: S = 2 < 4 */
  XT_EQ_INT(xsg_v7_ksplit(66, 128, 16, 132, 0), 4);
  XT_EQ_INT(xsg_v7_ksplit(67, 128, 16, 132, 0), 1);
  XT_EQ_INT(xsg_v7_ksplit(20, 19, 16, 132, 0), 4);   /* 19 / 4 k-blocks */
  XT_EQ_INT(xsg_v7_ksplit(20, 15, 16, 132, 0), 1);   /* fewer than 4 x 4 k-blocks */
  XT_EQ_INT(xsg_v7_ksplit(4, 2, 16, 132, 5), 2);     /* the caller's S, clamped */
  XT_EQ_INT(xsg_v7_ksplit(4, 100, 64, 132, 7), 7);   /* the caller's S */
  XT_EQ_INT(xsg_v7_ksplit(200, 100, 16, 132, 3), 3); /* whatever the streams */
  XT_EQ_INT(xsg_v7_ksplit(0, 100, 16, 132, 0), 1);
  for (int tiles = 1; tiles <= 300; tiles += 7)
    for (int kb = 1; kb <= 200; kb += 13)
      for (int bt = 16; bt <= 64; bt *= 2) {
        const int S = xsg_v7_ksplit(tiles, kb, bt, 132, 0);
        XT_CHECK_MSG(S == 1 ||
                         (S >= XSG_V7_KSPLIT_MIN_S && S <= XSG_V7_KSPLIT_PLAN_MAX &&
                          S <= 256 / bt && tiles * S <= 264 && kb / S >= XSG_V7_KSPLIT_MIN_KB),
                     "tiles %d kb %d bt %d: S %d", tiles, kb, bt, S);
      }
  XT_EQ_INT((long long)xsg_v7_ksplit_bytes(20, 1, 16, 64), 0);
  XT_EQ_INT((long long)xsg_v7_ksplit_bytes(20, 13, 16, 64),
            (long long)XSG_SPLITK_COUNTER_BYTES + 20ll * 13 * 16 * 64 * 4);
  XT_CHECK(XSG_V7_KSPLIT_PLAN_MAX <= XSG_V7_KSPLIT_MAX);
}

int main(void) {
  XT_RUN(test_orders_are_permutations);
  XT_RUN(test_raster_locality);
  XT_RUN(test_contig_layout);
  XT_RUN(test_contig_layout_errors);
  XT_RUN(test_masked_compact);
  XT_RUN(test_masked_coords);
  XT_RUN(test_v7_tile_m);
  XT_RUN(test_v7_width);
  XT_RUN(test_auto_pick);
  XT_RUN(test_streams);
  XT_RUN(test_v7_split);
  XT_RUN(test_pairs_dense);
  XT_RUN(test_pairs_masked);
  XT_RUN(test_pairs_contig);
  XT_RUN(test_v8_ctas);
  XT_RUN(test_tail_split);
  XT_RUN(test_l2_choice);
  XT_RUN(test_median_interval);
  XT_RUN(test_round_order);
  XT_RUN(test_first_tiles);
  XT_RUN(test_contig_guess);
  XT_RUN(test_cdiv);
  XT_RUN(test_ready_groups);
  XT_RUN(test_splitk);
  XT_RUN(test_splitk_first);
  XT_RUN(test_v7_ksplit);
  return XT_END();
}
