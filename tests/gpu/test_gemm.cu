/* test_gemm.cu — every GEMM version against an fp32 cuBLAS reference: random bf16 inputs,
 * outputs poisoned with NaN first and fully checked (relative Frobenius error within bf16
 * bounds, per-element tolerance, untouched rows must still hold the poison). Shapes that are
 * not multiples of any tile (M, N, K from 1, 63, 65, 127, 129, 1000, ...), the benchmark
 * shapes, grouped layouts with empty and one-token experts, SiLU*mul, the map epilogue, tile
 * flags and caller-supplied tile orders; v7 (token-major tiles) at every tile height it has,
 * on the MoE shapes at 16 tokens per expert and with few CTAs (many tiles per stream), and the
 * dispatcher's choice of it; v8 (2-CTA clusters sharing B) on tile pairs with and without a
 * partner tile (odd m-block counts per group, empty and one-token experts, both layouts,
 * SiLU*mul, map, flags, one cluster walking many pairs), its refusals, and AUTO never picking it;
 * v9 (v7's two tile streams with 128-token tiles) on odd shapes, both grouped layouts with empty
 * and one-token experts, every epilogue and order, few CTAs, and AUTO never picking it; v10 (v3's
 * wgmma on 64 x 256 tiles, two independent tile streams per CTA) the same way, plus its tiling,
 * its refusals (shapes TMA cannot describe) and AUTO never picking it. Every launch is a
 * plain launch (the default) after the poison fill, except the variants marked pdl (a
 * programmatic dependent launch, xs_gemm_schedule.pdl), which every Hopper family has some of.
 * Skips (exit 77) without a GPU.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "kernels/gemm/check.h"
#include "kernels/gemm/hopper_common.cuh"
#include "kernels/gemm/sched.h"
#include "test.h"
#include "xstage/gemm.h"

static cublasHandle_t g_blas;
static int g_hopper;    /* v2-v13 can run here */
static int g_sms;       /* the GPU's SMs (v7's tile width depends on them) */
#define LAST_VERSION 14 /* versions 1..LAST_VERSION are run by every loop below */
static int g_runs, g_unsupported;
static int g_tail_split; /* launches of v3 / v11 whose schedule has halves (sched.h) */
/* CONTIG launches of v2-v6 / v11-v13 with the speculative start (gemm_v2.cu), and the CTAs whose
 * guess the offsets confirm or refute (sched.h xsg_contig_guess, xsg_contig_owns) */
static int g_spec_launches, g_spec_hits, g_spec_misses;

typedef struct problem {
  xs_gemm_layout layout;
  int M, N, K, E;
  const int32_t* counts; /* grouped: E per-expert token counts */
  int silu;
} problem;

typedef struct variant {
  xs_gemm_version version;
  xs_gemm_store store;
  xs_gemm_order order;
  int swizzle;
  int list; /* 1: ORDER_LIST with the tiles in reverse */
  int flags;
  int ctas; /* persistent CTAs (schedule.max_ctas), 0: one per SM */
  int pdl;  /* 1: schedule.pdl (a programmatic dependent launch; the default is a plain one) */
  int split; /* xs_gemm_args.split_k (v14; 0: the library's choice) */
  int ws;    /* 1: the caller's workspace (xs_gemm_workspace_size bytes, zeroed) */
} variant;

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "  FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                         \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static void* dalloc(size_t bytes) {
  void* p = NULL;
  CK(cudaMalloc(&p, bytes ? bytes : 16));
  return p;
}

/* Run one (problem, variant): poison, run, compare, and check flags. Returns 1 when it passed
 * or was (legitimately) unsupported. */
static int run_one(const problem* pr, const variant* v, const char* tag) {
  const int E = pr->layout == XS_GEMM_DENSE ? 1 : pr->E;
  int32_t* offsets = (int32_t*)calloc((size_t)E + 1, 4);
  int64_t rows;
  if (pr->layout == XS_GEMM_GROUPED_CONTIG) {
    XT_CHECK(xs_gemm_contig_layout(offsets, pr->counts, E) == XS_OK);
    rows = offsets[E] > pr->M ? offsets[E] : pr->M; /* M > 0: a buffer longer than the segments */
  } else {
    rows = (int64_t)pr->M * E;
  }
  const int M = pr->layout == XS_GEMM_GROUPED_CONTIG ? (int)rows : pr->M;
  const int n_out = pr->silu ? pr->N / 2 : pr->N;
  const int64_t bsz = (int64_t)(pr->layout == XS_GEMM_DENSE ? 1 : E) * pr->N * pr->K;
  void* A = dalloc((size_t)rows * pr->K * 2);
  void* B = dalloc((size_t)bsz * 2);
  void* C = dalloc((size_t)rows * n_out * 2);
  float* ref = (float*)dalloc((size_t)rows * n_out * 4);
  float* scratch = (float*)dalloc((size_t)(rows + 128) * pr->N * 4);
  uint8_t* d_state = (uint8_t*)dalloc((size_t)rows);
  int32_t* d_off = (int32_t*)dalloc((size_t)(E + 1) * 4);
  int32_t* d_cnt = (int32_t*)dalloc((size_t)E * 4);
  CK(cudaMemcpy(d_off, offsets, (E + 1) * 4, cudaMemcpyHostToDevice));
  if (pr->counts) CK(cudaMemcpy(d_cnt, pr->counts, E * 4, cudaMemcpyHostToDevice));
  XT_CHECK(xsg_fill_random(A, rows * pr->K, 100 + pr->M + pr->K, 1.0f) == XS_OK);
  XT_CHECK(xsg_fill_random(B, bsz, 200 + pr->N, 1.0f) == XS_OK);

  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.layout = pr->layout, a.version = v->version, a.M = M, a.N = pr->N, a.K = pr->K;
  a.experts = pr->E, a.A = A, a.B = B, a.C = C, a.m_offsets = d_off, a.m_counts = d_cnt;
  a.split_k = v->split;
  XT_CHECK(xsg_reference(ref, scratch, &a, pr->silu, offsets, pr->counts, g_blas) == XS_OK);
  uint8_t* h_state = (uint8_t*)malloc((size_t)rows + 1);
  xsg_row_states(h_state, &a, offsets, pr->counts);
  CK(cudaMemcpy(d_state, h_state, (size_t)rows, cudaMemcpyHostToDevice));

  xs_gemm_epilogue epi = XS_GEMM_EPILOGUE_INITIALIZER;
  epi.act = pr->silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE;
  epi.store = v->store;
  xs_gemm_schedule sched = XS_GEMM_SCHEDULE_INITIALIZER;
  sched.order = v->order;
  sched.swizzle = v->swizzle;
  sched.max_ctas = v->ctas;
  sched.pdl = v->pdl;
  xs_gemm_tiling t;
  int ok = 1;
  xs_result res = xs_gemm_tiles(&t, &a, epi.act);
  char line[256];
  snprintf(
      line, sizeof line,
      "%-8s v%d layout=%d M=%d N=%d K=%d E=%d silu=%d store=%s order=%s%s ctas=%d%s split=%d/%d%s",
      tag, (int)v->version, (int)pr->layout, pr->M, pr->N, pr->K, pr->E, pr->silu,
      v->store == XS_GEMM_STORE_MAP ? "map" : "local",
      v->list                              ? "list-reversed"
      : v->order == XS_GEMM_ORDER_RASTER_N ? "raster-n"
                                           : "raster-m",
      v->flags ? " flags" : "", v->ctas, v->pdl ? " pdl" : "", v->split,
      res == XS_OK ? t.splits : 0, v->ws ? " ws" : "");
  if (res == XS_ERR_UNSUPPORTED && v->version != XS_GEMM_V1) {
    g_unsupported++;
    printf("  unsupported (expected for this shape/GPU): %s: %s\n", line, xs_last_error());
    goto done;
  }
  XT_CHECK_MSG(res == XS_OK, "%s: xs_gemm_tiles: %s", line, xs_last_error());
  if (res != XS_OK) {
    ok = 0;
    goto done;
  }
  if ((t.version == XS_GEMM_V3 || t.version == XS_GEMM_V11) && !v->flags) {
    /* the kernel's schedule: MASKED without a list walks its compacted tiles */
    int positions = t.count;
    if (pr->layout == XS_GEMM_GROUPED_MASKED && !v->list) {
      positions = 0;
      for (int g = 0; g < E; g++)
        positions += xsg_cdiv(pr->counts[g] < M ? pr->counts[g] : M, t.tile_m) * t.n_blocks;
    }
    const int grid = v->ctas ? v->ctas : g_sms; /* gemm.cu: at most one CTA per tile */
    const int ctas = grid < t.count ? grid : t.count;
    int whole;
    if (positions > 0 && xsg_tail_slots(positions, ctas, &whole) != positions) g_tail_split++;
  }
  {
    const xs_gemm_version tv = t.version;
    const int family = (tv >= XS_GEMM_V2 && tv <= XS_GEMM_V6) || tv >= XS_GEMM_V11;
    if (pr->layout == XS_GEMM_GROUPED_CONTIG && family && !v->list && E <= 256) {
      /* gemm.cu's grid (sched.h xsg_band) and each CTA's first tile from the host (sched.h
       * xsg_first_tiles): which CTAs guess, and whether the offsets confirm it */
      const int raster_n = v->order == XS_GEMM_ORDER_RASTER_N;
      const int band = xsg_band(v->swizzle, !raster_n, 0, 1, t.m_blocks, E);
      const xsg_grid grid = {1, t.m_blocks, t.n_blocks, raster_n, band};
      const int sms = v->ctas ? v->ctas : g_sms;
      const int ctas = sms < t.count ? sms : t.count;
      uint32_t first[XSG_FIRST_MAX];
      const int n = xsg_first_tiles(&grid, t.count, ctas, 0, 0, first);
      int guessed = 0;
      for (int b = 0; b < n; b++) {
        const int mb = xsg_first_tile_of(first[b]).mb;
        const int g = xsg_contig_guess(mb, M, E, t.tile_m);
        if (g < 0) continue;
        guessed = 1;
        if (xsg_contig_owns(offsets, g, mb * t.tile_m))
          g_spec_hits++;
        else
          g_spec_misses++;
      }
      g_spec_launches += guessed;
    }
  }
  {
    int32_t* d_list = NULL;
    xs_gemm_tile_dst* d_map = NULL;
    uint32_t* d_flags = NULL;
    if (v->list) {
      int32_t* h = (int32_t*)malloc(sizeof(int32_t) * (t.count + 1));
      for (int i = 0; i < t.count; i++)
        h[i] = t.count - 1 - i;
      d_list = (int32_t*)dalloc(sizeof(int32_t) * (t.count + 1));
      CK(cudaMemcpy(d_list, h, sizeof(int32_t) * t.count, cudaMemcpyHostToDevice));
      free(h);
      sched.order = XS_GEMM_ORDER_LIST, sched.tiles = d_list, sched.ntiles = t.count;
      if (v->version == XS_GEMM_V8) { /* v8 schedules tile pairs: a list must be refused */
        res = xs_gemm_run(&a, epi, sched, NULL);
        XT_CHECK_MSG(res == XS_ERR_UNSUPPORTED, "%s: v8 with a tile list: %s (want unsupported)",
                     line, xs_strerror(res));
        ok = res == XS_ERR_UNSUPPORTED;
        g_unsupported++;
        printf("  unsupported (v8 has no tile list): %s\n", line);
        cudaFree(d_list);
        goto done;
      }
    }
    void* out = C;
    if (v->store == XS_GEMM_STORE_MAP) { /* the tiles go to a second buffer, same layout */
      out = dalloc((size_t)rows * n_out * 2);
      xs_gemm_tile_dst* h = (xs_gemm_tile_dst*)malloc(sizeof *h * (t.count + 1));
      for (int i = 0; i < t.count; i++) {
        const int g = i / (t.m_blocks * t.n_blocks), rem = i % (t.m_blocks * t.n_blocks);
        const int mb = rem / t.n_blocks, nb = rem % t.n_blocks;
        const int64_t row = (int64_t)g * M + (int64_t)mb * t.tile_m;
        h[i].base = (uint16_t*)out + row * n_out + (int64_t)nb * t.tile_n;
        h[i].ld = n_out;
      }
      d_map = (xs_gemm_tile_dst*)dalloc(sizeof *h * (t.count + 1));
      CK(cudaMemcpy(d_map, h, sizeof *h * t.count, cudaMemcpyHostToDevice));
      free(h);
      epi.dst_map = d_map;
    }
    if (v->flags) {
      d_flags = (uint32_t*)dalloc(4 * (size_t)(t.count + 1));
      CK(cudaMemset(d_flags, 0, 4 * (size_t)(t.count + 1)));
      epi.tile_flags = d_flags;
    }
    void* ws = NULL;
    if (v->ws) { /* the caller's workspace, zeroed once */
      size_t bytes = 0;
      XT_CHECK(xs_gemm_workspace_size(&bytes, &a, epi.act) == XS_OK);
      /* none where the split runs as clusters (its slices meet in shared memory) */
      const int bw = epi.act == XS_GEMM_ACT_SILU_MUL ? 2 * t.tile_n : t.tile_n;
      const int clusters =
          (t.version == XS_GEMM_V14 && xsg_splitk_uses_clusters(bw, t.splits, t.count)) ||
          (t.version == XS_GEMM_V7 && xsg_v7_uses_clusters(t.tile_m, bw, t.splits, t.count));
      XT_CHECK_MSG(t.splits < 2 || (bytes > 0) != clusters,
                   "%s: workspace size %zu for %d splits (clusters: %d)", line, bytes, t.splits,
                   clusters);
      ws = dalloc(bytes);
      CK(cudaMemset(ws, 0, bytes ? bytes : 16));
      a.workspace = ws, a.workspace_bytes = bytes;
    }
    XT_CHECK(xsg_poison(out, rows * n_out) == XS_OK);
    res = xs_gemm_run(&a, epi, sched, NULL);
    XT_CHECK_MSG(res == XS_OK, "%s: xs_gemm_run: %s", line, xs_last_error());
    cudaError_t ce = cudaDeviceSynchronize();
    XT_CHECK_MSG(ce == cudaSuccess, "%s: kernel: %s", line, cudaGetErrorString(ce));
    if (ce != cudaSuccess) {
      fprintf(stderr, "  (the CUDA context is broken after a kernel fault: stopping)\n");
      exit(1);
    }
    xsg_check chk;
    XT_CHECK(xsg_compare(&chk, out, ref, d_state, rows, n_out) == XS_OK);
    ok = res == XS_OK && xsg_check_ok(&chk);
    if (v->flags && ok) { /* each tile with work raised exactly once, the others never */
      uint32_t* h = (uint32_t*)malloc(4 * (size_t)(t.count + 1));
      CK(cudaMemcpy(h, d_flags, 4 * (size_t)t.count, cudaMemcpyDeviceToHost));
      int bad = 0;
      for (int i = 0; i < t.count; i++) {
        const int g = i / (t.m_blocks * t.n_blocks),
                  mb = (i % (t.m_blocks * t.n_blocks)) / t.n_blocks;
        int busy = 1;
        if (pr->layout == XS_GEMM_GROUPED_MASKED) busy = mb * t.tile_m < pr->counts[g];
        if (pr->layout == XS_GEMM_GROUPED_CONTIG) busy = mb * t.tile_m < offsets[E];
        bad += h[i] != (uint32_t)busy;
      }
      free(h);
      XT_CHECK_MSG(bad == 0, "%s: %d tile flags wrong", line, bad);
      ok = bad == 0;
    }
    printf("  %s %s: rel_err %.2e checked %lld wrong %lld touched %lld tiles %d (%dx%d)\n",
           ok ? "ok  " : "FAIL", line, chk.rel_err, chk.checked, chk.wrong, chk.touched, t.count,
           t.tile_m, t.tile_n);
    XT_CHECK_MSG(ok, "%s", line);
    if (!ok) { /* where: the first wrong elements (NaN: the poison, never written) */
      uint16_t* hc = (uint16_t*)malloc((size_t)rows * n_out * 2);
      float* hr = (float*)malloc((size_t)rows * n_out * 4);
      CK(cudaMemcpy(hc, out, (size_t)rows * n_out * 2, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hr, ref, (size_t)rows * n_out * 4, cudaMemcpyDeviceToHost));
      int shown = 0;
      for (int64_t i = 0; i < rows * n_out && shown < 6; i++) {
        if (h_state[i / n_out] != XSG_ROW_CHECK) continue;
        const uint32_t bits = (uint32_t)hc[i] << 16;
        float got;
        memcpy(&got, &bits, 4);
        if (!(fabsf(got - hr[i]) <= 1e-2f * fabsf(hr[i]) + 0.05f)) {
          printf("    row %lld col %lld: got %g, want %g\n", (long long)(i / n_out),
                 (long long)(i % n_out), got, hr[i]);
          shown++;
        }
      }
      free(hc);
      free(hr);
    }
    if (v->ws && ok && a.workspace_bytes > 0) { /* the launch left the counters zero (the next
                                                     one on it relies on that) */
      uint32_t h[4 * 64];
      const int n = t.count < 64 ? t.count : 64;
      CK(cudaMemcpy(h, ws, 16 * (size_t)n, cudaMemcpyDeviceToHost));
      int dirty = 0;
      for (int i = 0; i < 4 * n; i++)
        dirty += i % 4 != 1 && h[i] != 0; /* word 1 is the barrier's generation */
      XT_CHECK_MSG(dirty == 0, "%s: %d workspace counters left nonzero", line, dirty);
    }
    cudaFree(ws);
    if (out != C) cudaFree(out);
    cudaFree(d_list);
    cudaFree(d_map);
    cudaFree(d_flags);
    g_runs++;
  }
done:
  fflush(stdout);
  free(h_state);
  free(offsets);
  void* bufs[] = {A, B, C, ref, scratch, d_state, d_off, d_cnt};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    cudaFree(bufs[i]);
  return ok;
}

