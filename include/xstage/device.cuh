/* xstage/device.cuh — device-side RMA on a world's symmetric heaps (CUDA C, sm_90).
 *
 * A kernel receives an xs_team by value (xstage/world.h) and works with *symmetric pointers*:
 * pointers returned by xs_malloc, which name the same offset in every rank's heap. Data and
 * signal operations take (team, peer, symmetric pointer); waits take a symmetric pointer into
 * the caller's own heap, or a word of its own signal pad.
 *
 * Names carry the scope of the threads that must call together:
 *   _thread  any single thread;  _warp  all 32 lanes of a warp;  _block  all threads of a
 *   (1-D) CTA. A _warp/_block call must be reached by every thread of that scope.
 *
 * Memory model (PTX terms): data stores are weak (`st.global`), carrying no ordering of their
 * own; a signal is a *release* at system scope, so every write the signalling thread made or
 * observed before it — including the CTA's writes ordered by the __syncthreads inside the
 * _block variants — is visible to a thread that *acquires* the flag and sees the new value.
 * The inbox protocol: put data -> signal flag (release) ; wait flag (acquire) -> read data.
 *
 * Every wait is bounded by team->timeout_ns (%globaltimer). On expiry it records
 * {XS_ERR_TIMEOUT, rank, CTA, location, flag address, observed, expected} in the GPU's status
 * word (first error wins) and returns false; once a status error is set, every other bounded
 * wait on that GPU gives up within a few polls (returns false without recording), so a kernel
 * with a missing signal ends within about one timeout. The host reads it with xs_world_status.
 *
 * Emulated world: one launch covers every rank. Launch W * blocks_per_rank CTAs (see
 * xs_world_launch_plan) and start the kernel with
 *     xs_team me = xs_team_for_block(&team, blocks_per_rank);
 *     int blk = xs_team_block(blocks_per_rank);   // this CTA's index within its rank
 * The same kernel then runs unchanged in the local and nccl backends.
 *
 * Tracing: xs_trace_* record %globaltimer events into team->trace; they cost one predictable
 * branch when team->trace is NULL and nothing when compiled with -DXS_TRACE_DISABLE.
 */
#ifndef XSTAGE_DEVICE_CUH
#define XSTAGE_DEVICE_CUH

#include "xstage/ptx.cuh"
#include "xstage/world.h"

#include <stdint.h>

typedef enum xs_cmp {
  XS_CMP_EQ = 0, /* flag == value */
  XS_CMP_GE = 1, /* flag >= value (counters, sequence numbers) */
  XS_CMP_NE = 2, /* flag != value */
} xs_cmp;

typedef enum xs_signal_op {
  XS_SIGNAL_SET = 0, /* flag = value     (st.release.sys.global.u64) */
  XS_SIGNAL_ADD = 1, /* flag += value    (red.release.sys.global.add.u64): an atomic at the
                        destination; on a host-mapped heap only where xs_world_info.host_atomics
                        is 1 (not over PCIe: use SET, one writer per flag, there) */
} xs_signal_op;

/* Signal-pad layout (words of uint64_t); see XS_PAD_WORDS in world.h. */
#define XSI_PAD_BAR XS_PAD_USER_WORDS                                 /* [slot][src] arrivals */
#define XSI_PAD_EPOCH (XSI_PAD_BAR + XS_BARRIER_SLOTS * XS_MAX_RANKS) /* [slot] my epoch */

/* ---- team and pointers ------------------------------------------------------------------- */

/* This CTA's rank: blockIdx.x / blocks_per_rank in the emulated world, team->rank otherwise. */
XS_DEV int xs_team_rank_from_block(const xs_team* team, int blocks_per_rank) {
  return team->emulated ? (int)(blockIdx.x / (unsigned)blocks_per_rank) : team->rank;
}

/* This CTA's team: in the emulated world rank = blockIdx.x / blocks_per_rank; otherwise the
 * team as launched (a copy of the team). */
XS_DEV xs_team xs_team_for_block(const xs_team* team, int blocks_per_rank) {
  xs_team me = *team;
  me.rank = xs_team_rank_from_block(team, blocks_per_rank);
  return me;
}

