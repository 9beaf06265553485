/* test_plan.c — the planner against the model it inverts: the smallest free gap gives zero
 * stall and 1 ns less stalls; the largest burst likewise; a feasible split simulates without
 * stall and one burst fewer stalls; fusion predictions against a direct simulation. */
#include "test.h"
#include "xstage/xstage.h"

#include <stdlib.h>
#include <string.h>

static unsigned long long g_rng = 0xDEADBEEFCAFEF00Dull;
static double urand(double lo, double hi) { return lo + (hi - lo) * xt_rand_uniform(&g_rng); }
static double lurand(double lo, double hi) { return exp(urand(log(lo), log(hi))); }

static int g_tmin = 0; /* 1: the profiles carry the latency floor t_min_ns */
static int g_room = 0; /* 1: they also carry the burst room q_burst_bytes (below or above Q) */

static xs_link_profile random_profile(void) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  p.t_fixed_ns = urand(0, 2000);
  p.r_cta = lurand(5, 200);
  p.r_cap = lurand(200, 5000);
  p.R = lurand(10, 500);
  p.nq = 2;
  p.q_k[0] = 8, p.q_k[1] = 64;
  p.q_bytes[0] = lurand(64e3, 8e6), p.q_bytes[1] = lurand(64e3, 8e6);
  p.unfair_mean = urand(0, 1);
  if (g_tmin) p.t_min_ns = lurand(10, 2e4);
  if (g_room) {
    p.has_q_burst = 1;
    for (int i = 0; i < 2; i++) p.q_burst_bytes[i] = p.q_bytes[i] * lurand(0.5, 4.0);
  }
  return p;
}

/* Total stall of n equal bursts (V, G) from idle by event simulation. */
static double sim_stall(const xs_link_profile* p, double K, double V, double G, size_t n) {
  xs_burst* bs = malloc(n * sizeof *bs);
  for (size_t i = 0; i < n; i++) bs[i].V = V, bs[i].gap_ns = G;
  xs_fluid_summary s;
  xs_fluid_simulate(NULL, &s, p, K, bs, n);
  free(bs);
  return s.total_stall_ns;
}

static void test_min_free_gap(void) {
  int tested = 0, infinite = 0;
  for (int it = 0; it < 500; it++) {
    xs_link_profile p = random_profile();
    double K = floor(lurand(1, 128)), V = lurand(1e3, 4e6), G;
    XT_CHECK(xs_plan_min_free_gap(&G, &p, K, V) == XS_OK);
    xs_steady s;
    if (!isfinite(G)) { /* no gap helps: one burst from idle already overflows */
      infinite++;
      XT_CHECK(xs_fluid_periodic(&s, &p, K, V, 1e15) == XS_OK);
      XT_CHECK(s.stall_ns > 0 && s.t_iss_first_ns > s.t_iss_ns * 0.999999);
      continue;
    }
    XT_CHECK(xs_fluid_periodic(&s, &p, K, V, G) == XS_OK);
    XT_CHECK_MSG(s.stall_ns == 0.0, "stall %g at the min gap %g", s.stall_ns, G);
    XT_CHECK(sim_stall(&p, K, V, G, 3000) == 0.0);
    double closed;
    xs_predict_closed(&closed, &p, K, V, G);
    if (G >= 1.0) {
      tested++;
      XT_CHECK(xs_fluid_periodic(&s, &p, K, V, G - 1.0) == XS_OK);
      XT_CHECK_MSG(s.stall_ns > 0.0, "no stall 1 ns below the min gap %g", G);
      /* the event simulation stalls too once the backlog has climbed to its fixed point */
      double r = fmin(K * p.r_cta, p.r_cap), Q, g1 = G - 1.0;
      xs_capacity(&Q, &p, K);
      double a = V * (1 - p.R / r), c = fmax(0, fmin(Q, a) - p.R * g1);
      double tf = fmax(p.t_fixed_ns, p.t_min_ns - V / r); /* the burst's idle overhead */
      double nsat = ceil((Q - p.R * g1 - c) / (a - p.R * (tf + g1))) + 2;
      if (nsat < 2e5) XT_CHECK(sim_stall(&p, K, V, g1, (size_t)nsat) > 0.0);
    }
  }
  XT_CHECK(tested > 100 && infinite > 10);
}

