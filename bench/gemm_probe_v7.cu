/* gemm_probe_v7.cu — where v7's time goes at few tokens per expert, beside cuBLAS strided-batched.
 *
 *   bench_gemm_probe_v7 --experts E --tokens T --N N --K K [--silu] [--rounds R] [--graph]
 *                       [--hints] [--rotate W] [--idle-us U] [--dirty-mb M] [--dense]
 *
 * --dense (session 25): one dense T x N x K problem (E must be 1) against cublasGemmEx, with
 * v7's split of K: the library's S, no split, S = 8 and 16; the trace adds the slices' hand-off.
 * Balanced MASKED counts (T tokens for each of E experts), weights B[E, N, K], activations
 * [E, T, K]. Rows, timed in interleaved rounds (median ms per launch over back-to-back launches;
 * ratio = cuBLAS / row, the median of per-round ratios; host_us: the host's time per launch while
 * a batch was enqueued; --graph: each batch runs as one captured CUDA graph):
 *   cublas strided batched   the baseline (no SiLU*mul: its output is [E * T, N])
 *   v7 (library)             XS_GEMM_V7 as the library runs it (its tile width and grid)
 *   v7 (library), no split   the same without the split tile (xsg_probe.v7_split = 1: a CTA with
 *                            an odd tile count leaves stream 1 idle for its last tile)
 *   v7 wide / narrow         128 / 64 B rows per tile forced (xsg_probe.v7_width)
 *   v7 wide, C ctas          128-row tiles on one CTA per SM (the grid before session 6)
 *   v7 narrow, C ctas (even) 64-row tiles on the fewest CTAs that give every CTA an even count
 *   v7 traced                xsg_probe.v7_mode 1: %globaltimer stamps per CTA
 * --idle-us U: each timed launch alone, then a low-power spin of U us (gemm_probe.cu).
 * --dirty-mb M: each timed launch alone after a memset of M MiB (gemm_probe.cu).
 * --hints: instead, cuBLAS and the library's v7 (B loads evict_first), and v7 with other L2 cache
 * policies on its TMA loads (xsg_probe.l2_hint = A's kind | B's kind << 2; 1 evict_first,
 * 2 evict_last, 3 evict_normal; 16 none at all, v7 before session 10). --rotate W: W copies of
 * the weights, each row's successive launches cycling through them (as consecutive MoE layers
 * read different weights: a launch finds in L2 the previous launch's lines, not its own), for
 * cuBLAS and v7 alike; 1 (the default): every launch reads the same weights.
 * Every row is checked against cuBLAS's output (SiLU*mul applied on the host) with C poisoned
 * first. Then one traced launch, read back: when the CTAs start, finish their set-up, issue their
 * first load, get their first k-block, finish their main loops and epilogues, relative to the
 * first CTA's start; the streams' read rate; the launch's span against the per-launch time of
 * back-to-back launches (the difference: launch gaps).
 * Exit 77 without a GPU. Uses the library's probe hooks (xsg_probe), which nothing else sets.
 */
#define PROBE_NAME "gemm_probe_v7"
#include "gemm_probe_common.h"
#include "kernels/gemm/gemm_internal.h"
#include "xstage/gemm.h"