/* run_one for every problem of `ps` with every variant of `vs`. */
static void run_each(const problem* ps, int np, const variant* vs, int nv, const char* tag) {
  for (int i = 0; i < np; i++)
    for (int k = 0; k < nv; k++)
      run_one(&ps[i], &vs[k], tag);
}

/* Balanced MoE counts: 8 experts with 128 or 512 tokens each. */
static const int32_t k_t128[8] = {128, 128, 128, 128, 128, 128, 128, 128};
static const int32_t k_t512[8] = {512, 512, 512, 512, 512, 512, 512, 512};

/* The MoE shapes at 128 and 512 tokens per expert on both layouts (DeepSeek-V3 gate/up with
 * SiLU*mul at T=128, Qwen3-235B down at T=512): `masked` runs the masked ones, `contig` the
 * contiguous ones. */
static void run_moe_shapes(const variant* masked, const variant* contig, const char* tag) {
  const problem moe[4] = {
      {XS_GEMM_GROUPED_MASKED, 128, 4096, 7168, 8, k_t128, 1},
      {XS_GEMM_GROUPED_CONTIG, 0, 4096, 7168, 8, k_t128, 1},
      {XS_GEMM_GROUPED_MASKED, 512, 4096, 1536, 8, k_t512, 0},
      {XS_GEMM_GROUPED_CONTIG, 0, 4096, 1536, 8, k_t512, 0},
  };
  for (int i = 0; i < 4; i++)
    run_one(&moe[i], i % 2 ? contig : masked, tag);
}

static void run_versions(const problem* pr, const char* tag) {
  for (int ver = 1; ver <= LAST_VERSION; ver++) {
    variant v = {(xs_gemm_version)ver, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0};
    run_one(pr, &v, tag);
  }
}

static void test_dense_odd_shapes(void) {
  static const int Ms[] = {1, 63, 65, 127, 129, 1000};
  static const int Ns[] = {1, 8, 63, 65, 72, 127, 129, 136, 264, 1000};
  static const int Ks[] = {1, 8, 63, 64, 65, 72, 127, 129, 1000, 1024};
  int k = 0;
  for (int mi = 0; mi < 6; mi++)
    for (int ni = 0; ni < 10; ni++)
      for (int rep = 0; rep < 2; rep++, k++) {
        /* (+ 3 mi: each N meets other K values at each M) */
        problem p = {XS_GEMM_DENSE, Ms[mi], Ns[ni], Ks[(k + 3 * mi) % 10], 0, NULL, 0};
        run_versions(&p, "odd");
      }
}

static void test_dense_bench_shapes(void) {
  static const int shapes[][3] = {{8192, 8192, 8192},
                                  {4096, 28672, 8192},
                                  {2048, 3072, 4096},
                                  {512, 7168, 2048},
                                  {128, 4096, 1536}};
  for (int i = 0; i < 5; i++) {
    problem p = {XS_GEMM_DENSE, shapes[i][0], shapes[i][1], shapes[i][2], 0, NULL, 0};
    run_versions(&p, "bench");
  }
}

static void test_epilogues_and_orders(void) {
  problem p = {XS_GEMM_DENSE, 1000, 1040, 520, 0, NULL, 0};
  problem s = {XS_GEMM_DENSE, 1000, 1040, 520, 0, NULL, 1}; /* SiLU: I = 520 */
  problem s_odd = {XS_GEMM_DENSE, 65, 126, 63, 0, NULL, 1}; /* I = 63: v1 only */
  for (int ver = 1; ver <= LAST_VERSION; ver++) {
    const xs_gemm_version vv = (xs_gemm_version)ver;
    variant map = {vv, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_M, 0, 0, 1};
    variant flags = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1};
    variant rn = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_N, 3, 0, 0, 0, 1};
    variant list = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 1};
    variant plain = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0};
    run_one(&p, &map, "epi");
    run_one(&p, &flags, "epi");
    run_one(&p, &rn, "order");
    run_one(&p, &list, "order");
    run_one(&s, &plain, "silu");
    run_one(&s, &map, "silu");
    run_one(&s_odd, &plain, "silu");
  }
}

static void test_grouped(void) {
  static const int32_t cc[6] = {0, 1, 128, 129, 0, 300}; /* empty, one-token, aligned, ... */
  static const int32_t mc[5] = {0, 1, 300, 129, 17};
  static const int32_t mc_odd[5] = {0, 1, 130, 129, 17};
  static const int32_t none[3] = {0, 0, 0};
  for (int silu = 0; silu < 2; silu++) {
    problem c = {XS_GEMM_GROUPED_CONTIG, 0, 272, 200, 6, cc, silu}; /* I = 136 */
    problem m = {XS_GEMM_GROUPED_MASKED, 300, 272, 200, 5, mc, silu};
    problem odd = {XS_GEMM_GROUPED_MASKED, 130, 130, 65, 5, mc_odd, silu}; /* v1 only */
    run_versions(&c, "contig");
    run_versions(&m, "masked");
    run_versions(&odd, "masked");
    for (int ver = 1; ver <= LAST_VERSION; ver++) {
      variant v = {(xs_gemm_version)ver, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 2, 0, 1};
      run_one(&c, &v, "contig");
      run_one(&m, &v, "masked");
    }
  }
  problem empty = {XS_GEMM_GROUPED_MASKED, 64, 128, 64, 3, none, 0};
  run_versions(&empty, "empty");
}

/* MASKED with many skewed experts: v2-v8 walk the compacted schedule (only tiles with work,
 * built in the kernel from the device counts) up to XSG_MASKED_MAX_EXPERTS = 256 experts, and
 * the whole buffer beyond that. Flags check that each tile with work ran exactly once. */
static void test_masked_schedules(void) {
  static int32_t zipf[40], many[260];
  for (int e = 0; e < 40; e++) /* 520, 260, 173, ... with every 7th expert empty */
    zipf[e] = e % 7 == 6 ? 0 : 520 / (e + 1);
  for (int e = 0; e < 260; e++)
    many[e] = e % 9; /* 0..8 rows of 8 */
  problem z = {XS_GEMM_GROUPED_MASKED, 520, 272, 64, 40, zipf, 0};
  problem zs = {XS_GEMM_GROUPED_MASKED, 520, 272, 64, 40, zipf, 1};
  problem wide = {XS_GEMM_GROUPED_MASKED, 8, 64, 64, 260, many, 0};
  for (int ver = 1; ver <= LAST_VERSION; ver++) {
    const xs_gemm_version vv = (xs_gemm_version)ver;
    variant flags = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1};
    variant map_n = {vv, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 2, 0, 1};
    variant list = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 1};
    run_one(&z, &flags, "mskzipf");
    run_one(&z, &map_n, "mskzipf");
    run_one(&z, &list, "mskzipf"); /* a caller's list: no compaction */
    run_one(&zs, &flags, "mskzipf");
    run_one(&wide, &flags, "msk260");
  }
}

/* v7: token-major tiles of 16/32/64 rows, two tile streams per CTA. Every tile height, with
 * counts that leave empty, one-token, partial and full token tiles; N that ends inside a tile
 * (200 = 128 + 72; SiLU I = 136 = 2 x 64 + 8) or inside the first B half (72), or exactly at it
 * (64: the second half is not loaded); K tails (200 = 3 x 64 + 8, 8); every epilogue and order,
 * and 1 or 3 CTAs (2 or 6 streams walking many tiles: the rings wrap across tiles). AUTO must
 * run the same problems (it picks v7 for them, test_auto_choice). */
