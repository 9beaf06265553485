/* gemm_v2.cu — the Hopper GEMM: v2 (tiles 128x128) and v3 (tiles 128x256), one template.
 *
 * Per CTA (persistent, one per SM, 384 threads = 3 warpgroups):
 *   warpgroup 0  producer: one thread streams A and B k-blocks (64 wide) with TMA into a ring of
 *                STAGES shared-memory slots; registers shrunk with setmaxnreg.dec.
 *   warpgroups 1, 2  consumers: each owns 64 of the tile's 128 rows and all BN columns; wgmma
 *                m64nBNk16 from shared memory into fp32 registers (setmaxnreg.inc), then the
 *                epilogue: registers -> bf16 (or silu(gate)*up) -> swizzled shared staging ->
 *                TMA store (STORE_LOCAL) or 16-byte stores through the tile's map entry
 *                (STORE_MAP) -> optional per-tile flag.
 * Barriers (one parity bit each, flipped when the slot index wraps):
 *   full[s]   count 1: the producer's arrive.expect_tx + the TMA bytes of slot s landing.
 *   empty[s]  count 8 (one lane per consumer warp): the wgmmas reading slot s have retired.
 *   named 1, 2  the 128 threads of consumer warpgroup 1 / 2 (staging buffer reuse, TMA store).
 *   named 3   both consumer warpgroups (a tile's flag is raised once both halves are stored).
 * Both roles walk the same schedule (xsg_position_tile + xsg_tile_rows), so they agree on which
 * tiles have work without talking to each other.
 */
#include <cuda_bf16.h>

#include "kernels/gemm/gemm_internal.h"
#include "xstage/ptx.cuh"

namespace {

/* The producer's wait is bounded: a wait that never ends is a bug (a lost arrival, a wrong
 * parity, an expect_tx byte count TMA never delivers: the consumers then stop releasing slots
 * and the producer stalls too). After 4 s it traps, so the launch fails with an error
 * (cudaErrorLaunchFailure) instead of hanging. NOTE: the consumers wait unbounded: one more
 * live register (a counter) makes the 128x256 consumer spill; no printf either (a call would
 * make ptxas save live registers around it). */
__device__ __forceinline__ void wait_timed(uint64_t* bar, uint32_t parity) {
  if (xs_mbar_try_wait(bar, parity)) return;
  const uint64_t t0 = xs_globaltimer();
  for (uint32_t n = 1;; n++) {
    if (xs_mbar_try_wait(bar, parity)) return;
    if ((n & 1023) == 0 && xs_globaltimer() - t0 > 4000000000ull) __trap();
  }
}

/* ---- compile-time configuration (one block per instantiation) ---- */
template <int BN_> struct hopper_cfg {
  static constexpr int BM = 128; /* tile rows: two consumer warpgroups x 64 */
  static constexpr int BN = BN_; /* tile columns in B-row space (output: BN, or BN/2 SiLU) */
  static constexpr int BK = 64;  /* one 128-byte swizzle atom of bf16 */
  static constexpr int CONSUMERS = 2;
  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  /* NOTE: 128x256 keeps 128 fp32 accumulators per consumer thread; 232 registers hold them with
   * the addresses and the epilogue (no spills in ptxas -v). The producer needs few: 40 (24
   * spills). 40*128 + 232*256 <= 65536. */
  static constexpr int PRODUCER_REGS = 40;
  static constexpr int CONSUMER_REGS = 232;
  static constexpr int A_BYTES = BM * BK * 2;
  static constexpr int B_BYTES = BN * BK * 2;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int C_BYTES = BM * BN * 2; /* staging for one output tile (bf16) */
  /* NOTE: as many stages as fit beside the C staging: 128x256 -> 3 x 48 KB, 128x128 -> 6 x 32 KB */
  static constexpr int STAGES = BN == 256 ? 3 : 6;
  static constexpr int BAR_BYTES = 2 * STAGES * 8;
  static constexpr int SMEM =
      1024 /* alignment slack */ + STAGES * STAGE_BYTES + C_BYTES + BAR_BYTES;
  static_assert(SMEM <= 227 * 1024, "shared memory over the 227 KB a Hopper CTA may use");
  static_assert(BN == 128 || BN == 256, "wgmma wrappers exist for N = 128, 256");
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "swizzle atoms are 1024 bytes");
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * CONSUMERS <= 65536, "register file");
};

