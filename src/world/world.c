/* world.c — worlds: the emulated and local backends, and what all backends share (heap,
 * teams, launch plans, status, signal pads, trace buffers). The nccl backend is in nccl.cu. */
#include "world/world_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t round_up(size_t x, size_t a) {
  return (x + a - 1) / a * a;
}

static xs_result check_config(xs_world_config* c, const xs_world_config* cfg) {
  xs_world_config d = XS_WORLD_CONFIG_INITIALIZER;
  if (cfg) {
    XSI_ARG(cfg->size == sizeof *cfg,
            "config.size is %zu, this library expects %zu (start from "
            "XS_WORLD_CONFIG_INITIALIZER)",
            cfg->size, sizeof *cfg);
    d = *cfg;
  }
  XSI_ARG(d.heap_bytes > 0 && d.heap_bytes <= ((size_t)1 << 40),
          "config.heap_bytes must be in (0, 1 TiB] (got %zu)", d.heap_bytes);
  XSI_ARG(d.timeout_ns > 0, "config.timeout_ns must be > 0");
  XSI_ARG(d.mem == XS_MEM_DEVICE || d.mem == XS_MEM_HOST_MAPPED,
          "config.mem must be XS_MEM_DEVICE or XS_MEM_HOST_MAPPED (got %d)", (int)d.mem);
  XSI_ARG(d.trace_events <= ((size_t)1 << 28), "config.trace_events must be <= 2^28 (got %zu)",
          d.trace_events);
  d.heap_bytes = round_up(d.heap_bytes, XS_HEAP_MAX_ALIGN);
  *c = d;
  return XS_OK;
}

static xs_result world_new(xs_world** out, const xs_world_config* c, xs_backend backend) {
  xs_world* w = (xs_world*)calloc(1, sizeof *w);
  if (!w) return xsi_set_error(XS_ERR_NO_MEMORY, "world: out of host memory");
  w->backend = backend;
  w->mem = c->mem;
  w->heap_bytes = c->heap_bytes;
  w->timeout_ns = c->timeout_ns;
  w->trace_cap = c->trace_events;
  xs_result res = xsi_heap_init(&w->heap, c->heap_bytes);
  if (res != XS_OK) {
    free(w);
    return res;
  }
  *out = w;
  return XS_OK;
}

static xs_result device_count(int* n) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count < 1) {
    cudaGetLastError();
    return xsi_set_error(XS_ERR_NO_DEVICE, "no CUDA device (%s)",
                         e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
  }
  *n = count;
  return XS_OK;
}

xs_result xsi_target_init(xs_world* w, xsi_target* t, int device, int rank_first, int nranks) {
  xs_result res = XS_OK;
  t->device = device;
  t->rank_first = rank_first;
  t->nranks = nranks;
  /* NOTE: a blocking stream: the caller's cudaMemcpy/cudaMemset on the legacy default stream
   * (filling inputs) are ordered before the kernels launched on it, and after them. */
  XSI_CUDA_GOTO(cudaStreamCreateWithFlags(&t->stream, cudaStreamDefault), res, fail);
  XSI_CUDA_GOTO(cudaMalloc((void**)&t->status, sizeof(xs_status)), res, fail);
  XSI_CUDA_GOTO(cudaMemset(t->status, 0, sizeof(xs_status)), res, fail);
  if (w->trace_cap) {
    xs_trace_ring r;
    XSI_CUDA_GOTO(cudaMalloc((void**)&t->events, w->trace_cap * sizeof(xs_trace_event)), res, fail);
    XSI_CUDA_GOTO(cudaMalloc((void**)&t->ring, sizeof(xs_trace_ring)), res, fail);
    r.head = 0;
    r.capacity = w->trace_cap;
    r.events = t->events;
    XSI_CUDA_GOTO(cudaMemcpy(t->ring, &r, sizeof r, cudaMemcpyHostToDevice), res, fail);
  }
  XSI_CUDA_GOTO(cudaDeviceSynchronize(), res, fail); /* the memsets are done before any launch */
  return XS_OK;
fail:
  return res; /* partial resources are released by xs_world_destroy */
}

