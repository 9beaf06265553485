/* xbench.c — xbench sessions: target buffers, one measured configuration, the reduction of the
 * per-producer timestamps to per-burst issue times (xs_xbench_reduce, src/model/sweep.c), the
 * byte checker, cudaMemcpy bandwidth.
 * Host side (C); the kernels are in xbench_kernel.cu. */
#include "kernels/xbench/xbench_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xs_xbench {
  int device;
  xs_target target;
  int sm_count;
  char name[64];
  char transport[32];
  size_t ring;             /* bytes usable for burst slots */
  unsigned char* host;     /* XS_TARGET_HOST: host address of the ring (+ flags), else NULL */
  unsigned char* dev;      /* device address of the (first) ring; flags at dev + ring */
  unsigned char* tdev[XSI_XB_MAX_TARGETS]; /* every ring (peer:all: one per peer; else tdev[0] =
                                            * dev) */
  int tdevice[XSI_XB_MAX_TARGETS];         /* the device that holds ring t (-1: host/local) */
  int ntargets;
  uint32_t* barrier;       /* [0] barrier counter, [1] status, [2..3] clock mode's t0 (u64) */
  float* sink;             /* XS_XBENCH_THREADS floats */
  uint64_t* scratch;       /* 1 word for calibration kernels */
  xs_xbench_stamp* stamps; /* device, stamp_cap entries */
  size_t stamp_cap;
  cudaStream_t stream;
  cudaEvent_t ev0, ev1;
  double fma_per_ns; /* FMA loop iterations per ns */
  void* lbuf;        /* load gaps: the buffer they read (XB_LBUF_BYTES), at the first load run */
  double load_per_ns; /* load loop iterations per ns with load_k CTAs loading (0: not yet) */
  int load_k;
  double clk_ghz;    /* SM clock from the last run long enough to measure it (0: none yet) */
  double timer_res_ns;
  uint32_t runs; /* tags differ from run to run */
};

#define XB_FLAG_BYTES 4096 /* flags area after the ring: up to 1024 producers */
#define XB_LBUF_BYTES ((size_t)16 << 20) /* the load gap's buffer: L2-resident on H100/H200 */

const char* xsi_xbench_device_name(const xs_xbench* b) {
  return b ? b->name : "";
}
size_t xsi_xbench_ring_bytes(const xs_xbench* b) {
  return b ? b->ring : 0;
}

static xs_result check_device(int device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count < 1) {
    cudaGetLastError();
    return xsi_set_error(XS_ERR_NO_DEVICE, "no CUDA device (%s)",
                         e != cudaSuccess ? cudaGetErrorString(e) : "count is 0");
  }
  if (device < 0 || device >= count)
    return xsi_set_error(XS_ERR_NO_DEVICE, "device %d does not exist (%d devices)", device, count);
  return XS_OK;
}

/* FMA iterations per ns from two loop lengths (removes the fixed launch/timer cost). */
static xs_result calibrate_fma(xs_xbench* b) {
  xs_result res = XS_OK;
  double t1 = 0, t2 = 0, best = INFINITY;
  const uint64_t n1 = 1u << 14, n2 = 1u << 18;
  XSI_CHECK_GOTO(xsi_xb_fma_time(&t1, n1, b->sink, b->scratch, b->stream), res, fail); /* warm */
  for (int r = 0; r < 3; r++) {
    XSI_CHECK_GOTO(xsi_xb_fma_time(&t1, n1, b->sink, b->scratch, b->stream), res, fail);
    XSI_CHECK_GOTO(xsi_xb_fma_time(&t2, n2, b->sink, b->scratch, b->stream), res, fail);
    double per = (t2 - t1) / (double)(n2 - n1); /* ns per iteration */
    if (per > 0 && per < best) best = per;
  }
  if (!isfinite(best) || best <= 0)
    XSI_FAIL(res, XS_ERR_INTERNAL, fail, "xbench: FMA calibration failed (t %g / %g ns)", t1, t2);
  b->fma_per_ns = 1.0 / best;
  XSI_CHECK_GOTO(xsi_xb_timer_res(&b->timer_res_ns, 20000, b->scratch, b->stream), res, fail);
  return XS_OK;
fail:
  return res;
}

/* Load gaps: the buffer (filled once) and the loop's iterations per ns, from two loop lengths
 * with K CTAs loading at once (the gap's loads share L2 with the other producers', as in a run:
 * at K = 132 on the H200 the loop is L2-bound, ~4.5 TB/s, and one CTA alone runs it faster).
 * Calibrated again when K changes. */
