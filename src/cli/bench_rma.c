/* bench_rma.c — `xstage bench rma`: device RMA primitives, rank 0 -> rank 1: in the emulated
 * world on one GPU (tile stores to an HBM heap and to a host-mapped heap, GB/s; signal->wait
 * round trip, ns), and with two GPUs that reach each other also GPU 0 -> GPU 1 over NVLink (a
 * local world). Every row is checked in the same run (#wrong). */
#include "cli/cli.h"

int cli_bench_rma(int argc, char** argv) {
  static cli_opt opts[] = {
      {"bytes", "BYTES", "bytes per tile-store burst, all CTAs together (default 64MB)", NULL},
      {"ctas", "N", "producer CTAs (default 32)", NULL},
      {"threads", "N", "threads per CTA, multiple of 32 (default 512)", NULL},
      {"iters", "N", "timed repetitions; the median is reported (default 20)", NULL},
      {"pingpongs", "N", "signal->wait round trips timed (default 10000)", NULL},
      {"device", "N", "CUDA device of the emulated rows (default 0)", NULL},
      {"no-peer", NULL, "skip the NVLink rows (GPU 0 -> GPU 1) even with two GPUs", NULL},
      {"json", NULL, "print JSON instead of a table", NULL},
  };
  cli_cmd c = CLI_CMD("bench rma",
                      "device RMA primitives: emulated world on one GPU, and GPU 0 -> GPU 1 over "
                      "NVLink when there are two",
                      "", opts, 0, 0);
  int rc = cli_parse(&c, argc, argv);
  if (rc >= 0) return rc;
  xs_rma_bench_config cfg = XS_RMA_BENCH_CONFIG_INITIALIZER;
  double bytes;
  long ctas, threads, iters, pp, dev;
  if (cli_get_bytes(&c, "bytes", (double)cfg.bytes, 1, 16.0 * 1073741824.0, &bytes) ||
      cli_get_long(&c, "ctas", cfg.ctas, 1, 1024, &ctas) ||
      cli_get_long(&c, "threads", cfg.threads, 32, 1024, &threads) ||
      cli_get_long(&c, "iters", cfg.iters, 1, 10000, &iters) ||
      cli_get_long(&c, "pingpongs", cfg.pingpongs, 1, 10000000, &pp) ||
      cli_get_long(&c, "device", 0, 0, 63, &dev))
    return 2;
  if (threads % 32) return cli_error(&c, "--threads must be a multiple of 32 (got %ld)", threads);
  cfg.bytes = (size_t)bytes;
  cfg.ctas = (int)ctas;
  cfg.threads = (int)threads;
  cfg.iters = (int)iters;
  cfg.pingpongs = (int)pp;
  cfg.device = (int)dev;
  cfg.peer = !cli_flag(&c, "no-peer");
  char gpu[128] = "";
  if (!cli_have_gpu(gpu, sizeof gpu)) {
    fprintf(stderr, "xstage bench rma: no CUDA GPU in this process (or a build without CUDA)\n");
    return 1;
  }
  xs_rma_bench_result r;
  xs_result res = xs_rma_bench(&r, &cfg);
  if (res != XS_OK) return cli_fail(&c, res, "benchmark");
  int wrong = 0;
  for (int i = 0; i < r.nrows; i++)
    wrong += r.rows[i].wrong;
  if (cli_flag(&c, "json")) {
    printf("{\"gpu\": \"%s\", \"ctas\": %d, \"threads\": %d, \"peer\": %s, \"rows\": [\n", gpu,
           cfg.ctas, cfg.threads, r.peer ? "true" : "false");
    for (int i = 0; i < r.nrows; i++)
      printf(
          "  {\"name\": \"%s\", \"bytes\": %.0f, \"ns\": %.1f, \"gbps\": %.3f, \"wrong\": %d}%s\n",
          r.rows[i].name, r.rows[i].bytes, r.rows[i].ns, r.rows[i].gbps, r.rows[i].wrong,
          i + 1 < r.nrows ? "," : "");
    printf("]}\n");
  } else {
    printf("# xstage bench rma on %s: rank 0 -> rank 1 of W=2 worlds (emulated on one GPU%s), %d "
           "CTAs x %d threads\n",
           gpu, r.peer ? "; local: GPU 0 -> GPU 1" : "; one GPU: no NVLink rows", cfg.ctas,
           cfg.threads);
    printf("%-40s %12s %12s %10s %7s\n", "primitive", "bytes", "time", "GB/s", "#wrong");
    for (int i = 0; i < r.nrows; i++) {
      char b[32], t[32], g[32] = "-";
      cli_fmt_bytes(b, sizeof b, r.rows[i].bytes);
      cli_fmt_ns(t, sizeof t, r.rows[i].ns);
      if (r.rows[i].gbps > 0) snprintf(g, sizeof g, "%.1f", r.rows[i].gbps);
      printf("%-40s %12s %12s %10s %7d\n", r.rows[i].name, r.rows[i].bytes > 0 ? b : "-", t, g,
             r.rows[i].wrong);
    }
    printf("# time: median per burst (tile rows, issue + drain to kernel end) or per round trip\n");
  }
  return wrong ? 1 : 0;
}
