/* xstage/world.h — worlds, the symmetric heap, device status, tracing (host side).
 *
 * A world is W ranks (1..XS_MAX_RANKS) whose symmetric heaps are visible to each other's
 * kernels. Three backends give kernels the same view (an xs_team passed by value):
 *   emulated  W virtual ranks on one GPU in one process; one launch covers every rank and each
 *             CTA takes its rank from its block index (xs_team_for_block in device.cuh), so all
 *             ranks are co-resident and a spin-wait cannot wait on a rank that is not running.
 *   local     one process drives W GPUs with peer access, one heap per GPU, one launch per GPU.
 *   nccl      one process per GPU; the heap is NCCL symmetric memory (ncclMemAlloc + a
 *             symmetric window); peer pointers come from ncclGetLsaPointer.
 *
 * Lifecycle: xs_world_create_* -> xs_malloc ... launches ... xs_world_sync -> xs_world_status
 * -> xs_free -> xs_world_destroy. A world is used by one host thread at a time.
 *
 * Symmetric pointers: xs_malloc returns a pointer into *this process's first rank's* heap (the
 * "symmetric address"). Kernels translate it to any rank with xs_ptr_to_peer (one add);
 * the host translates it with xs_world_ptr. Allocation is deterministic: the same sequence of
 * xs_malloc/xs_free calls gives the same offsets on every rank (in the nccl backend every rank
 * must make the same calls in the same order — like a collective).
 */
#ifndef XSTAGE_WORLD_H
#define XSTAGE_WORLD_H

#include "xstage/xstage.h" /* xs_result (guarded: safe in either include order) */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XS_MAX_RANKS 8
/* Signal pad: XS_PAD_WORDS 64-bit words per rank, zeroed at creation. Words [0,
 * XS_PAD_USER_WORDS) belong to the caller (per-tile flags); the rest serve xs_barrier_block. */
#define XS_PAD_WORDS 1024
#define XS_PAD_USER_WORDS 512
#define XS_BARRIER_SLOTS 32 /* independent device barriers (one per CTA index, mod this) */
/* Largest alignment xs_malloc accepts; heaps are based at multiples of it. */
#define XS_HEAP_MAX_ALIGN ((size_t)65536)

typedef struct xs_world xs_world; /* opaque */

typedef enum xs_backend {
  XS_BACKEND_EMULATED = 1,
  XS_BACKEND_LOCAL = 2,
  XS_BACKEND_NCCL = 3,
} xs_backend;

typedef enum xs_mem_kind {
  XS_MEM_DEVICE = 0,      /* heaps in GPU memory (HBM) */
  XS_MEM_HOST_MAPPED = 1, /* heaps in pinned host memory mapped into the GPU (PCIe path) */
} xs_mem_kind;

/* Configuration. Start from XS_WORLD_CONFIG_INITIALIZER; `size` versions the struct. */
typedef struct xs_world_config {
  size_t size;         /* sizeof(xs_world_config) */
  int ranks;           /* emulated: W in 1..8; local: W GPUs (0 = all visible, <= 8);
                          nccl: ignored (WORLD_SIZE / the communicator decides) */
  int device;          /* emulated: CUDA device ordinal; local, nccl: ignored */
  size_t heap_bytes;   /* symmetric heap per rank, bytes (> 0; rounded up to 64 KiB) */
  xs_mem_kind mem;     /* emulated and local: where heaps live; nccl: must be XS_MEM_DEVICE */
  uint64_t timeout_ns; /* bound on each device-side wait (> 0) */
  size_t trace_events; /* capacity of the trace buffer per device, events (0 = no tracing) */
} xs_world_config;

#define XS_WORLD_CONFIG_INITIALIZER                                                                \
  { sizeof(xs_world_config), 2, 0, (size_t)64 << 20, XS_MEM_DEVICE, 2000000000ull, 0 }

/* Device-visible status of one GPU: the first device-side error wins, later ones only count.
 * Written by device.cuh (atomicCAS on `code`), read by xs_world_status. */
typedef struct xs_status {
  uint32_t code;     /* 0 = no error; else an xs_result (XS_ERR_TIMEOUT) */
  uint32_t count;    /* errors recorded (the first one is described below) */
  int32_t rank;      /* rank whose wait failed */
  uint32_t location; /* caller-supplied location id of the failing wait */
  uint32_t cta;      /* blockIdx.x of the failing CTA */
  uint32_t reserved;
  uint64_t flag;     /* address of the flag it waited on (device pointer) */
  uint64_t observed; /* last value read from the flag */
  uint64_t expected; /* value compared against */
} xs_status;

