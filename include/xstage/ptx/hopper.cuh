/* xstage/ptx/hopper.cuh — PTX wrappers for Hopper (sm_90a): mbarriers, TMA tensor copies,
 * proxy fences, wgmma, shared-memory matrix descriptors, setmaxnreg, named barriers, elect.
 *
 * Part of the one PTX wrapper header (xstage/ptx.cuh); include that, not this file. Every
 * function names the PTX it emits. Shared-memory addresses are passed as generic pointers and
 * converted with __cvta_generic_to_shared. A tensor map (CUtensorMap, 64 bytes) must live in
 * constant/parameter memory (a `const __grid_constant__ CUtensorMap` kernel parameter) or in
 * global memory; pass its generic address.
 *
 * Conventions used by the GEMM and attention kernels:
 *   - mbarrier phases: a barrier starts in phase 0. A waiter tracks one parity bit per barrier;
 *     waiting for parity p returns once the phase with parity p has completed. A fresh barrier
 *     treats parity 1 as "already completed", so a producer waiting on an `empty` barrier starts
 *     with parity 1 and a consumer waiting on a `full` barrier starts with parity 0.
 *   - TMA loads signal completion on an mbarrier through complete_tx: the barrier's expected
 *     transaction count is raised by arrive_expect_tx(bytes) (full box bytes, even where the box
 *     crosses the tensor's bounds and is zero-filled).
 *   - TMA stores use the bulk-group commit/wait of ptx/memory.cuh (xs_bulk_commit,
 *     xs_bulk_wait_read_all, xs_bulk_wait_all).
 */
#ifndef XSTAGE_PTX_HOPPER_CUH
#define XSTAGE_PTX_HOPPER_CUH

#include <cuda.h> /* CUtensorMap */
#include <stdint.h>

#include "xstage/ptx/memory.cuh"

/* cvta.to.shared: the 32-bit shared-window address of a generic pointer into shared memory. */
XS_DEV uint32_t xs_smem_u32(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

/* ---- mbarrier (64-bit barrier objects in shared memory, 8-byte aligned) ---- */

/* mbarrier.init.shared::cta.b64 [bar], count: `count` arrivals complete a phase. One thread. */
XS_DEV void xs_mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(xs_smem_u32(bar)), "r"(count)
               : "memory");
}

/* fence.mbarrier_init.release.cluster: make mbarrier.init visible to the async proxy and the
 * cluster. Call after the inits, before the __syncthreads that publishes them. */
XS_DEV void xs_fence_mbar_init(void) {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* mbarrier.arrive.shared::cta.b64: one arrival (release, CTA scope). */
XS_DEV void xs_mbar_arrive(uint64_t* bar) {
  asm volatile(
      "{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}" ::"r"(xs_smem_u32(bar))
      : "memory");
}

/* mbarrier.arrive.shared::cta.b64 [bar], count: `count` arrivals at once (release, CTA scope). */
XS_DEV void xs_mbar_arrive_cnt(uint64_t* bar, uint32_t count) {
  asm volatile(
      "{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0], %1;\n}" ::"r"(xs_smem_u32(bar)),
      "r"(count)
      : "memory");
}

/* mbarrier.arrive.expect_tx.shared::cta.b64 [bar], bytes: raise the expected transaction count
 * by `bytes`, then arrive once. The phase completes when all arrivals are in and all expected
 * bytes have landed (TMA complete_tx). */
XS_DEV void xs_mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}" ::"r"(
                   xs_smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

/* mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], bytes: raise the expected transaction
 * count without arriving. */
XS_DEV void xs_mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(xs_smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

/* mbarrier.try_wait.parity.shared::cta.b64: 1 once the phase with parity `parity` (0/1) has
 * completed (acquire, CTA scope), 0 if the hardware's time slice ran out first. */
XS_DEV uint32_t xs_mbar_try_wait(uint64_t* bar, uint32_t parity) {
  uint32_t ok;
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p;\n}"
               : "=r"(ok)
               : "r"(xs_smem_u32(bar)), "r"(parity)
               : "memory");
  return ok;
}

