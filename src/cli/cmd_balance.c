/* cmd_balance.c — `xstage balance solve|bench|phase|fit|summary`: TEMPO expert-parallel dispatch
 * (docs/tempo.md). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include "cli/cli.h"
#include "core/csv.h"
#include "core/fileio.h"
#include "core/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static double cpu_us(void) { /* this thread's CPU time: excludes preemption by other processes */
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------------------ solve ---- */

static int balance_solve(int argc, char** argv) {
  static cli_opt opts[] = {
      {"exact", NULL, "also run the exact branch and bound (small instances)", NULL},
      {"quotas", NULL, "print TEMPO's quota of every replica", NULL},
      {"json", NULL, "print JSON instead of a table", NULL},
  };
  cli_cmd c = CLI_CMD("balance solve", "solve one dispatch instance with TEMPO and every baseline",
                      "<instance.json>", opts, 1, 1);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  xs_balance_instance in;
  xs_result res = xs_balance_instance_read(&in, c.pos[0]);
  if (res != XS_OK) return cli_fail(&c, res, "reading the instance");
  const xs_placement* pl = &in.placement;
  int64_t* q = malloc((size_t)pl->n_replicas * sizeof(int64_t));
  int64_t* tq = malloc((size_t)pl->n_replicas * sizeof(int64_t));
  double ms[XS_BAL_COUNT] = {0}, lb = 0, t_us = 0;
  int json = cli_flag(&c, "json"), last = cli_flag(&c, "exact") ? XS_BAL_EXACT : XS_BAL_EXACT - 1;
  int proven = 0;
  if (!q || !tq) {
    res = XS_ERR_NO_MEMORY;
    goto fail;
  }
  for (int m = 0; m <= last; m++) {
    double t0 = now_us();
    if (m == XS_BAL_EXACT) {
      res = xs_balance_exact(q, &ms[m], &proven, pl, &in.profile, in.counts, 5000000);
    } else {
      res = xs_balance_baseline(m == XS_BAL_TEMPO ? tq : q, (xs_balance_method)m, pl, &in.profile,
                                in.counts, 1);
      if (res == XS_OK)
        res = xs_balance_makespan(&ms[m], NULL, pl, &in.profile, in.counts,
                                  m == XS_BAL_TEMPO ? tq : q);
    }
    if (m == XS_BAL_TEMPO) t_us = now_us() - t0;
    if (res != XS_OK) goto fail;
  }
  res = xs_balance_lower_bound(&lb, pl, &in.profile, in.counts);
  if (res != XS_OK) goto fail;
  if (json) {
    printf("{\"instance\": \"%s\", \"profile\": \"%s\", \"lower_bound_us\": %.6g, \"methods\": {",
           c.pos[0], in.profile.name, lb);
    for (int m = 0; m <= last; m++)
      printf("%s\"%s\": %.6g", m ? ", " : "", xs_balance_method_name((xs_balance_method)m), ms[m]);
    printf("}%s", last == XS_BAL_EXACT
                      ? (proven ? ", \"exact_proven\": true" : ", \"exact_proven\": false")
                      : "");
    printf(", \"tempo_quotas\": [");
    for (int r = 0; r < pl->n_replicas; r++)
      printf("%s%lld", r ? ", " : "", (long long)tq[r]);
    printf("]}\n");
  } else {
    printf(
        "instance %s: %d experts, %d GPUs, %d replicas; profile %s (%s); TEMPO solved in %.1f us\n",
        c.pos[0], pl->n_experts, pl->n_gpus, pl->n_replicas, in.profile.name,
        in.profile.calibrated ? "calibrated" : "estimate", t_us);
    printf("%-22s %12s %10s\n", "method", "makespan_us", "vs TEMPO");
    for (int m = 0; m <= last; m++)
      printf("%-22s %12.3f %9.3fx%s\n", xs_balance_method_name((xs_balance_method)m), ms[m],
             ms[m] / ms[XS_BAL_TEMPO],
             m == XS_BAL_EXACT && !proven ? "  (node limit: not proven)" : "");
    printf("%-22s %12.3f\n", "lower bound", lb);
    if (cli_flag(&c, "quotas"))
      for (int e = 0; e < pl->n_experts; e++) {
        printf("expert %3d count %6lld:", e, (long long)in.counts[e]);
        for (int r = pl->rep_off[e]; r < pl->rep_off[e + 1]; r++)
          printf(" gpu%d=%lld", pl->rep_gpu[r], (long long)tq[r]);
        printf("\n");
      }
  }
  free(q);
  free(tq);
  xs_balance_instance_release(&in);
  return 0;
fail:
  free(q);
  free(tq);
  xs_balance_instance_release(&in);
  return cli_fail(&c, res, "solving");
}

