/* plan.c — the planner: the model inverted (docs/model.md, "Planning").
 *
 * With a = V (1 - R/r) the unthrottled growth of a burst, periodic bursts (V, G) never stall
 * iff r <= R, or a <= Q and a <= R (t_fixed + G). Hence the smallest free gap
 * G* = max(0, V/R - T0_iss) when a <= Q (infinite otherwise) and the largest free burst
 * V* = min(Q, R (t_fixed + G)) / (1 - R/r); with a latency floor t_min > 0 (T0 = max(t_min,
 * t_fixed + V/r)) also every V <= R (t_min + G) with a <= Q is free, so
 * V* = min(Q / (1 - R/r), max(that, R (t_min + G))). With a burst room Qb (one burst adds at
 * most min(Qb, Q - b)) Q becomes min(Q, Qb) in all of this; R is R(K) with the drain rate per
 * K, and the relaxing room changes nothing here (it only acts on bursts that overflow from idle,
 * which no free burst does). Each result is checked against the steady state and nudged by one
 * ulp at a time if rounding put it on the wrong side. */
#include "model/model_internal.h"

#include <stdlib.h>
#include <string.h>

static int steady_free(const xs_link_profile* p, double K, double V, double G) {
  xs_steady s;
  return xs_fluid_periodic(&s, p, K, V, G) == XS_OK && s.stall_ns == 0.0;
}

static xs_result check_kv(const xs_link_profile* p, double K, double V) {
  XSI_CHECK(xs_profile_validate(p));
  XSI_ARG(xsi_finite(K) && K >= 1 && K <= 1e6, "K must be in [1, 1e6] (got %g)", K);
  XSI_ARG(xsi_finite(V) && V >= 0, "V must be finite and >= 0 (got %g)", V);
  return XS_OK;
}

xs_result xs_plan_min_free_gap(double* G_ns, const xs_link_profile* p, double K, double V) {
  XSI_ARG(G_ns != NULL, "G_ns is NULL");
  XSI_CHECK(check_kv(p, K, V));
  xsi_link l = xsi_link_of(p, K);
  if (l.r <= l.R || V == 0) {
    *G_ns = 0.0;
    return XS_OK;
  }
  double a = V * (1.0 - l.R / l.r);
  if (!steady_free(p, K, V, INFINITY)) { /* a > Q, decided by the model's own arithmetic */
    *G_ns = INFINITY;
    return XS_OK;
  }
  double G = fmax(0.0, a / l.R - xsi_tf_of(&l, V));
  for (int i = 0; i < 256 && !steady_free(p, K, V, G); i++) G = nextafter(G, INFINITY);
  *G_ns = G;
  return XS_OK;
}

xs_result xs_plan_max_burst(double* V_bytes, const xs_link_profile* p, double K, double G) {
  XSI_ARG(V_bytes != NULL, "V_bytes is NULL");
  XSI_CHECK(check_kv(p, K, 0.0));
  XSI_ARG(!isnan(G) && G >= 0, "G must be >= 0 (got %g)", G);
  xsi_link l = xsi_link_of(p, K);
  if (l.r <= l.R) {
    *V_bytes = INFINITY;
    return XS_OK;
  }
  const double Q1 = fmin(l.Q, l.Qb); /* what one burst may add: Q, or the burst room Qb */
  double V = fmin(Q1, l.R * (l.tf + G)) / (1.0 - l.R / l.r);
  if (l.tmin > 0) /* free also when V <= R (t_min + G): the floor leaves the stage that time */
    V = fmin(Q1 / (1.0 - l.R / l.r), fmax(V, l.R * (l.tmin + G)));
  for (int i = 0; i < 256 && V > 0 && !steady_free(p, K, V, G); i++) V = nextafter(V, 0.0);
  *V_bytes = V;
  return XS_OK;
}