/* The same with acquire at cluster scope: what other CTAs of the cluster released with their
 * arrivals (xs_mbar_arrive_cluster, or a fence before xs_mbar_arrive_cluster_relaxed) is
 * visible after it returns 1. */
XS_DEV uint32_t xs_mbar_try_wait_cluster(uint64_t* bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], "
      "%2;\nselp.u32 %0, 1, 0, p;\n}"
      : "=r"(ok)
      : "r"(xs_smem_u32(bar)), "r"(parity)
      : "memory");
  return ok;
}

/* Spin on xs_mbar_try_wait until the phase with parity `parity` has completed. */
XS_DEV void xs_mbar_wait(uint64_t* bar, uint32_t parity) {
  while (!xs_mbar_try_wait(bar, parity)) {
  }
}

/* ---- proxy fences (generic <-> async proxy: TMA, bulk copies, wgmma operands) ---- */

/* fence.proxy.async: orders this thread's generic-proxy accesses (all state spaces) with its
 * later async-proxy accesses, and completed async-proxy writes with later generic accesses. */
XS_DEV void xs_fence_proxy_async(void) {
  asm volatile("fence.proxy.async;" ::: "memory");
}

/* (fence.proxy.async.global and .shared::cta: xs_fence_proxy_async_global and
 * xs_fence_proxy_async_smem in ptx/memory.cuh.) */

/* ---- TMA tensor copies (cp.async.bulk.tensor) ---- */

/* prefetch.tensormap [map]: bring a tensor map into the descriptor cache (once per CTA). */
XS_DEV void xs_tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

/* cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes: load the box
 * at coordinates (c0 innermost, c1) into shared memory `dst` (128-byte aligned; 1024 for 128B
 * swizzle); completion is signalled on `bar` as transaction bytes. One thread issues. */
XS_DEV void xs_tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t c0,
                           int32_t c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4}], [%2];" ::"r"(xs_smem_u32(dst)),
               "l"(map), "r"(xs_smem_u32(bar)), "r"(c0), "r"(c1)
               : "memory");
}

/* cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes: copy `bytes` (a multiple of
 * 16; dst and src 16-byte aligned) from global memory to shared memory without a tensor map;
 * completion is signalled on `bar` as transaction bytes. One thread issues. */
XS_DEV void xs_bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1], %2, [%3];" ::"r"(xs_smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(xs_smem_u32(bar))
               : "memory");
}

/* cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes: the same
 * with a third coordinate (c2: batch / expert). */
XS_DEV void xs_tma_load_3d(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t c0, int32_t c1,
                           int32_t c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(xs_smem_u32(dst)),
               "l"(map), "r"(xs_smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

/* cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes: the same
 * with five coordinates (c0 innermost). */
XS_DEV void xs_tma_load_5d(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t c0, int32_t c1,
                           int32_t c2, int32_t c3, int32_t c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];" ::"r"(xs_smem_u32(dst)),
               "l"(map), "r"(xs_smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

/* L2 eviction policies for the loads below (createpolicy.fractional, the whole access): 1
 * evict_first (streamed once: leave the line first), 2 evict_last (reused: keep), else
 * evict_normal. */
XS_DEV uint64_t xs_l2_policy(int kind) {
  uint64_t pol;
  if (kind == 1)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  else if (kind == 2)
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  else
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}

/* xs_tma_load_3d with an L2 cache policy (.L2::cache_hint; `policy` from xs_l2_policy). */
XS_DEV void xs_tma_load_3d_hint(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t c0,
                                int32_t c1, int32_t c2, uint64_t policy) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               ".L2::cache_hint [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(xs_smem_u32(dst)),
               "l"(map), "r"(xs_smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "l"(policy)
               : "memory");
}

/* xs_tma_load_5d with an L2 cache policy. */
XS_DEV void xs_tma_load_5d_hint(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t c0,
                                int32_t c1, int32_t c2, int32_t c3, int32_t c4, uint64_t policy) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               ".L2::cache_hint [%0], [%1, {%3, %4, %5, %6, %7}], [%2], %8;" ::"r"(xs_smem_u32(dst)),
               "l"(map), "r"(xs_smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4),
               "l"(policy)
               : "memory");
}

