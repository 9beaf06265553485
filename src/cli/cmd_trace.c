/* cmd_trace.c — `xstage trace <trace> [-o out.json|out.svg|out.trace]`: convert a kernel trace
 * (the RAW text format the library writes) to Chrome trace-event JSON or an SVG timeline; with
 * no output, print a summary. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static int ends_with(const char* s, const char* suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void summary(const char* path, const xs_trace_event* ev, size_t n) {
  size_t per_kind[7] = {0};
  unsigned max_rank = 0, max_cta = 0;
  for (size_t i = 0; i < n; i++) {
    if (ev[i].kind <= 6) per_kind[ev[i].kind]++;
    if (ev[i].rank > max_rank) max_rank = ev[i].rank;
    if (ev[i].cta > max_cta) max_cta = ev[i].cta;
  }
  char span[32] = "0 ns";
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < n; i++) {
    if (ev[i].t_ns < lo) lo = ev[i].t_ns;
    if (ev[i].t_ns > hi) hi = ev[i].t_ns;
  }
  if (n) cli_fmt_ns(span, sizeof span, (double)(hi - lo));
  printf("%s: %zu events over %s, ranks 0..%u, CTAs 0..%u\n", path, n, span, max_rank, max_cta);
  printf("  %-6s %10s %10s\n", "kind", "begins", "ends");
  for (int k = 1; k <= 5; k += 2)
    printf("  %-6s %10zu %10zu\n", xs_trace_kind_name(k), per_kind[k], per_kind[k + 1]);
}

int cmd_trace(int argc, char** argv) {
  static cli_opt opts[] = {
      {"output", "FILE",
       "write FILE (-o): .json = Chrome trace (Perfetto), .svg = timeline, "
       "other = RAW text",
       NULL},
      {"format", "F", "raw | chrome | svg (overrides the extension)", NULL},
  };
  cli_cmd c = CLI_CMD("trace", "convert a kernel trace to Chrome JSON or an SVG timeline",
                      "<trace>", opts, 1, 1);
  /* NOTE: -o is accepted as the short form of --output. */
  char** args = (char**)malloc(sizeof(char*) * (size_t)(argc + 1));
  if (!args) return 1;
  for (int i = 0; i < argc; i++)
    args[i] = strcmp(argv[i], "-o") == 0 ? (char*)"--output" : argv[i];
  int rc = cli_parse(&c, argc, args);
  free(args);
  if (rc >= 0) return rc;
  const char* out = cli_get_str(&c, "output", NULL);
  const char* fmt_s = cli_get_str(&c, "format", NULL);
  xs_trace_format fmt = XS_TRACE_FORMAT_RAW;
  if (fmt_s) {
    if (!strcmp(fmt_s, "raw"))
      fmt = XS_TRACE_FORMAT_RAW;
    else if (!strcmp(fmt_s, "chrome"))
      fmt = XS_TRACE_FORMAT_CHROME;
    else if (!strcmp(fmt_s, "svg"))
      fmt = XS_TRACE_FORMAT_SVG;
    else
      return cli_error(&c, "--format: '%s' is not raw, chrome or svg", fmt_s);
    if (!out) return cli_error(&c, "--format needs --output");
  } else if (out) {
    fmt = ends_with(out, ".json")  ? XS_TRACE_FORMAT_CHROME
          : ends_with(out, ".svg") ? XS_TRACE_FORMAT_SVG
                                   : XS_TRACE_FORMAT_RAW;
  }
  xs_trace_event* ev = NULL;
  size_t n = 0;
  xs_result res = xs_trace_read(&ev, &n, c.pos[0]);
  if (res != XS_OK) return cli_fail(&c, res, "reading the trace");
  if (!out) {
    summary(c.pos[0], ev, n);
    free(ev);
    return 0;
  }
  res = xs_trace_write(out, ev, n, fmt);
  free(ev);
  if (res != XS_OK) return cli_fail(&c, res, "writing the output");
  fprintf(stderr, "xstage trace: wrote %s (%zu events)\n", out, n);
  return 0;
}
