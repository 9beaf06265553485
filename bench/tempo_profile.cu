/* tempo_profile.cu — measure TEMPO's expert-time profile t(G, N) on this GPU with cuBLAS.
 *
 * One MoE layer on one GPU = G activated experts, each with n rows: per expert a gate+up GEMM
 * [n x H] x [H x 2I] and a down GEMM [n x I] x [I x H], bf16 in, fp32 accumulate (the SiLU*mul
 * between them is left out: it is elementwise and small). Method "batched" issues each GEMM for
 * all G experts as one cublasGemmBatchedEx (the grouped-GEMM shape: equal n per expert); method
 * "loop" issues 2 cublasGemmEx per expert. Weights rotate over a pool larger than the L2 (60 MB)
 * so every rep streams them from HBM, as in serving.
 *
 * Output: CSV rows model,method,G,n,N,time_us (N = G*n rows; the n grid is 128-aligned above
 * 128, so N equals the tile-rounded rows there). Fit: xstage balance fit <csv> --model NAME.
 * Run:  build/bench_tempo_profile --out tempo_profile.csv [--model deepseek-v3|qwen3-235b|both]
 *       [--method batched|loop] [--G 1,2,4,8,16,32] [--n 1,8,32,...] [--reps 10]
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "tempo_profile: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,                    \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CB(x)                                                                                      \
  do {                                                                                             \
    cublasStatus_t s_ = (x);                                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      fprintf(stderr, "tempo_profile: %s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x,      \
              (int)s_);                                                                            \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static int parse_list(const char* s, int* out, int max) {
  int n = 0;
  while (*s && n < max) {
    out[n++] = atoi(s);
    const char* c = strchr(s, ',');
    if (!c) break;
    s = c + 1;
  }
  return n;
}

typedef struct model {
  const char* name;
  int H, I;
} model;

/* Pointer tables of one layer for the batched method: [0,G) A1, [G,2G) B1, [2G,3G) C1,
 * [3G,4G) A2, [4G,5G) B2, [5G,6G) C2, for weights of experts off .. off+G-1 (mod P). */
static void fill_table(void** t, const model* m, int G, int n, int off, int P, __nv_bfloat16* w1,
                       __nv_bfloat16* w2, __nv_bfloat16* x, __nv_bfloat16* y1, __nv_bfloat16* y2) {
  size_t w1n = (size_t)2 * m->I * m->H, w2n = (size_t)m->H * m->I;
  for (int j = 0; j < G; j++) {
    int e = (off + j) % P;
    t[j] = w1 + e * w1n;
    t[G + j] = x + (size_t)j * n * m->H;
    t[2 * G + j] = y1 + (size_t)j * n * 2 * m->I;
    t[3 * G + j] = w2 + e * w2n;
    t[4 * G + j] = y1 + (size_t)j * n * 2 * m->I;
    t[5 * G + j] = y2 + (size_t)j * n * m->H;
  }
}

/* One layer: G experts x n rows, pool offset `off` (weights of experts off .. off+G-1 mod P);
 * batched: dptr is this layer's pointer table on the device (fill_table). */
