/* attention_v1.cu — version 1: simple and correct, the checker's second opinion.
 *
 * One CTA of 512 threads per output tile (XS_ATTN_TILE_M = 128 query rows of one batch and
 * head); 4 threads per query row, each owning the head-dim columns c = 4 i + part (so the 4
 * threads of a row read 4 neighbouring banks). K and V stream through shared memory as fp32
 * in steps of 32 keys; scores are fp32 dot products reduced over the 4 threads with shuffles;
 * online softmax with expf; O accumulated in fp32 registers. No tensor cores.
 * The epilogue is the same hook as version 2: destination map, per-tile flag, tile order.
 *
 * Run: xstage bench attention --B 1 --H 2 --S 4096 --d 128 --version 1
 */
#include "kernels/attention/attention_internal.h"
#include "xstage/ptx.cuh"

#include <cuda_bf16.h>

#define V1_THREADS 512
#define V1_KT 32 /* keys per shared-memory step */

static __device__ __forceinline__ float v1_bf16(uint16_t x) {
  return __uint_as_float((uint32_t)x << 16);
}

template <int D>
__global__ void __launch_bounds__(V1_THREADS)
    attention_kernel_v1(const __grid_constant__ attn_params p) {
  constexpr int DP = D / 4; /* columns per thread */
  __shared__ float ks[V1_KT][D], vs[V1_KT][D];
  int tile = p.order ? p.order[blockIdx.x] : (int)blockIdx.x;
  int bh = tile / p.n_qtiles, qt = tile - bh * p.n_qtiles;
  int b = bh / p.H, h = bh - b * p.H;
  int rl = threadIdx.x >> 2, part = threadIdx.x & 3;
  int row = qt * XS_ATTN_TILE_M + rl;
  bool live = row < p.S;

  float q[DP], o[DP];
  const uint16_t* qrow = p.q + (((int64_t)b * p.S + (live ? row : 0)) * p.H + h) * D;
#pragma unroll
  for (int i = 0; i < DP; i++) {
    q[i] = live ? v1_bf16(qrow[4 * i + part]) : 0.0f;
    o[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  int kv_end = p.causal ? min(p.Skv, qt * XS_ATTN_TILE_M + XS_ATTN_TILE_M) : p.Skv;
  for (int n0 = 0; n0 < kv_end; n0 += V1_KT) {
    __syncthreads(); /* the previous step's reads of ks/vs are done */
    for (int e = threadIdx.x; e < V1_KT * D / 8; e += V1_THREADS) {
      int key = e / (D / 8), c8 = (e - key * (D / 8)) * 8;
      int n = n0 + key;
      uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
      if (n < p.Skv) {
        int64_t off = (((int64_t)b * p.Skv + n) * p.H + h) * D + c8;
        kv = *(const uint4*)(p.k + off);
        vv = *(const uint4*)(p.v + off);
      }
      const uint16_t* kh = (const uint16_t*)&kv;
      const uint16_t* vh = (const uint16_t*)&vv;
#pragma unroll
      for (int i = 0; i < 8; i++) {
        ks[key][c8 + i] = v1_bf16(kh[i]);
        vs[key][c8 + i] = v1_bf16(vh[i]);
      }
    }
    __syncthreads();
    float s[V1_KT];
    float mx = m;
#pragma unroll
    for (int j = 0; j < V1_KT; j++) {
      float acc = 0.0f;
#pragma unroll
      for (int i = 0; i < DP; i++)
        acc = fmaf(q[i], ks[j][4 * i + part], acc);
      acc += __shfl_xor_sync(0xffffffffu, acc, 1);
      acc += __shfl_xor_sync(0xffffffffu, acc, 2);
      int n = n0 + j;
      s[j] = (n < p.Skv && !(p.causal && n > row)) ? acc * p.scale : -INFINITY;
      mx = fmaxf(mx, s[j]);
    }
    /* NOTE: all keys of the step masked and none seen before: nothing to add yet. */
    if (mx == -INFINITY) continue;
    float alpha = expf(m - mx); /* m = -inf on the first step: alpha = 0, O and l are 0 */
    l *= alpha;
#pragma unroll
    for (int i = 0; i < DP; i++)
      o[i] *= alpha;
#pragma unroll
    for (int j = 0; j < V1_KT; j++) {
      float pj = expf(s[j] - mx);
      l += pj;
#pragma unroll
      for (int i = 0; i < DP; i++)
        o[i] = fmaf(pj, vs[j][4 * i + part], o[i]);
    }
    m = mx;
  }

  /* Epilogue: row r of the tile goes to the destination map (plain: O itself). */
  if (live) {
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    int r = p.map ? row / p.tokens_per_dst : 0;
    int sr = row - r * p.tokens_per_dst;
    __nv_bfloat16* dst = (__nv_bfloat16*)(p.dst[r] + b * p.stride_b + (int64_t)sr * p.stride_s +
                                          (int64_t)(h + p.head_offset) * p.stride_h);
#pragma unroll
    for (int i = 0; i < DP; i++)
      dst[4 * i + part] = __float2bfloat16_rn(o[i] * inv);
    if (p.lse && part == 0) p.lse[((int64_t)b * p.H + h) * p.S + row] = m + logf(l);
  }
  if (p.flags) {
    __syncthreads(); /* every thread's stores of the tile happen before the flag */
    if (threadIdx.x == 0) {
      xs_fence_acq_rel_sys();
      xs_st_release_sys_u32(p.flags + tile, p.flag_value);
    }
  }
}

xs_result xsi_attention_v1(const attn_params* p, cudaStream_t stream) {
  if (p->D == 128)
    attention_kernel_v1<128><<<p->num_tiles, V1_THREADS, 0, stream>>>(*p);
  else
    attention_kernel_v1<64><<<p->num_tiles, V1_THREADS, 0, stream>>>(*p);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return xsi_set_error(XS_ERR_CUDA, "attention v1 launch (d=%d, %d tiles): %s", p->D,
                         p->num_tiles, cudaGetErrorString(e));
  return XS_OK;
}
