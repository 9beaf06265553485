/* gemm.cu — the GEMM engine's host API (xstage/gemm.h): argument checks, the version
 * dispatcher, tilings, tensor maps and launches. Kernels: gemm_v1.cu, gemm_v2.cu (v2-v6),
 * gemm_v7.cu (v7, v9), gemm_v8.cu, gemm_v10.cu.
 */
#include <string.h>

#include <mutex>

#include "core/internal.h"
#include "kernels/gemm/gemm_internal.h"

namespace {

struct device_info {
  int ok;          /* 1 once queried */
  int sms;         /* multiprocessors */
  int hopper;      /* compute capability 9.x */
  int v8_clusters; /* v8's clusters of two that fit at once; 0 until v8's first launch */
  /* v14's clusters of S (2..8) CTAs of width 128 / 64 that fit at once (splitk_cluster, which
   * queries them at its first use); 0 where none or the query failed */
  int sk_ready;
  int sk_clusters[2 * 9];
  /* v7's clusters of C (2..8) CTAs of 16 / 32 / 64 tokens x 64 / 128 B rows that fit at once
   * (v7_cluster, at its first use) */
  int v7_ready;
  int v7_clusters[3 * 2 * 9];
};
device_info g_dev = {0, 0, 0, 0, 0, {0}, 0, {0}};

xs_result query_device(device_info* out) {
  if (!g_dev.ok) {
    int count = 0, dev = 0, major = 0, sms = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
      cudaGetLastError();
      return xsi_set_error(XS_ERR_NO_DEVICE, "gemm: no CUDA device");
    }
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return xsi_set_error(XS_ERR_CUDA, "gemm: device attributes: %s",
                           cudaGetErrorString(cudaGetLastError()));
    g_dev.sms = sms;
    g_dev.hopper = major == 9;
    g_dev.v8_clusters = 0;
    g_dev.ok = 1;
  }
  *out = g_dev;
  return XS_OK;
}

/* Whether v14's split S of `positions` tiles of width bn can run as clusters of its S slices
 * (the fix-up in distributed shared memory, no workspace): tiles of 128 x 128 or 128 x 64 (their
 * sums and gathered shares fit the ring), S <= 8 and the clusters fit at once. */
int splitk_cluster(int bn, int S, int positions) {
  if (S < 2 || S > 8 || bn > 128 || xsg_probe.splitk_global == 1 || !g_dev.ok || !g_dev.hopper)
    return 0;
  if (!g_dev.sk_ready) { /* (the first split that could run as clusters) */
    for (int w = 0; w < 2; w++)
      for (int s = 2; s <= 8; s++) {
        int n = 0;
        if (xsg_splitk_max_clusters(128 >> w, s, &n) != cudaSuccess) n = 0;
        g_dev.sk_clusters[w * 9 + s] = n;
      }
    cudaGetLastError();
    g_dev.sk_ready = 1;
  }
  return positions <= g_dev.sk_clusters[(bn == 128 ? 0 : 1) * 9 + S];
}

/* Whether it does where a workspace can be had: S <= 4. Measured on the H200 (session 24,
 * docs/results/gemm-h200.md): through the workspace the fix-up was 0.6-1.6 us faster at S = 8
 * (128 x 1280 x 8192: 13.9 against 15.0; 1-64 x 1280 x 8192: 13.0-13.5 against 14.4-14.7), level
 * at S = 4, and clusters 0.9-1.4 us faster at S = 2 on 56-64 tiles (40.4 against 41.8 on
 * 128 x 7168 x 8192). Without a workspace (a capture on a fresh stream) any S that fits runs as
 * clusters. xsg_probe.splitk_global: 1 never clusters, 2 clusters wherever they fit. */
int splitk_cluster_preferred(int bn, int S, int positions) {
  return (S <= 4 || xsg_probe.splitk_global == 2) && splitk_cluster(bn, S, positions);
}

/* v7's split of S slices over `tiles` tiles of tile_m x bw in clusters (session 25): C = S / 2
 * CTAs per tile, every tile's cluster on the GPU at once (one unit per tile stream, no
 * workspace); 0: none fits. An exact S (exact != 0) runs as clusters only if it is even and fits;
 * otherwise the largest C <= S / 2 that fits (S = 2 C, at least XSG_V7_KSPLIT_MIN_S).
 * xsg_probe.v7_kcluster = 1: never. */
int v7_cluster(int tile_m, int bw, int S, int tiles, int exact) {
  if (S < 4 || tiles < 1 || xsg_probe.v7_kcluster == 1 || !g_dev.ok || !g_dev.hopper) return 0;
  if (!g_dev.v7_ready) {
    for (int m = 0; m < 3; m++)
      for (int w = 0; w < 2; w++)
        for (int c = 2; c <= 8; c++) {
          int n = 0;
          if (xsg_v7_max_clusters(16 << m, 64 << w, c, &n) != cudaSuccess) n = 0;
          g_dev.v7_clusters[(m * 2 + w) * 9 + c] = n;
        }
    cudaGetLastError();
    g_dev.v7_ready = 1;
  }
  const int m = tile_m == 16 ? 0 : tile_m == 32 ? 1 : 2, w = bw == 64 ? 0 : 1;
  const int* n = &g_dev.v7_clusters[(m * 2 + w) * 9];
  if (exact) return S % 2 == 0 && S / 2 <= 8 && tiles <= n[S / 2] ? S / 2 : 0;
  for (int c = S / 2 < 8 ? S / 2 : 8; 2 * c >= XSG_V7_KSPLIT_MIN_S; c--)
    if (tiles <= n[c]) return c;
  return 0;
}

/* Whether it does where a workspace can be had: not by default. Measured on the H200 (session
 * 25, calls I-K, 1-32 x 1280 x 8192): the clusters' hand-off is faster (0.5 against 1.2 us) but
 * a cluster launch starts 0.5-0.7 us later; at the same S = 8 (32 tokens, clusters of 4) they ran
 * 0.690 of cuBLAS against the workspace's 0.733, and 20 tiles' clusters fit only up to C = 5
 * (S = 10 on 100 CTAs: 0.4-0.9 us slower than the workspace's S = 13 on 130). They run where no
 * workspace can be had (a capture on a fresh stream), instead of no split.
 * xsg_probe.v7_kcluster = 2: clusters wherever they fit. */
int v7_cluster_preferred(int tile_m, int bw, int S, int tiles, int exact) {
  return xsg_probe.v7_kcluster == 2 ? v7_cluster(tile_m, bw, S, tiles, exact) : 0;
}

} // namespace

/* rule(bn, S, positions) on the current device (0 without one) */
static int on_device(int (*rule)(int, int, int), int bn, int S, int positions) {
  device_info dev;
  if (query_device(&dev) != XS_OK) {
    xsi_clear_error();
    return 0;
  }
  return rule(bn, S, positions);
}

int xsg_splitk_uses_clusters(int bn, int S, int positions) {
  return on_device(splitk_cluster_preferred, bn, S, positions);
}

int xsg_splitk_fits_clusters(int bn, int S, int positions) {
  return on_device(splitk_cluster, bn, S, positions);
}

int xsg_v7_uses_clusters(int tile_m, int bw, int S, int tiles) {
  device_info dev;
  if (query_device(&dev) != XS_OK) {
    xsi_clear_error();
    return 0;
  }
  return v7_cluster_preferred(tile_m, bw, S, tiles, 1);
}

int xsg_v7_fits_clusters(int tile_m, int bw, int S, int tiles, int exact) {
  device_info dev;
  if (query_device(&dev) != XS_OK) {
    xsi_clear_error();
    return 0;
  }
  return v7_cluster(tile_m, bw, S, tiles, exact);
}

