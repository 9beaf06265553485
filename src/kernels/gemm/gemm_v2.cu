/* gemm_v2.cu — the Hopper GEMM: v2 (tiles 128x128), v3 (128x256), v4 (128x224), v5 (128x192) and
 * v6 (128x208), one template.
 *
 * Per CTA (persistent, one per SM, 384 threads = 3 warpgroups):
 *   warpgroup 0  producer: one thread streams A and B k-blocks (64 wide) with TMA into a ring of
 *                STAGES shared-memory slots; registers shrunk with setmaxnreg.dec.
 *   warpgroups 1, 2  consumers: each owns 64 of the tile's 128 rows and all BN columns; wgmma
 *                m64nBNk16 from shared memory into fp32 registers (setmaxnreg.inc), then the
 *                epilogue: registers -> bf16 (or silu(gate)*up) -> swizzled shared staging ->
 *                TMA store (STORE_LOCAL on v2/v3/v5) or 16-byte stores (STORE_MAP through the
 *                tile's map entry; STORE_LOCAL on v4 and v6, whose 224- and 208-column tiles
 *                are not a whole number of 64-column TMA boxes, and on v5 with SiLU, 96
 *                output columns) ->
 *                optional per-tile flag.
 * Barriers (one parity bit each, flipped when the slot index wraps):
 *   full[s]   count 1: the producer's arrive.expect_tx + the TMA bytes of slot s landing.
 *   empty[s]  count 8 (one lane per consumer warp): the wgmmas reading slot s have retired.
 *   named 1, 2  the 128 threads of consumer warpgroup 1 / 2 (staging buffer reuse, TMA store).
 *   named 3   both consumer warpgroups (a tile's flag is raised once both halves are stored).
 * The schedule (xsg_position_tile + xsg_tile_rows: the caller's list or the raster order; MASKED
 * launches without a list walk the compacted schedule, sched.h xsg_masked_tile, numbered from a
 * per-expert prefix the CTA builds in shared memory from the device counts at entry) is walked by
 * the producer alone: it finds tile i+1 while tile i's k-blocks stream and writes it into the
 * entry of the ring slot that carries that tile's first k-block (struct tile_info), which the
 * consumers read after that slot's full wait; an entry with index -1 ends the loop (tuning
 * round 10: the consumers used to compute each tile themselves at the boundary, 1.0-1.2 us with
 * the tensor cores idle). Probe modes 4-6 and 8 (gemm_internal.h xsg_probe) serve
 * bench/gemm_probe.cu only.
 */
#include <cuda_bf16.h>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/hopper_common.cuh"
#include "xstage/ptx.cuh"

namespace {

/* ---- compile-time configuration (one block per instantiation) ---- */
template <int BN_> struct hopper_cfg {
  static constexpr int BM = 128; /* tile rows: two consumer warpgroups x 64 */
  static constexpr int BN = BN_; /* tile columns in B-row space (output: BN, or BN/2 SiLU) */
  /* NOTE: v4's 224 columns are 3.5 TMA store boxes of 64 (v6's 208: 3.25): a 64-wide box would
   * write into the neighbour tile, so v4 and v6 store from the staging buffer with 16-byte
   * stores instead. */
  static constexpr bool TMA_C = BN % 64 == 0;
  /* With SiLU*mul a tile has BN/2 output columns: whole boxes for v2 (64) and v3 (128); v5's 96
   * are not, so v5 with SiLU stores with 16-byte stores too. */
  static constexpr bool TMA_C_SILU = TMA_C && (BN / 2) % 64 == 0;
  static constexpr int BK = 64; /* one 128-byte swizzle atom of bf16 */
  static constexpr int CONSUMERS = 2;
  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  /* NOTE: 128x256 keeps 128 fp32 accumulators per consumer thread; 232 registers hold them with
   * the addresses and the epilogue (no spills in ptxas -v). The producer holds the current and
   * the next tile (tuning round 10): 48 registers were enough until its shared-memory pointers
   * became 32-bit (session 5: xsg_smem_align1024), after which ptxas spilled 4-12 bytes there;
   * 56 (at 40 it spilled 60-72 bytes). The consumers get 224: no spills in any mode since then
   * (v11 spilled 4 bytes at 232, 40 at 224 while its pointers were generic).
   * NOTE: setmaxnreg moves registers inside the CTA's launch allocation, 168 per thread at 384
   * threads (65536 / 384 rounded down to 8), not the whole 65536: 48*128 + 232*256 is over it by
   * 1024, and the consumers' setmaxnreg.inc then waits forever (the first build of round 10 hung
   * and trapped on the H200). 56*128 + 224*256 = 64512, exactly the allocation. */
  static constexpr int PRODUCER_REGS = 56;
  static constexpr int CONSUMER_REGS = 224;
  static constexpr int A_BYTES = BM * BK * 2;
  static constexpr int B_BYTES = BN * BK * 2;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  /* Output staging: each consumer stages 64 rows x STAGE_COLS columns at a time, in 64-column
   * chunks of 8 KB (a partial chunk still spans its 8 swizzled 16-byte units); wider tiles
   * (v3, v4, v6 without SiLU) go out in PASSES passes.
   * NOTE: run 1 had v3 stage the whole 128x256 tile (64 KB), leaving room for 3 ring stages: with
   * one slot held by the wgmma in flight, only 2 k-blocks (96 KB) were loading, and v3 lost to
   * v2 (5 of 6 loading) on every long-K shape (733 vs 748 TFLOP/s at 8192^3, 671 vs 745 at
   * 4096x28672x8192). Staging half the columns at a time (32 KB, like v2) frees a fourth stage.
   * v5 (128x192) has room for its whole tile (48 KB) beside 4 stages, so it goes out in one
   * pass: no wait for a first pass's store to be read before the second is staged. */
  static constexpr int STAGE_COLS = BN == 192 ? 192 : BN > 128 ? 128 : BN;
  static constexpr int PASSES = (BN + STAGE_COLS - 1) / STAGE_COLS;
  static constexpr int C_BYTES = BM * STAGE_COLS * 2;
  /* NOTE: as many stages as fit beside the staging: 128x256 -> 4 x 48 KB, 128x224 -> 4 x 44 KB,
   * 128x192 -> 4 x 40 KB (210 KB with its 48 KB staging; 5 stages fit only beside 64-column
   * staging, 218 KB, three store passes per tile), 128x208 -> 4 x 42 KB (202 KB), 128x128 ->
   * 6 x 32 KB */
  static constexpr int STAGES = BN == 128 ? 6 : 4;
  static constexpr int BAR_BYTES = 2 * STAGES * 8 + 8; /* full, empty, table_ready */
  /* k-blocks the producer loads before the schedule table exists (xsg_spec_guess) */
  static constexpr int SPEC = 3;
  /* MASKED compacted schedule: work-tile prefix over at most MAX_EXPERTS experts (int32). */
  static constexpr int TABLE_BYTES = 4 * (XSG_MASKED_MAX_EXPERTS + 1);
  /* The producer's tile entries (struct tile_info, 32 bytes each), one per ring slot. */
  static constexpr int INFO_BYTES = 32 * STAGES;
  static constexpr int SMEM = 1024 /* alignment slack */ + STAGES * STAGE_BYTES + C_BYTES +
                              BAR_BYTES + TABLE_BYTES + INFO_BYTES;
  static_assert(SMEM <= 227 * 1024, "shared memory over the 227 KB a Hopper CTA may use");
  static_assert(BN == 128 || BN == 192 || BN == 208 || BN == 224 || BN == 256,
                "wgmma wrappers exist for N = 128, 192, 208, 224, 256");
  static_assert((BN / 2) % 8 == 0, "each B half is whole 8-row swizzle atoms");
  static_assert(BN / 2 <= STAGE_COLS, "a SiLU tile (BN/2 output columns) is staged in one pass");
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "swizzle atoms are 1024 bytes");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * CONSUMERS <=
                    (65536 / THREADS & ~7) * THREADS,
                "setmaxnreg: more registers than the CTA's launch allocation");
};

