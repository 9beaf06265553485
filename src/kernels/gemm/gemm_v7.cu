/* gemm_v7.cu — the Hopper GEMM for few rows per expert: v7, token-major ("swap AB") tiles of
 * BT tokens x 128 weight rows (BT = 16, 32 or 64), two independent tile streams per CTA; and v9,
 * the same kernel with BT = 128 for any row count.
 *
 * Why v9 (README.md, "Tuning round 7"): v3's two consumer warpgroups share one 128 x 256 tile
 * and store their halves at the same time, so the tensor cores idle during every epilogue. Here
 * each consumer warpgroup owns a whole 128 x 128 tile of its own stream (ring, barriers,
 * producer thread), so one stream's epilogue runs under the other's main loop (a ping-pong
 * without a hand-off: the two streams drift apart by themselves). BT = 128 needs the register
 * split of v2-v6 (setmaxnreg 40 / 232: 2 x 64 fp32 accumulators per consumer thread).
 *
 * Why (src/kernels/gemm/README.md, "Tuning round 5"): at 16 tokens per expert a grouped GEMM is
 * a weight stream (every byte of B is used by 16 rows only, 16 FLOP per byte read), and v2-v6
 * run it on 128-row tiles: 112 of every 128 rows multiplied are padding, the tensor cores do 8x
 * the useful work and the shared memory carries 8x the operand traffic, while the SM count is
 * set by 128 x BN tiles (E=8 DeepSeek-V3 gate/up: 128 tiles on 132 SMs). v7 puts the weights on
 * the wgmma M side (two m64 halves = 128 B rows per tile) and the tokens on its N side
 * (wgmma m64nBTk16, N = BT = 16/32/64), so a tile multiplies only BT token rows, and a CTA runs
 * two tiles at once (one per consumer warpgroup, each with its own ring): 2 x 132 streams of
 * 128-row weight slabs.
 *
 * Per CTA (persistent, one per SM, 384 threads = 3 warpgroups):
 *   warpgroup 0  producers: warp s (s = 0, 1; one elected lane issues; v9: lane 0 alone)
 *                feeds stream s: per 64-wide k-block a
 *                TMA load of the two 64-row B halves (contiguous rows, or the gate rows and the
 *                matching up rows with SiLU*mul) and of the BT x 64 token tile, into slot `i` of
 *                stream s's ring, after waiting for empty[s][i] and arming full[s][i] with the
 *                slot's bytes.
 *   warpgroups 1, 2  consumers: warpgroup 1 + s runs stream s. Per k-block 8 wgmma
 *                m64nBTk16 (4 k16 steps x 2 B halves) into d0 / d1 (BT / 2 fp32 each), one
 *                group in flight; the epilogue goes straight from registers to global memory:
 *                a shuffle with the neighbour lane pairs two adjacent output columns of one
 *                token (4-byte stores; silu(gate) * up first with SiLU*mul: gate and up of an
 *                output sit in d0 and d1 of the same thread), through C or the tile's map entry,
 *                with row (token count) and column guards; then the optional tile flag.
 * Schedule: stream s of CTA b takes positions s * ctas + b, + 2 ctas, ... (sched.h,
 * xsg_stream_first); producer s and consumer s walk the same positions, so they agree on the
 * tiles with work without talking. MASKED without a caller's list walks the compacted schedule
 * (the per-expert prefix of tiles with work, built in shared memory at entry, as v2-v6);
 * CONTIG copies the expert offsets into the same shared table (<= 256 experts) so the per-tile
 * expert lookup does not go to global memory.
 * Barriers (one parity bit each, flipped when a ring's slot index wraps):
 *   full[s][i]   count 1: the producer's arrive.expect_tx + the TMA bytes of the slot landing.
 *   empty[s][i]  count 4 (lane 0 of each warp of consumer s): the wgmmas reading the slot retired.
 *   named 1 + s  the 128 threads of consumer s (a tile's stores precede its flag).
 */
#include <cuda_bf16.h>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/hopper_common.cuh"
#include "xstage/ptx.cuh"

