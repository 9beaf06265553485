/* profile.c — link profiles: validation, the embedded defaults, T0_iss and Q(K).
 *
 * The embedded numbers and how each was derived are in docs/model.md ("Embedded profiles"). */
#include "model/model_internal.h"

#include <stdio.h>
#include <string.h>

static int str_ok(const char* s, size_t cap) { return memchr(s, '\0', cap) != NULL; }

xs_result xs_profile_validate(const xs_link_profile* p) {
  XSI_ARG(p != NULL, "profile is NULL");
  XSI_ARG(p->size >= sizeof(xs_link_profile),
          "profile: field 'size' is %zu, expected %zu (use XS_LINK_PROFILE_INITIALIZER)", p->size,
          sizeof(xs_link_profile));
  XSI_ARG(xsi_finite(p->t_fixed_ns) && p->t_fixed_ns >= 0 && p->t_fixed_ns <= 1e12,
          "profile: field 't_fixed_ns' must be finite and in [0, 1e12] ns (got %g)", p->t_fixed_ns);
  XSI_ARG(xsi_finite(p->r_cta) && p->r_cta > 0 && p->r_cta <= 1e9,
          "profile: field 'r_cta' must be in (0, 1e9] bytes/ns (got %g)", p->r_cta);
  XSI_ARG(xsi_finite(p->r_cap) && p->r_cap > 0 && p->r_cap <= 1e9,
          "profile: field 'r_cap' must be in (0, 1e9] bytes/ns (got %g)", p->r_cap);
  XSI_ARG(xsi_finite(p->R) && p->R > 0 && p->R <= 1e9,
          "profile: field 'R' must be in (0, 1e9] bytes/ns (got %g)", p->R);
  XSI_ARG(p->nq >= 1 && p->nq <= XS_PROFILE_MAX_QPTS, "profile: field 'nq' must be in [1, %d] (got %d)",
          XS_PROFILE_MAX_QPTS, p->nq);
  for (int i = 0; i < p->nq; i++) {
    XSI_ARG(xsi_finite(p->q_k[i]) && p->q_k[i] >= 1 && p->q_k[i] <= 1e6,
            "profile: field 'q_k[%d]' must be a producer count in [1, 1e6] (got %g)", i, p->q_k[i]);
    XSI_ARG(i == 0 || p->q_k[i] > p->q_k[i - 1],
            "profile: field 'q_k[%d]' must be larger than q_k[%d] (%g <= %g)", i, i - 1, p->q_k[i],
            p->q_k[i - 1]);
    XSI_ARG(xsi_finite(p->q_bytes[i]) && p->q_bytes[i] >= 0 && p->q_bytes[i] <= 1e15,
            "profile: field 'q_bytes[%d]' must be in [0, 1e15] bytes (got %g)", i, p->q_bytes[i]);
  }
  XSI_ARG(xsi_finite(p->unfair_mean) && p->unfair_mean >= 0 && p->unfair_mean <= 1,
          "profile: field 'unfair_mean' must be in [0, 1] (got %g)", p->unfair_mean);
  XSI_ARG(xsi_finite(p->t_min_ns) && p->t_min_ns >= 0 && p->t_min_ns <= 1e12,
          "profile: field 't_min_ns' must be finite and in [0, 1e12] ns (got %g)", p->t_min_ns);
  XSI_ARG(p->has_q_burst == 0 || p->has_q_burst == 1,
          "profile: field 'has_q_burst' must be 0 or 1 (got %d)", p->has_q_burst);
  for (int i = 0; p->has_q_burst && i < p->nq; i++)
    XSI_ARG(xsi_finite(p->q_burst_bytes[i]) && p->q_burst_bytes[i] >= 0 &&
                p->q_burst_bytes[i] <= 1e15,
            "profile: field 'q_burst_bytes[%d]' must be in [0, 1e15] bytes (got %g)", i,
            p->q_burst_bytes[i]);
  XSI_ARG(p->has_r_k == 0 || p->has_r_k == 1, "profile: field 'has_r_k' must be 0 or 1 (got %d)",
          p->has_r_k);
  for (int i = 0; p->has_r_k && i < p->nq; i++)
    XSI_ARG(xsi_finite(p->r_k[i]) && p->r_k[i] > 0 && p->r_k[i] <= 1e9,
            "profile: field 'r_k[%d]' must be in (0, 1e9] bytes/ns (got %g)", i, p->r_k[i]);
  XSI_ARG(p->has_relax == 0 || p->has_relax == 1,
          "profile: field 'has_relax' must be 0 or 1 (got %d)", p->has_relax);
  for (int i = 0; p->has_relax && i < p->nq; i++) {
    XSI_ARG(xsi_finite(p->q_relax_bytes[i]) && p->q_relax_bytes[i] >= 0 &&
                p->q_relax_bytes[i] <= 1e15,
            "profile: field 'q_relax_bytes[%d]' must be in [0, 1e15] bytes (got %g)", i,
            p->q_relax_bytes[i]);
    XSI_ARG(xsi_finite(p->relax_bytes[i]) && p->relax_bytes[i] > 0 && p->relax_bytes[i] <= 1e15,
            "profile: field 'relax_bytes[%d]' must be in (0, 1e15] bytes (got %g)", i,
            p->relax_bytes[i]);
  }
  XSI_ARG(str_ok(p->device, sizeof p->device), "profile: field 'device' is not NUL-terminated");
  XSI_ARG(str_ok(p->transport, sizeof p->transport),
          "profile: field 'transport' is not NUL-terminated");
  XSI_ARG(str_ok(p->flavour, sizeof p->flavour), "profile: field 'flavour' is not NUL-terminated");
  XSI_ARG(str_ok(p->date, sizeof p->date), "profile: field 'date' is not NUL-terminated");
  XSI_ARG(str_ok(p->method, sizeof p->method), "profile: field 'method' is not NUL-terminated");
  XSI_ARG(p->calibrated == 0 || p->calibrated == 1, "profile: field 'calibrated' must be 0 or 1");
  return XS_OK;
}

