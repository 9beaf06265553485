/* test_balance_exact.c — TEMPO against the exact branch and bound and every baseline on a
 * corpus of small instances (<= 16 experts, <= 4 GPUs). */
#include "test_tempo_corpus.h"

#include <stdlib.h>

static void test_exact_is_optimal_on_tiny(void) {
  /* 2 GPUs, 3 experts fully replicated, no tiles: enumerate every integer split by brute force */
  xs_placement pl;
  XT_CHECK(xs_placement_init(&pl, 3, 2, 6) == XS_OK);
  for (int e = 0; e < 3; e++) {
    pl.rep_off[e + 1] = 2 * (e + 1);
    pl.rep_gpu[2 * e] = 0;
    pl.rep_gpu[2 * e + 1] = 1;
  }
  xs_expert_profile p = XS_EXPERT_PROFILE_INITIALIZER;
  p.a_us = 3, p.b_us = 10, p.c_us = 2, p.beta_us = 0.1, p.tile_rows = 0;
  int64_t counts[3] = {37, 250, 90}, q[6];
  double best = 1e300;
  for (int x = 0; x <= 37; x++)
    for (int y = 0; y <= 250; y++)
      for (int z = 0; z <= 90; z++) {
        int64_t qq[6] = {x, 37 - x, y, 250 - y, z, 90 - z};
        double m;
        xs_balance_makespan(&m, NULL, &pl, &p, counts, qq);
        if (m < best) best = m;
      }
  double ms;
  int proven;
  XT_CHECK(xs_balance_exact(q, &ms, &proven, &pl, &p, counts, 1000000) == XS_OK);
  XT_CHECK(proven == 1);
  XT_NEAR(ms, best, 1e-12);
  double check;
  XT_CHECK(xs_balance_makespan(&check, NULL, &pl, &p, counts, q) == XS_OK);
  XT_NEAR(check, ms, 1e-12);
  xs_placement_release(&pl);
}

/* Exhaustive enumeration of every quota vector (recursive over replicas). */
static void brute(const xs_placement* pl, const xs_expert_profile* p, const int64_t* counts,
                  int64_t* q, int r, int64_t left, double* best) {
  int e = 0;
  while (pl->rep_off[e + 1] <= r)
    e++;
  int last = r == pl->rep_off[e + 1] - 1;
  for (int64_t x = last ? left : 0; x <= left; x++) {
    q[r] = x;
    if (r + 1 == pl->n_replicas) {
      double m;
      xs_balance_makespan(&m, NULL, pl, p, counts, q);
      if (m < *best) *best = m;
    } else {
      int next_e = pl->rep_off[e + 1] == r + 1;
      brute(pl, p, counts, q, r + 1, next_e ? counts[e + 1] : left - x, best);
    }
  }
}

static void test_exact_matches_enumeration(void) {
  int n = 0;
  for (int i = 0; i < 150; i++) {
    unsigned long long s = 1234 + 17 * (unsigned long long)i;
    int E = 1 + (int)(xt_rand_u64(&s) % 3), G = 2 + (int)(xt_rand_u64(&s) % 2), R = 0;
    xs_placement pl;
    int nrep[3];
    for (int e = 0; e < E; e++)
      R += nrep[e] = 1 + (int)(xt_rand_u64(&s) % (unsigned)G);
    xs_placement_init(&pl, E, G, R);
    for (int e = 0, r = 0; e < E; e++) {
      int g0 = (int)(xt_rand_u64(&s) % (unsigned)G);
      for (int j = 0; j < nrep[e]; j++)
        pl.rep_gpu[r++] = (g0 + j) % G;
      pl.rep_off[e + 1] = r;
    }
    int64_t counts[3], q[9], qe[9];
    for (int e = 0; e < E; e++)
      counts[e] = (int64_t)(xt_rand_u64(&s) % 11);
    xs_expert_profile p = XS_EXPERT_PROFILE_INITIALIZER;
    p.a_us = 1 + 3 * xt_rand_uniform(&s), p.b_us = 2 + 6 * xt_rand_uniform(&s);
    p.c_us = 3 * xt_rand_uniform(&s), p.beta_us = 0.3 + 1.5 * xt_rand_uniform(&s);
    p.tile_rows = (int)(xt_rand_u64(&s) % 3) * 2; /* 0, 2 or 4-row tiles */
    double best = 1e300, me, mt;
    int proven;
    brute(&pl, &p, counts, q, 0, counts[0], &best);
    XT_CHECK(xs_balance_exact(qe, &me, &proven, &pl, &p, counts, 1000000) == XS_OK);
    XT_CHECK(proven);
    XT_NEAR(me, best, 1e-12);
    XT_CHECK(xs_balance_baseline(q, XS_BAL_TEMPO, &pl, &p, counts, 0) == XS_OK);
    XT_CHECK(xs_balance_makespan(&mt, NULL, &pl, &p, counts, q) == XS_OK);
    XT_CHECK(mt >= best * (1 - 1e-12));
    n += mt <= best * (1 + 1e-12);
    xs_placement_release(&pl);
  }
  printf("  enumeration: TEMPO optimal on %d of 150 tiny instances\n", n);
}

