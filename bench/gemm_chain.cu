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
 * Run:  build/bench_gemm_chain [--rounds R] [--reps N] [--dense]   (exit 77 without a GPU)
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  const size_t nx = (size_t)E * T * H, nw1 = (size_t)E * 2 * I * H, nw2 = (size_t)E * H * I;
  const size_t ny1 = (size_t)E * T * I, ny2 = (size_t)E * T * H;
  void *X, *W1, *W2, *Y1, *Y2;
  CK(cudaMalloc(&X, nx * 2));
  CK(cudaMalloc(&W1, nw1 * 2));
  CK(cudaMalloc(&W2, nw2 * 2));
  CK(cudaMalloc(&Y1, ny1 * 2));
  CK(cudaMalloc(&Y2, ny2 * 2));
  CX(xsg_fill_random(X, (int64_t)nx, 1, 1.0f));
  CX(xsg_fill_random(W1, (int64_t)nw1, 2, 1.0f / sqrtf((float)H)));
  CX(xsg_fill_random(W2, (int64_t)nw2, 3, 1.0f / sqrtf((float)I)));
  int32_t* counts = (int32_t*)malloc(sizeof(int32_t) * E);
  for (int e = 0; e < E; e++)
    counts[e] = T;
  int32_t* d_counts;
  CK(cudaMalloc(&d_counts, sizeof(int32_t) * E));
  CK(cudaMemcpy(d_counts, counts, sizeof(int32_t) * E, cudaMemcpyHostToDevice));

  chain c;
  memset(&c, 0, sizeof c);
  const xs_gemm_args args0 = XS_GEMM_ARGS_INITIALIZER;
  const xs_gemm_epilogue epi0 = XS_GEMM_EPILOGUE_INITIALIZER;
  c.a1 = args0;
  c.a1.layout = XS_GEMM_GROUPED_MASKED, c.a1.M = T, c.a1.N = 2 * I, c.a1.K = H, c.a1.experts = E;
  c.a1.A = X, c.a1.B = W1, c.a1.C = Y1, c.a1.m_counts = d_counts, c.a1.m_counts_host = counts;
  c.a2 = c.a1;
  c.a2.N = H, c.a2.K = I, c.a2.A = Y1, c.a2.B = W2, c.a2.C = Y2;
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
  free(t), free(ratio), free(counts);
  CK(cudaEventDestroy(ev0));
  CK(cudaEventDestroy(ev1));
  CK(cudaStreamDestroy(c.s));
  void* bufs[] = {X, W1, W2, Y1, Y2, d_counts, c.flags, c.status};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    cudaFree(bufs[i]);
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

int main(int argc, char** argv) {
  int rounds = 15, reps = 10, dense = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dense"))
      dense = 1;
    else {
      fprintf(stderr, "usage: %s [--rounds R] [--reps N] [--dense]\n", argv[0]);
      return 2;
    }
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
  printf("# gemm_chain on %s (%d SMs), %d rounds x %d calls%s\n", prop.name,
         prop.multiProcessorCount, rounds, reps, xsg_probe.tail ? ", v3's tail halves off" : "");
  int ok = 1;
  if (dense) {
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
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      ok &= run_case(&cases[i], rounds, reps);
  }
  printf("# %s\n", ok ? "all checks passed" : "CHECK FAILED");
  return ok ? 0 : 1;
}
