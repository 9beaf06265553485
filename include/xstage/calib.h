/* xstage/calib.h — X-Stage microbenchmarks (xbench) and calibration (host side, plain C11).
 *
 * Three layers (docs/calibration.md):
 *   1. xbench: K producer CTAs issue `bursts` equal bursts of V bytes to a target buffer with a
 *      gap G of real work (FMA loop) or a %globaltimer spin between bursts, and time every burst
 *      of every producer. xs_xbench_run() measures one configuration; a session (xs_xbench_create)
 *      keeps the buffers for many configurations.
 *   2. the sweep planner and the measurement CSV writer (pure C; no GPU needed).
 *   3. xs_calibrate(): probes T0, R, Q, runs the planned K x V x G sweep, fits the model
 *      (xs_model_fit, held-out split), writes CSV + profile JSON + SVG and fills a report.
 *
 * GPU entry points return XS_ERR_UNSUPPORTED in a build without CUDA and XS_ERR_NO_DEVICE when
 * no GPU is usable. Nothing here prints; progress goes through an optional callback.
 */
#ifndef XSTAGE_CALIB_H
#define XSTAGE_CALIB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef XSTAGE_XSTAGE_H
#include "xstage/xstage.h"
#endif

/* ------------------------------------------------------------------------- enums ----- */

typedef enum xs_flavour {
  XS_FLAVOUR_ST = 0,         /* st.global.v4.b32 (weak), 16 B per thread per store */
  XS_FLAVOUR_ST_RELAXED = 1, /* st.relaxed.sys.global.v4.b32 */
  XS_FLAVOUR_ST_RELEASE = 2, /* st.release.sys.global.v4.b32 */
  XS_FLAVOUR_TMA = 3,        /* cp.async.bulk.global.shared::cta, 32 KB copies, one thread */
} xs_flavour;
#define XS_FLAVOUR_COUNT 4

typedef enum xs_gap_mode {
  XS_GAP_FMA = 0,  /* the gap is real work: an FMA loop calibrated to G ns at session start */
  XS_GAP_SPIN = 1, /* the gap is a %globaltimer spin of G ns */
  XS_GAP_LOAD = 2, /* the gap reads memory: 16-byte loads from a 16 MiB device buffer (L2), a
                    * loop calibrated to G ns with K CTAs loading, before the first run at K. A
                    * fused kernel's compute reads memory, and an SM whose remote stores are
                    * queued hardly loads: with this gap the compute stretches while the stage
                    * drains, as it does in a real kernel (docs/model.md §10) */
} xs_gap_mode;

typedef enum xs_sync_mode {
  XS_SYNC_GRID = 0, /* every burst starts after a grid barrier across the K producers */
  XS_SYNC_FREE = 1, /* no barrier: each producer runs its own burst/gap sequence */
  XS_SYNC_CLOCK = 2, /* no barrier: burst b of every producer is scheduled at S_b = t0 + b*P on
                      * %globaltimer (one clock for all SMs; waiting on it is no memory
                      * operation); a producer still late from burst b-1 starts at once */
} xs_sync_mode;

typedef enum xs_target_kind {
  XS_TARGET_HOST = 0, /* cudaHostAlloc(mapped) pinned host memory: the PCIe path */
  XS_TARGET_HBM = 1,  /* cudaMalloc on the producing device */
  XS_TARGET_PEER = 2, /* cudaMalloc on a peer device, reached through P2P (>= 2 GPUs) */
} xs_target_kind;

typedef struct xs_target {
  xs_target_kind kind;
  int peer; /* peer device ordinal (XS_TARGET_PEER only; XS_PEER_ALL: every peer at once), else -1 */
} xs_target;
/* XS_TARGET_PEER with peer = XS_PEER_ALL ("peer:all"): one ring on every peer GPU the device
 * reaches (at most 8); producer k writes peer k mod n, so all peers are written at once. */
#define XS_PEER_ALL (-2)

/* Names: "st.global.v4", "st.relaxed.sys.v4", "st.release.sys.v4", "tma.bulk"; "fma", "spin";
 * "sync", "free", "clock"; "host", "hbm", "peer:N", "peer:all". Parsers accept the short forms "st", "relaxed",
 * "release", "tma" too. Unknown names: XS_ERR_INVALID_ARG listing the known ones. */
