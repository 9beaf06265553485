/* solver.c — the TEMPO dispatch solver: constructive starts + local search on the bottleneck
 * GPU, in a workspace allocated once (the solve itself allocates nothing).
 *
 * Starts (each followed by local search; the best result wins):
 *   1. greedy whole: experts by count (largest first), each wholly to the replica whose GPU
 *      ends up fastest (an LPT rule under the max-affine cost);
 *   2. greedy split: like 1, but experts above 2 n* are poured in chunks, each chunk to the
 *      replica whose GPU ends up fastest (water-filling the compute-bound experts);
 *   3. round robin over replicas (the modulo baseline), 4. first replica only (no replication);
 *   5. the exact min-max of activated replicas per GPU, one replica per expert (max-flow in the
 *      preallocated workspace): the best start where weight streaming dominates;
 *   6. (token_flow_start only; allocates) exact token min-max.
 *   Starting from 3..6 makes the result never worse than those baselines.
 * Local search: take the slowest GPU g; for each of its active replicas r and each other replica
 * s of the same expert, try moving delta tokens r -> s for delta in {all of q_r, the crossing
 * point of g's falling and s's GPU's rising time, and their tile-aligned neighbours}; apply the
 * move that lowers max(t_g, t_h) the most, if it is below t_g. Each applied move lowers the
 * sorted vector of GPU times, so the search terminates; max_iters and the time budget bound it.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include "balance/balance_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct xs_balance_solver {
  xs_placement pl;
  xs_expert_profile prof;
  xs_solve_options opt;
  int E, G, R;
  int* rep_exp;     /* R: expert of each replica */
  int* gpu_off;     /* G + 1: replicas on GPU g are gpu_reps[gpu_off[g] .. gpu_off[g+1]) */
  int* gpu_reps;    /* R */
  int64_t* q;       /* R: current quotas */
  int64_t* best_q;  /* R */
  int64_t* gG;      /* G: activated replicas */
  int64_t* gN;      /* G: rounded rows */
  int* order;       /* E: experts by count, descending */
  int64_t* scratch; /* 3 G */
  int64_t* dem;     /* E: flow demands */
  int* rep_edge;    /* R: flow edge of each replica */
  int64_t* units;   /* R: flow result */
  xsi_flow flow;    /* E + G + 2 nodes, preallocated */
  double t0_ns;
  int iters, budget_hit;
};

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

xs_result xs_balance_solver_destroy(xs_balance_solver* s) {
  if (!s) return XS_OK;
  xs_placement_release(&s->pl);
  free(s->rep_exp);
  free(s->gpu_off);
  free(s->gpu_reps);
  free(s->q);
  free(s->best_q);
  free(s->gG);
  free(s->gN);
  free(s->order);
  free(s->scratch);
  free(s->dem);
  free(s->rep_edge);
  free(s->units);
  xsi_flow_free(&s->flow);
  free(s);
  return XS_OK;
}

