/* attention_v2.cu — version 2: the Hopper attention forward.
 *
 *   persistent grid over tiles (batch, head, 128 query rows), one CTA per SM, 3 warpgroups:
 *     WG0  producer  (setmaxnreg 40): one thread issues TMA loads of Q (per tile) and K, V
 *                    (per 128-key step) into a shared-memory ring guarded by mbarriers;
 *     WG1, WG2 consumers (setmaxnreg 232): each owns 64 of the tile's 128 query rows, computes
 *                    S = Q K^T with wgmma (A, B from shared memory), the online softmax in
 *                    registers with exp2, and O += P V with wgmma taking P from registers.
 *   Ping-pong: the two consumers take turns issuing their products (named barriers 1, 2), so
 *   one warpgroup's softmax runs while the other's matrix products occupy the tensor cores.
 *   Inside one warpgroup, S_j = Q K_j^T is issued together with O += P_{j-1} V_{j-1}, and the
 *   softmax of S_j runs while the P V product drains.
 *   Epilogue: O / l through a padded shared-memory staging tile, 16-byte coalesced stores to
 *   the destination map (plain: O itself), LSE per row. Per-tile flags are raised by a
 *   publisher thread (warp 1 of the producer warpgroup, otherwise idle): each consumer
 *   warpgroup only arrives on an mbarrier after its stores, so the system-scope fence that a
 *   flag needs never stalls the warpgroups that feed the tensor cores.
 *
 * Run: xstage bench attention --B 1 --H 24 --S 4608 --d 128 --version 2
 */
#include "kernels/attention/attention_internal.h"
#include "xstage/ptx.cuh"

/* ---- compile-time config block ---- */
template <int D> struct v2_cfg {
  static constexpr int BM = XS_ATTN_TILE_M;      /* query rows per CTA tile */
  static constexpr int WG_M = 64;                /* query rows per consumer warpgroup */
  static constexpr int BN = XSI_ATTN_V2_BN;      /* keys per step */
  static constexpr int STAGES = D == 64 ? 3 : 2; /* K/V ring depth */
  static constexpr int CHUNKS = D / 64;          /* 128-byte swizzle atoms across the head dim */
  static constexpr int THREADS = 384;            /* producer + 2 consumer warpgroups */
  static constexpr int PRODUCER_REGS = 40;       /* NOTE: 40 + 2 x 232 uses the whole file */
  static constexpr int CONSUMER_REGS = 232;
  static constexpr uint32_t Q_BYTES = BM * D * 2;
  static constexpr uint32_t KV_BYTES = BN * D * 2; /* one K or one V stage */
  static constexpr int O_ROW_BYTES = D * 2 + 16;   /* NOTE: +16 B pad: conflict-free staging */
  static constexpr uint32_t O_BYTES = WG_M * O_ROW_BYTES; /* per consumer warpgroup */
  static constexpr uint32_t OFF_Q = 0;
  static constexpr uint32_t OFF_K = OFF_Q + Q_BYTES;
  static constexpr uint32_t OFF_V = OFF_K + STAGES * KV_BYTES;
  static constexpr uint32_t OFF_O = OFF_V + STAGES * KV_BYTES;
  static constexpr uint32_t OFF_BAR = OFF_O + 2 * O_BYTES;
  static constexpr int PUB_SLOTS = 2; /* tiles a consumer may run ahead of the flag publisher */
  /* q_full, q_empty, k/v full/empty per stage, pub_full/pub_empty per publisher slot */
  static constexpr uint32_t NUM_BARS = 2 + 4 * STAGES + 2 * PUB_SLOTS;
  static constexpr uint32_t SMEM = OFF_BAR + NUM_BARS * 8 + 1024; /* +1024: base alignment */
  static_assert(D == 64 || D == 128, "head dim 64 or 128");
  static_assert(SMEM <= 227 * 1024, "shared memory over the sm_90 per-block limit");
  static_assert(OFF_K % 1024 == 0 && KV_BYTES % 1024 == 0, "TMA/wgmma 128B-swizzle alignment");
  static_assert(PRODUCER_REGS * 128 + 2 * CONSUMER_REGS * 128 <= 65536, "register file");
  static_assert(BM == 2 * WG_M && BN % 16 == 0, "tile shape");
};

