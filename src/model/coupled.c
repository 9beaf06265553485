/* coupled.c — fused stores with compute that reads memory (docs/model.md §10, "Coupled").
 *
 * Measured on the H200 host path (session 19): an SM whose remote stores are queued in the
 * stage hardly loads. So a producer whose compute reads memory (attention, xbench's load gaps)
 * cannot compute its next tile until its own last burst has drained; its stores' issue, by
 * contrast, is accepted at once. The stage's room then no longer matters between tiles: what
 * matters is the order in which the link serves the producers, which decides how soon their
 * tile ends drift apart (in lockstep every tile costs compute + V/R; fully spread, compute +
 * a producer's own share).
 *
 * The producers are served by weighted processor sharing: the link drains R(K) in total, shared
 * among the producers with bytes queued in proportion to weights spaced evenly in [1 - s, 1 + s].
 * The weights rotate: producer i's burst of tile k gets weight number (i + k c) mod K, c coprime
 * to K, so that no producer is served last every time (with fixed weights the least served
 * producer falls behind where the link binds, and the prediction ends up to 9 % above the link's
 * own bound, bytes / R; measured, the link-bound runs meet that bound). s is not fitted to
 * coupled runs: it is the spread whose drain of equal bursts from a common start gives the
 * profile's unfair_mean (the mean producer's stall over the slowest's, fitted with FMA gaps),
 * so every coupled measurement is held out.
 *
 * The coupling also reaches past the storing SM (session 20, call D): one SM storing to host
 * memory at the link's rate held up no other SM's loads, two SMs storing (issuing faster than
 * the link drains, so the stage backs up) held up those of half the other SMs, sixteen or more
 * those of all of them. So no producer computes while the stage holds more than its shared
 * room Qs: Q(K) extrapolated to K = 0 (Q(K) grows by about a producer's own queue per producer;
 * what is left at K = 0 is the part they share), taken from the profile, not fitted.
 *
 * Event simulation, exact for this fluid: a producer computes (G ns), issues its tile's bytes
 * (instantly), waits for them to drain, computes the next tile, ... After its last tile's
 * issue it is done; that issue ends when the stage has room for it: at t + max(T0 of one
 * producer, (B - Q1)/R), B the stage's bytes right after it, Q1 = min(Q(K), Qb(K)). */
#include "model/model_internal.h"

#include <stdlib.h>

/* Producers simulated: K rounded, at most XSI_CPL_MAX_K (each then stands for K / Ks). */
#define XSI_CPL_MAX_K 512
/* Work bound of the event simulation: about 2 Ks^2 n operations; beyond it the tiles past
 * n_sim are extrapolated at the simulated period of the slowest producer's last half. */
#define XSI_CPL_WORK 40e6

static double weight(int i, int K, double s) {
  return K > 1 ? 1.0 - s + 2.0 * s * (double)i / (double)(K - 1) : 1.0;
}

static int gcd(int a, int b) {
  while (b) {
    int t = a % b;
    a = b, b = t;
  }
  return a;
}

/* The weights' rotation step: the first integer from 0.382 K on that is coprime to K (a
 * golden-ratio step: consecutive tiles of one producer get weights far apart). */
static int rotation(int K) {
  int c = (int)(0.381966 * K);
  if (c < 1) c = 1;
  while (gcd(c, K) != 1)
    c++;
  return c;
}

/* mean / max drain end of K equal amounts under weighted sharing with spread s, from a common
 * start: producer i ends after (v/R) sum_j min(w_j / w_i, 1), the slowest (w_0) after K v/R. */
static double unfair_of_spread(int K, double s) {
  double sum = 0;
  for (int i = 0; i < K; i++)
    for (int j = 0; j < K; j++)
      sum += fmin(weight(j, K, s) / weight(i, K, s), 1.0);
  return sum / ((double)K * (double)K);
}

