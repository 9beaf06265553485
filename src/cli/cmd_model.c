/* cmd_model.c — `xstage model fit | check | predict | explain | plot`: the X-Stage model from the
 * command line (docs/model.md). */
#include "cli/model_cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

char** mcli_argv(int argc, char** argv) {
  char** a = malloc(((size_t)argc + 1) * sizeof *a);
  if (!a) return NULL;
  for (int i = 0; i < argc; i++)
    a[i] = strcmp(argv[i], "-o") == 0 ? "--out" : argv[i];
  a[argc] = NULL;
  return a;
}

int mcli_profile(const cli_cmd* c, const char* spec, const char* def, xs_link_profile* out) {
  if (!spec) spec = def;
  for (const char* const* n = xs_profile_default_names(); *n; n++)
    if (strcmp(*n, spec) == 0)
      return xs_profile_default(out, spec) ? cli_fail(c, XS_ERR_INTERNAL, spec) : 0;
  xs_result r = xs_profile_read(out, spec);
  if (r != XS_OK)
    return cli_fail(c, r,
                    "cannot load the profile (a file, or one of h200-host, h200-hbm, h200-nvlink)");
  return 0;
}

void mcli_describe(FILE* f, const char* label, const xs_link_profile* p) {
  char q[32];
  fprintf(f, "%s: %s, %s, %s; %s%s%s\n", label, p->device[0] ? p->device : "?",
          p->transport[0] ? p->transport : "?", p->flavour[0] ? p->flavour : "?",
          p->calibrated ? "calibrated" : "NOT calibrated (estimate)", p->date[0] ? " " : "",
          p->date);
  if (p->t_min_ns > 0)
    fprintf(f, "  T0 = max(%.4g ns, %.4g ns + V / min(K x %.4g, %.4g) B/ns);", p->t_min_ns,
            p->t_fixed_ns, p->r_cta, p->r_cap);
  else
    fprintf(f, "  T0 = %.4g ns + V / min(K x %.4g, %.4g) B/ns;", p->t_fixed_ns, p->r_cta, p->r_cap);
  if (p->has_r_k) {
    fprintf(f, "  R(K) GB/s:");
    for (int i = 0; i < p->nq; i++) fprintf(f, " %g:%.4g", p->q_k[i], p->r_k[i]);
    fprintf(f, ";  Q(K):");
  } else {
    fprintf(f, "  R = %.4g GB/s;  Q(K):", p->R);
  }
  for (int i = 0; i < p->nq; i++)
    fprintf(f, " %g:%s", p->q_k[i], cli_fmt_bytes(q, sizeof q, p->q_bytes[i]));
  if (p->has_q_burst) {
    fprintf(f, ";  burst room Qb(K):");
    for (int i = 0; i < p->nq; i++)
      fprintf(f, " %g:%s", p->q_k[i], cli_fmt_bytes(q, sizeof q, p->q_burst_bytes[i]));
  }
  if (p->has_relax) {
    fprintf(f, ";  relaxing room Qr(K) / X0(K):");
    for (int i = 0; i < p->nq; i++)
      fprintf(f, " %g:%s/%.3g B", p->q_k[i], cli_fmt_bytes(q, sizeof q, p->q_relax_bytes[i]),
              p->relax_bytes[i]);
  }
  fprintf(f, ";  mean producer at %.3g of the stall\n  method: %s\n", p->unfair_mean, p->method);
}