/* A finished tile whose epilogue has not run yet (DEFER: it runs under the next tile's first
 * k-blocks). */
struct tile_done {
  int row0, row_end, expert, index, nb;
  xs_gemm_tile_dst dst; /* STORE_MAP: the tile's map entry, loaded when the tile starts */
};

/* A tile of the schedule as the producer hands it to the consumers: one entry per ring slot, the
 * slot of the tile's first k-block, written before that k-block's arrive.expect_tx (which
 * releases it; the consumers' full wait acquires it) and read before the slot is released.
 * index < 0: the schedule has ended (the slot then carries no loads, only the producer's arrive).
 * row_end < 0 (the compacted MASKED schedule): the consumers load the expert's rows themselves
 * (xsg_masked_rows), so that the producer's first TMA issue does not wait on a global load.
 * NOTE: tuning round 10. Each role used to compute the next tile's coordinates itself at the tile
 * boundary (raster divisions, constant-bank loads, the contiguous layout's expert search): 1.0-1.2
 * us per tile on the H200 (bench/gemm_probe.cu's trace), with the tensor cores idle, and the
 * producer issued the next tile's first k-block that much later. The producer now finds tile i+1
 * while tile i's k-blocks stream, and the consumers read it from shared memory. */
struct tile_info {
  int index, row0, row_end, expert, nb;
  int piece; /* -1 the whole tile; 0, 1: its column half (xsg_params.tail_split, sched.h
                xsg_tail_slots) */
};

/* The next tile with work at schedule slot k or later (k moves past it): 0 when none is left.
 * The caller's list, the raster order, or the masked compacted schedule (table). CONTIG finds a
 * tile's expert in `offsets` (the shared-memory copy when there is one). Slots from `full` on are
 * halves of the last partial wave's tiles (sched.h xsg_tail_position; full = slots: none); a
 * second half that lies wholly past the output's columns (half_cols each) has no work.
 * table_ready (the producer's first call, CONTIG with the offsets in shared memory): waited for
 * just before the expert search, so the tile's coordinates are found while warp 3 loads them. */
__device__ __forceinline__ int next_tile(const xsg_params& p, const int32_t* table,
                                         const int32_t* offsets, int slots, int full, int half_cols,
                                         int& k, tile_info& ti, uint64_t* table_ready = nullptr) {
  for (; k < slots; k += gridDim.x) {
    int piece;
    const int pos = xsg_tail_position(k, full, &piece);
    if (p.compact) { /* every compacted position has work; row_end -1: the consumers load it */
      const xsg_tile t = xsg_masked_coords(&p.grid, table, p.experts, pos);
      if (piece == 1 && (2 * t.nb + 1) * half_cols >= p.n_out) continue;
      ti = {xsg_tile_index(&p.grid, t.g, t.mb, t.nb), t.mb * p.tile_m, -1, t.g, t.nb, piece};
      k += gridDim.x;
      return 1;
    }
    const int index = xsg_position_tile(&p, pos);
    const xsg_tile t = xsg_tile_decode(&p.grid, index);
    if (piece == 1 && (2 * t.nb + 1) * half_cols >= p.n_out) continue;
    if (table_ready) xsg_wait_timed(table_ready, 0); /* the first tile: CONTIG's offsets */
    int row0, row_end, expert;
    if (xsg_tile_rows_at(p, offsets, t, &row0, &row_end, &expert)) {
      ti = {index, row0, row_end, expert, t.nb, piece};
      k += gridDim.x;
      return 1;
    }
  }
  return 0;
}

/* The first tile from the host (xsg_first, packed w; position blockIdx.x, a whole tile of a
 * raster order in one group): its rows, with CONTIG's expert from the offsets (table_ready: wait
 * for warp 3's copy first). 0 when the tile has no rows (k unchanged: next_tile then walks on
 * from the same slot). */
__device__ __forceinline__ int first_tile(const xsg_params& p, const int32_t* offsets, uint32_t w,
                                          int& k, tile_info& ti, uint64_t* table_ready) {
  const xsg_tile t = xsg_first_tile_of(w);
  if (table_ready) xsg_wait_timed(table_ready, 0);
  int row0, row_end, expert;
  if (!xsg_tile_rows_at(p, offsets, t, &row0, &row_end, &expert)) return 0;
  ti = {xsg_tile_index(&p.grid, 0, t.mb, t.nb), row0, row_end, expert, t.nb, -1};
  k += gridDim.x;
  return 1;
}

/* One tile's epilogue for consumer warpgroup `half` (thread `tid` of its 128): 8-column groups
 * -> swizzled staging -> TMA store or 16-byte stores (through the tile's map entry), in passes
 * of at most STAGE_COLS columns (v3/v4/v6 without SiLU: two passes through a half-size staging
 * buffer, which buys their ring a fourth stage), then the tile's flag.
 * word(i, hi): the packed bf16 pair of the thread's 8-column group i, fragment row r_lo (hi = 0)
 * or r_lo + 8 (hi = 1); word_silu(i, w0, w1): both words of output group i < BN/16 (the four
 * outputs share one reciprocal: xsg_silu_mul4); called with compile-time i and hi only (the
 * accumulators stay in registers). Runs passes PS_FIRST..PS_LAST
 * (SiLU*mul: pass 0 only); raises the tile's flag when raise_flag. slot_c (v13, TMA store only):
 * passes after the first are staged in that ring slot (the tile's last k-block's, still held
 * from the producer) instead of waiting for the first pass's TMA store to read the staging. */
template <int BN, int PS_FIRST, int PS_LAST, class Word, class WordSilu>
__device__ __forceinline__ void
store_tile(const xsg_params& p, const CUtensorMap* map_c, uint8_t* my_c, int half, int tid,
           int silu, int store, const tile_done& td, int raise_flag, Word word, WordSilu word_silu,
           uint8_t* slot_c = nullptr, unsigned long long* rec = nullptr) {
  using cfg = hopper_cfg<BN>;
  const int warp = tid / 32, lane = tid % 32;
  /* Fragment rows r_lo and r_lo + 8 (r_lo % 8 == lane / 4), column pairs 8i + 2(lane % 4).
   * NOTE: addresses are formed as row base + (chunk, swizzled unit) so that only the eight
   * swizzled unit offsets stay live across the tile loop (not 64 hoisted addresses). */
  const int r_lo = warp * 16 + lane / 4;
  const int x = r_lo & 7;
  uint8_t* const row_lo0 = my_c + r_lo * 128 + 4 * (lane % 4);
  /* stmatrix addressing: lane 8m + j stores row j of matrix m (m & 1: rows + 8; m >> 1: group + 1)
   */
  const int st_row = warp * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);
  const int st_y = (lane >> 4) ^ (lane & 7);
  const int out_cols = silu ? BN / 2 : BN;  /* output columns per tile */
  const int out_row0 = td.row0 + 64 * half; /* first output row of this half */
  const int out_col0 = td.nb * out_cols;
  const int tma = (silu ? cfg::TMA_C_SILU : cfg::TMA_C) && store == XS_GEMM_STORE_LOCAL;
  constexpr int GPP = cfg::STAGE_COLS / 8; /* 8-column groups per pass */
  static_assert(0 <= PS_FIRST && PS_FIRST <= PS_LAST && PS_LAST < cfg::PASSES, "pass range");
