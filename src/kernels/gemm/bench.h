/* bench.h — the GEMM benchmark behind `xstage bench gemm` (internal; plain C). Each case times
 * every kernel version beside cuBLAS in the same run, after validating each against an fp32
 * cuBLAS reference (nccl-tests style: a `wrong` count on every row). The rows of a case are
 * timed interleaved (rounds of one batch per row) so that the card's clock drift cancels in
 * the ratios (bench.cu). Without CUDA every entry
 * returns XS_ERR_UNSUPPORTED (src/nocuda/gemm.c).
 */
#ifndef XSTAGE_KERNELS_GEMM_BENCH_H
#define XSTAGE_KERNELS_GEMM_BENCH_H

#include <math.h>

#include "xstage/xstage.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xsg_bench_case {
  int grouped; /* 0: dense M x N x K; 1: grouped over `experts` */
  int M, N, K; /* dense shape; grouped: N, K per expert (N = 2I with silu) */
  int experts; /* grouped */
  int tokens;  /* grouped: mean tokens per expert */
  int zipf;    /* grouped: 1 Zipf(s = 1)-skewed counts, 0 balanced */
  int silu;    /* grouped: SiLU*mul epilogue (gate/up projection) */
  int hook;    /* dense: also time the STORE_MAP epilogue into another HBM region */
  int reps;    /* interleaved timing rounds (0: 10; else 3..20) */
} xsg_bench_case;

typedef struct xsg_bench_row {
  char name[40];   /* "cublas", "v2 128x128", "v3 hook", "cublas loop", ... */
  double ms;       /* median over the rounds of the time of one call */
  double tflops;   /* useful flops (2 * rows * N * K) / ms */
  double ratio;    /* speed against the case's first row (cuBLAS): median over the rounds of
                      baseline time / this row's time in the same round */
  double vs_loop;  /* grouped: the same against the cuBLAS loop per expert; NAN for dense */
  double pad_pct;  /* grouped: padding rows of the contiguous layout, % of its rows (the same
                      on every row of a case); NAN for dense */
  double rel_err;  /* relative Frobenius error vs the fp32 reference; NAN: not checked */
  long long wrong; /* out-of-tolerance or non-finite elements + poison overwritten */
  int status;      /* xs_result; XS_ERR_UNSUPPORTED: this version cannot run the case */
} xsg_bench_row;

/* Grouped cases: AUTO (the better of its two layouts) against cuBLAS's batched paths, each the
 * median over the interleaved rounds of (path's time / AUTO's time): > 1, ours faster. NAN where
 * the path does not apply (strided: balanced counts only; unfused: SiLU*mul only) or failed its
 * check. The unfused paths are the GEMM followed by one SiLU*mul kernel (bench.cu). */
typedef struct xsg_bench_vs {
  double strided;         /* cublasGemmStridedBatchedEx, GEMM only ([rows, 2I] with SiLU*mul) */
  double grouped;         /* cublasGemmGroupedBatchedEx (one group per expert), GEMM only */
  double strided_unfused; /* SiLU*mul: strided-batched GEMM, then the SiLU*mul kernel */
  double grouped_unfused; /* SiLU*mul: grouped-batched GEMM, then the SiLU*mul kernel */
  /* `strided`'s spread: the median's distribution-free interval over the same per-round ratios
   * (xsg_median_interval; NAN where `strided` is). lo > 1: faster in a way the rounds' spread
   * does not explain; hi < 1: slower in such a way; otherwise a tie within that spread. */
  double strided_lo, strided_hi;
  /* The A/A control: cuBLAS strided-batched against itself, timed a second time among our rows
   * (median per-round ratio; NAN where strided-batched did not run). Its distance from 1 is the
   * bias a row's place in the round can give its ratio, which the interval above does not see. */
  double control;
  /* SiLU*mul cases with balanced counts: AUTO on the same problem without the SiLU*mul (the GEMM
   * alone, masked layout, [rows, 2I] like cuBLAS's output) against strided-batched, with its
   * interval as above; NAN elsewhere. `strided` pits the fused kernel (GEMM + SiLU*mul) against
   * cuBLAS's GEMM alone; this compares the same work. */
  double strided_gemm, strided_gemm_lo, strided_gemm_hi;
  /* `strided` per launch at the full clock: AUTO's better layout and strided-batched each
   * launched alone (an event pair around every launch), with XSG_BENCH_IDLE_US of one thread
   * spinning after it, so the GPU runs below its power cap at its full clock instead of at the
   * cap as back-to-back launches do (session 15: which is ahead can follow that regime); the
   * two rows alternate per round. Median of per-round ratios with its interval; NAN where
   * `strided` is. */
  double strided_iso, strided_iso_lo, strided_iso_hi;
} xsg_bench_vs;

#define XSG_BENCH_IDLE_US 150

