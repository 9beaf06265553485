/* xstage/gemm.h — Hopper bf16 GEMM engine: dense and grouped (MoE) GEMM whose tile loop and
 * epilogue belong to xstage (host side, plain C11). How it works: docs/gemm.md.
 *
 * Layout (all row-major, bf16 inputs, fp32 accumulation, bf16 output):
 *   C[M, N] = A[M, K] * B[N, K]^T      A: activations, B: weights stored K-major ([out, in]).
 * Grouped layouts (E experts, weights B[E, N, K]):
 *   XS_GEMM_GROUPED_CONTIG  A[M, K], C[M, N] hold the experts' rows back to back; expert e owns
 *                           rows [m_offsets[e], m_offsets[e+1]); every m_offsets[e] is a
 *                           multiple of XS_GEMM_GROUP_ALIGN (xs_gemm_contig_layout builds them).
 *                           Padding rows are computed like any row (zero A's padding rows to
 *                           get zeros); rows at or past m_offsets[E] are not touched.
 *   XS_GEMM_GROUPED_MASKED  A[E, M, K], C[E, M, N]: a fixed buffer of M rows per expert, of
 *                           which the first m_counts[e] (device memory, read by the kernel, so
 *                           the launch can be captured in a CUDA graph) are valid. Rows at or
 *                           past m_counts[e] rounded up to the tile height are not touched;
 *                           rows between m_counts[e] and that bound are unspecified.
 * SiLU*mul (XS_GEMM_ACT_SILU_MUL, the MoE gate/up projection): B holds [W_gate; W_up] (N = 2I
 * rows: gate rows 0..I-1, up rows I..2I-1) and C is [.., I] = silu(A W_gate^T) * (A W_up^T).
 *
 * Tiles: the output is cut into tiles of tile_m x tile_n (xs_gemm_tiles says which). Tile index
 *   t = (g * m_blocks + mb) * n_blocks + nb     (g: expert for MASKED, else 0)
 * covers output rows [mb*tile_m, +tile_m) of group g and output columns [nb*tile_n, +tile_n).
 * Tile indices name per-tile flags, destination-map entries and caller-supplied tile orders.
 */
#ifndef XSTAGE_GEMM_H
#define XSTAGE_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "xstage/xstage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Expert segments of the contiguous layout start at multiples of this many rows. */
#define XS_GEMM_GROUP_ALIGN 128

typedef enum xs_gemm_layout {
  XS_GEMM_DENSE = 0,
  XS_GEMM_GROUPED_CONTIG = 1,
  XS_GEMM_GROUPED_MASKED = 2,
} xs_gemm_layout;

/* Kernel versions (src/kernels/gemm/README.md). AUTO picks the fastest that supports the
 * problem (among v1-v7 and v11); an explicit version that cannot run the problem returns
 * XS_ERR_UNSUPPORTED. */