/* ------------------------------------------------------------------------------ bench ---- */

typedef struct bench_cfg {
  int experts, gpus, redundant;
  const char* model;
} bench_cfg;

/* Solve-time percentiles (wall: pct[0..2] = p50, p99, max; thread CPU time: pct[3..5]) over
 * `steps` steps at each of three batch sizes. */
static xs_result time_config(double* pct, const bench_cfg* b, int steps) {
  const int batches[3] = {256, 2048, 16384};
  double* t = malloc(sizeof(double) * 6 * (size_t)steps);
  if (!t) return XS_ERR_NO_MEMORY;
  double* tc = t + 3 * steps;
  int n = 0;
  xs_result res = XS_OK;
  for (int k = 0; k < 3 && res == XS_OK; k++) {
    xs_balance_scenario sc;
    xs_routing_trace tr = {0};
    xs_placement pl = {0};
    xs_balance_solver* s = NULL;
    int64_t* q = NULL;
    double* loads = calloc((size_t)b->experts, sizeof(double));
    xs_balance_scenario_default(&sc);
    xs_expert_profile_default(&sc.profile, b->model);
    sc.trace.n_experts = b->experts, sc.trace.n_tokens = batches[k], sc.trace.n_steps = steps;
    sc.trace.skew = 1.0, sc.trace.seed = 100 + k;
    res = loads ? xs_routing_generate(&tr, &sc.trace) : XS_ERR_NO_MEMORY;
    for (int st = 0; res == XS_OK && st < steps; st++)
      for (int e = 0; e < b->experts; e++)
        loads[e] += (double)tr.counts[(size_t)st * b->experts + e];
    if (res == XS_OK) res = xs_placement_eplb(&pl, loads, b->experts, b->gpus, b->redundant);
    if (res == XS_OK) res = xs_balance_solver_create(&s, &pl, &sc.profile, NULL);
    if (res == XS_OK && !(q = malloc((size_t)pl.n_replicas * sizeof(int64_t))))
      res = XS_ERR_NO_MEMORY;
    for (int st = 0; res == XS_OK && st < steps; st++) {
      double c0 = cpu_us(), w0 = now_us();
      res = xs_balance_solve(s, q, NULL, tr.counts + (size_t)st * b->experts);
      t[n] = now_us() - w0;
      tc[n++] = cpu_us() - c0;
      cli_progress("timing the solver", (k * steps + st + 1) / (3.0 * steps));
    }
    free(q);
    free(loads);
    xs_balance_solver_destroy(s);
    xs_placement_release(&pl);
    xs_routing_release(&tr);
  }
  if (res == XS_OK) {
    for (int k = 0; k < 2; k++) {
      double* v = k ? tc : t;
      qsort(v, (size_t)n, sizeof *v, cmp_double);
      pct[3 * k] = v[n / 2];
      pct[3 * k + 1] = v[(int)ceil(0.99 * n) - 1];
      pct[3 * k + 2] = v[n - 1];
    }
  }
  free(t);
  return res;
}