static xs_result prepare_load(xs_xbench* b, int K) {
  xs_result res = XS_OK;
  if (b->load_per_ns > 0 && b->load_k == K) return XS_OK;
  b->load_per_ns = 0;
  if (!b->lbuf) {
    void* p = NULL;
    XSI_CUDA_GOTO(cudaMalloc(&p, XB_LBUF_BYTES), res, fail);
    b->lbuf = p;
    XSI_CUDA_GOTO(cudaMemsetAsync(p, 0x5a, XB_LBUF_BYTES, b->stream), res, fail);
  }
  {
    const uint64_t n16 = XB_LBUF_BYTES / 16, n1 = 1u << 10, n2 = 1u << 14;
    double t1 = 0, t2 = 0, best = INFINITY;
    XSI_CHECK_GOTO(xsi_xb_load_time(&t1, n1, K, b->lbuf, n16, b->sink, b->stream, b->ev0, b->ev1),
                   res, fail); /* warm */
    for (int r = 0; r < 3; r++) {
      XSI_CHECK_GOTO(xsi_xb_load_time(&t1, n1, K, b->lbuf, n16, b->sink, b->stream, b->ev0, b->ev1),
                     res, fail);
      XSI_CHECK_GOTO(xsi_xb_load_time(&t2, n2, K, b->lbuf, n16, b->sink, b->stream, b->ev0, b->ev1),
                     res, fail);
      double per = (t2 - t1) / (double)(n2 - n1);
      if (per > 0 && per < best) best = per;
    }
    if (!isfinite(best) || best <= 0)
      XSI_FAIL(res, XS_ERR_INTERNAL, fail, "xbench: load-gap calibration failed (t %g / %g ns)", t1,
               t2);
    b->load_per_ns = 1.0 / best;
    b->load_k = K;
  }
  return XS_OK;
fail:
  return res;
}

int xsi_xb_reachable_peers(int device, int* out, int cap) {
  int count = 0, n = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  for (int q = 0; q < count && n < cap; q++) {
    int can = 0;
    if (q != device && cudaDeviceCanAccessPeer(&can, device, q) == cudaSuccess && can) out[n++] = q;
  }
  cudaGetLastError(); /* a failed query is "not reachable", not a sticky error */
  return n;
}