typedef enum xs_gemm_version {
  XS_GEMM_AUTO = 0,
  XS_GEMM_V1 = 1, /* SIMT tiles 64x64, any shape and alignment (the simple reference path) */
  XS_GEMM_V2 = 2, /* Hopper: TMA ring + wgmma, tiles 128x128 (needs K, N % 8 == 0) */
  XS_GEMM_V3 = 3, /* Hopper: the same with tiles 128x256 */
  XS_GEMM_V4 = 4, /* Hopper: the same with tiles 128x224 and 16-byte stores (few-tile shapes:
                     7168 columns are 32 tiles, one wave of 132 SMs at 512 rows) */
  XS_GEMM_V5 = 5, /* Hopper: the same with tiles 128x192 (2048x3072: 256 tiles, two full waves
                     where 128x128 runs 2.9; with SiLU*mul 16-byte stores) */
  XS_GEMM_V6 = 6, /* Hopper: the same with tiles 128x208 and 16-byte stores (grouped: a tile
                     count that needs as many waves as 128x224, on narrower tiles) */
  XS_GEMM_V7 = 7, /* Hopper, few rows per group (decode, small MoE batches): token-major tiles
                     of 16/32/64 rows (the least that holds M) x 128 output columns (64 with
                     SiLU*mul), or half that where it spreads the weights over the SMs more
                     evenly (xs_gemm_tiles says which; it depends on the SM count), weights on
                     the wgmma M side, two tile streams per CTA, stores from registers; AUTO's
                     pick for MASKED with M <= 64 and DENSE with M <= 32 (M 33-64: v14 where
                     N is narrow). DENSE: K optionally split over S units per tile (a decode
                     step's narrow GEMM; xs_gemm_tiling.splits): each unit stores its fp32
                     sums in the workspace, and the last of a tile's S units (a counter) adds
                     them in slice order (the same bits every run) and runs the epilogue; no
                     unit waits for another, so any S fits any grid. Where no workspace can be
                     had (a capture), a tile's units run as one cluster of S / 2 CTAs and meet
                     in shared memory (an even S whose clusters fit at once) */
  XS_GEMM_V8 = 8, /* Hopper: v3's 128x256 tile on clusters of two CTAs computing vertically
                     adjacent tiles (m-blocks 2j, 2j + 1 of one group) that share the B tile
                     through TMA multicast. Explicit only (AUTO does not pick it). Not with
                     ORDER_LIST (xs_gemm_run: XS_ERR_UNSUPPORTED) nor CONTIG with more than 256
                     experts; max_ctas is rounded down to whole clusters of two (at least 2) */
  XS_GEMM_V9 = 9, /* Hopper: v7's kernel with token tiles of 128 rows for any M: tiles 128 x 128
                     output columns (64 with SiLU*mul), each consumer warpgroup its own tile
                     stream, so one tile's epilogue overlaps the other stream's main loop.
                     Explicit only (AUTO does not pick it); every feature of v7 */
  /* v10 — Hopper: v3's wgmma (m64n256k16) on tiles of 64 rows x 256 output columns (128 with
   * SiLU*mul), each consumer warpgroup its own tile stream (own producer, ring and staging), so
   * one tile's epilogue overlaps the other stream's main loop. Explicit only (AUTO does not pick
   * it); every feature of v3 (layouts, SiLU*mul, map, flags, orders, ORDER_LIST). */
  XS_GEMM_V10 = 10,
  /* v11 — Hopper: v3 (128x256 tiles, 4 stages) with a deferred epilogue: a finished tile is
   * packed to bf16 in registers (SiLU*mul applied) and staged and stored after the next tile's
   * first two k-blocks are issued, so the stores overlap tensor work instead of idling it.
   * Every feature of v3. AUTO's pick where its cost model picks the 128x256 tile without
   * SiLU*mul (measured 1-2 % ahead of v3 there; with SiLU*mul AUTO keeps v3). */
  XS_GEMM_V11 = 11,
  /* v12 — Hopper: v3 (128x256 tiles, 4 stages) whose epilogue stores straight from the
   * accumulators: a 4 x 4 word transpose inside each quad of lanes (two shuffle rounds) gives
   * every lane 8 consecutive output columns of one row, stored with one 16-byte store; no staging
   * buffer, no barrier, no TMA store. Every feature of v3. */
  XS_GEMM_V12 = 12,
  /* v13 — Hopper: v3 whose second 128-column staging pass goes into the ring slot of the tile's
   * last k-block (held back from the producer until the next tile's first k-block) instead of
   * waiting for the first pass's TMA store to read the staging buffer. Every feature of v3 (the
   * map path and SiLU*mul, one pass, run as in v3). */
  XS_GEMM_V13 = 13,
  /* v14 — Hopper, DENSE only: tiles of 128x256, 128x128 or 128x64 (the plan's choice, reported
   * by xs_gemm_tiles), optionally with K split over S CTAs per tile (split-K), for problems with
   * fewer tiles than SMs (small batches). Split: each CTA multiplies one slice of K; the S CTAs
   * of a tile exchange fp32 sums through a workspace (xs_gemm_args.workspace), or as one cluster
   * through shared memory (128x128 / 128x64 tiles, S <= 4 where the clusters fit; S <= 8 where no
   * workspace can be had), and each stores
   * 1/S of the tile; the sum is taken in slice order, so results are the same bits every run.
   * Unsplit: one CTA per tile, stored straight from the accumulators. S: xs_gemm_args.split_k,
   * or AUTO's choice (xs_gemm_tiling.splits). Every epilogue feature (STORE_MAP, SiLU*mul, tile
   * flags) and tile order; max_ctas caps the CTAs (S x tiles). AUTO's pick for dense problems of
   * one wave or less where its model predicts it faster than v2 / v3 (docs/gemm.md, "Split-K"). */
  XS_GEMM_V14 = 14,
} xs_gemm_version;