/* Stall of burst k (0-based) of n equal bursts (v, g) from idle. */
static double stall_at(const xsi_link* l, double v, double g, long k) {
  double e, st;
  xsi_burst_time(l, xsi_backlog_at(l, v, g, k), v, &e, NULL, &st);
  return st;
}

xs_result xs_plan_split(xs_split_plan* out, const xs_link_profile* p, double K, double V,
                        double window_ns) {
  XSI_ARG(out != NULL, "out is NULL");
  XSI_CHECK(check_kv(p, K, V));
  XSI_ARG(V > 0, "V must be > 0");
  XSI_ARG(xsi_finite(window_ns) && window_ns >= 0, "window_ns must be finite and >= 0 (got %g)",
          window_ns);
  xsi_link l = xsi_link_of(p, K);
  const long nmax = 1L << 20;
  long best = -1;
  /* The stage only fills over a sequence, so the last burst stalls first: n bursts are
   * feasible iff the last one is free. */
  for (long n = 1; n <= nmax && best < 0; n++)
    if (stall_at(&l, V / (double)n, window_ns / (double)n, n - 1) == 0.0) best = n;
  int feasible = best > 0;
  if (!feasible) { /* best effort: least total stall over n = 1, 2, 4, ... */
    double least = INFINITY;
    for (long n = 1; n <= 4096; n *= 2) {
      double tot = 0;
      for (long k = 0; k < n; k++) tot += stall_at(&l, V / (double)n, window_ns / (double)n, k);
      if (tot < least) least = tot, best = n;
    }
  }
  xs_split_plan sp;
  sp.nbursts = best;
  sp.burst_bytes = V / (double)best;
  sp.gap_ns = window_ns / (double)best;
  sp.stall_ns = 0;
  sp.issue_ns = 0;
  for (long k = 0; k < best; k++) {
    double e, st;
    sp.issue_ns += xsi_burst_time(&l, xsi_backlog_at(&l, sp.burst_bytes, sp.gap_ns, k),
                                  sp.burst_bytes, &e, NULL, &st);
    sp.stall_ns += st;
  }
  sp.feasible = feasible;
  *out = sp;
  return XS_OK;
}