void mcli_explain(FILE* f, const xs_link_profile* p, double K, double V, double G) {
  char b1[32], b2[32], b3[32], t1[32], t2[32], t3[32];
  xs_steady s;
  double t0, Q, gmin, vmax;
  xs_fluid_periodic(&s, p, K, V, G);
  xs_t0_iss(&t0, p, K, V);
  xs_capacity(&Q, p, K);
  xs_plan_min_free_gap(&gmin, p, K, V);
  xs_plan_max_burst(&vmax, p, K, G);
  double r = fmin(K * p->r_cta, p->r_cap), a = V * (1 - p->R / r);
  fprintf(f, "Regime: %s.\n", xs_regime_name(s.regime));
  fprintf(
      f,
      "A %s burst from %g CTAs issues at %.4g GB/s (T0 = %s) into a stage that drains at %.4g GB/s",
      cli_fmt_bytes(b1, sizeof b1, V), K, r, cli_fmt_ns(t1, sizeof t1, t0), p->R);
  if (r <= p->R) {
    fprintf(f, ": the stage drains faster than the producers fill it, so nothing ever backs up.\n");
    return;
  }
  fprintf(f, " and holds Q = %s; the burst leaves %s in it if nothing stalls.\n",
          cli_fmt_bytes(b2, sizeof b2, Q), cli_fmt_bytes(b1, sizeof b1, fmax(0, a)));
  if (a > Q)
    fprintf(f,
            "From idle it overflows Q after %s; the rest goes at the drain rate, so even the "
            "first burst takes %s. No gap keeps it free: split it (at most %s per burst).\n",
            cli_fmt_ns(t1, sizeof t1, p->t_fixed_ns + Q / (r - p->R)),
            cli_fmt_ns(t2, sizeof t2, s.t_iss_first_ns),
            cli_fmt_bytes(b1, sizeof b1, Q / (1 - p->R / r)));
  else
    fprintf(f,
            "From idle it fits (first burst %s). A gap of at least %s between bursts keeps "
            "every burst free.\n",
            cli_fmt_ns(t1, sizeof t1, s.t_iss_first_ns), cli_fmt_ns(t2, sizeof t2, gmin));
  fprintf(f,
          "With the gap G = %s: steady issue time %s per burst (stall %s; mean producer %s), "
          "reached after %ld burst%s; backlog %s at each burst's start, peak %s.\n",
          cli_fmt_ns(t1, sizeof t1, G), cli_fmt_ns(t2, sizeof t2, s.t_iss_ns),
          cli_fmt_ns(t3, sizeof t3, s.stall_ns), cli_fmt_ns(b2, sizeof b2, s.t_iss_mean_ns),
          s.bursts_to_steady, s.bursts_to_steady == 1 ? "" : "s",
          cli_fmt_bytes(b1, sizeof b1, s.backlog_start),
          cli_fmt_bytes(b3, sizeof b3, s.backlog_peak));
  if (s.regime == XS_REGIME_DRAIN)
    fprintf(f,
            "Drain-dominated: V > R (T0 + G), the stage never empties and each burst costs "
            "V/R - G = %s, as the closed form says.\n",
            cli_fmt_ns(t1, sizeof t1, V / p->R - G));
  double closed;
  xs_predict_closed(&closed, p, K, V, G);
  fprintf(f,
          "The closed form max(T0, V/R - G) predicts %s; the largest burst that stays free "
          "with this gap is %s.\n",
          cli_fmt_ns(t1, sizeof t1, closed),
          isfinite(vmax) ? cli_fmt_bytes(b1, sizeof b1, vmax) : "unbounded");
}

/* ------------------------------------------------------------------------- model fit ----- */

static void stats_row(const char* what, const xs_error_stats* f, const xs_error_stats* c) {
  printf("  %-22s %6zu  %7.2f%% %7.2f%% %7.2f%%   %7.2f%% %7.2f%% %7.2f%%\n", what, f->n,
         100 * f->median, 100 * f->p90, 100 * f->max, 100 * c->median, 100 * c->p90, 100 * c->max);
}
static void stats_json(const char* k, const xs_error_stats* s, int last) {
  printf("    \"%s\": {\"n\": %zu, \"median\": %.6g, \"p90\": %.6g, \"max\": %.6g, \"mean\": "
         "%.6g}%s\n",
         k, s->n, s->median, s->p90, s->max, s->mean, last ? "" : ",");
}

/* --holdout (lower bound hold_lo), --seed and --transport into *o; 0, or 2 after the usage error.
 */