/* Set `bytes` at `dev` (an address in rank r's heap or pad) to `value`, ordered after the work
 * on `stream` (NULL: the legacy stream). Host-mapped heaps are written by the host (after a
 * stream sync), device heaps with cudaMemsetAsync + sync. */
static xs_result rank_memset(xs_world* w, int r, char* dev, int value, size_t bytes,
                             cudaStream_t stream) {
  xs_result res = XS_OK;
  if (w->mem == XS_MEM_HOST_MAPPED) {
    XSI_CUDA_GOTO(stream ? cudaStreamSynchronize(stream) : cudaDeviceSynchronize(), res, fail);
    memset(dev + w->host_delta[r], value, bytes);
  } else {
    XSI_CUDA_GOTO(cudaMemsetAsync(dev, value, bytes, stream), res, fail);
    XSI_CUDA_GOTO(stream ? cudaStreamSynchronize(stream) : cudaDeviceSynchronize(), res, fail);
  }
fail:
  return res;
}

/* Allocate rank r's heap + pad (bytes) on the current device or in mapped host memory and
 * place heap_base[r] at a multiple of XS_HEAP_MAX_ALIGN; zero the pad. */
static xs_result alloc_rank(xs_world* w, int slot, int rank_first, int nranks) {
  xs_result res = XS_OK;
  size_t stride = w->heap_bytes + XSI_PAD_BYTES;
  size_t total = stride * (size_t)nranks + XS_HEAP_MAX_ALIGN;
  char* dev = NULL;
  if (w->mem == XS_MEM_DEVICE) {
    XSI_CUDA_GOTO(cudaMalloc(&w->alloc[slot], total), res, fail);
    dev = (char*)w->alloc[slot];
  } else {
    XSI_CUDA_GOTO(
        cudaHostAlloc(&w->alloc[slot], total, cudaHostAllocMapped | cudaHostAllocPortable), res,
        fail);
    w->alloc_host[slot] = 1;
    XSI_CUDA_GOTO(cudaHostGetDevicePointer((void**)&dev, w->alloc[slot], 0), res, fail);
  }
  char* base = (char*)round_up((size_t)(uintptr_t)dev, XS_HEAP_MAX_ALIGN);
  for (int i = 0; i < nranks; i++) {
    int r = rank_first + i;
    w->heap_base[r] = base + (size_t)i * stride;
    w->pad[r] = (uint64_t*)(w->heap_base[r] + w->heap_bytes);
    w->host_delta[r] = w->alloc_host[slot] ? (char*)w->alloc[slot] - dev : 0;
  }
  for (int i = 0; i < nranks; i++)
    XSI_CHECK_GOTO(
        rank_memset(w, rank_first + i, (char*)w->pad[rank_first + i], 0, XSI_PAD_BYTES, NULL), res,
        fail);
  return XS_OK;
fail:
  return res;
}

xs_result xs_world_create_emulated(xs_world** out, const xs_world_config* cfg) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  xs_world_config c = XS_WORLD_CONFIG_INITIALIZER;
  XSI_CHECK(check_config(&c, cfg));
  XSI_ARG(c.ranks >= 1 && c.ranks <= XS_MAX_RANKS, "config.ranks must be in 1..%d (got %d)",
          XS_MAX_RANKS, c.ranks);
  int ndev = 0, prev = 0;
  XSI_CHECK(device_count(&ndev));
  XSI_ARG(c.device >= 0 && c.device < ndev, "config.device %d is not in 0..%d", c.device, ndev - 1);
  xs_world* w = NULL;
  XSI_CHECK(world_new(&w, &c, XS_BACKEND_EMULATED));
  xs_result res = XS_OK;
  w->size = c.ranks;
  w->nlocal = c.ranks;
  cudaGetDevice(&prev);
  XSI_CUDA_GOTO(cudaSetDevice(c.device), res, fail);
  XSI_CHECK_GOTO(alloc_rank(w, 0, 0, c.ranks), res, fail);
  w->ntargets = 1;
  XSI_CHECK_GOTO(xsi_target_init(w, &w->target[0], c.device, 0, c.ranks), res, fail);
  XSI_CUDA_GOTO(cudaDeviceSynchronize(), res, fail);
  cudaSetDevice(prev);
  *out = w;
  xsi_clear_error();
  return XS_OK;