xs_result xs_predict_fusion(xs_fusion_prediction* out, const xs_link_profile* p,
                            const xs_workload* w) {
  XSI_ARG(out != NULL && w != NULL, "out or workload is NULL");
  XSI_ARG(w->size >= sizeof(xs_workload), "workload: 'size' not set (use XS_WORKLOAD_INITIALIZER)");
  XSI_CHECK(check_kv(p, w->K, 0.0));
  XSI_ARG(xsi_finite(w->bytes_per_tile) && w->bytes_per_tile >= 0,
          "workload '%s': bytes_per_tile must be >= 0", w->name);
  XSI_ARG(xsi_finite(w->compute_ns_per_tile) && w->compute_ns_per_tile >= 0,
          "workload '%s': compute_ns_per_tile must be >= 0", w->name);
  XSI_ARG(w->tiles_per_producer >= 1 && w->tiles_per_producer <= 100000000L,
          "workload '%s': tiles_per_producer must be in [1, 1e8]", w->name);
  xsi_link l = xsi_link_of(p, w->K);
  double V = w->K * w->bytes_per_tile, G = w->compute_ns_per_tile;
  xs_fusion_prediction f;
  memset(&f, 0, sizeof f);
  f.first_stall_tile = -1;
  double b = 0, t = 0, tmean = 0, first = 0;
  /* The K producers as one aggregate issuer: compute a tile (the gap), then store it. */
  for (long k = 0; k < w->tiles_per_producer; k++) {
    b = fmax(0.0, b - l.R * G);
    double e, st;
    double T = xsi_burst_time(&l, b, V, &e, NULL, &st);
    if (k == 0) first = G + T;
    if (st > 0 && f.first_stall_tile < 0) f.first_stall_tile = k;
    f.max_backlog = fmax(f.max_backlog, e);
    t += G + T;
    tmean += G + (T - st) + l.um * st;
    b = e;
  }
  f.compute_ns = (double)w->tiles_per_producer * G;
  f.fused_ns = t;
  f.drain_ns = b / l.R; /* the last burst's backlog: the stage empties at R(K) */
  f.fused_mean_ns = tmean;
  f.overhead_ns = t - f.compute_ns;
  f.overhead_frac = f.compute_ns > 0 ? f.overhead_ns / f.compute_ns : INFINITY;
  f.total_bytes = V * (double)w->tiles_per_producer;
  /* NOTE: the serial baseline is a separate transfer, not issued by these K producers: it
   * moves at the profile's R, not at R(K) (the drain-rate refinement, docs/model.md §12) */
  f.serial_ns = f.compute_ns + f.total_bytes / p->R;
  f.speedup_vs_serial = f.serial_ns / f.fused_ns;
  {
    xsi_link one = xsi_link_of(p, 1.0);
    double later = (double)(w->tiles_per_producer - 1);
    f.fused_spread_ns =
        first + fmax(later * (G + xsi_t0(&one, w->bytes_per_tile)), later * V / l.R);
    f.overhead_spread_frac =
        f.compute_ns > 0 ? (f.fused_spread_ns - f.compute_ns) / f.compute_ns : INFINITY;
  }
  {
    xsi_coupled c;
    XSI_CHECK(xsi_coupled_fusion(&c, p, &l, w->K, V, G, w->tiles_per_producer));
    f.coupled_room_bytes = c.shared_room;
    f.fused_coupled_ns = c.fused_ns;
    f.drain_coupled_ns = c.drain_ns;
    f.coupled_spread = c.spread;
    f.overhead_coupled_frac =
        f.compute_ns > 0 ? (f.fused_coupled_ns - f.compute_ns) / f.compute_ns : INFINITY;
  }
  xs_steady s;
  XSI_CHECK(xs_fluid_periodic(&s, p, w->K, V, G));
  f.regime = s.regime;
  XSI_CHECK(xs_plan_min_free_gap(&f.min_free_gap_ns, p, w->K, V));
  *out = f;
  return XS_OK;
}

xs_result xs_plan_split_fusion(xs_split_scan* out, const xs_link_profile* p, const xs_workload* w,
                               int max_n) {
  XSI_ARG(out != NULL && w != NULL, "out or workload is NULL");
  XSI_ARG(max_n >= 1 && max_n <= 128 && (max_n & (max_n - 1)) == 0,
          "max_n must be a power of two in [1, 128] (got %d)", max_n);
  XSI_ARG(w->size >= sizeof(xs_workload), "workload: 'size' not set (use XS_WORKLOAD_INITIALIZER)");
  XSI_ARG(w->tiles_per_producer >= 1 && w->tiles_per_producer <= 100000000L / max_n,
          "workload '%s': tiles_per_producer x max_n must be in [1, 1e8]", w->name);
  xs_split_scan sc;
  memset(&sc, 0, sizeof sc);
  double best = INFINITY;
  for (int n = 1; n <= max_n; n *= 2) {
    xs_workload s = *w;
    s.bytes_per_tile = w->bytes_per_tile / n;
    s.compute_ns_per_tile = w->compute_ns_per_tile / n;
    s.tiles_per_producer = w->tiles_per_producer * n;
    xs_fusion_prediction f;
    XSI_CHECK(xs_predict_fusion(&f, p, &s));
    int i = sc.count++;
    sc.n[i] = n;
    sc.coupled_ns[i] = f.fused_coupled_ns + f.drain_coupled_ns;
    sc.lockstep_ns[i] = f.fused_ns + f.drain_ns;
    sc.compute_ns = f.compute_ns;
    best = fmin(best, sc.coupled_ns[i]);
  }
  for (int i = 0; i < sc.count; i++)
    if (sc.coupled_ns[i] <= best * 1.01) {
      sc.best_n = sc.n[i];
      break;
    }
  *out = sc;
  return XS_OK;
}
