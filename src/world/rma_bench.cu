/* rma_bench.cu — per-primitive RMA throughput and latency, rank 0 -> rank 1 of a W = 2 world:
 * tile stores (warp v4, CTA v4, TMA bulk; source = a 16 KiB shared-memory tile, as in a fused
 * epilogue) and the signal->wait round trip, in an emulated world on one GPU with the heaps in
 * HBM and in host-mapped memory, and (session 8, with two GPUs that reach each other) in a
 * local world: GPU 0 storing into GPU 1's HBM over NVLink. Every row checks its data (or its
 * flags) after the run.
 */
#include "world/world_internal.h"
#include "xstage/device.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_TILE 16384u /* bytes of the shared-memory source tile */

enum { MODE_WARP = 0, MODE_BLOCK = 1, MODE_BULK = 2 };

static __host__ __device__ uint32_t pattern(uint32_t byte_in_tile) {
  return 0x9e3779b9u * (byte_in_tile / 4u + 1u);
}

/* Each CTA stores bytes_per_cta (a multiple of BENCH_TILE) of rank 1's buffer from its tile. */
static __global__ void bench_tile_kernel(xs_team team, char* dst, size_t bytes_per_cta, int mode) {
  extern __shared__ __align__(128) unsigned char tile[];
  for (uint32_t i = threadIdx.x * 4u; i < BENCH_TILE; i += blockDim.x * 4u)
    *(uint32_t*)(tile + i) = pattern(i);
  __syncthreads();
  char* base = dst + (size_t)blockIdx.x * bytes_per_cta;
  size_t ntiles = bytes_per_cta / BENCH_TILE;
  if (mode == MODE_WARP) {
    size_t nwarps = blockDim.x / 32u, w = threadIdx.x / 32u;
    for (size_t t = w; t < ntiles; t += nwarps)
      xs_put_tile_warp(&team, 1, base + t * BENCH_TILE, tile, BENCH_TILE);
  } else if (mode == MODE_BLOCK) {
    for (size_t t = 0; t < ntiles; t++)
      xs_put_tile_block(&team, 1, base + t * BENCH_TILE, tile, BENCH_TILE);
  } else {
    for (size_t t = 0; t < ntiles; t++)
      xs_put_tile_bulk_block(&team, 1, base + t * BENCH_TILE, tile, BENCH_TILE);
    xs_put_tile_bulk_wait_block();
  }
}

/* Rank 0 and rank 1 (one CTA each) bounce a sequence number n times; rank 0 times it. */
static __global__ void bench_pingpong_kernel(xs_team team, uint64_t* flags, int n,
                                             unsigned long long* out_ns) {
  xs_team me = xs_team_for_block(&team, 1);
  if (threadIdx.x != 0) return;
  uint64_t t0 = xs_globaltimer();
  for (int i = 1; i <= n; i++) {
    if (me.rank == 0) {
      xs_signal_thread(&me, 1, flags + 1, (uint64_t)i, XS_SIGNAL_SET);
      if (!xs_wait_until_thread(&me, flags + 0, XS_CMP_GE, (uint64_t)i, 1)) break;
    } else {
      if (!xs_wait_until_thread(&me, flags + 1, XS_CMP_GE, (uint64_t)i, 2)) break;
      xs_signal_thread(&me, 0, flags + 0, (uint64_t)i, XS_SIGNAL_SET);
    }
  }
  if (me.rank == 0) *out_ns = xs_globaltimer() - t0;
}

static int cmp_float(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return x < y ? -1 : x > y;
}

static const char* g_mode_name[3] = {"tile_v4_warp", "tile_v4_block", "tile_bulk_tma"};

/* The two-rank world of a row: emulated on cfg->device with its heaps in `mem`, or (peer) the
 * local world of GPUs 0 and 1. */
static xs_result bench_world(xs_world** w, const xs_rma_bench_config* c, xs_mem_kind mem, int peer,
                             size_t heap_bytes) {
  xs_world_config wc = XS_WORLD_CONFIG_INITIALIZER;
  wc.ranks = 2;
  wc.device = c->device;
  wc.mem = peer ? XS_MEM_DEVICE : mem;
  wc.heap_bytes = heap_bytes;
  return peer ? xs_world_create_local(w, &wc) : xs_world_create_emulated(w, &wc);
}

static const char* dest_name(xs_mem_kind mem, int peer) {
  return peer ? "peer GPU (NVLink)" : mem == XS_MEM_DEVICE ? "HBM" : "host-mapped";
}

