/* test_balance.c — TEMPO solver: feasibility, bounds, determinism, errors, instances and the
 * token -> replica assignment, checked against independent recomputations. */
#include "test.h"
#include "xstage/xstage.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Independent makespan: recomputed here from the definition, not with xs_balance_makespan. */
static double ref_makespan(const xs_placement* pl, const xs_expert_profile* p, const int64_t* q) {
  double m = 0;
  for (int g = 0; g < pl->n_gpus; g++) {
    long long G = 0, N = 0;
    for (int r = 0; r < pl->n_replicas; r++)
      if (pl->rep_gpu[r] == g && q[r] > 0) {
        G++;
        N += p->tile_rows ? (q[r] + p->tile_rows - 1) / p->tile_rows * p->tile_rows : q[r];
      }
    if (!G) continue;
    double t = p->a_us + p->b_us * G, k = p->c_us + p->beta_us * N;
    if (k > t) t = k;
    if (t > m) m = t;
  }
  return m;
}

static void make_case(xs_placement* pl, xs_routing_trace* tr, int E, int G, int red, int tokens,
                      double skew, uint64_t seed) {
  xs_routing_config c = XS_ROUTING_CONFIG_INITIALIZER;
  c.n_experts = E, c.n_steps = 12, c.n_tokens = tokens, c.skew = skew, c.seed = seed;
  XT_CHECK(xs_routing_generate(tr, &c) == XS_OK);
  double* loads = calloc((size_t)E, sizeof(double));
  for (int s = 0; s < tr->n_steps; s++)
    for (int e = 0; e < E; e++)
      loads[e] += (double)tr->counts[s * E + e];
  XT_CHECK(xs_placement_eplb(pl, loads, E, G, red) == XS_OK);
  free(loads);
}

static void test_feasible_and_bounded(void) {
  const int cases[][5] = {{256, 64, 32, 64, 10},  {256, 64, 32, 4096, 12}, {128, 8, 16, 32, 8},
                          {128, 8, 16, 1024, 14}, {64, 4, 8, 8192, 6},     {16, 2, 0, 100, 10}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    xs_placement pl;
    xs_routing_trace tr;
    make_case(&pl, &tr, cases[k][0], cases[k][1], cases[k][2], cases[k][3], cases[k][4] / 10.0,
              k + 1);
    xs_expert_profile p;
    XT_CHECK(xs_expert_profile_default(&p, k & 1 ? "qwen3-235b" : "deepseek-v3") == XS_OK);
    if (k == 2) p.tile_rows = 0;
    xs_balance_solver* s = NULL;
    /* NOTE: a budget far above the solve time: on this shared machine a preempted solve could
     * hit the default budget, and only then may two solves differ. */
    xs_solve_options opt = XS_SOLVE_OPTIONS_INITIALIZER;
    opt.time_budget_us = 1e7;
    XT_CHECK(xs_balance_solver_create(&s, &pl, &p, &opt) == XS_OK);
    int64_t* q = malloc((size_t)pl.n_replicas * sizeof(int64_t));
    int64_t* q2 = malloc((size_t)pl.n_replicas * sizeof(int64_t));
    for (int st = 0; st < tr.n_steps; st++) {
      const int64_t* c = tr.counts + (size_t)st * pl.n_experts;
      for (int r = 0; r < pl.n_replicas; r++)
        q[r] = -1; /* poison */
      xs_solve_stats ss;
      XT_CHECK(xs_balance_solve(s, q, &ss, c) == XS_OK);
      for (int e = 0; e < pl.n_experts; e++) {
        int64_t sum = 0;
        for (int r = pl.rep_off[e]; r < pl.rep_off[e + 1]; r++) {
          XT_CHECK(q[r] >= 0);
          sum += q[r];
        }
        XT_EQ_INT(sum, c[e]);
      }
      double ref = ref_makespan(&pl, &p, q), lb;
      XT_NEAR(ss.makespan_us, ref, 1e-12);
      XT_CHECK(xs_balance_lower_bound(&lb, &pl, &p, c) == XS_OK);
      XT_CHECK(ss.lower_bound_us <= lb * (1 + 1e-12));
      XT_CHECK_MSG(ref >= lb * (1 - 1e-12), "makespan %g below lower bound %g", ref, lb);
      XT_CHECK(ss.makespan_us <= ss.start_us * (1 + 1e-12));
      XT_EQ_INT(ss.budget_hit, 0);
      for (int m = XS_BAL_NO_REPLICATION; m <= XS_BAL_MODULO; m++) {
        XT_CHECK(xs_balance_baseline(q2, (xs_balance_method)m, &pl, &p, c, 3) == XS_OK);
        XT_CHECK(ref <= ref_makespan(&pl, &p, q2) * (1 + 1e-12) || m == XS_BAL_STATIC ||
                 m == XS_BAL_RANDOM);
      }
      /* deterministic: the same inputs give the same quotas */
      XT_CHECK(xs_balance_solve(s, q2, NULL, c) == XS_OK);
      XT_CHECK_MSG(memcmp(q, q2, (size_t)pl.n_replicas * sizeof(int64_t)) == 0, "case %zu step %d",
                   k, st);
    }
    free(q);
    free(q2);
    xs_balance_solver_destroy(s);
    xs_placement_release(&pl);
    xs_routing_release(&tr);
  }
}