static void test_v7_small_rows(void) {
  static const int Ms[] = {1, 9, 16, 17, 32, 33, 48, 64};
  for (int mi = 0; mi < 8; mi++) {
    const int M = Ms[mi];
    /* masked counts: empty, one token, full, a partial last 16-row group, M - 1 */
    const int32_t counts[5] = {0, 1, M, M / 2 + 1, M > 1 ? M - 1 : 1};
    for (int silu = 0; silu < 2; silu++) {
      problem m = {XS_GEMM_GROUPED_MASKED, M, silu ? 272 : 200, mi % 2 ? 200 : 64, 5, counts, silu};
      problem d = {XS_GEMM_DENSE, M, silu ? 272 : 200, mi % 2 ? 8 : 200, 0, NULL, silu};
      for (int ver = 0; ver <= 7; ver += 7) { /* AUTO and v7 */
        const xs_gemm_version vv = (xs_gemm_version)ver;
        variant plain = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0};
        variant map = {vv, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 2, 0, 1, 0};
        variant list = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 1, 3};
        variant few = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 1};
        run_one(&m, &plain, "v7mask");
        run_one(&m, &map, "v7mask");
        run_one(&m, &list, "v7mask");
        run_one(&m, &few, "v7mask");
        run_one(&d, &plain, "v7dense");
        run_one(&d, &few, "v7dense");
      }
    }
  }
  /* N inside the first B half, and N = 64 (no second half to load); 300 experts (no compacted
   * schedule: the whole buffer is walked) */
  static int32_t many[300];
  for (int e = 0; e < 300; e++)
    many[e] = (e * 7) % 17; /* 0..16 */
  const problem narrow = {XS_GEMM_DENSE, 20, 72, 136, 0, NULL, 0};
  const problem half = {XS_GEMM_GROUPED_MASKED, 16, 64, 72, 300, many, 0};
  const problem half_silu = {XS_GEMM_GROUPED_MASKED, 16, 144, 72, 300, many, 1};
  variant v7 = {XS_GEMM_V7, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 0};
  variant v7few = {XS_GEMM_V7, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 3, 1};
  run_one(&narrow, &v7, "v7edge");
  run_one(&narrow, &v7few, "v7edge");
  run_one(&half, &v7, "v7edge");
  run_one(&half_silu, &v7few, "v7edge");
  /* The split tile (a CTA with an odd count of 3 or more tiles shares its last one between its
   * streams, sched.h xsg_v7_split_position): 10-90 positions on 6, 4 or 2 CTAs (on 132 SMs
   * narrow tiles: 30, 90, 75, 30 and 10 positions, odd counts on most CTAs), every tile height,
   * SiLU*mul, K with a tail (1000 = 15 x 64 + 40, 456 = 7 x 64 + 8), the map, flags and a
   * caller's list. (The wide tiles' split runs in the T=16 MoE shapes below: DeepSeek-V3 down
   * skewed, 392 positions on 131 CTAs.) */
  static const int32_t c16[6] = {16, 16, 16, 16, 16, 16};
  static const int32_t c32[6] = {32, 31, 1, 32, 0, 17};
  static const int32_t c64[6] = {64, 64, 33, 64, 64, 2};
  const problem split[5] = {
      {XS_GEMM_GROUPED_MASKED, 16, 320, 1000, 6, c16, 0},
      {XS_GEMM_GROUPED_MASKED, 16, 960, 1000, 6, c16, 1},
      {XS_GEMM_GROUPED_MASKED, 32, 960, 456, 6, c32, 1},
      {XS_GEMM_GROUPED_MASKED, 64, 320, 1000, 6, c64, 0},
      {XS_GEMM_DENSE, 48, 640, 712, 0, NULL, 0},
  };
  const variant on_ctas[3] = {
      {XS_GEMM_V7, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 6},
      {XS_GEMM_V7, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 2, 0, 1, 4},
      {XS_GEMM_V7, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 1, 2},
  };
  run_each(split, 5, on_ctas, 3, "v7split");
  /* The MoE shapes at 16 tokens per expert (the bench's T=16 cases), balanced and skewed, and
   * v7 on the layouts AUTO does not give it (contiguous; masked with 128 rows). */
  static const int32_t bal[8] = {16, 16, 16, 16, 16, 16, 16, 16};
  static const int32_t skew[8] = {16, 0, 1, 15, 16, 3, 16, 8};
  static const int32_t wide[4] = {128, 0, 65, 1};
  static const int32_t cc[6] = {0, 1, 128, 129, 0, 300};
  const problem moe[6] = {
      {XS_GEMM_GROUPED_MASKED, 16, 4096, 7168, 8, bal, 1},  /* DeepSeek-V3 gate/up */
      {XS_GEMM_GROUPED_MASKED, 16, 7168, 2048, 8, skew, 0}, /* DeepSeek-V3 down */
      {XS_GEMM_GROUPED_MASKED, 16, 3072, 4096, 8, skew, 1}, /* Qwen3-235B gate/up */
      {XS_GEMM_GROUPED_MASKED, 16, 4096, 1536, 8, bal, 0},  /* Qwen3-235B down */
      {XS_GEMM_GROUPED_MASKED, 128, 1040, 520, 4, wide, 1},
      {XS_GEMM_GROUPED_CONTIG, 0, 272, 200, 6, cc, 1},
  };
  const variant moe_variants[3] = {
      {XS_GEMM_AUTO, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0},
      {XS_GEMM_V7, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 0},
      {XS_GEMM_V7, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 4, 0, 1, 5},
  };
  run_each(moe, 6, moe_variants, 3, "v7moe");
}

/* The version AUTO resolves to (xs_gemm_tiles), and its tile. */
static void expect_auto(const xs_gemm_args* a, xs_gemm_act act, xs_gemm_version want, int tm,
                        int tn, const char* what) {
  xs_gemm_tiling t;
  memset(&t, 0, sizeof t);
  const xs_result r = xs_gemm_tiles(&t, a, act);
  XT_CHECK_MSG(r == XS_OK, "%s: xs_gemm_tiles: %s", what, xs_last_error());
  XT_CHECK_MSG(t.version == want, "%s: AUTO picked v%d, expected v%d", what, (int)t.version,
               (int)want);
  if (tm)
    XT_CHECK_MSG(t.tile_m == tm && t.tile_n == tn, "%s: tile %dx%d, expected %dx%d", what, t.tile_m,
                 t.tile_n, tm, tn);
}

/* AUTO takes v7 exactly where the rule says (DENSE or MASKED with M <= 64, shapes TMA can run)
 * and nowhere else; v7 runs every epilogue, order and layout, so no feature excludes it. */
static void test_auto_choice(void) {
  if (!g_hopper) {
    printf("  (not Hopper: AUTO falls back to v1, its v7 rule is not checked)\n");
    return;
  }
  void* buf = dalloc(1 << 20);
  int32_t* ints = (int32_t*)dalloc(4096);
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.A = buf, a.B = buf, a.C = buf, a.m_counts = ints, a.m_offsets = ints;
  a.layout = XS_GEMM_GROUPED_MASKED, a.experts = 64, a.N = 4096, a.K = 7168;
  a.M = 16;
  expect_auto(&a, XS_GEMM_ACT_SILU_MUL, XS_GEMM_V7, 16, 64, "masked M=16 SiLU");
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V7, 16, 128, "masked M=16");
  a.M = 1;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V7, 16, 128, "masked M=1");
  a.M = 17;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V7, 32, 128, "masked M=17");
  a.M = 64;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V7, 64, 128, "masked M=64");
  a.M = 65;
  xs_gemm_tiling t;
  XT_CHECK(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE) == XS_OK);
  XT_CHECK_MSG(t.version != XS_GEMM_V7 && t.tile_m == 128, "masked M=65: AUTO v%d tile_m %d",
               (int)t.version, t.tile_m);
  /* v7's tile width (sched.h xsg_v7_width, 132 SMs): narrow (64 B rows) where it lowers the
   * busiest SM's B rows by > 10 % (20 % before session 8's split tile) */
  if (g_sms == 132) {
    a.experts = 8, a.M = 16, a.N = 3072, a.K = 4096; /* Qwen3-235B gate/up: 192 -> 384 tiles */
    expect_auto(&a, XS_GEMM_ACT_SILU_MUL, XS_GEMM_V7, 16, 32, "masked E=8 M=16 N=3072 SiLU");
    a.N = 4096, a.K = 1536; /* Qwen3-235B down: 256 tiles, 2 per SM either way */
    expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V7, 16, 128, "masked E=8 M=16 N=4096");
    a.N = 7168, a.K = 2048; /* DeepSeek-V3 down: 448 -> 896 tiles, 4 x 128 -> 7 x 64 rows */
    expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V7, 16, 64, "masked E=8 M=16 N=7168");
    /* MASKED with the counts on the host (m_counts_host): AUTO weighs the tiles with work.
     * Qwen3-235B gate/up E=8 T=128 Zipf in a 377-row buffer: 11 m-blocks with work (v3, one
     * wave) against 24 in the whole buffer (v6) */
    static const int32_t zipf[8] = {377, 189, 126, 95, 75, 63, 54, 47};
    a.experts = 8, a.M = 377, a.N = 3072, a.K = 4096;
    expect_auto(&a, XS_GEMM_ACT_SILU_MUL, XS_GEMM_V6, 128, 104, "masked Zipf, no host counts");
    a.m_counts_host = zipf;
    expect_auto(&a, XS_GEMM_ACT_SILU_MUL, XS_GEMM_V3, 128, 128, "masked Zipf, host counts");
    a.M = 300; /* a host count above M is refused, by name */
    XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_SILU_MUL), XS_ERR_INVALID_ARG);
    XT_CHECK_MSG(strstr(xs_last_error(), "m_counts_host[0] = 377") != NULL, "error: %s",
                 xs_last_error());
    a.m_counts_host = NULL;
    /* DeepSeek-V3 down E=64 T=128 (balanced, CONTIG): v6's 208 columns fill the last wave, but
     * without SiLU*mul v3's tile runs as v11 (weight 99, session 11: sched.h xsg_auto_pick), which
     * ran 1.2 % faster than v6 there (runs 47-54). */
    a.layout = XS_GEMM_GROUPED_CONTIG, a.experts = 64, a.M = 8192, a.N = 7168, a.K = 2048;
    expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V11, 128, 256, "contig E=64 T=128 N=7168");
    a.layout = XS_GEMM_GROUPED_MASKED, a.M = 16;
    a.experts = 64, a.N = 4096, a.K = 7168;
  }
  a.layout = XS_GEMM_DENSE, a.M = 64;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V7, 64, g_sms >= 64 ? 64 : 128, "dense M=64");
  a.M = 512;
  XT_CHECK(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE) == XS_OK);
  XT_CHECK_MSG(t.version != XS_GEMM_V7, "dense M=512: AUTO picked v7");
  a.layout = XS_GEMM_GROUPED_CONTIG, a.M = 1024, a.experts = 8; /* 128 rows per expert */
  XT_CHECK(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE) == XS_OK);
  XT_CHECK_MSG(t.version != XS_GEMM_V7, "contig: AUTO picked v7");
  /* the cost model's 128x256 tile: v11 without SiLU*mul, v3 with it (gemm.cu resolve) */
  a.M = 4096, a.N = 7168, a.K = 2048;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V11, 128, 256, "contig 4096x7168x2048");
  a.N = 4096, a.K = 7168;
  expect_auto(&a, XS_GEMM_ACT_SILU_MUL, XS_GEMM_V3, 128, 128, "contig 4096x4096x7168 SiLU");
  /* in a layer's order (xs_gemm_args.context LAYER): grouped without SiLU*mul stays v3; dense
   * and SiLU*mul as back to back; an unknown context is refused */
  a.context = XS_GEMM_CONTEXT_LAYER;
  a.N = 7168, a.K = 2048;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V3, 128, 256, "contig 4096x7168x2048, layer");
  a.layout = XS_GEMM_GROUPED_MASKED, a.M = 512, a.N = 4096, a.K = 1536;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V3, 128, 256, "masked E=8 T=512 down, layer");
  a.layout = XS_GEMM_GROUPED_CONTIG, a.M = 4096, a.N = 4096, a.K = 7168;
  expect_auto(&a, XS_GEMM_ACT_SILU_MUL, XS_GEMM_V3, 128, 128, "contig SiLU, layer");
  /* Qwen3-235B gate/up E=8 T=128 (back to back: v6's 128x208) and DeepSeek-V3 down E=8 T=128
   * (back to back: v4's 128x224) run v3's kernel in a layer */
  a.layout = XS_GEMM_GROUPED_MASKED, a.M = 128, a.N = 3072, a.K = 4096;
  expect_auto(&a, XS_GEMM_ACT_SILU_MUL, XS_GEMM_V3, 128, 128, "masked Qwen3 gate/up T=128, layer");
  a.N = 7168, a.K = 2048;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V3, 128, 256, "masked DS-V3 down T=128, layer");
  a.context = XS_GEMM_CONTEXT_ALONE;
  XT_CHECK(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE) == XS_OK);
  XT_CHECK_MSG(t.version != XS_GEMM_V3, "masked DS-V3 down T=128: back to back AUTO took v3");
  a.context = XS_GEMM_CONTEXT_LAYER;
  a.layout = XS_GEMM_DENSE, a.M = 8192, a.N = 8192, a.K = 8192;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V11, 128, 256, "dense 8192^3, layer");
  a.context = (xs_gemm_context)2;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_INVALID_ARG);
  a.context = XS_GEMM_CONTEXT_ALONE;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V11, 128, 256, "dense 8192^3");
  a.N = 4096, a.K = 7168;
  /* shapes TMA cannot describe: v7 explicit is unsupported, AUTO runs v1 */
  a.layout = XS_GEMM_GROUPED_MASKED, a.M = 16, a.K = 63;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V1, 0, 0, "masked M=16 K=63");
  a.version = XS_GEMM_V7;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  a.K = 64, a.N = 60; /* N % 8 */
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  a.version = XS_GEMM_AUTO;
  expect_auto(&a, XS_GEMM_ACT_NONE, XS_GEMM_V1, 0, 0, "masked M=16 N=60");
  a.N = 4096;
  a.version = (xs_gemm_version)(LAST_VERSION + 1);
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_INVALID_ARG);
  /* v9 explicitly: 128-token tiles whatever M (not v7's height rule); E = 8 experts of one
   * m-block, 4096 gate/up rows -> 2048 output columns = 32 n-blocks of 64 */
  a.version = XS_GEMM_V9, a.layout = XS_GEMM_GROUPED_MASKED, a.M = 16, a.K = 7168;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_SILU_MUL), XS_OK);
  XT_CHECK_MSG(
      t.version == XS_GEMM_V9 && t.tile_m == 128 && t.tile_n == 64 && t.count == a.experts * 1 * 32,
      "v9 masked M=16 SiLU: v%d tile %dx%d count %d", (int)t.version, t.tile_m, t.tile_n, t.count);
  /* v10 explicitly: 64-row tiles x 256 output columns (128 with SiLU*mul), MASKED E = 64: one
   * m-block of 64 rows per expert at M = 16, two at M = 65 */
  a.version = XS_GEMM_V10;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_SILU_MUL), XS_OK);
  XT_CHECK_MSG(t.version == XS_GEMM_V10 && t.tile_m == 64 && t.tile_n == 128 &&
                   t.count == a.experts * 1 * 16,
               "v10 masked M=16 SiLU: v%d tile %dx%d count %d", (int)t.version, t.tile_m, t.tile_n,
               t.count);
  a.M = 65;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
  XT_CHECK_MSG(t.tile_m == 64 && t.tile_n == 256 && t.m_blocks == 2 && t.n_blocks == 16,
               "v10 masked M=65: tile %dx%d, %d x %d blocks", t.tile_m, t.tile_n, t.m_blocks,
               t.n_blocks);
  /* AUTO never picks v8-v10, v12 or v13 (explicit only: measured, none faster than v3), on any
   * layout or size; v11 only in v3's place without SiLU*mul (session 5). */
  a.version = XS_GEMM_AUTO, a.K = 7168;
  static const int shapes[][3] = {
      {8192, 8192, 8192}, {4096, 28672, 8192}, {2048, 3072, 4096}, {512, 7168, 2048}};
  for (int i = 0; i < 4; i++) {
    a.layout = XS_GEMM_DENSE, a.M = shapes[i][0], a.N = shapes[i][1], a.K = shapes[i][2];
    XT_CHECK(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE) == XS_OK);
    XT_CHECK_MSG(t.version < XS_GEMM_V8 || t.version == XS_GEMM_V11,
                 "dense %dx%dx%d: AUTO picked v%d", a.M, a.N, a.K, (int)t.version);
  }
  for (int m = 128; m <= 4096; m *= 2)
    for (int layout = 1; layout <= 2; layout++)
      for (int act = 0; act < 2; act++) {
        a.layout = (xs_gemm_layout)layout, a.experts = 8, a.N = 4096, a.K = 7168;
        a.M = layout == XS_GEMM_GROUPED_CONTIG ? 8 * m : m;
        XT_CHECK(xs_gemm_tiles(&t, &a, (xs_gemm_act)act) == XS_OK);
        XT_CHECK_MSG(t.version < XS_GEMM_V8 || (t.version == XS_GEMM_V11 && act == 0),
                     "layout %d M=%d act %d: AUTO picked v%d", layout, a.M, act, (int)t.version);
      }
  cudaFree(buf);
  cudaFree(ints);
}

