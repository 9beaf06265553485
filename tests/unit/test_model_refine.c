/* test_model_refine.c — the third refinement of docs/model.md §12: the drain rate per producer
 * count R(K) (r_k) and the relaxing room (q_relax_bytes, relax_bytes). Numbers of one burst
 * against the formula, the original model back when the refinement is absent or neutral, JSON,
 * and the planner's inverses on random profiles that carry it. The property tests (limits,
 * monotonicity, conservation, brute-force queue, steady state against simulation) run with it
 * in test_model.c. */
#include "test.h"
#include "xstage/xstage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long g_rng = 0x5DEECE66DULL;
static double urand(double lo, double hi) { return lo + (hi - lo) * xt_rand_uniform(&g_rng); }
static double lurand(double lo, double hi) { return exp(urand(log(lo), log(hi))); }

/* One K point: Q = 3 MB, Qb = 2 MB, R(K) = 40 B/ns, Qr = 0.8 MB, X0 = 1 MB. */
static xs_link_profile one_point(void) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  p.t_fixed_ns = 100, p.r_cta = 50, p.r_cap = 5000, p.R = 50;
  p.q_k[0] = 1, p.q_bytes[0] = 3e6;
  p.has_q_burst = 1, p.q_burst_bytes[0] = 2e6;
  p.has_r_k = 1, p.r_k[0] = 40;
  p.has_relax = 1, p.q_relax_bytes[0] = 8e5, p.relax_bytes[0] = 1e6;
  return p;
}

static void test_relax_one_burst(void) {
  xs_link_profile p = one_point();
  const double K = 132, r = 5000, R = 40, V = 6e6; /* r = min(132 * 50, 5000) */
  double Rk;
  XT_CHECK(xs_drain_rate(&Rk, &p, K) == XS_OK);
  XT_NEAR(Rk, 40, 0);
  /* from idle the burst fills Q1 = min(Qb, Q) = 2 MB at r, then X bytes go at the drain rate
   * while its room relaxes towards Qr */
  double X = V - 2e6 * r / (r - R), room = 8e5 + 1.2e6 * exp(-X / 1e6), got;
  XT_CHECK(xs_burst_room_for(&got, &p, K, V) == XS_OK);
  XT_NEAR(got, room, 1e-14);
  xs_burst b = {V, 0};
  xs_burst_result o;
  XT_CHECK(xs_fluid_simulate(&o, NULL, &p, K, &b, 1) == XS_OK);
  double a = V * (1 - R / r);
  XT_NEAR(o.t_iss_ns, 100 + V / r + (a - room) / R, 1e-12);
  XT_NEAR(o.backlog_end, room, 1e-12);
  XT_NEAR(o.issued, o.drained + o.backlog_end, 1e-12);
  /* a burst that does not overflow from idle keeps the room Qb: free, like the model without */
  double Vf = 1.9e6;
  XT_CHECK(xs_burst_room_for(&got, &p, K, Vf) == XS_OK);
  XT_NEAR(got, 2e6, 0);
  b.V = Vf;
  XT_CHECK(xs_fluid_simulate(&o, NULL, &p, K, &b, 1) == XS_OK);
  XT_NEAR(o.t_iss_ns, 100 + Vf / r, 1e-12);
  /* continuous where it starts: just past the threshold the stall is just above 0 */
  double Vt = 2e6 / (1 - R / r);
  b.V = Vt * (1 + 1e-9);
  XT_CHECK(xs_fluid_simulate(&o, NULL, &p, K, &b, 1) == XS_OK);
  XT_CHECK(o.stall_ns > 0 && o.stall_ns < 1e-3);
  /* the room never grows with V, the issue time never shrinks */
  double prev_room = INFINITY, prev_t = 0;
  for (int i = 1; i <= 200; i++) {
    double v = 1e5 * i;
    XT_CHECK(xs_burst_room_for(&got, &p, K, v) == XS_OK);
    XT_CHECK(got <= prev_room);
    prev_room = got;
    b.V = v;
    XT_CHECK(xs_fluid_simulate(&o, NULL, &p, K, &b, 1) == XS_OK);
    XT_CHECK(o.t_iss_ns >= prev_t);
    prev_t = o.t_iss_ns;
  }
  /* closed form of equal bursts: capacity-bound, every burst like the first; and the drain
   * regime's V/R(K) - G */
  xs_steady s;
  b.V = V;
  XT_CHECK(xs_fluid_simulate(&o, NULL, &p, K, &b, 1) == XS_OK);
  XT_CHECK(xs_fluid_periodic(&s, &p, K, V, 1e5) == XS_OK); /* R (tf + G) > room: empties */
  XT_EQ_INT(s.regime, XS_REGIME_CAPACITY);
  XT_NEAR(s.t_iss_ns, o.t_iss_ns, 1e-12);
  XT_CHECK(xs_fluid_periodic(&s, &p, K, V, 1000) == XS_OK);
  XT_EQ_INT(s.regime, XS_REGIME_DRAIN);
  XT_NEAR(s.t_iss_ns, V / R - 1000, 1e-9);
  XT_CHECK(s.closed_form == 1);
  /* the closed form (seed paper) drains at R(K) too */
  double closed;
  XT_CHECK(xs_predict_closed(&closed, &p, K, V, 1000) == XS_OK);
  XT_NEAR(closed, V / R - 1000, 1e-12);
}