/* The distribution-free confidence interval of a median from n samples (per-round ratios):
 * [x_(k), x_(n+1-k)] of the sorted sample, with the largest k whose coverage
 * 1 - 2 P(Bin(n, 1/2) <= k - 1) is at least 95 %. Sorts v[0..n) in place and returns the
 * coverage. With n < 6 no k reaches 95 %: the interval is [min, max] and the return value
 * 1 - 2^(1-n) (0 for n = 0, lo = hi = NAN). Pure; checked on the CPU (test_gemm_sched). */
static inline double xsg_median_interval(double* v, int n, double* lo, double* hi) {
  *lo = *hi = NAN;
  if (!v || n < 1) return 0.0;
  for (int i = 1; i < n; i++) /* insertion sort: n is a few dozen rounds at most */
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      const double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  /* cdf = P(Bin(n, 1/2) <= k - 1), built term by term: C(n, i) / 2^n */
  double term = 1.0;
  for (int i = 0; i < n; i++)
    term *= 0.5;
  int k = 1;
  double cover = 1.0 - 2.0 * term, cdf = term; /* k = 1: [min, max] */
  for (int kk = 2; 2 * kk <= n + 1; kk++) {
    term = term * (n - (kk - 2)) / (kk - 1); /* C(n, kk-1) / 2^n */
    const double c = 1.0 - 2.0 * (cdf + term);
    if (c < 0.95) break;
    cdf += term;
    k = kk, cover = c;
  }
  *lo = v[k - 1];
  *hi = v[n - k];
  return cover;
}

/* The order of n rows (0..n-1) in timed round r, written to order[0..n): two rows alternate
 * (A B, B A, ...); more are shuffled by a fixed-seed Fisher-Yates permutation per round (session
 * 11). With the order only rotated, every row had the same predecessor in every round, and what a
 * predecessor leaves behind (the card's clock and power state, the cache) biased that row the
 * same way each round: cuBLAS strided-batched timed a second time among our rows (the bench's A/A
 * control) ran up to 4.4 % faster than in its own place (Qwen3-235B gate/up E=8 T=128, run 50),
 * and one v7 launch timed 2 % apart in two places (runs 46-48). Shuffled, a predecessor's effect
 * becomes round-to-round spread, which the median's interval shows. Used by the bench and the
 * probes (bench/gemm_probe_common.h). */
static inline void xsg_round_order(int* order, int n, int r) {
  for (int j = 0; j < n; j++)
    order[j] = n <= 2 ? (j + r) % n : j;
  if (n <= 2) return;
  unsigned long long x = 0x9e3779b97f4a7c15ull * (unsigned long long)(r + 1);
  for (int j = n - 1; j > 0; j--) {
    x ^= x >> 31, x *= 0xbf58476d1ce4e5b9ull, x ^= x >> 29; /* a splitmix-style step */
    const int k = (int)(x % (unsigned long long)(j + 1)), t = order[j];
    order[j] = order[k];
    order[k] = t;
  }
}

/* How many 2-CTA clusters of one CTA per SM (v8's launch shape) the GPU holds at once
 * (cudaOccupancyMaxActiveClusters), or -1 (no CUDA, no GPU). Half the SMs at most; fewer when
 * some GPCs have an odd number of working SMs, which differs from chip to chip. cuBLAS's Hopper
 * kernels run on 2-CTA clusters too, so this is printed beside the bench's ratios. */
int xsg_bench_clusters2(void);

/* Enqueue `us` microseconds of one GPU thread spinning on %globaltimer on `stream` (a
 * cudaStream_t; NULL: the legacy default stream): the GPU stays nearly idle meanwhile, below its
 * power cap. What xsg_bench_vs.strided_iso puts after every launch (and the probes' --idle-us).
 * XS_ERR_CUDA when the launch fails; XS_ERR_UNSUPPORTED without CUDA. */
xs_result xsg_bench_idle(int us, void* stream);

/* The unfused path's activation (the bench's baseline kernel, not the library's): out[e, r, c] =
 * silu(full[e, r, c]) * full[e, r, c + I] for the first counts[e] (device) of `rows` rows of each
 * of E experts; full [E, rows, 2I] and out [E, rows, I] bf16, fp32 math. On `stream` (a
 * cudaStream_t; NULL: the legacy default stream). XS_ERR_UNSUPPORTED without CUDA. */
xs_result xsg_bench_silu_mul(void* out, const void* full, const int32_t* counts, int E, int rows,
                             int I, void* stream);

/* Run one case; fills rows[0..*nrows). The first row is the cuBLAS baseline. Needs a GPU
 * (XS_ERR_NO_DEVICE). `detail` (may be NULL) receives a description of the case, e.g. the
 * expert counts and the ratios against the batched paths; `vs` (may be NULL) those ratios. */
xs_result xsg_bench_run(xsg_bench_row* rows, int max_rows, int* nrows, char* detail,
                        size_t detail_len, const xsg_bench_case* c, xsg_bench_vs* vs);

#ifdef __cplusplus
}
#endif
#endif
