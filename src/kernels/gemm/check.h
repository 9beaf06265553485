/* check.h — checker pieces shared by tests/gpu/test_gemm.cu and the GEMM benchmark: random
 * bf16 fill, NaN poisoning, an fp32 cuBLAS reference (with the SiLU*mul step), per-row check
 * states and a comparison kernel. Internal; CUDA builds only. Pointers are device pointers
 * unless named h_*. Errors: XS_ERR_CUDA with the CUDA/cuBLAS detail.
 */
#ifndef XSTAGE_KERNELS_GEMM_CHECK_H
#define XSTAGE_KERNELS_GEMM_CHECK_H

#include <stdint.h>

#include "xstage/gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bf16 bit pattern written over outputs before a run: a NaN (sign set, all exponent and
 * mantissa bits set). */
#define XSG_POISON 0xFFFFu

/* Per-row check state of an output buffer. */
enum { XSG_ROW_CHECK = 0, XSG_ROW_FREE = 1, XSG_ROW_UNTOUCHED = 2 };

/* Fill n bf16 values uniform in [-scale, scale] from `seed` (deterministic). */
xs_result xsg_fill_random(void* dst, int64_t n, uint64_t seed, float scale);
/* Set n bf16 values to XSG_POISON. */
xs_result xsg_poison(void* dst, int64_t n);

/* fp32 reference of a problem: ref has the output's shape ([rows, n_out], rows = M, or E * M
 * for MASKED). Computed with cublasGemmEx (bf16 in, fp32 out, fp32 compute) per expert over the
 * rows each layout defines (CONTIG: whole segments [h_offsets[e], h_offsets[e+1]), padding rows
 * included; MASKED: the first h_counts[e] rows), then silu(gate) * up when silu (1; with
 * XSG_SILU_ROUNDED gate and up are rounded to bf16 first, as an unfused path stores them).
 * `scratch` must hold rows * N floats when silu (else unused). `cublas` is a cublasHandle_t. */
#define XSG_SILU_ROUNDED 2
xs_result xsg_reference(float* ref, float* scratch, const xs_gemm_args* a, int silu,
                        const int32_t* h_offsets, const int32_t* h_counts, void* cublas);

/* Row states (host array of `rows` bytes) for a problem: CHECK where the reference is defined,
 * FREE where the output is unspecified (MASKED: from the count up to the next multiple of 128),
 * UNTOUCHED where the poison must survive. */
void xsg_row_states(uint8_t* h_state, const xs_gemm_args* a, const int32_t* h_offsets,
                    const int32_t* h_counts);

typedef struct xsg_check {
  double rel_err;    /* ||C - ref||_F / ||ref||_F over CHECK rows (0 when ref is all zero) */
  long long checked; /* elements compared */
  long long wrong;   /* |c - r| > 1e-2 |r| + 2e-3 rms(ref), or non-finite, on CHECK rows */
  long long touched; /* UNTOUCHED elements that no longer hold the poison */
} xsg_check;

/* Compare C (bf16, [rows, n_out], leading dimension n_out) with ref (fp32, same shape) under
 * the row states d_state (device, `rows` bytes). Synchronizes the device. */
xs_result xsg_compare(xsg_check* out, const void* C, const float* ref, const uint8_t* d_state,
                      int64_t rows, int n_out);

/* 1 when the check passes the bf16 bounds used by the test and the benchmark. */
int xsg_check_ok(const xsg_check* c);

#ifdef __cplusplus
}
#endif
#endif