const char* xs_flavour_name(xs_flavour f); /* never NULL */
const char* xs_gap_mode_name(xs_gap_mode m);
const char* xs_sync_mode_name(xs_sync_mode m);
xs_result xs_flavour_parse(xs_flavour* out, const char* s);
xs_result xs_gap_mode_parse(xs_gap_mode* out, const char* s);
xs_result xs_sync_mode_parse(xs_sync_mode* out, const char* s);
xs_result xs_target_parse(xs_target* out, const char* s);
/* "host", "hbm", "peer:N" or "peer:all" into buf (n >= 16). */
xs_result xs_target_name(char* buf, size_t n, xs_target t);

/* ------------------------------------------------------------------------ xbench ----- */

#define XS_XBENCH_THREADS 256     /* threads per producer CTA */
#define XS_XBENCH_TMA_CHUNK 32768 /* bytes per bulk copy (the shared-memory source) */
#define XS_XBENCH_MAX_BURSTS 4096

typedef struct xs_xbench_config {
  size_t size;      /* sizeof(xs_xbench_config): set by the initializer */
  int device;       /* CUDA device that runs the producers */
  xs_target target; /* where the bursts go */
  int K;            /* producer CTAs, 1..SM count (all co-resident) */
  double V;         /* bytes per burst, all producers together, > 0. Each producer stores
                     * ceil(V/K) rounded up to 16 B; the effective V is reported. */
  double gap_ns;    /* nominal gap between bursts, ns, >= 0 */
  int bursts;       /* bursts in the sequence, 1..XS_XBENCH_MAX_BURSTS */
  xs_flavour flavour;
  int flag; /* 1: each producer ends its burst with red.release.sys.add on a flag
             * in the target memory (counted in its issue time) */
  xs_gap_mode gap_mode;
  xs_sync_mode sync_mode;
  int warmup;        /* 1: touch every target page used before timing (default 1) */
  int check;         /* 1: poison the target before, verify every byte after (slow) */
  double timeout_ms; /* bound on every barrier wait (plus 2 x gap_ns); > 0 (default 2000) */
  double period_ns;  /* XS_SYNC_CLOCK: the schedule's period P (ns, > 0); 0 = gap_ns + the T0
                      * of the embedded profile of the target (xs_xbench_default_period).
                      * gap_ns and gap_mode are not used in clock mode: the wait for S_b is the
                      * gap. Other modes ignore it. */
} xs_xbench_config;

#define XS_XBENCH_CONFIG_INITIALIZER                                                               \
  {                                                                                                \
    sizeof(xs_xbench_config), 0, {XS_TARGET_HOST, -1}, 16, 1048576.0, 0.0, 16, XS_FLAVOUR_ST, 0,   \
        XS_GAP_FMA, XS_SYNC_GRID, 1, 0, 2000.0, 0.0                                                \
  }

/* Raw timestamps of one producer in one burst. Globaltimer values are ns on a clock shared by
 * all SMs; clock64 values are cycles of the producer's own SM (not comparable across SMs). */
typedef struct xs_xbench_stamp {
  uint64_t start_ns;  /* burst start (after the grid barrier in sync mode) */
  uint64_t ret_ns;    /* issuing thread got control back (TMA: after issuing all copies;
                       * st flavours: all stores issued, before the flag if any) */
  uint64_t end_ns;    /* issue end: all the producer's stores issued (TMA: wait_group.read
                       * returned, i.e. the source may be reused), flag included */
  uint64_t start_cyc; /* clock64 at start_ns */
  uint64_t end_cyc;   /* clock64 at end_ns */
  uint64_t gap_end_ns; /* end of the compute gap that follows this burst (before the grid
                        * barrier in sync mode); 0 after the last burst. gap_end_ns - end_ns is
                        * the producer's own compute-gap time (FMA loop or spin); 0 in clock
                        * mode (the wait for the next S_b is the gap) */
  uint64_t sched_ns;   /* clock mode: S_b, the burst's scheduled start (the same for every
                        * producer); 0 in the other modes */
} xs_xbench_stamp;

