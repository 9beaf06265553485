/* flow.c — Dinic max-flow and the min-max load assignment built on it (baselines, bounds and
 * the exact solver; not used on the solver's hot path). */
#include "balance/balance_internal.h"

#include <stdlib.h>
#include <string.h>

xs_result xsi_flow_init(xsi_flow* f, int n, int max_edges) {
  memset(f, 0, sizeof *f);
  f->n = n;
  f->cap_m = 2 * max_edges;
  f->head = malloc((size_t)n * sizeof(int));
  f->level = malloc((size_t)n * sizeof(int));
  f->iter = malloc((size_t)n * sizeof(int));
  f->queue = malloc((size_t)n * sizeof(int));
  f->next = malloc((size_t)f->cap_m * sizeof(int));
  f->to = malloc((size_t)f->cap_m * sizeof(int));
  f->cap = malloc((size_t)f->cap_m * sizeof(int64_t));
  if (!f->head || !f->level || !f->iter || !f->queue || !f->next || !f->to || !f->cap) {
    xsi_flow_free(f);
    return xsi_set_error(XS_ERR_NO_MEMORY, "max-flow: out of memory (%d nodes)", n);
  }
  xsi_flow_clear(f);
  return XS_OK;
}

void xsi_flow_free(xsi_flow* f) {
  if (!f) return;
  free(f->head);
  free(f->level);
  free(f->iter);
  free(f->queue);
  free(f->next);
  free(f->to);
  free(f->cap);
  memset(f, 0, sizeof *f);
}

void xsi_flow_clear(xsi_flow* f) {
  f->m = 0;
  for (int i = 0; i < f->n; i++)
    f->head[i] = -1;
}

int xsi_flow_add(xsi_flow* f, int u, int v, int64_t c) {
  int e = f->m;
  f->to[e] = v, f->cap[e] = c, f->next[e] = f->head[u], f->head[u] = e;
  f->to[e + 1] = u, f->cap[e + 1] = 0, f->next[e + 1] = f->head[v], f->head[v] = e + 1;
  f->m += 2;
  return e;
}

static int bfs(xsi_flow* f, int s, int t) {
  for (int i = 0; i < f->n; i++)
    f->level[i] = -1;
  int qh = 0, qt = 0;
  f->level[s] = 0;
  f->queue[qt++] = s;
  while (qh < qt) {
    int u = f->queue[qh++];
    for (int e = f->head[u]; e >= 0; e = f->next[e])
      if (f->cap[e] > 0 && f->level[f->to[e]] < 0) {
        f->level[f->to[e]] = f->level[u] + 1;
        f->queue[qt++] = f->to[e];
      }
  }
  return f->level[t] >= 0;
}

static int64_t dfs(xsi_flow* f, int u, int t, int64_t pushed) {
  if (u == t) return pushed;
  for (; f->iter[u] >= 0; f->iter[u] = f->next[f->iter[u]]) {
    int e = f->iter[u], v = f->to[e];
    if (f->cap[e] <= 0 || f->level[v] != f->level[u] + 1) continue;
    int64_t d = dfs(f, v, t, pushed < f->cap[e] ? pushed : f->cap[e]);
    if (d > 0) {
      f->cap[e] -= d;
      f->cap[e ^ 1] += d;
      return d;
    }
  }
  return 0;
}

int64_t xsi_flow_max(xsi_flow* f, int s, int t) {
  int64_t total = 0;
  while (bfs(f, s, t)) {
    for (int i = 0; i < f->n; i++)
      f->iter[i] = f->head[i];
    int64_t d;
    while ((d = dfs(f, s, t, INT64_MAX)) > 0)
      total += d;
  }
  return total;
}

/* Build the graph for threshold T; returns the total demand. rep_edge[r] = edge index or -1. */
static int64_t build(xsi_flow* f, const xs_placement* pl, const int64_t* dem,
                     const unsigned char* allowed, const int64_t* base, int64_t T, int* rep_edge) {
  int E = pl->n_experts, G = pl->n_gpus, S = 0, Tn = E + G + 1;
  int64_t total = 0;
  xsi_flow_clear(f);
  for (int e = 0; e < E; e++)
    total += dem[e];
  for (int e = 0; e < E; e++) {
    if (dem[e] > 0) xsi_flow_add(f, S, 1 + e, dem[e]);
    for (int r = pl->rep_off[e]; r < pl->rep_off[e + 1]; r++) {
      rep_edge[r] = -1;
      if (dem[e] > 0 && (!allowed || allowed[r]))
        rep_edge[r] = xsi_flow_add(f, 1 + e, 1 + E + pl->rep_gpu[r], total);
    }
  }
  for (int g = 0; g < G; g++) {
    int64_t c = T - (base ? base[g] : 0);
    if (c > 0) xsi_flow_add(f, 1 + E + g, Tn, c);
  }
  return total;
}

int64_t xsi_minmax_units_ws(xsi_flow* f, int* rep_edge, const xs_placement* pl, const int64_t* dem,
                            const unsigned char* allowed, const int64_t* base, int64_t* units_out) {
  int E = pl->n_experts, G = pl->n_gpus, R = pl->n_replicas;
  int64_t bmax = 0, total = 0, bsum = 0;
  for (int g = 0; g < G; g++) {
    int64_t b = base ? base[g] : 0;
    bsum += b;
    if (b > bmax) bmax = b;
  }
  for (int e = 0; e < E; e++)
    total += dem[e];
  int64_t lo = (total + bsum + G - 1) / G, hi = bmax + total;
  if (lo < bmax) lo = bmax;
  /* lo may be infeasible, hi is feasible when every expert with demand has an allowed replica */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    build(f, pl, dem, allowed, base, mid, rep_edge);
    if (xsi_flow_max(f, 0, E + G + 1) == total)
      hi = mid;
    else
      lo = mid + 1;
  }
  build(f, pl, dem, allowed, base, lo, rep_edge);
  int64_t got = xsi_flow_max(f, 0, E + G + 1);
  if (got != total) return -2; /* an expert with demand has no allowed replica */
  if (units_out)
    for (int r = 0; r < R; r++)
      units_out[r] = rep_edge[r] >= 0 ? f->cap[rep_edge[r] ^ 1] : 0;
  return lo;
}

int64_t xsi_minmax_units(const xs_placement* pl, const int64_t* dem, const unsigned char* allowed,
                         const int64_t* base, int64_t* units_out) {
  xsi_flow f;
  int* rep_edge = malloc((size_t)pl->n_replicas * sizeof(int));
  if (!rep_edge || xsi_flow_init(&f, pl->n_experts + pl->n_gpus + 2,
                                 pl->n_experts + pl->n_replicas + pl->n_gpus) != XS_OK) {
    free(rep_edge);
    return -1;
  }
  int64_t t = xsi_minmax_units_ws(&f, rep_edge, pl, dem, allowed, base, units_out);
  xsi_flow_free(&f);
  free(rep_edge);
  return t;
}