/* This CTA's index within its rank (0 .. blocks_per_rank-1). */
XS_DEV int xs_team_block(int blocks_per_rank) {
  return (int)(blockIdx.x % (unsigned)blocks_per_rank);
}

/* Address of symmetric pointer `sym` in `peer`'s heap (one add; no memory access, no PTX). */
XS_DEV void* xs_ptr_to_peer(const xs_team* t, const void* sym, int peer) {
  return (char*)t->heap[peer] + ((const char*)sym - (const char*)t->sym_base);
}
/* Address of `sym` in this rank's own heap. */
XS_DEV void* xs_ptr_local(const xs_team* t, const void* sym) {
  return xs_ptr_to_peer(t, sym, t->rank);
}

/* ---- status (internal) ------------------------------------------------------------------- */

/* Record a device-side error in status `s` (NULL: nothing) for `rank`: the first one wins
 * (atom.cas.gpu on code), count counts every one. Also the GEMM's input-readiness waits'. */
XS_DEV void xsi_status_record_at(xs_status* s, int rank, uint32_t code, uint32_t location,
                                 const void* flag, uint64_t observed, uint64_t expected) {
  if (s == nullptr) return;
  if (atomicCAS(&s->code, 0u, code) == 0u) {
    s->rank = rank;
    s->location = location;
    s->cta = blockIdx.x;
    s->flag = (uint64_t)(uintptr_t)flag;
    s->observed = observed;
    s->expected = expected;
  }
  atomicAdd(&s->count, 1u);
}

/* Record the first device-side error of this GPU, count every one. */
XS_DEV void xsi_status_record(const xs_team* t, uint32_t code, uint32_t location, const void* flag,
                              uint64_t observed, uint64_t expected) {
  xsi_status_record_at(t->status, t->rank, code, location, flag, observed, expected);
}

/* 1 once some wait on this GPU has failed (ld.volatile of the status code). */
XS_DEV int xsi_status_failed(const xs_team* t) {
  return t->status != nullptr && *(volatile const uint32_t*)&t->status->code != 0u;
}

XS_DEV int xsi_cmp(uint64_t v, int cmp, uint64_t x) {
  return cmp == XS_CMP_EQ ? v == x : cmp == XS_CMP_GE ? v >= x : v != x;
}

/* The bounded acquire poll behind every wait. PTX: ld.acquire.sys.global.u64 per poll,
 * mov.u64 %globaltimer every 16 polls, nanosleep.u32 backoff after 4096 polls. */
XS_DEV bool xsi_wait_raw(const xs_team* t, const uint64_t* f, int cmp, uint64_t value,
                         uint32_t location) {
  uint64_t v = xs_ld_acquire_sys_u64(f);
  if (xsi_cmp(v, cmp, value)) return true;
  const uint64_t start = xs_globaltimer();
  for (uint32_t spin = 1;; spin++) {
    v = xs_ld_acquire_sys_u64(f);
    if (xsi_cmp(v, cmp, value)) return true;
    if ((spin & 15u) == 0u) {
      if (xsi_status_failed(t)) return false; /* NOTE: fail fast after the first timeout */
      if (xs_globaltimer() - start > t->timeout_ns) {
        xsi_status_record(t, (uint32_t)XS_ERR_TIMEOUT, location, f, v, value);
        return false;
      }
      if (spin > 4096u) xs_nanosleep(128);
    }
  }
}

/* ---- tracing ----------------------------------------------------------------------------- */

/* Append one event {%globaltimer, blockIdx.x, rank, kind, arg} to team->trace (atom.add.u64
 * on the ring head, then one 24-byte store); dropped when the buffer is full. No ordering. */
XS_DEV void xs_trace_thread(const xs_team* t, int kind, uint32_t arg) {
#ifndef XS_TRACE_DISABLE
  xs_trace_ring* r = t->trace;
  if (r == nullptr) return;
  unsigned long long i = atomicAdd(&r->head, 1ull);
  if (i < r->capacity) {
    xs_trace_event e;
    e.t_ns = xs_globaltimer();
    e.cta = blockIdx.x;
    e.arg = arg;
    e.kind = (uint16_t)kind;
    e.rank = (uint16_t)t->rank;
    e.reserved = 0;
    r->events[i] = e;
  }
#endif
}
/* The same from thread 0 of the CTA only (no barrier: place it after the CTA's own sync). */
XS_DEV void xs_trace_block(const xs_team* t, int kind, uint32_t arg) {
  if (threadIdx.x == 0) xs_trace_thread(t, kind, arg);
}

