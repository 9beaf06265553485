/* test_tempo_trace.c — routing traces (generator and recorded-count reader) and the EPLB-style
 * placement. */
#include "test.h"
#include "xstage/xstage.h"

#include <stdlib.h>
#include <string.h>

static void test_generator(void) {
  xs_routing_config c = XS_ROUTING_CONFIG_INITIALIZER;
  c.n_experts = 64, c.top_k = 8, c.n_steps = 5, c.n_tokens = 100, c.skew = 1.0;
  xs_routing_trace a, b;
  XT_CHECK(xs_routing_generate(&a, &c) == XS_OK);
  XT_CHECK(xs_routing_generate(&b, &c) == XS_OK);
  XT_CHECK(memcmp(a.counts, b.counts, sizeof(int64_t) * 5 * 64) == 0); /* deterministic */
  for (int s = 0; s < 5; s++) {
    long long sum = 0;
    for (int e = 0; e < 64; e++) {
      sum += a.counts[s * 64 + e];
      XT_CHECK(a.counts[s * 64 + e] <= 100); /* without replacement: at most once per token */
    }
    XT_EQ_INT(sum, 800);
  }
  xs_routing_release(&b);
  c.seed = 2;
  XT_CHECK(xs_routing_generate(&b, &c) == XS_OK);
  XT_CHECK(memcmp(a.counts, b.counts, sizeof(int64_t) * 5 * 64) != 0);
  xs_routing_release(&a);
  xs_routing_release(&b);
  /* extreme skew: the top experts are picked by every token, exactly once */
  c.skew = 6, c.drift = 0, c.n_steps = 1;
  XT_CHECK(xs_routing_generate(&a, &c) == XS_OK);
  int full = 0;
  for (int e = 0; e < 64; e++)
    full += a.counts[e] == 100;
  XT_CHECK(full >= 4);
  xs_routing_release(&a);
  /* skew 0: uniform; every expert near 800/64 = 12.5 per step on average over many steps */
  c.skew = 0, c.n_steps = 200;
  XT_CHECK(xs_routing_generate(&a, &c) == XS_OK);
  for (int e = 0; e < 64; e++) {
    double m = 0;
    for (int s = 0; s < 200; s++)
      m += a.counts[s * 64 + e] / 200.0;
    XT_NEAR(m, 12.5, 0.15);
  }
  xs_routing_release(&a);
  c.popularity = XS_POP_DIRICHLET, c.skew = 1, c.n_steps = 3;
  XT_CHECK(xs_routing_generate(&a, &c) == XS_OK);
  long long sum = 0;
  for (int i = 0; i < 3 * 64; i++)
    sum += a.counts[i];
  XT_EQ_INT(sum, 3 * 800);
  xs_routing_release(&a);
  c.top_k = 65;
  XT_CHECK(xs_routing_generate(&a, &c) == XS_ERR_INVALID_ARG);
  xs_routing_release(NULL);
}

static void test_reader(void) {
  xs_routing_trace j, v;
  XT_CHECK(xs_routing_read(&j, "data/tempo_counts_sample.json") == XS_OK);
  XT_CHECK(xs_routing_read(&v, "data/tempo_counts_sample.csv") == XS_OK);
  XT_EQ_INT(j.n_steps, 8); /* 4 steps x 2 layers */
  XT_EQ_INT(j.n_experts, 16);
  XT_EQ_INT(v.n_steps, 8);
  XT_EQ_INT(v.n_experts, 16);
  XT_CHECK(memcmp(j.counts, v.counts, sizeof(int64_t) * 8 * 16) == 0);
  for (int s = 0; s < 8; s++) {
    long long sum = 0;
    for (int e = 0; e < 16; e++)
      sum += j.counts[s * 16 + e];
    XT_EQ_INT(sum, 64 * 4);
  }
  xs_routing_release(&j);
  xs_routing_release(&v);
  XT_CHECK(xs_routing_read(&j, "/nonexistent/trace.json") == XS_ERR_IO);
}

static void test_eplb(void) {
  double loads[8] = {100, 50, 10, 10, 5, 0, 1, 300};
  xs_placement pl;
  XT_CHECK(xs_placement_eplb(&pl, loads, 8, 4, 4) == XS_OK);
  XT_CHECK(xs_placement_validate(&pl) == XS_OK);
  XT_EQ_INT(pl.n_replicas, 12);
  XT_CHECK(pl.rep_off[8] - pl.rep_off[7] >= 3); /* the hottest expert gets the most */
  XT_CHECK(pl.rep_off[1] - pl.rep_off[0] >= 2);
  int slots[4] = {0};
  for (int e = 0; e < 8; e++)
    for (int r = pl.rep_off[e]; r < pl.rep_off[e + 1]; r++) {
      slots[pl.rep_gpu[r]]++;
      for (int x = pl.rep_off[e]; x < r; x++)
        XT_CHECK(pl.rep_gpu[x] != pl.rep_gpu[r]);
    }
  for (int g = 0; g < 4; g++)
    XT_EQ_INT(slots[g], 3);
  xs_placement_release(&pl);
  XT_CHECK(xs_placement_eplb(&pl, loads, 8, 4, 40) == XS_ERR_INVALID_ARG);
  loads[3] = -1;
  XT_CHECK(xs_placement_eplb(&pl, loads, 8, 4, 4) == XS_ERR_INVALID_ARG);
}

int main(void) {
  XT_RUN(test_generator);
  XT_RUN(test_reader);
  XT_RUN(test_eplb);
  return XT_END();
}
