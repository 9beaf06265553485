/* bench.cu — the GEMM benchmark (see bench.h): dense shapes against cublasGemmEx, grouped MoE
 * shapes against a loop of cuBLAS calls, cublasGemmStridedBatchedEx (balanced counts),
 * cublasGemmGroupedBatchedEx (any counts), one dense cuBLAS GEMM of the same total size and, with
 * SiLU*mul, the unfused path (each batched GEMM followed by a SiLU*mul kernel). Every version is
 * validated before it is timed, and so is every baseline whose output the reference covers.
 *
 * Timing: all rows of a case (cuBLAS and ours) are timed INTERLEAVED: after a warm-up, each
 * round runs one batch of every row, in an order shuffled per round (xsg_round_order), and a row's
 * ratio is the median over rounds of (baseline time / row time) in that round. Clock drift of the
 * card under sustained load (run 2: the same kernel 5-13 % apart when timed a few hundred ms
 * later) cancels in the per-round ratios; absolute TFLOP/s are from the median time.
 * Grouped cases time every Hopper version on both layouts (contiguous v2-v7, masked v2-v7; v8,
 * the 2-CTA-cluster kernel, from 128 tokens per expert) and AUTO's pick per layout; balanced
 * ones end their detail line with our rows against cublasGemmStridedBatchedEx (AUTO per layout
 * and the best row; the strided-batched output is validated like our rows when there is no
 * SiLU*mul), every case against cublasGemmGroupedBatchedEx and, with SiLU*mul, the unfused paths.
 * Dense cases time v8 (plain and hook) when M >= 256. v9 (v7's two tile streams with 128-token
 * tiles, explicit only) is timed on the two smaller dense cases. v11, v12 and v13 (v3 with a
 * deferred / register-direct / slot-staged epilogue, explicit only) are timed on every case, in
 * place of v10 (measured in run 11); grouped cases add AUTO's contiguous pick with raster bands 4
 * and 8.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "core/internal.h"
#include "kernels/gemm/bench.h"
#include "kernels/gemm/check.h"
#include "kernels/gemm/gemm_internal.h"
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
  void* allocs[24] = {};
  int nallocs = 0;
};

xs_result cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return XS_OK;
  return xsi_set_error(XS_ERR_CUDA, "gemm bench: %s: %s", what, cudaGetErrorString(e));
}

xs_result alloc(bench* b, void** p, size_t bytes) {
  XSI_ARG(b->nallocs < 24, "gemm bench: too many buffers");
  XSI_CHECK(cuda_ok(cudaMalloc(p, bytes ? bytes : 16), "cudaMalloc"));
  b->allocs[b->nallocs++] = *p;
  return XS_OK;
}

/* Median ms of `fn` (one call) over `reps` calls (0: ~40 ms worth), after one warm-up call:
 * for rows timed alone (v1), not interleaved. */
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

/* One row of an interleaved timing: its call and where its figures go. */
struct timed_fn {
  std::function<xs_result()> fn;
  xsg_bench_row* row;
  int batch;             /* calls per batch (about BATCH_MS of GPU time) */
  std::vector<double> t; /* per round: ms per call */
};

constexpr double BATCH_MS = 2.0; /* GPU time of one row's batch in a round */
/* Untimed rounds before the timed ones, in GPU time: the first case of a process starts from
 * an idle card (boost clock), later cases find it under load already. */
constexpr double WARM_FIRST_MS = 500.0, WARM_MS = 100.0;
bool g_warmed = false;
constexpr int ROUNDS = 10; /* timed rounds (--reps overrides, 3..20) */

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* t_a[r] / t_b[r] for every round r both rows were timed in. */
std::vector<double> round_ratios(const timed_fn& a, const timed_fn& b) {
  std::vector<double> r;
  for (size_t i = 0; i < a.t.size() && i < b.t.size(); i++)
    if (b.t[i] > 0) r.push_back(a.t[i] / b.t[i]);
  return r;
}

/* Median over rounds of t_a[r] / t_b[r] (rows timed in the same rounds). */
double median_ratio(const timed_fn& a, const timed_fn& b) {
  return median(round_ratios(a, b));
}

/* `rounds` timed rounds of one batch per fn (f.batch calls), in xsg_round_order's order (bench.h);
 * appends each fn's per-call time of every round to f.t. */
xs_result timed_rounds(std::vector<timed_fn>& fns, int rounds) {
  const int n = (int)fns.size();
  std::vector<cudaEvent_t> ev((size_t)(n + 1) * rounds, (cudaEvent_t)NULL);
  std::vector<int> order((size_t)n * rounds);
  for (int r = 0; r < rounds; r++)
    xsg_round_order(&order[(size_t)r * n], n, r);
  xs_result res = XS_OK;
  for (size_t i = 0; res == XS_OK && i < ev.size(); i++)
    res = cuda_ok(cudaEventCreate(&ev[i]), "cudaEventCreate");
  for (int r = 0; res == XS_OK && r < rounds; r++) {
    res = cuda_ok(cudaEventRecord(ev[(size_t)r * (n + 1)]), "event");
    for (int j = 0; res == XS_OK && j < n; j++) {
      timed_fn& f = fns[order[(size_t)r * n + j]];
      for (int k = 0; res == XS_OK && k < f.batch; k++)
        res = f.fn();
      if (res == XS_OK) res = cuda_ok(cudaEventRecord(ev[(size_t)r * (n + 1) + j + 1]), "event");
    }
  }
  if (res == XS_OK) res = cuda_ok(cudaEventSynchronize(ev.back()), "timed rounds");
  for (int r = 0; res == XS_OK && r < rounds; r++)
    for (int j = 0; j < n; j++) {
      timed_fn& f = fns[order[(size_t)r * n + j]];
      float ms = 0;
      cudaEventElapsedTime(&ms, ev[(size_t)r * (n + 1) + j], ev[(size_t)r * (n + 1) + j + 1]);
      f.t.push_back((double)ms / f.batch);
    }
  for (cudaEvent_t e : ev)
    if (e) cudaEventDestroy(e);
  return res;
}

/* Two rows head to head: a batch of each, back to back, the order flipped every round
 * (xsg_round_order for two), neither after a third row. Median over `rounds` rounds of
 * t_a / t_b, with the batch sizes interleave() chose. NOTE: the interleaved rounds put ~20 rows
 * between the baseline's batch and a row's, so a clock that moves within a round (the H200 runs
 * power-capped) enters their ratio; here only two batches of ~2 ms each do. */
xs_result head_to_head(const timed_fn& a, const timed_fn& b, int rounds, double* ratio) {
  *ratio = NAN;
  std::vector<timed_fn> two = {a, b};
  for (timed_fn& f : two)
    f.t.clear();
  XSI_CHECK(timed_rounds(two, rounds));
  *ratio = median_ratio(two[0], two[1]);
  return XS_OK;
}

/* One thread spins `ns` of %globaltimer: the GPU stays nearly idle, below its power cap. */
__global__ void idle_spin(long long ns) {
  long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < ns);
}

/* a against b per launch at the full clock (xsg_bench_vs.strided_iso, the dense cases' full-clock
 * line): per round a batch of each (a's batch size), the order flipped every round, every launch
 * between its own two events and followed by `idle_us` of idle_spin; the round's ratio is the
 * mean launch time of a over that of b. Appends one ratio per round to *r. */