static void test_max_burst(void) {
  for (int it = 0; it < 500; it++) {
    xs_link_profile p = random_profile();
    double K = floor(lurand(1, 128)), G = urand(0, 1) < 0.1 ? 0 : lurand(10, 1e6), V;
    XT_CHECK(xs_plan_max_burst(&V, &p, K, G) == XS_OK);
    xs_steady s;
    if (!isfinite(V)) { /* r_iss <= R: nothing ever backs up */
      XT_CHECK(xs_fluid_periodic(&s, &p, K, 1e12, G) == XS_OK && s.stall_ns == 0.0);
      continue;
    }
    XT_CHECK(xs_fluid_periodic(&s, &p, K, V, G) == XS_OK && s.stall_ns == 0.0);
    XT_CHECK(xs_fluid_periodic(&s, &p, K, V * (1 + 1e-9) + 1, G) == XS_OK && s.stall_ns > 0.0);
    double G2; /* the two inverses agree */
    xs_plan_min_free_gap(&G2, &p, K, V);
    XT_CHECK_MSG(G2 <= G * (1 + 1e-9) + 1e-6, "V %g G %g min gap %g", V, G, G2);
  }
}

static void test_split(void) {
  int feas = 0, infeas = 0;
  for (int it = 0; it < 300; it++) {
    xs_link_profile p = random_profile();
    double K = floor(lurand(8, 128)), V = lurand(1e5, 5e7), W = lurand(1e3, 2e6);
    xs_split_plan sp;
    XT_CHECK(xs_plan_split(&sp, &p, K, V, W) == XS_OK);
    XT_CHECK(sp.nbursts >= 1);
    XT_NEAR(sp.burst_bytes * (double)sp.nbursts, V, 1e-12);
    XT_NEAR(sp.gap_ns * (double)sp.nbursts, W, 1e-12);
    double st = sim_stall(&p, K, sp.burst_bytes, sp.gap_ns, (size_t)sp.nbursts);
    XT_NEAR(st, sp.stall_ns, 1e-9);
    if (sp.feasible) {
      feas++;
      XT_CHECK(st == 0.0);
      if (sp.nbursts > 1) /* fewest: one burst fewer stalls */
        XT_CHECK(sim_stall(&p, K, V / (double)(sp.nbursts - 1), W / (double)(sp.nbursts - 1),
                           (size_t)sp.nbursts - 1) > 0.0);
    } else {
      infeas++;
      XT_CHECK(st > 0.0);
    }
  }
  XT_CHECK(feas > 50);
}

