/* gemm_chain.cu — input readiness (xs_gemm_args.ready) at work: an MoE expert MLP, Linear-1
 * (gate/up with SiLU*mul) then Linear-2 (down), MASKED layout, balanced tokens per expert.
 *
 * Per case, interleaved rounds (order shuffled per round, bench.h xsg_round_order) of:
 *   serial       L1 (AUTO), then L2 (AUTO): two plain launches on one stream (the unfused path)
 *   serial pdl   the same, both as programmatic dependent launches (schedule.pdl = 1)
 *   serial v3    L1 (AUTO), then L2 forced to v3 (the version the waits run on)
 *   serial flg   serial v3 with L1 raising its tile flags (what the flags cost L1)
 *   serial rdy   overlap's two launches without the overlap: L1 raising its tile flags, then L2
 *                (v3) with the waits as a plain launch (every flag is set when it starts)
 *   overlap      L1 (AUTO) raising tile flags; L2 (v3) waiting on them (ready.rows = L1's tile_m,
 *                span = its n_blocks, expect = the call's epoch) as a PDL launch that does not
 *                wait for L1 (schedule.pdl = 2): L2's CTAs take SMs as L1's exit and start on
 *                rows L1 has finished
 * A call = L1 + L2; each timing is `reps` calls back to back between two events. Reported:
 * median µs per call and the median over rounds of serial / overlap (> 1: overlap faster) with
 * its 95 % distribution-free interval.
 * Correctness first: overlap's L1 and L2 outputs (poisoned first) equal serial v3's bit for bit;
 * 256 elements of each against an fp64 CPU dot product (L2 from the bf16 L1 output it read);
 * every wait's status is 0 after the timed rounds.
 *
 * --dense: the cost of the waits when every flag is already set: v3 against v3 with ready
 * (one flag per 128 rows, all at 1; `span` words per group where the chain's L2 polls L1's
 * n_blocks) on the issue's four dense shapes and on the chain's Linear-2 shapes (MASKED), same
 * rounds, outputs compared bit for bit.
 *
 * --layer: each GEMM in the layer's order (Linear-2 right after Linear-1, Linear-1 right after
 * the previous Linear-2) and back to back, by version, against cuBLAS strided-batched; --gap-us G
 * puts G microseconds of one GPU thread spinning between the context and the row; --ctx-version V
 * runs the context GEMMs as version V instead of AUTO; --ctx-layer runs them with context = LAYER
 * (a layer whose GEMMs all ask for it); --lean: only the rows AUTO, AUTO with LAYER, v3 and
 * cuBLAS; --all: issue 5's twelve balanced cases (DeepSeek-V3 and Qwen3-235B, 8 and 64 experts,
 * 16, 128 and 512 tokens per expert) instead of five.
 *
 * --mlp: a MoE expert MLP timed whole (ours fused against cuBLAS's unfused path; back to back
 * and in a CUDA graph; run_mlp); --all: issue 5's twelve balanced cases.
 *
 * --tp-layer: a tensor-parallel layer's four dense GEMMs (Llama-3-70B, TP 8; M = 512, 2048,
 * 8192, or the list of --tp-m M1,M2,...) in their order, AUTO for each, v3 for all, and cuBLAS
 * (run_tp_layer), then the layer timed whole (no events between its GEMMs), back to back and in
 * a CUDA graph; --tp-pdl adds AUTO with programmatic dependent launch.
 *
 * Run:  build/bench_gemm_chain [--rounds R] [--reps N]
 *         [--dense | --tp-layer [--tp-m M1,M2,..] [--tp-pdl] | --mlp [--all]
 *          | --layer [--gap-us G] [--ctx-version V] [--ctx-layer] [--lean] [--all]]
 *         (exit 77 without a GPU)
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#include "kernels/gemm/bench.h"
#include "kernels/gemm/check.h"
#include "kernels/gemm/gemm_internal.h"
#include "xstage/xstage.h"

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "gemm_chain: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,                       \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CX(x)                                                                                      \
  do {                                                                                             \
    xs_result r_ = (x);                                                                            \
    if (r_ != XS_OK) {                                                                             \
      fprintf(stderr, "gemm_chain: %s:%d: %s: %s: %s\n", __FILE__, __LINE__, #x, xs_strerror(r_),  \
              xs_last_error());                                                                    \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e6 * ts.tv_sec + 1e-3 * ts.tv_nsec;
}
static uint32_t rng(uint64_t* s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}
static int cmp_d(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
static double median(double* v, int n) {
  double* c = (double*)malloc(sizeof(double) * (size_t)n);
  memcpy(c, v, sizeof(double) * (size_t)n);
  qsort(c, (size_t)n, sizeof *c, cmp_d);
  const double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
  free(c);
  return m;
}
static uint16_t* to_host(const void* d, size_t n) {
  uint16_t* h = (uint16_t*)malloc(n * 2);
  CK(cudaMemcpy(h, d, n * 2, cudaMemcpyDeviceToHost));
  return h;
}

typedef struct chain_case {
  const char* name;
  int E, T, H, I; /* experts, tokens per expert, hidden, intermediate */
} chain_case;

/* One case's expert MLP on the device: tokens X [E, T, H], W1 [E, 2I, H] (gate; up), W2 [E, H,
 * I], Y1 (room for [E, T, 2I]: L1 with or without SiLU*mul), Y2 [E, T, H], T tokens for every
 * expert; a1 = Linear-1 (X -> Y1 as [E, T, I] with SiLU*mul), a2 = Linear-2 (Y1 -> Y2), both
 * MASKED AUTO. */
typedef struct mlp {
  void *X, *W1, *W2, *Y1, *Y2;
  int32_t *counts, *d_counts;
  xs_gemm_args a1, a2;
} mlp;

static void mlp_init(mlp* m, const chain_case* k) {
  const int E = k->E, T = k->T, H = k->H, I = k->I;
  const size_t nx = (size_t)E * T * H, nw1 = (size_t)E * 2 * I * H, nw2 = (size_t)E * H * I;
  CK(cudaMalloc(&m->X, nx * 2));
  CK(cudaMalloc(&m->W1, nw1 * 2));
  CK(cudaMalloc(&m->W2, nw2 * 2));
  CK(cudaMalloc(&m->Y1, (size_t)E * T * 2 * I * 2));
  CK(cudaMalloc(&m->Y2, (size_t)E * T * H * 2));
  CX(xsg_fill_random(m->X, (int64_t)nx, 1, 1.0f));
  CX(xsg_fill_random(m->W1, (int64_t)nw1, 2, 1.0f / sqrtf((float)H)));
  CX(xsg_fill_random(m->W2, (int64_t)nw2, 3, 1.0f / sqrtf((float)I)));
  m->counts = (int32_t*)malloc(sizeof(int32_t) * E);
  for (int e = 0; e < E; e++)
    m->counts[e] = T;
  CK(cudaMalloc(&m->d_counts, sizeof(int32_t) * E));
  CK(cudaMemcpy(m->d_counts, m->counts, sizeof(int32_t) * E, cudaMemcpyHostToDevice));
  const xs_gemm_args args0 = XS_GEMM_ARGS_INITIALIZER;
  m->a1 = args0;
  m->a1.layout = XS_GEMM_GROUPED_MASKED, m->a1.M = T, m->a1.N = 2 * I, m->a1.K = H;
  m->a1.experts = E, m->a1.A = m->X, m->a1.B = m->W1, m->a1.C = m->Y1;
  m->a1.m_counts = m->d_counts, m->a1.m_counts_host = m->counts;
  m->a2 = m->a1;
  m->a2.N = H, m->a2.K = I, m->a2.A = m->Y1, m->a2.B = m->W2, m->a2.C = m->Y2;
}

static void mlp_free(mlp* m) {
  void* bufs[] = {m->X, m->W1, m->W2, m->Y1, m->Y2, m->d_counts};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    cudaFree(bufs[i]);
  free(m->counts);
}

enum { SERIAL, SERIAL_PDL, SERIAL_V3, SERIAL_FLAGS, SERIAL_READY, OVERLAP, NVAR };
static const char* k_var[NVAR] = {"serial",     "serial pdl", "serial v3",
                                  "serial flg", "serial rdy", "overlap"};

typedef struct chain {
  xs_gemm_args a1, a2;
  xs_gemm_epilogue e1, e1f, e2;
  xs_gemm_tiling t1, t2;
  uint32_t* flags;
  xs_status* status;
  uint32_t epoch;
  cudaStream_t s;
} chain;

/* One call of variant v: L1 then L2 on the chain's stream. */
static void call(chain* c, int v) {
  xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER, sc2 = XS_GEMM_SCHEDULE_INITIALIZER;
  xs_gemm_args a2 = c->a2;
  a2.ready.flags = NULL;
  if (v == SERIAL_PDL) sc.pdl = sc2.pdl = 1;
  if (v == SERIAL_V3 || v == SERIAL_FLAGS) a2.version = XS_GEMM_V3;
  if (v == OVERLAP || v == SERIAL_READY) {
    c->epoch++;
    a2 = c->a2;
    a2.ready.expect = c->epoch;
    sc2.pdl = v == OVERLAP ? 2 : 0;
  }
  CX(xs_gemm_run(&c->a1, v == OVERLAP || v == SERIAL_READY || v == SERIAL_FLAGS ? c->e1f : c->e1,
                 sc, c->s));
  CX(xs_gemm_run(&a2, c->e2, sc2, c->s));
}

