/* test_gemm_ready.cu — the GEMM's input readiness (xs_gemm_args.ready), on one GPU:
 * - a feeder kernel on another stream writes A's row groups in a shuffled order, each after a
 *   delay and followed by a release flag, while the GEMM (v1, v3 and AUTO; DENSE, CONTIG and
 *   MASKED with empty and one-token experts; groups that do not line up with the tiles) waits
 *   for them; A is NaN before its rows arrive, so a tile that loads early cannot pass. Two
 *   epochs on the same flags (the second waits for flag >= 2);
 * - a chain: a MASKED gate/up GEMM with SiLU*mul raising tile flags, and a down GEMM that
 *   waits on those flags (rows = its tile_m, span = its n_blocks) and reads its output:
 *   launched before it on another stream, and on the same stream as a PDL launch that does
 *   not wait for it (schedule.pdl = 2), two epochs;
 * - a timeout: flags never raised end the launch with XS_ERR_TIMEOUT in the status, naming the
 *   flag, the value seen, the expected one, the location and the rank;
 * - argument errors, and AUTO's choice with waits.
 * Outputs are poisoned before each run and compared in full with an fp32 cuBLAS reference (the
 * checker of test_gemm.cu). Skips (exit 77) without a GPU.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/gemm/check.h"
#include "kernels/gemm/sched.h"
#include "test.h"
#include "xstage/gemm.h"
#include "xstage/ptx.cuh"

static cublasHandle_t g_blas;
static int g_hopper, g_sms;

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "  FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                         \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static void* dalloc(size_t bytes) {
  void* p = NULL;
  CK(cudaMalloc(&p, bytes ? bytes : 16));
  return p;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* One CTA per group in turn (order[i], i = blockIdx.x, + gridDim.x, ...): wait delay_ns, copy
 * the group's rows [row0[f], row0[f] + nrows[f]) of K elements from src to dst, then publish
 * them: bar.sync, thread 0 fence.acq_rel.sys and st.release.sys of `epoch` into flags[f]. */
__global__ void feeder(const uint16_t* src, uint16_t* dst, int K, const int32_t* order, int n,
                       const int64_t* row0, const int32_t* nrows, uint32_t* flags, uint32_t epoch,
                       int delay_ns) {
  for (int i = blockIdx.x; i < n; i += gridDim.x) {
    const int f = order[i];
    if (threadIdx.x == 0) {
      const uint64_t t0 = xs_globaltimer();
      while (xs_globaltimer() - t0 < (uint64_t)delay_ns) {
      }
    }
    __syncthreads();
    const int64_t base = row0[f] * K, count = (int64_t)nrows[f] * K;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x)
      dst[base + e] = src[base + e];
    __syncthreads();
    if (threadIdx.x == 0) {
      xs_fence_acq_rel_sys();
      xs_st_release_sys_u32(&flags[f], epoch);
    }
  }
}

typedef struct ready_case {
  const char* name;
  xs_gemm_layout layout;
  int M, N, K, E;
  const int32_t* counts;
  int rows; /* per flag group */
} ready_case;

/* The flag groups of a problem (sched.h's numbering) as (first row of A's buffer, rows) pairs;
 * groups without rows in the buffer get 0 rows (the feeder still raises their flag). */
static int groups_of(const ready_case* c, int M, int64_t* row0, int32_t* nrows) {
  const int masked = c->layout == XS_GEMM_GROUPED_MASKED;
  const int per = xsg_cdiv(M, c->rows), E = masked ? c->E : 1;
  for (int e = 0; e < E; e++)
    for (int j = 0; j < per; j++) {
      const int f = e * per + j, r0 = j * c->rows;
      const int r1 = r0 + c->rows < M ? r0 + c->rows : M;
      row0[f] = (int64_t)e * M + r0;
      nrows[f] = r1 - r0;
    }
  return E * per;
}

/* The feeder case: returns 1 when it passed (or the version cannot run here). silu: the SiLU*mul
 * epilogue (N / 2 output columns); map: the tiles stored through a destination map into a
 * second buffer (each epilogue form is its own kernel on v3: gemm_v2.cu). */