/* Where the epilogue puts a finished tile. */
typedef enum xs_gemm_store {
  XS_GEMM_STORE_LOCAL = 0, /* into C (TMA store on v2/v3/v5/v8/v10/v11/v13, 16-byte stores on
                              v4/v6, 16-byte stores from registers on v12, 4-byte stores from
                              registers on v7 and v9) */
  XS_GEMM_STORE_MAP = 1,   /* through dst_map: per tile a base pointer and leading dimension */
} xs_gemm_store;

typedef enum xs_gemm_act {
  XS_GEMM_ACT_NONE = 0,
  XS_GEMM_ACT_SILU_MUL = 1, /* C = silu(gate) * up, see the header comment */
} xs_gemm_act;

/* One destination-map entry: where tile t goes. Element (r, c) of the tile (tile-relative,
 * r < tile_m, c < tile_n) is stored at base[r * ld + c]. Any memory the GPU can store to: local
 * HBM, a peer's symmetric heap, host-mapped memory. Only in-bounds elements are stored. */
typedef struct xs_gemm_tile_dst {
  void* base; /* bf16 elements; 16-byte aligned for v2-v6, v8, v10-v13 */
  int64_t ld; /* elements between rows; a multiple of 8 for v2-v6, v8, v10-v13 */
} xs_gemm_tile_dst;

/* The epilogue hook, passed by value down to the kernel. */
typedef struct xs_gemm_epilogue {
  xs_gemm_store store;
  xs_gemm_act act;
  const xs_gemm_tile_dst* dst_map; /* STORE_MAP: device array, one entry per tile index */
  uint32_t* tile_flags; /* device array, one word per tile index, or NULL. After all of a tile's
                           stores are performed, the kernel adds 1 with a release at system
                           scope (red.release.sys.add): a reader that acquires the flag sees
                           the tile. */
} xs_gemm_epilogue;
#define XS_GEMM_EPILOGUE_INITIALIZER                                                               \
  { XS_GEMM_STORE_LOCAL, XS_GEMM_ACT_NONE, NULL, NULL }

typedef enum xs_gemm_order {
  XS_GEMM_ORDER_RASTER_M = 0, /* bands of `swizzle` m-blocks; inside a band, m varies fastest */
  XS_GEMM_ORDER_RASTER_N = 1, /* bands of `swizzle` n-blocks; inside a band, n varies fastest */
  XS_GEMM_ORDER_LIST = 2,     /* the caller's list of tile indices, in order */
} xs_gemm_order;

/* The tile order. Persistent CTA i takes positions i, i + ctas, i + 2 ctas, ... of the order.
 * v7, v9 and v10 run two tile streams per CTA: stream s of CTA i takes positions s * ctas + i,
 * then every 2 ctas further on (position k starts in wave k / (2 ctas)). v8 orders tile *pairs*
 * (m-blocks 2j and 2j + 1 of a group, one n-block; a raster-M band of `swizzle` m-blocks is
 * ceil(swizzle / 2) pairs): cluster c of ctas / 2 takes pair positions c, c + ctas / 2, ...;
 * it has no ORDER_LIST. */
