/* cmd_trace.c — `xstage trace` (placeholder until its issue lands). */
#include "cli/cli.h"

int cmd_trace(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage trace: not available in this build yet\n");
  return 1;
}