xs_result xs_balance_solver_create(xs_balance_solver** out, const xs_placement* pl,
                                   const xs_expert_profile* prof, const xs_solve_options* opt) {
  XSI_ARG(out != NULL, "out is NULL");
  *out = NULL;
  XSI_CHECK(xs_placement_validate(pl));
  XSI_CHECK(xs_expert_profile_validate(prof));
  xs_solve_options o = XS_SOLVE_OPTIONS_INITIALIZER;
  if (opt) {
    XSI_ARG(opt->size == sizeof(xs_solve_options), "solve options: size field not set");
    XSI_ARG(xsi_finite(opt->time_budget_us) && opt->time_budget_us > 0,
            "solve options: time_budget_us must be > 0");
    XSI_ARG(opt->max_iters > 0, "solve options: max_iters must be > 0");
    o = *opt;
  }
  xs_balance_solver* s = calloc(1, sizeof *s);
  if (!s) return xsi_set_error(XS_ERR_NO_MEMORY, "solver: out of memory");
  int E = pl->n_experts, G = pl->n_gpus, R = pl->n_replicas;
  s->E = E, s->G = G, s->R = R, s->prof = *prof, s->opt = o;
  if (xs_placement_init(&s->pl, E, G, R) != XS_OK) goto oom;
  memcpy(s->pl.rep_off, pl->rep_off, ((size_t)E + 1) * sizeof(int));
  memcpy(s->pl.rep_gpu, pl->rep_gpu, (size_t)R * sizeof(int));
  s->rep_exp = malloc((size_t)R * sizeof(int));
  s->gpu_off = calloc((size_t)G + 1, sizeof(int));
  s->gpu_reps = malloc((size_t)R * sizeof(int));
  s->q = malloc((size_t)R * sizeof(int64_t));
  s->best_q = malloc((size_t)R * sizeof(int64_t));
  s->gG = malloc((size_t)G * sizeof(int64_t));
  s->gN = malloc((size_t)G * sizeof(int64_t));
  s->order = malloc((size_t)E * sizeof(int));
  s->scratch = malloc((size_t)G * 3 * sizeof(int64_t));
  s->dem = malloc((size_t)E * sizeof(int64_t));
  s->rep_edge = malloc((size_t)R * sizeof(int));
  s->units = malloc((size_t)R * sizeof(int64_t));
  if (!s->dem || !s->rep_edge || !s->units ||
      xsi_flow_init(&s->flow, E + G + 2, E + R + G) != XS_OK)
    goto oom;
  if (!s->rep_exp || !s->gpu_off || !s->gpu_reps || !s->q || !s->best_q || !s->gG || !s->gN ||
      !s->order || !s->scratch)
    goto oom;
  for (int e = 0; e < E; e++)
    for (int r = pl->rep_off[e]; r < pl->rep_off[e + 1]; r++)
      s->rep_exp[r] = e;
  for (int r = 0; r < R; r++)
    s->gpu_off[pl->rep_gpu[r] + 1]++;
  for (int g = 0; g < G; g++)
    s->gpu_off[g + 1] += s->gpu_off[g];
  for (int g = 0; g < G; g++)
    s->gG[g] = 0;
  for (int r = 0; r < R; r++) {
    int g = pl->rep_gpu[r];
    s->gpu_reps[s->gpu_off[g] + s->gG[g]++] = r;
  }
  *out = s;
  return XS_OK;
oom:
  xs_balance_solver_destroy(s);
  return xsi_set_error(XS_ERR_NO_MEMORY, "solver: out of memory");
}

/* ---- incremental state -------------------------------------------------------------------- */

static inline double gtime(const xs_balance_solver* s, int64_t G, int64_t N) {
  return xs_expert_time_us(&s->prof, G, N);
}

static void reset(xs_balance_solver* s) {
  memset(s->q, 0, (size_t)s->R * sizeof(int64_t));
  memset(s->gG, 0, (size_t)s->G * sizeof(int64_t));
  memset(s->gN, 0, (size_t)s->G * sizeof(int64_t));
}

static void add(xs_balance_solver* s, int r, int64_t d) {
  int g = s->pl.rep_gpu[r], tile = s->prof.tile_rows;
  int64_t o = s->q[r], n = o + d;
  s->gG[g] += (n > 0) - (o > 0);
  s->gN[g] += xsi_round_rows(n, tile) - xsi_round_rows(o, tile);
  s->q[r] = n;
}

static double makespan(const xs_balance_solver* s, int* argmax) {
  double m = -1;
  for (int g = 0; g < s->G; g++) {
    double t = gtime(s, s->gG[g], s->gN[g]);
    if (t > m) m = t, *argmax = g;
  }
  return m;
}

/* Time of r's GPU after adding d tokens to replica r (alone). */
static inline double time_after(const xs_balance_solver* s, int r, int64_t d) {
  int g = s->pl.rep_gpu[r], tile = s->prof.tile_rows;
  int64_t o = s->q[r], n = o + d;
  return gtime(s, s->gG[g] + (n > 0) - (o > 0),
               s->gN[g] + xsi_round_rows(n, tile) - xsi_round_rows(o, tile));
}

/* ---- starts ------------------------------------------------------------------------------- */

