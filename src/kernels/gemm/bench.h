/* bench.h — the GEMM benchmark behind `xstage bench gemm` (internal; plain C). Each case times
 * every kernel version beside cuBLAS in the same run, after validating each against an fp32
 * cuBLAS reference (nccl-tests style: a `wrong` count on every row). The rows of a case are
 * timed interleaved (rounds of one batch per row) so that the card's clock drift cancels in
 * the ratios (bench.cu). Without CUDA every entry
 * returns XS_ERR_UNSUPPORTED (src/nocuda/gemm.c).
 */
#ifndef XSTAGE_KERNELS_GEMM_BENCH_H
#define XSTAGE_KERNELS_GEMM_BENCH_H

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
} xsg_bench_vs;

/* Run one case; fills rows[0..*nrows). The first row is the cuBLAS baseline. Needs a GPU
 * (XS_ERR_NO_DEVICE). `detail` (may be NULL) receives a description of the case, e.g. the
 * expert counts and the ratios against the batched paths; `vs` (may be NULL) those ratios. */
xs_result xsg_bench_run(xsg_bench_row* rows, int max_rows, int* nrows, char* detail,
                        size_t detail_len, const xsg_bench_case* c, xsg_bench_vs* vs);

#ifdef __cplusplus
}
#endif
#endif