fail:
  xsi_error_prefix("emulated world (W=%d)", c.ranks);
  xs_world_destroy(w);
  cudaSetDevice(prev);
  return res;
}

/* Peer access this process has enabled (or found enabled) from GPU i to GPU j. */
static unsigned char g_peer_on[XS_MAX_RANKS][XS_MAX_RANKS];

xs_result xs_world_create_local(xs_world** out, const xs_world_config* cfg) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  xs_world_config c = XS_WORLD_CONFIG_INITIALIZER;
  XSI_CHECK(check_config(&c, cfg));
  int ndev = 0, prev = 0;
  XSI_CHECK(device_count(&ndev));
  int n = c.ranks == 0 ? (ndev < XS_MAX_RANKS ? ndev : XS_MAX_RANKS) : c.ranks;
  XSI_ARG(n >= 1 && n <= XS_MAX_RANKS && n <= ndev,
          "config.ranks %d: this machine has %d GPUs (local world: 1..min(8, GPUs))", c.ranks,
          ndev);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      int can = 0;
      if (i == j) continue;
      if (cudaDeviceCanAccessPeer(&can, i, j) != cudaSuccess || !can) {
        cudaGetLastError();
        return xsi_set_error(XS_ERR_UNSUPPORTED, "local world: GPU %d cannot access GPU %d", i, j);
      }
    }
  xs_world* w = NULL;
  XSI_CHECK(world_new(&w, &c, XS_BACKEND_LOCAL));
  xs_result res = XS_OK;
  w->size = n;
  w->nlocal = n;
  w->ntargets = n;
  cudaGetDevice(&prev);
  for (int i = 0; i < n; i++) {
    XSI_CUDA_GOTO(cudaSetDevice(i), res, fail);
    for (int j = 0; j < n; j++) {
      if (j == i || g_peer_on[i][j]) continue;
      /* NOTE: peer access stays enabled for the process (another part of it may rely on it
       * by now), so a later local world skips the pairs this one enabled instead of asking
       * again: the repeated call fails with cudaErrorPeerAccessAlreadyEnabled, harmless but
       * reported as an API error by compute-sanitizer (session 8, two worlds in one process). */
      cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();
      else
        XSI_CUDA_GOTO(e, res, fail);
      g_peer_on[i][j] = 1;
    }
    XSI_CHECK_GOTO(alloc_rank(w, i, i, 1), res, fail);
    XSI_CHECK_GOTO(xsi_target_init(w, &w->target[i], i, i, 1), res, fail);
  }
  for (int i = 0; i < n; i++) {
    XSI_CUDA_GOTO(cudaSetDevice(i), res, fail);
    XSI_CUDA_GOTO(cudaDeviceSynchronize(), res, fail);
  }
  cudaSetDevice(prev);
  *out = w;
  xsi_clear_error();
  return XS_OK;
fail:
  xsi_error_prefix("local world (W=%d)", n);
  xs_world_destroy(w);
  cudaSetDevice(prev);
  return res;
}

xs_result xs_world_create_nccl(xs_world** out, const xs_world_config* cfg) {
  return xs_world_adopt_nccl(out, NULL, cfg);
}

xs_result xs_world_adopt_nccl(xs_world** out, void* nccl_comm, const xs_world_config* cfg) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  xs_world_config c = XS_WORLD_CONFIG_INITIALIZER;
  XSI_CHECK(check_config(&c, cfg));
  XSI_ARG(c.mem == XS_MEM_DEVICE, "nccl world: config.mem must be XS_MEM_DEVICE");
  int ndev = 0;
  XSI_CHECK(device_count(&ndev));
  xs_world* w = NULL;
  XSI_CHECK(world_new(&w, &c, XS_BACKEND_NCCL));
  xs_result res = xsi_nccl_setup(w, nccl_comm);
  if (res != XS_OK) {
    xsi_error_prefix("nccl world");
    xs_world_destroy(w);
    return res;
  }
  *out = w;
  xsi_clear_error();
  return XS_OK;
}