static void test_baselines_feasible(void) {
  xs_placement pl;
  xs_routing_trace tr;
  make_case(&pl, &tr, 64, 8, 8, 512, 1.2, 9);
  xs_expert_profile p;
  xs_expert_profile_default(&p, "qwen3-235b");
  int64_t* q = malloc((size_t)pl.n_replicas * sizeof(int64_t));
  const int64_t* c = tr.counts;
  double tok_max = 0;
  for (int m = XS_BAL_NO_REPLICATION; m < XS_BAL_EXACT; m++) {
    for (int r = 0; r < pl.n_replicas; r++)
      q[r] = -3;
    XT_CHECK(xs_balance_baseline(q, (xs_balance_method)m, &pl, &p, c, 5) == XS_OK);
    double ms;
    XT_CHECK(xs_balance_makespan(&ms, NULL, &pl, &p, c, q) == XS_OK);
    long long gmax = 0, tmax = 0, gcount[8] = {0}, tcount[8] = {0};
    for (int r = 0; r < pl.n_replicas; r++) {
      tcount[pl.rep_gpu[r]] += q[r];
      gcount[pl.rep_gpu[r]] += q[r] > 0;
    }
    for (int g = 0; g < 8; g++) {
      if (tcount[g] > tmax) tmax = tcount[g];
      if (gcount[g] > gmax) gmax = gcount[g];
    }
    if (m == XS_BAL_TOKEN_MINMAX) tok_max = (double)tmax;
    if (m == XS_BAL_NO_REPLICATION)
      for (int e = 0; e < pl.n_experts; e++)
        XT_EQ_INT(q[pl.rep_off[e]], c[e]);
  }
  /* token min-max is a true min: no baseline has a smaller max token count */
  for (int m = XS_BAL_NO_REPLICATION; m < XS_BAL_EXACT; m++) {
    XT_CHECK(xs_balance_baseline(q, (xs_balance_method)m, &pl, &p, c, 5) == XS_OK);
    long long tcount[8] = {0}, tmax = 0;
    for (int r = 0; r < pl.n_replicas; r++)
      tcount[pl.rep_gpu[r]] += q[r];
    for (int g = 0; g < 8; g++)
      tmax = tcount[g] > tmax ? tcount[g] : tmax;
    XT_CHECK((double)tmax >= tok_max);
  }
  free(q);
  xs_placement_release(&pl);
  xs_routing_release(&tr);
}

static void test_errors(void) {
  xs_placement pl;
  XT_CHECK(xs_placement_init(&pl, 2, 2, 2) == XS_OK);
  pl.rep_off[1] = 1, pl.rep_off[2] = 2, pl.rep_gpu[0] = 0, pl.rep_gpu[1] = 1;
  xs_expert_profile p = XS_EXPERT_PROFILE_INITIALIZER;
  xs_balance_solver* s = NULL;
  XT_CHECK(xs_balance_solver_create(&s, &pl, &p, NULL) == XS_OK);
  int64_t bad[2] = {5, -1}, q[2];
  XT_CHECK(xs_balance_solve(s, q, NULL, bad) == XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "expert 1") != NULL);
  xs_balance_solver_destroy(s);
  XT_CHECK(xs_balance_solver_destroy(NULL) == XS_OK);
  pl.rep_off[1] = 0; /* expert 0 has no replica */
  XT_CHECK(xs_balance_solver_create(&s, &pl, &p, NULL) == XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "expert 0 has no replica") != NULL);
  pl.rep_off[1] = 1, pl.rep_gpu[1] = 2; /* GPU out of range */
  XT_CHECK(xs_placement_validate(&pl) == XS_ERR_INVALID_ARG);
  pl.rep_gpu[1] = 1;
  p.beta_us = -1;
  XT_CHECK(xs_balance_solver_create(&s, &pl, &p, NULL) == XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "beta_us") != NULL);
  int64_t counts[2] = {3, 4}, wrong[2] = {3, 3};
  p.beta_us = 0.1;
  double ms;
  XT_CHECK(xs_balance_makespan(&ms, NULL, &pl, &p, counts, wrong) == XS_ERR_INVALID_ARG);
  xs_placement_release(&pl);
  xs_placement_release(NULL);
}

