/* gemm_v8.cu — the Hopper GEMM with clusters of two CTAs: v8 = v3's tile (128 x 256, a producer
 * warpgroup and two consumer warpgroups, persistent) run by 2-CTA clusters whose CTAs compute
 * vertically adjacent tiles and share the B tile through TMA multicast.
 *
 * Why (src/kernels/gemm/README.md, "Tuning round 6"): a 128 x 256 tile reads 16 KB of A and
 * 32 KB of B per k-block from L2; two CTAs on the same n-block read the same 32 KB. In a cluster
 * of two, each CTA loads one 128-row half of B and multicasts it to both, so each B byte crosses
 * L2 -> SM once per cluster: 32 KB instead of 48 KB per CTA and k-block (2/3 of v3's L2 traffic).
 *
 * Per cluster (ranks 0 and 1; cluster c of C takes pair positions c, c + C, ... of the pair
 * schedule, sched.h "v8"; both CTAs' producers walk the same positions and so run the same ring
 * rounds; each hands its consumers the pair through the entry of the pair's first ring slot, as
 * gemm_v2.cu does, and ends with one more round whose entry says the schedule is over):
 *   pair     m-blocks first + 2j (rank 0) and first + 2j + 1 (rank 1) of one group, one n-block.
 *            A pair whose rank-1 tile does not exist (odd m-block count) or has no work still
 *            runs on both CTAs: rank 1 loads its half of B for rank 0, computes nothing, stores
 *            nothing ("idle member").
 *   producer thread 0 of warpgroup 0: per 64-wide k-block, waits empty[s] (released by the
 *            consumers of BOTH CTAs), arms full[s] with arrive.expect_tx(A bytes if its tile has
 *            work + all B bytes), loads its A tile (128 x 64) into its own slot, and loads B half
 *            `rank` (128 x 64: rows [n0, n0 + 128) for rank 0; the next 128, or with SiLU*mul the
 *            matching up rows, for rank 1) with .multicast::cluster into slot s of both CTAs,
 *            signalling both CTAs' full[s].
 *   consumers warpgroups 1, 2: as v3 (each 64 rows x 256 columns, wgmma m64n256k16, one group in
 *            flight, the same epilogue: TMA store, map hook, flags, SiLU*mul), except that a slot
 *            is released on the empty barriers of both CTAs (mapa + remote arrive); an idle
 *            member's consumers wait for each round's bytes and release the slot at once.
 * Barriers (one parity bit each, flipped when the slot index wraps; protocol and proof in the
 * README, "v8: the barrier protocol"):
 *   full[s]   count 1: own producer's arrive.expect_tx; tx = own A + half 0 (rank 0's multicast)
 *             + half 1 (rank 1's multicast).
 *   empty[s]  count 16: lane 0 of each of the 8 consumer warps of EACH CTA of the cluster.
 *   named 1, 2 / 3  as v3 (one consumer warpgroup / both).
 *   cluster barrier  at entry (barrier inits visible to the partner before its first multicast
 *             or remote arrival) and at exit (with the producers' drains: no CTA exits while its
 *             partner may still arrive on its barriers or write into its ring).
 * Every wait that can see a lost arrival ends: the producers' waits are bounded (4 s, then trap),
 * and each producer, after its last round, waits until both CTAs' consumers have released every
 * slot (bounded too), so a consumer stuck on a full barrier is caught by a producer's trap.
 */
#include <cuda_bf16.h>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/hopper_common.cuh"
#include "xstage/ptx.cuh"