namespace {

/* ---- compile-time configuration (one block per instantiation) ---- */
template <int BT_, int BW_> struct v7_cfg {
  static constexpr int BT = BT_; /* tile rows (tokens) = the wgmma N */
  /* B rows per tile: 128 = two wgmma M = 64 halves (gate | up with SiLU*mul), or 64 = one (with
   * SiLU*mul 32 gate rows and the 32 matching up rows, interleaved by 8: the narrow tile, below) */
  static constexpr int BW = BW_;
  static constexpr int BK = 64;     /* one 128-byte swizzle atom of bf16 */
  static constexpr int STREAMS = 2; /* consumer warpgroups, each an independent tile stream */
  static constexpr int THREADS = 128 * (1 + STREAMS);
  static constexpr int B_BYTES = BW * BK * 2; /* 16 KB: two 8 KB halves; narrow: 8 KB */
  static constexpr int A_BYTES = BT * BK * 2; /* the token tile: 2, 4, 8 or 16 KB */
  static constexpr int SLOT = B_BYTES + A_BYTES;
  static constexpr int TABLE_BYTES = 4 * (XSG_MASKED_MAX_EXPERTS + 1);
  static constexpr int MAX_STAGES = 12;
  /* NOTE: as many ring stages per stream as fit: BT 16 -> 6 x 18 KB, 32 -> 5 x 20 KB, 64 -> 4 x
   * 24 KB, 128 (v9) -> 3 x 32 KB, per stream. At 16 tokens a stream's k-block is compute-light (8
   * wgmma m64n16k16), so the ring is there to keep bytes in flight: 5 loading slots x 16 KB of B
   * per stream, 2 streams per SM, ~21 MB over 132 SMs against the ~7 MB that 4.4 TB/s x ~1.5 us of
   * loaded-DRAM latency asks for. */
  static constexpr int FIXED =
      1024 /* alignment slack */ + TABLE_BYTES + 2 * STREAMS * MAX_STAGES * 8 + 32;
  static constexpr int STAGES_FIT = (227 * 1024 - FIXED) / (STREAMS * SLOT);
  static constexpr int STAGES = STAGES_FIT < MAX_STAGES ? STAGES_FIT : MAX_STAGES;
  /* full, empty, table_ready, split_ready; then 16 bytes for the K split: a "last slice" word
   * per stream (through the workspace) and the leader's count (in clusters) */
  static constexpr int BAR_BYTES = 2 * STREAMS * STAGES * 8 + 32;
  /* k-blocks a stream loads before its schedule table exists (the speculative start, below):
   * all but one of its ring's slots (session 16; 2 before) */
  static constexpr int SPEC = STAGES - 1;
  /* the split tile (sched.h xsg_v7_split_position) needs at least this many k-blocks (2 x the
   * speculative start's k-blocks before session 16; the split tile is never a stream's first,
   * whose k-blocks the speculative start loads) */
  static constexpr int SPLIT_MIN_KB = 4;
  static constexpr int SMEM = 1024 + STREAMS * STAGES * SLOT + BAR_BYTES + TABLE_BYTES;
  /* NOTE: BT = 128 (v9) holds 2 x 64 fp32 accumulators per consumer thread, more than the
   * 168 registers a thread of a 384-thread CTA may start with, so the warpgroups re-divide the
   * register file as v2-v6 do: producers down to 40, consumers up to 232. BT = 256 would need
   * 256 accumulators per thread (over setmaxnreg's 232 for two consumer warpgroups): not
   * built. */
  static constexpr int WIDE = BT > 64;
  static constexpr int PRODUCER_REGS = 40;
  static constexpr int CONSUMER_REGS = 232;
  static_assert(BT == 16 || BT == 32 || BT == 64 || BT == 128,
                "token tiles of 16, 32, 64 (v7) or 128 (v9) rows");
  static_assert(BW == 128 || (BW == 64 && BT <= 64), "tiles of 128 B rows, or 64 (v7 only)");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * STREAMS <=
                    (65536 / THREADS & ~7) * THREADS,
                "setmaxnreg: more registers than the CTA's launch allocation (gemm_v2.cu)");
  static_assert(STAGES >= 3, "at least two slots loading while one is read");
  /* the split tile's partial sums (BT x BW fp32) go through stream 1's ring once it is idle */
  static_assert(STAGES * SLOT >= 4 * BT * BW, "a ring holds a tile's fp32 partial sums");
  static_assert(SMEM <= 227 * 1024, "shared memory over the 227 KB a Hopper CTA may use");
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 2048 == 0 && SLOT % 1024 == 0,
                "swizzle atoms (8 rows x 128 bytes) stay 1024-byte aligned");
  static_assert(XS_GEMM_GROUP_ALIGN % BT == 0, "a CONTIG tile never straddles two experts");
};

/* Schedule position k -> the tile's coordinates and index: the MASKED compacted schedule
 * (coordinates first, no division), the caller's list or the raster order. */
__device__ __forceinline__ xsg_tile v7_tile_at(const xsg_params& p, const int32_t* table, int k,
                                               int* index) {
  if (p.compact) {
    const xsg_tile t = xsg_masked_coords(&p.grid, table, p.experts, k);
    *index = xsg_tile_index(&p.grid, t.g, t.mb, t.nb);
    return t;
  }
  if (p.grid.groups == 1 && p.grid.m_blocks == 1 && !p.order_list) {
    /* one row of tiles (a decode step): every raster order is the identity, no divisions (the
     * producer's first TMA ~0.3 us earlier at 1 x 1280 x 8192, session 25 calls F-G) */
    *index = k;
    return xsg_tile{0, 0, k};
  }
  *index = xsg_position_tile(&p, k);
  return xsg_tile_decode(&p.grid, *index);
}

/* Unit k of a K split of S slices (xsg_params.ksplit): its tile position *kt and slice. Through
 * the workspace, slice k / T of tile position k % T (T = positions / S); in clusters of C CTAs
 * (grid = T x C, one unit per stream: k = s x grid + b for stream s of CTA b), tile position
 * b / C and slice 2 (b % C) + s, so a cluster holds one tile's S = 2 C slices. */
__device__ __forceinline__ void v7_unit(int k, int positions, int S, int C, int* kt, int* slice) {
  if (C) {
    const int ctas = positions / 2, b = k % ctas;
    *kt = b / C, *slice = 2 * (b % C) + k / ctas;
  } else {
    const int T = positions / S;
    *kt = k % T, *slice = k / T;
  }
}

/* The K split's sum: d0 / d1 = slices 0 .. S - 1 added in order from zero (the same bits
 * whichever slice's unit runs it), value i of slice r being load(r, i) (i < BT / 2: d0[i], then
 * d1[i - BT / 2]). A slice is V values per thread; the loads of U slices (C values each at a time,
 * U x C = 64 registers up to 16 values a slice, else 32; 128 spilled) are in flight at once: one
 * round trip per U slices (session 25: through L2 1.0-1.1 us less than one per slice at S = 13). */
