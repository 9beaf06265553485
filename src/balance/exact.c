/* exact.c — exact dispatch for small instances: branch and bound over activation patterns.
 *
 * For a fixed pattern (which replicas get tokens) the makespan separates:
 *   max_g t_g = max( a + b * max_g G_g ,  c + beta * unit * min-max units per GPU )
 * where a unit is one token (no tile rounding) or one 128-row tile, each chosen replica holds at
 * least one unit, and expert e needs max(ceil(count / unit), |chosen|) units. The min-max units
 * is a max-flow question (binary search on the GPU capacity). The search assigns experts in
 * decreasing count order, choosing a non-empty subset of replicas each; a node's bound is the
 * same formula with the unassigned experts free over all their replicas (a relaxation), and
 * nodes not below the incumbent (the TEMPO heuristic at first) are pruned.
 */
#include "balance/balance_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct bb {
  const xs_placement* pl;
  const xs_expert_profile* prof;
  const int64_t* counts;
  int n_act;
  int* act; /* active experts, by count descending */
  int64_t unit;
  int64_t *dem, *base, *gcnt, *units; /* E, G, G, R */
  unsigned char* allowed;             /* R */
  int64_t* best_q;                    /* R */
  double best;
  long nodes, limit;
  int stopped, oom;
} bb;

static double pattern_value(bb* b, int64_t* tmax_out) {
  int64_t gmax = 0;
  for (int g = 0; g < b->pl->n_gpus; g++)
    if (b->gcnt[g] > gmax) gmax = b->gcnt[g];
  int64_t t = xsi_minmax_units(b->pl, b->dem, b->allowed, b->base, NULL);
  if (t == -1) b->oom = 1;
  if (t < 0) return 1e300;
  *tmax_out = t;
  double m = b->prof->a_us + b->prof->b_us * (double)gmax;
  double k = b->prof->c_us + b->prof->beta_us * (double)(t * b->unit);
  return m > k ? m : k;
}

static void record_leaf(bb* b, double v) {
  const xs_placement* pl = b->pl;
  if (xsi_minmax_units(pl, b->dem, b->allowed, b->base, b->units) < 0) {
    b->oom = 1;
    return;
  }
  b->best = v;
  memset(b->best_q, 0, (size_t)pl->n_replicas * sizeof(int64_t));
  for (int i = 0; i < b->n_act; i++) {
    int e = b->act[i];
    int64_t left = b->counts[e];
    for (int r = pl->rep_off[e]; r < pl->rep_off[e + 1]; r++)
      if (b->allowed[r]) b->best_q[r] = 1, left--;
    for (int r = pl->rep_off[e]; r < pl->rep_off[e + 1] && left > 0; r++) {
      if (!b->allowed[r]) continue;
      int64_t room = (b->units[r] + 1) * b->unit - 1;
      int64_t d = left < room ? left : room;
      b->best_q[r] += d;
      left -= d;
    }
  }
}

static void dfs(bb* b, int i) {
  if (b->stopped || b->oom) return;
  if (++b->nodes > b->limit) {
    b->stopped = 1;
    return;
  }
  const xs_placement* pl = b->pl;
  const xs_expert_profile* p = b->prof;
  int e = b->act[i], r0 = pl->rep_off[e], nr = pl->rep_off[e + 1] - r0;
  int64_t c = b->counts[e], d = b->unit > 1 ? (c + b->unit - 1) / b->unit : c;
  for (int k = 1; k <= nr; k++) { /* subsets by size, then by mask */
    for (unsigned mask = 1; mask < (1u << nr); mask++) {
      if (__builtin_popcount(mask) != k || k > c) continue;
      int64_t gmax = 0;
      for (int j = 0; j < nr; j++) {
        b->allowed[r0 + j] = (mask >> j) & 1;
        if ((mask >> j) & 1) b->gcnt[pl->rep_gpu[r0 + j]]++, b->base[pl->rep_gpu[r0 + j]]++;
      }
      for (int g = 0; g < pl->n_gpus; g++)
        if (b->gcnt[g] > gmax) gmax = b->gcnt[g];
      b->dem[e] = (d > k ? d : k) - k;
      if (p->a_us + p->b_us * (double)gmax < b->best * (1 - 1e-12)) {
        int64_t t;
        double v = pattern_value(b, &t);
        if (v < b->best * (1 - 1e-12)) {
          if (i + 1 == b->n_act)
            record_leaf(b, v);
          else
            dfs(b, i + 1);
        }
      }
      for (int j = 0; j < nr; j++)
        if ((mask >> j) & 1) b->gcnt[pl->rep_gpu[r0 + j]]--, b->base[pl->rep_gpu[r0 + j]]--;
      if (b->stopped || b->oom) break;
    }
  }
  for (int j = 0; j < nr; j++)
    b->allowed[r0 + j] = 1;
  b->dem[e] = d;
}

