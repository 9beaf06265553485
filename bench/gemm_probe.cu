/* gemm_probe.cu — where v3's time goes on one grouped GEMM case, beside cuBLAS strided-batched.
 *
 *   bench_gemm_probe --experts E --tokens T --N N --K K [--silu] [--rounds R] [--masked] [--graph]
 *                    [--delay NS] [--band B] [--lean] [--energy] [--hints] [--rotate W]
 *                    [--pre P] [--idle-us U] [--dirty-mb M] [--gaps]
 *
 * Balanced counts (T tokens for each of E experts), weights B[E, N, K], activations [E * T, K]
 * (CONTIG when T % 128 == 0 unless --masked; MASKED otherwise: the same buffer); --band B: the
 * raster band in m-blocks (xs_gemm_schedule.swizzle; 0, the default: the library's); --lean:
 * time only cuBLAS, v3, v11, v13, v8 and v3 / v11 without the tail split (no light rows between
 * the full GEMMs); --energy: then the joules per launch of those rows (gemm_probe_common.h
 * probe_energy); --hints: time only
 * cuBLAS, v3 and v11 as the library runs them, and with other L2 cache policies on their TMA
 * loads (xsg_probe.l2_hint: none, A evict_last, B evict_first, both) and L2 promotions in the
 * tensor maps (xsg_probe.l2_promo: 128 or 256 bytes); "none, 256 B" is the library before session
 * 10; where each expert's weights are read once its choice is "B first, 256 B" in one wave ("B
 * first, 128 B" from session 10 to 16) and "A last, 128 B" beyond one wave.
 * --rotate W: W copies of the weights, each row's successive launches cycling through them (a
 * launch finds in L2 the previous launch's lines, not its own), cuBLAS and ours alike. Rows, timed
 * in interleaved rounds, the order shuffled per round (median ms per launch; ratio = cuBLAS / row,
 * median of per-round ratios; gemm_probe_common.h):
 *   cublas strided batched   the baseline (no SiLU*mul: its output is [E * T, N])
 *   v3                       XS_GEMM_V3, as the library runs it
 *   v3 traced                probe mode 5 (gemm_internal.h): v3 writing SM clock stamps per tile
 *   v3 no epilogue           probe mode 4: nothing stored (what the stores cost)
 *   v3 no wgmma              probe mode 6: loads, waits and stores only (what data movement costs)
 *   v3 / v11, whole last wave  the last partial wave as whole tiles (xsg_probe.tail = 1; the
 *                            library splits it into column halves when it is at most half the
 *                            grid, sched.h xsg_tail_slots)
 *   v3 / v11, first tile found  each CTA finds its first tile on the device (xsg_probe.first = 1;
 *                            the library passes it from the host where it can: sched.h
 *                            xsg_first_tiles)
 *   v3 / v11, run-time epilogue  the kernel that reads its epilogue from xsg_params
 *                            (xsg_probe.epi_any = 1) instead of the one with it fixed at compile
 *                            time (gemm_v2.cu launch_fixed), as the library runs them
 * Every row of ours (and v13 traced, probe mode 7) is checked against cuBLAS's output (SiLU*mul
 * applied on the host) before timing. Then the traces of one launch each of v3, v11 and v13: per
 * tile, the wait for its first k-block, the main loop, the epilogue and the gap to the next tile,
 * in microseconds at the SM clock the trace measured, how the CTAs' end times spread (the tail),
 * and the start-up: when, after each CTA's entry, its producer and warp 3 are past setmaxnreg,
 * the table is built, the producer has its first tile and has issued its first TMA, and that
 * k-block is in shared memory (min / median / max over the CTAs; session 14). --delay NS: in the
 * traced modes (v3, v11 and v13 traced) odd CTAs start NS later (their rows' times include it;
 * their first tile's wait is left out of the trace's means), so that half the CTAs reach their tile
 * boundaries out of step with the other half: what the boundary costs when the GPU's CTAs do not
 * all store and refill at once.
 * --pre P: before each traced launch, on the same stream, the same mode once more: 1 on a
 * one-expert 256 x 64 problem, 2 on the same problem (cold code and parameters at the start-up?).
 * --idle-us U: every timed launch alone between two events, then one thread spinning U us (the
 * GPU nearly idle: under its power cap, at a higher clock), for how the ratios move with the duty.
 * --window: the trace's means only over tiles that start in the middle 60 % of the launch (where
 * every CTA is busy, with or without --delay).
 * --dirty-mb M: every timed launch alone, after a memset of M MiB (an L2 full of dirty lines, as
 * a previous kernel's outputs leave it; with --idle-us, after the spin too).
 * --gaps: instead of the timing, where a launch's time goes outside its CTAs (session 17): one
 * thread's %globaltimer stamp, the launch, another stamp, on one stream, with L2 warm (the same
 * launch before) or dirty (a 256 MiB memset before), then a 50 us spin before the first stamp
 * (so the GPU never waits for the host); for the traced modes also the first CTA entry and the
 * last CTA exit, so the time splits into before the CTAs, in them and after them. Rows: cuBLAS, an
 * empty kernel of our launch's shape (grid, 384 threads, 227 KiB of dynamic shared memory, our
 * parameter bytes), v3, v11 and v13 traced (medians of 30; %globaltimer ticks ~0.25 us here).
 * Exit 77 without a GPU. Uses the library's probe hooks (xsg_probe), which nothing else sets.
 */