static void test_fusion(void) {
  const xs_workload* cat;
  size_t n;
  XT_CHECK(xs_catalogue(&cat, &n) == XS_OK);
  XT_CHECK(n >= 9);
  int moe = 0, uly = 0;
  for (size_t i = 0; i < n; i++) {
    moe += strcmp(cat[i].kind, "moe") == 0;
    uly += strcmp(cat[i].kind, "ulysses") == 0;
    XT_CHECK(cat[i].note[0] != '\0');
  }
  XT_CHECK(moe >= 4 && uly >= 5);
  const char* names[2] = {"h200-host", "h200-nvlink"};
  for (int pi = 0; pi < 2; pi++) {
    xs_link_profile p;
    xs_profile_default(&p, names[pi]);
    for (size_t i = 0; i < n; i++) {
      const xs_workload* w = &cat[i];
      xs_fusion_prediction f;
      XT_CHECK(xs_predict_fusion(&f, &p, w) == XS_OK);
      /* against a direct event simulation of the aggregate issuer */
      size_t nt = (size_t)w->tiles_per_producer;
      xs_burst* bs = malloc(nt * sizeof *bs);
      xs_burst_result* r = malloc(nt * sizeof *r);
      for (size_t t = 0; t < nt; t++) bs[t].V = w->K * w->bytes_per_tile, bs[t].gap_ns = w->compute_ns_per_tile;
      xs_fluid_summary s;
      xs_fluid_simulate(r, &s, &p, w->K, bs, nt);
      double mean = 0;
      for (size_t t = 0; t < nt; t++) mean += bs[t].gap_ns + r[t].t_iss_mean_ns;
      XT_NEAR(f.fused_ns, s.total_ns, 1e-12);
      /* completion: the last burst's backlog drained at R(K) */
      {
        double rk = 0;
        XT_CHECK(xs_drain_rate(&rk, &p, w->K) == XS_OK);
        XT_NEAR(f.drain_ns, r[nt - 1].backlog_end / rk, 1e-9);
        XT_NEAR(f.fused_ns + f.drain_ns, s.drain_end_ns, 1e-9);
        XT_CHECK(f.drain_ns > 0);
      }
      XT_NEAR(f.fused_mean_ns, mean, 1e-12);
      XT_EQ_INT(f.first_stall_tile, s.first_stall);
      XT_NEAR(f.compute_ns, nt * w->compute_ns_per_tile, 1e-12);
      XT_NEAR(f.serial_ns, f.compute_ns + f.total_bytes / p.R, 1e-12);
      /* spread producers: the first tile as in lockstep, then per tile the compute plus one
       * producer's own issue from idle, or the link at R(K), whichever is longer */
      {
        double t1 = 0, rk = 0, later = (double)(nt - 1), V = w->K * w->bytes_per_tile;
        XT_CHECK(xs_t0_iss(&t1, &p, 1, w->bytes_per_tile) == XS_OK);
        XT_CHECK(xs_drain_rate(&rk, &p, w->K) == XS_OK);
        double want = bs[0].gap_ns + r[0].t_iss_ns +
                      fmax(later * (w->compute_ns_per_tile + t1), later * V / rk);
        XT_NEAR(f.fused_spread_ns, want, 1e-9);
        XT_NEAR(f.overhead_spread_frac, f.fused_spread_ns / f.compute_ns - 1, 1e-9);
        if (nt == 1) XT_NEAR(f.fused_spread_ns, f.fused_ns, 1e-12);
        XT_CHECK(f.fused_spread_ns >= f.compute_ns);
      }
      XT_CHECK(f.fused_mean_ns <= f.fused_ns * (1 + 1e-12) && f.fused_ns >= f.compute_ns);
      free(bs);
      free(r);
    }
  }
  /* a workload with no gap cannot beat sending the bytes at R */
  xs_link_profile h;
  xs_profile_default(&h, "h200-host");
  xs_workload w = XS_WORKLOAD_INITIALIZER;
  w.K = 32, w.bytes_per_tile = 131072, w.compute_ns_per_tile = 0, w.tiles_per_producer = 50;
  xs_fusion_prediction f;
  XT_CHECK(xs_predict_fusion(&f, &h, &w) == XS_OK);
  double q32 = 0;
  XT_CHECK(xs_capacity(&q32, &h, 32) == XS_OK);
  XT_CHECK(f.fused_ns >= f.total_bytes / h.R - q32 / h.R);
  XT_EQ_INT(f.regime, XS_REGIME_DRAIN);
  w.size = 0;
  XT_CHECK(xs_predict_fusion(&f, &h, &w) == XS_ERR_INVALID_ARG);
}

/* Compute that reads memory (the coupled prediction, docs/model.md §10): each producer computes,
 * issues its tile, and computes its next tile only once its own bytes have drained; the link
 * serves R(K) by weighted sharing, weights spaced evenly in [1 - s, 1 + s] and rotating by c per
 * tile; no CTA computes while the stage holds more than its shared room (Q(K) extrapolated to
 * K = 0). Checked against closed forms (one producer; equal weights) and a time-stepped
 * reference written here from those rules, not from the library's event loop. */
static int cpl_gcd(int a, int b) {
  return b ? cpl_gcd(b, a % b) : a;
}

