/* test_model.c — the X-Stage model against independent references: limits, monotonicity,
 * conservation, a brute-force time-stepped queue, the closed-form steady state against long
 * event simulations, several stages, profile JSON. */
#include "test.h"
#include "xstage/xstage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long long g_rng = 0x9E3779B97F4A7C15ull;
static double urand(double lo, double hi) { return lo + (hi - lo) * xt_rand_uniform(&g_rng); }
static double lurand(double lo, double hi) { return exp(urand(log(lo), log(hi))); }

/* 1: random profiles also carry the latency floor t_min_ns (the refinement); the property
 * tests run once without it (the original model) and once with it. */
static int g_tmin = 0;
/* 1: random profiles also carry the burst room q_burst_bytes (the second refinement), below or
 * above Q; the property tests run a third time with both refinements. */
static int g_room = 0;
/* 1: random profiles also carry the drain rate per K r_k and the relaxing room q_relax_bytes /
 * relax_bytes (the third refinement, docs/model.md §12); the property tests run again with them,
 * with and without the other two. */
static int g_relax = 0;

/* A random valid profile where backpressure is possible (r_iss(K) > R for large K). */
static xs_link_profile random_profile(void) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  p.t_fixed_ns = urand(0, 2000);
  p.r_cta = lurand(5, 200);
  p.r_cap = lurand(200, 5000);
  p.R = lurand(10, 500);
  p.nq = 3;
  p.q_k[0] = 4, p.q_k[1] = 16, p.q_k[2] = 64;
  for (int i = 0; i < 3; i++) p.q_bytes[i] = lurand(64e3, 8e6);
  p.unfair_mean = urand(0, 1);
  if (g_tmin) p.t_min_ns = lurand(10, 2e5);
  if (g_room) {
    p.has_q_burst = 1;
    for (int i = 0; i < 3; i++) p.q_burst_bytes[i] = lurand(32e3, 8e6);
  }
  if (g_relax) {
    p.has_r_k = p.has_relax = 1;
    for (int i = 0; i < 3; i++) {
      p.r_k[i] = p.R * lurand(0.6, 1.5);
      p.q_relax_bytes[i] = lurand(16e3, 8e6); /* below or above the room it relaxes from */
      p.relax_bytes[i] = lurand(1e4, 1e7);
    }
  }
  return p;
}

/* Independent of the library: piecewise-linear interpolation through (q_k, y), constant beyond
 * the ends; R(K); the room of one burst of V bytes with the relaxing room:
 * Qr + (Q1 - Qr) exp(-X / X0) once it overflows Q1 = min(Qb, Q) from idle (X = V - Q1 r/(r - R)
 * bytes issued at the drain rate), Qb otherwise. */
static double interp(const xs_link_profile* p, const double* y, double K) {
  if (K <= p->q_k[0]) return y[0];
  for (int i = 1; i < p->nq; i++)
    if (K <= p->q_k[i])
      return y[i - 1] + (K - p->q_k[i - 1]) / (p->q_k[i] - p->q_k[i - 1]) * (y[i] - y[i - 1]);
  return y[p->nq - 1];
}
static double drain_of(const xs_link_profile* p, double K) {
  return p->has_r_k ? interp(p, p->r_k, K) : p->R;
}
static double room_of(const xs_link_profile* p, double K, double V) {
  double Qb = p->has_q_burst ? interp(p, p->q_burst_bytes, K) : INFINITY;
  double r = fmin(K * p->r_cta, p->r_cap), R = drain_of(p, K);
  if (!p->has_relax || r <= R) return Qb;
  double Q1 = fmin(Qb, interp(p, p->q_bytes, K)), X = V - Q1 * r / (r - R);
  if (!(X > 0)) return Qb;
  double Qr = fmin(interp(p, p->q_relax_bytes, K), Q1);
  return Qr + (Q1 - Qr) * exp(-X / interp(p, p->relax_bytes, K));
}

/* Brute-force reference: explicit time stepping of the queue (issue while b < Q, else at R).
 * With a burst room Qb, a burst is also throttled once it has added Qb to the backlog it found
 * after its fixed overhead. */