xs_result isolated(const timed_fn& a, const timed_fn& b, int rounds, std::vector<double>* r,
                   int idle_us = XSG_BENCH_IDLE_US) {
  const int n = a.batch < 1 ? 1 : a.batch;
  std::vector<cudaEvent_t> ev((size_t)4 * n, (cudaEvent_t)NULL);
  xs_result res = XS_OK;
  for (size_t i = 0; res == XS_OK && i < ev.size(); i++)
    res = cuda_ok(cudaEventCreate(&ev[i]), "cudaEventCreate");
  for (int round = 0; res == XS_OK && round < rounds; round++) {
    const timed_fn* f[2] = {round & 1 ? &b : &a, round & 1 ? &a : &b};
    for (int w = 0; res == XS_OK && w < 2; w++)
      for (int i = 0; res == XS_OK && i < n; i++) {
        res = cuda_ok(cudaEventRecord(ev[(size_t)(2 * n * w + 2 * i)]), "event");
        if (res == XS_OK) res = f[w]->fn();
        if (res == XS_OK)
          res = cuda_ok(cudaEventRecord(ev[(size_t)(2 * n * w + 2 * i + 1)]), "event");
        if (res == XS_OK) res = xsg_bench_idle(idle_us, NULL);
      }
    if (res == XS_OK) res = cuda_ok(cudaEventSynchronize(ev.back()), "isolated launches");
    double t[2] = {0, 0};
    for (int w = 0; res == XS_OK && w < 2; w++)
      for (int i = 0; i < n; i++) {
        float ms = 0;
        cudaEventElapsedTime(&ms, ev[(size_t)(2 * n * w + 2 * i)],
                             ev[(size_t)(2 * n * w + 2 * i + 1)]);
        t[w] += ms;
      }
    /* t[0] is f[0]'s: a in even rounds */
    if (res == XS_OK && t[0] > 0 && t[1] > 0) r->push_back(round & 1 ? t[1] / t[0] : t[0] / t[1]);
  }
  for (cudaEvent_t e : ev)
    if (e) cudaEventDestroy(e);
  return res;
}

/* Time every fn of `fns` interleaved over `rounds` rounds (see the file comment). Fills each
 * fn's per-round times. `drift` (%): the baseline's (fns[0]) median time over the last three
 * rounds against the first three: how far the clock moved while the rows were timed. */
xs_result interleave(bench* b, std::vector<timed_fn>& fns, int rounds, double* drift) {
  const int n = (int)fns.size();
  *drift = NAN;
  if (n == 0) return XS_OK;
  double round_ms = 0;
  for (timed_fn& f : fns) { /* batch sizing from one timed call after one untimed call */
    XSI_CHECK(f.fn());
    XSI_CHECK(cuda_ok(cudaEventRecord(b->ev[0]), "event"));
    XSI_CHECK(f.fn());
    XSI_CHECK(cuda_ok(cudaEventRecord(b->ev[1]), "event"));
    XSI_CHECK(cuda_ok(cudaEventSynchronize(b->ev[1]), "batch sizing"));
    float est = 0;
    cudaEventElapsedTime(&est, b->ev[0], b->ev[1]);
    f.batch = est > 0 ? (int)ceil(BATCH_MS / est) : 64;
    f.batch = f.batch < 1 ? 1 : f.batch > 64 ? 64 : f.batch;
    round_ms += f.batch * (est > 0 ? est : BATCH_MS / 64);
    f.t.clear();
  }
  int warm = (int)ceil((g_warmed ? WARM_MS : WARM_FIRST_MS) / (round_ms > 0 ? round_ms : 1.0));
  warm = warm < 1 ? 1 : warm > 200 ? 200 : warm;
  g_warmed = true;
  for (int w = 0; w < warm; w++)
    for (timed_fn& f : fns)
      for (int k = 0; k < f.batch; k++)
        XSI_CHECK(f.fn());
  XSI_CHECK(timed_rounds(fns, rounds));
  if (rounds >= 6) {
    std::vector<double> t0(fns[0].t.begin(), fns[0].t.begin() + 3);
    std::vector<double> t1(fns[0].t.end() - 3, fns[0].t.end());
    *drift = 100.0 * (median(t1) / median(t0) - 1.0);
  }
  return XS_OK;
}

/* Fill the rows of an interleaved timing: ms = median per-call time, ratio = median per-round
 * ratio against fns[0] (the cuBLAS baseline), vs_loop against fns[loop] (loop >= 0). */
void fill_rows(bench* b, const std::vector<timed_fn>& fns, int loop) {
  for (const timed_fn& f : fns) {
    f.row->ms = median(f.t);
    f.row->tflops = f.row->ms > 0 ? b->flops / (f.row->ms * 1e-3) / 1e12 : 0;
    f.row->ratio = median_ratio(fns[0], f);
    f.row->vs_loop = loop >= 0 ? median_ratio(fns[loop], f) : NAN;
  }
}

int rounds_of(const bench* b) {
  return b->reps <= 0 ? ROUNDS : b->reps < 3 ? 3 : b->reps;
}

xsg_bench_row* add_row(bench* b, const char* name) {
  if (b->n >= b->max_rows) return NULL;
  xsg_bench_row* r = &b->rows[b->n++];
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  r->rel_err = NAN;
  r->ms = NAN;
  r->vs_loop = NAN;
  r->pad_pct = NAN;
  return r;
}

/* Validate one of our runs (poison, run, compare); when it passes the checks' plumbing, queue
 * it in `fns` for the interleaved timing (or, fns == NULL, leave it to the caller). Returns the
 * row (NULL: the table is full). A row that fails here keeps its status and is not timed. */
xsg_bench_row* check(bench* b, const char* name, std::function<xs_result()> run, void* out,
                     const float* ref, const uint8_t* d_state, int64_t rows, int n_out,
                     std::vector<timed_fn>* fns) {
  xsg_bench_row* r = add_row(b, name);
  if (!r) return NULL;
  xsg_check chk;
  xs_result res = xsg_poison(out, rows * n_out);
  if (res == XS_OK) res = run();
  if (res == XS_OK) res = cuda_ok(cudaDeviceSynchronize(), name);
  if (res == XS_OK) res = xsg_compare(&chk, out, ref, d_state, rows, n_out);
  if (res == XS_OK) {
    r->rel_err = chk.rel_err;
    r->wrong = chk.wrong + chk.touched;
  }
  r->status = (int)res;
  if (res == XS_OK && fns) fns->push_back(timed_fn{run, r, 1, {}});
  cudaGetLastError(); /* a failed row leaves no sticky launch error behind for the next */
  return r;
}

/* A baseline checked by check(): keep it in `fns` (return its index) only if its output passed;
 * else drop it from the timing (-1): a ratio against a wrong baseline means nothing. */
int keep_checked(std::vector<timed_fn>& fns, size_t before) {
  if (fns.size() <= before) return -1;
  const xsg_bench_row* r = fns.back().row;
  if (r->wrong == 0 && r->rel_err < 1e-2) return (int)fns.size() - 1;
  fns.pop_back();
  return -1;
}

/* A row timed on its own after the interleaved rounds (v1, the slow SIMT reference: one of its
 * calls at 8192^3 takes ~100 ms). Its ratios use the baselines' median times. */