/* xs_tma_load_3d / _5d with L2 cache policy `kind` (xs_l2_policy's: 1 evict_first, 2 evict_last,
 * 3 evict_normal; 0: no hint at all). The policy is made at the load (one instruction), not held
 * in a register across a loop. */
XS_DEV void xs_tma_load_3d_kind(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t c0,
                                int32_t c1, int32_t c2, int kind) {
  if (kind)
    xs_tma_load_3d_hint(dst, map, bar, c0, c1, c2, xs_l2_policy(kind));
  else
    xs_tma_load_3d(dst, map, bar, c0, c1, c2);
}
XS_DEV void xs_tma_load_5d_kind(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t c0,
                                int32_t c1, int32_t c2, int32_t c3, int32_t c4, int kind) {
  if (kind)
    xs_tma_load_5d_hint(dst, map, bar, c0, c1, c2, c3, c4, xs_l2_policy(kind));
  else
    xs_tma_load_5d(dst, map, bar, c0, c1, c2, c3, c4);
}

/* cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group: store the box in shared memory
 * `src` to coordinates (c0, c1); parts outside the tensor's bounds are not written. Commit with
 * xs_bulk_commit; the writing threads must have run xs_fence_proxy_async_smem (and a barrier)
 * before the issuing thread calls this. */
XS_DEV void xs_tma_store_2d(const CUtensorMap* map, const void* src, int32_t c0, int32_t c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),
      "r"(xs_smem_u32(src)), "r"(c0), "r"(c1)
      : "memory");
}

/* cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group: the same with a third
 * coordinate. */
XS_DEV void xs_tma_store_3d(const CUtensorMap* map, const void* src, int32_t c0, int32_t c1,
                            int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
          map),
      "r"(xs_smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

/* ---- warpgroup helpers ---- */

/* bar.sync id, nthreads: named barrier (id 1..15; 0 is __syncthreads) over `nthreads` threads
 * (a multiple of 32), e.g. one warpgroup (128) or the consumer warpgroups. */
XS_DEV void xs_named_bar_sync(uint32_t id, uint32_t nthreads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

/* ---- programmatic dependent launch ---- */

/* griddepcontrol.wait: block until the grids this one depends on programmatically (it was
 * launched with cudaLaunchAttributeProgrammaticStreamSerialization) have completed and their
 * memory operations are visible; without such a dependency it returns at once. SASS ACQBULK. */
XS_DEV void xs_griddep_wait(void) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
/* griddepcontrol.wait predicated on `cond` (one predicated instruction, no branch). */
XS_DEV void xs_griddep_wait_if(int cond) {
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.ne.s32 q, %0, 0;\n\t@q griddepcontrol.wait;\n\t}" ::"r"(cond)
      : "memory");
}

/* griddepcontrol.launch_dependents: this CTA no longer holds back the launch of a grid that
 * depends on this one programmatically (it launches once every CTA has signalled or exited);
 * the dependent still waits for this grid's completion in its own griddepcontrol.wait. SASS
 * PREEXIT. */
XS_DEV void xs_griddep_launch_dependents(void) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

/* stmatrix.sync.aligned.m8n8.x4.shared.b16: the warp stores four 8x8 bf16 matrices; lane l's
 * r[m] holds row l / 4, columns 2 (l % 4) .. +1 of matrix m (the mma / wgmma accumulator
 * fragment), and lane 8m + j gives the shared address of matrix m's row j (16 bytes). One
 * instruction per four 4-byte stores of the fragment. */