xs_result xs_xbench_create(xs_xbench** out, int device, xs_target target, size_t ring_bytes) {
  XSI_ARG(out, "xs_xbench_create: NULL out");
  *out = NULL;
  XSI_ARG(target.kind == XS_TARGET_HOST || target.kind == XS_TARGET_HBM ||
              target.kind == XS_TARGET_PEER,
          "xs_xbench_create: bad target kind %d", (int)target.kind);
  xs_result res = check_device(device);
  if (res != XS_OK) return res;
  xs_xbench* b = (xs_xbench*)calloc(1, sizeof *b);
  if (!b) return xsi_set_error(XS_ERR_NO_MEMORY, "xs_xbench_create");
  b->device = device;
  b->target = target;
  b->ring = ring_bytes ? (ring_bytes + 4095) / 4096 * 4096 : (size_t)256 << 20;
  XSI_CHECK_GOTO(xs_target_name(b->transport, sizeof b->transport, target), res, fail);
  XSI_CUDA_GOTO(cudaSetDevice(device), res, fail);
  {
    struct cudaDeviceProp prop;
    int coop = 0;
    XSI_CUDA_GOTO(cudaGetDeviceProperties(&prop, device), res, fail);
    snprintf(b->name, sizeof b->name, "%.63s", prop.name);
    b->sm_count = prop.multiProcessorCount;
    XSI_CUDA_GOTO(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device), res, fail);
    if (!coop)
      XSI_FAIL(res, XS_ERR_UNSUPPORTED, fail, "%.63s: no cooperative launch support", prop.name);
    if (target.kind == XS_TARGET_HOST && !prop.canMapHostMemory)
      XSI_FAIL(res, XS_ERR_UNSUPPORTED, fail, "%.63s cannot map host memory", prop.name);
  }
  size_t total = b->ring + XB_FLAG_BYTES;
  if (target.kind == XS_TARGET_HOST) {
    void* h = NULL;
    void* d = NULL;
    XSI_CUDA_GOTO(cudaHostAlloc(&h, total, cudaHostAllocMapped | cudaHostAllocPortable), res, fail);
    b->host = (unsigned char*)h;
    XSI_CUDA_GOTO(cudaHostGetDevicePointer(&d, h, 0), res, fail);
    b->dev = (unsigned char*)d;
  } else if (target.kind == XS_TARGET_HBM) {
    void* d = NULL;
    XSI_CUDA_GOTO(cudaMalloc(&d, total), res, fail);
    b->dev = (unsigned char*)d;
  } else {
    /* peer:N: one ring on device N; peer:all: one ring on every other device this one reaches */
    int count = 0;
    XSI_CUDA_GOTO(cudaGetDeviceCount(&count), res, fail);
    if (target.peer == XS_PEER_ALL) {
      b->ntargets = xsi_xb_reachable_peers(device, b->tdevice, XSI_XB_MAX_TARGETS);
      if (!b->ntargets)
        XSI_FAIL(res, XS_ERR_UNSUPPORTED, fail,
                 "target peer:all: device %d reaches no peer GPU (%d devices)", device, count);
    } else {
      int can = 0;
      if (target.peer < 0 || target.peer >= count || target.peer == device)
        XSI_FAIL(res, XS_ERR_UNSUPPORTED, fail,
                 "target peer:%d needs another GPU (device %d of %d)", target.peer, device, count);
      XSI_CUDA_GOTO(cudaDeviceCanAccessPeer(&can, device, target.peer), res, fail);
      if (!can)
        XSI_FAIL(res, XS_ERR_UNSUPPORTED, fail, "device %d cannot access peer %d", device,
                 target.peer);
      b->tdevice[b->ntargets++] = target.peer;
    }
    for (int t = 0; t < b->ntargets; t++) {
      void* d = NULL;
      XSI_CUDA_GOTO(cudaSetDevice(b->tdevice[t]), res, fail);
      cudaError_t e = cudaMalloc(&d, total);
      cudaSetDevice(device);
      XSI_CUDA_GOTO(e, res, fail);
      b->tdev[t] = (unsigned char*)d;
      e = cudaDeviceEnablePeerAccess(b->tdevice[t], 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();
      else
        XSI_CUDA_GOTO(e, res, fail);
    }
    b->dev = b->tdev[0];
  }
  if (target.kind != XS_TARGET_PEER) b->tdev[0] = b->dev, b->tdevice[0] = -1, b->ntargets = 1;
  {
    void* p = NULL;
    XSI_CUDA_GOTO(cudaMalloc(&p, 4 * sizeof(uint32_t)), res, fail);
    b->barrier = (uint32_t*)p;
    XSI_CUDA_GOTO(cudaMalloc(&p, XS_XBENCH_THREADS * sizeof(float)), res, fail);
    b->sink = (float*)p;
    XSI_CUDA_GOTO(cudaMalloc(&p, sizeof(uint64_t)), res, fail);
    b->scratch = (uint64_t*)p;
  }
  XSI_CUDA_GOTO(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking), res, fail);
  XSI_CUDA_GOTO(cudaEventCreate(&b->ev0), res, fail);
  XSI_CUDA_GOTO(cudaEventCreate(&b->ev1), res, fail);
  XSI_CHECK_GOTO(calibrate_fma(b), res, fail);
  *out = b;
  return XS_OK;
fail:
  xs_xbench_destroy(b);
  return res;
}

xs_result xs_xbench_destroy(xs_xbench* b) {
  if (!b) return XS_OK;
  cudaSetDevice(b->device);
  if (b->stream) cudaStreamSynchronize(b->stream);
  if (b->ev1) cudaEventDestroy(b->ev1);
  if (b->ev0) cudaEventDestroy(b->ev0);
  if (b->stream) cudaStreamDestroy(b->stream);
  cudaFree(b->stamps);
  cudaFree(b->lbuf);
  cudaFree(b->scratch);
  cudaFree(b->sink);
  cudaFree(b->barrier);
  if (b->host) {
    cudaFreeHost(b->host);
  } else if (b->target.kind == XS_TARGET_PEER) {
    for (int t = 0; t < b->ntargets; t++) {
      cudaSetDevice(b->tdevice[t]); /* where it lives */
      cudaFree(b->tdev[t]);
    }
    cudaSetDevice(b->device);
  } else if (b->dev) {
    cudaFree(b->dev);
  }
  cudaGetLastError(); /* teardown errors are not the caller's */
  free(b);
  return XS_OK;
}

