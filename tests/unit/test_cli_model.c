/* test_cli_model.c — `xstage model | plan | run` from the outside: exit codes on bad input
 * (2 usage, 1 failure), messages naming file/line/field, no output file left when a command
 * fails, JSON output that parses, numbers equal to the library's. Runs the xstage binary
 * built next to this test. */
#include "core/json.h"
#include "test.h"
#include "xstage/xstage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_bin[4096], g_dir[256], g_out[1 << 16];

/* Run `xstage <args>` with stdout+stderr captured into g_out; returns the exit code. */
/* Run `xstage ARGS` in g_dir; stdout (and stderr unless stdout_only) into g_out; exit status. */
static int xs_capture(const char* args, int stdout_only) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "cd %s && %s %s %s", g_dir, g_bin, args,
           stdout_only ? "2>/dev/null" : "2>&1");
  FILE* p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = fread(g_out, 1, sizeof g_out - 1, p);
  g_out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
static int xs(const char* args) { return xs_capture(args, 0); }
/* For --json: the JSON is stdout alone (progress, e.g. `run`'s calibration on a GPU machine,
 * goes to stderr). */
static int xs_json(const char* args) { return xs_capture(args, 1); }

static int exists(const char* name) {
  char path[512];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  return stat(path, &st) == 0;
}