/* Named barriers (0 is __syncthreads). */
#define V2_BAR_SCHED 1 /* 1, 2: ping-pong turn of consumer 0, 1 */
#define V2_BAR_EPI 3   /* 3, 4: consumer warpgroup's own epilogue */

/* Tile at schedule position pos: returns the tile index; *bh = b * H + h, *qt = query tile. */
static __device__ __forceinline__ int v2_tile_at(const attn_params& p, int pos, int* bh, int* qt) {
  int tile;
  if (p.order) {
    tile = p.order[pos];
  } else if (!p.causal) {
    /* NOTE: non-causal tiles all cost the same: walk heads one after another (neighbouring
     * CTAs share K/V in L2). */
    tile = pos;
  } else {
    /* Causal: a tile's cost grows with its query tile, and CTA c runs positions c, c + G, ...
     * (G = gridDim.x). The tiles are listed longest first, heads interleaved, within sections
     * of consecutive heads (p.order_sections of them, sized on the host so that each section
     * spans >= 16 rounds of the grid and keeps a bounded set of heads' K/V in flight); round
     * k of the grid takes list entries [kG, kG + G), odd rounds in reverse (a snake), so the
     * CTA that took the longest tile of one round takes the shortest of the next.
     * NOTE: the head-major order of run 1 gave CTA c the query tiles 63 - (c + 4k) mod 64 at
     * S = 8192 (132 mod 64 = 4): up to 1.33x the mean work on one CTA, 1.99x at S = 16896. */
    int G = gridDim.x, k = pos / G, c = pos - k * G, base = k * G;
    int n = min(G, p.num_tiles - base);
    int idx = base + ((k & 1) ? n - 1 - c : c);
    int nq = p.n_qtiles, BH = p.B * p.H, ns = p.order_sections;
    int hs = BH / ns, rem = BH - hs * ns; /* the first rem sections hold hs + 1 heads */
    int big = rem * (hs + 1) * nq;        /* tiles in those */
    int hh, h0, off;
    if (idx < big) {
      hh = hs + 1;
      int sec = idx / (hh * nq);
      h0 = sec * hh;
      off = idx - h0 * nq;
    } else {
      hh = hs;
      int sec = (idx - big) / (hh * nq);
      h0 = rem * (hs + 1) + sec * hh;
      off = idx - h0 * nq;
    }
    int q_desc = off / hh;
    tile = (h0 + off - q_desc * hh) * nq + (nq - 1 - q_desc);
  }
  *bh = tile / p.n_qtiles;
  *qt = tile - *bh * p.n_qtiles;
  return tile;
}

/* Key steps of a tile starting at query row m0. */
static __device__ __forceinline__ int v2_num_kv(const attn_params& p, int m0, int BN) {
  int end = p.causal ? min(p.Skv, m0 + XS_ATTN_TILE_M) : p.Skv;
  return (end + BN - 1) / BN;
}

/* Producer: one thread streams Q and the K/V ring. Phases: q_empty/k_empty/v_empty are waited
 * with the parity of the previous round (a fresh barrier passes parity 1). */
template <int D>
static __device__ void v2_producer(const attn_params& p, const CUtensorMap* tq,
                                   const CUtensorMap* tk, const CUtensorMap* tv, uint8_t* smem,
                                   uint64_t* bars) {
  typedef v2_cfg<D> C;
  uint64_t *q_full = bars, *q_empty = bars + 1;
  uint64_t *k_full = bars + 2, *k_empty = k_full + C::STAGES;
  uint64_t *v_full = k_empty + C::STAGES, *v_empty = v_full + C::STAGES;
  uint32_t q_phase = 0, kv_phase = 0;
  int stage = 0;
  for (int pos = blockIdx.x; pos < p.num_tiles; pos += gridDim.x) {
    int bh, qt;
    v2_tile_at(p, pos, &bh, &qt);
    int b = bh / p.H, h = bh - b * p.H, m0 = qt * C::BM;
    xs_mbar_wait(q_empty, q_phase ^ 1);
    xs_mbar_arrive_expect_tx(q_full, C::Q_BYTES);
#pragma unroll
    for (int c = 0; c < C::CHUNKS; c++)
      xs_attn_tma_load_4d(smem + C::OFF_Q + c * (C::BM * 128), tq, q_full, c * 64, h, m0, b);
    q_phase ^= 1;
    int n_kv = v2_num_kv(p, m0, C::BN);
    for (int j = 0; j < n_kv; j++) {
      xs_mbar_wait(&k_empty[stage], kv_phase ^ 1);
      xs_mbar_arrive_expect_tx(&k_full[stage], C::KV_BYTES);
#pragma unroll
      for (int c = 0; c < C::CHUNKS; c++)
        xs_attn_tma_load_4d(smem + C::OFF_K + stage * C::KV_BYTES + c * (C::BN * 128), tk,
                            &k_full[stage], c * 64, h, j * C::BN, b);
      xs_mbar_wait(&v_empty[stage], kv_phase ^ 1);
      xs_mbar_arrive_expect_tx(&v_full[stage], C::KV_BYTES);
#pragma unroll
      for (int c = 0; c < C::CHUNKS; c++)
        xs_attn_tma_load_4d(smem + C::OFF_V + stage * C::KV_BYTES + c * (C::BN * 128), tv,
                            &v_full[stage], c * 64, h, j * C::BN, b);
      if (++stage == C::STAGES) {
        stage = 0;
        kv_phase ^= 1;
      }
    }
  }
}