/* ---- data: 16-byte and tile stores to a peer --------------------------------------------- */

/* Store 16 bytes to `dst` (symmetric, 16-byte aligned) on `peer`. PTX: st.global.v4.b32
 * (weak). Ordering: none by itself; published by this thread's next signal or fence. */
XS_DEV void xs_put_v4_thread(const xs_team* t, int peer, void* dst, uint4 v) {
  xs_st_v4(xs_ptr_to_peer(t, dst, peer), v);
}

/* Load 16 bytes from `src` (symmetric) on `peer`. PTX: ld.relaxed.sys.global.v4.b32 (coherent
 * at system scope: never a stale L1 line). Ordering: none; after an acquire of a flag the peer
 * released, it returns data at least as new as what that release published. */
XS_DEV uint4 xs_get_v4_thread(const xs_team* t, int peer, const void* src) {
  return xs_ld_relaxed_sys_v4(xs_ptr_to_peer(t, src, peer));
}

/* A warp stores `bytes` (multiple of 16) from `src` (global or shared, 16-byte aligned) to
 * `dst` (symmetric) on `peer`; lane i stores chunks i, i+32, ... PTX: ld (generic) +
 * st.global.v4.b32 per chunk. Ordering: none; publish with xs_signal_warp. */
XS_DEV void xs_put_tile_warp(const xs_team* t, int peer, void* dst, const void* src, size_t bytes) {
  char* d = (char*)xs_ptr_to_peer(t, dst, peer);
  const char* s = (const char*)src;
  for (size_t o = (size_t)(threadIdx.x & 31u) * 16u; o < bytes; o += 32u * 16u)
    xs_st_v4(d + o, *(const uint4*)(s + o));
}

/* The same by every thread of a CTA (thread i stores chunks i, i+blockDim.x, ...).
 * Ordering: none; publish with xs_signal_block (whose __syncthreads orders all threads). */
XS_DEV void xs_put_tile_block(const xs_team* t, int peer, void* dst, const void* src,
                              size_t bytes) {
  char* d = (char*)xs_ptr_to_peer(t, dst, peer);
  const char* s = (const char*)src;
  for (size_t o = (size_t)threadIdx.x * 16u; o < bytes; o += (size_t)blockDim.x * 16u)
    xs_st_v4(d + o, *(const uint4*)(s + o));
}

/* A CTA copies `bytes` (multiple of 16) from `peer`'s `src` (symmetric) to `dst` (local global
 * or shared). PTX: ld.relaxed.sys.global.v4.b32 + generic st. Ordering: none (acquire first). */
XS_DEV void xs_get_tile_block(const xs_team* t, int peer, void* dst, const void* src,
                              size_t bytes) {
  const char* s = (const char*)xs_ptr_to_peer(t, src, peer);
  char* d = (char*)dst;
  for (size_t o = (size_t)threadIdx.x * 16u; o < bytes; o += (size_t)blockDim.x * 16u)
    *(uint4*)(d + o) = xs_ld_relaxed_sys_v4(s + o);
}

/* TMA bulk tile store: the CTA's shared-memory tile `smem` (16-byte aligned, written by any of
 * its threads) goes to `dst` (symmetric) on `peer` through the copy engine. PTX: every thread
 * fence.proxy.async.shared::cta; bar.sync; thread 0 cp.async.bulk.global.shared::cta.bulk_group
 * + cp.async.bulk.commit_group. Returns at once: the cost shows up in
 * xs_put_tile_bulk_wait_block. Ordering: none until that wait; `smem` must not be overwritten
 * before it. bytes: multiple of 16. */
XS_DEV void xs_put_tile_bulk_block(const xs_team* t, int peer, void* dst, const void* smem,
                                   uint32_t bytes) {
  xs_fence_proxy_async_smem();
  __syncthreads();
  if (threadIdx.x == 0) {
    xs_bulk_store(xs_ptr_to_peer(t, dst, peer), smem, bytes);
    xs_bulk_commit();
  }
}