/* fp64 CPU dot products of 256 random elements: Y1 = silu(X Wg^T) * (X Wu^T) and Y2 = Y1 W2^T
 * (from the bf16 Y1 on the GPU). Returns the number outside bf16 tolerance. */
static int spot_check(const chain_case* k, const void* X, const void* W1, const void* W2,
                      const void* Y1, const void* Y2, double* worst) {
  const int E = k->E, T = k->T, H = k->H, I = k->I;
  uint16_t *x = to_host(X, (size_t)E * T * H), *w1 = to_host(W1, (size_t)E * 2 * I * H);
  uint16_t *w2 = to_host(W2, (size_t)E * H * I), *y1 = to_host(Y1, (size_t)E * T * I);
  uint16_t* y2 = to_host(Y2, (size_t)E * T * H);
  uint64_t s = 99;
  int bad = 0;
  *worst = 0;
  for (int i = 0; i < 256; i++) {
    const int e = (int)(rng(&s) % E), r = (int)(rng(&s) % T), c1 = (int)(rng(&s) % I),
              c2 = (int)(rng(&s) % H);
    const uint16_t* xr = x + ((size_t)e * T + r) * H;
    double g = 0, u = 0, mag = 0;
    for (int j = 0; j < H; j++) {
      g += (double)bf2f(xr[j]) * bf2f(w1[((size_t)e * 2 * I + c1) * H + j]);
      u += (double)bf2f(xr[j]) * bf2f(w1[((size_t)e * 2 * I + I + c1) * H + j]);
    }
    const double want1 = g / (1.0 + exp(-g)) * u;
    const double got1 = bf2f(y1[((size_t)e * T + r) * I + c1]);
    double want2 = 0;
    const uint16_t* yr = y1 + ((size_t)e * T + r) * I;
    for (int j = 0; j < I; j++) {
      const double p = (double)bf2f(yr[j]) * bf2f(w2[((size_t)e * H + c2) * I + j]);
      want2 += p;
      mag += fabs(p);
    }
    const double got2 = bf2f(y2[((size_t)e * T + r) * H + c2]);
    const double err1 = fabs(got1 - want1) / (fabs(want1) + 1e-3 * (fabs(g) + fabs(u)) + 1e-6);
    const double err2 = fabs(got2 - want2) / (fabs(want2) + 1e-2 * mag + 1e-6);
    if (!(err1 < 2e-2) || !(err2 < 2e-2)) bad++;
    if (err1 > *worst) *worst = err1;
    if (err2 > *worst) *worst = err2;
  }
  free(x), free(w1), free(w2), free(y1), free(y2);
  return bad;
}

static int run_case(const chain_case* k, int rounds, int reps) {
  const int E = k->E, T = k->T, H = k->H, I = k->I;
  const size_t ny1 = (size_t)E * T * I, ny2 = (size_t)E * T * H;
  mlp net;
  mlp_init(&net, k);
  void *X = net.X, *W1 = net.W1, *W2 = net.W2, *Y1 = net.Y1, *Y2 = net.Y2;

  chain c;
  memset(&c, 0, sizeof c);
  const xs_gemm_epilogue epi0 = XS_GEMM_EPILOGUE_INITIALIZER;
  c.a1 = net.a1;
  c.a2 = net.a2;
  c.e1 = epi0;
  c.e1.act = XS_GEMM_ACT_SILU_MUL;
  c.e2 = epi0;
  CX(xs_gemm_tiles(&c.t1, &c.a1, XS_GEMM_ACT_SILU_MUL));
  CX(xs_gemm_tiles(&c.t2, &c.a2, XS_GEMM_ACT_NONE));
  CK(cudaMalloc(&c.flags, 4 * (size_t)c.t1.count));
  CK(cudaMemset(c.flags, 0, 4 * (size_t)c.t1.count));
  CK(cudaMalloc(&c.status, sizeof(xs_status)));
  CK(cudaMemset(c.status, 0, sizeof(xs_status)));
  c.e1f = c.e1;
  c.e1f.tile_flags = c.flags;
  c.a2.ready.flags = c.flags, c.a2.ready.rows = c.t1.tile_m, c.a2.ready.span = c.t1.n_blocks;
  c.a2.ready.timeout_ns = 2000000000ull, c.a2.ready.status = c.status, c.a2.ready.location = 2;
  CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));

  /* correctness: serial v3, then overlap on poisoned outputs; equal bit for bit */
  CX(xsg_poison(Y1, (int64_t)ny1));
  CX(xsg_poison(Y2, (int64_t)ny2));
  call(&c, SERIAL_V3);
  CK(cudaStreamSynchronize(c.s));
  uint16_t *r1 = to_host(Y1, ny1), *r2 = to_host(Y2, ny2);
  double worst = 0;
  const int spot_bad = spot_check(k, X, W1, W2, Y1, Y2, &worst);
  CX(xsg_poison(Y1, (int64_t)ny1));
  CX(xsg_poison(Y2, (int64_t)ny2));
  CK(cudaDeviceSynchronize());
  call(&c, OVERLAP);
  CK(cudaStreamSynchronize(c.s));
  uint16_t *o1 = to_host(Y1, ny1), *o2 = to_host(Y2, ny2);
  size_t diff1 = 0, diff2 = 0;
  for (size_t i = 0; i < ny1; i++)
    diff1 += r1[i] != o1[i];
  for (size_t i = 0; i < ny2; i++)
    diff2 += r2[i] != o2[i];
  xs_gemm_tiling tv3;
  xs_gemm_args a2v3 = c.a2;
  a2v3.ready.flags = NULL, a2v3.version = XS_GEMM_V3;
  CX(xs_gemm_tiles(&tv3, &a2v3, XS_GEMM_ACT_NONE));
  printf("## %s: E=%d T=%d H=%d I=%d; L1 v%d %d tiles (%dx%d), L2 AUTO v%d, %d tiles\n", k->name,
         E, T, H, I, (int)c.t1.version, c.t1.count, c.t1.tile_m, c.t1.tile_n, (int)c.t2.version,
         c.t2.count);
  printf("   check: overlap vs serial v3: L1 %zu of %zu bits differ, L2 %zu of %zu; spot check "
         "(fp64 CPU, 256 elements each): %d outside tolerance, worst %.2e\n",
         diff1, ny1, diff2, ny2, spot_bad, worst);
  free(r1), free(r2), free(o1), free(o2);
  const int correct = diff1 == 0 && diff2 == 0 && spot_bad == 0;
  if (!correct) {
    printf("   FAIL: not timed\n");
    return 0;
  }

  /* timing */
  cudaEvent_t ev0, ev1;
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  for (int v = 0; v < NVAR; v++) /* warm-up */
    for (int i = 0; i < reps; i++)
      call(&c, v);
  CK(cudaStreamSynchronize(c.s));
  double* t = (double*)malloc(sizeof(double) * NVAR * rounds);
  for (int r = 0; r < rounds; r++) {
    int order[NVAR];
    xsg_round_order(order, NVAR, r);
    for (int j = 0; j < NVAR; j++) {
      const int v = order[j];
      CK(cudaEventRecord(ev0, c.s));
      for (int i = 0; i < reps; i++)
        call(&c, v);
      CK(cudaEventRecord(ev1, c.s));
      CK(cudaEventSynchronize(ev1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, ev0, ev1));
      t[v * rounds + r] = 1e3 * ms / reps;
    }
  }
  xs_status st;
  CK(cudaMemcpy(&st, c.status, sizeof st, cudaMemcpyDeviceToHost));
  printf("   %-11s %10s %12s\n", "variant", "us/call", "serial/this");
  double* ratio = (double*)malloc(sizeof(double) * rounds);
  for (int v = 0; v < NVAR; v++) {
    for (int r = 0; r < rounds; r++)
      ratio[r] = t[SERIAL * rounds + r] / t[v * rounds + r];
    double lo, hi;
    const double m = median(ratio, rounds);
    xsg_median_interval(ratio, rounds, &lo, &hi);
    printf("   %-11s %10.1f %8.3f [%.3f, %.3f]\n", k_var[v], median(t + v * rounds, rounds), m, lo,
           hi);
  }
  for (int r = 0; r < rounds; r++)
    ratio[r] = t[SERIAL_V3 * rounds + r] / t[OVERLAP * rounds + r];
  double lo, hi;
  const double m = median(ratio, rounds);
  xsg_median_interval(ratio, rounds, &lo, &hi);
  double m2, lo2, hi2;
  for (int r = 0; r < rounds; r++)
    ratio[r] = t[SERIAL_READY * rounds + r] / t[OVERLAP * rounds + r];
  m2 = median(ratio, rounds);
  xsg_median_interval(ratio, rounds, &lo2, &hi2);
  printf("   overlap against serial v3 (same L2 kernel without the waits): %.3f [%.3f, %.3f]; "
         "against serial rdy (the same launches, not overlapped): %.3f [%.3f, %.3f]; wait status "
         "%u (%u timeouts)\n",
         m, lo, hi, m2, lo2, hi2, st.code, st.count);
  free(t), free(ratio);
  CK(cudaEventDestroy(ev0));
  CK(cudaEventDestroy(ev1));
  CK(cudaStreamDestroy(c.s));
  cudaFree(c.flags);
  cudaFree(c.status);
  mlp_free(&net);
  return st.code == 0;
}

/* --dense: v3 against v3 with every flag already set; E > 0: MASKED with E experts of M rows
 * each (all full), the MoE down projection's shape. */