static double cpl_reference(const xs_link_profile* p, int K, double v, double G, int n, double s,
                            double dt, double* drain) {
  double R = 0, Q = 0, Qb = 0, t0 = 0;
  xs_drain_rate(&R, p, K);
  xs_capacity(&Q, p, K);
  xs_burst_room(&Qb, p, K);
  xs_t0_iss(&t0, p, 1, v);
  /* the shared room: Q through its two smallest points, at K = 0 */
  double Qs = p->q_bytes[0] - p->q_k[0] * (p->q_bytes[1] - p->q_bytes[0]) / (p->q_k[1] - p->q_k[0]);
  Qs = fmin(p->q_bytes[0], fmax(0, Qs));
  double B = 0;
  int c = (int)(0.381966 * K);
  if (c < 1) c = 1;
  while (cpl_gcd(c, K) != 1)
    c++;
  double q[16] = {0}, work[16], w[16] = {0}, t = 0, fused = 0, end = 0;
  int tile[16] = {0}, done = 0;
  for (int i = 0; i < K; i++)
    work[i] = G;
  while (done < K) {
    double wsum = 0;
    int held = B > Qs; /* the stage holds more than its shared room: nobody computes */
    for (int i = 0; i < K; i++)
      if (q[i] > 0) wsum += w[i];
    int issued_last = 0;
    for (int i = 0; i < K; i++) {
      if (tile[i] > n) continue;
      if (q[i] > 0) { /* draining: its share of R */
        q[i] -= R * w[i] / wsum * dt;
        if (q[i] <= 0) {
          q[i] = 0;
          if (tile[i] == n)
            tile[i]++, done++, end = t + dt;
          else
            work[i] = G;
        }
      } else if (!held && (work[i] -= dt) <= 0) { /* computed: issue the tile */
        w[i] = K > 1 ? 1 - s + 2 * s * (double)((i + tile[i] * c) % K) / (K - 1) : 1;
        q[i] = v, tile[i]++;
        if (tile[i] == n) issued_last = 1;
        if (v <= 0 && tile[i] == n) tile[i]++, done++, end = t + dt;
      }
    }
    t += dt;
    B = 0;
    for (int i = 0; i < K; i++)
      B += q[i];
    if (issued_last) fused = fmax(fused, t + fmax(t0, (B - fmin(Q, Qb)) / R));
  }
  *drain = fmax(0, end - fused);
  return fused;
}

