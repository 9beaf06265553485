/* hopper_common.cuh — device helpers shared by the Hopper GEMM kernels (gemm_v2.cu: v2-v6,
 * gemm_v7.cu: v7, gemm_v8.cu: v8). CUDA only; internal to src/kernels/gemm.
 */
#ifndef XSTAGE_KERNELS_GEMM_HOPPER_COMMON_CUH
#define XSTAGE_KERNELS_GEMM_HOPPER_COMMON_CUH

#include <cuda_bf16.h>

#include "kernels/gemm/gemm_internal.h"
#include "xstage/ptx.cuh"

/* The producer's wait is bounded: a wait that never ends is a bug (a lost arrival, a wrong
 * parity, an expect_tx byte count TMA never delivers: the consumers then stop releasing slots
 * and the producer stalls too). After 4 s it traps, so the launch fails with an error
 * (cudaErrorLaunchFailure) instead of hanging. NOTE: the consumers wait unbounded: one more
 * live register (a counter) makes the 128x256 consumer spill; no printf either (a call would
 * make ptxas save live registers around it). */
template <bool CLUSTER = false>
static __device__ __forceinline__ void xsg_wait_timed(uint64_t* bar, uint32_t parity) {
  auto done = [&]() {
    return CLUSTER ? xs_mbar_try_wait_cluster(bar, parity) : xs_mbar_try_wait(bar, parity);
  };
  if (done()) return;
  const uint64_t t0 = xs_globaltimer();
  for (uint32_t n = 1;; n++) {
    if (done()) return;
    if ((n & 1023) == 0 && xs_globaltimer() - t0 > 4000000000ull) __trap();
  }
}

/* A producer's last act: wait (bounded) until the consumers have released every slot of its
 * ring, i.e. make the next `stages` waits its loop would have made from slot s, phase `phase`.
 * A consumer stuck on a full barrier (a lost byte count in the last k-blocks) then traps the
 * launch here instead of hanging it. */
static __device__ __forceinline__ void xsg_drain_ring(uint64_t* empty, int stages, int s,
                                                      uint32_t phase) {
  for (int i = 0; i < stages; i++) {
    xsg_wait_timed(&empty[s], phase ^ 1);
    if (++s == stages) {
      s = 0;
      phase ^= 1;
    }
  }
}

static __device__ __forceinline__ uint32_t xsg_pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

/* silu(g_k) * u_k = g_k / (1 + e^-g_k) * u_k for four values with ONE reciprocal: with d_k = 1 +
 * e^-g_k and r = 1 / (d0 d1 d2 d3), 1 / d0 = r d1 (d2 d3), ... (nine multiplies). The epilogue of
 * a SiLU*mul tile is bound by the MUFU pipe (16 results per clock per SM; 2 per output before
 * session 7: e^x and 1/x, ~1.1 us of a 128x256 tile with the tensor cores idle); this takes 1.25.
 * e^-g is clamped to 2^31 so the product stays below 2^124 (a normal reciprocal): for g < -21.4
 * sigmoid(g) is taken as 4.7e-10 instead of e^g (an absolute error below 4.7e-10 |g u|). NaN in g
 * or u still gives NaN. NOTE: approximate exp and reciprocal and the products' roundings: relative
 * error below 2e-5 (__expf's argument rounding, as before), far below the bf16 output's half-ulp
 * (2e-3); tests/gpu/test_gemm.cu test_silu_mul4 checks both bounds. */
static __device__ __forceinline__ float4 xsg_silu_mul4(float4 g, float4 u) {
  const float c = 2147483648.0f; /* 2^31 */
  const float d0 = 1.0f + fminf(__expf(-g.x), c), d1 = 1.0f + fminf(__expf(-g.y), c);
  const float d2 = 1.0f + fminf(__expf(-g.z), c), d3 = 1.0f + fminf(__expf(-g.w), c);
  const float d01 = d0 * d1, d23 = d2 * d3;
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d01 * d23));
  const float r01 = r * d23, r23 = r * d01; /* 1 / d01, 1 / d23 */
  return make_float4(g.x * u.x * (r01 * d1), g.y * u.y * (r01 * d0), g.z * u.z * (r23 * d3),
                     g.w * u.w * (r23 * d2));
}