double xsi_interp_k(const xs_link_profile* p, const double* y, double K) {
  if (K <= p->q_k[0]) return y[0];
  for (int i = 1; i < p->nq; i++)
    if (K <= p->q_k[i]) {
      double t = (K - p->q_k[i - 1]) / (p->q_k[i] - p->q_k[i - 1]);
      return y[i - 1] + t * (y[i] - y[i - 1]);
    }
  return y[p->nq - 1];
}

double xsi_capacity(const xs_link_profile* p, double K) { return xsi_interp_k(p, p->q_bytes, K); }

double xsi_burst_room(const xs_link_profile* p, double K) {
  return p->has_q_burst ? xsi_interp_k(p, p->q_burst_bytes, K) : INFINITY;
}

static const char* const g_names[] = {"h200-host", "h200-host-anchors", "h200-hbm", "h200-nvlink",
                                      NULL};

const char* const* xs_profile_default_names(void) { return g_names; }

static void set_str(char* dst, size_t cap, const char* s) { snprintf(dst, cap, "%s", s); }

xs_result xs_profile_scale_rooms(xs_link_profile* out, const xs_link_profile* p, double s) {
  XSI_ARG(out && p, "xs_profile_scale_rooms: NULL argument");
  XSI_ARG(isfinite(s) && s > 0 && s <= 10, "xs_profile_scale_rooms: s must be in (0, 10] (got %g)",
          s);
  XSI_CHECK(xs_profile_validate(p));
  xs_link_profile q = *p;
  for (int i = 0; i < q.nq; i++) {
    q.q_bytes[i] *= s;
    if (q.has_q_burst) q.q_burst_bytes[i] *= s;
    if (q.has_relax) q.q_relax_bytes[i] *= s;
  }
  *out = q;
  return XS_OK;
}

/* A calibrated fit's tables over K (the knee points q_k): the stage's room Q(K), the burst room
 * Qb(K), the drain rate R(K), the relaxing room Qr(K) and X0(K) (docs/model.md §12). */
static void set_k_tables(xs_link_profile* p, int n, const double* qk, const double* qb,
                         const double* qr, const double* rk, const double* qx, const double* x0) {
  p->nq = n;
  p->has_q_burst = p->has_r_k = p->has_relax = 1;
  for (int i = 0; i < n; i++) {
    p->q_k[i] = qk[i], p->q_bytes[i] = qb[i], p->q_burst_bytes[i] = qr[i];
    p->r_k[i] = rk[i], p->q_relax_bytes[i] = qx[i], p->relax_bytes[i] = x0[i];
  }
}