static void test_coupled(void) {
  xs_link_profile h;
  xs_profile_default(&h, "h200-host");
  xs_workload w = XS_WORKLOAD_INITIALIZER;
  xs_fusion_prediction f;
  /* one producer: compute, then its bytes at R(1), tile after tile */
  {
    double R = 0, Q = 0, Qb = 0, t0 = 0, v = 65536, G = 20000;
    xs_drain_rate(&R, &h, 1);
    xs_capacity(&Q, &h, 1);
    xs_burst_room(&Qb, &h, 1);
    xs_t0_iss(&t0, &h, 1, v);
    w.K = 1, w.bytes_per_tile = v, w.compute_ns_per_tile = G, w.tiles_per_producer = 7;
    XT_CHECK(xs_predict_fusion(&f, &h, &w) == XS_OK);
    double last = fmax(t0, (v - fmin(Q, Qb)) / R);
    XT_NEAR(f.fused_coupled_ns, 7 * G + 6 * v / R + last, 1e-9);
    XT_NEAR(f.drain_coupled_ns, fmax(0, v / R - last), 1e-6);
    XT_NEAR(f.coupled_spread, 0, 0);
    XT_NEAR(f.overhead_coupled_frac, f.fused_coupled_ns / f.compute_ns - 1, 1e-12);
  }
  /* equal weights (unfair_mean 1: s = 0): lockstep, every tile costs G + V/R(K) */
  {
    xs_link_profile e = h;
    e.unfair_mean = 1.0;
    double R = 0, Q = 0, Qb = 0, t0 = 0, v = 28672, G = 50000, K = 64, V = K * v;
    xs_drain_rate(&R, &e, K);
    xs_capacity(&Q, &e, K);
    xs_burst_room(&Qb, &e, K);
    xs_t0_iss(&t0, &e, 1, v);
    w.K = K, w.bytes_per_tile = v, w.compute_ns_per_tile = G, w.tiles_per_producer = 5;
    XT_CHECK(xs_predict_fusion(&f, &e, &w) == XS_OK);
    double last = fmax(t0, (V - fmin(Q, Qb)) / R);
    XT_NEAR(f.fused_coupled_ns, 5 * G + 4 * V / R + last, 1e-9);
    XT_NEAR(f.drain_coupled_ns, fmax(0, V / R - last), 1e-6);
    XT_NEAR(f.coupled_spread, 0, 0);
  }
  /* unequal weights against the time-stepped reference: link-bound, balanced and free */
  {
    /* the last two hold the stage above its shared room (5 x 256 KiB > Qs ~ 0.7 MB) */
    const double cases[][3] = {{131072, 1000, 4},
                               {65536, 2000, 3},
                               {16384, 20000, 3},
                               {262144, 3000, 4},
                               {400000, 5000, 3}};
    for (int ci = 0; ci < 5; ci++) {
      w.K = 5, w.bytes_per_tile = cases[ci][0], w.compute_ns_per_tile = cases[ci][1];
      w.tiles_per_producer = (long)cases[ci][2];
      XT_CHECK(xs_predict_fusion(&f, &h, &w) == XS_OK);
      XT_CHECK(f.coupled_spread > 0.2 && f.coupled_spread < 0.95);
      XT_NEAR(f.coupled_room_bytes,
              h.q_bytes[0] - h.q_k[0] * (h.q_bytes[1] - h.q_bytes[0]) / (h.q_k[1] - h.q_k[0]),
              1e-12);
      double dr = 0, dt = 0.25;
      double ref = cpl_reference(&h, 5, w.bytes_per_tile, w.compute_ns_per_tile,
                                 (int)w.tiles_per_producer, f.coupled_spread, dt, &dr);
      XT_CHECK_MSG(fabs(f.fused_coupled_ns - ref) <= 40 * dt, "case %d: %.2f vs reference %.2f", ci,
                   f.fused_coupled_ns, ref);
      XT_CHECK_MSG(fabs(f.fused_coupled_ns + f.drain_coupled_ns - (ref + dr)) <= 40 * dt,
                   "case %d: end %.2f vs reference %.2f", ci,
                   f.fused_coupled_ns + f.drain_coupled_ns, ref + dr);
    }
  }
  /* the spread reproduces unfair_mean: mean / max drain end of equal bursts from a common start
   * under weighted sharing is (1/K^2) sum_i sum_j min(w_j / w_i, 1) */
  {
    const double ums[] = {0.95, 0.83, 0.78};
    for (int k = 0; k < 3; k++) {
      xs_link_profile e = h;
      e.unfair_mean = ums[k];
      w.K = 132, w.bytes_per_tile = 28672, w.compute_ns_per_tile = 50000, w.tiles_per_producer = 2;
      XT_CHECK(xs_predict_fusion(&f, &e, &w) == XS_OK);
      double s = f.coupled_spread, sum = 0;
      for (int i = 0; i < 132; i++)
        for (int j = 0; j < 132; j++)
          sum += fmin((1 - s + 2 * s * j / 131.0) / (1 - s + 2 * s * i / 131.0), 1.0);
      XT_NEAR(sum / (132.0 * 132.0), ums[k], 1e-6);
    }
    xs_link_profile e = h; /* below what s = 0.95 gives (0.76): clamped there */
    e.unfair_mean = 0.5;
    XT_CHECK(xs_predict_fusion(&f, &e, &w) == XS_OK);
    XT_NEAR(f.coupled_spread, 0.95, 0);
  }
  /* bounds on both embedded profiles' catalogues: no faster than the compute or than the bytes
   * at R(K); a link that never binds leaves only the compute and one producer's issue */
  {
    const xs_workload* cat;
    size_t n;
    xs_catalogue(&cat, &n);
    const char* names[2] = {"h200-host", "h200-nvlink"};
    for (int pi = 0; pi < 2; pi++) {
      xs_link_profile p;
      xs_profile_default(&p, names[pi]);
      for (size_t i = 0; i < n; i++) {
        XT_CHECK(xs_predict_fusion(&f, &p, &cat[i]) == XS_OK);
        double rk = 0;
        xs_drain_rate(&rk, &p, cat[i].K);
        XT_CHECK(f.fused_coupled_ns >= f.compute_ns);
        XT_CHECK(f.fused_coupled_ns + f.drain_coupled_ns >= f.total_bytes / rk * (1 - 1e-9));
        XT_CHECK(f.drain_coupled_ns >= 0);
      }
    }
    xs_link_profile fast = h;
    fast.R *= 1e6, fast.has_r_k = 0;
    w.K = 132, w.bytes_per_tile = 28672, w.compute_ns_per_tile = 50000, w.tiles_per_producer = 9;
    XT_CHECK(xs_predict_fusion(&f, &fast, &w) == XS_OK);
    double t0 = 0;
    xs_t0_iss(&t0, &fast, 1, 28672);
    XT_NEAR(f.fused_coupled_ns, 9 * 50000.0 + t0, 1e-6);
  }
  /* beyond the simulation's work bound the later tiles go at its last period */
  {
    w.K = 132, w.bytes_per_tile = 28672, w.compute_ns_per_tile = 100000;
    w.tiles_per_producer = 1000;
    XT_CHECK(xs_predict_fusion(&f, &h, &w) == XS_OK);
    double per_tile = f.fused_coupled_ns / 1000;
    w.tiles_per_producer = 1000000;
    XT_CHECK(xs_predict_fusion(&f, &h, &w) == XS_OK);
    XT_NEAR(f.fused_coupled_ns / 1e6, per_tile, 0.01);
  }
}

