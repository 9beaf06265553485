/* baselines.c — the dispatch baselines TEMPO is compared against, on the same inputs. */
#include "balance/balance_internal.h"

#include <stdlib.h>
#include <string.h>

const char* xs_balance_method_name(xs_balance_method m) {
  switch (m) {
  case XS_BAL_TEMPO:
    return "tempo";
  case XS_BAL_NO_REPLICATION:
    return "no-replication";
  case XS_BAL_STATIC:
    return "static";
  case XS_BAL_RANDOM:
    return "random";
  case XS_BAL_MODULO:
    return "modulo";
  case XS_BAL_TOKEN_MINMAX:
    return "token-minmax";
  case XS_BAL_ACTIVE_MINMAX:
    return "active-minmax(proxy)";
  case XS_BAL_EXACT:
    return "exact";
  case XS_BAL_COUNT:
    break;
  }
  return "unknown";
}

static uint64_t splitmix(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static xs_result flow_baseline(int64_t* quotas, int active, const xs_placement* pl,
                               const int64_t* counts) {
  int E = pl->n_experts, any = 0;
  int64_t* dem = malloc((size_t)E * sizeof(int64_t));
  if (!dem) return xsi_set_error(XS_ERR_NO_MEMORY, "baseline: out of memory");
  for (int e = 0; e < E; e++) {
    dem[e] = active ? (counts[e] > 0) : counts[e];
    any |= counts[e] > 0;
  }
  int64_t t = any ? xsi_minmax_units(pl, dem, NULL, NULL, quotas) : 0;
  free(dem);
  if (t < 0) return xsi_set_error(XS_ERR_NO_MEMORY, "baseline: max-flow failed");
  if (active)
    for (int e = 0; e < E; e++)
      for (int r = pl->rep_off[e]; r < pl->rep_off[e + 1]; r++)
        quotas[r] = any && quotas[r] > 0 ? counts[e] : 0;
  return XS_OK;
}

xs_result xs_balance_baseline(int64_t* quotas, xs_balance_method m, const xs_placement* pl,
                              const xs_expert_profile* prof, const int64_t* counts, uint64_t seed) {
  XSI_ARG(quotas != NULL, "quotas is NULL");
  XSI_CHECK(xs_placement_validate(pl));
  XSI_CHECK(xs_expert_profile_validate(prof));
  XSI_CHECK(xsi_check_counts(pl, counts));
  memset(quotas, 0, (size_t)pl->n_replicas * sizeof(int64_t));
  uint64_t rng = seed;
  switch (m) {
  case XS_BAL_TEMPO: {
    xs_balance_solver* s = NULL;
    XSI_CHECK(xs_balance_solver_create(&s, pl, prof, NULL));
    xs_result res = xs_balance_solve(s, quotas, NULL, counts);
    xs_balance_solver_destroy(s);
    return res;
  }
  case XS_BAL_EXACT: {
    int proven;
    double ms;
    return xs_balance_exact(quotas, &ms, &proven, pl, prof, counts, 2000000);
  }
  case XS_BAL_TOKEN_MINMAX:
    return flow_baseline(quotas, 0, pl, counts);
  case XS_BAL_ACTIVE_MINMAX:
    return flow_baseline(quotas, 1, pl, counts);
  case XS_BAL_NO_REPLICATION:
  case XS_BAL_STATIC:
  case XS_BAL_RANDOM:
  case XS_BAL_MODULO:
    for (int e = 0; e < pl->n_experts; e++) {
      int r0 = pl->rep_off[e], nr = pl->rep_off[e + 1] - r0;
      int64_t c = counts[e];
      if (m == XS_BAL_NO_REPLICATION) {
        quotas[r0] = c;
      } else if (m == XS_BAL_MODULO) {
        for (int j = 0; j < nr; j++)
          quotas[r0 + j] = c / nr + (j < c % nr);
      } else if (m == XS_BAL_STATIC) {
        int S = pl->n_gpus; /* source ranks; rank s holds ordinals [c*s/S, c*(s+1)/S) */
        for (int src = 0; src < S; src++)
          quotas[r0 + src % nr] += c * (src + 1) / S - c * src / S;
      } else {
        for (int64_t k = 0; k < c; k++)
          quotas[r0 + (int)(splitmix(&rng) % (uint64_t)nr)]++;
      }
    }
    return XS_OK;
  case XS_BAL_COUNT:
    break;
  }
  return xsi_set_error(XS_ERR_INVALID_ARG, "unknown balance method %d", (int)m);
}
