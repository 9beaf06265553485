/* cmd_xbench.c — `xstage xbench` (placeholder until its issue lands). */
#include "cli/cli.h"

int cmd_xbench(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage xbench: not available in this build yet\n");
  return 1;
}
