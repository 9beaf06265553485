/* gemm_splitk.cu — v14: tiles of 128 x BN (BN = 256, 128 or 64 B rows), one wave of them or K
 * split over several CTAs per tile (split-K), for dense problems with fewer tiles than SMs (a
 * tensor-parallel layer's projections at small batches: Llama-3-70B TP8 QKV at 512 tokens is 20
 * tiles of 128 x 256 on 132 SMs, K = 8192). The plan (sched.h xsg_splitk_plan) picks BN and S.
 *
 * Units: tile position P of the schedule (the raster order or the caller's list) and slice s < S
 * make unit u = P * S + s, computed by CTA u (grid = units, or fewer with S = 1: then each CTA
 * takes units blockIdx.x, + gridDim.x, ...). Slice s multiplies k-blocks [s KB / S, (s + 1) KB / S)
 * (sched.h xsg_splitk_range).
 *
 * Per CTA (384 threads, v3's roles): warp 0 streams the slice's A and B k-blocks (one elected
 * lane issues) with TMA into a 192 KiB ring (4, 7 or 9 slots; A 128 rows, B one box of BN rows,
 * or two halves of BN / 2 rows, or with SiLU*mul the gate rows and the matching up rows);
 * consumer warpgroups 1, 2 each own 64 rows of the tile and multiply with wgmma m64nBNk16 into
 * BN / 2 fp32 registers per thread
 * (hopper_common.cuh xsg_k_loop). Then, with S > 1, the fix-up:
 *   1. every CTA of the tile stores its fp32 sums to the workspace, in the accumulators' own
 *      order (slot u, float4 j of consumer thread t at ((u * BN / 8 + j) * 256 + t) * 16 bytes:
 *      each warp's store is 512 contiguous bytes, no shuffles), except its own share of step 3,
 *      which it writes straight into its place in the ring;
 *   2. the tile's S CTAs meet at a barrier in the workspace (an arrival count, reset by the last
 *      arrival, which then bumps a generation word the others wait on; bounded, traps after 4 s):
 *      all S units of a tile are co-resident, as the host launches at most one unit per SM;
 *   3. CTA s gathers its share of the tile (output groups [g0, g1) of 8 columns, sched.h
 *      xsg_splitk_share) from the other slices' sums into its ring with bulk copies (S - 1 copies
 *      of (g1 - g0) x 4 KiB, twice with SiLU*mul: gate and up), sums them in slice order 0..S-1
 *      (deterministic: the same bits every run), and stores that share of the output from
 *      registers (4-byte stores of bf16 pairs into C or the tile's map entry);
 *   4. with tile flags, the tile's S CTAs count their stores done (a second word); the last
 *      raises the tile's flag at system scope after everything is stored.
 * The counters go back to zero at every launch's end, so the workspace needs zeroing once only,
 * and a captured graph replays with the same arguments. Each CTA writes and reads about BN / 2
 * KiB of fp32 through L2 ((S - 1) / S of its tile's sums); its share of the epilogue is 1/S of a
 * tile. Where the tile has fewer than 128 rows below M (a decode step's few tokens), step 1
 * stores only the sums of the warps that hold those rows (session 24).
 * NOTE (session 22, call A): the first fix-up summed the share from global memory into the
 * accumulator registers, one slice after another (ld.global.cg per float4): latency-bound, about
 * 12 us per launch whatever S, which made v14 lose to v2 wherever K was short. The bulk copies
 * bring every slice's share at once.
 * With 128 x 128 or 128 x 64 tiles and S <= 8, where the clusters fit at once (gemm.cu
 * splitk_cluster), the S CTAs of a tile are one cluster instead, and steps 1-3 run in shared
 * memory: each slice writes all its sums into its ring, pushes every other slice's share into
 * that slice's ring with one bulk copy each (completing on the receiver's mbarrier), and sums its
 * own share in slice order (the same bits as through the workspace). No workspace, so a split
 * can be captured in a CUDA graph on any stream. Session 23: as fast as the workspace path, not
 * faster (the fix-up's ~4-5 us is a chain of hand-offs after the slowest slice, in both forms).
 * (Session 28 tried each slice reading its share from the others' rings with ld.shared::cluster
 * instead: level at S = 2, 0.5-1 us faster at S = 4, but compute-sanitizer's racecheck reported
 * those reads against the owner's writes and exit, which the form's mbarrier hand-offs order;
 * session 29 saw racecheck flag a correct two-CTA hand-off of that kind as well, so the report
 * was the tool's; not kept all the same: level at AUTO's S = 2, and flagged by racecheck.
 * docs/results/gemm-h200.md, sessions 28-29.)
 * L2: with one m-block (M <= 128) the weights load evict_first (xsg_params.l2_hint, sched.h
 * xsg_l2_choice), so that they do not push A, which every CTA re-reads, out of L2 (session 29).
 * Loads: B in one box of BN rows where no tile straddles N (no SiLU*mul), else two halves; A in a
 * box of M rows (rounded up to 8) where M < 128 (TMA's zero fill of the rows past M was slow: the
 * rows past the box are stale and feed only rows >= M).
 * Each CTA's first unit (tile and slice) comes from the host (sched.h xsg_splitk_first, a launch
 * parameter): decoding it on the device (u / S, the raster order's and the tile index's divisions)
 * held the first TMA back by ~0.5 us, and every launch of v14 paid it (session 28, call D:
 * 0.46-0.54 us less per launch at 128 x 8192 x 1024, x 3584, 128 x 1280 x 8192, 512 x 8192 x 1024).
 * With S = 1 nothing of this runs (no workspace): the multiply and v12's direct epilogue
 * (hopper_common.cuh xsg_store_direct). In one wave that ran the same 128 x 128 tiles 10-30 %
 * faster than v2 (session 22, call O), so the plan weighs it too.
 */