static void put(const char* name, const char* text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE* f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

static int leftovers(void) { /* temporaries of atomic writes */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls %s | grep -c '\\.tmp\\.' > /dev/null", g_dir);
  return system(cmd) == 0;
}

static void test_fit_cli(void) {
  XT_EQ_INT(xs("model fit --bogus data.csv -o p.json"), 2);
  XT_CHECK(strstr(g_out, "unknown option '--bogus'") != NULL);
  XT_EQ_INT(xs("model fit good.csv"), 2); /* no -o */
  XT_EQ_INT(xs("model fit good.csv -o p.json --holdout 2"), 2);
  XT_EQ_INT(xs("model fit missing.csv -o p.json"), 1);
  XT_CHECK(!exists("p.json"));
  put("bad.csv", "transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1024,0,0,100\nhost,0,1024,0,0,100\n");
  XT_EQ_INT(xs("model fit bad.csv -o p.json"), 1);
  XT_CHECK_MSG(strstr(g_out, "bad.csv:3: field 'K'") != NULL, "%s", g_out);
  XT_CHECK(!exists("p.json"));
  /* a valid CSV too small to fit: a numeric failure, still no file */
  put("small.csv", "transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1024,0,0,100\n");
  XT_EQ_INT(xs("model fit small.csv -o p.json"), 1);
  XT_CHECK(!exists("p.json"));
  /* the plot cannot be written: all or nothing */
  XT_EQ_INT(xs("model fit good.csv -o p.json --plot /nonexistent/dir/f.svg"), 1);
  XT_CHECK(!exists("p.json"));
  XT_EQ_INT(xs("model fit good.csv -o p.json --plot f.svg --seed 3"), 0);
  XT_CHECK(strstr(g_out, "held out") != NULL);
  XT_CHECK(exists("p.json") && exists("f.svg"));
  char path[512];
  snprintf(path, sizeof path, "%s/p.json", g_dir);
  xs_link_profile p;
  XT_CHECK(xs_profile_read(&p, path) == XS_OK);
  XT_EQ_INT(p.calibrated, 1);
  XT_NEAR(p.R, 52, 0.03);
  XT_EQ_INT(xs_json("model fit good.csv -o p2.json --json"), 0);
  xsi_json* js = NULL;
  XT_CHECK(xsi_json_parse(&js, g_out, strlen(g_out), "stdout") == XS_OK);
  XT_CHECK(js && xsi_json_get(js, "report") && xsi_json_get(js, "profile"));
  xsi_json_free(js);
  XT_CHECK(!leftovers());
}

/* `model check`: usage and data errors, and the scores equal to the library's on the same data
 * (a profile that did not make the data scores badly; a refit of the data scores well). */
static void test_check_cli(void) {
  XT_EQ_INT(xs("model check"), 2); /* no CSV */
  XT_EQ_INT(xs("model check good.csv --holdout 0.01 --refit"), 2);
  XT_EQ_INT(xs("model check missing.csv"), 1);
  XT_EQ_INT(xs("model check good.csv --profile nothere.json"), 1);
  put("bad.csv", "transport,K,V_bytes,gap_ns,burst_index,t_iss_ns\nhost,4,1024,0,0,100\nhost,0,"
                 "1024,0,0,100\n");
  XT_EQ_INT(xs("model check bad.csv"), 1);
  XT_CHECK_MSG(strstr(g_out, "bad.csv:3: field 'K'") != NULL, "%s", g_out);
  XT_EQ_INT(xs("model check good.csv --transport nvlink"), 1);
  XT_CHECK_MSG(strstr(g_out, "no rows of transport 'nvlink'") != NULL, "%s", g_out);
  XT_EQ_INT(xs("model check good.csv --profile h200-nvlink"), 0);
  XT_CHECK(strstr(g_out, "all points") && strstr(g_out, "MISSES"));
  XT_CHECK_MSG(strstr(g_out, "of another transport than the profile's (peer:1)"), "%s", g_out);
  XT_EQ_INT(xs("model check good.csv --profile h200-host"), 0);
  XT_CHECK(!strstr(g_out, "another transport"));
  /* the JSON's numbers are the library's */
  XT_EQ_INT(xs_json("model check good.csv --profile h200-host --json"), 0);
  xsi_json* js = NULL;
  XT_CHECK(xsi_json_parse(&js, g_out, strlen(g_out), "stdout") == XS_OK);
  const xsi_json* fr = js ? xsi_json_get(js, "fluid_rows") : NULL;
  const xsi_json* cp = js ? xsi_json_get(js, "closed_points") : NULL;
  double med = -1, n = -1, cmed = -1;
  XT_CHECK(fr && xsi_json_get_number(&med, fr, "median", 0, "json") == XS_OK &&
           xsi_json_get_number(&n, fr, "n", 0, "json") == XS_OK);
  XT_CHECK(cp && xsi_json_get_number(&cmed, cp, "median", 0, "json") == XS_OK);
  XT_CHECK(js && xsi_json_get(js, "profile") && !xsi_json_get(js, "fluid_holdout_rows_refit"));
  xsi_json_free(js);
  char path[512];
  snprintf(path, sizeof path, "%s/good.csv", g_dir);
  xs_dataset* d = NULL;
  xs_link_profile h;
  xs_error_stats f, c, fp, cpt;
  XT_CHECK(xs_dataset_load(&d, path) == XS_OK && xs_profile_default(&h, "h200-host") == XS_OK);
  XT_CHECK(xs_model_evaluate(&f, &c, d, &h, NULL, 0) == XS_OK);
  XT_CHECK(xs_model_evaluate_points(&fp, &cpt, d, &h, NULL, 0) == XS_OK);
  XT_EQ_INT((long)n, (long)xs_dataset_size(d));
  XT_NEAR(med, f.median, 1e-5);
  XT_NEAR(cmed, cpt.median, 1e-5);
  xs_dataset_destroy(d);
  /* --refit: both profiles on the same held-out rows; the synthetic data's own fit is far better
   * than the measured h200-host profile, which did not generate it */
  XT_EQ_INT(xs_json("model check good.csv --refit --seed 3 --json"), 0);
  js = NULL;
  XT_CHECK(xsi_json_parse(&js, g_out, strlen(g_out), "stdout") == XS_OK);
  const xsi_json* a = js ? xsi_json_get(js, "fluid_holdout_rows") : NULL;
  const xsi_json* b = js ? xsi_json_get(js, "fluid_holdout_rows_refit") : NULL;
  double na = 0, nb = -1, ma = 0, mb = 1;
  XT_CHECK(a && b && xsi_json_get_number(&na, a, "n", 0, "json") == XS_OK &&
           xsi_json_get_number(&nb, b, "n", 0, "json") == XS_OK &&
           xsi_json_get_number(&ma, a, "median", 0, "json") == XS_OK &&
           xsi_json_get_number(&mb, b, "median", 0, "json") == XS_OK);
  XT_CHECK(na > 0 && na == nb);
  XT_CHECK_MSG(mb < 0.03 && ma > 2 * mb, "held-out median: checked %g, refit %g", ma, mb);
  xsi_json_free(js);
  XT_CHECK(!leftovers());
}

static void test_predict_cli(void) {
  XT_EQ_INT(xs("model predict --K 0"), 2);
  XT_EQ_INT(xs("model predict --V abc"), 2);
  XT_CHECK(strstr(g_out, "--V") != NULL);
  XT_EQ_INT(xs("model predict --seq 1MB"), 2);
  XT_EQ_INT(xs("model predict --seq 1MB:0 --bursts 3"), 2);
  XT_EQ_INT(xs("model predict --profile nothere.json"), 1);
  XT_EQ_INT(xs("model predict --profile h200-nvlink --K 32 --V 4MB --G 10us --bursts 4"), 0);
  XT_CHECK(strstr(g_out, "steady state") != NULL);
  XT_EQ_INT(xs_json("model predict --seq 1MB:0,4MB:20us,64KB:1ms --json"), 0);
  xsi_json* js = NULL;
  XT_CHECK(xsi_json_parse(&js, g_out, strlen(g_out), "stdout") == XS_OK);
  const xsi_json* b = js ? xsi_json_get(js, "bursts") : NULL;
  XT_CHECK(b && b->len == 3);
  xsi_json_free(js);
  XT_EQ_INT(xs("model explain --K 32 --V 4MB --G 50us"), 0);
  XT_CHECK(strstr(g_out, "Regime: capacity-bound") != NULL);
  XT_EQ_INT(xs("model explain --K 16 --V 1MB --G 5us"), 0);
  XT_CHECK(strstr(g_out, "Regime: drain-dominated") && strstr(g_out, "keeps every burst free"));
  XT_EQ_INT(xs("model nope"), 2);
  XT_EQ_INT(xs("model plot"), 2); /* no -o */
  XT_EQ_INT(xs("model plot -o m.svg --K 16"), 0);
  XT_CHECK(exists("m.svg"));
  XT_EQ_INT(xs("model plot bad.csv -o m2.svg"), 1);
  XT_CHECK(!exists("m2.svg"));
}

static void test_plan_run_cli(void) {
  XT_EQ_INT(xs("plan"), 2);
  XT_EQ_INT(xs("plan bogus"), 2);
  XT_EQ_INT(xs("run --gap-mode spin"), 2); /* the catalogue's compute: fma or load */
  XT_CHECK(strstr(g_out, "--gap-mode: fma or load (got 'spin')") != NULL);
  XT_EQ_INT(xs("run --gap-mode bogus --no-calibrate"), 2);
  XT_EQ_INT(xs_json("plan min-gap --K 16 --V 1MB --json"), 0);
  xsi_json* js = NULL;
  double g = 0, want;
  XT_CHECK(xsi_json_parse(&js, g_out, strlen(g_out), "stdout") == XS_OK);
  XT_CHECK(js && xsi_json_get_number(&g, js, "min_free_gap_ns", 0, "stdout") == XS_OK);
  xsi_json_free(js);
  xs_link_profile h;
  xs_profile_default(&h, "h200-host");
  xs_plan_min_free_gap(&want, &h, 16, 1048576);
  XT_NEAR(g, want, 1e-15);
  XT_EQ_INT(xs("plan max-burst --K 32 --G 20us"), 0);
  XT_EQ_INT(xs("plan split --K 32 --V 16MB --window 400us"), 0);
  XT_EQ_INT(xs("plan fusion --workload moe-deepseek-v3"), 0);
  XT_CHECK(strstr(g_out, "spread out after the first tile") != NULL);
  XT_EQ_INT(xs_json("plan fusion --workload moe-deepseek-v3 --profile h200-nvlink --json"), 0);
  {
    double sp = -1;
    xsi_json* pj = NULL;
    XT_CHECK(xsi_json_parse(&pj, g_out, strlen(g_out), "stdout") == XS_OK &&
             xsi_json_get_number(&sp, pj, "overhead_spread_frac", 0, "stdout") == XS_OK);
    xsi_json_free(pj);
    const xs_workload* cat;
    size_t ncat;
    xs_link_profile nv;
    xs_fusion_prediction f;
    xs_catalogue(&cat, &ncat);
    xs_profile_default(&nv, "h200-nvlink");
    XT_CHECK(xs_predict_fusion(&f, &nv, &cat[0]) == XS_OK &&
             !strcmp(cat[0].name, "moe-deepseek-v3"));
    XT_NEAR(sp, f.overhead_spread_frac, 1e-12);
  }
  XT_EQ_INT(xs("plan fusion --workload nope"), 2);
  XT_EQ_INT(xs("plan fusion --tiles 0"), 2);
  /* the split scan: its JSON carries the library's best n; --split must be a power of two */
  XT_EQ_INT(xs_json("plan fusion --K 132 --bytes-per-tile 28672 --compute 57600ns --tiles 7 "
                    "--split 16 --json"),
            0);
  {
    double bn = -1, cpl = -1;
    xsi_json* pj = NULL;
    XT_CHECK(xsi_json_parse(&pj, g_out, strlen(g_out), "stdout") == XS_OK);
    const xsi_json* sp = pj ? xsi_json_get(pj, "split") : NULL;
    XT_CHECK(sp && xsi_json_get_number(&bn, sp, "best_n", 0, "stdout") == XS_OK);
    XT_CHECK(xsi_json_get_number(&cpl, pj, "fused_coupled_ns", 0, "stdout") == XS_OK);
    xsi_json_free(pj);
    xs_link_profile hp;
    xs_profile_default(&hp, "h200-host");
    xs_workload w = XS_WORKLOAD_INITIALIZER;
    w.K = 132, w.bytes_per_tile = 28672, w.compute_ns_per_tile = 57600, w.tiles_per_producer = 7;
    xs_split_scan sc;
    XT_CHECK(xs_plan_split_fusion(&sc, &hp, &w, 16) == XS_OK);
    XT_NEAR(bn, sc.best_n, 0);
    XT_CHECK(cpl > 0);
  }
  XT_EQ_INT(xs("plan fusion --K 132 --bytes-per-tile 28672 --compute 57600ns --tiles 7 --split 8"),
            0);
  XT_CHECK(strstr(g_out, "cut into n pieces") && strstr(g_out, "for compute that reads memory"));
  XT_EQ_INT(xs("plan fusion --split 3"), 2);
  XT_EQ_INT(xs("plan fusion --split 256"), 2);
  XT_EQ_INT(xs("run"), 0);
  /* both embedded profiles are measured ones (NVLink since session 8) */
  XT_CHECK(strstr(g_out, "Q+-10%") && strstr(g_out, "At the stage's capacity"));
  XT_CHECK(strstr(g_out, " spread ") && strstr(g_out, "the lockstep figures are the upper bound"));
  XT_CHECK(strstr(g_out, "host, st.global.v4; calibrated") &&
           strstr(g_out, "peer:1, st.global.v4; calibrated") && !strstr(g_out, "NOT calibrated") &&
           strstr(g_out, "moe-deepseek-v3") &&
           strstr(g_out, "ulysses-hunyuan-720p") && strstr(g_out, "Ulysses all-to-all"));
  XT_EQ_INT(xs_json("run --json"), 0);
  js = NULL;
  XT_CHECK(xsi_json_parse(&js, g_out, strlen(g_out), "stdout") == XS_OK);
  const xsi_json* pr = js ? xsi_json_get(js, "profiles") : NULL;
  XT_CHECK(pr && pr->len == 2);
  /* the capacity band brackets the prediction, and equals the library's with the rooms scaled */
  {
    const xsi_json* p0 = pr && pr->len == 2 ? pr->items[0] : NULL;
    const xsi_json* wl = p0 ? xsi_json_get(p0, "workloads") : NULL;
    XT_CHECK(wl && wl->len >= 9);
    const xs_workload* cat;
    size_t ncat;
    xs_catalogue(&cat, &ncat);
    xs_link_profile h, q;
    xs_profile_default(&h, "h200-host");
    for (size_t i = 0; wl && i < wl->len && i < ncat; i++) {
      double o = -1, lo = -1, hi = -1;
      XT_CHECK(
          xsi_json_get_number(&o, wl->items[i], "overhead_frac", 0, "json") == XS_OK &&
          xsi_json_get_number(&lo, wl->items[i], "overhead_frac_room_plus10", 0, "json") == XS_OK &&
          xsi_json_get_number(&hi, wl->items[i], "overhead_frac_room_minus10", 0, "json") == XS_OK);
      XT_CHECK_MSG(lo <= o + 1e-12 && o <= hi + 1e-12, "%zu: %g %g %g", i, lo, o, hi);
      xs_fusion_prediction f;
      xs_profile_scale_rooms(&q, &h, 0.9);
      xs_predict_fusion(&f, &q, &cat[i]);
      XT_NEAR(hi, f.overhead_frac, 1e-9);
      double sp = -1;
      XT_CHECK(xsi_json_get_number(&sp, wl->items[i], "overhead_spread_frac", 0, "json") == XS_OK);
      xs_predict_fusion(&f, &h, &cat[i]);
      XT_NEAR(sp, f.overhead_spread_frac, 1e-9);
    }
  }
  xsi_json_free(js);
  XT_EQ_INT(xs("run --profile missing.json"), 1);
  XT_EQ_INT(xs("run --profile p.json"), 0);
  XT_CHECK(strstr(g_out, "calibrated") != NULL);
  XT_EQ_INT(xs("run --wat"), 2);
}

/* `calibrate -o DIR` creates DIR and its parents before it works (a calibration's minutes must
 * not be lost to a missing directory at the end); a path that is a file is refused with exit 2;
 * a refit of an unreadable CSV creates nothing. */
static void test_calibrate_out_dir(void) {
  put("raw.csv",
      "transport,K,V_bytes,gap_ns,burst_index,t_iss_ns,t_iss_mean_ns,gap_nominal_ns,t_ret_ns,"
      "t_iss_cyc_ns,flavour,mode,gap_mode,phase,point,rep,t_own_max_ns,t_own_mean_ns,t_skew_ns,"
      "e_end_ns,m_end_ns,gap_before_ns,seq,period_ns\n"
      "host,8,131072,19964,0,448,424,20000,320,434.3,st.global.v4,clock,fma,t0,0,0,434.3,406.4,"
      "0,448,424,0,1,20412\n");
  xs("calibrate --refit raw.csv -o out/x/y"); /* one row: the fit may fail, the directory not */
  XT_CHECK(exists("out/x/y"));
  put("afile", "x");
  XT_EQ_INT(xs("calibrate --refit raw.csv -o afile"), 2);
  XT_CHECK(strstr(g_out, "'afile' exists and is not a directory") != NULL);
  XT_EQ_INT(xs("calibrate --refit missing.csv -o never"), 1);
  XT_CHECK(!exists("never"));
}

int main(int argc, char** argv) {
  (void)argc;
  const char* slash = strrchr(argv[0], '/');
  char self[4096];
  if (!realpath(argv[0], self)) snprintf(self, sizeof self, "%s", argv[0]);
  slash = strrchr(self, '/');
  snprintf(g_bin, sizeof g_bin, "%.*s/xstage", slash ? (int)(slash - self) : 1, slash ? self : ".");
  if (access(g_bin, X_OK) != 0) XT_SKIP("%s not built", g_bin);
  snprintf(g_dir, sizeof g_dir, "/tmp/xstage-cli-model-XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  /* a good CSV: the synthetic example of the repository */
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "cp data/h200-host-synthetic.csv %s/good.csv", g_dir);
  if (system(cmd) != 0) XT_SKIP("data/h200-host-synthetic.csv not found (run from the source dir)");
  XT_RUN(test_fit_cli);
  XT_RUN(test_check_cli);
  XT_RUN(test_predict_cli);
  XT_RUN(test_plan_run_cli);
  XT_RUN(test_calibrate_out_dir);
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  return XT_END();
}
