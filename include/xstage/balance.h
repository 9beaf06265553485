/* xstage/balance.h — TEMPO: makespan-aware expert-parallel dispatch (pure C, one CUDA kernel).
 *
 * The model (docs/tempo.md, shared/DESIGN.md §5). One MoE layer on one GPU takes
 *     t(G, N) = max(a + b*G, c + beta*N)      (t = 0 when G = 0)
 * where G is the number of activated expert replicas on that GPU (a replica is activated when
 * its quota is > 0) and N the rows it computes: the sum over its replicas of the quota, rounded
 * up to tile_rows per replica when tile_rows > 0. Below the crossover n* weight streaming
 * dominates (cost per activated replica); above it the grouped GEMM dominates (cost per row).
 * The layer waits for its slowest GPU: makespan = max over GPUs of t.
 *
 * Dispatch problem: given per-expert token counts and a placement (which GPUs hold a replica of
 * which expert), choose integer quotas per (expert, replica), summing to each expert's count,
 * that minimize the makespan. Tokens then go to replicas by stable per-expert ordinals
 * (xs_balance_assign), so every rank computes the same mapping from the same quotas.
 *
 * Units: time in microseconds (fields end in _us), tokens (rows) as integers.
 * Ownership: structs filled by the init, read and generate calls own their arrays and are released
 * by the matching release call (NULL-safe, leaves the struct zeroed). Opaque handles have
 * create/destroy.
 */
#ifndef XSTAGE_BALANCE_H
#define XSTAGE_BALANCE_H

#include <stddef.h>
#include <stdint.h>

#ifndef XSTAGE_XSTAGE_H
#include "xstage/xstage.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------- the profile ------ */

typedef struct xs_expert_profile {
  size_t size;      /* sizeof(xs_expert_profile): set by XS_EXPERT_PROFILE_INITIALIZER */
  double a_us;      /* us, >= 0: fixed cost of the weight-streaming regime */
  double b_us;      /* us, > 0: cost per activated replica (its weights streamed from HBM) */
  double c_us;      /* us, >= 0: fixed cost of the compute regime */
  double beta_us;   /* us per row, > 0: grouped-GEMM cost per (rounded) token row */
  int tile_rows;    /* 0: no rounding; else each replica's rows round up to a multiple (128) */
  char name[64];    /* "qwen3-235b", "deepseek-v3", ... */
  char method[160]; /* how it was obtained (fit command / "estimate from anchors-h200.md") */
  int calibrated;   /* 1: fitted from GPU measurements; 0: estimate */
} xs_expert_profile;

#define XS_EXPERT_PROFILE_INITIALIZER                                                              \
  { sizeof(xs_expert_profile), 5.0, 10.0, 5.0, 0.06, 128, "", "", 0 }

/* Check the fields (finite, b and beta > 0, a, c >= 0, tile_rows in [0, 4096]). */
xs_result xs_expert_profile_validate(const xs_expert_profile* p);

/* Embedded profiles: "deepseek-v3" (hidden 7168, intermediate 2048), "qwen3-235b" (4096, 1536).
 * Both are fitted from H200 measurements (calibrated = 1; method and docs/results/tempo-h200.md
 * say how). Unknown
 * name: XS_ERR_INVALID_ARG listing the known names. */
xs_result xs_expert_profile_default(xs_expert_profile* out, const char* name);

/* Time of one GPU with G activated replicas and N (already rounded) rows; 0 when G == 0. */
double xs_expert_time_us(const xs_expert_profile* p, int64_t G, int64_t N);

/* Crossover n* (rows of one expert, G = 1) where c + beta*n = a + b:  (a + b - c) / beta. */
double xs_expert_profile_nstar(const xs_expert_profile* p);

/* What a robust fit did (xs_expert_profile_fit_robust). */
typedef struct xs_profile_fit_info {
  size_t n_samples;   /* samples given */
  size_t n_outliers;  /* samples trimmed as outliers (not used by the final fit) */
  double rms_rel;     /* root-mean-square relative residual over the kept samples */
  double rms_rel_all; /* the same over all samples, outliers included */
  double outlier_cut; /* |relative residual - median| above which a sample was trimmed */
} xs_profile_fit_info;