static int run_feeder(const ready_case* c, xs_gemm_version ver, int silu, int map) {
  const int E = c->layout == XS_GEMM_DENSE ? 1 : c->E;
  int32_t* offsets = (int32_t*)calloc((size_t)E + 1, 4);
  int M = c->M;
  if (c->layout == XS_GEMM_GROUPED_CONTIG) {
    XT_CHECK(xs_gemm_contig_layout(offsets, c->counts, E) == XS_OK);
    M = offsets[E] > c->M ? offsets[E] : c->M;
  }
  const int64_t rows = c->layout == XS_GEMM_GROUPED_MASKED ? (int64_t)M * E : M;
  const int64_t bsz = (int64_t)E * c->N * c->K;
  void* A_src = dalloc((size_t)rows * c->K * 2);
  void* A = dalloc((size_t)rows * c->K * 2);
  void* B = dalloc((size_t)bsz * 2);
  const int n_out = silu ? c->N / 2 : c->N;
  void* C = dalloc((size_t)rows * n_out * 2);
  float* ref = (float*)dalloc((size_t)rows * n_out * 4);
  xs_gemm_tile_dst* d_map = NULL;
  uint8_t* d_state = (uint8_t*)dalloc((size_t)rows);
  int32_t* d_off = (int32_t*)dalloc((size_t)(E + 1) * 4);
  int32_t* d_cnt = (int32_t*)dalloc((size_t)E * 4);
  xs_status* d_status = (xs_status*)dalloc(sizeof(xs_status));
  CK(cudaMemcpy(d_off, offsets, (E + 1) * 4, cudaMemcpyHostToDevice));
  if (c->counts) CK(cudaMemcpy(d_cnt, c->counts, E * 4, cudaMemcpyHostToDevice));
  XT_CHECK(xsg_fill_random(A_src, rows * c->K, 7 + c->M, 1.0f) == XS_OK);
  XT_CHECK(xsg_fill_random(B, bsz, 11 + c->N, 1.0f) == XS_OK);

  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.layout = c->layout, a.version = ver, a.M = M, a.N = c->N, a.K = c->K, a.experts = c->E;
  a.A = A_src, a.B = B, a.C = C, a.m_offsets = d_off, a.m_counts = d_cnt;
  float* scratch = silu ? (float*)dalloc((size_t)rows * c->N * 4) : NULL; /* (gate and up) */
  XT_CHECK(xsg_reference(ref, scratch, &a, silu, offsets, c->counts, g_blas) == XS_OK);
  uint8_t* h_state = (uint8_t*)malloc((size_t)rows + 1);
  xsg_row_states(h_state, &a, offsets, c->counts);
  CK(cudaMemcpy(d_state, h_state, (size_t)rows, cudaMemcpyHostToDevice));

  /* groups, shuffled */
  const int masked = c->layout == XS_GEMM_GROUPED_MASKED;
  const int ng = (int)xsg_ready_group_count(masked, M, E, c->rows);
  int64_t* h_row0 = (int64_t*)malloc(sizeof(int64_t) * ng);
  int32_t* h_nrows = (int32_t*)malloc(sizeof(int32_t) * ng);
  int32_t* h_order = (int32_t*)malloc(sizeof(int32_t) * ng);
  XT_EQ_INT(groups_of(c, M, h_row0, h_nrows), ng);
  uint32_t h = 2024u + (uint32_t)ng;
  for (int i = 0; i < ng; i++)
    h_order[i] = i;
  for (int i = ng - 1; i > 0; i--) {
    h = h * 1664525u + 1013904223u;
    const int j = (int)((h >> 8) % (uint32_t)(i + 1)), t = h_order[i];
    h_order[i] = h_order[j], h_order[j] = t;
  }
  int64_t* d_row0 = (int64_t*)dalloc(sizeof(int64_t) * ng);
  int32_t* d_nrows = (int32_t*)dalloc(sizeof(int32_t) * ng);
  int32_t* d_order = (int32_t*)dalloc(sizeof(int32_t) * ng);
  uint32_t* d_flags = (uint32_t*)dalloc(sizeof(uint32_t) * ng);
  CK(cudaMemcpy(d_row0, h_row0, sizeof(int64_t) * ng, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_nrows, h_nrows, sizeof(int32_t) * ng, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_order, h_order, sizeof(int32_t) * ng, cudaMemcpyHostToDevice));
  CK(cudaMemset(d_flags, 0, sizeof(uint32_t) * ng));
  CK(cudaMemset(d_status, 0, sizeof(xs_status)));

  a.A = A;
  a.ready.flags = d_flags, a.ready.rows = c->rows, a.ready.span = 1;
  a.ready.location = 0x5eed, a.ready.rank = 3, a.ready.timeout_ns = 2000000000ull;
  a.ready.status = d_status;
  xs_gemm_tiling t;
  int ok = 1;
  xs_result res = xs_gemm_tiles(&t, &a, silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE);
  if (res == XS_ERR_UNSUPPORTED && ver != XS_GEMM_V1) {
    printf("  unsupported (expected off Hopper): %s v%d: %s\n", c->name, (int)ver, xs_last_error());
    goto done;
  }
  XT_CHECK_MSG(res == XS_OK, "%s: xs_gemm_tiles: %s", c->name, xs_last_error());
  if (map) { /* tile i (group g, m-block mb, n-block nb) to its place in C, as a local store */
    xs_gemm_tile_dst* hm = (xs_gemm_tile_dst*)malloc(sizeof *hm * (t.count + 1));
    for (int i = 0; i < t.count; i++) {
      const int g = i / (t.m_blocks * t.n_blocks), rem = i % (t.m_blocks * t.n_blocks);
      const int mb = rem / t.n_blocks, nb = rem % t.n_blocks;
      hm[i].base =
          (uint16_t*)C + ((int64_t)g * M + (int64_t)mb * t.tile_m) * n_out + (int64_t)nb * t.tile_n;
      hm[i].ld = n_out;
    }
    d_map = (xs_gemm_tile_dst*)dalloc(sizeof *hm * (t.count + 1));
    CK(cudaMemcpy(d_map, hm, sizeof *hm * t.count, cudaMemcpyHostToDevice));
    free(hm);
  }
  if (ver == XS_GEMM_AUTO && g_hopper) XT_EQ_INT((int)t.version, (int)XS_GEMM_V3);

  cudaStream_t s_gemm, s_feed;
  CK(cudaStreamCreateWithFlags(&s_gemm, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s_feed, cudaStreamNonBlocking));
  for (uint32_t epoch = 1; epoch <= 2; epoch++) {
    /* A holds NaN until its rows arrive; so does C until the tiles are stored */
    XT_CHECK(xsg_poison(A, rows * c->K) == XS_OK);
    XT_CHECK(xsg_poison(C, rows * n_out) == XS_OK);
    CK(cudaDeviceSynchronize());
    a.ready.expect = epoch;
    CK(cudaMemset(d_status, 0, sizeof(xs_status)));
    xs_gemm_epilogue epi = XS_GEMM_EPILOGUE_INITIALIZER;
    if (silu) epi.act = XS_GEMM_ACT_SILU_MUL;
    if (map) epi.store = XS_GEMM_STORE_MAP, epi.dst_map = d_map;
    xs_gemm_schedule sched = XS_GEMM_SCHEDULE_INITIALIZER;
    /* the feeder's 8 CTAs keep SMs of their own (a GEMM CTA fills an SM's registers) */
    const int feeders = 8;
    sched.max_ctas = (t.version == XS_GEMM_V1 ? 2 : 1) * (g_sms - feeders);
    const double t0 = now_s();
    res = xs_gemm_run(&a, epi, sched, s_gemm);
    XT_CHECK_MSG(res == XS_OK, "%s: xs_gemm_run: %s", c->name, xs_last_error());
    feeder<<<feeders, 256, 0, s_feed>>>((const uint16_t*)A_src, (uint16_t*)A, c->K, d_order, ng,
                                        d_row0, d_nrows, d_flags, epoch, 3000);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    const double dt = now_s() - t0;
    xs_status st;
    CK(cudaMemcpy(&st, d_status, sizeof st, cudaMemcpyDeviceToHost));
    XT_CHECK_MSG(st.code == 0, "%s v%d epoch %u: status %u (flag 0x%llx saw %llu want %llu)",
                 c->name, (int)t.version, epoch, st.code, (unsigned long long)st.flag,
                 (unsigned long long)st.observed, (unsigned long long)st.expected);
    xsg_check chk;
    XT_CHECK(xsg_compare(&chk, C, ref, d_state, rows, n_out) == XS_OK);
    const int pass = st.code == 0 && xsg_check_ok(&chk);
    printf("  %s %s v%d%s%s epoch %u: %d groups of %d rows, rel_err %.2e checked %lld wrong %lld "
           "touched %lld, %.1f ms\n",
           pass ? "ok  " : "FAIL", c->name, (int)t.version, silu ? " silu" : "", map ? " map" : "",
           epoch, ng, c->rows, chk.rel_err, chk.checked, chk.wrong, chk.touched, 1e3 * dt);
    XT_CHECK_MSG(pass, "%s v%d epoch %u", c->name, (int)t.version, epoch);
    ok = ok && pass;
  }
  CK(cudaStreamDestroy(s_gemm));
  CK(cudaStreamDestroy(s_feed));
done:
  fflush(stdout);
  free(h_state), free(offsets), free(h_row0), free(h_nrows), free(h_order);
  void* bufs[] = {A_src,    A,      B,       C,       ref,     d_state, d_off,  d_cnt,
                  d_status, d_row0, d_nrows, d_order, d_flags, d_map,   scratch};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    cudaFree(bufs[i]);
  return ok;
}