/* v8: clusters of two CTAs computing tile pairs (m-blocks 2j, 2j + 1 of a group) that share B.
 * Pairs without a rank-1 tile (odd m-block counts: M = 1, 257, 640; masked experts with 1, 3 or
 * 5 used m-blocks; contig segments of 1 or 3 m-blocks) must still compute rank 0's tile (the
 * idle member loads its half of B) and store nothing for rank 1; N ending inside the first B
 * half (72: rank 1 reloads half 0's rows) or exactly at it (128) or in the second (200, 264);
 * K tails; one cluster walking every pair (max_ctas 2, and 3 rounded down to 2: the rings wrap
 * across many tiles and idle rounds), map / flags / raster-N with an odd band; masked with 260
 * experts (no pair table: the whole buffer is walked); MoE shapes at 128 and 512 tokens per
 * expert (T=128: every pair of a balanced layout has an idle member). */
static void test_v8_pairs(void) {
  static const int Ms[] = {1, 257, 640}, Ns[] = {72, 128, 200, 264}, Ks[] = {8, 200, 1000};
  for (int mi = 0; mi < 3; mi++)
    for (int ni = 0; ni < 4; ni++) {
      const problem d = {XS_GEMM_DENSE, Ms[mi], Ns[ni], Ks[(mi + ni) % 3], 0, NULL, 0};
      variant plain = {XS_GEMM_V8, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0};
      variant one = {XS_GEMM_V8, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 2, 1};
      variant map = {XS_GEMM_V8, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 3, 0, 1, 3};
      run_one(&d, &plain, "v8dense");
      run_one(&d, &one, "v8dense");
      run_one(&d, &map, "v8dense");
    }
  /* used m-blocks per expert (M = 640): 0, 1, 1, 2, 2, 3, 3, 5, 5 */
  static const int32_t mc[9] = {0, 1, 128, 129, 256, 257, 300, 640, 513};
  /* segment m-blocks: 0, 1, 1, 2, 0, 3, 4, 2, 1 */
  static const int32_t cc[9] = {0, 1, 128, 129, 0, 300, 385, 256, 1};
  for (int silu = 0; silu < 2; silu++) {
    const problem m = {XS_GEMM_GROUPED_MASKED, 640, silu ? 272 : 264, 136, 9, mc, silu};
    const problem c = {XS_GEMM_GROUPED_CONTIG, 0, silu ? 272 : 264, 136, 9, cc, silu};
    for (int vi = 0; vi < 4; vi++) {
      variant v = {XS_GEMM_V8, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0};
      if (vi == 1) v.flags = 1, v.ctas = 2;
      if (vi == 2) v.store = XS_GEMM_STORE_MAP, v.order = XS_GEMM_ORDER_RASTER_N, v.flags = 1;
      if (vi == 3) v.swizzle = 1, v.flags = 1, v.ctas = 6;
      run_one(&m, &v, "v8mask");
      run_one(&c, &v, "v8contig");
    }
  }
  static int32_t many[260];
  for (int e = 0; e < 260; e++)
    many[e] = (e * 37) % 300; /* 0..299 rows of 300: 0, 1, 2 or 3 m-blocks */
  const problem wide = {XS_GEMM_GROUPED_MASKED, 300, 136, 64, 260, many, 0};
  variant wf = {XS_GEMM_V8, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 0};
  run_one(&wide, &wf, "v8wide");
  /* MoE shapes: DeepSeek-V3 gate/up at 128 tokens per expert (one m-block each: every pair has
   * an idle member), Qwen3-235B down at 512 (two pairs each), both layouts. */
  variant v8plain = {XS_GEMM_V8, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0};
  variant v8flags = {XS_GEMM_V8, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 0};
  run_moe_shapes(&v8plain, &v8flags, "v8moe");
}

/* v9: v7's kernel with 128-token tiles (two 128 x 128 tile streams per CTA). Rows that end
 * inside a tile, one row past it and one short of it (M = 1, 63, 65, 127, 129, 1000); N inside
 * the first B half (8, 72), at it (64: no second half loaded) and past a tile (136, 200, 264);
 * K tails (8, 72 = 64 + 8, 200, 1000); masked and contig experts that are empty, one token, 127,
 * 128, 129 and 300 rows, with and without SiLU*mul (I = 136: a partial 8-column tile); map,
 * flags, raster-N with an odd band, a reversed list; 1 CTA (two streams walking every tile:
 * the rings wrap across tiles) and 3; masked with 300 experts (no compaction); the MoE shapes at
 * 128 and 512 tokens per expert on both layouts. Outputs are poisoned and fully checked. */
static void test_v9_wide(void) {
  static const int Ms[] = {1, 63, 65, 127, 129, 1000}, Ns[] = {8, 64, 72, 136, 200, 264};
  static const int Ks[] = {8, 72, 200, 1000};
  variant plain = {XS_GEMM_V9, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0};
  variant one = {XS_GEMM_V9, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 1};
  variant map = {XS_GEMM_V9, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 3, 0, 1, 0};
  variant list = {XS_GEMM_V9, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 1, 3};
  for (int mi = 0; mi < 6; mi++)
    for (int ni = 0; ni < 6; ni++) {
      const problem d = {XS_GEMM_DENSE, Ms[mi], Ns[ni], Ks[(mi + ni) % 4], 0, NULL, 0};
      run_one(&d, (mi + ni) % 2 ? &plain : &one, "v9dense");
      if (ni % 3 == 0) run_one(&d, &map, "v9dense");
    }
  const problem ds = {XS_GEMM_DENSE, 1000, 272, 200, 0, NULL, 1}; /* SiLU: I = 136 */
  run_one(&ds, &plain, "v9dense");
  run_one(&ds, &one, "v9dense");
  run_one(&ds, &list, "v9dense");
  /* used rows per expert (M = 300): 0, 1, 127, 128, 129, 300, 255 */
  static const int32_t mc[7] = {0, 1, 127, 128, 129, 300, 255};
  static const int32_t cc[7] = {0, 1, 127, 128, 129, 300, 0};
  for (int silu = 0; silu < 2; silu++) {
    const problem m = {XS_GEMM_GROUPED_MASKED, 300, silu ? 272 : 200, 136, 7, mc, silu};
    const problem c = {XS_GEMM_GROUPED_CONTIG, 0, silu ? 272 : 200, 136, 7, cc, silu};
    const variant* vs[4] = {&plain, &one, &map, &list};
    for (int vi = 0; vi < 4; vi++) {
      run_one(&m, vs[vi], "v9mask");
      run_one(&c, vs[vi], "v9contig");
    }
  }
  static int32_t many[300];
  for (int e = 0; e < 300; e++)
    many[e] = (e * 37) % 260; /* 0..259 rows of 260: 0, 1 or 2 tiles */
  const problem wide = {XS_GEMM_GROUPED_MASKED, 260, 136, 64, 300, many, 0};
  run_one(&wide, &one, "v9wide");
  run_one(&wide, &map, "v9wide");
  run_moe_shapes(&plain, &map, "v9moe");
}

/* v10: v3's wgmma (m64n256k16) on 64 x 256 tiles, two independent tile streams per CTA. Rows
 * that end inside a 64-row tile, at it and one past it (M = 1, 63, 64, 65, 127, 129, 1000); N
 * inside the first 128-row B half (8, 72), at it (128: no second half loaded), inside the second
 * (136, 200) and past a tile (264, 520); K tails (8, 72 = 64 + 8, 200, 1000; K = 8 is a single
 * k-block, fewer than the 2 ring stages); masked and contig experts that are empty, one token,
 * 63, 64, 65, 128, 129 and 300 rows (contig segments of 1, 2, 3 and 5 tiles of 64), with and
 * without SiLU*mul (I = 136: a partial last 8-column group; I = 264: a second n-block); map,
 * flags, raster-N with an odd band, raster-M with band 1, a reversed list; 1 CTA (two streams
 * walking every tile: the rings and stagings are reused across many tiles) and 3; masked with
 * 300 experts (no compaction); the MoE shapes at 128 and 512 tokens per expert, both layouts.
 * Outputs are poisoned and fully checked; flags checked per tile. */
static void test_v10_streams(void) {
  static const int Ms[] = {1, 63, 64, 65, 127, 129, 1000};
  static const int Ns[] = {8, 72, 128, 136, 200, 264, 520};
  static const int Ks[] = {8, 72, 200, 1000};
  variant plain = {XS_GEMM_V10, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0};
  variant one = {XS_GEMM_V10, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 1};
  variant map = {XS_GEMM_V10, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 3, 0, 1, 0};
  variant list = {XS_GEMM_V10, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 1, 3};
  variant band1 = {XS_GEMM_V10, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_M, 1, 0, 0, 3};
  for (int mi = 0; mi < 7; mi++)
    for (int ni = 0; ni < 7; ni++) {
      const problem d = {XS_GEMM_DENSE, Ms[mi], Ns[ni], Ks[(mi + ni) % 4], 0, NULL, 0};
      run_one(&d, (mi + ni) % 2 ? &plain : &one, "v10dense");
      if (ni % 3 == 0) run_one(&d, &map, "v10dense");
      if (ni % 3 == 1) run_one(&d, &band1, "v10dense");
    }
  const problem ds = {XS_GEMM_DENSE, 1000, 272, 200, 0, NULL, 1};  /* SiLU: I = 136 */
  const problem ds2 = {XS_GEMM_DENSE, 129, 528, 1000, 0, NULL, 1}; /* I = 264: two n-blocks */
  const variant* dv[5] = {&plain, &one, &map, &list, &band1};
  for (int i = 0; i < 5; i++) {
    run_one(&ds, dv[i], "v10dense");
    run_one(&ds2, dv[i], "v10dense");
  }
  /* used rows per expert (M = 300): 0, 1, 63, 64, 65, 128, 129, 300, 255 */
  static const int32_t mc[9] = {0, 1, 63, 64, 65, 128, 129, 300, 255};
  static const int32_t cc[9] = {0, 1, 63, 64, 65, 128, 129, 300, 0};
  for (int silu = 0; silu < 2; silu++) {
    const problem m = {XS_GEMM_GROUPED_MASKED, 300, silu ? 272 : 200, 136, 9, mc, silu};
    const problem c = {XS_GEMM_GROUPED_CONTIG, 0, silu ? 272 : 264, 136, 9, cc, silu};
    for (int vi = 0; vi < 5; vi++) {
      run_one(&m, dv[vi], "v10mask");
      run_one(&c, dv[vi], "v10contig");
    }
  }
  static int32_t many[300];
  for (int e = 0; e < 300; e++)
    many[e] = (e * 37) % 200; /* 0..199 rows of 200: 0 to 4 tiles of 64 */
  const problem wide = {XS_GEMM_GROUPED_MASKED, 200, 136, 64, 300, many, 0};
  run_one(&wide, &one, "v10wide");
  run_one(&wide, &map, "v10wide");
  static const int32_t none[3] = {0, 0, 0};
  const problem empty = {XS_GEMM_GROUPED_MASKED, 64, 256, 64, 3, none, 0};
  const problem empty_c = {XS_GEMM_GROUPED_CONTIG, 0, 256, 64, 3, none, 1};
  run_one(&empty, &one, "v10empty");
  run_one(&empty_c, &one, "v10empty");
  run_moe_shapes(&plain, &map, "v10moe");
}