XS_DEV void xs_stmatrix_x4(uint32_t smem_addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

/* elect.sync _|p, 0xffffffff: 1 in exactly one active lane of the (fully active) warp. */
XS_DEV uint32_t xs_elect_one(void) {
  uint32_t is;
  asm volatile(
      "{\n.reg .pred p;\n.reg .b32 r;\nelect.sync r|p, 0xffffffff;\nselp.u32 %0, 1, 0, p;\n}"
      : "=r"(is));
  return is;
}

/* setmaxnreg.inc.sync.aligned.u32 / setmaxnreg.dec.sync.aligned.u32: grow or shrink this
 * warpgroup's per-thread register budget (24..256, multiple of 8). All warps of the warpgroup
 * execute it; the kernel needs a register cap at entry (__launch_bounds__(threads, 1)). */
template <int R> XS_DEV void xs_setmaxnreg_inc(void) {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "setmaxnreg: 24..256, multiple of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R> XS_DEV void xs_setmaxnreg_dec(void) {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "setmaxnreg: 24..256, multiple of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

/* ---- wgmma ---- */

/* Shared-memory matrix descriptor for a K-major bf16 tile stored as rows of 128 bytes (64
 * elements) with the 128-byte swizzle that TMA's CU_TENSOR_MAP_SWIZZLE_128B writes: 8-row atoms
 * of 1024 bytes (the tile base must be 1024-byte aligned). Fields (PTX "matrix descriptor"):
 * start address >> 4 (bits 0-13), leading byte offset >> 4 (16-29; unused for swizzled K-major,
 * set to 1), stride byte offset >> 4 (32-45; 1024 = distance between 8-row atoms), base offset
 * 0 (49-51), layout 1 = 128B swizzle (62-63). To step K by 16 elements inside the 64-wide
 * atom, add 32 bytes to the start address (the swizzle is applied to absolute address bits). */
XS_DEV uint64_t xs_smem_desc_sw128(const void* smem) {
  uint64_t addr = xs_smem_u32(smem);
  uint64_t desc = (addr & 0x3FFFFull) >> 4;
  desc |= (uint64_t)(16 >> 4) << 16;
  desc |= (uint64_t)(1024 >> 4) << 32;
  desc |= 1ull << 62;
  return desc;
}

/* wgmma.fence.sync.aligned: order register/shared accesses before the next wgmma (before the
 * first wgmma of a batch, and whenever the accumulators were touched by other instructions). */
XS_DEV void xs_wgmma_fence(void) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

/* wgmma.commit_group.sync.aligned: close the wgmma ops issued so far into a group. */
XS_DEV void xs_wgmma_commit(void) {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

/* wgmma.wait_group.sync.aligned N: wait until at most N committed groups are pending (their
 * accumulators may then be read and their shared-memory operands reused). */
template <int N> XS_DEV void xs_wgmma_wait(void) {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/* Keep the compiler from moving accumulator reads/writes across wgmma boundaries. */
template <int R> XS_DEV void xs_wgmma_fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; i++)
    asm volatile("" : "+f"(d[i])::"memory");
}

/* wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16: d[32] (+)= A(64x16, smem desc) *
 * B(64x16 K-major, smem desc)^T; scale_d = 0 overwrites d. Both operands K-major (no transpose). */
XS_DEV void xs_wgmma_m64n64k16_bf16_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b,
                                       int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
               "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                 "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
                 "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
                 "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
                 "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
                 "+f"(d[31])
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16: d[64] (+)= A(64x16, smem desc) *
 * B(128x16 K-major, smem desc)^T; scale_d = 0 overwrites d. Both operands K-major (no transpose).
 */
XS_DEV void xs_wgmma_m64n128k16_bf16_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                        int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
               "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
               "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                 "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
                 "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
                 "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
                 "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
                 "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                 "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
                 "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
                 "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
                 "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]),
                 "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16: d[128] (+)= A(64x16, smem desc) *
 * B(256x16 K-major, smem desc)^T; scale_d = 0 overwrites d. Both operands K-major (no transpose).
 */
XS_DEV void xs_wgmma_m64n256k16_bf16_ss(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                        int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
      "%127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* wgmma.mma_async.sync.aligned.m64n224k16.f32.bf16.bf16: d[112] (+)= A(64x16, smem desc) *
 * B(224x16 K-major, smem desc)^T; scale_d = 0 overwrites d. Both operands K-major (no transpose).
 * (The 128x224 tile of GEMM v4: 7168 / 224 = 32 column tiles fill one wave of 132 SMs better.)
 */
XS_DEV void xs_wgmma_m64n224k16_bf16_ss(float (&d)[112], uint64_t desc_a, uint64_t desc_b,
                                        int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %114, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n224k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
      "}, %112, %113, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16: d[96] (+)= A(64x16, smem desc) *
 * B(192x16 K-major, smem desc)^T; scale_d = 0 overwrites d. Both operands K-major (no transpose).
 * (The 128x192 tile of GEMM v5: 2048x3072 is 256 tiles, two full waves of 132 SMs less 8.)
 */
XS_DEV void xs_wgmma_m64n192k16_bf16_ss(float (&d)[96], uint64_t desc_a, uint64_t desc_b,
                                        int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, %96, %97, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* wgmma.mma_async.sync.aligned.m64n208k16.f32.bf16.bf16: d[104] (+)= A(64x16, smem desc) *
 * B(208x16 K-major, smem desc)^T; scale_d = 0 overwrites d. Both operands K-major (no transpose).
 * (The 128x208 tile of GEMM v6: Qwen3-235B gate/up E=8 T=512 Zipf is 510 tiles, 3.9 waves of 132
 * SMs, where 128x224 needs 476 = 3.6 waves: four waves either way, each 7 % narrower.)
 */
XS_DEV void xs_wgmma_m64n208k16_bf16_ss(float (&d)[104], uint64_t desc_a, uint64_t desc_b,
                                        int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %106, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n208k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103"
      "}, %104, %105, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* ---- thread-block clusters (GEMM v8: 2-CTA clusters with TMA multicast) ----
 * Shared-memory addresses of another CTA of the cluster live in the shared::cluster window:
 * xs_mapa_u32 turns this CTA's shared::cta address of a variable into the address of the same
 * variable in CTA `rank` of the cluster. A shared::cta address of the executing CTA is also a
 * valid shared::cluster address (of itself). */

/* mov.u32 %cluster_ctarank: this CTA's rank in its cluster (0 .. cluster size - 1). */
XS_DEV uint32_t xs_cluster_ctarank(void) {
  uint32_t r;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); /* constant per CTA: may be CSEd */
  return r;
}

/* mov.u32 %clusterid.x / %nclusterid.x: this cluster's index along x, and the clusters along x
 * in the grid (with cluster dims (c, 1, 1): blockIdx.x / c and gridDim.x / c). */
XS_DEV uint32_t xs_cluster_id_x(void) {
  uint32_t r;
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(r)); /* constant per CTA: may be CSEd */
  return r;
}
XS_DEV uint32_t xs_cluster_count_x(void) {
  uint32_t r;
  asm("mov.u32 %0, %%nclusterid.x;" : "=r"(r)); /* constant per CTA: may be CSEd */
  return r;
}

/* barrier.cluster.arrive.release + barrier.cluster.wait.acquire: every (non-exited) thread of
 * every CTA of the cluster meets here; memory operations before it (shared memory of any CTA of
 * the cluster, mbarrier inits published with xs_fence_mbar_init, remote arrivals) are visible
 * to every thread after it. All threads of each CTA must call it (not .aligned: the threads of
 * a warp may reach it on different paths). */
XS_DEV void xs_cluster_sync(void) {
  asm volatile("barrier.cluster.arrive.release;\n"
               "barrier.cluster.wait.acquire;" ::
                   : "memory");
}

/* The two halves of xs_cluster_sync, for a meeting whose wait can come later than its arrival
 * (each thread: arrive, then wait, before its next arrive). */
XS_DEV void xs_cluster_arrive(void) {
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
XS_DEV void xs_cluster_wait(void) {
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

/* ld.shared::cluster.f32: the float at shared::cluster address `addr` (xs_mapa_u32: this CTA's
 * or another's of the cluster). */
XS_DEV float xs_ld_cluster_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

/* mapa.shared::cluster.u32: the shared::cluster address of the variable at this CTA's shared
 * address `smem` (a generic pointer into this CTA's shared memory) in CTA `rank` of the
 * cluster. */
XS_DEV uint32_t xs_mapa_u32(const void* smem, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(r)
               : "r"(xs_smem_u32(smem)), "r"(rank));
  return r;
}

/* mbarrier.arrive.release.cluster.shared::cluster.b64 _, [addr]: one arrival on the barrier at
 * shared::cluster address `addr` (xs_mapa_u32: this CTA's or another's), releasing at cluster
 * scope what the calling thread has written or observed (ptxas puts a GPU-scope fence in front
 * of each: for once-per-tile hand-offs, not per k-block; xs_mbar_arrive_remote_cta). */
XS_DEV void xs_mbar_arrive_cluster(uint32_t addr) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(addr)
               : "memory");
}

/* mbarrier.arrive.release.cta.shared::cluster.b64 _, [addr]: one arrival on the barrier at
 * shared::cluster address `addr` (xs_mapa_u32: this CTA's or another's) with release at CTA
 * scope, the PTX default (a bare SYNCS.ARRIVE.TRANS64.RED on sm_90; CUTLASS's
 * ClusterBarrier::arrive(cta_id) emits the same). For a ring slot's release to producers that
 * multicast into it (GEMM v8): the hazard is write-after-read between the wgmma reads
 * (retired: the caller returned from wgmma.wait_group) and the producers' TMA writes, issued
 * after they observe the phase; no generic-proxy data crosses CTAs through the barrier.
 * NOTE: not `.release.cluster` (xs_mbar_arrive_cluster): ptxas (CUDA 13.0, sm_90a) puts
 * MEMBAR.ALL.CTA + MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR in front of every such arrival; per
 * consumer warp and k-block that made v8 0.56-0.58x of v3 (kernel README, "Tuning round 6"). */
XS_DEV void xs_mbar_arrive_remote_cta(uint32_t addr) {
  asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];" ::"r"(addr) : "memory");
}

/* mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [addr]: one arrival on the barrier at
 * shared::cluster address `addr` (xs_mapa_u32: this CTA's or another's). Relaxed: it orders
 * nothing by itself (a fence before it does: xs_fence_acq_rel_cluster, once for several
 * arrivals); the release form puts a GPU-scope fence in front of every arrival
 * (xs_mbar_arrive_remote_cta). */
XS_DEV void xs_mbar_arrive_cluster_relaxed(uint32_t addr) {
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];" ::"r"(addr)
               : "memory");
}