/* One burst, reduced over the producers (xs_xbench_reduce). The K producers are one AGGREGATE
 * issuer whose progress is the slowest producer's (docs/calibration.md, "What T_iss means"):
 * S_0 = the earliest producer start of burst 0 (right after the start barrier), E_b = the
 * time by which (b+1)*K producer-bursts have ended (the ((b+1)K)-th earliest end over all
 * producers and bursts: (b+1)*V bytes issued, whichever producers issued them; while the
 * producers stay aligned this is the latest producer end of burst b), M_b = the mean producer
 * end of burst b, G_b = the producers'
 * mean own compute-gap time before burst b (gap_end_ns - end_ns of burst b-1; G_0 = 0):
 *   t_iss(0) = E_0 - S_0,  t_iss(b) = E_b - E_{b-1} - G_b;
 *   t_iss_mean(0) = M_0 - S_0,  t_iss_mean(b) = M_b - M_{b-1} - G_b, within [1 ns, t_iss(b)].
 * sync and free mode use these definitions; in sync mode the grid barrier is not compute, so
 * it is part of t_iss (what a grid-synchronised kernel pays per burst).
 * Clock mode (stamps carry S_b = t0 + b*P): the aggregate burst b starts at
 * A_b = max(S_b, E_{b-1}) (A_0 = S_0 = t0): t_iss(b) = E_b - A_b, and the gap before it is
 * g_b = max(0, S_b - E_{b-1}) (the time the aggregate issuer waited with the stage draining;
 * g_0 = 0). The mean producer: the same with M_b. */
typedef struct xs_xbench_burst {
  double t_start_ns;    /* earliest producer start of this burst relative to S_0 */
  double t_iss_ns;      /* aggregate issue time (above), from %globaltimer; >= 1 ns */
  double t_iss_mean_ns; /* the mean producer's analogue, in [1 ns, t_iss_ns] */
  double t_ret_ns;      /* slowest producer's own return of control, ret - own start (TMA:
                         * the hand-over; st flavours: own issue without the flag) */
  double t_iss_cyc_ns;  /* slowest producer's own duration from clock64 (= t_own_max_ns when
                         * the SM clock is known, else NaN) */
  double gap_ns;        /* measured compute gap before the NEXT burst (G_{b+1}: mean over the
                         * producers of their own gap); NaN for the last burst */
  double t_skew_ns;     /* latest minus earliest producer start of this burst (free mode: how
                         * far the producers have drifted apart) */
  double t_own_max_ns;  /* largest own duration (own end - own start) over the producers:
                         * clock64 converted with the SM clock, else %globaltimer */
  double t_own_mean_ns; /* mean own duration over the producers */
  double e_end_ns;      /* E_b - S_0 */
  double m_end_ns;      /* M_b - S_0 */
  double gap_before_ns; /* G_b (clock mode: g_b; 0 for burst 0) */
} xs_xbench_burst;

typedef struct xs_xbench_summary {
  size_t size;
  double V;            /* effective bytes per burst (K x per-producer bytes) */
  double per_producer; /* bytes per producer per burst (multiple of 16) */
  double gap_nominal_ns;
  double gap_measured_ns; /* mean of the measured gaps over the sequence (0 if one burst).
                           * Clock mode: the configuration's gap P - t_iss(0) (>= 0), what
                           * every gap would be if no burst took longer than the first; the
                           * per-burst gaps are in xs_xbench_burst.gap_before_ns */
  double sched_period_ns; /* clock mode: P = S_1 - S_0 (0: other modes or one burst) */
  double t_iss_first_ns;  /* burst 0 (from idle), slowest producer */
  double t_iss_steady_ns; /* median over the second half of the bursts */
  double t_iss_mean_steady_ns;
  double period_ns;        /* mean E_b - E_{b-1} over the second half (0 if < 3 bursts) */
  double rate_gbps;        /* sustained issue rate over the second half, gaps excluded:
                            * (bursts after E_h) x V / (E_last - E_h - their gaps), h = half.
                            * For G = 0 (drain-bound) sequences the backlog is Q at both ends,
                            * so this is the drain rate R; it cannot exceed it */
  double total_ns;         /* E_last - S_0 */
  double skew_max_ns;      /* largest start skew between producers over the bursts */
  double fma_iters_per_ns; /* the session's FMA calibration */
  double load_iters_per_ns; /* the load-gap calibration at this K (0: no load gaps) */
  double sm_clock_ghz;     /* clock64 cycles per globaltimer ns, measured in this run */
  double timer_res_ns;     /* smallest non-zero %globaltimer step seen by the session */
  double kernel_ms;        /* host-measured kernel time (cudaEvent) */
  long bytes_checked;      /* bytes verified (check = 1), else 0 */
  long bytes_wrong;        /* bytes with a wrong value after the run (check = 1) */
  long flag_wrong;         /* producers whose flag count is wrong (flag && check) */
  char device[64];
  char transport[32]; /* "host", "hbm", "peer:N" */
} xs_xbench_summary;

typedef struct xs_xbench xs_xbench; /* a session: device, target buffer, timers (opaque) */