static void brute(double* T, const xs_link_profile* p, double K, const xs_burst* bs, size_t n,
                  double dt) {
  double r = K * p->r_cta < p->r_cap ? K * p->r_cta : p->r_cap, Q, b = 0;
  const double R = drain_of(p, K); /* R(K) with the drain-rate refinement */
  xs_capacity(&Q, p, K);
  for (size_t i = 0; i < n; i++) {
    for (double t = 0; t < bs[i].gap_ns; t += dt) b = fmax(0, b - R * fmin(dt, bs[i].gap_ns - t));
    double t = 0, left = bs[i].V;
    double tf = fmax(p->t_fixed_ns, p->t_min_ns - bs[i].V / r); /* the floor overlaps the issue */
    for (double u = 0; u < tf; u += dt) {
      double h = fmin(dt, tf - u);
      b = fmax(0, b - R * h), t += h;
    }
    const double cap = fmin(Q, b + room_of(p, K, bs[i].V)); /* the burst room (relaxed) */
    while (left > 0) {
      double x = r * dt;
      if (x > left) x = left;
      if (b + x - R * dt > cap) x = fmax(0, cap - b + R * dt);
      double h = x < r * dt ? (x == left ? x / r : dt) : dt;
      b = fmax(0, b + x - R * h);
      left -= x, t += h;
    }
    T[i] = t;
  }
}

static void test_limits(void) {
  for (int it = 0; it < 200; it++) {
    xs_link_profile p = random_profile();
    double K = floor(lurand(1, 128)), V = lurand(1e3, 1e8), t0, Q, Qb, closed;
    const double R = drain_of(&p, K);
    XT_CHECK(xs_t0_iss(&t0, &p, K, V) == XS_OK);
    xs_capacity(&Q, &p, K);
    xs_burst_room(&Qb, &p, K);
    Q = fmin(Q, Qb); /* what one burst may add (Q without a burst room) */
    xs_steady s;
    /* G -> inf: every burst is T0 unless one burst alone overflows Q (the relaxing room only
     * acts on a burst that does) */
    XT_CHECK(xs_fluid_periodic(&s, &p, K, V, INFINITY) == XS_OK);
    double r = fmin(K * p.r_cta, p.r_cap);
    if (r <= R || V * (1 - R / r) <= Q) XT_NEAR(s.t_iss_ns, t0, 1e-12);
    else XT_CHECK(s.t_iss_ns > t0);
    XT_CHECK(xs_predict_closed(&closed, &p, K, V, INFINITY) == XS_OK);
    XT_NEAR(closed, t0, 1e-12);
    /* V >> Q, G = 0, r > R: V/R per burst in steady state, R = R(K) */
    double Vb = 1e4 * Q + 1e9, Qv = fmin(Q, room_of(&p, K, Vb)); /* the room of such a burst */
    if (r > R * 1.01 && Qv > R * fmax(p.t_fixed_ns, p.t_min_ns - Vb / r)) {
      XT_CHECK(xs_fluid_periodic(&s, &p, K, Vb, 0) == XS_OK);
      XT_NEAR(s.t_iss_ns, Vb / R, 1e-9);
      XT_EQ_INT(s.regime, XS_REGIME_DRAIN);
      /* 6 bursts; with a burst room Qb < Q the backlog climbs by Qb - R tf per burst until it
       * reaches Q: that many more */
      double Qf, tfb = fmax(p.t_fixed_ns, p.t_min_ns - Vb / r);
      xs_capacity(&Qf, &p, K);
      double climb = Qv < Qf ? ceil((Qf - Qv) / (Qv - R * tfb)) : 0.0;
      size_t nb = 6 + (size_t)fmin(climb, 1e6);
      xs_burst* bs = malloc(nb * sizeof *bs);
      xs_burst_result* out = malloc(nb * sizeof *out);
      for (size_t i = 0; i < nb; i++) bs[i].V = Vb, bs[i].gap_ns = 0;
      XT_CHECK(xs_fluid_simulate(out, NULL, &p, K, bs, nb) == XS_OK);
      XT_NEAR(out[nb - 1].t_iss_ns, Vb / R, 1e-9);
      free(bs);
      free(out);
    }
  }
}

static void test_monotone(void) {
  for (int it = 0; it < 300; it++) {
    xs_link_profile p = random_profile();
    double K = floor(lurand(1, 128)), V = lurand(1e3, 3e7);
    long n = (long)urand(1, 40);
    xs_burst bs[40];
    double prev = INFINITY;
    for (int g = 0; g < 30; g++) { /* G grows: T_iss of every burst does not grow */
      double G = g * g * 300.0; /* 0 .. 250 us */
      for (long i = 0; i < n; i++) bs[i].V = V, bs[i].gap_ns = G;
      xs_burst_result out[40];
      xs_fluid_simulate(out, NULL, &p, K, bs, (size_t)n);
      xs_steady s;
      xs_fluid_periodic(&s, &p, K, V, G);
      XT_CHECK(out[n - 1].t_iss_ns <= prev * (1 + 1e-12));
      prev = out[n - 1].t_iss_ns;
      XT_CHECK(s.t_iss_ns >= out[n - 1].t_iss_ns * (1 - 1e-12)); /* bursts climb to steady */
    }
    double G = lurand(1, 1e6), pv = 0;
    for (int v = 1; v <= 30; v++) { /* V grows: T_iss does not shrink */
      xs_steady s;
      xs_fluid_periodic(&s, &p, K, V * v / 10.0, G);
      XT_CHECK(s.t_iss_ns >= pv * (1 - 1e-12));
      pv = s.t_iss_ns;
    }
  }
}

