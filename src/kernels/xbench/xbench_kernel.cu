/* xbench_kernel.cu — the X-Stage microbenchmark kernels.
 *
 *   xbench_burst_kernel   K producer CTAs x 256 threads; per burst: [sync: grid barrier |
 *                         clock: %globaltimer wait for S_b = t0 + b*P] -> issue V/K bytes (one
 *                         of four store flavours) [-> flag] -> stamps -> gap (sync/free: FMA
 *                         loop or %globaltimer spin) -> gap-end stamp. Launched
 *                         cooperatively: all K CTAs are co-resident, so the barrier cannot
 *                         deadlock; it is also bounded.
 *   xbench_touch_kernel   one read per 4 KiB page of the target (warm-up, contents unchanged)
 *   xbench_fma_kernel     the gap's FMA loop alone, device-timed (iterations per ns)
 *   xbench_timer_kernel   smallest %globaltimer step
 *
 * Run: `xstage xbench --target host --K 16 --V 1MB --G 20us --bursts 32`; checked by
 * tests/gpu/test_xbench.cu (every byte, every flavour, host and HBM targets).
 */
#include "xstage/xstage.h"
#include "xstage/ptx.cuh"

#include "kernels/xbench/xbench_internal.h"

#include <cuda_runtime.h>

/* ---- compile-time configuration ---- */
#define XB_THREADS XS_XBENCH_THREADS
#define XB_TMA_CHUNK XS_XBENCH_TMA_CHUNK
#define XB_TMA_SMEM XB_TMA_CHUNK /* dynamic shared memory of a TMA launch */
/* Stamps of the first XB_SMEM_STAMPS bursts stay in shared memory during the run and are
 * written to global memory after the last burst: no memory operation of the timing itself
 * sits in the store queue between bursts (a store of the stamps would queue behind the
 * burst's outstanding remote stores and lengthen the gap). Later bursts store directly. */
#define XB_SMEM_STAMPS 256
static_assert(XB_TMA_SMEM <= 48 * 1024, "TMA source must fit the default dynamic smem limit");
static_assert(XB_TMA_CHUNK % (16 * XB_THREADS) == 0, "smem fill assumes whole rounds");

/* The FMA body of the gap: four independent chains per thread (real work the SM must run). */
#define XB_FMA_STEP(x0, x1, x2, x3)                                                                \
  do {                                                                                             \
    x0 = fmaf(x0, 0.9999999f, 1e-7f);                                                              \
    x1 = fmaf(x1, 0.9999998f, 2e-7f);                                                              \
    x2 = fmaf(x2, 0.9999997f, 3e-7f);                                                              \
    x3 = fmaf(x3, 0.9999996f, 4e-7f);                                                              \
  } while (0)

static __device__ __forceinline__ float xb_fma_loop(uint64_t iters, float seed) {
  float x0 = seed, x1 = seed + 1.f, x2 = seed + 2.f, x3 = seed + 3.f;
#pragma unroll 4
  for (uint64_t i = 0; i < iters; i++)
    XB_FMA_STEP(x0, x1, x2, x3);
  return x0 + x1 + x2 + x3;
}

/* The load gap: per iteration one 16-byte L2 load per thread (ld.global.cg: not L1), addresses
 * independent of the data so that several are in flight, folded into a word the caller keeps. */
static __device__ __forceinline__ uint32_t xb_load_loop(const uint4* buf, uint64_t n16,
                                                        uint64_t iters, uint64_t start) {
  uint32_t acc = 0;
  uint64_t j = start % n16;
#pragma unroll 4
  for (uint64_t i = 0; i < iters; i++) {
    uint4 v = __ldcg(buf + j);
    acc ^= v.x + v.w;
    j += 64 * XB_THREADS + 16; /* another line, another L2 slice */
    if (j >= n16) j -= n16;
  }
  return acc;
}