/* Create a session on `device` for `target` with a target ring of at least ring_bytes (0 =
 * 256 MiB; bursts go to consecutive 4 KiB-aligned slots of the ring so that consecutive bursts
 * write different memory). Enables peer access for XS_TARGET_PEER. Calibrates the FMA loop
 * (iterations per ns) and the timer resolution. Destroy with xs_xbench_destroy. */
xs_result xs_xbench_create(xs_xbench** out, int device, xs_target target, size_t ring_bytes);
xs_result xs_xbench_destroy(xs_xbench* b); /* NULL: no-op */
/* The session's SM count and FMA calibration (either out may be NULL). */
xs_result xs_xbench_info(int* sm_count, double* fma_iters_per_ns, const xs_xbench* b);

/* Measure one configuration in session b (cfg->device and cfg->target must match it).
 * bursts: cfg->bursts entries (may be NULL); stamps: cfg->bursts * cfg->K entries, burst-major
 * (may be NULL); summary may be NULL. Blocks until the kernel ends. A device spin that exceeds
 * cfg->timeout_ms ends the kernel and returns XS_ERR_TIMEOUT. check = 1 with wrong bytes
 * returns XS_ERR_INTERNAL (the summary still says how many). */
xs_result xs_xbench_measure(xs_xbench_burst* bursts, xs_xbench_stamp* stamps,
                            xs_xbench_summary* summary, xs_xbench* b, const xs_xbench_config* cfg);

/* One-shot: create a session sized for cfg, measure, destroy. */
xs_result xs_xbench_run(xs_xbench_burst* bursts, xs_xbench_stamp* stamps,
                        xs_xbench_summary* summary, const xs_xbench_config* cfg);

/* The reduction of raw stamps (st: bursts * K entries, burst-major, as xs_xbench_measure
 * returns them) to per-burst results (out: bursts entries) and the timing fields of *s
 * (gap_measured_ns, t_iss_first/steady/mean_steady, period, rate, total, skew_max,
 * sm_clock_ghz; s->V must be set). *session_clk_ghz (may be NULL): the SM clock of an earlier
 * run, used when this run is shorter than 50 us per producer, updated otherwise. Pure C: the
 * same function serves xs_xbench_measure and the offline analysis of a stamps CSV. */
xs_result xs_xbench_reduce(xs_xbench_burst* out, xs_xbench_summary* s, const xs_xbench_stamp* st,
                           int K, int bursts, double* session_clk_ghz);

/* Raw stamps as CSV, one row per producer and burst: K,V_bytes,gap_nominal_ns,mode,producer,
 * burst,start_ns,ret_ns,end_ns,gap_end_ns,gap_ns,start_cyc,end_cyc,sched_ns (integers exact;
 * gap_ns = gap_end_ns - end_ns, "nan" after the last burst and in clock mode; sched_ns is
 * optional when reading, 0 when absent). Rows of several runs may be concatenated
 * (each row names its configuration). xs_xbench_stamps_csv_read reads run `run` (0-based; a
 * run = consecutive rows of one configuration, burst 0 again starts the next) back: *st
 * malloc'ed (caller frees), burst-major; cfg->K, bursts, gap_ns and sync_mode set (the rest
 * untouched), *V (may be NULL) the effective burst bytes, *nruns (may be NULL) the runs in the
 * file. A run past the last: XS_ERR_INVALID_ARG naming the count. */
xs_result xs_xbench_stamps_csv_write(const char* path, const xs_xbench_stamp* st,
                                     const xs_xbench_config* cfg, const xs_xbench_summary* s);
xs_result xs_xbench_stamps_csv_read(xs_xbench_stamp** st, xs_xbench_config* cfg, double* V,
                                    int* nruns, const char* path, int run);

/* The clock-mode period for gap G on target t when the caller gives none: G + T0(K, V) of the
 * embedded H200 profile of the target (h200-host, h200-hbm, h200-nvlink). */
double xs_xbench_default_period(xs_target t, int K, double V, double G);

/* cudaMemcpy bandwidth between pinned host memory and `device`, bytes each way (0 = 256 MiB),
 * median of reps (0 = 5) timed copies after one warm-up: bytes/ns (= GB/s). */
xs_result xs_memcpy_bandwidth(double* d2h_gbps, double* h2d_gbps, int device, size_t bytes,
                              int reps);