static void test_conservation_and_brute(void) {
  for (int it = 0; it < 40; it++) {
    xs_link_profile p = random_profile();
    double K = floor(lurand(1, 128));
    xs_burst bs[6];
    for (int i = 0; i < 6; i++) bs[i].V = lurand(1e4, 2e6), bs[i].gap_ns = urand(0, 1) < 0.3 ? 0 : lurand(10, 3e4);
    xs_burst_result out[6];
    xs_fluid_summary sum;
    XT_CHECK(xs_fluid_simulate(out, &sum, &p, K, bs, 6) == XS_OK);
    double issued = 0, Q;
    xs_capacity(&Q, &p, K);
    for (int i = 0; i < 6; i++) {
      issued += bs[i].V;
      XT_NEAR(out[i].issued, issued, 1e-12);
      XT_NEAR(out[i].issued, out[i].drained + out[i].backlog_end, 1e-9);
      XT_CHECK(out[i].backlog_end <= Q * (1 + 1e-12) && out[i].backlog_end >= 0);
      double t0;
      xs_t0_iss(&t0, &p, K, bs[i].V);
      XT_NEAR(out[i].t_iss_ns, t0 + out[i].stall_ns, 1e-12);
      XT_CHECK(out[i].t_iss_mean_ns >= t0 * (1 - 1e-12) && out[i].t_iss_mean_ns <= out[i].t_iss_ns * (1 + 1e-12));
    }
    double T[6], tot = 0;
    for (int i = 0; i < 6; i++) tot += out[i].t_iss_ns + bs[i].gap_ns;
    brute(T, &p, K, bs, 6, tot / 4e5);
    for (int i = 0; i < 6; i++) XT_NEAR(out[i].t_iss_ns, T[i], 2e-2);
  }
}

static void test_steady_vs_simulation(void) {
  for (int it = 0; it < 300; it++) {
    xs_link_profile p = random_profile();
    double K = floor(lurand(1, 128)), V = lurand(1e3, 2e7), G = urand(0, 1) < 0.2 ? 0 : lurand(1, 2e5);
    xs_steady s;
    XT_CHECK(xs_fluid_periodic(&s, &p, K, V, G) == XS_OK);
    XT_CHECK(s.closed_form == 1);
    if (s.bursts_to_steady > 100000) continue;
    /* the backlog can climb for many bursts while T_iss barely moves (each burst throttled by
     * its room, not by Q): simulate until it has reached its fixed point as well */
    double r = fmin(K * p.r_cta, p.r_cap), R = drain_of(&p, K), Q;
    xs_capacity(&Q, &p, K);
    double tf = fmax(p.t_fixed_ns, p.t_min_ns - V / r);
    double a = fmin(V * (1 - R / r), room_of(&p, K, V)), d = a - R * (tf + G);
    double climb = r > R && d > 0 ? ceil((Q - R * G - fmax(0, fmin(Q, a) - R * G)) / d) + 2 : 0;
    if (climb > 2e5) continue;
    size_t n = (size_t)s.bursts_to_steady + 400 + (size_t)fmax(climb, 0);
    xs_burst* bs = malloc(n * sizeof *bs);
    xs_burst_result* out = malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++) bs[i].V = V, bs[i].gap_ns = G;
    xs_fluid_simulate(out, NULL, &p, K, bs, n);
    XT_NEAR(out[0].t_iss_ns, s.t_iss_first_ns, 1e-12);
    XT_NEAR(out[n - 1].t_iss_ns, s.t_iss_ns, 1e-6);
    XT_NEAR(out[s.bursts_to_steady].t_iss_ns, s.t_iss_ns, 1.001e-3);
    if (s.bursts_to_steady > 0)
      XT_CHECK(fabs(out[s.bursts_to_steady - 1].t_iss_ns - s.t_iss_ns) > 0.999e-3 * s.t_iss_ns);
    /* the regime in words matches the numbers */
    double t0;
    xs_t0_iss(&t0, &p, K, V);
    if (s.regime == XS_REGIME_FREE) XT_NEAR(s.t_iss_ns, t0, 1e-12);
    if (s.regime == XS_REGIME_DRAIN) XT_NEAR(s.t_iss_ns, V / drain_of(&p, K) - G, 1e-9);
    if (s.regime == XS_REGIME_CAPACITY) {
      XT_CHECK(s.t_iss_first_ns > t0);
      XT_NEAR(s.t_iss_ns, s.t_iss_first_ns, 1e-9);
    }
    free(bs);
    free(out);
  }
}

