/* cmd_plan.c — `xstage plan` (placeholder until its issue lands). */
#include "cli/cli.h"

int cmd_plan(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage plan: not available in this build yet\n");
  return 1;
}
