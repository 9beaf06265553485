/* gemm_probe_v14.cu — where v14's time goes on one dense M x N x K problem, beside cuBLAS.
 *
 *   bench_gemm_probe_v14 --M M --N N --K K [--silu] [--rounds R] [--graph] [--rotate W]
 *                        [--splits]
 *
 * v14 (gemm_splitk.cu) is AUTO's kernel for a tensor-parallel layer's projections at 65-512
 * tokens, where the layer timed whole in a CUDA graph trails cuBLAS most (session 26: 0.85 at 128
 * tokens). Rows, timed in interleaved rounds (gemm_probe_common.h; median us per launch over
 * back-to-back launches, ratio = cuBLAS / row):
 *   cublas             cublasGemmEx (with --silu: the GEMM alone, its output [M, N])
 *   auto               XS_GEMM_AUTO, as the library runs it
 *   v14 (library)      XS_GEMM_V14 with the library's plan (tile width, split)
 *   v14, PDL           the same launched with programmatic dependent launch
 *   v14, first units decoded  each CTA decodes its first unit itself (xsg_probe.first = 1: the
 *                      library before session 28) instead of taking it from the host's table
 *   v14 traced         xsg_probe.v14_trace: the same with clock stamps per CTA
 *   v14 S s ...        (--splits) v14 at S = 1, 2, 4, 6, 8 (a.split_k), through the workspace
 *                      (xsg_probe.splitk_global = 1) and as clusters (2), where S x tiles fit;
 *                      then the plan's split with its fix-up's share not stored
 *                      (xsg_probe.splitk = 7) and without its SiLU*mul (8): time only, not
 *                      checked
 * --rotate W: W copies of the weights, each row's successive launches cycling through them (a
 * layer's weights are not in L2 when it runs). Every row is checked against cuBLAS's output
 * (SiLU*mul applied on the host) with C poisoned first. Then three traced launches (each the last
 * of four back to back), read back: when the CTAs start, are past their set-up, issue their first
 * load, get their first k-block, finish their multiplies and their epilogues, relative to the first
 * CTA's start (gemm_internal.h XSG_V14_TRACE), and the launch's span against the per-launch time
 * of back-to-back launches (the difference: what happens outside the CTAs).
 * --trace-form F: the traced launches' fix-up form (xsg_probe.splitk_global: 1 through the
 * workspace, 2 as clusters; 0, the default, the library's). --per-cta: after each trace, one line
 * per CTA in SM order (%smid, first k-block, last multiply, end in us, its B read rate), to see
 * whether the slow CTAs share SMs' places (session 29). --l2-hint H: every v14 row's loads with
 * L2 cache policies (xsg_probe.l2_hint: A's kind | B's kind << 2; 1 evict_first, 2 evict_last).
 * --bn W: v14's tiles W B rows wide in every v14 row (xsg_probe.splitk_bn; the plan's S for that
 * width, or --splits' S).
 * Exit 77 without a GPU. Uses the library's probe hooks (xsg_probe), which nothing else sets.
 */
#define PROBE_NAME "gemm_probe_v14"
#include "gemm_probe_common.h"
#include "kernels/gemm/gemm_internal.h"
#include "xstage/gemm.h"