static int run_dense(int E, int M, int N, int K, int span, int rounds, int reps) {
  const int G = E > 0 ? E : 1;
  void *A, *B, *C;
  CK(cudaMalloc(&A, (size_t)G * M * K * 2));
  CK(cudaMalloc(&B, (size_t)G * N * K * 2));
  CK(cudaMalloc(&C, (size_t)G * M * N * 2));
  CX(xsg_fill_random(A, (int64_t)G * M * K, 5, 1.0f));
  CX(xsg_fill_random(B, (int64_t)G * N * K, 6, 1.0f));
  int32_t *counts = (int32_t*)malloc(sizeof(int32_t) * G), *d_counts;
  for (int e = 0; e < G; e++)
    counts[e] = M;
  CK(cudaMalloc(&d_counts, sizeof(int32_t) * G));
  CK(cudaMemcpy(d_counts, counts, sizeof(int32_t) * G, cudaMemcpyHostToDevice));
  const int groups = G * ((M + 127) / 128) * span; /* flag words */
  uint32_t* flags;
  xs_status* status;
  CK(cudaMalloc(&flags, 4 * (size_t)groups));
  CK(cudaMalloc(&status, sizeof(xs_status)));
  CK(cudaMemset(status, 0, sizeof(xs_status)));
  uint32_t* ones = (uint32_t*)malloc(4 * (size_t)groups);
  for (int i = 0; i < groups; i++)
    ones[i] = 1;
  CK(cudaMemcpy(flags, ones, 4 * (size_t)groups, cudaMemcpyHostToDevice));
  free(ones);
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER, aw;
  a.version = XS_GEMM_V3, a.M = M, a.N = N, a.K = K, a.A = A, a.B = B, a.C = C;
  if (E > 0) {
    a.layout = XS_GEMM_GROUPED_MASKED, a.experts = E, a.m_counts = d_counts;
    a.m_counts_host = counts;
  }
  aw = a;
  aw.ready.flags = flags, aw.ready.rows = 128, aw.ready.span = span, aw.ready.expect = 1;
  aw.ready.timeout_ns = 1000000000ull, aw.ready.status = status;
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule s = XS_GEMM_SCHEDULE_INITIALIZER;
  const size_t nc = (size_t)G * M * N;
  CX(xsg_poison(C, (int64_t)nc));
  CX(xs_gemm_run(&a, e, s, NULL));
  uint16_t* r = to_host(C, nc);
  CX(xsg_poison(C, (int64_t)nc));
  CX(xs_gemm_run(&aw, e, s, NULL));
  uint16_t* w = to_host(C, nc);
  size_t diff = 0;
  for (size_t i = 0; i < nc; i++)
    diff += r[i] != w[i];
  free(r), free(w);
  cudaEvent_t ev0, ev1;
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  double* t = (double*)malloc(sizeof(double) * 2 * rounds);
  for (int i = 0; i < reps; i++) { /* warm-up */
    CX(xs_gemm_run(&a, e, s, NULL));
    CX(xs_gemm_run(&aw, e, s, NULL));
  }
  for (int rd = 0; rd < rounds; rd++) {
    int order[2];
    xsg_round_order(order, 2, rd);
    for (int j = 0; j < 2; j++) {
      const int v = order[j];
      CK(cudaEventRecord(ev0, NULL));
      for (int i = 0; i < reps; i++)
        CX(xs_gemm_run(v ? &aw : &a, e, s, NULL));
      CK(cudaEventRecord(ev1, NULL));
      CK(cudaEventSynchronize(ev1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, ev0, ev1));
      t[v * rounds + rd] = 1e3 * ms / reps;
    }
  }
  xs_status st;
  CK(cudaMemcpy(&st, status, sizeof st, cudaMemcpyDeviceToHost));
  double* ratio = (double*)malloc(sizeof(double) * rounds);
  for (int rd = 0; rd < rounds; rd++)
    ratio[rd] = t[rd] / t[rounds + rd];
  double lo, hi;
  const double m = median(ratio, rounds);
  xsg_median_interval(ratio, rounds, &lo, &hi);
  const double fl = 2.0 * G * M * N * K;
  if (E > 0)
    printf("   E=%-2d span %2d ", E, span);
  else
    printf("                ");
  printf("%5dx%5dx%5d  v3 %8.1f us (%5.0f TFLOP/s)  v3+ready %8.1f us  v3/ready %.3f [%.3f, "
         "%.3f]  bits differ %zu  status %u\n",
         M, N, K, median(t, rounds), fl / median(t, rounds) * 1e-6, median(t + rounds, rounds), m,
         lo, hi, diff, st.code);
  free(t), free(ratio);
  CK(cudaEventDestroy(ev0));
  CK(cudaEventDestroy(ev1));
  free(counts);
  void* bufs[] = {A, B, C, flags, status, d_counts};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    cudaFree(bufs[i]);
  return diff == 0 && st.code == 0;
}

/* cuBLAS strided-batched C[e] = A[e] B[e]^T (bf16 in and out, fp32 compute), E batches of
 * rows x n x k: the baseline of issue 5's grouped table. */
static void cublas_sb(cublasHandle_t h, const void* A, const void* B, void* C, int E, int rows,
                      int n, int k, cudaStream_t s) {
  const float one = 1.0f, zero = 0.0f;
  cublasSetStream(h, s);
  /* row-major C[rows, n] = A[rows, k] B[n, k]^T is column-major C^T = B^T(op T) A */
  const cublasStatus_t st = cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, &one, B, CUDA_R_16BF, k, (long long)n * k, A,
      CUDA_R_16BF, k, (long long)rows * k, &zero, C, CUDA_R_16BF, n, (long long)rows * n, E,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "gemm_chain: cublasGemmStridedBatchedEx: status %d\n", (int)st);
    exit(1);
  }
}

/* --layer: each GEMM of the expert MLP in the layer's order, by version, against cuBLAS
 * strided-batched: Linear-2 timed right after Linear-1 (L1, event, L2, event) and Linear-1
 * right after the previous layer's Linear-2 (L2, event, L1, event), and each alone (back to
 * back). Linear-1 rows: ours with SiLU*mul fused (AUTO, v3) and without (AUTO; the output
 * [rows, 2I], as cuBLAS's), cuBLAS without it (issue 5's table compares the same way). Every
 * row's output is checked first: ours against v3's bit for bit, cuBLAS's within bf16 tolerance.
 * "auto layer": AUTO with xs_gemm_args.context = LAYER; v6 and v12 (128x208 tiles; v3's tile
 * stored straight from registers) on both GEMMs. Two more rows of AUTO's kernel through
 * the probe hooks: without L2 cache policies on its TMA
 * loads, and with 128-byte L2 promotion (is the library's L2 choice what the layer order hurts?).
 */
enum {
  LV_AUTO,
  LV_LAYER,
  LV_V3,
  LV_V11,
  LV_V13,
  LV_V6,
  LV_V12,
  LV_NOSILU,
  LV_NOSILU3,
  LV_HINT,
  LV_PROMO,
  LV_CUBLAS,
  NLV
};
static int g_gap_us = 0; /* --gap-us: an idle spin between the context and the row */
static int g_ctx_version = 0; /* --ctx-version V: the context GEMMs run version V (0: AUTO) */
static int g_ctx_layer = 0;   /* --ctx-layer: the context GEMMs with context = LAYER */
static int g_lean = 0;        /* --lean: rows AUTO, AUTO with LAYER, v3 and cuBLAS only */
static int g_probe_hint = 16; /* --probe-hint H: the "auto hint" row's L2 policy (xsg_probe.l2_hint:
                                 A's kind | B's kind << 2, 1 evict_first, 2 evict_last; 16 none) */