static void test_multi(void) {
  for (int it = 0; it < 100; it++) {
    xs_link_profile p = random_profile();
    p.nq = 1;
    p.has_relax = 0; /* xs_fluid_simulate_multi has R(K), not the rooms of one burst */
    double K = floor(lurand(1, 128));
    double V[8], gap[8], T1[8], T2[8];
    xs_burst bs[8];
    for (int i = 0; i < 8; i++) {
      V[i] = lurand(1e4, 4e6), gap[i] = urand(0, 1) < 0.3 ? 0 : lurand(10, 3e4);
      bs[i].V = V[i], bs[i].gap_ns = gap[i];
    }
    const xs_link_profile* one[1] = {&p};
    XT_CHECK(xs_fluid_simulate_multi(T1, one, 1, K, V, gap, 8) == XS_OK);
    xs_burst_result out[8];
    xs_fluid_simulate(out, NULL, &p, K, bs, 8);
    for (int i = 0; i < 8; i++) XT_NEAR(T1[i], out[i].t_iss_ns, 1e-9);
    /* two equal stages with half the bytes each == one stage with 2Q and 2R */
    xs_link_profile dbl = p;
    dbl.R *= 2, dbl.q_bytes[0] *= 2, dbl.r_k[0] *= 2; /* R(K) too when the profile has it */
    const xs_link_profile* two[2] = {&p, &p};
    double V2[16];
    for (int i = 0; i < 8; i++) V2[2 * i] = V2[2 * i + 1] = V[i] / 2;
    XT_CHECK(xs_fluid_simulate_multi(T2, two, 2, K, V2, gap, 8) == XS_OK);
    xs_fluid_simulate(out, NULL, &dbl, K, bs, 8);
    for (int i = 0; i < 8; i++) XT_NEAR(T2[i], out[i].t_iss_ns, 1e-9);
  }
  /* a full slow stage only takes its drain rate; the fast one gets the rest */
  xs_link_profile slow = XS_LINK_PROFILE_INITIALIZER, fast = XS_LINK_PROFILE_INITIALIZER;
  slow.t_fixed_ns = fast.t_fixed_ns = 0;
  slow.r_cta = 100, slow.r_cap = 100, slow.R = 10, slow.q_bytes[0] = 0;
  fast.r_cta = 100, fast.r_cap = 100, fast.R = 1000, fast.q_bytes[0] = 1e9;
  const xs_link_profile* st[2] = {&slow, &fast};
  double V[2] = {1000, 9000}, g = 0, T;
  XT_CHECK(xs_fluid_simulate_multi(&T, st, 2, 1, V, &g, 1) == XS_OK);
  /* slow takes 10 B/ns -> 100 ns for its 1000 B; fast gets 90 B/ns for 100 ns (9000 B) */
  XT_NEAR(T, 100.0, 1e-9);
}

static void test_profiles_json(void) {
  const char* const* names = xs_profile_default_names();
  int n = 0;
  for (; names[n]; n++) {
    xs_link_profile p, q;
    XT_CHECK(xs_profile_default(&p, names[n]) == XS_OK);
    XT_CHECK(xs_profile_validate(&p) == XS_OK);
    /* only these two are measured (h200-hbm and h200-host-anchors are estimates) */
    XT_EQ_INT(p.calibrated,
              strcmp(names[n], "h200-host") == 0 || strcmp(names[n], "h200-nvlink") == 0);
    char* js = NULL;
    XT_CHECK(xs_profile_to_json(&js, &p) == XS_OK);
    XT_CHECK(xs_profile_from_json(&q, js, strlen(js), "x.json") == XS_OK);
    XT_CHECK(memcmp(&p, &q, sizeof p) == 0);
    free(js);
  }
  XT_EQ_INT(n, 4);
  /* the anchor-based host profile reproduces the anchors it was derived from */
  xs_link_profile h;
  xs_profile_default(&h, "h200-host-anchors");
  double t;
  xs_t0_iss(&t, &h, 16, 1048576);
  XT_NEAR(t, 1200, 0.01);
  xs_steady s;
  xs_fluid_periodic(&s, &h, 16, 1048576, 0);
  XT_CHECK(s.t_iss_ns > 20000 && s.t_iss_ns < 28000);
  xs_fluid_periodic(&s, &h, 16, 1048576, 20000);
  XT_NEAR(s.t_iss_ns, 1200, 0.01);
  xs_fluid_periodic(&s, &h, 32, 4194304, INFINITY);
  XT_NEAR(s.t_iss_first_ns, 67000, 1e-6);
  XT_NEAR(s.t_iss_mean_ns, 35000, 0.01);
  xs_profile_default(&h, "h200-hbm");
  xs_fluid_periodic(&s, &h, 132, 64e6, 0);
  XT_EQ_INT(s.regime, XS_REGIME_FREE);
  XT_CHECK(xs_profile_default(&h, "nope") == XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "h200-host") != NULL);
  /* random profiles round-trip exactly through a file */
  xs_link_profile p = random_profile(), q;
  snprintf(p.method, sizeof p.method, "quote \" backslash \\ tab \t é");
  char path[64];
  snprintf(path, sizeof path, "/tmp/xstage-test-model-%d.json", (int)getpid());
  XT_CHECK(xs_profile_write(&p, path) == XS_OK);
  XT_CHECK(xs_profile_read(&q, path) == XS_OK);
  XT_CHECK(memcmp(&p, &q, sizeof p) == 0);
  remove(path);
}

