/* model_internal.h — private helpers of the X-Stage model (src/model only).
 *
 * One burst from backlog b0 (bytes in the stage when the burst starts):
 *   fixed overhead t_fixed: nothing issued, b1 = max(0, b0 - R*t_fixed);
 *   issue V at r = r_iss(K): if r <= R the backlog falls (to 0 at most) and the issuer never
 *   stalls; if r > R the backlog grows at r - R until it reaches Q, after which the issuer is
 *   throttled to R. Net unthrottled growth of a burst: a = V * (1 - R/r) (negative if r < R).
 *   End backlog e(b0) = clamp(b1 + a, 0, Q).
 * The refinements (docs/model.md §12): t_min lengthens the fixed overhead (xsi_tf_of); the burst
 * room caps what one burst adds at min(room, Q - b1), the room being Qb, or Qb_eff(V) < Qb for a
 * burst that overflows from idle with the relaxing room (xsi_room_of, a function of V only); R
 * is R(K) with the drain rate per K (xsi_link_of). For a fixed V every formula keeps its form.
 * The start-of-burst map of equal bursts with gap G is f(b) = max(0, e(b) - R*G); docs/model.md
 * derives its smallest fixed point and the three regimes from it. */
#ifndef XSTAGE_MODEL_INTERNAL_H
#define XSTAGE_MODEL_INTERNAL_H

#include "core/internal.h"
#include "xstage/model.h"

#include <math.h>

/* Scalars of one (profile, K) pair, resolved once. tmin: the profile's t_min_ns. */
typedef struct xsi_link {
  double tf, r, R, Q, um; /* t_fixed ns, issue rate, drain rate R(K) (bytes/ns), Q bytes, unfair */
  double tmin;
  double Qb; /* burst room Qb(K) (has_q_burst), else +inf */
  /* the relaxing room (has_relax): Qr(K) bytes and X0(K) bytes; X0 = +inf: no relaxation */
  double Qr, X0;
} xsi_link;

static inline double xsi_r_iss(const xs_link_profile* p, double K) {
  double r = K * p->r_cta;
  return r < p->r_cap ? r : p->r_cap;
}

/* Q(K) by piecewise-linear interpolation (profile assumed valid). */
double xsi_capacity(const xs_link_profile* p, double K);
/* Qb(K), the burst room, by the same interpolation; +inf when the profile has none. */
double xsi_burst_room(const xs_link_profile* p, double K);
/* Piecewise-linear interpolation of y[0..p->nq) at K through p->q_k (constant beyond the ends). */
double xsi_interp_k(const xs_link_profile* p, const double* y, double K);
/* R(K): p->R, or the interpolation of p->r_k (has_r_k). */
static inline double xsi_drain_rate(const xs_link_profile* p, double K) {
  return p->has_r_k ? xsi_interp_k(p, p->r_k, K) : p->R;
}

static inline xsi_link xsi_link_of(const xs_link_profile* p, double K) {
  xsi_link l;
  l.tf = p->t_fixed_ns;
  l.r = xsi_r_iss(p, K);
  l.R = xsi_drain_rate(p, K);
  l.Q = xsi_capacity(p, K);
  l.um = p->unfair_mean;
  l.tmin = p->t_min_ns;
  l.Qb = xsi_burst_room(p, K);
  l.Qr = l.Qb;
  l.X0 = INFINITY;
  if (p->has_relax) {
    l.Qr = xsi_interp_k(p, p->q_relax_bytes, K);
    l.X0 = xsi_interp_k(p, p->relax_bytes, K);
  }
  return l;
}

/* The room of a burst of V bytes: Qb (its cap whatever the backlog it finds) or, with the
 * relaxing room (X0 finite) once it overflows from idle (a = V (1 - R/r) > Q1 = min(Qb, Q)),
 *   Qb_eff = Qr + (Q1 - Qr) exp(-X / X0),   X = V - Q1 r / (r - R),
 * X being the bytes it issues at the drain rate from an idle stage, Qr <= Q1. Non-increasing in V
 * and continuous where it matters (min(room, Q - b) is unchanged at a = Q1), so whether a burst
 * is free from idle does not change. */
static inline double xsi_room_of(const xsi_link* l, double V) {
  if (!(l->X0 < INFINITY) || l->r <= l->R) return l->Qb;
  const double Q1 = fmin(l->Qb, l->Q);
  double X = V - Q1 * l->r / (l->r - l->R);
  if (!(X > 0)) return l->Qb;
  const double Qr = fmin(l->Qr, Q1);
  return Qr + (Q1 - Qr) * exp(-X / l->X0);
}

/* The fixed overhead of a burst of V bytes: t_fixed, or longer when the latency floor t_min
 * exceeds t_fixed + V/r (the floor overlaps the issue). */
static inline double xsi_tf_of(const xsi_link* l, double V) {
  double t = l->tmin - V / l->r;
  return t > l->tf ? t : l->tf;
}

/* The link as seen by bursts of V bytes: tf replaced by xsi_tf_of(l, V). Every formula of the
 * original model then holds for equal bursts of V with this link. */
