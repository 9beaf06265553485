/* placement.c — replica placement (EPLB-style replicate-and-pack), feasibility checks, the
 * makespan of given quotas and the lower bounds. */
#include "balance/balance_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

xs_result xs_placement_init(xs_placement* pl, int n_experts, int n_gpus, int n_replicas) {
  XSI_ARG(pl != NULL, "placement is NULL");
  memset(pl, 0, sizeof *pl);
  XSI_ARG(n_experts >= 1 && n_gpus >= 1 && n_replicas >= n_experts,
          "placement sizes: need n_experts >= 1, n_gpus >= 1, n_replicas >= n_experts (got %d, "
          "%d, %d)",
          n_experts, n_gpus, n_replicas);
  pl->rep_off = calloc((size_t)n_experts + 1, sizeof(int));
  pl->rep_gpu = calloc((size_t)n_replicas, sizeof(int));
  if (!pl->rep_off || !pl->rep_gpu) {
    xs_placement_release(pl);
    return xsi_set_error(XS_ERR_NO_MEMORY, "placement: out of memory");
  }
  pl->n_experts = n_experts;
  pl->n_gpus = n_gpus;
  pl->n_replicas = n_replicas;
  return XS_OK;
}

void xs_placement_release(xs_placement* pl) {
  if (!pl) return;
  free(pl->rep_off);
  free(pl->rep_gpu);
  memset(pl, 0, sizeof *pl);
}

xs_result xs_placement_validate(const xs_placement* pl) {
  XSI_ARG(pl != NULL && pl->rep_off != NULL && pl->rep_gpu != NULL, "placement is empty");
  XSI_ARG(pl->n_experts >= 1 && pl->n_gpus >= 1, "placement: n_experts and n_gpus must be >= 1");
  XSI_ARG(pl->rep_off[0] == 0, "placement: rep_off[0] must be 0");
  for (int e = 0; e < pl->n_experts; e++)
    XSI_ARG(pl->rep_off[e + 1] > pl->rep_off[e], "placement: expert %d has no replica", e);
  XSI_ARG(pl->rep_off[pl->n_experts] == pl->n_replicas,
          "placement: rep_off[n_experts] = %d but n_replicas = %d", pl->rep_off[pl->n_experts],
          pl->n_replicas);
  for (int r = 0; r < pl->n_replicas; r++)
    XSI_ARG(pl->rep_gpu[r] >= 0 && pl->rep_gpu[r] < pl->n_gpus,
            "placement: replica %d is on GPU %d, outside [0, %d)", r, pl->rep_gpu[r], pl->n_gpus);
  return XS_OK;
}

xs_result xsi_check_counts(const xs_placement* pl, const int64_t* counts) {
  XSI_ARG(counts != NULL, "counts is NULL");
  for (int e = 0; e < pl->n_experts; e++)
    XSI_ARG(counts[e] >= 0, "count of expert %d is negative (%lld)", e, (long long)counts[e]);
  return XS_OK;
}

/* ---- EPLB-style placement ---------------------------------------------------------------- */

typedef struct rep_item {
  double w;
  int e;
} rep_item;

static int cmp_rep(const void* a, const void* b) {
  const rep_item *x = a, *y = b;
  if (x->w != y->w) return x->w > y->w ? -1 : 1;
  return x->e - y->e;
}