static int g_all = 0;         /* --all: issue 5's twelve balanced cases */
static int run_layer(const chain_case* k, int rounds, int reps, cublasHandle_t blas) {
  const int E = k->E, T = k->T, H = k->H, I = k->I;
  const size_t ny1 = (size_t)E * T * 2 * I, ny2 = (size_t)E * T * H;
  mlp m;
  mlp_init(&m, k);
  void* Z;
  const size_t nz = ny1 > ny2 ? ny1 : ny2;
  CK(cudaMalloc(&Z, nz * 2)); /* where the rows under test write */
  xs_gemm_epilogue esilu = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_epilogue eplain = XS_GEMM_EPILOGUE_INITIALIZER;
  esilu.act = XS_GEMM_ACT_SILU_MUL;
  const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
  /* the context GEMMs (AUTO): L1 into Y1 (SiLU*mul, [E, T, I]), L2 from Y1 into Y2 */
  xs_gemm_args c1 = m.a1, c2 = m.a2;
  c1.version = c2.version = (xs_gemm_version)g_ctx_version;
  if (g_ctx_layer) c1.context = c2.context = XS_GEMM_CONTEXT_LAYER;
  cudaEvent_t* ev = (cudaEvent_t*)malloc(sizeof(cudaEvent_t) * 2 * reps);
  for (int i = 0; i < 2 * reps; i++)
    CK(cudaEventCreate(&ev[i]));
  double* tc = (double*)malloc(sizeof(double) * NLV * rounds);
  double* ti = (double*)malloc(sizeof(double) * NLV * rounds);
  double* q = (double*)malloc(sizeof(double) * rounds);
  int ok = 1;
  for (int which = 2; which >= 1; which--) {
    /* the target: L2 (A = Y1 [E, T, I], into Z) or L1 (A = X, into Z) */
    xs_gemm_args tg = which == 2 ? c2 : c1;
    tg.C = Z;
    tg.version = XS_GEMM_AUTO, tg.context = XS_GEMM_CONTEXT_ALONE; /* the rows set their own */
    const int n_out = which == 2 ? H : I, kk = which == 2 ? I : H, nb = which == 2 ? H : 2 * I;
    int have[NLV];
    xs_gemm_tiling ta, tl;
    CX(xs_gemm_tiles(&ta, &tg, which == 1 ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE));
    {
      xs_gemm_args al = tg;
      al.context = XS_GEMM_CONTEXT_LAYER;
      CX(xs_gemm_tiles(&tl, &al, which == 1 ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE));
    }
    /* run row v once on the target */
    auto row = [&](int v) {
      xs_gemm_args a = tg;
      xs_gemm_epilogue e = which == 1 && v != LV_NOSILU && v != LV_NOSILU3 ? esilu : eplain;
      if (v == LV_CUBLAS) {
        cublas_sb(blas, tg.A, tg.B, Z, E, T, nb, kk, NULL);
        return;
      }
      a.version = v == LV_V3 || v == LV_NOSILU3 ? XS_GEMM_V3
                  : v == LV_V11                 ? XS_GEMM_V11
                  : v == LV_V13                 ? XS_GEMM_V13
                  : v == LV_V6                  ? XS_GEMM_V6
                  : v == LV_V12                 ? XS_GEMM_V12
                                                : XS_GEMM_AUTO;
      /* probe hooks: AUTO's kernel with the L2 policy of --probe-hint on its loads (none by
       * default), or with 128-byte L2 promotion (gemm_internal.h xsg_probe) */
      if (v == LV_LAYER) a.context = XS_GEMM_CONTEXT_LAYER;
      if (v == LV_HINT) xsg_probe.l2_hint = g_probe_hint;
      if (v == LV_PROMO) xsg_probe.l2_promo = 3;
      CX(xs_gemm_run(&a, e, sc, NULL));
      xsg_probe.l2_hint = 0, xsg_probe.l2_promo = 0;
    };
    for (int v = 0; v < NLV; v++)
      have[v] = !(which == 1 && (v == LV_V11 || v == LV_V13)) &&
                !(which == 2 && (v == LV_NOSILU || v == LV_NOSILU3)) &&
                (!g_lean || v == LV_AUTO || v == LV_LAYER || v == LV_V3 || v == LV_CUBLAS);
    /* correctness: the context first (Y1 as L2 reads it), then each row into poisoned Z */
    CX(xs_gemm_run(&c1, esilu, sc, NULL));
    printf("## %s, %s (MASKED %dx%dx%d, E=%d; AUTO picks v%d; context v%d, -1: AUTO with LAYER)\n",
           k->name, which == 2 ? "Linear-2 after Linear-1" : "Linear-1 (SiLU*mul) after Linear-2",
           T, nb, kk, E, (int)ta.version, g_ctx_layer ? -1 : g_ctx_version);
    uint16_t* ref = NULL;
    const size_t nout_fused = (size_t)E * T * n_out, nout_plain = (size_t)E * T * nb;
    static const char* names[NLV] = {"auto",       "auto layer", "v3",        "v11",
                                     "v13",        "v6",         "v12",       "auto no-silu",
                                     "v3 no-silu", "auto hint",  "auto 128B", "cublas sb"};
    for (int vi = 0; vi < NLV; vi++) {
      const int v = vi == 0 ? LV_V3 : vi == LV_V3 ? LV_AUTO : vi; /* v3 first: the reference */
      if (!have[v]) continue;
      const int plain = which == 2 || v == LV_NOSILU || v == LV_NOSILU3 || v == LV_CUBLAS;
      const size_t n = plain ? nout_plain : nout_fused;
      CX(xsg_poison(Z, (int64_t)nz));
      row(v);
      CK(cudaDeviceSynchronize());
      uint16_t* out = to_host(Z, n);
      size_t diff = 0, bad = 0;
      if (v == LV_V3) {
        ref = out;
        continue;
      }
      if (which == 2 || v == LV_AUTO || v == LV_LAYER || v == LV_HINT || v == LV_PROMO ||
          v == LV_V6 || v == LV_V12) {
        for (size_t i = 0; i < n; i++) {
          diff += out[i] != ref[i];
          bad += !(fabsf(bf2f(out[i]) - bf2f(ref[i])) <= 1e-2f * fabsf(bf2f(ref[i])) + 1e-2f);
        }
      } else if (v == LV_CUBLAS) { /* against ours without SiLU*mul (checked below the same) */
        xs_gemm_args a = tg;
        void* W = NULL;
        CK(cudaMalloc(&W, n * 2));
        a.C = W;
        CX(xs_gemm_run(&a, eplain, sc, NULL));
        uint16_t* o2 = to_host(W, n);
        for (size_t i = 0; i < n; i++)
          bad += !(fabsf(bf2f(out[i]) - bf2f(o2[i])) <= 1e-2f * fabsf(bf2f(o2[i])) + 1e-2f);
        diff = (size_t)-1;
        free(o2);
        cudaFree(W);
      } else if (v == LV_NOSILU3) { /* v3 without SiLU*mul against cuBLAS */
        uint16_t* o2 = (uint16_t*)malloc(n * 2);
        cublas_sb(blas, tg.A, tg.B, Z, E, T, nb, kk, NULL);
        CK(cudaMemcpy(o2, Z, n * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
          bad += !(fabsf(bf2f(out[i]) - bf2f(o2[i])) <= 1e-2f * fabsf(bf2f(o2[i])) + 1e-2f);
        printf("   check v3 no-silu  : %zu outside bf16 tolerance of cuBLAS\n", bad);
        diff = (size_t)-1;
        free(o2);
      } else {
        diff = (size_t)-1; /* LV_NOSILU: the row cuBLAS is checked against */
      }
      if (bad) ok = 0;
      if (diff != (size_t)-1)
        printf("   check %-12s: %zu bits differ from v3, %zu outside bf16 tolerance\n", names[v],
               diff, bad);
      else if (v == LV_CUBLAS)
        printf("   check cublas sb   : %zu outside bf16 tolerance of ours without SiLU*mul\n", bad);
      free(out);
    }
    free(ref);
    if (!ok) {
      printf("   FAIL: not timed\n");
      break;
    }
    for (int r = -1; r < rounds; r++) { /* round -1: warm-up */
      int order[NLV];
      xsg_round_order(order, NLV, r < 0 ? 0 : r);
      for (int j = 0; j < NLV; j++) {
        const int v = order[j];
        if (!have[v]) continue;
        for (int i = 0; i < reps; i++) { /* in the layer's order */
          if (which == 2)
            CX(xs_gemm_run(&c1, esilu, sc, NULL));
          else
            CX(xs_gemm_run(&c2, eplain, sc, NULL));
          if (g_gap_us > 0) CX(xsg_bench_idle(g_gap_us, NULL));
          CK(cudaEventRecord(ev[2 * i], NULL));
          row(v);
          CK(cudaEventRecord(ev[2 * i + 1], NULL));
        }
        CK(cudaEventSynchronize(ev[2 * reps - 1]));
        double sum = 0;
        for (int i = 0; i < reps; i++) {
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
          sum += ms;
        }
        if (r >= 0) tc[v * rounds + r] = 1e3 * sum / reps;
        CK(cudaEventRecord(ev[0], NULL)); /* alone: back to back */
        for (int i = 0; i < reps; i++)
          row(v);
        CK(cudaEventRecord(ev[1], NULL));
        CK(cudaEventSynchronize(ev[1]));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
        if (r >= 0) ti[v * rounds + r] = 1e3 * ms / reps;
      }
    }
    { /* the host's cost of an enqueue (ours: argument checks, tensor maps, schedule) */
      CK(cudaDeviceSynchronize());
      double hs[2];
      for (int h = 0; h < 2; h++) {
        const double t0 = now_us();
        for (int i = 0; i < 20; i++)
          row(h ? LV_CUBLAS : LV_AUTO);
        hs[h] = (now_us() - t0) / 20;
        CK(cudaDeviceSynchronize());
      }
      printf("   host time per enqueue: auto %.1f us, cublas sb %.1f us\n", hs[0], hs[1]);
    }
    printf("   %-13s %14s %22s %11s %22s\n", "row", "in layer (us)", "cublas/this", "alone (us)",
           "cublas/this");
    for (int v = 0; v < NLV; v++) {
      if (!have[v]) continue;
      double lo, hi, lo2, hi2;
      for (int r = 0; r < rounds; r++)
        q[r] = tc[LV_CUBLAS * rounds + r] / tc[v * rounds + r];
      const double mc = median(q, rounds);
      xsg_median_interval(q, rounds, &lo, &hi);
      for (int r = 0; r < rounds; r++)
        q[r] = ti[LV_CUBLAS * rounds + r] / ti[v * rounds + r];
      const double mi = median(q, rounds);
      xsg_median_interval(q, rounds, &lo2, &hi2);
      char name[24];
      if (v == LV_AUTO)
        snprintf(name, sizeof name, "auto v%d", (int)ta.version);
      else if (v == LV_LAYER)
        snprintf(name, sizeof name, "auto layer v%d", (int)tl.version);
      else
        snprintf(name, sizeof name, "%s", names[v]);
      printf("   %-13s %14.1f %8.3f [%.3f, %.3f] %11.1f %8.3f [%.3f, %.3f]\n", name,
             median(tc + v * rounds, rounds), mc, lo, hi, median(ti + v * rounds, rounds), mi, lo2,
             hi2);
    }
  }
  for (int i = 0; i < 2 * reps; i++)
    CK(cudaEventDestroy(ev[i]));
  free(ev), free(tc), free(ti), free(q);
  cudaFree(Z);
  mlp_free(&m);
  return ok;
}

/* Timed whole (session 26): `reps` calls of body(c) back to back between two events on stream
 * `st` (no events between the kernels, so that a launch may overlap the one before it), and the
 * same `reps` calls captured once in a CUDA graph and replayed; the n configurations interleaved
 * per round (round -1 warms up; each configuration runs once before the captures, so the split
 * workspaces exist for `st` outside any capture). Returns t, calloc'ed: t[(graph * n + c) *
 * rounds + r] = µs per call (graph 0: plain launches, 1: the graph). */
template <class Body>
static double* time_whole(int n, int rounds, int reps, cudaStream_t st, Body body) {
  for (int c = 0; c < n; c++)
    body(c);
  CK(cudaStreamSynchronize(st));
  std::vector<cudaGraphExec_t> gx((size_t)n);
  for (int c = 0; c < n; c++) {
    cudaGraph_t gr;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < reps; i++)
      body(c);
    CK(cudaStreamEndCapture(st, &gr));
    CK(cudaGraphInstantiate(&gx[(size_t)c], gr, 0));
    CK(cudaGraphDestroy(gr));
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double* t = (double*)calloc((size_t)2 * n * rounds, sizeof(double));
  std::vector<int> order((size_t)n);
  for (int r = -1; r < rounds; r++) {
    xsg_round_order(order.data(), n, r < 0 ? 0 : r);
    for (int graph = 0; graph < 2; graph++)
      for (int j = 0; j < n; j++) {
        const int c = order[(size_t)j];
        CK(cudaEventRecord(e0, st));
        if (graph)
          CK(cudaGraphLaunch(gx[(size_t)c], st));
        else
          for (int i = 0; i < reps; i++)
            body(c);
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 0) t[((size_t)graph * n + c) * rounds + r] = 1e3 * ms / reps;
      }
  }
  for (int c = 0; c < n; c++)
    CK(cudaGraphExecDestroy(gx[(size_t)c]));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return t;
}

/* --mlp (session 26): a MoE expert MLP timed whole, as a serving step runs it: ours (Linear-1
 * with SiLU*mul fused, then Linear-2; AUTO; plain and with PDL) against cuBLAS's unfused path
 * (strided-batched Linear-1 into [E, T, 2I], the bench's SiLU*mul kernel, strided-batched
 * Linear-2; and its two GEMMs alone, without the activation kernel: what cuBLAS's path costs at
 * the least, its output not an MLP's): `reps` MLPs back to back between two events on a stream of
 * their own, and the same `reps` captured once in a CUDA graph and replayed; interleaved per round.
 * First the outputs: ours (poisoned first) against the unfused path by relative Frobenius error
 * (the two round Linear-1's output differently: ours once after SiLU*mul, cuBLAS's path gate and up
 * before), and ours with PDL bit for bit against ours without; ours with both GEMMs asking for
 * XS_GEMM_CONTEXT_LAYER (what docs/gemm.md advises for MoE layers) checked and timed beside. */
static int run_mlp(const chain_case* k, int rounds, int reps, cublasHandle_t blas) {
  enum { NM = 5 };
  static const char* name[NM] = {"auto", "auto, PDL", "cublas unfused", "cublas GEMMs only",
                                 "auto, LAYER"};
  const int E = k->E, T = k->T, H = k->H, I = k->I;
  mlp m;
  mlp_init(&m, k);
  void *Yf, *Ys, *Yc; /* the unfused path: [E, T, 2I], [E, T, I], [E, T, H] */
  CK(cudaMalloc(&Yf, (size_t)E * T * 2 * I * 2));
  CK(cudaMalloc(&Ys, (size_t)E * T * I * 2));
  CK(cudaMalloc(&Yc, (size_t)E * T * H * 2));
  xs_gemm_epilogue esilu = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_epilogue eplain = XS_GEMM_EPILOGUE_INITIALIZER;
  esilu.act = XS_GEMM_ACT_SILU_MUL;
  cudaStream_t ls;
  CK(cudaStreamCreateWithFlags(&ls, cudaStreamNonBlocking));
  auto path = [&](int c) {
    if (c == 2 || c == 3) { /* 3: without the activation kernel (a floor; Ys is stale) */
      cublas_sb(blas, m.X, m.W1, Yf, E, T, 2 * I, H, ls);
      if (c == 2) CX(xsg_bench_silu_mul(Ys, Yf, m.d_counts, E, T, I, ls));
      cublas_sb(blas, Ys, m.W2, Yc, E, T, H, I, ls);
      return;
    }
    xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
    sc.pdl = c == 1;
    xs_gemm_args a1 = m.a1, a2 = m.a2; /* 4: both with context = LAYER (docs/gemm.md) */
    if (c == 4) a1.context = a2.context = XS_GEMM_CONTEXT_LAYER;
    CX(xs_gemm_run(&a1, esilu, sc, ls));
    CX(xs_gemm_run(&a2, eplain, sc, ls));
  };
  /* correctness */
  const size_t n = (size_t)E * T * H;
  CX(xsg_poison(Yc, (int64_t)n));
  path(2);
  CK(cudaStreamSynchronize(ls));
  uint16_t* ref = to_host(Yc, n);
  uint16_t* out[3]; /* AUTO, AUTO with PDL, AUTO with LAYER */
  for (int c = 0; c < 3; c++) {
    CX(xsg_poison(m.Y2, (int64_t)n));
    path(c == 2 ? 4 : c);
    CK(cudaStreamSynchronize(ls));
    out[c] = to_host(m.Y2, n);
  }
  double num = 0, num_l = 0, den = 0;
  size_t differ = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = (double)bf2f(out[0][i]) - bf2f(ref[i]);
    const double dl = (double)bf2f(out[2][i]) - bf2f(ref[i]);
    num += d * d, num_l += dl * dl, den += (double)bf2f(ref[i]) * bf2f(ref[i]);
    differ += out[0][i] != out[1][i];
  }
  const double rel = sqrt(num / (den > 0 ? den : 1)), rel_l = sqrt(num_l / (den > 0 ? den : 1));
  const int ok = rel < 2e-2 && rel_l < 2e-2 && differ == 0; /* (NaN fails too) */
  printf("## %s, the expert MLP whole (MASKED, E=%d, %d tokens each, H=%d, I=%d): ours against the "
         "unfused cuBLAS path rel. Frobenius error %.2e (with LAYER %.2e), with PDL %zu values "
         "differ from without%s\n",
         k->name, E, T, H, I, rel, rel_l, differ, ok ? "" : "  FAIL: not timed");
  free(ref), free(out[0]), free(out[1]), free(out[2]);
  if (ok) {
    double* t = time_whole(NM, rounds, reps, ls, path);
    double* q = (double*)malloc(sizeof(double) * rounds);
    for (int graph = 0; graph < 2; graph++) {
      printf("   %-15s us (cuBLAS unfused / row):", graph ? "in a CUDA graph" : "back to back");
      const double* tb = t + (graph * NM + 2) * rounds;
      for (int c = 0; c < NM; c++) {
        const double* tc = t + (graph * NM + c) * rounds;
        for (int r = 0; r < rounds; r++)
          q[r] = tb[r] / tc[r];
        printf(" %s %.1f (%.3f)%s", name[c], median((double*)tc, rounds), median(q, rounds),
               c < NM - 1 ? "," : "");
      }
      const double* tg = t + (graph * NM + 3) * rounds; /* cuBLAS's GEMMs alone / ours */
      for (int r = 0; r < rounds; r++)
        q[r] = tg[r] / t[(graph * NM + 0) * rounds + r];
      printf("; cuBLAS's GEMMs alone / auto %.3f\n", median(q, rounds));
    }
    free(t), free(q);
  }
  CK(cudaStreamDestroy(ls));
  cudaFree(Yf), cudaFree(Ys), cudaFree(Yc);
  mlp_free(&m);
  return ok;
}