/* Trace events (device.cuh: xs_trace_*). Kinds come in begin/end pairs. */
typedef enum xs_trace_kind {
  XS_TRACE_TILE_BEGIN = 1, /* compute of a tile starts */
  XS_TRACE_TILE_END = 2,
  XS_TRACE_BURST_BEGIN = 3, /* issue of a remote-store burst starts */
  XS_TRACE_BURST_END = 4,   /* ... the issuer is released (the X-Stage took the burst) */
  XS_TRACE_WAIT_BEGIN = 5,  /* a wait on a flag starts */
  XS_TRACE_WAIT_END = 6,
} xs_trace_kind;

typedef struct xs_trace_event {
  uint64_t t_ns; /* %globaltimer, ns */
  uint32_t cta;  /* blockIdx.x of the recording CTA */
  uint32_t arg;  /* caller's argument (tile index, bytes/1024, location id ...) */
  uint16_t kind; /* xs_trace_kind */
  uint16_t rank; /* recording rank */
  uint32_t reserved;
} xs_trace_event;

/* Preallocated device buffer: events[0..capacity); head counts attempts, so
 * dropped = head - capacity when head > capacity. */
typedef struct xs_trace_ring {
  unsigned long long head; /* next slot (atomicAdd) */
  uint64_t capacity;       /* events */
  xs_trace_event* events;  /* device memory */
} xs_trace_ring;

/* What a kernel receives, by value. Pointers are as the receiving rank's GPU addresses them. */
typedef struct xs_team {
  int rank;     /* this rank (emulated: rank 0 until xs_team_for_block) */
  int size;     /* W */
  int emulated; /* 1: one launch covers all ranks (rank from blockIdx.x) */
  int reserved;
  uint64_t timeout_ns;         /* bound on each wait */
  const void* sym_base;        /* heap base that symmetric pointers are relative to */
  void* heap[XS_MAX_RANKS];    /* heap base of rank r (peer-mapped where needed) */
  uint64_t* pad[XS_MAX_RANKS]; /* signal pad of rank r, XS_PAD_WORDS words */
  xs_status* status;           /* this GPU's status */
  xs_trace_ring* trace;        /* NULL = tracing off */
} xs_team;

/* One kernel launch of a launch plan (see xs_world_launch_plan). */
typedef struct xs_launch {
  int device;     /* CUDA device ordinal to launch on */
  int rank_first; /* first rank covered */
  int nranks;     /* ranks covered (emulated: W; otherwise 1) */
  unsigned grid;  /* blocks: blocks_per_rank * nranks */
  void* stream;   /* cudaStream_t owned by the world */
  xs_team team;   /* pass by value to the kernel */
} xs_launch;

typedef struct xs_launch_plan {
  int count; /* launches, one per GPU this process drives */
  xs_launch launch[XS_MAX_RANKS];
} xs_launch_plan;

typedef struct xs_world_info {
  xs_backend backend;
  xs_mem_kind mem;
  int size;          /* W */
  int rank_first;    /* first rank this process drives */
  int nlocal;        /* ranks this process drives */
  size_t heap_bytes; /* per rank */
  size_t heap_used;  /* allocated bytes (rounded) */
  size_t heap_free;
  size_t heap_largest_free;
  uint64_t timeout_ns;
  /* 1: every GPU this process drives has native atomics on host memory
   * (cudaDevAttrHostNativeAtomicSupported; e.g. NVLink-C2C systems). XS_SIGNAL_ADD into a
   * host-mapped heap needs it: an H100 / H200 on PCIe reports 0, and compute-sanitizer rejects
   * such atomics there (session 8). HBM heaps (own or a peer's over NVLink) always have them. */
  int host_atomics;
} xs_world_info;

/* Device-side status after a launch (see xs_world_status). */
typedef struct xs_status_report {
  xs_result code;    /* XS_OK, or the first device-side error (XS_ERR_TIMEOUT) */
  int rank;          /* rank whose wait failed (-1 when code == XS_OK) */
  uint32_t location; /* its location id */
  uint32_t cta;      /* its blockIdx.x */
  uint32_t count;    /* device-side errors recorded in total */
  uint64_t flag;     /* device address of the flag */
  uint64_t observed, expected;
  char message[256]; /* "rank 1 (cta 3) timed out at location 7 waiting on flag 0x..." */
} xs_status_report;

/* ---- creation ---------------------------------------------------------------------------- */

/* W virtual ranks on one GPU (cfg->device). NULL cfg = defaults. XS_ERR_INVALID_ARG (ranks
 * outside 1..8, heap_bytes 0, timeout 0, bad size field), XS_ERR_NO_DEVICE, XS_ERR_CUDA
 * (allocation), XS_ERR_UNSUPPORTED (no CUDA in this build). *out is NULL on failure. */