static void test_feeder(void) {
  static const int32_t contig_counts[4] = {0, 1, 300, 129};
  static const int32_t masked_counts[4] = {256, 0, 1, 130};
  const ready_case cases[] = {
      /* groups of 100 rows: a 128-row tile waits for two or three of them */
      {"dense", XS_GEMM_DENSE, 1000, 384, 512, 1, NULL, 100},
      {"contig", XS_GEMM_GROUPED_CONTIG, 0, 256, 264, 4, contig_counts, 128},
      {"masked", XS_GEMM_GROUPED_MASKED, 256, 264, 136, 4, masked_counts, 64},
      /* few rows: AUTO takes v3, not v7 */
      {"dense-m40", XS_GEMM_DENSE, 40, 512, 256, 1, NULL, 16},
  };
  const xs_gemm_version vers[] = {XS_GEMM_V1, XS_GEMM_V3, XS_GEMM_AUTO};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (size_t k = 0; k < 3; k++)
      run_feeder(&cases[i], vers[k], 0, 0);
  /* v3's other epilogue forms while waiting: SiLU*mul, the map store, both (dense and contig;
   * the masked case's N = 264 is not a multiple of 16, which v3's SiLU*mul needs) */
  for (size_t i = 0; i < 2; i++)
    for (int f = 1; f < 4; f++)
      run_feeder(&cases[i], XS_GEMM_V3, f & 1, f >> 1);
}