/* S = Q K^T for one warpgroup: D/16 wgmma k-steps, A = this warpgroup's 64 Q rows, B = the
 * stage's 128 keys, both K-major in 128-byte swizzled atoms (+32 B per k16 inside an atom). */
template <int D>
static __device__ __forceinline__ void v2_issue_qk(float (&s)[64], uint32_t q_addr,
                                                   uint32_t k_addr) {
  typedef v2_cfg<D> C;
#pragma unroll
  for (int ks = 0; ks < D / 16; ks++) {
    uint32_t off = (ks % 4) * 32;
    uint64_t da = xs_attn_desc_sw128(q_addr + (ks / 4) * (C::BM * 128) + off, 16, 1024);
    uint64_t db = xs_attn_desc_sw128(k_addr + (ks / 4) * (C::BN * 128) + off, 16, 1024);
    xs_wgmma_m64n128k16_bf16_ss(s, da, db, ks > 0);
  }
}

/* O += P V: BN/16 k-steps over keys, A = P (registers), B = V stage, N-major: 64-wide head-dim
 * blocks BN*128 bytes apart (lbo), 8-key groups 1024 bytes apart (sbo), +2048 B per k16. */
template <int D>
static __device__ __forceinline__ void v2_issue_pv(float (&o)[D / 2], const uint32_t* pr,
                                                   uint32_t v_addr) {
  typedef v2_cfg<D> C;
#pragma unroll
  for (int ks = 0; ks < C::BN / 16; ks++) {
    uint64_t db = xs_attn_desc_sw128(v_addr + ks * 2048, C::BN * 128, 1024);
    if (D == 128)
      xs_attn_wgmma_rs_m64n128k16_tb(o, pr + 4 * ks, db, 1);
    else
      xs_attn_wgmma_rs_m64n64k16_tb(o, pr + 4 * ks, db, 1);
  }
}

/* Online softmax on S_j (row g in s[4j+0..1], row g+8 in s[4j+2..3]): masks keys past Skv and,
 * when causal, past the row; updates the running max m and partial sum l of both rows, turns
 * s into exp2(scale_log2 * (s - m)), returns the factors the old O must be scaled by. */
template <int NS>
static __device__ __forceinline__ void v2_softmax(float* s, float* m, float* l, float* alpha,
                                                  const attn_params& p, int n0, int row0,
                                                  bool mask) {
  int t = threadIdx.x & 3;
  if (mask) {
#pragma unroll
    for (int i = 0; i < NS; i++) {
      int col = n0 + 8 * (i / 4) + 2 * t + (i & 1);
      int row = row0 + 8 * ((i >> 1) & 1);
      if (col >= p.Skv || (p.causal && col > row)) s[i] = -INFINITY;
    }
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    float mx = m[r];
#pragma unroll
    for (int j = 0; j < NS / 4; j++)
      mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    /* NOTE: a row with no visible key yet keeps max -inf; offset 0 keeps exp2 finite. */
    float off = mx == -INFINITY ? 0.0f : mx * p.scale_log2;
    alpha[r] = xs_attn_exp2(m[r] * p.scale_log2 - off);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < NS / 4; j++) {
      float a = xs_attn_exp2(fmaf(s[4 * j + 2 * r], p.scale_log2, -off));
      float b = xs_attn_exp2(fmaf(s[4 * j + 2 * r + 1], p.scale_log2, -off));
      s[4 * j + 2 * r] = a;
      s[4 * j + 2 * r + 1] = b;
      sum += a + b;
    }
    l[r] = l[r] * alpha[r] + sum; /* partial over this thread's columns; quad-summed at the end */
    m[r] = mx;
  }
}