namespace {

int aligned16(const void* p) {
  return ((uintptr_t)p & 15) == 0;
}

/* Why v2-v13 cannot run this problem, or NULL when they can. */
const char* hopper_unsupported(const xs_gemm_args* a, const xs_gemm_epilogue* e) {
  const int n_out = e->act == XS_GEMM_ACT_SILU_MUL ? a->N / 2 : a->N;
  if (a->K % 8) return "K must be a multiple of 8 (TMA row strides are 16-byte multiples)";
  if (a->N % 8 || n_out % 8) return "N (and N/2 with SiLU*mul) must be a multiple of 8";
  if (!aligned16(a->A) || !aligned16(a->B)) return "A and B must be 16-byte aligned";
  if (e->store == XS_GEMM_STORE_LOCAL && !aligned16(a->C)) return "C must be 16-byte aligned";
  return NULL;
}

/* Output tile of version v: tm x tn (tn with SiLU*mul: output columns). `rows`: the rows per
 * group (xs_gemm_args.M), which sets v7's tile height (v9: always 128 tokens; v10: 64 rows);
 * v7_width: v7's B rows per tile (xsg_v7_width; 128 for every other version). */
void tile_shape(xs_gemm_version v, int silu, int rows, int v7_width, int* tm, int* tn) {
  *tm = v == XS_GEMM_V1 || v == XS_GEMM_V10 ? 64 : v == XS_GEMM_V7 ? xsg_v7_tile_m(rows) : 128;
  int bn = v == XS_GEMM_V1   ? 64
           : v == XS_GEMM_V2 ? 128
           : v == XS_GEMM_V3 || v == XS_GEMM_V8 || v == XS_GEMM_V10 || v == XS_GEMM_V11 ||
                   v == XS_GEMM_V12 || v == XS_GEMM_V13 || v == XS_GEMM_V14
               ? 256
           : v == XS_GEMM_V4 ? 224
           : v == XS_GEMM_V5 ? 192
           : v == XS_GEMM_V6 ? 208
           : v == XS_GEMM_V7 ? v7_width          /* 128 or 64 B rows */
                             : 128;              /* v9: 128 B rows = two wgmma M = 64 halves */
  *tn = (silu && v != XS_GEMM_V1) ? bn / 2 : bn; /* v1 keeps 64 output columns either way */
}

int narrow_silu_map_ok(void);

void fill_tiling(xs_gemm_tiling* t, const xs_gemm_args* a, int silu, xs_gemm_version v,
                 int sms = 0) {
  t->version = v;
  const int n_out = silu ? a->N / 2 : a->N;
  t->groups = a->layout == XS_GEMM_GROUPED_MASKED ? a->experts : 1;
  int width = 128;
  if (v == XS_GEMM_V7) {
    const int units = t->groups * xsg_cdiv(a->M, xsg_v7_tile_m(a->M));
    width = xsg_v7_width(n_out, silu, units, sms, !silu || narrow_silu_map_ok());
    if (xsg_probe.v7_width == 64 || xsg_probe.v7_width == 128) width = xsg_probe.v7_width;
  }
  tile_shape(v, silu, a->M, width, &t->tile_m, &t->tile_n);
  t->m_blocks = xsg_cdiv(a->M, t->tile_m);
  t->n_blocks = xsg_cdiv(n_out, t->tile_n);
  t->count = t->groups * t->m_blocks * t->n_blocks;
  t->splits = 1;
}

/* The MASKED counts on the host, or NULL (not given, another layout, or args from a caller
 * whose xs_gemm_args ends before the field). */
const int32_t* args_counts_host(const xs_gemm_args* a) {
  if (a->layout != XS_GEMM_GROUPED_MASKED ||
      a->size < offsetof(xs_gemm_args, m_counts_host) + sizeof(a->m_counts_host))
    return NULL;
  return a->m_counts_host;
}

/* The input readiness of args (xs_gemm_ready), or NULL (none: flags NULL, or args from a caller
 * whose xs_gemm_args ends before the field). */
const xs_gemm_ready* args_ready(const xs_gemm_args* a) {
  if (a->size < offsetof(xs_gemm_args, ready) + sizeof(a->ready) || !a->ready.flags) return NULL;
  return &a->ready;
}

/* The split-K fields (xs_gemm_args.split_k, workspace, workspace_bytes): zeros for callers whose
 * args end before them. */
int args_split_k(const xs_gemm_args* a) {
  return a->size < offsetof(xs_gemm_args, split_k) + sizeof(a->split_k) ? 0 : a->split_k;
}
void* args_workspace(const xs_gemm_args* a, size_t* bytes) {
  if (a->size < offsetof(xs_gemm_args, workspace_bytes) + sizeof(a->workspace_bytes)) {
    *bytes = 0;
    return NULL;
  }
  *bytes = a->workspace_bytes;
  return a->workspace;
}

/* What runs around the GEMM (xs_gemm_context): ALONE for callers whose args end before it. */
xs_gemm_context args_context(const xs_gemm_args* a) {
  if (a->size < offsetof(xs_gemm_args, context) + sizeof(a->context)) return XS_GEMM_CONTEXT_ALONE;
  return a->context;
}

xs_result check_args(const xs_gemm_args* a, const xs_gemm_epilogue* e) {
  XSI_ARG(a != NULL, "gemm: args is NULL");
  /* NOTE: the struct before session 9 ended at m_counts; such callers stay valid. */
  XSI_ARG(a->size >= offsetof(xs_gemm_args, m_counts_host),
          "gemm: args.size %zu < %zu (use XS_GEMM_ARGS_INITIALIZER)", a->size,
          offsetof(xs_gemm_args, m_counts_host));
  XSI_ARG(a->layout >= XS_GEMM_DENSE && a->layout <= XS_GEMM_GROUPED_MASKED,
          "gemm: unknown layout %d", (int)a->layout);
  XSI_ARG(a->version >= XS_GEMM_AUTO && a->version <= XS_GEMM_V14, "gemm: unknown version %d",
          (int)a->version);
  XSI_ARG(a->M >= 0 && a->N >= 1 && a->K >= 1, "gemm: need M >= 0, N >= 1, K >= 1 (got %d, %d, %d)",
          a->M, a->N, a->K);
  XSI_ARG(a->A && a->B, "gemm: A and B must be device pointers");
  XSI_ARG(a->layout == XS_GEMM_DENSE || a->experts >= 1, "gemm: grouped layouts need experts >= 1");
  XSI_ARG(a->layout != XS_GEMM_GROUPED_CONTIG || a->m_offsets, "gemm: CONTIG needs m_offsets");
  XSI_ARG(a->layout != XS_GEMM_GROUPED_MASKED || a->m_counts, "gemm: MASKED needs m_counts");
  XSI_ARG(e->store == XS_GEMM_STORE_LOCAL || e->store == XS_GEMM_STORE_MAP,
          "gemm: unknown store kind %d", (int)e->store);
  XSI_ARG(e->act == XS_GEMM_ACT_NONE || e->act == XS_GEMM_ACT_SILU_MUL, "gemm: unknown act %d",
          (int)e->act);
  XSI_ARG(e->act != XS_GEMM_ACT_SILU_MUL || a->N % 2 == 0,
          "gemm: SiLU*mul needs an even N (got %d)", a->N);
  XSI_ARG(e->store != XS_GEMM_STORE_LOCAL || a->C, "gemm: STORE_LOCAL needs C");
  XSI_ARG(e->store != XS_GEMM_STORE_MAP || e->dst_map, "gemm: STORE_MAP needs dst_map");
  const int32_t* hc = args_counts_host(a);
  for (int g = 0; hc && g < a->experts; g++)
    XSI_ARG(hc[g] >= 0 && hc[g] <= a->M, "gemm: m_counts_host[%d] = %d is outside [0, M = %d]", g,
            hc[g], a->M);
  /* NOTE: TMA coordinates and tile indices are 32-bit. */
  const int64_t rows = (int64_t)a->M * (a->layout == XS_GEMM_GROUPED_MASKED ? a->experts : 1);
  XSI_ARG(rows < (1ll << 31) &&
              (int64_t)a->N * (a->layout == XS_GEMM_DENSE ? 1 : a->experts) < (1ll << 31),
          "gemm: more than 2^31 rows");
  XSI_ARG(args_context(a) == XS_GEMM_CONTEXT_ALONE || args_context(a) == XS_GEMM_CONTEXT_LAYER,
          "gemm: unknown context %d", (int)args_context(a));
  XSI_ARG(args_split_k(a) >= 0 && args_split_k(a) <= XSG_SPLITK_MAX,
          "gemm: split_k %d not in 0..%d", args_split_k(a), XSG_SPLITK_MAX);
  XSI_ARG(args_split_k(a) < 2 || a->version == XS_GEMM_AUTO || a->version == XS_GEMM_V14 ||
              a->version == XS_GEMM_V7,
          "gemm: split_k %d needs version AUTO, v7 or v14 (got v%d)", args_split_k(a),
          (int)a->version);
  size_t ws_bytes = 0;
  const void* ws = args_workspace(a, &ws_bytes);
  XSI_ARG(!ws || ((uintptr_t)ws & 255) == 0, "gemm: workspace must be 256-byte aligned");
  if (const xs_gemm_ready* r = args_ready(a)) {
    XSI_ARG(r->rows >= 1 && r->span >= 1, "gemm: ready.rows (%d) and ready.span (%d) must be >= 1",
            r->rows, r->span);
    XSI_ARG(r->timeout_ns > 0, "gemm: ready.timeout_ns must be > 0");
    XSI_ARG(r->status != NULL, "gemm: ready.status is NULL (a timeout is recorded there)");
    const int masked = a->layout == XS_GEMM_GROUPED_MASKED;
    XSI_ARG(xsg_ready_group_count(masked, a->M, masked ? a->experts : 1, r->rows) * r->span <
                (1ll << 31),
            "gemm: ready: more than 2^31 flag words");
  }
  return XS_OK;
}

/* v14's tiling: tiles of 128 x bn B rows, S slices of K each (1: unsplit; sched.h
 * xsg_splitk_plan). */
void v14_tiling(xs_gemm_tiling* t, const xs_gemm_args* a, int silu, int S, int bn) {
  t->tile_n = silu ? bn / 2 : bn;
  t->n_blocks = xsg_cdiv(silu ? a->N / 2 : a->N, t->tile_n);
  t->count = t->groups * t->m_blocks * t->n_blocks;
  t->splits = S;
}

/* v7's split of K (sched.h xsg_v7_ksplit) into t->splits: DENSE only, the caller's split_k
 * (>= 2; 1: none) or the plan's (0); at most XSG_SPLITK_MAX_POSITIONS tiles (the counters). */
xs_result v7_split(xs_gemm_tiling* t, const xs_gemm_args* a, int split_k, int sms, int act_silu) {
  t->splits = 1;
  if (a->layout != XS_GEMM_DENSE || split_k == 1) return XS_OK;
  if (t->count > XSG_SPLITK_MAX_POSITIONS) {
    if (split_k >= 2)
      return xsi_set_error(XS_ERR_INVALID_ARG,
                           "gemm v7: split_k %d of %d tiles: the split counts at most %d tiles",
                           split_k, t->count, XSG_SPLITK_MAX_POSITIONS);
    return XS_OK;
  }
  t->splits = xsg_v7_ksplit(t->count, xsg_cdiv(a->K, 64), t->tile_m, sms, split_k);
  /* in clusters where preferred (the probe's; the plan's S rounded down to an even one) */
  const int bw = (act_silu ? 2 : 1) * t->tile_n;
  const int C = v7_cluster_preferred(t->tile_m, bw, t->splits, t->count, split_k >= 2);
  if (C) t->splits = 2 * C;
  return XS_OK;
}

/* Resolve the version for (args, epilogue); fills the tiling. */
xs_result resolve(xs_gemm_tiling* t, const xs_gemm_args* a, const xs_gemm_epilogue* e) {
  XSI_CHECK(check_args(a, e));
  const int silu = e->act == XS_GEMM_ACT_SILU_MUL;
  if (a->version == XS_GEMM_V1) {
    fill_tiling(t, a, silu, XS_GEMM_V1);
    return XS_OK;
  }
  device_info dev;
  XSI_CHECK(query_device(&dev));
  const char* why = hopper_unsupported(a, e);
  if (!why && !dev.hopper) why = "the GPU is not a Hopper (sm_90a) part";
  /* NOTE: v8 walks CONTIG through a per-expert prefix of tile pairs in shared memory (segments
   * need not hold an even number of m-blocks, and a pair must not straddle two experts). */
  if (!why && a->version == XS_GEMM_V8 && a->layout == XS_GEMM_GROUPED_CONTIG &&
      a->experts > XSG_MASKED_MAX_EXPERTS)
    why = "CONTIG with more than 256 experts (the pair table holds 256)";
  const int ready = args_ready(a) != NULL;
  if (!why && ready && a->version != XS_GEMM_AUTO && a->version != XS_GEMM_V3)
    why = "input readiness (args.ready) runs on v1 and v3 only";
  const int split_k = args_split_k(a);
  if (!why && (a->version == XS_GEMM_V14 || split_k >= 2) && a->layout != XS_GEMM_DENSE)
    why = "split-K (v14, split_k >= 2) runs DENSE problems only";
  if (!why && split_k >= 2 && ready) why = "split-K (split_k >= 2) has no input readiness";
  /* v14's split and tile width: the caller's S, or the model's (sched.h xsg_splitk_plan). */
  int sk_bn = 256;
  const int sk_auto = xsg_splitk_plan_w(a->M, a->N, a->K, silu, dev.sms, split_k >= 2 ? split_k : 0,
                                        xsg_probe.splitk_bn, &sk_bn);
  /* AUTO, a dense problem of at most 32 rows (a decode step; session 25): v7 with its split of
   * K (sched.h xsg_v7_ksplit), below. From 33 to 64 rows the rule before it (v14 where v7 has few
   * tiles, v7 unsplit elsewhere): at 64 x 1280 x 8192 v14 ran 13.6 us, v7's best split 15.4
   * (call A). xsg_probe.v7_ksplit = 1 restores that rule at any M. */
  const int v7_dense =
      a->layout == XS_GEMM_DENSE && !ready && a->M <= 32 && xsg_probe.v7_ksplit != 1;
  if (!why && split_k >= 2 && sk_auto == 0 &&
      (a->version == XS_GEMM_V14 || (a->version == XS_GEMM_AUTO && !v7_dense))) {
    const int n_out = silu ? a->N / 2 : a->N, mb = xsg_cdiv(a->M, 128);
    return xsi_set_error(
        XS_ERR_INVALID_ARG,
        "gemm v14: split_k %d does not fit: every CTA must be resident (S x tiles <= %d SMs; %d "
        "tiles of 128x256, %d of 128x128, %d of 128x64) and its share of the fix-up fit in shared "
        "memory (SiLU*mul: not 13-15 on 128x256 tiles)",
        split_k, dev.sms, mb * xsg_cdiv(n_out, silu ? 128 : 256),
        mb * xsg_cdiv(n_out, silu ? 64 : 128), mb * xsg_cdiv(n_out, silu ? 32 : 64));
  }
  if (sk_auto == 0) sk_bn = xsg_probe.splitk_bn ? xsg_probe.splitk_bn : 256;
  if (a->version != XS_GEMM_AUTO) {
    if (why) return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm v%d: %s", (int)a->version, why);
    fill_tiling(t, a, silu, a->version, dev.sms);
    if (a->version == XS_GEMM_V7) XSI_CHECK(v7_split(t, a, split_k, dev.sms, silu));
    /* (split_k 1: no split, on the plan's or the probe's tile) */
    if (a->version == XS_GEMM_V14)
      v14_tiling(t, a, silu, split_k == 1 || sk_auto == 0 ? 1 : sk_auto, sk_bn);
    return XS_OK;
  }
  if (why) {
    if (split_k >= 2) return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm split_k %d: %s", split_k, why);
    fill_tiling(t, a, silu, XS_GEMM_V1);
    return XS_OK;
  }
  /* AUTO, v14 (session 22): a dense problem of one wave or less runs v14 where its plan predicts
   * it (split-K, or one wave unsplit) faster than v2 / v3 (or the caller asks for a split); not
   * with input readiness (v3's waits).
   * At most 64 rows (v7's range) only where v7 has few tiles too: fewer 64-column blocks than a
   * quarter of the SMs (20 of 132 measured below; 64, e.g. N = 4096, not measured: v7). Call E
   * (H200, back to back, against cuBLAS): x 1280 x 8192 at M = 1, 16, 64: v14 0.53 / 0.49 / 0.56,
   * v7 0.23 / 0.22 / 0.26; x 7168 x 8192: v14 0.76 / 0.77 / 0.71, v7 0.92 / 0.93 / 0.85. */
  if (v7_dense) { /* (above) */
    fill_tiling(t, a, silu, XS_GEMM_V7, dev.sms);
    XSI_CHECK(v7_split(t, a, split_k, dev.sms, silu));
    return XS_OK;
  }
  const int v7_few = (silu ? a->N / 2 : a->N) / 64 < dev.sms / 4;
  if (a->layout == XS_GEMM_DENSE && !ready &&
      (split_k >= 2 || (split_k == 0 && sk_auto >= 1 && (a->M > 64 || v7_few)))) {
    fill_tiling(t, a, silu, XS_GEMM_V14, dev.sms);
    v14_tiling(t, a, silu, sk_auto, sk_bn);
    return XS_OK;
  }
  /* AUTO, few rows per group (tuning round 5, not yet measured): v7 when every group has at
   * most 64 rows (DENSE or MASKED M <= 64). Such a problem is a weight stream: T rows per group
   * make T FLOP per byte of B, <= 64 against an H200 ridge of ~180-225 FLOP/byte (780-989
   * TFLOP/s over ~4.4 TB/s of reads), so what counts is how fast B moves, and v7 moves it with
   * the least work around it: token tiles of 16/32/64 rows (v2-v6 multiply 128: at 16 tokens
   * 8x the tensor work and shared-memory operand traffic), two tile streams per SM (DeepSeek-V3
   * gate/up E=8 T=16: 256 streams of 128 B rows over all 132 SMs, against v3's 128 tiles on
   * 128 SMs). Not for CONTIG: its segments are 128-row aligned and every row of them is
   * computed, so v7 would run two 64-token tiles per segment, each reading the expert's
   * weights. Not above 64 rows: from 65 to 128 a 128-row tile wastes little, and v7's 64-token
   * tiles would read B twice (a 128-token tile would move as many A bytes as B bytes). */
  if (a->layout != XS_GEMM_GROUPED_CONTIG && a->M <= 64 && !ready) {
    fill_tiling(t, a, silu, XS_GEMM_V7, dev.sms);
    return XS_OK;
  }
  /* AUTO: the tiling whose busiest CTA computes least, per-tile speed included (sched.h
   * xsg_auto_pick; session 9 moved it there, CPU-tested, and refitted v6's weight):
   *   cost(v) = waves(v) x tile columns(v) x weight(v),  waves = ceil(tiles / SMs)
   * (all tiles are 128 rows; at a given K a tile's time grows with its columns). The weights
   * are the relative time per tile column at equal waves, measured on the H200 in run 2
   * (docs/results/gemm-h200.md): v3 100 (128x256, 4 stages), v4 105 (128x224: 8192^3, 17.9 vs
   * 16 waves, 735 vs 770 TFLOP/s averaged over the two passes), v2 112 (128x128, 6 stages:
   * 8192^3 683 vs 770 at the same waves x columns). With them the model picks the fastest
   * measured version on all four dense shapes (v3, v3, v2, v4) and on 43 of the 48 contiguous
   * grouped cases; on the other 5 it loses 0-1.1 % (within the noise). Ties go to v3, then v4.
   * NOTE: run 2's rule (least waves x columns, dense ties with >= 8 v3 waves to v2) sent the
   * long dense shapes to v2, 0.80-0.85 of cuBLAS where v3 made 0.93-1.00; MASKED E=64 T=512
   * went to v2 too (601 vs 686 TFLOP/s for contig v3). MASKED counts the whole buffer (the
   * real counts are on the device): for skewed counts that means many waves, where v3 wins.
   * v5 (128x192, round 4, dense only): weight 106, not yet measured. Run 3 (interleaved) at
   * 2048x3072x4096 gave per busiest-CTA column v3 100, v4 102, v2 117; the shared-memory
   * traffic per FMA (wgmma reads 2/BN + 1/32 bytes, TMA writes 2/BN + 1/64) puts 128x192 at
   * 1.08 of v3's, v4 at 1.04 and v2 at 1.25, so v5 sits between v4 and v2. At 2048x3072x4096
   * v5 runs 2 waves of 192 columns (256 tiles on 132 SMs) against v2's 3 of 128: the same
   * columns per busiest CTA, fewer bytes per flop; AUTO takes v5 there for any weight < 112, and
   * keeps v3 at 8192^3 for any weight > 101.6 (v5 21 waves x 192 vs v3 16 x 256).
   * v6 (128x208, tuning round 4, measured in run 5; grouped only): weight 107 until session 9,
   * an estimate (the shared-memory bytes per FMA above put 128x208 at 1.058 of v3's against
   * v4's 1.036: 105 x 1.058 / 1.036); now 101, fitted to runs 33-37 (sched.h xsg_auto_pick,
   * which also takes v6 over v3 in a few grouped cases now, each measured faster). It exists
   * for the grouped case that missed 0.80 in runs 3-4, Qwen3-235B gate/up E=8 T=512 Zipf
   * (34 m-blocks, 1536 SiLU output columns): v4 476 tiles = 3.61 waves -> 4 x 224 = 896
   * columns per busiest CTA, v6 510 tiles = 3.86 -> 4 x 208 = 832 (v3 4 x 256, v5 5 x 192,
   * v2 7 x 128: all >= 896). On the bench's 48 grouped cases (contig and masked) v6 replaces
   * v4 in 9 layouts, each at 208 / 224 of v4's columns and the same waves, for any weight
   * from 105 to 113 (session 4's reasoning; below 105 it takes some of v3's). Dense
   * problems do not weigh it (at 4096x28672x8192 its 34 waves x 208 would undercut v3's
   * 28 x 256 for a weight < 101.3, unmeasured). Grouped problems do not weigh v5 (measured on
   * them first). */
  /* v8 (2-CTA clusters with B multicast, tuning round 6), v9 (v7's two tile streams with
   * 128-token tiles, tuning round 7; measured slower than v3 in run 10) and v10 (v3's wgmma on
   * 64 x 256 tiles in two streams, tuning round 8) are not weighed: explicit only until their
   * rows in `xstage bench gemm` show a gain over v3. */
  /* The 128-row blocks with work: MASKED counts the whole buffer unless the caller gave the
   * counts on the host (m_counts_host: exact, or representative for a captured graph). With
   * skewed counts the buffer overstates the tiles and the waves: run 37, Qwen3-235B gate/up E=8
   * T=128 Zipf (max 377 of 1024 tokens), AUTO took v6 (0.0910 ms) where v3 ran 0.0678. */
  int64_t m_blocks = xsg_cdiv(a->M, 128);
  const int32_t* host_counts = args_counts_host(a);
  if (a->layout == XS_GEMM_GROUPED_MASKED) {
    if (host_counts) {
      m_blocks = 0;
      for (int g = 0; g < a->experts; g++)
        m_blocks += xsg_cdiv(host_counts[g], 128);
    } else {
      m_blocks *= a->experts;
    }
  }
  const int v =
      xsg_auto_pick(m_blocks, silu ? a->N / 2 : a->N, silu, dev.sms, a->layout != XS_GEMM_DENSE);
  /* v3's kernel, whatever the cost model says: with input readiness (only v3 has the waits:
   * gemm_v2.cu, WAIT), and in a layer's order on grouped problems (xs_gemm_context LAYER: a GEMM
   * launched right after another function of ours ran 3-10 % slower than after the same one,
   * session 21, bench_gemm_chain --layer --ctx-version 3 / 11, so consecutive GEMMs share it). */
  const int force_v3 =
      ready || (args_context(a) == XS_GEMM_CONTEXT_LAYER && a->layout != XS_GEMM_DENSE);
  fill_tiling(t, a, silu, force_v3 ? XS_GEMM_V3 : (xs_gemm_version)v);
  /* v3's tile without SiLU*mul runs as v11 (session 5): once its shared-memory pointers stayed
   * shared (no generic stores, no spills), v11's deferred last pass made it 1-2 % faster than
   * v3 on every non-SiLU grouped case at 512 tokens per expert and 0.4-0.8 % on the long dense
   * shapes, in the same interleaved rounds (docs/results/gemm-h200.md, "Session 5"); with
   * SiLU*mul (one staging pass either way) it is v3's speed, and v3 stays. Both split a small
   * last wave into column halves (session 13, sched.h xsg_tail_slots); with it v11 stayed
   * 0.3-0.4 % ahead of v3 at E=64 T=512 in the bench (run 62). */
  /* ... except where v3 is forced (above). */
  if (t->version == XS_GEMM_V3 && !silu && !force_v3) t->version = XS_GEMM_V11;
  return XS_OK;
}

/* The library's split-K workspaces (xs_gemm_args.workspace NULL): one per device and stream,
 * sized for the most units a launch may have (one per SM), allocated stream-ordered and zeroed
 * on first use, never freed (a few tens of MB per stream). */
struct ws_entry {
  int dev;
  cudaStream_t stream;
  void* ptr;
};
ws_entry g_ws[32];
int g_ws_n = 0;
std::mutex g_ws_mu;

/* The library's workspace for `stream` on the current device with at least `need` bytes, or
 * NULL in *out when there is none and none may be made now (the stream is being captured, or
 * the table is full). */
xs_result library_workspace(void** out, cudaStream_t stream, size_t need, int sms) {
  *out = NULL;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess)
    return xsi_set_error(XS_ERR_CUDA, "gemm: cudaGetDevice: %s",
                         cudaGetErrorString(cudaGetLastError()));
  /* sized for `sms` units (sched.h xsg_splitk_workspace_bytes) */
  const size_t full = (size_t)XSG_SPLITK_COUNTER_BYTES + (size_t)sms * XSG_SPLITK_TILE_BYTES;
  if (need > full) return XS_OK; /* (cannot happen: units <= SMs) */
  std::lock_guard<std::mutex> lock(g_ws_mu);
  for (int i = 0; i < g_ws_n; i++)
    if (g_ws[i].dev == dev && g_ws[i].stream == stream) {
      *out = g_ws[i].ptr;
      return XS_OK;
    }
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &cap) != cudaSuccess) {
    cudaGetLastError();
    return XS_OK;
  }
  if (cap != cudaStreamCaptureStatusNone || g_ws_n == (int)(sizeof g_ws / sizeof g_ws[0]))
    return XS_OK;
  void* p = NULL;
  cudaError_t e = cudaMallocAsync(&p, full, stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(p, 0, full, stream);
  if (e != cudaSuccess)
    return xsi_set_error(XS_ERR_CUDA, "gemm: split-K workspace (%zu bytes): %s", full,
                         cudaGetErrorString(e));
  g_ws[g_ws_n++] = {dev, stream, p};
  *out = p;
  return XS_OK;
}

