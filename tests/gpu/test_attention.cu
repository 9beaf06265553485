/* test_attention.cu — every attention version against an fp32 reference.
 *
 * References: a CPU one in double precision for small shapes, and a simple GPU one (one thread
 * per query row, two passes: exact max, then exp/sum/accumulate in fp32) for large shapes.
 * Inputs: random bf16, including large-magnitude q/k (logits in the tens) that stress the
 * online softmax. Shapes: S and Skv in {1, 63, 129, 4608 + 77, ...}, d = 64 and 128, causal and
 * not. O and LSE are poisoned with NaN first and every element is checked; the epilogue hook is
 * checked too: a 3-destination map with a head offset, with and without per-tile flags, in a
 * shuffled and in the default tile order (bitwise equal to the plain epilogue, nothing written
 * outside the map, every flag raised or none written), one destination in host-mapped memory.
 * Causal shapes with more tiles than a 132-SM grid cover version 2's snake order. Skips (exit
 * 77) without a GPU.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "test.h"
#include "xstage/xstage.h"

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "  CUDA %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                         \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

typedef struct shape {
  int B, H, S, Skv, d, causal;
  float amp; /* inputs uniform in [-amp, amp] */
} shape;

static int g_have_v2 = 0;

static uint16_t f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* CPU reference, double precision. o: [B, S, H, d], lse: [B, H, S]. */
static void attention_ref(std::vector<float>& o, std::vector<float>& lse, const shape& s,
                          const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                          const std::vector<uint16_t>& v) {
  int d = s.d;
  double scale = 1.0 / sqrt((double)d);
  std::vector<double> sc(s.Skv), acc(d);
  for (int b = 0; b < s.B; b++)
    for (int h = 0; h < s.H; h++)
      for (int i = 0; i < s.S; i++) {
        const uint16_t* qr = &q[(((size_t)b * s.S + i) * s.H + h) * d];
        double mx = -INFINITY;
        int nvis = s.causal ? (i + 1 < s.Skv ? i + 1 : s.Skv) : s.Skv;
        for (int j = 0; j < nvis; j++) {
          const uint16_t* kr = &k[(((size_t)b * s.Skv + j) * s.H + h) * d];
          double dot = 0;
          for (int c = 0; c < d; c++)
            dot += (double)bf2f(qr[c]) * bf2f(kr[c]);
          sc[j] = dot * scale;
          if (sc[j] > mx) mx = sc[j];
        }
        double sum = 0;
        for (int c = 0; c < d; c++)
          acc[c] = 0;
        for (int j = 0; j < nvis; j++) {
          double p = exp(sc[j] - mx);
          sum += p;
          const uint16_t* vr = &v[(((size_t)b * s.Skv + j) * s.H + h) * d];
          for (int c = 0; c < d; c++)
            acc[c] += p * bf2f(vr[c]);
        }
        for (int c = 0; c < d; c++)
          o[(((size_t)b * s.S + i) * s.H + h) * d + c] = (float)(acc[c] / sum);
        lse[((size_t)b * s.H + h) * s.S + i] = (float)(mx + log(sum));
      }
}

/* GPU reference: one thread per (b, h, row); exact max first, then one fp32 pass. */
__global__ void attention_ref_kernel(const uint16_t* q, const uint16_t* k, const uint16_t* v,
                                     float* o, float* lse, int B, int H, int S, int Skv, int d,
                                     int causal, float scale) {
  int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (int64_t)B * H * S) return;
  int i = (int)(idx % S), bh = (int)(idx / S), b = bh / H, h = bh % H;
  float qr[128], acc[128];
  for (int c = 0; c < d; c++)
    qr[c] = __uint_as_float((uint32_t)q[(((int64_t)b * S + i) * H + h) * d + c] << 16);
  int nvis = causal ? min(i + 1, Skv) : Skv;
  float mx = -INFINITY;
  for (int j = 0; j < nvis; j++) {
    const uint16_t* kr = k + (((int64_t)b * Skv + j) * H + h) * d;
    float dot = 0;
    for (int c = 0; c < d; c++)
      dot = fmaf(qr[c], __uint_as_float((uint32_t)kr[c] << 16), dot);
    mx = fmaxf(mx, dot * scale);
  }
  for (int c = 0; c < d; c++)
    acc[c] = 0;
  double sum = 0;
  for (int j = 0; j < nvis; j++) {
    const uint16_t* kr = k + (((int64_t)b * Skv + j) * H + h) * d;
    const uint16_t* vr = v + (((int64_t)b * Skv + j) * H + h) * d;
    float dot = 0;
    for (int c = 0; c < d; c++)
      dot = fmaf(qr[c], __uint_as_float((uint32_t)kr[c] << 16), dot);
    float p = expf(dot * scale - mx);
    sum += p;
    for (int c = 0; c < d; c++)
      acc[c] = fmaf(p, __uint_as_float((uint32_t)vr[c] << 16), acc[c]);
  }
  for (int c = 0; c < d; c++)
    o[(((int64_t)b * S + i) * H + h) * d + c] = (float)(acc[c] / sum);
  lse[((int64_t)b * H + h) * S + i] = mx + (float)log(sum);
}