static void test_corpus_vs_exact_and_baselines(void) {
  /* NOTE: 400 instances by default (about 10 s); XS_TEMPO_CORPUS=N for the recorded runs */
  const char* env = getenv("XS_TEMPO_CORPUS");
  const int CORPUS = env && atoi(env) > 0 ? atoi(env) : 400;
  int within = 0, proven_n = 0, worse_than_baseline = 0, below_lb = 0;
  double worst_gap = 0;
  int optimal = 0;
  for (int i = 0; i < CORPUS; i++) {
    xs_placement pl;
    xs_expert_profile p;
    int64_t counts[16], q[64], qe[64];
    tempo_corpus_instance(&pl, &p, counts, i);
    xs_balance_solver* s = NULL;
    xs_solve_stats st;
    xs_solve_options opt = XS_SOLVE_OPTIONS_INITIALIZER;
    opt.time_budget_us = 1e6; /* NOTE: deterministic on a loaded machine (see test_balance.c) */
    XT_CHECK(xs_balance_solver_create(&s, &pl, &p, &opt) == XS_OK);
    for (int r = 0; r < pl.n_replicas; r++)
      q[r] = -7; /* poison */
    XT_CHECK(xs_balance_solve(s, q, &st, counts) == XS_OK);
    double mt, me, lb;
    int proven;
    XT_CHECK(xs_balance_makespan(&mt, NULL, &pl, &p, counts, q) == XS_OK); /* feasible */
    XT_NEAR(mt, st.makespan_us, 1e-12);
    XT_CHECK(xs_balance_exact(qe, &me, &proven, &pl, &p, counts, 2000000) == XS_OK);
    XT_CHECK(xs_balance_lower_bound(&lb, &pl, &p, counts) == XS_OK);
    if (mt < lb * (1 - 1e-12) || me < lb * (1 - 1e-12)) below_lb++;
    XT_CHECK(me <= mt * (1 + 1e-12));
    if (proven) {
      proven_n++;
      double gap = me > 0 ? mt / me - 1 : (mt > 0 ? 1.0 : 0.0); /* all-zero batches: 0 / 0 */
      if (gap <= 0.01) within++;
      if (gap <= 1e-9) optimal++;
      if (gap > worst_gap) worst_gap = gap;
    }
    for (int m = XS_BAL_NO_REPLICATION; m < XS_BAL_EXACT; m++) {
      double mb;
      XT_CHECK(xs_balance_baseline(qe, (xs_balance_method)m, &pl, &p, counts, 7) == XS_OK);
      XT_CHECK(xs_balance_makespan(&mb, NULL, &pl, &p, counts, qe) == XS_OK);
      XT_CHECK(me <= mb * (1 + 1e-12)); /* exact is a true optimum */
      if (mt > mb * (1 + 1e-12)) {
        worse_than_baseline++;
        printf("  instance %d: tempo %.3f > %s %.3f\n", i, mt, xs_balance_method_name(m), mb);
      }
    }
    xs_balance_solver_destroy(s);
    xs_placement_release(&pl);
  }
  printf("  corpus %d: proven optimal %d; tempo optimal on %d, within 1%% of exact on %d "
         "(%.1f%%); worst gap %.2f%%; worse than a baseline: %d; below the lower bound: %d\n",
         CORPUS, proven_n, optimal, within, 100.0 * within / (proven_n ? proven_n : 1),
         100 * worst_gap, worse_than_baseline, below_lb);
  XT_CHECK(proven_n >= CORPUS * 9 / 10);
  XT_CHECK(within >= proven_n * 95 / 100);
  XT_EQ_INT(worse_than_baseline, 0);
  XT_EQ_INT(below_lb, 0);
}

int main(void) {
  XT_RUN(test_exact_is_optimal_on_tiny);
  XT_RUN(test_exact_matches_enumeration);
  XT_RUN(test_corpus_vs_exact_and_baselines);
  return XT_END();
}
