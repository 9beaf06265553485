/* xbench_internal.h — what the xbench host code (xbench.c, calibrate.c, C) and its kernels
 * (xbench_kernel.cu, CUDA) share: the kernel parameter block, the launchers, the data pattern
 * and the CUDA error macro. Internal, not installed. */
#ifndef XSTAGE_XBENCH_INTERNAL_H
#define XSTAGE_XBENCH_INTERNAL_H

#include "core/cuda_check.h"
#include "core/internal.h"

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif


/* The 16 bytes stored at 16-byte chunk `chunk` of a burst tagged `tag` (st flavours: chunk =
 * index of the chunk in the burst's slot; TMA: chunk = producer * 2048 + index in the 32 KB
 * shared-memory source). Cheap on purpose: three integer ops per 16-byte store. */
#define XSI_XB_WORD0(tag, chunk) ((uint32_t)(tag))
#define XSI_XB_WORD1(tag, chunk) ((uint32_t)(chunk))
#define XSI_XB_WORD2(tag, chunk) ((uint32_t)(tag) ^ (uint32_t)(chunk))
#define XSI_XB_WORD3(tag, chunk) (~(uint32_t)(chunk))
#define XSI_XB_TMA_TAG 0x7A3B0000u
#define XSI_XB_POISON 0xA5 /* byte value of the target before a checked run */

/* Status word values written by the kernel. */
#define XSI_XB_OK 0u
#define XSI_XB_TIMEOUT 1u

#define XSI_XB_MAX_TARGETS 8 /* peer:all: at most 8 peer rings */

typedef struct xsi_xb_params {
  unsigned char* targets[XSI_XB_MAX_TARGETS]; /* device addresses of the rings (host-mapped: the
                                               * device alias); producer k writes ring k % n */
  int ntargets;                               /* n >= 1 */
  uint64_t flag_off; /* the K flag words sit at targets[k % n] + flag_off (flag = 1) */
  uint64_t slot_bytes;   /* stride between burst slots (multiple of 4096) */
  uint32_t nslots;       /* burst b writes slot b % nslots */
  uint32_t per_prod;     /* bytes per producer per burst (multiple of 16) */
  int flag;              /* 1: raise producer k's flag word after each burst */
  int K, bursts;
  int flavour, sync_mode, gap_mode; /* xs_flavour, xs_sync_mode, xs_gap_mode */
  uint64_t gap_ns;                  /* spin mode */
  uint64_t gap_iters;               /* FMA mode: loop iterations (4 FMAs each per thread) */
  uint32_t tag;                     /* burst b of st flavours stores tag + b */
  uint64_t period_ns;               /* clock mode: the schedule's period P */
  uint64_t lead_ns;                 /* clock mode: S_0 = t0 + lead (covers the start barrier) */
  unsigned long long* t0_word;      /* clock mode: max of the producers' clocks before the start
                                     * barrier (zeroed before the launch) */
  uint32_t* barrier;                /* grid barrier arrival counter (zeroed before the launch) */
  uint32_t* status;                 /* XSI_XB_OK / XSI_XB_TIMEOUT */
  uint64_t timeout_ns;              /* bound on every spin */
  xs_xbench_stamp* stamps;          /* bursts * K, burst-major */
  float* sink;                      /* keeps the FMA loop alive */
  const void* lbuf;                 /* load mode: the buffer the gap reads (16-byte units) */
  uint64_t lbuf_n16;                /* its 16-byte units */
} xsi_xb_params;

/* Launch the burst kernel (cooperative launch of K CTAs x XS_XBENCH_THREADS threads) on
 * `stream` between events ev0/ev1. XS_ERR_UNSUPPORTED if K CTAs cannot be co-resident. */
xs_result xsi_xb_launch(const xsi_xb_params* p, cudaStream_t stream, cudaEvent_t ev0,
                        cudaEvent_t ev1);

/* Read one 32-bit word in every 4 KiB page of [dst, dst + bytes) (warm the GPU's translations
 * without changing the contents). */
xs_result xsi_xb_touch(const unsigned char* dst, uint64_t bytes, float* sink, cudaStream_t stream);

/* FMA loop calibration: ns taken by `iters` iterations on one CTA (device-timed), into *ns. */
xs_result xsi_xb_fma_time(double* ns, uint64_t iters, float* sink, uint64_t* dev_scratch,
                          cudaStream_t stream);

/* Load-gap calibration: ns (events) taken by `ctas` CTAs of XS_XBENCH_THREADS each running
 * `iters` iterations of the gap's load loop over buf (n16 16-byte units), into *ns. */
xs_result xsi_xb_load_time(double* ns, uint64_t iters, int ctas, const void* buf, uint64_t n16,
                           float* sink, cudaStream_t stream, cudaEvent_t ev0, cudaEvent_t ev1);

/* Smallest non-zero step of %globaltimer over `reads` back-to-back reads (ns). */
xs_result xsi_xb_timer_res(double* ns, int reads, uint64_t* dev_scratch, cudaStream_t stream);

/* The devices `device` reaches through peer access, in order, at most `cap` (peer:all's rings and
 * its cudaMemcpyPeer yardstick use the same set). Returns the count (0 on any CUDA error). */
int xsi_xb_reachable_peers(int device, int* out, int cap);

/* Session access for calibrate.c. */
const char* xsi_xbench_device_name(const xs_xbench* b);
size_t xsi_xbench_ring_bytes(const xs_xbench* b);

#ifdef __cplusplus
}
#endif
#endif