static void test_bad_json(void) {
  static const struct { const char* text; const char* want; } bad[] = {
      {"{", "bad.json:1"},
      {"[1,2]", "must be a JSON object"},
      {"{\"format\":\"other\",\"version\":1}", "'format'"},
      {"{\"format\":\"xstage-link-profile\",\"version\":2}", "'version'"},
      {"{\"format\":\"xstage-link-profile\",\"version\":1,\n\"t_fixed_ns\":1,\"r_cta\":1,\"r_cap\":1,\"R\":1,\n\"q_k\":[1],\"q_bytes\":[1,2]}", "'q_k' has 1"},
      {"{\"format\":\"xstage-link-profile\",\"version\":1,\"t_fixed_ns\":1,\"r_cta\":1,\"r_cap\":1,\n\"q_k\":[1],\"q_bytes\":[1]}", "'R'"},
      {"{\"format\":\"xstage-link-profile\",\"version\":1,\"t_fixed_ns\":1,\"r_cta\":1,\"r_cap\":1,\n\n\"R\":-5,\"q_k\":[1],\"q_bytes\":[1]}", "bad.json:3: profile: field 'R'"},
      {"{\"format\":\"xstage-link-profile\",\"version\":1,\"t_fixed_ns\":1,\"r_cta\":1,\"r_cap\":1,\"R\":1,\n\"q_k\":[4,2],\"q_bytes\":[1,1]}", "q_k[1]"},
      {"{\"format\":\"xstage-link-profile\",\"version\":1,\"t_fixed_ns\":1,\"r_cta\":1,\"r_cap\":1,\"R\":1,\"q_k\":[1],\"q_bytes\":[1],\"calibrated\":3}", "'calibrated'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    xs_link_profile p;
    xs_result r = xs_profile_from_json(&p, bad[i].text, strlen(bad[i].text), "bad.json");
    XT_CHECK_MSG(r == XS_ERR_PARSE, "case %zu: %s", i, xs_strerror(r));
    XT_CHECK_MSG(strstr(xs_last_error(), bad[i].want) != NULL, "case %zu: '%s' lacks '%s'", i,
                 xs_last_error(), bad[i].want);
  }
  xs_link_profile p;
  XT_CHECK(xs_profile_read(&p, "/nonexistent/dir/p.json") == XS_ERR_IO);
}

/* The latency floor t_min_ns: T0 = max(t_min, t_fixed + V/r); the stage drains during the part
 * of the floor in which nothing is issued; t_min = 0 is the original model; JSON keeps it,
 * omits it when 0 and reads a profile without it as 0; a bad value names the field. */
static void test_tmin(void) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  p.t_fixed_ns = 20, p.r_cta = 50, p.r_cap = 6000, p.R = 50;
  p.q_k[0] = 1, p.q_bytes[0] = 2e6;
  double t0, V = 64.0 * 1024; /* K = 64: r = 3200 B/ns, t_fixed + V/r = 40.48 ns */
  XT_CHECK(xs_t0_iss(&t0, &p, 64, V) == XS_OK);
  XT_NEAR(t0, 20 + V / 3200, 1e-15);
  p.t_min_ns = 240;
  XT_CHECK(xs_t0_iss(&t0, &p, 64, V) == XS_OK);
  XT_NEAR(t0, 240, 1e-15); /* the floor */
  XT_CHECK(xs_t0_iss(&t0, &p, 64, 4e6) == XS_OK);
  XT_NEAR(t0, 20 + 4e6 / 3200, 1e-15); /* a large burst: above the floor, unchanged */
  double closed;
  XT_CHECK(xs_predict_closed(&closed, &p, 64, V, INFINITY) == XS_OK);
  XT_NEAR(closed, 240, 1e-15);
  /* a burst that starts with backlog b0: the floor's idle part drains it */
  xs_burst bs[2] = {{1.9e6, 0}, {V, 0}};
  xs_burst_result out[2];
  XT_CHECK(xs_fluid_simulate(out, NULL, &p, 64, bs, 2) == XS_OK);
  double idle = 240 - V / 3200; /* nothing issued */
  XT_NEAR(out[1].backlog_end, out[0].backlog_end - 50 * (idle + V / 3200) + V, 1e-12);
  XT_NEAR(out[1].t_iss_ns, 240, 1e-12);
  /* the original model back: t_min = 0 */
  xs_link_profile z = p;
  z.t_min_ns = 0;
  XT_CHECK(xs_fluid_simulate(out, NULL, &z, 64, bs, 2) == XS_OK);
  XT_NEAR(out[1].t_iss_ns, 20 + V / 3200, 1e-12);
  /* JSON */
  char* js = NULL;
  XT_CHECK(xs_profile_to_json(&js, &p) == XS_OK);
  XT_CHECK(strstr(js, "\"t_min_ns\": 240") != NULL);
  xs_link_profile q;
  XT_CHECK(xs_profile_from_json(&q, js, strlen(js), "t.json") == XS_OK);
  XT_CHECK(memcmp(&p, &q, sizeof p) == 0);
  free(js);
  XT_CHECK(xs_profile_to_json(&js, &z) == XS_OK);
  XT_CHECK(strstr(js, "t_min_ns") == NULL); /* the original model writes the original file */
  XT_CHECK(xs_profile_from_json(&q, js, strlen(js), "z.json") == XS_OK);
  XT_CHECK(q.t_min_ns == 0.0 && memcmp(&z, &q, sizeof z) == 0);
  free(js);
  const char* bad = "{\"format\": \"xstage-link-profile\", \"version\": 1, \"t_fixed_ns\": 1,\n"
                    "\"r_cta\": 1, \"r_cap\": 1, \"R\": 1, \"q_k\": [1], \"q_bytes\": [1],\n"
                    "\"t_min_ns\": -3}";
  XT_CHECK(xs_profile_from_json(&q, bad, strlen(bad), "b.json") == XS_ERR_PARSE);
  XT_CHECK(strstr(xs_last_error(), "t_min_ns") != NULL);
}

