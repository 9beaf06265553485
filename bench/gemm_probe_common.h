/* gemm_probe_common.h — what bench/gemm_probe.cu and bench/gemm_probe_v7.cu share: an error
 * check, a hash fill independent of the library's, the cuBLAS strided-batched baseline, the
 * check of one row's output against it (outputs poisoned first, SiLU*mul applied on the host),
 * and interleaved timing of rows (batches of back-to-back launches, the order shuffled per round;
 * a row's ratio is the median over rounds of baseline time / row time). Header-only, probe use
 * only. Every launch goes to probe_stream (a created stream, so that a batch can be captured:
 * --graph times each row's batch as one CUDA graph, which takes the host's launch path out of
 * both our rows and cuBLAS's). Each row also reports the host time per launch of its batches
 * (stream mode): near the GPU time per launch, the host bounds the row.
 */
#ifndef XSTAGE_BENCH_GEMM_PROBE_COMMON_H
#define XSTAGE_BENCH_GEMM_PROBE_COMMON_H

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/gemm/bench.h"         /* xsg_round_order */
#include "kernels/gemm/gemm_internal.h" /* xsg_probe */
#include "xstage/gemm.h"

/* The probe's name in its messages (each probe defines it before including this). */
#ifndef PROBE_NAME
#error "define PROBE_NAME before including gemm_probe_common.h"
#endif

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, PROBE_NAME ": %s: %s\n", #x, cudaGetErrorString(e_));                        \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* Exits with 77 (skipped) when there is no GPU. */
static inline void probe_require_gpu(void) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf(PROBE_NAME ": no GPU, skipped\n");
    exit(77);
  }
}

/* Uniform values in [-1, 1), a hash of the index (independent of the library's fill). */
__global__ void probe_fill(__nv_bfloat16* x, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    x[i] = __float2bfloat16((h >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

/* A command-line option: "--flag N" stores the integer N in *value; a switch stores 1. */
struct probe_opt {
  const char* flag;
  int* value;
  int is_switch;
};

/* Applies argv[1..] to the options; an unknown argument, a missing value or one that is not an
 * integer exits with 2 and says which. */
static inline void probe_parse(int argc, char** argv, const probe_opt* opts, int n_opts) {
  for (int i = 1; i < argc; i++) {
    const probe_opt* o = nullptr;
    for (int j = 0; j < n_opts && !o; j++)
      if (!strcmp(argv[i], opts[j].flag)) o = &opts[j];
    if (!o) {
      fprintf(stderr, PROBE_NAME ": unknown argument '%s'\n", argv[i]);
      exit(2);
    }
    if (o->is_switch) {
      *o->value = 1;
      continue;
    }
    char* end = nullptr;
    const long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
    if (i + 1 >= argc || end == argv[i + 1] || *end || v < -2147483647 || v > 2147483647) {
      fprintf(stderr, PROBE_NAME ": %s needs an integer value\n", o->flag);
      exit(2);
    }
    *o->value = (int)v;
    i++;
  }
}

static inline float probe_bf(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline double probe_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/* One timed row: a launch, and its per-launch ms of every round. */
struct probe_row {
  std::string name;
  std::function<void()> run;
  std::vector<double> ms;
  std::vector<double> host_us; /* host time per launch while the batch was enqueued */
};

/* The stream every probe launch goes to (probe_setup creates it), and --graph. */
static cudaStream_t probe_stream = NULL;
static int probe_graph = 0;
static int probe_idle_us = 0; /* --idle-us: a low-power spin of this long after every launch
                                 (xsg_bench_idle, kernels/gemm/bench.h) */
/* --dirty-mb M (session 17): every timed launch alone between two events, after a memset of M
 * MiB (dirty lines filling L2, as a previous kernel's outputs leave it), and after --idle-us's
 * spin if any: the launch starts with no line of its own in L2. */
static int probe_dirty_mb = 0;

/* Fills A (a_elems) and B (b_elems) with the hash (seeds 1 and 2), waits, creates probe_stream
 * and returns a cuBLAS handle on it (exits when cuBLAS cannot start). */
static inline cublasHandle_t probe_setup(__nv_bfloat16* A, size_t a_elems, __nv_bfloat16* B,
                                         size_t b_elems) {
  probe_fill<<<1024, 256>>>(A, a_elems, 1);
  probe_fill<<<1024, 256>>>(B, b_elems, 2);
  CK(cudaDeviceSynchronize());
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, PROBE_NAME ": cublasCreate failed\n");
    exit(1);
  }
  /* XSG_PROBE_STREAM0=1: everything on the legacy default stream, as `xstage bench gemm` runs
   * (no --graph then) */
  const char* s0 = getenv("XSG_PROBE_STREAM0");
  const bool stream0 = s0 && s0[0] == '1';
  if (stream0 && probe_graph) {
    fprintf(stderr, PROBE_NAME ": --graph needs a created stream; unset XSG_PROBE_STREAM0\n");
    exit(2);
  }
  if (!stream0) CK(cudaStreamCreate(&probe_stream));
  if (cublasSetStream(h, probe_stream) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, PROBE_NAME ": cublasSetStream failed\n");
    exit(1);
  }
  return h;
}

/* --rotate W: B itself and W - 1 copies of its `elems` values, for rows whose launch i reads
 * copy i % W (a launch then finds in L2 the previous launch's lines, not its own). */
static inline std::vector<__nv_bfloat16*> probe_weight_copies(__nv_bfloat16* B, size_t elems,
                                                              int copies) {
  std::vector<__nv_bfloat16*> bs(1, B);
  for (int r = 1; r < copies; r++) {
    __nv_bfloat16* br;
    CK(cudaMalloc(&br, elems * 2));
    CK(cudaMemcpy(br, B, elems * 2, cudaMemcpyDeviceToDevice));
    bs.push_back(br);
  }
  return bs;
}

/* cuBLAS strided-batched: Cb[e] (T x N) = A[e] (T x K) . B[e] (N x K)^T for E experts. */
static inline void probe_cublas_batched(cublasHandle_t h, const __nv_bfloat16* A,
                                        const __nv_bfloat16* B, __nv_bfloat16* Cb, int E, int T,
                                        int N, int K) {
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t s = cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_T, CUBLAS_OP_N, N, T, K, &one, B, CUDA_R_16BF, K, (long long)N * K, A,
      CUDA_R_16BF, K, (long long)T * K, &zero, Cb, CUDA_R_16BF, N, (long long)T * N, E,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, PROBE_NAME ": cublasGemmStridedBatchedEx: status %d\n", (int)s);
    exit(1);
  }
}