/* cudaMemcpyPeerAsync bandwidth from `device` to the npeers devices in `peers` at once (one
 * stream and one 256 MiB buffer (bytes = 0) per peer, all started together) and back: the
 * aggregate bytes/ns of each direction, median of reps (0 = 5) after one warm-up. Needs peer
 * access between the devices (enabled here if it is not). */
xs_result xs_memcpy_peer_bandwidth(double* out_gbps, double* in_gbps, int device, const int* peers,
                                   int npeers, size_t bytes, int reps);

/* ------------------------------------------------------- the measurement CSV rows ----- */

/* One measured burst as written to the measurement CSV (columns in this order):
 * transport,K,V_bytes,gap_ns,burst_index,t_iss_ns,t_iss_mean_ns,gap_nominal_ns,t_ret_ns,
 * t_iss_cyc_ns,flavour,mode,gap_mode,phase,point,rep,t_own_max_ns,t_own_mean_ns,t_skew_ns,
 * e_end_ns,m_end_ns,gap_before_ns[,seq,period_ns]. seq and period_ns are written only when
 * some row is clock-scheduled (seq >= 1). The last eight are optional when reading (NaN when
 * absent, seq 0); e_end_ns, m_end_ns and gap_before_ns recompute t_iss and t_iss_mean
 * offline. seq (clock mode: the sequence's point + 1, else 0) is the sequence id of the
 * measurement CSV (docs/measurements.md): rows with the same seq are one sequence whose bursts
 * had the measured gaps gap_before_ns. */
typedef struct xs_calib_row {
  char transport[32];
  int K;
  double V;              /* bytes (effective) */
  double gap_ns;         /* measured gap (mean over the sequence) */
  long burst_index;      /* 0-based within its sequence started from idle */
  double t_iss_ns;       /* slowest producer */
  double t_iss_mean_ns;  /* mean producer */
  double gap_nominal_ns; /* requested gap */
  double t_ret_ns;
  double t_iss_cyc_ns;
  char flavour[24];
  char mode[8]; /* sync mode */
  char gap_mode[8];
  char phase[8]; /* "t0", "R", "Q", "grid", "repeat", "xbench" */
  long point;    /* index of the sequence in the run */
  int rep;       /* repetition of the same configuration */
  double t_own_max_ns, t_own_mean_ns, t_skew_ns; /* xs_xbench_burst's fields */
  double e_end_ns, m_end_ns, gap_before_ns;      /* E_b - S_0, M_b - S_0, G_b */
  long seq;         /* clock mode: sequence id (point + 1); 0: none */
  double period_ns; /* clock mode: the schedule's period P; NaN otherwise */
} xs_calib_row;

/* Append the rows of one measured sequence to *rows (realloc'ed; *n and *cap updated).
 * phase is copied (at most 7 chars). */
xs_result xs_calib_rows_append(xs_calib_row** rows, size_t* n, size_t* cap,
                               const xs_xbench_config* cfg, const xs_xbench_summary* s,
                               const xs_xbench_burst* bursts, const char* phase, long point,
                               int rep);

/* Format rows as CSV (header + one line per row; numbers round-trip exactly). *out is
 * malloc'ed, caller frees. n may be 0 (header only). */
xs_result xs_calib_csv_format(char** out, size_t* len, const xs_calib_row* rows, size_t n);
/* The same, written atomically to path. */
xs_result xs_calib_csv_write(const char* path, const xs_calib_row* rows, size_t n);

/* ------------------------------------------------------------------- the planner ----- */

typedef enum xs_calib_level {
  XS_CALIB_QUICK = 0, /* <= 60 s of GPU time: probes + a small grid */
  XS_CALIB_FULL = 1,  /* <= 5 min of GPU time: probes + >= 300 grid points */
} xs_calib_level;

typedef enum xs_sweep_phase {
  XS_PHASE_T0 = 0,     /* issue time from idle: short sequences with a long gap */
  XS_PHASE_R = 1,      /* sustained injection: long G = 0 sequences of big bursts */
  XS_PHASE_Q = 2,      /* single bursts of growing V (the knee gives Q) */
  XS_PHASE_GRID = 3,   /* the K x V x G burst-gap grid */
  XS_PHASE_REPEAT = 4, /* one configuration measured 5 times (repeatability) */
} xs_sweep_phase;

const char* xs_sweep_phase_name(xs_sweep_phase p); /* "t0", "R", "Q", "grid", "repeat" */

typedef struct xs_sweep_point {
  xs_sweep_phase phase;
  int K;
  double V; /* bytes */
  double G; /* nominal gap, ns */
  int bursts;
  int rep;         /* repetition index (REPEAT), else 0 */
  double G_centre; /* GRID: the predicted transition gap the G values surround, else 0 */
  double est_ns;   /* estimated GPU time of the sequence, launch overhead included */
} xs_sweep_point;