/* The burst room Qb: one burst adds at most min(Qb, Q - b) to the stage (b: the backlog it found
 * after its fixed overhead), so a big burst from idle is throttled at Qb while small bursts
 * accumulate to Q; the backlog map and the closed-form steady state keep their form with
 * a = min(V (1 - R/r), Qb); Qb >= Q or has_q_burst = 0 is the model without it; JSON keeps it,
 * omits it when absent, reads a profile without it as absent; bad values name the field. */
static void test_burst_room(void) {
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  p.t_fixed_ns = 100, p.r_cta = 50, p.r_cap = 5000, p.R = 50;
  p.q_k[0] = 1, p.q_bytes[0] = 3.5e6;
  xs_link_profile z = p; /* no burst room */
  p.has_q_burst = 1, p.q_burst_bytes[0] = 2e6;
  const double K = 132, r = 5000, V = 4e6; /* a = V (1 - R/r) = 3.96e6 > Q > Qb */
  double qb;
  XT_CHECK(xs_burst_room(&qb, &p, K) == XS_OK);
  XT_NEAR(qb, 2e6, 1e-15);
  XT_CHECK(xs_burst_room(&qb, &z, K) == XS_OK);
  XT_CHECK(isinf(qb));
  /* one burst from idle: throttled once it has added Qb (not Q) */
  xs_burst one = {V, 0};
  xs_burst_result o1, o0;
  XT_CHECK(xs_fluid_simulate(&o1, NULL, &p, K, &one, 1) == XS_OK);
  XT_CHECK(xs_fluid_simulate(&o0, NULL, &z, K, &one, 1) == XS_OK);
  double u = 2e6 * r / (r - 50); /* bytes issued before the room is used up */
  XT_NEAR(o1.t_iss_ns, 100 + u / r + (V - u) / 50, 1e-12);
  XT_NEAR(o1.backlog_end, 2e6, 1e-12);
  XT_NEAR(o1.stall_ns - o0.stall_ns, 1.5e6 / 50, 1e-9); /* (Q - Qb) / R more */
  /* small bursts back to back accumulate past Qb, up to Q */
  xs_burst bs[64];
  for (int i = 0; i < 64; i++) bs[i].V = 262144, bs[i].gap_ns = 0;
  xs_fluid_summary sum;
  XT_CHECK(xs_fluid_simulate(NULL, &sum, &p, K, bs, 64) == XS_OK);
  XT_NEAR(sum.max_backlog, 3.5e6, 1e-12);
  /* closed form = simulation, and the steady state of the drain regime is V/R - G */
  xs_steady s;
  XT_CHECK(xs_fluid_periodic(&s, &p, K, V, 10000) == XS_OK); /* Qb > R (tf + G): accumulates */
  XT_CHECK(s.closed_form == 1);
  XT_EQ_INT(s.regime, XS_REGIME_DRAIN);
  XT_NEAR(s.t_iss_ns, V / 50 - 10000, 1e-9);
  XT_NEAR(s.t_iss_first_ns, o1.t_iss_ns, 1e-12);
  XT_CHECK(xs_fluid_periodic(&s, &p, K, V, 50000) == XS_OK); /* Qb < R (tf + G) < Q */
  XT_EQ_INT(s.regime, XS_REGIME_CAPACITY);
  XT_NEAR(s.t_iss_ns, o1.t_iss_ns, 1e-12); /* every burst starts empty and sees Qb */
  XT_CHECK(xs_fluid_periodic(&s, &z, K, V, 50000) == XS_OK);
  XT_EQ_INT(s.regime, XS_REGIME_DRAIN); /* without the room the backlog would build up */
  /* the planner: the largest free burst is bounded by Qb from idle */
  double vmax;
  XT_CHECK(xs_plan_max_burst(&vmax, &p, K, 1e9) == XS_OK);
  XT_NEAR(vmax, 2e6 / (1 - 50.0 / r), 1e-9);
  /* Qb >= Q: the model without the room, exactly */
  xs_link_profile w = p;
  w.q_burst_bytes[0] = 3.5e6;
  for (int g = 0; g < 8; g++) {
    xs_burst_result a[64], b[64];
    for (int i = 0; i < 64; i++) bs[i].V = 1e5 * (1 + (i * 7 + g) % 13), bs[i].gap_ns = g * 900.0;
    XT_CHECK(xs_fluid_simulate(a, NULL, &w, K, bs, 64) == XS_OK);
    XT_CHECK(xs_fluid_simulate(b, NULL, &z, K, bs, 64) == XS_OK);
    for (int i = 0; i < 64; i++) XT_NEAR(a[i].t_iss_ns, b[i].t_iss_ns, 1e-15);
  }
  /* JSON */
  char* js = NULL;
  XT_CHECK(xs_profile_to_json(&js, &p) == XS_OK);
  XT_CHECK(strstr(js, "\"q_burst_bytes\": [2000000]") != NULL);
  xs_link_profile q;
  XT_CHECK(xs_profile_from_json(&q, js, strlen(js), "t.json") == XS_OK);
  XT_CHECK(memcmp(&p, &q, sizeof p) == 0);
  free(js);
  XT_CHECK(xs_profile_to_json(&js, &z) == XS_OK);
  XT_CHECK(strstr(js, "q_burst_bytes") == NULL); /* the model without it writes the old file */
  XT_CHECK(xs_profile_from_json(&q, js, strlen(js), "z.json") == XS_OK);
  XT_CHECK(q.has_q_burst == 0 && memcmp(&z, &q, sizeof z) == 0);
  free(js);
  const char* bad = "{\"format\": \"xstage-link-profile\", \"version\": 1, \"t_fixed_ns\": 1,\n"
                    "\"r_cta\": 1, \"r_cap\": 1, \"R\": 1, \"q_k\": [1, 2], \"q_bytes\": [1, 2],\n"
                    "\"q_burst_bytes\": [1, -3]}";
  XT_CHECK(xs_profile_from_json(&q, bad, strlen(bad), "b.json") == XS_ERR_PARSE);
  XT_CHECK(strstr(xs_last_error(), "q_burst_bytes") != NULL);
  const char* bad2 = "{\"format\": \"xstage-link-profile\", \"version\": 1, \"t_fixed_ns\": 1,\n"
                     "\"r_cta\": 1, \"r_cap\": 1, \"R\": 1, \"q_k\": [1, 2], \"q_bytes\": [1, 2],\n"
                     "\"q_burst_bytes\": [1]}";
  XT_CHECK(xs_profile_from_json(&q, bad2, strlen(bad2), "b2.json") == XS_ERR_PARSE);
  XT_CHECK(strstr(xs_last_error(), "q_burst_bytes") != NULL);
}