template <int BT, int BW, class Load>
__device__ __forceinline__ void v7_sum_slices(float (&d0)[BT / 2], float (&d1)[BT / 2], int S,
                                              Load load) {
  constexpr int V = BT * BW / 128, C = V < 32 ? V : 32, U = (V <= 16 ? 64 : 32) / C;
#pragma unroll
  for (int i = 0; i < BT / 2; i++)
    d0[i] = d1[i] = 0.0f;
  for (int r0 = 0; r0 < S; r0 += U) {
#pragma unroll
    for (int c = 0; c < V; c += C) {
      float x[U][C];
#pragma unroll
      for (int u = 0; u < U; u++)
        if (r0 + u < S) {
#pragma unroll
          for (int j = 0; j < C; j++)
            x[u][j] = load(r0 + u, c + j);
        }
#pragma unroll
      for (int u = 0; u < U; u++)
        if (r0 + u < S) {
#pragma unroll
          for (int j = 0; j < C; j++)
            (c + j < BT / 2 ? d0[c + j] : d1[c + j - BT / 2]) += x[u][j];
        }
    }
  }
}

/* Store one m64 x BT accumulator block of a consumer warpgroup: v[4i + 2h + j] holds weight row
 * (= output column) col_base + 16 warp + lane/4 + 8h and token (= output row) 8i + 2(lane%4) + j.
 * Lanes g = lane/4 and g ^ 1 (lane ^ 4) swap one value each so that every thread holds two
 * adjacent columns of one token: even g the token 8i + 2q, odd g the token 8i + 2q + 1. Element
 * (r, c) goes to base[r * ld + c] for r < rows, c < cols (c is even and cols % 8 == 0, so the
 * pair is in or out as a whole; base and ld keep the 4-byte store aligned). NOTE: the shuffle
 * runs in all lanes before the guard. */
template <int BT>
__device__ __forceinline__ void store_tokens(const float (&v)[BT / 2], uint16_t* base, int64_t ld,
                                             int col_base, int rows, int cols, int warp, int lane) {
  const int g = lane >> 2, q = lane & 3, odd = g & 1;
  const int col = col_base + 16 * warp + (g & ~1);
#pragma unroll
  for (int i = 0; i < BT / 8; i++) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const float v0 = v[4 * i + 2 * h], v1 = v[4 * i + 2 * h + 1];
      const float recv = __shfl_xor_sync(0xffffffffu, odd ? v0 : v1, 4);
      const int r = 8 * i + 2 * q + odd, c = col + 8 * h;
      if (r < rows && c < cols)
        *(uint32_t*)(base + (int64_t)r * ld + c) =
            xsg_pack_bf16x2(odd ? recv : v0, odd ? v1 : recv);
    }
  }
}

/* What a producer loads for one tile: B rows of the two halves and A's rows, the batches. */
struct v7_load {
  int b_row0, b_row1, b_batch, row0, a_batch;
  uint32_t bytes; /* the slot's transaction bytes */
};

template <class cfg>
__device__ __forceinline__ v7_load v7_load_of(const xsg_params& p, int silu, int expert, int mb,
                                              int nb) {
  v7_load l;
  l.row0 = mb * p.tile_m;
  l.a_batch = p.layout == XS_GEMM_GROUPED_MASKED ? expert : 0;
  l.b_batch = p.layout == XS_GEMM_DENSE ? 0 : expert;
  /* B rows of the two halves: [128 nb, +64) and the next 64, or with SiLU the gate rows [64 nb,
   * +64) and the matching up rows (I = N/2 further on). */
  l.b_row0 = silu ? nb * (cfg::BW / 2) : nb * cfg::BW;
  l.b_row1 = silu ? l.b_row0 + p.N / 2 : l.b_row0 + cfg::BW / 2;
  /* NOTE: the full box bytes (TMA counts the zero-filled out-of-bounds part of a box). A second
   * half wholly past N (no SiLU) is not loaded: its stale rows only feed output columns >= N,
   * which are never stored. */
  l.bytes = cfg::A_BYTES + (cfg::BW == 64 || l.b_row1 < p.N ? cfg::B_BYTES : cfg::B_BYTES / 2);
  return l;
}

/* TRACE (probe only, xsg_probe.v7_mode): %globaltimer stamps per CTA into p.trace
 * (gemm_internal.h, XSG_V7_TRACE). */
/* The narrow SiLU*mul tile (64 B rows = 32 gate rows interleaved with their 32 up rows by 8:
 * smem row 16 j + r is gate row 8 j + r and row 16 j + 8 + r its up row, r < 8): v[4i + j] (h = 0)
 * is the gate and v[4i + 2 + j] (h = 1) the up value of output column col_base + 8 warp + lane/4
 * and token 8i + 2(lane%4) + j. silu(gate) * up, then the neighbour lane pair (lane ^ 4) swaps
 * one value each so that every thread stores two adjacent columns of one token (4 bytes), as
 * store_tokens does. */
template <int BT>
__device__ __forceinline__ void store_tokens_silu32(const float (&v)[BT / 2], uint16_t* base,
                                                    int64_t ld, int rows, int cols, int warp,
                                                    int lane) {
  const int g = lane >> 2, q = lane & 3, odd = g & 1;
  const int col = 8 * warp + (g & ~1);
  static_assert(BT % 16 == 0, "two groups share one xsg_silu_mul4");
  float a[BT / 4]; /* silu(gate) * up of group i: a[2i], a[2i + 1] */
#pragma unroll
  for (int i = 0; i < BT / 8; i += 2) {
    const float4 o =
        xsg_silu_mul4(make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 4], v[4 * i + 5]),
                      make_float4(v[4 * i + 2], v[4 * i + 3], v[4 * i + 6], v[4 * i + 7]));
    a[2 * i] = o.x;
    a[2 * i + 1] = o.y;
    a[2 * i + 2] = o.z;
    a[2 * i + 3] = o.w;
  }
#pragma unroll
  for (int i = 0; i < BT / 8; i++) {
    const float a0 = a[2 * i], a1 = a[2 * i + 1];
    const float recv = __shfl_xor_sync(0xffffffffu, odd ? a0 : a1, 4);
    const int r = 8 * i + 2 * q + odd;
    if (r < rows && col < cols)
      *(uint32_t*)(base + (int64_t)r * ld + col) =
          xsg_pack_bf16x2(odd ? recv : a0, odd ? a1 : recv);
  }
}