/* Two bf16x2 words of silu(g[k]) * u[k], k = 0..3 (w0: k = 0, 1; w1: k = 2, 3). */
static __device__ __forceinline__ void xsg_silu_mul4_bf16(const float* g, const float* u,
                                                          uint32_t& w0, uint32_t& w1) {
  const float4 o =
      xsg_silu_mul4(make_float4(g[0], g[1], g[2], g[3]), make_float4(u[0], u[1], u[2], u[3]));
  w0 = xsg_pack_bf16x2(o.x, o.y);
  w1 = xsg_pack_bf16x2(o.z, o.w);
}

/* The exclusive prefix sum, in place, of table[1..E] (table[e + 1] holds entry e on entry;
 * table[e] = entries < e on return, table[0] = 0). Called by all threads after a __syncthreads
 * that publishes the entries; warp 0 scans, the caller's next __syncthreads publishes it. */
static __device__ __forceinline__ void xsg_scan_table_warp(int32_t* table, int E, int lane) {
  {
    /* Each lane sums a run of ceil(E / 32) entries, a warp scan adds the runs before it. */
    const int per = (E + 31) / 32;
    const int lo = lane * per, hi = lo + per < E ? lo + per : E;
    int sum = 0;
    for (int e = lo; e < hi; e++)
      sum += table[e + 1];
    int incl = sum;
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    int run = incl - sum;
    for (int e = lo; e < hi; e++) {
      run += table[e + 1];
      table[e + 1] = run;
    }
    if (lane == 0) table[0] = 0;
  }
}

static __device__ __forceinline__ void xsg_scan_table(int32_t* table, int E) {
  if (threadIdx.x < 32) xsg_scan_table_warp(table, E, threadIdx.x);
}

/* The MASKED compacted schedule's prefix (sched.h) in shared memory: table[e] = work tiles of
 * experts < e. Called by all threads before the CTA's first __syncthreads; warp 0 scans. */
static __device__ __forceinline__ void xsg_build_masked_table(int32_t* table, const xsg_params* p) {
  const int E = p->experts;
  /* NOTE (session 6): warp 1 reads the first counts, not thread 0, which initializes the
   * barriers first: the loads then overlap the initialization (a permutation of the threads). */
  for (int e = (threadIdx.x + blockDim.x - 32) % blockDim.x; e < E; e += blockDim.x)
    table[e + 1] = xsg_masked_work(p->m_counts[e], p->M, p->tile_m, p->grid.n_blocks);
  __syncthreads();
  xsg_scan_table(table, E);
}

/* One thread touches every 64-byte line of the parameters (independent loads, so their misses
 * overlap). NOTE (session 6, v7's start-up trace): the producer's path from the schedule table
 * to its first TMA issue reads a dozen parameter fields in a dependent chain; a line first
 * touched there costs a constant-cache miss on that chain. Called by an otherwise idle warp at
 * entry. */
static __device__ __forceinline__ void xsg_warm_params(const xsg_params& p) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(&p);
  /* NOTE (session 21): not xsg_params.ready (read per tile, by the WAIT instances only). One
   * more load here changed ptxas's allocation of v3 and v11 enough to serialize their wgmma
   * (C7511) although nothing else in their code changed. */
#pragma unroll
  for (int o = 0; o < (int)(offsetof(xsg_params, ready) / 4); o += 16) {
    const uint32_t v = w[o];
    asm volatile("" ::"r"(v));
  }
}

/* xsg_build_masked_table by one warp (lane = its lane), without a CTA barrier: the caller
 * publishes the table (v7: each lane arrives on an mbarrier). */