xs_result xs_placement_eplb(xs_placement* out, const double* loads, int n_experts, int n_gpus,
                            int n_redundant) {
  XSI_ARG(out && loads, "out and loads must not be NULL");
  XSI_ARG(n_experts >= 1 && n_gpus >= 1 && n_redundant >= 0,
          "eplb: need n_experts >= 1, n_gpus >= 1, n_redundant >= 0");
  XSI_ARG((long)n_experts + n_redundant <= (long)n_experts * n_gpus,
          "eplb: %d redundant replicas exceed one replica of every expert on every GPU",
          n_redundant);
  for (int e = 0; e < n_experts; e++)
    XSI_ARG(xsi_finite(loads[e]) && loads[e] >= 0, "eplb: load of expert %d must be >= 0", e);
  int R = n_experts + n_redundant;
  xs_result res = XS_OK;
  int* nrep = malloc((size_t)n_experts * sizeof(int));
  rep_item* items = malloc((size_t)R * sizeof *items);
  double* gload = calloc((size_t)n_gpus, sizeof(double));
  int* gslots = calloc((size_t)n_gpus, sizeof(int));
  int* fill = calloc((size_t)n_experts, sizeof(int));
  memset(out, 0, sizeof *out);
  if (!nrep || !items || !gload || !gslots || !fill)
    XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "eplb: out of memory");
  for (int e = 0; e < n_experts; e++)
    nrep[e] = 1;
  for (int k = 0; k < n_redundant; k++) { /* replicate: largest load per replica first */
    int best = -1;
    for (int e = 0; e < n_experts; e++)
      if (nrep[e] < n_gpus && (best < 0 || loads[e] * nrep[best] > loads[best] * nrep[e])) best = e;
    nrep[best]++;
  }
  XSI_CHECK_GOTO(xs_placement_init(out, n_experts, n_gpus, R), res, fail);
  for (int e = 0, k = 0; e < n_experts; e++) {
    out->rep_off[e + 1] = out->rep_off[e] + nrep[e];
    for (int j = 0; j < nrep[e]; j++, k++)
      items[k] = (rep_item){loads[e] / nrep[e], e};
  }
  qsort(items, (size_t)R, sizeof *items, cmp_rep);
  int slots = (R + n_gpus - 1) / n_gpus;
  for (int k = 0; k < R; k++) { /* pack: least-loaded GPU with a free slot, no duplicate */
    int e = items[k].e, best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++)
      for (int g = 0; g < n_gpus; g++) {
        if (gslots[g] >= slots) continue;
        int dup = 0;
        for (int r = out->rep_off[e]; r < out->rep_off[e] + fill[e]; r++)
          dup |= out->rep_gpu[r] == g;
        if (dup && pass == 0) continue;
        if (best < 0 || gload[g] < gload[best]) best = g;
      }
    out->rep_gpu[out->rep_off[e] + fill[e]++] = best;
    gload[best] += items[k].w;
    gslots[best]++;
  }
fail:
  if (res != XS_OK) xs_placement_release(out);
  free(nrep);
  free(items);
  free(gload);
  free(gslots);
  free(fill);
  return res;
}

/* ---- makespan and bounds ------------------------------------------------------------------ */

xs_result xs_balance_makespan(double* out_us, double* per_gpu_us, const xs_placement* pl,
                              const xs_expert_profile* prof, const int64_t* counts,
                              const int64_t* quotas) {
  XSI_ARG(out_us && quotas, "out_us and quotas must not be NULL");
  XSI_CHECK(xs_placement_validate(pl));
  XSI_CHECK(xs_expert_profile_validate(prof));
  XSI_CHECK(xsi_check_counts(pl, counts));
  int64_t* gG = calloc((size_t)pl->n_gpus * 2, sizeof(int64_t));
  if (!gG) return xsi_set_error(XS_ERR_NO_MEMORY, "makespan: out of memory");
  int64_t* gN = gG + pl->n_gpus;
  for (int e = 0; e < pl->n_experts; e++) {
    int64_t sum = 0;
    for (int r = pl->rep_off[e]; r < pl->rep_off[e + 1]; r++) {
      if (quotas[r] < 0) {
        free(gG);
        return xsi_set_error(XS_ERR_INVALID_ARG, "quota of replica %d (expert %d) is negative", r,
                             e);
      }
      sum += quotas[r];
      if (quotas[r] > 0) {
        gG[pl->rep_gpu[r]]++;
        gN[pl->rep_gpu[r]] += xsi_round_rows(quotas[r], prof->tile_rows);
      }
    }
    if (sum != counts[e]) {
      free(gG);
      return xsi_set_error(XS_ERR_INVALID_ARG, "quotas of expert %d sum to %lld, count is %lld", e,
                           (long long)sum, (long long)counts[e]);
    }
  }
  double m = 0;
  for (int g = 0; g < pl->n_gpus; g++) {
    double t = xs_expert_time_us(prof, gG[g], gN[g]);
    if (per_gpu_us) per_gpu_us[g] = t;
    if (t > m) m = t;
  }
  free(gG);
  *out_us = m;
  return XS_OK;
}