/* Tile-store rows for one memory kind. */
static xs_result bench_tiles(xs_rma_bench_result* out, const xs_rma_bench_config* c,
                             xs_mem_kind mem, int peer, size_t bytes) {
  xs_result res = XS_OK;
  xs_world* w = NULL;
  void* buf = NULL;
  char* dst1 = NULL;
  uint32_t* host = NULL;
  float* times = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  xs_team team;
  XSI_CHECK_GOTO(bench_world(&w, c, mem, peer, bytes + ((size_t)1 << 20)), res, fail);
  XSI_CUDA_GOTO(cudaSetDevice(w->target[0].device), res, fail); /* rank 0's GPU stores */
  XSI_CHECK_GOTO(xs_malloc(&buf, w, bytes, 0), res, fail);
  XSI_CHECK_GOTO(xs_world_team(&team, w, 0), res, fail);
  XSI_CHECK_GOTO(xs_world_ptr((void**)&dst1, w, buf, 1), res, fail);
  host = (uint32_t*)malloc(bytes);
  times = (float*)malloc(sizeof(float) * (size_t)c->iters);
  if (!host || !times) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "rma bench: out of host memory");
  XSI_CUDA_GOTO(cudaEventCreate(&e0), res, fail);
  XSI_CUDA_GOTO(cudaEventCreate(&e1), res, fail);
  for (int mode = 0; mode < 3; mode++) {
    xs_rma_bench_row* row = &out->rows[out->nrows++];
    cudaStream_t s = w->target[0].stream;
    XSI_CHECK_GOTO(xs_world_memset(w, buf, 0xEE, bytes), res, fail); /* poison */
    for (int it = -1; it < c->iters; it++) {                         /* it = -1: warm-up */
      XSI_CUDA_GOTO(cudaEventRecord(e0, s), res, fail);
      bench_tile_kernel<<<c->ctas, c->threads, BENCH_TILE, s>>>(team, (char*)buf,
                                                                bytes / (size_t)c->ctas, mode);
      XSI_CUDA_GOTO(cudaGetLastError(), res, fail);
      XSI_CUDA_GOTO(cudaEventRecord(e1, s), res, fail);
      XSI_CUDA_GOTO(cudaEventSynchronize(e1), res, fail);
      if (it >= 0) XSI_CUDA_GOTO(cudaEventElapsedTime(&times[it], e0, e1), res, fail);
    }
    qsort(times, (size_t)c->iters, sizeof *times, cmp_float);
    XSI_CUDA_GOTO(cudaMemcpy(host, dst1, bytes, cudaMemcpyDefault), res, fail);
    int wrong = 0;
    for (size_t i = 0; i < bytes / 4; i++)
      if (host[i] != pattern((uint32_t)((i * 4) % BENCH_TILE))) wrong++;
    snprintf(row->name, sizeof row->name, "%s -> %s", g_mode_name[mode], dest_name(mem, peer));
    row->mem = peer ? XS_MEM_DEVICE : mem;
    row->bytes = (double)bytes;
    row->ns = 1e6 * (double)times[c->iters / 2];
    row->gbps = row->bytes / row->ns;
    row->wrong = wrong;
  }
fail:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  free(host);
  free(times);
  if (buf) xs_free(w, buf);
  xs_world_destroy(w);
  return res;
}