typedef struct xs_sweep_options {
  size_t size;
  xs_calib_level level;
  int sm_count;       /* K values are capped to it (> 0) */
  double max_V;       /* bytes: largest burst the target ring can take (> 0) */
  double budget_ns;   /* cap on the summed estimate (0 = 60 s quick, 300 s full, with 20%
                       * kept in reserve for launches and copies) */
  double overhead_ns; /* estimated fixed cost of one measured sequence (0 = 400 us) */
} xs_sweep_options;

#define XS_SWEEP_OPTIONS_INITIALIZER                                                               \
  { sizeof(xs_sweep_options), XS_CALIB_QUICK, 132, 268435456.0, 0.0, 0.0 }

#define XS_SWEEP_MAX_POINTS 4096
#define XS_CALIB_REPS_QUICK 3 /* repetitions of every grid configuration (--quick) */
#define XS_CALIB_REPS_FULL 5  /* (--full) */

/* Plan the probe phases (T0, R, Q) or the grid (GRID and REPEAT) for the profile `centre`
 * (the embedded profile for the probes; a first fit for the grid): for each (K, V) the G
 * values surround the predicted settle gap G* (xs_calib_predicted_settle_gap, at least 1 us):
 * G = 0, a quarter of G*, G* +-50% in steps of 10%, 2 G*, each measured XS_CALIB_REPS_QUICK / _FULL
 * times. Deterministic. Writes at most cap points into out, sets *n; XS_ERR_EXHAUSTED if cap
 * is too small. The summed est_ns stays within the budget (bursts shortened, repetitions
 * dropped, then points farthest from G*, then whole (K, V)). */
xs_result xs_sweep_plan(xs_sweep_point* out, size_t cap, size_t* n, int grid,
                        const xs_sweep_options* opt, const xs_link_profile* centre);

/* Estimated GPU time of one sequence under profile p (fluid model + overhead_ns). */
xs_result xs_sweep_estimate(double* ns, const xs_sweep_point* pt, const xs_link_profile* p,
                            double overhead_ns);

/* ------------------------------------------------------------------ analysis (pure) ----- */

/* Knee of single-burst T_iss against V (n >= 4 points, V increasing): the breakpoint of the
 * best two-segment least-squares fit. *v_knee = V at the knee; *q_bytes = the backlog there,
 * v_knee - R * t(v_knee) (0 if negative). */
xs_result xs_calib_knee(double* v_knee, double* q_bytes, const double* V, const double* t_ns,
                        size_t n, double R);

/* Measured transition gap of one (K, V): the smallest gap g[i] (ascending) whose steady T_iss
 * ss[i] is within tol (0.05) of t0 (the first burst's, from idle); NaN (and XS_OK) when none
 * settles. Gaps beyond it must settle too (a single noisy point does not count). */
xs_result xs_calib_settle_gap(double* g_meas, const double* g, const double* ss, size_t n,
                              double t0, double tol);

/* The model's counterpart of xs_calib_settle_gap: the smallest G whose steady-state T_iss
 * (xs_fluid_periodic) is within tol (0.05) of the first burst's from idle. Equals the smallest
 * backpressure-free gap (xs_plan_min_free_gap) up to tol * T0 when a burst fits the stage;
 * finite also when one burst overflows it (the gap after which each burst starts from an empty
 * stage). 0 when even G = 0 settles; +inf if no gap does. */
xs_result xs_calib_predicted_settle_gap(double* G_ns, const xs_link_profile* p, double K, double V,
                                        double tol);

/* The model run under a clock schedule of period P (what `--sync clock` measures): burst b is
 * scheduled at b*P and starts at max(b*P, end of burst b-1), from an idle stage. *first_ns:
 * burst 0; *steady_ns: the median over the second half of `bursts` bursts (2..XS_XBENCH_MAX_BURSTS).
 * Either output may be NULL. */
xs_result xs_calib_predict_clock(double* first_ns, double* steady_ns, const xs_link_profile* p,
                                 double K, double V, double period_ns, int bursts);

/* ------------------------------------------------------------------- calibration ----- */

typedef void (*xs_calib_progress_fn)(void* arg, const char* what, double fraction);