double xsi_cheap_lower_bound(const xs_placement* pl, const xs_expert_profile* prof,
                             int64_t* scratch, const int64_t* counts) {
  int G = pl->n_gpus, tile = prof->tile_rows;
  int64_t *fG = scratch, *fN = scratch + G, *used = scratch + 2 * G;
  for (int g = 0; g < 3 * G; g++)
    scratch[g] = 0;
  int64_t act = 0, units = 0, nuse = 0;
  double lb = 0;
  for (int e = 0; e < pl->n_experts; e++) {
    int64_t c = counts[e];
    if (c <= 0) continue;
    int r0 = pl->rep_off[e], nr = pl->rep_off[e + 1] - r0, one = 1;
    act++;
    units += tile > 0 ? (c + tile - 1) / tile : c;
    for (int r = r0; r < r0 + nr; r++) {
      if (!used[pl->rep_gpu[r]]++) nuse++;
      one &= pl->rep_gpu[r] == pl->rep_gpu[r0];
    }
    int64_t share = (c + nr - 1) / nr;
    double t = xs_expert_time_us(prof, 1, xsi_round_rows(share, tile));
    if (t > lb) lb = t;
    if (one) { /* all replicas on one GPU: forced there */
      fG[pl->rep_gpu[r0]]++;
      fN[pl->rep_gpu[r0]] += xsi_round_rows(c, tile);
    }
  }
  if (act == 0) return 0.0;
  double t1 = prof->a_us + prof->b_us * (double)((act + nuse - 1) / nuse);
  double t2 =
      prof->c_us + prof->beta_us * (double)((units + nuse - 1) / nuse) * (tile > 0 ? tile : 1);
  if (t1 > lb) lb = t1;
  if (t2 > lb) lb = t2;
  for (int g = 0; g < G; g++) {
    double t = xs_expert_time_us(prof, fG[g], fN[g]);
    if (t > lb) lb = t;
  }
  return lb;
}

xs_result xs_balance_lower_bound(double* out_us, const xs_placement* pl,
                                 const xs_expert_profile* prof, const int64_t* counts) {
  XSI_ARG(out_us != NULL, "out_us is NULL");
  XSI_CHECK(xs_placement_validate(pl));
  XSI_CHECK(xs_expert_profile_validate(prof));
  XSI_CHECK(xsi_check_counts(pl, counts));
  int E = pl->n_experts, tile = prof->tile_rows;
  int64_t* buf = malloc(((size_t)E + 3 * (size_t)pl->n_gpus) * sizeof(int64_t));
  if (!buf) return xsi_set_error(XS_ERR_NO_MEMORY, "lower bound: out of memory");
  double lb = xsi_cheap_lower_bound(pl, prof, buf + E, counts);
  int any = 0;
  for (int e = 0; e < E; e++) {
    buf[e] = tile > 0 ? (counts[e] + tile - 1) / tile : counts[e];
    any |= counts[e] > 0;
  }
  int64_t u = any ? xsi_minmax_units(pl, buf, NULL, NULL, NULL) : 0;
  for (int e = 0; e < E; e++)
    buf[e] = counts[e] > 0;
  int64_t k = any ? xsi_minmax_units(pl, buf, NULL, NULL, NULL) : 0;
  free(buf);
  if (u < 0 || k < 0) return xsi_set_error(XS_ERR_NO_MEMORY, "lower bound: max-flow failed");
  if (any) {
    double t1 = prof->c_us + prof->beta_us * (double)u * (tile > 0 ? tile : 1);
    double t2 = prof->a_us + prof->b_us * (double)k;
    if (t1 > lb) lb = t1;
    if (t2 > lb) lb = t2;
  }
  *out_us = lb;
  return XS_OK;
}