#pragma unroll
  for (int ps = PS_FIRST; ps <= PS_LAST; ps++) {
    if (ps > 0 && silu) break; /* SiLU output (BN/2 columns) is one pass */
    uint8_t* buf = my_c;       /* where this pass is staged */
    if (ps > 0 && slot_c) {
      /* v13: the held slot. Both warpgroups' wgmma reads of it are complete (each waited for
       * its last group) once both are here. */
      buf = slot_c + half * (cfg::C_BYTES / 2);
      if (rec) rec[8 + 2 * ps] = xs_clock64(); /* TRACE: no staging to wait for */
      xs_named_bar_sync(3, 128 * cfg::CONSUMERS);
      if (rec) rec[9 + 2 * ps] = xs_clock64(); /* TRACE: both warpgroups are here */
      xs_fence_proxy_async_smem();
    } else {
      /* The staging area is free once the previous TMA store has read it (TMA path) and the
       * other threads have read it back (16-byte store path): both ordered by this barrier. */
      if (tma && tid == 0) xs_bulk_wait_read_all();
      if (rec) rec[8 + 2 * ps] = xs_clock64(); /* TRACE: the staging is free */
      xs_named_bar_sync(1 + half, 128);
      if (rec) rec[9 + 2 * ps] = xs_clock64(); /* TRACE: the warpgroup is here */
    }
    /* Groups il, il + 1 (il even) go out as one stmatrix.x4: matrices (il, rows r_lo),
     * (il, r_lo + 8), (il + 1, r_lo), (il + 1, r_lo + 8); lane 8m + j addresses row j of matrix m,
     * whose 16-byte unit is (il & 7) ^ (m >> 1) ^ j (il & 7 is even): sm_row + (unit(il) << 4). */
    const uint32_t sm_row = xs_smem_u32(buf) + st_row * 128;
    if (silu) {
#pragma unroll
      for (int i = 0; i + 1 < BN / 16; i += 2) { /* gate column pair i <-> up pair i + BN/16 */
        uint32_t w0, w1, w2, w3;
        word_silu(i, w0, w1);
        word_silu(i + 1, w2, w3);
        xs_stmatrix_x4(sm_row + (i >> 3) * 8192 + (((i & 7) ^ st_y) << 4), w0, w1, w2, w3);
      }
      if ((BN / 16) % 2) { /* v6's 13th group: the fragment's own 4-byte stores */
        constexpr int i = BN / 16 - 1;
        uint8_t* const row_lo = row_lo0 + (buf - my_c);
        const int off = (i >> 3) * 8192 + (((i & 7) ^ x) << 4);
        uint32_t w0, w1;
        word_silu(i, w0, w1);
        *(uint32_t*)(row_lo + off) = w0;
        *(uint32_t*)(row_lo + 8 * 128 + off) = w1;
      }
    } else {
      static_assert(GPP % 2 == 0 && (BN / 8) % 2 == 0,
                    "stmatrix.x4 takes 8-column groups in pairs");
#pragma unroll
      for (int il = 0; il < GPP; il += 2) {
        const int i = ps * GPP + il; /* compile-time after unrolling */
        if (i < BN / 8)
          xs_stmatrix_x4(sm_row + (il >> 3) * 8192 + (((il & 7) ^ st_y) << 4), word(i, 0),
                         word(i, 1), word(i + 1, 0), word(i + 1, 1));
      }
    }
    const int col0 = out_col0 + ps * cfg::STAGE_COLS; /* first output column of the pass */
    if (tma) {
      /* ---- TMA store: the writes are ordered for the async proxy, then one thread issues */
      xs_fence_proxy_async_smem();
      xs_named_bar_sync(1 + half, 128);
      if (tid == 0) {
        const int c_batch = p.layout == XS_GEMM_GROUPED_MASKED ? td.expert : 0;
        /* Columns of this pass (64-multiples here): a full STAGE_COLS, or what is left of
         * the tile in the last pass. NOTE: a box past the tile's own columns would overwrite
         * the neighbour tile with stale staging. */
        const int pass_cols = silu                   ? out_cols
                              : ps + 1 < cfg::PASSES ? cfg::STAGE_COLS
                                                     : BN - (cfg::PASSES - 1) * cfg::STAGE_COLS;
        /* Boxes wholly outside C are skipped; partial ones are clipped by TMA.
         * NOTE (session 13): a compile-time bound with a runtime guard. With the loop bound
         * pass_cols / 64 itself, ptxas (CUDA 13.0) built v11's kernel with v3's half tile so
         * that the loop's remainder copy loaded the batch coordinate under a predicate that
         * held an unrelated comparison on that path (SiLU*mul's exponent range check): the
         * halves' TMA stores went to a stale batch and were clipped away (tuning round 19). */
#pragma unroll
        for (int j = 0; j < cfg::STAGE_COLS / 64; j++)
          if (j < pass_cols / 64 && out_row0 < p.M && col0 + 64 * j < p.n_out)
            xs_tma_store_3d(map_c, buf + j * 8192, col0 + 64 * j, out_row0, c_batch);
        xs_bulk_commit();
        if (rec) rec[12 + ps] = xs_clock64(); /* TRACE: the pass's stores are issued */
      }
    } else {
      /* ---- 16-byte stores from staging: through the tile's destination map entry (hook),
       * or into C (v4's and v6's local store, v5's with SiLU). The map entry is read before
       * the barrier so its latency overlaps the other warps' staging writes. */
      uint16_t* base;
      int64_t ld;
      if (store == XS_GEMM_STORE_MAP) {
        const xs_gemm_tile_dst dst = td.dst;
        base = (uint16_t*)dst.base + (int64_t)(64 * half) * dst.ld + ps * cfg::STAGE_COLS;
        ld = dst.ld;
      } else {
        const int64_t batch_row = p.layout == XS_GEMM_GROUPED_MASKED ? (int64_t)td.expert * p.M : 0;
        base = p.C + (batch_row + out_row0) * p.n_out + col0;
        ld = p.n_out;
      }
      xs_named_bar_sync(1 + half, 128);
      const int rows = td.row_end - out_row0, cols = p.n_out - col0;
      constexpr int LAST = BN / 8 - (cfg::PASSES - 1) * GPP; /* groups in the last pass */
      if (silu)
        xsg_store_staged<BN / 16>(buf, base, ld, tid, rows, cols);
      else if (ps + 1 < cfg::PASSES)
        xsg_store_staged<GPP>(buf, base, ld, tid, rows, cols);
      else
        xsg_store_staged<LAST>(buf, base, ld, tid, rows, cols);
    }
  }
  if (raise_flag && p.epi.tile_flags) /* both halves stored: one thread publishes the tile */
    xsg_raise_tile_flag(&p.epi.tile_flags[td.index], tma, tid, 3, 128 * cfg::CONSUMERS,
                        threadIdx.x == 128);
}

/* v12's epilogue: the whole tile straight from the accumulators (hopper_common.cuh
 * xsg_store_direct), then the tile's flag. */
template <int BN>
__device__ __forceinline__ void store_tile_direct(const xsg_params& p, int half, int tid, int silu,
                                                  const tile_done& td, const float (&d)[BN / 2]) {
  xsg_store_direct<BN>(p, half, tid, silu, td.row0, td.row_end, td.expert, td.nb, td.dst, d, 0,
                       silu ? BN / 32 : BN / 16);
  if (p.epi.tile_flags) /* both halves stored: one thread publishes the tile */
    xsg_raise_tile_flag(&p.epi.tile_flags[td.index], 0, tid, 3, 256, threadIdx.x == 128);
}

/* MODE 0: v2-v6 (the epilogue runs between a tile's last k-block and the next tile's first, with
 * the tensor cores idle). MODE 2: v12 (tuning round 9, BN = 256): store_tile_direct, no staging.
 * MODE 3: v13 (round 9, BN = 256): v3 whose second staging pass goes into the tile's last ring
 * slot (held back from the producer until the next tile's first k-block), so it need not wait for
 * the first pass's TMA store to read the staging buffer.
 * MODE 1 (DEFER): v11 (tuning round 9, BN = 256 only): the
 * tile's last staging pass (SiLU*mul: its only pass) is packed to bf16 in 32 registers and
 * staged and stored after the next tile's second k-block has been issued, so it overlaps two
 * k-blocks of tensor work; without SiLU the first pass still goes out at once (from the
 * accumulators, with no wait: the staging was read long before). */