/* A split's workspace of `need` bytes: the caller's (refused when smaller) or, without one, the
 * library's for the stream (NULL while it is being captured). `version` names the caller. */
xs_result split_workspace(void** ws, const xs_gemm_args* a, cudaStream_t s, size_t need, int sms,
                          int version) {
  size_t have = 0;
  *ws = args_workspace(a, &have);
  if (!*ws) return library_workspace(ws, s, need, sms);
  if (have < need)
    return xsi_set_error(XS_ERR_INVALID_ARG,
                         "gemm v%d: workspace_bytes %zu < %zu (xs_gemm_workspace_size)", version,
                         have, need);
  return XS_OK;
}

/* v7's split of K at launch (xsg_params.ksplit): positions = tiles x S, the workspace's
 * counters and sums (the caller's, or the library's for the stream); where none can be had (the
 * stream is being captured) in clusters of C CTAs where they fit (S = 2 C: the caller's S if even,
 * else AUTO's rounded down), else AUTO's split is dropped and an explicit split_k refused. */
xs_result v7_split_launch(xsg_params* p, xs_gemm_tiling* t, const xs_gemm_args* a,
                          const xs_gemm_epilogue& epi, void* stream, int max_ctas) {
  const int S = t->splits;
  const int bw = (epi.act == XS_GEMM_ACT_SILU_MUL ? 2 : 1) * t->tile_n;
  /* in clusters (v7_cluster: the whole grid at once; not under a smaller max_ctas) where
   * preferred (the resolved S), or where no workspace can be had (below) */
  auto clusters = [&](int c) {
    if (!c || (max_ctas && max_ctas < p->positions * c)) return false;
    t->splits = 2 * c;
    p->ksplit = 2 * c;
    p->ksplit_cluster = c;
    p->positions *= 2 * c;
    p->split = 0;
    return true;
  };
  if (clusters(v7_cluster_preferred(t->tile_m, bw, S, p->positions, 1))) return XS_OK;
  XSI_ARG(p->positions <= XSG_SPLITK_MAX_POSITIONS,
          "gemm v7: split_k %d of a list of %d tiles: the split counts at most %d", S, p->positions,
          XSG_SPLITK_MAX_POSITIONS);
  const size_t need = (size_t)xsg_v7_ksplit_bytes(p->positions, S, t->tile_m, bw);
  device_info dev;
  XSI_CHECK(query_device(&dev));
  const size_t lib = (size_t)XSG_SPLITK_COUNTER_BYTES + (size_t)dev.sms * XSG_SPLITK_TILE_BYTES;
  size_t have = 0;
  if (!args_workspace(a, &have) && need > lib && args_split_k(a) >= 2)
    return xsi_set_error(XS_ERR_UNSUPPORTED,
                         "gemm v7: split_k %d needs a workspace of %zu bytes, more than the "
                         "library's %zu: give one (xs_gemm_args.workspace)",
                         S, need, lib);
  void* ws = NULL;
  XSI_CHECK(split_workspace(&ws, a, (cudaStream_t)stream, need, dev.sms, 7));
  if (!ws) { /* (being captured) clusters: the caller's S if it fits, else the most that does */
    const int explicit_s = args_split_k(a) >= 2;
    if (clusters(v7_cluster(t->tile_m, bw, S, p->positions, explicit_s))) return XS_OK;
    if (explicit_s)
      return xsi_set_error(XS_ERR_UNSUPPORTED,
                           "gemm v7: split_k %d needs a workspace: none is given, the library "
                           "makes none while the stream is being captured, and its clusters do "
                           "not fit (an even S of at most 16 whose tiles' clusters fit at once)",
                           S);
    t->splits = 1;
    return XS_OK;
  }
  p->ksplit = S;
  p->ksplit_counters = (uint32_t*)ws;
  p->ksplit_partial = (float*)((uint8_t*)ws + XSG_SPLITK_COUNTER_BYTES);
  p->positions *= S;
  p->split = 0; /* no split tile within a CTA */
  return XS_OK;
}