typedef struct xs_gemm_schedule {
  xs_gemm_order order;
  int swizzle;          /* raster band width in tiles, 1..64 (0: 8; v10 with RASTER_M: 16, the
                           1024 rows of v3's 8 m-blocks; CONTIG with RASTER_M: the m-blocks
                           per expert, at most that) */
  const int32_t* tiles; /* ORDER_LIST: device array of tile indices (each in [0, count)) */
  int ntiles;           /* ORDER_LIST: entries; tiles not listed are not computed */
  int max_ctas;         /* persistent CTAs, 0: one per SM (v1: 0 means 4 per SM; v8: 0 means
                           two per co-resident cluster, else rounded down to even, >= 2) */
  int pdl; /* 1: v2-v13 launch with programmatic dependent launch (PDL): the kernel may be
              scheduled while the stream's previous kernel finishes, sets itself up (barriers,
              tensor maps) and waits for that kernel's completion and memory (griddepcontrol.wait)
              before its first global access; it lets a following PDL launch start the same way.
              Same results as a plain launch (0, the default). Measured on the H200 (session 5):
              back-to-back launches of a grid whose CTAs all carry the same work gain 2-4 % at
              16-128 tokens per expert; where CTAs carry unequal work or fewer CTAs than SMs run,
              they lost 3-6 % (src/kernels/gemm/README.md, "Tuning round 11"). Session 6 (runs
              28-29, AUTO's MASKED pick): +1.4 ... +4 % at 16 tokens per expert with 8 experts on
              128 CTAs, +0.3 ... +1.2 % on the multi-wave cases at 512 tokens; -5 ... -8 % on
              DeepSeek-V3 down E=8 T=16 (112 CTAs) and -2.4 % on Qwen3-235B gate/up E=8 T=128
              (one wave of 96 tiles): turn it on where the grid covers the GPU. Session 26, a
              Llama-3-70B TP8 layer's four dense GEMMs with it: 2.6-5.6 us faster per layer back
              to back, 1-3 us in a CUDA graph at 1-128 tokens, 0.7-1.5 us slower in a graph at
              256 (docs/results/gemm-h200.md, session 26).
              2 (overlap, with args.ready only): a PDL launch that does NOT wait for the
              previous kernel: its CTAs take SMs as the previous kernel's CTAs exit and start
              on tiles whose inputs are ready while it finishes. Sound when everything this GEMM
              reads of the previous kernel's output is covered by the ready flags and the
              previous kernel neither reads nor writes this GEMM's outputs; everything before
              the previous kernel is complete (xstage's GEMMs trigger dependents only after
              their own wait). MoE Linear-2 after Linear-1 on one stream: ready.flags = Linear-
              1's tile_flags, pdl = 2. The previous kernel's CTAs are all resident before these
              start, so the waits cannot starve it. v1 ignores pdl. */
} xs_gemm_schedule;
#define XS_GEMM_SCHEDULE_INITIALIZER                                                               \
  { XS_GEMM_ORDER_RASTER_M, 0, NULL, 0, 0, 0 }

/* Input readiness (optional): the GEMM waits, tile by tile, for A's rows to arrive. Before a
 * tile's first load of A, the producer thread polls (ld.acquire.sys) the flags that cover the
 * tile's A rows until each reads at least `expect`, then orders its TMA loads after the acquire
 * (fence.proxy.async.global). A tile whose rows are ready starts at once: the inputs of other
 * tiles may still be in flight. For tensor parallelism's all-gather + GEMM (peers push their
 * shards of A with a release signal each) and for a second GEMM that consumes a first one's
 * output while it runs (MoE Linear-2 after Linear-1: ready.flags = the first GEMM's tile_flags).
 *
 * Flag groups: A's rows are cut into groups of `rows` rows; group f's readiness is the `span`
 * words flags[f * span + j], j < span, each of which must reach `expect`. The group of A row r:
 *   DENSE, CONTIG: r / rows;   MASKED (expert e, row r of its M): e * ceil(M / rows) + r / rows.
 * A tile waits for the groups of its rows that hold data: [row0, min(row0 + tile_m, end)), end
 * = M (DENSE, CONTIG) or the expert's m_counts (MASKED).
 * With rows = the first GEMM's tile_m and span = its n_blocks, the first GEMM's tile flags are
 * exactly these groups (tile index = (g * m_blocks + mb) * n_blocks + nb).
 * A flag word counts epochs: it is ready when (int32_t)(flag - expect) >= 0, so a caller that
 * adds 1 per iteration never resets it.
 *
 * Bounded: a tile waits at most timeout_ns; then the kernel records XS_ERR_TIMEOUT in *status
 * (the world's status layout: read it with xs_world_status when it is a world's, or copy it;
 * location, rank, the flag's address, the value seen and expect are recorded; `count` counts
 * the timed-out waits) and loads the rows as they are. Once *status holds an error no tile
 * waits any more, so the launch ends promptly; its output is then unspecified.
 * Deadlock: the writers of the flags must be able to run while this GEMM's CTAs wait (another
 * GPU, the host, or a kernel already resident; schedule.max_ctas can leave SMs free), and must
 * already be loaded (xs_gemm_preload below: CUDA's lazy loading can hold a kernel's first launch
 * until the waiting kernel ends). On one stream, schedule.pdl = 2 is free of both.
 * Versions: v1 and v3; with flags set AUTO picks v3 on a Hopper GPU (v1 where the Hopper
 * versions cannot run the problem). Others return XS_ERR_UNSUPPORTED (gemm_v2.cu says why
 * v11 and v2 have no such instance). v3's speculative first loads are off in this mode. */