xs_result xs_xbench_info(int* sm_count, double* fma_iters_per_ns, const xs_xbench* b) {
  XSI_ARG(b, "xs_xbench_info: NULL session");
  if (sm_count) *sm_count = b->sm_count;
  if (fma_iters_per_ns) *fma_iters_per_ns = b->fma_per_ns;
  return XS_OK;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Verify every byte the producers claim (host view of each target ring), and the flags.
 * Producer p writes ring p % ntargets (one ring unless peer:all). */
static xs_result verify(xs_xbench_summary* s, xs_xbench* b, const xs_xbench_config* cfg,
                        uint32_t tag, uint64_t slot, uint32_t nslots, uint32_t per_prod) {
  xs_result res = XS_OK;
  size_t used = (size_t)slot * nslots;
  unsigned char* buf = b->host;
  const uint32_t n16 = per_prod / 16;
  long wrong = 0;
  s->flag_wrong = 0;
  if (!buf) {
    buf = (unsigned char*)malloc(used + XB_FLAG_BYTES);
    if (!buf) return xsi_set_error(XS_ERR_NO_MEMORY, "xbench check: %zu bytes", used);
  }
  for (int t = 0; t < b->ntargets; t++) {
    const uint32_t* flags = (const uint32_t*)(buf + (b->host ? b->ring : used));
    if (!b->host) {
      XSI_CUDA_GOTO(cudaMemcpy(buf, b->tdev[t], used, cudaMemcpyDefault), res, done);
      XSI_CUDA_GOTO(cudaMemcpy(buf + used, b->tdev[t] + b->ring, XB_FLAG_BYTES, cudaMemcpyDefault),
                    res, done);
    }
    for (uint32_t sl = 0; sl < nslots; sl++) {
      /* the last burst that wrote slot sl */
      uint32_t last = sl + ((uint32_t)(cfg->bursts - 1 - (int)sl) / nslots) * nslots;
      for (int p = t; p < cfg->K; p += b->ntargets)
        for (uint32_t j = 0; j < n16; j++) {
          const uint32_t* w =
              (const uint32_t*)(buf + (size_t)sl * slot + (size_t)p * per_prod + 16ull * j);
          uint32_t tg, c;
          if (cfg->flavour == XS_FLAVOUR_TMA)
            tg = XSI_XB_TMA_TAG,
            c = (uint32_t)p * (XS_XBENCH_TMA_CHUNK / 16) + j % (XS_XBENCH_TMA_CHUNK / 16);
          else
            tg = tag + last, c = (uint32_t)p * n16 + j;
          if (w[0] != XSI_XB_WORD0(tg, c) || w[1] != XSI_XB_WORD1(tg, c) ||
              w[2] != XSI_XB_WORD2(tg, c) || w[3] != XSI_XB_WORD3(tg, c))
            wrong += 16;
        }
    }
    if (cfg->flag)
      for (int p = t; p < cfg->K; p += b->ntargets)
        s->flag_wrong += flags[p] != (uint32_t)cfg->bursts;
  }
  s->bytes_checked = (long)nslots * cfg->K * (long)per_prod;
  s->bytes_wrong = wrong;
  if (wrong || s->flag_wrong)
    res = xsi_set_error(
        XS_ERR_INTERNAL, "xbench check (%s, %s): %ld of %ld bytes wrong, %ld flags wrong",
        s->transport, xs_flavour_name(cfg->flavour), wrong, s->bytes_checked, s->flag_wrong);
done:
  if (buf != b->host) free(buf);
  return res;
}

static xs_result check_config(const xs_xbench* b, const xs_xbench_config* c) {
  XSI_ARG(c->size == sizeof(xs_xbench_config),
          "xbench config: size mismatch (use XS_XBENCH_CONFIG_INITIALIZER)");
  XSI_ARG(c->device == b->device && c->target.kind == b->target.kind &&
              (c->target.kind != XS_TARGET_PEER || c->target.peer == b->target.peer),
          "xbench config: device/target differ from the session's (%s on device %d)", b->transport,
          b->device);
  XSI_ARG(c->K >= 1 && c->K <= b->sm_count, "xbench config: K must be in [1, %d] (got %d)",
          b->sm_count, c->K);
  XSI_ARG(c->K <= XB_FLAG_BYTES / 4, "xbench config: K must be <= %d", XB_FLAG_BYTES / 4);
  XSI_ARG(isfinite(c->V) && c->V >= 16 && c->V <= 4e9,
          "xbench config: V must be in [16, 4e9] "
          "bytes (got %g)",
          c->V);
  XSI_ARG(isfinite(c->gap_ns) && c->gap_ns >= 0 && c->gap_ns <= 1e9,
          "xbench config: gap must be in [0, 1 s] (got %g ns)", c->gap_ns);
  XSI_ARG(c->bursts >= 1 && c->bursts <= XS_XBENCH_MAX_BURSTS,
          "xbench config: bursts must be in [1, %d] (got %d)", XS_XBENCH_MAX_BURSTS, c->bursts);
  XSI_ARG((unsigned)c->flavour < XS_FLAVOUR_COUNT, "xbench config: bad flavour %d",
          (int)c->flavour);
  XSI_ARG(c->gap_mode == XS_GAP_FMA || c->gap_mode == XS_GAP_SPIN || c->gap_mode == XS_GAP_LOAD,
          "xbench config: bad gap mode");
  XSI_ARG(c->sync_mode == XS_SYNC_GRID || c->sync_mode == XS_SYNC_FREE ||
              c->sync_mode == XS_SYNC_CLOCK,
          "xbench config: bad sync mode");
  XSI_ARG(isfinite(c->period_ns) && c->period_ns >= 0 && c->period_ns <= 1e9,
          "xbench config: period must be in [0, 1 s] (got %g ns)", c->period_ns);
  XSI_ARG(c->sync_mode != XS_SYNC_CLOCK || c->period_ns * c->bursts <= 600e9,
          "xbench config: clock mode: period x bursts must be <= 600 s (got %g s)",
          c->period_ns * c->bursts / 1e9);
  XSI_ARG(c->timeout_ms > 0 && c->timeout_ms <= 600e3,
          "xbench config: timeout_ms must be in (0, 600000] (got %g)", c->timeout_ms);
  return XS_OK;
}

xs_result xs_xbench_measure(xs_xbench_burst* bursts, xs_xbench_stamp* stamps,
                            xs_xbench_summary* summary, xs_xbench* b, const xs_xbench_config* cfg) {
  XSI_ARG(b && cfg, "xs_xbench_measure: NULL session or config");
  XSI_CHECK(check_config(b, cfg));
  xs_result res = XS_OK;
  xs_xbench_stamp* st = NULL;
  xs_xbench_burst* bu = NULL;
  xs_xbench_summary s;
  memset(&s, 0, sizeof s);
  s.size = sizeof s;
  const int K = cfg->K, nb = cfg->bursts;
  uint32_t per_prod = (uint32_t)(16.0 * ceil(cfg->V / K / 16.0));
  uint64_t slot = ((uint64_t)per_prod * K + 4095) / 4096 * 4096;
  if (slot > b->ring)
    return xsi_set_error(XS_ERR_INVALID_ARG,
                         "xbench: a burst of %.0f bytes exceeds the "
                         "session's ring (%zu bytes)",
                         (double)per_prod * K, b->ring);
  uint32_t nslots = (uint32_t)(b->ring / slot);
  if (nslots > (uint32_t)nb) nslots = (uint32_t)nb;
  s.V = (double)per_prod * K;
  s.per_producer = per_prod;
  s.gap_nominal_ns = cfg->gap_ns;
  s.fma_iters_per_ns = b->fma_per_ns;
  s.timer_res_ns = b->timer_res_ns;
  snprintf(s.device, sizeof s.device, "%s", b->name);
  snprintf(s.transport, sizeof s.transport, "%s", b->transport);
  size_t nst = (size_t)nb * K;
  st = (xs_xbench_stamp*)calloc(nst, sizeof *st);
  bu = (xs_xbench_burst*)calloc((size_t)nb, sizeof *bu);
  if (!st || !bu) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "xbench: %zu stamps", nst);
  XSI_CUDA_GOTO(cudaSetDevice(b->device), res, fail);
  if (cfg->gap_mode == XS_GAP_LOAD && cfg->sync_mode != XS_SYNC_CLOCK)
    XSI_CHECK_GOTO(prepare_load(b, K), res, fail);
  s.load_iters_per_ns = cfg->gap_mode == XS_GAP_LOAD ? b->load_per_ns : 0.0;
  if (nst > b->stamp_cap) {
    cudaFree(b->stamps);
    b->stamps = NULL, b->stamp_cap = 0;
    void* p = NULL;
    XSI_CUDA_GOTO(cudaMalloc(&p, nst * sizeof(xs_xbench_stamp)), res, fail);
    b->stamps = (xs_xbench_stamp*)p, b->stamp_cap = nst;
  }
  uint32_t tag = 0x51000000u + (++b->runs << 12);
  size_t used = (size_t)slot * nslots;
  /* Poison (checked runs), zero the flags, barrier and status, warm the pages. */
  if (cfg->check && b->host) memset(b->host, XSI_XB_POISON, used);
  if (b->host) memset(b->host + b->ring, 0, XB_FLAG_BYTES);
  for (int t = 0; t < b->ntargets && !b->host; t++) {
    if (b->tdevice[t] < 0) { /* local HBM: in stream order */
      if (cfg->check)
        XSI_CUDA_GOTO(cudaMemsetAsync(b->tdev[t], XSI_XB_POISON, used, b->stream), res, fail);
      XSI_CUDA_GOTO(cudaMemsetAsync(b->tdev[t] + b->ring, 0, XB_FLAG_BYTES, b->stream), res, fail);
      continue;
    }
    /* a peer's ring: set on the device that owns it, finished before the launch */
    XSI_CUDA_GOTO(cudaSetDevice(b->tdevice[t]), res, fail);
    cudaError_t e = cfg->check ? cudaMemset(b->tdev[t], XSI_XB_POISON, used) : cudaSuccess;
    if (e == cudaSuccess) e = cudaMemset(b->tdev[t] + b->ring, 0, XB_FLAG_BYTES);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    cudaSetDevice(b->device);
    XSI_CUDA_GOTO(e, res, fail);
  }
  XSI_CUDA_GOTO(cudaMemsetAsync(b->barrier, 0, 4 * sizeof(uint32_t), b->stream), res, fail);
  XSI_CUDA_GOTO(cudaMemsetAsync(b->stamps, 0, nst * sizeof(xs_xbench_stamp), b->stream), res, fail);
  for (int t = 0; t < b->ntargets && cfg->warmup; t++)
    XSI_CHECK_GOTO(xsi_xb_touch(b->tdev[t], used, b->sink, b->stream), res, fail);
  {
    xsi_xb_params p;
    memset(&p, 0, sizeof p);
    for (int t = 0; t < b->ntargets; t++)
      p.targets[t] = b->tdev[t];
    p.ntargets = b->ntargets;
    p.flag_off = b->ring;
    p.slot_bytes = slot;
    p.nslots = nslots;
    p.per_prod = per_prod;
    p.flag = cfg->flag != 0;
    p.K = K, p.bursts = nb;
    p.flavour = (int)cfg->flavour, p.sync_mode = (int)cfg->sync_mode;
    p.gap_mode = (int)cfg->gap_mode;
    p.gap_ns = (uint64_t)llround(cfg->gap_ns);
    p.gap_iters = (uint64_t)llround(
        cfg->gap_ns * (cfg->gap_mode == XS_GAP_LOAD ? b->load_per_ns : b->fma_per_ns));
    p.lbuf = b->lbuf;
    p.lbuf_n16 = XB_LBUF_BYTES / 16;
    p.tag = tag;
    p.barrier = b->barrier;
    p.status = b->barrier + 1;
    /* a barrier waits for the slowest producer's gap too: the bound covers it */
    p.timeout_ns = (uint64_t)(cfg->timeout_ms * 1e6 + 2.0 * cfg->gap_ns);
    if (cfg->sync_mode == XS_SYNC_CLOCK) {
      double P = cfg->period_ns > 0 ? cfg->period_ns
                                    : xs_xbench_default_period(cfg->target, K, s.V, cfg->gap_ns);
      p.period_ns = (uint64_t)llround(P > 1.0 ? P : 1.0);
      p.lead_ns = 20000; /* 20 us: the start barrier's release reaches every CTA within it */
      p.t0_word = (unsigned long long*)(b->barrier + 2);
    }
    p.stamps = b->stamps;
    p.sink = b->sink;
    XSI_CHECK_GOTO(xsi_xb_launch(&p, b->stream, b->ev0, b->ev1), res, fail);
  }
  XSI_CUDA_GOTO(cudaStreamSynchronize(b->stream), res, fail);
  {
    uint32_t status = 0;
    float ms = 0;
    XSI_CUDA_GOTO(cudaMemcpy(&status, b->barrier + 1, sizeof status, cudaMemcpyDeviceToHost), res,
                  fail);
    if (status != XSI_XB_OK)
      XSI_FAIL(res, XS_ERR_TIMEOUT, fail,
               "xbench: grid barrier timed out after %g ms (K %d, V %.0f, G %.0f ns, %s)",
               cfg->timeout_ms, K, s.V, cfg->gap_ns, xs_flavour_name(cfg->flavour));
    XSI_CUDA_GOTO(cudaEventElapsedTime(&ms, b->ev0, b->ev1), res, fail);
    s.kernel_ms = ms;
  }
  XSI_CUDA_GOTO(cudaMemcpy(st, b->stamps, nst * sizeof *st, cudaMemcpyDeviceToHost), res, fail);
  for (size_t i = 0; i < nst; i++)
    if (st[i].end_ns == 0 || st[i].start_ns == 0)
      XSI_FAIL(res, XS_ERR_INTERNAL, fail, "xbench: burst %zu of producer %zu has no timestamps",
               i / K, i % K);
  XSI_CHECK_GOTO(xs_xbench_reduce(bu, &s, st, K, nb, &b->clk_ghz), res, fail);
  if (cfg->check) res = verify(&s, b, cfg, tag, slot, nslots, per_prod);
  if (bursts) memcpy(bursts, bu, (size_t)nb * sizeof *bu);
  if (stamps) memcpy(stamps, st, nst * sizeof *st);
  if (summary) *summary = s;
  free(st);
  free(bu);
  return res;
fail:
  if (summary) *summary = s;
  free(st);
  free(bu);
  return res;
}