static void sort_experts(xs_balance_solver* s, const int64_t* c) {
  /* insertion into a heap-free ordering: a simple non-allocating shell sort, ties by index */
  int n = s->E, *a = s->order;
  for (int i = 0; i < n; i++)
    a[i] = i;
  for (int gap = n / 2; gap > 0; gap /= 2)
    for (int i = gap; i < n; i++) {
      int v = a[i], j = i;
      while (j >= gap && (c[a[j - gap]] < c[v] || (c[a[j - gap]] == c[v] && a[j - gap] > v))) {
        a[j] = a[j - gap];
        j -= gap;
      }
      a[j] = v;
    }
}

static int best_replica(const xs_balance_solver* s, int e, int64_t d) {
  int best = -1;
  double bt = 0, bcur = 0;
  for (int r = s->pl.rep_off[e]; r < s->pl.rep_off[e + 1]; r++) {
    double t = time_after(s, r, d), cur = time_after(s, r, 0);
    if (best < 0 || t < bt || (t == bt && cur < bcur)) best = r, bt = t, bcur = cur;
  }
  return best;
}

static void start_greedy(xs_balance_solver* s, const int64_t* c, int split) {
  reset(s);
  double nstar = xs_expert_profile_nstar(&s->prof);
  int64_t unit = s->prof.tile_rows > 0 ? s->prof.tile_rows : 1;
  for (int i = 0; i < s->E; i++) {
    int e = s->order[i], nr = s->pl.rep_off[e + 1] - s->pl.rep_off[e];
    int64_t left = c[e];
    if (left <= 0) continue;
    if (!split || nr == 1 || (double)left < 2.0 * nstar) {
      add(s, best_replica(s, e, left), left);
      continue;
    }
    int64_t chunk = (left + 2 * nr - 1) / (2 * nr);
    chunk = (chunk + unit - 1) / unit * unit;
    while (left > 0) {
      int64_t d = left < chunk ? left : chunk;
      add(s, best_replica(s, e, d), d);
      left -= d;
    }
  }
}

static void start_modulo(xs_balance_solver* s, const int64_t* c, int first_only);

/* Load quotas computed elsewhere (the token-flow start). */
static void start_from(xs_balance_solver* s, const int64_t* q) {
  reset(s);
  for (int r = 0; r < s->R; r++)
    if (q[r] > 0) add(s, r, q[r]);
}

/* Exact min-max of activated replicas per GPU, each expert wholly on one replica (max-flow in
 * the preallocated workspace): the best start where weight streaming dominates. */
static void start_active(xs_balance_solver* s, const int64_t* c) {
  for (int e = 0; e < s->E; e++)
    s->dem[e] = c[e] > 0;
  if (xsi_minmax_units_ws(&s->flow, s->rep_edge, &s->pl, s->dem, NULL, NULL, s->units) < 0) {
    start_modulo(s, c, 1);
    return;
  }
  reset(s);
  for (int e = 0; e < s->E; e++)
    for (int r = s->pl.rep_off[e]; r < s->pl.rep_off[e + 1]; r++)
      if (c[e] > 0 && s->units[r] > 0) add(s, r, c[e]);
}

static void start_modulo(xs_balance_solver* s, const int64_t* c, int first_only) {
  reset(s);
  for (int e = 0; e < s->E; e++) {
    int r0 = s->pl.rep_off[e], nr = first_only ? 1 : s->pl.rep_off[e + 1] - r0;
    for (int j = 0; j < nr; j++) {
      int64_t d = c[e] / nr + (j < c[e] % nr);
      if (d > 0) add(s, r0 + j, d);
    }
  }
}

/* ---- local search ------------------------------------------------------------------------- */