void time_alone(bench* b, xsg_bench_row* r, const std::function<xs_result()>& run, int reps,
                const xsg_bench_row* base, const xsg_bench_row* loop) {
  if (!r || r->status != XS_OK) return;
  xs_result res = time_ms(b, run, reps, &r->ms);
  r->status = (int)res;
  r->tflops = res == XS_OK && r->ms > 0 ? b->flops / (r->ms * 1e-3) / 1e12 : 0;
  r->ratio = res == XS_OK && r->ms > 0 ? base->ms / r->ms : 0;
  r->vs_loop = loop && res == XS_OK && r->ms > 0 ? loop->ms / r->ms : NAN;
  cudaGetLastError();
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

/* Run the interleaved rounds and fill the rows; on failure every queued row carries it. */
xs_result time_all(bench* b, std::vector<timed_fn>& fns, int loop, double* drift) {
  xs_result res = interleave(b, fns, rounds_of(b), drift);
  if (res != XS_OK) {
    for (timed_fn& f : fns)
      f.row->status = (int)res;
    return res;
  }
  fill_rows(b, fns, loop);
  return XS_OK;
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
  const uint8_t* st = (const uint8_t*)state_d;

  std::vector<timed_fn> fns; /* fns[0]: cuBLAS, the baseline of every ratio */
  auto blas = [=]() { return blas_gemm(b, A, B, C, M, N, K); };
  xsg_bench_row* base = check(b, "cublas", blas, C, ref, st, M, N, &fns);
  XSI_ARG(base && base->status == XS_OK && !fns.empty(), "gemm bench: the cuBLAS row failed");
  const xs_gemm_schedule sched = XS_GEMM_SCHEDULE_INITIALIZER;
  const xs_gemm_epilogue plain = XS_GEMM_EPILOGUE_INITIALIZER;
  static const char* names[15] = {"auto",
                                  "v1 simt 64x64",
                                  "v2 wgmma 128x128",
                                  "v3 wgmma 128x256",
                                  "v4 wgmma 128x224",
                                  "v5 wgmma 128x192",
                                  "v6 wgmma 128x208",
                                  "v7 wgmma tokens",
                                  "v8 wgmma 128x256 cl2",
                                  "v9 streams 128x128",
                                  "v10 streams 64x256",
                                  "v11 128x256 deferred",
                                  "v12 128x256 direct",
                                  "v13 128x256 slot-staged",
                                  "v14 (its plan)"};
  int plain_at[15], hook_at[15]; /* index in fns, -1: not timed */
  for (int v = 0; v < 15; v++)
    plain_at[v] = hook_at[v] = -1;
  /* NOTE: v7 (token-major tiles of <= 64 rows, for few rows) only on shapes with M <= 128,
   * where it is in AUTO's range or next to it; on the long shapes it would add rows that AUTO
   * never picks. v8 (v3's tile on 2-CTA clusters sharing B, explicit only) from M = 256, where
   * a cluster has two m-blocks to share B between. v9 (128 x 128 tiles in two streams per
   * CTA, explicit only; run 10: slower than v3) only where bench_gemm.c's 20 rows leave room
   * beside v10: not on the two long shapes, whose band rows fill the table. v10 (64 x 256 tiles
   * in two streams, v3's wgmma; run 11: 0.75 of v3) no longer: its place goes to v11 (v3 with
   * the deferred epilogue, tuning round 9), whose row beside v3's is that round's question, and
   * v12 (v3 storing straight from the accumulators, same round) and v13 (v3 staging its second
   * pass in the tile's last ring slot, same round). */
  constexpr int last_v = 14;
  static_assert(sizeof names / sizeof names[0] == last_v + 1 &&
                    sizeof plain_at / sizeof plain_at[0] == last_v + 1,
                "one name and slot per version");
  const double flops = b->flops;
  auto timed_version = [M, flops](int v) {
    return v <= 6 || (v == 7 && M <= 128) || (v == 8 && M >= 256) || (v == 9 && flops <= 1e12) ||
           v >= 11;
  };
  xs_gemm_tiling ta;
  a.version = XS_GEMM_AUTO;
  XSI_CHECK(xs_gemm_tiles(&ta, &a, XS_GEMM_ACT_NONE));
  /* v1 is timed alone (after the rounds) unless AUTO falls back to it (odd shapes: small). */
  const int v1_alone = ta.version != XS_GEMM_V1;
  xsg_bench_row* v1_row = NULL;
  std::function<xs_result()> v1_run;
  for (int v = 1; v <= last_v; v++) {
    if (!timed_version(v)) continue;
    xs_gemm_args av = a;
    av.version = (xs_gemm_version)v;
    std::function<xs_result()> run = [=]() { return xs_gemm_run(&av, plain, sched, NULL); };
    const size_t before = fns.size();
    char vname[40]; /* v7: "v7 wgmma 16x128" (its tile height follows M), "S 13": its split */
    xs_gemm_tiling t7;
    if (v == 7 && xs_gemm_tiles(&t7, &av, XS_GEMM_ACT_NONE) == XS_OK)
      snprintf(vname, sizeof vname, t7.splits > 1 ? "v7 wgmma %dx%d S %d" : "v7 wgmma %dx%d",
               t7.tile_m, t7.tile_n, t7.splits);
    else
      snprintf(vname, sizeof vname, "%s", names[v]);
    xsi_clear_error();
    xsg_bench_row* r = check(b, vname, run, C, ref, st, M, N, v == 1 && v1_alone ? NULL : &fns);
    if (v == 1 && v1_alone) v1_row = r, v1_run = run;
    if (fns.size() > before) plain_at[v] = (int)before;
  }
  {
    /* v14 (split-K) where it can split: S = 2, 4, 8 and the most that fits (tiles x S <= SMs),
     * each S once (session 22). */
    int sms = 0, dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    xs_gemm_args av = a;
    av.version = XS_GEMM_V14;
    xs_gemm_tiling t14;
    if (xs_gemm_tiles(&t14, &av, XS_GEMM_ACT_NONE) == XS_OK && t14.count >= 1) {
      const int most = sms / t14.count < 16 ? sms / t14.count : 16;
      const int tries[4] = {2, 4, 8, most};
      for (int i = 0; i < 4; i++) {
        const int S = tries[i];
        if (S < 2 || S > most || (i == 3 && (S == 2 || S == 4 || S == 8))) continue;
        av.split_k = S;
        char vname[40];
        snprintf(vname, sizeof vname, "v14 split-K %d", S);
        std::function<xs_result()> run = [=]() { return xs_gemm_run(&av, plain, sched, NULL); };
        check(b, vname, run, C, ref, st, M, N, &fns);
      }
    }
    xsi_clear_error();
  }
  if (M <= 64) {
    /* v7's split of K (session 25) at S = 1 (none), 2, 4, 8, 16 beside its plan's (the v7 row) */
    xs_gemm_args av = a;
    av.version = XS_GEMM_V7;
    xs_gemm_tiling t7;
    if (xs_gemm_tiles(&t7, &av, XS_GEMM_ACT_NONE) == XS_OK && t7.count >= 1) {
      for (int S = 1; S <= 16; S *= 2) {
        if (S == t7.splits || S > xsg_cdiv(a.K, 64)) continue;
        av.split_k = S;
        char vname[40];
        snprintf(vname, sizeof vname, "v7 split-K %d", S);
        std::function<xs_result()> run = [=]() { return xs_gemm_run(&av, plain, sched, NULL); };
        check(b, vname, run, C, ref, st, M, N, &fns);
      }
      /* the other tile width at its split (xsg_probe.v7_width; the row's runs set it) */
      const int other = t7.tile_n == 64 ? 128 : 64;
      av.split_k = 0;
      char vname[40];
      snprintf(vname, sizeof vname, "v7 %d-row tiles, its split", other);
      std::function<xs_result()> run = [=]() {
        xsg_probe.v7_width = other;
        const xs_result r = xs_gemm_run(&av, plain, sched, NULL);
        xsg_probe.v7_width = 0;
        return r;
      };
      check(b, vname, run, C, ref, st, M, N, &fns);
      /* its split in clusters where they fit (xsg_probe.v7_kcluster 2: what a capture with no
       * workspace runs; S = 2 C, the most C <= S / 2 whose clusters fit; session 25) */
      const int cl =
          t7.splits > 1 ? xsg_v7_fits_clusters(t7.tile_m, t7.tile_n, t7.splits, t7.count, 0) : 0;
      if (cl) {
        snprintf(vname, sizeof vname, "v7 clusters of %d, S %d", cl, 2 * cl);
        std::function<xs_result()> cl_run = [=]() {
          xsg_probe.v7_kcluster = 2;
          const xs_result r = xs_gemm_run(&av, plain, sched, NULL);
          xsg_probe.v7_kcluster = 0;
          return r;
        };
        check(b, vname, cl_run, C, ref, st, M, N, &fns);
      }
    }
    xsi_clear_error();
  }
  a.version = XS_GEMM_AUTO;
  std::function<xs_result()> auto_run;
  xsg_bench_row* auto_row;
  {
    /* What the dispatcher picks (the production path): should match the best row above. */
    char name[40];
    snprintf(name, sizeof name, "auto -> v%d", (int)ta.version);
    xs_gemm_args av = a;
    auto_run = [=]() { return xs_gemm_run(&av, plain, sched, NULL); };
    auto_row = check(b, name, auto_run, C, ref, st, M, N, &fns);
    /* The same launched with programmatic dependent launch (xs_gemm_schedule.pdl) */
    if (ta.version != XS_GEMM_V1) {
      xs_gemm_schedule np = sched;
      np.pdl = 1;
      snprintf(name, sizeof name, "auto -> v%d, PDL", (int)ta.version);
      check(
          b, name, [=]() { return xs_gemm_run(&av, plain, np, NULL); }, C, ref, st, M, N, &fns);
    }
  }
  if (b->flops > 1e12 && ta.version != XS_GEMM_V1) {
    /* Long dense shapes: AUTO's pick with raster bands of 4 and 16 m-blocks beside the default
     * 8 (the auto row): the L2 footprint of a band's operands, measured for the next round. */
    for (int sw = 4; sw <= 16; sw *= 4) {
      xs_gemm_schedule ss = sched;
      ss.swizzle = sw;
      char name[40];
      snprintf(name, sizeof name, "auto -> v%d band %d", (int)ta.version, sw);
      xs_gemm_args av = a;
      check(
          b, name, [=]() { return xs_gemm_run(&av, plain, ss, NULL); }, C, ref, st, M, N, &fns);
    }
  }
  if (c->hook) {
    /* Hook: the same GEMM storing every tile through a map into another HBM region, for each
     * Hopper version (and v1 when AUTO falls back to it). */
    XSI_CHECK(alloc(b, &C2, (size_t)M * N * 2));
    for (int v = 1; v <= last_v; v++) {
      xs_gemm_tiling t;
      xs_gemm_args av = a;
      av.version = (xs_gemm_version)v;
      if (!timed_version(v)) continue;
      if (v == 1 && ta.version != XS_GEMM_V1) continue; /* v1: only when AUTO falls back */
      /* NOTE: v9's and v10's hook rows only where the table keeps room for them and the two
       * "alone" rows (8192^3 with its band rows fills bench_gemm.c's 20 without them); v10's
       * (its 16-byte stores against its TMA store) goes first. */
      if (v == 9 && b->n + 4 > b->max_rows) continue;
      if (v >= 11 && b->n + 3 > b->max_rows) continue;
      if (xs_gemm_tiles(&t, &av, XS_GEMM_ACT_NONE) != XS_OK) continue; /* shape not for vN */
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
      xs_gemm_epilogue hook = plain;
      hook.store = XS_GEMM_STORE_MAP;
      hook.dst_map = (const xs_gemm_tile_dst*)d_map;
      char name[40];
      snprintf(name, sizeof name, "v%d hook (map)", v);
      const size_t before = fns.size();
      check(
          b, name, [=]() { return xs_gemm_run(&av, hook, sched, NULL); }, C2, ref, st, M, N, &fns);
      if (fns.size() > before) hook_at[v] = (int)before;
    }
    xsi_clear_error();
  }
  double drift = NAN;
  XSI_CHECK(time_all(b, fns, -1, &drift));
  const int reps1 = b->flops > 2e11 ? 1 : b->reps; /* NOTE: v1 is tens of TFLOP/s */
  time_alone(b, v1_row, v1_run, reps1, base, NULL);
  if (auto_row && auto_row->status == XS_OK) {
    /* The timing method itself: cuBLAS, then AUTO's pick, each timed alone the run-1/run-2 way
     * (back-to-back calls, the median of up to 20 per-call times), after the interleaved rounds.
     * "cublas alone" is against the interleaved cuBLAS median; "auto -> vN alone" against
     * "cublas alone". Not counted in the summary (bench_gemm.c skips "alone" rows). */
    xsg_bench_row* ca = add_row(b, "cublas alone");
    char name[40];
    snprintf(name, sizeof name, "auto -> v%d alone", (int)ta.version);
    xsg_bench_row* aa = add_row(b, name);
    time_alone(b, ca, blas, b->reps, base, NULL);
    if (ca && aa) {
      if (ca->status == XS_OK)
        time_alone(b, aa, auto_run, b->reps, ca, NULL);
      else
        aa->status = ca->status;
    }
  }
  int at = snprintf(detail, dl, "%d rounds interleaved; cuBLAS drift over the rounds %+.1f%%",
                    rounds_of(b), drift);
  /* cuBLAS against AUTO per launch at the full clock: each launch alone, followed by idle time of
   * three times its own length (at least XSG_BENCH_IDLE_US), so that the card runs below its power
   * cap, the two alternating first each round. The rounds above run both at the cap (back to
   * back, as a model's forward pass does); the "alone" rows time cuBLAS first after a pause,
   * which favours it (session 30). This line separates the kernels' speed at one clock from
   * the power cap's verdict. */
  const timed_fn* auto_fn = nullptr;
  for (const timed_fn& f : fns)
    if (auto_row && f.row == auto_row && auto_row->status == XS_OK) auto_fn = &f;
  if (auto_fn && base && base->status == XS_OK && base->ms > 0 && at > 0 && (size_t)at < dl) {
    const int idle_us = (int)fmax(XSG_BENCH_IDLE_US, 3e3 * base->ms);
    std::vector<double> iso;
    xs_result res = isolated(fns[0], *auto_fn, 2 * rounds_of(b), &iso, idle_us);
    if (res == XS_OK && !iso.empty()) {
      double lo = NAN, hi = NAN;
      const double m = median(iso);
      xsg_median_interval(iso.data(), (int)iso.size(), &lo, &hi);
      at += snprintf(detail + at, dl - at,
                     "\n#   per launch at the full clock (each launch alone, %d us idle after it, "
                     "%d rounds, cuBLAS first in every other): AUTO %.3f, 95 %% interval [%.3f, "
                     "%.3f] %s",
                     idle_us, (int)iso.size(), m, lo, hi,
                     lo > 1   ? "(faster)"
                     : hi < 1 ? "(slower)"
                              : "(a tie)");
    } else {
      xsi_clear_error();
      cudaGetLastError();
    }
  }
  if (c->hook && at > 0 && (size_t)at < dl) {
    /* Overhead: median over the rounds of hook time / plain time of the same version. */
    double over[last_v + 1];
    for (int v = 0; v <= last_v; v++)
      over[v] = NAN;
    for (int v = 1; v <= last_v; v++)
      if (plain_at[v] >= 0 && hook_at[v] >= 0)
        over[v] = 100.0 * (median_ratio(fns[hook_at[v]], fns[plain_at[v]]) - 1.0);
    at += snprintf(detail + at, dl - at, "\n#   hook overhead, interleaved with plain:");
    for (int v = 1; v <= last_v && at > 0 && (size_t)at < dl; v++)
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

/* The unfused path's second kernel (a baseline, not the library's): out[r, c] = silu(g) * u with
 * g = full[r, c], u = full[r, c + I], bf16 in, fp32 math, bf16 out (round to nearest), over the
 * rows of each expert e = blockIdx.y: rows offsets[e] .. offsets[e] + counts[e] (offsets NULL:
 * e * stride ..). One kernel reading each input once and writing each output once (vLLM's
 * silu_and_mul does the same); VEC: 8 columns per thread through 16-byte loads (I % 8 == 0). */
template <bool VEC>
__global__ void silu_mul_bf16(uint16_t* out, const uint16_t* full, const int32_t* offsets,
                              const int32_t* counts, int stride, int I) {
  const int e = blockIdx.y;
  const int64_t row0 = offsets ? offsets[e] : (int64_t)e * stride;
  const int per_row = VEC ? I / 8 : I;
  const int64_t n = (int64_t)counts[e] * per_row;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = row0 + i / per_row;
    const int c = (int)(i % per_row) * (VEC ? 8 : 1);
    const uint16_t* g = full + r * 2 * I + c;
    uint16_t* o = out + r * I + c;
    if (VEC) {
      const uint4 gv = *(const uint4*)g, uv = *(const uint4*)(g + I);
      const uint32_t gw[4] = {gv.x, gv.y, gv.z, gv.w}, uw[4] = {uv.x, uv.y, uv.z, uv.w};
      uint32_t ow[4];
      for (int j = 0; j < 4; j++) {
        const float g0 = __uint_as_float(gw[j] << 16), g1 = __uint_as_float(gw[j] & 0xffff0000u);
        const float u0 = __uint_as_float(uw[j] << 16), u1 = __uint_as_float(uw[j] & 0xffff0000u);
        const float o0 = g0 / (1.0f + __expf(-g0)) * u0, o1 = g1 / (1.0f + __expf(-g1)) * u1;
        ow[j] = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(o0)) |
                (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(o1)) << 16;
      }
      *(uint4*)o = make_uint4(ow[0], ow[1], ow[2], ow[3]);
    } else {
      const float gf = __uint_as_float((uint32_t)g[0] << 16);
      const float uf = __uint_as_float((uint32_t)g[I] << 16);
      o[0] = __bfloat16_as_ushort(__float2bfloat16_rn(gf / (1.0f + __expf(-gf)) * uf));
    }
  }
}

/* Launch silu_mul_bf16 over E experts of at most max_count rows each. */
xs_result silu_mul_rows(void* out, const void* full, const void* offsets, const void* counts,
                        int stride, int E, int max_count, int I, cudaStream_t stream = NULL) {
  const int vec = I % 8 == 0;
  const int64_t per_expert = (int64_t)max_count * (vec ? I / 8 : I);
  int bx = (int)((per_expert + 255) / 256);
  bx = bx < 1 ? 1 : bx > 1024 ? 1024 : bx;
  const dim3 grid((unsigned)bx, (unsigned)E);
  if (vec)
    silu_mul_bf16<true><<<grid, 256, 0, stream>>>((uint16_t*)out, (const uint16_t*)full,
                                                  (const int32_t*)offsets, (const int32_t*)counts,
                                                  stride, I);
  else
    silu_mul_bf16<false><<<grid, 256, 0, stream>>>((uint16_t*)out, (const uint16_t*)full,
                                                   (const int32_t*)offsets, (const int32_t*)counts,
                                                   stride, I);
  return cuda_ok(cudaGetLastError(), "silu_mul_bf16 launch");
}

xs_result grouped_case(bench* b, const xsg_bench_case* c, char* detail, size_t dl,
                       xsg_bench_vs* vs) {
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
  am.m_counts_host = counts; /* AUTO's choice (the bench knows the counts on the host) */
  if (res == XS_OK) res = xsg_reference(ref_c, scratch, &ac, c->silu, offsets, counts, b->blas);
  if (res == XS_OK) res = xsg_reference(ref_m, scratch, &am, c->silu, offsets, counts, b->blas);
  /* SiLU*mul with balanced counts: the GEMM alone on the masked layout too (output [rows, N] in
   * Cb, cuBLAS strided-batched's layout), so that the GEMM can be compared with cuBLAS's on the
   * same work; its reference checks cuBLAS's strided-batched output as well. */
  float* ref_mg = NULL;
  xs_gemm_args ag = am;
  ag.C = Cb;
  if (res == XS_OK && c->silu && !c->zipf) res = alloc(b, (void**)&ref_mg, (size_t)rows_m * N * 4);
  if (res == XS_OK && ref_mg)
    res = xsg_reference(ref_mg, scratch, &ag, 0, offsets, counts, b->blas);
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

  /* Baselines (plain GEMMs: cuBLAS has no SiLU*mul epilogue; its output is [rows, N]). The dense
   * GEMM and the loop are not validated (the reference is of the grouped output); fns[0] is the
   * baseline of every ratio, fns[1] the loop (the "vs loop" ratios), fns[2] the strided-batched
   * GEMM (balanced counts; validated against the reference of the GEMM alone). */
  std::vector<timed_fn> fns;
  const int tot = (int)total;
  fns.push_back(timed_fn{[=]() { return blas_gemm(b, Ac, B, Cb, tot, N, K); },
                         add_row(b, "cublas dense same size"),
                         1,
                         {}});
  fns.push_back(timed_fn{[=]() {
                           for (int e = 0; e < E; e++)
                             if (counts[e] > 0)
                               XSI_CHECK(blas_gemm(b, (const uint16_t*)Ac + (int64_t)offsets[e] * K,
                                                   (const uint16_t*)B + (int64_t)e * N * K,
                                                   (uint16_t*)Cb + (int64_t)offsets[e] * N,
                                                   counts[e], N, K));
                           return XS_OK;
                         },
                         add_row(b, "cublas loop per expert"),
                         1,
                         {}});
  const uint8_t *sc = (const uint8_t*)state_c, *sm = (const uint8_t*)state_m;
  /* Indices in fns of the cuBLAS batched paths (-1: not run): strided-batched (balanced counts
   * only), grouped-batched (any counts), and with SiLU*mul each followed by silu_mul_bf16 (the
   * unfused path a caller of cuBLAS runs). A path that fails its check is not timed. */
  int i_sb = -1, i_gb = -1, i_sbu = -1, i_gbu = -1;
  std::function<xs_result()> batched;
  if (!c->zipf) {
    const int mm = max_m;
    batched = [=]() {
      const float one = 1.0f, zero = 0.0f;
      cublasStatus_t s = cublasGemmStridedBatchedEx(
          b->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, mm, K, &one, B, CUDA_R_16BF, K, (long long)N * K,
          Am, CUDA_R_16BF, K, (long long)mm * K, &zero, Cb, CUDA_R_16BF, N, (long long)mm * N, E,
          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      return s == CUBLAS_STATUS_SUCCESS
                 ? XS_OK
                 : xsi_set_error(XS_ERR_CUDA, "cublasGemmStridedBatchedEx: status %d", (int)s);
    };
    /* Its output is the masked layout's [E x max_m, N]: validated against the same fp32
     * reference as our rows before it is timed (a baseline is checked too; with SiLU*mul against
     * the reference of the GEMM alone). */
    const size_t before = fns.size();
    check(b, "cublas strided batched", batched, Cb, c->silu ? ref_mg : ref_m, sm, rows_m, N, &fns);
    XSI_ARG(keep_checked(fns, before) >= 0, "gemm bench: the cuBLAS strided-batched row failed");
    i_sb = (int)fns.size() - 1;
  }
  /* cublasGemmGroupedBatchedEx, one group per expert with tokens, on the layout a caller of
   * cuBLAS has: the experts' rows packed without padding (g_off), activations Ag [total, K] (the
   * contiguous layout's rows, copied), output [total, N] in Cb, pointer arrays in device memory.
   * Checked against the contiguous reference's rows packed the same way (ref_g, state_g; the
   * contiguous layout's padding rows are work there and are checked, so cuBLAS, which skips
   * them, cannot run on it). */
  int32_t* g_off = (int32_t*)calloc((size_t)E + 1, 4);
  void *Ag = NULL, *d_goff = NULL, *state_g = NULL;
  float* ref_g = NULL;
  const void** d_ptr = NULL;
  int ng = 0;
  if (!g_off) res = xsi_set_error(XS_ERR_NO_MEMORY, "gemm bench: host offsets");
  for (int e = 0; res == XS_OK && e < E; e++) {
    g_off[e + 1] = g_off[e] + counts[e];
    ng += counts[e] > 0;
  }
  /* With SiLU*mul the unfused paths store gate and up in bf16 before the activation: their
   * reference rounds them too (ref_m2; ref_g from ref_c2), so a baseline is held to the bound
   * of what it computes. The fused rows keep the fp32 reference. */
  float *ref_m2 = NULL, *ref_c2 = NULL;
  if (res == XS_OK && c->silu) res = alloc(b, (void**)&ref_m2, (size_t)rows_m * n_out * 4);
  if (res == XS_OK && c->silu) res = alloc(b, (void**)&ref_c2, (size_t)rows_c * n_out * 4);
  if (res == XS_OK && c->silu)
    res = xsg_reference(ref_m2, scratch, &am, XSG_SILU_ROUNDED, offsets, counts, b->blas);
  if (res == XS_OK && c->silu)
    res = xsg_reference(ref_c2, scratch, &ac, XSG_SILU_ROUNDED, offsets, counts, b->blas);
  const float* ref_pack = c->silu ? ref_c2 : ref_c;
  if (res == XS_OK) res = alloc(b, &Ag, (size_t)total * K * 2);
  if (res == XS_OK) res = alloc(b, (void**)&ref_g, (size_t)total * n_out * 4);
  if (res == XS_OK) res = alloc(b, &state_g, (size_t)total);
  if (res == XS_OK) res = alloc(b, &d_goff, (size_t)(E + 1) * 4);
  if (res == XS_OK) res = alloc(b, (void**)&d_ptr, sizeof(void*) * 3 * (size_t)(ng ? ng : 1));
  if (res == XS_OK) res = cuda_ok(cudaMemset(state_g, XSG_ROW_CHECK, (size_t)total), "memset");
  if (res == XS_OK)
    res = cuda_ok(cudaMemcpy(d_goff, g_off, (E + 1) * 4, cudaMemcpyHostToDevice), "upload");
  for (int e = 0; res == XS_OK && e < E; e++) {
    if (counts[e] <= 0) continue;
    res = cuda_ok(cudaMemcpy((uint16_t*)Ag + (int64_t)g_off[e] * K,
                             (const uint16_t*)Ac + (int64_t)offsets[e] * K,
                             (size_t)counts[e] * K * 2, cudaMemcpyDeviceToDevice),
                  "pack activations");
    if (res == XS_OK)
      res = cuda_ok(cudaMemcpy(ref_g + (int64_t)g_off[e] * n_out,
                               ref_pack + (int64_t)offsets[e] * n_out,
                               (size_t)counts[e] * n_out * 4, cudaMemcpyDeviceToDevice),
                    "pack reference");
  }
  std::function<xs_result()> grouped;
  if (res == XS_OK && ng > 0) {
    std::vector<int> gm, gn, gk, gld_k, gld_c, gsize;
    std::vector<cublasOperation_t> ta, tb;
    std::vector<float> alpha, beta;
    std::vector<const void*> h_ptr;
    for (int pass = 0; pass < 3; pass++) /* weights, then activations, then outputs */
      for (int e = 0; e < E; e++) {
        if (counts[e] <= 0) continue;
        if (pass == 0) {
          h_ptr.push_back((const uint16_t*)B + (int64_t)e * N * K);
          gm.push_back(N), gn.push_back(counts[e]), gk.push_back(K), gld_k.push_back(K);
          gld_c.push_back(N), gsize.push_back(1), ta.push_back(CUBLAS_OP_T);
          tb.push_back(CUBLAS_OP_N), alpha.push_back(1.0f), beta.push_back(0.0f);
        } else if (pass == 1) {
          h_ptr.push_back((const uint16_t*)Ag + (int64_t)g_off[e] * K);
        } else {
          h_ptr.push_back((const uint16_t*)Cb + (int64_t)g_off[e] * N);
        }
      }
    res = cuda_ok(cudaMemcpy(d_ptr, h_ptr.data(), sizeof(void*) * 3 * ng, cudaMemcpyHostToDevice),
                  "upload");
    grouped = [=]() {
      cublasStatus_t s = cublasGemmGroupedBatchedEx(
          b->blas, ta.data(), tb.data(), gm.data(), gn.data(), gk.data(), alpha.data(), d_ptr,
          CUDA_R_16BF, gld_k.data(), d_ptr + ng, CUDA_R_16BF, gld_k.data(), beta.data(),
          (void* const*)(d_ptr + 2 * ng), CUDA_R_16BF, gld_c.data(), ng, gsize.data(),
          CUBLAS_COMPUTE_32F);
      return s == CUBLAS_STATUS_SUCCESS
                 ? XS_OK
                 : xsi_set_error(XS_ERR_CUDA, "cublasGemmGroupedBatchedEx: status %d", (int)s);
    };
    if (res == XS_OK && !c->silu) {
      const size_t before = fns.size();
      check(b, "cublas grouped batched", grouped, Cb, ref_g, (const uint8_t*)state_g, total, N,
            &fns);
      i_gb = keep_checked(fns, before);
    } else if (res == XS_OK) {
      xsg_bench_row* r = add_row(b, "cublas grouped batched");
      if (r) fns.push_back(timed_fn{grouped, r, 1, {}}), i_gb = (int)fns.size() - 1;
    }
  }
  free(g_off);
  if (res != XS_OK) {
    free(counts);
    free(offsets);
    return res;
  }
  if (c->silu) {
    /* The unfused paths: the batched GEMM, then silu_mul_bf16 on its output. Checked against
     * the SiLU*mul reference like our rows (this also checks the GEMM-only rows' output). */
    const int I = n_out, mm = max_m;
    const void* d_cnt_c = d_cnt;
    if (batched) {
      const size_t before = fns.size();
      check(
          b, "cublas strided + silu*mul",
          [=]() {
            XSI_CHECK(batched());
            return silu_mul_rows(Cm, Cb, NULL, d_cnt_c, mm, E, mm, I);
          },
          Cm, ref_m2, sm, rows_m, n_out, &fns);
      i_sbu = keep_checked(fns, before);
    }
    if (grouped) {
      const size_t before = fns.size();
      const void* d_goff_c = d_goff;
      check(
          b, "cublas grouped + silu*mul",
          [=]() {
            XSI_CHECK(grouped());
            return silu_mul_rows(Cc, Cb, d_goff_c, d_cnt_c, 0, E, mm, I);
          },
          Cc, ref_g, (const uint8_t*)state_g, total, n_out, &fns);
      i_gbu = keep_checked(fns, before);
    }
  }
  xsi_clear_error();
  const size_t first_ours = fns.size();
  const xs_gemm_schedule sched = XS_GEMM_SCHEDULE_INITIALIZER;
  xs_gemm_epilogue epi = XS_GEMM_EPILOGUE_INITIALIZER;
  epi.act = c->silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE;
  static const char* widths[14] = {"",    "simt",      "128",        "256",     "224",
                                   "192", "208",       "",           "256 cl2", "",
                                   "",    "256 defer", "256 direct", "256 slot"};
  static_assert(sizeof widths / sizeof widths[0] == XS_GEMM_V13 + 1, "one width per version");
  xsg_bench_row* v1_row = NULL;
  std::function<xs_result()> v1_run;
  char name[40];
  /* The row name of version v on a layout: "contig v3 256", "masked v7 16x64" (v7, v9, v10:
   * the tile, rows x output columns; v7's height depends on the rows per group). */
  auto row_name = [&](const char* layout, const xs_gemm_args* av) {
    xs_gemm_tiling t;
    const int tokens =
        av->version == XS_GEMM_V7 || av->version == XS_GEMM_V9 || av->version == XS_GEMM_V10;
    if (tokens && xs_gemm_tiles(&t, av, epi.act) == XS_OK)
      snprintf(name, sizeof name, "%s v%d %dx%d", layout, (int)av->version, t.tile_m, t.tile_n);
    else
      snprintf(name, sizeof name, "%s v%d %s", layout, (int)av->version, widths[av->version]);
    xsi_clear_error();
    return name;
  };
  /* NOTE: v5 is timed here although AUTO does not pick it for grouped problems yet: its
   * figures decide whether it should. v6 (128x208) is picked for grouped problems only; v7
   * (token-major tiles) for MASKED with M <= 64. The masked layout is timed per version too
   * (v2-v8), so that AUTO's masked rule can be refitted from one run. v8 (2-CTA clusters, not
   * picked by AUTO) from 128 tokens per expert: its rows beside v3's decide whether it should
   * be. v9 (v7's streams with 128-token tiles, not picked by AUTO) from 128 tokens per expert.
   * NOTE: bench_gemm.c keeps 20 rows per case; a balanced case with v1 fills them with v2-v7
   * and v9 on both layouts, so v8 (0.72 of v3 at T=128 in run 9, an idle member in every pair)
   * is left out at T < 256 and v7 (64-token tiles: B read once per 64 rows) from T = 256. v10
   * (v3's wgmma on 64 x 256 tiles in two streams per CTA, tuning round 8; run 11: 0.69-0.72 of
   * cuBLAS strided-batched at T=512) is no longer timed: its rows go to v11 (v3 with the
   * deferred epilogue, tuning round 9). v9 (run 10: 0.84-0.89 at T=512, below v3) neither. */
  auto timed_g = [c](int v) {
    if (v == 7) return c->tokens < 256;
    if (v == 8) return c->tokens >= 256;
    if (v == 9) return false;
    if (v == 10) return false;
    if (v == 5) return false; /* never the best grouped row in runs 2-12; AUTO skips it there */
    return true;
  };
  for (int v = 1; v <= 13; v++) {
    if (!timed_g(v)) continue;
    if (v == 1 && b->flops > 4e11) continue; /* NOTE: v1 is validated on the smaller cases */
    xs_gemm_args av = ac;
    av.version = (xs_gemm_version)v;
    std::function<xs_result()> run = [=]() { return xs_gemm_run(&av, epi, sched, NULL); };
    xsg_bench_row* r =
        check(b, row_name("contig", &av), run, Cc, ref_c, sc, rows_c, n_out, v == 1 ? NULL : &fns);
    if (v == 1) v1_row = r, v1_run = run;
  }
  for (int v = 2; v <= 13; v++) {
    if (!timed_g(v)) continue;
    xs_gemm_args av = am;
    av.version = (xs_gemm_version)v;
    check(
        b, row_name("masked", &av), [=]() { return xs_gemm_run(&av, epi, sched, NULL); }, Cm, ref_m,
        sm, rows_m, n_out, &fns);
  }
  /* What AUTO picks, per layout (the production paths). */
  xs_gemm_tiling tc, tm;
  XSI_CHECK(xs_gemm_tiles(&tc, &ac, epi.act));
  XSI_CHECK(xs_gemm_tiles(&tm, &am, epi.act));
  snprintf(name, sizeof name, "contig auto -> v%d", (int)tc.version);
  const xsg_bench_row* contig_auto = check(
      b, name, [=]() { return xs_gemm_run(&ac, epi, sched, NULL); }, Cc, ref_c, sc, rows_c, n_out,
      &fns);
  /* The A/A control (session 11): cuBLAS strided-batched timed a second time among our rows;
   * its ratio to the first strided row is what a row's place alone does to a ratio. With the
   * order rotated it reached 1.044 (Qwen3-235B gate/up E=8 T=128, run 50); shuffled
   * (xsg_round_order) 0.997-1.011 over 48 cases in runs 51-52. */
  int i_aa = -1;
  if (i_sb >= 0 && b->n < b->max_rows) {
    fns.push_back(timed_fn{fns[(size_t)i_sb].fn, add_row(b, "cublas strided (A/A)"), 1, {}});
    i_aa = (int)fns.size() - 1;
  }
  snprintf(name, sizeof name, "masked auto -> v%d", (int)tm.version);
  const xsg_bench_row* masked_auto = check(
      b, name, [=]() { return xs_gemm_run(&am, epi, sched, NULL); }, Cm, ref_m, sm, rows_m, n_out,
      &fns);
  /* MASKED AUTO without the host counts (a captured graph that gives none): it assumes full
   * experts; with skewed counts its pick can differ (session 9). */
  xs_gemm_args am_nc = am;
  am_nc.m_counts_host = NULL;
  XSI_CHECK(xs_gemm_tiles(&tm, &am_nc, epi.act));
  snprintf(name, sizeof name, "masked auto, no counts -> v%d", (int)tm.version);
  check(
      b, name, [=]() { return xs_gemm_run(&am_nc, epi, sched, NULL); }, Cm, ref_m, sm, rows_m,
      n_out, &fns);
  /* The GEMM alone (SiLU*mul off) where cuBLAS strided-batched ran on a SiLU*mul case: not one
   * of the fused rows (it computes less), so it is never the "best" row nor AUTO's. */
  int i_go = -1;
  if (ref_mg && i_sb >= 0) {
    xs_gemm_epilogue eg = epi;
    eg.act = XS_GEMM_ACT_NONE;
    XSI_CHECK(xs_gemm_tiles(&tm, &ag, eg.act));
    snprintf(name, sizeof name, "masked auto, no SiLU -> v%d", (int)tm.version);
    const size_t before = fns.size();
    check(
        b, name, [=]() { return xs_gemm_run(&ag, eg, sched, NULL); }, Cb, ref_mg, sm, rows_m, N,
        &fns);
    i_go = keep_checked(fns, before);
  }
  /* AUTO's picks launched with programmatic dependent launch (xs_gemm_schedule.pdl, session 5):
   * what PDL gives back-to-back launches. */
  xs_gemm_schedule np = sched;
  np.pdl = 1;
  const xsg_bench_row* contig_pdl = check(
      b, "contig auto, PDL", [=]() { return xs_gemm_run(&ac, epi, np, NULL); }, Cc, ref_c, sc,
      rows_c, n_out, &fns);
  const xsg_bench_row* masked_pdl = check(
      b, "masked auto, PDL", [=]() { return xs_gemm_run(&am, epi, np, NULL); }, Cm, ref_m, sm,
      rows_m, n_out, &fns);
  /* AUTO's contiguous pick with raster bands of 4 and 8 m-blocks beside the default (session 7:
   * the m-blocks per expert, sched.h xsg_contig_band; 8 before): whether a band reaching across
   * experts costs (tuning rounds 9, 13). */
  for (int sw = 4; sw <= 8 && b->n + 1 <= b->max_rows; sw *= 2) {
    xs_gemm_schedule ss = sched;
    ss.swizzle = sw;
    snprintf(name, sizeof name, "contig auto band %d", sw);
    check(
        b, name, [=]() { return xs_gemm_run(&ac, epi, ss, NULL); }, Cc, ref_c, sc, rows_c, n_out,
        &fns);
  }
  double drift = NAN;
  res = time_all(b, fns, 1, &drift);
  if (res == XS_OK) time_alone(b, v1_row, v1_run, 1, &b->rows[0], &b->rows[1]);
  for (int i = 0; i < b->n; i++)
    b->rows[i].pad_pct = rows_c ? 100.0 * (rows_c - total) / rows_c : 0.0;
  size_t at = strlen(detail);
  if (at < dl)
    snprintf(detail + at, dl - at,
             "\n#   %d rounds interleaved; cuBLAS drift over the rounds %+.1f%%", rounds_of(b),
             drift);
  /* Our rows against each cuBLAS batched path that ran: the median per-round ratio of its time
   * to ours (> 1: ours faster), AUTO per layout and the best row; `vs` gets AUTO's better layout.
   * Against strided-batched also AUTO with PDL, and the same head to head (alternating order,
   * only the two rows): AUTO per layout and the best row. */
  struct path {
    int at;
    const char* name;
    double* out;
  };
  const path paths[4] = {{i_sb, "strided batched", &vs->strided},
                         {i_gb, "grouped batched", &vs->grouped},
                         {i_sbu, "strided + silu*mul (unfused)", &vs->strided_unfused},
                         {i_gbu, "grouped + silu*mul (unfused)", &vs->grouped_unfused}};
  if (res == XS_OK && i_aa >= 0) vs->control = median_ratio(fns[(size_t)i_sb], fns[(size_t)i_aa]);
  if (res == XS_OK && i_go >= 0) {
    std::vector<double> r = round_ratios(fns[(size_t)i_sb], fns[(size_t)i_go]);
    vs->strided_gemm = median(r);
    xsg_median_interval(r.data(), (int)r.size(), &vs->strided_gemm_lo, &vs->strided_gemm_hi);
  }
  for (const path& p : paths) {
    if (res != XS_OK || p.at < 0 || fns.size() <= first_ours) continue;
    const timed_fn& base = fns[(size_t)p.at];
    size_t best = first_ours;
    double r_contig = NAN, r_masked = NAN, r_contig_pdl = NAN, r_masked_pdl = NAN;
    const timed_fn *f_contig = nullptr, *f_masked = nullptr;
    for (size_t i = first_ours; i < fns.size(); i++) {
      if ((int)i == i_aa || (int)i == i_go) continue; /* cuBLAS; the GEMM alone */
      const double r = median_ratio(base, fns[i]);
      if (r > median_ratio(base, fns[best])) best = i;
      if (fns[i].row == contig_auto) r_contig = r, f_contig = &fns[i];
      if (fns[i].row == masked_auto) r_masked = r, f_masked = &fns[i];
      if (fns[i].row == contig_pdl) r_contig_pdl = r;
      if (fns[i].row == masked_pdl) r_masked_pdl = r;
    }
    *p.out = fmax(r_contig, r_masked);    /* fmax: the one that is not NAN */
    if (p.at == i_sb && !isnan(*p.out)) { /* the spread of that layout's per-round ratios */
      const timed_fn& mine = *(*p.out == r_contig ? f_contig : f_masked);
      std::vector<double> r = round_ratios(base, mine);
      xsg_median_interval(r.data(), (int)r.size(), &vs->strided_lo, &vs->strided_hi);
      /* the same pair per launch at the full clock */
      std::vector<double> iso;
      res = isolated(base, mine, 2 * rounds_of(b), &iso);
      if (res == XS_OK && !iso.empty()) {
        vs->strided_iso = median(iso);
        xsg_median_interval(iso.data(), (int)iso.size(), &vs->strided_iso_lo, &vs->strided_iso_hi);
      }
    }
    at = strlen(detail);
    if (at < dl)
      snprintf(detail + at, dl - at,
               "\n#   vs %s: contig auto %.3f, masked auto %.3f, best %.3f (%s)", p.name, r_contig,
               r_masked, median_ratio(base, fns[best]), fns[best].row->name);
    if (p.at != i_sb) continue;
    at = strlen(detail);
    if (at < dl)
      snprintf(detail + at, dl - at,
               "; with PDL: contig auto %.3f, masked auto %.3f; AUTO's median, %d rounds: 95 %% "
               "interval [%.3f, %.3f]; A/A control %.3f",
               r_contig_pdl, r_masked_pdl, rounds_of(b), vs->strided_lo, vs->strided_hi,
               vs->control);
    at = strlen(detail);
    if (at < dl)
      snprintf(detail + at, dl - at,
               "\n#   per launch at the full clock (each launch alone, %d us idle after it, %d "
               "rounds): AUTO %.3f, 95 %% interval [%.3f, %.3f]",
               XSG_BENCH_IDLE_US, 2 * rounds_of(b), vs->strided_iso, vs->strided_iso_lo,
               vs->strided_iso_hi);
    at = strlen(detail);
    if (i_go >= 0 && at < dl)
      snprintf(detail + at, dl - at,
               "\n#   the GEMM alone (%s) vs strided batched: %.3f, 95 %% interval [%.3f, %.3f]",
               fns[(size_t)i_go].row->name, vs->strided_gemm, vs->strided_gemm_lo,
               vs->strided_gemm_hi);
    double h[3] = {NAN, NAN, NAN};
    const xsg_bench_row* who[3] = {contig_auto, masked_auto, fns[best].row};
    for (int w = 0; w < 3 && res == XS_OK; w++)
      for (size_t i = first_ours; i < fns.size(); i++)
        if (fns[i].row == who[w]) {
          res = head_to_head(base, fns[i], 2 * rounds_of(b), &h[w]);
          break;
        }
    at = strlen(detail);
    if (res == XS_OK && at < dl)
      snprintf(detail + at, dl - at,
               "\n#   head to head (alternating, %d rounds): contig auto %.3f, masked auto %.3f, "
               "%s %.3f",
               2 * rounds_of(b), h[0], h[1], fns[best].row->name, h[2]);
  }
  free(counts);
  free(offsets);
  return res;
}

} // namespace

extern "C" xs_result xsg_bench_idle(int us, void* stream) {
  idle_spin<<<1, 1, 0, (cudaStream_t)stream>>>(1000LL * us);
  return cuda_ok(cudaGetLastError(), "idle spin");
}

extern "C" xs_result xsg_bench_silu_mul(void* out, const void* full, const int32_t* counts, int E,
                                        int rows, int I, void* stream) {
  XSI_ARG(out && full && counts && E >= 1 && rows >= 1 && I >= 1,
          "gemm bench: silu_mul: bad arguments");
  return silu_mul_rows(out, full, NULL, counts, rows, E, rows, I, (cudaStream_t)stream);
}

extern "C" int xsg_bench_clusters2(void) {
  int n = 0;
  if (xsg_v8_max_clusters(&n) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return n;
}

extern "C" xs_result xsg_bench_run(xsg_bench_row* rows, int max_rows, int* nrows, char* detail,
                                   size_t detail_len, const xsg_bench_case* c, xsg_bench_vs* vs) {
  xsg_bench_vs unused;
  if (!vs) vs = &unused;
  vs->strided = vs->grouped = vs->strided_unfused = vs->grouped_unfused = NAN;
  vs->strided_lo = vs->strided_hi = vs->control = NAN;
  vs->strided_gemm = vs->strided_gemm_lo = vs->strided_gemm_hi = NAN;
  vs->strided_iso = vs->strided_iso_lo = vs->strided_iso_hi = NAN;
  XSI_ARG(rows && nrows && c && max_rows >= 10, "gemm bench: bad arguments (max_rows >= 10)");
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
    res = c->grouped ? grouped_case(&b, c, detail, detail_len, vs)
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
