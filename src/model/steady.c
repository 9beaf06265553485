/* steady.c — periodic steady state of equal bursts in closed form (docs/model.md, "Steady
 * state"): the start-of-burst backlog of equal bursts (V, G) obeys b' = f(b) with
 *   f(b) = max(0, clamp(max(0, b - R*tf) + a, 0, Q) - R*G),   a = V*(1 - R/r),
 * a monotone piecewise-linear map with slopes 0 and 1. Iterated from b = 0 it climbs to its
 * smallest fixed point:
 *   d = a - R*(tf + G) <= 0:  b* = c = max(0, min(Q, a) - R*G)  (c <= R*tf: every burst starts
 *                             with an empty stage once its fixed overhead has passed)
 *   d > 0:                    b_n = min(Q - R*G, c + (n-1)*d), b* = max(0, Q - R*G).
 * The refinement t_min (docs/model.md, "Refinements") enters through the burst's fixed
 * overhead for the given V (xsi_link_for): every formula above holds with tf = that overhead.
 * The refinement Qb (burst room: one burst adds at most min(Qb, Q - b) to the stage) replaces a
 * by min(a, Qb) in f, which keeps f monotone with slopes 0 and 1: the same fixed points with
 * that a. The stall of a burst is max(0, a - min(Qb, Q - max(0, b - R*tf))) / R. The relaxing
 * room makes Qb a function of V alone (Qb_eff(V), folded in by xsi_link_for), so for equal
 * bursts it is again a constant and nothing above changes; R is R(K). */
#include "model/model_internal.h"


double xsi_backlog_at(const xsi_link* l0, double V, double G, long n) {
  if (n <= 0 || l0->r <= l0->R) return 0.0;
  const xsi_link lv = xsi_link_for(l0, V), *l = &lv; /* t_min folded into the fixed overhead */
  double a = fmin(V * (1.0 - l->R / l->r), l->Qb); /* one burst's growth, capped by Qb */
  double c = fmax(0.0, fmin(l->Q, a) - l->R * G);
  if (n == 1 || c <= l->R * l->tf) return c;
  double d = a - l->R * (l->tf + G);
  return fmin(l->Q - l->R * G, c + (double)(n - 1) * d);
}

double xsi_predict_burst(const xsi_link* l, double V, double G, long n) {
  double e;
  return xsi_burst_time(l, xsi_backlog_at(l, V, G, n), V, &e, NULL, NULL);
}

/* l: the link for bursts of V (xsi_link_for). */
static xs_regime regime_of(const xsi_link* l, double V, double G) {
  if (l->r <= l->R) return XS_REGIME_FREE;
  double a = V * (1.0 - l->R / l->r);
  double d = fmin(a, l->Qb) - l->R * (l->tf + G);
  if (a <= fmin(l->Q, l->Qb) && d <= 0) return XS_REGIME_FREE;
  if (d > 0 && l->Q > l->R * (l->tf + G)) return XS_REGIME_DRAIN;
  return XS_REGIME_CAPACITY;
}

/* Event-simulation fallback: iterate the burst until the start backlog repeats. */
static void periodic_by_simulation(xs_steady* s, const xsi_link* l, double V, double G) {
  double b = 0.0, e = 0.0, T = 0.0;
  long n = 0;
  for (; n < 10000000; n++) {
    T = xsi_burst_time(l, b, V, &e, NULL, NULL);
    double nb = fmax(0.0, e - l->R * G);
    if (fabs(nb - b) <= 1e-12 * (l->Q + 1.0) && n > 0) break;
    b = nb;
  }
  s->t_iss_ns = T;
  s->backlog_start = b;
  s->backlog_peak = fmax(b, e);
  s->bursts_to_steady = n;
  s->closed_form = 0;
}

xs_result xs_fluid_periodic(xs_steady* out, const xs_link_profile* p, double K, double V,
                            double G) {
  XSI_ARG(out != NULL, "out is NULL");
  XSI_CHECK(xs_profile_validate(p));
  XSI_ARG(xsi_finite(K) && K >= 1 && K <= 1e6, "K must be in [1, 1e6] (got %g)", K);
  XSI_ARG(xsi_finite(V) && V >= 0, "V must be finite and >= 0 (got %g)", V);
  XSI_ARG(!isnan(G) && G >= 0, "G must be >= 0 (got %g)", G);
  const xsi_link l0 = xsi_link_of(p, K);
  const xsi_link l = xsi_link_for(&l0, V); /* t_min folded into the fixed overhead for this V */
  xs_steady s;
  double e0, e;
  double T0 = xsi_t0(&l, V);
  s.t_iss_first_ns = xsi_burst_time(&l, 0.0, V, &e0, NULL, NULL);
  s.regime = regime_of(&l, V, G);
  double bstar = 0.0;
  if (l.r > l.R) {
    double a = fmin(V * (1.0 - l.R / l.r), l.Qb); /* one burst's growth, capped by Qb */
    double d = a - l.R * (l.tf + G);
    bstar = d > 0 ? fmax(0.0, l.Q - l.R * G) : fmax(0.0, fmin(l.Q, a) - l.R * G);
  }
  s.t_iss_ns = xsi_burst_time(&l, bstar, V, &e, NULL, NULL);
  s.backlog_start = bstar;
  s.backlog_peak = fmax(bstar, e);
  s.closed_form = 1;
  /* NOTE: check the fixed point; fall back to simulation if rounding broke it. */
  double fb = fmax(0.0, e - l.R * G);
  if (!(fabs(fb - bstar) <= 1e-9 * (l.Q + V + 1.0))) periodic_by_simulation(&s, &l, V, G);

  /* bursts_to_steady: T(b) is non-decreasing in b and b_n climbs; stall(b) =
   * max(0, a - Q + max(0, b - R*tf)) / R for r > R where Q - b bounds the room (below, the
   * stall is that of the first burst, which is below the threshold here). */
  double thr = s.t_iss_ns * (1.0 - 1e-3);
  if (s.closed_form) {
    if (s.t_iss_first_ns >= thr) {
      s.bursts_to_steady = 0;
    } else {
      double a = V * (1.0 - l.R / l.r);
      double c = xsi_backlog_at(&l, V, G, 1);
      double d = fmin(a, l.Qb) - l.R * (l.tf + G); /* growth per burst */
      double bthr = l.R * (thr - T0) - a + l.Q + l.R * l.tf;
      double k = d > 0 ? ceil((bthr - c) / d) : 0.0;
      if (!(k >= 0)) k = 0;
      if (k > 1e15) k = 1e15;
      long n = 1 + (long)k;
      /* NOTE: the formula can be off by one through rounding; a few steps settle it. */
      for (int i = 0; i < 4 && n > 1 && xsi_predict_burst(&l, V, G, n - 1) >= thr; i++) n--;
      for (int i = 0; i < 4 && xsi_predict_burst(&l, V, G, n) < thr; i++) n++;
      s.bursts_to_steady = n;
    }
  }
  s.stall_ns = fmax(0.0, s.t_iss_ns - T0);
  s.t_iss_mean_ns = T0 + l.um * s.stall_ns;
  *out = s;
  return XS_OK;
}