#include <cuda_bf16.h>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/hopper_common.cuh"
#include "xstage/ptx.cuh"

namespace {

template <int BN_> struct sk_cfg {
  static constexpr int BM = 128, BN = BN_, BK = 64;
  static constexpr int THREADS = 384;
  static constexpr int PRODUCER_REGS = 56, CONSUMER_REGS = 224; /* v3's split (gemm_v2.cu) */
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES; /* 48 KiB (BN 256), 32 KiB (BN 128) */
  /* as many slots as fit in the 227 KB beside the alignment slack and the barriers: 4, 7 or 9 */
  static constexpr int STAGES = (227 * 1024 - 1024 - 32) / (STAGE_BYTES + 16);
  static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + (2 * STAGES + 4) * 8;
  static_assert(STAGES * STAGE_BYTES >= XSG_SPLITK_SUMS_BYTES, "the fix-up's sums fit the ring");
  /* a cluster's sums (BN / 8 groups of 4 KiB) and gathered shares (BN <= 128, S <= 8: at most
   * S x ceil(BN / 8 / S) <= BN / 8 + 8 groups, BN / 8 + 16 with SiLU*mul) */
  static_assert(BN > 128 || STAGES * STAGE_BYTES >= (BN / 4 + 16) * 4096, "cluster fix-up's room");
  static constexpr int GROUPS = BN / 8; /* float4 groups of sums per consumer thread */
  static_assert(SMEM <= 227 * 1024, "shared memory over the 227 KB a Hopper CTA may use");
  static_assert(BN == 64 || BN == 128 || BN == 256, "v14 tiles: 128 x 256, 128 x 128, 128 x 64");
};

/* The bounded wait of the fix-up barrier: until *gen differs from g (acquire, GPU scope). */
__device__ __forceinline__ void sk_wait_gen(const uint32_t* gen, uint32_t g) {
  if (xs_ld_acquire_gpu_u32(gen) != g) return;
  const uint64_t t0 = xs_globaltimer();
  for (uint32_t n = 1; xs_ld_acquire_gpu_u32(gen) == g; n++) {
    if ((n & 255) == 0) {
      if (xs_globaltimer() - t0 > 4000000000ull) __trap();
      xs_nanosleep(32);
    }
  }
}

/* TRACE (probe only, xsg_probe.v14_trace): stamps per CTA into p.trace (gemm_internal.h,
 * XSG_V14_TRACE). */
template <int BN, bool TRACE>
__global__ void __launch_bounds__(sk_cfg<BN>::THREADS, 1)
    gemm_kernel_splitk(const __grid_constant__ CUtensorMap map_a,
                       const __grid_constant__ CUtensorMap map_b,
                       const __grid_constant__ xsg_params p, const __grid_constant__ xsg_splitk sk,
                       const __grid_constant__ xsg_first first) {
  using cfg = sk_cfg<BN>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* ring = xsg_smem_align1024(smem_raw);
  uint64_t* full = (uint64_t*)(ring + cfg::STAGES * cfg::STAGE_BYTES);
  uint64_t* empty = full + cfg::STAGES;
  uint64_t* fix = empty + cfg::STAGES; /* the fix-up's bulk copies (count 1: thread 128) */
  uint64_t* xch = fix + 1; /* cluster fix-up: [0] every slice's ring is free (count S), [1] this
                              CTA's share has landed (count 1 + bytes), [2] every slice has
                              received its share (count S) */
  const int wg = threadIdx.x / 128;
  const int silu = p.epi.act == XS_GEMM_ACT_SILU_MUL;
  const int k_blocks = xsg_cdiv(p.K, cfg::BK);
  const int S = sk.splits;
  const int units = p.positions * S;
  /* Unit u's tile and slice: a CTA's first from the host's table (sched.h xsg_splitk_first: no
   * division chain before the first TMA), the others decoded. */
  auto unit_at = [&](int u, int& slice) {
    if (u < first.n) return xsg_splitk_first_of(first.t[u], &slice);
    const int pos = u / S;
    slice = u - pos * S;
    return xsg_tile_decode(&p.grid, xsg_position_tile(&p, pos));
  };
  /* slice s's k-blocks (S = 1: all, no division) */
  auto range_of = [&](int slice, int& kb0, int& kb1) {
    if (S == 1) {
      kb0 = 0;
      kb1 = k_blocks;
    } else {
      xsg_splitk_range(k_blocks, S, slice, &kb0, &kb1);
    }
  };
  /* TRACE: this CTA's stamps, the address formed where used (from the parameter, not held in a
   * register: held, it made the 128-row kernel's fix-up spill) */
  auto trace = [&]() { return p.trace + (size_t)blockIdx.x * XSG_V14_TRACE; };
  if (TRACE && threadIdx.x == 0) {
    trace()[0] = xs_globaltimer();
    trace()[1] = xs_clock64();
  }

  if (threadIdx.x == 0) {
    xs_tma_prefetch_map(&map_a);
    xs_tma_prefetch_map(&map_b);
    for (int s = 0; s < cfg::STAGES; s++) {
      xs_mbar_init(&full[s], 1);
      xs_mbar_init(&empty[s], 8); /* lane 0 of each consumer warp */
    }
    xs_mbar_init(fix, 1);
    xs_mbar_init(&xch[0], S);
    xs_mbar_init(&xch[1], 1);
    xs_mbar_init(&xch[2], S);
    xs_fence_mbar_init();
  }
  xsg_griddep_enter();
  __syncthreads();
  /* cluster fix-up: every CTA's barriers exist before another arrives on them */
  if (sk.cluster) xs_cluster_sync();
  if (TRACE && threadIdx.x == 0) trace()[2] = xs_clock64();

  if (wg == 0) {
    /* ================= producer ================= */
    xs_setmaxnreg_dec<cfg::PRODUCER_REGS>();
    /* warp 0 walks the loop, one elected lane issues: the loop's values are warp-uniform, so
     * the compiler keeps them in uniform registers, which the TMA instructions take */
    if (threadIdx.x >= 32) return;
    const bool leader = xs_elect_one();
    int s = 0;
    uint32_t phase = 0;
    /* A load into slot s with L2 cache policy `kind` (xsg_params.l2_hint: A's kind | B's << 2;
     * sched.h xsg_l2_choice) */
    auto tma = [&](void* dst, const CUtensorMap* map, int kb, int row, int kind) {
      xs_tma_load_3d_kind(dst, map, &full[s], kb * cfg::BK, row, 0, kind);
    };
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      int slice, kb0, kb1;
      const xsg_tile t = unit_at(u, slice);
      range_of(slice, kb0, kb1);
      if (TRACE && leader && u == (int)blockIdx.x) trace()[3] = xs_clock64();
      const int b_row0 = silu ? t.nb * (cfg::BN / 2) : t.nb * cfg::BN;
      const int b_row1 = silu ? b_row0 + p.N / 2 : b_row0 + cfg::BN / 2;
      for (int kb = kb0; kb < kb1; kb++) {
        xsg_wait_timed(&empty[s], phase ^ 1);
        uint8_t* sa = ring + s * cfg::STAGE_BYTES;
        /* expect the full boxes (TMA counts zero-filled bytes too); a second B half wholly past
         * N is not loaded (its stale rows only feed columns >= N, never stored); A's box may be
         * shorter than the tile (sk.a_rows: M < 128): the rows past it are stale and only feed
         * output rows >= M, never stored (TMA's zero fill of the rows past M is slow: session
         * 23, call A) */
        /* (probe 4, time only: A loaded at the slice's first k-block only) */
        const bool load_a = sk.probe != 4 || kb == kb0;
        if (leader) {
          xs_mbar_arrive_expect_tx(&full[s],
                                   (b_row1 < p.N ? cfg::B_BYTES : cfg::B_BYTES / 2) +
                                       (load_a ? (uint32_t)sk.a_rows * (cfg::BK * 2) : 0u));
          if (load_a) tma(sa, &map_a, kb, t.mb * cfg::BM, p.l2_hint & 3);
          tma(sa + cfg::A_BYTES, &map_b, kb, b_row0, p.l2_hint >> 2);
          if (b_row1 < p.N && sk.b_box < cfg::BN) /* (a box of BN rows holds both halves) */
            tma(sa + cfg::A_BYTES + cfg::B_BYTES / 2, &map_b, kb, b_row1, p.l2_hint >> 2);
          if (TRACE) {
            if (u == (int)blockIdx.x && kb == kb0) trace()[4] = xs_clock64();
            trace()[5] = xs_clock64();
          }
        }
        if (++s == cfg::STAGES) {
          s = 0;
          phase ^= 1;
        }
      }
    }
    xsg_drain_ring(empty, cfg::STAGES, s, phase);
    if (TRACE && leader) trace()[14] = xs_clock64();
    return;
  }