/* Complete the CTA's bulk stores: thread 0 cp.async.bulk.wait_group 0 (writes performed) +
 * fence.proxy.async.global (ordered with generic accesses); then bar.sync. Afterwards the
 * shared-memory source may be reused and a release signal publishes the bulk-stored data. */
XS_DEV void xs_put_tile_bulk_wait_block(void) {
  if (threadIdx.x == 0) {
    xs_bulk_wait_all();
    xs_fence_proxy_async_global();
  }
  __syncthreads();
}

/* ---- signals and waits ------------------------------------------------------------------- */

/* Signal `flag` (symmetric uint64_t) on `peer`: XS_SIGNAL_SET stores value, XS_SIGNAL_ADD adds
 * it. PTX: st.release.sys.global.u64 or red.release.sys.global.add.u64. Ordering: release at
 * system scope — this thread's earlier writes (and those it observed) are visible to whoever
 * acquires the flag and sees the new value. */
XS_DEV void xs_signal_thread(const xs_team* t, int peer, uint64_t* flag, uint64_t value, int op) {
  uint64_t* f = (uint64_t*)xs_ptr_to_peer(t, flag, peer);
  if (op == XS_SIGNAL_ADD)
    xs_red_add_release_sys_u64(f, value);
  else
    xs_st_release_sys_u64(f, value);
}

/* Warp variant: __syncwarp (orders the lanes' earlier writes before lane 0), lane 0
 * fence.acq_rel.sys + the release signal, __syncwarp. Publishes all lanes' earlier writes. */
XS_DEV void xs_signal_warp(const xs_team* t, int peer, uint64_t* flag, uint64_t value, int op) {
  __syncwarp();
  if ((threadIdx.x & 31u) == 0u) {
    xs_fence_acq_rel_sys();
    xs_signal_thread(t, peer, flag, value, op);
  }
  __syncwarp();
}

/* CTA variant: bar.sync, thread 0 fence.acq_rel.sys + the release signal. Publishes every
 * thread's earlier writes (the inbox protocol's "tile done"). */
XS_DEV void xs_signal_block(const xs_team* t, int peer, uint64_t* flag, uint64_t value, int op) {
  __syncthreads();
  if (threadIdx.x == 0) {
    xs_fence_acq_rel_sys();
    xs_signal_thread(t, peer, flag, value, op);
  }
}

/* Signal word `word` (< XS_PAD_USER_WORDS) of `peer`'s signal pad; as xs_signal_thread. */
XS_DEV void xs_signal_pad_thread(const xs_team* t, int peer, int word, uint64_t value, int op) {
  uint64_t* f = t->pad[peer] + word;
  if (op == XS_SIGNAL_ADD)
    xs_red_add_release_sys_u64(f, value);
  else
    xs_st_release_sys_u64(f, value);
}

/* Wait until `flag` (symmetric uint64_t, in this rank's heap) compares true with `value`
 * (xs_cmp), for at most team->timeout_ns. PTX: ld.acquire.sys.global.u64 polls, %globaltimer.
 * Ordering: acquire at system scope — after it returns true, this thread's reads see every
 * write the signaller published. Returns false on timeout (status recorded with `location`)
 * or when another wait on this GPU already failed. */
XS_DEV bool xs_wait_until_thread(const xs_team* t, const uint64_t* flag, int cmp, uint64_t value,
                                 uint32_t location) {
  return xsi_wait_raw(t, (const uint64_t*)xs_ptr_local(t, flag), cmp, value, location);
}

/* Warp variant: lane 0 waits, __syncwarp, the result is broadcast (shfl). All lanes' later
 * reads are ordered after lane 0's acquire. */
XS_DEV bool xs_wait_until_warp(const xs_team* t, const uint64_t* flag, int cmp, uint64_t value,
                               uint32_t location) {
  int ok = 1;
  if ((threadIdx.x & 31u) == 0u) ok = xs_wait_until_thread(t, flag, cmp, value, location);
  __syncwarp();
  return __shfl_sync(0xffffffffu, ok, 0) != 0;
}

