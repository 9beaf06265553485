/* xstage/model.h — the X-Stage model: link profiles, predictors, fitting, planning. Pure C.
 *
 * Units everywhere: bytes, nanoseconds, bytes/ns (= GB/s). K is a producer count (CTAs).
 *
 * The model (docs/model.md, shared/DESIGN.md §1):
 *   T0_iss(K, V) = max(t_min_ns, t_fixed_ns + V / r_iss(K)),   r_iss(K) = min(K * r_cta, r_cap)
 *   closed form (seed paper, the baseline):  T_iss = max(T0_iss(K, V), V/R - G)
 *   fluid queue: backlog b grows at r_iss - R while b < Q(K) during a burst, the issuer is
 *   throttled to R while b = Q(K), and b falls by min(b, R*t) during any interval t in which
 *   nothing is issued (the burst's fixed overhead and the gap G). With a burst room Qb(K)
 *   (has_q_burst) a burst is also throttled once it has added Qb(K) to the backlog it found.
 *   With the drain rate per K (has_r_k) R is R(K); with the relaxing room (has_relax) a burst
 *   that overflows from idle has a room that shrinks with its size (docs/model.md §12).
 */
#ifndef XSTAGE_MODEL_H
#define XSTAGE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef XSTAGE_XSTAGE_H
#include "xstage/xstage.h"
#endif

/* ---------------------------------------------------------------- the link profile ----- */

#define XS_PROFILE_MAX_QPTS 16

/* One transport = one path from a GPU to a destination, for one store flavour. */
typedef struct xs_link_profile {
  size_t size; /* sizeof(xs_link_profile): set by XS_LINK_PROFILE_INITIALIZER */

  /* issue time from idle: T0_iss(K, V) = t_fixed_ns + V / min(K * r_cta, r_cap) */
  double t_fixed_ns; /* ns, >= 0: fixed cost of a burst (sync, first-store latency) */
  double r_cta;      /* bytes/ns, > 0: issue rate of one producer with no backpressure */
  double r_cap;      /* bytes/ns, > 0: aggregate issue cap of all producers together */

  double R; /* bytes/ns, > 0: effective drain rate of the stage */

  /* capacity Q(K): piecewise linear through (q_k[i], q_bytes[i]), i < nq, q_k increasing,
   * constant beyond the ends; nq >= 1. Q(K) >= 0 bytes. */
  int nq;
  double q_k[XS_PROFILE_MAX_QPTS];
  double q_bytes[XS_PROFILE_MAX_QPTS];

  /* unfairness in [0,1]: the mean producer finishes issuing at
   * T0 + unfair_mean * (T_iss - T0); the slowest at T_iss (the aggregate). */
  double unfair_mean;

  /* metadata (NUL-terminated strings) */
  char device[64];    /* e.g. "NVIDIA H200" */
  char transport[32]; /* "host", "hbm", "peer:1", "peer:all" */
  char flavour[32];   /* store flavour: "st.global.v4", "st.release.sys", "tma.bulk", ... */
  char date[32];      /* ISO date of the measurement */
  char method[160];   /* how measured (command line / "figures from anchors-h200.md") */
  int calibrated;     /* 1: fitted from measurements on this machine; 0: estimate */

  /* Refinement (docs/model.md, "Refinements"); 0 reproduces the original model.
   * t_min_ns: floor of the issue time from idle, a latency that overlaps the issue:
   *   T0_iss(K, V) = max(t_min_ns, t_fixed_ns + V / r_iss(K)); in the fluid burst the fixed
   *   overhead becomes max(t_fixed_ns, t_min_ns - V / r_iss(K)) (nothing issued, the stage
   *   drains). */
  double t_min_ns;
  /* Refinement: the burst room (docs/model.md §12). has_q_burst = 0 (the default): absent, the
   * original model. 1: q_burst_bytes[i] at q_k[i] (piecewise linear like Q) is the most one
   * burst can run ahead of the drain, Qb(K): a burst that starts with backlog b is throttled
   * once it has added min(Qb(K), Q(K) - b) to the stage, so one burst from idle sees Qb while
   * bursts that accumulate over a sequence see Q. */
  int has_q_burst;
  double q_burst_bytes[XS_PROFILE_MAX_QPTS];
  /* Refinement: the drain rate per producer count (docs/model.md §12). has_r_k = 0 (the
   * default): R for every K, the original model. 1: R(K) piecewise linear through
   * (q_k[i], r_k[i]) (bytes/ns, > 0), constant beyond the ends; R is then only the value a
   * reader of an older format sees (the fit writes R(q_k[0])). */
  int has_r_k;
  double r_k[XS_PROFILE_MAX_QPTS];
  /* Refinement: the relaxing room (docs/model.md §12). has_relax = 0 (the default): absent.
   * 1: a burst of V bytes that overflows from an idle stage (a = V (1 - R/r) > Q1 = min(Qb, Q)),
   * X = V - Q1 r/(r - R) > 0 bytes of it issued at the drain rate, has the room
   *   Qb_eff(K, V) = Qr + (Q1 - Qr) exp(-X / X0),   Qr = min(q_relax_bytes, Q1), X0 = relax_bytes
   * (each piecewise linear in K through q_k) instead of Qb: the run-ahead one burst gets shrinks
   * while it is throttled. A function of V, not of the burst's history (docs/model.md §12). */
  int has_relax;
  double q_relax_bytes[XS_PROFILE_MAX_QPTS]; /* Qr(K) bytes, >= 0 */
  double relax_bytes[XS_PROFILE_MAX_QPTS];   /* X0(K) bytes, > 0 */
} xs_link_profile;

