/* gemm_v1.cu — v1: the simple, correct GEMM (SIMT, fp32 FMA, any shape and alignment).
 *
 * 64x64 output tiles, 256 threads, K in steps of 32 through shared memory; each thread owns 4
 * rows x 4 columns (columns strided by 16 so the stores of a warp are contiguous). It runs every
 * feature of the engine — all layouts, SiLU*mul, both store kinds, tile flags, the same
 * schedules (persistent CTAs over sched.h positions), input readiness — so v2/v3 are tested against
 * the same semantics, and problems TMA cannot describe (K or N not a multiple of 8, unaligned
 * pointers) still run.
 */
#include <cuda_bf16.h>

#include "kernels/gemm/gemm_internal.h"
#include "xstage/ptx.cuh"

namespace {

constexpr int BM = 64, BN = 64, BK = 32, THREADS = 256;

__device__ __forceinline__ float bf16_bits_to_float(uint16_t b) {
  return __uint_as_float((uint32_t)b << 16);
}

__global__ void __launch_bounds__(THREADS) gemm_kernel_v1(const __grid_constant__ xsg_params p) {
  __shared__ float sa[BK][BM + 4];
  __shared__ float sb[2][BK][BN + 4]; /* [0]: B rows (gate with SiLU), [1]: up rows (SiLU) */
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  const int silu = p.epi.act == XS_GEMM_ACT_SILU_MUL;
  const int b_rows_valid = silu ? p.N / 2 : p.N; /* gate (and up) rows per expert */

  for (int k = blockIdx.x; k < p.positions; k += gridDim.x) {
    const int tile_index = xsg_position_tile(&p, k);
    const xsg_tile t = xsg_tile_decode(&p.grid, tile_index);
    int row0, row_end, expert;
    if (!xsg_tile_rows(&p, t, &row0, &row_end, &expert)) continue;
    const int64_t a_base = p.layout == XS_GEMM_GROUPED_MASKED ? (int64_t)expert * p.M : 0;
    const int64_t b_base = p.layout == XS_GEMM_DENSE ? 0 : (int64_t)expert * p.N;
    const int col0 = t.nb * BN;
    if (p.ready.flags) { /* input readiness: thread 0 acquires, the barrier orders the rest */
      if (tid == 0) xsg_wait_ready(p, expert, row0, min(row0 + BM, row_end));
      __syncthreads();
    }
    float acc[4][4] = {}, acc_up[4][4] = {};

    for (int k0 = 0; k0 < p.K; k0 += BK) {
      for (int q = tid; q < BM * BK; q += THREADS) { /* consecutive threads: consecutive k */
        const int r = q / BK, kk = q % BK, gk = k0 + kk;
        const int arow = row0 + r, brow = col0 + r;
        sa[kk][r] = (arow < row_end && gk < p.K)
                        ? bf16_bits_to_float(p.A[(a_base + arow) * p.K + gk])
                        : 0.0f;
        const int ok_b = brow < b_rows_valid && gk < p.K;
        sb[0][kk][r] = ok_b ? bf16_bits_to_float(p.B[(b_base + brow) * p.K + gk]) : 0.0f;
        if (silu)
          sb[1][kk][r] =
              ok_b ? bf16_bits_to_float(p.B[(b_base + p.N / 2 + brow) * p.K + gk]) : 0.0f;
      }
      __syncthreads();
#pragma unroll 4
      for (int kk = 0; kk < BK; kk++) {
        float a[4], b[4], u[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
          a[i] = sa[kk][ty * 4 + i];
#pragma unroll
        for (int j = 0; j < 4; j++) {
          b[j] = sb[0][kk][tx + 16 * j];
          u[j] = silu ? sb[1][kk][tx + 16 * j] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++) {
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            acc_up[i][j] = fmaf(a[i], u[j], acc_up[i][j]);
          }
      }
      __syncthreads();
    }

    /* ---- epilogue: guarded element stores (local C or the tile's map entry) ---- */
    xs_gemm_tile_dst dst = {NULL, 0};
    if (p.epi.store == XS_GEMM_STORE_MAP) dst = p.epi.dst_map[tile_index];
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int r = ty * 4 + i, grow = row0 + r;
      if (grow >= row_end) continue;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const int c = tx + 16 * j, gcol = col0 + c;
        if (gcol >= p.n_out) continue;
        float v = acc[i][j];
        if (silu) v = v / (1.0f + __expf(-v)) * acc_up[i][j];
        const uint16_t bits = __bfloat16_as_ushort(__float2bfloat16_rn(v));
        if (p.epi.store == XS_GEMM_STORE_MAP)
          ((uint16_t*)dst.base)[(int64_t)r * dst.ld + c] = bits;
        else
          p.C[(a_base + grow) * p.n_out + gcol] = bits;
      }
    }
    if (p.epi.tile_flags) {
      __syncthreads(); /* every thread's stores of this tile precede the release below */
      if (tid == 0) {
        xs_fence_acq_rel_sys();
        xs_red_add_release_sys_u32(&p.epi.tile_flags[tile_index], 1);
      }
    }
  }
}

} // namespace

cudaError_t xsg_launch_v1(const xsg_params* p, int ctas, cudaStream_t stream) {
  gemm_kernel_v1<<<ctas, THREADS, 0, stream>>>(*p);
  return cudaGetLastError();
}

cudaError_t xsg_preload_v1(void) {
  cudaFuncAttributes a;
  return cudaFuncGetAttributes(&a, (const void*)gemm_kernel_v1);
}