xs_result xs_world_create_emulated(xs_world** out, const xs_world_config* cfg);

/* One rank per visible GPU (cfg->ranks of them, 0 = all, at least 1), peer access enabled
 * between every pair. XS_ERR_UNSUPPORTED when two GPUs cannot access each other. */
xs_result xs_world_create_local(xs_world** out, const xs_world_config* cfg);

/* This process is one rank: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT from the
 * environment (torchrun, `xstage launch`); rank 0 sends the ncclUniqueId to the others over
 * TCP (bounded by XSTAGE_BOOTSTRAP_TIMEOUT_S, default 60 s). Sets NCCL_NVLS_ENABLE=0 in the
 * process environment (xstage never uses NVLink multicast). Blocks until every rank has joined.
 * XS_ERR_UNSUPPORTED without NCCL's device API, or when the ranks do not all share load/store
 * access (other nodes: see docs/world.md). */
xs_result xs_world_create_nccl(xs_world** out, const xs_world_config* cfg);

/* Same, on a caller's communicator (an ncclComm_t passed as void*). The world borrows it:
 * xs_world_destroy does not destroy it, and it must outlive the world. Collective. */
xs_result xs_world_adopt_nccl(xs_world** out, void* nccl_comm, const xs_world_config* cfg);

/* Free everything the world owns, in reverse order of creation (waits for its streams
 * first). NULL is a no-op. Collective in the nccl backend. After an nccl barrier timed out
 * (a peer is gone, NCCL's barrier kernel still spins) every call that would synchronize returns
 * XS_ERR_TIMEOUT, and destroy does not wait: it aborts the communicator if the world created it
 * (an adopted one is the caller's to abort), frees the host side, returns XS_ERR_TIMEOUT and
 * leaves the GPU memory to the process's exit (which should follow). */
xs_result xs_world_destroy(xs_world* w);

/* ---- queries and launches ---------------------------------------------------------------- */

xs_result xs_world_info_get(xs_world_info* out, const xs_world* w);

/* The team a kernel for `rank` receives (rank must be driven by this process). In the emulated
 * backend every rank's team is identical except `rank`. */
xs_result xs_world_team(xs_team* out, const xs_world* w, int rank);

/* Launches that run `blocks_per_rank` CTAs of `threads` threads (smem_bytes dynamic shared
 * memory) of `kernel` (a __global__ function pointer) for every rank this process drives:
 * emulated: one launch of W * blocks_per_rank CTAs; local: one per GPU; nccl: one.
 * Fails with XS_ERR_INVALID_ARG when those CTAs cannot all be resident at once on a GPU (a
 * rank could then spin on a peer that never runs). `kernel` may be NULL to skip that check.
 * The caller launches kernel<<<grid, threads, smem, stream>>>(team, ...) for each entry. */
xs_result xs_world_launch_plan(xs_launch_plan* out, const xs_world* w, const void* kernel,
                               int threads, size_t smem_bytes, int blocks_per_rank);

/* Wait until all work on the world's streams has finished. XS_ERR_CUDA on a launch error. */
xs_result xs_world_sync(xs_world* w);

/* Host barrier over all ranks: every rank's earlier work on the world's streams is complete
 * (and visible) when it returns. emulated/local: a stream sync; nccl: an NCCL LSA barrier kernel,
 * waited for at most 10 timeouts (XS_ERR_TIMEOUT then). */
xs_result xs_world_barrier(xs_world* w);

/* Read the device status of every GPU this process drives (after xs_world_sync). *out gets
 * XS_OK or the first error, naming rank, CTA and location. reset != 0 clears the status words
 * afterwards. Returns XS_OK when it could read the status (whatever the status says). */
xs_result xs_world_status(xs_status_report* out, xs_world* w, int reset);

/* Zero every signal pad this process owns (after a timeout left barriers out of step). In the
 * nccl backend call it on every rank, then xs_world_barrier. */
xs_result xs_world_clear_signals(xs_world* w);

/* ---- symmetric heap ---------------------------------------------------------------------- */

/* Allocate `bytes` (> 0) on every rank's heap at the same offset, aligned to `align` (0 = 256;
 * a power of two <= XS_HEAP_MAX_ALIGN). Contents are undefined (see xs_world_memset).
 * XS_ERR_EXHAUSTED with requested/free/largest-free bytes in the detail. */
xs_result xs_malloc(void** out, xs_world* w, size_t bytes, size_t align);

/* Free a pointer returned by xs_malloc. NULL is a no-op. XS_ERR_INVALID_ARG for a pointer not
 * in the heap, misaligned, or inside an allocation; XS_ERR_STATE for a double free. */
xs_result xs_free(xs_world* w, void* p);