#define XS_LINK_PROFILE_INITIALIZER                                                                \
  {sizeof(xs_link_profile), 0.0, 1.0, 1.0, 1.0, 1, {1.0}, {0.0}, 0.5, "", "", "", "", "", 0, 0.0, \
   0, {0.0}, 0, {0.0}, 0, {0.0}, {0.0}}

/* Check every field (positive finite rates, nq in range, q_k increasing, ...). The detail
 * names the first bad field. */
xs_result xs_profile_validate(const xs_link_profile* p);

/* The embedded profiles. `name`: "h200-host" (host-mapped memory over PCIe), "h200-hbm"
 * (local HBM), "h200-nvlink" (a peer over NVLink; calibrated on two H200s, session 8).
 * Unknown name: XS_ERR_INVALID_ARG listing the known names. */
xs_result xs_profile_default(xs_link_profile* out, const char* name);
/* Names of embedded profiles, NULL-terminated array (static storage). */
const char* const* xs_profile_default_names(void);

/* `p` with its stage's room scaled by s (0 < s <= 10): Q(K), the burst room Qb(K) and the
 * relaxing room Qr(K) times s; rates, latencies and X0(K) unchanged. For the sensitivity of a
 * prediction to the capacity: fitted Q(132) of the H200 host path spread about +-10 % between
 * calibrations (docs/model.md §10). out may be p. */
xs_result xs_profile_scale_rooms(xs_link_profile* out, const xs_link_profile* p, double s);

/* JSON I/O (format in docs/model.md). Reading validates; errors name file, line and key.
 * Writing is atomic (no partial file on failure). */
xs_result xs_profile_read(xs_link_profile* out, const char* path);
xs_result xs_profile_write(const xs_link_profile* p, const char* path);
xs_result xs_profile_from_json(xs_link_profile* out, const char* text, size_t len,
                               const char* name);
/* *out_json is malloc'ed, caller frees. */
xs_result xs_profile_to_json(char** out_json, const xs_link_profile* p);

/* T0_iss(K, V) and Q(K). K >= 1, V >= 0. */
xs_result xs_t0_iss(double* t_ns, const xs_link_profile* p, double K, double V);
xs_result xs_capacity(double* q_bytes, const xs_link_profile* p, double K);
/* Qb(K), the burst room (has_q_burst); +inf when the profile has none. K >= 1. */
xs_result xs_burst_room(double* q_bytes, const xs_link_profile* p, double K);
/* The room a burst of V bytes has from an idle stage: Qb(K), or Qb_eff(K, V) with the relaxing
 * room (has_relax); +inf when the profile has no burst room. K >= 1, V >= 0. */
xs_result xs_burst_room_for(double* q_bytes, const xs_link_profile* p, double K, double V);
/* R(K), the drain rate for K producers: R, or the interpolation of r_k (has_r_k). K >= 1. */
xs_result xs_drain_rate(double* R, const xs_link_profile* p, double K);