/* L1 (MASKED gate/up, SiLU*mul, tile flags) and L2 (MASKED down on L1's output, waiting on
 * L1's flags). overlap 0: L2 launched first on its own stream, each on half the GPU; overlap 1:
 * one stream, L1 on every SM, then L2 as a PDL launch that does not wait for L1
 * (schedule.pdl = 2), twice (epochs 1 and 2 on the same flags). */
static void chain(int overlap) {
  const int E = 4, M = 256, H = 256, I = 384, N1 = 2 * I;
  static const int32_t counts[4] = {200, 0, 1, 256};
  const xs_gemm_version vers[] = {XS_GEMM_V1, XS_GEMM_AUTO};
  for (int vi = 0; vi < 2; vi++) {
    const xs_gemm_version ver = vers[vi];
    if (ver != XS_GEMM_V1 && !g_hopper) continue;
    void* X = dalloc((size_t)E * M * H * 2);
    void* W1 = dalloc((size_t)E * N1 * H * 2);
    void* W2 = dalloc((size_t)E * H * I * 2);
    void* Y1 = dalloc((size_t)E * M * I * 2);
    void* Y2 = dalloc((size_t)E * M * H * 2);
    float* ref2 = (float*)dalloc((size_t)E * M * H * 4);
    uint8_t* d_state = (uint8_t*)dalloc((size_t)E * M);
    int32_t* d_cnt = (int32_t*)dalloc(E * 4);
    xs_status* d_status = (xs_status*)dalloc(sizeof(xs_status));
    CK(cudaMemcpy(d_cnt, counts, E * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(d_status, 0, sizeof(xs_status)));
    XT_CHECK(xsg_fill_random(X, (int64_t)E * M * H, 31, 1.0f) == XS_OK);
    XT_CHECK(xsg_fill_random(W1, (int64_t)E * N1 * H, 37, 0.25f) == XS_OK);
    XT_CHECK(xsg_fill_random(W2, (int64_t)E * H * I, 41, 0.25f) == XS_OK);
    XT_CHECK(xsg_poison(Y1, (int64_t)E * M * I) == XS_OK);
    XT_CHECK(xsg_poison(Y2, (int64_t)E * M * H) == XS_OK);

    xs_gemm_args a1 = XS_GEMM_ARGS_INITIALIZER, a2 = XS_GEMM_ARGS_INITIALIZER;
    a1.layout = a2.layout = XS_GEMM_GROUPED_MASKED;
    a1.version = ver, a1.M = M, a1.N = N1, a1.K = H, a1.experts = E;
    a1.A = X, a1.B = W1, a1.C = Y1, a1.m_counts = d_cnt;
    a2.version = ver, a2.M = M, a2.N = H, a2.K = I, a2.experts = E;
    a2.A = Y1, a2.B = W2, a2.C = Y2, a2.m_counts = d_cnt;
    xs_gemm_tiling t1;
    XT_CHECK(xs_gemm_tiles(&t1, &a1, XS_GEMM_ACT_SILU_MUL) == XS_OK);
    uint32_t* d_flags = (uint32_t*)dalloc(4 * (size_t)t1.count);
    CK(cudaMemset(d_flags, 0, 4 * (size_t)t1.count));
    a2.ready.flags = d_flags, a2.ready.rows = t1.tile_m, a2.ready.span = t1.n_blocks;
    a2.ready.expect = 1, a2.ready.timeout_ns = 2000000000ull, a2.ready.status = d_status;

    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    xs_gemm_epilogue e1 = XS_GEMM_EPILOGUE_INITIALIZER, e2 = XS_GEMM_EPILOGUE_INITIALIZER;
    e1.act = XS_GEMM_ACT_SILU_MUL, e1.tile_flags = d_flags;
    xs_gemm_schedule sc1 = XS_GEMM_SCHEDULE_INITIALIZER, sc2 = XS_GEMM_SCHEDULE_INITIALIZER;
    if (!overlap) { /* each keeps half the GPU, so L1 runs while L2's CTAs wait */
      sc1.max_ctas = sc2.max_ctas = (ver == XS_GEMM_V1 ? 2 : 1) * (g_sms / 2);
      XT_CHECK_MSG(xs_gemm_run(&a2, e2, sc2, s2) == XS_OK, "L2: %s", xs_last_error());
      XT_CHECK_MSG(xs_gemm_run(&a1, e1, sc1, s1) == XS_OK, "L1: %s", xs_last_error());
    } else {
      sc2.pdl = 2;
      for (uint32_t epoch = 1; epoch <= 2; epoch++) {
        if (epoch == 2) { /* the second pass must wait again: fresh poison in between */
          CK(cudaStreamSynchronize(s1));
          XT_CHECK(xsg_poison(Y1, (int64_t)E * M * I) == XS_OK);
          XT_CHECK(xsg_poison(Y2, (int64_t)E * M * H) == XS_OK);
          CK(cudaDeviceSynchronize());
        }
        a2.ready.expect = epoch;
        XT_CHECK_MSG(xs_gemm_run(&a1, e1, sc1, s1) == XS_OK, "L1: %s", xs_last_error());
        XT_CHECK_MSG(xs_gemm_run(&a2, e2, sc2, s1) == XS_OK, "L2: %s", xs_last_error());
      }
    }
    CK(cudaDeviceSynchronize());
    xs_status st;
    CK(cudaMemcpy(&st, d_status, sizeof st, cudaMemcpyDeviceToHost));
    XT_EQ_INT((int)st.code, 0);
    /* the reference of L2 from what L1 stored (L1 itself is test_gemm's business; here its
     * rows with data must be finite: no NaN of the poison was read as input) */
    a2.A = Y1;
    XT_CHECK(xsg_reference(ref2, NULL, &a2, 0, NULL, counts, g_blas) == XS_OK);
    uint8_t h_state[4 * 256];
    xsg_row_states(h_state, &a2, NULL, counts);
    CK(cudaMemcpy(d_state, h_state, (size_t)E * M, cudaMemcpyHostToDevice));
    xsg_check chk;
    XT_CHECK(xsg_compare(&chk, Y2, ref2, d_state, (int64_t)E * M, H) == XS_OK);
    /* and L1's output against its own reference, so the chain is checked end to end */
    float* ref1 = (float*)dalloc((size_t)E * M * I * 4);
    float* scratch = (float*)dalloc((size_t)(E * M + 128) * N1 * 4);
    XT_CHECK(xsg_reference(ref1, scratch, &a1, 1, NULL, counts, g_blas) == XS_OK);
    xsg_check chk1;
    XT_CHECK(xsg_compare(&chk1, Y1, ref1, d_state, (int64_t)E * M, I) == XS_OK);
    const int pass = st.code == 0 && xsg_check_ok(&chk) && xsg_check_ok(&chk1);
    printf("  %s chain%s v%d: L1 rel_err %.2e wrong %lld; L2 rel_err %.2e checked %lld wrong %lld "
           "touched %lld (L2 waits on %d flags: rows %d, span %d)\n",
           pass ? "ok  " : "FAIL", overlap ? " (one stream, pdl 2)" : "", (int)ver, chk1.rel_err, chk1.wrong, chk.rel_err, chk.checked,
           chk.wrong, chk.touched, t1.count, t1.tile_m, t1.n_blocks);
    XT_CHECK(pass);
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    void* bufs[] = {X, W1, W2, Y1, Y2, ref2, d_state, d_cnt, d_status, d_flags, ref1, scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
      cudaFree(bufs[i]);
  }
}

static void test_chain(void) {
  chain(0);
}
static void test_chain_overlap(void) {
  chain(1);
}

/* Flags that never arrive: the launch ends, the status names the wait. */
static void test_timeout(void) {
  const xs_gemm_version vers[] = {XS_GEMM_V1, XS_GEMM_V3};
  for (int vi = 0; vi < 2; vi++) {
    if (vers[vi] != XS_GEMM_V1 && !g_hopper) continue;
    const int M = 512, N = 512, K = 256;
    void* A = dalloc((size_t)M * K * 2);
    void* B = dalloc((size_t)N * K * 2);
    void* C = dalloc((size_t)M * N * 2);
    uint32_t* d_flags = (uint32_t*)dalloc(4 * 8);
    xs_status* d_status = (xs_status*)dalloc(sizeof(xs_status));
    XT_CHECK(xsg_fill_random(A, (int64_t)M * K, 1, 1.0f) == XS_OK);
    XT_CHECK(xsg_fill_random(B, (int64_t)N * K, 2, 1.0f) == XS_OK);
    /* groups of 128 rows: 0, 1, 3 ready, group 2 stuck at 6 of 7 */
    const uint32_t h_flags[4] = {7, 9, 6, 7};
    CK(cudaMemcpy(d_flags, h_flags, sizeof h_flags, cudaMemcpyHostToDevice));
    CK(cudaMemset(d_status, 0, sizeof(xs_status)));
    xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
    a.version = vers[vi], a.M = M, a.N = N, a.K = K, a.A = A, a.B = B, a.C = C;
    a.ready.flags = d_flags, a.ready.rows = 128, a.ready.span = 1, a.ready.expect = 7;
    a.ready.location = 42, a.ready.rank = 5, a.ready.timeout_ns = 2000000ull; /* 2 ms */
    a.ready.status = d_status;
    const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
    const xs_gemm_schedule s = XS_GEMM_SCHEDULE_INITIALIZER;
    const double t0 = now_s();
    XT_CHECK(xs_gemm_run(&a, e, s, NULL) == XS_OK);
    CK(cudaDeviceSynchronize());
    const double dt = now_s() - t0;
    xs_status st;
    CK(cudaMemcpy(&st, d_status, sizeof st, cudaMemcpyDeviceToHost));
    printf("  timeout v%d: code %u count %u rank %d location %u flag +%lld observed %llu expected "
           "%llu, %.1f ms\n",
           (int)vers[vi], st.code, st.count, st.rank, st.location,
           (long long)((int64_t)st.flag - (int64_t)(uintptr_t)d_flags),
           (unsigned long long)st.observed, (unsigned long long)st.expected, 1e3 * dt);
    XT_EQ_INT((int)st.code, (int)XS_ERR_TIMEOUT);
    XT_CHECK(st.count >= 1);
    XT_EQ_INT(st.rank, 5);
    XT_EQ_INT((int)st.location, 42);
    XT_CHECK(st.flag == (uint64_t)(uintptr_t)(d_flags + 2));
    XT_CHECK(st.observed == 6 && st.expected == 7);
    XT_CHECK_MSG(dt < 1.0, "the launch took %.3f s", dt);
    void* bufs[] = {A, B, C, d_flags, d_status};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
      cudaFree(bufs[i]);
  }
}

static void test_ready_arguments(void) {
  void* buf = dalloc(1 << 20);
  xs_status* d_status = (xs_status*)dalloc(sizeof(xs_status));
  CK(cudaMemset(d_status, 0, sizeof(xs_status)));
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.M = 64, a.N = 64, a.K = 64, a.A = buf, a.B = buf, a.C = buf;
  const xs_gemm_epilogue e = XS_GEMM_EPILOGUE_INITIALIZER;
  const xs_gemm_schedule s = XS_GEMM_SCHEDULE_INITIALIZER;
  a.ready.flags = (const uint32_t*)buf, a.ready.rows = 64, a.ready.span = 1;
  a.ready.timeout_ns = 1000000, a.ready.status = d_status;
  a.ready.rows = 0;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "ready.rows") != NULL);
  a.ready.rows = 64, a.ready.span = 0;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_INVALID_ARG);
  a.ready.span = 1, a.ready.timeout_ns = 0;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "timeout") != NULL);
  a.ready.timeout_ns = 1000000, a.ready.status = NULL;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "status") != NULL);
  a.ready.status = d_status, a.ready.rows = 1, a.ready.span = 1 << 30;
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_INVALID_ARG); /* 64 x 2^30 flag words */
  a.ready.rows = 64, a.ready.span = 1;
  xs_gemm_schedule s3 = XS_GEMM_SCHEDULE_INITIALIZER;
  s3.pdl = 3;
  XT_EQ_INT(xs_gemm_run(&a, e, s3, NULL), XS_ERR_INVALID_ARG);
  if (g_hopper) {
    const xs_gemm_version no[] = {XS_GEMM_V2, XS_GEMM_V4, XS_GEMM_V7, XS_GEMM_V8, XS_GEMM_V11};
    for (int i = 0; i < 5; i++) {
      a.version = no[i];
      XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_ERR_UNSUPPORTED);
      XT_CHECK(strstr(xs_last_error(), "v1 and v3") != NULL);
    }
  }
  /* a caller whose struct ends before `ready` has no waits: the flags (zero) are not read */
  CK(cudaMemset(buf, 0, 1 << 20));
  a.version = XS_GEMM_AUTO, a.size = offsetof(xs_gemm_args, ready);
  s3.pdl = 2; /* overlap needs the waits */
  XT_EQ_INT(xs_gemm_run(&a, e, s3, NULL), XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "pdl 2") != NULL);
  XT_EQ_INT(xs_gemm_run(&a, e, s, NULL), XS_OK);
  CK(cudaDeviceSynchronize());
  xs_status st;
  CK(cudaMemcpy(&st, d_status, sizeof st, cudaMemcpyDeviceToHost));
  XT_EQ_INT((int)st.code, 0);
  cudaFree(buf);
  cudaFree(d_status);
}

int main(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) XT_SKIP("no CUDA GPU");
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  g_hopper = prop.major == 9;
  g_sms = prop.multiProcessorCount;
  printf("# test_gemm_ready on %s (%d SMs)%s\n", prop.name, g_sms,
         g_hopper ? "" : ": not Hopper, v1 only");
  if (cublasCreate(&g_blas) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublasCreate failed\n");
    return 1;
  }
  /* every kernel that raises flags is loaded before any GEMM waits on it (xs_gemm_preload: a
   * lazily loaded kernel's first launch can wait for the waiting GEMM to end) */
  XT_CHECK(xs_gemm_preload() == XS_OK);
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, (const void*)feeder));
  XT_RUN(test_ready_arguments);
  XT_RUN(test_timeout);
  XT_RUN(test_feeder);
  XT_RUN(test_chain);
  XT_RUN(test_chain_overlap);
  cublasDestroy(g_blas);
  return XT_END();
}