namespace {

/* ---- compile-time configuration ---- */
struct v8_cfg {
  static constexpr int BM = 128; /* tile rows: two consumer warpgroups x 64 */
  static constexpr int BN = 256; /* tile columns in B-row space (output: 256, or 128 SiLU) */
  static constexpr int BK = 64;  /* one 128-byte swizzle atom of bf16 */
  static constexpr int CLUSTER = 2;
  static constexpr int CONSUMERS = 2;
  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  /* NOTE: v3's budgets (gemm_v2.cu): the producer holds the current and the next pair. */
  static constexpr int PRODUCER_REGS = 56;
  static constexpr int CONSUMER_REGS = 224;
  static constexpr int A_BYTES = BM * BK * 2;            /* 16 KB, this CTA's own rows */
  static constexpr int B_HALF_BYTES = (BN / 2) * BK * 2; /* 16 KB, one CTA's share of B */
  static constexpr int B_BYTES = CLUSTER * B_HALF_BYTES; /* 32 KB, in every CTA's slot */
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;  /* 48 KB */
  static constexpr int STAGE_COLS = 128;                 /* staging: 2 passes per tile */
  static constexpr int PASSES = BN / STAGE_COLS;
  static constexpr int C_BYTES = BM * STAGE_COLS * 2; /* 32 KB */
  static constexpr int STAGES = 4;
  /* empty[s]: one arrival per consumer warp of each CTA of the cluster. */
  static constexpr int EMPTY_ARRIVALS = CLUSTER * 4 * CONSUMERS;
  static constexpr uint16_t CTA_MASK = (1u << CLUSTER) - 1; /* multicast to both CTAs */
  static constexpr int BAR_BYTES = 2 * STAGES * 8;
  /* Compacted pair walk (MASKED, CONTIG): pair prefix over at most MAX_EXPERTS experts. */
  static constexpr int TABLE_BYTES = 4 * (XSG_MASKED_MAX_EXPERTS + 1);
  /* The producer's pair entries (struct v8_info), one per ring slot (tuning round 10). */
  static constexpr int INFO_BYTES = 32 * STAGES;
  static constexpr int SMEM = 1024 /* alignment slack */ + STAGES * STAGE_BYTES + C_BYTES +
                              BAR_BYTES + TABLE_BYTES + INFO_BYTES;
  static_assert(SMEM <= 227 * 1024, "shared memory over the 227 KB a Hopper CTA may use");
  static_assert(A_BYTES % 1024 == 0 && B_HALF_BYTES % 1024 == 0,
                "swizzle atoms (8 rows x 128 bytes) stay 1024-byte aligned in every slot");
  static_assert(CLUSTER == 2, "the pair schedule (sched.h) is written for clusters of two");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * CONSUMERS <=
                    (65536 / THREADS & ~7) * THREADS,
                "setmaxnreg: more registers than the CTA's launch allocation (gemm_v2.cu)");
};

/* This CTA's tile of a pair. */
struct v8_tile {
  int index;   /* tile index (flags, map entry) */
  int row0;    /* first row: in the group's rows (MASKED) or in A / C (DENSE, CONTIG) */
  int row_end; /* rows below it are stored (MASKED: the expert's count; else M) */
  int expert;  /* B batch (grouped); A and C batch (MASKED) */
  int nb;      /* n-block (B rows, output columns) */
};

/* Pair position k -> what this CTA does with it: 0 the pair has no work (both CTAs skip it),
 * 1 this CTA's tile has work, 2 only the partner's (rank 0's) has: this CTA is the idle member.
 * Both CTAs of a cluster get the same pair and the same 0-or-not answer (it depends on rank 0's
 * tile only), so they run the same rounds of their rings. Fills *t for answers 1 and 2 (for 2,
 * only expert and nb mean anything: the B rows this CTA loads for its partner). */
__device__ __forceinline__ int v8_pair(const xsg_params& p, const int32_t* table, int k, int rank,
                                       v8_tile* t) {
  const xsg_grid pairs = xsg_pair_grid(&p.grid);
  const xsg_tile pr = p.compact ? xsg_compact_pair(&pairs, table, p.experts, k)
                                : xsg_tile_decode(&pairs, xsg_order_tile(&pairs, k));
  int first = 0, end, group = 0;
  if (p.layout == XS_GEMM_GROUPED_CONTIG) {
    /* NOTE: segments start at multiples of XS_GEMM_GROUP_ALIGN = BM rows (the API's contract),
     * so a pair never straddles two experts. */
    first = p.m_offsets[pr.g] / v8_cfg::BM;
    end = p.m_offsets[pr.g + 1] / v8_cfg::BM;
    t->row_end = p.M;
  } else if (p.layout == XS_GEMM_GROUPED_MASKED) {
    const int count = p.m_counts[pr.g];
    t->row_end = count < p.M ? count : p.M;
    end = xsg_cdiv(t->row_end, v8_cfg::BM);
    group = pr.g;
  } else {
    end = p.grid.m_blocks;
    t->row_end = p.M;
  }
  t->expert = p.layout == XS_GEMM_DENSE ? 0 : pr.g;
  t->nb = pr.nb;
  int mb;
  if (!xsg_pair_member(first, end, pr.mb, 0, &mb)) return 0;
  const int mine = xsg_pair_member(first, end, pr.mb, rank, &mb);
  t->row0 = mb * v8_cfg::BM;
  t->index = xsg_tile_index(&p.grid, group, mb, pr.nb);
  return mine ? 1 : 2;
}