/* Per-point errors: rows group by (transport, K, V, G, seq); the error of a point is that of
 * the sum of its bursts; the mask selects whole points. */
static void test_points(void) {
  xs_link_profile p;
  XT_EQ_INT(xs_profile_default(&p, "h200-host"), XS_OK);
  xs_sample s[12];
  memset(s, 0, sizeof s);
  for (int i = 0; i < 12; i++) {
    snprintf(s[i].transport, sizeof s[i].transport, "host");
    s[i].K = i < 6 ? 16 : 32; /* two points of 6 bursts, rows interleaved below */
    s[i].V = 1048576.0, s[i].G = 5000.0, s[i].burst_index = i % 6, s[i].t_iss_ns = 1.0;
  }
  xs_dataset* d = NULL;
  XT_EQ_INT(xs_dataset_from_samples(&d, s, 12), XS_OK);
  double pf[12], pc[12];
  XT_EQ_INT(xs_dataset_predict(pf, pc, d, &p), XS_OK);
  xs_dataset_destroy(d);
  for (int i = 0; i < 12; i++) s[i].t_iss_ns = pf[i]; /* the model's own values */
  s[0].t_iss_ns = pf[0] + 0.25 * pf[0];               /* point 1: one burst measured 25% slower */
  XT_EQ_INT(xs_dataset_from_samples(&d, s, 12), XS_OK);
  xs_error_stats f, c;
  XT_EQ_INT(xs_model_evaluate_points(&f, &c, d, &p, NULL, 0), XS_OK);
  XT_EQ_INT((int)f.n, 2);
  double sum = 0;
  for (int i = 0; i < 6; i++) sum += pf[i];
  double want = 1.0 - sum / (sum + 0.25 * pf[0]); /* |sum(pred) / sum(meas) - 1| of point 1 */
  XT_NEAR(f.max, want, 1e-12);
  XT_CHECK(want > 0.001); /* the check can fail */
  uint8_t mask[12];
  for (int i = 0; i < 12; i++) mask[i] = i >= 6; /* point 2 only: exact */
  XT_EQ_INT(xs_model_evaluate_points(&f, NULL, d, &p, mask, 1), XS_OK);
  XT_EQ_INT((int)f.n, 1);
  XT_NEAR(f.max, 0.0, 1e-12);
  mask[6] = 0; /* a point whose rows are split by the mask does not count */
  XT_EQ_INT(xs_model_evaluate_points(&f, NULL, d, &p, mask, 1), XS_OK);
  XT_EQ_INT((int)f.n, 0);
  xs_dataset_destroy(d);
}