xs_result xs_world_destroy(xs_world* w) {
  if (!w) return XS_OK;
  xs_result res = XS_OK;
  int prev = 0;
  cudaGetDevice(&prev);
  if (w->backend == XS_BACKEND_NCCL && w->nccl_stuck) {
    /* NOTE: a kernel that never ends holds the GPU (an unbounded NCCL barrier whose peer is
     * gone): every synchronizing call, cudaFree included, would hang. Release what the host
     * owns, report it, and leave the device memory to the process's exit. */
    xsi_nccl_teardown(w);
    xsi_heap_fini(&w->heap);
    free(w);
    return xsi_set_error(XS_ERR_TIMEOUT,
                         "world destroy: a barrier kernel is still waiting for a lost peer; the "
                         "communicator was aborted and the GPU memory is left to the process exit");
  }
  for (int i = 0; i < w->ntargets; i++) {
    xsi_target* t = &w->target[i];
    cudaSetDevice(t->device);
    if (t->stream && cudaStreamSynchronize(t->stream) != cudaSuccess && res == XS_OK)
      res = xsi_set_error(XS_ERR_CUDA, "world destroy: stream of GPU %d failed: %s", t->device,
                          cudaGetErrorString(cudaGetLastError()));
  }
  if (w->backend == XS_BACKEND_NCCL) xsi_nccl_teardown(w);
  for (int i = w->ntargets - 1; i >= 0; i--) {
    xsi_target* t = &w->target[i];
    cudaSetDevice(t->device);
    if (t->ring) cudaFree(t->ring);
    if (t->events) cudaFree(t->events);
    if (t->status) cudaFree(t->status);
    if (t->stream) cudaStreamDestroy(t->stream);
  }
  for (int i = XS_MAX_RANKS - 1; i >= 0; i--) {
    if (!w->alloc[i]) continue;
    if (w->alloc_host[i])
      cudaFreeHost(w->alloc[i]);
    else
      cudaFree(w->alloc[i]);
  }
  cudaGetLastError();
  cudaSetDevice(prev);
  xsi_heap_fini(&w->heap);
  free(w);
  return res;
}

xs_result xs_world_info_get(xs_world_info* out, const xs_world* w) {
  XSI_ARG(out != NULL && w != NULL, "out or world is NULL");
  memset(out, 0, sizeof *out);
  out->backend = w->backend;
  out->mem = w->mem;
  out->size = w->size;
  out->rank_first = w->rank_first;
  out->nlocal = w->nlocal;
  out->heap_bytes = w->heap.size;
  out->heap_used = w->heap.bytes_used;
  xsi_heap_stats(&w->heap, &out->heap_free, &out->heap_largest_free);
  out->timeout_ns = w->timeout_ns;
  out->host_atomics = 1;
  for (int i = 0; i < w->ntargets; i++) {
    int a = 0;
    if (cudaDeviceGetAttribute(&a, cudaDevAttrHostNativeAtomicSupported, w->target[i].device) !=
        cudaSuccess) {
      cudaGetLastError();
      a = 0;
    }
    out->host_atomics = out->host_atomics && a;
  }
  return XS_OK;
}

static const xsi_target* target_of(const xs_world* w, int rank) {
  for (int i = 0; i < w->ntargets; i++)
    if (rank >= w->target[i].rank_first && rank < w->target[i].rank_first + w->target[i].nranks)
      return &w->target[i];
  return NULL;
}

xs_result xs_world_team(xs_team* out, const xs_world* w, int rank) {
  XSI_ARG(out != NULL && w != NULL, "out or world is NULL");
  const xsi_target* t = target_of(w, rank);
  XSI_ARG(t != NULL, "rank %d is not driven by this process (ranks %d..%d)", rank, w->rank_first,
          w->rank_first + w->nlocal - 1);
  memset(out, 0, sizeof *out);
  out->rank = rank;
  out->size = w->size;
  out->emulated = w->backend == XS_BACKEND_EMULATED;
  out->timeout_ns = w->timeout_ns;
  out->sym_base = w->heap_base[w->rank_first];
  for (int r = 0; r < w->size; r++) {
    out->heap[r] = w->heap_base[r];
    out->pad[r] = w->pad[r];
  }
  out->status = t->status;
  out->trace = t->ring;
  return XS_OK;
}

