/* gemm_internal.h — what the GEMM dispatcher (gemm.cu) hands to each kernel version.
 * CUDA only (included by the .cu files of src/kernels/gemm).
 */
#ifndef XSTAGE_KERNELS_GEMM_INTERNAL_H
#define XSTAGE_KERNELS_GEMM_INTERNAL_H

#include <cuda.h>
#include <cuda_runtime.h>
#ifdef __cplusplus
#include <type_traits>
#endif

#include "kernels/gemm/sched.h"
#include "xstage/gemm.h"

/* Experts up to which v2-v8 compact the MASKED schedule (a prefix of E + 1 ints in shared
 * memory); beyond it they walk the whole buffer and skip empty tiles. v8 also walks CONTIG
 * through such a prefix (of tile pairs), so it runs CONTIG only up to this many experts. */
#define XSG_MASKED_MAX_EXPERTS 256

/* Everything a kernel needs besides the tensor maps; passed by value (__grid_constant__). */
typedef struct xsg_params {
  xsg_grid grid; /* tiles: groups x m_blocks x n_blocks, raster order */
  int layout;    /* xs_gemm_layout */
  int M, N, K;   /* as in xs_gemm_args (N: rows of B per expert) */
  int n_out;     /* output columns: N, or N / 2 with SILU_MUL */
  int experts;
  int tile_m, tile_n; /* output tile */
  const uint16_t* A;  /* bf16 bits (v1 reads these; v2-v8 use the tensor maps) */
  const uint16_t* B;
  uint16_t* C;
  const int32_t* m_offsets; /* CONTIG */
  const int32_t* m_counts;  /* MASKED */
  xs_gemm_epilogue epi;
  const int32_t* order_list; /* ORDER_LIST, or NULL for the raster order */
  int positions;             /* schedule length: ntiles of the list, or the tile count */
  int compact; /* v2-v8 MASKED without a list (experts <= XSG_MASKED_MAX_EXPERTS): walk only the
                  tiles with work (sched.h xsg_masked_tile; v8: pairs, xsg_compact_pair, and
                  CONTIG too); positions is then an upper bound */
  /* Probe mode 5 (xsg_probe below): per CTA XSG_TRACE_HEAD words, then trace_cap records of
   * XSG_TRACE_REC words per consumer warpgroup. NULL otherwise. */
  unsigned long long* trace;
  int trace_cap;
  int probe_delay_ns; /* probe modes 5 and 8: odd CTAs start this much later (0: not) */
  int pdl;            /* launched with programmatic dependent launch (xsg_launch) */
  int l2_hint; /* L2 cache policies of the TMA loads (v2-v6, v11-v14, v7; v9 ignores it): A's
                  kind | B's kind << 2, a kind being 0 none (no .L2::cache_hint),
                  XSG_L2_EVICT_FIRST, XSG_L2_EVICT_LAST (sched.h) or 3 evict_normal. The
                  library's: sched.h xsg_l2_choice (gemm.cu); the probe may set any */
  int split; /* v7 / v9: a CTA with an odd tile count splits its last tile's k-blocks between its
                two streams (sched.h xsg_v7_split_position) */
  int tail_split; /* v3 and v11: the last partial wave in column halves when it is at most
                     half the grid (sched.h xsg_tail_slots); off with tile flags (a half would
                     raise its tile's flag with only half the tile stored) */
  xs_gemm_ready ready; /* input readiness (xs_gemm_args.ready); flags NULL: none. After the
                          fields above, so their offsets stay what they were */
  /* v7's split of K (sched.h xsg_v7_ksplit; DENSE): ksplit = S slices per tile, positions =
   * tiles x S (position k: tile position k % tiles, slice k / tiles; in clusters, below,
   * otherwise). S > 1 through the workspace: counters (16 bytes
   * per tile position, word 0 counts the slices stored; zero before and after every launch)
   * and partial (tiles x S x BT x BW fp32, each unit's sums) in the workspace. */
  int ksplit;
  uint32_t* ksplit_counters;
  float* ksplit_partial;
  /* S > 1 in clusters (session 25): 0 through the workspace; C = S / 2 the CTAs of a cluster,
   * which are one tile's S units (CTA rank r, stream s: slice 2 r + s; grid = tiles x C, one unit
   * per stream); the units meet in distributed shared memory, no workspace */
  int ksplit_cluster;
  /* v2, v4-v6 (session 27; gemm.cu sets it): map_b's box holds BN rows, so one TMA load brings
   * a k-block's B (no SiLU*mul, N a multiple of BN). 0: two halves of BN / 2 rows (always for
   * v3, v11-v13, which the kernel checks at compile time: C7511 otherwise) */
  int b_one_box;
} xsg_params;