static int fit_options(const cli_cmd* c, xs_fit_options* o, double hold_lo) {
  double seed;
  if (cli_get_double(c, "holdout", 0.2, hold_lo, 0.9, &o->holdout_fraction) ||
      cli_get_double(c, "seed", 12345, 0, 9007199254740992.0, &seed))
    return 2;
  o->seed = (uint64_t)seed;
  o->transport = cli_get_str(c, "transport", NULL);
  return 0;
}

static int model_fit(int argc, char** argv) {
  static cli_opt opts[] = {
      {"out", "FILE", "write the fitted profile JSON here (also -o FILE; required)", NULL},
      {"holdout", "F", "share of (K,V,G) configurations held out (default 0.2)", NULL},
      {"seed", "N", "seed of the held-out draw (default 12345)", NULL},
      {"transport", "T", "fit only rows of this transport (default: all)", NULL},
      {"plot", "FILE", "also write an SVG of data and both predictors", NULL},
      {"json", NULL, "print the report as JSON", NULL},
  };
  cli_cmd c = CLI_CMD("model fit", "fit a link profile to a measurement CSV", "<csv>", opts, 1, 1);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  const char* out = cli_get_str(&c, "out", NULL);
  if (!out) return cli_error(&c, "missing -o FILE (where to write the profile)");
  xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
  if (fit_options(&c, &o, 0)) return 2;
  xs_dataset* d = NULL;
  xs_result r = xs_dataset_load(&d, c.pos[0]);
  if (r != XS_OK) return cli_fail(&c, r, "cannot load the measurements");
  size_t n = xs_dataset_size(d);
  uint8_t* hold = calloc(n + 1, 1);
  xs_link_profile p = XS_LINK_PROFILE_INITIALIZER;
  snprintf(p.transport, sizeof p.transport, "%s", o.transport ? o.transport : "");
  snprintf(p.method, sizeof p.method, "xstage model fit %.120s", c.pos[0]);
  time_t now = time(NULL);
  struct tm tmv;
  if (gmtime_r(&now, &tmv)) strftime(p.date, sizeof p.date, "%Y-%m-%d", &tmv);
  xs_fit_report rep;
  r = hold ? xs_model_fit(&p, &rep, hold, d, &o) : XS_ERR_NO_MEMORY;
  if (r != XS_OK) {
    xs_dataset_destroy(d);
    free(hold);
    return cli_fail(&c, r, "fit failed (no profile written)");
  }
  r = xs_profile_write(&p, out);
  if (r == XS_OK && cli_get_str(&c, "plot", NULL)) {
    double K = xs_dataset_samples(d)[0].K;
    r = mcli_plot_write(cli_get_str(&c, "plot", NULL), d, hold, &p, K, NULL, 0);
    if (r != XS_OK) unlink(out); /* all or nothing */
  }
  xs_dataset_destroy(d);
  free(hold);
  if (r != XS_OK) return cli_fail(&c, r, "cannot write the output (nothing written)");
  if (cli_flag(&c, "json")) {
    char* js = NULL;
    xs_profile_to_json(&js, &p);
    printf("{\n  \"profile\": %s,\n  \"report\": {\n    \"n_fit\": %zu, \"n_holdout\": %zu, "
           "\"iterations\": %d, \"rms_rel_residual\": %.6g,\n",
           js ? js : "null", rep.n_fit, rep.n_holdout, rep.iterations, rep.rms_rel_residual);
    free(js);
    stats_json("fluid_fit", &rep.fluid_fit, 0);
    stats_json("closed_fit", &rep.closed_fit, 0);
    stats_json("fluid_holdout", &rep.fluid_holdout, 0);
    stats_json("closed_holdout", &rep.closed_holdout, 0);
    stats_json("fluid_transition", &rep.fluid_transition, 0);
    stats_json("closed_transition", &rep.closed_transition, 0);
    stats_json("fluid_point_holdout", &rep.fluid_point_holdout, 0);
    stats_json("closed_point_holdout", &rep.closed_point_holdout, 0);
    stats_json("fluid_point_transition", &rep.fluid_point_transition, 0);
    stats_json("closed_point_transition", &rep.closed_point_transition, 1);
    printf("  }\n}\n");
    return 0;
  }
  mcli_describe(stdout, "fitted profile", &p);
  printf("  %zu rows fitted, %zu held out; %d iterations; rms relative residual %.2f%%\n",
         rep.n_fit, rep.n_holdout, rep.iterations, 100 * rep.rms_rel_residual);
  printf("\nrelative error |pred - meas| / meas   ------ fluid model ------   ------ closed form "
         "-----\n");
  printf("  %-22s %6s  %8s %8s %8s   %8s %8s %8s\n", "rows", "n", "median", "p90", "max", "median",
         "p90", "max");
  stats_row("fitted", &rep.fluid_fit, &rep.closed_fit);
  stats_row("held out", &rep.fluid_holdout, &rep.closed_holdout);
  stats_row("held out, transition", &rep.fluid_transition, &rep.closed_transition);
  stats_row("held-out points", &rep.fluid_point_holdout, &rep.closed_point_holdout);
  printf("(transition: G within +-50%% of the smallest free gap for the row's K and V; points: "
         "the total issue time of each held-out (K, V, G) sequence)\n");
  printf("wrote %s\n", out);
  return 0;
}