/* v11-v13: v3 with other epilogues. v11 stores a tile's last staging pass (SiLU*mul: its only
 * one) while the next tile's first k-blocks run, and v13 stages the second pass in a ring slot it
 * hands back to the producer one tile later, so what must hold is the chain across tiles;
 * v12 stores from the accumulators after a transpose inside each quad of lanes, so what must hold
 * is every lane's chunk (rows g and g + 8, both groups of a pair, partial tiles in both
 * directions). The cases:
 * 1 and 3 CTAs walking many tiles (every tile but the last of a CTA is stored deferred), K of a
 * single k-block (8, 64: the deferred store runs after k-block 0) and of several (65, 200, 1000),
 * N ending inside the first or second 128-column pass (72, 200) or at a tile edge (256, 512),
 * SiLU*mul (I = 136, 264), map + flags (flags raised once per tile, after both passes), raster N
 * with an odd band, a reversed list, and grouped layouts whose empty experts make CTAs skip tiles
 * between a tile and its deferred store; the MoE shapes at 128 and 512 tokens per expert. */
static void test_v11_v13_epilogues(void) {
  for (int ver = XS_GEMM_V11; ver <= XS_GEMM_V13; ver++) {
    static const int Ms[] = {1, 65, 129, 1000};
    static const int Ns[] = {72, 200, 256, 512};
    static const int Ks[] = {8, 64, 65, 200, 1000};
    const xs_gemm_version vv = (xs_gemm_version)ver;
    variant plain = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0};
    variant one = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 1, 1};
    variant map = {vv, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 3, 0, 1, 3};
    variant list = {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 1, 3};
    const variant* dv[4] = {&plain, &one, &map, &list};
    for (int mi = 0; mi < 4; mi++)
      for (int ni = 0; ni < 4; ni++) {
        const problem d = {XS_GEMM_DENSE, Ms[mi], Ns[ni], Ks[(mi + ni) % 5], 0, NULL, 0};
        run_one(&d, dv[(mi + ni) % 4], "v11dense");
        run_one(&d, dv[(mi + 2 * ni + 1) % 4], "v11dense");
      }
    const problem ds = {XS_GEMM_DENSE, 1000, 272, 200, 0, NULL, 1};  /* SiLU: I = 136 */
    const problem ds2 = {XS_GEMM_DENSE, 129, 528, 1000, 0, NULL, 1}; /* I = 264: three n-blocks */
    const problem dk = {XS_GEMM_DENSE, 300, 520, 64, 0, NULL, 1};    /* one k-block */
    for (int i = 0; i < 4; i++) {
      run_one(&ds, dv[i], "v11dense");
      run_one(&ds2, dv[i], "v11dense");
      run_one(&dk, dv[i], "v11dense");
    }
    static const int32_t mc[9] = {0, 1, 63, 64, 65, 128, 129, 300, 255};
    static const int32_t cc[9] = {0, 1, 63, 0, 65, 128, 0, 300, 0};
    for (int silu = 0; silu < 2; silu++) {
      const problem m = {XS_GEMM_GROUPED_MASKED, 300, silu ? 272 : 520, 136, 9, mc, silu};
      const problem c = {XS_GEMM_GROUPED_CONTIG, 0, silu ? 528 : 264, 72, 9, cc, silu};
      for (int vi = 0; vi < 4; vi++) {
        run_one(&m, dv[vi], "v11mask");
        run_one(&c, dv[vi], "v11contig");
      }
    }
    const problem moe[4] = {
        {XS_GEMM_GROUPED_MASKED, 128, 4096, 7168, 8, k_t128, 1}, /* DeepSeek-V3 gate/up T=128 */
        {XS_GEMM_GROUPED_CONTIG, 0, 4096, 7168, 8, k_t512, 1},   /* DeepSeek-V3 gate/up T=512 */
        {XS_GEMM_GROUPED_MASKED, 512, 4096, 1536, 8, k_t512, 0}, /* Qwen3-235B down T=512 */
        {XS_GEMM_GROUPED_CONTIG, 0, 7168, 2048, 8, k_t512, 0},   /* DeepSeek-V3 down T=512 */
    };
    for (int i = 0; i < 4; i++)
      run_one(&moe[i], i % 2 ? &map : &plain, "v11moe");
  }
}

/* Run `a` twice, into C1 and C2 (n elements each, poisoned first), and read both back into h1 and
 * h2: whether the two runs gave the same bits. */
static int same_bits_twice(xs_gemm_args* a, void* C1, void* C2, uint16_t* h1, uint16_t* h2,
                           size_t n) {
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
  CK(cudaMemset(C1, 0xff, n * 2));
  CK(cudaMemset(C2, 0xff, n * 2));
  a->C = C1;
  XT_EQ_INT(xs_gemm_run(a, e, sc, NULL), XS_OK);
  a->C = C2;
  XT_EQ_INT(xs_gemm_run(a, e, sc, NULL), XS_OK);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(h1, C1, n * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h2, C2, n * 2, cudaMemcpyDeviceToHost));
  return memcmp(h1, h2, n * 2) == 0;
}

/* v14, split-K: explicit splits on shapes whose slices differ by a k-block, with a slice of no
 * k-blocks (S > k-blocks), SiLU*mul, the map store, tile flags (raised once per tile, by the
 * last of its S CTAs), a reversed tile list, raster N, the caller's workspace; a split whose
 * CTAs would not all be resident refused; the same bits on a second run. */
