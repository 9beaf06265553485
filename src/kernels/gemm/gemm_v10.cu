/* gemm_v10.cu — v10: v3's operand orientation and wgmma width (m64n256k16, tokens on the wgmma M
 * side) with two INDEPENDENT tile streams per CTA, each a 64 x 256 tile per consumer warpgroup.
 *
 * Why (src/kernels/gemm/README.md, "Tuning round 8"): v3's two consumer warpgroups compute the two
 * 64-row halves of one 128 x 256 tile and run the epilogue together, so the tensor cores idle once
 * per tile; v9 (gemm_v7.cu) gave each warpgroup its own tile stream but with 128-wide wgmma
 * (1.2x the shared-memory bytes per FMA of v3) and lost to v3 while beating v2. v10 keeps v3's
 * m64n256k16 (the bytes per FMA of v3 between shared memory and the tensor cores) and only
 * changes who owns a tile: consumer warpgroup 1 + s runs stream s, whose tiles are 64 rows x 256
 * B rows, so one stream's epilogue runs under the other's main loop (ping-pong without ordered
 * barriers: the streams drift apart by themselves).
 *
 * Per CTA (persistent, one per SM, 384 threads = 3 warpgroups):
 *   warpgroup 0  producers (setmaxnreg.dec 40): lane 0 of warp s (s = 0, 1) feeds stream s: per
 *                64-wide k-block a TMA load of the 64 x 64 A tile and of the two 128-row B halves
 *                (contiguous rows, or gate rows + matching up rows with SiLU*mul) into slot `i`
 *                of stream s's ring, after waiting (bounded) for empty[s][i] and arming
 *                full[s][i] with the slot's bytes.
 *   warpgroups 1, 2  consumers (setmaxnreg.inc 232): warpgroup 1 + s runs stream s: per k-block
 *                4 wgmma m64n256k16 into 128 fp32 registers per thread, one group in flight;
 *                then v3's epilogue for its own tile: registers -> bf16 (or silu(gate)*up) ->
 *                its own swizzled staging (64 x 256, one pass) -> TMA store (STORE_LOCAL) or
 *                16-byte stores through the tile's map entry (STORE_MAP) -> optional tile flag.
 * Schedule: 64-row tiles (p.tile_m = 64); stream s of CTA b takes positions s * ctas + b, then
 * every 2 * ctas (sched.h, xsg_stream_first, as v7); producer s and consumer s walk the same
 * positions, so they agree on the tiles with work without talking. MASKED without a caller's
 * list walks the compacted schedule (tile height 64), as v2-v6.
 * Barriers (one parity bit each, flipped when a ring's slot index wraps):
 *   full[s][i]   count 1: the producer's arrive.expect_tx + the TMA bytes of the slot landing.
 *   empty[s][i]  count 4 (lane 0 of each warp of consumer s): the wgmmas reading the slot retired.
 *   named 1 + s  the 128 threads of consumer s: staging reuse, TMA store, the tile's flag.
 */
#include <cuda_bf16.h>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/hopper_common.cuh"
#include "xstage/ptx.cuh"

namespace {

/* ---- compile-time configuration ---- */
struct v10_cfg {
  static constexpr int BM = 64;     /* tile rows: one consumer warpgroup (the wgmma M) */
  static constexpr int BN = 256;    /* B rows per tile (output: 256, or 128 with SiLU*mul) */
  static constexpr int BK = 64;     /* one 128-byte swizzle atom of bf16 */
  static constexpr int STREAMS = 2; /* consumer warpgroups, each an independent tile stream */
  static constexpr int THREADS = 128 * (1 + STREAMS);
  static constexpr int PRODUCER_REGS = 40;       /* as v3 */
  static constexpr int CONSUMER_REGS = 232;      /* 128 accumulators + addresses + epilogue */
  static constexpr int A_BYTES = BM * BK * 2;    /* 8 KB */
  static constexpr int B_BYTES = BN * BK * 2;    /* 32 KB: two 16 KB halves */
  static constexpr int SLOT = A_BYTES + B_BYTES; /* 40 KB */
  /* NOTE: 2 stages per stream is the most that fits: 3 would be 2 x 3 x 40 KB = 240 KB, over the
   * 227 KB of a CTA whatever the staging (with none at all). So a stream has one slot loading
   * while the other is read (v3: 3 of 4 loading); the two streams together keep 2 x 40 KB in
   * flight. The room left is spent on a whole-tile staging per stream (64 x 256 bf16 = 32 KB, one
   * store pass, no wait between passes): 1 KB slack + 160 KB ring + 64 KB staging + barriers +
   * 1 KB table = 231 492 bytes. Deeper rings would need 32-wide k-blocks (64-byte swizzle, 20 KB
   * slots): not built in this round. */
  static constexpr int STAGES = 2;
  static constexpr int C_BYTES = BM * BN * 2; /* per stream: 4 chunks of 64 columns x 8 KB */
  static constexpr int BAR_BYTES = 2 * STREAMS * STAGES * 8;
  static constexpr int TABLE_BYTES = 4 * (XSG_MASKED_MAX_EXPERTS + 1);
  static constexpr int SMEM = 1024 /* alignment slack */ + STREAMS * STAGES * SLOT +
                              STREAMS * C_BYTES + BAR_BYTES + TABLE_BYTES;
  static_assert(SMEM <= 227 * 1024, "shared memory over the 227 KB a Hopper CTA may use");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * STREAMS <=
                    (65536 / THREADS & ~7) * THREADS,
                "setmaxnreg: more registers than the CTA's launch allocation (gemm_v2.cu)");
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 2048 == 0 && SLOT % 1024 == 0 &&
                    C_BYTES % 1024 == 0,
                "swizzle atoms (8 rows x 128 bytes) stay 1024-byte aligned");
  static_assert(XS_GEMM_GROUP_ALIGN % BM == 0, "a CONTIG tile never straddles two experts");
};

