/* study.c — scenario comparisons (TEMPO against every baseline on a generated trace) and the
 * one-line summary used by the main job's report. */
#include "balance/balance_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

xs_result xs_balance_scenario_default(xs_balance_scenario* out) {
  XSI_ARG(out != NULL, "out is NULL");
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  XSI_CHECK(xs_expert_profile_default(&out->profile, "qwen3-235b"));
  out->n_gpus = 8;
  out->n_redundant = 16;
  out->trace = (xs_routing_config)XS_ROUTING_CONFIG_INITIALIZER;
  out->trace.n_experts = 128;
  out->trace.top_k = 8;
  out->trace.n_tokens = 192;
  out->trace.n_steps = 16;
  out->trace.skew = 1.0;
  out->trace.drift = 0.05;
  out->trace.seed = 1;
  return XS_OK;
}

xs_result xs_balance_compare(xs_balance_cell* out, const xs_balance_scenario* sc) {
  XSI_ARG(out && sc, "out and sc must not be NULL");
  XSI_ARG(sc->size == sizeof *sc, "scenario: size field not set");
  XSI_ARG(sc->n_gpus >= 1 && sc->n_redundant >= 0, "scenario: need n_gpus >= 1, n_redundant >= 0");
  memset(out, 0, sizeof *out);
  xs_result res = XS_OK;
  xs_routing_trace tr = {0};
  xs_placement pl = {0};
  xs_balance_solver* s = NULL;
  double* loads = NULL;
  int64_t *q = NULL, *scratch = NULL;
  XSI_CHECK_GOTO(xs_routing_generate(&tr, &sc->trace), res, fail);
  int E = tr.n_experts;
  loads = calloc((size_t)E, sizeof(double));
  scratch = malloc((size_t)sc->n_gpus * 3 * sizeof(int64_t));
  if (!loads || !scratch) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "compare: out of memory");
  for (int st = 0; st < tr.n_steps; st++)
    for (int e = 0; e < E; e++)
      loads[e] += (double)tr.counts[(size_t)st * E + e] / tr.n_steps;
  XSI_CHECK_GOTO(xs_placement_eplb(&pl, loads, E, sc->n_gpus, sc->n_redundant), res, fail);
  q = malloc((size_t)pl.n_replicas * sizeof(int64_t));
  if (!q) XSI_FAIL(res, XS_ERR_NO_MEMORY, fail, "compare: out of memory");
  XSI_CHECK_GOTO(xs_balance_solver_create(&s, &pl, &sc->profile, NULL), res, fail);
  for (int st = 0; st < tr.n_steps; st++) {
    const int64_t* c = tr.counts + (size_t)st * E;
    for (int m = 0; m < XS_BAL_COUNT; m++) {
      if (m == XS_BAL_EXACT) continue;
      double ms;
      if (m == XS_BAL_TEMPO)
        XSI_CHECK_GOTO(xs_balance_solve(s, q, NULL, c), res, fail);
      else
        XSI_CHECK_GOTO(
            xs_balance_baseline(q, (xs_balance_method)m, &pl, &sc->profile, c, (uint64_t)st + 1),
            res, fail);
      XSI_CHECK_GOTO(xs_balance_makespan(&ms, NULL, &pl, &sc->profile, c, q), res, fail);
      out->makespan_us[m] += ms / tr.n_steps;
    }
    out->lower_bound_us += xsi_cheap_lower_bound(&pl, &sc->profile, scratch, c) / tr.n_steps;
  }
  out->steps = tr.n_steps;
fail:
  xs_balance_solver_destroy(s);
  xs_placement_release(&pl);
  xs_routing_release(&tr);
  free(loads);
  free(scratch);
  free(q);
  return res;
}

xs_result xs_balance_summary(xs_balance_summary_t* out) {
  XSI_ARG(out != NULL, "out is NULL");
  memset(out, 0, sizeof *out);
  xs_balance_scenario sc;
  xs_balance_cell cell;
  XSI_CHECK(xs_balance_scenario_default(&sc));
  XSI_CHECK(xs_balance_compare(&cell, &sc));
  out->tempo_us = cell.makespan_us[XS_BAL_TEMPO];
  out->token_us = cell.makespan_us[XS_BAL_TOKEN_MINMAX];
  out->best_baseline_us = 0;
  for (int m = XS_BAL_NO_REPLICATION; m < XS_BAL_EXACT; m++)
    if (out->best_baseline_us == 0 || cell.makespan_us[m] < out->best_baseline_us)
      out->best_baseline_us = cell.makespan_us[m];
  snprintf(out->line, sizeof out->line,
           "TEMPO %.1f us vs token balancing %.1f us (%+.1f%%), best baseline %.1f us; %s (%s), "
           "%d GPUs, %d tokens x top-%d",
           out->tempo_us, out->token_us, 100.0 * (out->tempo_us / out->token_us - 1),
           out->best_baseline_us, sc.profile.name,
           sc.profile.calibrated ? "calibrated" : "estimate", sc.n_gpus, sc.trace.n_tokens,
           sc.trace.top_k);
  xsi_clear_error();
  return XS_OK;
}