xs_result xs_profile_default(xs_link_profile* out, const char* name) {
  XSI_ARG(out != NULL, "out is NULL");
  XSI_ARG(name != NULL, "profile name is NULL");
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  set_str(p.device, sizeof p.device, "NVIDIA H200");
  set_str(p.flavour, sizeof p.flavour, "st.global.v4");
  p.calibrated = 0;
  if (strcmp(name, "h200-host") == 0) {
    /* NOTE: calibrated on the H200 (2026-11-29 10:45 UTC): `xstage calibrate --target host
     * --full`, clock-aligned producers, Q probes in 2^(1/3) steps, 2,430 sequences; this is
     * `xstage model fit` of the committed per-configuration medians data/h200-host-calibration.csv
     * (a unit test re-fits it). Results and held-out errors: docs/results/calibration-h200.md. */
    p.t_min_ns = 238.23985271281282;
    p.t_fixed_ns = 107.54672030584578;
    p.r_cta = 53.75586839853194;
    p.r_cap = 5991.683066997314;
    p.R = 54.75196867372435; /* R(8); the drain rate per K is r_k */
    static const double qk[5] = {8, 16, 32, 64, 132};
    static const double qb[5] = {911093.6939011073, 1185586.6807309594, 2227013.598230251,
                                 2994640.9796397453, 3712192.629466403};
    /* the burst room Qb(K) (docs/model.md §12) */
    static const double qr[5] = {909890.5936702039, 981404.9288180585, 1377094.798640508,
                                 2064340.2036533041, 3414046.0788833383};
    /* the drain rate R(K) and the relaxing room Qr(K), X0(K) (docs/model.md §12) */
    static const double rk[5] = {54.75196867372435, 52.89394015012204, 53.53302830887684,
                                 52.38668377171612, 49.40403042517651};
    static const double qx[5] = {49027.30683521914, 686885.2633427912, 238150.73805485698,
                                 497232.94762135524, 1638060.901795004};
    static const double x0[5] = {645117.7345516267, 869685.0260956715, 1383214.6413938722,
                                 2532494.295107074, 833023.0782259583};
    set_k_tables(&p, 5, qk, qb, qr, rk, qx, x0);
    p.unfair_mean = 0.8305335625803394;
    p.calibrated = 1;
    set_str(p.transport, sizeof p.transport, "host");
    set_str(p.date, sizeof p.date, "2026-11-29");
    set_str(p.method, sizeof p.method,
            "xstage calibrate --target host --full on the H200 (clock-aligned), fit of "
            "data/h200-host-calibration.csv");
  } else if (strcmp(name, "h200-host-anchors") == 0) {
    /* NOTE: derivation in docs/model.md: R from the sustained 52 GB/s; r_cta from the 63 GB/s
     * per-CTA store rate; t_fixed from "1 MiB from 16 CTAs in 1.2 us"; Q(32) and unfair_mean
     * from "32 CTAs x 4 MiB: mean 35 us, last 67 us"; Q(16) = 1 MiB, the smallest round value
     * that lets the 1 MiB burst of 16 CTAs go free from idle. */
    p.t_fixed_ns = 160.0;
    p.r_cta = 63.0;
    p.r_cap = 2000.0;
    p.R = 52.0;
    p.nq = 2;
    p.q_k[0] = 16;
    p.q_bytes[0] = 1048576.0;
    p.q_k[1] = 32;
    p.q_bytes[1] = 718624.0;
    p.unfair_mean = 0.506;
    set_str(p.transport, sizeof p.transport, "host");
    set_str(p.method, sizeof p.method, "estimate from anchors-h200.md (host-mapped stores over PCIe)");
  } else if (strcmp(name, "h200-hbm") == 0) {
    /* Local HBM: the producers' own store rate bounds issue; the stage drains faster than the
     * SMs can fill it, so there is no backpressure (r_iss <= R for every K). */
    p.t_fixed_ns = 160.0;
    p.r_cta = 63.0;
    p.r_cap = 3000.0;
    p.R = 3000.0;
    p.nq = 1;
    p.q_k[0] = 1;
    p.q_bytes[0] = 64.0 * 1048576.0;
    p.unfair_mean = 0.5;
    set_str(p.transport, sizeof p.transport, "hbm");
    set_str(p.method, sizeof p.method, "estimate from anchors-h200.md (local HBM, no backpressure)");
  } else if (strcmp(name, "h200-nvlink") == 0) {
    /* NOTE: calibrated on two H200s joined by NVLink (nvidia-smi topo: NV18; device tool kind
     * nvidia-h200-x2, 2026-11-29 16:33 UTC): `xstage calibrate --target peer:all --full`,
     * clock-aligned producers storing from GPU 0 into GPU 1's memory, 2,430 sequences; this is
     * `xstage model fit` of the committed per-configuration medians
     * data/h200-nvlink-calibration.csv (a unit test re-fits it). R = 378 GB/s against
     * cudaMemcpyPeer's 394 GB/s in the same run. Results and held-out errors:
     * docs/results/calibration-h200.md, "NVLink". */
    p.t_min_ns = 238.404603781819;
    p.t_fixed_ns = 133.67643889680517;
    p.r_cta = 62.0802257897865;
    p.r_cap = 7782.250549298068;
    p.R = 378.1680577237011; /* R(8); the drain rate per K is r_k */
    static const double qk[5] = {8, 16, 32, 64, 132};
    static const double qb[5] = {43119.89992865975, 332129.76229308, 575398.1684153775,
                                 1168528.328146687, 1863381.3668213724};
    static const double qr[5] = {66517.73669594926, 282972.0344514944, 459728.2985321522,
                                 1042861.1465155816, 1872540.746957447};
    static const double rk[5] = {378.1680577237011, 373.5178847430586, 373.31662174779365,
                                 366.77981118840677, 364.81874629802616};
    static const double qx[5] = {13.086457985779948, 39629.14667858514, 129682.18344877243,
                                 182708.12362664475, 342580.63238474773};
    static const double x0[5] = {556898131.7571402, 859561.928133882, 411430.37131262134,
                                 876018.832659961, 1513322.9616352932};
    set_k_tables(&p, 5, qk, qb, qr, rk, qx, x0);
    p.unfair_mean = 0.7479168431999277;
    p.calibrated = 1;
    set_str(p.transport, sizeof p.transport, "peer:1");
    set_str(p.date, sizeof p.date, "2026-11-29");
    set_str(p.method, sizeof p.method,
            "xstage calibrate --target peer:all --full on two NVLink-joined H200s (clock-aligned), "
            "fit of data/h200-nvlink-calibration.csv");
  } else {
    return xsi_set_error(XS_ERR_INVALID_ARG,
                         "unknown profile '%s' (known: h200-host, h200-host-anchors, h200-hbm, "
                         "h200-nvlink)", name);
  }
  *out = p;
  return XS_OK;
}

