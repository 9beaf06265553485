/* gemm_remote.cu — the GEMM engine's epilogue hook storing every tile to another GPU (NVLink,
 * peer access) or to host-mapped memory (PCIe), beside the plain epilogue, and held against the
 * X-Stage model's prediction for the same fused schedule.
 *
 * Per shape (M, N, K), interleaved rounds of four variants of the same AUTO GEMM:
 *   plain        tiles stored into local C (TMA store)
 *   hook hbm     tiles stored through the destination map into a second local region
 *   hook remote  tiles stored through the map into the target (peer HBM or host-mapped memory)
 *   hook +flags  the same with a per-tile flag raised on the target (release, system scope)
 * Correctness first: the target is poisoned (bf16 NaN) before the checked run; the remote
 * output must equal plain's bit for bit (same kernel, same arithmetic), and 512 random elements
 * of plain's are checked against an fp64 CPU dot product (bf16 tolerance).
 * Then: hook overhead (median over rounds of remote / plain), the store rate (output bytes /
 * remote time) against the copy engine (cudaMemcpyPeer or D2H cudaMemcpy, same process) and
 * against R of a link profile, and the model's fused-time prediction (xs_predict_fusion: K =
 * persistent CTAs, one tile per burst, the gap = plain time per tile) beside the measured one.
 *
 * Run:  build/bench_gemm_remote [--target peer:1|host] [--profile P.json] [--reps 10]
 *       [--shapes MxNxK,...]       (exit 77: SKIPPED when the target does not exist)
 */
