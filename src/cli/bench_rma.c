/* bench_rma.c — `xstage bench rma` (placeholder until its issue lands). */
#include "cli/cli.h"

int cli_bench_rma(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage bench rma: not available in this build yet\n");
  return 1;
}