/* Grid barrier of the K producers, timing only: relaxed GPU-scope counter (no release/acquire:
 * a release fence would wait for this CTA's outstanding remote stores and measure the drain,
 * not the issue). Arrival n (0-based, counted over the launch) belongs to barrier n / K, which
 * completes when the counter reaches (n / K + 1) * K; the counter is never reset (no reuse
 * race). Bounded: on timeout the status word is set and every producer stops. Returns 1 to go
 * on, 0 to abort. Called by all threads of the CTA. */
static __device__ int xb_grid_barrier(const xsi_xb_params& p, int* s_go) {
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t n = xs_atom_add_relaxed_gpu_u32(p.barrier, 1u);
    uint32_t target = (n / (uint32_t)p.K + 1u) * (uint32_t)p.K;
    uint64_t t0 = xs_globaltimer();
    int go = 1;
    while ((int32_t)(xs_ld_relaxed_gpu_u32(p.barrier) - target) < 0) {
      if (xs_ld_relaxed_gpu_u32(p.status) != XSI_XB_OK) {
        go = 0;
        break;
      }
      if (xs_globaltimer() - t0 > p.timeout_ns) {
        atomicExch(p.status, XSI_XB_TIMEOUT);
        go = 0;
        break;
      }
    }
    *s_go = go;
  }
  __syncthreads();
  return *s_go;
}

/* One producer's burst with 16-byte stores; `flavour` is uniform, so the switch is hoisted. */
template <int FLAVOUR>
static __device__ __forceinline__ void xb_store_burst(unsigned char* dst, uint32_t n16,
                                                      uint32_t chunk0, uint32_t tag) {
  for (uint32_t j = threadIdx.x; j < n16; j += XB_THREADS) {
    uint32_t c = chunk0 + j;
    uint4 v = make_uint4(XSI_XB_WORD0(tag, c), XSI_XB_WORD1(tag, c), XSI_XB_WORD2(tag, c),
                         XSI_XB_WORD3(tag, c));
    if (FLAVOUR == XS_FLAVOUR_ST)
      xs_st_v4(dst + 16ull * j, v);
    else if (FLAVOUR == XS_FLAVOUR_ST_RELAXED)
      xs_st_relaxed_sys_v4(dst + 16ull * j, v);
    else
      xs_st_release_sys_v4(dst + 16ull * j, v);
  }
}

