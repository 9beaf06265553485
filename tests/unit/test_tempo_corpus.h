/* test_tempo_corpus.h — random small dispatch instances shared by the TEMPO unit tests. */
#ifndef XSTAGE_TEMPO_CORPUS_H
#define XSTAGE_TEMPO_CORPUS_H

#include "test.h"
#include "xstage/xstage.h"

#include <string.h>

/* Instance i of the corpus: 2..16 experts, 2..4 GPUs, up to 6 (every 4th instance: up to 24,
 * i.e. up to full replication) redundant replicas on distinct
 * GPUs, counts from a skewed distribution spanning both regimes (n* ~ 160 rows), profiles with
 * and without 128-row tiles. Caller releases pl and frees nothing else (counts is caller's). */
static inline void tempo_corpus_instance(xs_placement* pl, xs_expert_profile* prof,
                                         int64_t* counts /* >= 16 */, int i) {
  unsigned long long s = 0x9E3779B97F4A7C15ull * (unsigned long long)(i + 1);
  xt_rand_u64(&s);
  int E = 2 + (int)(xt_rand_u64(&s) % 15), G = 2 + (int)(xt_rand_u64(&s) % 3);
  int extra = (int)(xt_rand_u64(&s) % (i % 4 == 0 ? 25 : 7));
  int nrep[16], gpus[16][4];
  for (int e = 0; e < E; e++) {
    nrep[e] = 1;
    gpus[e][0] = (int)(xt_rand_u64(&s) % (unsigned)G);
  }
  for (int k = 0; k < extra; k++) {
    int e = (int)(xt_rand_u64(&s) % (unsigned)E);
    if (nrep[e] >= G) continue;
    int g;
    for (;;) {
      g = (int)(xt_rand_u64(&s) % (unsigned)G);
      int dup = 0;
      for (int j = 0; j < nrep[e]; j++)
        dup |= gpus[e][j] == g;
      if (!dup) break;
    }
    gpus[e][nrep[e]++] = g;
  }
  int R = 0;
  for (int e = 0; e < E; e++)
    R += nrep[e];
  xs_placement_init(pl, E, G, R);
  for (int e = 0, r = 0; e < E; e++) {
    for (int j = 0; j < nrep[e]; j++)
      pl->rep_gpu[r++] = gpus[e][j];
    pl->rep_off[e + 1] = r;
  }
  double scale = 20.0 + 600.0 * xt_rand_uniform(&s);
  for (int e = 0; e < E; e++) {
    double u = xt_rand_uniform(&s);
    counts[e] = (int64_t)(scale * u * u * u * 3.0);
    if (xt_rand_uniform(&s) < 0.1) counts[e] = 0;
  }
  xs_expert_profile_default(prof, (i & 1) ? "qwen3-235b" : "deepseek-v3");
  prof->a_us *= 0.5 + xt_rand_uniform(&s);
  prof->c_us *= 0.5 + xt_rand_uniform(&s);
  if (i % 3 == 0) prof->tile_rows = 0;
}

#endif