typedef struct xs_gemm_ready {
  const uint32_t* flags;    /* device-visible words (HBM, a peer's heap, host-mapped), or NULL */
  int rows;                 /* A rows per flag group, >= 1 */
  int span;                 /* flags per group, >= 1 */
  uint32_t expect;          /* see above */
  uint32_t location;        /* recorded with a timeout (the caller's id for this wait) */
  int rank;                 /* recorded with a timeout */
  uint64_t timeout_ns;      /* > 0 */
  struct xs_status* status; /* device-visible (world.h), zeroed before the first launch; required */
} xs_gemm_ready;

/* What runs around a GEMM, for AUTO's choices (xs_gemm_args.context). Measured on the H200
 * (session 21, bench_gemm_chain --layer, docs/results/gemm-h200.md): the same kernel is timed
 * differently back to back with itself (how issue 5's tables are timed) and in a layer's order,
 * between other kernels that leave L2 full of their own lines (MoE down projection right after
 * gate/up, and the reverse).
 *   ALONE  AUTO as tuned back to back (the default).
 *   LAYER  grouped problems with more than 64 rows per expert all run v3's kernel, and one-wave
 *          grouped launches promote 128-byte L2 lines instead of 256. A GEMM launched right
 *          after a different kernel function of ours ran 3-10 % slower than right after the same
 *          one (v3 after v11 and v11 after v3 alike; cuBLAS was not affected), so consecutive
 *          GEMMs of a layer share one function: the gate/up and down projections both run v3.
 *          The 128-byte lines were 5-7 % faster in the layer order at 8 experts x 128 tokens
 *          and 1.4-4.8 % slower back to back. */
typedef enum xs_gemm_context {
  XS_GEMM_CONTEXT_ALONE = 0,
  XS_GEMM_CONTEXT_LAYER = 1,
} xs_gemm_context;

/* One GEMM call. Device pointers; all buffers bf16 unless stated. */
typedef struct xs_gemm_args {
  size_t size; /* sizeof(xs_gemm_args) */
  xs_gemm_layout layout;
  xs_gemm_version version;
  int M;       /* DENSE/CONTIG: rows of A and C; MASKED: rows per expert */
  int N;       /* rows of B per expert (2I with SILU_MUL) */
  int K;       /* >= 1 */
  int experts; /* grouped: E >= 1; DENSE: ignored */
  const void* A;
  const void* B;
  void* C;                  /* may be NULL with STORE_MAP */
  const int32_t* m_offsets; /* CONTIG: device, E + 1 entries */
  const int32_t* m_counts;  /* MASKED: device, E entries, each in [0, M] */
  /* MASKED, optional: the counts on the host (exact, or what a captured graph expects), read by
   * AUTO's choice only (the kernel reads m_counts). With them AUTO weighs the tiles with work;
   * without them it assumes every expert holds M rows, which for skewed counts can pick a
   * slower tile (docs/gemm.md, "AUTO's cost model"). E entries, each in [0, M]. Added in session 9:
   * a caller whose args.size ends before it is read as NULL. */
  const int32_t* m_counts_host;
  /* Optional (session 21; a caller whose args.size ends before it has no waits): input
   * readiness, above. ready.flags NULL: none. */
  xs_gemm_ready ready;
  /* Optional (session 21; a caller whose args.size ends before it gets ALONE): what runs around
   * this GEMM, above. */
  xs_gemm_context context;
  /* Optional (session 22; a caller whose args.size ends before them gets 0, NULL, 0): split-K
   * (v14; v7 from session 25). split_k: 0 the library's choice (AUTO: xs_gemm_tiling.splits
   * says; v14 and v7: their plans), 1 no split, S >= 2 that many slices of K per tile (v7 and v14
   * only: AUTO with S >= 2 runs v7 at DENSE M <= 32, else v14; at most 16; v14: S x tiles at most
   * the SMs or max_ctas, XS_ERR_INVALID_ARG otherwise; v7: at most one slice per k-block, S is
   * clamped to K / 64 rounded up, and a tile list of at most 1024). workspace: device memory for
   * the partial sums and the per-tile counters, at least xs_gemm_workspace_size() bytes, 256-byte
   * aligned, ZEROED before its first use (each launch leaves its counters zero again); one
   * workspace serves one stream's launches at a time. NULL: the library's own, one per device and
   * stream, allocated (and zeroed) at the first split launch on that stream that is not being
   * captured in a graph (a capture with none yet runs its S as clusters where they fit, else the
   * most S <= 8 that does, else runs without a split; v7: the most even S <= its plan's whose
   * clusters of S / 2 fit, an explicit S only if even and fitting). A graph captured with a
   * workspace uses it when replayed: do not replay it concurrently with other split launches on the
   * same workspace. Splits of 128x128 / 128x64 tiles with S <= 4 whose clusters fit at once need no
   * workspace (the S CTAs of a tile exchange their sums in distributed shared memory;
   * xs_gemm_workspace_size says 0). */
  int split_k;
  void* workspace;
  size_t workspace_bytes;
} xs_gemm_args;
#define XS_GEMM_ARGS_INITIALIZER                                                                   \
  {                                                                                                \
    sizeof(xs_gemm_args), XS_GEMM_DENSE, XS_GEMM_AUTO, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL,   \
        NULL, {NULL, 0, 0, 0u, 0u, 0, 0ull, NULL}, XS_GEMM_CONTEXT_ALONE, 0, NULL, 0               \
  }

