/* test_dispatch.cu — TEMPO's GPU dispatch kernel (src/kernels/dispatch/dispatch.cu) against its
 * CPU reference xs_balance_assign, bit for bit, on random router outputs (SKIPPED without a GPU):
 *   - counts per expert, replica and GPU per (token, k), outputs poisoned before each launch;
 *   - quotas solved for this batch, and stale quotas solved for another batch (scaled ordinals);
 *   - a replica set whose quotas are all 0 (round robin);
 *   - the launch captured in a CUDA graph, replayed, still correct; timed over many replays with
 *     CUDA events: "dispatch_us T x K: <us>" lines (target: 8192 x 8 in <= 10 us on the H200).
 * Run: build/test_dispatch (from the repository root). */
#include "test.h"
#include "xstage/xstage.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "  FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      xt_checks_failed_++;                                                                         \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

static void make_topk(std::vector<int32_t>& topk, int T, int K, int E, double skew,
                      unsigned long long seed) {
  topk.resize((size_t)T * K);
  unsigned long long s = seed;
  for (int t = 0; t < T; t++)
    for (int k = 0; k < K; k++) {
      int e, dup;
      do { /* skewed, distinct per token */
        double u = xt_rand_uniform(&s);
        e = (int)(E * pow(u, 1.0 + skew));
        dup = 0;
        for (int j = 0; j < k; j++)
          dup |= topk[(size_t)t * K + j] == e;
      } while (dup);
      topk[(size_t)t * K + k] = e;
    }
}

typedef struct dev_case {
  int32_t *topk, *rep_off, *rep_gpu, *quotas, *counts, *replica, *gpu;
  void* ws;
} dev_case;

/* One case: placement from EPLB over the batch's own loads; quotas from TEMPO on `quota_topk`'s
 * counts (the batch itself, or another batch for stale quotas); optional zeroed expert. */