/* --tp-layer: a tensor-parallel transformer layer's four dense GEMMs in their order (QKV, O,
 * gate/up, down; Llama-3-70B at TP = 8, M tokens), each timed between two events, by
 * configuration: AUTO for each (its picks differ from GEMM to GEMM), v3 for all four (one kernel
 * function), and cuBLAS (cublasGemmEx through the strided-batched call with one batch). Ours are
 * checked against cuBLAS first (bf16 tolerance). Ratio = cuBLAS / ours per GEMM and for the
 * layer, medians over rounds. */
static int g_tp_pdl; /* --tp-pdl: AUTO with programmatic dependent launch beside the three */
static int run_tp_layer(int M, int rounds, int reps, cublasHandle_t blas) {
  enum { NG = 4, NC_MAX = 4 };
  static const int NK[NG][2] = {{1280, 8192}, {8192, 1024}, {7168, 8192}, {8192, 3584}};
  static const char* gname[NG] = {"qkv", "o", "gate/up", "down"};
  /* configurations: 0 AUTO, 1 v3 for all four, 2 cuBLAS; --tp-pdl adds 3, AUTO launched with
   * programmatic dependent launch (xs_gemm_schedule.pdl: a launch's set-up overlaps the previous
   * kernel's tail; session 26) */
  static const char* cname[NC_MAX] = {"auto", "all v3", "cublas", "auto, PDL"};
  static const int cver[NC_MAX] = {0, 3, 0, 0};
  static const int cpdl[NC_MAX] = {0, 0, 0, 1};
  const int NC = g_tp_pdl ? NC_MAX : 3;
  void *A[NG], *B[NG], *C[NG];
  for (int g = 0; g < NG; g++) {
    CK(cudaMalloc(&A[g], (size_t)M * NK[g][1] * 2));
    CK(cudaMalloc(&B[g], (size_t)NK[g][0] * NK[g][1] * 2));
    CK(cudaMalloc(&C[g], (size_t)M * NK[g][0] * 2));
    CX(xsg_fill_random(A[g], (int64_t)M * NK[g][1], 10 + g, 1.0f));
    CX(xsg_fill_random(B[g], (int64_t)NK[g][0] * NK[g][1], 20 + g, 1.0f / sqrtf((float)NK[g][1])));
  }
  const xs_gemm_args args0 = XS_GEMM_ARGS_INITIALIZER;
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
  xs_gemm_tiling tiling[NG];
  auto run = [&](int c, int g, cudaStream_t st = NULL) {
    if (c == 2) {
      cublas_sb(blas, A[g], B[g], C[g], 1, M, NK[g][0], NK[g][1], st);
      return;
    }
    xs_gemm_args a = args0;
    a.M = M, a.N = NK[g][0], a.K = NK[g][1], a.A = A[g], a.B = B[g], a.C = C[g];
    a.version = (xs_gemm_version)cver[c];
    xs_gemm_schedule sp = sc;
    sp.pdl = cpdl[c];
    CX(xs_gemm_run(&a, e, sp, st));
  };
  int ok = 1;
  printf("## TP layer, Llama-3-70B at TP 8, M = %d tokens (QKV, O, gate/up, down)\n", M);
  for (int g = 0; g < NG; g++) { /* correctness: ours (AUTO, v3) against cuBLAS */
    xs_gemm_args a = args0;
    a.M = M, a.N = NK[g][0], a.K = NK[g][1], a.A = A[g], a.B = B[g], a.C = C[g];
    CX(xs_gemm_tiles(&tiling[g], &a, XS_GEMM_ACT_NONE));
    const size_t n = (size_t)M * NK[g][0];
    run(2, g);
    CK(cudaDeviceSynchronize());
    uint16_t* ref = to_host(C[g], n);
    size_t bad = 0;
    for (int c = 0; c < NC; c++) {
      if (c == 2) continue;
      CX(xsg_poison(C[g], (int64_t)n));
      run(c, g);
      CK(cudaDeviceSynchronize());
      uint16_t* out = to_host(C[g], n);
      for (size_t i = 0; i < n; i++)
        bad += !(fabsf(bf2f(out[i]) - bf2f(ref[i])) <= 1e-2f * fabsf(bf2f(ref[i])) + 1e-2f);
      free(out);
    }
    free(ref);
    printf("   %-8s %5dx%5dx%5d: AUTO picks v%d; %zu elements outside bf16 tolerance of cuBLAS\n",
           gname[g], M, NK[g][0], NK[g][1], (int)tiling[g].version, bad);
    if (bad) ok = 0;
  }
  if (!ok) {
    printf("   FAIL: not timed\n");
    return 0;
  }
  cudaEvent_t ev[2 * NG];
  for (int i = 0; i < 2 * NG; i++)
    CK(cudaEventCreate(&ev[i]));
  double* t = (double*)calloc((size_t)NC * (NG + 1) * rounds, sizeof(double));
  for (int r = -1; r < rounds; r++) {
    int order[NC];
    xsg_round_order(order, NC, r < 0 ? 0 : r);
    for (int j = 0; j < NC; j++) {
      const int c = order[j];
      double sum[NG] = {0, 0, 0, 0};
      for (int i = 0; i < reps; i++) {
        for (int g = 0; g < NG; g++) {
          CK(cudaEventRecord(ev[2 * g], NULL));
          run(c, g);
          CK(cudaEventRecord(ev[2 * g + 1], NULL));
        }
        CK(cudaEventSynchronize(ev[2 * NG - 1]));
        for (int g = 0; g < NG; g++) {
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, ev[2 * g], ev[2 * g + 1]));
          sum[g] += 1e3 * ms;
        }
      }
      if (r < 0) continue;
      double tot = 0;
      for (int g = 0; g < NG; g++) {
        t[((size_t)c * (NG + 1) + g) * rounds + r] = sum[g] / reps;
        tot += sum[g] / reps;
      }
      t[((size_t)c * (NG + 1) + NG) * rounds + r] = tot;
    }
  }
  double* q = (double*)malloc(sizeof(double) * rounds);
  printf("   %-14s", "us");
  for (int g = 0; g <= NG; g++)
    printf(" %10s", g < NG ? gname[g] : "layer");
  printf("   (cuBLAS / row in brackets)\n");
  for (int c = 0; c < NC; c++) {
    printf("   %-14s", cname[c]);
    for (int g = 0; g <= NG; g++) {
      const double* tc = t + ((size_t)c * (NG + 1) + g) * rounds;
      const double* tb = t + ((size_t)2 * (NG + 1) + g) * rounds;
      for (int r = 0; r < rounds; r++)
        q[r] = tb[r] / tc[r];
      printf(" %6.1f %5.3f", median((double*)tc, rounds), median(q, rounds));
    }
    printf("\n");
  }
  {
    /* The layer timed whole, as a serving step runs it (time_whole: back to back with no events
     * between the GEMMs, so that a launch may overlap the kernel before it, and in a CUDA graph);
     * AUTO, (--tp-pdl) AUTO with PDL, and cuBLAS. The per-GEMM table above pays an event between
     * GEMMs, which hides what a kernel's start and end cost beside its neighbours (session 26). */
    const int nl = g_tp_pdl ? 3 : 2; /* configurations, cuBLAS last */
    const int lcc[3] = {0, g_tp_pdl ? 3 : 2, 2};
    cudaStream_t ls;
    CK(cudaStreamCreateWithFlags(&ls, cudaStreamNonBlocking));
    /* per call: one layer of configuration lcc[j] */
    double* tl = time_whole(nl, rounds, reps, ls, [&](int j) {
      for (int g = 0; g < NG; g++)
        run(lcc[j], g, ls);
    });
    for (int graph = 0; graph < 2; graph++) {
      printf("   the layer whole, %-14s us (cuBLAS / row):",
             graph ? "in a CUDA graph" : "back to back");
      const double* tb = tl + (graph * nl + nl - 1) * rounds;
      for (int j = 0; j < nl; j++) {
        const double* tc = tl + (graph * nl + j) * rounds;
        for (int r = 0; r < rounds; r++)
          q[r] = tb[r] / tc[r];
        printf(" %s %.1f (%.3f)%s", cname[lcc[j]], median((double*)tc, rounds), median(q, rounds),
               j < nl - 1 ? "," : "\n");
      }
    }
    CK(cudaStreamDestroy(ls));
    free(tl);
  }
  free(q), free(t);
  for (int i = 0; i < 2 * NG; i++)
    CK(cudaEventDestroy(ev[i]));
  for (int g = 0; g < NG; g++)
    cudaFree(A[g]), cudaFree(B[g]), cudaFree(C[g]);
  return 1;
}