/* Each CTA's first tile from the host (sched.h xsg_first_tiles): a launch parameter of the
 * Hopper kernels of gemm_v2.cu (v2-v6, v11-v13). CTAs [0, n) start at tile t[b]. */
typedef struct xsg_first {
  int n;
  uint32_t t[XSG_FIRST_MAX];
} xsg_first;

/* Probe hooks (bench/gemm_probe.cu; not public API, never set by the library itself): when
 * xsg_probe.v3_mode is nonzero, an XS_GEMM_V3 launch runs that kernel mode instead of v3's 0:
 *   1, 2, 3  v11's, v12's, v13's kernel
 *   4  no epilogue (nothing stored: what the tiles' stores cost)
 *   5  v3 with a per-tile trace of SM clock stamps into xsg_probe.trace (correct output)
 *   6  no wgmma (the loads, waits and epilogue alone: what the data movement costs)
 *   7  v13 (mode 3) with mode 5's trace (pass 1's stamps: before and after its barrier)
 *   8  v11 (mode 1) with mode 5's trace (no per-pass epilogue stamps)
 * Modes 4 and 6 leave C wrong on purpose; only the probe uses them. Trace layout per CTA c:
 *   trace[c * stride + 0..3] = clock64 and globaltimer at entry, clock64 and globaltimer at exit
 *   (consumer warpgroup 1's thread 0); [4..7] the start-up's clock64 (session 14): producer thread
 *   0 and warp 3 past setmaxnreg.dec, warp 3's table built, the producer past its table wait (or
 *   where it would have waited); then record j of warpgroup h at
 *   trace[c * stride + XSG_TRACE_HEAD + (j * 2 + h) * XSG_TRACE_REC + 0..7] = tile index, clock64
 *   after its first k-block's full wait (twice: [1] = [2]; the tile comes with that k-block's
 *   slot entry), after its last wgmma retired, after its epilogue, at the loop's top (before that
 *   wait);
 *   [6], [7] (h = 0 only): the producer's clock64 when it has the tile's coordinates and when it
 *   has issued the tile's first k-block; [8 + 2 ps], [9 + 2 ps], [12 + ps]: the epilogue's
 *   pass ps (0, 1): its staging free (thread 0's wait for the previous TMA store's reads), the
 *   warpgroup at the barrier after it, the pass's TMA stores issued; stride = XSG_TRACE_HEAD +
 * trace_cap * 2 * XSG_TRACE_REC.
 */
#define XSG_TRACE_HEAD 8
#define XSG_TRACE_REC 14
/* v7's trace (xsg_probe.v7_mode = 1; one launch, correct output): per CTA XSG_V7_TRACE words of
 * %globaltimer ns: [0] entry, [1] set-up done (after the first __syncthreads), [2 + s] producer s's
 * first TMA issued, [4 + s] consumer s past its first full wait, [6 + s] consumer s's first main
 * loop done, [8 + s] its last main loop done, [10 + s] its last epilogue done, [12 + s] its
 * tiles, [14 + s] its k-blocks, [16 + s] the summed main-loop ns, [18] %smid, [19] clock64 at
 * entry; [20] thread 0 after the barrier init, [21] after the schedule table, [22 + s] producer s
 * in its branch, [24 + s] its first real tile decoded (after the table; the speculative start loads
 * before it), [26 + s] its first slot armed (empty wait, expect_tx),
 * [28 + s] consumer s in its branch, [30] %globaltimer and [31] clock64 at stream 0's end, [32 + s]
 * (a split of K) its last unit's sums stored and counted (the slices' hand-off; the last one's
 * sum and epilogue follow), [34 + s] its last unit's end (an epilogue, or the hand-off alone). */
