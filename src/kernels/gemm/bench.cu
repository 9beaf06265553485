/* bench.cu — the GEMM benchmark (see bench.h): dense shapes against cublasGemmEx, grouped MoE
 * shapes against a loop of cuBLAS calls, cublasGemmStridedBatchedEx (balanced counts) and one
 * dense cuBLAS GEMM of the same total size. Every version is validated before it is timed.
 */
#include <cublas_v2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>

#include "core/internal.h"
#include "kernels/gemm/bench.h"
#include "kernels/gemm/check.h"
#include "xstage/gemm.h"

namespace {

constexpr int MAX_REPS = 20;

struct bench {
  cublasHandle_t blas = NULL;
  cudaEvent_t ev[MAX_REPS + 1] = {};
  xsg_bench_row* rows;
  int max_rows, n = 0;
  double flops = 0;
  int reps = 0;
  void* allocs[16] = {};
  int nallocs = 0;
};

xs_result cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return XS_OK;
  return xsi_set_error(XS_ERR_CUDA, "gemm bench: %s: %s", what, cudaGetErrorString(e));
}

xs_result alloc(bench* b, void** p, size_t bytes) {
  XSI_ARG(b->nallocs < 16, "gemm bench: too many buffers");
  XSI_CHECK(cuda_ok(cudaMalloc(p, bytes ? bytes : 16), "cudaMalloc"));
  b->allocs[b->nallocs++] = *p;
  return XS_OK;
}

/* Median ms of `fn` (one call) over the case's repetitions, after one warm-up call. */
template <class F> xs_result time_ms(bench* b, F fn, int reps, double* ms) {
  XSI_CHECK(fn());
  XSI_CHECK(cuda_ok(cudaDeviceSynchronize(), "warm-up"));
  if (reps <= 0) {
    XSI_CHECK(cuda_ok(cudaEventRecord(b->ev[0]), "event"));
    XSI_CHECK(fn());
    XSI_CHECK(cuda_ok(cudaEventRecord(b->ev[1]), "event"));
    XSI_CHECK(cuda_ok(cudaEventSynchronize(b->ev[1]), "event"));
    float est = 0;
    cudaEventElapsedTime(&est, b->ev[0], b->ev[1]);
    reps = est > 0 ? (int)(40.0 / est) : MAX_REPS;
    reps = reps < 3 ? 3 : reps > MAX_REPS ? MAX_REPS : reps;
  }
  double t[MAX_REPS];
  XSI_CHECK(cuda_ok(cudaEventRecord(b->ev[0]), "event"));
  for (int i = 0; i < reps; i++) {
    XSI_CHECK(fn());
    XSI_CHECK(cuda_ok(cudaEventRecord(b->ev[i + 1]), "event"));
  }
  XSI_CHECK(cuda_ok(cudaEventSynchronize(b->ev[reps]), "timed runs"));
  for (int i = 0; i < reps; i++) {
    float f = 0;
    cudaEventElapsedTime(&f, b->ev[i], b->ev[i + 1]);
    t[i] = f;
  }
  std::sort(t, t + reps);
  *ms = t[reps / 2];
  return XS_OK;
}

/* Median ms of `fa` and of `fb` timed alternately (a, b, a, b, ...) after one warm-up call of
 * each, so that both see the same clocks and temperature. NOTE: an H200 running large GEMMs is
 * power-limited and its SM clock drifts over seconds; two rows timed one after the other can
 * differ by a few percent with identical kernels (run 1: the map hook came out 5.4% faster
 * than the TMA-store epilogue at 8192^3 and 7% slower at 4096x28672). */