static int balance_bench(int argc, char** argv) {
  static cli_opt opts[] = {
      {"steps", "N", "solves per batch size for timing (default 400)", NULL},
      {"json", NULL, "print JSON instead of tables", NULL},
  };
  cli_cmd c =
      CLI_CMD("balance bench", "solver time p50/p99, and modeled makespan against every baseline",
              "", opts, 0, 0);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  long steps;
  if (cli_get_long(&c, "steps", 400, 10, 100000, &steps)) return 2;
  int json = cli_flag(&c, "json");
  const bench_cfg cfgs[2] = {{256, 64, 32, "deepseek-v3"}, {128, 8, 16, "qwen3-235b"}};
  const double target[2] = {1000, 200};
  char load[64] = "?";
  FILE* lf = fopen("/proc/loadavg", "r");
  if (lf) {
    if (!fgets(load, sizeof load, lf)) snprintf(load, sizeof load, "?");
    load[strcspn(load, "\n")] = 0;
    fclose(lf);
  }
  if (json)
    printf("{\"loadavg\": \"%s\", \"timing\": [", load);
  else
    printf("solver time, one thread (batches of 256, 2048, 16384 tokens x top-8, Zipf 1.0; %ld "
           "solves each; load average %s)\nwall = clock time (includes preemption by other "
           "processes), cpu = this thread's CPU time\n%-32s %8s %8s %8s %8s %8s %8s %7s\n",
           steps, load, "config", "wall p50", "p99", "max", "cpu p50", "p99", "max", "target");
  for (int i = 0; i < 2; i++) {
    double pct[6];
    xs_result res = time_config(pct, &cfgs[i], (int)steps);
    cli_progress_done();
    if (res != XS_OK) return cli_fail(&c, res, "timing");
    char name[64];
    snprintf(name, sizeof name, "%d experts/%d GPUs/%d redundant", cfgs[i].experts, cfgs[i].gpus,
             cfgs[i].redundant);
    if (json)
      printf("%s{\"config\": \"%s\", \"wall_p50_us\": %.2f, \"wall_p99_us\": %.2f, "
             "\"wall_max_us\": %.2f, \"cpu_p50_us\": %.2f, \"cpu_p99_us\": %.2f, \"cpu_max_us\": "
             "%.2f, \"target_p99_us\": %.0f}",
             i ? ", " : "", name, pct[0], pct[1], pct[2], pct[3], pct[4], pct[5], target[i]);
    else
      printf("%-32s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %7.0f  p99 %s (wall), %s (cpu)\n", name,
             pct[0], pct[1], pct[2], pct[3], pct[4], pct[5], target[i],
             pct[1] <= target[i] ? "met" : "MISSED", pct[4] <= target[i] ? "met" : "MISSED");
  }
  /* makespan against every baseline, on generated traces */
  const int tokens[4] = {32, 256, 2048, 16384};
  const double skews[2] = {0.6, 1.2};
  if (json)
    printf("], \"makespan\": [");
  else {
    printf("\nmean modeled makespan (us) over 16 steps; ratio = baseline / TEMPO (> 1: TEMPO "
           "better)\n%-26s %9s",
           "scenario", "tempo");
    for (int m = XS_BAL_NO_REPLICATION; m < XS_BAL_EXACT; m++)
      printf(" %21s", xs_balance_method_name((xs_balance_method)m));
    printf("\n");
  }
  int first = 1;
  for (int i = 0; i < 2; i++)
    for (int t = 0; t < 4; t++)
      for (int k = 0; k < 2; k++) {
        xs_balance_scenario sc;
        xs_balance_cell cell;
        xs_balance_scenario_default(&sc);
        xs_expert_profile_default(&sc.profile, cfgs[i].model);
        sc.n_gpus = cfgs[i].gpus, sc.n_redundant = cfgs[i].redundant;
        sc.trace.n_experts = cfgs[i].experts, sc.trace.n_tokens = tokens[t],
        sc.trace.skew = skews[k];
        xs_result res = xs_balance_compare(&cell, &sc);
        cli_progress("baselines", (i * 8 + t * 2 + k + 1) / 16.0);
        if (res != XS_OK) return cli_fail(&c, res, "comparing");
        char name[64];
        snprintf(name, sizeof name, "%dE/%dG %5d tok s=%.1f", cfgs[i].experts, cfgs[i].gpus,
                 tokens[t], skews[k]);
        double tm = cell.makespan_us[XS_BAL_TEMPO];
        if (json) {
          printf("%s{\"scenario\": \"%s\", \"tempo_us\": %.4g", first ? "" : ", ", name, tm);
          for (int m = XS_BAL_NO_REPLICATION; m < XS_BAL_EXACT; m++)
            printf(", \"%s_us\": %.4g", xs_balance_method_name((xs_balance_method)m),
                   cell.makespan_us[m]);
          printf("}");
        } else {
          cli_progress_done();
          printf("%-26s %9.1f", name, tm);
          for (int m = XS_BAL_NO_REPLICATION; m < XS_BAL_EXACT; m++)
            printf(" %11.1f (%6.3fx)", cell.makespan_us[m], cell.makespan_us[m] / tm);
          printf("\n");
        }
        first = 0;
      }
  cli_progress_done();
  if (json) printf("]}\n");
  return 0;
}