#define XSG_V7_TRACE 36
/* v14's trace (xsg_probe.v14_trace = 1; one launch, correct output): per CTA XSG_V14_TRACE words:
 * [0] %globaltimer and [1] clock64 at entry (thread 0), [2] thread 0 past the set-up (barriers,
 * __syncthreads, the cluster's sync); the producer's elected lane: [3] its first unit decoded,
 * [4] its first TMA issued, [5] its last TMA issued, [14] its ring drained; consumer thread 128:
 * [6] past its first full wait, [7] its first unit's multiply done, [8] its last unit's, [9] its
 * last unit's end (fix-up, epilogue, flag), then [10] %globaltimer and [11] clock64, [12] %smid,
 * [13] its units; its last unit's fix-up (S > 1): [15] its sums written (the cluster's: in its
 * ring, with the barrier after), [16] the tile's slices met (the cluster: thread 128 past xch[0];
 * the workspace: past the tile's barrier), [17] its share gathered, [18] its share stored, [19]
 * (cluster) every slice has received, [20] its share's stores begin, [21] their first group is
 * stored, [22] (cluster) its pushes are issued. All but [0] and [10] are SM clocks. */
#define XSG_V14_TRACE 24
/* The epilogue of a v2-v6 / v11-v13 kernel, fixed at compile time or not (gemm_v2.cu): ANY reads
 * the activation and the store kind from xsg_params at run time; the others fix both and leave
 * the other forms' code out of the kernel (session 24: a launch after another kernel refetches
 * what it runs, and the forms' code together held v11's wgmmas at the edge of serialization). */
enum {
  XSG_EPI_ANY = 0,
  XSG_EPI_LOCAL = 1,      /* XS_GEMM_STORE_LOCAL, XS_GEMM_ACT_NONE */
  XSG_EPI_LOCAL_SILU = 2, /* XS_GEMM_STORE_LOCAL, XS_GEMM_ACT_SILU_MUL */
  XSG_EPI_MAP = 3,        /* XS_GEMM_STORE_MAP, XS_GEMM_ACT_NONE */
  XSG_EPI_MAP_SILU = 4,   /* XS_GEMM_STORE_MAP, XS_GEMM_ACT_SILU_MUL */
};
static inline __host__ __device__ int xsg_epi_of(int act, int store) {
  return 1 + (act == XS_GEMM_ACT_SILU_MUL) + 2 * (store == XS_GEMM_STORE_MAP);
}
static inline __host__ __device__ constexpr int xsg_epi_silu(int epi) {
  return epi == XSG_EPI_LOCAL_SILU || epi == XSG_EPI_MAP_SILU;
}
static inline __host__ __device__ constexpr int xsg_epi_store(int epi) {
  return epi >= XSG_EPI_MAP ? XS_GEMM_STORE_MAP : XS_GEMM_STORE_LOCAL;
}
#ifdef __cplusplus
/* launch(std::integral_constant<int, EPI>{}) for the fixed form `epi` (XSG_EPI_LOCAL ...
 * XSG_EPI_MAP_SILU): a kernel's launcher is written once for every form. */
template <class F> static inline cudaError_t xsg_with_epi(int epi, F&& launch) {
  switch (epi) {
  case XSG_EPI_LOCAL_SILU:
    return launch(std::integral_constant<int, XSG_EPI_LOCAL_SILU>{});
  case XSG_EPI_MAP:
    return launch(std::integral_constant<int, XSG_EPI_MAP>{});
  case XSG_EPI_MAP_SILU:
    return launch(std::integral_constant<int, XSG_EPI_MAP_SILU>{});
  default:
    return launch(std::integral_constant<int, XSG_EPI_LOCAL>{});
  }
}
#endif