static __device__ __forceinline__ void xsg_build_masked_table_warp(int32_t* table,
                                                                   const xsg_params* p, int lane) {
  const int E = p->experts;
  for (int e = lane; e < E; e += 32)
    table[e + 1] = xsg_masked_work(p->m_counts[e], p->M, p->tile_m, p->grid.n_blocks);
  __syncwarp();
  xsg_scan_table_warp(table, E, lane);
  __syncwarp();
}

/* The schedule table by warp 3 (lane = its lane) of a v2-v7 CTA: the MASKED compacted prefix
 * (p.compact) or the CONTIG offsets (contig_table), then each lane arrives on table_ready
 * (initialized with count 32; the arrive releases the lane's table writes). first >= 0: offset
 * `lane`, loaded by the caller before its set-up (gemm_v2.cu, session 14). */
static __device__ __forceinline__ void xsg_build_table_warp(int32_t* table, uint64_t* table_ready,
                                                            const xsg_params& p, int contig_table,
                                                            int lane, int32_t first = -1) {
  if (p.compact) xsg_build_masked_table_warp(table, &p, lane);
  if (contig_table)
    for (int e = lane; e <= p.experts; e += 32)
      table[e] = e == lane && first >= 0 ? first : p.m_offsets[e];
  xs_mbar_arrive(table_ready);
}

/* The speculative start (session 6). A producer's first tile needs the schedule table, i.e. the
 * MASKED device counts: ~1 us of dependent loads after the CTA starts (v7's trace,
 * bench/gemm_probe_v7.cu) in which it would load nothing. With one m-block per expert (every v7
 * launch AUTO makes; v2-v6 up to 128 rows per expert) compacted position k is the tile
 * (k / n_blocks, 0, k % n_blocks) whenever no expert before it is empty. So the producer loads
 * that tile's first `spec` k-blocks at once (fresh slots: no empty wait). Once the table exists,
 * producer and consumers compare the real first tile with the guess (the same arithmetic on both
 * sides): equal, and the producer goes on at k-block `spec`; different (an empty expert earlier),
 * and the consumers drain those slots unused (wait for the bytes, release) while the producer
 * starts the real tile in the next slot. Returns the k-blocks to guess (0: no guess) and the
 * guess in *g, *nb. */
static __device__ __forceinline__ int xsg_spec_guess(const xsg_params& p, int k0, int k_blocks,
                                                     int spec, int* g, int* nb) {
  if (!p.compact || p.grid.m_blocks != 1 || k0 >= p.positions) return 0;
  *g = k0 / p.grid.n_blocks;
  *nb = k0 - *g * p.grid.n_blocks;
  return k_blocks < spec ? k_blocks : spec;
}

/* A consumer's side of the guess, once the table is published (the caller waited for it):
 * whether position k0 is the guessed tile (so the producer's speculative slots belong to it). */
static __device__ __forceinline__ bool xsg_spec_hit(const xsg_params& p, const int32_t* table,
                                                    int k0, int g, int nb) {
  if (k0 >= table[p.experts]) return false;
  const xsg_tile t = xsg_masked_coords(&p.grid, table, p.experts, k0);
  return t.g == g && t.mb == 0 && t.nb == nb;
}

/* A consumer's start after the speculative loads (xsg_spec_guess: `spec` k-blocks into slots
 * 0 .. spec - 1 of phase 0): on a miss (xsg_spec_hit false) those slots are drained unused, each
 * warp waiting for the bytes and its lane 0 releasing the slot. Returns the consumer's first slot:
 * 0, or `spec` after a drain (spec < the ring's stages: no wrap). The caller has waited for the
 * schedule table. */
static __device__ __forceinline__ int xsg_spec_drain_slots(int spec, uint64_t* full,
                                                           uint64_t* empty, int lane) {
  for (int i = 0; i < spec; i++) {
    xs_mbar_wait(&full[i], 0);
    if (lane == 0) xs_mbar_arrive(&empty[i]);
  }
  return spec;
}
static __device__ __forceinline__ int xsg_spec_drain(const xsg_params& p, const int32_t* table,
                                                     int k0, int g, int nb, int spec,
                                                     uint64_t* full, uint64_t* empty, int lane) {
  if (!spec || xsg_spec_hit(p, table, k0, g, nb)) return 0;
  return xsg_spec_drain_slots(spec, full, empty, lane);
}