/* CTA variant: thread 0 waits, then bar.red.and (__syncthreads_and) broadcasts the result and
 * orders every thread's later reads after the acquire. */
XS_DEV bool xs_wait_until_block(const xs_team* t, const uint64_t* flag, int cmp, uint64_t value,
                                uint32_t location) {
  int ok = 1;
  if (threadIdx.x == 0) ok = xs_wait_until_thread(t, flag, cmp, value, location);
  return __syncthreads_and(ok) != 0;
}

/* Wait on word `word` of this rank's own signal pad; as xs_wait_until_thread. */
XS_DEV bool xs_wait_pad_thread(const xs_team* t, int word, int cmp, uint64_t value,
                               uint32_t location) {
  return xsi_wait_raw(t, t->pad[t->rank] + word, cmp, value, location);
}

/* ---- fence, quiet, barrier --------------------------------------------------------------- */

/* PTX: fence.acq_rel.sys. Orders this thread's earlier memory operations before its later ones
 * at system scope: data stores, xs_fence_thread, then a *relaxed* flag store is as good as a
 * release signal; a relaxed flag load, xs_fence_thread, then data loads is as good as an
 * acquire. Waits for nothing. */
XS_DEV void xs_fence_thread(void) {
  xs_fence_acq_rel_sys();
}

/* "All my earlier stores are done": PTX cp.async.bulk.wait_group 0 (this thread's committed
 * bulk stores have written), fence.proxy.async.global, fence.sc.sys (every earlier store of
 * this thread is visible system-wide before any later one). Use before reusing a remote buffer
 * whose completion is signalled some other way, or to measure drain time. */
XS_DEV void xs_quiet_thread(void) {
  xs_bulk_wait_all();
  xs_fence_proxy_async_global();
  xs_fence_sc_sys();
}

/* CTA variant: every thread quiets, then bar.sync. */
XS_DEV void xs_quiet_block(void) {
  xs_quiet_thread();
  __syncthreads();
}

/* Barrier across ranks: the CTA calling it with `slot` on each rank waits for the CTAs calling
 * it with the same slot on every other rank (one CTA per rank per slot; usually slot = the CTA's
 * index within its rank). PTX: bar.sync; thread 0: fence.acq_rel.sys,
 * st.release.sys.global.u64 of its epoch into each rank's pad word [slot][me], then bounded
 * ld.acquire.sys polls of its own words [slot][*] until they reach this slot's epoch;
 * bar.red.and. No atomics: each word has one writer, so the barrier also runs on host-mapped
 * heaps without host atomics (session 8; it used red.add before, which compute-sanitizer
 * rejects on host memory of a GPU without hostNativeAtomicSupported). Ordering: every write any thread of the participating CTAs made before the
 * barrier is visible to every thread of them after it. Returns false on timeout (status
 * recorded with `location`); the slot is then out of step until xs_world_clear_signals. */
XS_DEV bool xs_barrier_block(const xs_team* t, uint32_t slot, uint32_t location) {
  __syncthreads();
  int ok = 1;
  if (threadIdx.x == 0) {
    slot %= XS_BARRIER_SLOTS;
    uint64_t* mine = t->pad[t->rank];
    /* NOTE: the epoch word is touched only by this (rank, slot) CTA, so a plain update is
     * enough; successive kernels are ordered by their launch boundary. */
    uint64_t epoch = mine[XSI_PAD_EPOCH + slot] + 1u;
    mine[XSI_PAD_EPOCH + slot] = epoch;
    xs_fence_acq_rel_sys();
    for (int p = 0; p < t->size; p++) /* my arrivals on p = my epoch: one writer per word */
      xs_st_release_sys_u64(t->pad[p] + XSI_PAD_BAR + slot * XS_MAX_RANKS + t->rank, epoch);
    for (int p = 0; p < t->size && ok; p++)
      ok =
          xsi_wait_raw(t, mine + XSI_PAD_BAR + slot * XS_MAX_RANKS + p, XS_CMP_GE, epoch, location);
  }
  return __syncthreads_and(ok) != 0;
}

#endif /* XSTAGE_DEVICE_CUH */