xs_result xs_xbench_run(xs_xbench_burst* bursts, xs_xbench_stamp* stamps,
                        xs_xbench_summary* summary, const xs_xbench_config* cfg) {
  XSI_ARG(cfg, "xs_xbench_run: NULL config");
  XSI_ARG(cfg->size == sizeof(xs_xbench_config),
          "xbench config: size mismatch (use XS_XBENCH_CONFIG_INITIALIZER)");
  XSI_ARG(cfg->K >= 1 && isfinite(cfg->V) && cfg->V >= 16 && cfg->V <= 4e9 && cfg->bursts >= 1,
          "xs_xbench_run: bad K/V/bursts (%d, %g, %d)", cfg->K, cfg->V, cfg->bursts);
  /* ring: up to 8 distinct slots, at least 64 MiB */
  double slot = ceil((16.0 * ceil(cfg->V / cfg->K / 16.0) * cfg->K) / 4096.0) * 4096.0;
  double ring = slot * (cfg->bursts < 8 ? cfg->bursts : 8);
  if (ring < 64.0 * 1048576.0) ring = 64.0 * 1048576.0;
  xs_xbench* b = NULL;
  XSI_CHECK(xs_xbench_create(&b, cfg->device, cfg->target, (size_t)ring));
  xs_result res = xs_xbench_measure(bursts, stamps, summary, b, cfg);
  xs_xbench_destroy(b);
  return res;
}