template <class FA, class FB>
xs_result time_pair(FA fa, FB fb, int reps, double* ms_a, double* ms_b) {
  enum { PAIRS = 15 };
  reps = reps <= 0 || reps > PAIRS ? PAIRS : reps;
  cudaEvent_t ev[2 * PAIRS + 1] = {};
  xs_result res = XS_OK;
  for (int i = 0; res == XS_OK && i <= 2 * reps; i++)
    res = cuda_ok(cudaEventCreate(&ev[i]), "cudaEventCreate");
  if (res == XS_OK) res = fa();
  if (res == XS_OK) res = fb();
  if (res == XS_OK) res = cuda_ok(cudaDeviceSynchronize(), "warm-up");
  if (res == XS_OK) res = cuda_ok(cudaEventRecord(ev[0]), "event");
  for (int i = 0; res == XS_OK && i < reps; i++) {
    res = fa();
    if (res == XS_OK) res = cuda_ok(cudaEventRecord(ev[2 * i + 1]), "event");
    if (res == XS_OK) res = fb();
    if (res == XS_OK) res = cuda_ok(cudaEventRecord(ev[2 * i + 2]), "event");
  }
  if (res == XS_OK) res = cuda_ok(cudaEventSynchronize(ev[2 * reps]), "timed pairs");
  if (res == XS_OK) {
    double ta[PAIRS], tb[PAIRS];
    for (int i = 0; i < reps; i++) {
      float f = 0, g = 0;
      cudaEventElapsedTime(&f, ev[2 * i], ev[2 * i + 1]);
      cudaEventElapsedTime(&g, ev[2 * i + 1], ev[2 * i + 2]);
      ta[i] = f, tb[i] = g;
    }
    std::sort(ta, ta + reps);
    std::sort(tb, tb + reps);
    *ms_a = ta[reps / 2];
    *ms_b = tb[reps / 2];
  }
  for (int i = 0; i <= 2 * reps; i++)
    if (ev[i]) cudaEventDestroy(ev[i]);
  return res;
}

xsg_bench_row* add_row(bench* b, const char* name) {
  if (b->n >= b->max_rows) return NULL;
  xsg_bench_row* r = &b->rows[b->n++];
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  r->rel_err = NAN;
  r->ms = NAN;
  return r;
}

void finish_row(bench* b, xsg_bench_row* r) {
  r->tflops = r->ms > 0 ? b->flops / (r->ms * 1e-3) / 1e12 : 0;
  r->ratio = b->rows[0].tflops > 0 ? r->tflops / b->rows[0].tflops : 0;
}

/* Validate one of our runs (poison, run, compare) then time it. */
template <class F>
void ours(bench* b, const char* name, F run, void* out, const float* ref, const uint8_t* d_state,
          int64_t rows, int n_out, int reps) {
  xsg_bench_row* r = add_row(b, name);
  if (!r) return;
  xsg_check chk;
  xs_result res = xsg_poison(out, rows * n_out);
  if (res == XS_OK) res = run();
  if (res == XS_OK) res = cuda_ok(cudaDeviceSynchronize(), name);
  if (res == XS_OK) res = xsg_compare(&chk, out, ref, d_state, rows, n_out);
  if (res == XS_OK) {
    r->rel_err = chk.rel_err;
    r->wrong = chk.wrong + chk.touched;
  }
  if (res == XS_OK) res = time_ms(b, run, reps, &r->ms);
  r->status = (int)res;
  finish_row(b, r);
  cudaGetLastError(); /* a failed row leaves no sticky launch error behind for the next */
}