/* Epilogue of one consumer warpgroup: O / l to staging, then coalesced 16-byte stores. */
template <int D, bool kMap>
static __device__ bool v2_epilogue(const attn_params& p, float* o, const float* m, float* l,
                                   uint8_t* stage, int cw, int b, int h, int m0, bool defer,
                                   uint16_t** t_dst, int* t_rows) {
  typedef v2_cfg<D> C;
  int tid = threadIdx.x & 127, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int r = 0; r < 2; r++) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    int row_local = 16 * warp + g + 8 * r;
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
      uint32_t v = xs_attn_pack_bf16x2(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
      *(uint32_t*)(stage + row_local * C::O_ROW_BYTES + (8 * j + 2 * t) * 2) = v;
    }
    int row = m0 + C::WG_M * cw + row_local;
    if (p.lse && t == 0 && row < p.S)
      p.lse[((int64_t)b * p.H + h) * p.S + row] =
          (m[r] * p.scale_log2 + __log2f(l[r])) * 0.69314718055994531f;
  }
  xs_named_bar_sync(V2_BAR_EPI + cw, 128);
  constexpr int VPR = D / 8;     /* 16-byte vectors per row */
  constexpr int RPP = 128 / VPR; /* rows per pass of the 128 threads */
  constexpr int PASSES = C::WG_M / RPP;
  int row_lo = m0 + C::WG_M * cw; /* this warpgroup's first row */
  int rows = min(C::WG_M, p.S - row_lo);
  int rl0 = tid / VPR, cv = tid - rl0 * VPR;
  if (rows > 0) {
    /* NOTE: the destination of a row is looked up once per warpgroup and tile when its rows
     * all go to one destination (always for the plain epilogue, and for a map unless the 64
     * rows straddle a shard boundary): one base pointer and a constant stride per pass, no
     * division or 64-bit multiply per store. */
    int r_lo = 0, sr_lo = row_lo;
    if (kMap) {
      r_lo = row_lo / p.tokens_per_dst;
      sr_lo = row_lo - r_lo * p.tokens_per_dst;
    }
    if (!kMap || sr_lo + rows <= p.tokens_per_dst) {
      int64_t pass_stride = (int64_t)RPP * p.stride_s;
      uint16_t* dst = p.dst[r_lo] + b * p.stride_b + (int64_t)(sr_lo + rl0) * p.stride_s +
                      (int64_t)(h + p.head_offset) * p.stride_h + cv * 8;
      if (defer) { /* trickle: v2_trickle_pass stores it over the next tile's steps */
        *t_dst = dst;
        *t_rows = rows;
        return true;
      }
#pragma unroll
      for (int i = 0; i < PASSES; i++) {
        int rl = rl0 + RPP * i;
        if (rl < rows) {
          uint4 val = *(const uint4*)(stage + rl * C::O_ROW_BYTES + cv * 16);
          xs_st_v4(dst + i * pass_stride, val);
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < PASSES; i++) {
        int rl = rl0 + RPP * i, s = row_lo + rl;
        if (rl < rows) {
          uint4 val = *(const uint4*)(stage + rl * C::O_ROW_BYTES + cv * 16);
          int r = s / p.tokens_per_dst, sr = s - r * p.tokens_per_dst;
          uint16_t* dst = p.dst[r] + b * p.stride_b + (int64_t)sr * p.stride_s +
                          (int64_t)(h + p.head_offset) * p.stride_h + cv * 8;
          xs_st_v4(dst, val);
        }
      }
    }
  }
  /* NOTE: the staging tile is rewritten by the next tile's epilogue: all reads done first. */
  xs_named_bar_sync(V2_BAR_EPI + cw, 128);
  return false;
}

/* Trickle (attn_params.trickle): pass i < PASSES of a deferred tile's rows (this thread's 16-byte
 * unit of row rl0 + RPP i) from the staging buffer to its destination; dst and rows as
 * v2_epilogue left them (rows past the tile's end: a harmless read, no store). The staging
 * buffer stays untouched until the last pass: the next epilogue first flushes the passes left
 * and syncs the warpgroup. */
