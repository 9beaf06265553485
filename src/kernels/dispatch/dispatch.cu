/* dispatch.cu — TEMPO's in-graph dispatch: router top-k ids in; per-expert counts and a
 * per-(token, k) replica and GPU out, from the solver's quotas, by stable per-expert ordinals.
 *
 * Versions: dispatch_v1 (this file) — two kernels, CUDA-graph capturable (no host sync, no
 * allocation; the caller passes a workspace). Reference: xs_balance_assign (src/balance/
 * instance.c), which the GPU test compares against bit for bit.
 *
 *   dispatch_count_kernel_v1: one CTA per 1024 slots (8 warps x 128 consecutive slots). Each
 *     warp walks its slots 32 at a time; __match_any_sync groups lanes with the same expert, a
 *     lane's rank in its group plus the warp's running count is its ordinal inside the warp.
 *     A per-expert scan over the 8 warps turns that into the ordinal inside the CTA; the CTA's
 *     per-expert totals go to the workspace.
 *   dispatch_assign_kernel_v1: one CTA of 1024 threads per count CTA (one slot per thread) sums
 *     the totals of the count CTAs before it (its ordinal base) and of all of them (the expert's
 *     count), then maps ordinal o of expert e to a replica:
 *     p = (Q == n) ? o : o*Q/n (Q = sum of e's quotas, n = its count), clamped below Q, and the
 *     replica is the first whose running quota exceeds p (o mod r when Q == 0).
 * Run: tests/gpu/test_dispatch (checks against the CPU reference, then times graph replays).
 */
#include "core/internal.h"

#include <cuda_runtime.h>

#define XS_DISPATCH_WARPS 8
#define XS_DISPATCH_SLOTS 1024 /* slots per CTA = XS_DISPATCH_WARPS * 128 */
#define XS_DISPATCH_MAX_EXPERTS 1024

static_assert(XS_DISPATCH_WARPS * 128 == XS_DISPATCH_SLOTS, "each warp owns 128 slots");
static_assert(XS_DISPATCH_WARPS * XS_DISPATCH_MAX_EXPERTS * 4 <= 48 * 1024,
              "per-warp counters must fit static shared memory");

__global__ void __launch_bounds__(XS_DISPATCH_WARPS * 32)
    dispatch_count_kernel_v1(const int32_t* __restrict__ topk, int n_slots, int n_experts,
                             int32_t* __restrict__ blk_cnt, int32_t* __restrict__ local) {
  __shared__ int32_t wcnt[XS_DISPATCH_WARPS][XS_DISPATCH_MAX_EXPERTS];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = threadIdx.x; i < XS_DISPATCH_WARPS * n_experts; i += blockDim.x)
    wcnt[i / n_experts][i % n_experts] = 0;
  __syncthreads(); /* counters zeroed before any warp counts */

  const int first = blockIdx.x * XS_DISPATCH_SLOTS + warp * 128;
  int my_e[4], my_o[4];
  for (int it = 0; it < 4; it++) {
    int slot = first + it * 32 + lane;
    int active = slot < n_slots;
    int e = active ? topk[slot] : -1;
    /* NOTE: out-of-range ids are clamped to expert 0 (the host reference rejects them). */
    if (active && (e < 0 || e >= n_experts)) e = 0;
    unsigned peers = __match_any_sync(0xffffffffu, active ? e : -1 - lane);
    int rank = __popc(peers & ((1u << lane) - 1));
    int o = 0;
    if (active) o = wcnt[warp][e] + rank;
    __syncwarp(); /* every lane read the running count before the leader bumps it */
    if (active && rank == 0) wcnt[warp][e] += __popc(peers);
    __syncwarp(); /* the bump is visible to the next iteration */
    my_e[it] = e;
    my_o[it] = o;
  }
  __syncthreads(); /* all warps' counts final */

  /* exclusive scan over warps per expert; CTA totals to global */
  for (int e = threadIdx.x; e < n_experts; e += blockDim.x) {
    int acc = 0;
    for (int w = 0; w < XS_DISPATCH_WARPS; w++) {
      int c = wcnt[w][e];
      wcnt[w][e] = acc;
      acc += c;
    }
    blk_cnt[(size_t)blockIdx.x * n_experts + e] = acc;
  }
  __syncthreads(); /* warp bases ready */
  for (int it = 0; it < 4; it++) {
    int slot = first + it * 32 + lane;
    if (slot < n_slots) local[slot] = wcnt[warp][my_e[it]] + my_o[it];
  }
}