xs_result blas_gemm(bench* b, const void* A, const void* B, void* C, int rows, int N, int K) {
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t st = cublasGemmEx(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, rows, K, &one, B,
                                   CUDA_R_16BF, K, A, CUDA_R_16BF, K, &zero, C, CUDA_R_16BF, N,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS
             ? XS_OK
             : xsi_set_error(XS_ERR_CUDA, "gemm bench: cublasGemmEx: status %d", (int)st);
}

template <class F> void baseline(bench* b, const char* name, F run, int reps) {
  xsg_bench_row* r = add_row(b, name);
  if (!r) return;
  r->status = (int)time_ms(b, run, reps, &r->ms);
  finish_row(b, r);
}

xs_result dense_case(bench* b, const xsg_bench_case* c, char* detail, size_t dl) {
  const int M = c->M, N = c->N, K = c->K;
  void *A, *B, *C, *C2 = NULL, *state_d;
  float* ref;
  XSI_CHECK(alloc(b, &A, (size_t)M * K * 2));
  XSI_CHECK(alloc(b, &B, (size_t)N * K * 2));
  XSI_CHECK(alloc(b, &C, (size_t)M * N * 2));
  XSI_CHECK(alloc(b, (void**)&ref, (size_t)M * N * 4));
  XSI_CHECK(alloc(b, &state_d, (size_t)M));
  XSI_CHECK(xsg_fill_random(A, (int64_t)M * K, 1, 1.0f));
  XSI_CHECK(xsg_fill_random(B, (int64_t)N * K, 2, 1.0f));
  XSI_CHECK(cuda_ok(cudaMemset(state_d, XSG_ROW_CHECK, (size_t)M), "memset"));
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.M = M, a.N = N, a.K = K, a.A = A, a.B = B, a.C = C;
  XSI_CHECK(xsg_reference(ref, NULL, &a, 0, NULL, NULL, b->blas));
  b->flops = 2.0 * M * N * K;

  auto blas = [&]() { return blas_gemm(b, A, B, C, M, N, K); };
  ours(b, "cublas", blas, C, ref, (const uint8_t*)state_d, M, N, b->reps);
  const xs_gemm_schedule sched = XS_GEMM_SCHEDULE_INITIALIZER;
  const xs_gemm_epilogue plain = XS_GEMM_EPILOGUE_INITIALIZER;
  static const char* names[5] = {"auto", "v1 simt 64x64", "v2 wgmma 128x128", "v3 wgmma 128x256",
                                 "v4 wgmma 128x224"};
  for (int v = 1; v <= 4; v++) {
    a.version = (xs_gemm_version)v;
    auto run = [&]() { return xs_gemm_run(&a, plain, sched, NULL); };
    /* NOTE: v1 is the correctness path (~tens of TFLOP/s): one timed run on big shapes. */
    const int reps = (v == 1 && b->flops > 2e11) ? 1 : b->reps;
    ours(b, names[v], run, C, ref, (const uint8_t*)state_d, M, N, reps);
  }
  {
    /* What the dispatcher picks (the production path): should match the best row above. */
    xs_gemm_tiling t;
    a.version = XS_GEMM_AUTO;
    XSI_CHECK(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE));
    char name[40];
    snprintf(name, sizeof name, "auto -> v%d", (int)t.version);
    auto run = [&]() { return xs_gemm_run(&a, plain, sched, NULL); };
    ours(b, name, run, C, ref, (const uint8_t*)state_d, M, N, b->reps);
  }
  if (c->hook) {
    /* Hook: the same GEMM storing every tile through a map into another HBM region, for each
     * Hopper version (and AUTO's pick), timed interleaved with that version's plain epilogue. */
    xs_gemm_tiling ta;
    a.version = XS_GEMM_AUTO;
    XSI_CHECK(xs_gemm_tiles(&ta, &a, XS_GEMM_ACT_NONE));
    XSI_CHECK(alloc(b, &C2, (size_t)M * N * 2));
    double over[5] = {NAN, NAN, NAN, NAN, NAN}; /* interleaved overhead per version, % */
    for (int v = 1; v <= 4; v++) {
      xs_gemm_tiling t;
      a.version = (xs_gemm_version)v;
      if (v == 1 && ta.version != XS_GEMM_V1) continue; /* v1: only when AUTO falls back */
      if (xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE) != XS_OK) continue; /* shape not for vN */
      xs_gemm_tile_dst* h_map = (xs_gemm_tile_dst*)malloc(sizeof(xs_gemm_tile_dst) * t.count);
      XSI_ARG(h_map != NULL, "gemm bench: out of host memory");
      void* d_map = NULL;
      xs_result res = alloc(b, &d_map, sizeof(xs_gemm_tile_dst) * t.count);
      for (int i = 0; res == XS_OK && i < t.count; i++) {
        const int mb = i / t.n_blocks, nb = i % t.n_blocks;
        h_map[i].base = (uint16_t*)C2 + (int64_t)mb * t.tile_m * N + (int64_t)nb * t.tile_n;
        h_map[i].ld = N;
      }
      if (res == XS_OK)
        res = cuda_ok(
            cudaMemcpy(d_map, h_map, sizeof(xs_gemm_tile_dst) * t.count, cudaMemcpyHostToDevice),
            "map upload");
      free(h_map);
      XSI_CHECK(res);
      auto plain_run = [&]() { return xs_gemm_run(&a, plain, sched, NULL); };
      xs_gemm_epilogue hook = plain;
      hook.store = XS_GEMM_STORE_MAP;
      hook.dst_map = (const xs_gemm_tile_dst*)d_map;
      char name[40];
      snprintf(name, sizeof name, "v%d hook (map)", v);
      auto run = [&]() { return xs_gemm_run(&a, hook, sched, NULL); };
      ours(b, name, run, C2, ref, (const uint8_t*)state_d, M, N, b->reps);
      double mp = 0, mh = 0;
      XSI_CHECK(time_pair(plain_run, run, b->reps, &mp, &mh));
      over[v] = 100.0 * (mh / mp - 1.0);
    }
    xsi_clear_error();
    int at = snprintf(detail, dl, "hook overhead, interleaved with plain (15 pairs):");
    for (int v = 1; v <= 4 && at > 0 && (size_t)at < dl; v++)
      if (!isnan(over[v])) at += snprintf(detail + at, dl - at, " v%d %+.1f%%", v, over[v]);
    if (at > 0 && (size_t)at < dl)
      snprintf(detail + at, dl - at, "; AUTO picks v%d: %+.1f%% (target <= 3%%)", (int)ta.version,
               over[(int)ta.version]);
  }
  return XS_OK;
}

