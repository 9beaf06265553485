/* nccl.cu — the nccl world backend: one process per GPU, heap in NCCL symmetric memory.
 *
 * Setup (collective, every rank in the same order):
 *   1. communicator: ncclCommInitRank from the environment (rank 0's ncclUniqueId travels over
 *      the TCP bootstrap in bootstrap.c), or the caller's communicator (adopt);
 *   2. heap + signal pad: ncclMemAlloc(heap_bytes + pad) and ncclCommWindowRegister(...,
 *      NCCL_WIN_COLL_SYMMETRIC);
 *   3. device communicator: ncclDevCommCreate with one LSA barrier (requirements zeroed by
 *      hand: NCCL 2.28.9 has no initializer macro for ncclDevCommRequirements);
 *   4. peer heap bases: a one-warp kernel calls ncclGetLsaPointer(win, 0, peer) for every
 *      peer; they go into every xs_team, so kernels translate pointers with one add, exactly as
 *      in the emulated and local backends;
 *   5. zero this rank's pad, then an LSA barrier so no peer signals into an unzeroed pad.
 * NVLink multicast is never used (no lsaMultimem; NCCL_NVLS_ENABLE=0 is set before init).
 */
#include "world/world_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef XS_HAVE_NCCL
#include <nccl.h>
#include <nccl_device.h>

#define XSI_NCCL_GOTO(call, res, label)                                                            \
  do {                                                                                             \
    ncclResult_t xsi_n_ = (call);                                                                  \
    if (xsi_n_ != ncclSuccess) {                                                                   \
      (res) = xsi_set_error(XS_ERR_NCCL, "%s:%d: %s: %s", __FILE__, __LINE__, #call,               \
                            ncclGetErrorString(xsi_n_));                                           \
      goto label;                                                                                  \
    }                                                                                              \
  } while (0)

/* out[p] = this GPU's address of peer p's window base. */
static __global__ void xsi_lsa_ptrs_kernel(ncclWindow_t win, int n, void** out) {
  int p = (int)threadIdx.x;
  if (p < n) out[p] = ncclGetLsaPointer(win, 0, p);
}

/* One CTA of every rank meets at LSA barrier 0 (sequentially consistent). */
static __global__ void xsi_lsa_barrier_kernel(ncclDevComm dc) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, 0);
  bar.sync(ncclCoopCta(), cuda::memory_order_seq_cst);
}