typedef CUresult (*encode_fn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                              const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                              const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

xs_result get_encode(encode_fn* out) {
  static encode_fn fn = NULL;
  if (!fn) {
    void* p = NULL;
    cudaDriverEntryPointQueryResult q;
    /* NOTE: through the runtime: the library does not link libcuda (CI machines have none). */
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !p)
      return xsi_set_error(XS_ERR_CUDA, "gemm: cuTensorMapEncodeTiled not available");
    fn = (encode_fn)p;
  }
  *out = fn;
  return XS_OK;
}

/* A bf16 tensor map of `rank` dimensions (dims, byte strides of dims 1.., box), 128B swizzle, L2
 * promotion `promo` (the table's index: 0 256 B, the default; 3 128 B), which the probe may
 * override (xsg_probe.l2_promo). `what` and the first three dims name the tensor in the error. */
xs_result encode_bf16(CUtensorMap* m, const void* base, int rank, const cuuint64_t* dims,
                      const cuuint64_t* strides, const cuuint32_t* box, const char* what,
                      int promo = 0) {
  encode_fn enc = NULL;
  XSI_CHECK(get_encode(&enc));
  const cuuint32_t elem[5] = {1, 1, 1, 1, 1};
  static const CUtensorMapL2promotion promos[5] = {
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B};
  const int pi = xsg_probe.l2_promo >= 1 && xsg_probe.l2_promo <= 4 ? xsg_probe.l2_promo
                 : promo >= 0 && promo <= 4                       ? promo
                                                                  : 0;
  const CUresult r = enc(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, (cuuint32_t)rank, (void*)base, dims,
                         strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                         CU_TENSOR_MAP_SWIZZLE_128B, promos[pi], CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return xsi_set_error(XS_ERR_CUDA, "gemm: tensor map for %s (%llu x %llu x %llu): error %d",
                         what, (unsigned long long)dims[0], (unsigned long long)dims[1],
                         (unsigned long long)dims[2], (int)r);
  return XS_OK;
}

/* A 3-D bf16 tensor map {inner, rows, batch} with a box {64, box_rows, 1}, 128B swizzle and L2
 * promotion `promo` (encode_bf16). */
xs_result make_map(CUtensorMap* m, const void* base, int64_t inner, int64_t rows, int64_t batch,
                   int box_rows, const char* what, int promo = 0) {
  const cuuint64_t dims[3] = {(cuuint64_t)inner, (cuuint64_t)rows, (cuuint64_t)batch};
  const cuuint64_t strides[2] = {(cuuint64_t)inner * 2, (cuuint64_t)(inner * rows * 2)};
  const cuuint32_t box[3] = {64, (cuuint32_t)box_rows, 1};
  return encode_bf16(m, base, 3, dims, strides, box, what, promo);
}

/* v7's narrow SiLU*mul tile: B [batch][N = 2I rows][K] as the 5-D tensor {K, 8 rows, gate | up,
 * I / 8 row groups, batch} (strides K, I x K, 8 K, N x K elements) with a box {64, 8, 2, 4, 1}:
 * one load brings gate rows 8j..8j+7, then the matching up rows, for 4 groups j, i.e. 32 gate
 * rows interleaved by 8 with their up rows (each 8-row run one 128B-swizzle atom), so that a
 * consumer thread's wgmma rows r and r + 8 are the gate and up row of one output column. Rows
 * past I (group index >= I / 8) read as zeros. Needs I % 8 == 0 (hopper_unsupported asks
 * N / 2 % 8 == 0 with SiLU*mul). */
xs_result make_map_silu32(CUtensorMap* m, const void* base, int64_t K, int64_t N, int64_t batch) {
  const int64_t I = N / 2;
  const cuuint64_t dims[5] = {(cuuint64_t)K, 8, 2, (cuuint64_t)(I / 8), (cuuint64_t)batch};
  const cuuint64_t strides[4] = {(cuuint64_t)K * 2, (cuuint64_t)(I * K * 2),
                                 (cuuint64_t)(8 * K * 2), (cuuint64_t)(N * K * 2)};
  const cuuint32_t box[5] = {64, 8, 2, 4, 1};
  return encode_bf16(m, base, 5, dims, strides, box, "B (5-D, K x 8 x 2 x I/8 x batch)");
}

/* Whether the driver encodes make_map_silu32's map (strides not in increasing order), tried
 * once per process on a dummy address; without it v7 keeps 128-row tiles with SiLU*mul. */
int narrow_silu_map_ok(void) {
  static int ok = -1;
  if (ok < 0) {
    alignas(64) CUtensorMap m;
    ok = make_map_silu32(&m, (const void*)(uintptr_t)0x10000, 512, 1024, 2) == XS_OK;
    xsi_clear_error();
  }
  return ok;
}

} // namespace