template <int D>
static __device__ __forceinline__ void v2_trickle_pass(const attn_params& p, const uint8_t* stage,
                                                       uint16_t* dst, int rows, int i) {
  typedef v2_cfg<D> C;
  constexpr int VPR = D / 8, RPP = 128 / VPR;
  int tid = threadIdx.x & 127, rl0 = tid / VPR, cv = tid - rl0 * VPR;
  int rl = rl0 + RPP * i;
  uint4 val = *(const uint4*)(stage + rl * C::O_ROW_BYTES + cv * 16);
  xs_st_v4_if(dst + (int64_t)i * RPP * p.stride_s, val, (uint32_t)(rl < rows));
}

/* Consumer warpgroup cw (0 or 1): rows [m0 + 64 cw, m0 + 64 cw + 64) of every tile it runs. */
template <int D, bool kMap, bool kTrickle>
static __device__ void v2_consumer(const attn_params& p, uint8_t* smem, uint64_t* bars, int cw) {
  typedef v2_cfg<D> C;
  constexpr int NS = C::BN / 2; /* S accumulators per thread (64 x BN over 128 threads) */
  constexpr int NO = D / 2;     /* O accumulators per thread */
  uint64_t *q_full = bars, *q_empty = bars + 1;
  uint64_t *k_full = bars + 2, *k_empty = k_full + C::STAGES;
  uint64_t *v_full = k_empty + C::STAGES, *v_empty = v_full + C::STAGES;
  uint64_t *pub_full = v_empty + C::STAGES, *pub_empty = pub_full + C::PUB_SLOTS;
  int tid = threadIdx.x & 127, warp = tid >> 5, lane = tid & 31;
  uint32_t q_addr = xs_smem_u32(smem + C::OFF_Q) + cw * (C::WG_M * 128);
  uint32_t k_base = xs_smem_u32(smem + C::OFF_K), v_base = xs_smem_u32(smem + C::OFF_V);
  uint32_t my_turn = V2_BAR_SCHED + cw, other_turn = V2_BAR_SCHED + (1 - cw);
  uint32_t q_phase = 0, kv_phase = 0, pub_phase = 0;
  int stage = 0, pub_slot = 0;
  /* trickle (kTrickle: a map with epilogue.trickle): the deferred tile's destination and rows,
   * and its next pass (T_PASSES: none pending) */
  constexpr int T_PASSES = C::WG_M / (128 / (D / 8));
  uint8_t* o_stage = smem + C::OFF_O + cw * C::O_BYTES;
  uint16_t* t_dst = nullptr;
  int t_rows = 0, t_next = T_PASSES;
  float s[NS], o[NO];
  uint32_t pr[NS / 2];
  if (cw == 1) xs_attn_bar_arrive(V2_BAR_SCHED + 0, 256); /* consumer 0 takes the first turn */
  for (int pos = blockIdx.x; pos < p.num_tiles; pos += gridDim.x) {
    int bh, qt;
    v2_tile_at(p, pos, &bh, &qt);
    int b = bh / p.H, h = bh - b * p.H, m0 = qt * C::BM;
    int row0 = m0 + C::WG_M * cw + 16 * warp + (lane >> 2); /* this thread's first row */
    int row_min = m0 + C::WG_M * cw;                        /* this warpgroup's first row */
    int n_kv = v2_num_kv(p, m0, C::BN);
    int t_due = t_next < T_PASSES ? 1 : INT_MAX; /* trickle: the step of the next pass */
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, alpha[2] = {1.0f, 1.0f};
#pragma unroll
    for (int i = 0; i < NO; i++)
      o[i] = 0.0f;
    xs_mbar_wait(q_full, q_phase);
    q_phase ^= 1;
    /* Step 0 (peeled: every branch below is uniform, so ptxas can prove each accumulator's
     * wgmma group complete before ordinary code touches it). */
    xs_mbar_wait(&k_full[stage], kv_phase);
    xs_named_bar_sync(my_turn, 256);
    xs_wgmma_fence_regs(s);
    xs_wgmma_fence();
    v2_issue_qk<D>(s, q_addr, k_base + stage * C::KV_BYTES);
    xs_wgmma_commit();
    xs_attn_bar_arrive(other_turn, 256);
    xs_wgmma_wait<0>();
    xs_wgmma_fence_regs(s);
    __syncwarp();
    if (lane == 0) {
      xs_mbar_arrive(&k_empty[stage]);
      if (n_kv == 1) xs_mbar_arrive(q_empty);
    }
    v2_softmax<NS>(s, m, l, alpha, p, 0, row0, C::BN > p.Skv || (p.causal && C::BN - 1 > row_min));
#pragma unroll
    for (int i = 0; i < NS / 2; i++)
      pr[i] = xs_attn_pack_bf16x2(s[2 * i], s[2 * i + 1]);
    int prev_stage = stage;
    uint32_t prev_phase = kv_phase;
    if (++stage == C::STAGES) {
      stage = 0;
      kv_phase ^= 1;
    }
    for (int j = 1; j < n_kv; j++) {
      int n0 = j * C::BN;
      xs_mbar_wait(&k_full[stage], kv_phase);
      /* Phase 1 (our turn on the tensor cores): issue S_j, then O = O * alpha + P_{j-1} V_{j-1}
       * (the rescale runs while S_j is in flight; O is not one of its accumulators). */
      xs_named_bar_sync(my_turn, 256);
      xs_wgmma_fence_regs(s);
      xs_wgmma_fence();
      v2_issue_qk<D>(s, q_addr, k_base + stage * C::KV_BYTES);
      xs_wgmma_commit();
#pragma unroll
      for (int i = 0; i < NO; i++)
        o[i] *= alpha[(i >> 1) & 1];
      xs_mbar_wait(&v_full[prev_stage], prev_phase);
      xs_wgmma_fence_regs(o);
      xs_attn_fence_regs_u32<NS / 2>(pr);
      xs_wgmma_fence();
      v2_issue_pv<D>(o, pr, v_base + prev_stage * C::KV_BYTES);
      xs_wgmma_commit();
      xs_attn_bar_arrive(other_turn, 256);
      /* Phase 2: S_j done -> softmax while P V runs; then release K_j (and Q after the last
       * step), wait for P V, release V_{j-1}. */
      xs_wgmma_wait<1>();
      xs_wgmma_fence_regs(s);
      bool mask = n0 + C::BN > p.Skv || (p.causal && n0 + C::BN - 1 > row_min);
      v2_softmax<NS>(s, m, l, alpha, p, n0, row0, mask);
      /* NOTE: K_j is released after the softmax, not right after the wait above: the branch
       * around the arrive ends the basic block, and ptxas then keeps the P V wait below the
       * softmax (it hoists a wgmma wait to the top of its block, which would serialise the
       * softmax behind P V: seen in SASS, MUFU.EX2 after WARPGROUP.DEPBAR.LE gsb0, 0x0). */
      __syncwarp();
      if (lane == 0) {
        xs_mbar_arrive(&k_empty[stage]);
        if (j == n_kv - 1) xs_mbar_arrive(q_empty);
      }
      xs_wgmma_wait<0>();
      xs_wgmma_fence_regs(o);
      /* Phase 3: P_j to bf16 registers: accumulator chunks 2kk, 2kk+1 = A fragment kk. */
#pragma unroll
      for (int i = 0; i < NS / 2; i++)
        pr[i] = xs_attn_pack_bf16x2(s[2 * i], s[2 * i + 1]);
      __syncwarp();
      if (lane == 0) xs_mbar_arrive(&v_empty[prev_stage]);
      /* trickle: the previous tile's passes spread evenly over this tile's key/value steps,
       * pass i at step 1 + ceil(i (n_kv - 1) / T_PASSES) (one pass a step when behind), at the
       * end of the step (no wgmma of this warpgroup in flight), behind a uniform branch; the
       * step of the next pass is kept, so a step without one costs a compare. Measured
       * (session 20): the placement after the P V issue, a predicated pass every step, a
       * countdown, and the due pass recomputed every step each cost more compute. */
      if (kTrickle && j >= t_due) {
        v2_trickle_pass<D>(p, o_stage, t_dst, t_rows, t_next);
        t_next++;
        t_due = t_next < T_PASSES ? 1 + (t_next * (n_kv - 1) + T_PASSES - 1) / T_PASSES : INT_MAX;
      }
      prev_stage = stage;
      prev_phase = kv_phase;
      if (++stage == C::STAGES) {
        stage = 0;
        kv_phase ^= 1;
      }
    }
    /* Last step: O = O * alpha + P_last V_last, in our turn. */
#pragma unroll
    for (int i = 0; i < NO; i++)
      o[i] *= alpha[(i >> 1) & 1];
    xs_mbar_wait(&v_full[prev_stage], prev_phase);
    xs_named_bar_sync(my_turn, 256);
    xs_wgmma_fence_regs(o);
    xs_attn_fence_regs_u32<NS / 2>(pr);
    xs_wgmma_fence();
    v2_issue_pv<D>(o, pr, v_base + prev_stage * C::KV_BYTES);
    xs_wgmma_commit();
    xs_attn_bar_arrive(other_turn, 256);
    xs_wgmma_wait<0>();
    xs_wgmma_fence_regs(o);
    __syncwarp();
    if (lane == 0) xs_mbar_arrive(&v_empty[prev_stage]);
    if (kTrickle && t_next < T_PASSES) { /* passes left (a short tile): out before staging */
      while (t_next < T_PASSES)
        v2_trickle_pass<D>(p, o_stage, t_dst, t_rows, t_next++);
      xs_named_bar_sync(V2_BAR_EPI + cw, 128);
    }
    /* a CTA's last tile goes out at once (nothing after it to trickle under) */
    bool defer = kTrickle && pos + (int)gridDim.x < p.num_tiles;
    if (v2_epilogue<D, kMap>(p, o, m, l, o_stage, cw, b, h, m0, defer, &t_dst, &t_rows)) t_next = 0;
    if (p.flags) {
      /* Hand the tile to the flag publisher (v2_publisher): the epilogue ended with a barrier
       * over this warpgroup after all of its stores, so one arrival (release, CTA scope) by
       * thread 0 carries all 128 threads' stores. The wait on pub_empty only blocks when the
       * publisher is PUB_SLOTS tiles behind. */
      if (tid == 0) {
        xs_mbar_wait(&pub_empty[pub_slot], pub_phase ^ 1);
        xs_mbar_arrive(&pub_full[pub_slot]);
      }
      __syncwarp();
      if (++pub_slot == C::PUB_SLOTS) {
        pub_slot = 0;
        pub_phase ^= 1;
      }
    }
  }
  if (cw == 0) xs_named_bar_sync(V2_BAR_SCHED + 0, 256); /* consume consumer 1's last turn */
}

