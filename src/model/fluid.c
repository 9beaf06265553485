/* fluid.c — the fluid-queue event simulation: one stage (any burst sequence) and several
 * stages fed by one issuer with a shared issue limit (water-filling). The refinements of the
 * profile (t_min_ns, the burst room q_burst_bytes, the relaxing room, the drain rate per K) act
 * in xsi_burst_time and xsi_link_of, so xs_fluid_simulate has them; xs_fluid_simulate_multi is
 * the original model with each stage draining at its R(K) (docs/model.md §12). */
#include "model/model_internal.h"

#include <stdlib.h>
#include <string.h>

static xs_result check_k(double K) {
  XSI_ARG(xsi_finite(K) && K >= 1 && K <= 1e6, "K must be in [1, 1e6] (got %g)", K);
  return XS_OK;
}

xs_result xs_fluid_simulate(xs_burst_result* out, xs_fluid_summary* summary,
                            const xs_link_profile* p, double K, const xs_burst* bursts, size_t n) {
  XSI_CHECK(xs_profile_validate(p));
  XSI_CHECK(check_k(K));
  XSI_ARG(bursts != NULL || n == 0, "bursts is NULL");
  for (size_t i = 0; i < n; i++) {
    XSI_ARG(xsi_finite(bursts[i].V) && bursts[i].V >= 0,
            "burst %zu: V must be finite and >= 0 (got %g)", i, bursts[i].V);
    XSI_ARG(xsi_finite(bursts[i].gap_ns) && bursts[i].gap_ns >= 0,
            "burst %zu: gap_ns must be finite and >= 0 (got %g)", i, bursts[i].gap_ns);
  }
  xsi_link l = xsi_link_of(p, K);
  xs_fluid_summary s = {-1, 0.0, 0.0, 0.0, 0.0};
  double t = 0.0, b = 0.0, issued = 0.0, drained = 0.0;
  for (size_t i = 0; i < n; i++) {
    double dg = fmin(b, l.R * bursts[i].gap_ns); /* the gap: nothing issued, the stage drains */
    drained += dg;
    b -= dg;
    t += bursts[i].gap_ns;
    double b0 = b, e, dr, st;
    double T = xsi_burst_time(&l, b0, bursts[i].V, &e, &dr, &st);
    drained += dr;
    issued += bursts[i].V;
    if (st > 0 && s.first_stall < 0) s.first_stall = (long)i;
    s.total_stall_ns += st;
    if (e > s.max_backlog) s.max_backlog = e;
    if (b0 > s.max_backlog) s.max_backlog = b0;
    if (out) {
      xs_burst_result* r = &out[i];
      r->t_start_ns = t;
      r->t_iss_ns = T;
      r->t_iss_mean_ns = (T - st) + l.um * st;
      r->stall_ns = st;
      r->backlog_start = b0;
      r->backlog_end = e;
      r->drained = drained;
      r->issued = issued;
    }
    b = e;
    t += T;
  }
  s.total_ns = t;
  s.drain_end_ns = t + b / l.R;
  if (summary) *summary = s;
  return XS_OK;
}

/* ----------------------------------------------------------- several stages, one issuer ---- */

typedef struct stage_state {
  double R, Q, b, rem, x; /* drain, capacity, backlog, bytes left in this burst, issue rate */
} stage_state;

/* Water-filling: split `total` equally among stages with rem > 0; a full stage takes at most
 * its drain rate and the rest is shared by the others. */
static void water_fill(stage_state* st, size_t ns, double total) {
  size_t nfree = 0;
  for (size_t s = 0; s < ns; s++) {
    st[s].x = -1.0;
    if (st[s].rem <= 0) st[s].x = 0.0;
    else nfree++;
  }
  double left = total;
  int changed = 1;
  while (changed && nfree > 0) {
    changed = 0;
    double lam = left / (double)nfree;
    for (size_t s = 0; s < ns; s++)
      if (st[s].x < 0 && st[s].b >= st[s].Q && st[s].R < lam) {
        st[s].x = st[s].R;
        left -= st[s].R;
        nfree--;
        changed = 1;
      }
  }
  double lam = nfree ? left / (double)nfree : 0.0;
  for (size_t s = 0; s < ns; s++)
    if (st[s].x < 0) st[s].x = lam;
}