typedef struct xs_calib_config {
  size_t size;
  int device;
  xs_target target;
  xs_calib_level level;
  const char* out_dir; /* writes xstage-<t>.csv, profile-<t>.json, calibration-<t>.svg
                        * (directory must exist); NULL: no files */
  xs_flavour flavour;
  xs_gap_mode gap_mode;
  xs_sync_mode sync_mode;
  double holdout_fraction;       /* (0.2) */
  uint64_t seed;                 /* held-out draw (12345) */
  double budget_s;               /* 0 = 60 (quick) / 300 (full) */
  int memcpy_bw;                 /* 1: also measure cudaMemcpy D2H / H2D, 256 MiB pinned (1) */
  const char* method;            /* the profile's `method` (command line); NULL: a default */
  xs_calib_progress_fn progress; /* may be NULL; called from the calling thread */
  void* progress_arg;
  /* may be NULL: a profile to score beside the fit on the same held-out rows (an embedded one,
   * or an earlier calibration's): xs_calib_report.ref_* say whether it predicts this machine's
   * held-out measurements as well as their own fit does */
  const xs_link_profile* reference;
} xs_calib_config;

#define XS_CALIB_CONFIG_INITIALIZER                                                                \
  {                                                                                                \
    sizeof(xs_calib_config), 0, {XS_TARGET_HOST, -1}, XS_CALIB_QUICK, NULL, XS_FLAVOUR_ST,         \
        XS_GAP_FMA, XS_SYNC_CLOCK, 0.2, 12345u, 0.0, 1, NULL, NULL, NULL, NULL                     \
  }

#define XS_CALIB_MAX_PAIRS 32
#define XS_CALIB_MAX_K 16

typedef struct xs_calib_transition {
  int K;
  double V;         /* bytes */
  double g_pred_ns; /* xs_calib_predicted_settle_gap of the fitted profile (continuous) */
  double g_free_ns; /* xs_plan_min_free_gap of the fitted profile (+inf: capacity-bound) */
  double g_meas_ns; /* smallest measured gap whose steady T_iss is within 5% of T0 (NaN: none) */
  double t0_ns;     /* measured T0 of the pair: median first-burst T_iss over its gaps */
  double rel_err;   /* |g_pred_grid - g_meas| / g_meas (NaN when either is missing) */
  /* The prediction on the same grid by the same rule: the model's per-burst T_iss of the
   * same sequences (same gaps, same burst count), the steady value = the median over the
   * second half, T0 = the model's first burst; the smallest grid gap within 5% (and every
   * larger one). NaN when no grid gap settles under the model. */
  double g_pred_grid_ns;
  double t_ss0_ns; /* measured steady T_iss at the pair's smallest gap */
  int n_gaps;  /* distinct gaps of the pair on the grid */
  int in_grid; /* 1: the measured transition lies inside the grid (a smaller gap of the grid
                * does not settle) and the pair is not capacity-bound; only these pairs count
                * toward the "within 10%" target */
  int cap_bound; /* 1: V > Q(K) of the profile: the first burst from idle already overflows
                  * the stage, no backpressure-free gap exists (reported, never a miss) */
} xs_calib_transition;

typedef struct xs_calib_report {
  size_t size;
  size_t n_points, n_rows;       /* sequences measured, CSV rows */
  double gpu_s;                  /* summed kernel time */
  double wall_s;                 /* whole calibration */
  double R_meas;                 /* bytes/ns: sustained injection, median over K */
  double memcpy_d2h, memcpy_h2d; /* bytes/ns (0 if not measured) */
  double R_vs_memcpy;            /* R_meas / memcpy (host: D2H; peer: this device -> peer(s)
                                  * through cudaMemcpyPeer, memcpy_d2h then holds that and
                                  * memcpy_h2d the way back; HBM: 0) */
  int nq;                        /* Q knee per K */
  double q_k[XS_CALIB_MAX_K], q_knee[XS_CALIB_MAX_K];
  xs_fit_report fit; /* held-out errors of both predictors (overall, transition) */
  int ntrans;
  xs_calib_transition trans[XS_CALIB_MAX_PAIRS];
  int trans_within_10;  /* pairs predicted within 10% whose transition lies inside the grid
                         * (the smallest measured gap does not already settle) */
  int trans_in_grid;    /* pairs whose measured transition lies inside the grid (not
                         * capacity-bound) */
  int trans_cap_bound;  /* pairs excluded as capacity-bound (V > Q(K)) */
  int no_xstage;        /* 1: no pair shows backpressure: at its smallest gap every pair's
                         * steady T_iss is within 25% of its T0 (timer noise, not a stall);
                         * the path has no X-Stage at these sizes (HBM) */
  size_t n_median_rows; /* rows after the per-configuration median over repetitions */
  int reps;             /* repetitions of each grid configuration */
  double repeat_ss[5];  /* steady T_iss of the 5 repetitions */
  double repeat_spread; /* max/min - 1 */
  double repeat_total[5];     /* the per-point quantity: total T_iss of each repetition's bursts */
  double repeat_total_spread; /* its max/min - 1 */
  int repeat_K;
  double repeat_V, repeat_G;
  double fma_iters_per_ns, timer_res_ns;
  char csv_path[512], profile_path[512], svg_path[512]; /* "" when not written */
  /* the reference profile (xs_calib_config.reference) scored on the fit's held-out rows
   * (xs_model_score: ref.fluid_holdout, ref.fluid_point_holdout, ref.fluid_transition, ... on
   * the same rows and points as fit's); ref_scored = 0 when there was none */
  int ref_scored;
  xs_fit_report ref;
} xs_calib_report;