xs_result xs_balance_exact(int64_t* quotas, double* makespan_us, int* proven_out,
                           const xs_placement* pl, const xs_expert_profile* prof,
                           const int64_t* counts, long node_limit) {
  XSI_ARG(makespan_us && proven_out, "makespan_us and proven_out must not be NULL");
  XSI_ARG(node_limit > 0, "node_limit must be > 0");
  XSI_CHECK(xs_placement_validate(pl));
  XSI_CHECK(xs_expert_profile_validate(prof));
  XSI_CHECK(xsi_check_counts(pl, counts));
  int E = pl->n_experts, G = pl->n_gpus, R = pl->n_replicas;
  for (int e = 0; e < E; e++)
    XSI_ARG(pl->rep_off[e + 1] - pl->rep_off[e] <= 12,
            "exact: expert %d has %d replicas (at most 12 supported)", e,
            pl->rep_off[e + 1] - pl->rep_off[e]);
  xs_result res = XS_OK;
  bb b;
  memset(&b, 0, sizeof b);
  b.pl = pl, b.prof = prof, b.counts = counts, b.limit = node_limit;
  b.unit = prof->tile_rows > 0 ? prof->tile_rows : 1;
  b.act = malloc((size_t)E * sizeof(int));
  b.dem = malloc((size_t)E * sizeof(int64_t));
  b.base = calloc((size_t)G, sizeof(int64_t));
  b.gcnt = calloc((size_t)G, sizeof(int64_t));
  b.units = malloc((size_t)R * sizeof(int64_t));
  b.allowed = malloc((size_t)R);
  b.best_q = malloc((size_t)R * sizeof(int64_t));
  if (!b.act || !b.dem || !b.base || !b.gcnt || !b.units || !b.allowed || !b.best_q)
    XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "exact: out of memory");
  /* incumbent: the heuristic */
  XSI_CHECK_GOTO(xs_balance_baseline(b.best_q, XS_BAL_TEMPO, pl, prof, counts, 0), res, fail);
  XSI_CHECK_GOTO(xs_balance_makespan(&b.best, NULL, pl, prof, counts, b.best_q), res, fail);
  for (int e = 0; e < E; e++) {
    b.dem[e] = b.unit > 1 ? (counts[e] + b.unit - 1) / b.unit : counts[e];
    if (counts[e] > 0) {
      int j = b.n_act++;
      while (j > 0 && counts[b.act[j - 1]] < counts[e])
        b.act[j] = b.act[j - 1], j--;
      b.act[j] = e;
    }
  }
  memset(b.allowed, 1, (size_t)R);
  if (b.n_act > 0) dfs(&b, 0);
  if (b.oom) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "exact: out of memory in max-flow");
  *makespan_us = b.best;
  *proven_out = !b.stopped;
  if (quotas) memcpy(quotas, b.best_q, (size_t)R * sizeof(int64_t));
fail:
  free(b.act);
  free(b.dem);
  free(b.base);
  free(b.gcnt);
  free(b.units);
  free(b.allowed);
  free(b.best_q);
  return res;
}