#include "xstage/xstage.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "gemm_remote: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,                      \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CX(x)                                                                                      \
  do {                                                                                             \
    xs_result r_ = (x);                                                                            \
    if (r_ != XS_OK) {                                                                             \
      fprintf(stderr, "gemm_remote: %s:%d: %s: %s: %s\n", __FILE__, __LINE__, #x, xs_strerror(r_), \
              xs_last_error());                                                                    \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static uint16_t f2bf(float f) { /* round to nearest even */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint32_t rng(uint64_t* s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}
static int cmp_d(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct shape {
  int M, N, K;
} shape;

enum { PLAIN, HOOK_HBM, HOOK_REMOTE, HOOK_FLAGS, NVAR };

int main(int argc, char** argv) {
  const char* target = "peer:1";
  const char* profile_path = NULL;
  const char* shapes_arg = "8192x8192x8192,8192x8192x2048,8192x8192x512,4096x7168x2048";
  int reps = 10;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--target") && i + 1 < argc)
      target = argv[++i];
    else if (!strcmp(argv[i], "--profile") && i + 1 < argc)
      profile_path = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
      shapes_arg = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--target peer:N|host] [--profile P.json] [--reps R] [--shapes "
              "MxNxK,...]\n",
              argv[0]);
      return 2;
    }
  }
  if (reps < 3 || reps > 100) {
    fprintf(stderr, "gemm_remote: --reps must be in [3, 100] (got %d)\n", reps);
    return 2;
  }
  shape shapes[16];
  int nshapes = 0;
  for (const char* p = shapes_arg; *p && nshapes < 16;) {
    shape s;
    int used = 0;
    if (sscanf(p, "%dx%dx%d%n", &s.M, &s.N, &s.K, &used) != 3 || s.M < 1 || s.N < 8 || s.K < 8 ||
        s.N % 8 || s.K % 8) {
      fprintf(stderr, "gemm_remote: --shapes: bad entry at '%s' (MxNxK, N and K multiples of 8)\n",
              p);
      return 2;
    }
    shapes[nshapes++] = s;
    p += used;
    if (*p == ',') p++;
  }
  int host = !strcmp(target, "host"), peer = -1, ngpu = 0;
  if (!host && (sscanf(target, "peer:%d", &peer) != 1 || peer < 0)) {
    fprintf(stderr, "gemm_remote: --target: expected host or peer:N (got '%s')\n", target);
    return 2;
  }
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
    printf("SKIPPED: no CUDA GPU\n");
    return 77;
  }
  if (!host) {
    int can = 0;
    if (peer == 0 || peer >= ngpu) {
      printf("SKIPPED: target peer:%d needs another GPU (this machine has %d)\n", peer, ngpu);
      return 77;
    }
    CK(cudaDeviceCanAccessPeer(&can, 0, peer));
    if (!can) {
      printf("SKIPPED: device 0 cannot access peer %d\n", peer);
      return 77;
    }
    CK(cudaSetDevice(0));
    cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
    cudaGetLastError();
  }
  CK(cudaSetDevice(0));
  xs_link_profile prof;
  if (profile_path)
    CX(xs_profile_read(&prof, profile_path));
  else
    CX(xs_profile_default(&prof, host ? "h200-host" : "h200-nvlink"));
  /* the copy engine's rate to the same target, this process */
  double ce_out = 0, ce_in = 0;
  if (host) {
    CX(xs_memcpy_bandwidth(&ce_out, &ce_in, 0, 0, 5));
  } else {
    int peers[1] = {peer};
    CX(xs_memcpy_peer_bandwidth(&ce_out, &ce_in, 0, peers, 1, 0, 5));
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  printf("# gemm_remote: target %s, profile %s (%s, R %.1f GB/s), copy engine %.1f GB/s "
         "(%s), %d SMs, %d rounds\n",
         target, prof.transport, profile_path ? profile_path : "embedded", prof.R, ce_out,
         host ? "cudaMemcpy D2H" : "cudaMemcpyPeer", sms, reps);
  printf("%-20s %-4s %6s %10s %10s %10s %10s %8s %8s %9s %7s %10s %7s %10s %7s %10s %7s %s\n",
         "shape", "ver", "tiles", "plain us", "hbm us", "remote us", "+flags us", "over %",
         "flags %", "rate GB/s", "/ R", "model us", "meas/mod", "spread us", "meas/spr",
         "coupled us", "meas/cpl", "check");
  int failures = 0;
  for (int si = 0; si < nshapes; si++) {
    const int M = shapes[si].M, N = shapes[si].N, K = shapes[si].K;
    size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
    uint16_t* hA = (uint16_t*)malloc(na * 2);
    uint16_t* hB = (uint16_t*)malloc(nb * 2);
    uint16_t* hC = (uint16_t*)malloc(nc * 2);
    uint16_t* hR = (uint16_t*)malloc(nc * 2);
    if (!hA || !hB || !hC || !hR) {
      fprintf(stderr, "gemm_remote: out of host memory for %dx%dx%d\n", M, N, K);
      return 1;
    }
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)si;
    for (size_t i = 0; i < na; i++)
      hA[i] = f2bf(((float)(rng(&seed) & 0xffff) / 65536.0f - 0.5f));
    for (size_t i = 0; i < nb; i++)
      hB[i] = f2bf(((float)(rng(&seed) & 0xffff) / 65536.0f - 0.5f));
    void *A, *B, *C, *C2, *R = NULL, *Rh = NULL;
    CK(cudaMalloc(&A, na * 2));
    CK(cudaMalloc(&B, nb * 2));
    CK(cudaMalloc(&C, nc * 2));
    CK(cudaMalloc(&C2, nc * 2));
    CK(cudaMemcpy(A, hA, na * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(B, hB, nb * 2, cudaMemcpyHostToDevice));
    xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
    a.M = M, a.N = N, a.K = K, a.A = A, a.B = B, a.C = C;
    xs_gemm_tiling t;
    CX(xs_gemm_tiles(&t, &a, XS_GEMM_ACT_NONE));
    a.version = t.version; /* every variant runs the same kernel */
    /* the remote output and flags: peer HBM, or mapped pinned host memory */
    size_t rbytes = nc * 2 + (size_t)t.count * 4 + 256;
    if (host) {
      CK(cudaHostAlloc(&Rh, rbytes, cudaHostAllocMapped | cudaHostAllocPortable));
      CK(cudaHostGetDevicePointer(&R, Rh, 0));
    } else {
      CK(cudaSetDevice(peer));
      CK(cudaMalloc(&R, rbytes));
      CK(cudaSetDevice(0));
    }
    uint32_t* flags = (uint32_t*)((char*)R + ((nc * 2 + 255) / 256) * 256);
    xs_gemm_tile_dst* hmap = (xs_gemm_tile_dst*)malloc(sizeof *hmap * 2 * (size_t)t.count);
    for (int i = 0; i < t.count; i++) {
      int mb = i / t.n_blocks, nb_ = i % t.n_blocks;
      int64_t off = (int64_t)mb * t.tile_m * N + (int64_t)nb_ * t.tile_n;
      hmap[i].base = (uint16_t*)C2 + off, hmap[i].ld = N;
      hmap[t.count + i].base = (uint16_t*)R + off, hmap[t.count + i].ld = N;
    }
    xs_gemm_tile_dst* dmap = NULL;
    CK(cudaMalloc((void**)&dmap, sizeof *hmap * 2 * (size_t)t.count));
    CK(cudaMemcpy(dmap, hmap, sizeof *hmap * 2 * (size_t)t.count, cudaMemcpyHostToDevice));
    xs_gemm_epilogue epi[NVAR];
    for (int v = 0; v < NVAR; v++)
      epi[v] = (xs_gemm_epilogue)XS_GEMM_EPILOGUE_INITIALIZER;
    epi[HOOK_HBM].store = XS_GEMM_STORE_MAP, epi[HOOK_HBM].dst_map = dmap;
    epi[HOOK_REMOTE].store = XS_GEMM_STORE_MAP, epi[HOOK_REMOTE].dst_map = dmap + t.count;
    epi[HOOK_FLAGS] = epi[HOOK_REMOTE], epi[HOOK_FLAGS].tile_flags = flags;
    xs_gemm_schedule sch = XS_GEMM_SCHEDULE_INITIALIZER;

    /* 1. correctness: poison, run plain and remote(+flags), compare */
    CK(cudaMemset(C, 0xff, nc * 2));
    if (host)
      memset(Rh, 0xff, rbytes);
    else
      CK(cudaMemset(R, 0xff, nc * 2));
    if (host)
      memset((char*)Rh + ((char*)flags - (char*)R), 0, (size_t)t.count * 4);
    else
      CK(cudaMemset(flags, 0, (size_t)t.count * 4));
    CK(cudaDeviceSynchronize());
    CX(xs_gemm_run(&a, epi[PLAIN], sch, NULL));
    CX(xs_gemm_run(&a, epi[HOOK_FLAGS], sch, NULL));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hC, C, nc * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hR, R, nc * 2, cudaMemcpyDefault));
    uint32_t* hf = (uint32_t*)malloc((size_t)t.count * 4);
    CK(cudaMemcpy(hf, flags, (size_t)t.count * 4, cudaMemcpyDefault));
    long diff = 0, badflag = 0, badref = 0, nan = 0;
    for (size_t i = 0; i < nc; i++) {
      diff += hC[i] != hR[i];
      nan += isnan(bf2f(hC[i]));
    }
    for (int i = 0; i < t.count; i++)
      badflag += hf[i] != 1u;
    double worst = 0;
    for (int s = 0; s < 512; s++) {
      int r = (int)(rng(&seed) % (uint32_t)M), c = (int)(rng(&seed) % (uint32_t)N);
      double ref = 0, mag = 0;
      for (int k = 0; k < K; k++) {
        double x = (double)bf2f(hA[(size_t)r * K + k]) * bf2f(hB[(size_t)c * K + k]);
        ref += x, mag += fabs(x);
      }
      double err = fabs(bf2f(hC[(size_t)r * N + c]) - ref) / (mag > 1e-6 ? mag : 1e-6);
      worst = err > worst ? err : worst;
      badref += err > 1.6e-2 || !isfinite(bf2f(hC[(size_t)r * N + c]));
    }
    int ok = !diff && !badflag && !badref && !nan;
    failures += !ok;

    /* 2. timing: interleaved rounds, 3 launches per sample after a warm-up of each */
    double tm[NVAR][100];
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int v = 0; v < NVAR; v++)
      CX(xs_gemm_run(&a, epi[v], sch, NULL));
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < reps; r++)
      for (int v = 0; v < NVAR; v++) {
        float ms = 0;
        CK(cudaEventRecord(e0, 0));
        for (int j = 0; j < 3; j++)
          CX(xs_gemm_run(&a, epi[v], sch, NULL));
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        tm[v][r] = ms * 1e3 / 3.0;
      }
    double ratio[100], fratio[100], med[NVAR];
    for (int r = 0; r < reps; r++)
      ratio[r] = tm[HOOK_REMOTE][r] / tm[PLAIN][r], fratio[r] = tm[HOOK_FLAGS][r] / tm[PLAIN][r];
    for (int v = 0; v < NVAR; v++)
      med[v] = median(tm[v], reps);
    double over = 100.0 * (median(ratio, reps) - 1.0);
    double fover = 100.0 * (median(fratio, reps) - 1.0);
    double rate = (double)nc * 2 / (med[HOOK_REMOTE] * 1e3); /* bytes/ns = GB/s */
    /* 3. the model: K producers = persistent CTAs, each tile one burst, gap = compute per tile */
    int ctas = t.count < sms ? t.count : sms;
    long per = (t.count + ctas - 1) / ctas;
    xs_workload w = XS_WORKLOAD_INITIALIZER;
    snprintf(w.name, sizeof w.name, "gemm %dx%dx%d", M, N, K);
    snprintf(w.kind, sizeof w.kind, "tp");
    w.K = ctas;
    w.bytes_per_tile = (double)t.tile_m * t.tile_n * 2;
    w.compute_ns_per_tile = med[PLAIN] * 1e3 / (double)per;
    w.tiles_per_producer = per;
    xs_fusion_prediction fp;
    double model_us = NAN, spread_us = NAN, coupled_us = NAN;
    if (xs_predict_fusion(&fp, &prof, &w) == XS_OK)
      /* the kernel ends when its stores have landed: + the stage's drain (since session 19) */
      model_us = (fp.fused_ns + fp.drain_ns) / 1e3,
      spread_us = (fp.fused_spread_ns + fp.drain_ns) / 1e3,
      coupled_us = (fp.fused_coupled_ns + fp.drain_coupled_ns) / 1e3;
    char nm[32];
    snprintf(nm, sizeof nm, "%dx%dx%d", M, N, K);
    printf("%-20s v%-3d %6d %10.1f %10.1f %10.1f %10.1f %+8.1f %+8.1f %9.1f %7.3f %10.1f %7.3f "
           "%10.1f %7.3f %10.1f %7.3f %s\n",
           nm, (int)t.version, t.count, med[PLAIN], med[HOOK_HBM], med[HOOK_REMOTE],
           med[HOOK_FLAGS], over, fover, rate, rate / prof.R, model_us, med[HOOK_REMOTE] / model_us,
           spread_us, med[HOOK_REMOTE] / spread_us, coupled_us, med[HOOK_REMOTE] / coupled_us,
           ok ? "ok" : "FAIL");
    if (!ok)
      printf("#   FAIL %s: %ld elements differ from plain, %ld flags != 1, %ld of 512 off the fp64 "
             "reference (worst %.2e), %ld NaN in plain\n",
             nm, diff, badflag, badref, worst, nan);
    fflush(stdout);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(dmap));
    if (host) {
      CK(cudaFreeHost(Rh));
    } else {
      CK(cudaSetDevice(peer));
      CK(cudaFree(R));
      CK(cudaSetDevice(0));
    }
    CK(cudaFree(A));
    CK(cudaFree(B));
    CK(cudaFree(C));
    CK(cudaFree(C2));
    free(hmap), free(hf), free(hA), free(hB), free(hC), free(hR);
  }
  printf("# over %% = median over rounds of (remote / plain) - 1; rate = output bytes / remote "
         "time; / R against the profile; model = xs_predict_fusion(K = CTAs, a tile per burst, "
         "gap = plain time per tile): every CTA storing each tile at once (lockstep, the upper "
         "bound); spread = its fused_spread_ns, the CTAs' tile ends spread out after the first "
         "tile (the lower bound); both + drain_ns, the stage's content draining after the last "
         "issue (a kernel ends when its stores have landed; not added before session 19); "
         "coupled = fused_coupled_ns + drain_coupled_ns, the prediction for compute that reads "
         "memory (a CTA's next tile only once its stores drained; docs/model.md section 10)\n");
  printf("%s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