xs_result xs_t0_iss(double* t_ns, const xs_link_profile* p, double K, double V) {
  XSI_ARG(t_ns != NULL, "t_ns is NULL");
  XSI_CHECK(xs_profile_validate(p));
  XSI_ARG(xsi_finite(K) && K >= 1, "K must be >= 1 (got %g)", K);
  XSI_ARG(xsi_finite(V) && V >= 0, "V must be finite and >= 0 (got %g)", V);
  *t_ns = p->t_fixed_ns + V / xsi_r_iss(p, K);
  if (*t_ns < p->t_min_ns) *t_ns = p->t_min_ns; /* the latency floor (0 by default) */
  return XS_OK;
}

xs_result xs_capacity(double* q_bytes, const xs_link_profile* p, double K) {
  XSI_ARG(q_bytes != NULL, "q_bytes is NULL");
  XSI_CHECK(xs_profile_validate(p));
  XSI_ARG(xsi_finite(K) && K >= 1, "K must be >= 1 (got %g)", K);
  *q_bytes = xsi_capacity(p, K);
  return XS_OK;
}

xs_result xs_burst_room(double* q_bytes, const xs_link_profile* p, double K) {
  XSI_ARG(q_bytes != NULL, "q_bytes is NULL");
  XSI_CHECK(xs_profile_validate(p));
  XSI_ARG(xsi_finite(K) && K >= 1, "K must be >= 1 (got %g)", K);
  *q_bytes = xsi_burst_room(p, K);
  return XS_OK;
}

xs_result xs_burst_room_for(double* q_bytes, const xs_link_profile* p, double K, double V) {
  XSI_ARG(q_bytes != NULL, "q_bytes is NULL");
  XSI_CHECK(xs_profile_validate(p));
  XSI_ARG(xsi_finite(K) && K >= 1, "K must be >= 1 (got %g)", K);
  XSI_ARG(xsi_finite(V) && V >= 0, "V must be finite and >= 0 (got %g)", V);
  xsi_link l = xsi_link_of(p, K);
  *q_bytes = xsi_room_of(&l, V);
  return XS_OK;
}

xs_result xs_drain_rate(double* R, const xs_link_profile* p, double K) {
  XSI_ARG(R != NULL, "R is NULL");
  XSI_CHECK(xs_profile_validate(p));
  XSI_ARG(xsi_finite(K) && K >= 1, "K must be >= 1 (got %g)", K);
  *R = xsi_drain_rate(p, K);
  return XS_OK;
}

const char* xs_regime_name(xs_regime r) {
  switch (r) {
  case XS_REGIME_FREE: return "backpressure-free";
  case XS_REGIME_CAPACITY: return "capacity-bound";
  case XS_REGIME_DRAIN: return "drain-dominated";
  }
  return "unknown";
}

xs_result xs_predict_closed(double* t_iss_ns, const xs_link_profile* p, double K, double V,
                            double G) {
  XSI_ARG(t_iss_ns != NULL, "t_iss_ns is NULL");
  XSI_CHECK(xs_profile_validate(p));
  XSI_ARG(xsi_finite(K) && K >= 1, "K must be >= 1 (got %g)", K);
  XSI_ARG(xsi_finite(V) && V >= 0, "V must be finite and >= 0 (got %g)", V);
  XSI_ARG(!isnan(G) && G >= 0, "G must be >= 0 (got %g)", G);
  double t0 = fmax(p->t_min_ns, p->t_fixed_ns + V / xsi_r_iss(p, K));
  double d = V / xsi_drain_rate(p, K) - G; /* R(K): R unless the profile has r_k */
  *t_iss_ns = d > t0 ? d : t0;
  return XS_OK;
}