static void test_splitk(void) {
  if (!g_hopper) {
    printf("  skipped: v14 needs a Hopper GPU\n");
    return;
  }
  const problem ps[] = {
      {XS_GEMM_DENSE, 1000, 1040, 520, 0, NULL, 0}, /* 8 x 5 tiles, 9 k-blocks */
      {XS_GEMM_DENSE, 65, 136, 1000, 0, NULL, 0},   /* one tile, 16 k-blocks */
      {XS_GEMM_DENSE, 129, 264, 72, 0, NULL, 0},    /* 2 x 2 tiles, 2 k-blocks: empty slices */
      {XS_GEMM_DENSE, 512, 1280, 8192, 0, NULL, 0}, /* Llama-3-70B TP8 QKV at 512 tokens */
      {XS_GEMM_DENSE, 200, 1040, 520, 0, NULL, 1},  /* SiLU*mul, I = 520: 2 x 5 tiles */
      {XS_GEMM_DENSE, 9, 264, 1000, 0, NULL, 0},    /* M < 128: A's box of 16 rows, stale rows */
      {XS_GEMM_DENSE, 1, 1280, 8192, 0, NULL,
       0}, /* a decode step: the fix-up moves 1 warp's rows */
      {XS_GEMM_DENSE, 40, 528, 1000, 0, NULL, 1}, /* SiLU*mul at 40 rows: 3 warps' rows */
  };
  const int splits[] = {2, 3, 5, 16};
  for (int global = 0; global < 2; global++) /* clusters where they fit; then the workspace */
    for (int w = 256; w >= 64; w /= 2)       /* every tile width (the probe forces one) */
      for (int i = 0; i < (int)(sizeof ps / sizeof ps[0]); i++)
        for (int j = 0; j < 4; j++) {
          xsg_probe.splitk_global = global ? 1 : 2;
          xsg_probe.splitk_bn = w;
          const problem* pr = &ps[i];
          const int S = splits[j];
          const int tiles =
              xsg_cdiv(pr->M, 128) * xsg_cdiv(pr->silu ? pr->N / 2 : pr->N, pr->silu ? w / 2 : w);
          variant plain = {
              XS_GEMM_V14, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0, 0, S};
          if (tiles * S > g_sms) { /* every unit must be resident: refused, nothing launched */
            xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
            a.version = XS_GEMM_V14, a.M = pr->M, a.N = pr->N, a.K = pr->K, a.split_k = S;
            a.A = a.B = a.C = (void*)(uintptr_t)256;
            xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
            e.act = pr->silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE;
            const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
            XT_EQ_INT(xs_gemm_run(&a, e, sc, NULL), XS_ERR_INVALID_ARG);
            XT_CHECK_MSG(strstr(xs_last_error(), "resident") != NULL, "error: %s", xs_last_error());
            continue;
          }
          run_one(pr, &plain, "splitk");
          if (j == 1 || i == 3) {
            variant mapf = {
                XS_GEMM_V14, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 0, 0, S};
            variant listf = {
                XS_GEMM_V14, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 1, 0, 0, S};
            variant rn = {
                XS_GEMM_V14, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_N, 3, 0, 0, 0, 0, S};
            variant ws = {
                XS_GEMM_V14, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 0, 1, S, 1};
            run_one(pr, &mapf, "splitk");
            run_one(pr, &listf, "splitk");
            run_one(pr, &rn, "splitk");
            run_one(pr, &ws, "splitk");
          }
        }
  xsg_probe.splitk_bn = 0;
  xsg_probe.splitk_global = 0;
  /* AUTO: the QKV shape splits (and runs correctly); one past the SMs' half does not */
  variant autov = {XS_GEMM_AUTO, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1};
  run_one(&ps[3], &autov, "splitk");
  /* the same bits on a second run (the sums are taken in slice order), in clusters and through
   * the workspace, and the same bits in both */
  const problem* pr = &ps[3];
  const size_t n = (size_t)pr->M * pr->N;
  void *A = dalloc((size_t)pr->M * pr->K * 2), *B = dalloc((size_t)pr->N * pr->K * 2);
  void *C1 = dalloc(n * 2), *C2 = dalloc(n * 2);
  XT_CHECK(xsg_fill_random(A, (int64_t)pr->M * pr->K, 7, 1.0f) == XS_OK);
  XT_CHECK(xsg_fill_random(B, (int64_t)pr->N * pr->K, 8, 1.0f) == XS_OK);
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.version = XS_GEMM_V14, a.M = pr->M, a.N = pr->N, a.K = pr->K, a.split_k = 6;
  a.A = A, a.B = B;
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
  uint16_t* h1 = (uint16_t*)malloc(n * 2);
  uint16_t* h2 = (uint16_t*)malloc(n * 2);
  uint16_t* h0 = (uint16_t*)malloc(n * 2);
  /* S = 6 on the default 128 x 256 tiles (never clusters), and S = 2 and 3 on 128 x 128 tiles
   * (40 tiles: 66 clusters of 2 fit at once on the H200, 39 of 3; the probe forces clusters
   * where they fit) */
  const int bit_cases[3][2] = {{0, 6}, {128, 2}, {128, 3}};
  for (int c = 0; c < 3; c++) {
    xsg_probe.splitk_bn = bit_cases[c][0];
    a.split_k = bit_cases[c][1];
    xsg_probe.splitk_global = 0; /* (1 from the previous case would say "never") */
    xs_gemm_tiling tc;
    XT_EQ_INT(xs_gemm_tiles(&tc, &a, XS_GEMM_ACT_NONE), XS_OK);
    const int fits = xsg_splitk_fits_clusters(tc.tile_n, tc.splits, tc.count);
    if (c == 1) XT_CHECK_MSG(fits, "v14 split 2 of 40 tiles 128x128: clusters do not fit");
    for (int global = 0; global < 2;
         global++) { /* clusters wherever they fit, then the workspace */
      xsg_probe.splitk_global = global ? 1 : 2;
      XT_CHECK_MSG(same_bits_twice(&a, C1, C2, h1, h2, n), "v14 split %d (%s): two runs differ",
                   a.split_k,
                   global ? "workspace"
                   : fits ? "clusters"
                          : "workspace, clusters do not fit");
      if (global)
        XT_CHECK_MSG(memcmp(h0, h2, n * 2) == 0, "v14 split %d: clusters != workspace", a.split_k);
      memcpy(h0, h2, n * 2);
    }
  }
  xsg_probe.splitk_bn = 0;
  a.split_k = 6;
  /* the workspace's size: none where the split runs as clusters (they fit at once), else the
   * counters and every unit's sums; a workspace too small, or misaligned */
  size_t bytes = 0;
  xsg_probe.splitk_global = 0;
  XT_CHECK(xs_gemm_workspace_size(&bytes, &a, XS_GEMM_ACT_NONE) == XS_OK);
  XT_EQ_INT((long long)bytes,
            (long long)(XSG_SPLITK_COUNTER_BYTES + 20ll * 6 * XSG_SPLITK_TILE_BYTES));
  XT_CHECK(!xsg_splitk_uses_clusters(256, 6, 20)); /* 128 x 256 tiles: never clusters */
  xs_gemm_args a4 = a; /* 40 tiles of 128 x 128 in 2 slices: clusters, no workspace */
  a4.split_k = 2;
  xsg_probe.splitk_bn = 128;
  XT_CHECK(xs_gemm_workspace_size(&bytes, &a4, XS_GEMM_ACT_NONE) == XS_OK);
  XT_EQ_INT((long long)bytes,
            xsg_splitk_uses_clusters(128, 2, 40)
                ? 0ll
                : (long long)(XSG_SPLITK_COUNTER_BYTES + 40ll * 2 * XSG_SPLITK_TILE_BYTES));
  printf("  v14 split 2 of 40 tiles 128x128: clusters %d, workspace %zu bytes\n",
         xsg_splitk_uses_clusters(128, 2, 40), bytes);
  xsg_probe.splitk_bn = 0;
  xsg_probe.splitk_global = 1;
  XT_CHECK(xs_gemm_workspace_size(&bytes, &a, XS_GEMM_ACT_NONE) == XS_OK);
  XT_EQ_INT((long long)bytes,
            (long long)(XSG_SPLITK_COUNTER_BYTES + 20ll * 6 * XSG_SPLITK_TILE_BYTES));
  void* ws = dalloc(bytes);
  a.workspace = ws, a.workspace_bytes = bytes - 1;
  XT_EQ_INT(xs_gemm_run(&a, e, sc, NULL), XS_ERR_INVALID_ARG);
  XT_CHECK_MSG(strstr(xs_last_error(), "workspace_bytes") != NULL, "error: %s", xs_last_error());
  a.workspace = (uint8_t*)ws + 16, a.workspace_bytes = bytes;
  XT_EQ_INT(xs_gemm_run(&a, e, sc, NULL), XS_ERR_INVALID_ARG);
  XT_CHECK_MSG(strstr(xs_last_error(), "aligned") != NULL, "error: %s", xs_last_error());
  xsg_probe.splitk_global = 0;
  /* AUTO's choice and the refusals */
  xs_gemm_tiling t;
  xs_gemm_args q = XS_GEMM_ARGS_INITIALIZER;
  q.M = 512, q.N = 1280, q.K = 8192, q.A = q.B = q.C = (void*)(uintptr_t)256;
  XT_EQ_INT(xs_gemm_tiles(&t, &q, XS_GEMM_ACT_NONE), XS_OK);
  XT_CHECK_MSG(t.version == XS_GEMM_V14 && t.splits >= 2 && t.count * t.splits <= g_sms,
               "QKV 512x1280x8192: AUTO v%d splits %d", (int)t.version, t.splits);
  q.M = q.N = q.K = 8192;
  XT_EQ_INT(xs_gemm_tiles(&t, &q, XS_GEMM_ACT_NONE), XS_OK);
  XT_CHECK_MSG(t.version != XS_GEMM_V14 && t.splits == 1, "8192^3: AUTO v%d splits %d",
               (int)t.version, t.splits);
  /* decode-sized M: v7 with its split of K (session 25); the rule before it with the probe */
  q.M = 16, q.N = 1280, q.K = 8192;
  expect_auto(&q, XS_GEMM_ACT_NONE, XS_GEMM_V7, 0, 0, "dense 16x1280x8192");
  XT_EQ_INT(xs_gemm_tiles(&t, &q, XS_GEMM_ACT_NONE), XS_OK);
  XT_CHECK_MSG(t.splits >= 2, "dense 16x1280x8192: v7 splits %d", t.splits);
  xsg_probe.v7_ksplit = 1;
  expect_auto(&q, XS_GEMM_ACT_NONE, XS_GEMM_V14, 0, 0, "dense 16x1280x8192 (rule before)");
  q.N = 7168;
  expect_auto(&q, XS_GEMM_ACT_NONE, XS_GEMM_V7, 0, 0, "dense 16x7168x8192 (rule before)");
  xsg_probe.v7_ksplit = 0;
  expect_auto(&q, XS_GEMM_ACT_NONE, XS_GEMM_V7, 0, 0, "dense 16x7168x8192");
  q.M = 512, q.N = 1280, q.K = 8192, q.split_k = 1;
  XT_EQ_INT(xs_gemm_tiles(&t, &q, XS_GEMM_ACT_NONE), XS_OK);
  XT_CHECK_MSG(t.version != XS_GEMM_V14, "split_k 1: AUTO v%d", (int)t.version);
  q.version = XS_GEMM_V14; /* v14 with split_k 1: its tile, no split */
  XT_EQ_INT(xs_gemm_tiles(&t, &q, XS_GEMM_ACT_NONE), XS_OK);
  XT_CHECK_MSG(t.version == XS_GEMM_V14 && t.splits == 1, "v14 split_k 1: splits %d", t.splits);
  q.version = XS_GEMM_AUTO;
  q.split_k = 17;
  XT_EQ_INT(xs_gemm_tiles(&t, &q, XS_GEMM_ACT_NONE), XS_ERR_INVALID_ARG);
  q.split_k = 13, q.M = 512, q.N = 2304; /* SiLU*mul, 4 x 9 tiles: 13 slices' sums do not fit */
  XT_EQ_INT(xs_gemm_tiles(&t, &q, XS_GEMM_ACT_SILU_MUL), XS_ERR_INVALID_ARG);
  XT_CHECK_MSG(strstr(xs_last_error(), "fit") != NULL, "error: %s", xs_last_error());
  q.N = 1280;
  q.split_k = 3, q.version = XS_GEMM_V3;
  XT_EQ_INT(xs_gemm_tiles(&t, &q, XS_GEMM_ACT_NONE), XS_ERR_INVALID_ARG);
  int32_t* cnt = (int32_t*)dalloc(16);
  q.version = XS_GEMM_AUTO, q.layout = XS_GEMM_GROUPED_MASKED, q.experts = 2, q.m_counts = cnt;
  XT_EQ_INT(xs_gemm_tiles(&t, &q, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  XT_CHECK_MSG(strstr(xs_last_error(), "DENSE") != NULL, "error: %s", xs_last_error());
  cudaFree(cnt);
  free(h0);
  free(h1);
  free(h2);
  void* bufs[] = {A, B, C1, C2, ws};
  for (int i = 0; i < 5; i++)
    cudaFree(bufs[i]);
}

/* v7's split of K (DENSE, session 25): explicit splits with slices that differ by a k-block, S
 * past the k-blocks (clamped: a slice must multiply something), S = 16, the plan's; SiLU*mul on
 * both tile widths (the narrow one through its 5-D map), the map store, tile flags (raised once,
 * by the last slice), a reversed tile list, raster N, the caller's workspace (its counters left
 * zero); the same bits on a second run; the workspace's size and a too small one refused; a split
 * on a grouped layout refused. */
static void test_v7_ksplit(void) {
  if (!g_hopper) {
    printf("  skipped: v7 needs a Hopper GPU\n");
    return;
  }
  const problem ps[] = {
      {XS_GEMM_DENSE, 1, 1280, 8192, 0, NULL, 0},  /* a decode step (Llama-3-70B TP8 QKV) */
      {XS_GEMM_DENSE, 16, 1040, 520, 0, NULL, 0},  /* 9 k-blocks, a partial last tile */
      {XS_GEMM_DENSE, 33, 264, 1000, 0, NULL, 0},  /* 64-token tiles, 16 k-blocks */
      {XS_GEMM_DENSE, 5, 136, 72, 0, NULL, 0},     /* 2 k-blocks: S clamped to 2 */
      {XS_GEMM_DENSE, 9, 1040, 520, 0, NULL, 1},   /* SiLU*mul, I = 520 */
      {XS_GEMM_DENSE, 40, 528, 1000, 0, NULL, 1},  /* SiLU*mul, 64-token tiles */
      {XS_GEMM_DENSE, 64, 7168, 2048, 0, NULL, 0}, /* wide: the plan's S is small */
  };
  const int splits[] = {0, 2, 3, 5, 16, 8};
  for (int form = 0; form < 2; form++) /* clusters where they fit; the workspace always */
    for (int w = 128; w >= 64; w /= 2) /* both tile widths (the probe forces one) */
      for (int i = 0; i < (int)(sizeof ps / sizeof ps[0]); i++)
        for (int j = 0; j < 6; j++) {
          xsg_probe.v7_kcluster = form ? 1 : 2; /* clusters wherever they fit; never */
          xsg_probe.v7_width = w;
          const problem* pr = &ps[i];
          const int S = splits[j];
          /* the caller's workspace where the sums outgrow the library's (S 16 of 112 tiles) */
          xs_gemm_args q = XS_GEMM_ARGS_INITIALIZER;
          q.version = XS_GEMM_V7, q.M = pr->M, q.N = pr->N, q.K = pr->K, q.split_k = S;
          q.A = q.B = q.C = (void*)(uintptr_t)256;
          size_t need = 0;
          XT_CHECK(xs_gemm_workspace_size(
                       &need, &q, pr->silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE) == XS_OK);
          const int big = need > XSG_SPLITK_COUNTER_BYTES + (size_t)g_sms * XSG_SPLITK_TILE_BYTES;
          if (big) { /* refused without one */
            xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
            e.act = pr->silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE;
            const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
            XT_EQ_INT(xs_gemm_run(&q, e, sc, NULL), XS_ERR_UNSUPPORTED);
            XT_CHECK_MSG(strstr(xs_last_error(), "give one") != NULL, "error: %s", xs_last_error());
          }
          variant plain = {
              XS_GEMM_V7, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 0, 0, S, big};
          run_one(pr, &plain, "v7split");
          if (j == 2 || (i == 0 && j == 0)) {
            variant mapf = {XS_GEMM_V7, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 0, 0,
                            S};
            variant listf = {XS_GEMM_V7, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 1, 0, 0,
                             S};
            variant rn = {XS_GEMM_V7, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_N, 3, 0, 0, 0, 0,
                          S};
            variant ws = {XS_GEMM_V7, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 0, 1, S,
                          1};
            variant few = {XS_GEMM_V7, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 3, 0,
                           S};
            run_one(pr, &mapf, "v7split");
            run_one(pr, &listf, "v7split");
            run_one(pr, &rn, "v7split");
            run_one(pr, &ws, "v7split");
            run_one(pr, &few, "v7split"); /* 3 CTAs: units run one after another */
          }
        }
  xsg_probe.v7_width = 0;
  xsg_probe.v7_kcluster = 0;
  /* the tiling: the plan splits the decode step, the caller's S is clamped to the k-blocks */
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.version = XS_GEMM_V7, a.M = 1, a.N = 1280, a.K = 8192;
  a.A = a.B = a.C = (void*)(uintptr_t)256;
  xs_gemm_tiling t;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
  XT_CHECK_MSG(t.splits >= 2 && t.splits <= XSG_V7_KSPLIT_MAX, "v7 1x1280x8192: splits %d",
               t.splits);
  printf("  v7 1x1280x8192: %d tiles of %dx%d, split %d\n", t.count, t.tile_m, t.tile_n, t.splits);
  a.M = 5, a.N = 136, a.K = 72, a.split_k = 5;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
  XT_EQ_INT(t.splits, 2);
  /* the workspace: the counters' block and every unit's sums; too small, refused (the probe
   * keeps the split out of clusters, which need none) */
  xsg_probe.v7_kcluster = 1;
  a.M = 16, a.N = 1280, a.K = 8192, a.split_k = 4;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
  size_t bytes = 0;
  XT_CHECK(xs_gemm_workspace_size(&bytes, &a, XS_GEMM_ACT_NONE) == XS_OK);
  XT_EQ_INT((long long)bytes,
            (long long)(XSG_SPLITK_COUNTER_BYTES + (int64_t)t.count * 4 * t.tile_m * t.tile_n * 4));
  const size_t n = (size_t)16 * 1280;
  void *A = dalloc((size_t)16 * 8192 * 2), *B = dalloc((size_t)1280 * 8192 * 2);
  void *C1 = dalloc(n * 2), *C2 = dalloc(n * 2), *ws = dalloc(bytes);
  CK(cudaMemset(ws, 0, bytes));
  XT_CHECK(xsg_fill_random(A, 16 * 8192, 7, 1.0f) == XS_OK);
  XT_CHECK(xsg_fill_random(B, 1280 * 8192, 8, 1.0f) == XS_OK);
  a.A = A, a.B = B;
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
  a.workspace = ws, a.workspace_bytes = bytes - 1;
  XT_EQ_INT(xs_gemm_run(&a, e, sc, NULL), XS_ERR_INVALID_ARG);
  XT_CHECK_MSG(strstr(xs_last_error(), "workspace_bytes") != NULL, "error: %s", xs_last_error());
  /* the same bits on two runs (sums added in slice order, whichever slice comes last), and in
   * both forms at the same S (S = 8: clusters of 4; 20 of them fit at once on the H200) */
  a.workspace = NULL, a.workspace_bytes = 0, a.split_k = 8;
  uint16_t* h1 = (uint16_t*)malloc(n * 2);
  uint16_t* h2 = (uint16_t*)malloc(n * 2);
  uint16_t* h0 = (uint16_t*)malloc(n * 2);
  for (int form = 1; form >= 0; form--) {
    xsg_probe.v7_kcluster = form ? 1 : 2;
    const int same = same_bits_twice(&a, C1, C2, h1, h2, n);
    XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
    const int cl = xsg_v7_uses_clusters(t.tile_m, t.tile_n, t.splits, t.count);
    XT_CHECK_MSG(form == 1 ? !cl : cl == 4, "v7 split 8 of %d tiles: clusters of %d (form %d)",
                 t.count, cl, form);
    XT_CHECK_MSG(same, "v7 split (%s): two runs differ", form ? "workspace" : "clusters");
    if (!form) XT_CHECK_MSG(memcmp(h0, h2, n * 2) == 0, "v7 split: clusters != workspace");
    memcpy(h0, h2, n * 2);
  }
  free(h0);
  /* grouped: no split */
  int32_t* cnt = (int32_t*)dalloc(16);
  xs_gemm_args g = a;
  g.layout = XS_GEMM_GROUPED_MASKED, g.experts = 2, g.m_counts = cnt, g.split_k = 2;
  XT_EQ_INT(xs_gemm_tiles(&t, &g, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  XT_CHECK_MSG(strstr(xs_last_error(), "DENSE") != NULL, "error: %s", xs_last_error());
  g.split_k = 0;
  XT_EQ_INT(xs_gemm_tiles(&t, &g, XS_GEMM_ACT_NONE), XS_OK);
  XT_EQ_INT(t.splits, 1);
  free(h1);
  free(h2);
  void* bufs[] = {A, B, C1, C2, ws, cnt};
  for (int i = 0; i < 6; i++)
    cudaFree(bufs[i]);
}

/* A dense M x N x K problem with random A and B, C, its fp32 reference and row states (all rows
 * checked): the split graph tests' data. */
typedef struct graph_problem {
  int M, N, K;
  void *A, *B, *C;
  float* ref;
  uint8_t* state;
  xs_gemm_args a; /* AUTO on it */
} graph_problem;

static graph_problem graph_problem_make(int M, int N, int K, uint64_t seed) {
  graph_problem g;
  g.M = M, g.N = N, g.K = K;
  g.A = dalloc((size_t)M * K * 2), g.B = dalloc((size_t)N * K * 2), g.C = dalloc((size_t)M * N * 2);
  g.ref = (float*)dalloc((size_t)M * N * 4);
  g.state = (uint8_t*)dalloc(M);
  CK(cudaMemset(g.state, XSG_ROW_CHECK, M));
  XT_CHECK(xsg_fill_random(g.A, (int64_t)M * K, seed, 1.0f) == XS_OK);
  XT_CHECK(xsg_fill_random(g.B, (int64_t)N * K, seed + 1, 1.0f) == XS_OK);
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.M = M, a.N = N, a.K = K, a.A = g.A, a.B = g.B, a.C = g.C;
  g.a = a;
  XT_CHECK(xsg_reference(g.ref, NULL, &g.a, 0, NULL, NULL, g_blas) == XS_OK);
  return g;
}

static void graph_problem_free(graph_problem* g) {
  void* bufs[] = {g->A, g->B, g->C, g->ref, g->state};
  for (int i = 0; i < 5; i++)
    cudaFree(bufs[i]);
}

/* One capture of a split: on a new stream (warm: after one launch of AUTO outside the capture,
 * which makes the stream's library workspace), capture AUTO's launch and then the explicit
 * split_k = 3, which must return ex_want; the captured AUTO launch (the graph's root) must have
 * `grid` CTAs; three replays with C poisoned first must be correct. */
static void graph_capture_case(graph_problem* gp, int warm, xs_result ex_want, int grid,
                               const char* what) {
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  if (warm) {
    XT_EQ_INT(xs_gemm_run(&gp->a, e, sc, st), XS_OK);
    CK(cudaStreamSynchronize(st));
  }
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  XT_EQ_INT(xs_gemm_run(&gp->a, e, sc, st), XS_OK);
  xs_gemm_args ex = gp->a;
  ex.split_k = 3;
  XT_EQ_INT(xs_gemm_run(&ex, e, sc, st), ex_want);
  CK(cudaStreamEndCapture(st, &g));
  {
    cudaGraphNode_t root[2];
    size_t nroot = 2;
    CK(cudaGraphGetRootNodes(g, root, &nroot));
    cudaKernelNodeParams kp;
    XT_EQ_INT((int)nroot, 1);
    CK(cudaGraphKernelNodeGetParams(root[0], &kp));
    XT_CHECK_MSG((int)kp.gridDim.x == grid, "%s: captured AUTO ran %u CTAs, expected %d", what,
                 kp.gridDim.x, grid);
  }
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int rep = 0; rep < 3; rep++) {
    XT_CHECK(xsg_poison(gp->C, (int64_t)gp->M * gp->N) == XS_OK);
    CK(cudaDeviceSynchronize());
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    xsg_check chk;
    XT_CHECK(xsg_compare(&chk, gp->C, gp->ref, gp->state, gp->M, gp->N) == XS_OK);
    XT_CHECK_MSG(xsg_check_ok(&chk), "%s: rel_err %.2e wrong %lld", what, chk.rel_err, chk.wrong);
    printf("  %s %s: rel_err %.2e wrong %lld\n", xsg_check_ok(&chk) ? "ok  " : "FAIL", what,
           chk.rel_err, chk.wrong);
  }
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaStreamDestroy(st));
}

/* v7's split in CUDA graphs: AUTO's split (a decode step) captured on a stream whose library
 * workspace exists replays correctly three times; on a fresh stream the capture splits in
 * clusters where they fit (no workspace), else runs unsplit (the library makes no workspace while
 * capturing), and is correct; an explicit odd split_k (never clusters) there is refused without
 * breaking the capture. Both forms (the probe keeps the split out of clusters). */
static void test_v7_ksplit_graph(void) {
  if (!g_hopper) {
    printf("  skipped: v7 needs a Hopper GPU\n");
    return;
  }
  graph_problem gp = graph_problem_make(16, 1280, 8192, 41);
  xs_gemm_tiling t;
  for (int mode = 0; mode < 4; mode++) {
    const int warm = mode % 2 == 0, form = mode / 2;
    xsg_probe.v7_kcluster = form; /* 0 the library's, 1 never clusters */
    XT_CHECK(xs_gemm_tiles(&t, &gp.a, XS_GEMM_ACT_NONE) == XS_OK);
    XT_CHECK_MSG(t.version == XS_GEMM_V7 && t.splits >= 2, "AUTO v%d S %d", (int)t.version,
                 t.splits);
    /* a fresh stream's capture: clusters of the most C <= S / 2 that fit (the library's) */
    const int cl =
        !warm && !form ? xsg_v7_fits_clusters(t.tile_m, t.tile_n, t.splits, t.count, 0) : 0;
    if (!warm && !form)
      XT_CHECK_MSG(cl >= 2, "v7 S %d of %d tiles: no clusters fit", t.splits, t.count);
    const int grid = cl ? t.count * cl : xsg_v7_ctas(t.count * (warm ? t.splits : 1), g_sms);
    /* the explicit S = 3 is odd: never clusters, so it needs the workspace */
    graph_capture_case(&gp, warm, warm ? XS_OK : XS_ERR_UNSUPPORTED, grid,
                       cl     ? "v7 graph, fresh stream, split in clusters"
                       : warm ? "v7 graph, warm stream, split through the workspace"
                              : "v7 graph, fresh stream, unsplit (clusters not allowed)");
  }
  xsg_probe.v7_kcluster = 0;
  graph_problem_free(&gp);
}

/* v14 in CUDA graphs, its split in clusters (no workspace) and through the workspace: AUTO's
 * split captured on a stream whose library workspace exists (made by an earlier launch) replays
 * correctly three times; on a fresh stream the capture splits in clusters where they fit, else
 * runs unsplit (the library makes no workspace while capturing), and is still correct; an
 * explicit split_k there is refused without breaking the capture unless it runs as clusters. */
static void test_splitk_graph(void) {
  if (!g_hopper) {
    printf("  skipped: v14 needs a Hopper GPU\n");
    return;
  }
  graph_problem gp = graph_problem_make(512, 1280, 8192, 31);
  xs_gemm_tiling t;
  XT_CHECK(xs_gemm_tiles(&t, &gp.a, XS_GEMM_ACT_NONE) == XS_OK);
  XT_CHECK_MSG(t.version == XS_GEMM_V14 && t.splits >= 2, "AUTO v%d S %d", (int)t.version,
               t.splits);
  /* clusters of S (no workspace) where AUTO's split fits as clusters, and the explicit S = 3 */
  xs_gemm_args q3 = gp.a;
  q3.split_k = 3;
  xs_gemm_tiling t3;
  XT_CHECK(xs_gemm_tiles(&t3, &q3, XS_GEMM_ACT_NONE) == XS_OK);
  for (int mode = 0; mode < 4; mode++) {
    const int warm = mode % 2 == 0, global = mode >= 2;
    xsg_probe.splitk_global = global;
    /* AUTO on a fresh stream being captured: its S if that runs as clusters, else the most S
     * <= 8 that does, else unsplit */
    int s_fresh = t.splits < 8 ? t.splits : 8;
    while (s_fresh >= 2 && !xsg_splitk_fits_clusters(t.tile_n, s_fresh, t.count))
      s_fresh--;
    const int auto_ws = s_fresh < 2;
    const int ex_ws = !xsg_splitk_fits_clusters(t3.tile_n, 3, t3.count);
    /* the captured AUTO launch: one CTA per tile and slice; the caller's split with no workspace
     * to be had refused unless it runs as clusters */
    graph_capture_case(&gp, warm, warm || !ex_ws ? XS_OK : XS_ERR_UNSUPPORTED,
                       t.count * (warm      ? t.splits
                                  : auto_ws ? 1
                                            : s_fresh),
                       warm      ? (global ? "graph, warm stream, workspace" : "graph, warm stream")
                       : auto_ws ? "graph, fresh stream (unsplit)"
                                 : "graph, fresh stream, split in clusters");
  }
  xsg_probe.splitk_global = 0;
  graph_problem_free(&gp);
}

/* v3's and v11's last partial wave in column halves (sched.h xsg_tail_slots; on unless tile
 * flags are set): few CTAs (max_ctas 5, 8, 11) so that a small rest of tiles is left for the last
 * wave, on shapes whose last n-block is partial (the second half of a tile then has work, or lies
 * wholly past N and must be skipped), SiLU*mul (a half: 64 gate + 64 up rows), one k-block, both
 * grouped layouts with empty and one-token experts, the map epilogue, raster N, a caller's list
 * and PDL; with flags nothing is split (every tile's flag raised once by the CTA that stored it
 * whole, which run_one checks). Counts the launches whose schedule has halves, so that the test
 * cannot pass without running any. */
static void test_tail_split(void) {
  const int split0 = g_tail_split;
  for (int ver = 0; ver < 2; ver++) {
    const xs_gemm_version vv = ver ? XS_GEMM_V11 : XS_GEMM_V3;
    const variant vs[5] = {
        {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 5},
        {vv, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 3, 0, 0, 8},
        {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 1, 0, 11},
        {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 8, 1},
        {vv, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 1, 5}, /* flags: no halves */
    };
    static const int32_t mc[9] = {0, 1, 63, 64, 65, 128, 129, 300, 255};
    static const int32_t cc[9] = {0, 1, 63, 0, 65, 128, 0, 300, 0};
    const problem ps[] = {
        {XS_GEMM_DENSE, 300, 1000, 136, 0, NULL, 0}, /* 12 tiles; half 1 of n-block 3: 104 cols */
        {XS_GEMM_DENSE, 300, 800, 200, 0, NULL, 0},  /* half 1 of n-block 3 past N */
        {XS_GEMM_DENSE, 1000, 520, 64, 0, NULL, 0},  /* one k-block */
        {XS_GEMM_DENSE, 129, 608, 1000, 0, NULL, 1}, /* SiLU, I = 304: last half past I */
        {XS_GEMM_DENSE, 1000, 544, 72, 0, NULL, 1},  /* SiLU, I = 272 */
        {XS_GEMM_GROUPED_MASKED, 300, 520, 136, 9, mc, 0},
        {XS_GEMM_GROUPED_MASKED, 300, 272, 136, 9, mc, 1},
        {XS_GEMM_GROUPED_CONTIG, 0, 264, 72, 9, cc, 0},
        {XS_GEMM_GROUPED_CONTIG, 0, 528, 72, 9, cc, 1},
    };
    for (int i = 0; i < (int)(sizeof ps / sizeof ps[0]); i++)
      for (int k = 0; k < 5; k++)
        run_one(&ps[i], &vs[(i + k) % 5], ver ? "v11tail" : "v3tail");
  }
  const int split_runs = g_tail_split - split0;
  printf("  %d launches with halves in their schedule\n", split_runs);
  XT_CHECK_MSG(split_runs >= 10, "only %d launches split their last wave", split_runs);
}

/* CONTIG's speculative start (session 16, gemm_v2.cu): with each CTA's first tile from the host
 * and M split evenly into whole tiles per expert, the producer loads the first k-blocks of its
 * first tile with the even split's expert before the offsets arrive. Right guesses (balanced
 * counts) and wrong ones (uneven counts with M still a multiple of E x 128: the consumers drain
 * the guessed slots), one and two k-blocks (fewer than the guessed three), three (the whole tile
 * guessed: the producer looks for its next tile at once) and more, the tile widths of v2 (128, six
 * stages), v3 / v11 / v13 (256) and v4 (224), SiLU*mul, raster N, other bands, the map epilogue,
 * flags and PDL, and a buffer longer than the segments (CTAs whose first tile has no rows, whose
 * rows must stay untouched). Counts the launches with a guess and the CTAs whose guess was right
 * and wrong, so that the test cannot pass without both paths. */
static void test_contig_spec(void) {
  const int l0 = g_spec_launches, h0 = g_spec_hits, m0 = g_spec_misses;
  static const int32_t even[4] = {256, 256, 256, 256};
  static const int32_t uneven[4] = {512, 0, 256, 256}; /* m-blocks 2, 3: guess 1, owner 0 */
  static const int32_t last[4] = {0, 0, 0, 1024};      /* only m-blocks 6, 7 guessed right */
  static const int32_t tiny[8] = {128, 128, 128, 128, 128, 128, 128, 128};
  static const int32_t part[4] = {128, 100, 128, 0}; /* 384 of a 1024-row buffer: m-blocks 3-7
                                                         have no rows (the first tile's too) */
  const problem ps[] = {
      {XS_GEMM_GROUPED_CONTIG, 0, 520, 200, 4, even, 0},
      {XS_GEMM_GROUPED_CONTIG, 0, 520, 64, 4, even, 1},
      {XS_GEMM_GROUPED_CONTIG, 0, 776, 1000, 4, uneven, 0},
      {XS_GEMM_GROUPED_CONTIG, 0, 528, 72, 4, uneven, 1},
      {XS_GEMM_GROUPED_CONTIG, 0, 1000, 136, 4, last, 0},
      {XS_GEMM_GROUPED_CONTIG, 0, 264, 64, 8, tiny, 1},
      {XS_GEMM_GROUPED_CONTIG, 1024, 520, 200, 4, part, 0},
  };
  const xs_gemm_version vers[5] = {XS_GEMM_V3, XS_GEMM_V11, XS_GEMM_V13, XS_GEMM_V2, XS_GEMM_V4};
  const variant vs[5] = {
      {XS_GEMM_V3, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 5},
      {XS_GEMM_V3, XS_GEMM_STORE_MAP, XS_GEMM_ORDER_RASTER_N, 3, 0, 0, 8},
      {XS_GEMM_V3, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 1, 0, 1, 7},
      {XS_GEMM_V3, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_M, 0, 0, 0, 6, 1},
      {XS_GEMM_V3, XS_GEMM_STORE_LOCAL, XS_GEMM_ORDER_RASTER_N, 0, 0, 0, 0},
  };
  for (int i = 0; i < (int)(sizeof ps / sizeof ps[0]); i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 2; k++) {
        variant v = vs[(i + j + k) % 5];
        v.version = vers[j];
        run_one(&ps[i], &v, "cspec");
      }
  const int launches = g_spec_launches - l0, hits = g_spec_hits - h0, misses = g_spec_misses - m0;
  printf("  %d launches with a guessed first tile: %d CTAs guessed right, %d wrong\n", launches,
         hits, misses);
  XT_CHECK_MSG(launches >= 30 && hits >= 100 && misses >= 20,
               "too few guesses to test both paths: %d launches, %d right, %d wrong", launches,
               hits, misses);
}

/* What v10 refuses (XS_ERR_UNSUPPORTED, from xs_gemm_tiles and xs_gemm_run): the shapes TMA
 * cannot describe, like v2-v9 (K or N, or N / 2 with SiLU*mul, not a multiple of 8; A, B or C
 * not 16-byte aligned). What it must run although nothing is computed: all-empty experts. */
static void test_v10_refusals(void) {
  if (!g_hopper) {
    printf("  (not Hopper: v10 reports unsupported everywhere)\n");
    return;
  }
  void* buf = dalloc(1 << 20);
  int32_t* ints = (int32_t*)dalloc(4096);
  CK(cudaMemset(ints, 0, 4096));
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.A = buf, a.B = buf, a.C = buf, a.m_counts = ints, a.m_offsets = ints;
  a.version = XS_GEMM_V10, a.M = 256, a.N = 512, a.K = 64;
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule s = XS_GEMM_SCHEDULE_INITIALIZER;
  xs_gemm_tiling t;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
  XT_CHECK(t.version == XS_GEMM_V10 && t.tile_m == 64 && t.tile_n == 256 && t.count == 4 * 2);
  a.K = 63;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_UNSUPPORTED);
  a.K = 64, a.N = 60;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  a.N = 264; /* I = 132: not a multiple of 8 */
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_SILU_MUL), XS_ERR_UNSUPPORTED);
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
  a.A = (const char*)buf + 2; /* A not 16-byte aligned */
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  a.A = buf, a.C = (char*)buf + 8; /* C not 16-byte aligned (STORE_LOCAL) */
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_UNSUPPORTED);
  a.C = buf;
  a.layout = XS_GEMM_GROUPED_CONTIG, a.experts = 300; /* zero offsets: valid, no rows */
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_OK);
  a.layout = XS_GEMM_GROUPED_MASKED, a.experts = 256; /* all counts 0: compacted, no work */
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_OK);
  a.experts = 300; /* whole-buffer walk, every tile skipped */
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_OK);
  CK(cudaDeviceSynchronize());
  cudaFree(buf);
  cudaFree(ints);
}