/* Robust max-affine fit of t = max(a + b*G, c + beta*N) to n samples (G[i] >= 1, N[i] >= 0
 * rows, t_us[i] > 0): least squares on relative error, then iterative trimming of samples whose
 * relative residual is more than 3 robust standard deviations (1.4826 * MAD, floored at 0.5%)
 * from the median, at most n/4 of them, refitting until the trimmed set is stable (docs/tempo.md,
 * "Fitting"). Needs samples on both sides of the crossover (at least 2 distinct G among the
 * weight-bound ones and 2 distinct N among the compute-bound ones), else XS_ERR_NUMERIC. Fills
 * a, b, c, beta of *out (other fields untouched). info (NULL ok): see above. outlier_out (NULL
 * ok): n flags, 1 for a trimmed sample. */
xs_result xs_expert_profile_fit_robust(xs_expert_profile* out, xs_profile_fit_info* info,
                                       unsigned char* outlier_out, const double* G, const double* N,
                                       const double* t_us, size_t n);

/* xs_expert_profile_fit_robust; *rms_rel_out (NULL ok) gets the root-mean-square relative
 * residual over the kept samples. */
xs_result xs_expert_profile_fit(xs_expert_profile* out, double* rms_rel_out, const double* G,
                                const double* N, const double* t_us, size_t n);

/* Read a samples CSV (columns G, N, time_us; optional column model: only rows whose model
 * equals `model` are used when model != NULL) and fit it. *n_used_out (NULL ok): rows used. */
xs_result xs_expert_profile_fit_csv(xs_expert_profile* out, double* rms_rel_out, size_t* n_used_out,
                                    const char* path, const char* model);
/* The same with the fit's report (info NULL ok; info->n_samples = rows used). */
xs_result xs_expert_profile_fit_csv_info(xs_expert_profile* out, xs_profile_fit_info* info,
                                         const char* path, const char* model);

/* ------------------------------------------------------------------ the placement ------ */

/* Which GPU holds each replica. Replicas of expert e are rep_off[e] .. rep_off[e+1]-1. */
typedef struct xs_placement {
  int n_experts;  /* >= 1 */
  int n_gpus;     /* >= 1 */
  int n_replicas; /* = rep_off[n_experts] >= n_experts */
  int* rep_off;   /* n_experts + 1, non-decreasing, rep_off[0] = 0 */
  int* rep_gpu;   /* n_replicas, each in [0, n_gpus) */
} xs_placement;

/* Allocate arrays for the given sizes (rep_off zeroed, rep_gpu zeroed). */
xs_result xs_placement_init(xs_placement* pl, int n_experts, int n_gpus, int n_replicas);
void xs_placement_release(xs_placement* pl); /* NULL-safe */
/* Structure checks: sizes, offsets, GPU ids, every expert has >= 1 replica. */
xs_result xs_placement_validate(const xs_placement* pl);

/* EPLB-style replicate-and-pack from historical loads (tokens per expert, >= 0):
 * n_redundant extra replicas go one by one to the expert with the largest load per replica
 * (never more replicas than GPUs), then replicas (heaviest first) are packed onto the GPU with
 * the least load among those with a free slot (ceil(R / n_gpus) slots each) not yet holding that
 * expert. Deterministic. Fills a fresh *out (release it). */
xs_result xs_placement_eplb(xs_placement* out, const double* loads, int n_experts, int n_gpus,
                            int n_redundant);

/* --------------------------------------------------------------- the dispatch solver ---- */

typedef struct xs_solve_options {
  size_t size;           /* sizeof(xs_solve_options) */
  double time_budget_us; /* > 0: stop improving after this long (the result stays feasible) */
  int max_iters;         /* > 0: local-search moves per start (bounds work deterministically) */
  int token_flow_start;  /* 1: also start from exact token balancing (max-flow; slower) */
} xs_solve_options;