/* fence.acq_rel.cluster: order this thread's (and what it has observed) memory accesses before
 * and after it at cluster scope. */
XS_DEV void xs_fence_acq_rel_cluster(void) {
  asm volatile("fence.acq_rel.cluster;" ::: "memory");
}

/* cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes: copy `bytes` (a
 * multiple of 16, both addresses 16-byte aligned) from this CTA's shared memory `src` to the
 * shared::cluster address `dst` (another CTA's, xs_mapa_u32); the destination's barrier at
 * shared::cluster address `bar` receives them as complete_tx. The writes to `src` must precede
 * it for the async proxy (xs_fence_proxy_async_smem and a barrier). One thread issues. */
XS_DEV void xs_bulk_copy_to_cluster(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"
               " [%0], [%1], %2, [%3];" ::"r"(dst),
               "r"(xs_smem_u32(src)), "r"(bytes), "r"(bar)
               : "memory");
}

/* cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
 * .multicast::cluster: load the box at (c0, c1, c2) once from global memory and write it to the
 * same CTA-relative shared offset as `dst` in every CTA of the cluster whose rank bit is set in
 * `cta_mask`; each destination CTA's barrier at the same offset as `bar` receives the box's
 * bytes as complete_tx (its expect_tx must count them). One thread issues. */
XS_DEV void xs_tma_load_3d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t c0,
                                     int32_t c1, int32_t c2, uint16_t cta_mask) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(xs_smem_u32(dst)),
               "l"(map), "r"(xs_smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "h"(cta_mask)
               : "memory");
}

#endif