/* What v8 refuses: a caller's tile list (xs_gemm_run), CONTIG with more than 256 experts, and
 * shapes TMA cannot describe (like v2-v7, v9). */
static void test_v8_refusals(void) {
  if (!g_hopper) {
    printf("  (not Hopper: v8 reports unsupported everywhere)\n");
    return;
  }
  void* buf = dalloc(1 << 20);
  int32_t* ints = (int32_t*)dalloc(4096);
  CK(cudaMemset(ints, 0, 4096));
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.A = buf, a.B = buf, a.C = buf, a.m_counts = ints, a.m_offsets = ints;
  a.version = XS_GEMM_V8, a.M = 256, a.N = 256, a.K = 64;
  xs_gemm_tiling t;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
  XT_CHECK(t.version == XS_GEMM_V8 && t.tile_m == 128 && t.tile_n == 256 && t.count == 2);
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_SILU_MUL), XS_OK);
  XT_CHECK(t.tile_n == 128 && t.n_blocks == 1);
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule s = XS_GEMM_SCHEDULE_INITIALIZER;
  xs_gemm_schedule list = XS_GEMM_SCHEDULE_INITIALIZER;
  list.order = XS_GEMM_ORDER_LIST, list.tiles = ints, list.ntiles = 2;
  XT_EQ_INT(xs_gemm_run(&a, e, list, NULL), XS_ERR_UNSUPPORTED);
  a.layout = XS_GEMM_GROUPED_CONTIG, a.experts = 257; /* zero offsets: valid, no rows */
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  a.experts = 256;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_OK);      /* every segment empty: nothing to compute */
  a.layout = XS_GEMM_GROUPED_MASKED, a.experts = 300; /* masked: no limit (whole-buffer walk) */
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_OK);
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_OK); /* all counts 0 */
  a.layout = XS_GEMM_DENSE, a.K = 63;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  a.K = 64, a.N = 60;
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  a.N = 256, a.A = (const char*)buf + 2; /* A not 16-byte aligned */
  XT_EQ_INT(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE), XS_ERR_UNSUPPORTED);
  CK(cudaDeviceSynchronize());
  cudaFree(buf);
  cudaFree(ints);
}