/* --splitk: where v14's time goes (sessions 22, 23). Per dense shape and split S: the whole kernel
 * (its slices as clusters where they fit), the same through the workspace,
 * the multiply alone (xsg_probe.splitk 1: no fix-up), and the multiply with the sums' stores and
 * the barrier (2: no gather, no output); v3 unsplit and cuBLAS beside them. Microseconds per
 * launch, back to back, median over rounds of `reps` launches (probe rows leave C wrong). */
/* A dense problem's operands: A (M x K) and B (N x K) random bf16 (seeds 1, 2), C (M x N). */
static void dense_operands(int M, int N, int K, void** A, void** B, void** C) {
  CK(cudaMalloc(A, (size_t)M * K * 2));
  CK(cudaMalloc(B, (size_t)N * K * 2));
  CK(cudaMalloc(C, (size_t)M * N * 2));
  CX(xsg_fill_random(*A, (int64_t)M * K, 1, 1.0f));
  CX(xsg_fill_random(*B, (int64_t)N * K, 2, 1.0f));
}

/* --switch: what a GEMM pays after another kernel (session 23). Two kernels that run the same
 * ~10 us of dependent FMAs on every SM: `small` loops over them (a few hundred bytes of code),
 * `large` is the same chain unrolled (~256 KB of code, more than an SM's instruction caches
 * hold). If a GEMM is slower after `large` than after `small`, what it refetches is its code. */
#define SW_FMAS 16384
__global__ void sw_small(float* out) {
  float x = (float)threadIdx.x;
  for (int i = 0; i < SW_FMAS; i++)
    x = fmaf(x, 1.0001f + 1e-7f * (float)(i & 15), 0.5f);
  if (x == -1.0f) out[0] = x; /* never true: keeps x alive */
}
__global__ void sw_large(float* out) {
  float x = (float)threadIdx.x;
#pragma unroll
  for (int i = 0; i < SW_FMAS; i++)
    x = fmaf(x, 1.0001f + 1e-7f * (float)(i & 15), 0.5f + (float)i);
  if (x == -1.0f) out[0] = x;
}