/* cuBLAS dense: Cb (T x N) = A (T x K) . B (N x K)^T (cublasGemmEx, as `xstage bench gemm`; the
 * strided-batched call with one batch cost 11-18 us of host time per launch, session 25). */
static inline void probe_cublas_dense(cublasHandle_t h, const __nv_bfloat16* A,
                                      const __nv_bfloat16* B, __nv_bfloat16* Cb, int T, int N,
                                      int K) {
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t s =
      cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, T, K, &one, B, CUDA_R_16BF, K, A, CUDA_R_16BF, K,
                   &zero, Cb, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, PROBE_NAME ": cublasGemmEx: status %d\n", (int)s);
    exit(1);
  }
}

/* One GEMM on probe_stream with the library's probe hooks as the caller set them (xsg_probe),
 * which are all cleared afterwards (0 is the library's own choice in every field), so that each
 * row starts from the library; an error exits with its message, `what` naming the row. */
static inline void probe_gemm(const xs_gemm_args* a, xs_gemm_epilogue epi, xs_gemm_schedule sched,
                              const char* what) {
  const xs_result r = xs_gemm_run(a, epi, sched, probe_stream);
  memset(&xsg_probe, 0, sizeof xsg_probe);
  if (r != XS_OK) {
    fprintf(stderr, PROBE_NAME ": %s: %s\n", what, xs_last_error());
    exit(1);
  }
}

/* Four back-to-back launches of `row` (as timed: the last one's stamps stay), its trace of
 * `words` 64-bit words read back (zeroed before). */
static inline std::vector<unsigned long long>
probe_trace_launch(const probe_row& row, unsigned long long* trace, size_t words) {
  CK(cudaMemset(trace, 0, words * 8));
  for (int i = 0; i < 4; i++)
    row.run();
  CK(cudaDeviceSynchronize());
  std::vector<unsigned long long> tr(words);
  CK(cudaMemcpy(tr.data(), trace, words * 8, cudaMemcpyDeviceToHost));
  return tr;
}

/* Poison C, run `fn`, compare its rows x n_out output with cuBLAS's rows x N (hb, host copy;
 * with SiLU*mul the reference is silu(gate) * up of its two halves). Prints the relative
 * Frobenius error; returns 0 when it is finite everywhere and below 2e-2. */
static inline int probe_check(const std::string& name, const std::function<void()>& fn,
                              __nv_bfloat16* C, const std::vector<uint16_t>& hb, int rows, int N,
                              int n_out, int silu) {
  std::vector<uint16_t> hc((size_t)rows * n_out);
  CK(cudaMemset(C, 0xff, hc.size() * 2)); /* NaN poison */
  fn();
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hc.data(), C, hc.size() * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  size_t bad = 0;
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < n_out; c++) {
      double want = probe_bf(hb[(size_t)r * N + c]);
      if (silu) {
        const double g = want, u = probe_bf(hb[(size_t)r * N + c + n_out]);
        want = g / (1.0 + std::exp(-g)) * u;
      }
      const double got = probe_bf(hc[(size_t)r * n_out + c]), d = got - want;
      if (!std::isfinite(got)) bad++;
      num += d * d, den += want * want;
    }
  const double rel = std::sqrt(num / (den > 0 ? den : 1));
  printf("# check %s: rel_err %.2e vs cuBLAS, %zu non-finite\n", name.c_str(), rel, bad);
  if (bad || !(rel < 2e-2)) {
    fprintf(stderr, PROBE_NAME ": %s disagrees with cuBLAS\n", name.c_str());
    return 1;
  }
  return 0;
}