__global__ void __launch_bounds__(XS_DISPATCH_SLOTS)
    dispatch_assign_kernel_v1(const int32_t* __restrict__ topk, int n_slots, int n_experts,
                              int n_blocks, const int32_t* __restrict__ blk_cnt,
                              const int32_t* __restrict__ local,
                              const int32_t* __restrict__ rep_off,
                              const int32_t* __restrict__ rep_gpu,
                              const int32_t* __restrict__ quotas, int32_t* __restrict__ counts,
                              int32_t* __restrict__ replica, int32_t* __restrict__ gpu) {
  __shared__ int32_t base[XS_DISPATCH_MAX_EXPERTS], total[XS_DISPATCH_MAX_EXPERTS];
  const int b = blockIdx.x; /* one CTA per count CTA: the same 1024 slots */
  for (int e = threadIdx.x; e < n_experts; e += blockDim.x) {
    int before = 0, all = 0;
#pragma unroll 8
    for (int k = 0; k < n_blocks; k++) { /* NOTE: unrolled so several L2 loads are in flight */
      int c = blk_cnt[(size_t)k * n_experts + e];
      before += k < b ? c : 0;
      all += c;
    }
    base[e] = before;
    total[e] = all;
    if (blockIdx.x == 0) counts[e] = all;
  }
  __syncthreads(); /* bases and totals ready */
  int slot = blockIdx.x * XS_DISPATCH_SLOTS + threadIdx.x;
  if (slot >= n_slots) return;
  int e = topk[slot];
  if (e < 0 || e >= n_experts) e = 0;
  long long o = (long long)base[e] + local[slot], n = total[e];
  int r0 = rep_off[e], nr = rep_off[e + 1] - r0;
  long long Q = 0;
  for (int r = r0; r < r0 + nr; r++)
    Q += quotas[r];
  int rep = r0 + (int)(o % nr);
  if (Q > 0) {
    long long p = (Q == n || n <= 0) ? o : o * Q / n, acc = 0;
    if (p >= Q) p = Q - 1;
    for (int r = r0; r < r0 + nr; r++) {
      acc += quotas[r];
      if (p < acc) {
        rep = r;
        break;
      }
    }
  }
  replica[slot] = rep;
  if (gpu) gpu[slot] = rep_gpu[rep];
}

extern "C" xs_result xs_dispatch_workspace_size(size_t* bytes, int n_tokens, int top_k,
                                                int n_experts) {
  XSI_ARG(bytes != NULL, "bytes is NULL");
  XSI_ARG(n_tokens >= 1 && top_k >= 1 && n_experts >= 1 && n_experts <= XS_DISPATCH_MAX_EXPERTS,
          "dispatch: need n_tokens, top_k >= 1 and 1 <= n_experts <= 1024");
  size_t slots = (size_t)n_tokens * (size_t)top_k;
  size_t blocks = (slots + XS_DISPATCH_SLOTS - 1) / XS_DISPATCH_SLOTS;
  *bytes = blocks * (size_t)n_experts * sizeof(int32_t) + slots * sizeof(int32_t);
  return XS_OK;
}

extern "C" xs_result xs_dispatch_launch(const xs_dispatch_args* a, void* stream) {
  XSI_ARG(a != NULL, "args is NULL");
  XSI_ARG(a->topk && a->rep_off && a->rep_gpu && a->quotas && a->counts && a->replica &&
              a->workspace,
          "dispatch: topk, rep_off, rep_gpu, quotas, counts, replica and workspace are required");
  XSI_ARG(a->n_replicas >= a->n_experts, "dispatch: n_replicas must be >= n_experts");
  XSI_ARG((long long)a->n_tokens * a->top_k <= (1ll << 30), "dispatch: too many slots");
  size_t ws;
  XSI_CHECK(xs_dispatch_workspace_size(&ws, a->n_tokens, a->top_k, a->n_experts));
  int n_slots = a->n_tokens * a->top_k;
  int n_blocks = (n_slots + XS_DISPATCH_SLOTS - 1) / XS_DISPATCH_SLOTS;
  int32_t* blk_cnt = (int32_t*)a->workspace;
  int32_t* local = blk_cnt + (size_t)n_blocks * a->n_experts;
  cudaStream_t st = (cudaStream_t)stream;
  dispatch_count_kernel_v1<<<n_blocks, XS_DISPATCH_WARPS * 32, 0, st>>>(
      a->topk, n_slots, a->n_experts, blk_cnt, local);
  dispatch_assign_kernel_v1<<<n_blocks, XS_DISPATCH_SLOTS, 0, st>>>(
      a->topk, n_slots, a->n_experts, n_blocks, blk_cnt, local, a->rep_off, a->rep_gpu, a->quotas,
      a->counts, a->replica, a->gpu);
  cudaError_t err = cudaGetLastError();
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
    return xsi_set_error(XS_ERR_NO_DEVICE, "dispatch: no usable GPU: %s", cudaGetErrorString(err));
  if (err != cudaSuccess)
    return xsi_set_error(XS_ERR_CUDA, "dispatch: launch failed: %s", cudaGetErrorString(err));
  return XS_OK;
}