static double bootstrap_timeout_s(void) {
  const char* s = getenv("XSTAGE_BOOTSTRAP_TIMEOUT_S");
  double v = s ? atof(s) : 60.0;
  return v > 0 ? v : 60.0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

xs_result xsi_nccl_barrier(xs_world* w) {
  xs_result res = XS_OK;
  xsi_target* t = &w->target[0];
  int prev = 0;
  cudaGetDevice(&prev);
  XSI_CUDA_GOTO(cudaSetDevice(t->device), res, fail);
  xsi_lsa_barrier_kernel<<<1, 32, 0, t->stream>>>(*(ncclDevComm*)w->nccl_devcomm);
  XSI_CUDA_GOTO(cudaGetLastError(), res, fail);
  {
    /* NOTE: NCCL's barrier spins without a bound; the host wait is bounded instead. */
    double limit = 10.0 * (double)w->timeout_ns * 1e-9, start = now_s();
    if (limit < 1.0) limit = 1.0;
    for (;;) {
      cudaError_t e = cudaStreamQuery(t->stream);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) XSI_CUDA_GOTO(e, res, fail);
      if (now_s() - start > limit) {
        w->nccl_stuck = 1;
        XSI_FAIL(res, XS_ERR_TIMEOUT, fail,
                 "nccl world barrier: rank %d waited %.1f s for its peers (a rank did not reach "
                 "the barrier; the GPU context is no longer usable)",
                 w->rank_first, limit);
      }
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
fail:
  cudaSetDevice(prev);
  return res;
}

xs_result xsi_nccl_setup(xs_world* w, void* comm_in) {
  xs_result res = XS_OK;
  ncclComm_t comm = (ncclComm_t)comm_in;
  int nranks = 0, rank = 0, dev = 0, ndev = 0;
  void** d_ptrs = NULL;
  void* h_ptrs[XS_MAX_RANKS];
  XSI_CUDA_GOTO(cudaGetDeviceCount(&ndev), res, fail);
  if (!comm) {
    xs_world_env env;
    ncclUniqueId id;
    XSI_CHECK_GOTO(xs_world_env_read(&env), res, fail);
    /* one GPU visible to this process (CUDA_VISIBLE_DEVICES per rank, as SLURM does): use it;
     * several: LOCAL_RANK picks one */
    XSI_ARG(ndev == 1 || env.local_rank < ndev,
            "LOCAL_RANK=%d but this process sees %d GPUs (expected one, or more than LOCAL_RANK)",
            env.local_rank, ndev);
    setenv("NCCL_NVLS_ENABLE", "0", 1); /* NOTE: xstage never uses NVLink multicast */
    dev = ndev == 1 ? 0 : env.local_rank;
    XSI_CUDA_GOTO(cudaSetDevice(dev), res, fail);
    memset(&id, 0, sizeof id);
    if (env.rank == 0) XSI_NCCL_GOTO(ncclGetUniqueId(&id), res, fail);
    XSI_CHECK_GOTO(xsi_bootstrap_exchange(&env, &id, sizeof id, bootstrap_timeout_s()), res, fail);
    XSI_NCCL_GOTO(ncclCommInitRank(&comm, env.world_size, id, env.rank), res, fail);
    w->nccl_comm = comm;
    w->nccl_owned = 1;
  } else {
    w->nccl_comm = comm;
    XSI_NCCL_GOTO(ncclCommCuDevice(comm, &dev), res, fail);
    XSI_CUDA_GOTO(cudaSetDevice(dev), res, fail);
  }
  XSI_NCCL_GOTO(ncclCommCount(comm, &nranks), res, fail);
  XSI_NCCL_GOTO(ncclCommUserRank(comm, &rank), res, fail);
  if (nranks < 1 || nranks > XS_MAX_RANKS)
    XSI_FAIL(res, XS_ERR_UNSUPPORTED, fail, "communicator has %d ranks (xstage worlds: 1..%d)",
             nranks, XS_MAX_RANKS);
  {
    ncclTeam_t lsa = ncclTeamLsa(comm);
    if (lsa.nRanks != nranks)
      XSI_FAIL(res, XS_ERR_UNSUPPORTED, fail,
               "only %d of %d ranks share load/store access with rank %d: ranks on other nodes "
               "are reached through NCCL GIN, not by this backend (docs/world.md)",
               lsa.nRanks, nranks, rank);
  }
  w->size = nranks;
  w->rank_first = rank;
  w->nlocal = 1;
  {
    size_t bytes = w->heap_bytes + XSI_PAD_BYTES;
    ncclWindow_t win;
    XSI_NCCL_GOTO(ncclMemAlloc(&w->nccl_mem, bytes), res, fail);
    if ((uintptr_t)w->nccl_mem % XS_HEAP_MAX_ALIGN)
      XSI_FAIL(res, XS_ERR_INTERNAL, fail, "ncclMemAlloc returned %p, not %zu-byte aligned",
               w->nccl_mem, XS_HEAP_MAX_ALIGN);
    XSI_NCCL_GOTO(ncclCommWindowRegister(comm, w->nccl_mem, bytes, &win, NCCL_WIN_COLL_SYMMETRIC),
                  res, fail);
    w->nccl_win = (void*)win;
  }
  {
    ncclDevCommRequirements req;
    memset(&req, 0, sizeof req); /* NOTE: 2.28.9 has no initializer macro */
    req.lsaBarrierCount = 1;
    w->nccl_devcomm = calloc(1, sizeof(ncclDevComm));
    if (!w->nccl_devcomm) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "out of host memory");
    ncclResult_t nr = ncclDevCommCreate(comm, &req, (ncclDevComm*)w->nccl_devcomm);
    if (nr != ncclSuccess) {
      free(w->nccl_devcomm);
      w->nccl_devcomm = NULL;
      XSI_FAIL(res, XS_ERR_NCCL, fail, "ncclDevCommCreate: %s", ncclGetErrorString(nr));
    }
  }
  w->ntargets = 1;
  XSI_CHECK_GOTO(xsi_target_init(w, &w->target[0], dev, rank, 1), res, fail);
  XSI_CUDA_GOTO(cudaMalloc((void**)&d_ptrs, sizeof(void*) * XS_MAX_RANKS), res, fail);
  xsi_lsa_ptrs_kernel<<<1, 32, 0, w->target[0].stream>>>((ncclWindow_t)w->nccl_win, nranks, d_ptrs);
  XSI_CUDA_GOTO(cudaGetLastError(), res, fail);
  XSI_CUDA_GOTO(cudaMemcpyAsync(h_ptrs, d_ptrs, sizeof(void*) * nranks, cudaMemcpyDeviceToHost,
                                w->target[0].stream),
                res, fail);
  XSI_CUDA_GOTO(cudaStreamSynchronize(w->target[0].stream), res, fail);
  for (int r = 0; r < nranks; r++) {
    if (!h_ptrs[r] || (uintptr_t)h_ptrs[r] % XS_HEAP_MAX_ALIGN)
      XSI_FAIL(res, XS_ERR_NCCL, fail, "ncclGetLsaPointer gave %p for rank %d", h_ptrs[r], r);
    w->heap_base[r] = (char*)h_ptrs[r];
    w->pad[r] = (uint64_t*)(w->heap_base[r] + w->heap_bytes);
  }
  w->heap_base[rank] = (char*)w->nccl_mem; /* our own heap, as the host and this GPU see it */
  w->pad[rank] = (uint64_t*)((char*)w->nccl_mem + w->heap_bytes);
  XSI_CUDA_GOTO(cudaMemsetAsync(w->pad[rank], 0, XSI_PAD_BYTES, w->target[0].stream), res, fail);
  XSI_CHECK_GOTO(xsi_nccl_barrier(w), res, fail);
  cudaFree(d_ptrs);
  return XS_OK;
fail:
  if (d_ptrs) cudaFree(d_ptrs);
  return res; /* xs_world_destroy runs xsi_nccl_teardown */
}

void xsi_nccl_teardown(xs_world* w) {
  ncclComm_t comm = (ncclComm_t)w->nccl_comm;
  if (!comm) return;
  if (w->nccl_stuck) {
    /* a barrier kernel still spins on this GPU: anything that synchronizes would wait for ever;
     * abort the communicator and leave the device memory to the process's exit */
    if (w->nccl_owned) ncclCommAbort(comm);
    free(w->nccl_devcomm);
    w->nccl_devcomm = NULL, w->nccl_win = NULL, w->nccl_mem = NULL, w->nccl_comm = NULL;
    return;
  }
  if (w->nccl_devcomm) {
    ncclDevCommDestroy(comm, (ncclDevComm*)w->nccl_devcomm);
    free(w->nccl_devcomm);
    w->nccl_devcomm = NULL;
  }
  if (w->nccl_win) ncclCommWindowDeregister(comm, (ncclWindow_t)w->nccl_win);
  if (w->nccl_mem) ncclMemFree(w->nccl_mem);
  w->nccl_win = NULL;
  w->nccl_mem = NULL;
  if (w->nccl_owned) {
    ncclCommFinalize(comm);
    ncclCommDestroy(comm);
  }
  w->nccl_comm = NULL;
}

#else /* no NCCL device API in this build */

xs_result xsi_nccl_setup(xs_world* w, void* comm) {
  (void)w;
  (void)comm;
  return xsi_set_error(XS_ERR_UNSUPPORTED,
                       "this build has no NCCL with its device API (nccl_device.h)");
}
void xsi_nccl_teardown(xs_world* w) {
  (void)w;
}
xs_result xsi_nccl_barrier(xs_world* w) {
  (void)w;
  return xsi_set_error(XS_ERR_UNSUPPORTED, "this build has no NCCL");
}

#endif
