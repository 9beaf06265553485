/* cmd_bench.c — `xstage bench` (placeholder until its issue lands). */
#include "cli/cli.h"

int cmd_bench(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage bench: not available in this build yet\n");
  return 1;
}