static void test_arguments(void) {
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  void* buf = dalloc(1 << 20);
  a.M = 64, a.N = 63, a.K = 64, a.A = buf, a.B = buf, a.C = buf;
  xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule s = XS_GEMM_SCHEDULE_INITIALIZER;
  e.act = XS_GEMM_ACT_SILU_MUL;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_INVALID_ARG); /* odd N with SiLU */
  e.act = XS_GEMM_ACT_NONE;
  a.version = XS_GEMM_V2;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_UNSUPPORTED); /* N % 8 */
  a.version = XS_GEMM_AUTO;
  a.M = 0;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_OK); /* nothing to do */
  /* a caller built against the struct before m_counts_host (session 9) stays valid */
  a.size = offsetof(xs_gemm_args, m_counts_host);
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_OK);
  a.size = offsetof(xs_gemm_args, m_counts_host) - 1;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_INVALID_ARG);
  a.size = 8;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_INVALID_ARG);
  XT_EQ_INT(xs_gemm_run(NULL, e, s, NULL), XS_ERR_INVALID_ARG);
  CK(cudaDeviceSynchronize());
  cudaFree(buf);
}

/* xsg_silu_mul4 (one reciprocal per four outputs, every Hopper SiLU*mul epilogue) on values the
 * random GEMM inputs rarely reach, in fp32 (before the bf16 rounding): relative error below 2e-5
 * (__expf's argument rounding dominates), and for g < -21.4 an absolute error below 4.7e-10 |g u|
 * (e^-g clamped to 2^31); NaN stays NaN; an output does not depend on its three neighbours in
 * the group of four, whatever their magnitude. */
__global__ void silu4_kernel(const float* g, const float* u, float* o, int n) {
  const int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 3 < n) {
    const float4 r = xsg_silu_mul4(make_float4(g[i], g[i + 1], g[i + 2], g[i + 3]),
                                   make_float4(u[i], u[i + 1], u[i + 2], u[i + 3]));
    o[i] = r.x, o[i + 1] = r.y, o[i + 2] = r.z, o[i + 3] = r.w;
  }
}

static void test_silu_mul4(void) {
  if (!g_hopper) return;
  const float special[] = {-1000.f, -200.f, -88.f, -87.f, -40.f,  -21.5f, -21.4f, -21.f,
                           -10.f,   -3.f,   -1.f,  -0.5f, -1e-3f, 0.f,    1e-3f,  0.5f,
                           1.f,     3.f,    10.f,  21.f,  40.f,   88.f,   200.f,  1000.f};
  const int ns = (int)(sizeof special / sizeof special[0]);
  const int n = 4 * 4096;
  float *hg = (float*)malloc(n * 4), *hu = (float*)malloc(n * 4), *ho = (float*)malloc(n * 4);
  uint32_t h = 12345;
  for (int i = 0; i < n; i++) { /* specials next to each other and to random values */
    h = h * 1664525u + 1013904223u;
    const float r = (float)(h >> 8) / 16777216.0f; /* [0, 1) */
    hg[i] = i % 3 ? special[(i / 3 + (h >> 4)) % ns] : (r - 0.5f) * 60.0f;
    hu[i] = (i % 5 ? 1.0f : -3.0f) * (0.25f + r);
  }
  hg[7] = nanf(""), hu[10] = nanf("");
  float *dg, *du, *dout;
  CK(cudaMalloc(&dg, n * 4));
  CK(cudaMalloc(&du, n * 4));
  CK(cudaMalloc(&dout, n * 4));
  CK(cudaMemcpy(dg, hg, n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(du, hu, n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0xff, n * 4)); /* NaN poison */
  silu4_kernel<<<n / 4 / 128, 128>>>(dg, du, dout, n);
  CK(cudaGetLastError());
  CK(cudaMemcpy(ho, dout, n * 4, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; i++) {
    const double g = hg[i], u = hu[i], ref = g / (1.0 + exp(-g)) * u;
    if (isnan(g) || isnan(u)) {
      bad += !isnan(ho[i]);
      continue;
    }
    const double tol = 2e-5 * fabs(ref) + 5e-10 * fabs(g * u) + 1e-30;
    if (!(fabs(ho[i] - ref) <= tol)) {
      if (bad < 5)
        printf("#   silu4: g %g u %g: got %.9g, want %.9g (tolerance %.3g)\n", g, u, ho[i], ref,
               tol);
      bad++;
    }
  }
  XT_CHECK_MSG(bad == 0, "xsg_silu_mul4: %d of %d outputs outside the bound", bad, n);
  cudaFree(dg), cudaFree(du), cudaFree(dout);
  free(hg), free(hu), free(ho);
}

int main(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) XT_SKIP("no CUDA GPU");
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  g_hopper = prop.major == 9;
  g_sms = prop.multiProcessorCount;
  printf("# test_gemm on %s (sm_%d%d, %d SMs)%s\n", prop.name, prop.major, prop.minor,
         prop.multiProcessorCount, g_hopper ? "" : ": not Hopper, v2-v13 report unsupported");
  if (cublasCreate(&g_blas) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublasCreate failed\n");
    return 1;
  }
  XT_RUN(test_arguments);
  XT_RUN(test_silu_mul4);
  XT_RUN(test_epilogues_and_orders);
  XT_RUN(test_grouped);
  XT_RUN(test_masked_schedules);
  XT_RUN(test_v7_small_rows);
  XT_RUN(test_auto_choice);
  XT_RUN(test_v8_pairs);
  XT_RUN(test_v8_refusals);
  XT_RUN(test_v9_wide);
  XT_RUN(test_v10_streams);
  XT_RUN(test_v10_refusals);
  XT_RUN(test_v11_v13_epilogues);
  XT_RUN(test_tail_split);
  XT_RUN(test_splitk);
  XT_RUN(test_splitk_graph);
  XT_RUN(test_v7_ksplit);
  XT_RUN(test_v7_ksplit_graph);
  XT_RUN(test_contig_spec);
  XT_RUN(test_dense_odd_shapes);
  XT_RUN(test_dense_bench_shapes);
  printf("# %d runs checked, %d unsupported (v2-v13 on shapes TMA cannot describe; v8 with a tile "
         "list)\n",
         g_runs, g_unsupported);
  cublasDestroy(g_blas);
  return XT_END();
}