__global__ void __launch_bounds__(v10_cfg::THREADS, 1)
    gemm_kernel_v10(const __grid_constant__ CUtensorMap map_a,
                    const __grid_constant__ CUtensorMap map_b,
                    const __grid_constant__ CUtensorMap map_c,
                    const __grid_constant__ xsg_params p) {
  using cfg = v10_cfg;
  extern __shared__ uint8_t smem_raw[];
  /* NOTE: 128B-swizzled TMA boxes and wgmma descriptors need 1024-byte aligned tiles. */
  uint8_t* smem = xsg_smem_align1024(smem_raw);
  /* STREAMS rings of STAGES slots [A 64x64 | B half 0 | B half 1], then STREAMS stagings. */
  uint8_t* stage_c = smem + cfg::STREAMS * cfg::STAGES * cfg::SLOT;
  uint64_t* full = (uint64_t*)(stage_c + cfg::STREAMS * cfg::C_BYTES); /* [s][i] */
  uint64_t* empty = full + cfg::STREAMS * cfg::STAGES;
  int32_t* table = (int32_t*)(empty + cfg::STREAMS * cfg::STAGES); /* p.compact: the prefix */

  const int wg = threadIdx.x / 128;
  const int k_blocks = xsg_cdiv(p.K, cfg::BK);
  const int silu = p.epi.act == XS_GEMM_ACT_SILU_MUL;

  if (threadIdx.x == 0) {
    for (int i = 0; i < cfg::STREAMS * cfg::STAGES; i++) {
      xs_mbar_init(&full[i], 1);
      xs_mbar_init(&empty[i], 4);
    }
    xs_fence_mbar_init();
  }
  xsg_griddep_enter(); /* PDL: the previous kernel is done from here on */
  if (p.compact) xsg_build_masked_table(table, &p);
  __syncthreads();
  /* Schedule length: the caller's list, every tile, or the masked tiles with work. */
  const int positions = p.compact ? table[p.experts] : p.positions;
  const int step = cfg::STREAMS * gridDim.x;

  if (wg == 0) {
    /* ================= producers: lane 0 of warp s feeds stream s ================= */
    xs_setmaxnreg_dec<cfg::PRODUCER_REGS>();
    const int st = threadIdx.x / 32;
    if (st < cfg::STREAMS && threadIdx.x % 32 == 0) {
      xs_tma_prefetch_map(&map_a);
      xs_tma_prefetch_map(&map_b);
      uint8_t* ring = smem + st * cfg::STAGES * cfg::SLOT;
      uint64_t* my_full = full + st * cfg::STAGES;
      uint64_t* my_empty = empty + st * cfg::STAGES;
      int s = 0;
      uint32_t phase = 0;
      for (int k = xsg_stream_first(blockIdx.x, st, gridDim.x); k < positions; k += step) {
        const int tile_index =
            p.compact ? xsg_masked_tile(&p.grid, table, p.experts, k) : xsg_position_tile(&p, k);
        const xsg_tile t = xsg_tile_decode(&p.grid, tile_index);
        int row0, row_end, expert;
        if (!xsg_tile_rows(&p, t, &row0, &row_end, &expert)) continue;
        const int a_batch = p.layout == XS_GEMM_GROUPED_MASKED ? expert : 0;
        const int b_batch = p.layout == XS_GEMM_DENSE ? 0 : expert;
        /* B rows of the two halves: [256 nb, +128) and the next 128, or with SiLU the gate rows
         * [128 nb, +128) and the matching up rows (I = N/2 further on). */
        const int b_row0 = silu ? t.nb * (cfg::BN / 2) : t.nb * cfg::BN;
        const int b_row1 = silu ? b_row0 + p.N / 2 : b_row0 + cfg::BN / 2;
        /* NOTE: the full box bytes (TMA counts the zero-filled out-of-bounds part of a box). A
         * second half wholly past N (no SiLU) is not loaded: its stale rows only feed output
         * columns >= N, which are never stored. */
        const uint32_t bytes = cfg::A_BYTES + (b_row1 < p.N ? cfg::B_BYTES : cfg::B_BYTES / 2);
        for (int kb = 0; kb < k_blocks; kb++) {
          xsg_wait_timed(&my_empty[s], phase ^ 1); /* fresh barriers pass parity 1 */
          uint8_t* sa = ring + s * cfg::SLOT;
          uint8_t* sb = sa + cfg::A_BYTES;
          xs_mbar_arrive_expect_tx(&my_full[s], bytes);
          xs_tma_load_3d(sa, &map_a, &my_full[s], kb * cfg::BK, row0, a_batch);
          xs_tma_load_3d(sb, &map_b, &my_full[s], kb * cfg::BK, b_row0, b_batch);
          if (b_row1 < p.N)
            xs_tma_load_3d(sb + cfg::B_BYTES / 2, &map_b, &my_full[s], kb * cfg::BK, b_row1,
                           b_batch);
          if (++s == cfg::STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
      }
      xsg_drain_ring(my_empty, cfg::STAGES, s, phase); /* bounded: a stuck consumer traps */
    }
  } else {
    /* ================= consumers: warpgroup 1 + s runs stream s ================= */
    xs_setmaxnreg_inc<cfg::CONSUMER_REGS>();
    const int st = wg - 1;
    const int tid = threadIdx.x - 128 * wg; /* 0..127 in this warpgroup */
    const int warp = tid / 32, lane = tid % 32;
    const uint8_t* ring = smem + st * cfg::STAGES * cfg::SLOT;
    uint64_t* my_full = full + st * cfg::STAGES;
    uint64_t* my_empty = empty + st * cfg::STAGES;
    uint8_t* my_c = stage_c + st * cfg::C_BYTES;
    const int out_cols = silu ? cfg::BN / 2 : cfg::BN; /* output columns per tile */
    int s = 0;
    uint32_t phase = 0;
    float d[cfg::BN / 2];
#pragma unroll
    for (int i = 0; i < cfg::BN / 2; i++)
      d[i] = 0.0f;

    for (int k = xsg_stream_first(blockIdx.x, st, gridDim.x); k < positions; k += step) {
      const int tile_index =
          p.compact ? xsg_masked_tile(&p.grid, table, p.experts, k) : xsg_position_tile(&p, k);
      const xsg_tile t = xsg_tile_decode(&p.grid, tile_index);
      int row0, row_end, expert;
      if (!xsg_tile_rows(&p, t, &row0, &row_end, &expert)) continue;

      /* ---- main loop: one wgmma group per k-block, one group kept in flight ---- */
      int prev_s = 0;
      for (int kb = 0; kb < k_blocks; kb++) {
        xs_mbar_wait(&my_full[s], phase);
        const uint8_t* sa = ring + s * cfg::SLOT;
        const uint64_t desc_a = xs_smem_desc_sw128(sa);
        const uint64_t desc_b = xs_smem_desc_sw128(sa + cfg::A_BYTES);
        xs_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < cfg::BK / 16; kk++) /* +32 bytes per k16 step = +2 in the */
          xs_wgmma_m64n256k16_bf16_ss(d, desc_a + 2 * kk, desc_b + 2 * kk, /* address field */
                                      (kb > 0 || kk > 0) ? 1 : 0);
        xs_wgmma_commit();
        /* The previous k-block's group has retired once at most one group is pending: its slot
         * goes back to this stream's producer. */
        xs_wgmma_wait<1>();
        if (kb > 0 && lane == 0) xs_mbar_arrive(&my_empty[prev_s]);
        prev_s = s;
        if (++s == cfg::STAGES) {
          s = 0;
          phase ^= 1;
        }
      }
      xs_wgmma_wait<0>();
      xs_wgmma_fence_regs(d); /* accumulator reads stay after the wait */
      if (lane == 0) xs_mbar_arrive(&my_empty[prev_s]);

      /* ---- epilogue (v3's, one pass over the whole 64 x 256 tile): registers -> swizzled
       * staging (bf16) -> TMA store or 16-byte stores. Fragment rows r_lo and r_lo + 8
       * (r_lo % 8 == lane / 4), column pairs 8i + 2(lane % 4); addresses as row base + (chunk,
       * swizzled unit), as v3 (no hoisted per-column addresses). */
      const int r_lo = warp * 16 + lane / 4;
      const int x = r_lo & 7;
      uint8_t* row_lo = my_c + r_lo * 128 + 4 * (lane % 4);
      uint8_t* row_hi = row_lo + 8 * 128;
      const int col0 = t.nb * out_cols;
      const int tma = p.epi.store == XS_GEMM_STORE_LOCAL;
      /* The staging is free once the previous tile's TMA store has read it (TMA path) and this
       * warpgroup's threads have read it back (16-byte path): both ordered by this barrier. */
      if (tma && tid == 0) xs_bulk_wait_read_all();
      xs_named_bar_sync(1 + st, 128);
      if (silu) {
#pragma unroll
        for (int i = 0; i < cfg::BN / 16; i++) { /* gate column pair i <-> up pair i + BN/16 */
          const int j = i + cfg::BN / 16;
          const int off = (i >> 3) * 8192 + (((i & 7) ^ x) << 4);
          xsg_silu_mul4_bf16(&d[4 * i], &d[4 * j], *(uint32_t*)(row_lo + off),
                             *(uint32_t*)(row_hi + off));
        }
      } else {
#pragma unroll
        for (int i = 0; i < cfg::BN / 8; i++) {
          const int off = (i >> 3) * 8192 + (((i & 7) ^ x) << 4);
          *(uint32_t*)(row_lo + off) = xsg_pack_bf16x2(d[4 * i], d[4 * i + 1]);
          *(uint32_t*)(row_hi + off) = xsg_pack_bf16x2(d[4 * i + 2], d[4 * i + 3]);
        }
      }
      if (tma) {
        /* ---- TMA store: the writes are ordered for the async proxy, then one thread issues
         * 64 x 64 boxes (4, or 2 with SiLU*mul); boxes wholly outside C are skipped, partial
         * ones clipped by TMA (rows past M, columns past n_out). */
        xs_fence_proxy_async_smem();
        xs_named_bar_sync(1 + st, 128);
        if (tid == 0) {
          const int c_batch = p.layout == XS_GEMM_GROUPED_MASKED ? expert : 0;
          for (int j = 0; j < out_cols / 64; j++)
            if (col0 + 64 * j < p.n_out)
              xs_tma_store_3d(&map_c, my_c + j * 8192, col0 + 64 * j, row0, c_batch);
          xs_bulk_commit();
        }
      } else {
        /* ---- 16-byte stores from staging through the tile's map entry (read before the
         * barrier so its latency overlaps the other warps' staging writes). */
        const xs_gemm_tile_dst dst = p.epi.dst_map[tile_index];
        xs_named_bar_sync(1 + st, 128);
        const int rows = row_end - row0, cols = p.n_out - col0;
        if (silu)
          xsg_store_staged<cfg::BN / 16>(my_c, (uint16_t*)dst.base, dst.ld, tid, rows, cols);
        else
          xsg_store_staged<cfg::BN / 8>(my_c, (uint16_t*)dst.base, dst.ld, tid, rows, cols);
      }
      if (p.epi.tile_flags) /* the tile is this warpgroup's alone */
        xsg_raise_tile_flag(&p.epi.tile_flags[tile_index], tma, tid, 1 + st, 128, tid == 0);
    }
    /* Shared memory must outlive the last TMA store's reads. */
    if (tid == 0) xs_bulk_wait_all();
  }
}

} // namespace

cudaError_t xsg_launch_v10(const xsg_params* p, const CUtensorMap* map_a, const CUtensorMap* map_b,
                           const CUtensorMap* map_c, int ctas, cudaStream_t stream) {
  if (p->tile_m != v10_cfg::BM) return cudaErrorInvalidValue;
  static int attr_done = 0; /* NOTE: raising the dynamic smem limit once per process suffices */
  if (!attr_done) {
    cudaError_t e = cudaFuncSetAttribute(
        gemm_kernel_v10, cudaFuncAttributeMaxDynamicSharedMemorySize, v10_cfg::SMEM);
    if (e != cudaSuccess) return e;
    attr_done = 1;
  }
  return xsg_launch(gemm_kernel_v10, *p, ctas, v10_cfg::THREADS, v10_cfg::SMEM, stream, *map_a,
                    *map_b, *map_c, *p);
}

cudaError_t xsg_preload_v10(void) {
  cudaFuncAttributes a;
  return cudaFuncGetAttributes(&a, (const void*)gemm_kernel_v10);
}