  /* ================= consumers ================= */
  xs_setmaxnreg_inc<cfg::CONSUMER_REGS>();
  const int half = wg - 1, tid = threadIdx.x - 128 * wg, lane = tid % 32;
  const int ct = threadIdx.x - 128; /* 0..255: this thread's slot in a unit's sums */
  int s = 0;
  uint32_t phase = 0;
  float d[cfg::BN / 2];
  uint32_t fix_phase = 0;
  int traced_units = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    int slice, kb0, kb1;
    const xsg_tile t = unit_at(u, slice);
    range_of(slice, kb0, kb1);
    const int pos = S == 1 ? u : u / S; /* (the fix-up's counters and workspace) */
    const int index = xsg_tile_index(&p.grid, 0, t.mb, t.nb);
    xs_gemm_tile_dst dst = {nullptr, 0};
    if (p.epi.store == XS_GEMM_STORE_MAP) dst = p.epi.dst_map[index];
#pragma unroll
    for (int i = 0; i < cfg::BN / 2; i++)
      d[i] = 0.0f; /* a slice with no k-blocks (S > k-blocks) adds zeros */
    if (kb1 > kb0) {
      xs_mbar_wait(&full[s], phase);
      if (TRACE && threadIdx.x == 128 && u == (int)blockIdx.x) trace()[6] = xs_clock64();
      const int last = xsg_k_loop<cfg::STAGES, cfg::STAGE_BYTES, cfg::A_BYTES, cfg::BK>(
          ring, half, lane, kb1 - kb0, full, empty, s, phase,
          [&](uint64_t da, uint64_t db, int acc) { xsg_wgmma_tile<BN>(d, da, db, acc); },
          [](int) {}, [](uint64_t* bar) { xs_mbar_arrive(bar); });
      xs_wgmma_fence_regs(d);
      if (lane == 0) xs_mbar_arrive(&empty[last]);
    }
    if (TRACE && threadIdx.x == 128) {
      const unsigned long long c = xs_clock64();
      if (u == (int)blockIdx.x) trace()[7] = c;
      trace()[8] = c;
      traced_units++;
    }
    const int row0 = t.mb * cfg::BM;
    /* The tile's rows below M: consumer thread ct's sums hold rows of warp ct / 32 (16 rows per
     * warp, warps in row order), so a warp with 16 * (ct / 32) >= rows holds none (a decode
     * step's tile has one or a few such warps of 8) and stores no sums to the workspace; the
     * gather still copies whole 4 KiB groups (stale words for those rows, never stored): copying
     * only the rows' 512-byte slices, one bulk copy per group, made the fix-up 1 us slower
     * (session 24, call H). */
    const int rows = p.M - row0 < cfg::BM ? p.M - row0 : cfg::BM;
    /* The fix-up's last step, in both forms: this CTA's share, output groups [g0, g0 + G), each
     * group i of half h (1: the up half with SiLU*mul) summed in slice order by sum(i, h), stored
     * straight to C or the map entry: per output group og, this thread's float4 holds rows r_lo
     * (x, y) and r_lo + 8 (z, w), columns 8 og + 2 (lane % 4), + 1. */
    auto store_share = [&](int g0, int G, auto&& sum) {
      const int r_lo = 64 * half + 16 * (tid / 32) + lane / 4;
      const int out_cols = silu ? cfg::BN / 2 : cfg::BN;
      const int col_t = t.nb * out_cols + 2 * (lane % 4); /* + 8 og */
      uint16_t* base;
      int64_t ld;
      if (p.epi.store == XS_GEMM_STORE_MAP) {
        base = (uint16_t*)dst.base + (int64_t)r_lo * dst.ld + 2 * (lane % 4);
        ld = dst.ld;
      } else {
        base = p.C + (int64_t)(row0 + r_lo) * p.n_out + col_t;
        ld = p.n_out;
      }
      const bool lo_ok = row0 + r_lo < p.M, hi_ok = row0 + r_lo + 8 < p.M;
      if (TRACE && threadIdx.x == 128) trace()[20] = xs_clock64();
      for (int i = 0; i < G; i++) {
        const int og = g0 + i;
        if (col_t - 2 * (lane % 4) + 8 * og >= p.n_out) break; /* (n_out % 8 == 0) */
        float4 a = sum(i, 0);
        uint32_t w0, w1;
        if (silu && sk.probe != 8) { /* (probe 8: no SiLU*mul, time only) */
          float4 up = sum(i, 1);
          xsg_silu_mul4_bf16(&a.x, &up.x, w0, w1);
        } else {
          w0 = xsg_pack_bf16x2(a.x, a.y);
          w1 = xsg_pack_bf16x2(a.z, a.w);
        }
        if (sk.probe == 7 && (w0 != 0x7fc07fc0u || w1 != 0x7fc07fc0u)) /* (probe 7: no stores) */
          continue;
        if (lo_ok) *(uint32_t*)(base + 8 * og) = w0;
        if (hi_ok) *(uint32_t*)(base + 8 * ld + 8 * og) = w1;
        if (TRACE && threadIdx.x == 128 && i == 0) trace()[21] = xs_clock64();
      }
    };
    if (S > 1 && sk.probe == 1) { /* probe: the multiply alone (keeps d alive, never true) */
      if (p.K < 0) p.C[ct] = (uint16_t)__float_as_uint(d[0] + d[BN / 2 - 1]);
      continue;
    }
    if (cfg::BN <= 128 && S > 1 && sk.cluster) { /* (the host never clusters 128 x 256 tiles) */
      /* The tile's S slices are one cluster (rank = slice), tiles of 128 x 128 or 128 x 64. Each
       * writes all its sums into its own ring (SUMS: group j of consumer thread ct at float4
       * j * 256 + ct), then pushes every other slice's share of them (contiguous: groups
       * [g0, g1) x 4 KiB, and the matching up groups with SiLU*mul) into that slice's ring
       * (GATHER, slot `slice`) with one bulk copy each, completing on the receiver's xch[1];
       * each sums its share in slice order (its own slot read from SUMS: the same bits every
       * run, and the same as through the workspace) and stores it. Hand-offs: xch[0] every
       * slice's ring is free for the pushes (its multiply is done), xch[1] this CTA's share has
       * landed, xch[2] every slice has received (this CTA's pushes are read: it may leave). No
       * workspace, no global memory barrier. */
      int g0, g1;
      const int groups = silu ? cfg::BN / 16 : cfg::BN / 8, halves = silu ? 2 : 1;
      xsg_splitk_share(groups, S, slice, &g0, &g1);
      const int G = g1 - g0;
      float4* const sums = (float4*)ring;
      float4* const gather = sums + cfg::GROUPS * 256;
      xs_named_bar_sync(3, 256); /* both warpgroups' wgmmas are done with the ring */
#pragma unroll
      for (int j = 0; j < cfg::GROUPS; j++)
        sums[j * 256 + ct] = make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
      xs_fence_proxy_async_smem(); /* the bulk copies read them */
      xs_named_bar_sync(3, 256);
      if (TRACE && threadIdx.x == 128) trace()[15] = xs_clock64();
      if (threadIdx.x == 128) {
        xs_mbar_arrive_expect_tx(&xch[1], (uint32_t)((S - 1) * halves * G) * 4096u);
        xs_fence_acq_rel_cluster(); /* the ring's last reads before the others' pushes */
        for (int r = 0; r < S; r++)
          xs_mbar_arrive_cluster_relaxed(xs_mapa_u32(&xch[0], (uint32_t)r));
        xsg_wait_timed<true>(&xch[0], 0);
        if (TRACE) trace()[16] = xs_clock64();
        for (int r = 0; r < S; r++) {
          int h0, h1;
          xsg_splitk_share(groups, S, r, &h0, &h1);
          if (r == slice || h1 == h0) continue;
          const uint32_t bar = xs_mapa_u32(&xch[1], (uint32_t)r);
          for (int h = 0; h < halves; h++)
            xs_bulk_copy_to_cluster(
                xs_mapa_u32(gather + (int64_t)(slice * halves + h) * (h1 - h0) * 256, (uint32_t)r),
                sums + (int64_t)(h * (cfg::BN / 16) + h0) * 256, (uint32_t)(h1 - h0) * 4096u, bar);
        }
        if (TRACE) trace()[22] = xs_clock64();
      }
      xsg_wait_timed(&xch[1], 0);
      if (TRACE && threadIdx.x == 128) trace()[17] = xs_clock64();
      if (sk.probe != 5) /* (probe 5: the hand-offs and pushes alone) */
        store_share(g0, G, [&](int i, int h) {
          float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
          for (int r = 0; r < S; r++) { /* this slice's own share from its sums */
            const float4 v = r == slice ? sums[(h * (cfg::BN / 16) + g0 + i) * 256 + ct]
                                        : gather[((r * halves + h) * G + i) * 256 + ct];
            if (r == 0)
              a = v;
            else
              a.x += v.x, a.y += v.y, a.z += v.z, a.w += v.w;
          }
          return a;
        });
      if (TRACE && threadIdx.x == 128) trace()[18] = xs_clock64();
      /* this CTA has received (every push into it has been read at its source) and stored its
       * share; it leaves once all S have (its own pushes are read, nobody arrives on its
       * barriers any more). With tile flags the arrivals release the stores at system scope:
       * slice 0 raises the flag after all S of them (step 4). */
      xs_named_bar_sync(3, 256);
      if (threadIdx.x == 128) {
        if (p.epi.tile_flags) xs_fence_acq_rel_sys();
        for (int r = 0; r < S; r++)
          if (p.epi.tile_flags)
            xs_mbar_arrive_cluster(xs_mapa_u32(&xch[2], (uint32_t)r));
          else
            xs_mbar_arrive_cluster_relaxed(xs_mapa_u32(&xch[2], (uint32_t)r));
        xsg_wait_timed<true>(&xch[2], 0);
        if (TRACE) trace()[19] = xs_clock64();
      }
    } else if (S > 1) {
      /* This CTA's share: output groups [g0, g1); its accumulator groups are [g0, g1) (with
       * SiLU*mul also the up groups [BN/16 + g0, BN/16 + g1)). */
      int g0, g1;
      xsg_splitk_share(silu ? cfg::BN / 16 : cfg::BN / 8, S, slice, &g0, &g1);
      const int G = g1 - g0, halves = silu ? 2 : 1;
      /* 1. this slice's sums, in the accumulators' order: the groups of the other slices' shares
       * to the workspace, this CTA's own share straight into its place among the gathered sums
       * in the ring (slot `slice`), once both warpgroups' wgmmas are done with the ring */
      float4* const part = (float4*)sk.partial;
      float4* const sums = (float4*)ring;
      xs_named_bar_sync(3, 256);
#pragma unroll
      for (int j = 0; j < cfg::GROUPS; j++) {
        const int h = silu && j >= cfg::BN / 16 ? 1 : 0;
        const int jj = j - h * (cfg::BN / 16) - g0; /* index in the share, if in it */
        const float4 v = make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
        if (jj >= 0 && jj < G)
          sums[((int64_t)(slice * halves + h) * G + jj) * 256 + ct] = v;
        else if (16 * (ct / 32) < rows) /* (a warp whose rows all lie past M stores nothing) */
          part[((int64_t)u * cfg::GROUPS + j) * 256 + ct] = v;
      }
      if (sk.probe == 3) continue; /* probe: the sums stored, nothing else */
      if (TRACE && threadIdx.x == 128) trace()[15] = xs_clock64();

      /* 2. the tile's barrier; then thread 128 gathers the share of every slice's sums into the
       * ring (free: this CTA's only unit has been multiplied), S x halves bulk copies of G x 4
       * KiB each (sched.h xsg_splitk_fits) */
      uint32_t* const cnt = sk.counters + 4 * (int64_t)pos;
      xs_named_bar_sync(3, 256);
      if (threadIdx.x == 128) {
        const uint32_t g = xs_ld_relaxed_gpu_u32(cnt + 1); /* before arriving (see above) */
        xs_fence_acq_rel_gpu(); /* the CTA's stores (ordered by the barrier) before the arrival */
        if (xs_atom_add_acq_rel_gpu_u32(cnt, 1) == (uint32_t)S - 1) {
          cnt[0] = 0u; /* the next launch's arrivals come after this one has ended */
          xs_atom_add_acq_rel_gpu_u32(cnt + 1, 1);
        } else {
          sk_wait_gen(cnt + 1, g);
        }
        if (TRACE) trace()[16] = xs_clock64();
        xs_fence_proxy_async_global(); /* the other slices' generic stores, for the bulk copies */
        if (sk.probe != 2)             /* (probe 2: nothing gathered) */
          xs_mbar_arrive_expect_tx(fix, (uint32_t)((S - 1) * halves * G) * 4096u);
        const float4* const tile0 = part + (int64_t)pos * S * cfg::GROUPS * 256;
        for (int r = 0; r < S && G > 0 && sk.probe != 2; r++)
          for (int h = 0; h < halves && r != slice; h++)
            xs_bulk_load(sums + (int64_t)(r * halves + h) * G * 256,
                         tile0 + ((int64_t)r * cfg::GROUPS + h * (cfg::BN / 16) + g0) * 256,
                         (uint32_t)G * 4096u, fix);
      }
      if (sk.probe == 2) { /* probe: no gather, no output */
        xs_named_bar_sync(3, 256);
        continue;
      }
      xs_mbar_wait(fix, fix_phase); /* (a thread reads back only its own own-share writes) */
      fix_phase ^= 1;
      if (TRACE && threadIdx.x == 128) trace()[17] = xs_clock64();

      /* 3. the share's sums in slice order, straight to C or the map entry */
      store_share(g0, G, [&](int i, int h) {
        float4 a = sums[((int64_t)h * G + i) * 256 + ct];
        for (int r = 1; r < S; r++) {
          const float4 v = sums[(((int64_t)r * halves + h) * G + i) * 256 + ct];
          a.x += v.x, a.y += v.y, a.z += v.z, a.w += v.w;
        }
        return a;
      });
      if (TRACE && threadIdx.x == 128) trace()[18] = xs_clock64();
    } else {
      xsg_store_direct<cfg::BN>(p, half, tid, silu, row0, p.M, 0, t.nb, dst, d, 0,
                                silu ? cfg::BN / 32 : cfg::BN / 16);
    }
    if (p.epi.tile_flags) {
      /* 4. the flag once all S shares are stored */
      xs_named_bar_sync(3, 256);
      if (threadIdx.x == 128) {
        xs_fence_acq_rel_sys();
        /* (a cluster's slice 0 has seen every slice's arrival on xch[2], after its stores) */
        uint32_t* const done = sk.cluster ? nullptr : sk.counters + 4 * (int64_t)pos + 2;
        const bool last =
            S == 1 ||
            (sk.cluster ? slice == 0 : xs_atom_add_acq_rel_gpu_u32(done, 1) == (uint32_t)S - 1);
        if (last) {
          if (S > 1 && !sk.cluster) done[0] = 0u;
          xs_fence_acq_rel_sys();
          xs_red_add_release_sys_u32(&p.epi.tile_flags[index], 1);
        }
      }
    }
  }
  if (TRACE && threadIdx.x == 128) {
    trace()[9] = xs_clock64();
    trace()[10] = xs_globaltimer();
    trace()[11] = xs_clock64();
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    trace()[12] = smid;
    trace()[13] = (unsigned long long)traced_units;
  }
}

} // namespace