/* The address of symmetric pointer `sym` in rank `rank`'s heap, usable by the host in
 * cudaMemcpy (that rank must be driven by this process). */
xs_result xs_world_ptr(void** out, const xs_world* w, const void* sym, int rank);

/* Set `bytes` at `sym` to byte `value` on every rank this process drives (synchronous). */
xs_result xs_world_memset(xs_world* w, void* sym, int value, size_t bytes);

/* ---- tracing ----------------------------------------------------------------------------- */

/* Copy the trace events of every GPU this process drives to a malloc'd array (*out, free with
 * free(); NULL when there are none), sorted by time; *dropped = events that did not fit. Call
 * after xs_world_sync. XS_ERR_STATE when the world was created with trace_events = 0. */
xs_result xs_world_trace_fetch(xs_trace_event** out, size_t* n, size_t* dropped, xs_world* w);
/* Empty the trace buffers. */
xs_result xs_world_trace_reset(xs_world* w);

typedef enum xs_trace_format {
  XS_TRACE_FORMAT_RAW = 1,    /* text: "xstage-trace 1" then "rank cta kind t_ns arg" lines */
  XS_TRACE_FORMAT_CHROME = 2, /* Chrome trace-event JSON (opens in Perfetto / chrome://tracing) */
  XS_TRACE_FORMAT_SVG = 3,    /* SVG timeline: one lane per (rank, CTA) */
} xs_trace_format;

/* Write events in a format (atomically). Chrome/SVG pair begin/end events of one CTA into
 * spans; an unmatched begin is drawn to the last timestamp. Pure C: works without CUDA. */
xs_result xs_trace_write(const char* path, const xs_trace_event* ev, size_t n, xs_trace_format fmt);
/* Read a RAW trace file (malloc'd array in *out, free with free()). XS_ERR_PARSE names the
 * line. */
xs_result xs_trace_read(xs_trace_event** out, size_t* n, const char* path);
/* "tile" / "burst" / "wait" for a kind (begin and end alike), "?" otherwise. */
const char* xs_trace_kind_name(int kind);

/* ---- environment (torchrun / xstage launch) ---------------------------------------------- */

typedef struct xs_world_env {
  int rank, world_size, local_rank;
  char master_addr[256];
  int master_port;
} xs_world_env;

/* Read and check RANK, WORLD_SIZE (1..8), LOCAL_RANK (default RANK), MASTER_ADDR (default
 * 127.0.0.1), MASTER_PORT (1..65535). XS_ERR_INVALID_ARG names the variable and its value. */
xs_result xs_world_env_read(xs_world_env* out);

/* ---- RMA benchmark (xstage bench rma) ---------------------------------------------------- */

typedef struct xs_rma_bench_config {
  size_t size; /* sizeof(xs_rma_bench_config) */
  int device;
  size_t bytes;  /* bytes per tile-store burst (all CTAs together) */
  int ctas;      /* producer CTAs */
  int threads;   /* threads per CTA */
  int iters;     /* timed repetitions */
  int pingpongs; /* signal->wait round trips timed */
  int peer;      /* 1: also GPU 0 -> GPU 1 over NVLink (a local world) when two GPUs reach each
                    other; 0: the emulated rows only */
} xs_rma_bench_config;

#define XS_RMA_BENCH_CONFIG_INITIALIZER                                                            \
  { sizeof(xs_rma_bench_config), 0, (size_t)64 << 20, 32, 512, 20, 10000, 1 }

typedef struct xs_rma_bench_row {
  char name[48]; /* "tile_v4_block -> HBM peer" ... */
  xs_mem_kind mem;
  double bytes; /* per repetition */
  double ns;    /* median time per repetition */
  double gbps;  /* bytes / ns (GB/s); 0 for latency rows */
  int wrong;    /* bytes found wrong after the run (0 = correct) */
} xs_rma_bench_row;

typedef struct xs_rma_bench_result {
  int nrows;
  int peer; /* 1: the NVLink rows ran (GPU 0 -> GPU 1) */
  xs_rma_bench_row rows[16];
} xs_rma_bench_result;

/* Tile stores (v4 by warps, v4 by CTAs, TMA bulk) from rank 0 to rank 1 of an emulated world
 * with its heaps in HBM and in host-mapped memory, and the signal->wait round trip (ns); with
 * cfg->peer and two GPUs that reach each other, the same from GPU 0 to GPU 1 of a local world
 * (NVLink). Every row checks its data. XS_ERR_NO_DEVICE / XS_ERR_UNSUPPORTED as usual. */
xs_result xs_rma_bench(xs_rma_bench_result* out, const xs_rma_bench_config* cfg);

#ifdef __cplusplus
}
#endif
#endif /* XSTAGE_WORLD_H */