/* The speculative start for CONTIG (session 16; v2-v6, v11-v13). The host gives each CTA its first
 * tile (sched.h xsg_first_tiles: m-block and n-block), but which expert's B it multiplies is in
 * the device offsets, which warp 3 copies into the table: 0.6 us after the CTA's entry when the
 * previous launch was the same, ~2.8 us after an idle GPU or other kernels' traffic, and until
 * then the producer loaded nothing. The guess is the even split (sched.h xsg_contig_guess). The
 * producer loads the first `spec` k-blocks of that tile at once; once the table exists, producer
 * and consumers check it (xsg_contig_owns) as for MASKED. Returns the k-blocks to guess (0: no
 * guess, M is not split evenly) and the guess in *g, *mb, *nb.
 * NOTE: v3 and v11 have no register margin (gemm_v2.cu): computed this way, ptxas keeps their
 * wgmma pipelines; with the even split passed as a parameter, or a test of experts > 0 in
 * xsg_contig_guess, it serialized them (C7511). */
static __device__ __forceinline__ int xsg_spec_guess_contig(const xsg_params& p, uint32_t first,
                                                            int k_blocks, int spec, int* g,
                                                            int* mb, int* nb) {
  const xsg_tile t = xsg_first_tile_of(first);
  const int guess = xsg_contig_guess(t.mb, p.M, p.experts, p.tile_m);
  if (guess < 0) return 0;
  *g = guess;
  *mb = t.mb;
  *nb = t.nb;
  return k_blocks < spec ? k_blocks : spec;
}

/* A consumer warpgroup's k-blocks of one tile in v2-v6, v11-v13 and v8 (the caller has waited for
 * the first k-block's slot): per k-block the wgmmas mma(desc_a, desc_b, accumulate) on the
 * warpgroup's 64 rows of A (`half`) and the slot's B, as one group; hook(kb) after its commit;
 * one group kept in flight, the previous k-block's slot released with release(&empty[slot]) by
 * lane 0 of each warp (`lane`: the thread's lane). At the end every group has retired. Returns the
 * last k-block's slot, which the caller releases (v13 holds it). s and phase walk the ring. */
template <int STAGES, int STAGE_BYTES, int A_BYTES, int BK, class Mma, class Hook, class Release>
static __device__ __forceinline__ int
xsg_k_loop(uint8_t* ring, int half, int lane, int k_blocks, uint64_t* full, uint64_t* empty, int& s,
           uint32_t& phase, Mma mma, Hook hook, Release release) {
  int prev_s = 0;
  for (int kb = 0; kb < k_blocks; kb++) {
    if (kb > 0) xs_mbar_wait(&full[s], phase);
    const uint8_t* sa = ring + s * STAGE_BYTES + half * (A_BYTES / 2);
    const uint8_t* sb = ring + s * STAGE_BYTES + A_BYTES;
    const uint64_t desc_a = xs_smem_desc_sw128(sa), desc_b = xs_smem_desc_sw128(sb);
    xs_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) /* 16-wide K steps: +32 bytes = +2 in the */
      mma(desc_a + 2 * kk, desc_b + 2 * kk, (kb > 0 || kk > 0) ? 1 : 0); /* address field */
    xs_wgmma_commit();
    hook(kb);
    /* The previous k-block's group has retired once at most one group is pending: its slot can
     * go back to the producer. */
    xs_wgmma_wait<1>();
    if (kb > 0 && lane == 0) release(&empty[prev_s]);
    prev_s = s;
    if (++s == STAGES) {
      s = 0;
      phase ^= 1;
    }
  }
  xs_wgmma_wait<0>();
  return prev_s;
}

/* A finished tile's flag (xs_gemm_epilogue.tile_flags): the thread that issued the tile's TMA
 * stores (tid 0, when `tma`) waits until they are written and orders them before its later
 * generic accesses; the `threads` threads that stored the tile meet at named barrier `bar` (the
 * plain stores of each precede it); then `publisher` raises the flag at system scope. */