#define PROBE_NAME "gemm_probe"
#include <utility>

#include "gemm_probe_common.h"
#include "kernels/gemm/gemm_internal.h"
#include "xstage/ptx.cuh"
#include "xstage/gemm.h"

/* --gaps (session 17): see the header. */
__global__ void probe_stamp(unsigned long long* t) {
  t[0] = xs_globaltimer();
}
struct probe_shape_params { /* our Hopper kernels' parameter bytes: 3 maps, xsg_params, xsg_first */
  unsigned char b[3 * sizeof(CUtensorMap) + sizeof(xsg_params) + sizeof(xsg_first)];
};
__global__ void __launch_bounds__(384, 1)
    probe_empty(const __grid_constant__ probe_shape_params x, unsigned long long* t) {
  if (threadIdx.x == 0 && x.b[7] == 0x5a) t[blockIdx.x] = xs_globaltimer(); /* never true */
}
template <class Cublas, class Ours>
static int probe_gaps(Cublas& cublas, Ours& ours, unsigned long long* trace, size_t stride,
                      int ctas) {
  unsigned long long* g;
  void* flush;
  CK(cudaMalloc(&g, 16));
  CK(cudaMalloc(&flush, 256u << 20));
  const int smem = xsg_hopper_smem_bytes(256); /* v3's, v11's and v13's */
  CK(cudaFuncSetAttribute(probe_empty, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  probe_shape_params x = {};
  std::function<void()> empty = [&]() { probe_empty<<<ctas, 384, smem, probe_stream>>>(x, g); };
  struct gap_row {
    const char* name;
    std::function<void()> fn;
    int traced;
  };
  const gap_row rows[] = {{"cublas strided batched", cublas, 0},
                          {"empty kernel, our shape", empty, 0},
                          {"v3 traced", ours(5), 1},
                          {"v11 traced", ours(8), 1},
                          {"v13 traced", ours(7), 1}};
  std::vector<unsigned long long> tr(stride * ctas);
  printf("# gaps: %d CTAs; median us of 30 (stamp -> launch -> stamp on one stream)\n", ctas);
  printf("  %-26s %-5s %8s %8s %8s %8s\n", "row", "L2", "total", "before", "in CTAs", "after");
  for (int dirty = 0; dirty < 2; dirty++)
    for (const gap_row& r : rows) {
      std::vector<double> tot, pre, in, post;
      for (int i = 0; i < 30; i++) {
        if (dirty)
          CK(cudaMemsetAsync(flush, i, 256u << 20, probe_stream));
        else
          r.fn();
        if (xsg_bench_idle(50, probe_stream) != XS_OK) {
          fprintf(stderr, "gemm_probe: %s\n", xs_last_error());
          exit(1);
        }
        probe_stamp<<<1, 1, 0, probe_stream>>>(g);
        r.fn();
        probe_stamp<<<1, 1, 0, probe_stream>>>(g + 1);
        CK(cudaStreamSynchronize(probe_stream));
        unsigned long long h[2];
        CK(cudaMemcpy(h, g, 16, cudaMemcpyDeviceToHost));
        tot.push_back((h[1] - h[0]) / 1e3);
        if (!r.traced) continue;
        CK(cudaMemcpy(tr.data(), trace, tr.size() * 8, cudaMemcpyDeviceToHost));
        unsigned long long e0 = ~0ull, e1 = 0;
        for (int c = 0; c < ctas; c++) {
          e0 = std::min(e0, tr[c * stride + 1]);
          e1 = std::max(e1, tr[c * stride + 3]);
        }
        pre.push_back(((double)e0 - (double)h[0]) / 1e3);
        in.push_back(((double)e1 - (double)e0) / 1e3);
        post.push_back(((double)h[1] - (double)e1) / 1e3);
      }
      auto med = [](const std::vector<double>& v) { return v.empty() ? NAN : probe_median(v); };
      printf("  %-26s %-5s %8.2f %8.2f %8.2f %8.2f\n", r.name, dirty ? "dirty" : "warm", med(tot),
             med(pre), med(in), med(post));
    }
  cudaFree(g);
  cudaFree(flush);
  return 0;
}

int main(int argc, char** argv) {
  int E = 8, T = 512, N = 7168, K = 2048, silu = 0, rounds = 10, masked = 0, delay = 0, window = 0;
  int band = 0, lean = 0, energy = 0, hints = 0, rotate = 1, pre = 0, gaps = 0;
  const probe_opt opts[] = {{"--experts", &E, 0},
                            {"--tokens", &T, 0},
                            {"--N", &N, 0},
                            {"--K", &K, 0},
                            {"--delay", &delay, 0},
                            {"--rounds", &rounds, 0},
                            {"--window", &window, 1},
                            {"--silu", &silu, 1},
                            {"--masked", &masked, 1},
                            {"--graph", &probe_graph, 1},
                            {"--band", &band, 0},
                            {"--lean", &lean, 1},
                            {"--energy", &energy, 1},
                            {"--hints", &hints, 1},
                            {"--rotate", &rotate, 0},
                            {"--pre", &pre, 0},
                            {"--idle-us", &probe_idle_us, 0},
                            {"--dirty-mb", &probe_dirty_mb, 0},
                            {"--gaps", &gaps, 1}};
  probe_parse(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]));
  if (E < 1 || T < 1 || N < 16 || N % 16 || K < 8 || K % 8 || rounds < 1 || band < 0 || band > 64 ||
      rotate < 1 || rotate > 16 || pre < 0 || pre > 2 || probe_idle_us < 0 ||
      probe_idle_us > 100000 || probe_dirty_mb < 0 || probe_dirty_mb > 4096 ||
      ((probe_idle_us || probe_dirty_mb) && probe_graph)) {
    fprintf(stderr, "gemm_probe: need E, T >= 1, N a multiple of 16, K of 8, rounds >= 1, band "
                    "0..64, rotate 1..16, pre 0..2, idle-us 0..100000, dirty-mb 0..4096 (neither "
                    "with --graph)\n");
    return 2;
  }
  probe_require_gpu();
  if (T % XS_GEMM_GROUP_ALIGN) masked = 1;
  const int rows = E * T, n_out = silu ? N / 2 : N;
  __nv_bfloat16 *A, *B, *C, *Cb;
  int32_t *d_off, *d_cnt;
  CK(cudaMalloc(&A, (size_t)rows * K * 2));
  CK(cudaMalloc(&B, (size_t)E * N * K * 2));
  CK(cudaMalloc(&C, (size_t)rows * n_out * 2));
  CK(cudaMalloc(&Cb, (size_t)rows * N * 2));
  CK(cudaMalloc(&d_off, (E + 1) * 4));
  CK(cudaMalloc(&d_cnt, E * 4));
  std::vector<int32_t> off(E + 1), cnt(E, T);
  for (int e = 0; e <= E; e++)
    off[e] = e * T;
  CK(cudaMemcpy(d_off, off.data(), (E + 1) * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_cnt, cnt.data(), E * 4, cudaMemcpyHostToDevice));
  cublasHandle_t h = probe_setup(A, (size_t)rows * K, B, (size_t)E * N * K);
  /* --rotate: launch i of a row reads weight copy i % W */
  const std::vector<__nv_bfloat16*> Bs = probe_weight_copies(B, (size_t)E * N * K, rotate);
  auto cublas = [&, n = 0]() mutable {
    probe_cublas_batched(h, A, Bs[n++ % rotate], Cb, E, T, N, K);
  };
  xs_gemm_args a = XS_GEMM_ARGS_INITIALIZER;
  a.layout = masked ? XS_GEMM_GROUPED_MASKED : XS_GEMM_GROUPED_CONTIG;
  a.M = masked ? T : rows, a.N = N, a.K = K, a.experts = E, a.version = XS_GEMM_V3;
  a.A = A, a.B = B, a.C = C, a.m_offsets = d_off, a.m_counts = d_cnt;
  xs_gemm_epilogue epi = XS_GEMM_EPILOGUE_INITIALIZER;
  epi.act = silu ? XS_GEMM_ACT_SILU_MUL : XS_GEMM_ACT_NONE;
  xs_gemm_schedule sched = XS_GEMM_SCHEDULE_INITIALIZER;
  sched.swizzle = band; /* 0: the library's */
  xs_gemm_tiling tl;
  if (xs_gemm_tiles(&tl, &a, epi.act) != XS_OK) {
    fprintf(stderr, "gemm_probe: %s\n", xs_last_error());
    return 1;
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int cap = (tl.count + sms - 1) / sms + 1;
  unsigned long long* trace;
  const size_t stride = XSG_TRACE_HEAD + (size_t)cap * 2 * XSG_TRACE_REC;
  CK(cudaMalloc(&trace, stride * sms * 8));
  /* mode: a probe mode of v3 (0: v3 itself). */
  auto ours = [&](int mode, int hint = 0, int promo = 0, int tail = 0, int first = 0, int any = 0) {
    return [&, mode, hint, promo, tail, first, any, n = 0]() mutable {
      a.B = Bs[n++ % rotate];
      xsg_probe.l2_promo = promo;
      xsg_probe.v3_mode = mode;
      xsg_probe.trace = trace;
      xsg_probe.trace_cap = cap;
      xsg_probe.delay_ns = delay;
      xsg_probe.l2_hint = hint;
      xsg_probe.tail = tail;
      xsg_probe.first = first;
      xsg_probe.epi_any = any;
      char what[32];
      snprintf(what, sizeof what, "mode %d", mode);
      probe_gemm(&a, epi, sched, what);
      a.B = B;
    };
  };

  /* Another version as the library runs it (no probe mode). */
  auto version = [&](xs_gemm_version v) {
    return [&, v, n = 0]() mutable {
      xs_gemm_args av = a;
      av.version = v;
      xsg_probe.epi_any = 0;
      av.B = Bs[n++ % rotate];
      char what[16];
      snprintf(what, sizeof what, "v%d", (int)v);
      probe_gemm(&av, epi, sched, what);
    };
  };

  /* ---- correctness of v3 and v3 traced against cuBLAS (outputs poisoned first) ---- */
  cublas();
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> hb((size_t)rows * N);
  CK(cudaMemcpy(hb.data(), Cb, hb.size() * 2, cudaMemcpyDeviceToHost));
  const std::vector<std::pair<std::string, std::function<void()>>> checked = {
      {"v3", ours(0)},
      {"v3 traced", ours(5)},
      {"v11", ours(1)},
      {"v11 traced", ours(8)},
      {"v13", ours(3)},
      {"v13 traced", ours(7)},
      {"v8", version(XS_GEMM_V8)},
      {"v3, none, 256 B", ours(0, 16, 4)},
      {"v3, B first, 128 B", ours(0, 4, 3)},
      {"v11, none, 256 B", ours(1, 16, 4)},
      {"v3, whole last wave", ours(0, 0, 0, 1)},
      {"v11, whole last wave", ours(1, 0, 0, 1)},
      {"v3, first tile found", ours(0, 0, 0, 0, 1)},
      {"v11, first tile found", ours(1, 0, 0, 0, 1)},
      {"v3, run-time epilogue", ours(0, 0, 0, 0, 0, 1)},
      {"v11, run-time epilogue", ours(1, 0, 0, 0, 0, 1)}};
  for (const auto& chk : checked)
    if (probe_check(chk.first, chk.second, C, hb, rows, N, n_out, silu)) return 1;

  /* ---- interleaved timing ---- */
  std::vector<probe_row> rs = {{"cublas strided batched", cublas, {}},
                               {"v3", ours(0), {}},
                               {"v3 traced", ours(5), {}},
                               {"v3 no epilogue", ours(4), {}},
                               {"v3 no wgmma", ours(6), {}},
                               {"v11 (mode 1)", ours(1), {}},
                               {"v11 traced", ours(8), {}},
                               {"v13 (mode 3)", ours(3), {}},
                               {"v8 (2-CTA clusters)", version(XS_GEMM_V8), {}},
                               {"v3, whole last wave", ours(0, 0, 0, 1), {}},
                               {"v11, whole last wave", ours(1, 0, 0, 1), {}},
                               {"v3, first tile found", ours(0, 0, 0, 0, 1), {}},
                               {"v11, first tile found", ours(1, 0, 0, 0, 1), {}},
                               {"v3, run-time epilogue", ours(0, 0, 0, 0, 0, 1), {}},
                               {"v11, run-time epilogue", ours(1, 0, 0, 0, 0, 1), {}}};
  /* The full-work rows: the probe's light rows (traced, no epilogue, no wgmma) give the GPU's
   * power budget room that a run of full GEMMs does not have (--lean, --energy). */
  auto full_rows = [](const std::vector<probe_row>& all) {
    std::vector<probe_row> full;
    for (const auto& r : all)
      if (r.name.find("traced") == std::string::npos && r.name.find(" no ") == std::string::npos)
        full.push_back(r);
    return full;
  };
  if (lean) rs = full_rows(rs);
  /* xsg_params.l2_hint: A's kind | B's kind << 2 (1 first, 2 last; 16: no policy); promo: the
   * maps' L2 promotion (xsg_probe.l2_promo: 3 128 B, 4 256 B; 0 the library's) */
  if (hints)
    rs = {{"cublas strided batched", cublas, {}},
          {"v3", ours(0), {}},
          {"v3, none, 256 B", ours(0, 16, 4), {}},
          {"v3, A last, 256 B", ours(0, 2, 4), {}},
          {"v3, none, 128 B", ours(0, 16, 3), {}},
          {"v3, B first, 128 B", ours(0, 4, 3), {}},
          {"v3, B first, 256 B", ours(0, 4, 4), {}},
          {"v3, A last, 128 B", ours(0, 2, 3), {}},
          {"v3, A last, B first, 256 B", ours(0, 6, 4), {}},
          {"v11 (mode 1)", ours(1), {}},
          {"v11, none, 256 B", ours(1, 16, 4), {}},
          {"v11, A last, 128 B", ours(1, 2, 3), {}},
          {"v11, A last, B first, 256 B", ours(1, 6, 4), {}}};

  if (gaps) return probe_gaps(cublas, ours, trace, stride, tl.count < sms ? tl.count : sms);

  const int iters = probe_time(rs, rounds);
  const double flops = 2.0 * rows * (double)N * K;
  printf("# E=%d T=%d N=%d K=%d%s, %s, %d tiles on %d SMs, %d rounds x %d launches, %d weight "
         "copies\n",
         E, T, N, K, silu ? " silu" : "", masked ? "masked" : "contig", tl.count, sms, rounds,
         iters, rotate);
  printf("  %-28s %9s %9s %8s %8s\n", "row", "ms", "TFLOP/s", "ratio", "host_us");
  for (auto& r : rs) {
    const double ms = probe_median(r.ms);
    printf("  %-28s %9.4f %9.1f %8.3f %8s\n", r.name.c_str(), ms, flops / ms / 1e9,
           probe_ratio(rs, r), probe_host(r).c_str());
  }
  if (energy) { /* after the timing: each row's batch is sized from its time */
    std::vector<probe_row> full = full_rows(rs);
    if (probe_energy(full)) return 1;
  }

  /* ---- one traced launch of a mode, read back ---- */
  auto analyze = [&](int mode, const char* what_mode, int pre) -> int {
    CK(cudaMemset(trace, 0, stride * sms * 8));
    /* --pre: the same mode launched right before the traced launch, on the same stream (no
     * host sync between): 1 a one-expert 256 x 64 problem (its code and parameters' lines are
     * then in L2, its own stamps overwritten), 2 the same problem (as the bench's batches run) */
    if (pre == 1) {
      const xs_gemm_args saved = a;
      a.experts = 1, a.M = T, a.N = 256, a.K = 64;
      ours(mode)();
      a = saved;
    } else if (pre == 2) {
      ours(mode)();
    }
    ours(mode)();
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> tr(stride * sms);
    CK(cudaMemcpy(tr.data(), trace, tr.size() * 8, cudaMemcpyDeviceToHost));
    const int kb = (K + 63) / 64;
    /* Per-tile means in ns (SM clock stamps over the CTA's measured clock): */
    enum {
      LOOP,
      WAIT0,
      MAIN,
      EPI,
      P_SLOT,
      P_LAT,
      P_LEAD,
      E0_FREE,
      E0_BAR,
      E0_ISSUE,
      E1_FREE,
      E1_BAR,
      E1_ISSUE,
      E_TAIL,
      NSTAT
    };
    static const char* what[NSTAT] = {
        "epilogue end -> loop top (previous tile)",
        "first k-block's full wait (its slot's entry names the tile)",
        "main loop",
        "epilogue",
        "producer: coordinates -> k-block 0 issued",
        "producer: k-block 0 issued -> consumer has it",
        "producer: k-block 0 issued, after the previous main loop's end",
        "epilogue pass 0: main loop end -> staging free",
        "epilogue pass 0: -> warpgroup at the barrier",
        "epilogue pass 0: -> staged, fenced, TMA stores issued",
        "epilogue pass 1: -> staging free (pass 0's stores read)",
        "epilogue pass 1: -> warpgroup at the barrier",
        "epilogue pass 1: -> staged, fenced, TMA stores issued",
        "epilogue: last pass issued -> epilogue end"};
    double sum[NSTAT] = {0};
    long num[NSTAT] = {0};
    double mhz_sum = 0;
    unsigned long long g0 = ~0ull, g1 = 0;
    std::vector<double> ends, entry, issue0, arrive0; /* per CTA: start-up, in ns */
    std::vector<double> st_dec, st_dec3, st_tab, st_wait, coord0;
    auto add = [&](int i, double ns) { sum[i] += ns, num[i]++; };
    /* --window: only tiles whose loop top falls in the middle 60 % of the launch's span (every
     * CTA busy, none alone at the start or the end) */
    unsigned long long w0 = 0, w1 = ~0ull;
    if (window) {
      unsigned long long s0 = ~0ull, s1 = 0;
      for (int c = 0; c < sms; c++) {
        const unsigned long long* t = &tr[c * stride];
        if (t[3] > t[1]) s0 = std::min(s0, t[1]), s1 = std::max(s1, t[3]);
      }
      w0 = s0 + (s1 - s0) / 5, w1 = s1 - (s1 - s0) / 5;
    }
    for (int c = 0; c < sms; c++) {
      const unsigned long long* t = &tr[c * stride];
      if (!t[3] || t[3] <= t[1]) continue;
      const double cpn = (double)(t[2] - t[0]) / (double)(t[3] - t[1]); /* cycles per ns */
      mhz_sum += cpn * 1e3;
      g0 = std::min(g0, t[1]), g1 = std::max(g1, t[3]);
      ends.push_back((double)t[3]);
      auto d = [&](unsigned long long x, unsigned long long y) {
        return ((double)x - (double)y) / cpn;
      };
      /* the first tile: the producer's first TMA issue and its arrival, after the CTA's entry */
      const unsigned long long* r0 = t + XSG_TRACE_HEAD;
      entry.push_back((double)t[1]);
      if (t[4]) st_dec.push_back(d(t[4], t[0]));
      if (t[5]) st_dec3.push_back(d(t[5], t[0]));
      if (t[6]) st_tab.push_back(d(t[6], t[0]));
      if (t[7]) st_wait.push_back(d(t[7], t[0]));
      if (r0[7]) issue0.push_back(d(r0[7], t[0]));
      if (r0[6]) coord0.push_back(d(r0[6], t[0]));
      if (r0[2]) arrive0.push_back(d(r0[2], t[0]));
      for (int w = 0; w < 2; w++)
        for (int j = 0; j < cap; j++) {
          const unsigned long long* r = t + XSG_TRACE_HEAD + (j * 2 + w) * XSG_TRACE_REC;
          if (!r[1]) break;
          const unsigned long long* rp = j ? r - 2 * XSG_TRACE_REC : nullptr;
          if (window) { /* the loop top in global time: entry + clocks / clocks per ns */
            const double at = (double)t[1] + ((double)r[5] - (double)t[0]) / cpn;
            if (at < (double)w0 || at > (double)w1) continue;
          }
          if (rp) add(LOOP, d(r[5], rp[4]));
          /* --delay: an odd CTA's first tile waits out the delay; not a boundary */
          if (j || !delay) add(WAIT0, d(r[2], r[5]));
          add(MAIN, d(r[3], r[2]));
          add(EPI, d(r[4], r[3]));
          if (r[8] && r[9] && r[12]) {
            add(E0_FREE, d(r[8], r[3])), add(E0_BAR, d(r[9], r[8])), add(E0_ISSUE, d(r[12], r[9]));
            if (r[10] && r[11] && r[13]) {
              add(E1_FREE, d(r[10], r[12])), add(E1_BAR, d(r[11], r[10]));
              add(E1_ISSUE, d(r[13], r[11])), add(E_TAIL, d(r[4], r[13]));
            } else {
              add(E_TAIL, d(r[4], r[12]));
            }
          }
          if (w == 0 && r[7]) {
            add(P_SLOT, d(r[7], r[6]));
            if (j || !delay) add(P_LAT, d(r[2], r[7]));
            if (rp) add(P_LEAD, d(r[7], rp[3]));
          }
        }
    }
    const int ctas = (int)ends.size();
    if (!ctas || !num[MAIN]) {
      fprintf(stderr, "gemm_probe: the trace of %s is empty\n", what_mode);
      return 1;
    }
    std::sort(ends.begin(), ends.end());
    printf("# trace of one launch of %s%s: %d CTAs, %ld tile records, SM clock %.0f MHz, span %.1f "
           "us\n",
           what_mode,
           pre == 1   ? ", after a small launch"
           : pre == 2 ? ", after the same launch"
                      : "",
           ctas, num[MAIN], mhz_sum / ctas, (g1 - g0) / 1e3);
    printf("  per tile, mean us (consumer warpgroups' thread 0; the producer's thread 0):\n");
    for (int i = 0; i < NSTAT; i++)
      printf("    %-66s %8.3f\n", what[i], num[i] ? sum[i] / num[i] / 1e3 : 0.0);
    printf("    %-66s %8.4f\n", "main loop per k-block", sum[MAIN] / num[MAIN] / 1e3 / kb);
    auto spread = [](const char* what, std::vector<double> v, double base) {
      if (v.empty()) return;
      std::sort(v.begin(), v.end());
      printf("  %s (us): min %.2f  median %.2f  max %.2f\n", what, (v.front() - base) / 1e3,
             (v[v.size() / 2] - base) / 1e3, (v.back() - base) / 1e3);
    };
    spread("CTA entry after the first CTA's", entry, (double)g0);
    spread("producer thread 0 past setmaxnreg.dec, after the CTA's entry", st_dec, 0.0);
    spread("warp 3 past setmaxnreg.dec", st_dec3, 0.0);
    spread("warp 3: table loaded", st_tab, 0.0);
    spread("producer: table wait over", st_wait, 0.0);
    spread("producer: first tile's coordinates", coord0, 0.0);
    spread("first tile's first TMA issued, after the CTA's entry", issue0, 0.0);
    spread("first tile's first k-block in shared memory, after the CTA's entry", arrive0, 0.0);
    printf("  CTA end times after the first start (us): min %.1f  median %.1f  max %.1f\n",
           (ends.front() - g0) / 1e3, (ends[ctas / 2] - g0) / 1e3, (ends.back() - g0) / 1e3);
    printf("  main-loop share of the CTAs' summed spans: %.3f\n",
           sum[MAIN] / 2 / ((double)(g1 - g0) * ctas));
    return 0;
  };
  if (analyze(5, "v3", pre) || analyze(8, "v11", pre) || analyze(7, "v13", pre)) return 1;
  return 0;
}
