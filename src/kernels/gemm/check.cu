/* check.cu — checker pieces for the GEMM test and benchmark (see check.h). */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <math.h>
#include <string.h>

#include "core/internal.h"
#include "kernels/gemm/check.h"

namespace {

__global__ void fill_random_kernel(uint16_t* dst, int64_t n, uint64_t seed, float scale) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull + 1;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    const float u = (float)(x >> 40) * (1.0f / 16777216.0f); /* [0, 1) */
    dst[i] = __bfloat16_as_ushort(__float2bfloat16_rn((2.0f * u - 1.0f) * scale));
  }
}

__global__ void poison_kernel(uint16_t* dst, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = XSG_POISON;
}

/* ref[r, c] = silu(full[r, c]) * full[r, c + I] over `rows` rows; round: gate and up rounded to
 * bf16 first (the unfused path's intermediate). */
__global__ void silu_mul_kernel(float* ref, const float* full, int64_t rows, int I, int round) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * I;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / I;
    const int c = (int)(i - r * I);
    float g = full[r * 2 * I + c], u = full[r * 2 * I + I + c];
    if (round) {
      g = __bfloat162float(__float2bfloat16_rn(g));
      u = __bfloat162float(__float2bfloat16_rn(u));
    }
    ref[i] = (float)((double)g / (1.0 + exp(-(double)g)) * (double)u);
  }
}

struct sums {
  double diff2, ref2;
  unsigned long long checked, wrong, touched;
};

__device__ __forceinline__ float bits_to_float(uint16_t b) {
  return __uint_as_float((uint32_t)b << 16);
}

/* pass 0: sums of squares; pass 1: counts with the tolerance (needs rms). */
__global__ void compare_kernel(sums* out, const uint16_t* C, const float* ref, const uint8_t* state,
                               int64_t rows, int n_out, int pass, float rms) {
  double d2 = 0, r2 = 0;
  unsigned long long checked = 0, wrong = 0, touched = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * n_out;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / n_out;
    const uint8_t st = state[r];
    if (st == XSG_ROW_UNTOUCHED) {
      if (pass == 1 && C[i] != XSG_POISON) touched++;
      continue;
    }
    if (st != XSG_ROW_CHECK) continue;
    const float c = bits_to_float(C[i]), e = ref[i];
    checked++;
    if (pass == 0) {
      if (isfinite(c)) d2 += (double)(c - e) * (double)(c - e);
      r2 += (double)e * (double)e;
    } else {
      if (!isfinite(c) || fabsf(c - e) > 1e-2f * fabsf(e) + 2e-3f * rms) wrong++;
    }
  }
  atomicAdd(&out->checked, checked);
  if (pass == 0) {
    atomicAdd(&out->diff2, d2);
    atomicAdd(&out->ref2, r2);
  } else {
    atomicAdd(&out->wrong, wrong);
    atomicAdd(&out->touched, touched);
  }
}

xs_result cuda_fail(cudaError_t e, const char* what) {
  return xsi_set_error(XS_ERR_CUDA, "gemm check: %s: %s", what, cudaGetErrorString(e));
}