/* ------------------------------------------------------------------------------ phase ---- */

static int balance_phase(int argc, char** argv) {
  static cli_opt opts[] = {
      {"out", "FILE", "SVG phase diagram to write (also -o; default phase.svg)", NULL},
      {"model", "NAME", "expert profile: qwen3-235b (default) or deepseek-v3", NULL},
      {"gpus", "N", "GPUs (default 8)", NULL},
      {"experts", "N", "experts (default 128)", NULL},
      {"redundant", "N", "redundant replicas (default 16)", NULL},
      {"steps", "N", "steps per cell (default 8)", NULL},
      {"vs", "METHOD", "baseline the SVG compares against (default: the best baseline per cell)",
       NULL},
      {"json", NULL, "print JSON instead of tables", NULL},
  };
  cli_cmd c = CLI_CMD("balance phase",
                      "phase diagram over batch size x skew of where TEMPO beats each baseline", "",
                      opts, 0, 0);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  long gpus, experts, red, steps;
  if (cli_get_long(&c, "gpus", 8, 1, 1024, &gpus) ||
      cli_get_long(&c, "experts", 128, 2, 4096, &experts) ||
      cli_get_long(&c, "redundant", 16, 0, 100000, &red) ||
      cli_get_long(&c, "steps", 8, 1, 10000, &steps))
    return 2;
  const char* out = cli_get_str(&c, "out", "phase.svg");
  const char* vs = cli_get_str(&c, "vs", "best");
  int vs_m = -1;
  for (int m = XS_BAL_NO_REPLICATION; m < XS_BAL_EXACT; m++)
    if (!strcmp(vs, xs_balance_method_name((xs_balance_method)m))) vs_m = m;
  if (vs_m < 0 && strcmp(vs, "best")) return cli_error(&c, "unknown --vs '%s'", vs);
  xs_balance_scenario sc;
  xs_balance_scenario_default(&sc);
  xs_result res = xs_expert_profile_default(&sc.profile, cli_get_str(&c, "model", "qwen3-235b"));
  if (res != XS_OK) return cli_fail(&c, res, "--model");
  enum { NB = 11, NS = 9 };
  const int batch[NB] = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  static double gain[NB][NS][XS_BAL_COUNT]; /* baseline / TEMPO - 1 */
  int json = cli_flag(&c, "json");
  sc.n_gpus = (int)gpus, sc.n_redundant = (int)red;
  sc.trace.n_experts = (int)experts, sc.trace.n_steps = (int)steps;
  if (sc.trace.top_k > sc.trace.n_experts) sc.trace.top_k = sc.trace.n_experts;
  for (int i = 0; i < NB; i++)
    for (int j = 0; j < NS; j++) {
      xs_balance_cell cell;
      sc.trace.n_tokens = batch[i], sc.trace.skew = 0.25 * j,
      sc.trace.seed = (uint64_t)(i * NS + j + 1);
      res = xs_balance_compare(&cell, &sc);
      if (res != XS_OK) return cli_fail(&c, res, "phase cell");
      double best = INFINITY;
      for (int m = XS_BAL_NO_REPLICATION; m < XS_BAL_EXACT; m++) {
        gain[i][j][m] = cell.makespan_us[m] / cell.makespan_us[XS_BAL_TEMPO] - 1;
        if (cell.makespan_us[m] < best) best = cell.makespan_us[m];
      }
      gain[i][j][XS_BAL_TEMPO] = best / cell.makespan_us[XS_BAL_TEMPO] - 1; /* vs best */
      cli_progress("phase diagram", (i * NS + j + 1) / (double)(NB * NS));
    }
  cli_progress_done();
  /* tables: one per baseline (and the best), rows = skew, columns = batch */
  for (int m = 0; m < XS_BAL_EXACT; m++) {
    const char* name =
        m == XS_BAL_TEMPO ? "best-baseline" : xs_balance_method_name((xs_balance_method)m);
    if (json) {
      printf("%s\"%s\": [",
             m ? ", "
               : "{\"batch\": [8,16,32,64,128,256,512,1024,2048,4096,8192], "
                 "\"skew\": [0,0.25,0.5,0.75,1,1.25,1.5,1.75,2], \"gain_vs\": {",
             name);
      for (int j = 0; j < NS; j++) {
        printf("%s[", j ? ", " : "");
        for (int i = 0; i < NB; i++)
          printf("%s%.4f", i ? ", " : "", gain[i][j][m]);
        printf("]");
      }
      printf("]");
      continue;
    }
    double lo = INFINITY, hi = -INFINITY;
    int wins = 0, losses = 0;
    printf("\nTEMPO gain vs %s (%%; baseline/TEMPO - 1; negative = TEMPO loses)\nskew\\tokens",
           name);
    for (int i = 0; i < NB; i++)
      printf(" %6d", batch[i]);
    printf("\n");
    for (int j = 0; j < NS; j++) {
      printf("%-11.2f", 0.25 * j);
      for (int i = 0; i < NB; i++) {
        double g = gain[i][j][m];
        printf(" %6.1f", 100 * g);
        lo = g < lo ? g : lo, hi = g > hi ? g : hi;
        wins += g >= 0.01, losses += g <= -0.01;
      }
      printf("\n");
    }
    printf("range %.1f%% .. %.1f%%; cells won by >= 1%%: %d, lost by >= 1%%: %d of %d\n", 100 * lo,
           100 * hi, wins, losses, NB * NS);
  }
  if (json) printf("}}\n");
  /* SVG: markers by outcome against the chosen baseline */
  xsi_plot p;
  char title[160];
  snprintf(title, sizeof title, "TEMPO vs %s: %s, %ld experts, %ld GPUs, %ld redundant",
           vs_m < 0 ? "best baseline" : vs, sc.profile.name, experts, gpus, red);
  xsi_plot_init(&p, title, "tokens per step (log)", "Zipf skew");
  p.logx = 1;
  const char* labels[4] = {"TEMPO wins >= 10%", "TEMPO wins 1-10%", "within 1%",
                           "TEMPO loses > 1%"};
  const unsigned colors[4] = {0x1a7f37, 0x7ccf8a, 0x9a9a9a, 0xcf222e};
  double xs[4][NB * NS], ys[4][NB * NS];
  size_t n[4] = {0};
  for (int i = 0; i < NB; i++)
    for (int j = 0; j < NS; j++) {
      double g = gain[i][j][vs_m < 0 ? XS_BAL_TEMPO : vs_m];
      int k = g >= 0.10 ? 0 : g >= 0.01 ? 1 : g > -0.01 ? 2 : 3;
      xs[k][n[k]] = batch[i], ys[k][n[k]++] = 0.25 * j;
    }
  for (int k = 0; k < 4 && res == XS_OK; k++)
    if (n[k]) res = xsi_plot_series(&p, labels[k], xs[k], ys[k], n[k], XSI_STYLE_POINTS, colors[k]);
  if (res == XS_OK) res = xsi_plot_write(&p, out);
  xsi_plot_free(&p);
  if (res != XS_OK) return cli_fail(&c, res, "writing the SVG");
  if (!json) printf("\nwrote %s\n", out);
  return 0;
}