void expert_counts(int32_t* counts, const xsg_bench_case* c) {
  const int E = c->experts;
  const int64_t total = (int64_t)E * c->tokens;
  if (!c->zipf) {
    for (int e = 0; e < E; e++)
      counts[e] = c->tokens;
    return;
  }
  double wsum = 0;
  for (int e = 0; e < E; e++)
    wsum += 1.0 / (e + 1);
  int64_t given = 0;
  for (int e = 0; e < E; e++) {
    counts[e] = (int32_t)floor((double)total * (1.0 / (e + 1)) / wsum);
    given += counts[e];
  }
  for (int e = 0; given < total; e = (e + 1) % E, given++)
    counts[e]++;
}

xs_result grouped_case(bench* b, const xsg_bench_case* c, char* detail, size_t dl) {
  const int E = c->experts, N = c->N, K = c->K, n_out = c->silu ? N / 2 : N;
  int32_t* counts = (int32_t*)calloc((size_t)E, 4);
  int32_t* offsets = (int32_t*)calloc((size_t)E + 1, 4);
  XSI_ARG(counts && offsets, "gemm bench: out of host memory");
  expert_counts(counts, c);
  xs_result res = xs_gemm_contig_layout(offsets, counts, E);
  int max_m = 0;
  int64_t total = 0;
  for (int e = 0; e < E; e++) {
    max_m = counts[e] > max_m ? counts[e] : max_m;
    total += counts[e];
  }
  const int64_t rows_c = offsets[E], rows_m = (int64_t)E * max_m;
  const int64_t rows_max = rows_c > rows_m ? rows_c : rows_m;
  snprintf(detail, dl, "tokens %lld, counts max %d min %d, contiguous rows %lld (padding %.1f%%)",
           (long long)total, max_m, counts[E - 1], (long long)rows_c,
           rows_c ? 100.0 * (rows_c - total) / rows_c : 0.0);
  void *Ac, *Am, *B, *Cc, *Cm, *Cb, *d_off, *d_cnt, *state_c, *state_m;
  float *ref_c, *ref_m, *scratch = NULL;
  uint8_t* h_state = (uint8_t*)malloc((size_t)rows_max);
  if (!h_state) res = xsi_set_error(XS_ERR_NO_MEMORY, "gemm bench: host state");
  if (res == XS_OK) res = alloc(b, &Ac, (size_t)rows_c * K * 2);
  if (res == XS_OK) res = alloc(b, &Am, (size_t)rows_m * K * 2);
  if (res == XS_OK) res = alloc(b, &B, (size_t)E * N * K * 2);
  if (res == XS_OK) res = alloc(b, &Cc, (size_t)rows_c * n_out * 2);
  if (res == XS_OK) res = alloc(b, &Cm, (size_t)rows_m * n_out * 2);
  if (res == XS_OK) res = alloc(b, &Cb, (size_t)rows_max * N * 2);
  if (res == XS_OK) res = alloc(b, (void**)&ref_c, (size_t)rows_c * n_out * 4);
  if (res == XS_OK) res = alloc(b, (void**)&ref_m, (size_t)rows_m * n_out * 4);
  if (res == XS_OK && c->silu) res = alloc(b, (void**)&scratch, (size_t)(max_m + 128) * N * 4);
  if (res == XS_OK) res = alloc(b, &d_off, (size_t)(E + 1) * 4);
  if (res == XS_OK) res = alloc(b, &d_cnt, (size_t)E * 4);
  if (res == XS_OK) res = alloc(b, &state_c, (size_t)rows_c);
  if (res == XS_OK) res = alloc(b, &state_m, (size_t)rows_m);
  if (res == XS_OK)
    res = cuda_ok(cudaMemcpy(d_off, offsets, (E + 1) * 4, cudaMemcpyHostToDevice), "upload");
  if (res == XS_OK)
    res = cuda_ok(cudaMemcpy(d_cnt, counts, E * 4, cudaMemcpyHostToDevice), "upload");
  if (res == XS_OK) res = xsg_fill_random(Ac, rows_c * K, 11, 1.0f);
  if (res == XS_OK) res = xsg_fill_random(Am, rows_m * K, 12, 1.0f);
  if (res == XS_OK) res = xsg_fill_random(B, (int64_t)E * N * K, 13, 1.0f);
  xs_gemm_args ac = XS_GEMM_ARGS_INITIALIZER, am = XS_GEMM_ARGS_INITIALIZER;
  ac.layout = XS_GEMM_GROUPED_CONTIG, ac.M = (int)rows_c, ac.N = N, ac.K = K, ac.experts = E;
  ac.A = Ac, ac.B = B, ac.C = Cc, ac.m_offsets = (const int32_t*)d_off;
  am.layout = XS_GEMM_GROUPED_MASKED, am.M = max_m, am.N = N, am.K = K, am.experts = E;
  am.A = Am, am.B = B, am.C = Cm, am.m_counts = (const int32_t*)d_cnt;
  if (res == XS_OK) res = xsg_reference(ref_c, scratch, &ac, c->silu, offsets, counts, b->blas);
  if (res == XS_OK) res = xsg_reference(ref_m, scratch, &am, c->silu, offsets, counts, b->blas);
  if (res == XS_OK) {
    xsg_row_states(h_state, &ac, offsets, counts);
    res = cuda_ok(cudaMemcpy(state_c, h_state, (size_t)rows_c, cudaMemcpyHostToDevice), "upload");
  }
  if (res == XS_OK) {
    xsg_row_states(h_state, &am, offsets, counts);
    res = cuda_ok(cudaMemcpy(state_m, h_state, (size_t)rows_m, cudaMemcpyHostToDevice), "upload");
  }
  free(h_state);
  if (res != XS_OK) {
    free(counts);
    free(offsets);
    return res;
  }
  b->flops = 2.0 * (double)total * N * K;

  /* Baselines (plain GEMMs: cuBLAS has no SiLU*mul epilogue; its output is [rows, N]). */
  auto dense = [&]() { return blas_gemm(b, Ac, B, Cb, (int)total, N, K); };
  baseline(b, "cublas dense same size", dense, b->reps);
  auto loop = [&]() {
    for (int e = 0; e < E; e++)
      if (counts[e] > 0)
        XSI_CHECK(blas_gemm(b, (const uint16_t*)Ac + (int64_t)offsets[e] * K,
                            (const uint16_t*)B + (int64_t)e * N * K,
                            (uint16_t*)Cb + (int64_t)offsets[e] * N, counts[e], N, K));
    return XS_OK;
  };
  baseline(b, "cublas loop per expert", loop, b->reps);
  if (!c->zipf) {
    auto batched = [&]() {
      const float one = 1.0f, zero = 0.0f;
      cublasStatus_t st = cublasGemmStridedBatchedEx(
          b->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, max_m, K, &one, B, CUDA_R_16BF, K, (long long)N * K,
          Am, CUDA_R_16BF, K, (long long)max_m * K, &zero, Cb, CUDA_R_16BF, N, (long long)max_m * N,
          E, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      return st == CUBLAS_STATUS_SUCCESS
                 ? XS_OK
                 : xsi_set_error(XS_ERR_CUDA, "cublasGemmStridedBatchedEx: status %d", (int)st);
    };
    baseline(b, "cublas strided batched", batched, b->reps);
  }
  const xs_gemm_schedule sched = XS_GEMM_SCHEDULE_INITIALIZER;
  xs_gemm_epilogue epi = XS_GEMM_EPILOGUE_INITIALIZER;
  epi.act = c->silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE;
  static const char* names[5] = {"masked auto", "contig v1 simt", "contig v2 128", "contig v3 256",
                                 "contig v4 224"};
  for (int v = 1; v <= 4; v++) {
    if (v == 1 && b->flops > 4e11) continue; /* NOTE: v1 is validated on the smaller cases */
    ac.version = (xs_gemm_version)v;
    auto run = [&]() { return xs_gemm_run(&ac, epi, sched, NULL); };
    ours(b, names[v], run, Cc, ref_c, (const uint8_t*)state_c, rows_c, n_out, v == 1 ? 1 : b->reps);
  }
  auto masked = [&]() { return xs_gemm_run(&am, epi, sched, NULL); };
  ours(b, names[0], masked, Cm, ref_m, (const uint8_t*)state_m, rows_m, n_out, b->reps);
  free(counts);
  free(offsets);
  return XS_OK;
}

} // namespace