/* ---------------------------------------------------------------------- predictors ----- */

typedef enum xs_regime {
  XS_REGIME_FREE = 0,     /* backpressure-free: T_iss = T0_iss */
  XS_REGIME_CAPACITY = 1, /* capacity-bound: one burst from idle overflows Q */
  XS_REGIME_DRAIN = 2,    /* drain-dominated: V > R*(T0+G); steady T_iss -> V/R - G */
} xs_regime;

const char* xs_regime_name(xs_regime r); /* "backpressure-free", ... ; never NULL */

/* The seed paper's closed form: max(T0_iss(K,V), V/R - G). */
xs_result xs_predict_closed(double* t_iss_ns, const xs_link_profile* p, double K, double V,
                            double G);

/* One burst in a sequence: the issuer computes for gap_ns, then issues V bytes. */
typedef struct xs_burst {
  double V;      /* bytes, >= 0 */
  double gap_ns; /* ns, >= 0: work before this burst (after the previous burst's issue ends) */
} xs_burst;

typedef struct xs_burst_result {
  double t_start_ns;    /* when the burst starts issuing (after its gap), from time 0 */
  double t_iss_ns;      /* sender-visible issue time of the burst (aggregate, slowest producer) */
  double t_iss_mean_ns; /* the mean producer's issue time (profile's unfair_mean) */
  double stall_ns;      /* t_iss_ns - T0_iss: time the issuer was held by backpressure */
  double backlog_start; /* bytes in the stage when the burst starts issuing */
  double backlog_end;   /* bytes in the stage when the burst finishes issuing */
  double drained;       /* bytes drained from time 0 up to the end of this burst */
  double issued;        /* bytes issued from time 0 up to the end of this burst */
} xs_burst_result;

typedef struct xs_fluid_summary {
  long first_stall;      /* index of the first burst with stall_ns > 0, or -1 */
  double total_ns;       /* end of the last burst's issue */
  double total_stall_ns; /* sum of stall_ns */
  double max_backlog;    /* bytes */
  double drain_end_ns;   /* when the stage is empty after the last burst */
} xs_fluid_summary;

/* Fluid-queue event simulation of any sequence of bursts and gaps from an empty stage.
 * out: n results (may be NULL); summary may be NULL. Exact (piecewise linear), O(n). */
xs_result xs_fluid_simulate(xs_burst_result* out, xs_fluid_summary* summary,
                            const xs_link_profile* p, double K, const xs_burst* bursts, size_t n);

/* Periodic steady state of equal bursts V separated by gap G. */
typedef struct xs_steady {
  double t_iss_ns;       /* steady-state issue time per burst */
  double t_iss_mean_ns;  /* mean producer, steady state */
  double stall_ns;       /* t_iss_ns - T0_iss */
  double t_iss_first_ns; /* the first burst, from idle */
  double backlog_start;  /* bytes at the start of each steady-state burst */
  double backlog_peak;   /* bytes, the largest backlog in the period */
  long bursts_to_steady; /* bursts until within 0.1% of steady state (0 = from the first) */
  xs_regime regime;
  int closed_form; /* 1 if computed in closed form, 0 if by event simulation */
} xs_steady;

xs_result xs_fluid_periodic(xs_steady* out, const xs_link_profile* p, double K, double V,
                            double G);

/* Several destinations (stages) fed by one issuer with a shared issue limit: every burst
 * writes V[b*nstages + s] bytes to stage s, after gap_ns[b]. The issuer's total rate is
 * min(K*r_cta, r_cap) of stages[0]; it is shared equally among the stages still receiving,
 * a full stage takes only its drain rate and the rest goes to the others.
 * t_iss_ns: nbursts outputs (sender-visible issue time per burst). */
xs_result xs_fluid_simulate_multi(double* t_iss_ns, const xs_link_profile* const* stages,
                                  size_t nstages, double K, const double* V,
                                  const double* gap_ns, size_t nbursts);

/* --------------------------------------------------------------------- measurements ----- */

/* The measurement CSV (docs/measurements.md): header row, one row per burst, columns
 * transport,K,V_bytes,gap_ns,burst_index,t_iss_ns at least; other columns are ignored.
 * Row r is the issue time of burst `burst_index` (0-based) of a sequence of equal bursts
 * (K, V, G) started from an idle stage, or (optional column seq) of one measured sequence. */