int grid_for(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (int)(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

} // namespace

extern "C" xs_result xsg_fill_random(void* dst, int64_t n, uint64_t seed, float scale) {
  fill_random_kernel<<<grid_for(n), 256>>>((uint16_t*)dst, n, seed, scale);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? XS_OK : cuda_fail(e, "fill");
}

extern "C" xs_result xsg_poison(void* dst, int64_t n) {
  poison_kernel<<<grid_for(n), 256>>>((uint16_t*)dst, n);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? XS_OK : cuda_fail(e, "poison");
}

extern "C" xs_result xsg_reference(float* ref, float* scratch, const xs_gemm_args* a, int silu,
                                   const int32_t* h_offsets, const int32_t* h_counts,
                                   void* cublas) {
  cublasHandle_t h = (cublasHandle_t)cublas;
  const int n_out = silu ? a->N / 2 : a->N;
  const int groups = a->layout == XS_GEMM_DENSE ? 1 : a->experts;
  const float one = 1.0f, zero = 0.0f;
  for (int e = 0; e < groups; e++) {
    int64_t row0 = 0, rows = a->M;
    if (a->layout == XS_GEMM_GROUPED_CONTIG) {
      row0 = h_offsets[e];
      rows = h_offsets[e + 1] - h_offsets[e];
    } else if (a->layout == XS_GEMM_GROUPED_MASKED) {
      row0 = (int64_t)e * a->M;
      rows = h_counts[e] < a->M ? h_counts[e] : a->M;
    }
    if (rows <= 0) continue;
    const uint16_t* A = (const uint16_t*)a->A + row0 * a->K;
    const uint16_t* B =
        (const uint16_t*)a->B + (a->layout == XS_GEMM_DENSE ? 0 : (int64_t)e * a->N * a->K);
    float* out = silu ? scratch : ref + row0 * n_out;
    /* Row-major C[rows, N] = A[rows, K] B[N, K]^T is column-major C^T = B^T(op T) A. */
    cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, a->N, (int)rows, a->K, &one, B,
                                     CUDA_R_16BF, a->K, A, CUDA_R_16BF, a->K, &zero, out,
                                     CUDA_R_32F, a->N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
      return xsi_set_error(XS_ERR_CUDA, "gemm check: cublasGemmEx (reference): status %d", (int)st);
    if (silu) {
      silu_mul_kernel<<<grid_for(rows * n_out), 256>>>(ref + row0 * n_out, scratch, rows, n_out,
                                                       silu == XSG_SILU_ROUNDED);
      cudaError_t ce = cudaGetLastError();
      if (ce != cudaSuccess) return cuda_fail(ce, "silu reference");
    }
  }
  return XS_OK;
}

extern "C" void xsg_row_states(uint8_t* h_state, const xs_gemm_args* a, const int32_t* h_offsets,
                               const int32_t* h_counts) {
  if (a->layout == XS_GEMM_DENSE) {
    memset(h_state, XSG_ROW_CHECK, (size_t)a->M);
  } else if (a->layout == XS_GEMM_GROUPED_CONTIG) {
    const int used = h_offsets[a->experts];
    for (int r = 0; r < a->M; r++)
      h_state[r] = r < used ? XSG_ROW_CHECK : XSG_ROW_UNTOUCHED;
  } else {
    for (int e = 0; e < a->experts; e++) {
      const int count = h_counts[e], free_end = (count + 127) / 128 * 128;
      for (int r = 0; r < a->M; r++)
        h_state[(int64_t)e * a->M + r] = r < count      ? XSG_ROW_CHECK
                                         : r < free_end ? XSG_ROW_FREE
                                                        : XSG_ROW_UNTOUCHED;
    }
  }
}

extern "C" xs_result xsg_compare(xsg_check* out, const void* C, const float* ref,
                                 const uint8_t* d_state, int64_t rows, int n_out) {
  sums* d = NULL;
  sums h;
  cudaError_t e = cudaMalloc(&d, sizeof(sums));
  if (e != cudaSuccess) return cuda_fail(e, "cudaMalloc");
  memset(out, 0, sizeof *out);
  const int64_t n = rows * n_out;
  float rms = 0;
  for (int pass = 0; pass < 2; pass++) {
    if ((e = cudaMemset(d, 0, sizeof(sums))) != cudaSuccess) break;
    compare_kernel<<<grid_for(n), 256>>>(d, (const uint16_t*)C, ref, d_state, rows, n_out, pass,
                                         rms);
    if ((e = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost)) != cudaSuccess) break;
    if (pass == 0) {
      out->rel_err = h.ref2 > 0 ? sqrt(h.diff2 / h.ref2) : sqrt(h.diff2);
      rms = (float)sqrt(h.ref2 / (double)(h.checked ? h.checked : 1));
    } else {
      out->checked = (long long)h.checked;
      out->wrong = (long long)h.wrong;
      out->touched = (long long)h.touched;
    }
  }
  cudaFree(d);
  return e == cudaSuccess ? XS_OK : cuda_fail(e, "compare");
}

extern "C" int xsg_check_ok(const xsg_check* c) {
  return c->wrong == 0 && c->touched == 0 && c->rel_err < 1e-2 && c->rel_err == c->rel_err;
}
