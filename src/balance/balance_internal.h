/* balance_internal.h — helpers shared by the TEMPO sources (not installed). */
#ifndef XSTAGE_BALANCE_INTERNAL_H
#define XSTAGE_BALANCE_INTERNAL_H

#include "core/internal.h"
#include "xstage/balance.h"

#include <stdint.h>

/* Rows of a replica with quota q after tile rounding. */
static inline int64_t xsi_round_rows(int64_t q, int tile) {
  return tile > 0 ? (q + tile - 1) / tile * tile : q;
}

/* ---- max-flow (Dinic) on a small graph; capacities are int64 --------------------------- */
typedef struct xsi_flow {
  int n, m, cap_m; /* nodes, edges used, edges allocated (each edge has its reverse) */
  int* head;       /* n: first edge of each node, -1 = none */
  int* next;       /* cap_m */
  int* to;         /* cap_m */
  int64_t* cap;    /* cap_m residual capacity */
  int* level;      /* n */
  int* iter;       /* n */
  int* queue;      /* n */
} xsi_flow;

xs_result xsi_flow_init(xsi_flow* f, int n, int max_edges);
void xsi_flow_free(xsi_flow* f);
void xsi_flow_clear(xsi_flow* f); /* remove all edges */
/* Add edge u->v with capacity c; returns its index (the reverse edge is index ^ 1). */
int xsi_flow_add(xsi_flow* f, int u, int v, int64_t c);
int64_t xsi_flow_max(xsi_flow* f, int s, int t);

/* Min over assignments of the max per-GPU load, where expert e must place dem[e] units on the
 * GPUs of its allowed replicas (allowed[r] != 0; NULL = all), plus a fixed base load per GPU
 * (base NULL = 0). Writes units per replica into units_out (NULL ok; includes no base).
 * Returns the min-max load (including base), or -1 on allocation failure. */
int64_t xsi_minmax_units(const xs_placement* pl, const int64_t* dem, const unsigned char* allowed,
                         const int64_t* base, int64_t* units_out);

/* The same with a caller's flow (E + G + 2 nodes, E + R + G edges) and rep_edge[R]: no
 * allocation. Returns -2 when some expert with demand has no allowed replica. */
int64_t xsi_minmax_units_ws(xsi_flow* f, int* rep_edge, const xs_placement* pl, const int64_t* dem,
                            const unsigned char* allowed, const int64_t* base, int64_t* units_out);

/* Cheap valid lower bound on the optimal makespan. */
double xsi_cheap_lower_bound(const xs_placement* pl, const xs_expert_profile* prof,
                             int64_t* scratch /* 3 * n_gpus */, const int64_t* counts);

/* Check counts (>= 0) against the placement; the detail names the expert. */
xs_result xsi_check_counts(const xs_placement* pl, const int64_t* counts);

#endif