/* max(t_g, t_h) after moving d tokens from replica r to replica x. */
static double eval_move(const xs_balance_solver* s, int r, int x, int64_t d) {
  int g = s->pl.rep_gpu[r], h = s->pl.rep_gpu[x], tile = s->prof.tile_rows;
  int64_t qr = s->q[r], qx = s->q[x];
  int64_t dGg = (qr - d > 0) - (qr > 0),
          dNg = xsi_round_rows(qr - d, tile) - xsi_round_rows(qr, tile);
  int64_t dGh = (qx + d > 0) - (qx > 0),
          dNh = xsi_round_rows(qx + d, tile) - xsi_round_rows(qx, tile);
  if (g == h) return gtime(s, s->gG[g] + dGg + dGh, s->gN[g] + dNg + dNh);
  double tg = gtime(s, s->gG[g] + dGg, s->gN[g] + dNg);
  double th = gtime(s, s->gG[h] + dGh, s->gN[h] + dNh);
  return tg > th ? tg : th;
}

static int candidates(const xs_balance_solver* s, int r, int x, int64_t* d) {
  const xs_expert_profile* p = &s->prof;
  int g = s->pl.rep_gpu[r], h = s->pl.rep_gpu[x], n = 0;
  int64_t q = s->q[r], qx = s->q[x], tile = p->tile_rows > 0 ? p->tile_rows : 1;
  d[n++] = q;
  if (q <= 1 || g == h) return n;
  d[n++] = q - (q - 1) / tile * tile; /* the smallest move that lowers g's rounded rows */
  double Ah = p->a_us + p->b_us * (double)(s->gG[h] + (qx == 0));
  double d1 = 0.5 * (double)(s->gN[g] - s->gN[h]);
  double d2 = (double)s->gN[g] - (Ah - p->c_us) / p->beta_us;
  double dx = d1 < d2 ? d1 : d2;
  if (!(dx >= 1)) return n;
  int64_t base = (int64_t)floor(dx);
  int64_t c[6] = {base,
                  base + 1,
                  q - (q - base) / tile * tile,
                  q - ((q - base + tile - 1) / tile) * tile,
                  (qx + base) / tile * tile - qx,
                  (qx + base + tile - 1) / tile * tile - qx};
  for (int i = 0; i < 6; i++)
    if (c[i] >= 1 && c[i] < q) d[n++] = c[i];
  return n;
}

/* Ejection chain of two moves, tried when no single move helps the slowest GPU g (time M):
 * move d tokens r -> x (onto GPU h, which may then exceed M), then d2 tokens r2 -> x2 from h to
 * a GPU h2 (a third one, or g itself: a swap), such that g, h and h2 all end below M. Applies
 * the best chain; returns 0 if there is none. */
static int chain_move(xs_balance_solver* s, int g, double M) {
  int64_t c1[10], c2[10];
  double best = M * (1 - 1e-12);
  int br = -1, bx = -1, br2 = -1, bx2 = -1;
  int64_t bd = 0, bd2 = 0;
  for (int k = s->gpu_off[g]; k < s->gpu_off[g + 1]; k++) {
    int r = s->gpu_reps[k], e = s->rep_exp[r];
    if (s->q[r] <= 0) continue;
    for (int x = s->pl.rep_off[e]; x < s->pl.rep_off[e + 1]; x++) {
      int h = s->pl.rep_gpu[x];
      if (x == r || h == g) continue;
      int n1 = candidates(s, r, x, c1);
      for (int i = 0; i < n1; i++) {
        add(s, r, -c1[i]); /* tentative first move */
        add(s, x, c1[i]);
        double tg = gtime(s, s->gG[g], s->gN[g]);
        int g_ok = tg < best; /* else only a second move back onto g can help */
        for (int k2 = s->gpu_off[h]; k2 < s->gpu_off[h + 1]; k2++) {
          int r2 = s->gpu_reps[k2], e2 = s->rep_exp[r2];
          if (s->q[r2] <= 0) continue;
          for (int x2 = s->pl.rep_off[e2]; x2 < s->pl.rep_off[e2 + 1]; x2++) {
            int h2 = s->pl.rep_gpu[x2];
            if (x2 == r2 || h2 == h || (h2 != g && !g_ok)) continue;
            int n2 = candidates(s, r2, x2, c2);
            for (int j = 0; j < n2; j++) {
              double v = eval_move(s, r2, x2, c2[j]); /* covers g itself when h2 == g */
              if (h2 != g && tg > v) v = tg;
              if (v < best) best = v, br = r, bx = x, bd = c1[i], br2 = r2, bx2 = x2, bd2 = c2[j];
            }
          }
        }
        add(s, x, -c1[i]);
        add(s, r, c1[i]);
      }
    }
  }
  if (br < 0) return 0;
  add(s, br, -bd);
  add(s, bx, bd);
  add(s, br2, -bd2);
  add(s, bx2, bd2);
  return 1;
}