extern "C" xs_result xs_gemm_tiles(xs_gemm_tiling* out, const xs_gemm_args* args, xs_gemm_act act) {
  XSI_ARG(out != NULL, "gemm: out is NULL");
  xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  e.act = act;
  e.store = XS_GEMM_STORE_MAP; /* C may be NULL here: the tiling does not depend on it */
  e.dst_map = (const xs_gemm_tile_dst*)16;
  XSI_CHECK(resolve(out, args, &e));
  xsi_clear_error();
  return XS_OK;
}

extern "C" xs_result xs_gemm_workspace_size(size_t* bytes, const xs_gemm_args* args,
                                            xs_gemm_act act) {
  XSI_ARG(bytes != NULL, "gemm: bytes is NULL");
  xs_gemm_tiling t = {};
  XSI_CHECK(xs_gemm_tiles(&t, args, act));
  const int bn = act == XS_GEMM_ACT_SILU_MUL ? 2 * t.tile_n : t.tile_n;
  *bytes = t.version == XS_GEMM_V7
               ? (v7_cluster_preferred(t.tile_m, bn, t.splits, t.count, 1)
                      ? 0
                      : (size_t)xsg_v7_ksplit_bytes(t.count, t.splits, t.tile_m, bn))
           : t.version == XS_GEMM_V14 && !splitk_cluster_preferred(bn, t.splits, t.count)
               ? (size_t)xsg_splitk_workspace_bytes(t.count, t.splits)
               : 0;
  return XS_OK;
}