static void layer(cublasHandle_t h, const model* m, int batched, int G, int n, int off, int P,
                  __nv_bfloat16* w1, __nv_bfloat16* w2, __nv_bfloat16* x, __nv_bfloat16* y1,
                  __nv_bfloat16* y2, void** dptr) {
  const float one = 1.0f, zero = 0.0f;
  size_t w1n = (size_t)2 * m->I * m->H, w2n = (size_t)m->H * m->I;
  if (!batched) {
    for (int j = 0; j < G; j++) {
      int e = (off + j) % P;
      /* y1[j] (2I x n, col-major) = W1[e] (2I x H) * x[j] (H x n) */
      CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2 * m->I, n, m->H, &one, w1 + e * w1n,
                      CUDA_R_16BF, m->H, x + (size_t)j * n * m->H, CUDA_R_16BF, m->H, &zero,
                      y1 + (size_t)j * n * 2 * m->I, CUDA_R_16BF, 2 * m->I, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
      /* y2[j] (H x n) = W2[e] (H x I) * y1[j][:I] (I x n) */
      CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m->H, n, m->I, &one, w2 + e * w2n, CUDA_R_16BF,
                      m->I, y1 + (size_t)j * n * 2 * m->I, CUDA_R_16BF, 2 * m->I, &zero,
                      y2 + (size_t)j * n * m->H, CUDA_R_16BF, m->H, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
    }
    return;
  }
  CB(cublasGemmBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2 * m->I, n, m->H, &one,
                         (const void* const*)dptr, CUDA_R_16BF, m->H,
                         (const void* const*)(dptr + G), CUDA_R_16BF, m->H, &zero, dptr + 2 * G,
                         CUDA_R_16BF, 2 * m->I, G, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CB(cublasGemmBatchedEx(
      h, CUBLAS_OP_T, CUBLAS_OP_N, m->H, n, m->I, &one, (const void* const*)(dptr + 3 * G),
      CUDA_R_16BF, m->I, (const void* const*)(dptr + 4 * G), CUDA_R_16BF, 2 * m->I, &zero,
      dptr + 5 * G, CUDA_R_16BF, m->H, G, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

int main(int argc, char** argv) {
  const char* out = "tempo_profile.csv";
  const char* which = "both";
  const char* method = "batched";
  int Gs[16] = {1, 2, 4, 8, 16, 32}, nG = 6;
  int ns[32] = {1, 8, 32, 64, 96, 128, 192, 256, 384, 512, 1024, 2048}, nn = 12;
  int reps = 10;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf("usage: bench_tempo_profile [--out CSV] [--model deepseek-v3|qwen3-235b|both] "
             "[--method batched|loop] [--G list] [--n list] [--reps N]\n");
      return 0;
    }
    if (!v) {
      fprintf(stderr, "tempo_profile: option %s needs a value\n", a);
      return 2;
    }
    if (!strcmp(a, "--out"))
      out = v;
    else if (!strcmp(a, "--model"))
      which = v;
    else if (!strcmp(a, "--method"))
      method = v;
    else if (!strcmp(a, "--G"))
      nG = parse_list(v, Gs, 16);
    else if (!strcmp(a, "--n"))
      nn = parse_list(v, ns, 32);
    else if (!strcmp(a, "--reps"))
      reps = atoi(v);
    else {
      fprintf(stderr, "tempo_profile: unknown option %s\n", a);
      return 2;
    }
    i++;
  }
  int batched = strcmp(method, "loop") != 0;
  if (reps < 1 || nG < 1 || nn < 1) {
    fprintf(stderr, "tempo_profile: bad --reps/--G/--n\n");
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    fprintf(stderr, "tempo_profile: no GPU\n");
    return 77;
  }
  const model models[2] = {{"deepseek-v3", 7168, 2048}, {"qwen3-235b", 4096, 1536}};
  FILE* f = fopen(out, "w");
  if (!f) {
    fprintf(stderr, "tempo_profile: cannot write %s\n", out);
    return 1;
  }
  fprintf(f, "model,method,G,n,N,time_us\n");
  cublasHandle_t h;
  CB(cublasCreate(&h));
  int Gmax = 0, nmax = 0;
  for (int i = 0; i < nG; i++)
    Gmax = Gs[i] > Gmax ? Gs[i] : Gmax;
  for (int i = 0; i < nn; i++)
    nmax = ns[i] > nmax ? ns[i] : nmax;
  for (int mi = 0; mi < 2; mi++) {
    const model* m = &models[mi];
    if (strcmp(which, "both") && strcmp(which, m->name)) continue;
    size_t wbytes = (size_t)3 * m->H * m->I * 2;
    int P = Gmax + (int)((2 * 60e6) / wbytes) + 2; /* pool > G + 2 x L2 */
    __nv_bfloat16 *w1, *w2, *x, *y1, *y2;
    void** dptr;
    void** hptr;
    size_t rows = (size_t)Gmax * nmax;
    CK(cudaMalloc(&w1, (size_t)P * 2 * m->I * m->H * 2));
    CK(cudaMalloc(&w2, (size_t)P * m->H * m->I * 2));
    CK(cudaMalloc(&x, rows * m->H * 2));
    CK(cudaMalloc(&y1, rows * 2 * m->I * 2));
    CK(cudaMalloc(&y2, rows * m->H * 2));
    /* NOTE: one pointer table per timed layer, uploaded before timing (not measured) */
    size_t tab = (size_t)6 * Gmax * (reps + 2);
    CK(cudaMalloc(&dptr, sizeof(void*) * tab));
    CK(cudaMallocHost(&hptr, sizeof(void*) * tab));
    CK(cudaMemset(w1, 0x3c, (size_t)P * 2 * m->I * m->H * 2)); /* small finite bf16 values */
    CK(cudaMemset(w2, 0x3c, (size_t)P * m->H * m->I * 2));
    CK(cudaMemset(x, 0x3c, rows * m->H * 2));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("%-12s %-8s %4s %6s %8s %10s %10s\n", "model", "method", "G", "n", "N", "time_us",
           "TFLOP/s");
    for (int gi = 0; gi < nG; gi++)
      for (int ni = 0; ni < nn; ni++) {
        int G = Gs[gi], n = ns[ni];
        for (int r = 0; r < reps + 2; r++)
          fill_table(hptr + (size_t)6 * G * r, m, G, n, (r * G) % P, P, w1, w2, x, y1, y2);
        CK(cudaMemcpy(dptr, hptr, sizeof(void*) * 6 * G * (reps + 2), cudaMemcpyHostToDevice));
        for (int r = 0; r < 2; r++) /* warm-up (cuBLAS heuristics, clocks) */
          layer(h, m, batched, G, n, (r * G) % P, P, w1, w2, x, y1, y2, dptr + (size_t)6 * G * r);
        CK(cudaEventRecord(e0, 0));
        for (int r = 2; r < reps + 2; r++)
          layer(h, m, batched, G, n, (r * G) % P, P, w1, w2, x, y1, y2, dptr + (size_t)6 * G * r);
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        double us = 1000.0 * ms / reps;
        double tf = 2.0 * 3.0 * m->H * m->I * (double)G * n / (us * 1e-6) / 1e12;
        fprintf(f, "%s,%s,%d,%d,%lld,%.3f\n", m->name, batched ? "batched" : "loop", G, n,
                (long long)G * n, us);
        printf("%-12s %-8s %4d %6d %8lld %10.2f %10.1f\n", m->name, batched ? "batched" : "loop", G,
               n, (long long)G * n, us, tf);
        fflush(stdout);
      }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(w1), cudaFree(w2), cudaFree(x), cudaFree(y1), cudaFree(y2), cudaFree(dptr);
    cudaFreeHost(hptr);
  }
  cublasDestroy(h);
  fclose(f);
  printf("wrote %s\n", out);
  return 0;
}