template <int BT, int BW, bool TRACE, int EPI>
__global__ void __launch_bounds__(v7_cfg<BT, BW>::THREADS, 1)
    gemm_kernel_v7(const __grid_constant__ CUtensorMap map_a,
                   const __grid_constant__ CUtensorMap map_b,
                   const __grid_constant__ xsg_params p) {
  using cfg = v7_cfg<BT, BW>;
  extern __shared__ uint8_t smem_raw[];
  /* NOTE: 128B-swizzled TMA boxes and wgmma descriptors need 1024-byte aligned tiles. */
  uint8_t* smem = xsg_smem_align1024(smem_raw);
  /* STREAMS rings of STAGES slots: [B half 0 | B half 1 | token tile] */
  uint64_t* full = (uint64_t*)(smem + cfg::STREAMS * cfg::STAGES * cfg::SLOT); /* [s][i] */
  uint64_t* empty = full + cfg::STREAMS * cfg::STAGES;
  uint64_t* table_ready = empty + cfg::STREAMS * cfg::STAGES; /* count 32: warp 3 */
  uint64_t* split_ready = table_ready + 1; /* count 128: consumer 1's partial sums are written */
  int32_t* ksplit_last = (int32_t*)(split_ready + 1); /* [s]: K split, stream s's unit came last */
  /* the K split in clusters: the leader's (rank 0) count of the tile's units whose sums are in
   * their rings (count S) */
  uint64_t* ksplit_bar = (uint64_t*)(ksplit_last + 2);
  int32_t* table = ksplit_last + 4;

  const int wg = threadIdx.x / 128;
  const int k_blocks = xsg_cdiv(p.K, cfg::BK);
  /* the split of K (xsg_params.ksplit; v7 only, DENSE): S slices per tile position; in clusters
   * of C = S / 2 CTAs (xsg_params.ksplit_cluster) or through the workspace */
  const int S = cfg::BT < 128 ? p.ksplit : 1;
  const int C = S > 1 ? p.ksplit_cluster : 0;
  /* EPI (gemm_internal.h XSG_EPI_*): the epilogue fixed at compile time, or read from p.epi. */
  const int silu = EPI == XSG_EPI_ANY ? p.epi.act == XS_GEMM_ACT_SILU_MUL : xsg_epi_silu(EPI);
  /* CONTIG: the expert offsets in shared memory (binary search per tile, both roles). */
  const int contig_table =
      p.layout == XS_GEMM_GROUPED_CONTIG && p.experts <= XSG_MASKED_MAX_EXPERTS;
  unsigned long long* const trace = TRACE ? p.trace + (size_t)blockIdx.x * XSG_V7_TRACE : nullptr;
  if (TRACE && threadIdx.x == 0) {
    trace[0] = xs_globaltimer();
    trace[19] = xs_clock64();
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    trace[18] = smid;
  }

  if (threadIdx.x == 0) {
    xs_tma_prefetch_map(&map_a); /* first: the fetch overlaps the set-up below */
    xs_tma_prefetch_map(&map_b);
    for (int i = 0; i < cfg::STREAMS * cfg::STAGES; i++) {
      xs_mbar_init(&full[i], 1);
      xs_mbar_init(&empty[i], 4);
    }
    xs_mbar_init(table_ready, 32);
    xs_mbar_init(split_ready, 128);
    if (C) xs_mbar_init(ksplit_bar, (uint32_t)S);
    xs_fence_mbar_init();
    if (TRACE) trace[20] = xs_clock64();
  }
  if (threadIdx.x == 96) xsg_warm_params(p); /* warp 3: idle in the producer warpgroup */
  xsg_griddep_enter();                       /* PDL: the previous kernel is done from here on */
  __syncthreads();                           /* the barriers are initialized */
  /* the K split in clusters: every CTA's barriers initialized before any remote arrival (each
   * thread waits before its first remote access, or at the end) */
  bool cluster_waited = false;
  if (C) xs_cluster_arrive();
  if (TRACE && threadIdx.x == 0) trace[1] = xs_clock64();
  const int32_t* offsets = contig_table ? table : p.m_offsets;
  const int step = cfg::STREAMS * gridDim.x;
  /* NOTE (session 6): the schedule table (MASKED compacted prefix, CONTIG offsets) is built by
   * warp 3 alone and announced on table_ready, so the producers start their speculative loads
   * (xsg_spec_guess) without waiting for it. */

  if (wg == 0) {
    /* ================= producers: warp s feeds stream s ================= */
    if (cfg::WIDE) xs_setmaxnreg_dec<cfg::PRODUCER_REGS>();
    const int st = threadIdx.x / 32;
    if (st == 3) {
      xsg_build_table_warp(table, table_ready, p, contig_table, threadIdx.x % 32);
      if (TRACE && threadIdx.x == 96) trace[21] = xs_clock64();
    }
    /* warp st walks stream st's loop, one elected lane issues: the loop's values are
     * warp-uniform, so the compiler keeps them in uniform registers, which the TMA instructions
     * take (session 27). v9 (WIDE, 40 producer registers) keeps one thread per stream: its
     * traced form spilled 4 bytes with the whole warp. */
    if (st < cfg::STREAMS && (!cfg::WIDE || threadIdx.x % 32 == 0)) {
      const bool leader = cfg::WIDE || xs_elect_one();
      uint8_t* ring = smem + st * cfg::STAGES * cfg::SLOT;
      uint64_t* my_full = full + st * cfg::STAGES;
      uint64_t* my_empty = empty + st * cfg::STAGES;
      int s = 0;
      uint32_t phase = 0;
      bool first = true;
      if (TRACE && leader) trace[22 + st] = xs_clock64();
      /* Loads k-blocks [kb0, kb1) of a tile into the ring's next slots. */
      auto issue = [&](const v7_load& l, int kb0, int kb1) {
        for (int kb = kb0; kb < kb1; kb++) {
          xsg_wait_timed(&my_empty[s], phase ^ 1); /* fresh barriers pass parity 1 */
          uint8_t* slot = ring + s * cfg::SLOT;
          if (leader) {
            xs_mbar_arrive_expect_tx(&my_full[s], l.bytes);
            if (TRACE && first) trace[26 + st] = xs_clock64();
            /* L2 cache policies: xsg_params.l2_hint (the library's choice: sched.h xsg_l2_choice).
             * NOTE: v9 (BT = 128) loads without a policy: its producer spilled 4-8 bytes with the
             * policy branches (and the library gives it none). */
            const int kind_a = cfg::BT < 128 ? p.l2_hint & 3 : 0,
                      kind_b = cfg::BT < 128 ? p.l2_hint >> 2 : 0;
            if (BW == 64 && silu) { /* the 5-D map: {k, 8 rows, gate | up, 8-row group, expert} */
              xs_tma_load_5d_kind(slot, &map_b, &my_full[s], kb * cfg::BK, 0, 0, l.b_row0 / 8,
                                  l.b_batch, kind_b);
            } else {
              xs_tma_load_3d_kind(slot, &map_b, &my_full[s], kb * cfg::BK, l.b_row0, l.b_batch,
                                  kind_b);
            }
            if (BW == 128 && l.b_row1 < p.N)
              xs_tma_load_3d_kind(slot + cfg::B_BYTES / 2, &map_b, &my_full[s], kb * cfg::BK,
                                  l.b_row1, l.b_batch, kind_b);
            xs_tma_load_3d_kind(slot + cfg::B_BYTES, &map_a, &my_full[s], kb * cfg::BK, l.row0,
                                l.a_batch, kind_a);
            if (TRACE && first) trace[2 + st] = xs_clock64();
          }
          first = false;
          if (++s == cfg::STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
      };
      const int k0 = xsg_stream_first(blockIdx.x, st, gridDim.x);
      int g_guess = 0, nb_guess = 0;
      /* the speculative start (hopper_common.cuh xsg_spec_guess) */
      const int spec = xsg_spec_guess(p, k0, k_blocks, cfg::SPEC, &g_guess, &nb_guess);
      if (spec) issue(v7_load_of<cfg>(p, silu, g_guess, 0, nb_guess), 0, spec);
      xsg_wait_timed(table_ready, 0);
      /* Schedule length: the caller's list, every tile, or the masked tiles with work. */
      const int positions = p.compact ? table[p.experts] : p.positions;
      const int split_k = xsg_v7_split_position(blockIdx.x, gridDim.x, positions, k_blocks,
                                                cfg::SPLIT_MIN_KB, p.split);
      /* Loads k-blocks [kb_lo, kb_hi) of the tile at position k, if it has work. */
      auto load_tile = [&](int k, int kb_lo, int kb_hi) {
        int tile_index;
        const xsg_tile t = v7_tile_at(p, table, k, &tile_index);
        if (TRACE && leader && k == k0) trace[24 + st] = xs_clock64();
        int row0, row_end, expert;
        if (p.compact) /* every compacted position has work: no count to read (hopper_common) */
          row0 = t.mb * p.tile_m, expert = t.g;
        else if (!xsg_tile_rows_at(p, offsets, t, &row0, &row_end, &expert))
          return;
        /* the guessed tile: its first k-blocks are in the ring already (kb_lo is 0 there) */
        const int kb0 =
            k == k0 && spec && t.g == g_guess && t.mb == 0 && t.nb == nb_guess ? spec : kb_lo;
        issue(v7_load_of<cfg>(p, silu, expert, t.mb, t.nb), kb0, kb_hi);
      };
      /* NOTE: the consumer's items below, written separately: one item helper shared by both
       * loops left v9's traced producer (40 registers) with a 4-byte spill (session 8). */
      for (int k = k0; k < positions; k += step) {
        if (S > 1) { /* the K split: unit k's tile position and slice (v7_unit) */
          int kt, slice, lo, hi;
          v7_unit(k, positions, S, C, &kt, &slice);
          xsg_splitk_range(k_blocks, S, slice, &lo, &hi);
          load_tile(kt, lo, hi);
        } else { /* the split tile: stream 0's first half */
          load_tile(k, 0, k == split_k ? k_blocks / 2 : k_blocks);
        }
      }
      if (st == 1 && split_k >= 0) load_tile(split_k, k_blocks / 2, k_blocks); /* the rest */
      xsg_drain_ring(my_empty, cfg::STAGES, s, phase); /* bounded: a stuck consumer traps */
    }
  } else {
    /* ================= consumers: warpgroup 1 + s runs stream s ================= */
    if (cfg::WIDE) xs_setmaxnreg_inc<cfg::CONSUMER_REGS>();
    const int st = wg - 1;
    const int tid = threadIdx.x - 128 * wg; /* 0..127 in this warpgroup */
    const int warp = tid / 32, lane = tid % 32;
    const uint8_t* ring = smem + st * cfg::STAGES * cfg::SLOT;
    uint64_t* my_full = full + st * cfg::STAGES;
    uint64_t* my_empty = empty + st * cfg::STAGES;
    int s = 0;
    uint32_t phase = 0;
    float d0[BT / 2], d1[BT / 2]; /* B half 0 (gate) and half 1 (up) x BT tokens */
#pragma unroll
    for (int i = 0; i < BT / 2; i++)
      d0[i] = d1[i] = 0.0f;

    unsigned long long tr_tiles = 0, tr_kb = 0, tr_main = 0, tr_t0 = 0, tr_t1 = 0;
    if (TRACE && tid == 0) trace[28 + st] = xs_clock64();
    const int k0 = xsg_stream_first(blockIdx.x, st, gridDim.x);
    int g_guess = 0, nb_guess = 0;
    const int spec = xsg_spec_guess(p, k0, k_blocks, cfg::SPEC, &g_guess, &nb_guess);
    xs_mbar_wait(table_ready, 0);
    s = xsg_spec_drain(p, table, k0, g_guess, nb_guess, spec, my_full, my_empty, lane);
    const int positions = p.compact ? table[p.experts] : p.positions;
    const int split_k = xsg_v7_split_position(blockIdx.x, gridDim.x, positions, k_blocks,
                                              cfg::SPLIT_MIN_KB, p.split);
    /* The split tile's partial sums, stream 1 -> stream 0: value i of thread tid at
     * [i * 128 + tid] (conflict-free), in stream 1's ring, idle once its last tile is done. */
    float* const partial = (float*)(smem + cfg::STAGES * cfg::SLOT);
    /* The stream's positions, then (stream 1) its half of the split tile. NOTE: one loop, not a
     * second call site for the extra tile: that made ptxas serialize the wgmmas (C7515). */
    const int own = k0 < positions ? (positions - 1 - k0) / step + 1 : 0;
    const int items = own + (st == 1 && split_k >= 0);
    for (int j = 0; j < items; j++) {
      const int k = j < own ? k0 + j * step : split_k;
      /* part 0 the whole tile; 1 stream 0's half of the split tile (it adds stream 1's sums,
       * then stores); 2 stream 1's half (it writes its sums for stream 0 and stores nothing) */
      const int part = k != split_k ? 0 : st == 0 ? 1 : 2;
      int kb_lo = part == 2 ? k_blocks / 2 : 0, kb_hi = part == 1 ? k_blocks / 2 : k_blocks;
      int kt = k, slice = 0; /* the K split: unit k's tile position and slice (v7_unit) */
      if (S > 1) {
        v7_unit(k, positions, S, C, &kt, &slice);
        xsg_splitk_range(k_blocks, S, slice, &kb_lo, &kb_hi);
      }
      int tile_index;
      const xsg_tile t = v7_tile_at(p, table, kt, &tile_index);
      int row0, row_end, expert;
      if (p.compact) /* no branch on the count: its load passes under the main loop */
        row0 = t.mb * p.tile_m, expert = t.g, row_end = xsg_masked_rows(p, expert);
      else if (!xsg_tile_rows_at(p, offsets, t, &row0, &row_end, &expert))
        continue;

      /* ---- main loop: one wgmma group per k-block, one group kept in flight ---- */
      int prev_s = 0;
      for (int kb = kb_lo; kb < kb_hi; kb++) {
        xs_mbar_wait(&my_full[s], phase);
        if (TRACE && kb == kb_lo && tid == 0) {
          tr_t0 = xs_clock64();
          if (!tr_tiles) trace[4 + st] = tr_t0;
        }
        const uint8_t* slot = ring + s * cfg::SLOT;
        const uint64_t dw0 = xs_smem_desc_sw128(slot);
        const uint64_t dw1 = xs_smem_desc_sw128(slot + cfg::B_BYTES / 2);
        const uint64_t dx = xs_smem_desc_sw128(slot + cfg::B_BYTES);
        xs_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < cfg::BK / 16; kk++) {   /* +32 bytes per k16 step = +2 in the */
          const int acc = (kb > kb_lo || kk > 0) ? 1 : 0; /* descriptor's address field */
          xsg_wgmma_tile<BT>(d0, dw0 + 2 * kk, dx + 2 * kk, acc);
          if (BW == 128) xsg_wgmma_tile<BT>(d1, dw1 + 2 * kk, dx + 2 * kk, acc);
        }
        xs_wgmma_commit();
        /* The previous k-block's group has retired once at most one group is pending: its
         * slot goes back to the producer. */
        xs_wgmma_wait<1>();
        if (kb > kb_lo && lane == 0) xs_mbar_arrive(&my_empty[prev_s]);
        prev_s = s;
        if (++s == cfg::STAGES) {
          s = 0;
          phase ^= 1;
        }
      }
      xs_wgmma_wait<0>();
      xs_wgmma_fence_regs(d0); /* accumulator reads stay after the wait */
      if (BW == 128) xs_wgmma_fence_regs(d1);
      if (lane == 0) xs_mbar_arrive(&my_empty[prev_s]);
      if (TRACE && tid == 0) {
        tr_t1 = xs_clock64();
        if (!tr_tiles) trace[6 + st] = tr_t1;
        tr_tiles++, tr_kb += kb_hi - kb_lo, tr_main += tr_t1 - tr_t0;
      }
      if (part == 2) { /* stream 1: hand the sums over (every slot of its ring is consumed) */
#pragma unroll
        for (int i = 0; i < BT / 2; i++) {
          partial[i * 128 + tid] = d0[i];
          if (BW == 128) partial[(BT / 2 + i) * 128 + tid] = d1[i];
        }
        xs_mbar_arrive(split_ready); /* release: this thread's writes precede it */
        continue;
      }
      if (C) {
        /* The K split in clusters (one unit per stream): this unit's sums into its stream's ring
         * (free now: every slot is consumed); the warpgroup's thread 0 arrives on the leader's
         * count (rank 0; release at cluster scope); the leader's stream 0 (slice 0) waits for all
         * S (bounded), adds the slices in order from their CTAs' rings and runs the epilogue. The
         * other CTAs stay until the leader has read them (the cluster meeting at the end). */
        float* const own = (float*)(smem + st * cfg::STAGES * cfg::SLOT);
#pragma unroll
        for (int i = 0; i < BT / 2; i++) {
          own[i * 128 + tid] = d0[i];
          if (BW == 128) own[(BT / 2 + i) * 128 + tid] = d1[i];
        }
        xs_cluster_wait(); /* (the start's arrival: the leader's count is initialized) */
        cluster_waited = true;
        xs_named_bar_sync(1 + st, 128); /* the warpgroup's sums are written ... */
        if (tid == 0) xs_mbar_arrive_cluster(xs_mapa_u32(ksplit_bar, 0)); /* ... and released */
        if (TRACE && tid == 0) trace[32 + st] = trace[34 + st] = xs_clock64();
        if (slice != 0) continue;
        xsg_wait_timed<true>(ksplit_bar, 0); /* acquire: every slice's sums */
        /* slice r: the ring of stream r % 2 of CTA rank r / 2 */
        v7_sum_slices<BT, BW>(d0, d1, S, [&](int r, int i) {
          return xs_ld_cluster_f32(xs_mapa_u32(smem + (r & 1) * cfg::STAGES * cfg::SLOT, r >> 1) +
                                   4u * (uint32_t)(i * 128 + tid));
        });
      } else if (S > 1) {
        /* The K split: store this unit's sums (value i of thread tid at [i * 128 + tid]), count
         * the tile's slices; the last adds all S in slice order (the same bits whichever slice
         * comes last) and runs the epilogue, the others go on. No wait: nothing needs the units
         * resident at once. */
        float* const sums = p.ksplit_partial + (int64_t)kt * S * (BT * BW);
        float* const mine = sums + (int64_t)slice * (BT * BW);
        /* value i of d0 / d1 belongs to tokens 8 (i / 4) .. + 7: groups past the tile's rows
         * feed output rows that are never stored, so they are not stored here (the sum below
         * reads and adds them anyway, stale: skipping them there too cost 0.6 us, call F) */
        const int groups = xsg_cdiv(row_end - row0, 8);
#pragma unroll
        for (int i = 0; i < BT / 2; i++)
          if (i / 4 < groups) {
            __stcg(&mine[i * 128 + tid], d0[i]);
            if (BW == 128) __stcg(&mine[(BT / 2 + i) * 128 + tid], d1[i]);
          }
        xs_named_bar_sync(1 + st, 128); /* the warpgroup's stores ... */
        if (tid == 0) {
          xs_fence_acq_rel_gpu(); /* ... before its arrival */
          uint32_t* const cnt = p.ksplit_counters + 4 * (int64_t)kt;
          const int last = xs_atom_add_acq_rel_gpu_u32(cnt, 1) == (uint32_t)S - 1;
          if (last) cnt[0] = 0u; /* every slice has arrived: zero for the next launch */
          ksplit_last[st] = last;
        }
        xs_named_bar_sync(1 + st, 128);
        if (TRACE && tid == 0) trace[32 + st] = trace[34 + st] = xs_clock64();
        /* NOTE: no fence here: thread 0's acquire (the other slices' release) and the barrier
         * after it order the other slices' stores before these loads (causality order). */
        if (!ksplit_last[st]) continue;
        /* the sum: this unit's own sums read back like the others' */
        v7_sum_slices<BT, BW>(d0, d1, S, [&](int r, int i) {
          return __ldcg(&sums[(int64_t)r * (BT * BW) + i * 128 + tid]);
        });
      }
      if (part == 1) {                   /* stream 0: add stream 1's sums (bounded wait) */
        xsg_wait_timed(split_ready, 0); /* acquire */
#pragma unroll
        for (int i = 0; i < BT / 2; i++) {
          d0[i] += partial[i * 128 + tid];
          if (BW == 128) d1[i] += partial[(BT / 2 + i) * 128 + tid];
        }
      }

      /* ---- epilogue: registers -> global (C, or the tile's map entry) ---- */
      const int col0 = t.nb * p.tile_n;
      const int rows = row_end - row0, cols = p.n_out - col0;
      uint16_t* base;
      int64_t ld;
      if ((EPI == XSG_EPI_ANY ? (int)p.epi.store : xsg_epi_store(EPI)) == XS_GEMM_STORE_MAP) {
        const xs_gemm_tile_dst dst = p.epi.dst_map[tile_index];
        base = (uint16_t*)dst.base;
        ld = dst.ld;
      } else {
        const int64_t batch_row = p.layout == XS_GEMM_GROUPED_MASKED ? (int64_t)expert * p.M : 0;
        base = p.C + (batch_row + row0) * p.n_out + col0;
        ld = p.n_out;
      }
      if (BW == 64) {
        if (silu)
          store_tokens_silu32<BT>(d0, base, ld, rows, cols, warp, lane);
        else
          store_tokens<BT>(d0, base, ld, 0, rows, cols, warp, lane);
      } else if (silu) {
#pragma unroll
        for (int i = 0; i < BT / 2; i += 4) { /* gate row n of d0 <-> up row n of d1 */
          const float4 o = xsg_silu_mul4(make_float4(d0[i], d0[i + 1], d0[i + 2], d0[i + 3]),
                                         make_float4(d1[i], d1[i + 1], d1[i + 2], d1[i + 3]));
          d0[i] = o.x;
          d0[i + 1] = o.y;
          d0[i + 2] = o.z;
          d0[i + 3] = o.w;
        }
        store_tokens<BT>(d0, base, ld, 0, rows, cols, warp, lane);
      } else {
        store_tokens<BT>(d0, base, ld, 0, rows, cols, warp, lane);
        store_tokens<BT>(d1, base, ld, cfg::BW / 2, rows, cols, warp, lane);
      }
      if (p.epi.tile_flags) /* the tile is this warpgroup's alone (plain stores) */
        xsg_raise_tile_flag(&p.epi.tile_flags[tile_index], 0, tid, 1 + st, 128, tid == 0);
      if (TRACE && tid == 0) trace[10 + st] = trace[34 + st] = xs_clock64();
    }
    if (TRACE && tid == 0) {
      if (st == 0) trace[30] = xs_globaltimer(), trace[31] = xs_clock64();
      trace[8 + st] = tr_t1;
      trace[12 + st] = tr_tiles, trace[14 + st] = tr_kb, trace[16 + st] = tr_main;
    }
  }
  if (C) { /* the K split in clusters: no CTA leaves before its leader has read its sums */
    if (!cluster_waited) xs_cluster_wait();
    xs_cluster_sync();
  }
}

template <int BT, int BW, bool TRACE, int EPI>
static cudaError_t launch_mode(const xsg_params* p, const CUtensorMap* ma, const CUtensorMap* mb,
                               int ctas, cudaStream_t stream) {
  using cfg = v7_cfg<BT, BW>;
  static int attr_done = 0; /* NOTE: raising the dynamic smem limit once per process suffices */
  if (!attr_done) {
    cudaError_t e = cudaFuncSetAttribute(gemm_kernel_v7<BT, BW, TRACE, EPI>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, cfg::SMEM);
    if (e != cudaSuccess) return e;
    attr_done = 1;
  }
  /* the K split in clusters: C CTAs along x (one tile's S = 2 C units); 0: none */
  if (p->ksplit_cluster && ctas % p->ksplit_cluster) return cudaErrorInvalidValue;
  return xsg_launch_cluster(gemm_kernel_v7<BT, BW, TRACE, EPI>, *p, ctas, p->ksplit_cluster,
                            cfg::THREADS, cfg::SMEM, stream, *ma, *mb, *p);
}

/* Clusters of C CTAs of v7 (BT, BW) that fit on the GPU at once. */
template <int BT, int BW> static cudaError_t max_clusters(int C, int* n) {
  using cfg = v7_cfg<BT, BW>;
  auto* k = gemm_kernel_v7<BT, BW, false, XSG_EPI_LOCAL>;
  cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg::SMEM);
  if (e != cudaSuccess) return e;
  return xsg_max_clusters(k, C, cfg::THREADS, cfg::SMEM, n);
}