static __device__ __forceinline__ void xsg_raise_tile_flag(uint32_t* flag, int tma, int tid,
                                                           int bar, int threads, bool publisher) {
  if (tma && tid == 0) {
    xs_bulk_wait_all();            /* the tile's bytes are written ... */
    xs_fence_proxy_async_global(); /* ... and ordered before this thread's release */
  }
  xs_named_bar_sync(bar, threads);
  if (publisher) {
    xs_fence_acq_rel_sys();
    xs_red_add_release_sys_u32(flag, 1);
  }
}

/* xsg_tile_rows with the CONTIG expert lookup on `offsets` (the shared-memory copy when it
 * exists). Returns 0 for a tile without work. */
static __device__ __forceinline__ int xsg_tile_rows_at(const xsg_params& p, const int32_t* offsets,
                                                       xsg_tile t, int* row0, int* row_end,
                                                       int* expert) {
  if (p.layout == XS_GEMM_GROUPED_CONTIG) {
    *row0 = t.mb * p.tile_m;
    *expert = xsg_contig_expert(offsets, p.experts, *row0);
    *row_end = p.M;
    return *expert >= 0;
  }
  return xsg_tile_rows(&p, t, row0, row_end, expert);
}

/* Every thread, after the shared-memory set-up and before the kernel's first global access
 * (inputs, counts, offsets, maps, flags, C): wait for the stream's previous kernel when this one
 * was launched with programmatic dependent launch (xsg_launch with p.pdl; a no-op otherwise),
 * then let a following PDL launch be scheduled. With PDL the CTAs of back-to-back launches start
 * while the previous grid's last CTAs finish, instead of after it has completed and been
 * launched again. The trigger comes at once: these grids take one CTA of ~227 KB per SM, so a
 * dependent's CTAs get an SM only where none of these runs or as one exits. NOTE (session 5):
 * those CTAs then land on SMs in the order they free up, not spread over the GPU as a fresh
 * launch places them; the measured losses (grids with unequal CTAs or idle SMs) fit that, and
 * are why PDL is the caller's choice (xs_gemm_schedule.pdl), not the default. */
static __device__ __forceinline__ void xsg_griddep_enter(void) {
  xs_griddep_wait();
  xs_griddep_launch_dependents();
}

/* The rows a MASKED expert has (its count, at most M): what a tile's epilogue guards its rows
 * with. NOTE (session 5): a position of the compacted MASKED schedule (p.compact) always has
 * work, so the producers no longer read the count to learn that: it was a dependent global load
 * between the schedule table and a kernel's first TMA issue. Whoever needs row_end loads it with
 * this at the tile's start; only the epilogue uses the value, so the load's latency passes under
 * the main loop. */
static __device__ __forceinline__ int xsg_masked_rows(const xsg_params& p, int expert) {
  const int count = p.m_counts[expert];
  return count < p.M ? count : p.M;
}

/* The dynamic shared memory rounded up to 1024 bytes (128B-swizzled TMA boxes and wgmma
 * descriptors need it), by pointer arithmetic on the shared array. NOTE: rounding through
 * uintptr_t, as v2-v10 did until session 5, hid from the compiler that the result points to shared
 * memory: every staging write became a generic ST.E with 64-bit address arithmetic (two IADD3
 * per store), every staging read-back a generic LD.E.128. */
static __device__ __forceinline__ uint8_t* xsg_smem_align1024(uint8_t* raw) {
  return raw + ((1024u - (xs_smem_u32(raw) & 1023u)) & 1023u);
}

/* A ring slot's schedule entry (POD of ints) as lane 0 of the warp read it, given to every lane.
 * NOTE: only lane 0 reads the shared entry, so every read of it is ordered before lane 0's
 * release of the slot (its arrive on `empty`), after which the producer may rewrite it. When all
 * lanes read it, compute-sanitizer racecheck reported the other lanes' reads against the
 * producer's next write of the entry (a __syncwarp between them did not satisfy it). */
