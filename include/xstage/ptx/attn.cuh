/* xstage/ptx/attn.cuh — PTX wrappers used by the attention kernels (sm_90a).
 *
 * Part of the one PTX wrapper header (xstage/ptx.cuh). The attention kernel uses ptx/hopper.cuh
 * (mbarrier, TMA, setmaxnreg, wgmma with both operands in shared memory) and adds here, prefixed
 * xs_attn_, what that header does not carry: a 4-D TMA load ([B, S, H, d] tensors), bar.arrive
 * for the ping-pong schedule, wgmma with A from registers and an N-major B (P V), the N-major
 * descriptor, ex2.approx and bf16x2 packing. Every function names the PTX it emits.
 *
 * Accumulator layout of wgmma m64nNk16 .f32 (per warpgroup; warp w of the group owns rows
 * 16w..16w+15; lane = 4*g + t): register 4*j + {0,1} holds row g, columns 8j + 2t + {0,1};
 * register 4*j + {2,3} holds row g + 8, the same columns.
 * Register-A layout of m64nNk16 .bf16 (4 x b32): a[0] = row g, k 2t..2t+1; a[1] = row g + 8,
 * k 2t..2t+1; a[2] = row g, k 2t+8..2t+9; a[3] = row g + 8, k 2t+8..2t+9. So accumulator
 * chunks j = 2kk and 2kk + 1 of one product, packed to bf16x2, are the A fragment of k-step kk
 * of the next product (the P of attention never leaves registers).
 */
#ifndef XSTAGE_PTX_ATTN_CUH
#define XSTAGE_PTX_ATTN_CUH

#include <cuda.h>
#include <stdint.h>

#include "xstage/ptx/hopper.cuh"
#include "xstage/ptx/memory.cuh"

/* ---- TMA ---- */

/* cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes: load the box at
 * coordinates (c0 innermost .. c3) of `map` into shared memory at `dst` (1024-byte aligned for
 * the 128-byte swizzle); completion is counted on `bar` as transaction bytes. Out-of-bounds
 * elements are filled with zeros and still counted. Issue from one thread. */
XS_DEV void xs_attn_tma_load_4d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(xs_smem_u32(dst)),
               "l"((uint64_t)map), "r"(xs_smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

/* ---- warpgroup control ---- */

/* bar.arrive id, n: arrive at named barrier `id` without waiting. */
XS_DEV void xs_attn_bar_arrive(uint32_t id, uint32_t n) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}

/* ---- wgmma ---- */

/* The u32 twin of xs_wgmma_fence_regs (hopper.cuh), for register-A operands. */
template <int N> XS_DEV void xs_attn_fence_regs_u32(uint32_t* r) {
#pragma unroll
  for (int i = 0; i < N; i++)
    asm volatile("" : "+r"(r[i])::"memory");
}

/* Shared-memory matrix descriptor for wgmma, 128-byte swizzle (layout type 1 in bits 62-63).
 * K-major operand (rows of 64 bf16 = 128 B, 8-row atoms of 1024 B): lbo unused (1), sbo =
 * 1024. N-major operand (B^T stored with N contiguous): lbo = bytes between 64-wide N blocks,
 * sbo = 1024 (between 8-row K groups). Addresses and offsets in bytes, encoded >> 4. */
XS_DEV uint64_t xs_attn_desc_sw128(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= (uint64_t)((smem_addr & 0x3FFFFu) >> 4);
  d |= (uint64_t)((lbo & 0x3FFFFu) >> 4) << 16;
  d |= (uint64_t)((sbo & 0x3FFFFu) >> 4) << 32;
  d |= (uint64_t)1 << 62;
  return d;
}

/* wgmma.mma_async m64n128k16 f32 += bf16 * bf16, A from registers (4 x bf16x2 per thread, the
 * mma.sync m16k16 fragment of this warp's 16 rows), B from shared memory, N-major (imm-trans-b =
 * 1). The A registers must not change until the wgmma group that reads them has completed. */
XS_DEV void xs_attn_wgmma_rs_m64n128k16_tb(float* d, const uint32_t* a, uint64_t desc_b,
                                           int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
               "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
               "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
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
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

/* wgmma.mma_async m64n64k16 f32 += bf16 * bf16, A from registers (4 x bf16x2 per thread, the
 * mma.sync m16k16 fragment of this warp's 16 rows), B from shared memory, N-major (imm-trans-b =
 * 1). The A registers must not change until the wgmma group that reads them has completed. */
XS_DEV void xs_attn_wgmma_rs_m64n64k16_tb(float* d, const uint32_t* a, uint64_t desc_b,
                                          int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
               "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                 "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
                 "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
                 "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
                 "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
                 "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

/* ---- math ---- */

/* ex2.approx.ftz.f32: 2^x (ex2(-inf) = 0). */
XS_DEV float xs_attn_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
/* cvt.rn.bf16x2.f32: pack two floats to bf16x2, `lo` in the low half. */
XS_DEV uint32_t xs_attn_pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

#endif
