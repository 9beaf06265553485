/* cmd_run.c — `xstage run` (placeholder until its issue lands). */
#include "cli/cli.h"

int cmd_run(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage run: not available in this build yet\n");
  return 1;
}