#define XS_SOLVE_OPTIONS_INITIALIZER                                                               \
  { sizeof(xs_solve_options), 900.0, 4096, 0 }

typedef struct xs_solve_stats {
  double makespan_us;    /* modeled makespan of the returned quotas */
  double lower_bound_us; /* a cheap valid lower bound (xs_balance_lower_bound is stronger) */
  double start_us;       /* best makespan among the constructive starts, before local search */
  double elapsed_us;     /* wall time of the solve */
  int iters;             /* local-search moves applied, all starts together */
  int budget_hit;        /* 1 when the time budget stopped the search */
} xs_solve_stats;

typedef struct xs_balance_solver xs_balance_solver;

/* Create a solver workspace for one placement and profile (both copied; all allocation happens
 * here). opt NULL = defaults. Destroy with xs_balance_solver_destroy. */
xs_result xs_balance_solver_create(xs_balance_solver** out, const xs_placement* pl,
                                   const xs_expert_profile* prof, const xs_solve_options* opt);
xs_result xs_balance_solver_destroy(xs_balance_solver* s); /* NULL-safe */

/* Solve one batch: counts[n_experts] (>= 0) in, quotas[n_replicas] out (each >= 0, summing to
 * the expert's count per expert). stats NULL ok. Allocation-free; deterministic for the same
 * inputs unless the time budget is hit. Negative counts: XS_ERR_INVALID_ARG naming the expert. */
xs_result xs_balance_solve(xs_balance_solver* s, int64_t* quotas, xs_solve_stats* stats,
                           const int64_t* counts);

/* Modeled makespan of given quotas (and, when per_gpu_us != NULL, each GPU's time, n_gpus
 * entries). Checks feasibility: quotas >= 0 and summing to counts, else XS_ERR_INVALID_ARG. */
xs_result xs_balance_makespan(double* out_us, double* per_gpu_us, const xs_placement* pl,
                              const xs_expert_profile* prof, const int64_t* counts,
                              const int64_t* quotas);

/* A stronger lower bound on the optimal makespan: max of the cheap bounds, of
 * c + beta * (exact token min-max, in tiles when tile_rows > 0) and of a + b * (exact min-max of
 * activated replicas). Uses max-flow; allocates. */
xs_result xs_balance_lower_bound(double* out_us, const xs_placement* pl,
                                 const xs_expert_profile* prof, const int64_t* counts);

/* Exact optimum by branch and bound over activation patterns (each leaf solved exactly by
 * max-flow) for small instances. node_limit > 0 bounds the search; *proven_out = 1 when the
 * search finished (the result is optimal), 0 when the limit stopped it (the result is the best
 * found, never worse than the TEMPO heuristic). quotas NULL ok. */
xs_result xs_balance_exact(int64_t* quotas, double* makespan_us, int* proven_out,
                           const xs_placement* pl, const xs_expert_profile* prof,
                           const int64_t* counts, long node_limit);

/* Baselines on the same inputs (docs/tempo.md defines each). */
typedef enum xs_balance_method {
  XS_BAL_TEMPO = 0,      /* this solver */
  XS_BAL_NO_REPLICATION, /* every token of an expert to its first replica */
  XS_BAL_STATIC,         /* source rank s (tokens spread evenly over ranks by ordinal
                            blocks) sends to replica s mod r */
  XS_BAL_RANDOM,         /* each token picks a replica uniformly at random (seeded) */
  XS_BAL_MODULO,         /* token ordinal k goes to replica k mod r (round robin) */
  XS_BAL_TOKEN_MINMAX,   /* exact min of the max token count per GPU (binary search +
                            max-flow): the best any token-only balancer can do */
  XS_BAL_ACTIVE_MINMAX,  /* exact min of the max activated replicas per GPU, one replica per
                            expert: a proxy of the published activated-expert method */
  XS_BAL_EXACT,          /* xs_balance_exact (small instances only) */
  XS_BAL_COUNT
} xs_balance_method;