extern "C" xs_result xs_gemm_run(const xs_gemm_args* a, xs_gemm_epilogue epi,
                                 xs_gemm_schedule sched, void* stream) {
  xs_gemm_tiling t = {};
  XSI_CHECK(resolve(&t, a, &epi));
  XSI_ARG(sched.order >= XS_GEMM_ORDER_RASTER_M && sched.order <= XS_GEMM_ORDER_LIST,
          "gemm: unknown order %d", (int)sched.order);
  XSI_ARG(sched.swizzle >= 0 && sched.swizzle <= 64, "gemm: swizzle %d not in 0..64",
          sched.swizzle);
  XSI_ARG(sched.order != XS_GEMM_ORDER_LIST || (sched.tiles && sched.ntiles >= 0),
          "gemm: ORDER_LIST needs tiles and ntiles >= 0");
  XSI_ARG(sched.max_ctas >= 0, "gemm: max_ctas < 0");
  XSI_ARG(sched.pdl >= 0 && sched.pdl <= 2, "gemm: pdl %d not in 0..2", sched.pdl);
  XSI_ARG(sched.pdl != 2 || args_ready(a),
          "gemm: pdl 2 (overlap with the previous kernel) needs args.ready (the inputs' flags)");
  /* NOTE: v8's CTAs take tile pairs (two vertically adjacent tiles sharing B); a caller's list
   * of single tiles has no pairing. */
  if (t.version == XS_GEMM_V8 && sched.order == XS_GEMM_ORDER_LIST)
    return xsi_set_error(XS_ERR_UNSUPPORTED, "gemm v8: ORDER_LIST (v8 schedules tile pairs)");

  xsg_params p;
  memset(&p, 0, sizeof p);
  p.grid.groups = t.groups;
  p.grid.m_blocks = t.m_blocks;
  p.grid.n_blocks = t.n_blocks;
  p.grid.order = sched.order == XS_GEMM_ORDER_RASTER_N ? 1 : 0;
  p.grid.swizzle = xsg_band(sched.swizzle, sched.order == XS_GEMM_ORDER_RASTER_M,
                            t.version == XS_GEMM_V10, a->layout == XS_GEMM_GROUPED_CONTIG,
                            t.m_blocks, a->experts);
  p.layout = a->layout;
  p.M = a->M;
  p.N = a->N;
  p.K = a->K;
  p.n_out = epi.act == XS_GEMM_ACT_SILU_MUL ? a->N / 2 : a->N;
  p.experts = a->layout == XS_GEMM_DENSE ? 1 : a->experts;
  p.tile_m = t.tile_m;
  p.tile_n = t.tile_n;
  p.A = (const uint16_t*)a->A;
  p.B = (const uint16_t*)a->B;
  p.C = (uint16_t*)a->C;
  p.m_offsets = a->m_offsets;
  p.m_counts = a->m_counts;
  if (const xs_gemm_ready* r = args_ready(a)) p.ready = *r;
  p.epi = epi;
  p.pdl = sched.pdl;
  /* v7 / v9: a CTA's odd tile is shared by its two streams (sched.h xsg_v7_split_position;
   * session 8); the probe can turn it off. */
  p.split = xsg_probe.v7_split != 1;
  /* v3 and v11: the last partial wave in column halves (sched.h xsg_tail_slots; session 13), not
   * with tile flags (each tile's flag is raised once, by the CTA that stored all of it). */
  p.tail_split = !epi.tile_flags && xsg_probe.tail != 1;
  p.order_list = sched.order == XS_GEMM_ORDER_LIST ? sched.tiles : NULL;
  p.positions = sched.order == XS_GEMM_ORDER_LIST ? sched.ntiles : t.count;
  /* NOTE: the compacted masked schedule is built by the kernel from the device counts, so the
   * launch keeps fixed arguments (CUDA graphs); the grid stays sized for the full buffer. v7
   * (and v9, v10) runs two tile streams per CTA and keeps one CTA per SM: a schedule of fewer than
   * 2 x SMs positions then runs on min(SMs, positions) CTAs, one stream on each before any runs
   * two. */
  p.compact = t.version != XS_GEMM_V1 && a->layout == XS_GEMM_GROUPED_MASKED &&
              sched.order != XS_GEMM_ORDER_LIST && a->experts <= XSG_MASKED_MAX_EXPERTS;
  if (t.version == XS_GEMM_V8) {
    /* Pair positions: DENSE and MASKED (whole buffer) walk the pair grid; CONTIG always (and
     * MASKED up to 256 experts) walks the pair prefix the kernel builds (an upper bound here). */
    p.compact = p.compact || a->layout == XS_GEMM_GROUPED_CONTIG;
    p.positions = a->layout == XS_GEMM_GROUPED_CONTIG
                      ? xsg_pair_bound_contig(t.m_blocks, a->experts, t.n_blocks)
                      : t.groups * xsg_cdiv(t.m_blocks, 2) * t.n_blocks;
  }
  if (p.positions == 0) {
    xsi_clear_error();
    return XS_OK;
  }
  device_info dev;
  XSI_CHECK(query_device(&dev));
  if (t.version == XS_GEMM_V7 && t.splits > 1)
    XSI_CHECK(v7_split_launch(&p, &t, a, epi, stream, sched.max_ctas));
  /* L2 cache policies of the TMA loads (sched.h xsg_l2_choice; gemm_internal.h). v7 with tiles
   * of 16 or 32 tokens streams its weights evict_first: session 10 (bench_gemm_probe_v7 --hints,
   * with the weights rotated over 4 copies as well as re-read), 0.7-4.4 % less time per launch
   * on 9 of 12 cases and 0.1-1.3 % more on the other 3 (E=64); with 64-token tiles 0.1-5.9 %
   * less at E=8 but 5-7 % more at E=64, so it loads without a policy there. Where each
   * expert's weights are read once (128 tokens per expert) the 128-row kernels stream the
   * weights evict_first with 256-byte lines when every tile fits in one wave (session 17: 1.4-4.8
   * % less time than with 128-byte lines at E=8 in every regime), else keep the tokens evict_last
   * with 128-byte lines (E=64: 1.0-4.6 % less than no policy; B evict_first there cost up to 3.6
   * % at E=16-32 on the long-K shapes; 256-byte lines there measured from 4 % slower to 2.5 %
   * faster depending on the GPU, layout and regime) (src/kernels/gemm/README.md, "Tuning rounds
   * 16 and 23"). v14, and v2-v6 / v11-v13 on a DENSE problem, with one m-block (M <= 128)
   * stream the weights evict_first, so that they do not push the tokens (re-read by every CTA)
   * out of L2 (session 29: v14 1.8 us less per launch at 128 x 7168 x 8192 with SiLU*mul, 6 us
   * more at 256 tokens, two m-blocks; v4 1-1.3 % less at 128 x 28672 x 8192). The probe may
   * override either. */
  const int hopper = t.version == XS_GEMM_V2 || t.version == XS_GEMM_V3 ||
                     t.version == XS_GEMM_V4 || t.version == XS_GEMM_V5 ||
                     t.version == XS_GEMM_V6 || t.version == XS_GEMM_V11 ||
                     t.version == XS_GEMM_V12 || t.version == XS_GEMM_V13;
  int promo128 = 0;
  p.l2_hint = xsg_l2_choice(t.version == XS_GEMM_V7    ? 1
                            : t.version == XS_GEMM_V14 ? 2
                                                       : 0,
                            hopper, t.tile_m, (int)a->layout, a->M, a->experts, t.count, dev.sms,
                            args_context(a) == XS_GEMM_CONTEXT_LAYER, &promo128);
  if (xsg_probe.l2_hint) p.l2_hint = xsg_probe.l2_hint & 15;
  const int promo = promo128 ? 3 : 0; /* encode_bf16's table: 3 = 128 B, 0 = 256 B */
  int ctas = sched.max_ctas ? sched.max_ctas : (t.version == XS_GEMM_V1 ? 4 : 1) * dev.sms;
  if (ctas > p.positions) ctas = p.positions;
  if (t.version == XS_GEMM_V7 && !sched.max_ctas) ctas = xsg_v7_ctas(p.positions, dev.sms);
  if (p.ksplit_cluster) ctas = p.positions / 2; /* a cluster per tile, a unit per stream */
  if (t.version == XS_GEMM_V8) {
    if (!g_dev.v8_clusters) {
      /* NOTE: clusters need both CTAs co-resident (one per SM here): the occupancy query says
       * how many fit; a failed query falls back to one cluster per two SMs. */
      int n = 0;
      if (xsg_v8_max_clusters(&n) != cudaSuccess || n < 1) n = dev.sms / 2;
      cudaGetLastError();
      g_dev.v8_clusters = n > 0 ? n : 1;
    }
    ctas = xsg_v8_ctas(sched.max_ctas, g_dev.v8_clusters, p.positions);
  }

  cudaStream_t s = (cudaStream_t)stream;
  cudaError_t err;
  const int64_t rows = a->M, batch_a = a->layout == XS_GEMM_GROUPED_MASKED ? a->experts : 1;
  const int64_t batch_b = a->layout == XS_GEMM_DENSE ? 1 : a->experts;
  if (t.version == XS_GEMM_V14) {
    /* Split-K: one unit (position, slice) per CTA, all resident at once (the fix-up's barrier
     * waits for a tile's other units), so S x positions <= min(SMs, max_ctas). AUTO's split
     * shrinks to fit (a list of fewer tiles, a smaller max_ctas); the caller's S must fit. */
    const int cap = sched.max_ctas && sched.max_ctas < dev.sms ? sched.max_ctas : dev.sms;
    xsg_splitk sk = {t.splits, NULL, NULL, xsg_probe.splitk, 0, 128, 0};
    const int explicit_s = args_split_k(a) >= 2;
    if (sk.splits > 1 && (int64_t)p.positions * sk.splits > cap) {
      if (explicit_s)
        return xsi_set_error(XS_ERR_INVALID_ARG,
                             "gemm v14: split_k %d x %d tiles = %lld CTAs > %d (the SMs or "
                             "max_ctas: every unit must be resident at once)",
                             sk.splits, p.positions, (long long)p.positions * sk.splits, cap);
      sk.splits = cap / p.positions > 1 ? cap / p.positions : 1;
    }
    const int bn = epi.act == XS_GEMM_ACT_SILU_MUL ? 2 * t.tile_n : t.tile_n;
    /* a tile's slices as one cluster, meeting in distributed shared memory, where the clusters
     * fit at once and S <= 4 (splitk_cluster_preferred); else through the workspace, or as
     * clusters of the same S where none can be had. AUTO's S is the plan's either way. */
    sk.cluster = splitk_cluster_preferred(bn, sk.splits, p.positions);
    if (sk.splits > 1 && !sk.cluster) {
      const size_t need = (size_t)xsg_splitk_workspace_bytes(p.positions, sk.splits);
      void* ws = NULL;
      XSI_CHECK(split_workspace(&ws, a, s, need, dev.sms, 14));
      if (!ws && explicit_s && !splitk_cluster(bn, sk.splits, p.positions))
        return xsi_set_error(XS_ERR_UNSUPPORTED,
                             "gemm v14: split_k %d needs a workspace: none is given and the "
                             "library makes none while the stream is being captured",
                             sk.splits);
      if (!ws) { /* (being captured) the same S as clusters where they fit; else AUTO's split
                  * shrinks to the most S that does */
        int S = sk.splits < 8 ? sk.splits : 8;
        while (S >= 2 && !splitk_cluster(bn, S, p.positions))
          S--;
        sk.splits = S >= 2 ? S : 1;
        sk.cluster = S >= 2;
      }
      if (sk.splits > 1 && !sk.cluster) {
        sk.counters = (uint32_t*)ws;
        sk.partial = (uint8_t*)ws + XSG_SPLITK_COUNTER_BYTES;
      }
    }
    ctas = sk.splits > 1 ? p.positions * sk.splits : (p.positions < cap ? p.positions : cap);
    CUtensorMap ma, mb;
    /* B in one box of bn rows per k-block where no tile straddles N (no SiLU*mul: its halves are
     * the gate and the up rows); else two halves (one wholly past N is skipped). */
    sk.b_box =
        epi.act != XS_GEMM_ACT_SILU_MUL && a->N % bn == 0 && !xsg_probe.splitk_halves ? bn : bn / 2;
    /* A in a box of M rows (rounded up to 8) where M < 128: no zero fill of the tile's rows past
     * M, only stale rows (they feed rows >= M, never stored) */
    sk.a_rows = a->M < 128 && !xsg_probe.splitk_a_full ? (a->M + 7) / 8 * 8 : 128;
    XSI_CHECK(make_map(&ma, a->A, a->K, rows, 1, sk.a_rows, "A"));
    XSI_CHECK(make_map(&mb, a->B, a->K, a->N, 1, sk.b_box, "B"));
    if (xsg_probe.v14_trace == 1) p.trace = xsg_probe.trace;
    /* each CTA's first unit from here (sched.h xsg_splitk_first) */
    xsg_first first;
    first.n = xsg_probe.first == 1 ? 0
                                   : xsg_splitk_first(&p.grid, p.positions, sk.splits, ctas,
                                                      p.order_list != NULL, first.t);
    err = xsg_launch_splitk(&p, &sk, &first, bn, &ma, &mb, ctas, s);
  } else if (t.version == XS_GEMM_V1) {
    err = xsg_launch_v1(&p, ctas, s);
  } else if (t.version == XS_GEMM_V8) {
    /* v3's maps: A {64, 128}, B halves {64, 128} (each CTA of a cluster loads one for both), C
     * {64, 64} for the TMA store. */
    CUtensorMap ma, mb, mc;
    memset(&mc, 0, sizeof mc);
    XSI_CHECK(make_map(&ma, a->A, a->K, rows, batch_a, 128, "A"));
    XSI_CHECK(make_map(&mb, a->B, a->K, a->N, batch_b, 128, "B"));
    if (epi.store == XS_GEMM_STORE_LOCAL)
      XSI_CHECK(make_map(&mc, a->C, p.n_out, rows, batch_a, 64, "C"));
    err = xsg_launch_v8(&p, &ma, &mb, &mc, ctas, s);
  } else if (t.version == XS_GEMM_V10) {
    /* 64-row A tiles, v3's B halves of 128 rows, C {64, 64} for the TMA store. */
    CUtensorMap ma, mb, mc;
    memset(&mc, 0, sizeof mc);
    XSI_CHECK(make_map(&ma, a->A, a->K, rows, batch_a, 64, "A"));
    XSI_CHECK(make_map(&mb, a->B, a->K, a->N, batch_b, 128, "B"));
    if (epi.store == XS_GEMM_STORE_LOCAL)
      XSI_CHECK(make_map(&mc, a->C, p.n_out, rows, batch_a, 64, "C"));
    err = xsg_launch_v10(&p, &ma, &mb, &mc, ctas, s);
  } else if (t.version == XS_GEMM_V7 || t.version == XS_GEMM_V9) {
    /* Token tiles of tile_m rows (v9: 128), B in 64-row halves; no C map (stores from
     * registers). */
    CUtensorMap ma, mb;
    XSI_CHECK(make_map(&ma, a->A, a->K, rows, batch_a, t.tile_m, "A"));
    if (t.version == XS_GEMM_V7 && epi.act == XS_GEMM_ACT_SILU_MUL && t.tile_n == 32)
      XSI_CHECK(make_map_silu32(&mb, a->B, a->K, a->N, batch_b));
    else
      XSI_CHECK(make_map(&mb, a->B, a->K, a->N, batch_b, 64, "B"));
    if (xsg_probe.v7_mode == 1) p.trace = xsg_probe.trace;
    err = xsg_launch_v7(&p, &ma, &mb, ctas, s);
  } else {
    int tm_unused, bn;
    tile_shape(t.version, 0, a->M, 128, &tm_unused, &bn); /* B rows per tile: 128/256/224/192/208 */
    int mode = t.version == XS_GEMM_V11   ? 1
               : t.version == XS_GEMM_V12 ? 2
               : t.version == XS_GEMM_V13 ? 3
                                          : 0;
    if (t.version == XS_GEMM_V3 && xsg_probe.v3_mode) {
      mode = xsg_probe.v3_mode;
      p.trace = xsg_probe.trace;
      p.trace_cap = xsg_probe.trace_cap;
      p.probe_delay_ns = xsg_probe.delay_ns;
    }
    CUtensorMap ma, mb, mc;
    memset(&mc, 0, sizeof mc);
    /* v2, v4-v6: B in one box of bn rows per k-block (one TMA load instead of two) where no
     * SiLU*mul pairs gate and up rows and N is a multiple of bn (session 27;
     * xsg_probe.splitk_halves keeps the halves) */
    p.b_one_box =
        bn != 256 && epi.act != XS_GEMM_ACT_SILU_MUL && a->N % bn == 0 && !xsg_probe.splitk_halves;
    XSI_CHECK(make_map(&ma, a->A, a->K, rows, batch_a, 128, "A", promo));
    XSI_CHECK(make_map(&mb, a->B, a->K, a->N, batch_b, p.b_one_box ? bn : bn / 2, "B", promo));
    /* v4 and v6 store with 16-byte stores and v12 straight from registers: no C map (v5 with
     * SiLU needs none either: its map is built but not used). */
    if (epi.store == XS_GEMM_STORE_LOCAL && t.version != XS_GEMM_V4 && t.version != XS_GEMM_V6 &&
        t.version != XS_GEMM_V12)
      XSI_CHECK(make_map(&mc, a->C, p.n_out, rows, batch_a, 64, "C"));
    /* Each CTA's first tile (sched.h xsg_first_tiles): no division chain before the first TMA
     * issue. */
    xsg_first first;
    first.n = xsg_probe.first == 1 ? 0
                                   : xsg_first_tiles(&p.grid, p.positions, ctas,
                                                     p.order_list != NULL, p.compact, first.t);
    err = xsg_launch_hopper(&p, &first, bn, mode, &ma, &mb, &mc, ctas, s);
  }
  if (err != cudaSuccess)
    return xsi_set_error(XS_ERR_CUDA, "gemm v%d launch (%d CTAs): %s", (int)t.version, ctas,
                         cudaGetErrorString(err));
  xsi_clear_error();
  return XS_OK;
}