typedef struct xsg_probe_t {
  int v3_mode;
  unsigned long long* trace; /* device memory, mode 5 */
  int trace_cap;             /* records per warpgroup and CTA */
  int delay_ns; /* modes 5, 8: odd CTAs' producers wait this long before their first load, so
                   that half the CTAs reach their tile boundaries out of step with the others */
  int v7_mode;  /* 1: v7 launches write XSG_V7_TRACE words per CTA into trace */
  int l2_promo; /* tensor maps' L2 promotion: 0 the library's (256 B, or 128 B where
                   sched.h xsg_l2_choice says), 1 none, 2 64 B, 3 128 B, 4 256 B */
  int v7_width; /* v7's B rows per tile: 0 the library's rule (sched.h xsg_v7_width), 64, 128 */
  int v7_split; /* v7's split tile: 0 the library's choice, 1 never, 2 always (when possible) */
  int l2_hint;  /* nonzero: xsg_params.l2_hint = l2_hint & 15 for every launch (16: no policy
                   at all); 0: the library's */
  int tail;     /* v3 / v11's tail split: 0 the library's choice, 1 never */
  int first;    /* each CTA's first tile (v2-v6, v11-v13) or unit (v14) from the host (xsg_first):
                   0 the library's, 1 never */
  int splitk;   /* v14 with S > 1: 1 the multiply alone (no fix-up, nothing stored), 2 the
                   multiply, the sums' stores and the barrier (no gather, no output), 3 the
                   multiply and the sums' stores (no barrier), 4 (any S) A loaded at a slice's
                   first k-block only, 5 (clusters) the hand-offs and pushes without the sums
                   and stores, 7 the fix-up's share not stored, 8 its SiLU*mul left out (5, 7, 8:
                   wrong output, time only); 0 the library's kernel. (Session 22, call H: the
                   sums staged in shared memory and stored with one bulk copy were 0.5-1 us
                   slower than the plain stores.) */
  int splitk_bn; /* v14's tile width: 0 the library's (sched.h xsg_splitk_plan), 128 or 256 */
  int splitk_halves; /* nonzero: v14 loads B in two halves even where one box would do */
  int splitk_global; /* v14's split fix-up: 0 the library's choice (gemm.cu
                        splitk_cluster_preferred), 1 through the workspace even where the tile's
                        slices fit as a cluster, 2 as clusters wherever they fit */
  int splitk_a_full; /* nonzero: v14 loads A in boxes of 128 rows even where M < 128 */
  int epi_any;       /* nonzero: v3 / v11 run the kernel whose epilogue is read from xsg_params at
                        run time (XSG_EPI_ANY) even where a fixed one would do */
  int v7_ksplit;     /* AUTO at dense M <= 64: 0 the library's (v7 with its split of K), 1 the rule
                        before session 25 (v14 where v7 has few tiles, else v7 unsplit) */
  int v7_kcluster;   /* v7's split: 0 the library's form (through the workspace; clusters where
                        none can be had), 1 never clusters, 2 clusters wherever they fit */
  int v14_trace;     /* 1: v14 launches write XSG_V14_TRACE words per CTA into trace */
} xsg_probe_t;
#ifdef __cplusplus
extern "C" xsg_probe_t xsg_probe;
#endif

/* The rows a tile covers in its group's row space, and which expert's B it multiplies.
 * Returns 0 when the tile has no work (past the used rows / an expert's count). */
static inline __host__ __device__ int xsg_tile_rows(const xsg_params* p, xsg_tile t, int* row0,
                                                    int* row_end, int* expert) {
  *row0 = t.mb * p->tile_m;
  if (p->layout == XS_GEMM_GROUPED_CONTIG) {
    *expert = xsg_contig_expert(p->m_offsets, p->experts, *row0);
    *row_end = p->M;
    return *expert >= 0;
  }
  if (p->layout == XS_GEMM_GROUPED_MASKED) {
    *expert = t.g;
    int count = p->m_counts[t.g];
    *row_end = count < p->M ? count : p->M;
    return *row0 < *row_end;
  }
  *expert = 0;
  *row_end = p->M;
  return *row0 < p->M;
}

/* Position k of the schedule -> tile index (the caller's list, or the raster order). */
static inline __device__ int xsg_position_tile(const xsg_params* p, int k) {
  return p->order_list ? p->order_list[k] : xsg_order_tile(&p->grid, k);
}