/* The split scan (xs_plan_split_fusion): n = 1 is the workload itself; every entry is the
 * prediction of the split workload; on the schedule of session 19's measured split (132 CTAs,
 * 28 KiB per tile, 57.6 us, 7 tiles; measured 718 -> 556 us at n = 8) the coupled time falls
 * with n; best_n is the smallest n within 1 % of the least; bad arguments are refused. */
static void test_split_fusion(void) {
  xs_link_profile h;
  xs_profile_default(&h, "h200-host");
  xs_workload w = XS_WORKLOAD_INITIALIZER;
  w.K = 132, w.bytes_per_tile = 28672, w.compute_ns_per_tile = 57600, w.tiles_per_producer = 7;
  xs_split_scan sc;
  XT_CHECK(xs_plan_split_fusion(&sc, &h, &w, 16) == XS_OK);
  XT_EQ_INT(sc.count, 5);
  xs_fusion_prediction f;
  for (int i = 0; i < sc.count; i++) {
    XT_EQ_INT(sc.n[i], 1 << i);
    xs_workload s = w;
    s.bytes_per_tile /= sc.n[i], s.compute_ns_per_tile /= sc.n[i], s.tiles_per_producer *= sc.n[i];
    XT_CHECK(xs_predict_fusion(&f, &h, &s) == XS_OK);
    XT_NEAR(sc.coupled_ns[i], f.fused_coupled_ns + f.drain_coupled_ns, 1e-12);
    XT_NEAR(sc.lockstep_ns[i], f.fused_ns + f.drain_ns, 1e-12);
    XT_NEAR(sc.compute_ns, 7 * 57600.0, 1e-12);
  }
  XT_CHECK(sc.coupled_ns[1] < sc.coupled_ns[0] && sc.coupled_ns[3] < sc.coupled_ns[1]);
  XT_CHECK(sc.best_n > 1);
  double best = INFINITY;
  for (int i = 0; i < sc.count; i++)
    best = fmin(best, sc.coupled_ns[i]);
  for (int i = 0; i < sc.count; i++) {
    if (sc.n[i] < sc.best_n) XT_CHECK(sc.coupled_ns[i] > best * 1.01);
    if (sc.n[i] == sc.best_n) XT_CHECK(sc.coupled_ns[i] <= best * 1.01);
  }
  XT_CHECK(xs_plan_split_fusion(&sc, &h, &w, 1) == XS_OK);
  XT_EQ_INT(sc.count, 1);
  XT_EQ_INT(sc.best_n, 1);
  XT_CHECK(xs_plan_split_fusion(&sc, &h, &w, 0) == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_plan_split_fusion(&sc, &h, &w, 3) == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_plan_split_fusion(&sc, &h, &w, 256) == XS_ERR_INVALID_ARG);
  w.tiles_per_producer = 100000000L;
  XT_CHECK(xs_plan_split_fusion(&sc, &h, &w, 2) == XS_ERR_INVALID_ARG);
  XT_CHECK(xs_plan_split_fusion(NULL, &h, &w, 2) == XS_ERR_INVALID_ARG);
}