/* Absent, or neutral, the refinement is the model without it, exactly. */
static void test_neutral_is_the_original(void) {
  xs_link_profile p = one_point(), z = one_point(), w = one_point(), u = one_point();
  z.has_r_k = 0, z.R = 40, z.has_relax = 0; /* R(K) = R: the same drain rate, no relaxation */
  w.has_r_k = 0, w.R = 40;
  w.q_relax_bytes[0] = 2e6; /* Qr = Q1: nothing to relax */
  u.has_relax = 0;
  xs_burst bs[64];
  for (int g = 0; g < 8; g++) {
    xs_burst_result a[64], b[64], c[64], d[64];
    for (int i = 0; i < 64; i++)
      bs[i].V = 2e5 * (1 + (i * 7 + g) % 29), bs[i].gap_ns = (double)((i * 13 + g) % 5) * 9e3;
    XT_CHECK(xs_fluid_simulate(a, NULL, &z, 132, bs, 64) == XS_OK);
    XT_CHECK(xs_fluid_simulate(b, NULL, &w, 132, bs, 64) == XS_OK);
    XT_CHECK(xs_fluid_simulate(c, NULL, &u, 132, bs, 64) == XS_OK);
    XT_CHECK(xs_fluid_simulate(d, NULL, &p, 132, bs, 64) == XS_OK);
    int differs = 0;
    for (int i = 0; i < 64; i++) {
      XT_CHECK(a[i].t_iss_ns == b[i].t_iss_ns && a[i].backlog_end == b[i].backlog_end);
      XT_CHECK(a[i].t_iss_ns == c[i].t_iss_ns && a[i].backlog_end == c[i].backlog_end);
      differs |= d[i].t_iss_ns != a[i].t_iss_ns;
    }
    XT_CHECK(differs); /* and the relaxing room does act on these sequences */
  }
}

/* R(K) between the points and beyond them; a profile with r_k and one with R = R(K) agree. */
static void test_drain_per_k(void) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  p.t_fixed_ns = 100, p.r_cta = 60, p.r_cap = 6000, p.R = 53;
  p.nq = 3;
  const double ks[3] = {8, 64, 132}, qs[3] = {9e5, 2e6, 3.4e6}, rs[3] = {53, 52, 45};
  for (int i = 0; i < 3; i++) p.q_k[i] = ks[i], p.q_bytes[i] = qs[i], p.r_k[i] = rs[i];
  p.has_r_k = 1;
  double R;
  XT_CHECK(xs_drain_rate(&R, &p, 4) == XS_OK);
  XT_NEAR(R, 53, 0);
  XT_CHECK(xs_drain_rate(&R, &p, 98) == XS_OK);
  XT_NEAR(R, 48.5, 1e-15);
  XT_CHECK(xs_drain_rate(&R, &p, 1000) == XS_OK);
  XT_NEAR(R, 45, 0);
  xs_link_profile z = p;
  z.has_r_k = 0, z.R = 48.5;
  xs_burst bs[40];
  xs_burst_result a[40], b[40];
  for (int i = 0; i < 40; i++) bs[i].V = 4194304, bs[i].gap_ns = i % 3 ? 0 : 30e3;
  XT_CHECK(xs_fluid_simulate(a, NULL, &p, 98, bs, 40) == XS_OK);
  XT_CHECK(xs_fluid_simulate(b, NULL, &z, 98, bs, 40) == XS_OK);
  for (int i = 0; i < 40; i++) XT_NEAR(a[i].t_iss_ns, b[i].t_iss_ns, 1e-15);
  xs_steady s;
  XT_CHECK(xs_fluid_periodic(&s, &p, 132, 4194304, 0) == XS_OK);
  XT_NEAR(s.t_iss_ns, 4194304 / 45.0, 1e-9); /* back to back at K = 132: V / R(132) */
  XT_CHECK(xs_fluid_periodic(&s, &p, 8, 4194304, 0) == XS_OK);
  XT_NEAR(s.t_iss_ns, 4194304 / 53.0, 1e-9);
  /* several stages: one stage is xs_fluid_simulate, at R(K) */
  const xs_link_profile* one[1] = {&p};
  double V[40], G[40], T[40];
  for (int i = 0; i < 40; i++) V[i] = bs[i].V, G[i] = bs[i].gap_ns;
  XT_CHECK(xs_fluid_simulate_multi(T, one, 1, 98, V, G, 40) == XS_OK);
  for (int i = 0; i < 40; i++) XT_NEAR(T[i], a[i].t_iss_ns, 1e-9);
}