static void run_case(int T, int K, int E, int G, int red, double skew, int stale, int zero_e,
                     int timed) {
  std::vector<int32_t> topk, qtopk;
  make_topk(topk, T, K, E, skew, 1000 + T + E);
  make_topk(qtopk, T, K, E, skew, stale ? 77 + T : 1000 + T + E);
  std::vector<int64_t> counts(E, 0), qcounts(E, 0);
  std::vector<double> loads(E, 0);
  for (int32_t e : topk)
    counts[e]++;
  for (int32_t e : qtopk)
    qcounts[e]++, loads[e] += 1;
  xs_placement pl;
  XT_CHECK(xs_placement_eplb(&pl, loads.data(), E, G, red) == XS_OK);
  xs_expert_profile prof;
  xs_expert_profile_default(&prof, "deepseek-v3");
  std::vector<int64_t> q(pl.n_replicas);
  XT_CHECK(xs_balance_baseline(q.data(), XS_BAL_TEMPO, &pl, &prof, qcounts.data(), 0) == XS_OK);
  if (zero_e >= 0)
    for (int r = pl.rep_off[zero_e]; r < pl.rep_off[zero_e + 1]; r++)
      q[r] = 0;
  std::vector<int32_t> ref_rep((size_t)T * K), ref_gpu((size_t)T * K), ref_cnt(E);
  XT_CHECK(xs_balance_assign(ref_rep.data(), ref_gpu.data(), ref_cnt.data(), topk.data(), T, K, &pl,
                             q.data(), NULL, NULL) == XS_OK);
  std::vector<int32_t> q32(q.begin(), q.end());

  size_t ws_bytes = 0, slots = (size_t)T * K;
  XT_CHECK(xs_dispatch_workspace_size(&ws_bytes, T, K, E) == XS_OK);
  dev_case d;
  CK(cudaMalloc(&d.topk, slots * 4));
  CK(cudaMalloc(&d.rep_off, (E + 1) * 4));
  CK(cudaMalloc(&d.rep_gpu, pl.n_replicas * 4));
  CK(cudaMalloc(&d.quotas, pl.n_replicas * 4));
  CK(cudaMalloc(&d.counts, E * 4));
  CK(cudaMalloc(&d.replica, slots * 4));
  CK(cudaMalloc(&d.gpu, slots * 4));
  CK(cudaMalloc(&d.ws, ws_bytes));
  CK(cudaMemcpy(d.topk, topk.data(), slots * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.rep_off, pl.rep_off, (E + 1) * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.rep_gpu, pl.rep_gpu, pl.n_replicas * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.quotas, q32.data(), pl.n_replicas * 4, cudaMemcpyHostToDevice));
  xs_dispatch_args a;
  memset(&a, 0, sizeof a);
  a.topk = d.topk, a.rep_off = d.rep_off, a.rep_gpu = d.rep_gpu, a.quotas = d.quotas;
  a.counts = d.counts, a.replica = d.replica, a.gpu = d.gpu, a.workspace = d.ws;
  a.n_tokens = T, a.top_k = K, a.n_experts = E, a.n_replicas = pl.n_replicas;
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  std::vector<int32_t> rep(slots), gpu(slots), cnt(E);
  for (int pass = 0; pass < 2; pass++) {        /* pass 0: plain launch; pass 1: graph replay */
    CK(cudaMemset(d.replica, 0xff, slots * 4)); /* poison */
    CK(cudaMemset(d.gpu, 0xff, slots * 4));
    CK(cudaMemset(d.counts, 0xff, E * 4));
    CK(cudaMemset(d.ws, 0xab, ws_bytes));
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (pass == 0) {
      XT_CHECK(xs_dispatch_launch(&a, st) == XS_OK);
    } else {
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      XT_CHECK(xs_dispatch_launch(&a, st) == XS_OK);
      CK(cudaStreamEndCapture(st, &graph));
      CK(cudaGraphInstantiate(&exec, graph, 0));
      for (int i = 0; i < 3; i++)
        CK(cudaGraphLaunch(exec, st));
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(rep.data(), d.replica, slots * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gpu.data(), d.gpu, slots * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(cnt.data(), d.counts, E * 4, cudaMemcpyDeviceToHost));
    long bad = 0;
    for (size_t i = 0; i < slots; i++)
      bad += rep[i] != ref_rep[i] || gpu[i] != ref_gpu[i];
    for (int e = 0; e < E; e++)
      bad += cnt[e] != ref_cnt[e];
    XT_CHECK_MSG(bad == 0, "T %d K %d E %d stale %d zero %d pass %d: %ld mismatches", T, K, E,
                 stale, zero_e, pass, bad);
    if (pass == 1 && timed) {
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      const int reps = 2000;
      for (int i = 0; i < 50; i++)
        CK(cudaGraphLaunch(exec, st));
      CK(cudaEventRecord(e0, st));
      for (int i = 0; i < reps; i++)
        CK(cudaGraphLaunch(exec, st));
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      double us = 1000.0 * ms / reps;
      printf("dispatch_us %d x %d (E %d, R %d): %.2f us per graph replay (target %s)\n", T, K, E,
             pl.n_replicas, us,
             T == 8192 && K == 8 ? (us <= 10 ? "<= 10 us: met" : "<= 10 us: MISSED") : "none");
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(st);
  cudaFree(d.topk), cudaFree(d.rep_off), cudaFree(d.rep_gpu), cudaFree(d.quotas);
  cudaFree(d.counts), cudaFree(d.replica), cudaFree(d.gpu), cudaFree(d.ws);
  xs_placement_release(&pl);
}

static void test_dispatch_matches_reference(void) {
  run_case(8192, 8, 256, 64, 32, 1.0, 0, -1, 1);
  run_case(8192, 8, 128, 8, 16, 0.5, 0, -1, 1);
  run_case(4096, 8, 256, 64, 32, 2.0, 1, 3, 1);
  run_case(100, 8, 128, 8, 16, 1.0, 1, -1, 0);
  run_case(1, 2, 8, 2, 2, 0.0, 0, -1, 0);
  run_case(1000, 6, 1024, 16, 64, 1.0, 1, 0, 0);
}

static void test_bad_args(void) {
  xs_dispatch_args a;
  memset(&a, 0, sizeof a);
  XT_CHECK(xs_dispatch_launch(&a, NULL) == XS_ERR_INVALID_ARG);
  size_t b;
  XT_CHECK(xs_dispatch_workspace_size(&b, 10, 8, 2048) == XS_ERR_INVALID_ARG);
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) XT_SKIP("no GPU");
  XT_RUN(test_dispatch_matches_reference);
  XT_RUN(test_bad_args);
  return XT_END();
}