/* ----------------------------------------------------------------------- model check ----- */

/* Rows of the dataset to use: all (NULL) or those of one transport (ok[i] = 1). */
static uint8_t* transport_mask(const xs_dataset* d, const char* transport, size_t* used) {
  size_t n = xs_dataset_size(d);
  const xs_sample* S = xs_dataset_samples(d);
  uint8_t* m = calloc(n + 1, 1);
  if (!m) return NULL;
  *used = 0;
  for (size_t i = 0; i < n; i++)
    if (!transport || strcmp(S[i].transport, transport) == 0) m[i] = 1, (*used)++;
  return m;
}

/* `xstage model check <csv> --profile P`: how well a profile (an embedded one, or one fitted on
 * another machine or day) predicts measurements it was not fitted to: both predictors' errors
 * per burst, near the transition and per point; with --refit also a profile fitted to this CSV,
 * both scored on the same held-out rows, so the user sees what recalibrating would gain. */
static int model_check(int argc, char** argv) {
  static cli_opt opts[] = {
      {"profile", "FILE|NAME", "the profile to check (default h200-host)", NULL},
      {"transport", "T", "use only rows of this transport (default: all)", NULL},
      {"refit", NULL,
       "also fit this CSV (held-out split) and score both profiles on its "
       "held-out rows",
       NULL},
      {"holdout", "F", "--refit: share of (K,V,G) configurations held out (default 0.2)", NULL},
      {"seed", "N", "--refit: seed of the held-out draw (default 12345)", NULL},
      {"json", NULL, "print the report as JSON", NULL},
  };
  cli_cmd c = CLI_CMD("model check", "score a profile's predictions on a measurement CSV", "<csv>",
                      opts, 1, 1);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  int json = cli_flag(&c, "json"), refit = cli_flag(&c, "refit");
  xs_fit_options o = XS_FIT_OPTIONS_INITIALIZER;
  if (fit_options(&c, &o, 0.05)) return 2; /* --refit needs held-out rows */
  xs_link_profile p;
  if (mcli_profile(&c, cli_get_str(&c, "profile", NULL), "h200-host", &p)) return 1;
  xs_dataset* d = NULL;
  xs_result r = xs_dataset_load(&d, c.pos[0]);
  if (r != XS_OK) return cli_fail(&c, r, "cannot load the measurements");
  size_t n = xs_dataset_size(d), used = 0, other = 0;
  const xs_sample* S = xs_dataset_samples(d);
  uint8_t* use = transport_mask(d, o.transport, &used);
  uint8_t* hold = calloc(n + 1, 1);
  xs_link_profile q = XS_LINK_PROFILE_INITIALIZER;
  xs_fit_report all, held, frep; /* p on every row; p and the refit q on the held-out rows */
  memset(&all, 0, sizeof all), memset(&held, 0, sizeof held), memset(&frep, 0, sizeof frep);
  if (!use || !hold) {
    r = XS_ERR_NO_MEMORY;
    goto done;
  }
  if (used == 0) {
    xs_dataset_destroy(d);
    free(use), free(hold);
    fprintf(stderr, "xstage %s: %s: no rows of transport '%s'\n", c.name, c.pos[0], o.transport);
    return 1;
  }
  for (size_t i = 0; i < n; i++)
    other += use[i] && p.transport[0] && strcmp(S[i].transport, p.transport) != 0;
  cli_progress("scoring the profile", 0.0);
  if ((r = xs_model_score(&all, d, &p, use, 1)) != XS_OK) goto done;
  if (refit) {
    cli_progress("fitting this CSV (--refit)", 0.5);
    snprintf(q.method, sizeof q.method, "xstage model check --refit %.100s", c.pos[0]);
    snprintf(q.device, sizeof q.device, "the CSV's machine");
    if ((r = xs_model_fit(&q, &frep, hold, d, &o)) != XS_OK ||
        (r = xs_model_score(&held, d, &p, hold, 1)) != XS_OK)
      goto done;
  }
done:
  cli_progress_done();
  xs_dataset_destroy(d);
  free(use), free(hold);
  if (r != XS_OK) return cli_fail(&c, r, "cannot score the profile");
  enum { ALL, TRANS, POINTS, H_P, H_Q, HP_P, HP_Q, NST };
  const xs_error_stats* fl[NST] = {
      &all.fluid_holdout,  &all.fluid_transition,     &all.fluid_point_holdout, &held.fluid_holdout,
      &frep.fluid_holdout, &held.fluid_point_holdout, &frep.fluid_point_holdout};
  const xs_error_stats* cl[NST] = {&all.closed_holdout,       &all.closed_transition,
                                   &all.closed_point_holdout, &held.closed_holdout,
                                   &frep.closed_holdout,      &held.closed_point_holdout,
                                   &frep.closed_point_holdout};
  /* the host path's accuracy targets (docs/measurements.md), on the fluid model per burst */
  int met = fl[ALL]->median <= 0.05 && fl[ALL]->p90 <= 0.15;
  static const char* key[NST] = {
      "rows",           "transition_rows",     "points", "holdout_rows", "holdout_rows_refit",
      "holdout_points", "holdout_points_refit"};
  static const char* what[NST] = {"all rows", "rows near transition", "all points", "held-out rows",
                                  "  refit",  "held-out points",      "  refit"};
  int nst = refit ? NST : H_P;
  if (json) {
    char* js = NULL;
    if (xs_profile_to_json(&js, &p) != XS_OK) return cli_fail(&c, XS_ERR_NO_MEMORY, "JSON");
    printf("{\n  \"csv\": \"");
    for (const char* ch = c.pos[0]; *ch; ch++) /* a path as a JSON string */
      if (*ch == '"' || *ch == '\\')
        printf("\\%c", *ch);
      else if ((unsigned char)*ch < 0x20)
        printf("\\u%04x", (unsigned)*ch);
      else
        putchar(*ch);
    printf("\", \"rows\": %zu,\n  \"profile\": %s,\n", used, js);
    free(js);
    printf("  \"rows_of_another_transport\": %zu,\n", other);
    printf("  \"fluid_meets_host_targets\": %s,\n", met ? "true" : "false");
    if (refit)
      printf("  \"refit\": {\"R\": %.6g, \"n_fit\": %zu, \"n_holdout\": %zu},\n", q.R, frep.n_fit,
             frep.n_holdout);
    for (int k = 0; k < nst; k++) {
      char name[64];
      snprintf(name, sizeof name, "fluid_%s", key[k]);
      stats_json(name, fl[k], 0);
      snprintf(name, sizeof name, "closed_%s", key[k]);
      stats_json(name, cl[k], k == nst - 1);
    }
    printf("}\n");
    return 0;
  }
  mcli_describe(stdout, "profile", &p);
  printf("data: %s, %zu rows%s%s\n", c.pos[0], used, o.transport ? " of transport " : "",
         o.transport ? o.transport : "");
  if (other)
    printf("note: %zu of these rows are of another transport than the profile's (%s): it "
           "describes a different link\n",
           other, p.transport[0] ? p.transport : "?");
  if (refit) mcli_describe(stdout, "refit of this CSV", &q);
  printf("\nrelative error |pred - meas| / meas   ------ fluid model ------   ------ closed form "
         "-----\n");
  printf("  %-22s %6s  %8s %8s %8s   %8s %8s %8s\n", "", "n", "median", "p90", "max", "median",
         "p90", "max");
  for (int k = 0; k < nst; k++)
    stats_row(what[k], fl[k], cl[k]);
  printf("(transition: G within +-50%% of the profile's smallest free gap for the row's K and V; "
         "points: the total issue time of each (K, V, G) sequence%s)\n",
         refit ? "; refit: a profile fitted to this CSV's other rows, scored on the same "
                 "held-out rows"
               : "");
  printf("fluid model per burst: median %.1f%%, p90 %.1f%%: %s the host path's targets "
         "(median <= 5%%, p90 <= 15%%)\n",
         100 * fl[ALL]->median, 100 * fl[ALL]->p90, met ? "meets" : "MISSES");
  return 0;
}