xs_result xs_fluid_simulate_multi(double* t_iss_ns, const xs_link_profile* const* stages,
                                  size_t nstages, double K, const double* V,
                                  const double* gap_ns, size_t nbursts) {
  XSI_ARG(t_iss_ns != NULL || nbursts == 0, "t_iss_ns is NULL");
  XSI_ARG(stages != NULL && nstages >= 1 && nstages <= 4096, "need 1..4096 stages (got %zu)",
          nstages);
  XSI_ARG(nbursts == 0 || (V != NULL && gap_ns != NULL), "V or gap_ns is NULL");
  XSI_CHECK(check_k(K));
  for (size_t s = 0; s < nstages; s++) {
    xs_result r = xs_profile_validate(stages[s]);
    if (r != XS_OK) {
      xsi_error_prefix("stage %zu", s);
      return r;
    }
  }
  for (size_t i = 0; i < nbursts * nstages; i++)
    XSI_ARG(xsi_finite(V[i]) && V[i] >= 0, "V[%zu] must be finite and >= 0 (got %g)", i, V[i]);
  for (size_t i = 0; i < nbursts; i++)
    XSI_ARG(xsi_finite(gap_ns[i]) && gap_ns[i] >= 0, "gap_ns[%zu] must be finite and >= 0", i);

  stage_state* st = calloc(nstages, sizeof *st);
  if (!st) return xsi_set_error(XS_ERR_NO_MEMORY, "simulate_multi: %zu stages", nstages);
  const double total = xsi_r_iss(stages[0], K), tf = stages[0]->t_fixed_ns;
  for (size_t s = 0; s < nstages; s++) {
    st[s].R = xsi_drain_rate(stages[s], K); /* R(K) (the drain-rate refinement), else R */
    st[s].Q = xsi_capacity(stages[s], K);
  }
  xs_result res = XS_OK;
  for (size_t bi = 0; bi < nbursts; bi++) {
    double idle = gap_ns[bi] + tf; /* the gap, then the burst's fixed overhead */
    for (size_t s = 0; s < nstages; s++) {
      st[s].b = fmax(0.0, st[s].b - st[s].R * idle);
      st[s].rem = V[bi * nstages + s];
    }
    double t = tf;
    size_t guard = 0;
    for (;;) {
      water_fill(st, nstages, total);
      double dt = INFINITY;
      int active = 0;
      for (size_t s = 0; s < nstages; s++) {
        stage_state* q = &st[s];
        if (q->rem > 0) {
          active = 1;
          dt = fmin(dt, q->rem / q->x);
        }
        if (q->x > q->R && q->b < q->Q) dt = fmin(dt, (q->Q - q->b) / (q->x - q->R));
        if (q->x < q->R && q->b > 0) dt = fmin(dt, q->b / (q->R - q->x));
      }
      if (!active) break;
      if (!(dt < INFINITY) || ++guard > 64 * nstages + 64) {
        res = xsi_set_error(XS_ERR_INTERNAL, "simulate_multi: no progress in burst %zu", bi);
        goto done;
      }
      t += dt;
      for (size_t s = 0; s < nstages; s++) {
        stage_state* q = &st[s];
        double in = q->x * dt;
        q->rem -= in;
        if (q->rem <= 1e-9 * (V[bi * nstages + s] + 1.0)) q->rem = 0.0;
        q->b += (q->x - q->R) * dt;
        if (q->b < 1e-9 * (q->Q + 1.0)) q->b = 0.0; /* snap events reached in this step */
        if (q->b > q->Q * (1.0 - 1e-12)) q->b = q->Q;
      }
    }
    t_iss_ns[bi] = t;
  }
done:
  free(st);
  return res;
}