/* Three warm-up launches per row, then `rounds` rounds of one batch per row (>= 2 ms of the first
 * row, the baseline), the order shuffled per round (xsg_round_order, kernels/gemm/bench.h); fills
 * each row's ms (and host_us in stream mode). With probe_graph each row's batch is captured once as
 * a CUDA graph and each round launches that graph. Returns the launches per batch. */
static inline int probe_time(std::vector<probe_row>& rs, int rounds) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (auto& r : rs)
    for (int i = 0; i < 3; i++)
      r.run();
  CK(cudaEventRecord(e0, probe_stream));
  rs[0].run();
  CK(cudaEventRecord(e1, probe_stream));
  CK(cudaEventSynchronize(e1));
  float one_ms = 0;
  CK(cudaEventElapsedTime(&one_ms, e0, e1));
  const int iters = std::max(3, (int)(2.0f / std::max(one_ms, 1e-3f)));
  const size_t n = rs.size();
  std::vector<cudaGraphExec_t> graphs(n, (cudaGraphExec_t)NULL);
  if (probe_graph)
    for (size_t j = 0; j < n; j++) {
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(probe_stream, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < iters; i++)
        rs[j].run();
      CK(cudaStreamEndCapture(probe_stream, &g));
      CK(cudaGraphInstantiate(&graphs[j], g, 0));
      CK(cudaGraphDestroy(g));
      CK(cudaGraphLaunch(graphs[j], probe_stream)); /* warm-up */
    }
  /* --idle-us: each launch timed alone (an event pair around it), a low-power spin after it, so
   * the GPU runs below its power cap at a higher clock: how the rows' ratio moves with the duty */
  const int alone = probe_idle_us > 0 || probe_dirty_mb > 0;
  void* dirty = NULL;
  if (probe_dirty_mb > 0) CK(cudaMalloc(&dirty, (size_t)probe_dirty_mb << 20));
  std::vector<cudaEvent_t> ev(alone ? 2 * iters : 0);
  for (cudaEvent_t& e : ev)
    CK(cudaEventCreate(&e));
  std::vector<int> order(n);
  for (int round = 0; round < rounds; round++) {
    xsg_round_order(order.data(), (int)n, round);
    for (size_t j = 0; j < n; j++) {
      const size_t k = (size_t)order[j];
      probe_row& r = rs[k];
      if (alone) {
        for (int i = 0; i < iters; i++) {
          if (dirty)
            CK(cudaMemsetAsync(dirty, i & 0xff, (size_t)probe_dirty_mb << 20, probe_stream));
          CK(cudaEventRecord(ev[2 * i], probe_stream));
          r.run();
          CK(cudaEventRecord(ev[2 * i + 1], probe_stream));
          if (probe_idle_us > 0 && xsg_bench_idle(probe_idle_us, probe_stream) != XS_OK) {
            fprintf(stderr, PROBE_NAME ": %s\n", xs_last_error());
            exit(1);
          }
        }
        CK(cudaEventSynchronize(ev.back()));
        double sum = 0;
        for (int i = 0; i < iters; i++) {
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
          sum += ms;
        }
        r.ms.push_back(sum / iters);
        continue;
      }
      CK(cudaEventRecord(e0, probe_stream));
      const auto h0 = std::chrono::steady_clock::now();
      if (probe_graph)
        CK(cudaGraphLaunch(graphs[k], probe_stream));
      else
        for (int i = 0; i < iters; i++)
          r.run();
      const auto h1 = std::chrono::steady_clock::now();
      CK(cudaEventRecord(e1, probe_stream));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      r.ms.push_back(ms / iters);
      if (!probe_graph)
        r.host_us.push_back(std::chrono::duration<double, std::micro>(h1 - h0).count() / iters);
    }
  }
  if (dirty) CK(cudaFree(dirty));
  for (cudaGraphExec_t g : graphs)
    if (g) CK(cudaGraphExecDestroy(g));
  for (cudaEvent_t e : ev)
    CK(cudaEventDestroy(e));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return iters;
}

/* The row's median host time per launch, or "-" (graph mode). */
static inline std::string probe_host(const probe_row& r) {
  if (r.host_us.empty()) return "-";
  char b[32];
  snprintf(b, sizeof b, "%.2f", probe_median(r.host_us));
  return b;
}