/* --------------------------------------------------------------------- model predict ----- */

static int parse_seq(const cli_cmd* c, const char* s, xs_burst* b, int max, int* n) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", s);
  *n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char* colon = strchr(tok, ':');
    if (*n >= max) return cli_error(c, "--seq: more than %d bursts", max);
    if (!colon) return cli_error(c, "--seq: '%s' is not V:G (e.g. 1MB:20us)", tok);
    *colon = '\0';
    if (cli_parse_value(tok, 1, &b[*n].V) || b[*n].V < 0)
      return cli_error(c, "--seq: '%s' is not a size", tok);
    if (cli_parse_value(colon + 1, 2, &b[*n].gap_ns) || b[*n].gap_ns < 0)
      return cli_error(c, "--seq: '%s' is not a time", colon + 1);
    (*n)++;
  }
  return *n ? 0 : cli_error(c, "--seq: empty");
}

static int model_predict(int argc, char** argv, int explain) {
  static cli_opt opts[] = {
      {"profile", "FILE|NAME", "link profile (default h200-host)", NULL},
      {"K", "N", "producer CTAs issuing at once (default 16)", NULL},
      {"V", "BYTES", "bytes per burst, all producers together (default 1MB)", NULL},
      {"G", "TIME", "gap (compute) between bursts (default 0)", NULL},
      {"bursts", "N", "number of equal bursts to simulate (default 8)", NULL},
      {"seq", "V:G,...", "any burst sequence instead, e.g. 1MB:0,4MB:20us", NULL},
      {"json", NULL, "print JSON", NULL},
  };
  static cli_opt eopts[] = {
      {"profile", "FILE|NAME", "link profile (default h200-host)", NULL},
      {"K", "N", "producer CTAs issuing at once (default 32)", NULL},
      {"V", "BYTES", "bytes per burst, all producers together (default 4MB)", NULL},
      {"G", "TIME", "gap (compute) between bursts (default 0)", NULL},
      {"json", NULL, "print JSON", NULL},
  };
  cli_cmd c = explain
                  ? (cli_cmd)CLI_CMD("model explain", "the regime of periodic bursts, in words", "",
                                     eopts, 0, 0)
                  : (cli_cmd)CLI_CMD("model predict", "per-burst issue times and the steady state",
                                     "", opts, 0, 0);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  double K, V, G;
  long nb = 8;
  if (cli_get_double(&c, "K", explain ? 32 : 16, 1, 1e6, &K) ||
      cli_get_bytes(&c, "V", explain ? 4194304 : 1048576, 1, 1e13, &V) ||
      cli_get_ns(&c, "G", 0, 0, 1e13, &G) ||
      (!explain && cli_get_long(&c, "bursts", 8, 1, 100000, &nb)))
    return 2;
  if (K != floor(K)) return cli_error(&c, "--K: %g is not a whole number", K);
  xs_link_profile p;
  if (mcli_profile(&c, cli_get_str(&c, "profile", NULL), "h200-host", &p)) return 1;
  int json = cli_flag(&c, "json");
  xs_steady s;
  xs_result r = xs_fluid_periodic(&s, &p, K, V, G);
  if (r != XS_OK) return cli_fail(&c, r, "prediction failed");
  if (explain) {
    if (!json) {
      mcli_explain(stdout, &p, K, V, G);
      return 0;
    }
    double gmin, vmax, t0;
    xs_plan_min_free_gap(&gmin, &p, K, V);
    xs_plan_max_burst(&vmax, &p, K, G);
    xs_t0_iss(&t0, &p, K, V);
    printf("{\"K\": %g, \"V\": %.17g, \"G\": %.17g, \"regime\": \"%s\", \"t0_ns\": %.17g, "
           "\"t_iss_first_ns\": %.17g, \"t_iss_steady_ns\": %.17g, \"stall_ns\": %.17g, "
           "\"bursts_to_steady\": %ld, \"min_free_gap_ns\": %.17g, \"max_free_burst\": %.17g}\n",
           K, V, G, xs_regime_name(s.regime), t0, s.t_iss_first_ns, s.t_iss_ns, s.stall_ns,
           s.bursts_to_steady, isfinite(gmin) ? gmin : -1, isfinite(vmax) ? vmax : -1);
    return 0;
  }
  rc = 0;
  xs_burst* bs = calloc(100000, sizeof *bs);
  xs_burst_result* out = calloc(100000, sizeof *out);
  int n = (int)nb, seq = cli_get_str(&c, "seq", NULL) != NULL;
  if (!bs || !out) {
    free(bs), free(out);
    return cli_fail(&c, XS_ERR_NO_MEMORY, "predict");
  }
  if (seq && cli_get_str(&c, "bursts", NULL))
    rc = cli_error(&c, "give --bursts or --seq, not both");
  else if (seq)
    rc = parse_seq(&c, cli_get_str(&c, "seq", NULL), bs, 100000, &n);
  else
    for (int i = 0; i < n; i++)
      bs[i].V = V, bs[i].gap_ns = G;
  xs_fluid_summary sum;
  if (!rc && (r = xs_fluid_simulate(out, &sum, &p, K, bs, (size_t)n)) != XS_OK)
    rc = cli_fail(&c, r, "simulation failed");
  if (rc) {
    free(bs), free(out);
    return rc;
  }
  if (json) {
    printf("{\n  \"K\": %g,\n  \"bursts\": [\n", K);
    for (int i = 0; i < n; i++)
      printf("    {\"V\": %.17g, \"gap_ns\": %.17g, \"t_start_ns\": %.17g, \"t_iss_ns\": %.17g, "
             "\"t_iss_mean_ns\": %.17g, \"stall_ns\": %.17g, \"backlog_start\": %.17g, "
             "\"backlog_end\": %.17g}%s\n",
             bs[i].V, bs[i].gap_ns, out[i].t_start_ns, out[i].t_iss_ns, out[i].t_iss_mean_ns,
             out[i].stall_ns, out[i].backlog_start, out[i].backlog_end, i + 1 < n ? "," : "");
    printf("  ],\n  \"first_stall\": %ld, \"total_ns\": %.17g, \"total_stall_ns\": %.17g, "
           "\"max_backlog\": %.17g, \"drain_end_ns\": %.17g",
           sum.first_stall, sum.total_ns, sum.total_stall_ns, sum.max_backlog, sum.drain_end_ns);
    if (!seq)
      printf(
          ",\n  \"steady\": {\"t_iss_ns\": %.17g, \"t_iss_mean_ns\": %.17g, \"stall_ns\": %.17g, "
          "\"backlog_start\": %.17g, \"bursts_to_steady\": %ld, \"regime\": \"%s\"}",
          s.t_iss_ns, s.t_iss_mean_ns, s.stall_ns, s.backlog_start, s.bursts_to_steady,
          xs_regime_name(s.regime));
    printf("\n}\n");
  } else {
    char a[32], b[32], d[32], e[32], f[32], g[32], h[32], k[32];
    mcli_describe(stdout, "profile", &p);
    printf("\n%5s %11s %10s %10s %10s %10s %10s %11s %11s\n", "burst", "V", "gap", "start", "T_iss",
           "mean CTA", "stall", "backlog0", "backlog1");
    for (int i = 0; i < n; i++)
      printf("%5d %11s %10s %10s %10s %10s %10s %11s %11s\n", i, cli_fmt_bytes(a, 32, bs[i].V),
             cli_fmt_ns(b, 32, bs[i].gap_ns), cli_fmt_ns(d, 32, out[i].t_start_ns),
             cli_fmt_ns(e, 32, out[i].t_iss_ns), cli_fmt_ns(f, 32, out[i].t_iss_mean_ns),
             cli_fmt_ns(g, 32, out[i].stall_ns), cli_fmt_bytes(h, 32, out[i].backlog_start),
             cli_fmt_bytes(k, 32, out[i].backlog_end));
    printf("first stall: %s; total %s; all drained at %s\n",
           sum.first_stall < 0 ? "none" : (snprintf(a, 32, "burst %ld", sum.first_stall), a),
           cli_fmt_ns(b, 32, sum.total_ns), cli_fmt_ns(d, 32, sum.drain_end_ns));
    if (!seq)
      printf(
          "steady state (%s, %s): T_iss %s per burst (mean CTA %s), stall %s, after %ld bursts\n",
          xs_regime_name(s.regime), s.closed_form ? "closed form" : "simulated",
          cli_fmt_ns(a, 32, s.t_iss_ns), cli_fmt_ns(b, 32, s.t_iss_mean_ns),
          cli_fmt_ns(d, 32, s.stall_ns), s.bursts_to_steady);
  }
  free(bs), free(out);
  return 0;
}