/* Flag publisher: one thread of the producer warpgroup. Per tile, in the consumers' order: wait
 * until both consumer warpgroups have arrived on pub_full (each after a barrier that follows
 * all of its stores of the tile), then fence at system scope and store the flag.
 * Ordering argument: every store of the tile -> bar.sync of its warpgroup (orders the 128
 * threads' accesses, CTA scope) -> mbarrier.arrive by thread 0 (release, CTA scope) ->
 * mbarrier.try_wait here (acquire, CTA scope) -> fence.acq_rel.sys -> st.release.sys of the
 * flag. Causality order is transitive through these CTA-scope synchronisations and the fence
 * is cumulative, so a reader that acquires the flag at system scope (ld.acquire.sys) sees all
 * of the tile's stores, from both warpgroups. The fence waits for those stores to be visible
 * system-wide (microseconds for host-mapped memory): here that stalls only this thread. */
template <int D> static __device__ void v2_publisher(const attn_params& p, uint64_t* bars) {
  typedef v2_cfg<D> C;
  uint64_t* pub_full = bars + 2 + 4 * C::STAGES;
  uint64_t* pub_empty = pub_full + C::PUB_SLOTS;
  uint32_t phase = 0;
  int slot = 0;
  for (int pos = blockIdx.x; pos < p.num_tiles; pos += gridDim.x) {
    int bh, qt;
    int tile = v2_tile_at(p, pos, &bh, &qt);
    xs_mbar_wait(&pub_full[slot], phase);
    xs_fence_acq_rel_sys();
    xs_st_release_sys_u32(p.flags + tile, p.flag_value);
    xs_mbar_arrive(&pub_empty[slot]);
    if (++slot == C::PUB_SLOTS) {
      slot = 0;
      phase ^= 1;
    }
  }
}