static void test_json(void) {
  xs_link_profile p = one_point(), q;
  char* js = NULL;
  XT_CHECK(xs_profile_to_json(&js, &p) == XS_OK);
  XT_CHECK(strstr(js, "\"r_k\": [40]") != NULL);
  XT_CHECK(strstr(js, "\"q_relax_bytes\": [800000]") != NULL);
  XT_CHECK(strstr(js, "\"relax_bytes\": [1000000]") != NULL);
  XT_CHECK(xs_profile_from_json(&q, js, strlen(js), "t.json") == XS_OK);
  XT_CHECK(memcmp(&p, &q, sizeof p) == 0);
  free(js);
  /* without the refinement: the keys are not written, and the file reads back as before */
  xs_link_profile z = one_point();
  z.has_r_k = 0, z.r_k[0] = 0, z.has_relax = 0, z.q_relax_bytes[0] = 0, z.relax_bytes[0] = 0;
  XT_CHECK(xs_profile_to_json(&js, &z) == XS_OK);
  XT_CHECK(strstr(js, "r_k") == NULL && strstr(js, "relax") == NULL);
  XT_CHECK(xs_profile_from_json(&q, js, strlen(js), "z.json") == XS_OK);
  XT_CHECK(q.has_r_k == 0 && q.has_relax == 0 && memcmp(&z, &q, sizeof z) == 0);
  free(js);
  /* random profiles with every refinement round-trip exactly */
  for (int it = 0; it < 50; it++) {
    xs_link_profile a = XS_LINK_PROFILE_INITIALIZER;
    a.t_fixed_ns = urand(0, 2000), a.r_cta = lurand(5, 200), a.r_cap = lurand(200, 5000);
    a.R = lurand(10, 500), a.t_min_ns = lurand(10, 1e4), a.nq = 1 + it % 16;
    a.has_q_burst = it % 2, a.has_r_k = 1, a.has_relax = 1;
    for (int i = 0; i < a.nq; i++) {
      a.q_k[i] = 1 + 3 * i, a.q_bytes[i] = lurand(1e4, 1e8), a.q_burst_bytes[i] = lurand(1e4, 1e8);
      a.r_k[i] = lurand(10, 500), a.q_relax_bytes[i] = lurand(1e4, 1e8);
      a.relax_bytes[i] = lurand(1e3, 1e9);
    }
    if (!a.has_q_burst) memset(a.q_burst_bytes, 0, sizeof a.q_burst_bytes);
    XT_CHECK(xs_profile_to_json(&js, &a) == XS_OK);
    XT_CHECK(xs_profile_from_json(&q, js, strlen(js), "r.json") == XS_OK);
    XT_CHECK(memcmp(&a, &q, sizeof a) == 0);
    free(js);
  }
  static const struct { const char* text; const char* want; } bad[] = {
      {"\"r_k\": [1, 0]", "r_k[1]"},
      {"\"r_k\": [1]", "'r_k' has 1"},
      {"\"q_relax_bytes\": [1, 2]", "go together"},
      {"\"q_relax_bytes\": [1, 2], \"relax_bytes\": [1, 0]", "relax_bytes[1]"},
      {"\"q_relax_bytes\": [1, -2], \"relax_bytes\": [1, 1]", "q_relax_bytes[1]"},
      {"\"q_relax_bytes\": [1, 2], \"relax_bytes\": [1]", "'relax_bytes' has 1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "{\"format\": \"xstage-link-profile\", \"version\": 1, \"t_fixed_ns\": 1,\n"
             "\"r_cta\": 1, \"r_cap\": 1, \"R\": 1, \"q_k\": [1, 2], \"q_bytes\": [1, 2],\n%s}",
             bad[i].text);
    XT_CHECK_MSG(xs_profile_from_json(&q, text, strlen(text), "b.json") == XS_ERR_PARSE,
                 "case %zu", i);
    XT_CHECK_MSG(strstr(xs_last_error(), bad[i].want) != NULL, "case %zu: '%s' lacks '%s'", i,
                 xs_last_error(), bad[i].want);
  }
}

/* Random profiles with the refinement (and the latency floor and burst room, or not). */
static xs_link_profile random_profile(int all) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  p.t_fixed_ns = urand(0, 2000);
  p.r_cta = lurand(5, 200);
  p.r_cap = lurand(200, 5000);
  p.R = lurand(10, 500);
  p.nq = 2;
  p.q_k[0] = 8, p.q_k[1] = 64;
  p.unfair_mean = urand(0, 1);
  p.has_r_k = p.has_relax = 1;
  for (int i = 0; i < 2; i++) {
    p.q_bytes[i] = lurand(64e3, 8e6);
    p.r_k[i] = p.R * lurand(0.6, 1.5);
    p.q_relax_bytes[i] = lurand(16e3, 8e6);
    p.relax_bytes[i] = lurand(1e4, 1e7);
  }
  if (all) {
    p.t_min_ns = lurand(10, 2e4);
    p.has_q_burst = 1;
    for (int i = 0; i < 2; i++) p.q_burst_bytes[i] = p.q_bytes[i] * lurand(0.5, 4.0);
  }
  return p;
}