typedef struct xs_sample {
  char transport[32];
  double K, V, G; /* count, bytes, ns */
  long burst_index;
  double t_iss_ns;
  double t_iss_mean_ns; /* ns: the mean producer's issue time (optional column); 0 = absent */
  /* Optional columns seq and gap_before_ns: rows with the same transport, K, V and seq >= 1
   * are ONE measured sequence whose burst burst_index followed a measured gap gap_before_ns
   * (e.g. clock-scheduled calibration, where late bursts start at once and their gaps shrink
   * to 0). The fluid model simulates each such sequence once with its own gaps; the closed
   * form takes the row's gap_before_ns. seq 0 (absent): the row is burst burst_index of equal
   * bursts with the constant gap G, as above. G stays the configuration's gap (held-out split,
   * transition window). */
  long seq;
  double gap_before_ns;
} xs_sample;

typedef struct xs_dataset xs_dataset; /* opaque */

/* Load a measurement CSV. Errors name file, line and field; at most 10 million rows. */
xs_result xs_dataset_load(xs_dataset** out, const char* path);
xs_result xs_dataset_from_samples(xs_dataset** out, const xs_sample* s, size_t n);
xs_result xs_dataset_destroy(xs_dataset* d); /* NULL: no-op */
size_t xs_dataset_size(const xs_dataset* d);
const xs_sample* xs_dataset_samples(const xs_dataset* d);

/* Predictions of both predictors for every sample (arrays of xs_dataset_size). Either output
 * may be NULL. */
xs_result xs_dataset_predict(double* fluid_ns, double* closed_ns, const xs_dataset* d,
                             const xs_link_profile* p);

/* ----------------------------------------------------------------------------- fitting ----- */

typedef struct xs_fit_options {
  size_t size;
  double holdout_fraction; /* in [0, 0.9]: share of (K,V,G) configurations held out (0.2) */
  uint64_t seed;           /* for the held-out draw */
  const char* transport;   /* fit only rows of this transport; NULL = all rows */
  double huber_delta;      /* robust loss scale, relative error (0.05) */
  int max_iter;            /* (200) */
  /* 3 (default): also fit the refinements t_min_ns, the burst room q_burst_bytes, the drain
   * rate per K r_k and the relaxing room q_relax_bytes / relax_bytes (one point per K, like Q);
   * 2: t_min_ns and the burst room only (has_r_k = has_relax = 0); 1: t_min_ns only
   * (has_q_burst = 0 too); 0: only the original parameters (the original model). */
  int refine;
} xs_fit_options;

#define XS_FIT_OPTIONS_INITIALIZER {sizeof(xs_fit_options), 0.2, 12345u, NULL, 0.05, 200, 3}

typedef struct xs_error_stats {
  size_t n;
  double median, p90, max, mean; /* of |predicted - measured| / measured */
} xs_error_stats;

typedef struct xs_fit_report {
  size_t n_fit, n_holdout; /* rows */
  xs_error_stats fluid_fit, closed_fit;         /* on the fitted rows */
  xs_error_stats fluid_holdout, closed_holdout; /* on the held-out rows */
  /* held-out rows within +-50% of the gap where backpressure disappears for their (K,V) */
  xs_error_stats fluid_transition, closed_transition;
  double rms_rel_residual; /* on the fitted rows */
  int iterations;
  /* per held-out POINT (configuration: transport, K, V, G, seq): the relative error of the
   * total issue time of its bursts, sum(predicted) / sum(measured) - 1 (xs_model_evaluate_points) */
  xs_error_stats fluid_point_holdout, closed_point_holdout;
  xs_error_stats fluid_point_transition, closed_point_transition; /* held-out points near it */
} xs_fit_report;

/* Fit t_fixed, r_cta, r_cap, R, Q(K) (one point per distinct K in the data) and unfair_mean
 * by robust (Huber) least squares on relative error. `out` keeps the metadata it had
 * (device, transport, ...) and gets calibrated = 1. holdout[i] (may be NULL; xs_dataset_size
 * entries) is set to 1 for held-out rows. */