__global__ void __launch_bounds__(XB_THREADS, 1) xbench_burst_kernel(xsi_xb_params p) {
  extern __shared__ __align__(128) unsigned char xb_smem[];
  __shared__ int s_go;
  __shared__ unsigned long long s_t0;
  __shared__ xs_xbench_stamp s_stamps[XB_SMEM_STAMPS];
  const int pid = blockIdx.x;
  const int tid = threadIdx.x;

  /* Phase 0: the TMA source (32 KB) holds this producer's pattern, visible to the async proxy
   * (each writing thread fences, then the barrier orders the fences before the copies). */
  if (p.flavour == XS_FLAVOUR_TMA) {
    for (uint32_t j = tid; j < XB_TMA_CHUNK / 16; j += XB_THREADS) {
      uint32_t c = (uint32_t)pid * (XB_TMA_CHUNK / 16) + j;
      uint32_t t = XSI_XB_TMA_TAG;
      *(uint4*)(xb_smem + 16 * j) = make_uint4(XSI_XB_WORD0(t, c), XSI_XB_WORD1(t, c),
                                               XSI_XB_WORD2(t, c), XSI_XB_WORD3(t, c));
    }
    xs_fence_proxy_async_smem();
  }
  for (int b = tid; b < XB_SMEM_STAMPS; b += XB_THREADS)
    s_stamps[b] = xs_xbench_stamp{0, 0, 0, 0, 0, 0, 0};
  float acc = 0.f;
  const uint32_t n16 = p.per_prod / 16;

  /* Clock mode: the common t0 is the latest producer clock before the start barrier, written
   * before it (atomicMax, fenced: nothing is outstanding yet) and read after it, before any
   * timed store; S_0 = t0 + lead leaves every producer time to read it. */
  const int clock = p.sync_mode == XS_SYNC_CLOCK;
  if (clock && tid == 0) {
    atomicMax(p.t0_word, (unsigned long long)xs_globaltimer());
    __threadfence();
  }
  /* Start barrier in all modes: burst 0 starts from an idle stage with every producer
   * resident. Free and clock mode have no other barrier. */
  if (!xb_grid_barrier(p, &s_go)) return;
  if (clock) {
    if (tid == 0) s_t0 = atomicAdd(p.t0_word, 0ull) + p.lead_ns;
    __syncthreads();
  }

  for (int b = 0; b < p.bursts; b++) {
    /* Phase 1: burst start (sync mode: after the grid barrier; clock mode: at S_b, or at once
     * when this producer is still late from burst b-1; the wait reads only the clock). */
    if (b > 0 && p.sync_mode == XS_SYNC_GRID && !xb_grid_barrier(p, &s_go)) break; /* timeout */
    const uint64_t sched = clock ? s_t0 + (uint64_t)b * p.period_ns : 0;
    if (clock) {
      if (tid == 0)
        while (xs_globaltimer() < sched) {
        }
      __syncthreads();
    }
    uint64_t t_start = 0, c_start = 0, t_ret = 0;
    if (tid == 0) {
      t_start = xs_globaltimer();
      c_start = xs_clock64();
    }
    unsigned char* const base = p.targets[pid % p.ntargets]; /* peer:all: one ring per peer */
    unsigned char* dst = base + (uint64_t)(b % p.nslots) * p.slot_bytes + (uint64_t)pid * p.per_prod;

    /* Phase 2: issue. st flavours: all 256 threads store, the CTA barrier marks the point where
     * every store of the CTA has been issued. TMA: one thread hands the copies to the engine;
     * the issue ends when wait_group.read says the source may be reused. */
    switch (p.flavour) {
    case XS_FLAVOUR_ST:
      xb_store_burst<XS_FLAVOUR_ST>(dst, n16, (uint32_t)pid * n16, p.tag + b);
      break;
    case XS_FLAVOUR_ST_RELAXED:
      xb_store_burst<XS_FLAVOUR_ST_RELAXED>(dst, n16, (uint32_t)pid * n16, p.tag + b);
      break;
    case XS_FLAVOUR_ST_RELEASE:
      xb_store_burst<XS_FLAVOUR_ST_RELEASE>(dst, n16, (uint32_t)pid * n16, p.tag + b);
      break;
    default:
      if (tid == 0) {
        for (uint32_t off = 0; off < p.per_prod; off += XB_TMA_CHUNK) {
          uint32_t n = p.per_prod - off < XB_TMA_CHUNK ? p.per_prod - off : XB_TMA_CHUNK;
          xs_bulk_store(dst + off, xb_smem, n);
        }
        xs_bulk_commit();
        t_ret = xs_globaltimer();
        xs_bulk_wait_read_all();
      }
      break;
    }
    /* NOTE: bar.sync orders every thread's stores before thread 0's flag (cumulativity of the
     * release); for TMA the bulk writes must be complete (wait_group 0) before the flag. */
    __syncthreads();
    if (tid == 0) {
      if (p.flavour != XS_FLAVOUR_TMA) t_ret = xs_globaltimer();
      if (p.flag) {
        if (p.flavour == XS_FLAVOUR_TMA) xs_bulk_wait_all();
        xs_red_add_release_sys_u32((uint32_t*)(base + p.flag_off) + pid, 1u);
      }
      uint64_t t_end = xs_globaltimer();
      uint64_t c_end = xs_clock64();
      xs_xbench_stamp* s = b < XB_SMEM_STAMPS ? &s_stamps[b] : p.stamps + (uint64_t)b * p.K + pid;
      s->start_ns = t_start;
      s->ret_ns = t_ret;
      s->end_ns = t_end;
      s->start_cyc = c_start;
      s->end_cyc = c_end;
      s->sched_ns = sched;
    }
    __syncthreads(); /* the gap starts when the whole CTA's issue (and flag) has ended */

    /* Phase 3: the gap (not after the last burst; clock mode: the wait for S_{b+1}). */
    if (b + 1 == p.bursts) break;
    if (clock) continue;
    if (p.gap_mode == XS_GAP_FMA) {
      acc += xb_fma_loop(p.gap_iters, (float)tid * 1e-3f + acc * 1e-9f);
    } else if (p.gap_mode == XS_GAP_LOAD) {
      acc += (float)(xb_load_loop((const uint4*)p.lbuf, p.lbuf_n16, p.gap_iters,
                                  (uint64_t)(pid * 4099 + b) * XB_THREADS + tid) &
                     1u);
    } else if (tid == 0) {
      uint64_t t0 = xs_globaltimer();
      while (xs_globaltimer() - t0 < p.gap_ns) {
      }
    }
    __syncthreads(); /* the next burst starts with the whole CTA (free mode has no barrier) */
    /* the end of the compute gap (before the sync-mode barrier): gap_end - end is pure
     * compute, the G_b of the aggregate issue time (docs/calibration.md) */
    if (tid == 0) {
      xs_xbench_stamp* s = b < XB_SMEM_STAMPS ? &s_stamps[b] : p.stamps + (uint64_t)b * p.K + pid;
      s->gap_end_ns = xs_globaltimer();
    }
  }
  if (acc == 1234.5678f) p.sink[tid] = acc; /* never true in practice; keeps the loop */
  /* the stamps kept in shared memory (the bursts that ran; a timeout leaves the rest zero) */
  __syncthreads();
  const int ns = p.bursts < XB_SMEM_STAMPS ? p.bursts : XB_SMEM_STAMPS;
  for (int b = tid; b < ns; b += XB_THREADS)
    p.stamps[(uint64_t)b * p.K + pid] = s_stamps[b];
  if (p.flavour == XS_FLAVOUR_TMA && tid == 0) xs_bulk_wait_all();
}