int main(void) {
  XT_RUN(test_points);
  XT_RUN(test_limits);
  XT_RUN(test_monotone);
  XT_RUN(test_conservation_and_brute);
  XT_RUN(test_steady_vs_simulation);
  g_tmin = 1; /* the same properties with the latency floor */
  XT_RUN(test_limits);
  XT_RUN(test_monotone);
  XT_RUN(test_conservation_and_brute);
  XT_RUN(test_steady_vs_simulation);
  g_room = 1; /* and with the burst room as well */
  XT_RUN(test_limits);
  XT_RUN(test_monotone);
  XT_RUN(test_conservation_and_brute);
  XT_RUN(test_steady_vs_simulation);
  g_tmin = 0;
  XT_RUN(test_limits);
  XT_RUN(test_monotone);
  XT_RUN(test_conservation_and_brute);
  XT_RUN(test_steady_vs_simulation);
  g_relax = 1; /* the drain rate per K and the relaxing room, with the burst room */
  XT_RUN(test_limits);
  XT_RUN(test_monotone);
  XT_RUN(test_conservation_and_brute);
  XT_RUN(test_steady_vs_simulation);
  g_tmin = 1; /* all four refinements */
  XT_RUN(test_limits);
  XT_RUN(test_monotone);
  XT_RUN(test_conservation_and_brute);
  XT_RUN(test_steady_vs_simulation);
  g_tmin = 0, g_room = 0; /* the relaxing room from Q alone (no burst room) */
  XT_RUN(test_limits);
  XT_RUN(test_monotone);
  XT_RUN(test_conservation_and_brute);
  XT_RUN(test_steady_vs_simulation);
  XT_RUN(test_multi); /* one stage with R(K) is xs_fluid_simulate */
  g_relax = 0;
  XT_RUN(test_tmin);
  XT_RUN(test_burst_room);
  XT_RUN(test_multi);
  XT_RUN(test_profiles_json);
  XT_RUN(test_bad_json);
  return XT_END();
}