/* --energy: each row runs alone for ~1 s, three times (rows alternating), while the GPU's energy
 * counter (NVML, through dlopen of the driver's libnvidia-ml.so.1: no build dependency) is read
 * before and after: joules per launch, the mean power, and the SM clock NVML reports while the
 * batch runs. Under the software power cap the faster kernel is the one that spends less energy
 * per GEMM; this says which. Prints one table; returns 1 when NVML cannot be used. */
static inline int probe_energy(std::vector<probe_row>& rs) {
  typedef int (*init_t)(void);
  typedef int (*handle_t)(unsigned, void**);
  typedef int (*energy_t)(void*, unsigned long long*);
  typedef int (*clock_t_)(void*, int, unsigned*);
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, PROBE_NAME ": --energy: libnvidia-ml.so.1 not found\n");
    return 1;
  }
  const init_t init = (init_t)dlsym(lib, "nvmlInit_v2");
  const handle_t handle = (handle_t)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  const energy_t energy = (energy_t)dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption");
  const clock_t_ clock = (clock_t_)dlsym(lib, "nvmlDeviceGetClockInfo");
  void* dev = NULL;
  unsigned long long e0 = 0;
  if (!init || !handle || !energy || !clock || init() != 0 || handle(0, &dev) != 0 ||
      energy(dev, &e0) != 0) {
    fprintf(stderr, PROBE_NAME ": --energy: NVML's energy counter is not available\n");
    return 1;
  }
  const size_t n = rs.size();
  std::vector<std::vector<double>> mj(n), watts(n), mhz(n);
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  for (int round = 0; round < 3; round++)
    for (size_t j = 0; j < n; j++) {
      probe_row& r = rs[j];
      const double ms = r.ms.empty() ? 1.0 : probe_median(r.ms);
      const int launches = std::max(10, (int)(1000.0 / ms));
      CK(cudaDeviceSynchronize());
      std::this_thread::sleep_for(std::chrono::milliseconds(200)); /* the counter's last update */
      unsigned long long ea = 0, eb = 0;
      energy(dev, &ea);
      CK(cudaEventRecord(t0, probe_stream));
      for (int i = 0; i < launches; i++) {
        r.run();
        if (i == launches / 2) {
          unsigned c = 0;
          if (clock(dev, 1 /* NVML_CLOCK_SM */, &c) == 0) mhz[j].push_back(c);
        }
      }
      CK(cudaEventRecord(t1, probe_stream));
      CK(cudaEventSynchronize(t1));
      std::this_thread::sleep_for(std::chrono::milliseconds(200)); /* idle: ~80 W x 0.2 s */
      energy(dev, &eb);
      float el = 0;
      CK(cudaEventElapsedTime(&el, t0, t1));
      mj[j].push_back((double)(eb - ea) / launches);
      watts[j].push_back((double)(eb - ea) / el);
    }
  CK(cudaEventDestroy(t0));
  CK(cudaEventDestroy(t1));
  printf("# energy: each row alone for ~1 s, three times; mJ per launch (NVML counter, including "
         "0.2 s idle after the batch), mean W over the batch, SM MHz mid-batch; ratio = cuBLAS's "
         "energy / the row's (> 1: less energy)\n");
  printf("  %-28s %9s %7s %7s %8s\n", "row", "mJ", "W", "MHz", "e-ratio");
  for (size_t j = 0; j < n; j++)
    printf("  %-28s %9.3f %7.0f %7.0f %8.3f\n", rs[j].name.c_str(), probe_median(mj[j]),
           probe_median(watts[j]), mhz[j].empty() ? 0.0 : probe_median(mhz[j]),
           probe_median(mj[0]) / probe_median(mj[j]));
  return 0;
}

/* Median over rounds of rs[0]'s time / row's time (> 1: the row is faster than the baseline). */
static inline double probe_ratio(const std::vector<probe_row>& rs, const probe_row& r) {
  std::vector<double> ratio;
  for (size_t i = 0; i < r.ms.size() && i < rs[0].ms.size(); i++)
    ratio.push_back(rs[0].ms[i] / r.ms[i]);
  return probe_median(ratio);
}

/* The timed rows' table: median us per launch, the weights' read rate (`bytes` per launch),
 * the ratio to the baseline (row 0) and the host's time per launch. */
static inline void probe_print_rows(const std::vector<probe_row>& rs, double bytes) {
  printf("  %-26s %9s %9s %8s %8s\n", "row", "us", "B TB/s", "ratio", "host_us");
  for (const probe_row& r : rs) {
    const double ms = probe_median(r.ms);
    printf("  %-26s %9.2f %9.2f %8.3f %8s\n", r.name.c_str(), ms * 1e3, bytes / ms / 1e9,
           probe_ratio(rs, r), probe_host(r).c_str());
  }
}

#endif