extern "C" xs_result xsi_xb_launch(const xsi_xb_params* p, cudaStream_t stream, cudaEvent_t ev0,
                                   cudaEvent_t ev1) {
  xs_result res = XS_OK;
  int dev = 0, sms = 0, per_sm = 0;
  size_t smem = p->flavour == XS_FLAVOUR_TMA ? XB_TMA_SMEM : 0;
  XSI_CUDA_GOTO(cudaGetDevice(&dev), res, fail);
  XSI_CUDA_GOTO(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), res, fail);
  XSI_CUDA_GOTO(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, xbench_burst_kernel, XB_THREADS, smem),
      res, fail);
  if (p->K < 1 || p->K > per_sm * sms)
    XSI_FAIL(res, XS_ERR_UNSUPPORTED, fail,
             "xbench: %d producers cannot be co-resident (%d SMs x %d CTAs per SM)", p->K, sms,
             per_sm);
  {
    xsi_xb_params copy = *p;
    void* args[] = {&copy};
    XSI_CUDA_GOTO(cudaEventRecord(ev0, stream), res, fail);
    XSI_CUDA_GOTO(cudaLaunchCooperativeKernel((const void*)xbench_burst_kernel, dim3(p->K),
                                              dim3(XB_THREADS), args, smem, stream),
                  res, fail);
    XSI_CUDA_GOTO(cudaEventRecord(ev1, stream), res, fail);
  }
  return XS_OK;
fail:
  return res;
}

/* ---- warm-up: one read per 4 KiB page ---- */

__global__ void xbench_touch_kernel(const unsigned char* dst, uint64_t pages, float* sink) {
  uint32_t acc = 0;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < pages;
       i += (uint64_t)gridDim.x * blockDim.x)
    acc += *(const volatile uint32_t*)(dst + i * 4096);
  if (acc == 0x12345678u) sink[0] = (float)acc; /* keeps the loads */
}

extern "C" xs_result xsi_xb_touch(const unsigned char* dst, uint64_t bytes, float* sink,
                                  cudaStream_t stream) {
  xs_result res = XS_OK;
  uint64_t pages = (bytes + 4095) / 4096;
  if (pages == 0) return XS_OK;
  xbench_touch_kernel<<<264, 256, 0, stream>>>(dst, pages, sink);
  XSI_CUDA_GOTO(cudaGetLastError(), res, fail);
  return XS_OK;
fail:
  return res;
}