/* Short stable name ("tempo", "token-minmax", ...). Never NULL. */
const char* xs_balance_method_name(xs_balance_method m);

/* Quotas of a baseline method (XS_BAL_TEMPO and XS_BAL_EXACT are accepted too). seed is used
 * by XS_BAL_RANDOM. Allocates (not for the hot path). */
xs_result xs_balance_baseline(int64_t* quotas, xs_balance_method m, const xs_placement* pl,
                              const xs_expert_profile* prof, const int64_t* counts, uint64_t seed);

/* Token -> replica assignment from quotas by stable per-expert ordinals (the CPU reference of
 * the GPU dispatch kernel). topk[n_tokens * top_k] holds expert ids (row-major per token). Slot
 * i with expert e gets ordinal o = ordinal_base[e] (0 when ordinal_base is NULL) + the number
 * of earlier slots with expert e. With Q = sum of e's quotas and n = e's total count
 * (counts_total[e] when given, else the count in topk plus ordinal_base[e]): the position is
 * p = (Q == n) ? o : floor(o * Q / n), at most Q - 1 (stale quotas are scaled); the replica is
 * the first j with p < q_0 + .. + q_j; when Q == 0 the replica is o mod r. out_replica[i] is
 * the global replica index; out_gpu (NULL ok) its GPU; counts_out[n_experts] (NULL ok) the
 * per-expert count in topk. Expert ids out of range: XS_ERR_INVALID_ARG naming the slot. */
xs_result xs_balance_assign(int32_t* out_replica, int32_t* out_gpu, int32_t* counts_out,
                            const int32_t* topk, int n_tokens, int top_k, const xs_placement* pl,
                            const int64_t* quotas, const int64_t* ordinal_base,
                            const int64_t* counts_total);

/* ------------------------------------------------------------------------ instances ---- */

typedef struct xs_balance_instance {
  xs_expert_profile profile;
  xs_placement placement;
  int64_t* counts; /* placement.n_experts */
} xs_balance_instance;

/* Read and validate an instance (format in docs/tempo.md). Errors name the file, line and key
 * (negative count, expert with no replica, GPU out of range, sizes that disagree). */
xs_result xs_balance_instance_read(xs_balance_instance* out, const char* path);
xs_result xs_balance_instance_from_json(xs_balance_instance* out, const char* text, size_t len,
                                        const char* name);
void xs_balance_instance_release(xs_balance_instance* inst); /* NULL-safe */

/* ------------------------------------------------------------------------- traces ------ */

typedef enum xs_popularity {
  XS_POP_ZIPF = 0,      /* weight of the expert ranked i (0-based): 1 / (i + 1)^skew */
  XS_POP_DIRICHLET = 1, /* weights ~ Dirichlet(alpha = 1 / skew) (skew 0: uniform) */
} xs_popularity;

typedef struct xs_routing_config {
  size_t size;   /* sizeof(xs_routing_config) */
  int n_experts; /* >= top_k */
  int top_k;     /* >= 1 */
  int n_steps;   /* >= 1 */
  int n_tokens;  /* tokens per step (decode: tens; prefill: thousands), >= 1 */
  xs_popularity popularity;
  double skew;  /* >= 0: Zipf exponent, or 1/alpha for Dirichlet */
  double drift; /* >= 0: per-step std-dev of a random walk on log-popularity */
  uint64_t seed;
} xs_routing_config;

#define XS_ROUTING_CONFIG_INITIALIZER                                                              \
  { sizeof(xs_routing_config), 128, 8, 16, 256, XS_POP_ZIPF, 1.0, 0.05, 1 }

/* Per-step expert counts: counts[step * n_experts + e]. */
typedef struct xs_routing_trace {
  int n_steps; /* steps (x layers, for recorded traces) */
  int n_experts;
  int64_t* counts; /* n_steps * n_experts */
} xs_routing_trace;

