/* cmd_launch.c — `xstage launch` (placeholder until its issue lands). */
#include "cli/cli.h"

int cmd_launch(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xstage launch: not available in this build yet\n");
  return 1;
}