#ifdef __CUDACC__
#include "xstage/device.cuh" /* xsi_status_record_at */
#include "xstage/ptx.cuh"

/* Input readiness (xs_gemm_ready), the slow path (the kernels poll each word once inline
 * first): one thread waits until every flag word of the groups that
 * cover A rows [row0, row_end) of `expert` reads ready (sched.h xsg_ready_groups, xsg_ready_ok),
 * each word for at most p.ready.timeout_ns. A timeout records XS_ERR_TIMEOUT in *p.ready.status
 * (first one wins; count counts them) and returns; once the status holds an error it returns at
 * once. PTX: ld.acquire.sys.global.u32 per poll, %globaltimer every 16 polls, nanosleep after
 * 4096, then fence.proxy.async.global: the TMA loads that follow read through the async proxy
 * what the acquire made visible to the generic one. */
static __device__ __noinline__ void xsg_wait_ready(const xsg_params& p, int expert, int row0,
                                                   int row_end) {
  const xs_gemm_ready& r = p.ready;
  int f0 = 0, f1 = -1;
  if (!xsg_ready_groups(p.layout == XS_GEMM_GROUPED_MASKED, p.M, r.rows, expert, row0, row_end, &f0,
                        &f1))
    return;
  volatile const uint32_t* code = &r.status->code;
  for (int f = f0; f <= f1; f++)
    for (int j = 0; j < r.span; j++) {
      const uint32_t* w = r.flags + (int64_t)f * r.span + j;
      uint32_t v = xs_ld_acquire_sys_u32(w);
      if (xsg_ready_ok(v, r.expect)) continue;
      if (*code != 0u) return;
      const uint64_t t0 = xs_globaltimer();
      for (uint32_t spin = 1; !xsg_ready_ok(v, r.expect); spin++) {
        if ((spin & 15u) == 0u) {
          if (*code != 0u) return;
          if (xs_globaltimer() - t0 > r.timeout_ns) {
            xsi_status_record_at(r.status, r.rank, (uint32_t)XS_ERR_TIMEOUT, r.location, w, v,
                                 r.expect);
            return;
          }
          if (spin > 4096u) xs_nanosleep(64);
        }
        v = xs_ld_acquire_sys_u32(w);
      }
    }

  xs_fence_proxy_async_global();
}

/* Launch a Hopper kernel (v2-v14) with `ctas` CTAs of `threads`, `smem` bytes of dynamic shared
 * memory, on `stream`, in clusters of `cluster` CTAs along x (0: none); with p.pdl, as a
 * programmatic dependent launch (the kernel calls griddepcontrol.wait before its first global
 * access: hopper_common.cuh xsg_griddep_enter). xsg_launch: without clusters. */