xs_result xs_memcpy_bandwidth(double* d2h_gbps, double* h2d_gbps, int device, size_t bytes,
                              int reps) {
  XSI_ARG(d2h_gbps && h2d_gbps, "xs_memcpy_bandwidth: NULL output");
  XSI_CHECK(check_device(device));
  if (!bytes) bytes = (size_t)256 << 20;
  if (reps <= 0) reps = 5;
  XSI_ARG(reps <= 64, "xs_memcpy_bandwidth: reps must be <= 64");
  xs_result res = XS_OK;
  void *h = NULL, *d = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  double t[2][64];
  XSI_CUDA_GOTO(cudaSetDevice(device), res, fail);
  XSI_CUDA_GOTO(cudaMallocHost(&h, bytes), res, fail);
  XSI_CUDA_GOTO(cudaMalloc(&d, bytes), res, fail);
  XSI_CUDA_GOTO(cudaEventCreate(&e0), res, fail);
  XSI_CUDA_GOTO(cudaEventCreate(&e1), res, fail);
  memset(h, 1, bytes);
  for (int dir = 0; dir < 2; dir++) {
    enum cudaMemcpyKind kind = dir == 0 ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    void* dst = dir == 0 ? h : d;
    void* src = dir == 0 ? d : h;
    XSI_CUDA_GOTO(cudaMemcpy(dst, src, bytes, kind), res, fail); /* warm-up */
    for (int r = 0; r < reps; r++) {
      float ms = 0;
      XSI_CUDA_GOTO(cudaEventRecord(e0, 0), res, fail);
      XSI_CUDA_GOTO(cudaMemcpyAsync(dst, src, bytes, kind, 0), res, fail);
      XSI_CUDA_GOTO(cudaEventRecord(e1, 0), res, fail);
      XSI_CUDA_GOTO(cudaEventSynchronize(e1), res, fail);
      XSI_CUDA_GOTO(cudaEventElapsedTime(&ms, e0, e1), res, fail);
      t[dir][r] = (double)bytes / (ms * 1e6);
    }
    qsort(t[dir], (size_t)reps, sizeof(double), cmp_double);
  }
  *d2h_gbps = t[0][reps / 2];
  *h2d_gbps = t[1][reps / 2];
fail:
  if (e1) cudaEventDestroy(e1);
  if (e0) cudaEventDestroy(e0);
  cudaFree(d);
  cudaFreeHost(h);
  return res;
}