template <int BN, bool TRACE = false> static cudaError_t set_smem(void) {
  static int attr_done = 0; /* NOTE: raising the dynamic smem limit once per process suffices */
  if (attr_done) return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(
      gemm_kernel_splitk<BN, TRACE>, cudaFuncAttributeMaxDynamicSharedMemorySize, sk_cfg<BN>::SMEM);
  if (e == cudaSuccess) attr_done = 1;
  return e;
}

template <int BN, bool TRACE>
static cudaError_t launch_splitk(const xsg_params* p, const xsg_splitk* sk, const xsg_first* first,
                                 const CUtensorMap* ma, const CUtensorMap* mb, int ctas,
                                 cudaStream_t stream) {
  using cfg = sk_cfg<BN>;
  const cudaError_t e = set_smem<BN, TRACE>();
  if (e != cudaSuccess) return e;
  /* clusters of S along x: CTAs u = pos * S + slice, so a cluster is one tile's slices */
  if (sk->cluster && (sk->splits < 2 || sk->splits > 8 || ctas % sk->splits))
    return cudaErrorInvalidValue;
  return xsg_launch_cluster(gemm_kernel_splitk<BN, TRACE>, *p, ctas, sk->cluster ? sk->splits : 0,
                            cfg::THREADS, cfg::SMEM, stream, *ma, *mb, *p, *sk, *first);
}

