/* hopper_common.cuh — device helpers shared by the Hopper GEMM kernels (gemm_v2.cu: v2-v6,
 * gemm_v7.cu: v7). CUDA only; internal to src/kernels/gemm.
 */
#ifndef XSTAGE_KERNELS_GEMM_HOPPER_COMMON_CUH
#define XSTAGE_KERNELS_GEMM_HOPPER_COMMON_CUH

#include <cuda_bf16.h>

#include "kernels/gemm/gemm_internal.h"
#include "xstage/ptx.cuh"

/* The producer's wait is bounded: a wait that never ends is a bug (a lost arrival, a wrong
 * parity, an expect_tx byte count TMA never delivers: the consumers then stop releasing slots
 * and the producer stalls too). After 4 s it traps, so the launch fails with an error
 * (cudaErrorLaunchFailure) instead of hanging. NOTE: the consumers wait unbounded: one more
 * live register (a counter) makes the 128x256 consumer spill; no printf either (a call would
 * make ptxas save live registers around it). */
static __device__ __forceinline__ void xsg_wait_timed(uint64_t* bar, uint32_t parity) {
  if (xs_mbar_try_wait(bar, parity)) return;
  const uint64_t t0 = xs_globaltimer();
  for (uint32_t n = 1;; n++) {
    if (xs_mbar_try_wait(bar, parity)) return;
    if ((n & 1023) == 0 && xs_globaltimer() - t0 > 4000000000ull) __trap();
  }
}

static __device__ __forceinline__ uint32_t xsg_pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

static __device__ __forceinline__ float xsg_silu_mul(float g, float u) {
  return g / (1.0f + __expf(-g)) * u;
}

/* The MASKED compacted schedule's prefix (sched.h) in shared memory: table[e] = work tiles of
 * experts < e. Called by all threads before the CTA's first __syncthreads; warp 0 scans. */
static __device__ __forceinline__ void xsg_build_masked_table(int32_t* table, const xsg_params* p) {
  const int E = p->experts;
  for (int e = threadIdx.x; e < E; e += blockDim.x)
    table[e + 1] = xsg_masked_work(p->m_counts[e], p->M, p->tile_m, p->grid.n_blocks);
  __syncthreads();
  if (threadIdx.x < 32) {
    /* Each lane sums a run of ceil(E / 32) entries, a warp scan adds the runs before it. */
    const int lane = threadIdx.x, per = (E + 31) / 32;
    const int lo = lane * per, hi = lo + per < E ? lo + per : E;
    int sum = 0;
    for (int e = lo; e < hi; e++)
      sum += table[e + 1];
    int incl = sum;
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    int run = incl - sum;
    for (int e = lo; e < hi; e++) {
      run += table[e + 1];
      table[e + 1] = run;
    }
    if (lane == 0) table[0] = 0;
  }
}

#endif