xs_result xs_model_fit(xs_link_profile* out, xs_fit_report* report, uint8_t* holdout,
                       const xs_dataset* d, const xs_fit_options* opt);

/* Error statistics of both predictors of `p` on the rows with mask[i] == want (mask NULL:
 * all rows). */
xs_result xs_model_evaluate(xs_error_stats* fluid, xs_error_stats* closed, const xs_dataset* d,
                            const xs_link_profile* p, const uint8_t* mask, uint8_t want);

/* The same per point of a sweep: rows with the same transport, K, V, G and seq form one
 * configuration (one measured sequence); its error is sum(predicted T_iss) / sum(measured) - 1
 * over its rows, i.e. of the time the sequence's bursts held the producers. A point counts when
 * all its rows have mask[i] == want (mask NULL: every point). */
xs_result xs_model_evaluate_points(xs_error_stats* fluid, xs_error_stats* closed,
                                   const xs_dataset* d, const xs_link_profile* p,
                                   const uint8_t* mask, uint8_t want);

/* A fit report's held-out figures for any profile, from one prediction of every row: on the
 * rows with mask[i] == want (mask NULL: every row) both predictors' errors per row
 * (fluid_holdout, closed_holdout) and per point (fluid_point_holdout, ...), and the same for
 * those rows near the transition (G within +-50% of p's smallest free gap for the row's K and V:
 * fluid_transition, fluid_point_transition, ...); n_holdout = the rows scored; the fitted-row
 * fields are zero. What xs_model_fit reports for its held-out rows, `xstage model check` for a
 * CSV, and the calibration for a reference profile. */
xs_result xs_model_score(xs_fit_report* out, const xs_dataset* d, const xs_link_profile* p,
                         const uint8_t* mask, uint8_t want);

/* ---------------------------------------------------------------------------- planning ----- */

/* Smallest gap G such that periodic bursts of V never stall in steady state (and so not from
 * idle either). +inf (and XS_OK) if no gap does (V alone overflows Q from idle). */
xs_result xs_plan_min_free_gap(double* G_ns, const xs_link_profile* p, double K, double V);

/* Largest V whose periodic bursts with gap G never stall. +inf (and XS_OK) if every burst is
 * free (r_iss(K) <= R: the stage drains faster than the producers fill it). */
xs_result xs_plan_max_burst(double* V_bytes, const xs_link_profile* p, double K, double G);

/* Split V bytes into n equal bursts spread over a compute window of window_ns (compute
 * between bursts) so that nothing stalls, with the fewest bursts (fewest flag signals). */
typedef struct xs_split_plan {
  long nbursts;
  double burst_bytes;
  double gap_ns;       /* compute between bursts */
  double stall_ns;     /* predicted total stall (0 when feasible) */
  double issue_ns;     /* predicted total issue time of all bursts */
  int feasible;        /* 1: no stall; 0: best effort (least stall found) */
} xs_split_plan;

xs_result xs_plan_split(xs_split_plan* out, const xs_link_profile* p, double K, double V,
                        double window_ns);

/* A fused workload: each of K producers runs tiles_per_producer tiles; each tile computes for
 * compute_ns_per_tile and then remote-stores bytes_per_tile (its share of the output). */
typedef struct xs_workload {
  size_t size;
  char name[64];
  char kind[16];              /* "moe", "ulysses", "tp", "decode" */
  double K;                   /* producers (CTAs) issuing at once */
  double bytes_per_tile;      /* bytes one producer stores after one tile (all producers: K x) */
  double compute_ns_per_tile; /* ns of compute per tile (the gap) */
  long tiles_per_producer;
  char note[160];             /* where the numbers come from */
} xs_workload;

#define XS_WORKLOAD_INITIALIZER {sizeof(xs_workload), "", "", 0, 0, 0, 0, ""}