template <class T> static __device__ __forceinline__ T xsg_entry_lane0(const T* entry) {
  static_assert(sizeof(T) % 4 == 0, "an entry of 32-bit words");
  constexpr int W = sizeof(T) / 4;
  /* NOTE: zeroed, although lanes 1-31 only send theirs to nowhere: uninitialized, the sixth word
   * of v3's 24-byte tile_info went through local memory (an 8-byte stack frame, session 13). */
  int w[W] = {};
  if ((threadIdx.x & 31) == 0) {
#pragma unroll
    for (int i = 0; i < W; i++)
      w[i] = ((const volatile int*)entry)[i];
  }
#pragma unroll
  for (int i = 0; i < W; i++)
    w[i] = __shfl_sync(0xffffffffu, w[i], 0);
  T t;
  memcpy(&t, w, sizeof(T));
  return t;
}

/* Byte offset of element (row, col) in a consumer's staging area: 64-column chunks of 64 rows x
 * 128 bytes, 16-byte units swizzled with row % 8 — the layout TMA's 128B swizzle expects, and
 * conflict-free for the accumulator fragment (8 rows x 4 column pairs per warp store). */
static __device__ __forceinline__ uint32_t xsg_stage_offset(int row, int col) {
  int chunk = col >> 6, cc = col & 63;
  return chunk * 8192 + row * 128 + ((((cc >> 3) ^ (row & 7))) << 4) + ((cc & 7) << 1);
}

/* 16-byte stores of one consumer's 64 staged rows (UNITS 16-byte units each) to
 * base[r * ld + 8u], for rows r < rows and columns 8u < cols. NOTE: UNITS is a compile-time
 * constant (the division below is a multiply) and the loop is unrolled, so every shared load of
 * a thread is issued before its first global store. 64 * UNITS is a multiple of 128 for every
 * tile but v6 with SiLU*mul (8, 10, 12, 14, 16, 28, 32 units; v8: 16; v6 SiLU: 13, whose last
 * iteration covers half the threads: the guard below is compiled only for it). */
template <int UNITS>
static __device__ __forceinline__ void xsg_store_staged(const uint8_t* my_c, uint16_t* base,
                                                        int64_t ld, int tid, int rows, int cols) {
  constexpr int TOTAL = 64 * UNITS;
  constexpr bool PARTIAL = TOTAL % 128 != 0;
#pragma unroll
  for (int i = 0; i < (TOTAL + 127) / 128; i++) {
    const int u = tid + 128 * i;
    if (PARTIAL && u >= TOTAL) continue;
    const int r = u / UNITS, cu = u - r * UNITS;
    if (r >= rows || cu * 8 >= cols) continue; /* cols % 8 == 0 on this path */
    uint4 v = *(const uint4*)(my_c + xsg_stage_offset(r, cu * 8));
    xs_st_v4(base + (int64_t)r * ld + cu * 8, v);
  }
}

/* An epilogue straight from the accumulators to global memory, no staging, no barrier (v12's, and
 * split-K's, gemm_splitk.cu): the tile of `expert` at rows [row0, row_end), column block nb,
 * through the map entry `dst` with STORE_MAP. Only pairs of 8-column output groups [pair_lo,
 * pair_hi) are stored (pair P: groups 2P, 2P + 1; BN / 16 pairs, BN / 32 with SiLU*mul; v12
 * passes all of them, compile-time constants, so the guards fold away). The caller raises the
 * tile's flag. Per pair of 8-column groups (i, i + 1) the four lanes of a quad (lane = 4g + q) hold
 * 4 x 4 words: word c of lane q is columns 8i' + 2q, +1 of row r_c (c = 0: row g, group i; 1: row
 * g + 8, group i; 2: row g, group i + 1; 3: row g + 8, group i + 1). A 4 x 4 transpose inside the
 * quad (two shuffle rounds, xor 2 then xor 1) gives lane q chunk c = q: the 8 columns of one row
 * and group in order, stored as one 16-byte store (a warp's 32 stores cover 16 rows x 32 bytes:
 * whole sectors). SiLU*mul: the words are silu(gate) * up of output group i < BN/16. Rows past
 * row_end and groups past n_out are not stored (n_out % 8 == 0 for the Hopper versions). */