/* ---------------------------------------------------- analysis of measured rows ----- */

/* Read a calibration CSV (the columns xs_calib_csv_format writes) back into rows. *rows is
 * malloc'ed (caller frees). Errors name the file, line and column. */
xs_result xs_calib_csv_read(xs_calib_row** rows, size_t* n, const char* path);

/* Per-configuration medians over repetitions: rows with the same transport, phase, K, V,
 * gap_nominal_ns and burst_index become one row whose t_iss_ns, t_iss_mean_ns, gap_ns,
 * t_ret_ns and t_iss_cyc_ns are the medians of the group (rep = the group's size, point =
 * the first row's). Order: first appearance. *out is malloc'ed (caller frees). */
xs_result xs_calib_rows_median(xs_calib_row** out, size_t* nout, const xs_calib_row* rows,
                               size_t n);

/* Transition gaps of every (K, V) of the grid rows (phase "grid") of `med` (per-configuration
 * medians), measured and predicted by `p` with the same rule (xs_calib_transition). At most
 * cap pairs; *within10 = pairs inside the grid predicted within 10%, *in_grid = pairs whose
 * measured transition lies inside the grid. Any of the counts may be NULL. */
xs_result xs_calib_transitions(xs_calib_transition* out, int cap, int* n, int* within10,
                               int* in_grid, const xs_calib_row* med, size_t nmed,
                               const xs_link_profile* p, double tol);

/* The analysis of xs_calibrate, without a GPU: per-configuration medians of `rows` (all
 * phases and repetitions of one transport), the fit with a held-out share (xs_model_fit on
 * the medians), the transitions and the repeatability (phase "repeat"). `profile` keeps its
 * metadata and gets the fitted numbers. Fills rep->fit, trans, ntrans, trans_within_10,
 * trans_in_grid, no_xstage, repeat_*, n_median_rows, and R_meas when it is 0 (V over the
 * median period t_iss + gap of the second half of each phase-"R" sequence, median over K).
 * med/nmed (may be NULL) receive the median rows (malloc'ed). */
xs_result xs_calib_analyse(xs_link_profile* profile, xs_calib_report* rep,
                           xs_calib_row** med, size_t* nmed, const xs_calib_row* rows, size_t n,
                           const char* transport, double holdout_fraction, uint64_t seed);

/* The same, also scoring `reference` (may be NULL) on the fit's held-out rows and points
 * (rep->ref). */
xs_result xs_calib_analyse_ref(xs_link_profile* profile, xs_calib_report* rep,
                               xs_calib_row** med, size_t* nmed, const xs_calib_row* rows,
                               size_t n, const char* transport, double holdout_fraction,
                               uint64_t seed, const xs_link_profile* reference);

/* Measure, fit and write (see the top of this file). *profile gets the fitted profile
 * (calibrated = 1, device, transport, flavour, date, method set). report may be NULL.
 * Budget: the plan's estimate stays within cfg->budget_s; the measured GPU time is reported. */
xs_result xs_calibrate(xs_link_profile* profile, xs_calib_report* report,
                       const xs_calib_config* cfg);

/* What `xstage run` calls when a GPU is present: xs_calibrate with --quick defaults for the
 * host path of device 0, files in out_dir (NULL: none). */
xs_result xs_calibrate_quick(xs_link_profile* profile, xs_calib_report* report,
                             const char* out_dir);

#ifdef __cplusplus
}
#endif

#endif /* XSTAGE_CALIB_H */