/* The stage's room scaled (the capacity sensitivity `xstage run` reports): s = 1 is the profile
 * itself; every room scales and nothing else; more room never makes a catalogue workload slower
 * (the fused time is non-increasing in s, on both embedded profiles); bad s is refused. */
static void test_scale_rooms(void) {
  const xs_workload* cat;
  size_t n;
  XT_CHECK(xs_catalogue(&cat, &n) == XS_OK);
  const char* names[2] = {"h200-host", "h200-nvlink"};
  for (int pi = 0; pi < 2; pi++) {
    xs_link_profile p, q;
    XT_CHECK(xs_profile_default(&p, names[pi]) == XS_OK);
    XT_CHECK(xs_profile_scale_rooms(&q, &p, 1.0) == XS_OK);
    XT_CHECK(memcmp(&p, &q, sizeof p) == 0);
    XT_CHECK(xs_profile_scale_rooms(&q, &p, 1.1) == XS_OK);
    for (int i = 0; i < p.nq; i++) {
      XT_NEAR(q.q_bytes[i], 1.1 * p.q_bytes[i], 1e-15);
      XT_NEAR(q.q_burst_bytes[i], 1.1 * p.q_burst_bytes[i], 1e-15);
      XT_NEAR(q.q_relax_bytes[i], 1.1 * p.q_relax_bytes[i], 1e-15);
      XT_NEAR(q.relax_bytes[i], p.relax_bytes[i], 1e-15);
      XT_NEAR(q.r_k[i], p.r_k[i], 1e-15);
    }
    XT_NEAR(q.R, p.R, 1e-15);
    XT_NEAR(q.t_fixed_ns, p.t_fixed_ns, 1e-15);
    static const double ss[] = {0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 2.0};
    for (size_t i = 0; i < n; i++) {
      double prev = INFINITY;
      for (int k = 0; k < 7; k++) {
        xs_fusion_prediction f;
        XT_CHECK(xs_profile_scale_rooms(&q, &p, ss[k]) == XS_OK);
        XT_CHECK(xs_predict_fusion(&f, &q, &cat[i]) == XS_OK);
        XT_CHECK_MSG(f.fused_ns <= prev * (1 + 1e-9), "%s on %s: s %g fused %g > %g", cat[i].name,
                     names[pi], ss[k], f.fused_ns, prev);
        prev = f.fused_ns;
      }
    }
    XT_CHECK(xs_profile_scale_rooms(&q, &p, 0) == XS_ERR_INVALID_ARG);
    XT_CHECK(xs_profile_scale_rooms(&q, &p, NAN) == XS_ERR_INVALID_ARG);
    XT_CHECK(xs_profile_scale_rooms(&q, &p, 11) == XS_ERR_INVALID_ARG);
  }
}

int main(void) {
  XT_RUN(test_min_free_gap);
  XT_RUN(test_max_burst);
  XT_RUN(test_split);
  XT_RUN(test_fusion);
  XT_RUN(test_scale_rooms);
  XT_RUN(test_coupled);
  XT_RUN(test_split_fusion);
  g_tmin = 1; /* the planner inverts the refined model as exactly */
  XT_RUN(test_min_free_gap);
  XT_RUN(test_max_burst);
  XT_RUN(test_split);
  g_room = 1; /* and with the burst room */
  XT_RUN(test_min_free_gap);
  XT_RUN(test_max_burst);
  XT_RUN(test_split);
  return XT_END();
}