template <int BT, int BW>
static cudaError_t launch(const xsg_params* p, const CUtensorMap* ma, const CUtensorMap* mb,
                          int ctas, cudaStream_t stream) {
  if (p->trace) /* probe only */
    return launch_mode<BT, BW, true, XSG_EPI_ANY>(p, ma, mb, ctas, stream);
  return xsg_with_epi(xsg_epi_of(p->epi.act, p->epi.store), [&](auto e) {
    return launch_mode<BT, BW, false, e.value>(p, ma, mb, ctas, stream); /* the fixed epilogue */
  });
}

} // namespace

cudaError_t xsg_v7_max_clusters(int tile_m, int bw, int C, int* n) {
  *n = 0;
  if (C < 2 || C > 8) return cudaSuccess;
  if (bw == 64)
    return tile_m == 16   ? max_clusters<16, 64>(C, n)
           : tile_m == 32 ? max_clusters<32, 64>(C, n)
                          : max_clusters<64, 64>(C, n);
  return tile_m == 16   ? max_clusters<16, 128>(C, n)
         : tile_m == 32 ? max_clusters<32, 128>(C, n)
                        : max_clusters<64, 128>(C, n);
}

cudaError_t xsg_launch_v7(const xsg_params* p, const CUtensorMap* map_a, const CUtensorMap* map_b,
                          int ctas, cudaStream_t stream) {
  /* B rows per tile: the output tile's columns, twice that with SiLU*mul */
  const int bw = (p->epi.act == XS_GEMM_ACT_SILU_MUL ? 2 : 1) * p->tile_n;
  if (bw == 64) {
    if (p->tile_m == 16) return launch<16, 64>(p, map_a, map_b, ctas, stream);
    if (p->tile_m == 32) return launch<32, 64>(p, map_a, map_b, ctas, stream);
    if (p->tile_m == 64) return launch<64, 64>(p, map_a, map_b, ctas, stream);
    return cudaErrorInvalidValue;
  }
  if (bw != 128) return cudaErrorInvalidValue;
  if (p->tile_m == 16) return launch<16, 128>(p, map_a, map_b, ctas, stream);
  if (p->tile_m == 32) return launch<32, 128>(p, map_a, map_b, ctas, stream);
  if (p->tile_m == 64) return launch<64, 128>(p, map_a, map_b, ctas, stream);
  if (p->tile_m == 128) return launch<128, 128>(p, map_a, map_b, ctas, stream); /* v9 */
  return cudaErrorInvalidValue;
}

template <int BT, int BW> static cudaError_t preload(void) {
  const void* const k[] = {(const void*)gemm_kernel_v7<BT, BW, false, XSG_EPI_LOCAL>,
                           (const void*)gemm_kernel_v7<BT, BW, false, XSG_EPI_LOCAL_SILU>,
                           (const void*)gemm_kernel_v7<BT, BW, false, XSG_EPI_MAP>,
                           (const void*)gemm_kernel_v7<BT, BW, false, XSG_EPI_MAP_SILU>};
  return xsg_load_kernels(k, 4);
}

cudaError_t xsg_preload_v7(void) {
  const cudaError_t e[] = {preload<16, 64>(),  preload<32, 64>(),  preload<64, 64>(),
                           preload<16, 128>(), preload<32, 128>(), preload<64, 128>(),
                           preload<128, 128>()};
  for (cudaError_t x : e)
    if (x != cudaSuccess) return x;
  return cudaSuccess;
}