int cmd_model(int argc, char** argv) {
  static const char* usage =
      "usage: xstage model <fit|check|predict|explain|plot> [options]   (--help on each)\n"
      "  fit <csv> -o profile.json   fit a link profile to measurements\n"
      "  check <csv> --profile P     score a profile's predictions on measurements\n"
      "  predict                     per-burst issue times and the steady state\n"
      "  explain                     the regime of periodic bursts, in words\n"
      "  plot [<csv>] -o f.svg       measurements and both predictors against the gap\n";
  if (argc < 1) {
    fputs(usage, stderr);
    return 2;
  }
  if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
    fputs(usage, stdout);
    return 0;
  }
  char** a = mcli_argv(argc - 1, argv + 1);
  if (!a) return 1;
  int rc;
  if (!strcmp(argv[0], "fit"))
    rc = model_fit(argc - 1, a);
  else if (!strcmp(argv[0], "predict"))
    rc = model_predict(argc - 1, a, 0);
  else if (!strcmp(argv[0], "explain"))
    rc = model_predict(argc - 1, a, 1);
  else if (!strcmp(argv[0], "plot"))
    rc = mcli_plot(argc - 1, a);
  else if (!strcmp(argv[0], "check"))
    rc = model_check(argc - 1, a);
  else {
    fprintf(stderr, "xstage model: unknown subcommand '%s'\n%s", argv[0], usage);
    rc = 2;
  }
  free(a);
  return rc;
}