template <int BN>
static __device__ __forceinline__ void
xsg_store_direct(const xsg_params& p, int half, int tid, int silu, int row0, int row_end,
                 int expert, int nb, xs_gemm_tile_dst dst, const float (&d)[BN / 2], int pair_lo,
                 int pair_hi) {
  const int warp = tid / 32, lane = tid % 32, q = lane & 3;
  const int b0 = q & 1, b1 = q >> 1;
  const int out_cols = silu ? BN / 2 : BN;
  /* This lane's chunk: row g (b0 = 0) or g + 8 (b0 = 1) of its warp's 16, group i + b1. */
  const int row = row0 + 64 * half + 16 * warp + (lane >> 2) + 8 * b0;
  const int col0 = nb * out_cols + 8 * b1; /* + 8i per pair */
  uint16_t* base;                          /* this lane's first chunk; + 8i for pair i */
  if (p.epi.store == XS_GEMM_STORE_MAP) {
    const int r = row - row0; /* tile-relative */
    base = (uint16_t*)dst.base + (int64_t)r * dst.ld + 8 * b1;
  } else {
    const int64_t batch_row = p.layout == XS_GEMM_GROUPED_MASKED ? (int64_t)expert * p.M : 0;
    base = p.C + (batch_row + row) * p.n_out + col0;
  }
  const int rows_ok = row < row_end;    /* row_end <= M on every layout */
  const int cols_left = p.n_out - col0; /* columns from this lane's first chunk on */
  auto pair = [&](int i, uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3) {
    /* stage 1 (xor 2): keep columns {2 b1, 2 b1 + 1} of the 4 chunks, from this lane and q ^ 2 */
    const uint32_t s0 = b1 ? w0 : w2, s1 = b1 ? w1 : w3;
    const uint32_t o0 = b1 ? w2 : w0, o1 = b1 ? w3 : w1;
    const uint32_t p0 = __shfl_xor_sync(0xffffffffu, s0, 2);
    const uint32_t p1 = __shfl_xor_sync(0xffffffffu, s1, 2);
    /* stage 2 (xor 1): keep chunk q from lanes q and q ^ 2, get it from q ^ 1 and q ^ 3 */
    const uint32_t t0 = b0 ? o0 : o1, t1 = b0 ? p0 : p1;
    const uint32_t k0 = b0 ? o1 : o0, k1 = b0 ? p1 : p0;
    const uint32_t r0 = __shfl_xor_sync(0xffffffffu, t0, 1);
    const uint32_t r1 = __shfl_xor_sync(0xffffffffu, t1, 1);
    /* word from lane q' goes to position q': val[x] (x = q' ^ q) = k0, r0, k1, r1 */
    const uint32_t a0 = b0 ? r0 : k0, a1 = b0 ? k0 : r0, a2 = b0 ? r1 : k1, a3 = b0 ? k1 : r1;
    uint4 v;
    v.x = b1 ? a2 : a0;
    v.y = b1 ? a3 : a1;
    v.z = b1 ? a0 : a2;
    v.w = b1 ? a1 : a3;
    if (rows_ok && 16 * (i / 2) < cols_left) *(uint4*)(base + 8 * i) = v;
  };
  if (silu) {
#pragma unroll
    for (int i = 0; i < BN / 16; i += 2) {
      if (i < 2 * pair_lo || i >= 2 * pair_hi) continue;
      const int j = i + BN / 16; /* gate column pair i <-> up pair i + BN/16 */
      uint32_t w0, w1, w2, w3;
      xsg_silu_mul4_bf16(&d[4 * i], &d[4 * j], w0, w1);
      xsg_silu_mul4_bf16(&d[4 * i + 4], &d[4 * j + 4], w2, w3);
      pair(i, w0, w1, w2, w3);
    }
  } else {
#pragma unroll
    for (int i = 0; i < BN / 8; i += 2)
      if (i >= 2 * pair_lo && i < 2 * pair_hi)
        pair(i, xsg_pack_bf16x2(d[4 * i], d[4 * i + 1]),
             xsg_pack_bf16x2(d[4 * i + 2], d[4 * i + 3]),
             xsg_pack_bf16x2(d[4 * i + 4], d[4 * i + 5]),
             xsg_pack_bf16x2(d[4 * i + 6], d[4 * i + 7]));
  }
}