template <int BN>
__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], uint64_t da, uint64_t db, int acc);
template <>
__device__ __forceinline__ void wgmma_tile<128>(float (&d)[64], uint64_t da, uint64_t db, int acc) {
  xs_wgmma_m64n128k16_bf16_ss(d, da, db, acc);
}
template <>
__device__ __forceinline__ void wgmma_tile<256>(float (&d)[128], uint64_t da, uint64_t db,
                                                int acc) {
  xs_wgmma_m64n256k16_bf16_ss(d, da, db, acc);
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

__device__ __forceinline__ float silu_mul(float g, float u) {
  return g / (1.0f + __expf(-g)) * u;
}

/* Byte offset of element (row, col) in a consumer's staging area: 64-column chunks of 64 rows x
 * 128 bytes, 16-byte units swizzled with row % 8 — the layout TMA's 128B swizzle expects, and
 * conflict-free for the accumulator fragment (8 rows x 4 column pairs per warp store). */
__device__ __forceinline__ uint32_t stage_offset(int row, int col) {
  int chunk = col >> 6, cc = col & 63;
  return chunk * 8192 + row * 128 + ((((cc >> 3) ^ (row & 7))) << 4) + ((cc & 7) << 1);
}

template <int BN>
__global__ void __launch_bounds__(hopper_cfg<BN>::THREADS, 1)
    gemm_kernel_hopper(const __grid_constant__ CUtensorMap map_a,
                       const __grid_constant__ CUtensorMap map_b,
                       const __grid_constant__ CUtensorMap map_c,
                       const __grid_constant__ xsg_params p) {
  using cfg = hopper_cfg<BN>;
  extern __shared__ uint8_t smem_raw[];
  /* NOTE: 128B-swizzled TMA boxes and wgmma descriptors need 1024-byte aligned tiles. */
  uint8_t* smem = (uint8_t*)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  uint8_t* ring = smem;                                     /* STAGES x (A tile, B tile) */
  uint8_t* stage_c = smem + cfg::STAGES * cfg::STAGE_BYTES; /* C staging, 2 x BM/2 rows */
  uint64_t* full = (uint64_t*)(stage_c + cfg::C_BYTES);
  uint64_t* empty = full + cfg::STAGES;

  const int wg = threadIdx.x / 128;
  const int k_blocks = xsg_cdiv(p.K, cfg::BK);
  const int silu = p.epi.act == XS_GEMM_ACT_SILU_MUL;

  if (threadIdx.x == 0) {
    for (int s = 0; s < cfg::STAGES; s++) {
      xs_mbar_init(&full[s], 1);
      xs_mbar_init(&empty[s], 4 * cfg::CONSUMERS);
    }
    xs_fence_mbar_init();
  }
  __syncthreads();

  if (wg == 0) {
    /* ================= producer warpgroup ================= */
    xs_setmaxnreg_dec<cfg::PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      xs_tma_prefetch_map(&map_a);
      xs_tma_prefetch_map(&map_b);
      int s = 0;
      uint32_t phase = 0;
      for (int k = blockIdx.x; k < p.positions; k += gridDim.x) {
        xsg_tile t = xsg_tile_decode(&p.grid, xsg_position_tile(&p, k));
        int row0, row_end, expert;
        if (!xsg_tile_rows(&p, t, &row0, &row_end, &expert)) continue;
        int a_batch = p.layout == XS_GEMM_GROUPED_MASKED ? expert : 0;
        int b_batch = p.layout == XS_GEMM_DENSE ? 0 : expert;
        /* B rows of the two halves of the tile: [n0, n0+BN/2) and the next half, or with SiLU
         * the gate rows and the matching up rows (I = N/2 further on). */
        int b_row0 = silu ? t.nb * (BN / 2) : t.nb * BN;
        int b_row1 = silu ? b_row0 + p.N / 2 : b_row0 + BN / 2;
        for (int kb = 0; kb < k_blocks; kb++) {
          wait_timed(&empty[s], phase ^ 1); /* fresh barriers pass parity 1 */
          uint8_t* sa = ring + s * cfg::STAGE_BYTES;
          uint8_t* sb = sa + cfg::A_BYTES;
          /* NOTE: expect the full box bytes: TMA counts the zero-filled out-of-bounds part of
           * a box too. A second B half that lies wholly past N is not loaded at all (its stale
           * rows only feed output columns >= N, which are never stored). */
          xs_mbar_arrive_expect_tx(&full[s], b_row1 < p.N ? cfg::STAGE_BYTES
                                                          : cfg::STAGE_BYTES - cfg::B_BYTES / 2);
          xs_tma_load_3d(sa, &map_a, &full[s], kb * cfg::BK, row0, a_batch);
          xs_tma_load_3d(sb, &map_b, &full[s], kb * cfg::BK, b_row0, b_batch);
          if (b_row1 < p.N)
            xs_tma_load_3d(sb + cfg::B_BYTES / 2, &map_b, &full[s], kb * cfg::BK, b_row1, b_batch);
          if (++s == cfg::STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
      }
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

    for (int k = blockIdx.x; k < p.positions; k += gridDim.x) {
      int tile_index = xsg_position_tile(&p, k);
      xsg_tile t = xsg_tile_decode(&p.grid, tile_index);
      int row0, row_end, expert;
      if (!xsg_tile_rows(&p, t, &row0, &row_end, &expert)) continue;

      /* ---- main loop: one wgmma group per k-block, one group kept in flight ---- */
      int prev_s = 0;
      for (int kb = 0; kb < k_blocks; kb++) {
        xs_mbar_wait(&full[s], phase);
        const uint8_t* sa = ring + s * cfg::STAGE_BYTES + half * (cfg::A_BYTES / 2);
        const uint8_t* sb = ring + s * cfg::STAGE_BYTES + cfg::A_BYTES;
        const uint64_t desc_a = xs_smem_desc_sw128(sa), desc_b = xs_smem_desc_sw128(sb);
        xs_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < cfg::BK / 16; kk++) /* 16-wide K steps: +32 bytes = +2 in the */
          wgmma_tile<BN>(d, desc_a + 2 * kk, desc_b + 2 * kk, /* descriptor's address field */
                         (kb > 0 || kk > 0) ? 1 : 0);
        xs_wgmma_commit();
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
      if (lane == 0) xs_mbar_arrive(&empty[prev_s]);

      /* ---- epilogue: registers -> swizzled staging (bf16) ---- */
      /* The staging area is free once the previous TMA store has read it. */
      if (tid == 0) xs_bulk_wait_read_all();
      xs_named_bar_sync(1 + half, 128);
      /* Fragment rows r_lo and r_lo + 8 (r_lo % 8 == lane / 4), column pairs 8i + 2(lane % 4).
       * NOTE: addresses are formed as row base + (chunk, swizzled unit) so that only the eight
       * swizzled unit offsets stay live across the tile loop (not 64 hoisted addresses). */
      const int r_lo = warp * 16 + lane / 4;
      const int x = r_lo & 7;
      uint8_t* row_lo = my_c + r_lo * 128 + 4 * (lane % 4);
      uint8_t* row_hi = row_lo + 8 * 128;
      if (silu) {
#pragma unroll
        for (int i = 0; i < BN / 16; i++) { /* gate column pair i <-> up pair i + BN/16 */
          const int j = i + BN / 16;
          const int off = (i >> 3) * 8192 + (((i & 7) ^ x) << 4);
          *(uint32_t*)(row_lo + off) =
              pack_bf16x2(silu_mul(d[4 * i], d[4 * j]), silu_mul(d[4 * i + 1], d[4 * j + 1]));
          *(uint32_t*)(row_hi + off) = pack_bf16x2(silu_mul(d[4 * i + 2], d[4 * j + 2]),
                                                   silu_mul(d[4 * i + 3], d[4 * j + 3]));
        }
      } else {
#pragma unroll
        for (int i = 0; i < BN / 8; i++) {
          const int off = (i >> 3) * 8192 + (((i & 7) ^ x) << 4);
          *(uint32_t*)(row_lo + off) = pack_bf16x2(d[4 * i], d[4 * i + 1]);
          *(uint32_t*)(row_hi + off) = pack_bf16x2(d[4 * i + 2], d[4 * i + 3]);
        }
      }
      const int out_row0 = row0 + 64 * half; /* first output row of this half */
      const int out_col0 = t.nb * out_cols;
      if (p.epi.store == XS_GEMM_STORE_LOCAL) {
        /* ---- TMA store: the writes are ordered for the async proxy, then one thread issues */
        xs_fence_proxy_async_smem();
        xs_named_bar_sync(1 + half, 128);
        if (tid == 0) {
          const int c_batch = p.layout == XS_GEMM_GROUPED_MASKED ? expert : 0;
          /* Boxes wholly outside C are skipped; partial ones are clipped by TMA. */
          for (int j = 0; j < out_cols / 64; j++)
            if (out_row0 < p.M && out_col0 + 64 * j < p.n_out)
              xs_tma_store_3d(&map_c, my_c + j * 8192, out_col0 + 64 * j, out_row0, c_batch);
          xs_bulk_commit();
          if (p.epi.tile_flags) {
            xs_bulk_wait_all();            /* the tile's bytes are written ... */
            xs_fence_proxy_async_global(); /* ... and ordered before this thread's release */
          }
        }
      } else {
        /* ---- hook: 16-byte stores through the tile's destination map entry ---- */
        xs_named_bar_sync(1 + half, 128);
        const xs_gemm_tile_dst dst = p.epi.dst_map[tile_index];
        const int units = out_cols / 8; /* 16-byte units per row */
        for (int u = tid; u < 64 * units; u += 128) {
          const int r = u / units, cu = u - r * units;
          const int grow = out_row0 + r, gcol = out_col0 + cu * 8;
          if (grow >= row_end || gcol >= p.n_out) continue; /* n_out % 8 == 0 on this path */
          uint4 v = *(const uint4*)(my_c + stage_offset(r, cu * 8));
          xs_st_v4((uint16_t*)dst.base + (int64_t)(64 * half + r) * dst.ld + cu * 8, v);
        }
      }
      if (p.epi.tile_flags) {
        /* Both halves stored (TMA: waited above; map: each thread's stores precede the barrier):
         * one thread publishes the tile at system scope. */
        xs_named_bar_sync(3, 128 * cfg::CONSUMERS);
        if (threadIdx.x == 128) {
          xs_fence_acq_rel_sys();
          xs_red_add_release_sys_u32(&p.epi.tile_flags[tile_index], 1);
        }
      }
    }
    /* Shared memory must outlive the last TMA store's reads. */
    if (tid == 0) xs_bulk_wait_all();
  }
}

} // namespace

int xsg_hopper_smem_bytes(int bn) {
  return bn == 256 ? hopper_cfg<256>::SMEM : hopper_cfg<128>::SMEM;
}

template <int BN>
static cudaError_t launch(const xsg_params* p, const CUtensorMap* ma, const CUtensorMap* mb,
                          const CUtensorMap* mc, int ctas, cudaStream_t stream) {
  using cfg = hopper_cfg<BN>;
  static int attr_done = 0; /* NOTE: raising the dynamic smem limit once per process suffices */
  if (!attr_done) {
    cudaError_t e = cudaFuncSetAttribute(gemm_kernel_hopper<BN>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, cfg::SMEM);
    if (e != cudaSuccess) return e;
    attr_done = 1;
  }
  gemm_kernel_hopper<BN><<<ctas, cfg::THREADS, cfg::SMEM, stream>>>(*ma, *mb, *mc, *p);
  return cudaGetLastError();
}

cudaError_t xsg_launch_hopper(const xsg_params* p, int bn, const CUtensorMap* map_a,
                              const CUtensorMap* map_b, const CUtensorMap* map_c, int ctas,
                              cudaStream_t stream) {
  if (bn == 256) return launch<256>(p, map_a, map_b, map_c, ctas, stream);
  return launch<128>(p, map_a, map_b, map_c, ctas, stream);
}