xs_result xs_world_launch_plan(xs_launch_plan* out, const xs_world* w, const void* kernel,
                               int threads, size_t smem_bytes, int blocks_per_rank) {
  XSI_ARG(out != NULL && w != NULL, "out or world is NULL");
  XSI_ARG(threads >= 1 && threads <= 1024, "threads must be in 1..1024 (got %d)", threads);
  XSI_ARG(blocks_per_rank >= 1, "blocks_per_rank must be >= 1 (got %d)", blocks_per_rank);
  memset(out, 0, sizeof *out);
  for (int i = 0; i < w->ntargets; i++) {
    const xsi_target* t = &w->target[i];
    xs_launch* l = &out->launch[i];
    long long grid = (long long)blocks_per_rank * t->nranks;
    if (kernel) {
      int per_sm = 0, sms = 0, prev = 0;
      cudaGetDevice(&prev);
      cudaSetDevice(t->device);
      cudaError_t e =
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem_bytes);
      cudaError_t e2 = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, t->device);
      cudaSetDevice(prev);
      if (e != cudaSuccess || e2 != cudaSuccess)
        return xsi_set_error(XS_ERR_CUDA, "launch plan: occupancy query failed: %s",
                             cudaGetErrorString(e != cudaSuccess ? e : e2));
      if ((long long)per_sm * sms < grid)
        return xsi_set_error(XS_ERR_INVALID_ARG,
                             "launch plan: %lld CTAs of %d threads (%zu B shared) cannot all be "
                             "resident on GPU %d (at most %d per SM x %d SMs): ranks could wait "
                             "on CTAs that never run",
                             grid, threads, smem_bytes, t->device, per_sm, sms);
    }
    l->device = t->device;
    l->rank_first = t->rank_first;
    l->nranks = t->nranks;
    l->grid = (unsigned)grid;
    l->stream = (void*)t->stream;
    XSI_CHECK(xs_world_team(&l->team, w, t->rank_first));
  }
  out->count = w->ntargets;
  return XS_OK;
}

/* After an nccl barrier timed out, NCCL's barrier kernel still spins on this GPU: every call
 * that synchronizes with its stream would wait for ever, so they all refuse (destroy is the
 * only thing left to do). */
static xs_result check_usable(const xs_world* w) {
  if (w->backend == XS_BACKEND_NCCL && w->nccl_stuck)
    return xsi_set_error(XS_ERR_TIMEOUT,
                         "world: an nccl barrier timed out earlier (a peer is gone) and its kernel "
                         "still holds the GPU; only xs_world_destroy is possible");
  return XS_OK;
}

xs_result xs_world_sync(xs_world* w) {
  XSI_ARG(w != NULL, "world is NULL");
  XSI_CHECK(check_usable(w));
  xs_result res = XS_OK;
  int prev = 0;
  cudaGetDevice(&prev);
  for (int i = 0; i < w->ntargets; i++) {
    XSI_CUDA_GOTO(cudaSetDevice(w->target[i].device), res, fail);
    XSI_CUDA_GOTO(cudaGetLastError(), res, fail); /* a failed launch on this thread */
    XSI_CUDA_GOTO(cudaStreamSynchronize(w->target[i].stream), res, fail);
  }
fail:
  cudaSetDevice(prev);
  return res;
}

xs_result xs_world_barrier(xs_world* w) {
  XSI_ARG(w != NULL, "world is NULL");
  XSI_CHECK(xs_world_sync(w));
  if (w->backend == XS_BACKEND_NCCL) return xsi_nccl_barrier(w);
  return XS_OK;
}