template <int BN>
static cudaError_t launch_splitk(const xsg_params* p, const xsg_splitk* sk, const xsg_first* first,
                                 const CUtensorMap* ma, const CUtensorMap* mb, int ctas,
                                 cudaStream_t stream) {
  return p->trace ? launch_splitk<BN, true>(p, sk, first, ma, mb, ctas, stream)
                  : launch_splitk<BN, false>(p, sk, first, ma, mb, ctas, stream);
}

cudaError_t xsg_launch_splitk(const xsg_params* p, const xsg_splitk* sk, const xsg_first* first,
                              int bn, const CUtensorMap* map_a, const CUtensorMap* map_b, int ctas,
                              cudaStream_t stream) {
  return bn == 64    ? launch_splitk<64>(p, sk, first, map_a, map_b, ctas, stream)
         : bn == 128 ? launch_splitk<128>(p, sk, first, map_a, map_b, ctas, stream)
                     : launch_splitk<256>(p, sk, first, map_a, map_b, ctas, stream);
}

template <int BN> static cudaError_t max_clusters(int S, int* n) {
  cudaError_t e = set_smem<BN>();
  if (e != cudaSuccess) return e;
  return xsg_max_clusters(gemm_kernel_splitk<BN, false>, S, sk_cfg<BN>::THREADS, sk_cfg<BN>::SMEM,
                          n);
}

cudaError_t xsg_splitk_max_clusters(int bn, int S, int* n) {
  *n = 0;
  if (S < 2 || S > 8) return cudaSuccess;
  return bn == 64    ? max_clusters<64>(S, n)
         : bn == 128 ? max_clusters<128>(S, n)
                     : max_clusters<256>(S, n);
}

cudaError_t xsg_preload_splitk(void) {
  cudaFuncAttributes a;
  cudaError_t e = cudaFuncGetAttributes(&a, gemm_kernel_splitk<256, false>);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, gemm_kernel_splitk<128, false>);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, gemm_kernel_splitk<64, false>);
  return e;
}