static double sim_stall(const xs_link_profile* p, double K, double V, double G, size_t n) {
  xs_burst* bs = malloc(n * sizeof *bs);
  for (size_t i = 0; i < n; i++) bs[i].V = V, bs[i].gap_ns = G;
  xs_fluid_summary s;
  xs_fluid_simulate(NULL, &s, p, K, bs, n);
  free(bs);
  return s.total_stall_ns;
}

/* The planner inverts the refined model: the smallest free gap has no stall (closed form and a
 * long simulation) and 1 ns less stalls; the largest free burst is free and a byte more stalls;
 * a split plan's stall is what the simulation gives, and a feasible one has none. */
static void test_planner_inverses(void) {
  for (int all = 0; all < 2; all++) {
    int tested = 0, infinite = 0, feas = 0;
    for (int it = 0; it < 400; it++) {
      xs_link_profile p = random_profile(all);
      double K = floor(lurand(1, 128)), V = lurand(1e3, 4e6), G;
      xs_steady s;
      XT_CHECK(xs_plan_min_free_gap(&G, &p, K, V) == XS_OK);
      if (!isfinite(G)) {
        infinite++;
        XT_CHECK(xs_fluid_periodic(&s, &p, K, V, 1e15) == XS_OK && s.stall_ns > 0);
      } else {
        XT_CHECK(xs_fluid_periodic(&s, &p, K, V, G) == XS_OK);
        XT_CHECK_MSG(s.stall_ns == 0.0, "stall %g at the min gap %g", s.stall_ns, G);
        XT_CHECK(sim_stall(&p, K, V, G, 2000) == 0.0);
        if (G >= 1.0) {
          tested++;
          XT_CHECK(xs_fluid_periodic(&s, &p, K, V, G - 1.0) == XS_OK && s.stall_ns > 0.0);
        }
      }
      double Gm = urand(0, 1) < 0.1 ? 0 : lurand(10, 1e6), Vm;
      XT_CHECK(xs_plan_max_burst(&Vm, &p, K, Gm) == XS_OK);
      if (isfinite(Vm)) {
        XT_CHECK(xs_fluid_periodic(&s, &p, K, Vm, Gm) == XS_OK && s.stall_ns == 0.0);
        XT_CHECK(xs_fluid_periodic(&s, &p, K, Vm * (1 + 1e-9) + 1, Gm) == XS_OK && s.stall_ns > 0);
      }
      xs_split_plan sp;
      double Vs = lurand(1e5, 5e7), W = lurand(1e3, 2e6);
      XT_CHECK(xs_plan_split(&sp, &p, fmax(K, 8), Vs, W) == XS_OK);
      double st = sim_stall(&p, fmax(K, 8), sp.burst_bytes, sp.gap_ns, (size_t)sp.nbursts);
      XT_NEAR(st, sp.stall_ns, 1e-9);
      if (sp.feasible) {
        feas++;
        XT_CHECK(st == 0.0);
      }
    }
    XT_CHECK(tested > 50 && infinite > 10 && feas > 30);
  }
}

int main(void) {
  XT_RUN(test_relax_one_burst);
  XT_RUN(test_neutral_is_the_original);
  XT_RUN(test_drain_per_k);
  XT_RUN(test_json);
  XT_RUN(test_planner_inverses);
  return XT_END();
}