xs_result xs_world_status(xs_status_report* out, xs_world* w, int reset) {
  XSI_ARG(out != NULL && w != NULL, "out or world is NULL");
  XSI_CHECK(check_usable(w));
  memset(out, 0, sizeof *out);
  out->code = XS_OK;
  out->rank = -1;
  xs_result res = XS_OK;
  int prev = 0, have = 0;
  cudaGetDevice(&prev);
  for (int i = 0; i < w->ntargets; i++) {
    xsi_target* t = &w->target[i];
    xs_status s;
    XSI_CUDA_GOTO(cudaSetDevice(t->device), res, fail);
    XSI_CUDA_GOTO(cudaMemcpyAsync(&s, t->status, sizeof s, cudaMemcpyDeviceToHost, t->stream), res,
                  fail);
    XSI_CUDA_GOTO(cudaStreamSynchronize(t->stream), res, fail);
    out->count += s.count;
    if (s.code != 0 && !have) {
      have = 1;
      out->code = (xs_result)s.code;
      out->rank = s.rank;
      out->location = s.location;
      out->cta = s.cta;
      out->flag = s.flag;
      out->observed = s.observed;
      out->expected = s.expected;
    }
    if (reset) {
      XSI_CUDA_GOTO(cudaMemsetAsync(t->status, 0, sizeof s, t->stream), res, fail);
      XSI_CUDA_GOTO(cudaStreamSynchronize(t->stream), res, fail);
    }
  }
  if (have)
    snprintf(out->message, sizeof out->message,
             "rank %d (cta %u) %s at location %u waiting on flag 0x%llx (saw %llu, expected "
             "%llu); %u device-side error(s) in total",
             out->rank, out->cta, out->code == XS_ERR_TIMEOUT ? "timed out" : "failed",
             out->location, (unsigned long long)out->flag, (unsigned long long)out->observed,
             (unsigned long long)out->expected, out->count);
  else
    snprintf(out->message, sizeof out->message, "ok");
fail:
  cudaSetDevice(prev);
  return res;
}

xs_result xs_world_clear_signals(xs_world* w) {
  XSI_ARG(w != NULL, "world is NULL");
  XSI_CHECK(check_usable(w));
  xs_result res = XS_OK;
  int prev = 0;
  cudaGetDevice(&prev);
  for (int i = 0; i < w->ntargets; i++) {
    xsi_target* t = &w->target[i];
    XSI_CUDA_GOTO(cudaSetDevice(t->device), res, fail);
    for (int r = t->rank_first; r < t->rank_first + t->nranks; r++)
      XSI_CHECK_GOTO(rank_memset(w, r, (char*)w->pad[r], 0, XSI_PAD_BYTES, t->stream), res, fail);
  }
fail:
  cudaSetDevice(prev);
  return res;
}

/* ---- symmetric heap ---------------------------------------------------------------------- */

/* Offset of `p` in this process's symmetric heap, or an error naming why it is not one. */
static xs_result sym_offset(size_t* off, const xs_world* w, const void* p) {
  uintptr_t base = (uintptr_t)w->heap_base[w->rank_first], q = (uintptr_t)p;
  XSI_ARG(q >= base && q - base < w->heap.size,
          "pointer %p is not in the symmetric heap [%p, +%zu)", p, (void*)base, w->heap.size);
  *off = (size_t)(q - base);
  return XS_OK;
}

xs_result xs_malloc(void** out, xs_world* w, size_t bytes, size_t align) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  XSI_ARG(w != NULL, "world is NULL");
  size_t off = 0;
  XSI_CHECK(xsi_heap_alloc(&w->heap, bytes, align, &off));
  *out = w->heap_base[w->rank_first] + off;
  return XS_OK;
}

xs_result xs_free(xs_world* w, void* p) {
  XSI_ARG(w != NULL, "world is NULL");
  if (!p) return XS_OK;
  size_t off = 0;
  XSI_CHECK(sym_offset(&off, w, p));
  return xsi_heap_free(&w->heap, off);
}

xs_result xs_world_ptr(void** out, const xs_world* w, const void* sym, int rank) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  XSI_ARG(w != NULL, "world is NULL");
  XSI_ARG(target_of(w, rank) != NULL, "rank %d is not driven by this process", rank);
  size_t off = 0;
  XSI_CHECK(sym_offset(&off, w, sym));
  *out = w->heap_base[rank] + off;
  return XS_OK;
}