int main(int argc, char** argv) {
  int E = 8, T = 16, N = 4096, K = 1536, silu = 0, rounds = 10, hints = 0, rotate = 1, dense = 0;
  const probe_opt opts[] = {{"--experts", &E, 0},
                            {"--tokens", &T, 0},
                            {"--N", &N, 0},
                            {"--K", &K, 0},
                            {"--rounds", &rounds, 0},
                            {"--silu", &silu, 1},
                            {"--graph", &probe_graph, 1},
                            {"--hints", &hints, 1},
                            {"--rotate", &rotate, 0},
                            {"--idle-us", &probe_idle_us, 0},
                            {"--dirty-mb", &probe_dirty_mb, 0},
                            {"--dense", &dense, 1}};
  probe_parse(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]));
  if (E < 1 || T < 1 || T > 64 || N < 16 || N % 16 || K < 8 || K % 8 || rounds < 3 || rotate < 1 ||
      rotate > 16 || probe_idle_us < 0 || probe_idle_us > 100000 || probe_dirty_mb < 0 ||
      probe_dirty_mb > 4096 || ((probe_idle_us || probe_dirty_mb) && probe_graph) ||
      (dense && E != 1)) {
    fprintf(stderr, "gemm_probe_v7: need E >= 1, 1 <= T <= 64, N a multiple of 16, K of 8, "
                    "rounds >= 3, rotate 1..16, idle-us 0..100000, dirty-mb 0..4096 (neither with "
                    "--graph), --dense with E = 1\n");
    return 2;
  }
  probe_require_gpu();
  const int rows = E * T, n_out = silu ? N / 2 : N;
  __nv_bfloat16 *A, *B, *C, *Cb;
  int32_t* d_cnt;
  CK(cudaMalloc(&A, (size_t)rows * K * 2));
  CK(cudaMalloc(&B, (size_t)E * N * K * 2));
  CK(cudaMalloc(&C, (size_t)rows * n_out * 2));
  CK(cudaMalloc(&Cb, (size_t)rows * N * 2));
  CK(cudaMalloc(&d_cnt, E * 4));
  std::vector<int32_t> cnt(E, T);
  CK(cudaMemcpy(d_cnt, cnt.data(), E * 4, cudaMemcpyHostToDevice));
  cublasHandle_t h = probe_setup(A, (size_t)rows * K, B, (size_t)E * N * K);
  /* --rotate: launch i of a row reads weight copy i % W */
  const std::vector<__nv_bfloat16*> Bs = probe_weight_copies(B, (size_t)E * N * K, rotate);
  auto cublas = [&, n = 0]() mutable {
    if (dense) /* (--dense: cublasGemmEx, as xstage bench gemm) */
      probe_cublas_dense(h, A, Bs[n++ % rotate], Cb, T, N, K);
    else
      probe_cublas_batched(h, A, Bs[n++ % rotate], Cb, E, T, N, K);
  };
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.layout = dense ? XS_GEMM_DENSE : XS_GEMM_GROUPED_MASKED;
  a.M = T, a.N = N, a.K = K, a.experts = E, a.version = XS_GEMM_V7;
  a.A = A, a.B = B, a.C = C, a.m_counts = d_cnt;
  xs_gemm_epilogue epi = XS_GEMM_EPILOGUE_INITIALIZER;
  epi.act = silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE;
  xs_gemm_tiling tl, tl_wide, tl_narrow;
  xsg_probe.v7_width = 128;
  const xs_result r_wide = xs_gemm_tiles(&tl_wide, &a, epi.act);
  xsg_probe.v7_width = 64;
  const xs_result r_narrow = xs_gemm_tiles(&tl_narrow, &a, epi.act);
  xsg_probe.v7_width = 0;
  if (xs_gemm_tiles(&tl, &a, epi.act) != XS_OK || r_wide != XS_OK || r_narrow != XS_OK) {
    fprintf(stderr, "gemm_probe_v7: %s\n", xs_last_error());
    return 1;
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned long long* trace;
  CK(cudaMalloc(&trace, (size_t)XSG_V7_TRACE * sms * 8));

  /* One v7 launch: ctas (0: the library's), tile width (0: the library's), traced or not, PDL,
   * split tile (xsg_probe.v7_split: 0 the library's, 1 off). */
  auto v7 = [&](int ctas, int width, int traced, int pdl, int split = 0, int hint = 0,
                int split_k = 0) {
    return [&, ctas, width, traced, pdl, split, hint, split_k, n = 0]() mutable {
      a.B = Bs[n++ % rotate];
      a.split_k = split_k;
      xs_gemm_schedule sched = XS_GEMM_SCHEDULE_INITIALIZER;
      sched.max_ctas = ctas;
      sched.pdl = pdl;
      xsg_probe.v7_width = width;
      xsg_probe.v7_mode = traced;
      xsg_probe.v7_split = split;
      xsg_probe.l2_hint = hint;
      xsg_probe.trace = trace;
      probe_gemm(&a, epi, sched, "v7");
      a.split_k = 0;
      a.B = B;
    };
  };
  /* The library's pick (width rule, fewest CTAs keeping the busiest one's tiles), each width
   * forced, and the grid of one CTA per SM (session 5's). */
  char name_pick[64], name_wide[48], name_narrow[48], name_sms[48], name_even[48];
  snprintf(name_pick, sizeof name_pick, "v7 %dx%d (library)", tl.tile_m, tl.tile_n);
  snprintf(name_wide, sizeof name_wide, "v7 %dx%d wide", tl_wide.tile_m, tl_wide.tile_n);
  snprintf(name_narrow, sizeof name_narrow, "v7 %dx%d narrow", tl_narrow.tile_m, tl_narrow.tile_n);
  snprintf(name_sms, sizeof name_sms, "v7 wide, %d ctas", sms);
  /* narrow tiles on the fewest CTAs that give each CTA an even tile count (both streams equal) */
  const int narrow_per = 2 * ((tl_narrow.count + 2 * sms - 1) / (2 * sms));
  const int even_ctas = (tl_narrow.count + narrow_per - 1) / narrow_per;
  snprintf(name_even, sizeof name_even, "v7 narrow, %d ctas (even)", even_ctas);
  std::vector<probe_row> rs = {
      {"cublas strided batched", cublas, {}},    {name_pick, v7(0, 0, 0, 0), {}},
      {"v7 (library), PDL", v7(0, 0, 0, 1), {}}, {"v7 (library), no split", v7(0, 0, 0, 0, 1), {}},
      {name_wide, v7(0, 128, 0, 0), {}},
      {name_narrow, v7(0, 64, 0, 0), {}},        {name_sms, v7(sms, 128, 0, 0), {}},
      {name_even, v7(even_ctas, 64, 0, 0), {}},  {"v7 (library) traced", v7(0, 0, 1, 0), {}}};
  if (dense) {
    snprintf(name_pick, sizeof name_pick, "v7 %dx%d S %d (library)", tl.tile_m, tl.tile_n,
             tl.splits);
    rs = {{"cublas", cublas, {}},
          {name_pick, v7(0, 0, 0, 0), {}},
          {"v7 (library), PDL", v7(0, 0, 0, 1), {}},
          {"v7 no split", v7(0, 0, 0, 0, 0, 0, 1), {}},
          {"v7 S 8", v7(0, 0, 0, 0, 0, 0, 8), {}},
          {"v7 S 16", v7(0, 0, 0, 0, 0, 0, 16), {}},
          {"v7 in clusters",
           [&, inner = v7(0, 0, 0, 0)]() mutable {
             xsg_probe.v7_kcluster = 2; /* the split in clusters where they fit */
             inner();
             xsg_probe.v7_kcluster = 0;
           },
           {}},
          {"v7 (library) traced", v7(0, 0, 1, 0), {}}};
  }
  if (hints)
    rs = {{"cublas strided batched", cublas, {}},
          {name_pick, v7(0, 0, 0, 0), {}},
          {"v7, no L2 policy", v7(0, 0, 0, 0, 0, 16), {}},
          {"v7, B first A last", v7(0, 0, 0, 0, 0, 6), {}},
          {"v7, A last", v7(0, 0, 0, 0, 0, 2), {}},
          {"v7, B normal", v7(0, 0, 0, 0, 0, 12), {}}};

  /* ---- correctness of every row against cuBLAS (outputs poisoned first) ---- */
  cublas();
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> hb((size_t)rows * N);
  CK(cudaMemcpy(hb.data(), Cb, hb.size() * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 1; i < rs.size(); i++)
    if (probe_check(rs[i].name, rs[i].run, C, hb, rows, N, n_out, silu)) return 1;

  /* ---- interleaved timing (batches of back-to-back launches, shuffled per round) ---- */
  const int iters = probe_time(rs, rounds);
  const double bytes = (double)E * N * K * 2;
  printf("# E=%d T=%d N=%d K=%d%s, %s, %d tiles of %d x %d on %d SMs, %d rounds x %d launches, "
         "%d weight copies\n",
         E, T, N, K, silu ? " silu" : "", dense ? "dense" : "masked", tl.count, tl.tile_m,
         tl.tile_n, sms, rounds, iters, rotate);
  probe_print_rows(rs, bytes);

  /* ---- traced launches, read back: stamps relative to the first CTA's entry ---- */
  /* NOTE: --hints has no traced row (its rows end with "v7, B normal"); before session 11 the
   * step below ran the last row anyway, found no stamps and exited 1 after the timed rows. */
  if (hints) return 0;
  const double per_launch_us = probe_median(rs.back().ms) * 1e3;
  for (int rep = 0; rep < 3; rep++) {
    const std::vector<unsigned long long> tr =
        probe_trace_launch(rs.back(), trace, (size_t)XSG_V7_TRACE * sms);
    /* Stamps are SM clocks; [0] / [19] and [30] / [31] pair %globaltimer with the clock at the
     * CTA's entry and at stream 0's end, which gives the CTA's clock rate and its place in global
     * time (the timer ticks in 32 ns - 1 us steps; over a >= 20 us span that is <= 5 %). */
    auto ns = [&](const unsigned long long* t, unsigned long long c) {
      const double cpn = (double)(t[31] - t[19]) / (double)(t[30] - t[0]);
      return (double)t[0] + ((double)c - (double)t[19]) / cpn;
    };
    double g0 = 1e300, g1 = 0, mhz = 0;
    int ctas = 0;
    for (int c = 0; c < sms; c++) {
      const unsigned long long* t = &tr[(size_t)c * XSG_V7_TRACE];
      if (!t[0] || t[30] <= t[0]) continue;
      ctas++;
      g0 = std::min(g0, (double)t[0]);
      mhz += (double)(t[31] - t[19]) / (double)(t[30] - t[0]) * 1e3;
      for (int s = 0; s < 2; s++)
        if (t[12 + s]) g1 = std::max(g1, ns(t, t[34 + s]));
    }
    if (!ctas) {
      fprintf(stderr, "gemm_probe_v7: empty trace\n");
      return 1;
    }
    printf("# trace %d: %d CTAs, SM clock %.0f MHz, span (first entry -> last epilogue end) "
           "%.2f us; per launch back to back %.2f us\n",
           rep, ctas, mhz / ctas, (g1 - g0) / 1e3, per_launch_us);
    struct stat_t {
      const char* what;
      int idx; /* word; streams: idx + s */
      int stream;
    } stats[] = {{"entry", 0, 0},
                 {"barriers initialized", 20, 0},
                 {"schedule table built (warp 3)", 21, 0},
                 {"set-up done", 1, 0},
                 {"producer in its branch", 22, 1},
                 {"first real tile decoded", 24, 1},
                 {"first slot armed", 26, 1},
                 {"first TMA issued", 2, 1},
                 {"consumer in its branch", 28, 1},
                 {"first k-block in", 4, 1},
                 {"first main loop done", 6, 1},
                 {"last main loop done", 8, 1},
                 {"split: hand-off counted", 32, 1},
                 {"last epilogue done", 10, 1},
                 {"last unit's end", 34, 1}};
    printf("  %-24s %8s %8s %8s %8s %8s  (us after the first entry)\n", "stamp", "min", "p10",
           "median", "p90", "max");
    for (const stat_t& st : stats) {
      std::vector<double> v;
      for (int c = 0; c < sms; c++) {
        const unsigned long long* t = &tr[(size_t)c * XSG_V7_TRACE];
        if (!t[0] || t[30] <= t[0]) continue;
        for (int s = 0; s < (st.stream ? 2 : 1); s++)
          if (!st.stream || (t[12 + s] && t[st.idx + s])) /* (a stamp not taken: 0) */
            v.push_back(((st.idx ? ns(t, t[st.idx + s]) : (double)t[0]) - g0) / 1e3);
      }
      std::sort(v.begin(), v.end());
      if (v.empty()) continue;
      const size_t m = v.size();
      printf("  %-24s %8.2f %8.2f %8.2f %8.2f %8.2f\n", st.what, v[0], v[m / 10], v[m / 2],
             v[m * 9 / 10], v[m - 1]);
    }
    /* Read rate per stream while in its main loops: (B + token tile) bytes per k-block. */
    const double slot = (double)(silu ? 2 : 1) * tl.tile_n * 64 * 2 + (double)tl.tile_m * 64 * 2;
    std::vector<double> rate;
    int two = 0, one = 0;
    for (int c = 0; c < sms; c++) {
      const unsigned long long* t = &tr[(size_t)c * XSG_V7_TRACE];
      if (!t[0] || t[30] <= t[0]) continue;
      const double cpn = (double)(t[31] - t[19]) / (double)(t[30] - t[0]);
      int k = 0;
      for (int s = 0; s < 2; s++)
        if (t[12 + s]) {
          k++;
          rate.push_back(slot * t[14 + s] / ((double)t[16 + s] / cpn)); /* bytes / ns = GB/s */
        }
      (k == 2 ? two : one)++;
    }
    printf("  streams' read rate in their main loops, GB/s: min %.1f median %.1f max %.1f; CTAs "
           "with two busy streams %d, one %d\n",
           *std::min_element(rate.begin(), rate.end()), probe_median(rate),
           *std::max_element(rate.begin(), rate.end()), two, one);
  }
  return 0;
}