/* Probe hooks (gemm_internal.h): off unless bench/gemm_probe.cu sets them. */
extern "C" xsg_probe_t xsg_probe = {0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

extern "C" xs_result xs_gemm_preload(void) {
  device_info dev;
  XSI_CHECK(query_device(&dev));
  cudaError_t (*const load[])(void) = {xsg_preload_v1, xsg_preload_hopper, xsg_preload_v7,
                                       xsg_preload_v8, xsg_preload_v10,    xsg_preload_splitk};
  for (int i = 0; i < (int)(sizeof load / sizeof load[0]); i++) {
    const cudaError_t e = load[i](); /* (sm_90a code: fails on another GPU, with v1's kernel) */
    if (e != cudaSuccess)
      return xsi_set_error(XS_ERR_CUDA, "gemm_preload: %s", cudaGetErrorString(e));
  }
  xsi_clear_error();
  return XS_OK;
}

extern "C" xs_result xs_gemm_contig_layout(int32_t* offsets, const int32_t* counts, int experts) {
  XSI_ARG(offsets && counts, "gemm_contig_layout: NULL argument");
  XSI_ARG(experts >= 1, "gemm_contig_layout: experts %d < 1", experts);
  if (xsg_contig_offsets(offsets, counts, experts, XS_GEMM_GROUP_ALIGN) != 0)
    return xsi_set_error(XS_ERR_INVALID_ARG, "gemm_contig_layout: negative count or > 2^31 rows");
  xsi_clear_error();
  return XS_OK;
}