/* A pair of the schedule as the producer hands it to its consumers (as gemm_v2.cu's tile_info,
 * tuning round 10): one entry per ring slot, the slot of the pair's first k-block, written before
 * that round's arrive.expect_tx and read after its full wait. work: v8_pair's answer (1: this
 * CTA's tile has work, 2: this CTA is the idle member), 0: the schedule has ended. */
struct v8_info {
  int work;
  v8_tile t;
};

/* The next pair with work at pair position k or later (k moves past it): v8_pair's answer, 0
 * when none is left. Both CTAs of a cluster get the same sequence of positions. */
__device__ __forceinline__ int v8_next(const xsg_params& p, const int32_t* table, int positions,
                                       int clusters, int rank, int& k, v8_tile* t) {
  for (; k < positions; k += clusters) {
    const int work = v8_pair(p, table, k, rank, t);
    if (work) {
      k += clusters;
      return work;
    }
  }
  return 0;
}

/* A consumer warp gives slot `bar`'s round back: one arrival on the empty barrier of each CTA of
 * the cluster (the partner's producer multicasts into this CTA's slot too), after the wgmma reads
 * of the slot have retired (the caller waited for them). */
__device__ __forceinline__ void v8_release(uint64_t* bar) {
  xs_mbar_arrive_remote_cta(xs_mapa_u32(bar, 0)); /* (ptx/hopper.cuh: why not .release.cluster) */
  xs_mbar_arrive_remote_cta(xs_mapa_u32(bar, 1));
}

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(v8_cfg::THREADS, 1)
    gemm_kernel_v8(const __grid_constant__ CUtensorMap map_a,
                   const __grid_constant__ CUtensorMap map_b,
                   const __grid_constant__ CUtensorMap map_c,
                   const __grid_constant__ xsg_params p) {
  using cfg = v8_cfg;
  constexpr int BN = cfg::BN;
  extern __shared__ uint8_t smem_raw[];
  /* NOTE: 128B-swizzled TMA boxes and wgmma descriptors need 1024-byte aligned tiles. The
   * multicast writes at the same CTA-relative offset in both CTAs: the alignment slack is the
   * same in both (same kernel, same static shared memory), so the rings line up. */
  uint8_t* smem = xsg_smem_align1024(smem_raw);
  uint8_t* ring = smem;                                     /* STAGES x (A, B half 0, B half 1) */
  uint8_t* stage_c = smem + cfg::STAGES * cfg::STAGE_BYTES; /* C staging, 2 x BM/2 rows */
  uint64_t* full = (uint64_t*)(stage_c + cfg::C_BYTES);
  uint64_t* empty = full + cfg::STAGES;
  int32_t* table = (int32_t*)(empty + cfg::STAGES);               /* p.compact: the pair prefix */
  v8_info* info = (v8_info*)((uint8_t*)table + cfg::TABLE_BYTES); /* one per ring slot */
  static_assert(sizeof(v8_info) <= 32, "pair entries");

  const int wg = threadIdx.x / 128;
  const int k_blocks = xsg_cdiv(p.K, cfg::BK);
  const int silu = p.epi.act == XS_GEMM_ACT_SILU_MUL;
  const int cluster = (int)xs_cluster_id_x(), clusters = (int)xs_cluster_count_x();

  if (threadIdx.x == 0) {
    xs_tma_prefetch_map(&map_a); /* first: the fetch overlaps the set-up below */
    xs_tma_prefetch_map(&map_b);
    if (p.epi.store == XS_GEMM_STORE_LOCAL) xs_tma_prefetch_map(&map_c);
    for (int s = 0; s < cfg::STAGES; s++) {
      xs_mbar_init(&full[s], 1);
      xs_mbar_init(&empty[s], cfg::EMPTY_ARRIVALS);
    }
    xs_fence_mbar_init(); /* release.cluster: the partner may arrive on / multicast to these */
  }
  xsg_griddep_enter(); /* PDL: the previous kernel is done from here on */
  if (p.compact) {
    /* Pairs with work per expert (MASKED: from the device counts; CONTIG: from the offsets),
     * then their prefix (warp 0). */
    const int E = p.experts, nbk = p.grid.n_blocks;
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
      int rows;
      if (p.layout == XS_GEMM_GROUPED_CONTIG) {
        rows = p.m_offsets[e + 1] - p.m_offsets[e];
      } else {
        const int count = p.m_counts[e];
        rows = count < p.M ? count : p.M;
      }
      table[e + 1] = xsg_pair_work(rows, cfg::BM, nbk);
    }
    __syncthreads();
    xsg_scan_table(table, E);
  }
  __syncthreads();
  /* Both CTAs' barriers are initialized (and their tables built) before either producer
   * multicasts into the other or either consumer arrives on the other's barriers. */
  xs_cluster_sync();
  const int positions = p.compact ? table[p.experts] : p.positions; /* pair positions */

  if (wg == 0) {
    /* ================= producer warpgroup ================= */
    xs_setmaxnreg_dec<cfg::PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      const int rank = (int)xs_cluster_ctarank();
      int s = 0;
      uint32_t phase = 0;
      int k = cluster;
      v8_tile t = {0, 0, 0, 0, 0};
      int work = v8_next(p, table, positions, clusters, rank, k, &t);
      while (work) {
        const int a_batch = p.layout == XS_GEMM_GROUPED_MASKED ? t.expert : 0;
        const int b_batch = p.layout == XS_GEMM_DENSE ? 0 : t.expert;
        /* B rows of the two halves: [n0, n0 + 128) and the next 128, or with SiLU the gate rows
         * and the matching up rows (I = N/2 further on). Rank r loads half r for both CTAs.
         * NOTE: when the second half lies wholly past N (no SiLU, N ends inside the first half),
         * rank 1 loads the first half's rows again into the second half's place: its values feed
         * only output columns >= N, never stored. v3 skips that load; v8 must not: the protocol
         * rests on every round of every CTA's full barrier waiting for BOTH producers, so that no
         * consumer releases a round on its partner's empty barrier before that barrier's phase
         * of the previous use of the slot has completed (README, "v8: the barrier protocol"). */
        const int b_row0 = silu ? t.nb * (BN / 2) : t.nb * BN;
        const int b_row1 = silu ? b_row0 + p.N / 2 : b_row0 + BN / 2;
        const int b_row = rank == 0 ? b_row0 : b_row1 < p.N ? b_row1 : b_row0;
        /* NOTE: full box bytes: TMA counts the zero-filled out-of-bounds part of a box too. This
         * CTA receives its A tile (when its tile has work) and both B halves. */
        const uint32_t bytes = (work == 1 ? cfg::A_BYTES : 0) + cfg::B_BYTES;
        v8_tile nt = {0, 0, 0, 0, 0};
        int next_work = 0;
        for (int kb = 0; kb < k_blocks; kb++) {
          /* Released by both CTAs' consumers: this producer's multicast writes into both.
           * NOTE: CTA-scope acquire (as CUTLASS's cluster pipelines): a wait with
           * `.acquire.cluster` adds a CCTL.IVALL (L1 invalidate) after every successful wait
           * and orders nothing the TMA writes that follow need (see xs_mbar_arrive_remote_cta). */
          xsg_wait_timed(&empty[s], phase ^ 1); /* fresh barriers pass parity 1 */
          uint8_t* sa = ring + s * cfg::STAGE_BYTES;
          uint8_t* sb = sa + cfg::A_BYTES;
          if (kb == 0) info[s] = {work, t}; /* released by the arrive below */
          xs_mbar_arrive_expect_tx(&full[s], bytes);
          if (work == 1) xs_tma_load_3d(sa, &map_a, &full[s], kb * cfg::BK, t.row0, a_batch);
          xs_tma_load_3d_multicast(sb + rank * cfg::B_HALF_BYTES, &map_b, &full[s], kb * cfg::BK,
                                   b_row, b_batch, cfg::CTA_MASK);
          /* The next pair is found while this one's k-blocks stream (tuning round 10). */
          if (kb == 0) next_work = v8_next(p, table, positions, clusters, rank, k, &nt);
          if (++s == cfg::STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
        t = nt;
        work = next_work;
      }
      /* The end of the schedule: one more round whose entry says so. It still carries both B
       * halves (any rows: nobody reads them), so that, like every round, each CTA's full barrier
       * waits for both producers (the protocol above). */
      xsg_wait_timed(&empty[s], phase ^ 1);
      info[s].work = 0;
      xs_mbar_arrive_expect_tx(&full[s], cfg::B_BYTES);
      xs_tma_load_3d_multicast(ring + s * cfg::STAGE_BYTES + cfg::A_BYTES +
                                   rank * cfg::B_HALF_BYTES,
                               &map_b, &full[s], 0, 0, 0, cfg::CTA_MASK);
      if (++s == cfg::STAGES) {
        s = 0;
        phase ^= 1;
      }
      /* both CTAs' consumers arrive on these barriers: the drain covers the partner too */
      xsg_drain_ring(empty, cfg::STAGES, s, phase); /* bounded: a stuck consumer traps */
    }
  } else {
    /* ================= consumer warpgroups ================= */
    xs_setmaxnreg_inc<cfg::CONSUMER_REGS>();
    const int half = wg - 1;                /* rows [64 * half, 64 * half + 64) of the tile */
    const int tid = threadIdx.x - 128 * wg; /* 0..127 in this warpgroup */
    const int warp = tid / 32, lane = tid % 32;
    uint8_t* my_c = stage_c + half * (cfg::C_BYTES / 2);
    const int out_cols = silu ? BN / 2 : BN; /* output columns per tile */
    int s = 0;
    uint32_t phase = 0;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++)
      d[i] = 0.0f;

    for (;;) {
      /* The pair's first round: its slot's entry says what this CTA does (or that none is left). */
      xs_mbar_wait(&full[s], phase);
      const v8_info entry = xsg_entry_lane0(&info[s]);
      const int work = entry.work;
      const v8_tile t = entry.t;
      if (!work) {
        if (lane == 0) v8_release(&empty[s]);
        break;
      }
      if (work == 2) {
        /* ---- idle member: the pair's rounds without wgmma. Each slot is released only once
         * its bytes have landed (the partner's multicast writes into it). */
        for (int kb = 0; kb < k_blocks; kb++) {
          if (kb > 0) xs_mbar_wait(&full[s], phase);
          if (lane == 0) v8_release(&empty[s]);
          if (++s == cfg::STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
        continue;
      }

      /* ---- main loop: one wgmma group per k-block, one group kept in flight; a slot goes back
       * to both producers (hopper_common.cuh xsg_k_loop) ---- */
      const int prev_s = xsg_k_loop<cfg::STAGES, cfg::STAGE_BYTES, cfg::A_BYTES, cfg::BK>(
          ring, half, lane, k_blocks, full, empty, s, phase,
          [&](uint64_t da, uint64_t db, int acc) { xs_wgmma_m64n256k16_bf16_ss(d, da, db, acc); },
          [](int) {}, [](uint64_t* bar) { v8_release(bar); });
      xs_wgmma_fence_regs(d); /* accumulator reads stay after the wait */
      if (lane == 0) v8_release(&empty[prev_s]);

      /* ---- epilogue (v3's): registers -> swizzled staging (bf16) -> global, two passes of 128
       * columns (SiLU*mul: one pass of the 128 output columns). */
      /* stmatrix.x4 of 8-column groups i, i + 1 (gemm_v2.cu store_tile): lane 8m + j addresses
       * row j of matrix m (m & 1: rows + 8; m >> 1: group + 1), unit (i & 7) ^ (m >> 1) ^ j. */
      const uint32_t sm_row =
          xs_smem_u32(my_c) + (warp * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * 128;
      const int st_y = (lane >> 4) ^ (lane & 7);
      const int out_row0 = t.row0 + 64 * half; /* first output row of this half */
      const int out_col0 = t.nb * out_cols;
      const int tma = p.epi.store == XS_GEMM_STORE_LOCAL;
      constexpr int GPP = cfg::STAGE_COLS / 8; /* 8-column groups per pass */
#pragma unroll
      for (int ps = 0; ps < cfg::PASSES; ps++) {
        if (ps > 0 && silu) break; /* SiLU output (BN/2 columns) is one pass */
        /* The staging area is free once the previous TMA store has read it (TMA path) and the
         * other threads have read it back (16-byte store path): both ordered by this barrier. */
        if (tma && tid == 0) xs_bulk_wait_read_all();
        xs_named_bar_sync(1 + half, 128);
        if (silu) {
          /* gate column pair i <-> up pair i + BN/16 */
          static_assert((BN / 16) % 2 == 0, "stmatrix.x4 takes 8-column groups in pairs");
#pragma unroll
          for (int i = 0; i < BN / 16; i += 2) {
            uint32_t w0, w1, w2, w3;
            xsg_silu_mul4_bf16(&d[4 * i], &d[4 * (i + BN / 16)], w0, w1);
            xsg_silu_mul4_bf16(&d[4 * (i + 1)], &d[4 * (i + 1 + BN / 16)], w2, w3);
            xs_stmatrix_x4(sm_row + (i >> 3) * 8192 + (((i & 7) ^ st_y) << 4), w0, w1, w2, w3);
          }
        } else {
          auto w = [&](int i, int hi) {
            return xsg_pack_bf16x2(d[4 * i + 2 * hi], d[4 * i + 2 * hi + 1]);
          };
          static_assert(GPP % 2 == 0, "stmatrix.x4 takes 8-column groups in pairs");
#pragma unroll
          for (int il = 0; il < GPP; il += 2) {
            const int i = ps * GPP + il; /* compile-time after unrolling */
            xs_stmatrix_x4(sm_row + (il >> 3) * 8192 + (((il & 7) ^ st_y) << 4), w(i, 0), w(i, 1),
                           w(i + 1, 0), w(i + 1, 1));
          }
        }
        const int col0 = out_col0 + ps * cfg::STAGE_COLS; /* first output column of the pass */
        if (tma) {
          /* ---- TMA store: the writes are ordered for the async proxy, then one thread issues */
          xs_fence_proxy_async_smem();
          xs_named_bar_sync(1 + half, 128);
          if (tid == 0) {
            const int c_batch = p.layout == XS_GEMM_GROUPED_MASKED ? t.expert : 0;
            /* Boxes wholly outside C are skipped; partial ones are clipped by TMA. */
            for (int j = 0; j < cfg::STAGE_COLS / 64; j++)
              if (out_row0 < p.M && col0 + 64 * j < p.n_out)
                xs_tma_store_3d(&map_c, my_c + j * 8192, col0 + 64 * j, out_row0, c_batch);
            xs_bulk_commit();
          }
        } else {
          /* ---- 16-byte stores from staging through the tile's destination map entry (read
           * before the barrier so its latency overlaps the other warps' staging writes). */
          const xs_gemm_tile_dst dst = p.epi.dst_map[t.index];
          uint16_t* base =
              (uint16_t*)dst.base + (int64_t)(64 * half) * dst.ld + ps * cfg::STAGE_COLS;
          xs_named_bar_sync(1 + half, 128);
          xsg_store_staged<GPP>(my_c, base, dst.ld, tid, t.row_end - out_row0, p.n_out - col0);
        }
      }
      if (p.epi.tile_flags) /* both halves stored: one thread publishes the tile */
        xsg_raise_tile_flag(&p.epi.tile_flags[t.index], tma, tid, 3, 128 * cfg::CONSUMERS,
                            threadIdx.x == 128);
    }
    /* Shared memory must outlive the last TMA store's reads. */
    if (tid == 0) xs_bulk_wait_all();
  }
  /* No CTA leaves while its partner may still arrive on its empty barriers (the consumers'
   * last releases) or multicast into its ring. The producers' drains already wait for every
   * such access; this barrier (every thread of both CTAs) keeps it so whatever the roles do. */
  xs_cluster_sync();
}

int g_attr_done = 0; /* NOTE: raising the dynamic smem limit once per process suffices */

cudaError_t set_attributes(void) {
  if (g_attr_done) return cudaSuccess;
  cudaError_t e = cudaFuncSetAttribute(gemm_kernel_v8, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       v8_cfg::SMEM);
  if (e != cudaSuccess) return e;
  g_attr_done = 1;
  return cudaSuccess;
}

} // namespace

cudaError_t xsg_v8_max_clusters(int* clusters) {
  *clusters = 0;
  cudaError_t e = set_attributes();
  if (e != cudaSuccess) return e;
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(2, 1, 1); /* the cluster shape comes from __cluster_dims__ */
  c.blockDim = dim3(v8_cfg::THREADS, 1, 1);
  c.dynamicSmemBytes = v8_cfg::SMEM;
  return cudaOccupancyMaxActiveClusters(clusters, gemm_kernel_v8, &c);
}

cudaError_t xsg_launch_v8(const xsg_params* p, const CUtensorMap* map_a, const CUtensorMap* map_b,
                          const CUtensorMap* map_c, int ctas, cudaStream_t stream) {
  if (ctas < 2 || ctas % 2) return cudaErrorInvalidValue; /* whole clusters of two */
  cudaError_t e = set_attributes();
  if (e != cudaSuccess) return e;
  return xsg_launch(gemm_kernel_v8, *p, ctas, v8_cfg::THREADS, v8_cfg::SMEM, stream, *map_a, *map_b,
                    *map_c, *p);
}

cudaError_t xsg_preload_v8(void) {
  cudaFuncAttributes a;
  return cudaFuncGetAttributes(&a, (const void*)gemm_kernel_v8);
}