/* The m64n16k16 and m64n32k16 shapes (v7's 16- and 32-token tiles) are not in
 * xstage/ptx/hopper.cuh (n64 and up, which attention uses too); the same instruction as its
 * wrappers with fewer accumulators. Both operands K-major from shared memory (128-byte swizzle
 * descriptors), scale_d = 0 overwrites d. */
/* wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16: d[8] (+)= A(64x16) * B(16x16)^T. */
static __device__ __forceinline__ void xsg_wgmma_m64n16k16(float (&d)[8], uint64_t desc_a,
                                                           uint64_t desc_b, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
               "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                 "+f"(d[7])
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16: d[16] (+)= A(64x16) * B(32x16)^T. */
static __device__ __forceinline__ void xsg_wgmma_m64n32k16(float (&d)[16], uint64_t desc_a,
                                                           uint64_t desc_b, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
               "%16, %17, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                 "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
                 "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* One k16 step of a consumer warpgroup's 64 x BN accumulators: wgmma m64nBNk16 (BN = 16, 32, 64,
 * 128, 192, 208, 224, 256; v7 passes its token tile as BN) from the shared-memory descriptors da
 * (A) and db (B); acc = 0 overwrites. */
template <int BN>
static __device__ __forceinline__ void xsg_wgmma_tile(float (&d)[BN / 2], uint64_t da, uint64_t db,
                                                      int acc);
template <>
__device__ __forceinline__ void xsg_wgmma_tile<16>(float (&d)[8], uint64_t da, uint64_t db,
                                                   int acc) {
  xsg_wgmma_m64n16k16(d, da, db, acc);
}
template <>
__device__ __forceinline__ void xsg_wgmma_tile<32>(float (&d)[16], uint64_t da, uint64_t db,
                                                   int acc) {
  xsg_wgmma_m64n32k16(d, da, db, acc);
}
template <>
__device__ __forceinline__ void xsg_wgmma_tile<64>(float (&d)[32], uint64_t da, uint64_t db,
                                                   int acc) {
  xs_wgmma_m64n64k16_bf16_ss(d, da, db, acc);
}
template <>
__device__ __forceinline__ void xsg_wgmma_tile<128>(float (&d)[64], uint64_t da, uint64_t db,
                                                    int acc) {
  xs_wgmma_m64n128k16_bf16_ss(d, da, db, acc);
}
template <>
__device__ __forceinline__ void xsg_wgmma_tile<192>(float (&d)[96], uint64_t da, uint64_t db,
                                                    int acc) {
  xs_wgmma_m64n192k16_bf16_ss(d, da, db, acc);
}
template <>
__device__ __forceinline__ void xsg_wgmma_tile<208>(float (&d)[104], uint64_t da, uint64_t db,
                                                    int acc) {
  xs_wgmma_m64n208k16_bf16_ss(d, da, db, acc);
}
template <>
__device__ __forceinline__ void xsg_wgmma_tile<224>(float (&d)[112], uint64_t da, uint64_t db,
                                                    int acc) {
  xs_wgmma_m64n224k16_bf16_ss(d, da, db, acc);
}
template <>
__device__ __forceinline__ void xsg_wgmma_tile<256>(float (&d)[128], uint64_t da, uint64_t db,
                                                    int acc) {
  xs_wgmma_m64n256k16_bf16_ss(d, da, db, acc);
}

#endif