/* WAIT: input readiness (xs_gemm_ready; v3 only): the producer waits for a tile's A rows
 * before its first k-block (gemm_internal.h xsg_wait_ready), and no loads go out before a tile
 * is known (no speculative start). Its own instance, so the others' code is unchanged.
 * NOTE (session 21), what ptxas made of the variants (v3, v11 and v2 with WAIT):
 * - `spec` a compile-time 0 (the consumers' guess check folds away): v3's and v11's wgmma
 *   serialized (C7511). It is 0 through the runtime p.ready.flags instead.
 * - the wait before the k-block loop instead of inside it: v3 and v11 serialized;
 * - the whole wait inlined: v3 spilled 40 bytes; all of it called (__noinline__): clean, but
 *   measured (calls B-D, every flag already set) 5 % slower than v3 at 512x7168x2048 and 10 %
 *   at 2048x3072x4096, whatever the poll (acquire or relaxed, sys or gpu, a volatile load with
 *   or without the proxy fence) and wherever it sat; the same call returning at once cost
 *   nothing. Now the first poll is inline with the parameters read in the kernel, the call
 *   only for a flag not yet ready: clean, 512x7168x2048 within 2-3 %, 2048x3072x4096 still
 *   ~9 % (its last wave in halves: without them, both 0.994; docs/results/gemm-h200.md,
 *   session 21). Reading the next tile's first word early (relaxed, when the tile is found;
 *   fence.acq_rel.sys when used) measured the same (call D); the first acquire issued before
 *   the slot wait (its latency under the wait) lost 3 % more at 8192^3 and 4 % more at
 *   2048x3072x4096, relaxed with a fence there 3-7 % more (call H);
 * - v11: serialized in every placement tried; v2 (128 x 128): 8 bytes of spills. Neither
 *   is built with WAIT. */