xs_result xs_world_memset(xs_world* w, void* sym, int value, size_t bytes) {
  XSI_ARG(w != NULL, "world is NULL");
  XSI_CHECK(check_usable(w));
  size_t off = 0;
  XSI_CHECK(sym_offset(&off, w, sym));
  XSI_ARG(bytes <= w->heap.size - off, "memset of %zu bytes at heap offset %zu runs past the heap",
          bytes, off);
  xs_result res = XS_OK;
  int prev = 0;
  cudaGetDevice(&prev);
  for (int i = 0; i < w->ntargets; i++) {
    xsi_target* t = &w->target[i];
    XSI_CUDA_GOTO(cudaSetDevice(t->device), res, fail);
    for (int r = t->rank_first; r < t->rank_first + t->nranks; r++)
      XSI_CHECK_GOTO(rank_memset(w, r, w->heap_base[r] + off, value, bytes, t->stream), res, fail);
  }
fail:
  cudaSetDevice(prev);
  return res;
}

/* ---- tracing ----------------------------------------------------------------------------- */

static int cmp_event(const void* a, const void* b) {
  const xs_trace_event *x = (const xs_trace_event*)a, *y = (const xs_trace_event*)b;
  if (x->t_ns != y->t_ns) return x->t_ns < y->t_ns ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->cta < y->cta ? -1 : x->cta > y->cta;
}

xs_result xs_world_trace_fetch(xs_trace_event** out, size_t* n, size_t* dropped, xs_world* w) {
  XSI_ARG(out != NULL && n != NULL && w != NULL, "out, n or world is NULL");
  XSI_CHECK(check_usable(w));
  *out = NULL;
  *n = 0;
  if (dropped) *dropped = 0;
  if (!w->trace_cap) return xsi_set_error(XS_ERR_STATE, "tracing is off (config.trace_events = 0)");
  xs_result res = XS_OK;
  int prev = 0;
  size_t total = 0, lost = 0;
  xs_trace_event* all = (xs_trace_event*)malloc(w->trace_cap * (size_t)w->ntargets * sizeof *all);
  if (!all) return xsi_set_error(XS_ERR_NO_MEMORY, "trace fetch: out of host memory");
  cudaGetDevice(&prev);
  for (int i = 0; i < w->ntargets; i++) {
    xsi_target* t = &w->target[i];
    xs_trace_ring r;
    XSI_CUDA_GOTO(cudaSetDevice(t->device), res, fail);
    XSI_CUDA_GOTO(cudaMemcpyAsync(&r, t->ring, sizeof r, cudaMemcpyDeviceToHost, t->stream), res,
                  fail);
    XSI_CUDA_GOTO(cudaStreamSynchronize(t->stream), res, fail);
    size_t k = r.head < w->trace_cap ? (size_t)r.head : w->trace_cap;
    lost += (size_t)r.head - k;
    if (k)
      XSI_CUDA_GOTO(cudaMemcpy(all + total, t->events, k * sizeof *all, cudaMemcpyDeviceToHost),
                    res, fail);
    total += k;
  }
  cudaSetDevice(prev);
  if (total == 0) {
    free(all);
    all = NULL;
  } else {
    qsort(all, total, sizeof *all, cmp_event);
  }
  *out = all;
  *n = total;
  if (dropped) *dropped = lost;
  return XS_OK;
fail:
  cudaSetDevice(prev);
  free(all);
  return res;
}

xs_result xs_world_trace_reset(xs_world* w) {
  XSI_ARG(w != NULL, "world is NULL");
  XSI_CHECK(check_usable(w));
  if (!w->trace_cap) return xsi_set_error(XS_ERR_STATE, "tracing is off (config.trace_events = 0)");
  xs_result res = XS_OK;
  int prev = 0;
  cudaGetDevice(&prev);
  for (int i = 0; i < w->ntargets; i++) {
    xsi_target* t = &w->target[i];
    XSI_CUDA_GOTO(cudaSetDevice(t->device), res, fail);
    XSI_CUDA_GOTO(cudaMemsetAsync(&t->ring->head, 0, sizeof t->ring->head, t->stream), res, fail);
    XSI_CUDA_GOTO(cudaStreamSynchronize(t->stream), res, fail);
  }
fail:
  cudaSetDevice(prev);
  return res;
}