template <int D, bool kMap, bool kTrickle>
__global__ void __launch_bounds__(384, 1)
    attention_kernel_v2(const __grid_constant__ CUtensorMap tq,
                        const __grid_constant__ CUtensorMap tk,
                        const __grid_constant__ CUtensorMap tv,
                        const __grid_constant__ attn_params p) {
  typedef v2_cfg<D> C;
  extern __shared__ uint8_t smem_raw[];
  /* NOTE: the 128-byte swizzle repeats every 1024 bytes of address: align the base by hand. */
  uint8_t* smem = (uint8_t*)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  uint64_t* bars = (uint64_t*)(smem + C::OFF_BAR);
  if (threadIdx.x == 0) {
    xs_mbar_init(&bars[0], 1); /* q_full: the producer's expect_tx + TMA bytes */
    xs_mbar_init(&bars[1], 8); /* q_empty: lane 0 of each of the 8 consumer warps */
    for (int i = 0; i < C::STAGES; i++) {
      xs_mbar_init(&bars[2 + i], 1);                 /* k_full */
      xs_mbar_init(&bars[2 + C::STAGES + i], 8);     /* k_empty */
      xs_mbar_init(&bars[2 + 2 * C::STAGES + i], 1); /* v_full */
      xs_mbar_init(&bars[2 + 3 * C::STAGES + i], 8); /* v_empty */
    }
    for (int i = 0; i < C::PUB_SLOTS; i++) {
      xs_mbar_init(&bars[2 + 4 * C::STAGES + i], 2);                /* pub_full: 1 per consumer */
      xs_mbar_init(&bars[2 + 4 * C::STAGES + C::PUB_SLOTS + i], 1); /* pub_empty: publisher */
    }
    xs_fence_mbar_init();
  }
  __syncthreads();
  int wg = threadIdx.x / 128;
  if (wg == 0) {
    xs_setmaxnreg_dec<C::PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      xs_tma_prefetch_map(&tq);
      xs_tma_prefetch_map(&tk);
      xs_tma_prefetch_map(&tv);
      v2_producer<D>(p, &tq, &tk, &tv, smem, bars);
    } else if (threadIdx.x == 32 && p.flags) {
      v2_publisher<D>(p, bars);
    }
  } else {
    xs_setmaxnreg_inc<C::CONSUMER_REGS>();
    v2_consumer<D, kMap, kTrickle>(p, smem, bars, wg - 1);
  }
}