extern "C" xs_result xsg_bench_run(xsg_bench_row* rows, int max_rows, int* nrows, char* detail,
                                   size_t detail_len, const xsg_bench_case* c) {
  XSI_ARG(rows && nrows && c && max_rows >= 8, "gemm bench: bad arguments");
  XSI_ARG(c->N >= 1 && c->K >= 1 && (c->grouped ? c->experts >= 1 && c->tokens >= 1 : c->M >= 1),
          "gemm bench: bad shape");
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
    cudaGetLastError();
    return xsi_set_error(XS_ERR_NO_DEVICE, "gemm bench: no CUDA device");
  }
  char dummy[4];
  if (!detail) detail = dummy, detail_len = sizeof dummy;
  detail[0] = 0;
  bench b;
  b.rows = rows;
  b.max_rows = max_rows;
  b.reps = c->reps;
  xs_result res = XS_OK;
  if (cublasCreate(&b.blas) != CUBLAS_STATUS_SUCCESS)
    res = xsi_set_error(XS_ERR_CUDA, "gemm bench: cublasCreate failed");
  for (int i = 0; res == XS_OK && i <= MAX_REPS; i++)
    res = cuda_ok(cudaEventCreate(&b.ev[i]), "cudaEventCreate");
  if (res == XS_OK)
    res = c->grouped ? grouped_case(&b, c, detail, detail_len)
                     : dense_case(&b, c, detail, detail_len);
  cudaDeviceSynchronize();
  for (int i = 0; i < b.nallocs; i++)
    cudaFree(b.allocs[i]);
  for (int i = 0; i <= MAX_REPS; i++)
    if (b.ev[i]) cudaEventDestroy(b.ev[i]);
  if (b.blas) cublasDestroy(b.blas);
  *nrows = b.n;
  if (res == XS_OK) xsi_clear_error();
  return res;
}