static void local_search(xs_balance_solver* s, double lb) {
  int64_t cand[10];
  for (int it = 0; it < s->opt.max_iters; it++) {
    if ((s->iters & 31) == 31 && now_ns() - s->t0_ns > s->opt.time_budget_us * 1e3) {
      s->budget_hit = 1;
      return;
    }
    int g = 0;
    double M = makespan(s, &g), best = M * (1 - 1e-12);
    if (M <= lb * (1 + 1e-12)) return;
    int br = -1, bx = -1;
    int64_t bd = 0;
    for (int k = s->gpu_off[g]; k < s->gpu_off[g + 1]; k++) {
      int r = s->gpu_reps[k], e = s->rep_exp[r];
      if (s->q[r] <= 0) continue;
      for (int x = s->pl.rep_off[e]; x < s->pl.rep_off[e + 1]; x++) {
        if (x == r) continue;
        int nc = candidates(s, r, x, cand);
        for (int i = 0; i < nc; i++) {
          double v = eval_move(s, r, x, cand[i]);
          if (v < best) best = v, br = r, bx = x, bd = cand[i];
        }
      }
    }
    if (br < 0 && !chain_move(s, g, M)) return;
    if (br >= 0) {
      add(s, br, -bd);
      add(s, bx, bd);
    }
    s->iters++;
  }
}

xs_result xs_balance_solve(xs_balance_solver* s, int64_t* quotas, xs_solve_stats* stats,
                           const int64_t* counts) {
  XSI_ARG(s && quotas && counts, "solver, quotas and counts must not be NULL");
  for (int e = 0; e < s->E; e++)
    XSI_ARG(counts[e] >= 0, "count of expert %d is negative (%lld)", e, (long long)counts[e]);
  s->t0_ns = now_ns();
  s->iters = 0;
  s->budget_hit = 0;
  double lb = xsi_cheap_lower_bound(&s->pl, &s->prof, s->scratch, counts);
  sort_experts(s, counts);
  double best = INFINITY, start_best = INFINITY;
  int nstarts = s->opt.token_flow_start ? 6 : 5;
  for (int k = 0; k < nstarts; k++) {
    if (k == 0) start_greedy(s, counts, 0);
    if (k == 1) start_greedy(s, counts, 1);
    if (k == 2) start_modulo(s, counts, 0);
    if (k == 3) start_modulo(s, counts, 1);
    if (k == 4) start_active(s, counts);
    if (k == 5) { /* NOTE: allocates (max-flow); only when token_flow_start asks for it */
      XSI_CHECK(xs_balance_baseline(quotas, XS_BAL_TOKEN_MINMAX, &s->pl, &s->prof, counts, 0));
      start_from(s, quotas);
    }
    int g;
    double m0 = makespan(s, &g);
    if (m0 < start_best) start_best = m0;
    if (k == 0 || !s->budget_hit) local_search(s, lb);
    double m = makespan(s, &g);
    if (m < best) {
      best = m;
      memcpy(s->best_q, s->q, (size_t)s->R * sizeof(int64_t));
    }
    if (best <= lb * (1 + 1e-12)) break;
  }
  memcpy(quotas, s->best_q, (size_t)s->R * sizeof(int64_t));
  if (stats) {
    stats->makespan_us = best;
    stats->lower_bound_us = lb;
    stats->start_us = start_best;
    stats->iters = s->iters;
    stats->budget_hit = s->budget_hit;
    stats->elapsed_us = (now_ns() - s->t0_ns) * 1e-3;
  }
  return XS_OK;
}
