/* world_internal.h — the xs_world object shared by the backends (not installed). */
#ifndef XSTAGE_WORLD_INTERNAL_H
#define XSTAGE_WORLD_INTERNAL_H

#include "core/cuda_check.h"
#include "core/internal.h"
#include "core/symheap.h"
#include "world/bootstrap.h"
#include "xstage/world.h"

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes reserved after each heap for its signal pad (XS_PAD_WORDS words, padded). */
#define XSI_PAD_BYTES ((size_t)65536)


/* One launch target: a GPU this process drives and the ranks it runs. */
typedef struct xsi_target {
  int device;
  int rank_first, nranks;
  cudaStream_t stream;
  xs_status* status;   /* device memory */
  xs_trace_ring* ring; /* device memory, or NULL */
  xs_trace_event* events;
} xsi_target;

struct xs_world {
  xs_backend backend;
  xs_mem_kind mem;
  int size;          /* W */
  int rank_first;    /* first rank driven by this process */
  int nlocal;        /* ranks driven by this process */
  size_t heap_bytes; /* per rank, multiple of XS_HEAP_MAX_ALIGN */
  uint64_t timeout_ns;
  size_t trace_cap;                   /* events per target */
  xsi_heap heap;                      /* offsets, shared by all ranks */
  char* heap_base[XS_MAX_RANKS];      /* rank r's heap as this process's GPUs address it */
  uint64_t* pad[XS_MAX_RANKS];        /* rank r's signal pad */
  void* alloc[XS_MAX_RANKS];          /* what to free (cudaMalloc / cudaHostAlloc) */
  int alloc_host[XS_MAX_RANKS];       /* 1: alloc[i] came from cudaHostAlloc */
  ptrdiff_t host_delta[XS_MAX_RANKS]; /* host-mapped heaps: host address - device address */
  int ntargets;
  xsi_target target[XS_MAX_RANKS];
  /* nccl backend */
  void* nccl_comm;    /* ncclComm_t */
  int nccl_owned;     /* 1: created here, destroyed with the world */
  void* nccl_win;     /* ncclWindow_t */
  void* nccl_mem;     /* ncclMemAlloc'd heap + pad */
  void* nccl_devcomm; /* host copy of ncclDevComm_t (malloc'd) */
  int nccl_stuck;     /* 1: a barrier kernel never finished (a peer is gone); destroy must not
                       * synchronize with it */
};

/* nccl.cu: fill the nccl parts of w (comm == NULL: create one from the environment). On
 * failure everything it made is released. XS_ERR_UNSUPPORTED without NCCL's device API. */
xs_result xsi_nccl_setup(xs_world* w, void* comm);
void xsi_nccl_teardown(xs_world* w);
xs_result xsi_nccl_barrier(xs_world* w);

/* world.c: per-target status, trace buffer and stream (device must be current). */
xs_result xsi_target_init(xs_world* w, xsi_target* t, int device, int rank_first, int nranks);

#ifdef __cplusplus
}
#endif
#endif