template <int BN, int MODE, bool WAIT, int EPI>
__global__ void __launch_bounds__(hopper_cfg<BN>::THREADS, 1)
    gemm_kernel_hopper(const __grid_constant__ CUtensorMap map_a,
                       const __grid_constant__ CUtensorMap map_b,
                       const __grid_constant__ CUtensorMap map_c,
                       const __grid_constant__ xsg_params p,
                       const __grid_constant__ xsg_first first) {
  using cfg = hopper_cfg<BN>;
  constexpr bool DEFER = MODE == 1 || MODE == 8;
  /* Probe modes (gemm_internal.h, xsg_probe): 4 no epilogue, 5 traced, 6 no wgmma, 7 v13 traced,
   * 8 v11 traced. */
  constexpr bool NO_EPI = MODE == 4, TRACE = MODE == 5 || MODE == 7 || MODE == 8,
                 NO_MMA = MODE == 6;
  constexpr bool SLOT = MODE == 3 || MODE == 7; /* v13's held slot (7: traced) */
  /* v3 and v11 run the last partial wave in column halves (xsg_params.tail_split; sched.h
   * xsg_tail_slots; the consumers' half-tile loop after their tile loop). Not the traced probe
   * modes: their stamps made ptxas spill 24 bytes. (v11's halves were first left unwritten: see
   * store_tile's TMA store loop.) */
  constexpr bool TAIL = BN == 256 && (MODE == 0 || MODE == 1);
  extern __shared__ uint8_t smem_raw[];
  /* NOTE: 128B-swizzled TMA boxes and wgmma descriptors need 1024-byte aligned tiles. */
  uint8_t* smem = xsg_smem_align1024(smem_raw);
  uint8_t* ring = smem;                                     /* STAGES x (A tile, B tile) */
  uint8_t* stage_c = smem + cfg::STAGES * cfg::STAGE_BYTES; /* C staging, 2 x BM/2 rows */
  uint64_t* full = (uint64_t*)(stage_c + cfg::C_BYTES);
  uint64_t* empty = full + cfg::STAGES;
  uint64_t* table_ready = empty + cfg::STAGES;  /* count 32: warp 3 built the table */
  int32_t* table = (int32_t*)(table_ready + 1); /* p.compact: the masked work prefix */
  tile_info* info = (tile_info*)((uint8_t*)table + cfg::TABLE_BYTES); /* one per ring slot */
  static_assert(sizeof(tile_info) <= 32 && cfg::TABLE_BYTES % 4 == 0, "tile entries");

  const int wg = threadIdx.x / 128;
  const int k_blocks = xsg_cdiv(p.K, cfg::BK);
  /* EPI (XSG_EPI_*): the epilogue fixed at compile time, or read from p.epi (ANY). A fixed one
   * leaves the other forms' code out, so that a launch after another kernel refetches less. */
  const int silu = EPI == XSG_EPI_ANY ? p.epi.act == XS_GEMM_ACT_SILU_MUL : xsg_epi_silu(EPI);
  /* The store kind is read where it is used, not held: held in a register across the main loop,
   * it made ptxas serialize the wgmmas of v3's and v11's ANY kernels (C7511, session 24). */
  auto store = [&]() -> int { return EPI == XSG_EPI_ANY ? (int)p.epi.store : xsg_epi_store(EPI); };

  if (threadIdx.x == 0) {
    /* The tensor maps first: their fetch overlaps the set-up below instead of delaying the
     * first load (and, for the TMA store, the first epilogue of a one-wave problem). */
    xs_tma_prefetch_map(&map_a);
    xs_tma_prefetch_map(&map_b);
    if ((silu ? cfg::TMA_C_SILU : cfg::TMA_C) && store() == XS_GEMM_STORE_LOCAL)
      xs_tma_prefetch_map(&map_c);
    for (int s = 0; s < cfg::STAGES; s++) {
      xs_mbar_init(&full[s], 1);
      xs_mbar_init(&empty[s], 4 * cfg::CONSUMERS);
    }
    xs_mbar_init(table_ready, 32);
    xs_fence_mbar_init();
  }
  if (threadIdx.x == 96) xsg_warm_params(p); /* warp 3 (idle producer warp) */
  /* PDL: the previous kernel is done from here on; with WAIT and pdl 2 (overlap) it may still
   * run: what this one reads of its output comes through the ready flags. */
  if (WAIT) { /* predicated, not a branch: a branch here serialized the wgmma (ptxas C7511) */
    xs_griddep_wait_if(p.pdl != 2);
    xs_griddep_launch_dependents();
  } else {
    xsg_griddep_enter();
  }
  const int contig_table =
      p.layout == XS_GEMM_GROUPED_CONTIG && p.experts <= XSG_MASKED_MAX_EXPERTS;
  /* Warp 3 loads the first 32 CONTIG offsets before the set-up: the producer's first tile waits
   * for them (a cold global load, ~1.9 us on the H200, session 14). */
  int32_t first_offset = -1;
  if (contig_table && threadIdx.x >= 96 && threadIdx.x < 128 && threadIdx.x - 96 <= p.experts)
    first_offset = p.m_offsets[threadIdx.x - 96];
  __syncthreads(); /* the barriers are initialized */
  /* CONTIG: the expert offsets in shared memory, so the producer's expert search (a binary
   * search, one dependent load per step) never waits on global memory; at a kernel's first tile
   * that was ~3 dependent misses before its first load could be issued (tuning round 10).
   * NOTE (session 6): this table and the MASKED compacted prefix are built by warp 3 alone and
   * announced on table_ready, so the producer's speculative first loads (xsg_spec_guess) go out
   * without waiting for them. */
  const int32_t* offsets = contig_table ? table : p.m_offsets;
  /* TRACE: this CTA's stamps (gemm_internal.h). */
  unsigned long long* const trace =
      TRACE ? p.trace + (size_t)blockIdx.x * (XSG_TRACE_HEAD + p.trace_cap * 2 * XSG_TRACE_REC)
            : nullptr;
  if (TRACE && threadIdx.x == 128) {
    trace[0] = xs_clock64();
    trace[1] = xs_globaltimer();
  }
  /* The speculative start (both roles compute it): MASKED, this CTA's first tile if no expert
   * before it is empty (hopper_common.cuh xsg_spec_guess); CONTIG, the host's first tile with the
   * expert of a balanced split (xsg_spec_guess_contig). */
  int g_guess = 0, mb_guess = 0, nb_guess = 0;
  const int spec_contig = contig_table && (int)blockIdx.x < first.n;
  const int spec = WAIT && p.ready.flags ? 0
                   : spec_contig
                       ? xsg_spec_guess_contig(p, first.t[blockIdx.x], k_blocks, cfg::SPEC,
                                               &g_guess, &mb_guess, &nb_guess)
                       : xsg_spec_guess(p, blockIdx.x, k_blocks, cfg::SPEC, &g_guess, &nb_guess);

  if (wg == 0) {
    /* ================= producer warpgroup ================= */
    xs_setmaxnreg_dec<cfg::PRODUCER_REGS>();
    if (TRACE && (threadIdx.x == 0 || threadIdx.x == 96))
      trace[4 + threadIdx.x / 96] = xs_clock64();
    if (threadIdx.x >= 96) {
      xsg_build_table_warp(table, table_ready, p, contig_table, threadIdx.x % 32, first_offset);
      if (TRACE && threadIdx.x == 96) trace[6] = xs_clock64();
    } else if (threadIdx.x < (WAIT || BN == 256 ? 1 : 32)) {
      /* warp 0 walks the loop, one elected lane issues: the loop's values are warp-uniform, so
       * the compiler keeps them in uniform registers, which the TMA instructions take (session
       * 27: v14 and v7 1.5-2.8 % faster). One thread for WAIT (its flag polls would run in
       * every lane) and the 128x256 tiles (v3, v11-v13: with the warp ptxas serialized their
       * wgmma pipelines, C7511). */
      const bool leader = WAIT || BN == 256 || xs_elect_one();
      if (TRACE && p.probe_delay_ns > 0 && (blockIdx.x & 1)) { /* probe: out of step */
        const uint64_t t0 = xs_globaltimer();
        while (xs_globaltimer() - t0 < (uint64_t)p.probe_delay_ns) {
        }
      }
      int s = 0;
      uint32_t phase = 0;
      int jp = 0; /* TRACE: tiles loaded so far */
      int k = blockIdx.x;
      tile_info cur = {-1, 0, 0, 0, 0, -1};
      /* Slot s gets k-block kb of tile ti (its entry with k-block 0, released by the arrive): A,
       * and B's two halves: [n0, n0 + BN/2) and the next half, or with SiLU the gate rows and
       * the matching up rows (I = N/2 further on). NOTE: expect the full box bytes: TMA counts
       * the zero-filled out-of-bounds part of a box too. A second B half that lies wholly past N
       * is not loaded at all (its stale rows only feed output columns >= N, never stored).
       * A half tile (TAIL) loads B half `piece` alone, or with SiLU the gate and up boxes from
       * its first 64 rows on (of each 128-row box, the first 64 are used). */
      auto load = [&](const tile_info& ti, int kb) {
        const int a_batch = p.layout == XS_GEMM_GROUPED_MASKED ? ti.expert : 0;
        const int b_batch = p.layout == XS_GEMM_DENSE ? 0 : ti.expert;
        int b_row0 = silu ? ti.nb * (BN / 2) : ti.nb * BN;
        int b_row1 = silu ? b_row0 + p.N / 2 : b_row0 + BN / 2;
        if (TAIL && ti.piece >= 0) {
          b_row0 += ti.piece * (silu ? BN / 4 : BN / 2);
          b_row1 = silu ? b_row0 + p.N / 2 : p.N; /* without SiLU: no second box */
        }
        uint8_t* sa = ring + s * cfg::STAGE_BYTES;
        uint8_t* sb = sa + cfg::A_BYTES;
        if (!leader) return;
        if (kb == 0) info[s] = ti;
        /* (v3, v11-v13: always two halves; any change here made ptxas serialize their wgmma
         * pipelines, C7511) */
        const bool one_box = BN != 256 && p.b_one_box;
        xs_mbar_arrive_expect_tx(&full[s], one_box || b_row1 < p.N
                                               ? cfg::STAGE_BYTES
                                               : cfg::STAGE_BYTES - cfg::B_BYTES / 2);
        /* L2 cache policies: xsg_params.l2_hint (the library's choice: sched.h xsg_l2_choice) */
        auto tma = [&](void* dst, const CUtensorMap* map, int row, int batch, int kind) {
          xs_tma_load_3d_kind(dst, map, &full[s], kb * cfg::BK, row, batch, kind);
        };
        tma(sa, &map_a, ti.row0, a_batch, p.l2_hint & 3);
        tma(sb, &map_b, b_row0, b_batch, p.l2_hint >> 2);
        if (b_row1 < p.N && !one_box)
          tma(sb + cfg::B_BYTES / 2, &map_b, b_row1, b_batch, p.l2_hint >> 2);
      };
      /* The guessed tile's first k-blocks, before the table exists (fresh slots: no empty
       * wait; spec < STAGES: no wrap). */
      const tile_info guess = {
          xsg_tile_index(&p.grid, spec_contig ? 0 : g_guess, mb_guess, nb_guess),
          mb_guess * p.tile_m,
          spec_contig ? p.M : -1,
          g_guess,
          nb_guess,
          -1};
      for (int kb = 0; kb < spec; kb++, s++)
        load(guess, kb);
      /* Only the compacted schedule needs the table for its length; otherwise the first tile's
       * coordinates are found while warp 3 loads the table, and next_tile waits for it just
       * before CONTIG's expert search (session 14: ~1 us of the start-up each). */
      if (p.compact) xsg_wait_timed(table_ready, 0);
      if (TRACE && leader) trace[7] = xs_clock64();
      /* Schedule length: the caller's list, every tile, or the masked tiles with work. */
      const int positions = p.compact ? table[p.experts] : p.positions;
      /* TAIL: the last partial wave in column halves when it is at most half the grid (sched.h
       * xsg_tail_slots). Not with MASKED's speculative start, whose slots belong to position
       * blockIdx.x (xsg_spec_hit); CONTIG's comes with the host's first tiles, whose first wave
       * is whole (position blockIdx.x is a whole tile either way). */
      int whole = positions; /* slots before the first half */
      const int slots = TAIL && p.tail_split && (!spec || spec_contig)
                            ? xsg_tail_slots(positions, (int)gridDim.x, &whole)
                            : positions;
      const int half_cols = silu ? BN / 4 : BN / 2; /* output columns of a half */
      int have = (int)blockIdx.x < first.n && first_tile(p, offsets, first.t[blockIdx.x], k, cur,
                                                         contig_table ? table_ready : nullptr);
      if (!have)
        have = next_tile(p, table, offsets, slots, whole, half_cols, k, cur,
                         !p.compact && contig_table ? table_ready : nullptr);
      /* the guess was right: its first spec k-blocks are in the ring (else the consumers drain
       * those slots unused) */
      int kb_start =
          spec && have && cur.index == guess.index && cur.expert == guess.expert && cur.piece < 0
              ? spec
              : 0;
      while (have) {
        /* TRACE: the producer's stamps go into warpgroup 1's record of the same tile. */
        unsigned long long* const prec =
            TRACE && jp < p.trace_cap ? trace + XSG_TRACE_HEAD + jp * 2 * XSG_TRACE_REC : nullptr;
        if (TRACE) {
          jp++;
          if (prec && leader) prec[6] = xs_clock64();
        }
        tile_info nxt = {-1, 0, 0, 0, 0, -1};
        int have_next = 0;
        /* (a guessed first tile: after its first k-block not guessed, or now if it was whole) */
        if (kb_start && kb_start == k_blocks)
          have_next = next_tile(p, table, offsets, slots, whole, half_cols, k, nxt);
        for (int kb = kb_start; kb < k_blocks; kb++) {
          if (WAIT && kb == 0) {
            /* Input readiness: the flag words of the tile's A rows, polled once inline (one
             * acquire each, independent loads); the bounded wait (gemm_internal.h
             * xsg_wait_ready, not inlined) only when one is not ready yet. */
            /* MASKED's count (a dependent global load) only when the tile's rows span groups */
            const int r = p.ready.rows, last = cur.row0 + p.tile_m - 1;
            const int end = cur.row_end >= 0 || cur.row0 / r == min(last, p.M - 1) / r
                                ? (cur.row_end >= 0 ? cur.row_end : p.M)
                                : xsg_masked_rows(p, cur.expert);
            const int row_end = min(cur.row0 + p.tile_m, end);
            int f0 = 0, f1 = -1;
            if (xsg_ready_groups(p.layout == XS_GEMM_GROUPED_MASKED, p.M, p.ready.rows, cur.expert,
                                 cur.row0, row_end, &f0, &f1)) {
              const uint32_t* w = p.ready.flags + (int64_t)f0 * p.ready.span;
              const int n = (f1 - f0 + 1) * p.ready.span;
              /* four words per load where they are 16-byte aligned (the MoE chain polls L1's
               * n_blocks tile flags per row block): one acquire per four instead of per word */
              int ok = 1, i = 0;
              if (((uintptr_t)w & 15) == 0)
                for (; i + 4 <= n; i += 4) {
                  const uint4 v = xs_ld_acquire_sys_v4(w + i);
                  ok &= xsg_ready_ok(v.x, p.ready.expect) & xsg_ready_ok(v.y, p.ready.expect) &
                        xsg_ready_ok(v.z, p.ready.expect) & xsg_ready_ok(v.w, p.ready.expect);
                }
              for (; i < n; i++)
                ok &= xsg_ready_ok(xs_ld_acquire_sys_u32(w + i), p.ready.expect);
              if (ok)
                xs_fence_proxy_async_global(); /* the TMA loads below after the acquires */
              else
                xsg_wait_ready(p, cur.expert, cur.row0, row_end);
            }
          }
          xsg_wait_timed(&empty[s], phase ^ 1); /* fresh barriers pass parity 1 */
          load(cur, kb);
          if (TRACE && kb == 0 && prec && leader) prec[7] = xs_clock64();
          /* The next tile is found while this one's k-blocks stream (the slot waits leave the
           * thread idle anyway), so its first k-block goes out as soon as a slot frees. */
          if (kb == kb_start)
            have_next = next_tile(p, table, offsets, slots, whole, half_cols, k, nxt);
          if (++s == cfg::STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
        cur = nxt;
        have = have_next;
        kb_start = 0;
      }
      /* The end of the schedule: a slot with no loads whose entry says so (the consumers release
       * it like any other, so the drain below sees every slot come back). */
      xsg_wait_timed(&empty[s], phase ^ 1);
      if (leader) {
        info[s].index = -1;
        xs_mbar_arrive(&full[s]);
      }
      if (++s == cfg::STAGES) {
        s = 0;
        phase ^= 1;
      }
      xsg_drain_ring(empty, cfg::STAGES, s, phase); /* bounded: a stuck consumer traps */
    }
  } else {
    /* ================= consumer warpgroups ================= */
    xs_setmaxnreg_inc<cfg::CONSUMER_REGS>();
    const int half = wg - 1;                /* rows [64 * half, 64 * half + 64) of the tile */
    const int tid = threadIdx.x - 128 * wg; /* 0..127 in this warpgroup */
    const int lane = tid % 32;
    uint8_t* my_c = stage_c + half * (cfg::C_BYTES / 2);
    int s = 0;
    uint32_t phase = 0;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++)
      d[i] = 0.0f;
    /* DEFER: the previous tile's last pass, packed (pk[2j + hi] = word(i, hi) of store_tile for
     * the pass's j-th group i), and whether it is still to be stored. */
    static_assert(!DEFER || (BN == 256 && cfg::PASSES == 2), "DEFER: two passes of 128 columns");
    constexpr int GPP = cfg::STAGE_COLS / 8; /* 8-column groups per pass */
    uint32_t pk[DEFER ? 2 * GPP : 1] = {};
    tile_done pending = {0, 0, 0, 0, 0, {nullptr, 0}};
    int has_pending = 0;
    /* v13 (MODE 3): the TMA-stored tiles without SiLU*mul stage their second pass in their last
     * k-block's ring slot, released to the producer at the next tile's first k-block (or after
     * the loop) once this warpgroup's TMA stores have read it: tid 0 arrives for its 4 warps. */
    const int use_slot = SLOT && !silu && cfg::TMA_C && store() == XS_GEMM_STORE_LOCAL;
    int held = 0, has_held = 0;
    int jt = 0;                             /* TRACE: tiles taken so far */
    tile_info piece = {-1, 0, 0, 0, 0, -1}; /* TAIL: a half tile (its first k-block is here) */
    if (spec) {
      xs_mbar_wait(table_ready, 0); /* the table, to check the producer's guess against */
      const bool hit = spec_contig ? xsg_contig_owns(table, g_guess, mb_guess * p.tile_m)
                                   : xsg_spec_hit(p, table, blockIdx.x, g_guess, nb_guess);
      s = hit ? 0 : xsg_spec_drain_slots(spec, full, empty, lane);
    }
    auto word_pk_silu = [&](int i, uint32_t& w0, uint32_t& w1) {
      w0 = pk[2 * i];
      w1 = pk[2 * i + 1];
    };
    auto word_pk_pass0 = [&](int i, int hi) { return pk[2 * i + hi]; };
    auto word_pk_pass1 = [&](int i, int hi) { return pk[2 * (i - GPP) + hi]; };
    auto word_d = [&](int i, int hi) {
      return xsg_pack_bf16x2(d[4 * i + 2 * hi], d[4 * i + 2 * hi + 1]);
    };
    auto word_d_silu = [&](int i, uint32_t& w0, uint32_t& w1) {
      const int j = i + BN / 16; /* gate column pair i <-> up pair i + BN/16 */
      xsg_silu_mul4_bf16(&d[4 * i], &d[4 * j], w0, w1);
    };
    /* DEFER: the pending pass (SiLU: pass 0, else pass 1), with the tile's flag. */
    auto store_pending = [&]() {
      /* NOTE: v11 reads the map entry here, not at the tile's start: 4 more registers live
       * across the main loop made it spill 136 bytes. */
      if (store() == XS_GEMM_STORE_MAP) pending.dst = p.epi.dst_map[pending.index];
      if (silu)
        store_tile<BN, 0, 0>(p, &map_c, my_c, half, tid, silu, store(), pending, 1, word_pk_pass0,
                             word_pk_silu); /* (word_pk_pass0: the branch silu = 0, not taken) */
      else
        store_tile<BN, cfg::PASSES - 1, cfg::PASSES - 1>(p, &map_c, my_c, half, tid, silu, store(),
                                                         pending, 1, word_pk_pass1, word_pk_silu);
    };

    for (;;) {
      const unsigned long long top = TRACE ? xs_clock64() : 0;
      /* The tile's first k-block: its slot's entry says which tile it is (or that none is left). */
      xs_mbar_wait(&full[s], phase);
      const tile_info ti = xsg_entry_lane0(&info[s]);
      if (ti.index < 0) {
        if (lane == 0) xs_mbar_arrive(&empty[s]);
        break;
      }
      if (TAIL && ti.piece >= 0) { /* a half tile: the CTA's last, after this loop */
        piece = ti;
        break;
      }
      const int tile_index = ti.index, row0 = ti.row0, expert = ti.expert;
      const int row_end = ti.row_end >= 0 ? ti.row_end : xsg_masked_rows(p, expert);
      /* The tile's map entry is loaded now: its latency passes under the main loop instead of
       * adding to the epilogue (a one-wave problem has nothing else to hide it under). */
      xs_gemm_tile_dst dst = {nullptr, 0};
      if (!DEFER && store() == XS_GEMM_STORE_MAP) dst = p.epi.dst_map[tile_index];
      /* TRACE: this tile's record (stamps are stored at once: none stays live in a register).
       * [1] and [2] are both "the first k-block is here and the tile known". */
      unsigned long long* const rec = TRACE && tid == 0 && jt < p.trace_cap
                                          ? trace + XSG_TRACE_HEAD + (jt * 2 + half) * XSG_TRACE_REC
                                          : nullptr;
      if (TRACE) {
        jt++;
        if (rec) {
          rec[0] = tile_index;
          rec[1] = rec[2] = xs_clock64();
          rec[5] = top;
        }
      }

      /* ---- main loop: one wgmma group per k-block, one group kept in flight ---- */
      int prev_s = 0;
      for (int kb = 0; kb < k_blocks; kb++) {
        if (kb > 0) xs_mbar_wait(&full[s], phase);
        const uint8_t* sa = ring + s * cfg::STAGE_BYTES + half * (cfg::A_BYTES / 2);
        const uint8_t* sb = ring + s * cfg::STAGE_BYTES + cfg::A_BYTES;
        const uint64_t desc_a = xs_smem_desc_sw128(sa), desc_b = xs_smem_desc_sw128(sb);
        xs_wgmma_fence();
        if constexpr (!NO_MMA) {
#pragma unroll
          for (int kk = 0; kk < cfg::BK / 16; kk++) /* 16-wide K steps: +32 bytes = +2 in the */
            xsg_wgmma_tile<BN>(d, desc_a + 2 * kk, desc_b + 2 * kk, /* descriptor's address field */
                               (kb > 0 || kk > 0) ? 1 : 0);
        }
        xs_wgmma_commit();
        /* DEFER: the previous tile's stores, under this tile's k-blocks 0 and 1 (both issued:
         * about two k-blocks of tensor work queued while the warpgroup stages and stores). */
        if constexpr (DEFER) {
          if (has_pending && kb == (k_blocks > 1 ? 1 : 0)) {
            store_pending();
            has_pending = 0;
          }
        }
        if constexpr (SLOT) {
          if (has_held) {
            if (tid == 0) {
              xs_bulk_wait_read_all();
              xs_mbar_arrive_cnt(&empty[held], 4);
            }
            has_held = 0;
          }
        }
        /* The previous k-block's group has retired once at most one group is pending: its
         * slot can go back to the producer. */
        xs_wgmma_wait<1>();
        if (kb > 0 && lane == 0) xs_mbar_arrive(&empty[prev_s]);
        prev_s = s;
        if (++s == cfg::STAGES) {
          s = 0;
          phase ^= 1;
        }
      }
      xs_wgmma_wait<0>();
      xs_wgmma_fence_regs(d); /* accumulator reads stay after the wait */
      if (!use_slot && lane == 0) xs_mbar_arrive(&empty[prev_s]);
      if (TRACE && rec) rec[3] = xs_clock64();
      if constexpr (NO_EPI) {
        /* Never true (trace_cap >= 0): keeps the accumulators, and so the wgmmas, alive. */
        if (p.trace_cap < 0) {
          float acc = 0.0f;
#pragma unroll
          for (int i = 0; i < BN / 2; i++)
            acc += d[i];
          p.C[threadIdx.x] = (uint16_t)__float_as_uint(acc);
        }
      }

      const tile_done done = {row0, row_end, expert, tile_index, ti.nb, dst};
      if constexpr (DEFER) {
        /* The accumulators are overwritten from the next k-block on: pass 0 now (not with
         * SiLU), the last pass packed for later. */
        if (silu) {
#pragma unroll
          for (int i = 0; i < BN / 16; i++)
            word_d_silu(i, pk[2 * i], pk[2 * i + 1]);
        } else {
          tile_done first = done; /* v11 loads the map entry when it stores (see store_pending) */
          if (store() == XS_GEMM_STORE_MAP) first.dst = p.epi.dst_map[tile_index];
          store_tile<BN, 0, 0>(p, &map_c, my_c, half, tid, silu, store(), first, 0, word_d,
                               word_d_silu);
#pragma unroll
          for (int i = GPP; i < 2 * GPP; i++)
#pragma unroll
            for (int hi = 0; hi < 2; hi++)
              pk[2 * (i - GPP) + hi] = word_d(i, hi);
        }
        pending = done;
        has_pending = 1;
      } else if constexpr (MODE == 2) {
        store_tile_direct<BN>(p, half, tid, silu, done, d);
      } else if constexpr (SLOT) {
        store_tile<BN, 0, cfg::PASSES - 1>(
            p, &map_c, my_c, half, tid, silu, store(), done, 1, word_d, word_d_silu,
            use_slot ? ring + prev_s * cfg::STAGE_BYTES : nullptr, rec);
        held = prev_s;
        has_held = use_slot;
      } else if constexpr (!NO_EPI) {
        store_tile<BN, 0, cfg::PASSES - 1>(p, &map_c, my_c, half, tid, silu, store(), done, 1,
                                           word_d, word_d_silu, nullptr, rec);
      }
      if (TRACE && rec) rec[4] = xs_clock64();
    }
    if constexpr (DEFER) {
      if (has_pending) store_pending();
    }
    /* TAIL: the half tiles of the last partial wave (sched.h xsg_tail_slots: at most one per CTA,
     * its last), outside the tile loop so that their accumulators take the registers of d, which
     * is dead here (in the loop, wgmmas of another shape on d's registers made ptxas serialize
     * the wgmma pipeline, C7519). A half is a 128 x 128 tile: B rows [BN / 2 * piece, + BN / 2)
     * of the tile by m64n128k16, or with SiLU 64 gate rows (at sb) and the matching 64 up rows
     * (at sb + B_BYTES / 2) by two m64n64k16; stored as v2's tile 2 nb + piece would be, through
     * the map entry moved to its columns. */
    while (TAIL && piece.index >= 0) {
      if constexpr (TAIL) {
        float(&h)[BN / 4] = *reinterpret_cast<float(*)[BN / 4]>(&d[0]); /* d is dead here */
        /* The k-block loop, once per wgmma shape (a runtime choice between shapes inside one
         * loop made ptxas serialize the wgmma pipeline, C7519). */
        auto k_loop = [&](auto mma) {
          const int last_s = xsg_k_loop<cfg::STAGES, cfg::STAGE_BYTES, cfg::A_BYTES, cfg::BK>(
              ring, half, lane, k_blocks, full, empty, s, phase, mma, [](int) {},
              [](uint64_t* bar) { xs_mbar_arrive(bar); });
          xs_wgmma_fence_regs(h);
          if (lane == 0) xs_mbar_arrive(&empty[last_s]);
        };
        if (silu) {
          /* the up rows' descriptor is the gate rows' + B_BYTES / 2 (>> 4 in the address field) */
          k_loop([&](uint64_t da, uint64_t db, int acc) {
            xs_wgmma_m64n64k16_bf16_ss(*reinterpret_cast<float(*)[BN / 8]>(&h[0]), da, db, acc);
            xs_wgmma_m64n64k16_bf16_ss(*reinterpret_cast<float(*)[BN / 8]>(&h[BN / 8]), da,
                                       db + (cfg::B_BYTES / 2 >> 4), acc);
          });
        } else {
          k_loop([&](uint64_t da, uint64_t db, int acc) {
            xs_wgmma_m64n128k16_bf16_ss(h, da, db, acc);
          });
        }
        const int row_end = piece.row_end >= 0 ? piece.row_end : xsg_masked_rows(p, piece.expert);
        tile_done td = {piece.row0,  row_end, piece.expert, piece.index, 2 * piece.nb + piece.piece,
                        {nullptr, 0}};
        if (store() == XS_GEMM_STORE_MAP) {
          td.dst = p.epi.dst_map[piece.index];
          td.dst.base = (uint16_t*)td.dst.base + piece.piece * (silu ? BN / 4 : BN / 2);
        }
        auto word_h = [&](int i, int hi) {
          return xsg_pack_bf16x2(h[4 * i + 2 * hi], h[4 * i + 2 * hi + 1]);
        };
        auto word_h_silu = [&](int i, uint32_t& w0, uint32_t& w1) {
          xsg_silu_mul4_bf16(&h[4 * i], &h[4 * (i + BN / 32)], w0, w1); /* up: BN / 32 groups on */
        };
        store_tile<BN / 2, 0, 0>(p, &map_c, my_c, half, tid, silu, store(), td, 0, word_h,
                                 word_h_silu);
        /* the next entry: the end of the schedule, or (not with sched.h's split) another half */
        xs_mbar_wait(&full[s], phase);
        piece = xsg_entry_lane0(&info[s]);
        if (piece.index < 0) {
          if (lane == 0) xs_mbar_arrive(&empty[s]);
          if (++s == cfg::STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
      }
    }
    if constexpr (SLOT) {
      if (has_held && tid == 0) {
        xs_bulk_wait_read_all();
        xs_mbar_arrive_cnt(&empty[held], 4);
      }
    }
    /* Shared memory must outlive the last TMA store's reads. */
    if (MODE != 2 && tid == 0) xs_bulk_wait_all();
    if (TRACE && threadIdx.x == 128) {
      trace[2] = xs_clock64();
      trace[3] = xs_globaltimer();
    }
  }
}

} // namespace

int xsg_hopper_smem_bytes(int bn) {
  return bn == 256   ? hopper_cfg<256>::SMEM
         : bn == 224 ? hopper_cfg<224>::SMEM
         : bn == 208 ? hopper_cfg<208>::SMEM
         : bn == 192 ? hopper_cfg<192>::SMEM
                     : hopper_cfg<128>::SMEM;
}

template <int BN, int MODE, bool WAIT = false, int EPI = XSG_EPI_ANY>
static cudaError_t launch(const xsg_params* p, const xsg_first* first, const CUtensorMap* ma,
                          const CUtensorMap* mb, const CUtensorMap* mc, int ctas,
                          cudaStream_t stream) {
  using cfg = hopper_cfg<BN>;
  static int attr_done = 0; /* NOTE: raising the dynamic smem limit once per process suffices */
  if (!attr_done) {
    cudaError_t e = cudaFuncSetAttribute(gemm_kernel_hopper<BN, MODE, WAIT, EPI>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, cfg::SMEM);
    if (e != cudaSuccess) return e;
    attr_done = 1;
  }
  return xsg_launch(gemm_kernel_hopper<BN, MODE, WAIT, EPI>, *p, ctas, cfg::THREADS, cfg::SMEM,
                    stream, *ma, *mb, *mc, *p, *first);
}

/* A kernel with its epilogue fixed (XSG_EPI_LOCAL ... XSG_EPI_MAP_SILU). */
template <int BN, int MODE, bool WAIT = false>
static cudaError_t launch_fixed(int epi, const xsg_params* p, const xsg_first* first,
                                const CUtensorMap* ma, const CUtensorMap* mb, const CUtensorMap* mc,
                                int ctas, cudaStream_t stream) {
  return xsg_with_epi(epi, [&](auto e) {
    /* NOTE: v11's kernel and v3's with ready flags (WAIT), with SiLU*mul and a local store
     * fixed, have their wgmmas serialized by ptxas (C7511: the accumulators, the pending pass or
     * the waits' state, and the store's addresses exceed the 168 registers a 384-thread CTA
     * has); the run-time kernels are not. AUTO never runs v11 with SiLU*mul. */
    constexpr int EPI =
        (MODE == 1 || WAIT) && e.value == XSG_EPI_LOCAL_SILU ? XSG_EPI_ANY : e.value;
    return launch<BN, MODE, WAIT, EPI>(p, first, ma, mb, mc, ctas, stream);
  });
}

cudaError_t xsg_launch_hopper(const xsg_params* p, const xsg_first* first, int bn, int mode,
                              const CUtensorMap* map_a, const CUtensorMap* map_b,
                              const CUtensorMap* map_c, int ctas, cudaStream_t stream) {
  /* v2-v6 and v11: the epilogue fixed at compile time (tile flags stay a run-time choice). The
   * run-time epilogue (ANY) serves v3's probe modes and, with xsg_probe.epi_any, v3 and v11. */
  const int epi = xsg_epi_of(p->epi.act, p->epi.store);
  if (p->ready.flags) /* v3 only (gemm.cu resolve) */
    return bn == 256 && mode == 0
               ? launch_fixed<256, 0, true>(epi, p, first, map_a, map_b, map_c, ctas, stream)
               : cudaErrorInvalidValue;
  if (bn == 256 && (mode == 0 || mode == 1) && !xsg_probe.epi_any)
    return mode == 1 ? launch_fixed<256, 1>(epi, p, first, map_a, map_b, map_c, ctas, stream)
                     : launch_fixed<256, 0>(epi, p, first, map_a, map_b, map_c, ctas, stream);
  if (bn == 256)
    return mode == 1   ? launch<256, 1>(p, first, map_a, map_b, map_c, ctas, stream)
           : mode == 2 ? launch<256, 2>(p, first, map_a, map_b, map_c, ctas, stream)
           : mode == 3 ? launch<256, 3>(p, first, map_a, map_b, map_c, ctas, stream)
           : mode == 4 ? launch<256, 4>(p, first, map_a, map_b, map_c, ctas, stream)
           : mode == 5 ? launch<256, 5>(p, first, map_a, map_b, map_c, ctas, stream)
           : mode == 6 ? launch<256, 6>(p, first, map_a, map_b, map_c, ctas, stream)
           : mode == 7 ? launch<256, 7>(p, first, map_a, map_b, map_c, ctas, stream)
           : mode == 8 ? launch<256, 8>(p, first, map_a, map_b, map_c, ctas, stream)
                       : launch<256, 0>(p, first, map_a, map_b, map_c, ctas, stream);
  if (bn == 224) return launch_fixed<224, 0>(epi, p, first, map_a, map_b, map_c, ctas, stream);
  if (bn == 208) return launch_fixed<208, 0>(epi, p, first, map_a, map_b, map_c, ctas, stream);
  if (bn == 192) return launch_fixed<192, 0>(epi, p, first, map_a, map_b, map_c, ctas, stream);
  return launch_fixed<128, 0>(epi, p, first, map_a, map_b, map_c, ctas, stream);
}

/* Every kernel function loaded (xs_gemm_preload): the fixed epilogues of each width. */
template <int BN, int MODE, bool WAIT = false> static cudaError_t preload_fixed(void) {
  const void* const k[] = {(const void*)gemm_kernel_hopper<BN, MODE, WAIT, XSG_EPI_LOCAL>,
                           (const void*)gemm_kernel_hopper<BN, MODE, WAIT, XSG_EPI_MAP>,
                           (const void*)gemm_kernel_hopper<BN, MODE, WAIT, XSG_EPI_MAP_SILU>,
                           MODE == 1 || WAIT
                               ? nullptr
                               : (const void*)gemm_kernel_hopper<BN, 0, false, XSG_EPI_LOCAL_SILU>};
  return xsg_load_kernels(k, 4);
}

cudaError_t xsg_preload_hopper(void) {
  const cudaError_t e[] = {preload_fixed<256, 0>(),       preload_fixed<256, 1>(),
                           preload_fixed<256, 0, true>(), preload_fixed<224, 0>(),
                           preload_fixed<208, 0>(),       preload_fixed<192, 0>(),
                           preload_fixed<128, 0>()};
  for (cudaError_t x : e)
    if (x != cudaSuccess) return x;
  const void* const k[] = {(const void*)gemm_kernel_hopper<256, 0, false, XSG_EPI_ANY>,
                           (const void*)gemm_kernel_hopper<256, 1, false, XSG_EPI_ANY>,
                           (const void*)gemm_kernel_hopper<256, 2, false, XSG_EPI_ANY>,
                           (const void*)gemm_kernel_hopper<256, 3, false, XSG_EPI_ANY>,
                           (const void*)gemm_kernel_hopper<256, 0, true, XSG_EPI_ANY>};
  return xsg_load_kernels(k, (int)(sizeof k / sizeof k[0]));
}