static inline xsi_link xsi_link_for(const xsi_link* l, double V) {
  xsi_link m = *l;
  m.tf = xsi_tf_of(l, V);
  m.Qb = xsi_room_of(l, V); /* the relaxing room folded in for this V, then constant */
  m.Qr = m.Qb;
  m.X0 = INFINITY;
  return m;
}

/* One burst of V bytes starting with backlog b0: returns its issue time (t_fixed included);
 * *b_end: backlog when its issue ends; *drained: bytes drained during the burst (from the
 * elapsed time, independently of the backlog bookkeeping); *stall: time held by backpressure. */
static inline double xsi_burst_time(const xsi_link* l, double b0, double V, double* b_end,
                                    double* drained, double* stall) {
  const double tf = xsi_tf_of(l, V);
  double dr = fmin(b0, l->R * tf);
  double b1 = b0 - dr;
  double tph = V / l->r, st = 0.0;
  if (l->r <= l->R) {
    double te = (l->R > l->r) ? b1 / (l->R - l->r) : INFINITY; /* time to empty the stage */
    if (te >= tph) {
      dr += l->R * tph;
      *b_end = fmax(0.0, b1 - (l->R - l->r) * tph);
    } else {
      dr += l->R * te + l->r * (tph - te);
      *b_end = 0.0;
    }
  } else {
    /* the burst room (relaxed for this V) caps one burst's run */
    double room = fmax(0.0, fmin(xsi_room_of(l, V), l->Q - b1));
    double u = room * l->r / (l->r - l->R); /* bytes issued before the stage is full */
    if (V <= u) {
      *b_end = b1 + V * (1.0 - l->R / l->r);
    } else {
      st = (V - u) * (1.0 / l->R - 1.0 / l->r); /* the rest goes at R instead of r */
      *b_end = room < l->Q - b1 ? b1 + room : l->Q; /* Q exactly when the stage is full */
    }
    dr += l->R * (tph + st);
  }
  if (drained) *drained = dr;
  if (stall) *stall = st;
  return tf + tph + st;
}

/* Backlog at the start of burst n (0-based) of equal bursts (V, G) from an idle stage:
 * closed form of the iterated map (docs/model.md, "steady state"). */
double xsi_backlog_at(const xsi_link* l, double V, double G, long n);

/* T0 of the link for V bytes: max(t_min, t_fixed + V/r). */
static inline double xsi_t0(const xsi_link* l, double V) { return xsi_tf_of(l, V) + V / l->r; }

/* Quantiles of |rel| errors into stats (sorts a copy). */
xs_result xsi_error_stats(xs_error_stats* st, const double* rel, size_t n);

/* Predicted issue time of burst n of equal bursts (V, G) from idle (fluid model). */
double xsi_predict_burst(const xsi_link* l, double V, double G, long n);

/* Measured sequences (xs_sample.seq >= 1). xsi_seq_order: *order (malloc'ed, caller frees;
 * NULL when *m is 0) = the indices of the rows with seq >= 1 of s[0..n), sorted by transport,
 * K, V, seq, burst_index. xsi_seq_predict: each sequence of `order` simulated once from an
 * idle stage with its rows' gap_before_ns (a burst index missing from the rows gets the gap G
 * of the next row present); pred[i] = the fluid model's issue time of row i, set for those
 * rows only. The gap before a row for the closed form: xsi_row_gap. */
xs_result xsi_seq_order(size_t** order, size_t* m, const xs_sample* s, size_t n);
void xsi_seq_predict(double* pred, const xs_sample* s, const size_t* order, size_t m,
                     const xs_link_profile* p);
static inline double xsi_row_gap(const xs_sample* s) {
  return s->seq >= 1 ? s->gap_before_ns : s->G;
}

/* Compute that reads memory (coupled.c, docs/model.md §10): K producers (l = the link at K),
 * each computing G ns per tile and then waiting for its own V/K bytes to drain before the next
 * tile, served by weighted processor sharing (weights evenly spaced in [1 - s, 1 + s], s =
 * xsi_coupled_spread of p's unfair_mean) at R(K); n tiles each; no producer computes while the
 * stage holds more than Qs = xsi_shared_room(p) bytes. fused_ns:
 * the slowest producer's last issue end (a last burst is accepted once the stage has room:
 * max(t0_one, (B - min(Q, Qb)) / R) after it); drain_ns: from then until every byte is out. */
typedef struct xsi_coupled {
  double fused_ns, drain_ns, spread, shared_room; /* s and Qs as used */
  int producers; /* simulated: K rounded, at most 512 */
} xsi_coupled;
xs_result xsi_coupled_fusion(xsi_coupled* out, const xs_link_profile* p, const xsi_link* l,
                             double K, double V, double G, long n);
/* The stage's shared room: Q(K) extrapolated to K = 0 through its two smallest points (Q(K) =
 * shared room + K x a producer's own queue), in [0, Q(q_k[0])]; Q(q_k[0]) with one point. */
double xsi_shared_room(const xs_link_profile* p);
/* The spread s in [0, 0.95] whose sharing gives mean / max drain end = unfair_mean for K equal
 * bursts from a common start (0 for K = 1 or unfair_mean >= 1). */
double xsi_coupled_spread(double unfair_mean, int K);

#endif