/* ---- FMA calibration: one CTA of 256 threads, timed on the device ---- */

__global__ void xbench_fma_kernel(uint64_t iters, float* sink, uint64_t* out) {
  __syncthreads();
  uint64_t t0 = xs_globaltimer();
  float a = xb_fma_loop(iters, (float)threadIdx.x * 1e-3f);
  __syncthreads();
  uint64_t t1 = xs_globaltimer();
  if (a == 1234.5678f) sink[threadIdx.x] = a;
  if (threadIdx.x == 0) out[0] = t1 - t0;
}

extern "C" xs_result xsi_xb_fma_time(double* ns, uint64_t iters, float* sink, uint64_t* dev_scratch,
                                     cudaStream_t stream) {
  xs_result res = XS_OK;
  uint64_t h = 0;
  xbench_fma_kernel<<<1, XB_THREADS, 0, stream>>>(iters, sink, dev_scratch);
  XSI_CUDA_GOTO(cudaGetLastError(), res, fail);
  XSI_CUDA_GOTO(cudaMemcpyAsync(&h, dev_scratch, sizeof h, cudaMemcpyDeviceToHost, stream), res,
                fail);
  XSI_CUDA_GOTO(cudaStreamSynchronize(stream), res, fail);
  *ns = (double)h;
  return XS_OK;
fail:
  return res;
}

/* ---- load-gap calibration: `ctas` CTAs, event-timed ---- */

__global__ void xbench_load_kernel(const uint4* buf, uint64_t n16, uint64_t iters, float* sink) {
  uint32_t a =
      xb_load_loop(buf, n16, iters, (uint64_t)blockIdx.x * 4099 * XB_THREADS + threadIdx.x);
  if (a == 0x9e3779b9u) sink[threadIdx.x] = (float)a; /* keeps the loads */
}

extern "C" xs_result xsi_xb_load_time(double* ns, uint64_t iters, int ctas, const void* buf,
                                      uint64_t n16, float* sink, cudaStream_t stream,
                                      cudaEvent_t ev0, cudaEvent_t ev1) {
  xs_result res = XS_OK;
  float ms = 0;
  XSI_CUDA_GOTO(cudaEventRecord(ev0, stream), res, fail);
  xbench_load_kernel<<<ctas, XB_THREADS, 0, stream>>>((const uint4*)buf, n16, iters, sink);
  XSI_CUDA_GOTO(cudaGetLastError(), res, fail);
  XSI_CUDA_GOTO(cudaEventRecord(ev1, stream), res, fail);
  XSI_CUDA_GOTO(cudaEventSynchronize(ev1), res, fail);
  XSI_CUDA_GOTO(cudaEventElapsedTime(&ms, ev0, ev1), res, fail);
  *ns = ms * 1e6;
  return XS_OK;
fail:
  return res;
}

/* ---- timer resolution ---- */

__global__ void xbench_timer_kernel(int reads, uint64_t* out) {
  uint64_t prev = xs_globaltimer(), best = ~0ull;
  for (int i = 0; i < reads; i++) {
    uint64_t t = xs_globaltimer();
    if (t != prev && t - prev < best) best = t - prev;
    prev = t;
  }
  out[0] = best;
}

extern "C" xs_result xsi_xb_timer_res(double* ns, int reads, uint64_t* dev_scratch,
                                      cudaStream_t stream) {
  xs_result res = XS_OK;
  uint64_t h = 0;
  xbench_timer_kernel<<<1, 1, 0, stream>>>(reads, dev_scratch);
  XSI_CUDA_GOTO(cudaGetLastError(), res, fail);
  XSI_CUDA_GOTO(cudaMemcpyAsync(&h, dev_scratch, sizeof h, cudaMemcpyDeviceToHost, stream), res,
                fail);
  XSI_CUDA_GOTO(cudaStreamSynchronize(stream), res, fail);
  *ns = h == ~0ull ? 0.0 : (double)h;
  return XS_OK;
fail:
  return res;
}
