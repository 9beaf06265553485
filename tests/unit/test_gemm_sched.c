/* test_gemm_sched.c — the GEMM tile scheduler and grouped-layout index math, on the CPU. */
#include <string.h>

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

static void test_cdiv(void) {
  XT_EQ_INT(xsg_cdiv(1, 128), 1);
  XT_EQ_INT(xsg_cdiv(128, 128), 1);
  XT_EQ_INT(xsg_cdiv(129, 128), 2);
  XT_EQ_INT(xsg_cdiv(0, 64), 0);
}

int main(void) {
  XT_RUN(test_orders_are_permutations);
  XT_RUN(test_raster_locality);
  XT_RUN(test_contig_layout);
  XT_RUN(test_contig_layout_errors);
  XT_RUN(test_masked_compact);
  XT_RUN(test_v7_tile_m);
  XT_RUN(test_streams);
  XT_RUN(test_cdiv);
  return XT_END();
}
