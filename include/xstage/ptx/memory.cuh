/* xstage/ptx/memory.cuh — PTX wrappers for stores, loads, atomics, fences and timers.
 *
 * Part of the one PTX wrapper header (xstage/ptx.cuh). Every function names the PTX it emits.
 * Memory-model terms are PTX's: a *release* operation makes this thread's earlier writes (and
 * writes it has observed, cumulatively) visible to any thread that *acquires* the released
 * location at the same or wider scope. `.sys` scope covers peer GPUs and the host.
 * Weak (plain) stores carry no ordering of their own; order them with a release op or a fence.
 */
#ifndef XSTAGE_PTX_MEMORY_CUH
#define XSTAGE_PTX_MEMORY_CUH

#include <stdint.h>

#define XS_DEV static __device__ __forceinline__

/* ---- timers ---- */

/* mov.u64 %globaltimer: ns since an arbitrary epoch, shared by all SMs (coarse: ~32 ns-1 us). */
XS_DEV uint64_t xs_globaltimer(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* mov.u64 %clock64: cycles of this SM's clock (not comparable across SMs). */
XS_DEV uint64_t xs_clock64(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
  return t;
}

/* nanosleep.u32: suspend the warp for about ns nanoseconds (0..1e6). */
XS_DEV void xs_nanosleep(uint32_t ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }

/* ---- 16-byte stores (one per thread; dst must be 16-byte aligned) ---- */

/* st.global.v4.b32: weak store. */
XS_DEV void xs_st_v4(void* dst, uint4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

/* st.global.v4.b32 under a predicate: the store only where pred != 0, with no branch (a branch
 * would end the basic block, which can move a kernel's wgmma waits). */
XS_DEV void xs_st_v4_if(void* dst, uint4 v, uint32_t pred) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.u32 p, %5, 0;\n@p st.global.v4.b32 [%0], {%1, %2, %3, %4};\n}" ::
          "l"(dst),
      "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(pred)
      : "memory");
}

/* st.relaxed.sys.global.v4.b32: relaxed store, system scope (coherent, no ordering). */
XS_DEV void xs_st_relaxed_sys_v4(void* dst, uint4 v) {
  asm volatile("st.relaxed.sys.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(v.x),
               "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

/* st.release.sys.global.v4.b32: release store, system scope: this thread's earlier writes are
 * visible before this one. */
XS_DEV void xs_st_release_sys_v4(void* dst, uint4 v) {
  asm volatile("st.release.sys.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(v.x),
               "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

/* ld.global.v4.b32 (weak) and ld.relaxed.sys.global.v4.b32 (coherent at system scope). */
XS_DEV uint4 xs_ld_v4(const void* src) {
  uint4 v;
  asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(src)
               : "memory");
  return v;
}
XS_DEV uint4 xs_ld_relaxed_sys_v4(const void* src) {
  uint4 v;
  asm volatile("ld.relaxed.sys.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(src)
               : "memory");
  return v;
}

/* ---- flags (32- and 64-bit words) ---- */

/* st.release.sys.global.u32 / .u64: set a flag, publishing this thread's earlier writes. */
XS_DEV void xs_st_release_sys_u32(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
XS_DEV void xs_st_release_sys_u64(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/* st.relaxed.sys.global.u32: set a word with no ordering. */
XS_DEV void xs_st_relaxed_sys_u32(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
/* red.release.sys.global.add.u32/.u64: add to a flag, publishing earlier writes. */
XS_DEV void xs_red_add_release_sys_u32(uint32_t* p, uint32_t v) {
  asm volatile("red.release.sys.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
XS_DEV void xs_red_add_release_sys_u64(uint64_t* p, uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/* atom.acq_rel.gpu.global.add.u32: returns the old value (grid-level counters). */
XS_DEV uint32_t xs_atom_add_acq_rel_gpu_u32(uint32_t* p, uint32_t v) {
  uint32_t old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}
/* ld.acquire.sys.global.u32 / .u64: read a flag; later reads see what its releaser published. */
XS_DEV uint32_t xs_ld_acquire_sys_u32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
/* ld.acquire.sys.global.v4.b32: four flag words at once (16-byte aligned). */
XS_DEV uint4 xs_ld_acquire_sys_v4(const void* src) {
  uint4 v;
  asm volatile("ld.acquire.sys.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(src)
               : "memory");
  return v;
}
XS_DEV uint64_t xs_ld_acquire_sys_u64(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
/* atom.relaxed.gpu.global.add.u32 / ld.relaxed.gpu.global.u32: counters with no ordering (a
 * timing-only grid barrier that must not wait for outstanding stores, as a release would). */
XS_DEV uint32_t xs_atom_add_relaxed_gpu_u32(uint32_t* p, uint32_t v) {
  uint32_t old;
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}
XS_DEV uint32_t xs_ld_relaxed_gpu_u32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
/* ld.acquire.gpu.global.u32: the same at GPU scope (grid barriers within one launch). */
XS_DEV uint32_t xs_ld_acquire_gpu_u32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/* ---- fences ---- */

/* fence.acq_rel.sys: orders this thread's earlier and later memory operations at system scope
 * (a release fence before a relaxed flag store, an acquire fence after a relaxed flag load). */
XS_DEV void xs_fence_acq_rel_sys(void) { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
/* fence.acq_rel.gpu: the same at GPU scope. */
XS_DEV void xs_fence_acq_rel_gpu(void) { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
/* fence.sc.sys: sequentially consistent fence, system scope. */
XS_DEV void xs_fence_sc_sys(void) { asm volatile("fence.sc.sys;" ::: "memory"); }
/* fence.proxy.async.shared::cta: makes generic-proxy writes to shared memory visible to the
 * async proxy (TMA / bulk copies / wgmma) — each writing thread, before the barrier. */
XS_DEV void xs_fence_proxy_async_smem(void) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* fence.proxy.async.global: orders async-proxy (bulk copy) accesses to global memory with the
 * generic proxy — after cp.async.bulk.wait_group 0, before a generic release that publishes the
 * bulk-stored data. */
XS_DEV void xs_fence_proxy_async_global(void) {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

/* ---- bulk (TMA engine) stores from shared memory ---- */

/* cp.async.bulk.global.shared::cta.bulk_group [dst], [src], bytes: the copy engine moves
 * `bytes` (multiple of 16; dst, src 16-byte aligned) from this CTA's shared memory to global
 * memory. Returns at once; track completion with commit/wait below. Issue from one thread. */
XS_DEV void xs_bulk_store(void* dst, const void* smem_src, uint32_t bytes) {
  uint32_t s = (uint32_t)__cvta_generic_to_shared(smem_src);
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(s),
               "r"(bytes)
               : "memory");
}
/* cp.async.bulk.commit_group: close the current group of bulk copies. */
XS_DEV void xs_bulk_commit(void) { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
/* cp.async.bulk.wait_group.read 0: all committed groups have finished READING shared memory
 * (the source may be reused; the writes may not be visible yet). */
XS_DEV void xs_bulk_wait_read_all(void) {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
/* cp.async.bulk.wait_group 0: all committed groups are complete (writes performed). */
XS_DEV void xs_bulk_wait_all(void) { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

#endif