/* Per TP shape at 512 tokens (QKV, O, down) and for AUTO and cuBLAS: the GEMM's time (between
 * events around it alone) right after itself, after `small`, after `large`, and after a GEMM of
 * another kernel function (v3 on 512 x 2048 x 1024 for ours, cuBLAS on it for cuBLAS's). Medians
 * of `rounds` rounds of `reps` pairs. */
static int run_switch(int rounds, int reps, cublasHandle_t blas) {
  static const int shapes[3][3] = {{512, 1280, 8192}, {512, 8192, 1024}, {512, 8192, 3584}};
  static const char* name[3] = {"qkv", "o", "down"};
  static const char* ctx[4] = {"itself", "small", "large", "other gemm"};
  float* junk;
  CK(cudaMalloc(&junk, 64));
  void *A2, *B2, *C2; /* the other GEMM: 512 x 2048 x 1024 */
  CK(cudaMalloc(&A2, 512ull * 1024 * 2));
  CK(cudaMalloc(&B2, 2048ull * 1024 * 2));
  CK(cudaMalloc(&C2, 512ull * 2048 * 2));
  CX(xsg_fill_random(A2, 512ll * 1024, 5, 1.0f));
  CX(xsg_fill_random(B2, 2048ll * 1024, 6, 1.0f));
  cudaEvent_t e1, e2;
  CK(cudaEventCreate(&e1));
  CK(cudaEventCreate(&e2));
  double* t = (double*)malloc(sizeof(double) * rounds);
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  printf("## a GEMM after another kernel: us (median of %d rounds x %d), 512 tokens\n", rounds,
         reps);
  printf("   %-5s %-12s %10s %10s %10s %10s\n", "gemm", "library", ctx[0], ctx[1], ctx[2], ctx[3]);
  for (int g = 0; g < 3; g++) {
    const int M = shapes[g][0], N = shapes[g][1], K = shapes[g][2];
    void *A, *B, *C;
    dense_operands(M, N, K, &A, &B, &C);
    xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
    a.M = M, a.N = N, a.K = K, a.A = A, a.B = B, a.C = C;
    xs_gemm_args o = XS_GEMM_ARGS_INITIALIZER;
    o.M = 512, o.N = 2048, o.K = 1024, o.A = A2, o.B = B2, o.C = C2, o.version = XS_GEMM_V3;
    xs_gemm_tiling ta;
    CX(xs_gemm_tiles(&ta, &a, XS_GEMM_ACT_NONE));
    for (int lib = 0; lib < 3; lib++) { /* AUTO, cuBLAS, AUTO with the run-time epilogue */
      xsg_probe.epi_any = lib == 2;
      auto gemm = [&]() {
        if (lib == 1)
          cublas_sb(blas, A, B, C, 1, M, N, K, NULL);
        else
          CX(xs_gemm_run(&a, e, sc, NULL));
      };
      double us[4];
      for (int c = 0; c < 4; c++) {
        for (int r = -1; r < rounds; r++) {
          double sum = 0;
          for (int i = 0; i < reps; i++) {
            if (c == 0) gemm();
            if (c == 1) sw_small<<<sms, 32>>>(junk);
            if (c == 2) sw_large<<<sms, 32>>>(junk);
            if (c == 3) {
              if (lib == 1)
                cublas_sb(blas, A2, B2, C2, 1, 512, 2048, 1024, NULL);
              else
                CX(xs_gemm_run(&o, e, sc, NULL));
            }
            CK(cudaEventRecord(e1, NULL));
            gemm();
            CK(cudaEventRecord(e2, NULL));
            CK(cudaEventSynchronize(e2));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e1, e2));
            sum += 1e3 * ms;
          }
          if (r >= 0) t[r] = sum / reps;
        }
        us[c] = median(t, rounds);
      }
      const int v14 = ta.version == XS_GEMM_V14;
      const char* row = lib == 1   ? "cublas"
                        : lib == 2 ? (v14 ? "v14 again" : "v11 any-epi")
                                   : (v14 ? "auto v14" : "auto v11");
      printf("   %-5s %-12s %10.1f %10.1f %10.1f %10.1f\n", name[g], row, us[0], us[1], us[2],
             us[3]);
    }
    xsg_probe.epi_any = 0;
    cudaFree(A), cudaFree(B), cudaFree(C);
  }
  free(t);
  cudaEventDestroy(e1), cudaEventDestroy(e2);
  cudaFree(junk), cudaFree(A2), cudaFree(B2), cudaFree(C2);
  return 1;
}

static int g_shapes[16][3], g_nshapes; /* --shapes: the sweep's shapes instead of its own */
static int g_unsplit_only;             /* --unsplit-only: the sweep's unsplit rows alone */

static int run_splitk(int rounds, int reps, cublasHandle_t blas) {
  static const int own[][3] = {{512, 1280, 8192}, {128, 1280, 8192}, {128, 8192, 3584},
                               {128, 7168, 8192}, {256, 7168, 8192}, {1024, 1280, 8192},
                               {128, 8192, 1024}, {256, 8192, 1024}, {256, 8192, 3584}};
  const int(*shapes)[3] = g_nshapes ? g_shapes : own;
  const int nshapes = g_nshapes ? g_nshapes : (int)(sizeof own / sizeof own[0]);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double* t = (double*)malloc(sizeof(double) * rounds);
  for (int bn = 256; bn >= 64; bn /= 2) { /* the clusters of a split that fit at once */
    printf("# v14 128x%d: clusters of S = 2..8 that fit at once:", bn);
    for (int S = 2; S <= 8; S++) {
      int n = 0;
      CK(xsg_splitk_max_clusters(bn, S, &n));
      printf(" %d", n);
    }
    printf("\n");
  }
  for (int i = 0; i < nshapes; i++) {
    const int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
    void *A, *B, *C;
    dense_operands(M, N, K, &A, &B, &C);
    printf("## split-K %dx%dx%d, us per launch (median of %d rounds x %d)\n", M, N, K, rounds,
           reps);
    auto timeit = [&](auto fn) {
      for (int r = -1; r < rounds; r++) {
        CK(cudaEventRecord(e0, NULL));
        for (int k = 0; k < reps; k++)
          fn();
        CK(cudaEventRecord(e1, NULL));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 0) t[r] = 1e3 * ms / reps;
      }
      return median(t, rounds);
    };
    const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
    const xs_gemm_schedule sc = XS_GEMM_SCHEDULE_INITIALIZER;
    xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
    a.M = M, a.N = N, a.K = K, a.A = A, a.B = B, a.C = C;
    printf("   cublas %.1f", timeit([&]() { cublas_sb(blas, A, B, C, 1, M, N, K, NULL); }));
    a.version = XS_GEMM_V3;
    printf("  v3 %.1f", timeit([&]() { CX(xs_gemm_run(&a, e, sc, NULL)); }));
    a.version = XS_GEMM_V2;
    printf("  v2 %.1f\n", timeit([&]() { CX(xs_gemm_run(&a, e, sc, NULL)); }));
    for (int bn = 256; bn >= 64; bn /= 2) {
      const int tiles_bn = (M + 127) / 128 * ((N + bn - 1) / bn);
      const int most_bn = sms / tiles_bn < 16 ? sms / tiles_bn : 16;
      const int tries[4] = {2, 4, 8, most_bn};
      if (bn < 256 || tiles_bn <= sms) { /* unsplit on this tile (128 x 256: in one wave) */
        xsg_probe.splitk_bn = bn;
        a.version = XS_GEMM_V14, a.split_k = 1;
        /* the library's kernel, then with one probe field set (time only; reset after) */
        auto probed = [&](int* field, int value) {
          *field = value;
          const double us = timeit([&]() { CX(xs_gemm_run(&a, e, sc, NULL)); });
          *field = 0;
          return us;
        };
        const double whole = timeit([&]() { CX(xs_gemm_run(&a, e, sc, NULL)); });
        const double a_once = probed(&xsg_probe.splitk, 4);
        const double promo_none = probed(&xsg_probe.l2_promo, 1); /* (the library's: 256 B) */
        const double promo_128 = probed(&xsg_probe.l2_promo, 3);
        const double halves = probed(&xsg_probe.splitk_halves, 1);
        const double a_full = probed(&xsg_probe.splitk_a_full, 1);
        printf("   128x%d unsplit (%d tiles): %.1f, A loaded once %.1f, L2 promotion none %.1f, "
               "128 B %.1f, B in halves %.1f, A in 128-row boxes %.1f\n",
               bn, tiles_bn, whole, a_once, promo_none, promo_128, halves, a_full);
        a.split_k = 0;
      }
      xsg_probe.splitk_bn = bn;
      for (int j = 0; j < 4 && !g_unsplit_only; j++) {
        const int S = tries[j];
        if (S < 2 || S > most_bn || (j == 3 && (S == 2 || S == 4 || S == 8))) continue;
        a.version = XS_GEMM_V14, a.split_k = S;
        xs_gemm_tiling tt;
        CX(xs_gemm_tiles(&tt, &a, XS_GEMM_ACT_NONE));
        size_t ws_bytes = 0;
        CX(xs_gemm_workspace_size(&ws_bytes, &a, XS_GEMM_ACT_NONE));
        /* clusters wherever they fit (else the workspace), then through the workspace: whole,
         * the multiply alone, the multiply with the sums' stores and the barrier; which of the two
         * the library takes (ws_bytes: none for clusters) */
        const int fits = xsg_splitk_fits_clusters(bn, S, tt.count);
        static const int modes[6][2] = {{2, 0}, {2, 1}, {1, 0}, {1, 1}, {1, 2}, {2, 5}};
        double us[6];
        for (int m = 0; m < 6; m++) {
          xsg_probe.splitk_global = modes[m][0];
          xsg_probe.splitk = modes[m][1];
          us[m] = timeit([&]() { CX(xs_gemm_run(&a, e, sc, NULL)); });
        }
        xsg_probe.splitk = 0, xsg_probe.splitk_global = 0;
        printf("   128x%d S %2d: whole %.1f, multiply alone %.1f (%s); through the workspace %.1f, "
               "multiply alone %.1f, + sums stored and barrier %.1f; the library's: %s\n",
               bn, S, us[0], us[1], fits ? "clusters" : "workspace", us[2], us[3], us[4],
               ws_bytes ? "workspace" : "clusters");
        if (fits)
          printf("       clusters: the multiply, the hand-offs and the pushes %.1f\n", us[5]);
        a.split_k = 0;
      }
    }
    xsg_probe.splitk_bn = 0;
    a.version = XS_GEMM_AUTO;
    xs_gemm_tiling ta;
    CX(xs_gemm_tiles(&ta, &a, XS_GEMM_ACT_NONE));
    printf("   auto (v%d, %dx%d, S %d) %.1f\n", (int)ta.version, ta.tile_m, ta.tile_n, ta.splits,
           timeit([&]() { CX(xs_gemm_run(&a, e, sc, NULL)); }));
    cudaFree(A), cudaFree(B), cudaFree(C);
  }
  free(t);
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  return 1;
}