typedef struct xs_fusion_prediction {
  double compute_ns;      /* compute alone: tiles * compute_ns_per_tile */
  double fused_ns;        /* compute with the stores fused (sender-visible) */
  double fused_mean_ns;   /* the mean producer */
  double overhead_ns;     /* fused - compute */
  double overhead_frac;   /* overhead / compute */
  double serial_ns;       /* compute, then the same bytes as a separate transfer at R */
  double speedup_vs_serial;
  double total_bytes;
  xs_regime regime;
  long first_stall_tile;  /* -1 if none */
  double max_backlog;     /* bytes */
  double min_free_gap_ns; /* the gap a tile would need for no stall */
  /* The same with the producers spread out (free-running CTAs: after the first tile, which all
   * store at once, their tile ends drift apart and the stage sees a stream, not bursts; measured
   * with xbench's free-running producers, docs/model.md §10): the first tile as above, then each
   * later tile costs a producer its compute plus the issue of its own share from idle (T0 of one
   * producer), unless the link is the bottleneck (the later tiles' bytes at R(K)). The lockstep
   * fused_ns above is the upper bound of a fused kernel, this one about its lower. */
  double fused_spread_ns;
  double overhead_spread_frac;
  /* What is still in the stage when the last producer's issue ends (lockstep), at R(K). The
   * fused times above end when the last store is issued (what the producers see); a kernel's
   * completion (an event after it) also waits for its stores to land: compare event-timed
   * kernels with fused_ns + drain_ns (fused_spread_ns + drain_ns: at most, since spread
   * producers end their last tiles apart). docs/model.md §10. */
  double drain_ns;
  /* Compute that reads memory (docs/model.md §10, "coupled"): an SM whose remote stores are
   * queued hardly loads, so a producer whose compute streams memory (attention; measured with
   * xbench's load gaps) computes its next tile only once its own last bytes have drained. The
   * producers are served by weighted sharing of R(K) with the spread coupled_spread, derived
   * from the profile's unfair_mean (not fitted to coupled runs): in lockstep each tile would
   * cost compute + V/R(K); their tile ends drift apart as the link serves them unevenly.
   * fused_coupled_ns: the slowest producer's last issue end; drain_coupled_ns: from then until
   * the last byte is out (event-timed kernels: the sum). Measured so on the host path (PCIe);
   * over NVLink loading compute ran on while its stores drained (session 20), as FMA work does:
   * use the lockstep and spread figures there and for compute that does not read memory. */
  double fused_coupled_ns;
  double overhead_coupled_frac;
  double drain_coupled_ns;
  double coupled_spread;
  /* ... and no CTA computes while the stage holds more than this: its shared room, Q(K)
   * extrapolated to K = 0 (stores backed up to host memory hold up every SM's loads, measured:
   * docs/model.md §10) */
  double coupled_room_bytes;
} xs_fusion_prediction;

xs_result xs_predict_fusion(xs_fusion_prediction* out, const xs_link_profile* p,
                            const xs_workload* w);

/* The split of each tile's stores for a fused workload: w with every tile's bytes cut into n
 * pieces, each stored after 1/n of its compute (n x tiles bursts of bytes/n after compute/n: the
 * planner's split, an epilogue that trickles each tile out over the next tile's work), for n =
 * 1, 2, 4, ... max_n (a power of two, 1..128), predicted by xs_predict_fusion with the stage's
 * final drain added (a kernel ends when its stores have landed). For compute that reads memory
 * the coupled prediction decides (docs/model.md §10: it followed xbench's measured split within
 * 0.97-1.02); lockstep is given beside it. best_n: the smallest n within 1 % of the least coupled
 * time (each piece costs the kernel something the model does not see). */
#define XS_SPLIT_SCAN_MAX 8
typedef struct xs_split_scan {
  int count; /* entries: n = 1, 2, 4, ..., max_n */
  int n[XS_SPLIT_SCAN_MAX];
  double coupled_ns[XS_SPLIT_SCAN_MAX];  /* fused_coupled_ns + drain_coupled_ns */
  double lockstep_ns[XS_SPLIT_SCAN_MAX]; /* fused_ns + drain_ns */
  double compute_ns;                     /* the compute alone (the same for every n) */
  int best_n;
} xs_split_scan;

xs_result xs_plan_split_fusion(xs_split_scan* out, const xs_link_profile* p, const xs_workload* w,
                               int max_n);

/* The built-in catalogue of realistic workloads (MoE combine and Ulysses all-to-all shapes of
 * shared/anchors-h200.md) for `xstage run`. Static storage. */
xs_result xs_catalogue(const xs_workload** out, size_t* n);

#ifdef __cplusplus
}
#endif

#endif /* XSTAGE_MODEL_H */