double xsi_coupled_spread(double unfair_mean, int K) {
  const double s_max = 0.95;
  if (K <= 1 || !(unfair_mean < 1.0)) return 0.0;
  if (unfair_mean <= unfair_of_spread(K, s_max)) return s_max;
  double lo = 0.0, hi = s_max; /* unfair_of_spread falls from 1 as s grows */
  for (int it = 0; it < 50; it++) {
    double mid = 0.5 * (lo + hi);
    if (unfair_of_spread(K, mid) > unfair_mean)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

enum { CPL_COMPUTE, CPL_DRAIN, CPL_DONE };

double xsi_shared_room(const xs_link_profile* p) {
  if (p->nq < 2) return p->q_bytes[0];
  double k0 = p->q_k[0], k1 = p->q_k[1], q0 = p->q_bytes[0], q1 = p->q_bytes[1];
  double q = q0 - k0 * (q1 - q0) / (k1 - k0);
  return fmin(q0, fmax(0.0, q));
}

xs_result xsi_coupled_fusion(xsi_coupled* out, const xs_link_profile* p, const xsi_link* l,
                             double K, double V, double G, long n) {
  int Ks = (int)fmin(XSI_CPL_MAX_K, fmax(1.0, floor(K + 0.5)));
  const double v = V / Ks, R = l->R, Q1 = fmin(l->Q, l->Qb);
  const double s = xsi_coupled_spread(p->unfair_mean, Ks), Qs = xsi_shared_room(p);
  const xsi_link one = xsi_link_of(p, 1.0);
  const double t0_one = xsi_t0(&one, v);
  long ns = n;
  double cap = XSI_CPL_WORK / (2.0 * (double)Ks * (double)Ks);
  if ((double)ns > cap) ns = (long)fmax(4.0, cap);
  int* mode = malloc((size_t)Ks * sizeof *mode);
  long* tile = malloc((size_t)Ks * sizeof *tile);
  double* rem = malloc((size_t)Ks * sizeof *rem);
  double* w = malloc((size_t)Ks * sizeof *w);
  double* tmax = calloc((size_t)ns, sizeof *tmax); /* latest issue of each tile */
  if (!mode || !tile || !rem || !w || !tmax) {
    free(mode), free(tile), free(rem), free(w), free(tmax);
    return xsi_set_error(XS_ERR_NO_MEMORY, "coupled prediction: out of memory (%d producers)", Ks);
  }
  const int c = rotation(Ks);
  for (int i = 0; i < Ks; i++)
    mode[i] = CPL_COMPUTE, tile[i] = 0, rem[i] = G, w[i] = 0;
  double t = 0, wsum = 0, backlog = 0, last_issue_end = 0, end = 0;
  const double eps_c = 1e-12 * (G + 1.0), eps_d = 1e-12 * (v + 1.0);
  int left = Ks;
  while (left > 0) {
    /* the next event: a compute ends, or a producer's bytes are drained, or the stage falls to
     * the shared room (no compute anywhere while it holds more) */
    const int held = backlog > Qs * (1 + 1e-12) + 1e-9;
    double dt = held ? (backlog - Qs) / R : INFINITY;
    for (int i = 0; i < Ks; i++) {
      if (mode[i] == CPL_COMPUTE) {
        if (!held) dt = fmin(dt, rem[i]);
      } else if (mode[i] == CPL_DRAIN)
        dt = fmin(dt, rem[i] * wsum / (R * w[i]));
    }
    if (!(dt < INFINITY)) break; /* unreachable: a producer left is computing or draining */
    t += dt;
    int issued_last = 0;
    double wnew = 0;
    for (int i = 0; i < Ks; i++) {
      if (mode[i] == CPL_COMPUTE) {
        if (held) continue;
        rem[i] -= dt;
        if (rem[i] > eps_c) continue;
        /* the tile is computed: its bytes are issued (accepted at once) */
        if (tile[i] < ns) tmax[tile[i]] = fmax(tmax[tile[i]], t);
        w[i] = weight((int)((i + (tile[i] % Ks) * c) % Ks), Ks, s);
        tile[i]++;
        mode[i] = CPL_DRAIN, rem[i] = v, wnew += w[i], backlog += v;
        if (tile[i] == ns) issued_last = 1;
      } else if (mode[i] == CPL_DRAIN) {
        double d = R * w[i] / wsum * dt;
        backlog -= d;
        rem[i] -= d;
        if (rem[i] > eps_d) continue;
        backlog -= rem[i];
        wnew -= w[i];
        if (tile[i] == ns) {
          mode[i] = CPL_DONE, left--;
          end = t;
        } else {
          mode[i] = CPL_COMPUTE, rem[i] = G;
        }
      }
    }
    wsum += wnew;
    if (wsum < 1e-12) wsum = 0;
    if (backlog < 0) backlog = 0;
    /* last bursts issued now: accepted once the stage has room for them (after the others
     * issued at the same instant, hence outside the loop above) */
    if (issued_last) last_issue_end = fmax(last_issue_end, t + fmax(t0_one, (backlog - Q1) / R));
  }
  double fused = last_issue_end, drain = fmax(0.0, end - last_issue_end);
  if (ns < n) {
    long h = ns / 2;
    double period = (tmax[ns - 1] - tmax[h - 1]) / (double)(ns - h);
    fused += (double)(n - ns) * period;
  }
  free(mode), free(tile), free(rem), free(w), free(tmax);
  out->fused_ns = fused;
  out->drain_ns = drain;
  out->spread = s;
  out->shared_room = Qs;
  out->producers = Ks;
  return XS_OK;
}