template <int D, bool kMap, bool kTrickle>
static xs_result v2_launch(const attn_params* p, const CUtensorMap* tq, const CUtensorMap* tk,
                           const CUtensorMap* tv, int num_sms, cudaStream_t stream) {
  typedef v2_cfg<D> C;
  cudaError_t e = cudaFuncSetAttribute(attention_kernel_v2<D, kMap, kTrickle>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM);
  if (e != cudaSuccess)
    return xsi_set_error(XS_ERR_CUDA, "attention v2: set shared memory %u: %s", C::SMEM,
                         cudaGetErrorString(e));
  int grid = p->num_tiles < num_sms ? p->num_tiles : num_sms;
  /* Causal default order (v2_tile_at): sections of heads spanning >= 16 rounds of the grid
   * each; 1 section (all heads interleaved) up to 16 * grid tiles. */
  attn_params pp = *p;
  int bh = p->B * p->H, ns = p->num_tiles / (16 * grid);
  pp.order_sections = ns < 1 ? 1 : ns > bh ? bh : ns;
  attention_kernel_v2<D, kMap, kTrickle><<<grid, C::THREADS, C::SMEM, stream>>>(*tq, *tk, *tv, pp);
  e = cudaGetLastError();
  if (e != cudaSuccess)
    return xsi_set_error(XS_ERR_CUDA, "attention v2 launch (d=%d, grid %d): %s", D, grid,
                         cudaGetErrorString(e));
  return XS_OK;
}

xs_result xsi_attention_v2(const attn_params* p, const CUtensorMap* tq, const CUtensorMap* tk,
                           const CUtensorMap* tv, int num_sms, cudaStream_t stream) {
  /* epilogue.trickle is checked to come with a map (attention.cu check_args) */
  if (p->D == 128)
    return p->trickle ? v2_launch<128, true, true>(p, tq, tk, tv, num_sms, stream)
           : p->map   ? v2_launch<128, true, false>(p, tq, tk, tv, num_sms, stream)
                      : v2_launch<128, false, false>(p, tq, tk, tv, num_sms, stream);
  return p->trickle ? v2_launch<64, true, true>(p, tq, tk, tv, num_sms, stream)
         : p->map   ? v2_launch<64, true, false>(p, tq, tk, tv, num_sms, stream)
                    : v2_launch<64, false, false>(p, tq, tk, tv, num_sms, stream);
}