/* Device inputs and the reference of one shape. */
typedef struct problem {
  shape s;
  size_t nq, nkv, nlse;
  uint16_t *dq, *dk, *dv;
  std::vector<float> ref_o, ref_lse;
} problem;

static void problem_make(problem* P, const shape& s, unsigned long long seed, int gpu_ref) {
  P->s = s;
  P->nq = (size_t)s.B * s.S * s.H * s.d;
  P->nkv = (size_t)s.B * s.Skv * s.H * s.d;
  P->nlse = (size_t)s.B * s.H * s.S;
  std::vector<uint16_t> q(P->nq), k(P->nkv), v(P->nkv);
  for (size_t i = 0; i < P->nq; i++)
    q[i] = f2bf((float)(s.amp * (2 * xt_rand_uniform(&seed) - 1)));
  for (size_t i = 0; i < P->nkv; i++)
    k[i] = f2bf((float)(s.amp * (2 * xt_rand_uniform(&seed) - 1)));
  for (size_t i = 0; i < P->nkv; i++)
    v[i] = f2bf((float)(2 * xt_rand_uniform(&seed) - 1));
  CK(cudaMalloc(&P->dq, P->nq * 2));
  CK(cudaMalloc(&P->dk, P->nkv * 2));
  CK(cudaMalloc(&P->dv, P->nkv * 2));
  CK(cudaMemcpy(P->dq, q.data(), P->nq * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(P->dk, k.data(), P->nkv * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(P->dv, v.data(), P->nkv * 2, cudaMemcpyHostToDevice));
  P->ref_o.resize(P->nq);
  P->ref_lse.resize(P->nlse);
  if (!gpu_ref) {
    attention_ref(P->ref_o, P->ref_lse, s, q, k, v);
    return;
  }
  float *ro, *rl;
  CK(cudaMalloc(&ro, P->nq * 4));
  CK(cudaMalloc(&rl, P->nlse * 4));
  int64_t rows = (int64_t)s.B * s.H * s.S;
  attention_ref_kernel<<<(unsigned)((rows + 127) / 128), 128>>>(
      P->dq, P->dk, P->dv, ro, rl, s.B, s.H, s.S, s.Skv, s.d, s.causal, 1.0f / sqrtf((float)s.d));
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(P->ref_o.data(), ro, P->nq * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(P->ref_lse.data(), rl, P->nlse * 4, cudaMemcpyDeviceToHost));
  CK(cudaFree(ro));
  CK(cudaFree(rl));
}

static void problem_free(problem* P) {
  cudaFree(P->dq);
  cudaFree(P->dk);
  cudaFree(P->dv);
}

static xs_attn_args args_for(const problem* P, int version, void* o, float* lse) {
  xs_attn_args a = XS_ATTN_ARGS_INITIALIZER;
  a.B = P->s.B;
  a.H = P->s.H;
  a.S = P->s.S;
  a.Skv = P->s.Skv;
  a.head_dim = P->s.d;
  a.causal = P->s.causal;
  a.q = P->dq;
  a.k = P->dk;
  a.v = P->dv;
  a.o = o;
  a.lse = lse;
  a.version = version;
  return a;
}

/* Runs one version with poisoned outputs and checks every element of O and LSE. */
static void check_version(const problem* P, int version) {
  const shape& s = P->s;
  uint16_t* o;
  float* lse;
  CK(cudaMalloc(&o, P->nq * 2));
  CK(cudaMalloc(&lse, P->nlse * 4));
  CK(cudaMemset(o, 0xFF, P->nq * 2)); /* bf16 0xFFFF and fp32 0xFFFFFFFF are NaN */
  CK(cudaMemset(lse, 0xFF, P->nlse * 4));
  xs_attn_args a = args_for(P, version, o, lse);
  xs_result r = xs_attention_forward(&a);
  XT_CHECK_MSG(r == XS_OK, "v%d: %s: %s", version, xs_strerror(r), xs_last_error());
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> ho(P->nq);
  std::vector<float> hl(P->nlse);
  CK(cudaMemcpy(ho.data(), o, P->nq * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hl.data(), lse, P->nlse * 4, cudaMemcpyDeviceToHost));
  size_t bad = 0, nan = 0, bad_l = 0;
  double max_err = 0, max_err_l = 0;
  for (size_t i = 0; i < P->nq; i++) {
    float got = bf2f(ho[i]), want = P->ref_o[i];
    double err = fabs((double)got - want);
    if (isnan(got)) nan++;
    if (!(err <= 6e-3 + 2e-2 * fabs(want))) {
      if (bad < 5) {
        size_t c = i % s.d, h = (i / s.d) % s.H, t = (i / s.d / s.H) % s.S, b = i / s.d / s.H / s.S;
        fprintf(stderr, "    v%d O[b=%zu,s=%zu,h=%zu,c=%zu] = %g, ref %g\n", version, b, t, h, c,
                got, want);
      }
      bad++;
    }
    if (err > max_err || isnan(got)) max_err = isnan(got) ? INFINITY : err;
  }
  for (size_t i = 0; i < P->nlse; i++) {
    double err = fabs((double)hl[i] - P->ref_lse[i]);
    if (!(err <= 2e-3 + 1e-4 * fabs(P->ref_lse[i]))) {
      if (bad_l < 5)
        fprintf(stderr, "    v%d LSE[%zu] (row %zu) = %g, ref %g\n", version, i, i % s.S, hl[i],
                P->ref_lse[i]);
      bad_l++;
    }
    if (err > max_err_l || isnan(hl[i])) max_err_l = isnan(hl[i]) ? INFINITY : err;
  }
  printf("  v%d B=%d H=%d S=%d Skv=%d d=%d causal=%d amp=%g: O max err %.3g (%zu bad, %zu NaN of "
         "%zu), LSE max err %.3g (%zu bad)\n",
         version, s.B, s.H, s.S, s.Skv, s.d, s.causal, s.amp, max_err, bad, nan, P->nq, max_err_l,
         bad_l);
  XT_CHECK_MSG(bad == 0 && bad_l == 0, "v%d: %zu O and %zu LSE elements out of tolerance", version,
               bad, bad_l);
  CK(cudaFree(o));
  CK(cudaFree(lse));
}

static void run_shapes(const shape* list, int n, int gpu_ref) {
  for (int i = 0; i < n; i++) {
    problem P;
    problem_make(&P, list[i], 0x9E3779B97F4A7C15ull + 7919ull * i, gpu_ref);
    check_version(&P, 1);
    if (g_have_v2) check_version(&P, 2);
    problem_free(&P);
  }
}

static void test_small_shapes(void) {
  static const shape list[] = {
      {1, 1, 1, 1, 64, 0, 1},     {1, 2, 63, 63, 128, 0, 1},   {2, 3, 129, 63, 64, 1, 1},
      {1, 2, 63, 129, 128, 1, 1}, {1, 2, 200, 333, 128, 0, 8}, {2, 2, 257, 257, 64, 1, 8},
      {1, 1, 130, 1, 128, 0, 1},  {1, 3, 1, 300, 64, 0, 4},    {1, 1, 129, 129, 128, 1, 16},
  };
  run_shapes(list, (int)(sizeof list / sizeof list[0]), 0);
}

/* The last two are causal with more tiles than a 132-SM grid: version 2's snake order with a
 * partial reversed round (222 tiles) and a partial forward one (296 tiles). */
static void test_large_shapes(void) {
  static const shape list[] = {
      {1, 2, 4685, 4685, 128, 0, 1}, {1, 2, 4685, 4685, 128, 1, 1}, {1, 3, 4685, 4685, 64, 0, 8},
      {2, 1, 1000, 4685, 128, 1, 4}, {1, 1, 4685, 77, 64, 1, 1},    {1, 6, 4685, 4685, 128, 1, 1},
      {2, 4, 4685, 4685, 64, 1, 1},
  };
  run_shapes(list, (int)(sizeof list / sizeof list[0]), 1);
}

/* Epilogue hook: a map over 3 destinations [B, tpd, H + 2, d] (head offset 1), the last one
 * host-mapped; with per-tile flags or without (version 2 has a separate flag publisher), with a
 * shuffled tile order or the default one (causal: version 2's longest-first snake). Must equal
 * the plain epilogue bit for bit, raise every flag, and leave everything outside the map
 * poisoned. */
static void check_hook(int version, int with_flags, int shuffled, int trickle, shape s) {
  problem P;
  problem_make(&P, s, 12345, 0);
  int tpd = (s.S + 2) / 3, Ht = s.H + 2;
  size_t per = (size_t)s.B * tpd * Ht * s.d;
  uint16_t *o, *dst[3], *host = NULL;
  CK(cudaMalloc(&o, P.nq * 2));
  CK(cudaMemset(o, 0xFF, P.nq * 2));
  for (int i = 0; i < 2; i++) {
    CK(cudaMalloc(&dst[i], per * 2));
    CK(cudaMemset(dst[i], 0xFF, per * 2));
  }
  CK(cudaHostAlloc((void**)&host, per * 2, cudaHostAllocMapped));
  memset(host, 0xFF, per * 2);
  CK(cudaHostGetDevicePointer((void**)&dst[2], host, 0));
  xs_attn_args a = args_for(&P, version, o, NULL);
  CK(cudaDeviceSynchronize());
  XT_CHECK(xs_attention_forward(&a) == XS_OK);
  int64_t nt = 0;
  XT_CHECK(xs_attention_num_tiles(&nt, &a) == XS_OK);
  std::vector<int32_t> order(nt);
  unsigned long long seed = 99 + (unsigned long long)with_flags;
  for (int64_t i = 0; i < nt; i++)
    order[i] = (int32_t)i;
  for (int64_t i = nt - 1; i > 0; i--) {
    int64_t j = (int64_t)(xt_rand_u64(&seed) % (unsigned long long)(i + 1));
    int32_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  int32_t* dorder;
  uint32_t* dflags;
  CK(cudaMalloc(&dorder, nt * 4));
  CK(cudaMalloc(&dflags, nt * 4));
  CK(cudaMemcpy(dorder, order.data(), nt * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dflags, 0, nt * 4));
  a.o = NULL;
  a.epilogue.num_dst = 3;
  for (int i = 0; i < 3; i++)
    a.epilogue.dst[i] = dst[i];
  a.epilogue.tokens_per_dst = tpd;
  a.epilogue.head_offset = 1;
  a.epilogue.stride_b = (int64_t)tpd * Ht * s.d;
  a.epilogue.stride_s = (int64_t)Ht * s.d;
  a.epilogue.stride_h = s.d;
  a.epilogue.tile_flags = with_flags ? dflags : NULL;
  a.epilogue.flag_value = 7;
  a.epilogue.tile_order = shuffled ? dorder : NULL;
  a.epilogue.trickle = trickle;
  xs_result r = xs_attention_forward(&a);
  XT_CHECK_MSG(r == XS_OK, "v%d hook: %s: %s", version, xs_strerror(r), xs_last_error());
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> ho(P.nq), hd[3];
  CK(cudaMemcpy(ho.data(), o, P.nq * 2, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 2; i++) {
    hd[i].resize(per);
    CK(cudaMemcpy(hd[i].data(), dst[i], per * 2, cudaMemcpyDeviceToHost));
  }
  hd[2].assign(host, host + per);
  std::vector<uint32_t> flags(nt);
  CK(cudaMemcpy(flags.data(), dflags, nt * 4, cudaMemcpyDeviceToHost));
  size_t mismatch = 0, stray = 0, unset = 0, covered = 0;
  for (int b = 0; b < s.B; b++)
    for (int t = 0; t < s.S; t++)
      for (int h = 0; h < s.H; h++)
        for (int c = 0; c < s.d; c++) {
          uint16_t want = ho[(((size_t)b * s.S + t) * s.H + h) * s.d + c];
          uint16_t got = hd[t / tpd][(((size_t)b * tpd + t % tpd) * Ht + h + 1) * s.d + c];
          if (want != got) mismatch++;
        }
  for (int i = 0; i < 3; i++)
    for (size_t e = 0; e < per; e++) {
      size_t h = (e / s.d) % Ht, t = (e / s.d / Ht) % tpd;
      int inside = h >= 1 && h <= (size_t)s.H && (size_t)i * tpd + t < (size_t)s.S;
      covered += inside;
      if (!inside && hd[i][e] != 0xFFFF) stray++;
    }
  for (int64_t i = 0; i < nt; i++)
    unset += flags[i] != (with_flags ? 7u : 0u);
  printf("  v%d hook (%s, %s order%s; B=%d H=%d S=%d Skv=%d d=%d%s): %lld tiles, %zu of %zu "
         "mapped elements differ from the plain epilogue, %zu stray writes, %zu flags %s\n",
         version, with_flags ? "flags" : "no flags", shuffled ? "shuffled" : "default",
         trickle ? ", trickled" : "", s.B, s.H, s.S, s.Skv, s.d, s.causal ? " causal" : "",
         (long long)nt, mismatch, covered, stray, unset, with_flags ? "not raised" : "written");
  XT_CHECK(mismatch == 0 && stray == 0 && unset == 0);
  cudaFree(o);
  cudaFree(dst[0]);
  cudaFree(dst[1]);
  cudaFreeHost(host);
  cudaFree(dorder);
  cudaFree(dflags);
  problem_free(&P);
}

static void test_hook(void) {
  const shape small = {2, 3, 300, 257, 128, 1, 4};
  for (int v = 1; v <= (g_have_v2 ? 2 : 1); v++) {
    check_hook(v, 1, 1, 0, small);
    check_hook(v, 0, 0, 0, small);
    check_hook(v, 1, 0, 0, small);
  }
}

/* Trickled epilogue (epilogue.trickle, version 2): more tiles than CTAs, so most tiles go out
 * piece by piece under the next one; key/value blocks fewer than the passes (the flush before
 * the next epilogue) and more; shards whose boundaries cut a warpgroup's 64 rows (stored at
 * once); d = 64 and 128, causal and not, shuffled order; with flags it is refused. Bit for bit
 * the plain epilogue. */
static void test_trickle(void) {
  if (!g_have_v2) {
    printf("  trickle: version 2 needs cc 9.0; not run on this GPU\n");
    return;
  }
  const shape list[] = {
      {1, 8, 4685, 300, 128, 0, 4},
      {1, 8, 4685, 2000, 128, 0, 4},
      {2, 5, 3000, 3000, 64, 1, 4},
      {1, 6, 4685, 1100, 64, 0, 4},
  };
  for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
    check_hook(2, 0, (int)(i & 1), 1, list[i]);
  xs_attn_args a = XS_ATTN_ARGS_INITIALIZER;
  a.q = a.k = a.v = (void*)(uintptr_t)256;
  a.B = a.H = 1, a.S = a.Skv = 128, a.head_dim = 128;
  a.epilogue.trickle = 1; /* no map */
  a.o = (void*)(uintptr_t)256;
  XT_EQ_INT(xs_attention_forward(&a), XS_ERR_UNSUPPORTED);
  a.epilogue.num_dst = 1, a.epilogue.dst[0] = (void*)(uintptr_t)256,
  a.epilogue.tokens_per_dst = 128;
  a.epilogue.tile_flags = (uint32_t*)(uintptr_t)256; /* flags */
  XT_EQ_INT(xs_attention_forward(&a), XS_ERR_UNSUPPORTED);
  a.epilogue.trickle = 2;
  XT_EQ_INT(xs_attention_forward(&a), XS_ERR_INVALID_ARG);
}

static void test_args(void) {
  xs_attn_args a = XS_ATTN_ARGS_INITIALIZER;
  XT_CHECK(xs_attention_forward(NULL) == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_attention_forward(&a) == XS_ERR_INVALID_ARG); /* q, k, v NULL */
  a.q = a.k = a.v = a.o = (void*)(uintptr_t)256;
  a.head_dim = 96;
  XT_CHECK(xs_attention_forward(&a) == XS_ERR_INVALID_ARG);
  a.head_dim = 64;
  a.epilogue.num_dst = 2;
  a.epilogue.dst[0] = a.epilogue.dst[1] = (void*)(uintptr_t)256;
  a.S = 100;
  a.epilogue.tokens_per_dst = 49; /* 2 * 49 < 100 */
  XT_CHECK(xs_attention_forward(&a) == XS_ERR_INVALID_ARG);
  int64_t nt = 0;
  a.B = 2;
  a.H = 3;
  a.S = 129;
  XT_CHECK(xs_attention_num_tiles(&nt, &a) == XS_OK);
  XT_EQ_INT(nt, 2 * 3 * 2);
}

int main(void) {
  char name[256] = "";
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) XT_SKIP("no GPU");
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  snprintf(name, sizeof name, "%s", prop.name);
  g_have_v2 = prop.major == 9 && prop.minor == 0;
  printf("device %s (cc %d.%d, %d SMs): versions 1%s\n", name, prop.major, prop.minor,
         prop.multiProcessorCount, g_have_v2 ? " and 2" : " only (v2 needs cc 9.0)");
  XT_RUN(test_args);
  XT_RUN(test_small_shapes);
  XT_RUN(test_hook);
  XT_RUN(test_trickle);
  XT_RUN(test_large_shapes);
  return XT_END();
}
