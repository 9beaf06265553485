/* bench_attention.c — `xstage bench attention` (placeholder until its issue lands). */
#include "cli/cli.h"

int cli_bench_attention(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage bench attention: not available in this build yet\n");
  return 1;
}