/* The tiling a call will use (after AUTO is resolved). */
typedef struct xs_gemm_tiling {
  xs_gemm_version version;
  int tile_m, tile_n; /* output tile, rows x columns */
  int groups;         /* E for MASKED, else 1 */
  int m_blocks;       /* per group */
  int n_blocks;
  int count; /* groups * m_blocks * n_blocks: the size of flag and map arrays */
  int splits; /* slices of K per tile (v14, v7 DENSE), else 1 */
} xs_gemm_tiling;

/* Fill *out with the tiling `args` (and epilogue activation `act`) would run with. Checks the
 * arguments like xs_gemm_run (device pointers are not dereferenced). XS_ERR_UNSUPPORTED without
 * CUDA, or when args->version cannot run this problem. Needs no GPU for v1; AUTO and v2-v10 query
 * the device (XS_ERR_NO_DEVICE without one). */
xs_result xs_gemm_tiles(xs_gemm_tiling* out, const xs_gemm_args* args, xs_gemm_act act);

/* Enqueue C = A * B^T (with the epilogue and tile order given) on `stream` (a cudaStream_t,
 * NULL: the default stream). Returns at once; errors from the launch itself are reported, errors
 * during execution surface at the next synchronizing call. M == 0 (or all-empty experts) does
 * nothing. The call may be captured in a CUDA graph (MASKED reads its counts on the device).
 * XS_ERR_UNSUPPORTED where xs_gemm_tiles says so, and for v8 with ORDER_LIST. Not thread-safe
 * against concurrent first calls (it caches device attributes). */
xs_result xs_gemm_run(const xs_gemm_args* args, xs_gemm_epilogue epi, xs_gemm_schedule sched,
                      void* stream);

/* The workspace bytes a call with these args (and activation `act`) needs in
 * xs_gemm_args.workspace: 0 when it does not split K, or splits it in clusters (v14 on 128x128 /
 * 128x64 tiles, S <= 4, where the clusters fit at once). Checks the arguments like
 * xs_gemm_tiles. A v7 split larger than the library's own workspace (16 KiB + 128 KiB per SM)
 * needs the caller's. */
xs_result xs_gemm_workspace_size(size_t* bytes, const xs_gemm_args* args, xs_gemm_act act);

/* Load every GEMM kernel into the current device's context now. CUDA loads kernels lazily (at
 * a kernel's first launch, unless CUDA_MODULE_LOADING=EAGER), and a load may wait until the
 * kernels already running have finished. A GEMM that waits on flags (args.ready) while the
 * GEMM that raises them has never been launched in this process would then hold its SMs until
 * its timeout, and the other GEMM would run only after it: call this once before the first
 * launch of such a pair (the same holds for any kernel of your own that raises the flags:
 * cudaFuncGetAttributes loads it). XS_ERR_NO_DEVICE / XS_ERR_CUDA; XS_ERR_UNSUPPORTED without
 * CUDA. Measured (session 21): without it, a GEMM waiting on a not-yet-loaded kernel's flags on
 * another stream timed out every time. */
xs_result xs_gemm_preload(void);

/* Host-side helper for the contiguous layout: offsets[0] = 0 and offsets[e+1] = offsets[e] +
 * counts[e] rounded up to XS_GEMM_GROUP_ALIGN (an empty expert takes no rows). `offsets` has
 * experts + 1 entries. XS_ERR_INVALID_ARG on NULL, experts < 1, a negative count or int
 * overflow. Pure C: works in any build. */
xs_result xs_gemm_contig_layout(int32_t* offsets, const int32_t* counts, int experts);

#ifdef __cplusplus
}
#endif
#endif /* XSTAGE_GEMM_H */