xs_result xs_memcpy_peer_bandwidth(double* out_gbps, double* in_gbps, int device, const int* peers,
                                   int npeers, size_t bytes, int reps) {
  XSI_ARG(out_gbps && in_gbps && peers, "xs_memcpy_peer_bandwidth: NULL argument");
  XSI_ARG(npeers >= 1 && npeers <= XSI_XB_MAX_TARGETS,
          "xs_memcpy_peer_bandwidth: npeers must be in [1, %d] (got %d)", XSI_XB_MAX_TARGETS,
          npeers);
  XSI_CHECK(check_device(device));
  if (!bytes) bytes = (size_t)256 << 20;
  if (reps <= 0) reps = 5;
  XSI_ARG(reps <= 64, "xs_memcpy_peer_bandwidth: reps must be <= 64");
  for (int i = 0; i < npeers; i++) {
    int can = 0;
    XSI_CHECK(check_device(peers[i]));
    XSI_ARG(peers[i] != device, "xs_memcpy_peer_bandwidth: peer %d is the device itself", device);
    if (cudaDeviceCanAccessPeer(&can, device, peers[i]) != cudaSuccess) cudaGetLastError(), can = 0;
    if (!can)
      return xsi_set_error(XS_ERR_UNSUPPORTED, "device %d cannot access peer %d", device,
                           peers[i]);
  }
  xs_result res = XS_OK;
  void* local[XSI_XB_MAX_TARGETS] = {0};
  void* remote[XSI_XB_MAX_TARGETS] = {0};
  cudaStream_t st[XSI_XB_MAX_TARGETS] = {0};
  cudaEvent_t e0 = NULL, e1[XSI_XB_MAX_TARGETS] = {0};
  double t[2][64];
  for (int i = 0; i < npeers; i++) {
    XSI_CUDA_GOTO(cudaSetDevice(peers[i]), res, fail);
    XSI_CUDA_GOTO(cudaMalloc(&remote[i], bytes), res, fail);
  }
  XSI_CUDA_GOTO(cudaSetDevice(device), res, fail);
  for (int i = 0; i < npeers; i++) {
    cudaError_t e = cudaDeviceEnablePeerAccess(peers[i], 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
      cudaGetLastError();
    else
      XSI_CUDA_GOTO(e, res, fail);
    XSI_CUDA_GOTO(cudaMalloc(&local[i], bytes), res, fail);
    XSI_CUDA_GOTO(cudaMemset(local[i], 1, bytes), res, fail);
    XSI_CUDA_GOTO(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking), res, fail);
    XSI_CUDA_GOTO(cudaEventCreate(&e1[i]), res, fail);
  }
  XSI_CUDA_GOTO(cudaEventCreate(&e0), res, fail);
  XSI_CUDA_GOTO(cudaDeviceSynchronize(), res, fail);
  /* dir 0: device -> peers, dir 1: peers -> device; rep -1 is the warm-up. Every stream waits
   * for e0, so the copies start together; the time is e0 to the last copy's end. */
  for (int dir = 0; dir < 2; dir++)
    for (int r = -1; r < reps; r++) {
      XSI_CUDA_GOTO(cudaEventRecord(e0, st[0]), res, fail);
      for (int i = 0; i < npeers; i++) {
        if (i) XSI_CUDA_GOTO(cudaStreamWaitEvent(st[i], e0, 0), res, fail);
        if (dir == 0)
          XSI_CUDA_GOTO(cudaMemcpyPeerAsync(remote[i], peers[i], local[i], device, bytes, st[i]),
                        res, fail);
        else
          XSI_CUDA_GOTO(cudaMemcpyPeerAsync(local[i], device, remote[i], peers[i], bytes, st[i]),
                        res, fail);
        XSI_CUDA_GOTO(cudaEventRecord(e1[i], st[i]), res, fail);
      }
      double ms_max = 0;
      for (int i = 0; i < npeers; i++) {
        float ms = 0;
        XSI_CUDA_GOTO(cudaEventSynchronize(e1[i]), res, fail);
        XSI_CUDA_GOTO(cudaEventElapsedTime(&ms, e0, e1[i]), res, fail);
        if (ms > ms_max) ms_max = ms;
      }
      if (r >= 0) t[dir][r] = (double)bytes * npeers / (ms_max * 1e6);
    }
  qsort(t[0], (size_t)reps, sizeof(double), cmp_double);
  qsort(t[1], (size_t)reps, sizeof(double), cmp_double);
  *out_gbps = t[0][reps / 2];
  *in_gbps = t[1][reps / 2];
fail:
  cudaSetDevice(device);
  if (e0) cudaEventDestroy(e0);
  for (int i = 0; i < npeers; i++) {
    if (e1[i]) cudaEventDestroy(e1[i]);
    if (st[i]) cudaStreamDestroy(st[i]);
    cudaFree(local[i]);
  }
  for (int i = 0; i < npeers; i++)
    if (remote[i]) {
      cudaSetDevice(peers[i]);
      cudaFree(remote[i]);
    }
  cudaSetDevice(device);
  return res;
}