int main(int argc, char** argv) {
  int rounds = 15, reps = 10, dense = 0;
  int tp_ms[8] = {512, 2048, 8192}, n_tp = 3; /* --tp-m: the token counts of --tp-layer */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--splitk"))
      dense = 4;
    else if (!strcmp(argv[i], "--dense"))
      dense = 1;
    else if (!strcmp(argv[i], "--layer"))
      dense = 2;
    else if (!strcmp(argv[i], "--gap-us") && i + 1 < argc)
      g_gap_us = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ctx-version") && i + 1 < argc)
      g_ctx_version = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ctx-layer"))
      g_ctx_layer = 1;
    else if (!strcmp(argv[i], "--probe-hint") && i + 1 < argc)
      g_probe_hint = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--lean"))
      g_lean = 1;
    else if (!strcmp(argv[i], "--all"))
      g_all = 1;
    else if (!strcmp(argv[i], "--tp-m") && i + 1 < argc) {
      n_tp = 0;
      for (char* t = strtok(argv[++i], ","); t && n_tp < 8; t = strtok(NULL, ","))
        tp_ms[n_tp++] = atoi(t);
    } else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) {
      g_nshapes = 0; /* M,N,K/M,N,K/... */
      for (char* t = strtok(argv[++i], "/"); t && g_nshapes < 16; t = strtok(NULL, "/")) {
        int* d = g_shapes[g_nshapes];
        if (sscanf(t, "%d,%d,%d", &d[0], &d[1], &d[2]) != 3 || d[0] < 1 || d[1] < 8 || d[1] % 8 ||
            d[2] < 8 || d[2] % 8) {
          fprintf(stderr, "gemm_chain: --shapes takes M,N,K/... (N, K multiples of 8): '%s'\n", t);
          return 2;
        }
        g_nshapes++;
      }
    } else if (!strcmp(argv[i], "--switch"))
      dense = 5;
    else if (!strcmp(argv[i], "--unsplit-only"))
      g_unsplit_only = 1;
    else if (!strcmp(argv[i], "--tp-layer"))
      dense = 3;
    else if (!strcmp(argv[i], "--tp-pdl"))
      g_tp_pdl = 1;
    else if (!strcmp(argv[i], "--mlp"))
      dense = 6;
    else {
      fprintf(stderr,
              "usage: %s [--rounds R] [--reps N] [--dense | --layer [--gap-us G] [--ctx-version V] "
              "[--ctx-layer] [--lean] [--all] [--probe-hint H] | --switch | --splitk [--shapes "
              "M,N,K/...] [--unsplit-only] | --tp-layer [--tp-m "
              "M,...] [--tp-pdl] | --mlp [--all]]\n",
              argv[0]);
      return 2;
    }
  }
  if (g_probe_hint < 1 || g_probe_hint > 16) {
    fprintf(stderr,
            "gemm_chain: --probe-hint must be 1..15 (A's kind | B's kind << 2) or 16 (none)\n");
    return 2;
  }
  if (g_ctx_version < 0 || g_ctx_version > (int)XS_GEMM_V13) {
    fprintf(stderr, "gemm_chain: --ctx-version must be 0 (AUTO) or 1..13\n");
    return 2;
  }
  if (g_gap_us < 0 || g_gap_us > 100000) {
    fprintf(stderr, "gemm_chain: --gap-us must be in [0, 100000]\n");
    return 2;
  }
  if (rounds < 3 || rounds > 200 || reps < 1 || reps > 1000) {
    fprintf(stderr, "gemm_chain: --rounds must be in [3, 200] and --reps in [1, 1000]\n");
    return 2;
  }
  /* XSG_TAIL=1: the probe hook that turns v3's last-wave halves off (gemm_internal.h) */
  const char* tail = getenv("XSG_TAIL");
  if (tail && !strcmp(tail, "1")) xsg_probe.tail = 1;
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
    printf("SKIPPED: no CUDA GPU\n");
    return 77;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf(
      "# gemm_chain on %s (%d SMs), %d rounds x %d calls%s; the \"auto hint\" rows: L2 policy %d "
      "(A | B << 2, 16: none)\n",
      prop.name, prop.multiProcessorCount, rounds, reps,
      xsg_probe.tail ? ", v3's tail halves off" : "", g_probe_hint);
  int ok = 1;
  cublasHandle_t blas = NULL;
  if (dense >= 2 && cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "gemm_chain: cublasCreate failed\n");
    return 1;
  }
  if (dense == 5) {
    ok &= run_switch(rounds, reps, blas);
  } else if (dense == 4) {
    ok &= run_splitk(rounds, reps, blas);
  } else if (dense == 3) {
    for (int i = 0; i < n_tp; i++)
      ok &= tp_ms[i] >= 1 ? run_tp_layer(tp_ms[i], rounds, reps, blas) : 0;
  } else if (dense == 1) {
    printf("## the waits' cost with every flag set (v3, one flag per 128 rows)\n");
    /* the issue's four dense shapes, then the MoE chain's Linear-2 (MASKED, balanced) */
    /* span: flag words per group; the chain's L2 polls L1's n_blocks (16 for DeepSeek-V3's
     * I = 2048, 12 for Qwen3-235B's 1536) */
    static const int shapes[10][5] = {{0, 8192, 8192, 8192, 1}, {0, 4096, 28672, 8192, 1},
                                      {0, 2048, 3072, 4096, 1}, {0, 512, 7168, 2048, 1},
                                      {8, 128, 7168, 2048, 1},  {8, 512, 7168, 2048, 1},
                                      {8, 512, 4096, 1536, 1},  {64, 128, 4096, 1536, 1},
                                      {8, 512, 7168, 2048, 16}, {8, 512, 4096, 1536, 12}};
    for (int i = 0; i < 10; i++)
      ok &= run_dense(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4], rounds,
                      reps);
  } else {
    static const chain_case cases[] = {
        {"DeepSeek-V3 E=8 T=128", 8, 128, 7168, 2048}, {"DeepSeek-V3 E=8 T=512", 8, 512, 7168, 2048},
        {"Qwen3-235B E=8 T=128", 8, 128, 4096, 1536},  {"Qwen3-235B E=8 T=512", 8, 512, 4096, 1536},
        {"Qwen3-235B E=64 T=128", 64, 128, 4096, 1536},
    };
    /* --all (with --layer): issue 5's twelve balanced MoE cases (24 GEMMs) */
    static const chain_case all[] = {
        {"DeepSeek-V3 E=8 T=16", 8, 16, 7168, 2048},
        {"DeepSeek-V3 E=8 T=128", 8, 128, 7168, 2048},
        {"DeepSeek-V3 E=8 T=512", 8, 512, 7168, 2048},
        {"DeepSeek-V3 E=64 T=16", 64, 16, 7168, 2048},
        {"DeepSeek-V3 E=64 T=128", 64, 128, 7168, 2048},
        {"DeepSeek-V3 E=64 T=512", 64, 512, 7168, 2048},
        {"Qwen3-235B E=8 T=16", 8, 16, 4096, 1536},
        {"Qwen3-235B E=8 T=128", 8, 128, 4096, 1536},
        {"Qwen3-235B E=8 T=512", 8, 512, 4096, 1536},
        {"Qwen3-235B E=64 T=16", 64, 16, 4096, 1536},
        {"Qwen3-235B E=64 T=128", 64, 128, 4096, 1536},
        {"Qwen3-235B E=64 T=512", 64, 512, 4096, 1536},
    };
    const int twelve = g_all && (dense == 2 || dense == 6);
    const chain_case* list = twelve ? all : cases;
    const size_t nlist = twelve ? sizeof all / sizeof all[0] : sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < nlist; i++)
      ok &= dense == 2   ? run_layer(&list[i], rounds, reps, blas)
            : dense == 6 ? run_mlp(&list[i], rounds, reps, blas)
                         : run_case(&list[i], rounds, reps);
  }
  if (blas) cublasDestroy(blas);
  printf("# %s\n", ok ? "all checks passed" : "CHECK FAILED");
  return ok ? 0 : 1;
}