static void test_instance_json(void) {
  const char* good = "{\"n_gpus\": 2, \"profile\": {\"a_us\": 4, \"b_us\": 9.4, \"c_us\": 4,"
                     " \"beta_us\": 0.058, \"tile_rows\": 128},\n"
                     " \"placement\": [[0, 1], [1], [0]],\n \"counts\": [300, 20, 0]}";
  xs_balance_instance in;
  XT_CHECK(xs_balance_instance_from_json(&in, good, strlen(good), "good.json") == XS_OK);
  XT_EQ_INT(in.placement.n_experts, 3);
  XT_EQ_INT(in.placement.n_replicas, 4);
  XT_EQ_INT(in.placement.rep_gpu[2], 1);
  XT_EQ_INT(in.counts[0], 300);
  XT_EQ_INT(in.profile.tile_rows, 128);
  XT_NEAR(in.profile.b_us, 9.4, 1e-15);
  xs_balance_instance_release(&in);
  xs_balance_instance_release(NULL);
  const struct {
    const char* text;
    const char* needle;
  } bad[] = {
      {"{\"n_gpus\": 2, \"placement\": [[0], [1]], \"counts\": [3, -2]}", "counts[1]"},
      {"{\"n_gpus\": 2, \"placement\": [[0], []], \"counts\": [3, 2]}", "expert 1 has no replica"},
      {"{\"n_gpus\": 2, \"placement\": [[0], [1]], \"counts\": [3]}", "inconsistent sizes"},
      {"{\"n_gpus\": 2, \"placement\": [[0], [2]], \"counts\": [3, 1]}", "placement[1][0]"},
      {"{\"n_gpus\": 2, \"placement\": [[0], [1]], \"counts\": [3, 1.5]}", "integer"},
      {"{\"n_gpus\": 2, \"placement\": [[0], [1]] \"counts\": [3, 1]}", "bad.json"},
      {"{\"placement\": [[0]], \"counts\": [3]}", "n_gpus"},
      {"{\"n_gpus\": 1, \"profile\": \"nope\", \"placement\": [[0]], \"counts\": [3]}", "nope"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    xs_result r = xs_balance_instance_from_json(&in, bad[i].text, strlen(bad[i].text), "bad.json");
    XT_CHECK_MSG(r == XS_ERR_PARSE, "case %zu gave %d", i, (int)r);
    XT_CHECK_MSG(strstr(xs_last_error(), bad[i].needle) != NULL, "case %zu: '%s' lacks '%s'", i,
                 xs_last_error(), bad[i].needle);
  }
  XT_CHECK(xs_balance_instance_read(&in, "/nonexistent/instance.json") == XS_ERR_IO);
  /* the documented example (docs/tempo.md) */
  XT_CHECK(xs_balance_instance_read(&in, "data/tempo_instance_example.json") == XS_OK);
  XT_EQ_INT(in.placement.n_experts, 12);
  XT_EQ_INT(in.placement.n_gpus, 4);
  int64_t q[32];
  double mt, me, lb;
  int proven;
  XT_CHECK(xs_balance_baseline(q, XS_BAL_TEMPO, &in.placement, &in.profile, in.counts, 0) == XS_OK);
  XT_CHECK(xs_balance_makespan(&mt, NULL, &in.placement, &in.profile, in.counts, q) == XS_OK);
  XT_CHECK(xs_balance_exact(NULL, &me, &proven, &in.placement, &in.profile, in.counts, 100000) ==
           XS_OK);
  XT_CHECK(xs_balance_lower_bound(&lb, &in.placement, &in.profile, in.counts) == XS_OK);
  XT_CHECK(proven && mt >= me * (1 - 1e-12) && me >= lb * (1 - 1e-12));
  xs_balance_instance_release(&in);
}

static void test_assign(void) {
  xs_placement pl;
  xs_routing_trace tr;
  make_case(&pl, &tr, 32, 4, 8, 300, 1.0, 4);
  xs_expert_profile p;
  xs_expert_profile_default(&p, "qwen3-235b");
  enum { T = 300, K = 8 };
  static int32_t topk[T * K], rep[T * K], gpu[T * K], rep2[T * K], cnt[32];
  unsigned long long rs = 77;
  for (int t = 0; t < T; t++) /* distinct experts per token, skewed */
    for (int k = 0; k < K; k++) {
      int e, dup;
      do {
        double u = xt_rand_uniform(&rs);
        e = (int)(u * u * 32);
        dup = 0;
        for (int j = 0; j < k; j++)
          dup |= topk[t * K + j] == e;
      } while (dup);
      topk[t * K + k] = e;
    }
  int64_t counts[32] = {0};
  for (int i = 0; i < T * K; i++)
    counts[topk[i]]++;
  int64_t* q = malloc((size_t)pl.n_replicas * sizeof(int64_t));
  XT_CHECK(xs_balance_baseline(q, XS_BAL_TEMPO, &pl, &p, counts, 0) == XS_OK);
  XT_CHECK(xs_balance_assign(rep, gpu, cnt, topk, T, K, &pl, q, NULL, NULL) == XS_OK);
  /* independent check: slots of expert e in order fill its replicas' quotas in order */
  int64_t* got = calloc((size_t)pl.n_replicas, sizeof(int64_t));
  for (int e = 0; e < 32; e++) {
    XT_EQ_INT(cnt[e], counts[e]);
    int r = pl.rep_off[e];
    int64_t used = 0;
    for (int i = 0; i < T * K; i++) {
      if (topk[i] != e) continue;
      while (used == q[r])
        r++, used = 0;
      used++;
      XT_EQ_INT(rep[i], r);
      XT_EQ_INT(gpu[i], pl.rep_gpu[r]);
      got[rep[i]]++;
    }
  }
  for (int r = 0; r < pl.n_replicas; r++)
    XT_EQ_INT(got[r], q[r]);
  /* two ranks with ordinal bases compute the same mapping as one */
  int64_t base[32] = {0};
  for (int i = 0; i < T * K / 2; i++)
    base[topk[i]]++;
  XT_CHECK(xs_balance_assign(rep2, NULL, NULL, topk, T / 2, K, &pl, q, NULL, counts) == XS_OK);
  XT_CHECK(xs_balance_assign(rep2 + T * K / 2, NULL, NULL, topk + T * K / 2, T / 2, K, &pl, q, base,
                             counts) == XS_OK);
  XT_CHECK(memcmp(rep, rep2, sizeof rep) == 0);
  topk[5] = 32;
  XT_CHECK(xs_balance_assign(rep, NULL, NULL, topk, T, K, &pl, q, NULL, NULL) ==
           XS_ERR_INVALID_ARG);
  XT_CHECK(strstr(xs_last_error(), "slot 5") != NULL);
  free(got);
  free(q);
  xs_placement_release(&pl);
  xs_routing_release(&tr);
}

static void test_zero_and_summary(void) {
  xs_placement pl;
  XT_CHECK(xs_placement_init(&pl, 2, 2, 2) == XS_OK);
  pl.rep_off[1] = 1, pl.rep_off[2] = 2, pl.rep_gpu[1] = 1;
  xs_expert_profile p = XS_EXPERT_PROFILE_INITIALIZER;
  int64_t z[2] = {0, 0}, q[2] = {9, 9};
  xs_solve_stats ss;
  xs_balance_solver* s = NULL;
  XT_CHECK(xs_balance_solver_create(&s, &pl, &p, NULL) == XS_OK);
  XT_CHECK(xs_balance_solve(s, q, &ss, z) == XS_OK);
  XT_EQ_INT(q[0], 0);
  XT_EQ_INT(q[1], 0);
  XT_NEAR(ss.makespan_us, 0.0, 0);
  xs_balance_solver_destroy(s);
  xs_placement_release(&pl);
  xs_balance_summary_t sum;
  XT_CHECK(xs_balance_summary(&sum) == XS_OK);
  XT_CHECK(sum.tempo_us > 0 && sum.tempo_us <= sum.token_us * (1 + 1e-12));
  XT_CHECK(sum.tempo_us <= sum.best_baseline_us * (1 + 1e-12));
  XT_CHECK(strstr(sum.line, "TEMPO") != NULL);
}

int main(void) {
  XT_RUN(test_feasible_and_bounded);
  XT_RUN(test_baselines_feasible);
  XT_RUN(test_errors);
  XT_RUN(test_instance_json);
  XT_RUN(test_assign);
  XT_RUN(test_zero_and_summary);
  return XT_END();
}