template <class... Params, class... Args>
static cudaError_t xsg_launch_cluster(void (*kernel)(Params...), const xsg_params& p, int ctas,
                                      int cluster, int threads, int smem, cudaStream_t stream,
                                      Args&&... args) {
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3((unsigned)ctas);
  c.blockDim = dim3((unsigned)threads);
  c.dynamicSmemBytes = (size_t)smem;
  c.stream = stream;
  cudaLaunchAttribute at[2];
  int n = 0;
  if (cluster) {
    at[n].id = cudaLaunchAttributeClusterDimension;
    at[n].val.clusterDim.x = (unsigned)cluster;
    at[n].val.clusterDim.y = 1;
    at[n++].val.clusterDim.z = 1;
  }
  if (p.pdl) {
    at[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  c.attrs = at;
  c.numAttrs = (unsigned)n;
  return cudaLaunchKernelEx(&c, kernel, static_cast<Args&&>(args)...);
}

template <class... Params, class... Args>
static cudaError_t xsg_launch(void (*kernel)(Params...), const xsg_params& p, int ctas, int threads,
                              int smem, cudaStream_t stream, Args&&... args) {
  return xsg_launch_cluster(kernel, p, ctas, 0, threads, smem, stream,
                            static_cast<Args&&>(args)...);
}

/* How many clusters of `cluster` CTAs of `kernel` (threads, smem bytes of dynamic shared memory,
 * already allowed on the kernel) fit on the GPU at once. */
template <class... Params>
static cudaError_t xsg_max_clusters(void (*kernel)(Params...), int cluster, int threads, int smem,
                                    int* n) {
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3((unsigned)cluster);
  c.blockDim = dim3((unsigned)threads);
  c.dynamicSmemBytes = (size_t)smem;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = (unsigned)cluster;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  c.attrs = at;
  c.numAttrs = 1;
  return cudaOccupancyMaxActiveClusters(n, kernel, &c);
}
#endif

/* v14's split of K (gemm_splitk.cu), a launch parameter of its kernel. */
typedef struct xsg_splitk {
  int splits;         /* S >= 1; with S > 1 the host launches one CTA per unit (<= SMs) */
  uint32_t* counters; /* S > 1: 4 words per tile position (arrivals, generation, stores done,
                         spare), zero before the first launch and after every launch */
  void* partial;      /* S > 1: XSG_SPLITK_TILE_BYTES per unit, 16-byte aligned */
  int probe;          /* xsg_probe.splitk (0: the library's kernel) */
  int b_box;          /* rows of map_b's box: BN (one load per k-block; no SiLU*mul, every tile
                         wholly inside N) or BN / 2 (two halves) */
  int a_rows;         /* rows of map_a's box: 128, or M rounded up to 8 where M < 128 */
  int cluster;        /* S > 1: the S CTAs of a tile are one cluster and meet in distributed
                         shared memory (no workspace; grid = units, S <= 8); 0: through the
                         workspace */
} xsg_splitk;

/* Launchers (gemm_v1.cu, gemm_v2.cu; v7 / v9, v8, v10 below). ctas: persistent grid size (already
 * clamped). */
cudaError_t xsg_launch_v1(const xsg_params* p, int ctas, cudaStream_t stream);
/* bn: 128 (v2), 256 (v3, v11-v13), 224 (v4), 192 (v5) or 208 (v6); mode (bn = 256 only): 0 the
 * staged epilogue (v3), 1 its last pass deferred under the next tile's first k-blocks (v11), 2
 * stores straight from the accumulators (v12, no C map needed), 3 the second pass staged in the
 * tile's last ring slot (v13). The maps: A box {64, 128, 1}, B
 * box {64, bn/2, 1}, C box {64, 64, 1}, all with 128-byte swizzle (gemm.cu). first: each CTA's
 * first tile (first->n = 0: none given). */
cudaError_t xsg_launch_hopper(const xsg_params* p, const xsg_first* first, int bn, int mode,
                              const CUtensorMap* map_a, const CUtensorMap* map_b,
                              const CUtensorMap* map_c, int ctas, cudaStream_t stream);
/* Force the lazy loading of each file's kernel instances (cudaFuncGetAttributes on each; the
 * probe-only modes are left out): xs_gemm_preload. */
cudaError_t xsg_preload_v1(void);
cudaError_t xsg_preload_hopper(void);
cudaError_t xsg_preload_v7(void);
cudaError_t xsg_preload_v8(void);
cudaError_t xsg_preload_v10(void);
cudaError_t xsg_preload_splitk(void);
/* cudaFuncGetAttributes on each of the n kernel functions in k (NULL entries skipped): the first
 * error, or cudaSuccess. */
static inline cudaError_t xsg_load_kernels(const void* const* k, int n) {
  for (int i = 0; i < n; i++) {
    cudaFuncAttributes a;
    const cudaError_t e = k[i] ? cudaFuncGetAttributes(&a, k[i]) : cudaSuccess;
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
/* Dynamic shared memory a Hopper version needs, in bytes (for its config's static check). */
int xsg_hopper_smem_bytes(int bn);
/* v7 and v9 (gemm_v7.cu): token-major tiles of p->tile_m = 16, 32 or 64 (v7) or 128 (v9) tokens
 * x 128 B rows, two tile streams per CTA. The maps: A box {64, p->tile_m, 1}, B box {64, 64, 1},
 * 128-byte swizzle; no C map (the epilogue stores from registers). cudaErrorInvalidValue for
 * another tile_m. */
cudaError_t xsg_launch_v7(const xsg_params* p, const CUtensorMap* map_a, const CUtensorMap* map_b,
                          int ctas, cudaStream_t stream);
/* Clusters of C (2..8) v7 CTAs of tile_m (16, 32, 64) x bw (64, 128) that fit on the GPU at once
 * (the K split in clusters; 0 for another C). */
cudaError_t xsg_v7_max_clusters(int tile_m, int bw, int C, int* n);
/* C where v7's split S of `tiles` tiles of tile_m x bw runs in clusters of C CTAs on the current
 * device where a workspace can be had (gemm.cu v7_cluster_preferred; 0: through the workspace),
 * and the clusters that fit at all (v7_cluster: exact S, or the most C <= S / 2; what a capture
 * with no workspace runs). */
int xsg_v7_uses_clusters(int tile_m, int bw, int S, int tiles);
int xsg_v7_fits_clusters(int tile_m, int bw, int S, int tiles, int exact);
/* v8 (gemm_v8.cu): v3's 128x256 tile on clusters of two CTAs (__cluster_dims__(2, 1, 1)) that
 * compute tile pairs (sched.h) and share B through TMA multicast. p->grid is the tile grid;
 * p->positions the pair positions (DENSE, MASKED walking the whole buffer) or, with p->compact
 * (CONTIG always, MASKED with <= XSG_MASKED_MAX_EXPERTS experts), an upper bound of them (the
 * kernel builds the pair prefix). ctas: even, >= 2 (cudaErrorInvalidValue otherwise). The maps
 * are v3's: A box {64, 128, 1}, B box {64, 128, 1}, C box {64, 64, 1} (STORE_LOCAL). No caller's
 * tile list (p->order_list must be NULL: xs_gemm_run refuses ORDER_LIST for v8). */
cudaError_t xsg_launch_v8(const xsg_params* p, const CUtensorMap* map_a, const CUtensorMap* map_b,
                          const CUtensorMap* map_c, int ctas, cudaStream_t stream);
/* Clusters of v8 that can be resident at once (cudaOccupancyMaxActiveClusters). */
cudaError_t xsg_v8_max_clusters(int* clusters);
/* v10 (gemm_v10.cu): tiles of p->tile_m = 64 rows x 256 B rows (v3's m64n256k16), two
 * independent tile streams per CTA (one per consumer warpgroup). The maps: A box {64, 64, 1}, B
 * box {64, 128, 1}, C box {64, 64, 1} (STORE_LOCAL), 128-byte swizzle. cudaErrorInvalidValue for
 * another tile_m. */
cudaError_t xsg_launch_v10(const xsg_params* p, const CUtensorMap* map_a, const CUtensorMap* map_b,
                           const CUtensorMap* map_c, int ctas, cudaStream_t stream);

/* v14 (gemm_splitk.cu): DENSE, tiles of 128 x bn B rows (bn = 256, 128 or 64; output columns
 * bn, or bn / 2 with SiLU*mul), K split over sk->splits CTAs per tile. The maps: A box {64,
 * sk->a_rows, 1}, B box {64, sk->b_box, 1}; no C map (stores from registers). ctas:
 * p->positions * sk->splits when splits > 1 (every unit resident at once: the fix-up waits for
 * the tile's other units), launched as clusters of splits CTAs with sk->cluster.
 */
/* Whether v14 runs a split S of `positions` tiles of width bn as clusters (gemm.cu: no
 * workspace) where it can have a workspace, and whether such clusters fit at all (what a capture
 * with no workspace runs), on the current device. */
int xsg_splitk_uses_clusters(int bn, int S, int positions);
int xsg_splitk_fits_clusters(int bn, int S, int positions);
/* How many clusters of S v14 CTAs of width bn fit on the GPU at once (0 where S is not 2..8). */
cudaError_t xsg_splitk_max_clusters(int bn, int S, int* n);
cudaError_t xsg_launch_splitk(const xsg_params* p, const xsg_splitk* sk, const xsg_first* first,
                              int bn, const CUtensorMap* map_a, const CUtensorMap* map_b, int ctas,
                              cudaStream_t stream);

#endif