/* Generate a synthetic trace: each step samples popularity (with drift), then each token picks
 * top_k distinct experts without replacement. Deterministic for a seed. */
xs_result xs_routing_generate(xs_routing_trace* out, const xs_routing_config* cfg);
/* Read recorded counts: JSON [steps][layers][experts] (nested arrays of integers >= 0), or CSV
 * with columns step, layer, expert, count (missing cells are 0). Rows of the result are
 * (step, layer) pairs, step-major. */
xs_result xs_routing_read(xs_routing_trace* out, const char* path);
void xs_routing_release(xs_routing_trace* t); /* NULL-safe */

/* --------------------------------------------------------------- the GPU dispatch ------ */

/* Device pointers for the dispatch kernel (all int32, device memory). */
typedef struct xs_dispatch_args {
  const int32_t* topk;    /* n_tokens * top_k expert ids */
  const int32_t* rep_off; /* n_experts + 1 */
  const int32_t* rep_gpu; /* n_replicas */
  const int32_t* quotas;  /* n_replicas */
  int32_t* counts;        /* out: n_experts */
  int32_t* replica;       /* out: n_tokens * top_k global replica index */
  int32_t* gpu;           /* out: n_tokens * top_k GPU (NULL: not written) */
  void* workspace;        /* xs_dispatch_workspace_size bytes, any content */
  int n_tokens, top_k, n_experts, n_replicas;
} xs_dispatch_args;

/* Workspace bytes the kernel needs for these sizes. */
xs_result xs_dispatch_workspace_size(size_t* bytes, int n_tokens, int top_k, int n_experts);

/* Launch the dispatch on `stream` (a cudaStream_t; NULL = default stream): counts per expert and
 * the assignment of xs_balance_assign (ordinal_base = NULL, counts_total = the counts), in two
 * kernels, with no host synchronization and no allocation (CUDA-graph capturable). n_experts
 * <= 1024. XS_ERR_UNSUPPORTED in a build without CUDA. */
xs_result xs_dispatch_launch(const xs_dispatch_args* args, void* stream);

/* ----------------------------------------------------------- studies and summaries ----- */

/* One comparison cell: mean modeled makespan over steps for every method. */
typedef struct xs_balance_cell {
  double makespan_us[XS_BAL_COUNT]; /* mean over steps; XS_BAL_EXACT left 0 */
  double lower_bound_us;            /* mean of the cheap lower bound */
  int steps;
} xs_balance_cell;

typedef struct xs_balance_scenario {
  size_t size; /* sizeof(xs_balance_scenario) */
  xs_expert_profile profile;
  int n_gpus;              /* >= 1 */
  int n_redundant;         /* extra replicas (EPLB placement from the trace's mean loads) */
  xs_routing_config trace; /* the trace generated for the scenario */
} xs_balance_scenario;

/* Default scenario of the one-line summary: Qwen3-235B profile (embedded), 128 experts, 8 GPUs,
 * 16 redundant replicas, top-8, 192 tokens per step, Zipf skew 1.0, 16 steps. */
xs_result xs_balance_scenario_default(xs_balance_scenario* out);

/* Run a scenario: generate its trace, place from the mean loads, solve every step with TEMPO
 * and every baseline (not EXACT). */
xs_result xs_balance_compare(xs_balance_cell* out, const xs_balance_scenario* sc);

/* One-line summary of the default scenario for the `xstage run` report:
 * tempo_us and token_us (mean makespan of TEMPO and of exact token balancing), and a line such
 * as "TEMPO 123.4 us vs token balancing 140.1 us (-11.9%), best baseline ...; qwen3-235b
 * (calibrated), 8 GPUs, 192 tokens x top-8". Runs 16 steps of 128 experts: tens of ms. */
typedef struct xs_balance_summary_t {
  double tempo_us, token_us, best_baseline_us;
  char line[200];
} xs_balance_summary_t;
xs_result xs_balance_summary(xs_balance_summary_t* out);

#ifdef __cplusplus
}
#endif
#endif /* XSTAGE_BALANCE_H */