/* -------------------------------------------------------------------------------- fit ---- */

static int balance_fit(int argc, char** argv) {
  static cli_opt opts[] = {
      {"model", "NAME", "fit only rows of this model (default: each model in the file)", NULL},
      {"json", NULL, "print the fitted profiles as JSON", NULL},
  };
  cli_cmd c = CLI_CMD("balance fit", "fit t = max(a + b*G, c + beta*N) to measured samples",
                      "<samples.csv>", opts, 1, 1);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  const char* path = c.pos[0];
  const char* models[32];
  int nm = 0;
  char* text = NULL;
  size_t len = 0;
  xsi_csv* csv = NULL;
  xs_result res = xsi_read_file(&text, &len, path, 0);
  if (res == XS_OK) res = xsi_csv_parse(&csv, text, len, path, 0);
  if (res != XS_OK) {
    free(text);
    return cli_fail(&c, res, "reading the samples");
  }
  long cm = xsi_csv_col(csv, "model");
  if (cli_get_str(&c, "model", NULL)) {
    models[nm++] = cli_get_str(&c, "model", NULL);
  } else if (cm >= 0) {
    for (size_t r = 0; r < csv->nrows && nm < 32; r++) {
      int seen = 0;
      for (int k = 0; k < nm; k++)
        seen |= !strcmp(models[k], csv->rows[r][cm]);
      if (!seen) models[nm++] = csv->rows[r][cm];
    }
  } else {
    models[nm++] = NULL;
  }
  int json = cli_flag(&c, "json");
  if (json)
    printf("[");
  else
    printf("%-14s %7s %8s %9s %9s %9s %10s %8s %8s %8s\n", "model", "samples", "outliers", "a_us",
           "b_us", "c_us", "beta_us", "n*", "rms", "rms_all");
  for (int k = 0; k < nm && res == XS_OK; k++) {
    xs_expert_profile p = XS_EXPERT_PROFILE_INITIALIZER;
    xs_profile_fit_info fi;
    res = xs_expert_profile_fit_csv_info(&p, &fi, path, models[k]);
    if (res != XS_OK) break;
    const char* name = models[k] ? models[k] : "(all rows)";
    if (json)
      printf("%s{\"model\": \"%s\", \"samples\": %zu, \"outliers\": %zu, \"a_us\": %.6g, "
             "\"b_us\": %.6g, \"c_us\": %.6g, \"beta_us\": %.6g, \"nstar\": %.1f, "
             "\"rms_rel\": %.4f, \"rms_rel_all\": %.4f}",
             k ? ", " : "", name, fi.n_samples, fi.n_outliers, p.a_us, p.b_us, p.c_us, p.beta_us,
             xs_expert_profile_nstar(&p), fi.rms_rel, fi.rms_rel_all);
    else
      printf("%-14s %7zu %8zu %9.3f %9.3f %9.3f %10.5f %8.1f %7.2f%% %7.2f%%\n", name, fi.n_samples,
             fi.n_outliers, p.a_us, p.b_us, p.c_us, p.beta_us, xs_expert_profile_nstar(&p),
             100 * fi.rms_rel, 100 * fi.rms_rel_all);
  }
  if (json && res == XS_OK) printf("]\n");
  xsi_csv_free(csv);
  free(text);
  return res == XS_OK ? 0 : cli_fail(&c, res, "fitting");
}