int main(int argc, char** argv) {
  int M = 128, N = 8192, K = 1024, silu = 0, rounds = 10, rotate = 1, splits = 0, form = 0,
      per_cta = 0, l2 = 0, bn = 0;
  const probe_opt opts[] = {{"--M", &M, 0},
                            {"--N", &N, 0},
                            {"--K", &K, 0},
                            {"--rounds", &rounds, 0},
                            {"--silu", &silu, 1},
                            {"--graph", &probe_graph, 1},
                            {"--rotate", &rotate, 0},
                            {"--splits", &splits, 1},
                            {"--trace-form", &form, 0},
                            {"--per-cta", &per_cta, 1},
                            {"--l2-hint", &l2, 0},
                            {"--bn", &bn, 0}};
  probe_parse(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]));
  if (M < 1 || M > 4096 || N < 16 || N % 16 || K < 8 || K % 8 || rounds < 3 || rotate < 1 ||
      rotate > 16 || form < 0 || form > 2 || (bn && bn != 64 && bn != 128 && bn != 256)) {
    fprintf(stderr, "gemm_probe_v14: need 1 <= M <= 4096, N a multiple of 16, K of 8, "
                    "rounds >= 3, rotate 1..16, trace-form 0..2, bn 64, 128 or 256\n");
    return 2;
  }
  probe_require_gpu();
  const int n_out = silu ? N / 2 : N;
  __nv_bfloat16 *A, *B, *C, *Cb;
  CK(cudaMalloc(&A, (size_t)M * K * 2));
  CK(cudaMalloc(&B, (size_t)N * K * 2));
  CK(cudaMalloc(&C, (size_t)M * n_out * 2));
  CK(cudaMalloc(&Cb, (size_t)M * N * 2));
  cublasHandle_t h = probe_setup(A, (size_t)M * K, B, (size_t)N * K);
  const std::vector<__nv_bfloat16*> Bs = probe_weight_copies(B, (size_t)N * K, rotate);
  auto cublas = [&, n = 0]() mutable { probe_cublas_dense(h, A, Bs[n++ % rotate], Cb, M, N, K); };
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.layout = XS_GEMM_DENSE;
  a.M = M, a.N = N, a.K = K, a.A = A, a.B = B, a.C = C;
  xs_gemm_epilogue epi = XS_GEMM_EPILOGUE_INITIALIZER;
  epi.act = silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE;
  xs_gemm_tiling tl_auto, tl;
  a.version = XS_GEMM_AUTO;
  xsg_probe.splitk_bn = bn; /* (cleared by every probe_gemm: set again for each query) */
  const xs_result r_auto = xs_gemm_tiles(&tl_auto, &a, epi.act);
  a.version = XS_GEMM_V14;
  if (r_auto != XS_OK || xs_gemm_tiles(&tl, &a, epi.act) != XS_OK) {
    fprintf(stderr, "gemm_probe_v14: %s\n", xs_last_error());
    return 1;
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned long long* trace;
  CK(cudaMalloc(&trace, (size_t)XSG_V14_TRACE * sms * 8));

  /* One launch of `version`, PDL or not, traced or not. */
  auto ours = [&](xs_gemm_version version, int pdl, int traced, int decoded = 0, int split = 0,
                  int global = 0, int mode = 0) {
    return [&, version, pdl, traced, decoded, split, global, mode, n = 0]() mutable {
      a.B = Bs[n++ % rotate];
      a.version = version;
      a.split_k = split;
      xsg_probe.splitk_global = global;
      xsg_probe.splitk = mode;
      xs_gemm_schedule sched = XS_GEMM_SCHEDULE_INITIALIZER;
      sched.pdl = pdl;
      xsg_probe.v14_trace = traced;
      xsg_probe.trace = trace;
      xsg_probe.first = decoded;
      xsg_probe.l2_hint = l2;
      xsg_probe.splitk_bn = bn;
      probe_gemm(&a, epi, sched, "v14");
      a.split_k = 0;
      a.B = B;
    };
  };
  char name_auto[64], name_v14[64];
  snprintf(name_auto, sizeof name_auto, "auto -> v%d", (int)tl_auto.version);
  snprintf(name_v14, sizeof name_v14, "v14 %dx%d S %d", tl.tile_m, tl.tile_n, tl.splits);
  std::vector<probe_row> rs = {{"cublas", cublas, {}},
                               {name_auto, ours(XS_GEMM_AUTO, 0, 0), {}},
                               {name_v14, ours(XS_GEMM_V14, 0, 0), {}},
                               {"v14, PDL", ours(XS_GEMM_V14, 1, 0), {}},
                               {"v14, first units decoded", ours(XS_GEMM_V14, 0, 0, 1), {}},
                               {"v14 traced", ours(XS_GEMM_V14, 0, 1, 0, 0, form), {}}};
  /* --splits: v14 at S = 1, 2, 4, 6, 8 (each through the workspace and as clusters where they fit),
   * beside the library's plan (the traced row stays last) */
  if (splits) {
    const probe_row traced = rs.back();
    rs.pop_back();
    static char names[10][40];
    const int ss[] = {1, 2, 4, 6, 8};
    int k = 0;
    for (int S : ss)
      for (int g = 1; g <= (S > 1 ? 2 : 1); g++) {
        xs_gemm_tiling t;
        a.version = XS_GEMM_V14;
        a.split_k = S;
        xsg_probe.splitk_bn = bn;
        const xs_result fits = xs_gemm_tiles(&t, &a, epi.act);
        a.split_k = 0;
        if (fits != XS_OK) /* (S x tiles past the SMs) */
          continue;
        snprintf(names[k], sizeof names[k], "v14 S %d%s", S,
                 S == 1   ? ""
                 : g == 1 ? " workspace"
                          : " clusters");
        rs.push_back({names[k], ours(XS_GEMM_V14, 0, 0, 0, S, g), {}});
        k++;
      }
    rs.push_back(traced);
  }

  /* ---- correctness of every row against cuBLAS (outputs poisoned first) ---- */
  cublas();
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> hb((size_t)M * N);
  CK(cudaMemcpy(hb.data(), Cb, hb.size() * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 1; i < rs.size(); i++)
    if (probe_check(rs[i].name, rs[i].run, C, hb, M, N, n_out, silu)) return 1;

  /* --splits, time only (not checked: their output is wrong on purpose): the library's plan
   * with its fix-up's share not stored (xsg_probe.splitk = 7) and without its SiLU*mul (8) */
  if (splits && tl.splits > 1) {
    const probe_row traced = rs.back();
    rs.pop_back();
    rs.push_back({"v14, fix-up not stored", ours(XS_GEMM_V14, 0, 0, 0, 0, 0, 7), {}});
    if (silu) rs.push_back({"v14, fix-up no SiLU*mul", ours(XS_GEMM_V14, 0, 0, 0, 0, 0, 8), {}});
    rs.push_back(traced);
  }

  /* ---- interleaved timing ---- */
  const int iters = probe_time(rs, rounds);
  const double bytes = (double)N * K * 2;
  printf("# M=%d N=%d K=%d%s, dense, %d units (%d tiles of %d x %d, S %d) on %d SMs, %d rounds x "
         "%d launches, %d weight copies\n",
         M, N, K, silu ? " silu" : "", tl.count * tl.splits, tl.count, tl.tile_m, tl.tile_n,
         tl.splits, sms, rounds, iters, rotate);
  probe_print_rows(rs, bytes);

  /* ---- traced launches, read back: stamps relative to the first CTA's entry ---- */
  const double per_launch_us = probe_median(rs.back().ms) * 1e3;
  const int W = XSG_V14_TRACE;
  for (int rep = 0; rep < 3; rep++) {
    const std::vector<unsigned long long> tr =
        probe_trace_launch(rs.back(), trace, (size_t)W * sms);
    /* SM clocks to ns: [0] / [1] and [10] / [11] pair %globaltimer with the clock at the CTA's
     * entry and at its consumer's end (the timer ticks in up to 1 us steps: the rate is rough on
     * a short launch, the offsets from the entry are not). */
    auto ok = [&](const unsigned long long* t) { return t[0] && t[10] > t[0] && t[11] > t[1]; };
    double g0 = 1e300, g1 = 0, mhz = 0;
    int ctas = 0;
    for (int c = 0; c < sms; c++) {
      const unsigned long long* t = &tr[(size_t)c * W];
      if (!ok(t)) continue;
      ctas++;
      g0 = std::min(g0, (double)t[0]);
      g1 = std::max(g1, (double)t[10]);
      mhz += (double)(t[11] - t[1]) / (double)(t[10] - t[0]) * 1e3;
    }
    if (!ctas) {
      fprintf(stderr, "gemm_probe_v14: empty trace\n");
      return 1;
    }
    mhz /= ctas;
    printf("# trace %d: %d CTAs, SM clock ~%.0f MHz, span (first entry -> last consumer end) "
           "%.2f us; per launch back to back %.2f us\n",
           rep, ctas, mhz, (g1 - g0) / 1e3, per_launch_us);
    const struct {
      const char* what;
      int idx;
    } stats[] = {{"entry", 0},
                 {"set-up done", 2},
                 {"producer: first unit decoded", 3},
                 {"producer: first TMA issued", 4},
                 {"consumer: first k-block in", 6},
                 {"consumer: first multiply done", 7},
                 {"producer: last TMA issued", 5},
                 {"consumer: last multiply done", 8},
                 {"fix-up: sums written", 15},
                 {"fix-up: slices met", 16},
                 {"fix-up: pushes issued (cluster)", 22},
                 {"fix-up: share gathered", 17},
                 {"fix-up: share's stores begin", 20},
                 {"fix-up: first group stored", 21},
                 {"fix-up: share stored", 18},
                 {"fix-up: all received (cluster)", 19},
                 {"consumer: last unit's end", 9},
                 {"producer: ring drained", 14}};
    printf("  %-30s %8s %8s %8s %8s %8s  (us after the first entry)\n", "stamp", "min", "p10",
           "median", "p90", "max");
    for (const auto& st : stats) {
      std::vector<double> v;
      for (int c = 0; c < sms; c++) {
        const unsigned long long* t = &tr[(size_t)c * W];
        if (!ok(t) || (st.idx && !t[st.idx])) continue;
        /* the CTA's own entry in global time, then SM clocks at the common rate */
        const double ns =
            st.idx ? (double)t[0] + (double)(t[st.idx] - t[1]) / (mhz * 1e-3) : (double)t[0];
        v.push_back((ns - g0) / 1e3);
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      const size_t m = v.size();
      printf("  %-30s %8.2f %8.2f %8.2f %8.2f %8.2f\n", st.what, v[0], v[m / 10], v[m / 2],
             v[m * 9 / 10], v[m - 1]);
    }
    /* the weights' read rate per CTA between its first k-block and its last multiply */
    std::vector<double> rate;
    const double kb_bytes = (double)(tl.tile_n * (silu ? 2 : 1)) * 64 * 2;
    const int kbs = (K + 63) / 64;
    for (int c = 0; c < sms; c++) {
      const unsigned long long* t = &tr[(size_t)c * W];
      if (!ok(t) || !t[6] || t[8] <= t[6] || t[13] != 1) continue;
      const double ns = (double)(t[8] - t[6]) / (mhz * 1e-3);
      rate.push_back(kb_bytes * ((double)kbs / tl.splits) / ns); /* bytes / ns = GB/s */
    }
    if (!rate.empty())
      printf("  B read rate per CTA (one unit each), GB/s: min %.1f median %.1f max %.1f\n",
             *std::min_element(rate.begin(), rate.end()), probe_median(rate),
             *std::max_element(rate.begin(), rate.end()));
    if (per_cta) {
      /* CTAs in SM order: smid, first k-block in, last multiply done, end (us after the first
       * entry), B read rate (GB/s) */
      auto at = [&](const unsigned long long* t, int i) {
        return ((double)t[0] + (double)(t[i] - t[1]) / (mhz * 1e-3) - g0) / 1e3;
      };
      std::vector<const unsigned long long*> by_sm;
      for (int c = 0; c < sms; c++)
        if (ok(&tr[(size_t)c * W]) && tr[(size_t)c * W + 6] && tr[(size_t)c * W + 8])
          by_sm.push_back(&tr[(size_t)c * W]);
      std::sort(by_sm.begin(), by_sm.end(), [](auto x, auto y) { return x[12] < y[12]; });
      printf("  per CTA: smid first_kb last_mult end rate_GBs\n");
      for (const unsigned long long* t : by_sm)
        printf("  cta %3llu %6.2f %6.2f %6.2f %5.1f\n", t[12], at(t, 6), at(t, 8), at(t, 9),
               kb_bytes * ((double)kbs / tl.splits) / ((double)(t[8] - t[6]) / (mhz * 1e-3)));
    }
  }
  return 0;
}