/* Signal->wait round-trip row for one memory kind. */
static xs_result bench_pingpong(xs_rma_bench_result* out, const xs_rma_bench_config* c,
                                xs_mem_kind mem, int peer) {
  xs_result res = XS_OK;
  xs_world* w = NULL;
  void* flags = NULL;
  unsigned long long* d_ns = NULL;
  unsigned long long ns = 0;
  xs_launch_plan plan;
  xs_status_report st;
  XSI_CHECK_GOTO(bench_world(&w, c, mem, peer, (size_t)1 << 20), res, fail);
  XSI_CHECK_GOTO(xs_malloc(&flags, w, 2 * sizeof(uint64_t), 0), res, fail);
  XSI_CHECK_GOTO(xs_world_memset(w, flags, 0, 2 * sizeof(uint64_t)), res, fail);
  XSI_CHECK_GOTO(xs_world_launch_plan(&plan, w, (const void*)bench_pingpong_kernel, 32, 0, 1), res,
                 fail);
  /* rank 0 (the first launch) writes the time: the counter lives on its GPU */
  XSI_CUDA_GOTO(cudaSetDevice(plan.launch[0].device), res, fail);
  XSI_CUDA_GOTO(cudaMalloc((void**)&d_ns, sizeof *d_ns), res, fail);
  for (int i = 0; i < plan.count; i++) { /* emulated: one launch; local: one per GPU */
    XSI_CUDA_GOTO(cudaSetDevice(plan.launch[i].device), res, fail);
    bench_pingpong_kernel<<<plan.launch[i].grid, 32, 0, (cudaStream_t)plan.launch[i].stream>>>(
        plan.launch[i].team, (uint64_t*)flags, c->pingpongs, d_ns);
    XSI_CUDA_GOTO(cudaGetLastError(), res, fail);
  }
  XSI_CHECK_GOTO(xs_world_sync(w), res, fail);
  XSI_CUDA_GOTO(cudaSetDevice(plan.launch[0].device), res, fail);
  XSI_CUDA_GOTO(cudaMemcpy(&ns, d_ns, sizeof ns, cudaMemcpyDeviceToHost), res, fail);
  XSI_CHECK_GOTO(xs_world_status(&st, w, 1), res, fail);
  {
    xs_rma_bench_row* row = &out->rows[out->nrows++];
    snprintf(row->name, sizeof row->name, "signal->wait round trip, %s", dest_name(mem, peer));
    row->mem = peer ? XS_MEM_DEVICE : mem;
    row->bytes = 0;
    row->ns = (double)ns / (double)c->pingpongs;
    row->gbps = 0;
    row->wrong = st.code != XS_OK;
  }
fail:
  if (d_ns) {
    if (w) cudaSetDevice(w->target[0].device);
    cudaFree(d_ns);
  }
  if (flags) xs_free(w, flags);
  xs_world_destroy(w);
  return res;
}

xs_result xs_rma_bench(xs_rma_bench_result* out, const xs_rma_bench_config* cfg) {
  XSI_ARG(out != NULL, "out is NULL");
  memset(out, 0, sizeof *out);
  xs_rma_bench_config c = XS_RMA_BENCH_CONFIG_INITIALIZER;
  if (cfg) {
    XSI_ARG(cfg->size == sizeof *cfg, "config.size is %zu, expected %zu", cfg->size, sizeof *cfg);
    c = *cfg;
  }
  XSI_ARG(c.ctas >= 1 && c.ctas <= 1024, "ctas must be in 1..1024 (got %d)", c.ctas);
  XSI_ARG(c.threads >= 32 && c.threads <= 1024 && c.threads % 32 == 0,
          "threads must be a multiple of 32 in 32..1024 (got %d)", c.threads);
  XSI_ARG(c.iters >= 1 && c.iters <= 10000, "iters must be in 1..10000 (got %d)", c.iters);
  XSI_ARG(c.pingpongs >= 1 && c.pingpongs <= 10000000, "pingpongs must be in 1..1e7 (got %d)",
          c.pingpongs);
  size_t unit = (size_t)c.ctas * BENCH_TILE;
  XSI_ARG(c.bytes >= unit, "bytes (%zu) must be >= ctas x 16 KiB (%zu)", c.bytes, unit);
  size_t bytes = c.bytes / unit * unit;
  XSI_CHECK(bench_tiles(out, &c, XS_MEM_DEVICE, 0, bytes));
  XSI_CHECK(bench_tiles(out, &c, XS_MEM_HOST_MAPPED, 0, bytes));
  XSI_CHECK(bench_pingpong(out, &c, XS_MEM_DEVICE, 0));
  XSI_CHECK(bench_pingpong(out, &c, XS_MEM_HOST_MAPPED, 0));
  /* NVLink rows: GPUs 0 and 1 when both exist and reach each other (else not run: out->peer
   * stays 0) */
  int n = 0, a = 0, b = 0;
  if (c.peer && cudaGetDeviceCount(&n) == cudaSuccess && n >= 2 &&
      cudaDeviceCanAccessPeer(&a, 0, 1) == cudaSuccess && cudaDeviceCanAccessPeer(&b, 1, 0) ==
      cudaSuccess && a && b) {
    XSI_CHECK(bench_tiles(out, &c, XS_MEM_DEVICE, 1, bytes));
    XSI_CHECK(bench_pingpong(out, &c, XS_MEM_DEVICE, 1));
    out->peer = 1;
  }
  cudaGetLastError();
  cudaSetDevice(c.device);
  return XS_OK;
}