static int balance_summary(int argc, char** argv) {
  static cli_opt opts[] = {{"json", NULL, "print JSON", NULL}};
  cli_cmd c = CLI_CMD("balance summary", "the one-line TEMPO summary of the main job's report", "",
                      opts, 0, 0);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  xs_balance_summary_t s;
  xs_result res = xs_balance_summary(&s);
  if (res != XS_OK) return cli_fail(&c, res, "summary");
  if (cli_flag(&c, "json"))
    printf("{\"tempo_us\": %.4g, \"token_us\": %.4g, \"best_baseline_us\": %.4g}\n", s.tempo_us,
           s.token_us, s.best_baseline_us);
  else
    printf("%s\n", s.line);
  return 0;
}

int cmd_balance(int argc, char** argv) {
  static const struct {
    const char* name;
    int (*fn)(int, char**);
    const char* summary;
  } sub[] = {
      {"solve", balance_solve, "solve an instance (JSON) with TEMPO and every baseline"},
      {"bench", balance_bench, "solver time p50/p99; makespan against every baseline"},
      {"phase", balance_phase, "phase diagram (SVG + tables) over batch size x skew"},
      {"fit", balance_fit, "fit the expert-time profile to measured samples (CSV)"},
      {"summary", balance_summary, "one-line TEMPO vs token balancing summary"},
  };
  if (argc >= 1)
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++)
      if (!strcmp(argv[0], sub[i].name)) {
        for (int k = 1; k < argc; k++) /* accept -o for --out */
          if (!strcmp(argv[k], "-o")) argv[k] = "--out";
        return sub[i].fn(argc - 1, argv + 1);
      }
  FILE* f = (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) ? stdout : stderr;
  if (argc >= 1 && f == stderr)
    fprintf(stderr, "xstage balance: unknown subcommand '%s'\n", argv[0]);
  fprintf(f, "usage: xstage balance <subcommand> [options]   (xstage balance <sub> --help)\n");
  for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++)
    fprintf(f, "  %-8s %s\n", sub[i].name, sub[i].summary);
  return f == stdout ? 0 : 2;
}
